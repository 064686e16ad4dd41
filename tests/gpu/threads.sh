#!/bin/sh
# threads.sh NP REPEAT BUILD_DIR: on a GPU host, tests/gpu/gpu_threads (tests/mpi/mpi_threads.c with
# the real CUDA runtime and NCCL: 4 threads under MPI_THREAD_MULTIPLE, each on its own dup of
# MPI_COMM_WORLD, device buffers) with NP ranks, once per mode, the whole matrix REPEAT times
# (stopping at the first failure):
#   nccl      TLMPI_TIER=nccl            every call on the NCCL path
#   staging   TLMPI_TIER=staging         every call staged
#   auto      TLMPI_TIER=auto            every call accelerated
#   table     TLMPI_{ALLREDUCE,ALLGATHER,REDUCE_SCATTER_BLOCK}_TIERS=nccl:16k,staging (both paths used)
# each with TLMPI_TIMEOUT=60 and under `timeout` (THREADS_TIMEOUT seconds, default 300), so a hang
# is a failure. Ranks start through mpirun.sh / rank-env.sh (each its own NCCL_HOSTID, so several
# ranks may share one GPU). TLMPI_TEST_ITERS sets the iterations per thread (default 200).
# THREADS_MODES limits the modes (default: all four).
# Prints one line per mode and repetition, then "threads np=NP: PASS k/REPEAT" (or FAIL ...).
# Logs: $OUT/threads-npNP-MODE.log (default OUT: BUILD_DIR/tests/gpu/work-threads).
np=${1:?usage: threads.sh NP REPEAT BUILD_DIR}
repeat=${2:-1}
build=$(cd "${3:-.}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
prog=$build/tests/gpu/gpu_threads
if [ ! -x "$prog" ]; then
    echo "threads np=$np: FAIL ($prog not built: make check TESTS= in a CUDA build)"
    exit 1
fi
export NCCL_NVLS_ENABLE=0 NCCL_MNNVL_ENABLE=0 NCCL_SOCKET_IFNAME=${NCCL_SOCKET_IFNAME:-lo} NCCL_DEBUG=${NCCL_DEBUG:-WARN}
export TLMPI_TIMEOUT=60 TLMPI_TEST_ITERS=${TLMPI_TEST_ITERS:-200}
out=${OUT:-$build/tests/gpu/work-threads}
mkdir -p "$out"
limit=${THREADS_TIMEOUT:-300}
table=nccl:16k,staging

k=0
while [ "$k" -lt "$repeat" ]; do
    for mode in ${THREADS_MODES:-nccl staging auto table}; do
        log=$out/threads-np$np-$mode.log
        s=$(date +%s)
        (
            unset TLMPI_TIER TLMPI_ALLREDUCE_TIERS TLMPI_ALLGATHER_TIERS TLMPI_REDUCE_SCATTER_BLOCK_TIERS
            if [ $mode = table ]; then
                export TLMPI_TIER=auto TLMPI_ALLREDUCE_TIERS=$table TLMPI_ALLGATHER_TIERS=$table \
                    TLMPI_REDUCE_SCATTER_BLOCK_TIERS=$table
            else
                export TLMPI_TIER=$mode
            fi
            exec timeout -k 10 "$limit" sh "$here/mpirun.sh" "$np" "$prog"
        ) >"$log" 2>&1
        rc=$?
        t=$(( $(date +%s) - s ))
        res=$(grep -m1 -E '^mpi_threads: (PASS|FAIL|SKIP)' "$log")
        paths=$(grep -m1 'rank 0 paths' "$log" | sed 's/^mpi_threads: rank 0 paths: //')
        if [ $rc = 0 ] && echo "$res" | grep -q PASS; then
            echo "threads np=$np rep $((k + 1)) $mode: PASS, $t s ($paths)"
        else
            { [ $rc = 124 ] || [ $rc = 137 ]; } && res="timed out after $limit s"
            echo "threads np=$np rep $((k + 1)) $mode: FAIL (exit $rc, $t s): ${res:-no result line} (log: $log)"
            grep -E 'FAIL|TLMPI_TIMEOUT|fakenccl|ERROR' "$log" | head -12 | sed 's/^/    /'
            echo "threads np=$np: FAIL at repetition $((k + 1))/$repeat ($mode); PASS $k/$repeat"
            exit 1
        fi
    done
    k=$((k + 1))
done
echo "threads np=$np: PASS $k/$repeat"
