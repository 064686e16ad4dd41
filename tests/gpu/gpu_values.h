/*
 * gpu_values.h: the element values and host reference shared by the GPU collective tests
 * (tests/gpu/gpu_coll.c, tests/gpu/gpu_node.c). Header only, no MPI calls.
 *
 * Inputs are a hash of (case seed, rank, index), so every rank computes every rank's input and the
 * reference on the host without communication. Every value is exact in its type; the reference is
 * computed in f64 for floating types (the tolerance covers one rounding per pairwise step, i.e.
 * 2^-8 for bf16 and 2^-11 for f16, times the magnitude) and exactly, with two's-complement wrap at
 * the type's width, for integers (8 ranks of products of values in [-3, 3] overflow 8 bits: the
 * kernels and MPI wrap, so does the reference).
 */
#ifndef TLMPI_TESTS_GPU_VALUES_H
#define TLMPI_TESTS_GPU_VALUES_H

#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <string.h>

enum { K_INT, K_UINT, K_FLOAT, K_F16, K_BF16 };
typedef struct {
    const char *name;
    MPI_Datatype dt;
    int kind, size;
    int nccl; /* NCCL has this type */
} dtinfo_t;

enum { OP_SUM, OP_PROD, OP_MIN, OP_MAX, OP_N };
static const char *const op_names[OP_N] = { "sum", "prod", "min", "max" };

static inline MPI_Op ops_of(int op)
{
    return op == OP_SUM ? MPI_SUM : op == OP_PROD ? MPI_PROD : op == OP_MIN ? MPI_MIN : MPI_MAX;
}

static inline uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* input value of rank r, element i, for the case seeded cs; exactly representable in every type */
static inline double val(const dtinfo_t *t, unsigned long long cs, int r, size_t i)
{
    uint64_t h = mix(cs * 0x100000001b3ull ^ mix(((uint64_t)r << 40) ^ i));

    switch (t->kind) {
    case K_INT:   return (double)((int)(h % 7) - 3);
    case K_UINT:  return (double)(h % 4);
    case K_FLOAT: return ((double)(h % 4001) - 2000.0) / 1024.0;      /* f32-exact */
    default:      return ((double)(h % 257) - 128.0) / 64.0;           /* f16/bf16-exact */
    }
}

static inline uint16_t to_bf16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    x += 0x7fff + ((x >> 16) & 1);
    return (uint16_t)(x >> 16);
}
static inline float from_bf16(uint16_t h)
{
    uint32_t x = (uint32_t)h << 16;
    float f;
    memcpy(&f, &x, 4);
    return f;
}
static inline uint16_t to_f16(float f) /* exact values only (normal range or zero) */
{
    uint32_t x, sign, man;
    int e;
    memcpy(&x, &f, 4);
    sign = (x >> 16) & 0x8000;
    if ((x & 0x7fffffff) == 0) return (uint16_t)sign;
    e = (int)((x >> 23) & 0xff) - 127 + 15;
    man = (x >> 13) & 0x3ff;
    return (uint16_t)(sign | ((uint32_t)e << 10) | man);
}
static inline float from_f16(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 0x1f, man = h & 0x3ff, x;
    float f;
    if (e == 0) {
        f = ldexpf((float)man, -24);
        return sign ? -f : f;
    }
    if (e == 31) x = sign | 0x7f800000u | (man << 13);
    else x = sign | ((e + 127 - 15) << 23) | (man << 13);
    memcpy(&f, &x, 4);
    return f;
}

static inline void put(const dtinfo_t *t, void *buf, size_t i, double v)
{
    char *p = (char *)buf + i * (size_t)t->size;
    switch (t->kind) {
    case K_INT:
        switch (t->size) {
        case 1: *(int8_t *)p = (int8_t)v; break;
        case 2: *(int16_t *)p = (int16_t)v; break;
        case 4: *(int32_t *)p = (int32_t)v; break;
        default: *(int64_t *)p = (int64_t)v; break;
        }
        break;
    case K_UINT:
        switch (t->size) {
        case 1: *(uint8_t *)p = (uint8_t)v; break;
        case 2: *(uint16_t *)p = (uint16_t)v; break;
        case 4: *(uint32_t *)p = (uint32_t)v; break;
        default: *(uint64_t *)p = (uint64_t)v; break;
        }
        break;
    case K_FLOAT:
        if (t->size == 4) *(float *)p = (float)v;
        else *(double *)p = v;
        break;
    case K_F16: *(uint16_t *)p = to_f16((float)v); break;
    default: *(uint16_t *)p = to_bf16((float)v); break;
    }
}

static inline double get(const dtinfo_t *t, const void *buf, size_t i)
{
    const char *p = (const char *)buf + i * (size_t)t->size;
    switch (t->kind) {
    case K_INT:
        switch (t->size) {
        case 1: return *(const int8_t *)p;
        case 2: return *(const int16_t *)p;
        case 4: return *(const int32_t *)p;
        default: return (double)*(const int64_t *)p;
        }
    case K_UINT:
        switch (t->size) {
        case 1: return *(const uint8_t *)p;
        case 2: return *(const uint16_t *)p;
        case 4: return *(const uint32_t *)p;
        default: return (double)*(const uint64_t *)p;
        }
    case K_FLOAT: return t->size == 4 ? *(const float *)p : *(const double *)p;
    case K_F16: return from_f16(*(const uint16_t *)p);
    default: return from_bf16(*(const uint16_t *)p);
    }
}

static inline double unit_roundoff(const dtinfo_t *t)
{
    switch (t->kind) {
    case K_FLOAT: return t->size == 4 ? 6e-8 : 1.2e-16;
    case K_F16: return 1.0 / 2048;
    case K_BF16: return 1.0 / 256;
    default: return 0;
    }
}

/* An integer reduction result, wrapped to the type's width (two's complement), as a double. */
static inline double int_wrap(const dtinfo_t *t, uint64_t acc)
{
    int bits = 8 * t->size;

    if (bits < 64) {
        acc &= ((uint64_t)1 << bits) - 1;
        if (t->kind == K_INT && (acc >> (bits - 1)) & 1) acc |= ~(((uint64_t)1 << bits) - 1);
    }
    return t->kind == K_INT ? (double)(int64_t)acc : (double)acc;
}

/* reference of element i over ranks 0..p-1; *tol_p the allowed error */
static inline double ref(const dtinfo_t *t, unsigned long long cs, int op, int p, size_t i, double *tol_p)
{
    double acc = val(t, cs, 0, i), mag = fabs(acc), u = unit_roundoff(t);
    int r;

    if (t->kind == K_INT || t->kind == K_UINT) {
        uint64_t a = (uint64_t)(int64_t)acc;
        for (r = 1; r < p; r++) {
            double x = val(t, cs, r, i);
            uint64_t xi = (uint64_t)(int64_t)x;
            switch (op) {
            case OP_SUM: a += xi; break;
            case OP_PROD: a *= xi; break;
            case OP_MIN: acc = x < acc ? x : acc; break;
            default: acc = x > acc ? x : acc; break;
            }
        }
        *tol_p = 0;
        return (op == OP_MIN || op == OP_MAX) ? acc : int_wrap(t, a);
    }
    for (r = 1; r < p; r++) {
        double x = val(t, cs, r, i);
        switch (op) {
        case OP_SUM: acc += x; mag += fabs(x); break;
        case OP_PROD: acc *= x; break;
        case OP_MIN: acc = x < acc ? x : acc; break;
        default: acc = x > acc ? x : acc; break;
        }
    }
    if (op == OP_PROD) mag = fabs(acc);
    /* every pairwise step may round once (p-1 steps, plus the final rounding) */
    *tol_p = (op == OP_MIN || op == OP_MAX) ? 0 : u * (double)p * mag;
    if (t->kind == K_F16 && op == OP_PROD) *tol_p += (double)p * ldexp(1.0, -24); /* subnormal steps */
    return acc;
}

#endif
