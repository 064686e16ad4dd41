#!/bin/bash
# node-bench.sh BUILD_DIR: bench/node_bench once per rank count in NPS (default "2 4 8"), all ranks
# on this host's GPU, started through tests/gpu/mpirun.sh (Open MPI or MPICH; each rank its own
# NCCL_HOSTID). Meant to run under an MPS daemon of the job: tests/gpu/mps.sh bash bench/node-bench.sh
# BUILD_DIR (tests/gpu/device-run.sh TARBALL nodebench does that). Each run measures, in that run,
# the floor (a node barrier kernel over CUDA IPC), 8-byte latency of the three collectives through
# the node tier and through staging, raw NCCL on one rank, a size sweep node vs staging, and the
# HBM efficiency of every node algorithm at 64 and 256 MiB against cudaMemcpyAsync (see the head of
# bench/node_bench.c for every definition).
#
# Writes to $OUT (default ./nodebench-out): results.csv (every row of every run), npN.md (the
# tables of one run), summary.md (all runs, with the MPS state), log.txt.
# Knobs: NPS="2 4 8", BENCH_ARGS (more node_bench options, e.g. "-s 8,64k,1m -S lat,sweep"; "-S form":
# the non-blocking and persistent forms against blocking and the floors, device-run.sh part nbc),
# QUICK=1 (-r 7 -R 1 -E 3 -w 0.02: about a third of the time), RUN_TIMEOUT=240 seconds per run
# (cut to what DEADLINE_AT, seconds since the epoch, leaves; no run starts within 35 s of it).
set -u
build=$(cd "${1:?usage: node-bench.sh BUILD_DIR}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
OUT=${OUT:-$PWD/nodebench-out}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
bench=$build/bench/node_bench
[ -x "$bench" ] || make -C "$build" bench/node_bench >>"$OUT/log.txt" 2>&1
if [ ! -x "$bench" ]; then
    echo "node-bench: no $bench (configured with CUDA?)" | tee -a "$OUT/log.txt"
    exit 1
fi
export NCCL_NVLS_ENABLE=0 NCCL_MNNVL_ENABLE=0 NCCL_SOCKET_IFNAME=${NCCL_SOCKET_IFNAME:-lo} NCCL_DEBUG=${NCCL_DEBUG:-WARN}
export TLMPI_TIMEOUT=${TLMPI_TIMEOUT:-60}
unset TLMPI_TIER TLMPI_ALLREDUCE_TIERS TLMPI_ALLGATHER_TIERS TLMPI_REDUCE_SCATTER_BLOCK_TIERS
args=()
[ "${QUICK:-0}" = 1 ] && args=(-r 7 -R 1 -E 3 -w 0.02)
# shellcheck disable=SC2206
args+=(${BENCH_ARGS:-})
rm -f "$OUT/results.csv"
{
    echo "# node tier benchmark (bench/node_bench)"
    echo
    echo "- MPS: $([ -n "${CUDA_MPS_PIPE_DIRECTORY:-}" ] && echo "on (daemon of the job)" || echo off)"
    echo "- options: ${args[*]:-(defaults)}"
} >"$OUT/summary.md"
status=0
for np in ${NPS:-2 4 8}; do
    s=$SECONDS
    limit=${RUN_TIMEOUT:-240}
    if [ -n "${DEADLINE_AT:-}" ]; then
        left=$((DEADLINE_AT - $(date +%s) - 5))
        if [ "$left" -lt 30 ]; then
            echo "== np=$np: not run (DEADLINE_AT reached)" | tee -a "$OUT/log.txt" >>"$OUT/summary.md"
            status=1
            continue
        fi
        [ "$left" -lt "$limit" ] && limit=$left
    fi
    echo "== np=$np: node_bench ${args[*]:-}" | tee -a "$OUT/log.txt"
    timeout -k 10 "$limit" sh "$root/tests/gpu/mpirun.sh" "$np" "$bench" -o "$OUT/results.csv" "${args[@]}" \
        >"$OUT/np$np.md" 2>>"$OUT/log.txt"
    rc=$?
    echo "== np=$np: exit $rc after $((SECONDS - s)) s$([ $rc = 124 ] && echo ' (timed out)')" | tee -a "$OUT/log.txt"
    [ $rc = 0 ] || status=1
    {
        echo
        echo "---"
        echo
        cat "$OUT/np$np.md"
        echo
        echo "(np=$np: exit $rc, $((SECONDS - s)) s)"
    } >>"$OUT/summary.md"
done
grep -E 'FAIL|MISS|rror|timed out|Abort' "$OUT/summary.md" "$OUT/log.txt" | head -20 | tee -a "$OUT/log.txt"
exit $status
