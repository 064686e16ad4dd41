bin_PROGRAMS += tools/tlmpi_info
tools_tlmpi_info_SOURCES = tools/tlmpi_info.c
tools_tlmpi_info_LDADD = libtlmpi.la libtlmpi_core.la
if HAVE_CUDA
# the autotuner (an MPI program on device buffers): tools/tlmpi_tune.c; tests/mpi/tune.sh runs a copy
# linked with the CPU fakes
bin_PROGRAMS += tools/tlmpi_tune
tools_tlmpi_tune_SOURCES = tools/tlmpi_tune.c
tools_tlmpi_tune_CPPFLAGS = $(AM_CPPFLAGS)
tools_tlmpi_tune_LDADD = libtlmpi.la $(CUDA_LIBS)
tools_tlmpi_tune_LDFLAGS = $(CUDA_LDFLAGS)
endif
