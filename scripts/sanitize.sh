#!/usr/bin/env bash
# scripts/sanitize.sh KIND MPI: one sanitizer build and the part of make check CI runs under it
# (scripts/test.sh calls it after the MPI's plain build; by hand the same, from the source tree).
#
#   KIND asan  configure --enable-sanitize=address,undefined: AddressSanitizer + UBSan, and
#              LeakSanitizer under MPICH (tests/sanitize/env.sh: not under Open MPI, whose leaks
#              LSan cannot name). With MPI=mpich and clang present it is a clang build
#              (CC="mpicc.mpich -cc=clang") with --enable-fuzz: the fuzz harnesses' seed corpus runs
#              as one of its tests and scripts/fuzz.sh fuzzes each harness FUZZ_SECONDS (default 10).
#   KIND tsan  configure --enable-sanitize=thread (gcc): ThreadSanitizer on tests/mpi/threads.sh.
#   MPI        mpich (mpicc.mpich, mpiexec.mpich) or ompi (mpicc.openmpi, mpiexec.openmpi).
#
# The build is build-ci-KIND-MPI; the CUDA kernels are not compiled again (nvcc would take minutes and
# does not instrument them anyway): their objects are copied from the plain build of the same sources,
# build-ci-MPI (SAN_CUDA_FROM=DIR: another). Only the programs of the tests below are built.
#
# The tests (make check-TESTS TESTS=...), and why the others are not among them:
#   asan: the Check unit tests but check_dtype (its exhaustive type x op tables take 90 s under ASan;
#     pure table code that mpi_fake_device and bad_input.sh also run); every MPI test of the device
#     paths with the CPU fakes (staging, self, NCCL tier, node tier's pools and registration cache,
#     cuMem sharing, descriptor exchange and its strangers, non-blocking and persistent forms,
#     stream-ordered calls, bad input) and of the host paths (collectives, errors, communicator churn,
#     half types), the TLMPI_* verification, the GIN loopback plugin, the fuzz corpus. Not run:
#     - mpi_host_classify, mpi_host_cache: they count the CUDA queries that tlmpi's mmap/munmap hooks
#       save; the sanitizer runtime's own mmap interceptors come first in the process, so the hooks
#       never see a mapping and every call makes the query (correct, but not what the tests count);
#     - preload.sh, stack.sh, linked.sh, fortran.sh, python.sh and enqueue.sh's graph2 preload libtlmpi
#       or a fake into programs without the sanitizer runtime, which ASan refuses (its runtime must
#       come first); leak_churn.sh is valgrind, which cannot run under ASan;
#     - hier.sh (4-8 ranks: over 400 s under ASan), fault.sh (135 s), tune.sh (55 s), threads.sh
#       (TSan's run), check_dtype, and the rank counts of the rest beyond those listed: the CI budget
#       (scripts/test.sh);
#     - the GPU tests (they skip without a GPU).
#   tsan: tests/mpi/threads.sh with 2 ranks (THREADS_NPS=2, 20 iterations per thread) in the modes
#     nccl, staging and table, the GPU turn and its mutant; 4 ranks = 16 threads on 2 cores under
#     TSan would take minutes. Mode auto (the node tier's kernels on the fakes) is left out: under
#     TSan on the loaded 2-core box it ended in TLMPI_TIMEOUT in the GPU turn (1609 rounds without
#     every rank getting the turn, 60 s), which is not diagnosed yet (TSan itself reported nothing).
#
# Prints the sanitizer reports and every failed test's log; the last line is
# "sanitize (KIND MPI): N passed, N failed, N skipped (T s)"; exit status nonzero on any failure.
set -uo pipefail
[ $# = 2 ] || { echo "usage: $0 asan|tsan mpich|ompi" >&2; exit 2; }
kind=$1 mpi=$2
cd "$(dirname "$0")/.."
src=$(pwd)
t0=$(date +%s)
ncpu=$(nproc 2>/dev/null || echo 2)
case $mpi in
    mpich) cc=mpicc.mpich mpiexec=mpiexec.mpich ;;
    ompi) cc=mpicc.openmpi mpiexec=mpiexec.openmpi ;;
    *) echo "sanitize.sh: unknown MPI '$mpi'" >&2; exit 2 ;;
esac
flags= fuzz=0
case $kind in
    asan)
        flags=--enable-sanitize=address,undefined
        if [ "$mpi" = mpich ] && command -v clang >/dev/null 2>&1; then
            cc="mpicc.mpich -cc=clang" flags="$flags --enable-fuzz" fuzz=1
        fi
        tests="tests/unit/check_env tests/unit/check_plan tests/unit/check_topo tests/unit/check_launcher
            tests/unit/check_mark tests/mpi/mpi_fake_device tests/mpi/mpi_regcache_np3 tests/mpi/mpi_persist_reg_np3
            tests/mpi/mpi_pool_grow_np3 tests/mpi/mpi_cumem_np4 tests/mpi/mpi_coll_np4 tests/mpi/mpi_errors
            tests/mpi/mpi_churn tests/mpi/mpi_half_np4 tests/mpi/mpi_fdx_np4 tests/mpi/fdx_strangers.sh
            tests/mpi/bad_input.sh tests/mpi/nbc.sh tests/mpi/enqueue.sh tests/mpi/verify_env.sh
            tests/gin-loopback/gin-loopback.sh"
        progs="tests/mpi/mpi_fdx_strangers_np4 tests/mpi/mpi_bad_input tests/mpi/mpi_nbc tests/mpi/mpi_enqueue
            tests/gin-loopback/libnccl-net-tlmpi-loopback.la tests/gin-loopback/ginlb_driver"
        [ $fuzz = 1 ] && tests="$tests tests/fuzz/corpus.sh" progs="$progs tests/fuzz/fuzz_env tests/fuzz/fuzz_tiers tests/fuzz/fuzz_tuning"
        export ENQUEUE_RUNS="np2 np1 node2"
        ;;
    tsan)
        flags=--enable-sanitize=thread
        tests=tests/mpi/threads.sh progs=tests/mpi/mpi_threads
        export THREADS_NPS=2 THREADS_MODES=${THREADS_MODES:-nccl staging table} THREADS_ITERS_NP2=${THREADS_ITERS_NP2:-20}
        ;;
    *) echo "sanitize.sh: unknown kind '$kind' (asan, tsan)" >&2; exit 2 ;;
esac
dir=$src/build-ci-$kind-$mpi
from=${SAN_CUDA_FROM:-$src/build-ci-$mpi}
name="sanitize ($kind $mpi)"
rm -rf "$dir"
mkdir -p "$dir"
cd "$dir" || exit 1
echo "$name: configure CC=\"$cc\" $flags ${CONFIGURE_FLAGS:-}"
if ! ../configure --enable-silent-rules CC="$cc" MPIEXEC="$mpiexec" $flags ${CONFIGURE_FLAGS:-} >configure.out 2>&1; then
    tail -30 configure.out
    echo "$name: 0 passed, 1 failed, 0 skipped (configure failed, $(($(date +%s) - t0)) s)"
    exit 1
fi
if [ -f "$from/cuda/.libs/local.o" ] && grep -q '^libtlmpi_cuda_la' Makefile; then
    # the compiled kernels, their .lo/.d and dirstamps, with their times: newer than the sources, so
    # make takes them as they are
    cp -a "$from/cuda/." cuda/
    echo "$name: CUDA objects copied from $from ($(make -n libtlmpi.la 2>/dev/null | grep -c nvcc) left to compile)"
fi
t=$(date +%s)
# shellcheck disable=SC2086
if ! make -j"$ncpu" libtlmpi.la tools/tlmpi_info tests/mpi/libfakecudart.la tests/mpi/libfakenccl.la \
    $(for x in $tests; do case $x in *.sh) ;; *) echo "$x" ;; esac; done) $progs >make.out 2>&1; then
    tail -40 make.out
    echo "$name: 0 passed, 1 failed, 0 skipped (build failed, $(($(date +%s) - t0)) s)"
    exit 1
fi
echo "$name: configure $((t - t0)) s, build $(($(date +%s) - t)) s"
t=$(date +%s)
# shellcheck disable=SC2086
# (check_PROGRAMS= check_LTLIBRARIES=: check-TESTS would build every test program first)
make check-TESTS TESTS="$(echo $tests)" check_PROGRAMS= check_LTLIBRARIES= </dev/null >check.out 2>&1
rc=$?
echo "$name: tests $(($(date +%s) - t)) s (rc $rc)"
count() { sed -n "s/^# $1: *//p" test-suite.log | head -1; }
p=0 f=1 s=0
if [ -f test-suite.log ]; then
    p=$(count PASS) f=$(($(count FAIL) + $(count ERROR) + $(count XPASS))) s=$(count SKIP)
    [ $rc = 0 ] || [ "$f" -gt 0 ] || f=1
fi
# the reports, wherever a test wrote them, and the logs of the tests that failed
grep -rlE 'ERROR: (Address|Leak|Thread)Sanitizer|WARNING: ThreadSanitizer|runtime error:' tests --include='*.log' 2>/dev/null |
    while read -r lf; do echo "===== $name: sanitizer report in $lf"; grep -E -A30 'ERROR: |WARNING: ThreadSanitizer|runtime error:' "$lf" | head -80; done
grep -lE '^:test-result: (FAIL|ERROR)' $(find tests -name '*.trs') 2>/dev/null | while read -r trs; do
    echo "===== $name: ${trs%.trs}.log"; tail -60 "${trs%.trs}.log"; done
if [ $fuzz = 1 ]; then
    t=$(date +%s)
    if bash "$src/scripts/fuzz.sh" "$dir" "${FUZZ_SECONDS:-10}"; then p=$((p + 1)); else f=$((f + 1)); fi
    echo "$name: fuzzing $(($(date +%s) - t)) s"
fi
echo "$name: ${p:-0} passed, ${f:-0} failed, ${s:-0} skipped ($(($(date +%s) - t0)) s)"
[ "${f:-0}" = 0 ]
