# fusegen.mk: generate, compile and embed fusegen kernels in a downstream
# build (GNU Make >= 4.3), and link them with libfgrt.
#
#   FUSEGEN_ROOT := path/to/fusegen         # a checkout, or
#   FUSEGEN_PREFIX := /opt/fusegen          # an installation (make install PREFIX=...)
#   FUSEGEN_SPECS = specs/model.yaml $(FUSEGEN_TARGET_SPECS)/h200.yaml
#   include $(FUSEGEN_ROOT)/fusegen.mk
#   app: app.o $(FUSEGEN_OBJS) $(FUSEGEN_LIBFGRT)
#           $(CC) -o $@ app.o $(FUSEGEN_OBJS) $(FUSEGEN_LDLIBS)
#   app.o: CFLAGS += $(FUSEGEN_CFLAGS)
#
# Reads, when included (all optional but FUSEGEN_SPECS):
#   FUSEGEN_SPECS    model and gemm specs plus at least one target spec; set it
#                    with `=` to refer to $(FUSEGEN_TARGET_SPECS)
#   FUSEGEN_TARGETS  target names to keep (--target); default: every target spec given
#   FUSEGEN_FILTERS  instance-name globs to keep (--filter); default: every instance
#   FUSEGEN_OUT      generated sources (default fusegen-out)
#   FUSEGEN_BUILD    compiled kernels and objects (default $(FUSEGEN_OUT)/build)
#   FUSEGEN_ROOT / FUSEGEN_PREFIX  where fusegen is; default: where this file is
#   FUSEGEN          the generator binary (default: from the checkout or installation)
#   FUSEGEN_NVCC, FUSEGEN_NVCC_FLAGS, FUSEGEN_CLANG_HIP, FUSEGEN_HIP_FLAGS, CC
# Provides:
#   FUSEGEN_OBJS     the registry and the embedded kernel images: link them
#   FUSEGEN_CFLAGS   -I for fgrt.h and fg_registry.h
#   FUSEGEN_LDLIBS   libfgrt and -ldl (libfgrt opens the GPU driver at run time)
#   FUSEGEN_LIBFGRT  libfgrt.a itself, to use as a prerequisite
#   FUSEGEN_TARGET_SPECS  the folder of the shipped target specs (h200.yaml, ...)
#   targets fusegen-kernels (everything above) and fusegen-clean
#
# One generator run makes every output, recorded by a stamp.  fusegen
# rewrites only files whose content changed, and Make re-reads their times
# after the run, so only the kernels whose source changed are recompiled.

FUSEGEN_MK_DIR := $(patsubst %/,%,$(dir $(lastword $(MAKEFILE_LIST))))
# Restored at the end, so the includer's first target stays the default goal.
fusegen_goal := $(.DEFAULT_GOAL)

ifeq ($(FUSEGEN_PREFIX)$(FUSEGEN_ROOT),)
  ifneq ($(wildcard $(FUSEGEN_MK_DIR)/runtime/include/fgrt.h),)
    FUSEGEN_ROOT := $(FUSEGEN_MK_DIR)
  else
    # Installed as PREFIX/share/fusegen/fusegen.mk.
    FUSEGEN_PREFIX := $(abspath $(FUSEGEN_MK_DIR)/../..)
  endif
endif

ifneq ($(FUSEGEN_PREFIX),)
  FUSEGEN              ?= $(FUSEGEN_PREFIX)/bin/fusegen
  FUSEGEN_INCLUDE      := $(FUSEGEN_PREFIX)/include
  FUSEGEN_LIBFGRT      := $(FUSEGEN_PREFIX)/lib/libfgrt.a
  FUSEGEN_SHARE        := $(FUSEGEN_PREFIX)/share/fusegen
  FUSEGEN_TEMPLATE_DIR := $(FUSEGEN_SHARE)/templates
  FUSEGEN_SCRIPTS      := $(FUSEGEN_SHARE)/scripts
  FUSEGEN_TARGET_SPECS := $(FUSEGEN_SHARE)/targets
else
  # A checkout: its own Makefile keeps build/libfgrt.a, and build/fusegen
  # unless FUSEGEN names another generator, current (below).
  fusegen_root_goals   := $(if $(filter undefined,$(origin FUSEGEN)),build/fusegen) \
                          build/libfgrt.a
  FUSEGEN              ?= $(FUSEGEN_ROOT)/build/fusegen
  FUSEGEN_INCLUDE      := $(FUSEGEN_ROOT)/runtime/include
  FUSEGEN_LIBFGRT      := $(FUSEGEN_ROOT)/build/libfgrt.a
  FUSEGEN_TEMPLATE_DIR := $(FUSEGEN_ROOT)/templates
  FUSEGEN_SCRIPTS      := $(FUSEGEN_ROOT)/scripts
  FUSEGEN_TARGET_SPECS := $(FUSEGEN_ROOT)/specs/targets
endif

FUSEGEN_OUT       ?= fusegen-out
FUSEGEN_BUILD     ?= $(FUSEGEN_OUT)/build
FUSEGEN_NVCC      ?= /usr/local/cuda/bin/nvcc
include $(FUSEGEN_MK_DIR)/mk/kernel-flags.mk
FUSEGEN_NVCC_FLAGS ?= $(FUSEGEN_KERNEL_NVCC_FLAGS)
FUSEGEN_CLANG_HIP ?= clang++-19
FUSEGEN_HIP_FLAGS ?= $(FUSEGEN_KERNEL_HIP_FLAGS) --rocm-device-lib-path=$(FUSEGEN_BUILD)/devlibs

FUSEGEN_CFLAGS := -I$(FUSEGEN_INCLUDE)
FUSEGEN_LDLIBS := $(FUSEGEN_LIBFGRT) -ldl

fusegen_out  = $(patsubst %/,%,$(FUSEGEN_OUT))
fusegen_args = --out $(fusegen_out) --templates $(FUSEGEN_TEMPLATE_DIR) \
               $(foreach t,$(FUSEGEN_TARGETS),--target $(t)) \
               $(foreach f,$(FUSEGEN_FILTERS),--filter '$(f)') $(FUSEGEN_SPECS)

.PHONY: fusegen-kernels fusegen-clean fusegen-force
fusegen-force:

ifneq ($(fusegen_root_goals),)
# One sub-make for both, so a parallel build never runs two in the checkout;
# it only touches files that changed, so nothing downstream rebuilds needlessly.
$(patsubst %,$(FUSEGEN_ROOT)/%,$(fusegen_root_goals)) &: fusegen-force
	@$(MAKE) --no-print-directory -q -C $(FUSEGEN_ROOT) BUILD=build $(fusegen_root_goals) || \
	 $(MAKE) --no-print-directory -C $(FUSEGEN_ROOT) BUILD=build $(fusegen_root_goals)
endif

# The outputs, known before anything is generated; not needed to clean.
ifneq ($(filter-out fusegen-clean clean,$(or $(MAKECMDGOALS),all)),)
  ifeq ($(strip $(FUSEGEN_SPECS)),)
    $(error fusegen.mk: set FUSEGEN_SPECS (model specs and a target spec, e.g. \
      $(FUSEGEN_TARGET_SPECS)/h200.yaml) before including fusegen.mk)
  endif
  FUSEGEN_OUTPUTS := $(shell $(FUSEGEN) list $(fusegen_args))
  ifneq ($(.SHELLSTATUS),0)
    $(error fusegen.mk: `$(FUSEGEN) list` failed (see above)$(if $(FUSEGEN_ROOT),; is the \
      generator built? make -C $(FUSEGEN_ROOT) build/fusegen))
  endif
endif

FUSEGEN_STAMP    := $(FUSEGEN_BUILD)/generated.stamp
FUSEGEN_CUBINS   := $(patsubst $(fusegen_out)/%.cu,$(FUSEGEN_BUILD)/%.cubin,\
                      $(filter %.cu,$(FUSEGEN_OUTPUTS)))
FUSEGEN_CODEOBJS := $(patsubst $(fusegen_out)/%.hip,$(FUSEGEN_BUILD)/%.co,\
                      $(filter %.hip,$(FUSEGEN_OUTPUTS)))
FUSEGEN_IMAGES   := $(FUSEGEN_CUBINS) $(FUSEGEN_CODEOBJS)
FUSEGEN_OBJS     := $(if $(FUSEGEN_OUTPUTS),$(FUSEGEN_BUILD)/fg_registry.o) \
                    $(addsuffix .o,$(FUSEGEN_IMAGES))

fusegen-kernels: $(FUSEGEN_OBJS) $(FUSEGEN_LIBFGRT)

# The makefiles too: they hold the generator's arguments (targets, filters).
$(FUSEGEN_STAMP): $(FUSEGEN) $(FUSEGEN_SPECS) $(wildcard $(FUSEGEN_TEMPLATE_DIR)/*) \
                  $(MAKEFILE_LIST)
	@mkdir -p $(@D)
	$(FUSEGEN) generate $(fusegen_args)
	@touch $@

# The stamp's run made them; regenerate only if one was deleted since.
$(FUSEGEN_OUTPUTS): $(FUSEGEN_STAMP)
	@test -f $@ || $(FUSEGEN) generate $(fusegen_args)

# -Xptxas -v / kernel-resource-usage: registers and spills, kept in NAME.log.
$(FUSEGEN_CUBINS): $(FUSEGEN_BUILD)/%.cubin: $(fusegen_out)/%.cu
	@mkdir -p $(@D)
	$(FUSEGEN_NVCC) $(FUSEGEN_NVCC_FLAGS) -o $@ $< > $@.log 2>&1 || \
	    { cat $@.log; rm -f $@; exit 1; }

$(FUSEGEN_BUILD)/devlibs/.stamp: $(FUSEGEN_SCRIPTS)/hip-devlibs.sh
	sh $< $(@D)
	@touch $@

# The instance name carries the arch: rmsnorm_gfx942_... -> --offload-arch=gfx942.
$(FUSEGEN_CODEOBJS): $(FUSEGEN_BUILD)/%.co: $(fusegen_out)/%.hip $(FUSEGEN_BUILD)/devlibs/.stamp
	@mkdir -p $(@D)
	$(FUSEGEN_CLANG_HIP) $(FUSEGEN_HIP_FLAGS) \
	    --offload-arch=$(firstword $(filter gfx%,$(subst _, ,$(notdir $*)))) \
	    -c $< -o $@ > $@.log 2>&1 || { cat $@.log; rm -f $@; exit 1; }

# Images become C arrays, so programs carry their kernels and need no files.
# embed rewrites NAME.cubin.c only when the bytes changed; the .embedded
# stamp records the run, so a rebuilt but identical image is embedded once.
fusegen_embed = $(FUSEGEN) embed --name $(basename $(notdir $(1))) $(1) $(1).c

$(addsuffix .embedded,$(FUSEGEN_IMAGES)): %.embedded: % $(FUSEGEN)
	$(call fusegen_embed,$*)
	@touch $@

$(addsuffix .c,$(FUSEGEN_IMAGES)): %.c: %.embedded
	@test -f $@ || $(call fusegen_embed,$*)

$(addsuffix .o,$(FUSEGEN_IMAGES)): %.o: %.c
	$(CC) -std=c17 -c -o $@ $<

$(FUSEGEN_BUILD)/fg_registry.o: $(fusegen_out)/fg_registry.c $(FUSEGEN_INCLUDE)/fg_registry.h
	@mkdir -p $(@D)
	$(CC) -std=c17 $(FUSEGEN_CFLAGS) -c -o $@ $<

fusegen-clean:
	rm -rf $(FUSEGEN_BUILD)
	rm -f $(fusegen_out)/*.cu $(fusegen_out)/*.hip $(fusegen_out)/fg_registry.c \
	    $(fusegen_out)/manifest.json

.DEFAULT_GOAL := $(fusegen_goal)
