# Fuzzing the generator's inputs with libFuzzer (clang-19, Debian's
# libclang-rt-19-dev): the spec loader and the config.json importer, built
# with AddressSanitizer and UBSan, seeded with the shipped specs, the test
# specs and configs, and the bad-input corpora.  Included by the Makefile.
#
#   make fuzz                 each target for FUZZ_SECONDS (default 600)
#   make fuzz-smoke           each target for 20 s (CI)
#   make fuzz-coverage        line coverage of the generator's input code
#                             reached by the saved corpora (llvm-cov)
#
# Corpora grow in build-fuzz/corpus/<target>/; a crash is written to
# build-fuzz/crashes/<target>/ and fails the run; it then belongs in
# tests/specs/bad/ or tests/data/hf/ as a regression test.

FUZZ_CC      ?= clang-19
FUZZ_BUILD   := build-fuzz
FUZZ_SECONDS ?= 600
FUZZ_SAN     := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_CFLAGS  := -std=c17 -D_GNU_SOURCE -Wall -Wextra -Werror -Igenerator -Iruntime/include -O1 -g $(FUZZ_SAN)
FUZZ_TARGETS := fuzz_spec fuzz_importhf

FUZZ_LIB_OBJS := $(LIB_SRCS:%.c=$(FUZZ_BUILD)/obj/%.o)
FUZZ_COV_OBJS := $(LIB_SRCS:%.c=$(FUZZ_BUILD)/cov/%.o)

# the seeds of each target (directories; libFuzzer reads every file in them)
FUZZ_SEEDS_fuzz_spec     := specs/models specs/gemm specs/targets specs/tuning tests/specs/bad \
                            tests/gpu/specs
FUZZ_SEEDS_fuzz_importhf := tests/data/hf

.PHONY: fuzz fuzz-smoke fuzz-build fuzz-coverage

# -MMD -MP: an object is rebuilt when a header it includes changes (a stale
# one, built against an older struct layout, made fuzz_spec report a leak
# that the sources did not have)
$(FUZZ_BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -MMD -MP -fsanitize=fuzzer-no-link -c $< -o $@

$(FUZZ_BUILD)/cov/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -MMD -MP -fprofile-instr-generate -fcoverage-mapping -c $< -o $@

-include $(FUZZ_LIB_OBJS:.o=.d) $(FUZZ_COV_OBJS:.o=.d)

# specs/targets/h200.yaml and mi300x.yaml as bytes, for fuzz_spec's planning
$(FUZZ_BUILD)/%_target.c: specs/targets/%.yaml $(FUSEGEN)
	@mkdir -p $(dir $@)
	$(FUSEGEN) embed --name $*_target $< $@

FUZZ_TARGET_IMAGES := $(FUZZ_BUILD)/h200_target.c $(FUZZ_BUILD)/mi300x_target.c

$(FUZZ_BUILD)/fuzz_spec: fuzz/fuzz_spec.c $(FUZZ_TARGET_IMAGES) $(FUZZ_LIB_OBJS)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $^ $(LIBS)

$(FUZZ_BUILD)/fuzz_importhf: fuzz/fuzz_importhf.c $(FUZZ_LIB_OBJS)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $^ $(LIBS)

# the same targets with a plain main (libFuzzer's, running given files once)
# and source-based coverage
$(FUZZ_BUILD)/cov_fuzz_spec: fuzz/fuzz_spec.c $(FUZZ_TARGET_IMAGES) $(FUZZ_COV_OBJS)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -fprofile-instr-generate -fcoverage-mapping \
	    -o $@ $^ $(LIBS)

$(FUZZ_BUILD)/cov_fuzz_importhf: fuzz/fuzz_importhf.c $(FUZZ_COV_OBJS)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -fprofile-instr-generate -fcoverage-mapping \
	    -o $@ $^ $(LIBS)

fuzz-build: $(FUZZ_TARGETS:%=$(FUZZ_BUILD)/%)

fuzz: fuzz-build
	@$(foreach t,$(FUZZ_TARGETS),FUZZ_SECONDS=$(FUZZ_SECONDS) \
	    scripts/fuzz-run.sh $(FUZZ_BUILD) $(t) $(FUZZ_SEEDS_$(t)) &&) true

fuzz-smoke:
	@$(MAKE) --no-print-directory fuzz FUZZ_SECONDS=20

fuzz-coverage: $(FUZZ_TARGETS:%=$(FUZZ_BUILD)/cov_%)
	@$(foreach t,$(FUZZ_TARGETS),scripts/fuzz-coverage.sh $(FUZZ_BUILD) $(t) $(FUZZ_SEEDS_$(t)) &&) true
