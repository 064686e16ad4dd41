#!/bin/bash
# device-run.sh TARBALL [tests|bench|all]: one call on a GPU host that runs the GPU test suite
# (tests/gpu/run.sh) and/or the benchmark (bench/run-gpu.sh) on one build, then puts a few files
# into $OUT (the device tool returns at most 8): tests-summary.md, tests-logs.tar.gz,
# bench-results.csv, bench-summary.md, bench-log.txt, bench-env.txt.
set -u
export NCCL_NVLS_ENABLE=0
tarball=$1
what=${2:-all}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
final=${OUT:-$PWD/device-out}
mkdir -p "$final"
rc=0
if [ "$what" = tests ] || [ "$what" = all ]; then
    OUT=/tmp/tlmpi-tests-out bash "$here/run.sh" "$tarball" || rc=1
    cp /tmp/tlmpi-tests-out/summary.md "$final/tests-summary.md" 2>/dev/null
    tar czf "$final/tests-logs.tar.gz" -C /tmp tlmpi-tests-out 2>/dev/null
fi
if [ "$what" = bench ] || [ "$what" = all ]; then
    # reuse the build of the test run (same tarball, same machine) when there is one
    b=$(ls -d /tmp/tlmpi-gpu-build/tlmpi-*/ 2>/dev/null | head -1)
    if [ -z "$b" ] || [ ! -e "$b/.libs/libtlmpi.so" ]; then
        b=$(bash "$here/build.sh" "$tarball" 2>/dev/null | tail -1)
    fi
    OUT=/tmp/tlmpi-bench-out bash "$root/bench/run-gpu.sh" "${b:-$tarball}" || rc=1
    for f in results.csv summary.md log.txt env.txt; do
        cp "/tmp/tlmpi-bench-out/$f" "$final/bench-$f" 2>/dev/null
    done
fi
[ -f "$final/tests-summary.md" ] && { echo "===== tests"; cat "$final/tests-summary.md"; }
[ -f "$final/bench-summary.md" ] && { echo "===== bench"; cat "$final/bench-summary.md"; }
exit $rc
