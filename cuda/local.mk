# CUDA kernels: a libtool convenience library compiled by nvcc (rules from build-notes: libtool
# compile mode with -prefer-non-pic, --compiler-options -fPIC; no per-target flags on it).
# cuda/types.h (element types and ops) is shared with the C side (src/dtype/dtype.h includes it);
# cuda/kernels.h is the launchers' C interface; cuda/common.cuh the device building blocks.
noinst_LTLIBRARIES += libtlmpi_cuda.la
TLMPI_CU_SOURCES = cuda/local.cu cuda/node.cu cuda/node_allgather.cu cuda/node_reduce_scatter.cu \
    cuda/node_allreduce_oneshot.cu cuda/node_allreduce_twoshot.cu cuda/node_ll.cu cuda/node_direct.cu cuda/node_exchange.cu cuda/hier_fused.cu \
    cuda/hier_fused_allgather.cu cuda/hier_fused_reduce_scatter.cu cuda/hier_fused_allreduce.cu cuda/devcomm.cu \
    cuda/preload.cu
libtlmpi_cuda_la_SOURCES = $(TLMPI_CU_SOURCES) cuda/kernels.h cuda/common.cuh cuda/types.h cuda/node.cuh \
    cuda/node_kernels.cuh cuda/transport_ipc.cuh cuda/transport_nvls.cuh cuda/rail.cuh cuda/rail_gin.cuh cuda/hier_fused.cuh
libtlmpi_core_la_LIBADD += libtlmpi_cuda.la $(CUDA_LIBS)
libtlmpi_core_la_LDFLAGS = $(CUDA_LDFLAGS)

# NVCC_ARCH: configure --with-nvcc-gencode (default sm_90 SASS + compute_90 PTX)
NVCCFLAGS = -O3 -std=c++17 --compiler-options -fPIC --compiler-options -fvisibility=hidden \
    --compiler-options -Wall,-Wextra
SUFFIXES = .cu
# Dependencies: nvcc writes cuda/X.d (make syntax, -MP: a phony target per header so that a
# removed header does not break the build) beside cuda/X.lo while it compiles; make reads the
# ones that exist.
.cu.lo:
	$(AM_V_NVCC)$(LIBTOOL) $(AM_V_lt) --tag=CC $(AM_LIBTOOLFLAGS) $(LIBTOOLFLAGS) --mode=compile \
	  $(NVCC) $(NVCC_ARCH) $(NVCCFLAGS) $(DEFS) $(DEFAULT_INCLUDES) $(AM_CPPFLAGS) $(CPPFLAGS) \
	  -MD -MP -MT $@ -MF $(@:.lo=.d) -prefer-non-pic -c -o $@ $<
TLMPI_CU_DEPFILES = $(TLMPI_CU_SOURCES:.cu=.d)
-include $(TLMPI_CU_DEPFILES)
CLEANFILES += $(TLMPI_CU_DEPFILES)
AM_V_NVCC = $(am__v_NVCC_@AM_V@)
am__v_NVCC_ = $(am__v_NVCC_@AM_DEFAULT_V@)
am__v_NVCC_0 = @echo "  NVCC    " $@;
am__v_NVCC_1 =
