#!/usr/bin/env bash
# scripts/fuzz.sh BUILD_DIR SECONDS [HARNESS...]: fuzzes each libFuzzer harness of tests/fuzz
# (default all: fuzz_env, fuzz_tiers, fuzz_tuning) for SECONDS, one after the other, in a build
# configured --enable-fuzz --enable-sanitize=address,undefined (clang; scripts/sanitize.sh makes one).
# Each starts from its committed seed corpus (tests/fuzz/corpus/<harness>, never written) plus the
# inputs earlier runs in this build found (BUILD_DIR/tests/fuzz/work-<harness>), so repeated runs
# go deeper. Per harness it prints one line: executions, executions per second, coverage (libFuzzer's
# cov: edges and ft: features), corpus size, and PASS, or FAIL with the crash, leak, hang (-timeout=10
# s per input) or broken property, whose input is kept as BUILD_DIR/tests/fuzz/<kind>-<sha1> (replay:
# BUILD_DIR/tests/fuzz/<harness> FILE). Exits nonzero if any harness failed.
# CI (scripts/test.sh) runs it for FUZZ_SECONDS (default 10) per harness; the long run of
# docs/DESIGN.md ("Fuzzing") was: nice scripts/fuzz.sh BUILD_DIR 600.
# FUZZ_JOBS=N runs N harnesses at once (default 1).
set -uo pipefail
[ $# -ge 2 ] || { echo "usage: $0 BUILD_DIR SECONDS [HARNESS...]" >&2; exit 2; }
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "$1" && pwd)
secs=$2
shift 2
harnesses=${*:-fuzz_env fuzz_tiers fuzz_tuning}

one() { # harness: fuzz it, print its line, return its status
    local h=$1 prog=$build/tests/fuzz/$1 work=$build/tests/fuzz/work-$1 log=$build/tests/fuzz/$1.fuzz.log rc
    if [ ! -x "$prog" ]; then
        echo "$h: FAIL: $prog not built (configure --enable-fuzz)"
        return 1
    fi
    mkdir -p "$work"
    # the sanitizers' reports make libFuzzer stop and keep the input; leaks are checked per input
    ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
        "$prog" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=4096 -print_final_stats=1 \
        -artifact_prefix="$build/tests/fuzz/" "$work" "$src/tests/fuzz/corpus/$h" >"$log" 2>&1
    rc=$?
    local execs rate cov ft units
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
    cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -1 | cut -d' ' -f2)
    ft=$(grep -oE 'ft: [0-9]+' "$log" | tail -1 | cut -d' ' -f2)
    units=$(find "$work" -type f | wc -l)
    if [ $rc = 0 ]; then
        echo "$h: PASS, ${secs} s: ${execs:-?} executions (${rate:-?}/s), cov ${cov:-?} ft ${ft:-?}, corpus $units"
    else
        echo "$h: FAIL (exit $rc) after ${execs:-?} executions; the input: $(grep -aoE "$build/tests/fuzz/(crash|leak|timeout|oom|slow-unit)-[0-9a-f]+" "$log" | tail -1); log $log:"
        grep -aE 'ERROR|FUZZ_CHECK|SUMMARY|runtime error|#[0-9]+ 0x' "$log" | head -25 | sed 's/^/    /'
    fi
    return $rc
}

fail=0
if [ "${FUZZ_JOBS:-1}" -gt 1 ]; then
    pids=()
    for h in $harnesses; do
        one "$h" >"$build/tests/fuzz/$h.line" &
        pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p" || fail=1; done
    for h in $harnesses; do cat "$build/tests/fuzz/$h.line"; done
else
    for h in $harnesses; do one "$h" || fail=1; done
fi
exit $fail
