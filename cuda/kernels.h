/*
 * kernels.h: the only header shared by tlmpi's C host code and its CUDA C++ kernels.
 * Plain C types only; every launcher is extern "C", asynchronous on the given stream, and returns
 * 0 or a cudaError_t value (as int). Element types and ops use tlmpi's dtype.h enums as ints.
 */
#ifndef TLMPI_CUDA_KERNELS_H
#define TLMPI_CUDA_KERNELS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 1 if tlmpi has a device reduction for (dtype, op) (tlmpi_dtype_t, tlmpi_op_t values). */
int tlmpi_cuda_reduce_supported(int dtype, int op);

/*
 * dst[i] = op(dst[i], src[i]) for i < count, elements of dtype. dst and src are device (or
 * managed) pointers of the current device; they may be equal. Launched on stream (cudaStream_t).
 */
int tlmpi_cuda_reduce(void *dst, const void *src, size_t count, int dtype, int op, void *stream);

/*
 * dst[i] = op over k of srcs[k][i], for nsrc >= 1 sources; the reduction order is fixed
 * (k = 0, 1, ...), so results are bitwise reproducible.
 */
int tlmpi_cuda_reduce_multi(void *dst, const void *const *srcs, int nsrc, size_t count, int dtype,
                            int op, void *stream);

#ifdef __cplusplus
}
#endif
#endif
