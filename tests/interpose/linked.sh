#!/bin/sh
# Interposition proof (b): link time. linked_app.c is built the way a user would,
# "$CC linked_app.c -ltlmpi" (the MPI compiler wrapper puts -ltlmpi before its own MPI library,
# so libtlmpi comes first in NEEDED and its MPI_* definitions win), and reads tlmpi_get_stats:
# its MPI_* calls are counted, its PMPI_* calls are not.
name=linked
. "$top_srcdir/tests/interpose/common.sh"

$TLMPI_TEST_CC -I"$top_srcdir/include" -I"$top_builddir/include" -o "$work/linked_app" "$src/linked_app.c" \
    -L"$libdir" -ltlmpi -Wl,-rpath,"$libdir" $TLMPI_TEST_LIBS || fail "cannot build linked_app"
deps=$(needed "$work/linked_app")
echo "linked_app NEEDED: $deps"
case "$deps" in
    *libtlmpi*libmpi*|*"(readelf missing)"*) ;;
    *) fail "libtlmpi must come before the MPI library in NEEDED" ;;
esac
launch --np 2 "$work/linked_app" >"$work/linked.log" 2>&1
rc=$?
cat "$work/linked.log"
[ $rc = 0 ] || fail "linked_app failed (rc $rc)"
[ "$(grep -c 'linked_app: OK' "$work/linked.log")" = 2 ] || fail "linked_app did not pass on both ranks"
echo "PASS: -ltlmpi interposes, tlmpi_get_stats sees the MPI_* calls ($TLMPI_TEST_MPI)"
