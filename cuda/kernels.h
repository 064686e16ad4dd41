/*
 * kernels.h: the only header shared by tlmpi's C host code and its CUDA C++ kernels.
 * Plain C types only. Every launcher is extern "C", asynchronous on the given stream (a
 * cudaStream_t passed as void *; NULL is the legacy default stream), and returns 0 or a
 * cudaError_t value (as int). Element types and ops are tlmpi_dtype_t / tlmpi_op_t values
 * (cuda/types.h) passed as int. Pointers are device (or managed) memory of the current device.
 *
 * Launch sizes come from the caller: `ctas` is the number of CTAs (thread blocks) to launch, at
 * least 1; a launcher uses fewer where the data has less work than that. Pick it once with
 * tlmpi_cuda_ctas_for(bytes, tlmpi_cuda_sm_count(dev)): the launchers themselves make no device
 * query, so a launch costs one cudaLaunchKernel.
 */
#ifndef TLMPI_CUDA_KERNELS_H
#define TLMPI_CUDA_KERNELS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The most sources tlmpi_cuda_reduce takes. */
#define TLMPI_CUDA_REDUCE_MAX_SRC 8

/* 1 if tlmpi_cuda_reduce handles (dtype, op): every arithmetic type x sum/prod/min/max. */
int tlmpi_cuda_reduce_supported(int dtype, int op);

/*
 * dst[0..bytes) = src[0..bytes). Any alignment (16-byte vectors where dst and src are congruent
 * modulo 16, narrower ones otherwise). The ranges must not overlap unless dst == src.
 */
int tlmpi_cuda_copy(void *dst, const void *src, size_t bytes, int ctas, void *stream);

/*
 * dst[i] = op over k = 0, 1, ..., nsrc-1 of srcs[k][i], for i < count elements of dtype and
 * 1 <= nsrc <= TLMPI_CUDA_REDUCE_MAX_SRC (srcs is a host array of device pointers; it is read
 * before the call returns). The order is fixed (((s0 op s1) op s2) ...), so results are bitwise
 * reproducible. dst may be one of the sources (dst = dst op src: srcs = {dst, src}); other
 * overlaps are not allowed. f16/bf16 accumulate all sources in float and round once; integers wrap
 * (two's complement); min/max of floating types are fminf/fmaxf (a NaN loses). Every pointer must
 * be aligned to the element size (cudaErrorInvalidValue otherwise); 16-byte vectors are used when
 * all pointers are congruent modulo 16, narrower ones otherwise.
 */
int tlmpi_cuda_reduce(void *dst, const void *const *srcs, int nsrc, size_t count, int dtype, int op,
                      int ctas, void *stream);

/*
 * Number of SMs of CUDA device dev (cudaDevAttrMultiProcessorCount), queried once per device and
 * cached (thread-safe); 0 if the query fails.
 */
int tlmpi_cuda_sm_count(int dev);

/*
 * The CTA count for a copy/reduce writing `bytes` bytes on a device with sm_count SMs: 1 for small
 * sizes, one CTA per 16 KiB up to 4 per SM (the kernels' full occupancy) for large ones.
 */
int tlmpi_cuda_ctas_for(size_t bytes, int sm_count);

#ifdef __cplusplus
}
#endif
#endif
