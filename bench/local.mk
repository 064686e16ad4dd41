# Benchmarks (built with make, not run by make check).

# passthrough: a plain MPI program (no tlmpi.h, not linked with tlmpi) that times MPI_X (through a
# preloaded interposer) against PMPI_X (plain MPI) in one run; scripts/demo.sh, bench/callgrind.sh.
noinst_PROGRAMS += bench/passthrough
bench_passthrough_SOURCES = bench/passthrough.c
bench_passthrough_CPPFLAGS =
bench_passthrough_LDADD = -ldl
dist_noinst_SCRIPTS += bench/callgrind.sh
