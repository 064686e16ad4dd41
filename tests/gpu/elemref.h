/*
 * elemref.h: what the GPU kernel tests (gpu_reduce.c, gpu_node_kernels.c) share: element names and
 * sizes, a seeded xorshift generator, a CUDA check macro, element access on raw bytes, random
 * elements, the host reference of one reduced element (sources in order, integers wrap, f16/bf16
 * accumulated in float and rounded once, exactly what the kernels do) and the value comparison.
 * Static functions: each test includes it once.
 */
#ifndef TLMPI_TEST_ELEMREF_H
#define TLMPI_TEST_ELEMREF_H

#include "half.h"
#include "types.h"

#include <cuda_runtime_api.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const dt_names[TLMPI_DT_NUM_ARITH] = { "i8",  "u8",  "i16", "u16", "i32",  "u32",
                                                          "i64", "u64", "f16", "bf16", "f32", "f64" };
static const char *const op_names[TLMPI_OP_NUM_ARITH] = { "sum", "prod", "min", "max" };
static const size_t elem_size[TLMPI_DT_NUM_ARITH] = TLMPI_DT_ELEM_SIZES;

static uint64_t rng_state;

static uint64_t rnd64(void)
{
    /* xorshift64* */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 2685821657736338717ull;
}

static unsigned rnd(unsigned n) { return (unsigned)(rnd64() >> 33) % n; }

/* uniform in [lo, hi) */
static double rnd_real(double lo, double hi) { return lo + (hi - lo) * ((double)(rnd64() >> 11) / 9007199254740992.0); }

#define CK(_call)                                                                            \
    do {                                                                                     \
        cudaError_t _e = (_call);                                                            \
        if (_e != cudaSuccess) {                                                             \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #_call, cudaGetErrorString(_e)); \
            exit(1);                                                                         \
        }                                                                                    \
    } while (0)

static int is_float(int dt) { return dt >= TLMPI_DT_F16; }
static int is_signed_int(int dt) { return dt == TLMPI_DT_I8 || dt == TLMPI_DT_I16 || dt == TLMPI_DT_I32 || dt == TLMPI_DT_I64; }

/* ---- element access on raw bytes ---- */
static uint64_t get_bits(int dt, const void *buf, size_t i)
{
    uint64_t v = 0;
    memcpy(&v, (const char *)buf + i * elem_size[dt], elem_size[dt]); /* little endian */
    return v;
}

static void put_bits(int dt, void *buf, size_t i, uint64_t v) { memcpy((char *)buf + i * elem_size[dt], &v, elem_size[dt]); }

static int64_t as_signed(int dt, uint64_t v)
{
    unsigned sh = 64 - 8 * (unsigned)elem_size[dt];
    return (int64_t)(v << sh) >> sh;
}

static float bits_to_float(int dt, uint64_t v)
{
    float f;
    uint32_t u = (uint32_t)v;
    if (dt == TLMPI_DT_F16) return tlmpi_f16_to_float((uint16_t)v);
    if (dt == TLMPI_DT_BF16) return tlmpi_bf16_to_float((uint16_t)v);
    memcpy(&f, &u, 4);
    return f;
}

static uint64_t float_to_bits(int dt, float f)
{
    uint32_t u;
    if (dt == TLMPI_DT_F16) return tlmpi_float_to_f16(f);
    if (dt == TLMPI_DT_BF16) return tlmpi_float_to_bf16(f);
    memcpy(&u, &f, 4);
    return u;
}

static double bits_to_double(uint64_t v)
{
    double d;
    memcpy(&d, &v, 8);
    return d;
}

static uint64_t double_to_bits(double d)
{
    uint64_t v;
    memcpy(&v, &d, 8);
    return v;
}

/* random element: integers any bit pattern; floating values in a range that keeps products of
 * 8 finite (and sums of f16/bf16 inexact enough that one rounding at the end differs from one per
 * step) */
static uint64_t random_elem(int dt, int op)
{
    double mag, sign;
    if (!is_float(dt)) return rnd64();
    sign = rnd(2) ? -1.0 : 1.0;
    mag = op == TLMPI_OP_PROD ? rnd_real(0.5, 2.0) : rnd_real(0.0, 100.0);
    if (dt == TLMPI_DT_F64) return double_to_bits(sign * mag);
    return float_to_bits(dt, (float)(sign * mag));
}

/* ---- host reference: out[i] = op over k of src[k][i], ints wrap, halves in float ---- */
static uint64_t ref_elem(int dt, int op, void *const *srcs, int nsrc, size_t i)
{
    int k;
    if (dt == TLMPI_DT_F64) {
        double a = bits_to_double(get_bits(dt, srcs[0], i));
        for (k = 1; k < nsrc; k++) {
            double b = bits_to_double(get_bits(dt, srcs[k], i));
            a = op == TLMPI_OP_SUM ? a + b : op == TLMPI_OP_PROD ? a * b : op == TLMPI_OP_MIN ? fmin(a, b) : fmax(a, b);
        }
        return double_to_bits(a);
    }
    if (is_float(dt)) {
        float a = bits_to_float(dt, get_bits(dt, srcs[0], i));
        for (k = 1; k < nsrc; k++) {
            float b = bits_to_float(dt, get_bits(dt, srcs[k], i));
            a = op == TLMPI_OP_SUM ? a + b : op == TLMPI_OP_PROD ? a * b : op == TLMPI_OP_MIN ? fminf(a, b) : fmaxf(a, b);
        }
        return float_to_bits(dt, a);
    }
    {
        uint64_t a = get_bits(dt, srcs[0], i);
        for (k = 1; k < nsrc; k++) {
            uint64_t b = get_bits(dt, srcs[k], i);
            if (op == TLMPI_OP_SUM) {
                a += b;
            } else if (op == TLMPI_OP_PROD) {
                a *= b;
            } else {
                int b_less = is_signed_int(dt) ? as_signed(dt, b) < as_signed(dt, a)
                                               : (b & (~0ull >> (64 - 8 * elem_size[dt]))) < (a & (~0ull >> (64 - 8 * elem_size[dt])));
                if (op == TLMPI_OP_MIN ? b_less : (!b_less && b != a)) a = b;
            }
        }
        return elem_size[dt] == 8 ? a : a & ((1ull << (8 * elem_size[dt])) - 1);
    }
}

static int same_value(int dt, int op, uint64_t got, uint64_t want)
{
    unsigned bits = 8 * (unsigned)elem_size[dt];
    uint64_t mask = bits == 64 ? ~0ull : (1ull << bits) - 1, sign = 1ull << (bits - 1);
    got &= mask;
    want &= mask;
    if (got == want) return 1;
    /* fmin/fmax may return either zero for (+0, -0) */
    return is_float(dt) && (op == TLMPI_OP_MIN || op == TLMPI_OP_MAX) && ((got | want) & ~sign) == 0;
}

#endif
