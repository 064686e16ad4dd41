#!/bin/sh
# Interposition proof (c): Fortran, under MPICH and Open MPI. Three programs, one per binding
# (include 'mpif.h', use mpi, use mpi_f08), each calling MPI_Allreduce twice (f08: once with an
# MPI_COUNT_KIND count, which MPICH maps to the C MPI_Allreduce_c), MPI_Allgather and
# MPI_Reduce_scatter_block once, are built
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
# MPICH: its Fortran bindings call the C MPI_* names, which tlmpi interposes; libtlmpi must not
# define Fortran symbols there (they would wrap each call twice: checked).
# Open MPI: its Fortran bindings call PMPI_* directly, so libtlmpi defines Open MPI's Fortran entry
# points of the intercepted calls (src/entry/mpi_fortran.c: mpi_allreduce_ and the other manglings
# for mpif.h / use mpi, mpi_allreduce_f08_ for use mpi_f08, ...; checked in nm -D). Its mpif.h needs
# -fallow-argument-mismatch with gfortran >= 10 (MPICH's wrapper passes it itself), and Open MPI 4.1's
# mpi_f08 has no large-count MPI_Allreduce: f_f08 is then built with the count a default INTEGER
# (the same 2/1/1 calls).
#
# Then the siblings on device buffers (f_siblings.f90: MPI_BCAST, MPI_IBCAST, MPI_REDUCE, MPI_ALLGATHERV,
# MPI_IALLGATHERV, MPI_REDUCE_SCATTER, MPI_ALLTOALL), preloaded (Open MPI: linked too), counted on the
# staging path. And the non-blocking collectives on device buffers ("device" memory from the fake CUDA runtime):
# tlmpi's requests, which only complete if the Fortran completion calls reach tlmpi (else the MPI
# waits for ever: every run is bounded). f_nbc.f90 (use mpi: MPI_WAIT, MPI_WAITALL, MPI_TEST) under
# both MPIs, preloaded (Open MPI: linked too); under Open MPI also f_nbcreq.f90 (use mpi: the rest of the Wait/Test family,
# MPI_REQUEST_GET_STATUS, MPI_REQUEST_FREE, MPI_CANCEL) and f_nbc08.f90 (use mpi_f08: all of them,
# entry points of their own), each preloaded and linked.
name=fortran
. "$top_srcdir/tests/interpose/common.sh"

[ -n "$TLMPI_TEST_MPIFC" ] || skip "no MPI Fortran compiler (configure: MPIFC)"
link="-Wl,--no-as-needed -L$libdir -ltlmpi -Wl,--as-needed -Wl,-rpath,$libdir"

# the Fortran entry points libtlmpi exports (one name per call and binding is enough to tell)
fsyms="mpi_allreduce_ mpi_iallreduce_ mpi_wait_ mpi_waitall_ mpi_allreduce_f08_ mpi_waitall_f08_ mpi_bcast_ mpi_ialltoall_
    mpi_allgatherv_f08_ MPI_REDUCE_SCATTER mpi_ireduce__"
exported() {
    nm -D --defined-only "$lib" 2>/dev/null | awk '{print $NF}' | grep -cxF -e "$1"
}
fflags=
case "$TLMPI_TEST_MPI" in
    mpich)
        if command -v nm >/dev/null 2>&1; then
            for s in $fsyms; do
                [ "$(exported $s)" = 0 ] || fail "libtlmpi exports the Fortran symbol $s under MPICH (MPICH's Fortran bindings call the C names: each call would be wrapped twice)"
            done
        fi ;;
    ompi)
        command -v nm >/dev/null 2>&1 || skip "nm missing"
        for s in $fsyms; do
            [ "$(exported $s)" = 1 ] || fail "libtlmpi does not export the Fortran entry point $s (Open MPI build: src/entry/mpi_fortran.c)"
        done
        echo "libtlmpi exports $(nm -D --defined-only "$lib" | awk '{print $NF}' | grep -cE '^(mpi_[a-z0-9_]+|MPI_[A-Z_]+|MPI_[A-Za-z_]+_f(08)?)$') Fortran names"
        # Open MPI's mpif.h passes MPI_IN_PLACE (a scalar) where arrays go: gfortran >= 10 needs this
        printf 'program t\nend program t\n' >"$work/flag.f90"
        if $TLMPI_TEST_MPIFC -fallow-argument-mismatch -o "$work/flag" "$work/flag.f90" >/dev/null 2>&1; then
            fflags=-fallow-argument-mismatch
        fi ;;
    *)
        skip "Fortran interposition is tested with MPICH and Open MPI only (this MPI: $TLMPI_TEST_MPI)" ;;
esac

for p in f_mpifh f_usempi f_f08; do
    psrc=$src/$p.f90
    if [ $p = f_f08 ] && [ "$TLMPI_TEST_MPI" = ompi ] &&
        ! $TLMPI_TEST_MPIFC $fflags -o "$work/${p}_try" "$psrc" >"$work/$p.try.log" 2>&1; then
        # no large-count MPI_Allreduce in this mpi_f08 (Open MPI 4.1): the same call, default INTEGER count
        grep -q 'MPI_COUNT_KIND' "$psrc" || { cat "$work/$p.try.log"; fail "cannot build $p"; }
        sed 's/integer(kind=MPI_COUNT_KIND) :: n/integer :: n/' "$psrc" >"$work/$p.f90"
        psrc=$work/$p.f90
        echo "note: this mpi_f08 has no large-count (MPI_COUNT_KIND) MPI_Allreduce: $p's second MPI_Allreduce takes a default INTEGER count"
    fi
    $TLMPI_TEST_MPIFC $fflags -o "$work/${p}_plain" "$psrc" >"$work/$p.build.log" 2>&1 ||
        { cat "$work/$p.build.log"; fail "cannot build $p"; }
    $TLMPI_TEST_MPIFC $fflags -o "$work/${p}_linked" "$psrc" $link >>"$work/$p.build.log" 2>&1 ||
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

# non-blocking collectives on device buffers from Fortran: tlmpi's requests, completed by Fortran
# calls, which must reach tlmpi (else the MPI waits for ever on a request only tlmpi can complete:
# the run is bounded). "Device" memory from the fake CUDA runtime. nbc_run PROG ROUNDS MODE [SOURCE]
fake=$(cd "$top_builddir" && pwd)/tests/mpi/.libs
nbc_run() {
    nr_p=$1
    nr_rounds=$2
    nr_mode=$3
    nr_srcf=${4:-$src/$nr_p.f90}
    nr_log=$work/$nr_p.$nr_mode.log
    if [ "$nr_mode" = preload ]; then
        $TLMPI_TEST_MPIFC $fflags -o "$work/${nr_p}_plain" "$nr_srcf" "$src/f_devalloc.c" -L"$fake" -lfakecudart \
            -Wl,-rpath,"$fake" >"$work/$nr_p.build.log" 2>&1 || { cat "$work/$nr_p.build.log"; fail "cannot build $nr_p"; }
        timeout -k 5 120 sh "$top_srcdir/tests/launch.sh" --np 2 --env "LD_PRELOAD=$lib" --env TLMPI_STATS=1 \
            --env TLMPI_TIER=staging --env TLMPI_TIMEOUT=60 -- "$work/${nr_p}_plain" >"$nr_log" 2>&1
    else
        $TLMPI_TEST_MPIFC $fflags -o "$work/${nr_p}_linked" "$nr_srcf" "$src/f_devalloc.c" -L"$fake" -lfakecudart \
            -Wl,-rpath,"$fake" $link >"$work/$nr_p.build.log" 2>&1 || { cat "$work/$nr_p.build.log"; fail "cannot build $nr_p with -ltlmpi"; }
        timeout -k 5 120 sh "$top_srcdir/tests/launch.sh" --np 2 --env TLMPI_STATS=1 \
            --env TLMPI_TIER=staging --env TLMPI_TIMEOUT=60 -- "$work/${nr_p}_linked" >"$nr_log" 2>&1
    fi
    nr_rc=$?
    cat "$nr_log"
    [ $nr_rc = 0 ] || fail "$nr_p ($nr_mode) failed (rc $nr_rc; 124: a Fortran completion call did not reach tlmpi)"
    [ "$(grep -c "$nr_p: OK" "$nr_log")" = 2 ] || fail "$nr_p ($nr_mode): wrong results"
    for c in allreduce allgather reduce_scatter_block; do
        [ "$(grep -cE "^ *$c +staging:nonblocking +calls +$nr_rounds " "$nr_log")" = 2 ] ||
            fail "$nr_p ($nr_mode): every rank must report $nr_rounds non-blocking $c calls on the staging tier"
    done
    echo "ok: $nr_p ($nr_mode): Fortran non-blocking collectives on device buffers completed through tlmpi"
}
if [ -f "$fake/libfakecudart.so" ]; then
    nbc_run f_nbc 3 preload
    echo "ok: Fortran MPI_IALLREDUCE / MPI_IALLGATHER / MPI_IREDUCE_SCATTER_BLOCK on device buffers, completed by Fortran MPI_WAIT / MPI_WAITALL / MPI_TEST ($TLMPI_TEST_MPI)"
    if [ "$TLMPI_TEST_MPI" = ompi ]; then
        nbc_run f_nbc 3 linked
        echo "note: each run of f_nbcreq and f_nbc08 prints one 'MPI_Cancel ... cannot be cancelled' error per rank: the refused MPI_CANCEL it checks"
        nbc_run f_nbcreq 7 preload
        nbc_run f_nbcreq 7 linked
        nbc_run f_nbc08 10 preload
        nbc_run f_nbc08 10 linked
        echo "ok: use mpi and use mpi_f08 MPI_WAITANY / TESTANY / WAITSOME / TESTSOME / TESTALL / REQUEST_GET_STATUS / REQUEST_FREE / CANCEL (and mpi_f08 WAIT / WAITALL / TEST) reach tlmpi (Open MPI)"
    else
        # MPICH's mpi_f08 Wait/Test bindings call PMPI_* directly: tlmpi's requests complete there
        # because they are MPICH extended generalized requests that MPICH's own calls poll. The
        # program is f_nbc.f90 with use mpi_f08 and TYPE(MPI_Request) handles.
        sed -e 's/^program f_nbc$/program f_nbc_f08/' -e 's/^end program f_nbc$/end program f_nbc_f08/' \
            -e 's/^  use mpi$/  use mpi_f08/' -e 's/^  integer :: req(3)$/  type(MPI_Request) :: req(3)/' \
            -e 's/f_nbc: /f_nbc_f08: /' "$src/f_nbc.f90" >"$work/f_nbc_f08.f90"
        grep -q 'type(MPI_Request) :: req(3)' "$work/f_nbc_f08.f90" || fail "f_nbc_f08.f90: the sed of f_nbc.f90 did not apply"
        nbc_run f_nbc_f08 3 preload "$work/f_nbc_f08.f90"
        echo "ok: use mpi_f08 MPI_WAIT / MPI_WAITALL / MPI_TEST on tlmpi's requests complete through MPICH's own bindings (its extended generalized requests poll tlmpi)"
    fi
    # the siblings on device buffers from Fortran: served through staging (every rank counts them there)
    sib_run() { # MODE
        sr_mode=$1
        sr_log=$work/f_siblings.$sr_mode.log
        if [ "$sr_mode" = preload ]; then
            $TLMPI_TEST_MPIFC $fflags -o "$work/f_siblings_plain" "$src/f_siblings.f90" "$src/f_devalloc.c" -L"$fake" \
                -lfakecudart -Wl,-rpath,"$fake" >"$work/f_siblings.build.log" 2>&1 ||
                { cat "$work/f_siblings.build.log"; fail "cannot build f_siblings"; }
            timeout -k 5 120 sh "$top_srcdir/tests/launch.sh" --np 2 --env "LD_PRELOAD=$lib" --env TLMPI_STATS=1 \
                --env TLMPI_NODE=0 --env TLMPI_TIMEOUT=60 -- "$work/f_siblings_plain" >"$sr_log" 2>&1
        else
            $TLMPI_TEST_MPIFC $fflags -o "$work/f_siblings_linked" "$src/f_siblings.f90" "$src/f_devalloc.c" -L"$fake" \
                -lfakecudart -Wl,-rpath,"$fake" $link >"$work/f_siblings.build.log" 2>&1 ||
                { cat "$work/f_siblings.build.log"; fail "cannot build f_siblings with -ltlmpi"; }
            timeout -k 5 120 sh "$top_srcdir/tests/launch.sh" --np 2 --env TLMPI_STATS=1 --env TLMPI_NODE=0 --env TLMPI_TIMEOUT=60 -- \
                "$work/f_siblings_linked" >"$sr_log" 2>&1
        fi
        sr_rc=$?
        cat "$sr_log"
        [ $sr_rc = 0 ] || fail "f_siblings ($sr_mode) failed (rc $sr_rc)"
        [ "$(grep -c "f_siblings: OK" "$sr_log")" = 2 ] || fail "f_siblings ($sr_mode): wrong results"
        # (a path's line counts every form; the :nonblocking line those alone)
        for c in "bcast staging 2" "bcast staging:nonblocking 1" "reduce staging 1" "allgatherv staging 2" \
                 "allgatherv staging:nonblocking 1" "reduce_scatter staging 1" "alltoall staging 1"; do
            set -- $c
            [ "$(grep -cE "^ *$1 +$2 +calls +$3 " "$sr_log")" = 2 ] ||
                fail "f_siblings: every rank must report $3 $2 $1 call(s)"
        done
        echo "ok: f_siblings ($sr_mode): Fortran MPI_BCAST / MPI_IBCAST / MPI_REDUCE / MPI_ALLGATHERV / MPI_IALLGATHERV / MPI_REDUCE_SCATTER / MPI_ALLTOALL on device buffers served by tlmpi"
    }
    sib_run preload
    [ "$TLMPI_TEST_MPI" = ompi ] && sib_run linked
else
    echo "note: no fake CUDA runtime in this build (a CUDA build has one): the Fortran non-blocking case is not run"
fi

# the --as-needed pitfall, shown (not a failure if a toolchain keeps the library). Under Open MPI the
# program itself references tlmpi's Fortran entry points, so the linker keeps -ltlmpi.
if $TLMPI_TEST_MPIFC $fflags -o "$work/f_mpifh_asneeded" "$src/f_mpifh.f90" -L"$libdir" -ltlmpi -Wl,-rpath,"$libdir" \
    >/dev/null 2>&1; then
    case " $(needed "$work/f_mpifh_asneeded") " in
        *libtlmpi*) echo "note: this toolchain keeps -ltlmpi without --no-as-needed" ;;
        *) echo "pitfall reproduced: '$TLMPI_TEST_MPIFC prog.f90 -ltlmpi' drops libtlmpi (NEEDED: $(needed "$work/f_mpifh_asneeded"))" ;;
    esac
fi
echo "PASS: Fortran mpif.h, use mpi and use mpi_f08 reach tlmpi, preloaded and linked; non-blocking forms and their completion calls too ($TLMPI_TEST_MPI)"
