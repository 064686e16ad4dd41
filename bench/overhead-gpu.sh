#!/bin/bash
# bench/overhead-gpu.sh BUILD_DIR: what tlmpi's NCCL tier adds over raw NCCL, measured paired, on a
# GPU host (the ≤2% / ≤3 us target of docs/PERFORMANCE.md). Writes to $OUT (default ./overhead-out):
#   costs.txt          bench/tlmpi_costs, 1 rank: host-side steps and paired A/B comparisons
#                      (wait mechanisms, tlmpi's whole call against raw NCCL, classification)
#   paired-<cfg>.csv   tlmpi_bench rows, modes nccl and raw-nccl, many short repetitions, with the
#                      median paired difference (d_raw_us) and its 95% CI; cfg = default (TLMPI_WAIT
#                      unset), sync (TLMPI_WAIT=sync), trust (TLMPI_PTR_CACHE=trust), np2 (2 ranks on
#                      the one GPU: NCCL over loopback sockets)
#   paired-<cfg>.md    the summary tables of each (bench/gpu-summary.py)
# Knobs: REPS=101 TARGET_S=0.01 SIZES=8,64k,1m CONFIGS="default sync trust np2"
set -u
export NCCL_NVLS_ENABLE=0
here=$(cd "$(dirname "$0")" && pwd)
b=$(cd "$1" && pwd)
OUT=${OUT:-$PWD/overhead-out}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
REPS=${REPS:-101}
TARGET_S=${TARGET_S:-0.01}
SIZES=${SIZES:-8,64k,1m}
CONFIGS=${CONFIGS:-default sync trust np2}
mpiexec_flags=()
if mpiexec --version 2>&1 | grep -qiE 'open ?mpi|openrte'; then
    mpiexec_flags=(--oversubscribe --bind-to none -x NCCL_NVLS_ENABLE -x LD_LIBRARY_PATH)
    [ "$(id -u)" = 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
[ -x "$b/bench/tlmpi_costs" ] || make -C "$b" bench/tlmpi_costs bench/tlmpi_bench >/dev/null 2>&1
{
    echo "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -1)"
    echo "# $(lscpu 2>/dev/null | sed -n 's/^Model name: *//p')"
    timeout -k 5 300 mpiexec "${mpiexec_flags[@]}" -n 1 "$b/bench/tlmpi_costs" 2>&1
} >"$OUT/costs.txt"
cat "$OUT/costs.txt"
for cfg in $CONFIGS; do
    o=$OUT/run-$cfg
    rm -rf "$o"
    case $cfg in
    default) env_set=() np=1 reps=$REPS ts=$TARGET_S ;;
    sync) env_set=(TLMPI_WAIT=sync) np=1 reps=$REPS ts=$TARGET_S ;;
    trust) env_set=(TLMPI_PTR_CACHE=trust) np=1 reps=$REPS ts=$TARGET_S ;;
    np2) env_set=() np=2 reps=21 ts=0.02 ;;
    *) echo "unknown config $cfg"; continue ;;
    esac
    env "${env_set[@]}" OUT="$o" NPS=$np MODES=nccl,raw-nccl REPS=$reps TARGET_S=$ts SIZES=$SIZES \
        bash "$here/run-gpu.sh" "$b" >/dev/null 2>&1
    cp "$o/results.csv" "$OUT/paired-$cfg.csv" 2>/dev/null
    cp "$o/summary.md" "$OUT/paired-$cfg.md" 2>/dev/null
    echo "===== $cfg (${env_set[*]:-no extra knobs}, np=$np, reps=$reps)"
    grep -E '^\| (allreduce|allgather|reduce_scatter) ' "$o/summary.md" 2>/dev/null |
        awk -F'|' '{print $2 "|" $3 "|" $(NF-2)}'
    grep -iE 'fail|error' "$o/log.txt" 2>/dev/null | head -5
done
