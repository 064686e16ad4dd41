#!/bin/sh
# corpus.sh [BUILD_DIR]: every libFuzzer harness of tests/fuzz (fuzz_env, fuzz_tiers, fuzz_tuning)
# once over its committed seed corpus, tests/fuzz/corpus/<harness>/ (libFuzzer -runs=0: each file
# once, no mutation): shows that each seed passes the harness's checks and the sanitizers the build
# has. A regression run of known inputs, fast; scripts/fuzz.sh does the fuzzing. Skips (77) where the
# harnesses are not built (configure without --enable-fuzz).
here=$(cd "$(dirname "$0")" && pwd)
srcdir=${top_srcdir:-$here/../..}
builddir=${1:-${top_builddir:-.}}
fail=0
for h in fuzz_env fuzz_tiers fuzz_tuning; do
    prog=$builddir/tests/fuzz/$h
    if [ ! -x "$prog" ]; then
        echo "SKIP: $prog not built (configure --enable-fuzz, clang)"
        exit 77
    fi
    n=$(ls "$srcdir/tests/fuzz/corpus/$h" | wc -l)
    if "$prog" -runs=0 "$srcdir/tests/fuzz/corpus/$h" >"$builddir/tests/fuzz/$h.corpus.log" 2>&1; then
        echo "$h: PASS ($n seeds)"
    else
        echo "$h: FAIL ($n seeds)"
        tail -30 "$builddir/tests/fuzz/$h.corpus.log"
        fail=1
    fi
done
exit $fail
