# fusegen: build the generator and runtime, generate and compile kernels, test.
# `make help` lists the targets.  The README's two commands are `make run`
# (set-up + main job) and `make check` (set-up + tests).

NPROC := $(shell nproc 2>/dev/null || echo 2)
MAKEFLAGS += --no-builtin-rules
.SUFFIXES:

CC       ?= gcc
OPT      ?= -O2 -g
FG_CFLAGS = -std=c17 -D_GNU_SOURCE -Wall -Wextra -Werror -MMD -MP -Igenerator -Iruntime/include
LIBS      = -lcyaml -lyaml -ljson-c -lm
BUILD    ?= build
PREFIX   ?= /usr/local

GEN_SRCS  := $(sort $(wildcard generator/*.c))
LIB_SRCS  := $(filter-out generator/main.c,$(GEN_SRCS))
TEST_SRCS := $(sort $(wildcard tests/unit/test_*.c))

FUSEGEN   := $(BUILD)/fusegen

# What the main job generates: every shipped spec, every shipped target.
SPECS     := $(sort $(wildcard specs/models/*.yaml specs/gemm/*.yaml specs/targets/*.yaml \
                               specs/tuning/*.yaml))
GEN_OUT   ?= generated

.PHONY: all run check deps generate kernels kernels-ci profile test check-asan check-valgrind check-gpu bench-ring \
        check-gpu-sanitize bench candidates tune fusegen-static \
        clean help install update-golden runtime example

all: kernels

help:
	@echo "make run         set-up (deps) + main job: generate and compile all kernels;"
	@echo "                 on a GPU machine also validate and time them"
	@echo "make check       set-up (deps) + every test CI runs (test, check-asan, check-valgrind,"
	@echo "                 fuzz-smoke)"
	@echo "make deps        install the Debian packages (as root; quick when present)"
	@echo "make generate    run fusegen on the shipped specs into $(GEN_OUT)/"
	@echo "make kernels     compile every generated kernel through the resource gate"
	@echo "make kernels-ci  compile one instance of every distinct code path"
	@echo "make candidates  tuning candidates (generate --candidates) compiled through the gate,"
	@echo "                 which discards those that spill (CANDIDATE_SPECS, CANDIDATE_FILTER)"
	@echo "make tune        fusegen tune --target TUNE_TARGET on the GPU: candidates, timings, TUNE_OUT"
	@echo "                 (default specs/tuning/h200.yaml; needs a GPU)"
	@echo "make profile     fusegen profile on 2 GPUs: peer copies, the overlap specs' GEMMs and the"
	@echo "                 executor's cost per call into PROFILE_TARGET (default specs/targets/h200.yaml)"
	@echo "make fusegen-static  fusegen without shared libraries (for a GPU machine lacking them)"
	@echo "make test        unit and golden suites, kernels-ci, the AMD objects' MFMA check, the GPU"
	@echo "                 test programs built (not run), and the AMD kernels, the sm_90a decode grid"
	@echo "                 form and MLA block on the host emulation (tests/emu)"
	@echo "make check-asan  unit suites under AddressSanitizer + UBSan"
	@echo "make check-valgrind  the generator under valgrind on every spec, config and bad input"
	@echo "make fuzz        libFuzzer on the spec loader and the importer (FUZZ_SECONDS=600 each);"
	@echo "                 fuzz-smoke: 20 s each (CI); fuzz-coverage: what the corpora reach"
	@echo "make check-gpu   numeric GPU tests (skipped, and said so, without a GPU)"
	@echo "make check-gpu-sanitize  compute-sanitizer memcheck, synccheck, racecheck over every"
	@echo "                 kernel family at small dims (GPU only)"
	@echo "make bench       GPU benchmarks into bench/results (needs a GPU; overlap: 2 GPUs)"
	@echo "make bench-ring  the MLA block's ring alone: bulk-copy piece shapes against LSU loads (GPU, sm_90a)"
	@echo "make runtime     libfgrt (static and shared)"
	@echo "make example     build and run examples/downstream (reports a missing GPU)"
	@echo "make install     PREFIX=... bin, lib, include, share/fusegen, pkg-config"

# ---- the README's two commands ----

run:
	@$(MAKE) --no-print-directory deps
	@$(MAKE) --no-print-directory -j$(NPROC) all
	@$(MAKE) --no-print-directory check-gpu
	@$(MAKE) --no-print-directory bench

check:
	@$(MAKE) --no-print-directory deps
	@$(MAKE) --no-print-directory -j$(NPROC) test
	@$(MAKE) --no-print-directory check-valgrind
	@$(MAKE) --no-print-directory -j$(NPROC) fuzz-build
	@$(MAKE) --no-print-directory fuzz-smoke
	@$(MAKE) --no-print-directory -j$(NPROC) check-asan

deps:
	@scripts/deps.sh

# ---- generator ----

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(FG_CFLAGS) $(OPT) $(EXTRA_CFLAGS) -DFG_DEFAULT_TEMPLATES='"$(abspath templates)"' -c $< -o $@

$(BUILD)/libfusegen.a: $(LIB_SRCS:%.c=$(BUILD)/obj/%.o)
	@rm -f $@
	ar rcs $@ $^

$(FUSEGEN): $(BUILD)/obj/generator/main.o $(BUILD)/libfusegen.a
	$(CC) $(OPT) $(EXTRA_CFLAGS) -o $@ $^ $(LIBS)

# fusegen with its libraries linked in, for a machine that lacks them (a lent
# GPU machine running `fusegen tune` on candidates compiled elsewhere).
$(BUILD)/fusegen-static: $(BUILD)/obj/generator/main.o $(BUILD)/libfusegen.a
	$(CC) -static $(OPT) $(EXTRA_CFLAGS) -o $@ $^ $(LIBS)

fusegen-static: $(BUILD)/fusegen-static

generate: $(FUSEGEN)
	$(FUSEGEN) generate --out $(GEN_OUT) $(SPECS)

# ---- kernels (mk/kernels.mk lists them with `fusegen list`) ----

KERNEL_MAKE = $(MAKE) --no-print-directory -f mk/kernels.mk FUSEGEN=$(FUSEGEN) BUILD=$(BUILD)

kernels: $(FUSEGEN)
	@$(KERNEL_MAKE) GEN_OUT=$(GEN_OUT) KBUILD=$(BUILD)/kernels SPECS="$(SPECS)" all

# The GPU test specs add code paths the shipped ones lack (bf16 MHA, batch 2, the
# GPT-J RoPE layout).
kernels-ci: $(FUSEGEN)
	@$(KERNEL_MAKE) GEN_OUT=$(BUILD)/ci/generated KBUILD=$(BUILD)/ci/kernels \
	    SPECS="$(SPECS) $(wildcard tests/gpu/specs/*.yaml)" LIST_OPTS=--one-per-path all

# Tuning candidates: every ring configuration and RMSNorm block size that
# plans, for the specs and instance-name filters given (shell globs, any of
# which keeps an instance; compiling every ring candidate of every spec takes
# hours on 2 cores); the gate keeps the figures and marks the spills.
CANDIDATE_SPECS  ?= specs/models/llama-2-7b.yaml specs/targets/h200.yaml
CANDIDATE_FILTER ?= decode_attn_*_b1_*ring* rmsnorm_*
candidates: $(FUSEGEN)
	@$(KERNEL_MAKE) GEN_OUT=$(BUILD)/candidates/generated KBUILD=$(BUILD)/candidates/kernels \
	    SPECS="$(CANDIDATE_SPECS)" \
	    LIST_OPTS="--candidates $(foreach g,$(CANDIDATE_FILTER),--filter '$(g)')" all

# fusegen tune --target: the candidates above compiled (into
# $(BUILD)/candidates), timed on this machine's GPU (test_decode_attn the
# ring's; test_rmsnorm and test_mla_decode, found beside it, the others'),
# the fastest checked, the winners merged into TUNE_OUT.
TUNE_TARGET ?= h200
TUNE_OUT ?= specs/tuning/$(TUNE_TARGET).yaml
tune: $(FUSEGEN)
	+@export BUILD=$(BUILD) && . tests/gpu/gpu-env.sh && if why=$$(fg_gpu_missing); then \
	    echo "make tune needs a GPU: $$why"; exit 1; fi && fg_gpu_build && \
	    $(FUSEGEN) tune --target $(TUNE_TARGET) $(foreach g,$(CANDIDATE_FILTER),--filter '$(g)') \
	        --work $(BUILD)/candidates --harness $(BUILD)/gpu/test_decode_attn --out $(TUNE_OUT) \
	        $(CANDIDATE_SPECS)

# Measures, on this machine's first two GPUs, what the overlap cost model
# reads, into the interconnect block of PROFILE_TARGET.
PROFILE_TARGET ?= specs/targets/h200.yaml
profile: $(FUSEGEN)
	@export BUILD=$(BUILD) && . tests/gpu/gpu-env.sh && if why=$$(fg_gpu_missing); then \
	    echo "make profile needs 2 GPUs: $$why"; exit 1; fi && fg_gpu_build && \
	    $(FUSEGEN) profile --target $(PROFILE_TARGET) \
	        --harness $(BUILD)/gpu/test_overlap --work $(BUILD)/profile $(wildcard specs/gemm/*.yaml)

# ---- tests ----

$(BUILD)/tests/%: tests/unit/%.c $(BUILD)/libfusegen.a
	@mkdir -p $(dir $@)
	$(CC) $(FG_CFLAGS) $(OPT) $(EXTRA_CFLAGS) -MF $@.d -o $@ $< $(BUILD)/libfusegen.a $(LIBS) -lcriterion

TEST_BINS := $(TEST_SRCS:tests/unit/%.c=$(BUILD)/tests/%)

test: $(TEST_BINS) $(FUSEGEN)
	@$(MAKE) --no-print-directory kernels-ci
	@tests/integration/matrix-units.sh $(BUILD)/ci/kernels
	@BUILD=$(BUILD) tests/integration/gpu-programs.sh
	@FUSEGEN=$(FUSEGEN) BUILD=$(BUILD) CUDA_HOME=$(CUDA_HOME) tests/emu/run.sh
	@$(MAKE) --no-print-directory example
	@tests/integration/downstream.sh
	@FUSEGEN=$(FUSEGEN) tests/integration/killed-generate.sh
	@scripts/run-tests.sh $(TEST_BINS)

check-asan:
	@$(MAKE) --no-print-directory BUILD=build-asan \
	    EXTRA_CFLAGS="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" \
	    OPT="-O1 -g" $(patsubst $(BUILD)/%,build-asan/%,$(TEST_BINS)) build-asan/fusegen
	@ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 FUSEGEN=build-asan/fusegen \
	    scripts/run-tests.sh $(patsubst $(BUILD)/%,build-asan/%,$(TEST_BINS))

check-valgrind: $(FUSEGEN)
	@FUSEGEN=$(FUSEGEN) scripts/valgrind-generator.sh

check-gpu:
	@BUILD=$(BUILD) scripts/check-gpu.sh

check-gpu-sanitize:
	@BUILD=$(BUILD) scripts/check-gpu-sanitize.sh

# Rewrites tests/golden/ from the current generator (after an intended change).
update-golden: $(FUSEGEN) $(BUILD)/tests/test_ref_decode
	$(FUSEGEN) generate --out tests/golden --filter rmsnorm_sm90a_f16_h4096_t256c \
	    specs/models/llama-2-7b.yaml specs/targets/h200.yaml
	FG_UPDATE_GOLDEN=1 $(BUILD)/tests/test_ref_decode --jobs 1 || true

bench:
	@BUILD=$(BUILD) scripts/bench.sh

# The ring microbenchmark (GPU machine, sm_90a): bulk-copy piece shapes through
# a ring of shared-memory slots against the LSU's loads, GB/s a shape.
bench-ring:
	@mkdir -p $(BUILD)/bench
	$(CUDA_HOME)/bin/nvcc -O3 -std=c++17 -arch=sm_90a -o $(BUILD)/bench/ring_bench bench/ring_bench.cu
	$(BUILD)/bench/ring_bench

clean:
	rm -rf $(BUILD) build-asan build-fuzz examples/downstream/build $(GEN_OUT)/*.cu $(GEN_OUT)/*.hip $(GEN_OUT)/fg_registry.c \
	    $(GEN_OUT)/manifest.json

# ---- runtime: libfgrt (C17; CUDA headers only, the driver is dlopen'ed) ----
CUDA_HOME ?= /usr/local/cuda
RT_SRCS   := $(sort $(wildcard runtime/src/*.c))
RT_OBJS   := $(RT_SRCS:%.c=$(BUILD)/obj/%.o)
RT_CFLAGS  = -std=c17 -D_GNU_SOURCE -Wall -Wextra -Werror -MMD -MP -fPIC -fvisibility=hidden \
             -Iruntime/include -Iruntime/src -I$(CUDA_HOME)/include

# More specific than $(BUILD)/obj/%.o (GNU make prefers the shorter stem).
$(BUILD)/obj/runtime/%.o: runtime/%.c
	@mkdir -p $(dir $@)
	$(CC) $(RT_CFLAGS) $(OPT) $(EXTRA_CFLAGS) -c $< -o $@

$(BUILD)/libfgrt.a: $(RT_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/libfgrt.so: $(RT_OBJS)
	$(CC) -shared -Wl,-soname,libfgrt.so -Wl,--no-undefined $(OPT) $(EXTRA_CFLAGS) -o $@ $^ -ldl

runtime: $(BUILD)/libfgrt.a $(BUILD)/libfgrt.so

# test_runtime links libfgrt (not libfusegen) and drives it through a fake
# driver declared in runtime/src/internal.h.  An explicit rule beats the pattern.
$(BUILD)/tests/test_runtime: tests/unit/test_runtime.c $(BUILD)/libfgrt.a
	@mkdir -p $(dir $@)
	$(CC) $(FG_CFLAGS) -Iruntime/src $(OPT) $(EXTRA_CFLAGS) -MF $@.d -o $@ $< \
	    $(BUILD)/libfgrt.a -ldl -lcriterion

# The overlap executor's issue order: libfgrt's host-only part.
$(BUILD)/tests/test_overlap_order: tests/unit/test_overlap_order.c $(BUILD)/libfgrt.a
	@mkdir -p $(dir $@)
	$(CC) $(FG_CFLAGS) $(OPT) $(EXTRA_CFLAGS) -MF $@.d -o $@ $< $(BUILD)/libfgrt.a -ldl -lcriterion

# The overlap executor through a fake driver (internal.h): host memory, deferred streams.
$(BUILD)/tests/test_overlap_exec: tests/unit/test_overlap_exec.c $(BUILD)/libfgrt.a
	@mkdir -p $(dir $@)
	$(CC) $(FG_CFLAGS) -Iruntime/src $(OPT) $(EXTRA_CFLAGS) -MF $@.d -o $@ $< \
	    $(BUILD)/libfgrt.a -ldl -lcriterion

# The C reference of the GPU tests against its golden outputs (no GPU needed),
# and against the generator's RoPE tables (libfusegen).
$(BUILD)/tests/test_ref_decode: tests/unit/test_ref_decode.c tests/gpu/ref_decode.c \
        tests/gpu/numerics.c tests/gpu/ref_decode.h tests/gpu/harness.h $(BUILD)/libfusegen.a
	@mkdir -p $(dir $@)
	$(CC) $(FG_CFLAGS) -Itests/gpu -I$(CUDA_HOME)/include $(OPT) $(EXTRA_CFLAGS) -MF $@.d -o $@ \
	    tests/unit/test_ref_decode.c tests/gpu/ref_decode.c tests/gpu/numerics.c \
	    $(BUILD)/libfusegen.a $(LIBS) -lpthread -lm -lcriterion

# The MLA attention-core reference against its identities (no GPU needed).
$(BUILD)/tests/test_ref_mla: tests/unit/test_ref_mla.c tests/gpu/ref_mla.c tests/gpu/numerics.c \
        tests/gpu/ref_mla.h tests/gpu/harness.h
	@mkdir -p $(dir $@)
	$(CC) $(FG_CFLAGS) -Itests/gpu -I$(CUDA_HOME)/include $(OPT) $(EXTRA_CFLAGS) -MF $@.d -o $@ \
	    tests/unit/test_ref_mla.c tests/gpu/ref_mla.c tests/gpu/numerics.c -lm -lcriterion

# The MLA block reference against the absorbed computation (no GPU needed).
$(BUILD)/tests/test_ref_mla_block: tests/unit/test_ref_mla_block.c tests/gpu/ref_mla_block.c \
        tests/gpu/numerics.c tests/gpu/ref_mla_block.h tests/gpu/harness.h
	@mkdir -p $(dir $@)
	$(CC) $(FG_CFLAGS) -Itests/gpu -I$(CUDA_HOME)/include $(OPT) $(EXTRA_CFLAGS) -MF $@.d -o $@ \
	    tests/unit/test_ref_mla_block.c tests/gpu/ref_mla_block.c tests/gpu/numerics.c -lm -lcriterion

# Instance names as the GPU tests read them, and the harness's line fit (no GPU needed).
$(BUILD)/tests/test_harness_names: tests/unit/test_harness_names.c tests/gpu/names.c \
        tests/gpu/numerics.c tests/gpu/harness.h
	@mkdir -p $(dir $@)
	$(CC) $(FG_CFLAGS) -Itests/gpu -I$(CUDA_HOME)/include $(OPT) $(EXTRA_CFLAGS) -MF $@.d -o $@ \
	    tests/unit/test_harness_names.c tests/gpu/names.c tests/gpu/numerics.c -lm -lcriterion

# The downstream example as CI builds it from a clean clone (fusegen.mk runs this
# Makefile for build/fusegen and build/libfgrt.a).  Without a GPU the demo says so, exit 0.
example: $(FUSEGEN) $(BUILD)/libfgrt.a
	@$(MAKE) --no-print-directory -C examples/downstream
	examples/downstream/build/demo

# ---- install ----
VERSION := $(shell sed -n 's/^\#define FG_VERSION "\(.*\)"/\1/p' generator/emit.h)
SHARE    = $(DESTDIR)$(PREFIX)/share/fusegen

install: $(FUSEGEN) $(BUILD)/libfgrt.a $(BUILD)/libfgrt.so
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/include \
	    $(DESTDIR)$(PREFIX)/lib/pkgconfig $(SHARE)/templates $(SHARE)/scripts $(SHARE)/targets \
	    $(SHARE)/mk
	install -m 755 $(FUSEGEN) $(DESTDIR)$(PREFIX)/bin/fusegen
	install -m 644 $(BUILD)/libfgrt.a $(DESTDIR)$(PREFIX)/lib/libfgrt.a
	install -m 755 $(BUILD)/libfgrt.so $(DESTDIR)$(PREFIX)/lib/libfgrt.so
	install -m 644 runtime/include/fgrt.h runtime/include/fg_registry.h \
	    runtime/include/fgrt_overlap.h runtime/include/fgrt_limits.h $(DESTDIR)$(PREFIX)/include/
	install -m 644 templates/* $(SHARE)/templates/
	install -m 644 specs/targets/*.yaml $(SHARE)/targets/
	install -d $(SHARE)/tuning
	install -m 644 specs/tuning/*.yaml $(SHARE)/tuning/
	install -m 755 scripts/hip-devlibs.sh $(SHARE)/scripts/
	install -m 644 fusegen.mk $(SHARE)/fusegen.mk
	install -m 644 mk/kernel-flags.mk $(SHARE)/mk/kernel-flags.mk
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@VERSION@|$(VERSION)|g' fusegen.pc.in \
	    > $(DESTDIR)$(PREFIX)/lib/pkgconfig/fusegen.pc

-include $(shell find $(BUILD)/obj $(BUILD)/tests -name '*.d' 2>/dev/null)

include mk/fuzz.mk
