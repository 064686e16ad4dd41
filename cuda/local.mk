# CUDA kernels: a libtool convenience library compiled by nvcc (rules from build-notes: libtool
# compile mode with -prefer-non-pic, --compiler-options -fPIC; no per-target flags on it).
noinst_LTLIBRARIES += libtlmpi_cuda.la
libtlmpi_cuda_la_SOURCES = cuda/reduce.cu cuda/kernels.h
libtlmpi_core_la_LIBADD += libtlmpi_cuda.la $(CUDA_LIBS)
libtlmpi_core_la_LDFLAGS = $(CUDA_LDFLAGS)

NVCCFLAGS = -O3 -std=c++17 --compiler-options -fPIC --compiler-options -fvisibility=hidden
SUFFIXES = .cu
.cu.lo:
	$(AM_V_NVCC)$(LIBTOOL) $(AM_V_lt) --tag=CC $(AM_LIBTOOLFLAGS) $(LIBTOOLFLAGS) --mode=compile \
	  $(NVCC) $(NVCC_ARCH) $(NVCCFLAGS) $(DEFS) $(DEFAULT_INCLUDES) $(AM_CPPFLAGS) $(CPPFLAGS) \
	  -prefer-non-pic -c -o $@ $<
AM_V_NVCC = $(am__v_NVCC_@AM_V@)
am__v_NVCC_ = $(am__v_NVCC_@AM_DEFAULT_V@)
am__v_NVCC_0 = @echo "  NVCC    " $@;
am__v_NVCC_1 =
