#!/bin/sh
# Stacking with another PMPI tool. pmpi_counter.c, a minimal PMPI tool (it counts MPI_Allreduce,
# MPI_Allgather, MPI_Reduce_scatter_block, MPI_Iallreduce, MPI_Wait and MPI_Test and forwards them
# to PMPI_*, as profilers do), is loaded with tlmpi in both orders, by LD_PRELOAD (stack_app built
# without either) and by link order (stack_app linked "-ltlmpi -lpmpi_counter" and the reverse, with
# -Wl,--no-as-needed: a linker that drops unneeded libraries would drop the second one, whose MPI_*
# the first already defines). stack_app.c makes those calls on host buffers and on fake-device
# buffers (the fake CUDA runtime, tests/fakes; TLMPI_TIER=staging) and prints what it made and what
# tlmpi served. 2 ranks each:
#  - tlmpi first (supported): the tool counts exactly the host-buffer calls and the Wait/Test calls on
#    the MPI's requests (tlmpi passes them to the next MPI_*), tlmpi serves every device-buffer call
#    and completes its own requests (the tool sees neither), no warning;
#  - the tool first (not supported): the tool counts every call, tlmpi serves none of them, and rank 0
#    prints one warning naming both libraries and the order that works.
# Then a Fortran program (f_mpifh.f90) with tlmpi first: the tool counts its host calls.
name=stack
. "$top_srcdir/tests/interpose/common.sh"

fake=$(cd "$top_builddir" && pwd)/tests/mpi/.libs/libfakecudart.so
[ -f "$fake" ] || skip "the fake CUDA runtime is not built (a build without CUDA headers)"
fakedir=$(dirname "$fake")
tool=$work/libpmpi_counter.so
inc="-I$top_srcdir/include -I$top_builddir/include"

$TLMPI_TEST_CC -shared -fPIC -o "$tool" "$src/pmpi_counter.c" $TLMPI_TEST_LIBS || fail "cannot build libpmpi_counter.so"
# shellcheck disable=SC2086
$TLMPI_TEST_CC $inc -o "$work/stack_app" "$src/stack_app.c" "$fake" -Wl,-rpath,"$fakedir" $TLMPI_TEST_LIBS -ldl ||
    fail "cannot build stack_app"
# shellcheck disable=SC2086
$TLMPI_TEST_CC $inc -o "$work/stack_app_tlmpi_first" "$src/stack_app.c" "$fake" -Wl,--no-as-needed -L"$libdir" -ltlmpi -L"$work" \
    -lpmpi_counter -Wl,-rpath,"$fakedir" -Wl,-rpath,"$libdir" -Wl,-rpath,"$work" $TLMPI_TEST_LIBS -ldl ||
    fail "cannot build stack_app_tlmpi_first"
# shellcheck disable=SC2086
$TLMPI_TEST_CC $inc -o "$work/stack_app_tool_first" "$src/stack_app.c" "$fake" -Wl,--no-as-needed -L"$work" -lpmpi_counter \
    -L"$libdir" -ltlmpi -Wl,-rpath,"$fakedir" -Wl,-rpath,"$libdir" -Wl,-rpath,"$work" $TLMPI_TEST_LIBS -ldl ||
    fail "cannot build stack_app_tool_first"
case " $(needed "$work/stack_app") " in
    *libtlmpi*|*libpmpi_counter*) fail "stack_app must link neither libtlmpi nor libpmpi_counter" ;;
esac
echo "stack_app_tlmpi_first NEEDED: $(needed "$work/stack_app_tlmpi_first")"
case "$(needed "$work/stack_app_tlmpi_first")" in
    *libtlmpi*libpmpi_counter*|*"(readelf missing)"*) ;;
    *) fail "stack_app_tlmpi_first: libtlmpi must come before libpmpi_counter in NEEDED" ;;
esac
echo "stack_app_tool_first NEEDED: $(needed "$work/stack_app_tool_first")"
case "$(needed "$work/stack_app_tool_first")" in
    *libpmpi_counter*libtlmpi*|*"(readelf missing)"*) ;;
    *) fail "stack_app_tool_first: libpmpi_counter must come before libtlmpi in NEEDED" ;;
esac

# field N of "allreduce A allgather G reduce_scatter_block S iallreduce I wait W test T"
field() { echo "$1" | awk -v k="$2" '{ for (i = 1; i < NF; i += 2) if ($i == k) print $(i + 1) }'; }

# check_run WHAT ORDER LOG: ORDER tlmpi (tlmpi first) or tool (the tool first)
check_run() {
    what=$1 order=$2 log=$3
    [ "$(grep -c '^stack_app: OK' "$log")" = 2 ] || { cat "$log"; fail "$what: stack_app did not pass on both ranks"; }
    warn=$(grep -c 'TLMPI WARN .*a PMPI layer loaded before' "$log")
    for rank in 0 1; do
        host=$(sed -n "s/^stack_app: rank $rank: host: //p" "$log")
        dev=$(sed -n "s/^stack_app: rank $rank: device: //p" "$log")
        saw=$(sed -n "s/^pmpi_counter: rank $rank: //p" "$log")
        served=$(sed -n "s/^stack_app: rank $rank: tlmpi served //p" "$log")
        [ -n "$host" ] && [ -n "$dev" ] && [ -n "$saw" ] && [ -n "$served" ] ||
            { cat "$log"; fail "$what: rank $rank printed no counts"; }
        if [ "$order" = tlmpi ]; then
            want=$host
            want_served="allreduce $(($(field "$dev" allreduce) + $(field "$dev" iallreduce))) allgather $(field "$dev" allgather) reduce_scatter_block $(field "$dev" reduce_scatter_block)"
        else
            want=
            for k in allreduce allgather reduce_scatter_block iallreduce wait test; do
                want="$want${want:+ }$k $(($(field "$host" $k) + $(field "$dev" $k)))"
            done
            want_served="allreduce 0 allgather 0 reduce_scatter_block 0"
        fi
        echo "$what: rank $rank: the tool saw: $saw"
        echo "$what: rank $rank: tlmpi served: $served"
        [ "$saw" = "$want" ] || { cat "$log"; fail "$what: rank $rank: the tool saw '$saw', expected '$want'"; }
        [ "$served" = "$want_served" ] ||
            { cat "$log"; fail "$what: rank $rank: tlmpi served '$served', expected '$want_served'"; }
    done
    if [ "$order" = tlmpi ]; then
        [ "$warn" = 0 ] || { cat "$log"; fail "$what: a layer-order warning where tlmpi comes first"; }
    else
        [ "$warn" = 1 ] || { cat "$log"; fail "$what: $warn layer-order warnings, expected 1 (rank 0)"; }
        line=$(grep 'TLMPI WARN .*a PMPI layer loaded before' "$log")
        echo "$what: $line"
        case "$line" in
            *" r0 TLMPI WARN "*"libpmpi_counter.so, a PMPI layer loaded before "*libtlmpi.so*"LD_PRELOAD="*libtlmpi.so*:*libpmpi_counter.so*) ;;
            *) fail "$what: the warning does not name both libraries and the order LD_PRELOAD=libtlmpi:tool" ;;
        esac
    fi
    echo "PASS: $what ($TLMPI_TEST_MPI)"
}

run() { # WHAT ORDER LOG, then launch's arguments
    what=$1 order=$2 log=$3
    shift 3
    launch --np 2 --env TLMPI_TIER=staging "$@" >"$log" 2>&1 || { cat "$log"; fail "$what: the run failed"; }
    check_run "$what" "$order" "$log"
}

run "LD_PRELOAD=libtlmpi:libpmpi_counter" tlmpi "$work/preload_tlmpi_first.log" \
    --env "LD_PRELOAD=$fake:$lib:$tool" "$work/stack_app"
run "LD_PRELOAD=libpmpi_counter:libtlmpi" tool "$work/preload_tool_first.log" \
    --env "LD_PRELOAD=$fake:$tool:$lib" "$work/stack_app"
run "-ltlmpi -lpmpi_counter" tlmpi "$work/link_tlmpi_first.log" "$work/stack_app_tlmpi_first"
run "-lpmpi_counter -ltlmpi" tool "$work/link_tool_first.log" "$work/stack_app_tool_first"

# Fortran (f_mpifh.f90: 2 MPI_ALLREDUCE, 1 MPI_ALLGATHER, 1 MPI_REDUCE_SCATTER_BLOCK on host arrays)
# with tlmpi first: its pass-through calls reach the tool's C MPI_* (MPICH's Fortran bindings call the
# C names; under Open MPI tlmpi's Fortran entry points call its C ones)
if [ -n "$TLMPI_TEST_MPIFC" ]; then
    fflags=
    printf 'program t\nend program t\n' >"$work/flag.f90"
    if $TLMPI_TEST_MPIFC -fallow-argument-mismatch -o "$work/flag" "$work/flag.f90" >/dev/null 2>&1; then
        fflags=-fallow-argument-mismatch
    fi
    $TLMPI_TEST_MPIFC $fflags -o "$work/f_mpifh" "$src/f_mpifh.f90" >"$work/f_mpifh.build.log" 2>&1 ||
        { cat "$work/f_mpifh.build.log"; fail "cannot build f_mpifh"; }
    flog=$work/fortran_tlmpi_first.log
    launch --np 2 --env "LD_PRELOAD=$lib:$tool" "$work/f_mpifh" >"$flog" 2>&1 || { cat "$flog"; fail "f_mpifh failed"; }
    [ "$(grep -c 'f_mpifh: OK' "$flog")" = 2 ] || { cat "$flog"; fail "f_mpifh: wrong results"; }
    for rank in 0 1; do
        saw=$(sed -n "s/^pmpi_counter: rank $rank: //p" "$flog")
        echo "Fortran, LD_PRELOAD=libtlmpi:libpmpi_counter: rank $rank: the tool saw: $saw"
        [ "$saw" = "allreduce 2 allgather 1 reduce_scatter_block 1 iallreduce 0 wait 0 test 0" ] ||
            { cat "$flog"; fail "Fortran: rank $rank: the tool saw '$saw'"; }
    done
    echo "PASS: Fortran host calls pass through tlmpi to the tool ($TLMPI_TEST_MPI)"
else
    echo "note: no MPI Fortran compiler: the Fortran case is left out"
fi
echo "PASS: tlmpi and a PMPI tool stacked in both orders, by LD_PRELOAD and by link order ($TLMPI_TEST_MPI)"
