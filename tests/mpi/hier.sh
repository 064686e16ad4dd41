#!/bin/sh
# hier.sh [BUILD_DIR]: tests/mpi/mpi_hier (the hier tier on fake nodes, exact host references) with
# TLMPI_TIER=hier in the layouts 4 = 2 nodes x 2, 6 = 3 x 2, 8 = 2 x 4 and 8 = 4 x 2
# (TLMPI_TOPO_RANKS_PER_NODE), and 4 = 2 x 2 once more with TLMPI_HIER_RAIL=nccl (the rail step on
# the NCCL tier) and =ipc (on the node tier's kernels between the rail's ranks), and a layout
# suffix :fusedG (TLMPI_HIER_FUSED=auto, TLMPI_HIER_GROUPS=G, 0 = auto: GIN probed, then the fused kernels
# with the emulated rail, whose plan line must name G rail groups, 1 for auto; on a GPU host every collective must run hier/fused and no sub-comm step; on the
# CPU box their launches fail on the stand-ins and every rank stages those calls, with one warning). Under make check: the CPU stand-ins (the node tier's steps fall back to staging,
# the fake NCCL really communicates); HIER_PROG=tests/gpu/gpu_hier and HIER_LAYOUTS run it on a GPU
# host (tests/gpu/hier.sh). Then, on the CPU box (HIER_FAULT=0 leaves it out), 4 = 2 x 2 fused with
# TLMPI_FAULT=gin_wait_full:1,gin_wait_short:2: the GIN wait mutants reach the rail descriptor of the
# ranks named and no other (their plan lines). Each run has TLMPI_TIMEOUT=60 (on a GPU host
# HIER_TLMPI_TIMEOUT) and runs under `timeout`.
# One line per run, exit 1 on any failure, 77 where mpi_hier is not built.
here=$(cd "$(dirname "$0")" && pwd)
srcdir=${top_srcdir:-$here/../..}
builddir=${1:-${top_builddir:-.}}
builddir=$(cd "$builddir" && pwd)
MPIEXEC=${MPIEXEC:-mpiexec}
export MPIEXEC
prog=${HIER_PROG:-$builddir/tests/mpi/mpi_hier}
if [ ! -x "$prog" ]; then
    echo "SKIP: $prog not built (needs CUDA and NCCL headers at configure time)"
    exit 77
fi
work=${OUT:-$builddir/tests/mpi/work-hier}
mkdir -p "$work"
limit=${HIER_TIMEOUT:-240}
fails=0 runs=0
for lay in ${HIER_LAYOUTS:-4x2 6x2 8x4 8x2 4x2:nccl 4x2:ipc 4x2:fused0}; do
    np=${lay%%x*} rest=${lay#*x} rpn=${rest%%:*} rail=auto
    case $lay in *:*) rail=${lay##*:} ;; esac
    # rail fusedG: the fused kernels (emulated rail, G rail groups); any other: host-ordered steps
    fused=off groups=2
    case $rail in fused*) fused=auto groups=${rail#fused} rail=auto ;; esac
    [ -n "$groups" ] || groups=2
    log=$work/np$np-rpn$rpn-$rail-$fused$groups.log
    s=$(date +%s)
    if [ -n "${HIER_MPIRUN:-}" ]; then
        # a GPU host's launcher (tests/gpu/mpirun.sh: per-rank NCCL_HOSTID, so ranks may share a GPU)
        exp_steps=${HIER_EXPECT_STEPS:-} exp_algo=
        [ $fused = off ] || { exp_steps=none exp_algo=fused; }
        HIER_EXPECT_STEPS=$exp_steps HIER_EXPECT_ALGO=$exp_algo \
        TLMPI_TIER=hier TLMPI_TOPO_RANKS_PER_NODE=$rpn TLMPI_HIER_RAIL=$rail TLMPI_TIMEOUT=${HIER_TLMPI_TIMEOUT:-60} \
            TLMPI_HIER_FUSED=$fused TLMPI_HIER_GROUPS=$groups TLMPI_LOG_LEVEL=$([ $fused = off ] && echo warn || echo info) \
            TLMPI_TEST_ITERS=${TLMPI_TEST_ITERS:-300} timeout -k 10 "$limit" sh "$HIER_MPIRUN" "$np" "$prog" >"$log" 2>&1
    else
        fb=0
        [ $fused = off ] || fb=1
        timeout -k 10 "$limit" sh "$srcdir/tests/launch.sh" --np "$np" --env TLMPI_TIER=hier --env HIER_EXPECT_FALLBACK=$fb \
            --env TLMPI_TOPO_RANKS_PER_NODE="$rpn" --env TLMPI_HIER_RAIL="$rail" --env TLMPI_TIMEOUT=60 \
            --env TLMPI_HIER_FUSED="$fused" --env TLMPI_HIER_GROUPS="$groups" \
            --env TLMPI_LOG_LEVEL="$([ $fused = off ] && echo warn || echo info)" \
            --env TLMPI_TEST_ITERS="${TLMPI_TEST_ITERS:-300}" ${TLMPI_TEST_SEED:+--env TLMPI_TEST_SEED=$TLMPI_TEST_SEED} \
            ${TLMPI_TEST_TYPES:+--env TLMPI_TEST_TYPES=$TLMPI_TEST_TYPES} \
            -- "$prog" >"$log" 2>&1
    fi
    rc=$?
    t=$(( $(date +%s) - s ))
    runs=$((runs + 1))
    res=$(grep -m1 -E '^mpi_hier: (PASS|FAIL|SKIP)' "$log")
    # the fused layouts: GIN's probe said once per rank and hier comm why GIN is unavailable (no RDMA
    # NIC, shared GPU, stand-ins), agreed, and the emulated rail (or its fallback) served
    if [ $fused != off ] && [ "$(grep -c 'GIN unavailable for the fused 2D kernels' "$log")" -lt "$np" ]; then
        rc=1 res="mpi_hier: FAIL: fewer than $np 'GIN unavailable' lines"
    fi
    # ... and the plan line names the rail groups in use (auto: 1 on the emulated rail)
    eg=$groups
    [ "$eg" = 0 ] && eg=1
    if [ $fused != off ] && ! grep -q "fused: emulated rail.*, $eg rail groups" "$log"; then
        rc=1 res="mpi_hier: FAIL: no plan line 'fused: emulated rail ..., $eg rail groups'"
    fi
    if [ $rc = 0 ] && echo "$res" | grep -q PASS; then
        echo "hier np=$np nodes=$((np / rpn))x$rpn rail=$rail fused=$fused groups=$groups: PASS, $t s ($(grep -m1 'cases per rank' "$log" | sed 's/^mpi_hier: //'); $(grep -m1 'steps on the world' "$log" | sed 's/^mpi_hier: //'))"
    else
        fails=$((fails + 1))
        [ $rc = 124 ] || [ $rc = 137 ] && res="timed out after $limit s"
        echo "hier np=$np nodes=$((np / rpn))x$rpn rail=$rail fused=$fused groups=$groups: FAIL (exit $rc, $t s): ${res:-no result line}; $log:"
        grep -E 'FAIL|TLMPI_TIMEOUT|ERROR' "$log" | head -12 | sed 's/^/    /'
    fi
done
# the GIN wait mutants' fault sites (TLMPI_FAULT=gin_wait_full:1,gin_wait_short:2, src/core/fault.c)
# reach the fused kernels' rail descriptor (tlmpi_rail_xport_t.gin_wait, copied into every launch) on
# the ranks they name and no other: the plan line of rank 1 and 2 says which, the emulated rail
# ignores them, mpi_hier still passes. CPU box only (HIER_FAULT=0 leaves it out); the GPU host runs
# them on the GIN rail (tests/gpu/gin-loopback.sh, step ctx).
if [ -z "${HIER_MPIRUN:-}" ] && [ "${HIER_FAULT:-1}" = 1 ]; then
    log=$work/np4-rpn2-fault-gin_wait.log
    s=$(date +%s)
    timeout -k 10 "$limit" sh "$srcdir/tests/launch.sh" --np 4 --env TLMPI_TIER=hier --env HIER_EXPECT_FALLBACK=1 \
        --env TLMPI_TOPO_RANKS_PER_NODE=2 --env TLMPI_HIER_RAIL=auto --env TLMPI_TIMEOUT=60 --env TLMPI_HIER_FUSED=auto \
        --env TLMPI_HIER_GROUPS=1 --env TLMPI_LOG_LEVEL=info --env TLMPI_TEST_ITERS=20 \
        --env TLMPI_FAULT=gin_wait_full:1,gin_wait_short:2 -- "$prog" >"$log" 2>&1
    rc=$?
    t=$(( $(date +%s) - s ))
    runs=$((runs + 1))
    res=$(grep -m1 -E '^mpi_hier: (PASS|FAIL|SKIP)' "$log")
    bad=
    echo "$res" | grep -q PASS || bad="exit $rc, ${res:-no result line}"
    for r in 0 1 2 3; do
        case $r in 1) w=gin_wait_full ;; 2) w=gin_wait_short ;; *) w= ;; esac
        p=$(grep -m1 " r$r TLMPI INFO .* plan: .*fused: emulated rail" "$log")
        if [ -z "$p" ]; then
            bad="${bad:+$bad; }rank $r: no plan line with the emulated rail"
        elif [ -n "$w" ] && ! echo "$p" | grep -q "testing: TLMPI_FAULT=$w (ignored: the emulated rail)"; then
            bad="${bad:+$bad; }rank $r: the plan line does not show $w in the rail descriptor"
        elif [ -z "$w" ] && echo "$p" | grep -q "testing: TLMPI_FAULT"; then
            bad="${bad:+$bad; }rank $r: a mutant in the rail descriptor, TLMPI_FAULT named ranks 1 and 2"
        fi
    done
    if [ -z "$bad" ]; then
        echo "hier np=4 nodes=2x2 fused groups=1 TLMPI_FAULT=gin_wait_full:1,gin_wait_short:2: PASS, $t s (the mutants in rank 1's and 2's rail descriptors only)"
    else
        fails=$((fails + 1))
        echo "hier np=4 nodes=2x2 fused groups=1 TLMPI_FAULT=gin_wait_full:1,gin_wait_short:2: FAIL ($t s): $bad; $log"
    fi
fi
[ $fails = 0 ] && { echo "hier: PASS $runs/$runs runs"; exit 0; }
echo "hier: FAIL: $fails of $runs runs failed"
exit 1
