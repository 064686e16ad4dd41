#!/bin/bash
# run.sh TARBALL: the whole GPU test run on a GPU host with Open MPI or MPICH.
#  1. build.sh (configure + make + check programs) in /tmp/tlmpi-gpu-build
#  2. guard self-test: a device pointer handed to PMPI_* directly must be caught by the guard
#  3. gpu_coll (full suite) on 1, 2 and 4 ranks on this host's GPU(s), guard preloaded, each rank
#     with its own NCCL_HOSTID (rank-env.sh)
#  4. make check (the GPU entry runs the quick suite there), TLMPI_GPU_CHECK_JOBS jobs (default 8: the
#     whole run then fits one 600 s device call; -j4 did not) within TLMPI_GPU_CHECK_TIMEOUT (400 s)
# Writes summary.md and logs to $OUT (default ./gpu-test-out). Exit 0 only if everything passed.
set -u
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-$PWD/gpu-test-out}
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0 NCCL_MNNVL_ENABLE=0 NCCL_SOCKET_IFNAME=${NCCL_SOCKET_IFNAME:-lo} NCCL_DEBUG=${NCCL_DEBUG:-WARN}
sum=$out/summary.md
ok=1
t0=$(date +%s)
src=$(bash "$here/build.sh" "$1" 2>"$out/build.log" | tail -1)
if [ -z "$src" ] || [ ! -x "$src/tests/gpu/gpu_coll" ]; then
    echo "build failed"; cat "$out/build.log"; exit 1
fi
bin=$src/tests/gpu/gpu_coll
guard=$src/tests/gpu/.libs/libtlmpi_guard.so
mpirun="sh $src/tests/gpu/mpirun.sh"
{
    echo "# tlmpi GPU test run"
    echo
    echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "- host: $(uname -srm), $(. /etc/os-release 2>/dev/null; echo "$PRETTY_NAME"), $(nproc) cores"
    echo "- GPU: $(nvidia-smi --query-gpu=name,memory.total,driver_version,compute_cap --format=csv,noheader 2>/dev/null | head -1)"
    echo "- nvidia-smi: $(nvidia-smi 2>/dev/null | grep -m1 'Driver Version' | tr -s ' ')"
    echo "- CUDA (nvcc): $(nvcc --version 2>/dev/null | grep -o 'release [0-9.]*' | head -1)"
    echo "- MPI: $(${MPIEXEC:-mpiexec} --version 2>&1 | head -1)"
    echo "- tlmpi: $(basename "$1"), configure: $(grep -E '^ *(MPI|CUDA|NCCL) +:' "$out/build.log" | tr -s ' ' | paste -sd';' -)"
    echo
} >"$sum"

echo "== guard self-test" | tee "$out/guard.log"
GPU_TEST_GUARD_LIB=$guard timeout 30 $mpirun 1 "$bin" --guard-selftest >>"$out/guard.log" 2>&1
if grep -q "TLMPI_GUARD: device pointer passed to PMPI_Allreduce" "$out/guard.log"; then
    echo "- guard self-test: PASS (a device pointer passed to PMPI_Allreduce directly was caught)" >>"$sum"
else
    echo "- guard self-test: FAIL (not caught)" >>"$sum"; ok=0
fi

echo "== TLMPI_VERIFY_UNIFORM: mismatch must abort" >>"$out/guard.log"
TLMPI_VERIFY_UNIFORM=1 timeout 30 $mpirun 2 "$bin" --verify-mismatch >>"$out/guard.log" 2>&1
if grep -q "TLMPI_VERIFY_UNIFORM: ranks disagree" "$out/guard.log"; then
    echo "- TLMPI_VERIFY_UNIFORM=1 with device memory on rank 0, host on rank 1: PASS (aborted with tlmpi's message)" >>"$sum"
else
    echo "- TLMPI_VERIFY_UNIFORM=1 mismatch: FAIL (not caught)" >>"$sum"; ok=0
fi
echo "== TLMPI_VERIFY_UNIFORM=1 quick suite, np=2 (every decision checked)" >>"$out/guard.log"
TLMPI_VERIFY_UNIFORM=1 GPU_TEST_GUARD_LIB=$guard timeout 120 $mpirun 2 "$bin" --quick >>"$out/guard.log" 2>&1
rc=$?
echo "- TLMPI_VERIFY_UNIFORM=1 quick suite np=2: rc=$rc: $(grep '^RESULT' "$out/guard.log" | tail -1)" >>"$sum"
[ $rc -eq 0 ] || ok=0

for np in 1 2 4; do
    log=$out/np$np.log
    echo "== gpu_coll np=$np" | tee "$log"
    s=$(date +%s)
    GPU_TEST_GUARD_LIB=$guard timeout $(( np == 1 ? 90 : np == 2 ? 150 : 220 )) $mpirun $np "$bin" >>"$log" 2>&1
    rc=$?
    res=$(grep -m1 '^RESULT' "$log")
    g=$(grep -m1 '^guard:' "$log")
    echo "- gpu_coll np=$np: rc=$rc, $(( $(date +%s) - s )) s: ${res:-no RESULT line}; ${g:-}" >>"$sum"
    if [ $rc -ne 0 ] || ! echo "$res" | grep -q PASS || ! echo "$g" | grep -q active; then ok=0; fi
    grep -E '^(tier|sub-|back-to-back|large|gpu_coll|nccl runtime)' "$log" | sed 's/^/    /' >>"$sum"
done

echo "== make check" | tee "$out/check.log"
(cd "$src" && timeout ${TLMPI_GPU_CHECK_TIMEOUT:-400} make -j${TLMPI_GPU_CHECK_JOBS:-8} check >>"$out/check.log" 2>&1)
rc=$?
echo "- make check: rc=$rc: $(grep -E '^# (TOTAL|PASS|SKIP|FAIL|ERROR):' "$src/test-suite.log" 2>/dev/null | tr -s ' ' | paste -sd' ' -)" >>"$sum"
grep -E '^(PASS|FAIL|SKIP|ERROR)' "$out/check.log" | sed 's/^/    /' >>"$sum"
# the log of every failed test comes back with the run's logs
grep -E '^(FAIL|ERROR):' "$out/check.log" | awk '{print $2}' | while read -r t; do
    cp "$src/$t.log" "$out/check-$(echo "$t" | tr / _).log" 2>/dev/null
done
[ $rc -eq 0 ] || ok=0
cp "$src/tests/gpu/check_gpu.sh.log" "$out/check_gpu.log" 2>/dev/null

echo >>"$sum"
echo "overall: $([ $ok = 1 ] && echo PASS || echo FAIL) ($(( $(date +%s) - t0 )) s)" >>"$sum"
cat "$sum"
[ $ok = 1 ]
