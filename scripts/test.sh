#!/usr/bin/env bash
# scripts/test.sh: run all tests (what CI runs through .ci/run). Debian 12 / Ubuntu.
#
#   1. installs the Debian packages that are missing (apt-get -y; needs root or sudo only then),
#   2. autoreconf -fi in the source tree,
#   3. for each MPI that is installed, MPICH (CC=mpicc.mpich MPIEXEC=mpiexec.mpich) and Open MPI
#      (CC=mpicc.openmpi MPIEXEC=mpiexec.openmpi): an out-of-tree build in build-ci-mpich /
#      build-ci-ompi, make -j$(nproc), make check; prints every test log,
#   3b. per MPI, tests/install/consume.sh: make install into a temporary DESTDIR, a program built
#      against it through find_package(tlmpi) and through pkg-config, run with 2 ranks (2 tests),
#   3c. per MPI, the sanitizer builds TLMPI_SANITIZE names (default "asan:mpich tsan:mpich"; empty:
#      none) through scripts/sanitize.sh KIND MPI, which says which tests run under each and why:
#      asan:mpich is a clang build with ASan + UBSan + LSan that also builds the libFuzzer harnesses,
#      runs their seed corpus and fuzzes each FUZZ_SECONDS (default 10; scripts/fuzz.sh);
#      tsan:mpich is ThreadSanitizer on tests/mpi/threads.sh with 2 ranks,
#   4. prints "make-check (MPI): N passed, N failed, N skipped" per MPI and, as the last line,
#      "make-check: N passed, N failed, N skipped" over both; exits nonzero if anything failed.
#
# CUDA and NCCL are found by configure in /usr/local/cuda (no CUDA variables needed); without a GPU
# the GPU tests are skipped. Hung MPI jobs are killed after MPIEXEC_TIMEOUT seconds (default 300;
# hydra and Open MPI's mpiexec both honour it), and each make check after TLMPI_CHECK_TIMEOUT
# seconds (default 2400).
#
# Environment: TLMPI_TEST_MPIS (default "mpich ompi"), SKIP_APT=1 (never call apt-get),
# TLMPI_TEST_JOBS (tests run at once; default nproc/2, at least 1: every MPI test runs >= 2 busy
# polling ranks, and oversubscribed MPICH ranks are ~1000x slower), TLMPI_DISTCHECK (default 1:
# make distcheck with the first MPI: proves the tarball a GPU host is built from is complete,
# configures, builds and passes its tests; 0 skips it), TLMPI_DISTCHECK_CUDA (default 0: distcheck
# configures the unpacked tarball --with-cuda=no, so it builds the C library and runs the tests that
# exist without CUDA but does not rebuild every CUDA kernel with nvcc: with CUDA it took 931 s =
# 15.5 min of a 40 min run on a 2-core box, most of it nvcc; without, 48 s there (2026-12-02), so the
# expected saving is about 14 min (a full run about 25 min instead of 40). The
# builds above still compile the kernels and run every test, and a GPU host builds the kernels from
# the same tarball (tests/gpu/run.sh); 1 = distcheck with configure's CUDA default),
# CONFIGURE_FLAGS (extra configure arguments).
#
# The 30-minute budget and what keeps the sanitizer builds inside it (docs/DESIGN.md "Sanitizers and
# fuzzing", "Cost in CI": asan:mpich 460 s and tsan:mpich 190 s measured on the 2-core box under a
# load average of 5-13; the savings below 145 s + 172 s): the sanitizer builds compile the C
# sources only, with the CUDA kernels copied compiled from the plain build, and build only their
# tests' programs; Open MPI's build takes MPICH's compiled kernels too (TLMPI_SHARE_CUDA, default 1:
# nvcc once per run instead of twice); and when both MPIs run, hier.sh's 6- and 8-rank layouts run
# under Open MPI only (HIER_LAYOUTS under MPICH: its 4-rank layouts; 170 s of busy-polling MPICH ranks
# on 2 cores, 35 s under Open MPI), so every layout still runs in every CI run. Not under a
# sanitizer in CI: Open MPI (ASan's leak check cannot work there, tests/sanitize/env.sh says why, and
# another sanitizer build and run does not fit the budget; scripts/sanitize.sh asan ompi makes one by
# hand), and the tests scripts/sanitize.sh lists as left out.
#
# Long steps (make, make check, make distcheck) print a progress line a minute ("still running ...:
# N s, N tests done"), so the run is never silent for long.
set -uo pipefail

cd "$(dirname "$0")/.."
src=$(pwd)
t_start=$(date +%s)
ncpu=$(nproc 2>/dev/null || echo 2)
jobs=${TLMPI_TEST_JOBS:-$((ncpu / 2))}
[ "$jobs" -ge 1 ] || jobs=1
export MPIEXEC_TIMEOUT=${MPIEXEC_TIMEOUT:-300}
export DEBIAN_FRONTEND=noninteractive

exec 3>&1 # the progress lines go here, also while a step's output goes to its log file
say() { printf '\n==> %s\n' "$*"; }
elapsed() { echo "$(($(date +%s) - $1)) s"; }
# progress WHAT DIR CMD...: runs CMD; meanwhile a line a minute saying how long it has run and how
# many tests (automake .trs files under DIR) have finished
progress() {
    local what=$1 dir=$2 t0 tick rc=0
    shift 2
    t0=$(date +%s)
    (
        while sleep "${TLMPI_PROGRESS_S:-60}"; do
            echo "  ... still running $what: $(elapsed "$t0"), $(find "$dir" -name '*.trs' 2>/dev/null | wc -l) tests done" >&3
        done
    ) &
    tick=$!
    "$@" 3>&- || rc=$?
    kill "$tick" 2>/dev/null
    wait "$tick" 2>/dev/null
    return $rc
}

# ---- 1. packages ---------------------------------------------------------------------------------
# shellcheck source=scripts/packages.sh
. "$src/scripts/packages.sh"
install_missing test.sh mpich libmpich-dev libopenmpi-dev openmpi-bin libhwloc-dev hwloc check autoconf \
    automake libtool pkg-config gfortran valgrind make python3-mpi4py cmake clang libclang-rt-14-dev

# ---- 2. autotools --------------------------------------------------------------------------------
say "autoreconf -fi"
t=$(date +%s)
autoreconf -fi >autoreconf.log 2>&1 || { cat autoreconf.log; echo "test.sh: autoreconf failed" >&2; exit 1; }
echo "done in $(elapsed "$t")"

# ---- 3. one build + make check per MPI -------------------------------------------------------------
tot_pass=0 tot_fail=0 tot_skip=0
summary=()
count() { sed -n "s/^# $1: *//p" "$2" | head -1; }

run_one() { # name CC MPIEXEC
    local name=$1 cc=$2 mpiexec=$3 dir=$src/build-ci-$1 t rc=0 p f e x s
    if ! command -v "$cc" >/dev/null 2>&1 || ! command -v "$mpiexec" >/dev/null 2>&1; then
        say "$name: $cc or $mpiexec not installed: skipped"
        summary+=("make-check ($name): not run ($cc or $mpiexec missing)")
        return
    fi
    say "$name: configure + make in build-ci-$name"
    t=$(date +%s)
    rm -rf "$dir"
    mkdir -p "$dir"
    cd "$dir" || return
    if ! ../configure --enable-silent-rules CC="$cc" MPIEXEC="$mpiexec" ${CONFIGURE_FLAGS:-} >configure.out 2>&1; then
        tail -40 configure.out
        tail -40 config.log
        summary+=("make-check ($name): configure FAILED")
        tot_fail=$((tot_fail + 1))
        cd "$src"
        return
    fi
    sed -n '/configuration summary/,$p' configure.out
    # the CUDA kernels do not depend on the MPI (no mpi.h, no config.h): the second MPI's build takes
    # the first one's compiled objects (with their times, newer than the sources) instead of running
    # nvcc again for minutes
    if [ "${TLMPI_SHARE_CUDA:-1}" = 1 ] && [ -n "${cuda_from:-}" ] && grep -q '^libtlmpi_cuda_la' Makefile; then
        cp -a "$cuda_from/cuda/." cuda/
        echo "CUDA objects copied from $cuda_from ($(make -n libtlmpi.la 2>/dev/null | grep -c nvcc) left to compile)"
    fi
    if ! progress "make ($name)" "$dir" make -j"$ncpu" >make.out 2>&1; then
        tail -60 make.out
        summary+=("make-check ($name): build FAILED")
        tot_fail=$((tot_fail + 1))
        cd "$src"
        return
    fi
    grep -E 'warning:' make.out | sort -u | head -20
    echo "configure + make: $(elapsed "$t")"
    [ -f cuda/.libs/local.o ] && [ -z "${cuda_from:-}" ] && cuda_from=$dir

    say "$name: make check ($jobs test(s) at a time, MPIEXEC_TIMEOUT=$MPIEXEC_TIMEOUT)"
    t=$(date +%s)
    # build the test programs with every core, then run the tests
    progress "make check's programs ($name)" "$dir" make -j"$ncpu" check TESTS= >check-build.out 2>&1 ||
        { tail -40 check-build.out; rc=2; }
    if [ $rc = 0 ]; then
        # MPICH's busy-polling ranks oversubscribed 6 and 8 to 2 cores take 170 s of hier.sh's 6- and
        # 8-rank layouts, Open MPI's 35 s: those run under Open MPI only when it runs too
        hl=${HIER_LAYOUTS:-}
        if [ -z "$hl" ] && [ "$name" = mpich ] && [[ " ${TLMPI_TEST_MPIS:-mpich ompi} " == *" ompi "* ]] &&
            command -v mpiexec.openmpi >/dev/null 2>&1; then
            hl="4x2 4x2:nccl 4x2:ipc 4x2:fused0"
            echo "hier.sh: HIER_LAYOUTS=\"$hl\" (the 6- and 8-rank layouts run under Open MPI)"
        fi
        HIER_LAYOUTS=$hl progress "make check ($name)" "$dir" timeout "${TLMPI_CHECK_TIMEOUT:-2400}" \
            make -j"$jobs" check </dev/null || rc=$?
    fi
    echo "make check: rc $rc, $(elapsed "$t")"
    # the automake harness keeps each test's output in its .log; print them all
    find tests -name '*.log' ! -path '*/work-*' | sort | while read -r lf; do
        echo "===== $name: $lf"
        cat "$lf"
    done
    if [ -f test-suite.log ]; then
        p=$(count PASS test-suite.log) f=$(count FAIL test-suite.log) e=$(count ERROR test-suite.log)
        x=$(count XPASS test-suite.log) s=$(count SKIP test-suite.log)
        f=$((${f:-0} + ${e:-0} + ${x:-0}))
        [ $rc = 0 ] || [ $f -gt 0 ] || f=1 # make check failed without a failed test (e.g. a timeout)
    else
        p=0 f=1 s=0
    fi
    tot_pass=$((tot_pass + ${p:-0}))
    tot_fail=$((tot_fail + f))
    tot_skip=$((tot_skip + ${s:-0}))
    summary+=("make-check ($name): ${p:-0} passed, $f failed, ${s:-0} skipped ($(elapsed "$t") for make check)")

    # the installed library consumed through find_package(tlmpi) and pkg-config (2 tests)
    say "$name: install and consume (tests/install/consume.sh)"
    bash "$src/tests/install/consume.sh" "$dir" "$cc" "$mpiexec" | tee consume.out
    p=$(grep -c '^consume: .* PASS' consume.out) f=$(grep -c '^consume: .* FAIL' consume.out)
    s=$(grep -c '^consume: .* SKIP' consume.out)
    tot_pass=$((tot_pass + p))
    tot_fail=$((tot_fail + f))
    tot_skip=$((tot_skip + s))
    summary+=("consume ($name): $p passed, $f failed, $s skipped")

    if [ "${TLMPI_DISTCHECK:-1}" = 1 ] && [ -z "${did_distcheck:-}" ]; then
        did_distcheck=1
        dcflags="CC=$cc MPIEXEC=$mpiexec"
        [ "${TLMPI_DISTCHECK_CUDA:-0}" = 1 ] || dcflags="$dcflags --with-cuda=no"
        say "$name: make distcheck (configure $dcflags; output in build-ci-$name/distcheck.out)"
        t=$(date +%s)
        # its tests run in the unpacked tarball's own build: count those
        dd=$dir/$(sed -n 's/^PACKAGE_TARNAME = //p' Makefile)-$(sed -n 's/^PACKAGE_VERSION = //p' Makefile)
        if progress "make distcheck ($name)" "$dd" timeout 2400 make distcheck DISTCHECK_CONFIGURE_FLAGS="$dcflags" \
            TLMPI_TEST_JOBS="$jobs" >distcheck.out 2>&1; then
            summary+=("make distcheck ($name): passed ($(elapsed "$t"))")
        else
            tail -60 distcheck.out
            summary+=("make distcheck ($name): FAILED")
            tot_fail=$((tot_fail + 1))
        fi
    fi
    cd "$src"
    # the sanitizer builds of this MPI (scripts/sanitize.sh: which tests, and why)
    for k in ${TLMPI_SANITIZE-asan:mpich tsan:mpich}; do
        [ "${k#*:}" = "$name" ] || continue
        say "$name: ${k%%:*} build and its tests (scripts/sanitize.sh ${k%%:*} $name; build-ci-${k%%:*}-$name)"
        t=$(date +%s)
        progress "sanitize ${k%%:*} ($name)" "$src/build-ci-${k%%:*}-$name" bash "$src/scripts/sanitize.sh" "${k%%:*}" "$name" |
            tee "$src/sanitize-${k%%:*}-$name.log"
        l=$(tail -1 "$src/sanitize-${k%%:*}-$name.log")
        case $l in
            "sanitize ("*) ;;
            *) l="sanitize (${k%%:*} $name): 0 passed, 1 failed, 0 skipped (no summary line)" ;;
        esac
        p=$(echo "$l" | sed -n 's/.*: \([0-9]*\) passed, \([0-9]*\) failed, \([0-9]*\) skipped.*/\1/p')
        f=$(echo "$l" | sed -n 's/.*: \([0-9]*\) passed, \([0-9]*\) failed, \([0-9]*\) skipped.*/\2/p')
        s=$(echo "$l" | sed -n 's/.*: \([0-9]*\) passed, \([0-9]*\) failed, \([0-9]*\) skipped.*/\3/p')
        tot_pass=$((tot_pass + ${p:-0}))
        tot_fail=$((tot_fail + ${f:-1}))
        tot_skip=$((tot_skip + ${s:-0}))
        summary+=("$l")
    done
}

for m in ${TLMPI_TEST_MPIS:-mpich ompi}; do
    case $m in
        mpich) run_one mpich mpicc.mpich mpiexec.mpich ;;
        ompi) run_one ompi mpicc.openmpi mpiexec.openmpi ;;
        *) echo "test.sh: unknown MPI '$m' (mpich, ompi)" >&2 ;;
    esac
done

say "summary ($(elapsed "$t_start") in all)"
for l in "${summary[@]}"; do
    echo "$l"
done
echo "make-check: $tot_pass passed, $tot_fail failed, $tot_skip skipped"
[ $tot_fail = 0 ] && [ $tot_pass -gt 0 ]
