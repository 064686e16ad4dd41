# Benchmarks (built with make, not run by make check).

# passthrough: a plain MPI program (no tlmpi.h, not linked with tlmpi) that times MPI_X (through a
# preloaded interposer) against PMPI_X (plain MPI) in one run; scripts/demo.sh, bench/callgrind.sh.
noinst_PROGRAMS += bench/passthrough
bench_passthrough_SOURCES = bench/passthrough.c bench/bench_stats.h
bench_passthrough_CPPFLAGS =
bench_passthrough_LDADD = -ldl -lm
dist_noinst_SCRIPTS += bench/callgrind.sh

# tlmpi_bench: OSU-style sweep on device buffers (tlmpi auto / forced tiers / raw NCCL, CSV with
# generation strings). Needs the CUDA runtime; NCCL is dlopen'ed like tlmpi does. bench/run-gpu.sh
# drives it on a GPU host.
if HAVE_CUDA
noinst_PROGRAMS += bench/tlmpi_bench
bench_tlmpi_bench_SOURCES = bench/tlmpi_bench.c bench/bench_stats.h
bench_tlmpi_bench_LDADD = libtlmpi.la $(CUDA_LIBS) -ldl -lm
bench_tlmpi_bench_LDFLAGS = $(CUDA_LDFLAGS) -no-install
endif
dist_noinst_SCRIPTS += bench/run-gpu.sh bench/gpu-summary.py

# tlmpi_costs: ns per host-side step of a device-buffer call (classification, CUDA calls, MPI
# attribute lookup, a whole NCCL-tier call), to see where overhead over raw NCCL goes.
if HAVE_CUDA
noinst_PROGRAMS += bench/tlmpi_costs
bench_tlmpi_costs_SOURCES = bench/tlmpi_costs.c bench/bench_stats.h
bench_tlmpi_costs_LDADD = libtlmpi.la libtlmpi_core.la $(CUDA_LIBS)
bench_tlmpi_costs_LDFLAGS = $(CUDA_LDFLAGS) -no-install
endif
dist_noinst_SCRIPTS += bench/devpath-callgrind.sh bench/overhead-gpu.sh

# kernel_bench: the copy/reduce kernels of cuda/ against cudaMemcpyAsync on one GPU (GB/s at
# 256 MiB for every type x op, launch + sync latency at 8 B), a Markdown table (--csv FILE).
if HAVE_CUDA
noinst_PROGRAMS += bench/kernel_bench
bench_kernel_bench_SOURCES = bench/kernel_bench.c bench/bench_stats.h
bench_kernel_bench_LDADD = libtlmpi_cuda.la $(CUDA_LIBS) -lm
bench_kernel_bench_LDFLAGS = $(CUDA_LDFLAGS) -no-install
endif
EXTRA_DIST += tests/fakes/fakecudart.c tests/fakes/fakenccl.c tests/fakes/dev_loop.c

# node_bench: the node tier in one run per rank count (bench/node-bench.sh: 2, 4, 8 ranks on one
# GPU under MPS): the floor (a node barrier kernel over CUDA IPC, launched with the kernels.h API),
# 8-byte latency node vs staging vs raw NCCL on one rank, a size sweep node vs staging, and the
# large-message HBM efficiency of every node algorithm against cudaMemcpyAsync.
if HAVE_CUDA
noinst_PROGRAMS += bench/node_bench
bench_node_bench_SOURCES = bench/node_bench.c bench/bench_stats.h
bench_node_bench_LDADD = libtlmpi.la libtlmpi_cuda.la $(CUDA_LIBS) -ldl -lm
bench_node_bench_LDFLAGS = $(CUDA_LDFLAGS) -no-install
endif
dist_noinst_SCRIPTS += bench/node-bench.sh
# python_percall.py: eager te.allreduce from Python (mpi4py + CuPy) in the shape of node_bench's enqueue
# rows, to compare with them in the same run; --stub: the module's own per-call work, no GPU
dist_noinst_SCRIPTS += bench/python_percall.py

# tlmpi-osu-compare: the user's OSU build against tlmpi and every baseline (bench/osu/osu-compare.sh,
# which says what it runs). Installed: a wrapper in bindir and its helpers in $(pkgdatadir)/osu (the
# merge, the plotting, the launcher and MPS helpers of tests/gpu). plot.py / plot.sh: PNG plots of
# the bench CSVs (python3-matplotlib, installed by plot.sh when missing; the library never needs it).
osudir = $(pkgdatadir)/osu
dist_osu_SCRIPTS = bench/osu/osu-compare.sh bench/osu/osu_merge.py bench/plot.py bench/plot.sh
osu_SCRIPTS = tests/gpu/mpirun.sh tests/gpu/rank-env.sh tests/gpu/mps.sh
osu_DATA = scripts/packages.sh
bin_SCRIPTS = bench/osu/tlmpi-osu-compare
CLEANFILES += bench/osu/tlmpi-osu-compare
# Run from the build tree (bench/osu/tlmpi-osu-compare, before make install) it uses the source
# tree's script and this build's .libs/libtlmpi.so; installed, the installed ones.
bench/osu/tlmpi-osu-compare: Makefile
	$(AM_V_GEN)$(MKDIR_P) bench/osu && { \
	    echo '#!/bin/sh'; \
	    echo '# tlmpi-osu-compare (tlmpi $(VERSION)): runs $(osudir)/osu-compare.sh, which says what it does (-h)'; \
	    echo '# (from the build tree $(abs_top_builddir): its .libs/libtlmpi.so and the scripts of $(abs_top_srcdir))'; \
	    echo 'if [ "$$(cd "$$(dirname "$$0")" && pwd)" = "$(abs_top_builddir)/bench/osu" ]; then'; \
	    echo '    TLMPI_LIBDIR="$(abs_top_builddir)/.libs" exec bash "$(abs_top_srcdir)/bench/osu/osu-compare.sh" "$$@"'; \
	    echo 'fi'; \
	    echo 'TLMPI_OSU_HOME="$(osudir)" TLMPI_LIBDIR="$(libdir)" exec bash "$(osudir)/osu-compare.sh" "$$@"'; \
	} >$@.tmp && chmod +x $@.tmp && mv $@.tmp $@
