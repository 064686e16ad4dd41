#!/bin/bash
# bench/run-gpu.sh: measure tlmpi on one GPU host with bench/tlmpi_bench, for the numbers in
# docs/perf/gpu.md and docs/PERFORMANCE.md.
#
#   bash bench/run-gpu.sh TARBALL|BUILD_DIR
#
# TARBALL is a `make dist` tarball (tlmpi-*.tar.gz); it is built with tests/gpu/build.sh when that
# script exists, else here (./configure && make -j). BUILD_DIR is an existing build tree.
#
# It runs the bench with 1 rank and with 2 ranks on the one GPU (each rank gets its own
# NCCL_HOSTID, so NCCL treats them as two hosts and talks over loopback sockets), every mode in
# one run (tlmpi auto, each forced tier, raw NCCL), host<->device copy rates included, and writes
# to $OUT (default ./bench-out):
#   results.csv  every row (see docs/perf/gpu.md for the columns)
#   summary.md   the tables for docs/perf/gpu.md, ratios against raw NCCL and host staging
#                (bench/gpu-summary.py RESULTS.csv SUMMARY.md redoes it from any results.csv)
#   log.txt      full output of every step
#   env.txt      GPU, driver, CPU, MPI, NCCL, tlmpi build facts
# and prints the summary last.
#
# Knobs (environment):
#   SIZES=8,64k,1m,64m,256m   sizes (bytes, NCCL's S)        NPS="1 2"   rank counts
#   MODES=auto,nccl,staging,mpi,raw-nccl                    COLLS=allreduce,allgather,reduce_scatter
#   DTYPE=float  REPS=3  TARGET_S=0.2 (seconds per measurement)  VALIDATE=1  (-c)
#   FULL_SWEEP=1 also sweep 8 B .. 1 GiB (1 and 2 ranks)   QUICK=1 (REPS=1, TARGET_S=0.05)
#   RUN_TIMEOUT=240 seconds per mpiexec                     MPIEXEC=mpiexec
#   DEADLINE=0  if set, no mpiexec starts or runs past this many seconds after the script began
#   PASS_ENV="VAR ..." more variables for Open MPI to export (TLMPI_*, NCCL_*, UCX_* always are)
# NCCL_NVLS_ENABLE is forced to 0: NVLink multicast must never be used on shared hosts.
set -u
export NCCL_NVLS_ENABLE=0
# Ranks that share a GPU reach each other through NCCL's socket transport; keep it on loopback.
export NCCL_SOCKET_IFNAME=${NCCL_SOCKET_IFNAME:-lo}

here=$(cd "$(dirname "$0")" && pwd)
src_root=$(cd "$here/.." && pwd)
arg=${1:-}
if [ -z "$arg" ] || [ "$arg" = -h ] || [ "$arg" = --help ]; then
    sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
fi
OUT=${OUT:-$PWD/bench-out}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
log=$OUT/log.txt
: >"$log"
SIZES=${SIZES:-8,64k,1m,64m,256m}
NPS=${NPS:-1 2}
MODES=${MODES:-auto,nccl,staging,mpi,raw-nccl}
COLLS=${COLLS:-allreduce,allgather,reduce_scatter}
DTYPE=${DTYPE:-float}
REPS=${REPS:-3}
TARGET_S=${TARGET_S:-0.2}
VALIDATE=${VALIDATE:-1}
RUN_TIMEOUT=${RUN_TIMEOUT:-240}
if [ "${QUICK:-0}" = 1 ]; then
    REPS=1
    TARGET_S=0.05
fi
work=$(mktemp -d /tmp/tlmpi-gpu-bench.XXXXXX)

say() { echo "== $*" | tee -a "$log"; }

# ------------------------------------------------------------------ build
bdir=
build_here() {
    local tb=$1 d
    say "building $tb here (./configure && make)"
    tar -C "$work" -xzf "$tb" || return 1
    d=$(ls -d "$work"/tlmpi-*/ | head -1)
    d=${d%/}
    mkdir -p "$d/build"
    (cd "$d/build" && ../configure --enable-silent-rules && make -j"$(nproc)") >>"$log" 2>&1 || {
        tail -40 "$log"
        return 1
    }
    bdir=$d/build
}
if [ -d "$arg" ]; then
    bdir=$(cd "$arg" && pwd)
elif [ -f "$arg" ]; then
    tb=$(cd "$(dirname "$arg")" && pwd)/$(basename "$arg")
    if [ -f "$src_root/tests/gpu/build.sh" ]; then
        say "building with tests/gpu/build.sh $tb"
        bdir=$(bash "$src_root/tests/gpu/build.sh" "$tb" 2>>"$log" | tail -1)
        if [ -z "$bdir" ] || [ ! -f "$bdir/Makefile" ]; then
            say "tests/gpu/build.sh gave no build dir ('$bdir'); building here instead"
            bdir=
            build_here "$tb" || { say "BUILD FAILED"; exit 1; }
        fi
    else
        build_here "$tb" || { say "BUILD FAILED"; exit 1; }
    fi
else
    echo "run-gpu.sh: $arg is neither a tarball nor a directory" >&2
    exit 2
fi
if [ ! -x "$bdir/bench/tlmpi_bench" ]; then
    make -C "$bdir" bench/tlmpi_bench >>"$log" 2>&1
fi
bench=$bdir/bench/tlmpi_bench
if [ ! -x "$bench" ]; then
    say "no $bench (was tlmpi configured with CUDA?)"
    tail -30 "$log"
    exit 1
fi
say "build dir: $bdir"

# ------------------------------------------------------------------ environment facts
{
    date -u +%Y-%m-%dT%H:%M:%SZ
    uname -a
    nvidia-smi --query-gpu=name,pci.bus_id,driver_version,memory.total,clocks.sm,clocks.max.sm,clocks.mem,power.draw,power.limit,temperature.gpu,utilization.gpu --format=csv 2>&1
    nvidia-smi topo -m 2>&1 | head -20
    lscpu 2>/dev/null | grep -E '^(Model name|CPU\(s\)|NUMA node\(s\))'
    free -g | head -2
    ${MPIEXEC:-mpiexec} --version 2>&1 | head -2
    ldconfig -p 2>/dev/null | grep -E 'libnccl|libcudart' | head -4
    [ -x "$bdir/tools/tlmpi_info" ] && "$bdir/tools/tlmpi_info" 2>&1 | head -40
    env | grep -E '^(NCCL_|TLMPI_|CUDA_|OMPI_MCA_|UCX_)' | sort
} >"$OUT/env.txt" 2>&1
cat "$OUT/env.txt" >>"$log"

# ------------------------------------------------------------------ launcher
MPIEXEC=${MPIEXEC:-mpiexec}
mpi_flags=()
envflag=()
shared_flag=() # how TLMPI_BENCH_SHARED_GPU reaches the ranks (hydra forwards the environment itself)
if "$MPIEXEC" --version 2>&1 | grep -qiE 'open ?mpi|openrte'; then
    mpi_flags=(--oversubscribe --bind-to none)
    shared_flag=(-x TLMPI_BENCH_SHARED_GPU)
    if [ "$(id -u)" = 0 ]; then
        export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    fi
    for v in NCCL_NVLS_ENABLE LD_LIBRARY_PATH ${PASS_ENV:-} $(env | sed -n 's/^\(\(TLMPI\|NCCL\|UCX\)_[A-Za-z0-9_]*\)=.*/\1/p'); do
        envflag+=(-x "$v")
    done
else
    # hydra (MPICH) passes the whole environment by default
    envflag=(-genv NCCL_NVLS_ENABLE 0)
fi
# Per-rank wrapper: a distinct NCCL_HOSTID when ranks share a GPU (NCCL refuses two ranks of one
# comm on one GPU of one host), and NCCL_NVLS_ENABLE=0 whatever the launcher does.
wrap=$work/rank-wrap.sh
cat >"$wrap" <<'EOF'
#!/bin/sh
r=${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-${PMIX_RANK:-0}}}
if [ "${TLMPI_BENCH_SHARED_GPU:-0}" = 1 ]; then
    export NCCL_HOSTID="tlmpi-bench-$(hostname)-rank$r"
fi
export NCCL_NVLS_ENABLE=0
exec "$@"
EOF
chmod +x "$wrap"
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
say "GPUs visible: $ngpu"

# limit: seconds the next mpiexec may take (RUN_TIMEOUT, cut to what DEADLINE leaves); 0 = none left
limit() {
    local left
    if [ "${DEADLINE:-0}" -gt 0 ]; then
        left=$((DEADLINE - SECONDS))
        [ "$left" -lt 15 ] && { echo 0; return; }
        [ "$left" -lt "$RUN_TIMEOUT" ] && { echo "$left"; return; }
    fi
    echo "$RUN_TIMEOUT"
}
# run NP LABEL CSV ARGS...: one mpiexec under a time limit; returns its status
run() {
    local np=$1 label=$2 csv=$3 shared=0 rc t
    shift 3
    t=$(limit)
    [ "$t" = 0 ] && { say "np=$np ($label): skipped, DEADLINE reached"; return 124; }
    [ "$ngpu" -gt 0 ] && [ "$np" -gt "$ngpu" ] && shared=1
    say "run np=$np ($label): tlmpi_bench $*"
    TLMPI_BENCH_SHARED_GPU=$shared timeout -k 10 "$t" \
        "$MPIEXEC" "${mpi_flags[@]}" "${envflag[@]}" "${shared_flag[@]}" -n "$np" \
        "$wrap" "$bench" -o "$csv" "$@" </dev/null >>"$log" 2>&1
    rc=$?
    say "np=$np ($label): exit $rc$([ $rc = 124 ] && echo ' (timed out)')"
    return $rc
}

# ------------------------------------------------------------------ measurements
csv=$OUT/results.csv
rm -f "$csv"
common=(-T "$DTYPE" -r "$REPS" -w "$TARGET_S")
[ "$VALIDATE" = 1 ] && common+=(-c)
status=0
for np in $NPS; do
    tmp=$work/np$np.csv
    rm -f "$tmp"
    if run "$np" "all modes, one run" "$tmp" "${common[@]}" -H -s "$SIZES" -M "$MODES" -C "$COLLS"; then
        if [ -s "$csv" ]; then tail -n +2 "$tmp" >>"$csv"; else cat "$tmp" >"$csv"; fi
    else
        # A crash in one mode must not lose the others: partial rows are dropped (logged above),
        # every mode is run on its own.
        status=1
        say "np=$np: the all-modes run failed; partial rows dropped; running each mode alone"
        run "$np" "copy rates" "$csv" "${common[@]}" -H -s "$SIZES" -C none || true
        for m in ${MODES//,/ }; do
            run "$np" "mode $m alone" "$csv" "${common[@]}" -s "$SIZES" -M "$m" -C "$COLLS" || true
        done
    fi
done
if [ "${FULL_SWEEP:-0}" = 1 ]; then
    for np in $NPS; do
        run "$np" "full sweep 8 B .. 1 GiB" "$OUT/sweep.csv" -T "$DTYPE" -r 1 -w "$TARGET_S" -m 8:1g \
            -M "$MODES" -C "$COLLS" || status=1
    done
fi
grep -E 'FAIL|VALIDATION|tlmpi_bench\[|rror:|Segmentation|signal [0-9]|exit [1-9]|BUILD' "$log" | head -20 >"$work/problems.txt"

# ------------------------------------------------------------------ summary
python3 "$here/gpu-summary.py" "$csv" "$OUT/summary.md" "$work/problems.txt"
{
    echo
    echo "===================== summary ($OUT/summary.md) ====================="
    cat "$OUT/summary.md"
} | tee -a "$log"
rm -rf "$work"
exit $status
