#!/bin/sh
# node.sh NPS BUILD_DIR [full|quick]: tests/gpu/gpu_node (the node tier with every algorithm forced,
# through MPI) on a GPU host, for each rank count in NPS (e.g. "2 3 4 8"), all ranks on this host's
# GPU(s), started through mpirun.sh / rank-env.sh. Per rank count:
#   main      gpu_node [--quick] --expect-auto node|staging (node under MPS: CUDA_MPS_PIPE_DIRECTORY
#             set, as tests/gpu/mps.sh does; staging without MPS, where the node tier's barriers
#             cost milliseconds; NODE_EXPECT_AUTO overrides, empty: not checked)
#   overflow  TLMPI_NODE_POOL=1m TLMPI_NODE_CTAS=3 gpu_node --overflow: 3 and 5 MiB messages in
#             several pool steps, back-to-back calls of several steps each (full level only, or
#             NODE_OVERFLOW=1)
# and with NODE_DEVCOMM=1 once more with 1 rank: TLMPI_NODE_TRANSPORT=devcomm --strict-one-rank
# (the node path required on a one-rank communicator), once per NCCL library in NODE_NCCL_LIBS
# (default: the system's libnccl.so.2 and PyTorch's wheel where it exists).
# Every run has TLMPI_TIMEOUT=60 (device and host waits) and runs under `timeout` (NODE_TIMEOUT
# seconds, default 150 full / 90 quick; 240 for 8 ranks full, cut to what DEADLINE_AT, a time in
# seconds since the epoch, leaves; none is started within 25 s of it), so a hang is a failure; TLMPI_STATS=1
# (per-path and per-algorithm counters at MPI_Finalize, in the logs).
# Prints one line per run ("node np=N mps=yes main: PASS, 12 s: RESULT ..."), the failure lines of
# a failed run, then "node: PASS k/k runs" or "node: FAIL ...". Exit 0 only if every run passed.
# Logs: $OUT/node-npN-RUN.log (default OUT: BUILD_DIR/tests/gpu/work-node). The PMPI guard library
# (tests/gpu/pmpi_guard.c) is preloaded into every rank where it was built.
# To check this script on a machine without a GPU: NODE_PROG=gpu_node linked with the CPU fakes
# (tests/fakes/fakecudart.c) and NODE_ARGS=--any-path (staging serves what the node tier cannot).
nps=${1:?usage: node.sh NPS BUILD_DIR [full|quick]}
build=$(cd "${2:-.}" && pwd)
level=${3:-full}
here=$(cd "$(dirname "$0")" && pwd)
prog=${NODE_PROG:-$build/tests/gpu/gpu_node}
if [ ! -x "$prog" ]; then
    echo "node: FAIL ($prog not built: make check TESTS= in a CUDA build)"
    exit 1
fi
export NCCL_NVLS_ENABLE=0 NCCL_MNNVL_ENABLE=0 NCCL_SOCKET_IFNAME=${NCCL_SOCKET_IFNAME:-lo} NCCL_DEBUG=${NCCL_DEBUG:-WARN}
export TLMPI_TIMEOUT=60 TLMPI_STATS=1
unset TLMPI_TIER TLMPI_ALLREDUCE_TIERS TLMPI_ALLGATHER_TIERS TLMPI_REDUCE_SCATTER_BLOCK_TIERS TLMPI_NODE_POOL \
    TLMPI_NODE_CTAS TLMPI_NODE_TRANSPORT
# the PMPI guard (tests/gpu/pmpi_guard.c): a device pointer reaching PMPI_* aborts the run
if [ -f "$build/tests/gpu/.libs/libtlmpi_guard.so" ]; then
    GPU_TEST_GUARD_LIB=$build/tests/gpu/.libs/libtlmpi_guard.so
    export GPU_TEST_GUARD_LIB
fi
out=${OUT:-$build/tests/gpu/work-node}
mkdir -p "$out"
if [ -n "${CUDA_MPS_PIPE_DIRECTORY:-}" ]; then mps=yes; ea=node; else mps=no; ea=staging; fi
ea=${NODE_EXPECT_AUTO-$ea}
qflag=
[ "$level" = quick ] && qflag=--quick
runs=0
passed=0

# one NAME NP ENV-ASSIGNMENTS -- ARGS...
one() {
    name=$1 np=$2
    shift 2
    envs=
    while [ "$1" != -- ]; do envs="$envs $1"; shift; done
    shift
    limit=${NODE_TIMEOUT:-$([ "$level" = quick ] && echo 90 || { [ "$np" -ge 8 ] && echo 240 || echo 150; })}
    log=$out/node-np$np-$name.log
    if [ -n "${DEADLINE_AT:-}" ]; then
        left=$((DEADLINE_AT - $(date +%s) - 5))
        if [ "$left" -lt 20 ]; then
            runs=$((runs + 1))
            echo "node np=$np mps=$mps $name: FAIL (not run: DEADLINE_AT reached)"
            return
        fi
        [ "$left" -lt "$limit" ] && limit=$left
    fi
    s=$(date +%s)
    (
        for kv in $envs; do export "$kv"; done
        echo "== node.sh: np=$np mps=$mps run=$name env:$envs args: $*"
        exec timeout -k 10 "$limit" sh "$here/mpirun.sh" "$np" "$prog" "$@" ${NODE_ARGS:-}
    ) >"$log" 2>&1
    rc=$?
    t=$(( $(date +%s) - s ))
    res=$(grep -m1 '^RESULT' "$log")
    runs=$((runs + 1))
    if [ $rc = 0 ] && echo "$res" | grep -q PASS; then
        passed=$((passed + 1))
        echo "node np=$np mps=$mps $name: PASS, $t s: $res"
    else
        { [ $rc = 124 ] || [ $rc = 137 ]; } && res="timed out after $limit s${res:+; $res}"
        echo "node np=$np mps=$mps $name: FAIL (exit $rc, $t s): ${res:-no RESULT line} (log: $log)"
        grep -E 'FAIL|TLMPI_TIMEOUT|timed out|waited|rror|Abort|signal' "$log" | head -16 | sed 's/^/    /'
    fi
    # what ran (rank 0's counters, the plan) and how long, for the summary
    grep -E '^(mode |fallbacks|sub-comm|back-to-back|auto:|latency:|gpu_node:|guard:)' "$log" | sed 's/^/    /'
    sed -n '/^tlmpi stats rank 0:/,/^tlmpi stats rank [1-9]/p' "$log" | grep -E ' node' | head -24 | sed 's/^/    /'
}

for np in $nps; do
    if [ "$np" = 1 ]; then
        one main 1 -- $qflag
    else
        one main "$np" -- $qflag ${ea:+--expect-auto "$ea"}
        if [ "$level" = full ] || [ "${NODE_OVERFLOW:-0}" = 1 ]; then
            one overflow "$np" TLMPI_NODE_POOL=1m TLMPI_NODE_CTAS=3 -- --overflow $qflag
        fi
    fi
done
if [ "${NODE_DEVCOMM:-0}" = 1 ]; then
    libs=${NODE_NCCL_LIBS-"libnccl.so.2 $(ls /opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2 2>/dev/null)"}
    k=0
    for lib in $libs; do
        k=$((k + 1))
        one "devcomm$k" 1 TLMPI_NODE_TRANSPORT=devcomm TLMPI_NCCL_LIBRARY="$lib" TLMPI_LOG_LEVEL=info -- \
            --quick --strict-one-rank
        echo "    (devcomm$k: TLMPI_NCCL_LIBRARY=$lib)"
    done
fi
if [ "$passed" = "$runs" ]; then
    echo "node: PASS $passed/$runs runs (mps=$mps, level $level)"
    exit 0
fi
echo "node: FAIL: $passed/$runs runs passed (mps=$mps, level $level)"
exit 1
