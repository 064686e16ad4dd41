#!/bin/sh
# enqueue.sh [BUILD_DIR]: tests/mpi/mpi_enqueue (the argument and error paths of the stream-ordered
# entry points tlmpi_*_enqueue, _c, _f, tlmpi_enqueue_prepare and tlmpi_enqueue_error, against the
# fake CUDA runtime and the fake NCCL of tests/fakes) once per run:
#   np2   2 ranks: argument errors, staging and mpi tiers (unsupported / synchronous fallback),
#         eager enqueues on the nccl tier (fake NCCL) and on the self path (MPI_COMM_SELF)
#   np1   1 rank: the same without the nccl tier
#   node2 2 ranks, each on a fake GPU of its own (FAKE_CUDA_DEVICES=4), TLMPI_NODE_TRANSPORT=ipc:
#         mpi_enqueue --node-shape (the node kernel's columns and CTAs per form, case f)
#   graph2  the GPU test tests/gpu/gpu_graph checked against the same fakes, 2 ranks (where it is
#         built: a CUDA build): gpu_graph --no-graph --any-path --overflow with the fake CUDA runtime
#         preloaded, TLMPI_TIER=nccl and TLMPI_ENQUEUE_FALLBACK=sync (the fakes' graphs run nothing,
#         so only the uncaptured runs of its sequences, their host reference, poison and counter
#         checks, and its unprepared-communicator case run here; tests/gpu/graph.sh runs it on a GPU)
# each with TLMPI_TIMEOUT=60 and under `timeout` (ENQUEUE_TIMEOUT, default 120 s), so a hang is a
# failure. One line per run, then "PASS n/n" or "FAIL k/n". Exit 77 where mpi_enqueue is not built
# (no CUDA or no NCCL headers at configure time). ENQUEUE_RUNS="np1 ..." picks runs.
# Under make check the launcher is $MPIEXEC (tests/launch.sh); by hand from a build directory:
#   MPIEXEC=mpiexec.mpich sh ../tests/mpi/enqueue.sh
here=$(cd "$(dirname "$0")" && pwd)
srcdir=${top_srcdir:-$here/../..}
builddir=${1:-${top_builddir:-.}}
builddir=$(cd "$builddir" && pwd)
MPIEXEC=${MPIEXEC:-mpiexec}
export MPIEXEC
prog=${ENQUEUE_PROG:-$builddir/tests/mpi/mpi_enqueue}
if [ ! -x "$prog" ]; then
    echo "SKIP: $prog not built (needs CUDA and NCCL headers at configure time)"
    exit 77
fi
work=$builddir/tests/mpi/work-enqueue
mkdir -p "$work"
limit=${ENQUEUE_TIMEOUT:-120}
pass=0 fail=0 skip=0 total=0
gprog=$builddir/tests/gpu/gpu_graph
for run in ${ENQUEUE_RUNS:-np2 np1 node2 graph2}; do
    p=$prog
    set --
    case $run in
        np2) np=2 ;;
        np1) np=1 ;;
        node2) np=2; set -- --env FAKE_CUDA_DEVICES=4 --env TLMPI_NODE_TRANSPORT=ipc ;;
        graph2)
            np=2
            [ -x "$gprog" ] || { echo "$run: SKIP ($gprog not built)"; continue; }
            p=$gprog
            set -- --env "LD_PRELOAD=$builddir/tests/mpi/.libs/libfakecudart.so" \
                --env "TLMPI_NCCL_LIBRARY=$builddir/tests/mpi/.libs/libfakenccl.so" --env FAKE_CUDA_DEVICES=8 \
                --env TLMPI_TIER=nccl --env TLMPI_ENQUEUE_FALLBACK=sync ;;
        *) echo "enqueue.sh: unknown run $run"; exit 2 ;;
    esac
    log=$work/$run.log
    total=$((total + 1))
    s=$(date +%s)
    if [ "$p" = "$gprog" ]; then
        timeout -k 10 "$limit" sh "$srcdir/tests/launch.sh" --np "$np" "$@" --env TLMPI_TIMEOUT=60 -- "$p" \
            --no-graph --any-path --overflow >"$log" 2>&1
        rc=$?
        res=$(grep -m1 -oE 'RESULT gpu_graph .*' "$log")
        echo "$res" | grep -q 'PASS$' && res="mpi_enqueue: PASS: $res"
        [ $rc = 77 ] && res="mpi_enqueue: SKIP: $(grep -m1 SKIP "$log")"
    else
        timeout -k 10 "$limit" sh "$srcdir/tests/launch.sh" --np "$np" "$@" --env TLMPI_TIMEOUT=60 -- "$p" \
            $([ "$run" = node2 ] && echo --node-shape) >"$log" 2>&1
        rc=$?
        res=$(grep -m1 -oE 'mpi_enqueue: (PASS|FAIL|SKIP).*' "$log")
    fi
    t=$(( $(date +%s) - s ))
    if [ $rc = 77 ] || echo "$res" | grep -q SKIP; then
        echo "$run: SKIP ($res)"
        skip=$((skip + 1))
        continue
    fi
    if [ $rc = 0 ] && echo "$res" | grep -q PASS; then
        echo "$run: PASS, ${t} s (${res#mpi_enqueue: PASS: })"
        pass=$((pass + 1))
        continue
    fi
    { [ $rc = 124 ] || [ $rc = 137 ]; } && res="timed out after $limit s"
    echo "$run: FAIL (exit $rc, ${t} s): ${res:-no result line}; $log:"
    grep -m 20 -E 'FAIL|abort|Abort|ABORT|tlmpi.*(error|timeout)' "$log" | sed 's/^/    /'
    echo "    --- last lines:"
    tail -15 "$log" | sed 's/^/    /'
    fail=$((fail + 1))
done
if [ $fail != 0 ]; then
    echo "FAIL $fail/$total (passed $pass)"
    exit 1
fi
if [ $pass = 0 ]; then
    echo "SKIP: every run skipped"
    exit 77
fi
[ $skip = 0 ] && echo "PASS $pass/$total" || echo "PASS $pass/$total (skipped $skip)"
exit 0
