/*
 * gpu_reduce: the element-wise reduction kernels (cuda/reduce.cu) for every element type x
 * {sum, prod, min, max}, against a host reference, on fresh random data with the output poisoned
 * first: tlmpi_cuda_reduce (dst = op(dst, src)) and tlmpi_cuda_reduce_multi (3 sources, fixed
 * order). Values are small integers, exact in every type (including f16/bf16), so the comparison
 * is exact. No MPI. Exit 77 without a CUDA device.
 */
#include "config.h"
#include "dtype.h"
#include "half.h"
#include "kernels.h"

#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 4099 /* odd: exercises the grid-stride tail */
#define NSRC 3

static double get(int dt, const void *buf, size_t i)
{
    switch (dt) {
    case TLMPI_DT_I8: return ((const int8_t *)buf)[i];
    case TLMPI_DT_U8: return ((const uint8_t *)buf)[i];
    case TLMPI_DT_I16: return ((const int16_t *)buf)[i];
    case TLMPI_DT_U16: return ((const uint16_t *)buf)[i];
    case TLMPI_DT_I32: return ((const int32_t *)buf)[i];
    case TLMPI_DT_U32: return ((const uint32_t *)buf)[i];
    case TLMPI_DT_I64: return (double)((const int64_t *)buf)[i];
    case TLMPI_DT_U64: return (double)((const uint64_t *)buf)[i];
    case TLMPI_DT_F16: return tlmpi_f16_to_float(((const uint16_t *)buf)[i]);
    case TLMPI_DT_BF16: return tlmpi_bf16_to_float(((const uint16_t *)buf)[i]);
    case TLMPI_DT_F32: return ((const float *)buf)[i];
    default: return ((const double *)buf)[i];
    }
}

static void put(int dt, void *buf, size_t i, double v)
{
    switch (dt) {
    case TLMPI_DT_I8: ((int8_t *)buf)[i] = (int8_t)v; break;
    case TLMPI_DT_U8: ((uint8_t *)buf)[i] = (uint8_t)v; break;
    case TLMPI_DT_I16: ((int16_t *)buf)[i] = (int16_t)v; break;
    case TLMPI_DT_U16: ((uint16_t *)buf)[i] = (uint16_t)v; break;
    case TLMPI_DT_I32: ((int32_t *)buf)[i] = (int32_t)v; break;
    case TLMPI_DT_U32: ((uint32_t *)buf)[i] = (uint32_t)v; break;
    case TLMPI_DT_I64: ((int64_t *)buf)[i] = (int64_t)v; break;
    case TLMPI_DT_U64: ((uint64_t *)buf)[i] = (uint64_t)v; break;
    case TLMPI_DT_F16: ((uint16_t *)buf)[i] = tlmpi_float_to_f16((float)v); break;
    case TLMPI_DT_BF16: ((uint16_t *)buf)[i] = tlmpi_float_to_bf16((float)v); break;
    case TLMPI_DT_F32: ((float *)buf)[i] = (float)v; break;
    default: ((double *)buf)[i] = v; break;
    }
}

static int is_unsigned(int dt)
{
    return dt == TLMPI_DT_U8 || dt == TLMPI_DT_U16 || dt == TLMPI_DT_U32 || dt == TLMPI_DT_U64;
}

/* |v| <= 20 (sum of 3 <= 60 fits i8; product of 3 <= 8000 needs prod values <= 4) */
static double rnd(int dt, int op)
{
    int span = op == TLMPI_OP_PROD ? 4 : 20;
    int v = rand() % (span + 1);

    return is_unsigned(dt) ? v : (rand() & 1 ? -v : v);
}

static double apply(int op, double a, double b)
{
    switch (op) {
    case TLMPI_OP_SUM: return a + b;
    case TLMPI_OP_PROD: return a * b;
    case TLMPI_OP_MIN: return b < a ? b : a;
    default: return b > a ? b : a;
    }
}

#define CK(_call)                                                                            \
    do {                                                                                     \
        cudaError_t _e = (_call);                                                            \
        if (_e != cudaSuccess) {                                                             \
            fprintf(stderr, "%s: %s\n", #_call, cudaGetErrorString(_e));                     \
            exit(1);                                                                         \
        }                                                                                    \
    } while (0)

int main(void)
{
    int ndev = 0, dt, op, k, fails = 0, cases = 0;
    size_t i, esz;
    void *h_src[NSRC], *h_out, *d_src[NSRC], *d_out;

    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        printf("SKIP: no CUDA device\n");
        return 77;
    }
    srand(12345);
    for (k = 0; k < NSRC; k++) {
        h_src[k] = malloc(N * 8);
        CK(cudaMalloc(&d_src[k], N * 8));
    }
    h_out = malloc(N * 8);
    CK(cudaMalloc(&d_out, N * 8));
    for (dt = 0; dt < TLMPI_DT_NUM_ARITH; dt++) {
        esz = tlmpi_dtype_elem_size(dt);
        for (op = 0; op < TLMPI_OP_NUM_ARITH; op++) {
            for (int multi = 0; multi < 2; multi++) {
                int nsrc = multi ? NSRC : 2, bad = 0, rc;

                if (!tlmpi_cuda_reduce_supported(dt, op)) {
                    printf("FAIL: %s %s reported unsupported\n", tlmpi_dtype_name(dt), tlmpi_op_name(op));
                    fails++;
                    continue;
                }
                for (k = 0; k < nsrc; k++) {
                    for (i = 0; i < N; i++) {
                        put(dt, h_src[k], i, rnd(dt, op));
                    }
                    CK(cudaMemcpy(d_src[k], h_src[k], N * esz, cudaMemcpyHostToDevice));
                }
                if (multi) {
                    CK(cudaMemset(d_out, 0xA5, N * esz)); /* poison */
                    rc = tlmpi_cuda_reduce_multi(d_out, (const void *const *)d_src, nsrc, N, dt, op, NULL);
                } else {
                    /* dst = op(dst, src): dst starts as source 0 */
                    CK(cudaMemcpy(d_out, h_src[0], N * esz, cudaMemcpyHostToDevice));
                    rc = tlmpi_cuda_reduce(d_out, d_src[1], N, dt, op, NULL);
                }
                CK((cudaError_t)rc);
                CK(cudaDeviceSynchronize());
                CK(cudaMemcpy(h_out, d_out, N * esz, cudaMemcpyDeviceToHost));
                for (i = 0; i < N; i++) {
                    double ref = get(dt, h_src[0], i);

                    for (k = 1; k < nsrc; k++) {
                        ref = apply(op, ref, get(dt, h_src[k], i));
                    }
                    if (get(dt, h_out, i) != ref) {
                        if (!bad++) {
                            printf("FAIL: %s %s %s element %zu: %g, expected %g\n", multi ? "reduce_multi" : "reduce",
                                   tlmpi_dtype_name(dt), tlmpi_op_name(op), i, get(dt, h_out, i), ref);
                        }
                    }
                }
                fails += bad != 0;
                cases++;
            }
        }
    }
    printf("RESULT gpu_reduce: %d cases (%d types x %d ops x 2 kernels, %d elements), %d failed\n", cases,
           TLMPI_DT_NUM_ARITH, TLMPI_OP_NUM_ARITH, N, fails);
    return fails ? 1 : 0;
}
