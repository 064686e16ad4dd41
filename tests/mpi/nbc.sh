#!/bin/sh
# nbc.sh [BUILD_DIR]: tests/mpi/mpi_nbc (non-blocking and persistent collectives on device buffers
# of the fake CUDA runtime, completed by the application's MPI_Wait/MPI_Test family; the fake NCCL
# really communicating) once per run:
#   np=2 staging   TLMPI_TIER=staging
#   np=2 nccl      TLMPI_TIER=nccl under MPI_THREAD_MULTIPLE: blocking calls on NCCL, the
#                  non-blocking and persistent ones staged (a started call cannot hold the GPU turn)
#   np=2 nccl1     TLMPI_TIER=nccl under MPI_THREAD_SINGLE (NBC_THREAD_LEVEL=single): every call on
#                  NCCL (case g, threads, skipped)
#                  (on both NCCL runs case f, two communicators in opposite orders, is skipped: the
#                  fake NCCL runs a collective to its end inside ncclAllReduce)
#   np=3 staging   TLMPI_TIER=staging with TLMPI_STAGING_CHUNK=4k (several pipeline chunks per call)
#   np=1 self      TLMPI_TIER=self (a one-rank run: the device copy)
# each with TLMPI_TIMEOUT=60 (tlmpi aborts a wait that long) and under `timeout` (NBC_TIMEOUT,
# default 150 s), so a hang is a failure. One line per run, then "PASS n/n" or "FAIL k/n". Exit 77
# where mpi_nbc is not built (no CUDA or no NCCL headers at configure time). NBC_RUNS="nccl ..." picks
# runs (np2-staging np2-nccl np2-nccl1 np3-staging np1-self); NBC_CASES, NBC_PERSIST_ITERS,
# NBC_FREE_ACTIVE, NBC_THREAD_ROUNDS, NBC_OPPOSITE, TLMPI_GPU_TURNS and
# TLMPI_TEST_SEED are handed to the ranks when set.
# Under make check the launcher is $MPIEXEC (tests/launch.sh); by hand from a build directory:
#   MPIEXEC=mpiexec.mpich sh ../tests/mpi/nbc.sh
here=$(cd "$(dirname "$0")" && pwd)
srcdir=${top_srcdir:-$here/../..}
builddir=${1:-${top_builddir:-.}}
builddir=$(cd "$builddir" && pwd)
MPIEXEC=${MPIEXEC:-mpiexec}
export MPIEXEC
prog=$builddir/tests/mpi/mpi_nbc
if [ ! -x "$prog" ]; then
    echo "SKIP: $prog not built (needs CUDA and NCCL headers at configure time)"
    exit 77
fi
work=$builddir/tests/mpi/work-nbc
mkdir -p "$work"
limit=${NBC_TIMEOUT:-150}
runs=${NBC_RUNS:-np2-staging np2-nccl np2-nccl1 np3-staging np1-self}

pass=0 fail=0 skip=0 total=0
for run in $runs; do
    case $run in
        np2-staging) np=2; set -- --env TLMPI_TIER=staging ;;
        np2-nccl) np=2; set -- --env TLMPI_TIER=nccl ;;
        np2-nccl1) np=2; set -- --env TLMPI_TIER=nccl --env NBC_THREAD_LEVEL=single ;;
        np3-staging) np=3; set -- --env TLMPI_TIER=staging --env TLMPI_STAGING_CHUNK=4k ;;
        np1-self) np=1; set -- --env TLMPI_TIER=self ;;
        *) echo "nbc.sh: unknown run $run"; exit 2 ;;
    esac
    for v in NBC_CASES NBC_PERSIST_ITERS NBC_FREE_ACTIVE NBC_THREAD_ROUNDS NBC_OPPOSITE TLMPI_GPU_TURNS \
        TLMPI_TEST_SEED; do
        eval "val=\${$v-}"
        [ -n "$val" ] && set -- "$@" --env "$v=$val"
    done
    log=$work/$run.log
    total=$((total + 1))
    s=$(date +%s)
    timeout -k 10 "$limit" sh "$srcdir/tests/launch.sh" --np "$np" "$@" --env TLMPI_TIMEOUT=60 -- "$prog" \
        >"$log" 2>&1
    rc=$?
    t=$(( $(date +%s) - s ))
    res=$(grep -m1 -oE 'mpi_nbc: (PASS|FAIL|SKIP).*' "$log")
    if [ $rc = 77 ] || echo "$res" | grep -q SKIP; then
        echo "$run: SKIP ($res)"
        skip=$((skip + 1))
        continue
    fi
    notes=$(grep -E '^mpi_nbc: case .*SKIPPED' "$log" | sed 's/^mpi_nbc: case \([a-z/]*\) .*/\1/' | tr '\n' ' ')
    if [ $rc = 0 ] && echo "$res" | grep -q PASS; then
        echo "$run: PASS, ${t} s (${res#mpi_nbc: PASS: })${notes:+; skipped cases: $notes}"
        pass=$((pass + 1))
        continue
    fi
    [ $rc = 124 ] || [ $rc = 137 ] && res="timed out after $limit s"
    echo "$run: FAIL (exit $rc, ${t} s): ${res:-no result line}; $log:"
    grep -m 20 -E 'FAIL|abort|Abort|ABORT|tlmpi.*(error|timeout)' "$log" | sed 's/^/    /'
    echo "    --- last lines:"
    tail -15 "$log" | sed 's/^/    /'
    fail=$((fail + 1))
done
if [ $fail != 0 ]; then
    echo "FAIL $fail/$total (passed $pass, skipped $skip)"
    exit 1
fi
if [ $pass = 0 ]; then
    echo "SKIP: every run skipped"
    exit 77
fi
[ $skip = 0 ] && echo "PASS $pass/$total" || echo "PASS $pass/$total (skipped $skip)"
exit 0
