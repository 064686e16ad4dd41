#!/bin/sh
# graph.sh NPS BUILD_DIR [full|quick]: tlmpi's stream-ordered collectives and CUDA graph capture
# (tests/gpu/gpu_graph: tlmpi_*_enqueue, captured once, replayed with new inputs, checked; issue 21
# item 1) on a GPU host, for each rank count in NPS (e.g. "2 4 8"), all ranks on this host's GPU(s),
# started through mpirun.sh / rank-env.sh (MPIEXEC picks the launcher). Per rank count:
#   main      TLMPI_TIER=node gpu_graph --replays GRAPH_REPLAYS (200) [--quick]
#   overflow  TLMPI_TIER=node TLMPI_NODE_POOL=1m TLMPI_NODE_CTAS=3 gpu_graph --overflow: every
#             sequence again with a 1 MiB pool (the larger calls take several pool chunks) plus 3 and
#             5 MiB calls (full level, or GRAPH_OVERFLOW=1; only for the rank counts in
#             GRAPH_OVERFLOW_NPS where that is set)
#   wrap      TLMPI_TIER=node TLMPI_NODE_EPOCH0=4294967000 gpu_graph --quick --replays 30: every
#             communicator's barrier epoch starts 296 below 2^32, so the LL region's wrap (cleared
#             once per 2^32 barriers) happens during the first replays (full level, or GRAPH_WRAP=1;
#             rank counts GRAPH_WRAP_NPS, default 2 8)
# Every run has TLMPI_TIMEOUT=60 and runs under `timeout` (GRAPH_TIMEOUT seconds, default 200 full /
# 90 quick, 300 for 8 ranks full; cut to what DEADLINE_AT, seconds since the epoch, leaves; none is
# started within 20 s of it), so a hang is a failure; TLMPI_STATS=1 (the counters at MPI_Finalize,
# in the logs). GRAPH_ARGS: more arguments for every run.
# Prints one line per run ("graph np=N mps=yes main: PASS, 12 s: RESULT ..."), the failure lines of
# a failed run, then "graph: PASS k/k runs" or "graph: FAIL ...". Exit 0 only if every run passed (a
# SKIP counts as passed; exit 77 when every run was skipped, e.g. without a GPU). Logs:
# $OUT/graph-npN-RUN.log (default OUT: BUILD_DIR/tests/gpu/work-graph). The PMPI guard library
# (tests/gpu/pmpi_guard.c) is preloaded into every rank where it was built.
nps=${1:?usage: graph.sh NPS BUILD_DIR [full|quick]}
build=$(cd "${2:-.}" && pwd)
level=${3:-full}
here=$(cd "$(dirname "$0")" && pwd)
prog=${GRAPH_PROG:-$build/tests/gpu/gpu_graph}
if [ ! -x "$prog" ]; then
    echo "graph: FAIL ($prog not built: make check TESTS= in a CUDA build)"
    exit 1
fi
export NCCL_NVLS_ENABLE=0 NCCL_MNNVL_ENABLE=0 NCCL_SOCKET_IFNAME=${NCCL_SOCKET_IFNAME:-lo} NCCL_DEBUG=${NCCL_DEBUG:-WARN}
export TLMPI_TIMEOUT=${GRAPH_TLMPI_TIMEOUT:-60} TLMPI_STATS=1
unset TLMPI_TIER TLMPI_ALLREDUCE_TIERS TLMPI_ALLGATHER_TIERS TLMPI_REDUCE_SCATTER_BLOCK_TIERS TLMPI_NODE_POOL \
    TLMPI_NODE_CTAS TLMPI_NODE_TRANSPORT TLMPI_NODE_LL_MAX TLMPI_NODE_ONESHOT_MAX TLMPI_NODE_AG_PUSH_MAX \
    TLMPI_ENQUEUE_FALLBACK TLMPI_GRAPH_MIXING TLMPI_NODE_EPOCH0
if [ -f "$build/tests/gpu/.libs/libtlmpi_guard.so" ]; then
    GPU_TEST_GUARD_LIB=$build/tests/gpu/.libs/libtlmpi_guard.so
    export GPU_TEST_GUARD_LIB
fi
out=${OUT:-$build/tests/gpu/work-graph}
mkdir -p "$out"
if [ -n "${CUDA_MPS_PIPE_DIRECTORY:-}" ]; then mps=yes; else mps=no; fi
qflag=
[ "$level" = quick ] && qflag=--quick
runs=0
passed=0
skipped=0

# one NAME NP ENV-ASSIGNMENTS -- ARGS...
one() {
    name=$1 np=$2
    shift 2
    envs=
    while [ "$1" != -- ]; do envs="$envs $1"; shift; done
    shift
    limit=${GRAPH_TIMEOUT:-$([ "$level" = quick ] && echo 90 || { [ "$np" -ge 8 ] && echo 300 || echo 200; })}
    log=$out/graph-np$np-$name.log
    runs=$((runs + 1))
    if [ -n "${DEADLINE_AT:-}" ]; then
        left=$((DEADLINE_AT - $(date +%s) - 5))
        if [ "$left" -lt 20 ]; then
            echo "graph np=$np mps=$mps $name: FAIL (not run: DEADLINE_AT reached)"
            return
        fi
        [ "$left" -lt "$limit" ] && limit=$left
    fi
    s=$(date +%s)
    (
        for kv in $envs; do export "$kv"; done
        echo "== graph.sh: np=$np mps=$mps run=$name env:$envs prog: $prog args: $* ${GRAPH_ARGS:-}"
        exec timeout -k 10 "$limit" sh "$here/mpirun.sh" "$np" "$prog" "$@" ${GRAPH_ARGS:-}
    ) >"$log" 2>&1
    rc=$?
    t=$(( $(date +%s) - s ))
    res=$(grep -m1 '^RESULT' "$log")
    if [ $rc = 77 ] || { [ -z "$res" ] && grep -qE '^(gpu_graph: )?SKIP' "$log"; }; then
        passed=$((passed + 1))
        skipped=$((skipped + 1))
        echo "graph np=$np mps=$mps $name: SKIP, $t s: $(grep -m1 'SKIP' "$log")"
    elif [ $rc = 0 ] && echo "$res" | grep -q PASS; then
        passed=$((passed + 1))
        echo "graph np=$np mps=$mps $name: PASS, $t s: $res"
    else
        { [ $rc = 124 ] || [ $rc = 137 ]; } && res="timed out after $limit s${res:+; $res}"
        echo "graph np=$np mps=$mps $name: FAIL (exit $rc, $t s): ${res:-no RESULT line} (log: $log)"
        grep -E 'FAIL|TLMPI_TIMEOUT|TLMPI_GUARD|timed out|waited|rror|Abort|signal' "$log" | head -16 | sed 's/^/    /'
    fi
    # what ran, for the summary: the sections, rank 0's counters of the node path and the forms
    grep -E '^(gpu_graph:|main|no-mixing|overflow|small|prepared-late|graph-first|freed-first|lifetime|unprepared|guard:)' "$log" | sed 's/^/    /'
    sed -n '/^tlmpi stats rank 0:/,/^tlmpi stats rank [1-9]/p' "$log" | grep -E ' (node|enqueue|capture)' | head -16 | sed 's/^/    /'
}

for np in $nps; do
    one main "$np" TLMPI_TIER=node -- --replays "${GRAPH_REPLAYS:-200}" $qflag
    if { [ "$level" = full ] || [ "${GRAPH_OVERFLOW:-0}" = 1 ]; } &&
       case " ${GRAPH_OVERFLOW_NPS:-$nps} " in *" $np "*) true ;; *) false ;; esac; then
        one overflow "$np" TLMPI_TIER=node TLMPI_NODE_POOL=1m TLMPI_NODE_CTAS=3 -- --overflow --replays \
            "${GRAPH_REPLAYS:-200}" $qflag
    fi
    if { [ "$level" = full ] || [ "${GRAPH_WRAP:-0}" = 1 ]; } &&
       case " ${GRAPH_WRAP_NPS:-2 8} " in *" $np "*) true ;; *) false ;; esac; then
        one wrap "$np" TLMPI_TIER=node TLMPI_NODE_EPOCH0=4294967000 -- --quick --replays 30
    fi
done
if [ "$runs" -gt 0 ] && [ "$skipped" = "$runs" ]; then
    echo "graph: SKIP: all $runs runs skipped (no GPU)"
    exit 77
fi
if [ "$passed" = "$runs" ]; then
    echo "graph: PASS $passed/$runs runs$([ $skipped -gt 0 ] && echo ", $skipped of them skipped") (mps=$mps, level $level)"
    exit 0
fi
echo "graph: FAIL: $passed/$runs runs passed (mps=$mps, level $level)"
exit 1
