# Tests: Check unit tests (no MPI run, no GPU), MPI tests under mpiexec, GPU tests (exit 77 = skip).
LOG_COMPILER = $(SHELL) $(top_srcdir)/tests/launch.sh
AM_TESTS_ENVIRONMENT = MPIEXEC='$(MPIEXEC)'; export MPIEXEC; top_srcdir='$(top_srcdir)'; export top_srcdir; \
    top_builddir='$(top_builddir)'; export top_builddir;
