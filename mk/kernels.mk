# Compiles generated kernels through the resource gate.  Called by the main
# Makefile with FUSEGEN, SPECS, GEN_OUT, KBUILD (and LIST_OPTS); the file list
# comes from `fusegen list`, so Make knows every output before generating.

include mk/kernel-flags.mk
NVCC      ?= /usr/local/cuda/bin/nvcc
CLANG_HIP ?= clang++-19
NVCC_FLAGS = $(FUSEGEN_KERNEL_NVCC_FLAGS)
HIP_FLAGS  = $(FUSEGEN_KERNEL_HIP_FLAGS) --rocm-device-lib-path=$(KBUILD)/../devlibs

GEN_ARGS  := --out $(GEN_OUT) $(LIST_OPTS) $(SPECS)
OUTS      := $(shell $(FUSEGEN) list $(GEN_ARGS))
ifeq ($(OUTS),)
$(error `$(FUSEGEN) list` failed; run `$(FUSEGEN) list $(GEN_ARGS)` to see why)
endif
CU_SRCS   := $(filter %.cu,$(OUTS))
HIP_SRCS  := $(filter %.hip,$(OUTS))
TEMPLATES := $(wildcard templates/*)

CUBINS    := $(CU_SRCS:$(GEN_OUT)/%.cu=$(KBUILD)/%.cubin)
CODEOBJS  := $(HIP_SRCS:$(GEN_OUT)/%.hip=$(KBUILD)/%.co)
LOGS      := $(CUBINS:%=%.log) $(CODEOBJS:%=%.log)

.PHONY: all
all: $(KBUILD)/manifest.json

# What generate is asked for, kept beside its output and rewritten only when
# it changes (a narrower --filter, other specs), so a new selection reruns
# generate even when every file it lists is already there.
GEN_STAMP := $(GEN_OUT)/.generate-args
$(shell mkdir -p $(GEN_OUT))
ifneq ($(file < $(GEN_STAMP)),$(GEN_ARGS))
$(file > $(GEN_STAMP),$(GEN_ARGS))
endif

# One grouped rule: a changed spec, template, generator or selection reruns
# generate, which rewrites only the files whose content changed.
$(OUTS) &: $(FUSEGEN) $(SPECS) $(TEMPLATES) $(GEN_STAMP)
	$(FUSEGEN) generate $(GEN_ARGS)

$(KBUILD)/%.cubin: $(GEN_OUT)/%.cu
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCC_FLAGS) -o $@ $< > $@.log 2>&1 || { cat $@.log; rm -f $@; exit 1; }

$(KBUILD)/../devlibs/.stamp: scripts/hip-devlibs.sh
	scripts/hip-devlibs.sh $(dir $@)
	@touch $@

$(KBUILD)/%.co: $(GEN_OUT)/%.hip $(KBUILD)/../devlibs/.stamp
	@mkdir -p $(dir $@)
	$(CLANG_HIP) $(HIP_FLAGS) --offload-arch=$(firstword $(filter gfx%,$(subst _, ,$(notdir $*)))) \
	    -c $< -o $@ > $@.log 2>&1 || { cat $@.log; rm -f $@; exit 1; }

# The gate: resource figures into the manifest; any spill fails the build.
$(KBUILD)/manifest.json: $(GEN_OUT)/manifest.json $(CUBINS) $(CODEOBJS)
	$(FUSEGEN) gate --manifest $< --out $@ $(LOGS)
