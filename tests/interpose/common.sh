# Sourced by the shell tests in tests/interpose and tests/mpi after setting $name. make check
# provides (AM_TESTS_ENVIRONMENT in tests/local.mk): MPIEXEC, top_srcdir, top_builddir, and
#   TLMPI_TEST_CC     the MPI C compiler with configure's CPPFLAGS/CFLAGS ("mpicc.mpich -g -O2")
#   TLMPI_TEST_LIBS   configure's LDFLAGS and LIBS (MPI flags when MPI came from pkg-config)
#   TLMPI_TEST_MPIFC  the MPI Fortran compiler wrapper, or empty
#   TLMPI_TEST_MPI    mpich, ompi or unknown
# Work files go to tests/interpose/work-$name in the build tree (removed by make clean).
skip() {
    echo "SKIP: $*"
    exit 77
}
fail() {
    echo "FAIL: $*"
    exit 1
}
launch() {
    ${SHELL:-/bin/sh} "$top_srcdir/tests/launch.sh" "$@"
}
# NEEDED entries of an ELF file, in order, space separated
needed() {
    readelf -d "$1" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' '
}
# count_stats LOG COLL CALLS: how many ranks printed "COLL passthrough calls CALLS" (TLMPI_STATS=1)
count_stats() {
    grep -cE "^ +$2 +passthrough +calls +$3 " "$1"
}
# expect_counts LOG WHAT NP AR AG RSB: each of the NP ranks counted exactly these passthrough calls
expect_counts() {
    ec_log=$1
    ec_what=$2
    ec_np=$3
    shift 3
    for ec_coll in allreduce allgather reduce_scatter_block; do
        ec_n=$(count_stats "$ec_log" $ec_coll "$1")
        [ "$ec_n" = "$ec_np" ] ||
            fail "$ec_what: $ec_n of $ec_np ranks report '$ec_coll passthrough calls $1' (see $ec_log)"
        shift
    done
}

: "${top_srcdir:=.}" "${top_builddir:=.}" "${TLMPI_TEST_CC:=mpicc}" "${TLMPI_TEST_LIBS:=}"
: "${TLMPI_TEST_MPIFC:=}" "${TLMPI_TEST_MPI:=unknown}"
[ -n "${MPIEXEC:-}" ] || skip "no mpiexec"
libdir=$(cd "$top_builddir" && pwd)/.libs
lib=$libdir/libtlmpi.so
[ -f "$lib" ] || fail "$lib is not built"
src=$top_srcdir/tests/interpose
work=$(pwd)/tests/interpose/work-$name
rm -rf "$work"
mkdir -p "$work" || fail "cannot create $work"
command -v readelf >/dev/null 2>&1 || needed() { echo "(readelf missing)"; }
