#!/bin/sh
# Interposition proof (c): Fortran. Three programs, one per binding (include 'mpif.h', use mpi,
# use mpi_f08), each calling MPI_Allreduce twice (f08: once with an MPI_COUNT_KIND count, which
# MPICH maps to the C MPI_Allreduce_c), MPI_Allgather and MPI_Reduce_scatter_block once, are built
#   - plain ("$MPIFC prog.f90") and run with LD_PRELOAD=libtlmpi.so, and
#   - linked: "$MPIFC prog.f90 -Wl,--no-as-needed -ltlmpi -Wl,--as-needed",
# and run with TLMPI_STATS=1: every rank must report 2/1/1 passthrough calls.
#
# Pitfall (Debian/Ubuntu gcc pass --as-needed to the linker by default): a Fortran program
# references no C MPI_* symbol itself (the Fortran bindings in libmpichfort do), so
# "mpif90 prog.f90 -ltlmpi" silently drops libtlmpi (no NEEDED entry) and nothing is intercepted.
# Wrap -ltlmpi in -Wl,--no-as-needed ... -Wl,--as-needed, or use LD_PRELOAD. This test shows the
# drop (informational) and the fix (checked).
#
# MPICH only. Open MPI's Fortran bindings call PMPI_* directly, so a C-level interposer never sees
# Fortran calls there (tlmpi would need its own Fortran symbols); under Open MPI the test prints
# what it observes and is skipped.
name=fortran
. "$top_srcdir/tests/interpose/common.sh"

[ -n "$TLMPI_TEST_MPIFC" ] || skip "no MPI Fortran compiler (configure: MPIFC)"
link="-Wl,--no-as-needed -L$libdir -ltlmpi -Wl,--as-needed -Wl,-rpath,$libdir"

if [ "$TLMPI_TEST_MPI" != mpich ]; then
    if $TLMPI_TEST_MPIFC -o "$work/f_usempi" "$src/f_usempi.f90" >"$work/build.log" 2>&1; then
        launch --np 2 --env "LD_PRELOAD=$lib" --env TLMPI_STATS=1 "$work/f_usempi" >"$work/ompi.log" 2>&1
        n=$(count_stats "$work/ompi.log" allreduce 2)
        echo "observed: 'use mpi' program under LD_PRELOAD: $n of 2 ranks report tlmpi allreduce calls"
    fi
    skip "Fortran interposition is tested with MPICH only: $TLMPI_TEST_MPI's Fortran bindings call PMPI_* directly, bypassing any C MPI_* interposer"
fi

for p in f_mpifh f_usempi f_f08; do
    $TLMPI_TEST_MPIFC -o "$work/${p}_plain" "$src/$p.f90" >"$work/$p.build.log" 2>&1 ||
        { cat "$work/$p.build.log"; fail "cannot build $p"; }
    $TLMPI_TEST_MPIFC -o "$work/${p}_linked" "$src/$p.f90" $link >>"$work/$p.build.log" 2>&1 ||
        { cat "$work/$p.build.log"; fail "cannot build $p with -ltlmpi"; }
    echo "${p}_linked NEEDED: $(needed "$work/${p}_linked")"
    case " $(needed "$work/${p}_linked") " in
        *libtlmpi*|*"(readelf missing)"*) ;;
        *) fail "${p}_linked has no NEEDED libtlmpi despite --no-as-needed" ;;
    esac
    for mode in preload linked; do
        log=$work/$p.$mode.log
        if [ $mode = preload ]; then
            launch --np 2 --env "LD_PRELOAD=$lib" --env TLMPI_STATS=1 "$work/${p}_plain" >"$log" 2>&1
        else
            launch --np 2 --env TLMPI_STATS=1 "$work/${p}_linked" >"$log" 2>&1
        fi
        rc=$?
        cat "$log"
        [ $rc = 0 ] || fail "$p ($mode) failed (rc $rc)"
        [ "$(grep -c "$p: OK" "$log")" = 2 ] || fail "$p ($mode): wrong results"
        expect_counts "$log" "$p ($mode)" 2 2 1 1
        echo "ok: $p reaches tlmpi ($mode)"
    done
done

# the --as-needed pitfall, shown (not a failure if a toolchain keeps the library)
if $TLMPI_TEST_MPIFC -o "$work/f_mpifh_asneeded" "$src/f_mpifh.f90" -L"$libdir" -ltlmpi -Wl,-rpath,"$libdir" \
    >/dev/null 2>&1; then
    case " $(needed "$work/f_mpifh_asneeded") " in
        *libtlmpi*) echo "note: this toolchain keeps -ltlmpi without --no-as-needed" ;;
        *) echo "pitfall reproduced: '$TLMPI_TEST_MPIFC prog.f90 -ltlmpi' drops libtlmpi (NEEDED: $(needed "$work/f_mpifh_asneeded"))" ;;
    esac
fi
echo "PASS: Fortran mpif.h, use mpi and use mpi_f08 reach tlmpi, preloaded and linked (MPICH)"
