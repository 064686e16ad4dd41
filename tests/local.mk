# Tests: Check unit tests (no MPI run, no GPU), MPI tests under mpiexec, GPU tests (exit 77 = skip).
LOG_COMPILER = $(SHELL) $(top_srcdir)/tests/launch.sh
AM_TESTS_ENVIRONMENT = MPIEXEC='$(MPIEXEC)'; export MPIEXEC; top_srcdir='$(top_srcdir)'; export top_srcdir; \
    top_builddir='$(top_builddir)'; export top_builddir; TEST_PYTHON='$(PYTHON)'; export TEST_PYTHON;

# the MPI test programs share one harness, tests/harness.h
TEST_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests

# --- unit tests (tests/unit: Check, fork mode, no MPI run, no GPU) and topology MPI tests ---
EXTRA_DIST += tests/unit/env_doc.sh tests/unit/no_check.sh
TESTS += tests/unit/env_doc.sh
# tlmpi_enqueue.prepare()'s flags (python/tlmpi_enqueue.py) with the library stubbed: no MPI, no GPU
EXTRA_DIST += tests/unit/python_flags.sh tests/unit/python_flags.py
TESTS += tests/unit/python_flags.sh
# the arguments tlmpi_enqueue's collectives hand to the library (mpi4py, CuPy and libtlmpi stubbed), and
# that none is reused from an earlier call
EXTRA_DIST += tests/unit/python_args.sh tests/unit/python_args.py tests/unit/py_standins.py
TESTS += tests/unit/python_args.sh
# the optional C extension (python/_tlmpi_fast.c) against the Python path on the same argument cases
# (the library's entry points ctypes callbacks); skips where configure did not build the extension
EXTRA_DIST += tests/unit/python_fast.sh tests/unit/python_fast.py
TESTS += tests/unit/python_fast.sh
# the Spack recipe (packaging/spack) against a stub of Spack's directives and configure.ac's options
EXTRA_DIST += tests/unit/spack_recipe.sh tests/unit/spack_recipe.py packaging/spack/repo.yaml \
    packaging/spack/packages/tlmpi/package.py
TESTS += tests/unit/spack_recipe.sh
UNIT_CPPFLAGS = $(AM_CPPFLAGS) -DTLMPI_FIXTURE_DIR='"$(abs_top_srcdir)/tests/fixtures"'
UNIT_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
UNIT_LDADD = libtlmpi_core.la $(CHECK_LIBS)
if HAVE_CHECK
UNIT_TESTS = tests/unit/check_env tests/unit/check_dtype tests/unit/check_plan tests/unit/check_topo \
    tests/unit/check_launcher
if HAVE_CUDA
UNIT_TESTS += tests/unit/check_mark
endif
check_PROGRAMS += $(UNIT_TESTS)
TESTS += $(UNIT_TESTS)
tests_unit_check_env_SOURCES = tests/unit/check_env.c
tests_unit_check_env_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_check_env_CFLAGS = $(UNIT_CFLAGS)
tests_unit_check_env_LDADD = $(UNIT_LDADD)
tests_unit_check_env_LDFLAGS = -no-install
tests_unit_check_dtype_SOURCES = tests/unit/check_dtype.c
tests_unit_check_dtype_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_check_dtype_CFLAGS = $(UNIT_CFLAGS)
tests_unit_check_dtype_LDADD = $(UNIT_LDADD)
tests_unit_check_dtype_LDFLAGS = -no-install
tests_unit_check_plan_SOURCES = tests/unit/check_plan.c
tests_unit_check_plan_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_check_plan_CFLAGS = $(UNIT_CFLAGS)
tests_unit_check_plan_LDADD = $(UNIT_LDADD)
tests_unit_check_plan_LDFLAGS = -no-install
tests_unit_check_topo_SOURCES = tests/unit/check_topo.c
tests_unit_check_topo_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_check_topo_CFLAGS = $(UNIT_CFLAGS)
tests_unit_check_topo_LDADD = $(UNIT_LDADD)
tests_unit_check_topo_LDFLAGS = -no-install
tests_unit_check_launcher_SOURCES = tests/unit/check_launcher.c
tests_unit_check_launcher_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_check_launcher_CFLAGS = $(UNIT_CFLAGS)
tests_unit_check_launcher_LDADD = $(UNIT_LDADD) -lpthread
tests_unit_check_launcher_LDFLAGS = -no-install
# check_mark: the fake CUDA runtime first, so that its cuda* symbols are the ones bound
tests_unit_check_mark_SOURCES = tests/unit/check_mark.c
tests_unit_check_mark_CPPFLAGS = $(UNIT_CPPFLAGS)
tests_unit_check_mark_CFLAGS = $(UNIT_CFLAGS)
tests_unit_check_mark_LDADD = tests/mpi/libfakecudart.la $(UNIT_LDADD) -lpthread
tests_unit_check_mark_LDFLAGS = -no-install
else
TESTS += tests/unit/no_check.sh
endif
# mpi_topo: one source, three rank counts (launch.sh picks -n from the _npN suffix)
TOPO_MPI_TESTS = tests/mpi/mpi_topo tests/mpi/mpi_topo_np4 tests/mpi/mpi_topo_np3
check_PROGRAMS += $(TOPO_MPI_TESTS)
TESTS += $(TOPO_MPI_TESTS)
tests_mpi_mpi_topo_SOURCES = tests/mpi/mpi_topo.c tests/harness.h
tests_mpi_mpi_topo_CPPFLAGS = $(TEST_CPPFLAGS) -DMPI_TOPO_MODE=2
tests_mpi_mpi_topo_LDADD = libtlmpi.la
tests_mpi_mpi_topo_LDFLAGS = -no-install
tests_mpi_mpi_topo_np4_SOURCES = tests/mpi/mpi_topo.c tests/harness.h
tests_mpi_mpi_topo_np4_CPPFLAGS = $(TEST_CPPFLAGS) -DMPI_TOPO_MODE=4
tests_mpi_mpi_topo_np4_LDADD = libtlmpi.la
tests_mpi_mpi_topo_np4_LDFLAGS = -no-install
tests_mpi_mpi_topo_np3_SOURCES = tests/mpi/mpi_topo.c tests/harness.h
tests_mpi_mpi_topo_np3_CPPFLAGS = $(TEST_CPPFLAGS) -DMPI_TOPO_MODE=3
tests_mpi_mpi_topo_np3_LDADD = libtlmpi.la
tests_mpi_mpi_topo_np3_LDFLAGS = -no-install

# --- GPU tests (tests/gpu): make check runs check_gpu.sh (exit 77 = skip without a CUDA device);
# --- the full suite on a GPU host: tests/gpu/run.sh TARBALL (see docs/GPU-TESTS.md) ---
TESTS += tests/gpu/check_gpu.sh
EXTRA_DIST += tests/launch.sh
if HAVE_CUDA
# the copy/reduce kernels of cuda/local.cu against a host reference (77 without a GPU)
check_PROGRAMS += tests/gpu/gpu_reduce
TESTS += tests/gpu/gpu_reduce
tests_gpu_gpu_reduce_SOURCES = tests/gpu/gpu_reduce.c tests/gpu/elemref.h
tests_gpu_gpu_reduce_LDADD = libtlmpi_core.la $(CUDA_LIBS)
tests_gpu_gpu_reduce_LDFLAGS = -no-install $(CUDA_LDFLAGS)
check_PROGRAMS += tests/gpu/gpu_node_kernels
TESTS += tests/gpu/gpu_node_kernels
tests_gpu_gpu_node_kernels_SOURCES = tests/gpu/gpu_node_kernels.c tests/gpu/elemref.h
tests_gpu_gpu_node_kernels_LDADD = libtlmpi_core.la $(CUDA_LIBS)
tests_gpu_gpu_node_kernels_LDFLAGS = -no-install $(CUDA_LDFLAGS)
check_PROGRAMS += tests/gpu/gpu_coll
tests_gpu_gpu_coll_SOURCES = tests/gpu/gpu_coll.c tests/gpu/gpu_values.h tests/harness.h
tests_gpu_gpu_coll_CPPFLAGS = $(TEST_CPPFLAGS)
tests_gpu_gpu_coll_LDADD = libtlmpi.la $(CUDA_LIBS) -ldl -lm
tests_gpu_gpu_coll_LDFLAGS = -no-install $(CUDA_LDFLAGS)
# the node tier (tlmpi's own kernels) with every algorithm forced, through MPI: tests/gpu/node.sh
# runs it with 2, 3, 4, 8 ranks on one GPU under MPS; check_gpu.sh runs its quick subset
check_PROGRAMS += tests/gpu/gpu_node
tests_gpu_gpu_node_SOURCES = tests/gpu/gpu_node.c tests/gpu/gpu_values.h tests/gpu/gpu_modes.h tests/harness.h
tests_gpu_gpu_node_CPPFLAGS = $(TEST_CPPFLAGS)
tests_gpu_gpu_node_LDADD = libtlmpi.la $(CUDA_LIBS) -ldl -lm
tests_gpu_gpu_node_LDFLAGS = -no-install $(CUDA_LDFLAGS)
# the non-blocking forms (MPI_I*) and the MPI-4 persistent forms (MPI_*_init; exit 77 on an older
# MPI) on device buffers, through MPI: tests/gpu/nbc.sh (device-run.sh part nbc)
check_PROGRAMS += tests/gpu/gpu_nbc tests/gpu/gpu_persist
tests_gpu_gpu_nbc_SOURCES = tests/gpu/gpu_nbc.c tests/gpu/gpu_values.h tests/gpu/gpu_modes.h tests/harness.h
tests_gpu_gpu_nbc_CPPFLAGS = $(TEST_CPPFLAGS)
tests_gpu_gpu_nbc_LDADD = libtlmpi.la $(CUDA_LIBS) -ldl -lm
tests_gpu_gpu_nbc_LDFLAGS = -no-install $(CUDA_LDFLAGS)
tests_gpu_gpu_persist_SOURCES = tests/gpu/gpu_persist.c tests/gpu/gpu_values.h tests/gpu/gpu_modes.h tests/harness.h
tests_gpu_gpu_persist_CPPFLAGS = $(TEST_CPPFLAGS)
tests_gpu_gpu_persist_LDADD = libtlmpi.la $(CUDA_LIBS) -ldl -lm
tests_gpu_gpu_persist_LDFLAGS = -no-install $(CUDA_LDFLAGS)
# the stream-ordered forms (tlmpi_*_enqueue) captured in CUDA graphs and replayed, on device
# buffers: tests/gpu/graph.sh (device-run.sh part graph)
check_PROGRAMS += tests/gpu/gpu_graph
tests_gpu_gpu_graph_SOURCES = tests/gpu/gpu_graph.c tests/gpu/gpu_values.h tests/gpu/gpu_modes.h tests/harness.h
tests_gpu_gpu_graph_CPPFLAGS = $(TEST_CPPFLAGS)
tests_gpu_gpu_graph_LDADD = libtlmpi.la $(CUDA_LIBS) -ldl -lm
tests_gpu_gpu_graph_LDFLAGS = -no-install $(CUDA_LDFLAGS)
# the PMPI guard: preloaded, aborts on a device pointer reaching PMPI_* (-rpath: build a shared lib)
check_LTLIBRARIES = tests/gpu/libtlmpi_guard.la
tests_gpu_libtlmpi_guard_la_SOURCES = tests/gpu/pmpi_guard.c
tests_gpu_libtlmpi_guard_la_LDFLAGS = -module -avoid-version -shared -rpath /nowhere $(CUDA_LDFLAGS)
tests_gpu_libtlmpi_guard_la_LIBADD = $(CUDA_LIBS) -ldl
# MPI_THREAD_MULTIPLE with device buffers on the GPU host (tests/gpu/threads.sh; the same source as
# tests/mpi/mpi_threads, with the real CUDA runtime and NCCL)
check_PROGRAMS += tests/gpu/gpu_hier
tests_gpu_gpu_hier_SOURCES = tests/mpi/mpi_hier.c tests/mpi/exact_values.h tests/harness.h
tests_gpu_gpu_hier_CPPFLAGS = $(TEST_CPPFLAGS)
tests_gpu_gpu_hier_LDADD = libtlmpi.la $(CUDA_LIBS) -lm
tests_gpu_gpu_hier_LDFLAGS = -no-install $(CUDA_LDFLAGS)
check_PROGRAMS += tests/gpu/gpu_threads
tests_gpu_gpu_threads_SOURCES = tests/mpi/mpi_threads.c tests/mpi/exact_values.h tests/harness.h
tests_gpu_gpu_threads_CPPFLAGS = $(TEST_CPPFLAGS)
tests_gpu_gpu_threads_LDADD = libtlmpi.la $(CUDA_LIBS) -lpthread -lm
tests_gpu_gpu_threads_LDFLAGS = -no-install $(CUDA_LDFLAGS)
# the node tier's registration cache on a real GPU (blocking calls zero-copy; staleness, mixed memory
# kinds, eviction); run by tests/gpu/regcache.sh under MPS with 2, 4 and 8 ranks; exits 77 without a GPU
check_PROGRAMS += tests/gpu/gpu_regcache
tests_gpu_gpu_regcache_SOURCES = tests/gpu/gpu_regcache.c tests/harness.h
tests_gpu_gpu_regcache_CPPFLAGS = $(TEST_CPPFLAGS)
tests_gpu_gpu_regcache_LDADD = libtlmpi.la $(CUDA_LIBS) -lm
tests_gpu_gpu_regcache_LDFLAGS = -no-install $(CUDA_LDFLAGS)
# what the node tier holds per communicator and what a new one costs (pools' bytes, 64 live
# communicators, the first call on a new one, create/call/free cycles); run by tests/gpu/comm-memory.sh
# under MPS; exits 77 without a GPU
# gpu_siblings: the five siblings on device buffers on the node tier against PMPI_* (tests/gpu/siblings.sh)
check_PROGRAMS += tests/gpu/gpu_siblings
tests_gpu_gpu_siblings_SOURCES = tests/gpu/gpu_siblings.c
tests_gpu_gpu_siblings_CPPFLAGS = $(TEST_CPPFLAGS)
tests_gpu_gpu_siblings_LDADD = libtlmpi.la $(CUDA_LIBS) -lm
tests_gpu_gpu_siblings_LDFLAGS = -no-install $(CUDA_LDFLAGS)
check_PROGRAMS += tests/gpu/gpu_comm_memory
tests_gpu_gpu_comm_memory_SOURCES = tests/gpu/gpu_comm_memory.c
tests_gpu_gpu_comm_memory_CPPFLAGS = $(TEST_CPPFLAGS)
tests_gpu_gpu_comm_memory_LDADD = libtlmpi.la $(CUDA_LIBS) -lm
tests_gpu_gpu_comm_memory_LDFLAGS = -no-install $(CUDA_LDFLAGS)
# the soak: a random mix of every form (blocking, non-blocking, persistent, stream-ordered, graph-replayed)
# on churning communicators, every result checked, for a given time; a dying-rank mode. tests/gpu/soak.sh
# runs it on a GPU host under MPS; tests/mpi/soak.sh briefly against the CPU fakes (exits 77 without a GPU)
check_PROGRAMS += tests/gpu/gpu_soak
tests_gpu_gpu_soak_SOURCES = tests/gpu/gpu_soak.c tests/gpu/gpu_values.h tests/gpu/gpu_modes.h tests/harness.h
tests_gpu_gpu_soak_CPPFLAGS = $(TEST_CPPFLAGS)
tests_gpu_gpu_soak_LDADD = libtlmpi.la $(CUDA_LIBS) -lm
tests_gpu_gpu_soak_LDFLAGS = -no-install $(CUDA_LDFLAGS)
# host and device memory classified right after each change of a range (tests/mpi/mpi_host_cache's
# twin on a real GPU; exits 77 without one)
check_PROGRAMS += tests/gpu/gpu_host_cache
TESTS += tests/gpu/gpu_host_cache
tests_gpu_gpu_host_cache_SOURCES = tests/gpu/gpu_host_cache.c tests/harness.h
tests_gpu_gpu_host_cache_CPPFLAGS = $(TEST_CPPFLAGS)
tests_gpu_gpu_host_cache_LDADD = libtlmpi.la $(CUDA_LIBS) -lm
tests_gpu_gpu_host_cache_LDFLAGS = -no-install $(CUDA_LDFLAGS)
# host-buffer classification on "a GPU node" anywhere: the fake CUDA runtime of tests/fakes, linked
# ahead of libtlmpi (and so of the real libcudart), reports one GPU and counts pointer queries
check_LTLIBRARIES += tests/mpi/libfakecudart.la
tests_mpi_libfakecudart_la_SOURCES = tests/fakes/fakecudart.c tests/fakes/fakecudart.h
tests_mpi_libfakecudart_la_LDFLAGS = -module -avoid-version -shared -rpath /nowhere
tests_mpi_libfakecudart_la_LIBADD = -lpthread
check_PROGRAMS += tests/mpi/mpi_host_classify
TESTS += tests/mpi/mpi_host_classify
tests_mpi_mpi_host_classify_SOURCES = tests/mpi/mpi_host_classify.c tests/harness.h
tests_mpi_mpi_host_classify_CPPFLAGS = $(TEST_CPPFLAGS)
tests_mpi_mpi_host_classify_LDADD = tests/mpi/libfakecudart.la libtlmpi.la -lm
tests_mpi_mpi_host_classify_LDFLAGS = -no-install
# the host-mapping cache after every change of one range (munmap, cudaMalloc at the same address,
# mremap, cudaHostRegister, managed, VMM), with the fake CUDA runtime
check_PROGRAMS += tests/mpi/mpi_host_cache
TESTS += tests/mpi/mpi_host_cache
tests_mpi_mpi_host_cache_SOURCES = tests/mpi/mpi_host_cache.c tests/harness.h tests/fakes/fakecudart.h
tests_mpi_mpi_host_cache_CPPFLAGS = $(TEST_CPPFLAGS)
tests_mpi_mpi_host_cache_LDADD = tests/mpi/libfakecudart.la libtlmpi.la -lm
tests_mpi_mpi_host_cache_LDFLAGS = -no-install
# cuMem pools mapped between the ranks of one host (the GIN rail on fake nodes), with the fake CUDA
# runtime's memfd-backed stand-ins for the driver's VMM calls; 4 ranks
check_PROGRAMS += tests/mpi/mpi_cumem_np4
TESTS += tests/mpi/mpi_cumem_np4
tests_mpi_mpi_cumem_np4_SOURCES = tests/mpi/mpi_cumem_np4.c tests/harness.h
tests_mpi_mpi_cumem_np4_CPPFLAGS = $(TEST_CPPFLAGS)
tests_mpi_mpi_cumem_np4_LDADD = tests/mpi/libfakecudart.la libtlmpi_core.la -lm
tests_mpi_mpi_cumem_np4_LDFLAGS = -no-install
# the descriptor exchange with strangers connecting to it (same uid, and nobody when run as root), and
# its mutant without the credential check; the program runs under fdx_strangers.sh only
check_PROGRAMS += tests/mpi/mpi_fdx_strangers_np4
TESTS += tests/mpi/fdx_strangers.sh
EXTRA_DIST += tests/mpi/fdx_strangers.sh
tests_mpi_mpi_fdx_strangers_np4_SOURCES = tests/mpi/mpi_fdx_strangers_np4.c tests/harness.h
tests_mpi_mpi_fdx_strangers_np4_CPPFLAGS = $(TEST_CPPFLAGS)
tests_mpi_mpi_fdx_strangers_np4_LDADD = tests/mpi/libfakecudart.la libtlmpi_core.la -lm
tests_mpi_mpi_fdx_strangers_np4_LDFLAGS = -no-install
# persistent requests' buffers registered for the node tier's zero-copy kernels (mappings shared and
# released, the ranks agreeing), with the fake CUDA runtime; 2 and 3 ranks
PERSIST_REG_TESTS = tests/mpi/mpi_persist_reg tests/mpi/mpi_persist_reg_np3
check_PROGRAMS += $(PERSIST_REG_TESTS)
TESTS += $(PERSIST_REG_TESTS)
tests_mpi_mpi_persist_reg_SOURCES = tests/mpi/mpi_persist_reg.c tests/mpi/fake_reg.h tests/harness.h
tests_mpi_mpi_persist_reg_CPPFLAGS = $(TEST_CPPFLAGS)
tests_mpi_mpi_persist_reg_LDADD = tests/mpi/libfakecudart.la libtlmpi.la -lm
tests_mpi_mpi_persist_reg_LDFLAGS = -no-install
tests_mpi_mpi_persist_reg_np3_SOURCES = tests/mpi/mpi_persist_reg.c tests/mpi/fake_reg.h tests/harness.h
tests_mpi_mpi_persist_reg_np3_CPPFLAGS = $(TEST_CPPFLAGS)
tests_mpi_mpi_persist_reg_np3_LDADD = tests/mpi/libfakecudart.la libtlmpi.la -lm
tests_mpi_mpi_persist_reg_np3_LDFLAGS = -no-install
# the node tier's registration cache for blocking calls (hits, staleness by buffer id, eviction, the
# ranks agreeing), with the fake CUDA runtime; 2 and 3 ranks
REGCACHE_TESTS = tests/mpi/mpi_regcache tests/mpi/mpi_regcache_np3
check_PROGRAMS += $(REGCACHE_TESTS)
TESTS += $(REGCACHE_TESTS)
tests_mpi_mpi_regcache_SOURCES = tests/mpi/mpi_regcache.c tests/mpi/fake_reg.h tests/harness.h
tests_mpi_mpi_regcache_CPPFLAGS = $(TEST_CPPFLAGS)
tests_mpi_mpi_regcache_LDADD = tests/mpi/libfakecudart.la libtlmpi.la -lm
tests_mpi_mpi_regcache_LDFLAGS = -no-install
tests_mpi_mpi_regcache_np3_SOURCES = tests/mpi/mpi_regcache.c tests/mpi/fake_reg.h tests/harness.h
tests_mpi_mpi_regcache_np3_CPPFLAGS = $(TEST_CPPFLAGS)
tests_mpi_mpi_regcache_np3_LDADD = tests/mpi/libfakecudart.la libtlmpi.la -lm
tests_mpi_mpi_regcache_np3_LDFLAGS = -no-install
# the node tier's data area growing on demand (header alone, growth per call kind, the cap, dups and
# splits, non-blocking and persistent), with the fake CUDA runtime; 3 ranks
check_PROGRAMS += tests/mpi/mpi_pool_grow_np3
TESTS += tests/mpi/mpi_pool_grow_np3
tests_mpi_mpi_pool_grow_np3_SOURCES = tests/mpi/mpi_pool_grow.c tests/harness.h
tests_mpi_mpi_pool_grow_np3_CPPFLAGS = $(TEST_CPPFLAGS)
tests_mpi_mpi_pool_grow_np3_LDADD = tests/mpi/libfakecudart.la libtlmpi.la -lm
tests_mpi_mpi_pool_grow_np3_LDFLAGS = -no-install
# odd and bad input on device buffers against the MPI on host buffers: the same error class in every
# form or the same result, no TLMPI ERROR line (tests/mpi/bad_input.sh: 2 ranks)
check_PROGRAMS += tests/mpi/mpi_bad_input
tests_mpi_mpi_bad_input_SOURCES = tests/mpi/mpi_bad_input.c tests/harness.h
tests_mpi_mpi_bad_input_CPPFLAGS = $(TEST_CPPFLAGS)
tests_mpi_mpi_bad_input_LDADD = tests/mpi/libfakecudart.la libtlmpi.la -lm
tests_mpi_mpi_bad_input_LDFLAGS = -no-install
# the siblings (MPI_Allgatherv, MPI_Reduce_scatter, MPI_Bcast, MPI_Reduce, MPI_Alltoall) in every form
# and _c, on host and fake-device buffers, byte for byte against PMPI_* and its error classes, with a
# guard on the MPI's PMPI_* against device pointers; 2 and 4 ranks
SIBLINGS_TESTS = tests/mpi/mpi_siblings tests/mpi/mpi_siblings_np4
check_PROGRAMS += $(SIBLINGS_TESTS)
TESTS += $(SIBLINGS_TESTS)
tests_mpi_mpi_siblings_SOURCES = tests/mpi/mpi_siblings.c tests/harness.h
tests_mpi_mpi_siblings_CPPFLAGS = $(TEST_CPPFLAGS)
tests_mpi_mpi_siblings_LDADD = tests/mpi/libfakecudart.la libtlmpi.la -ldl -lm
tests_mpi_mpi_siblings_LDFLAGS = -no-install
tests_mpi_mpi_siblings_np4_SOURCES = $(tests_mpi_mpi_siblings_SOURCES)
tests_mpi_mpi_siblings_np4_CPPFLAGS = $(TEST_CPPFLAGS)
tests_mpi_mpi_siblings_np4_LDADD = $(tests_mpi_mpi_siblings_LDADD)
tests_mpi_mpi_siblings_np4_LDFLAGS = -no-install
# the siblings' stream-ordered entry points (tlmpi_*_enqueue): results with the synchronous fallback,
# refusals without it, bad input against the MPI's classes; 2 and 4 ranks
ENQUEUE_SIB_TESTS = tests/mpi/mpi_enqueue_sib tests/mpi/mpi_enqueue_sib_np4
check_PROGRAMS += $(ENQUEUE_SIB_TESTS)
TESTS += $(ENQUEUE_SIB_TESTS)
tests_mpi_mpi_enqueue_sib_SOURCES = tests/mpi/mpi_enqueue_sib.c tests/harness.h
tests_mpi_mpi_enqueue_sib_CPPFLAGS = $(TEST_CPPFLAGS)
tests_mpi_mpi_enqueue_sib_LDADD = tests/mpi/libfakecudart.la libtlmpi.la -lm
tests_mpi_mpi_enqueue_sib_LDFLAGS = -no-install
tests_mpi_mpi_enqueue_sib_np4_SOURCES = $(tests_mpi_mpi_enqueue_sib_SOURCES)
tests_mpi_mpi_enqueue_sib_np4_CPPFLAGS = $(TEST_CPPFLAGS)
tests_mpi_mpi_enqueue_sib_np4_LDADD = $(tests_mpi_mpi_enqueue_sib_LDADD)
tests_mpi_mpi_enqueue_sib_np4_LDFLAGS = -no-install
# the device-buffer control flow (staging end to end, self path, NCCL tier, spin wait, errors on a
# failing stream) with the fake CUDA runtime and the fake NCCL (dlopen'ed by tlmpi; it really
# communicates between the processes of one host, through shared memory)
if HAVE_NCCL
check_LTLIBRARIES += tests/mpi/libfakenccl.la
tests_mpi_libfakenccl_la_SOURCES = tests/fakes/fakenccl.c
tests_mpi_libfakenccl_la_LDFLAGS = -module -avoid-version -shared -rpath /nowhere
tests_mpi_libfakenccl_la_LIBADD = -lrt
check_PROGRAMS += tests/mpi/mpi_fake_device
TESTS += tests/mpi/mpi_fake_device
tests_mpi_mpi_fake_device_SOURCES = tests/mpi/mpi_fake_device.c tests/harness.h
tests_mpi_mpi_fake_device_CPPFLAGS = $(TEST_CPPFLAGS)
tests_mpi_mpi_fake_device_LDADD = tests/mpi/libfakecudart.la libtlmpi.la -lm
tests_mpi_mpi_fake_device_LDFLAGS = -no-install
# MPI_THREAD_MULTIPLE: 4 threads, each on its own dup, device buffers, every tier (tests/mpi/threads.sh
# runs it with 2 and 4 ranks per mode)
check_PROGRAMS += tests/mpi/mpi_threads
tests_mpi_mpi_threads_SOURCES = tests/mpi/mpi_threads.c tests/mpi/exact_values.h tests/harness.h tests/fakes/fake_env.c
tests_mpi_mpi_threads_CPPFLAGS = $(TEST_CPPFLAGS)
tests_mpi_mpi_threads_LDADD = tests/mpi/libfakecudart.la libtlmpi.la -lpthread -lm
tests_mpi_mpi_threads_LDFLAGS = -no-install
# non-blocking and persistent collectives on device buffers, completed by the MPI_Wait/Test family
# (tests/mpi/nbc.sh: 2 ranks staging, nccl and nccl single-threaded, 3 ranks staging, 1 rank self)
check_PROGRAMS += tests/mpi/mpi_nbc
tests_mpi_mpi_nbc_SOURCES = tests/mpi/mpi_nbc.c tests/mpi/exact_values.h tests/harness.h tests/fakes/fake_env.c
tests_mpi_mpi_nbc_CPPFLAGS = $(TEST_CPPFLAGS)
tests_mpi_mpi_nbc_LDADD = tests/mpi/libfakecudart.la libtlmpi.la -lpthread -lm
tests_mpi_mpi_nbc_LDFLAGS = -no-install
# the stream-ordered entry points' argument and error paths, eager enqueues on nccl / self
# (tests/mpi/enqueue.sh: 2 ranks and 1)
check_PROGRAMS += tests/mpi/mpi_enqueue
tests_mpi_mpi_enqueue_SOURCES = tests/mpi/mpi_enqueue.c tests/harness.h tests/fakes/fake_env.c
tests_mpi_mpi_enqueue_CPPFLAGS = $(TEST_CPPFLAGS)
tests_mpi_mpi_enqueue_LDADD = tests/mpi/libfakecudart.la libtlmpi.la -lpthread -lm
tests_mpi_mpi_enqueue_LDFLAGS = -no-install
# the hier tier on fake nodes (tests/mpi/hier.sh: 2x2, 3x2, 2x4, 4x2, NCCL rail)
check_PROGRAMS += tests/mpi/mpi_hier
tests_mpi_mpi_hier_SOURCES = tests/mpi/mpi_hier.c tests/mpi/exact_values.h tests/harness.h tests/fakes/fake_env.c
tests_mpi_mpi_hier_CPPFLAGS = $(TEST_CPPFLAGS)
tests_mpi_mpi_hier_LDADD = tests/mpi/libfakecudart.la libtlmpi.la -lm
tests_mpi_mpi_hier_LDFLAGS = -no-install
# the autotuner against the CPU fakes (tests/mpi/tune.sh)
check_PROGRAMS += tests/mpi/mpi_tune
tests_mpi_mpi_tune_SOURCES = tools/tlmpi_tune.c tests/fakes/fake_env.c
tests_mpi_mpi_tune_CPPFLAGS = $(TEST_CPPFLAGS)
tests_mpi_mpi_tune_LDADD = tests/mpi/libfakecudart.la libtlmpi.la -lm
tests_mpi_mpi_tune_LDFLAGS = -no-install
# injected faults (TLMPI_FAULT): every rank on one agreed path, exact results (tests/mpi/fault.sh)
check_PROGRAMS += tests/mpi/mpi_fault
tests_mpi_mpi_fault_SOURCES = tests/mpi/mpi_fault.c tests/harness.h
tests_mpi_mpi_fault_CPPFLAGS = $(TEST_CPPFLAGS)
tests_mpi_mpi_fault_LDADD = tests/mpi/libfakecudart.la libtlmpi.la -ldl -lm
tests_mpi_mpi_fault_LDFLAGS = -no-install
endif
endif
# the loopback NCCL net + GIN plugin (a test fixture, never installed; NCCL_NET_PLUGIN on a GPU host:
# tests/gpu/gin-loopback.sh) and its CPU test, two processes without NCCL or a GPU, with its two
# mutants (tests/gin-loopback/gin-loopback.sh; skips (77) where the plugin is not built)
if HAVE_CUDA
if HAVE_NCCL
check_LTLIBRARIES += tests/gin-loopback/libnccl-net-tlmpi-loopback.la
tests_gin_loopback_libnccl_net_tlmpi_loopback_la_SOURCES = tests/gin-loopback/ginlb_plugin.c tests/gin-loopback/ginlb_abi.h
tests_gin_loopback_libnccl_net_tlmpi_loopback_la_LDFLAGS = -module -avoid-version -shared -rpath /nowhere
tests_gin_loopback_libnccl_net_tlmpi_loopback_la_LIBADD = -ldl -lpthread
check_PROGRAMS += tests/gin-loopback/ginlb_driver
tests_gin_loopback_ginlb_driver_SOURCES = tests/gin-loopback/ginlb_driver.c tests/gin-loopback/ginlb_abi.h
tests_gin_loopback_ginlb_driver_LDADD = -ldl -lrt
endif
endif
TESTS += tests/gin-loopback/gin-loopback.sh
EXTRA_DIST += tests/gin-loopback/gin-loopback.sh tests/gin-loopback/gin_probe.cu tests/gpu/gin-loopback.sh
# threads.sh skips (77) where mpi_threads is not built (no CUDA headers or no NCCL headers);
# THREADS_REPEAT=N repeats its whole matrix. tests/gpu/threads.sh: the same on a GPU host.
TESTS += tests/mpi/threads.sh
EXTRA_DIST += tests/mpi/threads.sh tests/gpu/threads.sh
# nbc.sh skips (77) where mpi_nbc is not built
TESTS += tests/mpi/nbc.sh
EXTRA_DIST += tests/mpi/nbc.sh
# python.sh: python/tlmpi_enqueue.py under mpi4py against the fakes (skips without an mpi4py of this
# build's MPI); tests/gpu/python.sh: its CUDA-graph example on a GPU host (device-run.sh part python)
TESTS += tests/mpi/python.sh
EXTRA_DIST += tests/mpi/python.sh tests/mpi/python_enqueue.py tests/gpu/python.sh
# enqueue.sh skips (77) where mpi_enqueue is not built
TESTS += tests/mpi/enqueue.sh
EXTRA_DIST += tests/mpi/enqueue.sh
TESTS += tests/mpi/hier.sh
EXTRA_DIST += tests/mpi/hier.sh
TESTS += tests/mpi/tune.sh
EXTRA_DIST += tests/mpi/tune.sh
# tests/gpu/node.sh NPS BUILD_DIR [quick]: gpu_node on a GPU host (device-run.sh part node)
EXTRA_DIST += tests/gpu/node.sh
# tests/gpu/nbc.sh NPS BUILD_DIR [quick] (gpu_nbc, gpu_persist), tests/gpu/mpich-debs.sh (a tlmpi
# build against MPICH unpacked from its Debian packages): device-run.sh part nbc
EXTRA_DIST += tests/gpu/nbc.sh tests/gpu/mpich-debs.sh
# tests/gpu/graph.sh NPS BUILD_DIR [quick] (gpu_graph): device-run.sh part graph
EXTRA_DIST += tests/gpu/graph.sh
# tests/gpu/regcache.sh NPS BUILD_DIR (gpu_regcache: the registration cache under MPS)
EXTRA_DIST += tests/gpu/regcache.sh
# tests/gpu/comm-memory.sh NPS BUILD_DIR [NCOMMS CYCLES] (gpu_comm_memory under MPS)
EXTRA_DIST += tests/gpu/comm-memory.sh
# tests/gpu/siblings.sh NPS BUILD_DIR (gpu_siblings under MPS: small cases, then large ones in a small pool)
EXTRA_DIST += tests/gpu/siblings.sh
# soak.sh: tests/gpu/gpu_soak against the fakes (2 ranks, a short soak, the mutant, a dying rank); skips (77)
# where gpu_soak or the fakes are not built. tests/gpu/soak.sh: the GPU host's soak and dying rank
TESTS += tests/mpi/soak.sh
EXTRA_DIST += tests/mpi/soak.sh tests/gpu/soak.sh
# fault.sh: TLMPI_FAULT cases with 4 ranks (agreed fallback, one warning per rank, TLMPI_TIMEOUT);
# skips (77) where mpi_fault is not built
TESTS += tests/mpi/fault.sh
EXTRA_DIST += tests/mpi/fault.sh
# bad_input.sh: skips (77) where mpi_bad_input is not built
TESTS += tests/mpi/bad_input.sh
EXTRA_DIST += tests/mpi/bad_input.sh

# --- MPI correctness/bad-input/lifecycle/half tests (tests/mpi), interposition proofs
# --- (tests/interpose), leak check under valgrind. Plain C (no Check): they also run on hosts
# --- without Check. Linked with libtlmpi.la, so MPI_* resolves to tlmpi and PMPI_* to the MPI.
MPI_TESTS = tests/mpi/mpi_coll tests/mpi/mpi_coll_np4 tests/mpi/mpi_errors tests/mpi/mpi_churn \
    tests/mpi/mpi_half tests/mpi/mpi_half_np4 tests/mpi/mpi_fdx_np4
check_PROGRAMS += $(MPI_TESTS)
TESTS += $(MPI_TESTS)
MPI_TEST_LDADD = libtlmpi.la -lm
tests_mpi_mpi_coll_SOURCES = tests/mpi/mpi_coll.c tests/harness.h
tests_mpi_mpi_coll_CPPFLAGS = $(TEST_CPPFLAGS)
tests_mpi_mpi_coll_LDADD = $(MPI_TEST_LDADD)
tests_mpi_mpi_coll_LDFLAGS = -no-install
tests_mpi_mpi_coll_np4_SOURCES = $(tests_mpi_mpi_coll_SOURCES)
tests_mpi_mpi_coll_np4_CPPFLAGS = $(TEST_CPPFLAGS)
tests_mpi_mpi_coll_np4_LDADD = $(MPI_TEST_LDADD)
tests_mpi_mpi_coll_np4_LDFLAGS = -no-install
tests_mpi_mpi_fdx_np4_SOURCES = tests/mpi/mpi_fdx_np4.c tests/harness.h
tests_mpi_mpi_fdx_np4_CPPFLAGS = $(TEST_CPPFLAGS)
tests_mpi_mpi_fdx_np4_LDADD = libtlmpi_core.la -lm
tests_mpi_mpi_fdx_np4_LDFLAGS = -no-install
tests_mpi_mpi_errors_SOURCES = tests/mpi/mpi_errors.c tests/harness.h
tests_mpi_mpi_errors_CPPFLAGS = $(TEST_CPPFLAGS)
tests_mpi_mpi_errors_LDADD = $(MPI_TEST_LDADD)
tests_mpi_mpi_errors_LDFLAGS = -no-install
tests_mpi_mpi_churn_SOURCES = tests/mpi/mpi_churn.c tests/harness.h
tests_mpi_mpi_churn_CPPFLAGS = $(TEST_CPPFLAGS)
tests_mpi_mpi_churn_LDADD = $(MPI_TEST_LDADD)
tests_mpi_mpi_churn_LDFLAGS = -no-install
tests_mpi_mpi_half_SOURCES = tests/mpi/mpi_half.c tests/harness.h
tests_mpi_mpi_half_CPPFLAGS = $(TEST_CPPFLAGS)
tests_mpi_mpi_half_LDADD = $(MPI_TEST_LDADD)
tests_mpi_mpi_half_LDFLAGS = -no-install
tests_mpi_mpi_half_np4_SOURCES = $(tests_mpi_mpi_half_SOURCES)
tests_mpi_mpi_half_np4_CPPFLAGS = $(TEST_CPPFLAGS)
tests_mpi_mpi_half_np4_LDADD = $(MPI_TEST_LDADD)
tests_mpi_mpi_half_np4_LDFLAGS = -no-install

# Shell tests: each builds its programs itself, the way a user would (plain mpicc, -ltlmpi,
# mpif90 + -ltlmpi), so they need the compilers and flags configure found.
INTERPOSE_TESTS = tests/mpi/verify_env.sh tests/interpose/preload.sh tests/interpose/linked.sh tests/interpose/fortran.sh \
    tests/mpi/leak_churn.sh tests/interpose/stack.sh
TESTS += $(INTERPOSE_TESTS)
EXTRA_DIST += $(INTERPOSE_TESTS) tests/interpose/common.sh tests/interpose/plain_app.c \
    tests/interpose/linked_app.c tests/interpose/f_mpifh.f90 tests/interpose/f_usempi.f90 \
    tests/interpose/f_f08.f90 tests/interpose/f_nbc.f90 tests/interpose/f_siblings.f90 tests/interpose/f_devalloc.c scripts/test.sh \
    tests/interpose/pmpi_counter.c tests/interpose/stack_app.c
if MPI_IS_MPICH
TLMPI_TEST_MPI = mpich
else
if MPI_IS_OMPI
TLMPI_TEST_MPI = ompi
else
TLMPI_TEST_MPI = unknown
endif
endif
AM_TESTS_ENVIRONMENT += TLMPI_TEST_CC='$(CC) $(CPPFLAGS) $(CFLAGS)'; TLMPI_TEST_LIBS='$(LDFLAGS) $(LIBS)'; \
    TLMPI_TEST_MPIFC='$(MPIFC)'; TLMPI_TEST_MPI='$(TLMPI_TEST_MPI)'; VALGRIND='$(VALGRIND)'; \
    export TLMPI_TEST_CC TLMPI_TEST_LIBS TLMPI_TEST_MPIFC TLMPI_TEST_MPI VALGRIND;
clean-local: clean-interpose-work
clean-interpose-work:
	-rm -rf tests/interpose/work-* tests/mpi/work-*
.PHONY: clean-interpose-work check-leaks
# The leak check alone, with valgrind's full report: make check-leaks
check-leaks: $(MPI_TESTS)
	$(AM_TESTS_ENVIRONMENT) TLMPI_LEAK_VERBOSE=1 $(SHELL) $(top_srcdir)/tests/launch.sh $(top_srcdir)/tests/mpi/leak_churn.sh
# osu_compare.sh: tlmpi-osu-compare (bench/osu/osu-compare.sh) end to end with stand-ins for OSU's
# benchmarks: modes and their environment, in place, the plain MPI skipped where not CUDA-aware,
# the merged table, --from-dir, refusal of an OSU build without CUDA (python3; plots if matplotlib)
TESTS += tests/mpi/osu_compare.sh
EXTRA_DIST += tests/mpi/osu_compare.sh
# sanitizer builds (configure --enable-sanitize=...): the runtimes' options and suppressions for every
# test (tests/sanitize/env.sh); scripts/sanitize.sh picks the tests CI runs under each sanitizer
EXTRA_DIST += tests/sanitize/env.sh tests/sanitize/lsan.supp tests/sanitize/tsan.supp scripts/sanitize.sh
if ENABLE_SANITIZE
AM_TESTS_ENVIRONMENT += san_dir='$(abs_top_srcdir)/tests/sanitize'; san_kinds='$(TLMPI_SANITIZE)'; . "$$san_dir/env.sh";
endif
