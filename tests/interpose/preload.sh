#!/bin/sh
# Interposition proof (a): LD_PRELOAD. plain_app.c is built with the plain MPI compiler wrapper,
# without any tlmpi header or library, and run twice with TLMPI_STATS=1:
#  - without LD_PRELOAD: no tlmpi statistics may appear (negative control),
#  - with LD_PRELOAD=.libs/libtlmpi.so handed to the ranks (hydra: -genv LD_PRELOAD <path>,
#    Open MPI: -x LD_PRELOAD=<path>; the path must be absolute): every rank prints tlmpi's
#    statistics at MPI_Finalize with exactly the program's 5 Allreduce, 3 Allgather and
#    2 Reduce_scatter_block calls.
name=preload
. "$top_srcdir/tests/interpose/common.sh"

$TLMPI_TEST_CC -o "$work/plain_app" "$src/plain_app.c" $TLMPI_TEST_LIBS || fail "cannot build plain_app"
echo "plain_app NEEDED: $(needed "$work/plain_app")"
case " $(needed "$work/plain_app") " in
    *libtlmpi*) fail "plain_app must not link libtlmpi" ;;
esac

launch --np 2 --env TLMPI_STATS=1 "$work/plain_app" >"$work/nopreload.log" 2>&1 ||
    { cat "$work/nopreload.log"; fail "plain_app failed without LD_PRELOAD"; }
grep -q "tlmpi stats" "$work/nopreload.log" && { cat "$work/nopreload.log"; fail "tlmpi statistics without LD_PRELOAD"; }

launch --np 2 --env "LD_PRELOAD=$lib" --env TLMPI_STATS=1 "$work/plain_app" >"$work/preload.log" 2>&1
rc=$?
cat "$work/preload.log"
[ $rc = 0 ] || fail "plain_app failed with LD_PRELOAD (rc $rc)"
[ "$(grep -c 'plain_app: OK' "$work/preload.log")" = 2 ] || fail "wrong results with LD_PRELOAD"
expect_counts "$work/preload.log" "LD_PRELOAD ($TLMPI_TEST_MPI)" 2 5 3 2
echo "PASS: LD_PRELOAD interposes an unmodified MPI program ($TLMPI_TEST_MPI)"
