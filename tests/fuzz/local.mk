# Fuzzing (tests/fuzz): libFuzzer harnesses of every parser of outside input, built where configure
# ran with --enable-fuzz (clang). make check runs tests/fuzz/corpus.sh: each harness over its
# committed seed corpus once (skips, 77, where they are not built); scripts/fuzz.sh SECONDS fuzzes.
#   fuzz_env     TLMPI_* values: size, int, bool, tri, enum, list (src/core/env.c)
#   fuzz_tiers   TLMPI_<COLL>_TIERS tables and the plan filled from them (src/comm/plan.c)
#   fuzz_tuning  TLMPI_TUNING_FILE files and their tables (src/comm/tuning.c)
EXTRA_DIST += tests/fuzz/fuzz_common.h tests/fuzz/corpus.sh tests/fuzz/corpus tests/fuzz/mutants.sh scripts/fuzz.sh
TESTS += tests/fuzz/corpus.sh
if ENABLE_FUZZ
FUZZ_HARNESSES = tests/fuzz/fuzz_env tests/fuzz/fuzz_tiers tests/fuzz/fuzz_tuning
check_PROGRAMS += $(FUZZ_HARNESSES)
FUZZ_LIBS_ = libtlmpi_core.la $(CUDA_LIBS) -lm
FUZZ_LINK_FLAGS = -no-install -fsanitize=fuzzer $(CUDA_LDFLAGS)
tests_fuzz_fuzz_env_SOURCES = tests/fuzz/fuzz_env.c tests/fuzz/fuzz_common.h
tests_fuzz_fuzz_env_LDADD = $(FUZZ_LIBS_)
tests_fuzz_fuzz_env_LDFLAGS = $(FUZZ_LINK_FLAGS)
tests_fuzz_fuzz_tiers_SOURCES = tests/fuzz/fuzz_tiers.c tests/fuzz/fuzz_common.h
tests_fuzz_fuzz_tiers_LDADD = $(FUZZ_LIBS_)
tests_fuzz_fuzz_tiers_LDFLAGS = $(FUZZ_LINK_FLAGS)
tests_fuzz_fuzz_tuning_SOURCES = tests/fuzz/fuzz_tuning.c tests/fuzz/fuzz_common.h
tests_fuzz_fuzz_tuning_LDADD = $(FUZZ_LIBS_)
tests_fuzz_fuzz_tuning_LDFLAGS = $(FUZZ_LINK_FLAGS)
endif
