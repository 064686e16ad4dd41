#!/bin/sh
# threads.sh [BUILD_DIR]: tests/mpi/mpi_threads (4 threads under MPI_THREAD_MULTIPLE, each on its own
# dup of MPI_COMM_WORLD, device buffers of the fake CUDA runtime, the fake NCCL really
# communicating) with 2 ranks and then 4 ranks, once per mode:
#   nccl      TLMPI_TIER=nccl            every call on the NCCL path
#   staging   TLMPI_TIER=staging         every call staged
#   auto      TLMPI_TIER=auto            every call accelerated
#   table     TLMPI_{ALLREDUCE,ALLGATHER,REDUCE_SCATTER_BLOCK}_TIERS=nccl:16k,staging
#             (NCCL up to 16 KiB per rank, staging above: both paths used)
# then, with 2 ranks, TLMPI_TIER=nccl with FAKE_NCCL_ONE_AT_A_TIME=1 (the fake NCCL aborts a
# process with two collectives of different communicators in flight at once, the GPU's deadlock
# hazard): must pass with the GPU turn, and, once, must be caught with TLMPI_GPU_TURNS=no (mutant)
# each with TLMPI_TIMEOUT=60 (tlmpi aborts a wait that long) and under `timeout`, so a hang is a
# failure. THREADS_REPEAT=N (default 1) repeats the whole matrix, stopping at the first failure;
# the last line is "PASS k/N" or "FAIL ...". Iterations per thread: THREADS_ITERS_NP2 (default 200)
# and THREADS_ITERS_NP4 (default 30: 16 threads on a 2-core machine are slow under MPICH); THREADS_NPS
# (default "2 4") the rank counts of the mode matrix and THREADS_MODES (default all four) its modes
# (scripts/sanitize.sh: 2 ranks, nccl staging table under ThreadSanitizer).
# Under make check the launcher is $MPIEXEC (tests/launch.sh); run by hand from a build directory:
#   MPIEXEC=mpiexec.mpich THREADS_REPEAT=3 sh ../tests/mpi/threads.sh
here=$(cd "$(dirname "$0")" && pwd)
srcdir=${top_srcdir:-$here/../..}
builddir=${1:-${top_builddir:-.}}
builddir=$(cd "$builddir" && pwd)
MPIEXEC=${MPIEXEC:-mpiexec}
export MPIEXEC
prog=$builddir/tests/mpi/mpi_threads
if [ ! -x "$prog" ]; then
    echo "SKIP: $prog not built (needs CUDA and NCCL headers at configure time)"
    exit 77
fi
repeat=${THREADS_REPEAT:-1}
work=$builddir/tests/mpi/work-threads
mkdir -p "$work"
limit=${THREADS_TIMEOUT:-170}
table=nccl:16k,staging

launch() { # np mode iters: one run of the mode; sets log, rc, t (log in $work/np$1-$2.log)
    np=$1 mode=$2 iters=$3
    log=$work/np$np-$mode.log
    case $mode in
        table) set -- --env TLMPI_TIER=auto --env TLMPI_ALLREDUCE_TIERS=$table \
                   --env TLMPI_ALLGATHER_TIERS=$table --env TLMPI_REDUCE_SCATTER_BLOCK_TIERS=$table ;;
        turn) set -- --env TLMPI_TIER=nccl --env FAKE_NCCL_ONE_AT_A_TIME=1 ;;
        noturn) set -- --env TLMPI_TIER=nccl --env FAKE_NCCL_ONE_AT_A_TIME=1 --env TLMPI_GPU_TURNS=no ;;
        *) set -- --env TLMPI_TIER=$mode ;;
    esac
    s=$(date +%s)
    timeout -k 10 "$limit" sh "$srcdir/tests/launch.sh" --np "$np" "$@" --env TLMPI_TIMEOUT=60 \
        --env TLMPI_TEST_ITERS="$iters" ${TLMPI_TEST_SEED:+--env TLMPI_TEST_SEED=$TLMPI_TEST_SEED} \
        -- "$prog" >"$log" 2>&1
    rc=$?
    t=$(( $(date +%s) - s ))
}

run_one() { # np mode iters -> 0/1
    launch "$@"
    res=$(grep -m1 -E '^mpi_threads: (PASS|FAIL|SKIP)' "$log")
    if [ $rc = 77 ] || echo "$res" | grep -q SKIP; then
        echo "np=$np $mode: SKIP ($res)"
        return 77
    fi
    if [ $rc = 0 ] && echo "$res" | grep -q PASS; then
        echo "np=$np $mode: PASS, ${t} s ($(grep -m1 'rank 0 paths' "$log" | sed 's/^mpi_threads: rank 0 paths: //'))"
        return 0
    fi
    [ $rc = 124 ] || [ $rc = 137 ] && res="timed out after $limit s"
    echo "np=$np $mode: FAIL (exit $rc, ${t} s): ${res:-no result line}; $log:"
    tail -40 "$log" | sed 's/^/    /'
    return 1
}

k=0
while [ $k -lt "$repeat" ]; do
    for np in ${THREADS_NPS:-2 4}; do
        iters=${THREADS_ITERS_NP2:-200}
        [ $np = 4 ] && iters=${THREADS_ITERS_NP4:-30}
        for mode in ${THREADS_MODES:-nccl staging auto table}; do
            run_one $np $mode "$iters"
            rc=$?
            if [ $rc = 77 ]; then
                exit 77
            elif [ $rc != 0 ]; then
                echo "FAIL at repetition $((k + 1))/$repeat (np=$np $mode); PASS $k/$repeat before"
                exit 1
            fi
        done
    done
    # the GPU turn: with FAKE_NCCL_ONE_AT_A_TIME=1 the fake NCCL aborts a process that has two
    # collectives of different communicators in flight at once (what can deadlock a real GPU);
    # with the turn (on under MPI_THREAD_MULTIPLE) that never happens
    run_one 2 turn "${THREADS_ITERS_NP2:-200}" || { echo "FAIL at repetition $((k + 1))/$repeat (np=2 turn)"; exit 1; }
    k=$((k + 1))
    [ "$repeat" -gt 1 ] && echo "repetition $k/$repeat: PASS"
done
# the mutant: the same without the turn must be caught (once)
launch 2 noturn "${THREADS_ITERS_NP2:-200}"
if [ $rc != 0 ] && grep -q 'fakenccl: rank .*two collectives of different communicators in flight at once' "$log"; then
    echo "np=2 noturn (TLMPI_GPU_TURNS=no, the mutant): caught as it must be (exit $rc, $t s)"
else
    echo "np=2 noturn (TLMPI_GPU_TURNS=no, the mutant): FAIL: not caught (exit $rc; $log)"
    exit 1
fi
echo "PASS $k/$repeat"
