# tests/sanitize/env.sh: sourced by every test of make check in a build configured --enable-sanitize
# (tests/local.mk, with san_dir = this directory): the sanitizer runtimes' options, which the MPI
# ranks inherit from mpiexec (hydra and Open MPI's mpiexec both pass the environment on). A value
# already set in the environment wins. Which tests run under which sanitizer, and why the others
# do not: scripts/sanitize.sh.
#  - ASan: reports stop the process (exit 1 from the rank, so the test fails). Leak detection (LSan)
#    only under MPICH: Open MPI 4.1 leaks thousands of allocations in its MCA components and
#    dlcloses them at MPI_Finalize, so LSan shows them with no module name, which no suppression can
#    match without also hiding tlmpi's own leaks.
#  - LSan: tests/sanitize/lsan.supp (the MPI's and system libraries' leaks, each with its reason).
#    HWLOC_PLUGINS_BLACKLIST=hwloc_pci: hwloc's PCI plugin (libpciaccess) leaks and is dlclosed at
#    hwloc's teardown, in MPICH's and in tlmpi's topology, so its leaks, too, come from an unknown
#    module; without it hwloc still finds the CPUs, NUMA nodes and caches, and this GPU-less box
#    has no PCI GPU or NIC for tlmpi to map (tlmpi's GPU-to-NIC tests read the XML fixtures).
#  - UBSan: every report is fatal (configure builds with -fno-sanitize-recover=undefined).
#  - TSan: tests/sanitize/tsan.supp; every report counts (exit 66 at the end of the rank).
#  - valgrind never runs under a sanitizer (VALGRIND empty: tests/mpi/leak_churn.sh skips).
if [ "${TLMPI_TEST_MPI:-}" = ompi ]; then
    san_leaks=0
else
    san_leaks=1
    HWLOC_PLUGINS_BLACKLIST=${HWLOC_PLUGINS_BLACKLIST:-hwloc_pci}
    export HWLOC_PLUGINS_BLACKLIST
fi
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=$san_leaks:abort_on_error=0:allow_user_segv_handler=1}
LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$san_dir/lsan.supp:print_suppressions=0}
UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
TSAN_OPTIONS=${TSAN_OPTIONS:-suppressions=$san_dir/tsan.supp:halt_on_error=0:history_size=7:second_deadlock_stack=1}
case ",${san_kinds:-}," in
    *,thread,*)
        # MPICH's UCX intercepts madvise (libucm) and takes a rwlock in it; glibc's thread exit calls
        # madvise after TSan has torn down the exiting thread's state, and TSan's rwlock interceptor
        # then crashes (SIGSEGV in __tsan::MutexPreReadLock, about one run in two). Without UCX's
        # memory events (its registration cache's invalidation; tlmpi does not use them) nothing is
        # intercepted there.
        UCX_MEM_EVENTS=${UCX_MEM_EVENTS:-no}
        export UCX_MEM_EVENTS ;;
esac
VALGRIND=
export ASAN_OPTIONS LSAN_OPTIONS UBSAN_OPTIONS TSAN_OPTIONS VALGRIND
