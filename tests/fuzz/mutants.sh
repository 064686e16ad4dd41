#!/usr/bin/env bash
# tests/fuzz/mutants.sh BUILD_DIR [SECONDS]: shows that the fuzz harnesses find planted bugs. For each
# mutant below, the parser's source with the bug planted is compiled with the build's flags into a
# copy of its libtlmpi_core, the harness is linked against that copy (the build and the sources stay
# as they are) and fuzzed SECONDS (default 30) from its seed corpus; the mutant must be found (a
# crash, a sanitizer report or a broken property). BUILD_DIR: a build configured --enable-fuzz
# --enable-sanitize=address,undefined with its fuzz harnesses built. Prints one line per mutant and
# exits nonzero if one was not found.
#   tiers_9th_entry   plan.c: the entry-count check lets a 9th entry be written (past e[8])
#   env_size_wrap     env.c: no check that a size fits int64 (2^63 and above wrap negative)
#   tuning_long_table tuning.c: a table copied without its length check (strcpy into 256 bytes)
set -uo pipefail
[ $# -ge 1 ] || { echo "usage: $0 BUILD_DIR [SECONDS]" >&2; exit 2; }
src=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "$1" && pwd)
secs=${2:-30}
work=$build/tests/fuzz/mutants
rm -rf "$work"
mkdir -p "$work"
cd "$build" || exit 1
mk() { make -s -f Makefile -f - tlmpi-print-var V="$1" <<'MK'
tlmpi-print-var:
	@echo $($(V))
MK
}
compile="$(mk CC) $(mk DEFS) -I. -I$src $(mk AM_CPPFLAGS) $(mk CPPFLAGS) $(mk CFLAGS) $(mk TLMPI_VIS_CFLAGS) -fPIC"
link="$(mk CC) $(mk CFLAGS) $(mk LDFLAGS) -fsanitize=fuzzer $(mk CUDA_LDFLAGS)"
fail=0
mutant() { # name harness source member sed-expression
    local name=$1 h=$2 file=$3 member=$4 expr=$5 d=$work/$1 out
    mkdir -p "$d"
    sed "$expr" "$src/$file" >"$d/$(basename "$file")"
    if cmp -s "$src/$file" "$d/$(basename "$file")"; then
        echo "mutant $name: FAIL: the sed expression changed nothing in $file"
        fail=1
        return
    fi
    cp .libs/libtlmpi_core.a "$d/libcore.a"
    # shellcheck disable=SC2086
    if ! $compile -I"$src/$(dirname "$file")" -c "$d/$(basename "$file")" -o "$d/$member" 2>"$d/build.log" ||
        ! ar r "$d/libcore.a" "$d/$member" 2>>"$d/build.log" ||
        ! $link -o "$d/$h" "tests/fuzz/$h.o" "$d/libcore.a" -lhwloc -lcudart -lstdc++ -lm -lpthread -ldl 2>>"$d/build.log"; then
        echo "mutant $name: FAIL: not built ($d/build.log)"
        fail=1
        return
    fi
    mkdir -p "$d/tests/fuzz"
    mv "$d/$h" "$d/tests/fuzz/$h"
    out=$(bash "$src/scripts/fuzz.sh" "$d" "$secs" "$h" 2>&1)
    if [ $? != 0 ]; then
        echo "mutant $name: found ($(echo "$out" | head -1 | sed 's/: FAIL (exit \([0-9]*\)) after \([0-9?]*\) executions.*/: exit \1 after \2 executions/'); $(echo "$out" | grep -a -m1 -oE 'FUZZ_CHECK failed[^:]*: [^:]*|ERROR: AddressSanitizer: [a-z-]+|runtime error: [^ ]+ [^ ]+ [^ ]+'))"
    else
        echo "mutant $name: FAIL: not found in $secs s: $out"
        fail=1
    fi
}
mutant tiers_9th_entry fuzz_tiers src/comm/plan.c libtlmpi_core_la-plan.o \
    's/if (t->n == TLMPI_PLAN_MAX_ENTRIES) {/if (t->n > TLMPI_PLAN_MAX_ENTRIES) {/'
mutant env_size_wrap fuzz_env src/core/env.c libtlmpi_core_la-env.o \
    's/ || (v << shift) > INT64_MAX) {/) {/'
mutant tuning_long_table fuzz_tuning src/comm/tuning.c libtlmpi_core_la-tuning.o \
    's/if (strlen(t) >= TLMPI_TUNING_SPEC_LEN) {/if (0) {/; s/snprintf(specs\[c\], TLMPI_TUNING_SPEC_LEN, "%s", t);/strcpy(specs[c], t);/'
exit $fail
