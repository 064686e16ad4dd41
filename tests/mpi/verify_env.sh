#!/bin/sh
# TLMPI_VERIFY_UNIFORM=1 checks the all-ranks TLMPI_* settings when a communicator's state is built:
# the same settings on both ranks pass; a different TLMPI_STAGING_CHUNK on one rank must abort with
# tlmpi's message (without the check such a difference could deadlock a staged collective).
name=verify_env
. "$top_srcdir/tests/interpose/common.sh"
info=$(cd "$top_builddir" && pwd)/tools/tlmpi_info
flags=
if "$MPIEXEC" --version 2>&1 | grep -qiE 'open ?mpi|openrte'; then
    flags=--oversubscribe
    [ "$(id -u)" = 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    setenv="-x TLMPI_STAGING_CHUNK=1m"
else
    setenv="-env TLMPI_STAGING_CHUNK 1m"
fi
export TLMPI_VERIFY_UNIFORM=1
"$MPIEXEC" $flags -n 2 "$info" --topo >"$work/same.log" 2>&1 </dev/null ||
    fail "equal settings: exit $? (see $work/same.log)"
grep -q "TLMPI_VERIFY_UNIFORM" "$work/same.log" && fail "equal settings reported as different ($work/same.log)"
# MPMD: rank 0 gets another chunk size. tlmpi's messages go to per-process files: output forwarded
# by the launcher can be lost when a rank aborts.
export TLMPI_LOG_FILE="$work/tlmpi.%p.log"
"$MPIEXEC" $flags -n 1 $setenv "$info" --topo : -n 1 "$info" --topo >"$work/diff.log" 2>&1 </dev/null &&
    fail "different TLMPI_STAGING_CHUNK on one rank: exit 0, no abort ($work/diff.log)"
cat "$work"/tlmpi.*.log >>"$work/diff.log" 2>/dev/null
grep -q "TLMPI_VERIFY_UNIFORM: ranks have different values" "$work/diff.log" ||
    fail "different settings: no tlmpi message ($work/diff.log)"
echo "PASS: equal settings accepted; a different TLMPI_STAGING_CHUNK on one rank aborted with tlmpi's message"
