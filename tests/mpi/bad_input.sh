#!/bin/sh
# bad_input.sh [BUILD_DIR]: tests/mpi/mpi_bad_input (odd and bad input on device buffers of the fake
# CUDA runtime against the MPI on host buffers: same error class in every form, or the same result)
# with 2 ranks, under `timeout` (BAD_INPUT_TIMEOUT, default 120 s) so that a hang is a failure. It
# also fails on any "TLMPI ERROR" line in the ranks' output or logs (TLMPI_LOG_FILE): the cases are
# the caller's own mistakes, which the MPI reports, not errors of tlmpi. Exit 77 where mpi_bad_input
# is not built (no CUDA headers at configure time). By hand from a build directory:
#   MPIEXEC=mpiexec.mpich sh ../tests/mpi/bad_input.sh
here=$(cd "$(dirname "$0")" && pwd)
srcdir=${top_srcdir:-$here/../..}
builddir=${1:-${top_builddir:-.}}
builddir=$(cd "$builddir" && pwd)
MPIEXEC=${MPIEXEC:-mpiexec}
export MPIEXEC
prog=$builddir/tests/mpi/mpi_bad_input
if [ ! -x "$prog" ]; then
    echo "SKIP: $prog not built (needs CUDA headers at configure time)"
    exit 77
fi
work=$builddir/tests/mpi/work-bad-input
rm -rf "$work"
mkdir -p "$work"
timeout -k 5 "${BAD_INPUT_TIMEOUT:-120}" sh "$srcdir/tests/launch.sh" --np 2 --env TLMPI_LOG_FILE="$work/log.%r" \
    --env TLMPI_NODE=0 ${TLMPI_TEST_SEED:+--env TLMPI_TEST_SEED=$TLMPI_TEST_SEED} \
    ${TLMPI_TEST_VERBOSE:+--env TLMPI_TEST_VERBOSE=$TLMPI_TEST_VERBOSE} -- "$prog" >"$work/out" 2>&1
rc=$?
cat "$work/out"
errors=$(cat "$work/out" "$work"/log.* 2>/dev/null | grep -c 'TLMPI ERROR')
if [ "$errors" != 0 ]; then
    echo "bad_input: FAIL: $errors TLMPI ERROR line(s) for the caller's own mistakes:"
    cat "$work/out" "$work"/log.* 2>/dev/null | grep 'TLMPI ERROR' | head -5
    exit 1
fi
if [ "$rc" != 0 ]; then
    echo "bad_input: FAIL: exit status $rc"
    exit 1
fi
echo "bad_input: PASS (no TLMPI ERROR line; logs in $work)"
