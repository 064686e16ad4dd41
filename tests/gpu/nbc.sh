#!/bin/sh
# nbc.sh NPS BUILD_DIR [full|quick]: tlmpi's non-blocking collectives on device buffers through MPI
# (tests/gpu/gpu_nbc) on a GPU host, for each rank count in NPS (e.g. "2 4 8"; "-": none), all ranks
# on this host's GPU(s), started through mpirun.sh / rank-env.sh (MPIEXEC picks the launcher: Open
# MPI's or MPICH's hydra). Per rank count:
#   main      gpu_nbc [--quick] --expect-auto node|staging (node under MPS, i.e. with
#             CUDA_MPS_PIPE_DIRECTORY set as tests/gpu/mps.sh does; staging without; NBC_EXPECT_AUTO
#             overrides, empty: not checked)
#   overflow  TLMPI_NODE_POOL=1m TLMPI_NODE_CTAS=3 gpu_nbc --overflow: 3 and 5 MiB messages, several
#             pool chunks each, two in flight at once (full level, or NBC_OVERFLOW=1; only for the
#             rank counts in NBC_OVERFLOW_NPS where that is set)
# then, for each rank count in NBC_PERSIST_NPS (default none; the MPICH build of device-run.sh part
# nbc sets 2), the persistent forms (tests/gpu/gpu_persist, MPI-4 only: exit 77, reported SKIP, on an
# older MPI):
#   persist           gpu_persist --iters NBC_PERSIST_ITERS (1000) [--quick]
#   persist-late      TLMPI_FAULT=node_late:1 gpu_persist --late NBC_PERSIST_LATE_ITERS (20): the
#                     zero-copy kernels with a late peer
#   persist-overflow  TLMPI_NODE_POOL=1m TLMPI_NODE_CTAS=3 gpu_persist --overflow (full level)
# Every run has TLMPI_TIMEOUT=60 and runs under `timeout` (NBC_TIMEOUT seconds, default 150 full /
# 90 quick, 240 for 8 ranks full; cut to what DEADLINE_AT, seconds since the epoch, leaves; none is
# started within 20 s of it), so a hang is a failure; TLMPI_STATS=1 (the counters at MPI_Finalize, in
# the logs). NBC_ARGS: more arguments for every run (e.g. --no-form-check for a library without
# tlmpi_get_form_stats).
# Prints one line per run ("nbc np=N mps=yes main: PASS, 12 s: RESULT ..."), the failure lines of a
# failed run, then "nbc: PASS k/k runs" or "nbc: FAIL ...". Exit 0 only if every run passed (a SKIP
# counts as passed; exit 77 when every run was skipped, e.g. without a GPU). Logs: $OUT/nbc-npN-RUN.log (default OUT: BUILD_DIR/tests/gpu/work-nbc). The PMPI
# guard library (tests/gpu/pmpi_guard.c: also the PMPI_I* and PMPI_*_init forms) is preloaded into
# every rank where it was built.
# To check this script without a GPU: NBC_PROG / NBC_PERSIST_PROG linked with the CPU fakes
# (tests/fakes/fakecudart.c) and NBC_ARGS=--any-path.
nps=${1:?usage: nbc.sh NPS BUILD_DIR [full|quick]}
build=$(cd "${2:-.}" && pwd)
level=${3:-full}
here=$(cd "$(dirname "$0")" && pwd)
prog=${NBC_PROG:-$build/tests/gpu/gpu_nbc}
pprog=${NBC_PERSIST_PROG:-$build/tests/gpu/gpu_persist}
if [ "$nps" != - ] && [ ! -x "$prog" ]; then
    echo "nbc: FAIL ($prog not built: make check TESTS= in a CUDA build)"
    exit 1
fi
export NCCL_NVLS_ENABLE=0 NCCL_MNNVL_ENABLE=0 NCCL_SOCKET_IFNAME=${NCCL_SOCKET_IFNAME:-lo} NCCL_DEBUG=${NCCL_DEBUG:-WARN}
export TLMPI_TIMEOUT=60 TLMPI_STATS=1
unset TLMPI_TIER TLMPI_ALLREDUCE_TIERS TLMPI_ALLGATHER_TIERS TLMPI_REDUCE_SCATTER_BLOCK_TIERS TLMPI_NODE_POOL \
    TLMPI_NODE_CTAS TLMPI_NODE_TRANSPORT
if [ -f "$build/tests/gpu/.libs/libtlmpi_guard.so" ]; then
    GPU_TEST_GUARD_LIB=$build/tests/gpu/.libs/libtlmpi_guard.so
    export GPU_TEST_GUARD_LIB
fi
out=${OUT:-$build/tests/gpu/work-nbc}
mkdir -p "$out"
if [ -n "${CUDA_MPS_PIPE_DIRECTORY:-}" ]; then mps=yes; ea=node; else mps=no; ea=staging; fi
ea=${NBC_EXPECT_AUTO-$ea}
qflag=
[ "$level" = quick ] && qflag=--quick
runs=0
passed=0
skipped=0

# one NAME NP PROGRAM ENV-ASSIGNMENTS -- ARGS...
one() {
    name=$1 np=$2 p=$3
    shift 3
    envs=
    while [ "$1" != -- ]; do envs="$envs $1"; shift; done
    shift
    limit=${NBC_TIMEOUT:-$([ "$level" = quick ] && echo 90 || { [ "$np" -ge 8 ] && echo 240 || echo 150; })}
    log=$out/nbc-np$np-$name.log
    runs=$((runs + 1))
    if [ -n "${DEADLINE_AT:-}" ]; then
        left=$((DEADLINE_AT - $(date +%s) - 5))
        if [ "$left" -lt 20 ]; then
            echo "nbc np=$np mps=$mps $name: FAIL (not run: DEADLINE_AT reached)"
            return
        fi
        [ "$left" -lt "$limit" ] && limit=$left
    fi
    s=$(date +%s)
    (
        for kv in $envs; do export "$kv"; done
        echo "== nbc.sh: np=$np mps=$mps run=$name env:$envs prog: $p args: $* ${NBC_ARGS:-}"
        exec timeout -k 10 "$limit" sh "$here/mpirun.sh" "$np" "$p" "$@" ${NBC_ARGS:-}
    ) >"$log" 2>&1
    rc=$?
    t=$(( $(date +%s) - s ))
    res=$(grep -m1 '^RESULT' "$log")
    if [ $rc = 77 ] || grep -q '^RESULT .* SKIP' "$log"; then
        passed=$((passed + 1))
        skipped=$((skipped + 1))
        echo "nbc np=$np mps=$mps $name: SKIP, $t s: $(grep -m1 'SKIP' "$log")"
    elif [ $rc = 0 ] && echo "$res" | grep -q PASS; then
        passed=$((passed + 1))
        echo "nbc np=$np mps=$mps $name: PASS, $t s: $res"
    else
        { [ $rc = 124 ] || [ $rc = 137 ]; } && res="timed out after $limit s${res:+; $res}"
        echo "nbc np=$np mps=$mps $name: FAIL (exit $rc, $t s): ${res:-no RESULT line} (log: $log)"
        grep -E 'FAIL|TLMPI_TIMEOUT|TLMPI_GUARD|timed out|waited|rror|Abort|signal' "$log" | head -16 | sed 's/^/    /'
    fi
    # what ran, for the summary: the sections, rank 0's counters of the node and staging paths
    grep -E '^(mode |sub-comm|back-to-back|latency:|completion|gpu_nbc:|gpu_persist:|loop:|matrix:|mixed|_c forms|starts:|guard:)' "$log" | sed 's/^/    /'
    sed -n '/^tlmpi stats rank 0:/,/^tlmpi stats rank [1-9]/p' "$log" | grep -E ' (node|staging|nonblocking|persistent)' | head -16 | sed 's/^/    /'
}

if [ "$nps" != - ]; then
    for np in $nps; do
        one main "$np" "$prog" -- $qflag ${ea:+--expect-auto "$ea"}
        if { [ "$level" = full ] || [ "${NBC_OVERFLOW:-0}" = 1 ]; } &&
           case " ${NBC_OVERFLOW_NPS:-$nps} " in *" $np "*) true ;; *) false ;; esac; then
            one overflow "$np" "$prog" TLMPI_NODE_POOL=1m TLMPI_NODE_CTAS=3 -- --overflow $qflag
        fi
    done
fi
for np in ${NBC_PERSIST_NPS:-}; do
    if [ ! -x "$pprog" ]; then
        runs=$((runs + 1))
        echo "nbc np=$np persist: FAIL ($pprog not built)"
        continue
    fi
    one persist "$np" "$pprog" -- --iters "${NBC_PERSIST_ITERS:-1000}" $qflag
    # the zero-copy kernels with a late peer (world rank 1's node kernels pause after each barrier)
    one persist-late "$np" "$pprog" TLMPI_FAULT=node_late:1 -- --late "${NBC_PERSIST_LATE_ITERS:-20}"
    if [ "$level" = full ] || [ "${NBC_OVERFLOW:-0}" = 1 ]; then
        one persist-overflow "$np" "$pprog" TLMPI_NODE_POOL=1m TLMPI_NODE_CTAS=3 -- --overflow $qflag
    fi
done
if [ "$runs" -gt 0 ] && [ "$skipped" = "$runs" ]; then
    echo "nbc: SKIP: all $runs runs skipped (no GPU, or an MPI without what they test)"
    exit 77
fi
if [ "$passed" = "$runs" ]; then
    echo "nbc: PASS $passed/$runs runs$([ $skipped -gt 0 ] && echo ", $skipped of them skipped") (mps=$mps, level $level)"
    exit 0
fi
echo "nbc: FAIL: $passed/$runs runs passed (mps=$mps, level $level)"
exit 1
