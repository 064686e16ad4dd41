#!/bin/sh
# python.sh [BUILD_DIR]: python/tlmpi_enqueue.py (the mpi4py module over tlmpi's stream-ordered
# entry points) without a GPU: tests/mpi/python_enqueue.py under mpiexec, libtlmpi.so and the fake
# CUDA runtime (tests/fakes) preloaded into python, once per run:
#   np2-pure     the module's own parts: dtype -> MPI handle mapping, buffers, streams, argument checks
#   np2-staging  TLMPI_TIER=staging: MPI_ERR_UNSUPPORTED_OPERATION without the synchronous fallback,
#                exact results with prepare(sync_fallback=True); host buffer, MPI_COMM_NULL and
#                MPI_OP_NULL give MPI_ERR_BUFFER / _COMM / _OP with tlmpi_enqueue_error()'s text
#   np2-nccl     TLMPI_TIER=nccl with the fake NCCL (tests/fakes/fakenccl.c): the three collectives
#                stream-ordered, exact, in place and not, counted as enqueue calls
#   np2-multiple the nccl run at MPI_THREAD_MULTIPLE (mpi4py's default; tlmpi's GPU turn on, which
#                enqueued calls do not take); every other run initialises at MPI_THREAD_FUNNELED
#   np3-staging  the staging run with 3 ranks
#   np2-nccl-py  the nccl run with TLMPI_PY_FAST=0 (the module's Python path alone)
# Every run but np2-pure also runs the siblings (allgatherv, reduce_scatter, bcast, reduce, alltoall) with
# the synchronous fallback, each result against mpi4py's own call on host copies.
# Where this build has the module's C extension for that python (python/_tlmpi_fast$EXT_SUFFIX, put
# on PYTHONPATH after the source tree's python/), every other run requires it loaded and counts the
# calls it made; without it every run is the Python path.
# Needs a python with mpi4py built against the MPI of this build (Debian: python3-mpi4py, built
# against Open MPI, so under MPICH builds this skips); PYTHON names one, else python3, then
# /usr/bin/python3. Exit 77 (skip) without such a python, without the fakes (a build without CUDA or
# NCCL headers: the pure run only), or when every run skipped (a libtlmpi without the enqueue entry
# points). One line per run, then "PASS n/n" or "FAIL k/n"; logs in BUILD_DIR/tests/mpi/work-python.
# Under make check the launcher is $MPIEXEC (tests/launch.sh); by hand from a build directory:
#   MPIEXEC=mpiexec.openmpi TLMPI_TEST_MPI=ompi sh ../tests/mpi/python.sh
here=$(cd "$(dirname "$0")" && pwd)
srcdir=${top_srcdir:-$here/../..}
srcdir=$(cd "$srcdir" && pwd)
builddir=${1:-${top_builddir:-.}}
builddir=$(cd "$builddir" && pwd)
MPIEXEC=${MPIEXEC:-mpiexec}
export MPIEXEC
lib=$builddir/.libs/libtlmpi.so
fakert=$builddir/tests/mpi/.libs/libfakecudart.so
fakenccl=$builddir/tests/mpi/.libs/libfakenccl.so
if [ ! -f "$lib" ]; then
    echo "SKIP: $lib not built"
    exit 77
fi
case ${TLMPI_TEST_MPI:-} in
    ompi) want="Open MPI" ;;
    mpich) want="MPICH" ;;
    *) want= ;;
esac
py=
for p in ${PYTHON:-} python3 /usr/bin/python3; do
    command -v "$p" >/dev/null 2>&1 || continue
    v=$("$p" -c 'import mpi4py; mpi4py.rc.initialize = False; from mpi4py import MPI; print(MPI.get_vendor()[0])' 2>/dev/null) || continue
    if [ -z "$want" ] || [ "$v" = "$want" ]; then
        py=$p
        break
    fi
    echo "python.sh: $p has mpi4py for $v, this build is ${want}"
done
if [ -z "$py" ]; then
    echo "SKIP: no python with mpi4py${want:+ for $want} (Debian: apt-get install python3-mpi4py, built against Open MPI)"
    exit 77
fi
work=$builddir/tests/mpi/work-python
mkdir -p "$work"
limit=${PYTHON_TIMEOUT:-120}
runs=${PYTHON_RUNS:-np2-pure np2-staging np2-nccl np2-multiple np3-staging np2-nccl-py}
fast=0
suffix=$("$py" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX") or "")')
[ -n "$suffix" ] && [ -f "$builddir/python/_tlmpi_fast$suffix" ] && fast=1
preload=$lib
[ -f "$fakert" ] && preload=$fakert:$lib

pass=0 fail=0 skip=0 total=0
for run in $runs; do
    total=$((total + 1))
    case $run in
        np2-pure) np=2; mode=pure; set -- ;;
        np2-staging) np=2; mode=staging; set -- --env TLMPI_TIER=staging ;;
        np3-staging) np=3; mode=staging; set -- --env TLMPI_TIER=staging ;;
        np2-nccl) np=2; mode=nccl; set -- --env TLMPI_TIER=nccl --env "TLMPI_NCCL_LIBRARY=$fakenccl" ;;
        np2-multiple) np=2; mode=multiple; set -- --env TLMPI_TIER=nccl --env "TLMPI_NCCL_LIBRARY=$fakenccl" ;;
        np2-nccl-py) np=2; mode=nccl; set -- --env TLMPI_TIER=nccl --env "TLMPI_NCCL_LIBRARY=$fakenccl" \
            --env TLMPI_PY_FAST=0 ;;
        *) echo "python.sh: unknown run $run"; exit 2 ;;
    esac
    if [ $mode != pure ] && [ ! -f "$fakert" ]; then
        echo "$run: SKIP (no fake CUDA runtime: a build without CUDA headers)"
        skip=$((skip + 1))
        continue
    fi
    if { [ $mode = nccl ] || [ $mode = multiple ]; } && [ ! -f "$fakenccl" ]; then
        echo "$run: SKIP (no fake NCCL: a build without NCCL headers)"
        skip=$((skip + 1))
        continue
    fi
    log=$work/$run.log
    s=$(date +%s)
    timeout -k 10 "$limit" sh "$srcdir/tests/launch.sh" --np "$np" "$@" --env "LD_PRELOAD=$preload" \
        --env "PYTHONPATH=$srcdir/python:$builddir/python" --env "TLMPI_TEST_FAST=$fast" \
        --env FAKE_CUDA_DEVICES=8 --env TLMPI_TIMEOUT=60 \
        --env PYTHONDONTWRITEBYTECODE=1 -- "$py" "$srcdir/tests/mpi/python_enqueue.py" "$mode" >"$log" 2>&1
    rc=$?
    t=$(( $(date +%s) - s ))
    res=$(grep -m1 -oE 'python_enqueue: (PASS|FAIL|SKIP).*' "$log")
    if [ $rc = 77 ] || echo "$res" | grep -q 'python_enqueue: SKIP'; then
        echo "$run: SKIP (${res:-exit 77})"
        skip=$((skip + 1))
    elif [ $rc = 0 ] && echo "$res" | grep -q PASS; then
        echo "$run: PASS, ${t} s ${res#python_enqueue: PASS }"
        pass=$((pass + 1))
    else
        { [ $rc = 124 ] || [ $rc = 137 ]; } && res="timed out after $limit s"
        echo "$run: FAIL (exit $rc, ${t} s): ${res:-no result line}; $log:"
        grep -m 20 -E 'FAIL|Error|error|Abort|Traceback' "$log" | sed 's/^/    /'
        echo "    --- last lines:"
        tail -15 "$log" | sed 's/^/    /'
        fail=$((fail + 1))
    fi
done
if [ $fail != 0 ]; then
    echo "FAIL $fail/$total (passed $pass, skipped $skip; $py)"
    exit 1
fi
if [ $pass = 0 ]; then
    echo "SKIP: every run skipped ($py)"
    exit 77
fi
echo "PASS $pass/$total (skipped $skip; $py)"
exit 0
