#!/bin/bash
# osu-compare.sh OSU_DIR BUILD_DIR: the user's own OSU micro-benchmarks build (7.x, configured with
# CUDA) against tlmpi: osu_allreduce, osu_allgather and osu_reduce_scatter_block with
# `-d cuda -c -T mpi_float` (device buffers, validation through reductions) on NPS ranks (default
# "2 4") of this host, libtlmpi preloaded, once with TLMPI_TIER=auto (tlmpi's choice: the node tier on
# one node) and once with TLMPI_TIER=staging. Ranks start through tests/gpu/mpirun.sh (several ranks
# may share one GPU; run it under tests/gpu/mps.sh for concurrent kernels). This script builds
# nothing: OSU_DIR is an existing OSU build (the binaries under OSU_DIR/c/mpi/collective/blocking,
# or directly in OSU_DIR).
# Writes $OUT (default ./osu-out): one raw output per (collective, ranks, tier), summary.md (latency
# per size side by side, the validation column of every run, the ratio staging / auto).
# Knobs: NPS, OSU_ARGS (default "-i 200 -x 20"), RUN_TIMEOUT (seconds per run, default 120).
set -u
osu=$(cd "${1:?usage: osu-compare.sh OSU_DIR BUILD_DIR}" && pwd)
build=$(cd "${2:?usage: osu-compare.sh OSU_DIR BUILD_DIR}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
OUT=${OUT:-$PWD/osu-out}
mkdir -p "$OUT"
lib=$build/.libs/libtlmpi.so
[ -f "$lib" ] || { echo "osu-compare: no $lib"; exit 1; }
bindir=$osu/c/mpi/collective/blocking
[ -x "$bindir/osu_allreduce" ] || bindir=$osu
export NCCL_NVLS_ENABLE=0 TLMPI_TIMEOUT=${TLMPI_TIMEOUT:-60}
sum=$OUT/summary.md
rc=0
{
    echo "# OSU collectives with tlmpi preloaded: TLMPI_TIER=auto vs staging"
    echo
    echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC'); GPU: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)"
    echo "- MPS: $([ -n "${CUDA_MPS_PIPE_DIRECTORY:-}" ] && echo on || echo off); options: -d cuda -c -T mpi_float ${OSU_ARGS:--i 200 -x 20}"
    echo
} >"$sum"
for np in ${NPS:-2 4}; do
    for b in osu_allreduce osu_allgather osu_reduce_scatter_block; do
        for tier in auto staging; do
            f=$OUT/$b-np$np-$tier.txt
            TLMPI_TIER=$tier LD_PRELOAD=$lib timeout -k 5 "${RUN_TIMEOUT:-120}" sh "$root/tests/gpu/mpirun.sh" "$np" \
                "$bindir/$b" -d cuda -c -T mpi_float ${OSU_ARGS:--i 200 -x 20} >"$f" 2>&1 || rc=1
        done
        {
            echo "## $b, $np ranks (latency us; Validation from OSU's own check)"
            echo
            echo "| bytes | auto us | auto valid | staging us | staging valid | staging / auto |"
            echo "| ---: | ---: | --- | ---: | --- | ---: |"
            join <(awk '/^[0-9]/{print $1, $2, $NF}' "$OUT/$b-np$np-auto.txt" | sort -k1,1) \
                 <(awk '/^[0-9]/{print $1, $2, $NF}' "$OUT/$b-np$np-staging.txt" | sort -k1,1) |
                sort -n | awk '{r = $2 > 0 ? $4 / $2 : 0; printf "| %s | %s | %s | %s | %s | %.2f |\n", $1, $2, $3, $4, $5, r}'
            echo
        } >>"$sum"
        grep -qi "fail" "$OUT/$b-np$np-auto.txt" "$OUT/$b-np$np-staging.txt" && rc=1
    done
done
cat "$sum"
exit $rc
