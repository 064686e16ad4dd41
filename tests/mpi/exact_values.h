/*
 * exact_values.h: the inputs and element access of the MPI tests that check device-buffer
 * collectives exactly (mpi_threads.c, mpi_hier.c): small integers in [-4, 4] (unsigned types: [0, 8])
 * that every rank can compute for every rank, exact in every type whatever the order of the
 * summation (at most 8 ranks' sums fit in int8). The types: int, float and double; with
 * TLMPI_TEST_TYPES=all every arithmetic type tlmpi reduces: also int8, uint8, int16, uint16, uint32,
 * int64, uint64, float16 and bfloat16 (tlmpi's TLMPI_FLOAT16 / TLMPI_BFLOAT16 handles).
 * Ops (the `sum` code of the callers): 1 sum, 0 max, 2 min, 3 prod. Products take inputs in
 * {-2, -1, 1, 2} ({1, 2} unsigned), so every partial product is a power of two, exact in the half
 * types too; 8-bit products wrap (at most 2^8 over 8 ranks), which is the same in any order.
 */
#ifndef TLMPI_TESTS_EXACT_VALUES_H
#define TLMPI_TESTS_EXACT_VALUES_H

#include <mpi.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tlmpi.h"

enum { C_AR, C_AG, C_RSB, NCOLL }; /* allreduce, allgather, reduce_scatter_block */
enum { T_INT, T_FLOAT, T_DOUBLE, T_I8, T_U16, T_I64, T_U64, T_U8, T_I16, T_U32, T_F16, T_BF16, NTYPES_ALL };
#define NTYPES_BASE 3
static const char *const type_name[NTYPES_ALL] = { "int",   "float", "double", "int8",  "uint16",  "int64",
                                                   "uint64", "uint8", "int16", "uint32", "float16", "bfloat16" };

/* the types a run covers: 3, or all 12 with TLMPI_TEST_TYPES=all (the same on every rank) */
static inline int exact_ntypes(void)
{
    static int n; /* read once (the loops over the types evaluate NTYPES per step); threads race to
                   * set it to the same value: atomic, so that ThreadSanitizer has nothing to say */
    int v = __atomic_load_n(&n, __ATOMIC_RELAXED);

    if (!v) {
        const char *e = getenv("TLMPI_TEST_TYPES");

        v = e && !strcmp(e, "all") ? NTYPES_ALL : NTYPES_BASE;
        __atomic_store_n(&n, v, __ATOMIC_RELAXED);
    }
    return v;
}
#define NTYPES exact_ntypes()

static inline MPI_Datatype mpi_type(int t)
{
    switch (t) {
    case T_INT: return MPI_INT;
    case T_FLOAT: return MPI_FLOAT;
    case T_DOUBLE: return MPI_DOUBLE;
    case T_I8: return MPI_INT8_T;
    case T_U16: return MPI_UINT16_T;
    case T_I64: return MPI_INT64_T;
    case T_U8: return MPI_UINT8_T;
    case T_I16: return MPI_INT16_T;
    case T_U32: return MPI_UINT32_T;
    case T_F16: return TLMPI_FLOAT16;
    case T_BF16: return TLMPI_BFLOAT16;
    default: return MPI_UINT64_T;
    }
}
static inline size_t type_size(int t)
{
    static const size_t sz[NTYPES_ALL] = { 4, 4, 8, 1, 2, 8, 8, 1, 2, 4, 2, 2 };
    return sz[t];
}
static inline int type_unsigned(int t) { return t == T_U16 || t == T_U64 || t == T_U8 || t == T_U32; }
static inline int type_half(int t) { return t == T_F16 || t == T_BF16; }

/* the op of a caller's code (1 sum, 0 max, 2 min, 3 prod) and its name */
static inline MPI_Op exact_op(int sum) { return sum == 1 ? MPI_SUM : sum == 2 ? MPI_MIN : sum == 3 ? MPI_PROD : MPI_MAX; }
static inline const char *exact_op_name(int sum) { return sum == 1 ? "sum" : sum == 2 ? "min" : sum == 3 ? "prod" : "max"; }

/* Combinations not run: allgather of the half types (it moves bytes, as uint16 does; tlmpi's half
 * handles are derived types, which allgather need not take over). */
static inline int exact_skip(int coll, int t) { return coll == C_AG && type_half(t); }

/* Half-type bits of a value that is exact in it (the small integers and powers of two used here),
 * and back; kind 0: IEEE float16, 1: bfloat16. Not general conversions: no rounding, no subnormals. */
static inline uint16_t exact_to_half(double v, int kind)
{
    float f = (float)v;
    uint32_t b;

    memcpy(&b, &f, sizeof b);
    if (kind || (b & 0x7fffffffu) == 0) return (uint16_t)(b >> 16);
    return (uint16_t)(((b >> 16) & 0x8000u) | ((((b >> 23) & 0xffu) - 127 + 15) << 10) | ((b >> 13) & 0x3ffu));
}
static inline double exact_from_half(uint16_t h, int kind)
{
    int e = (h >> 10) & 0x1f;
    double m;

    if (kind) {
        uint32_t b = (uint32_t)h << 16;
        float f;

        memcpy(&f, &b, sizeof f);
        return f;
    }
    if (e == 31) return NAN; /* inf or NaN: never a reference value */
    m = e ? 1.0 + (h & 0x3ff) / 1024.0 : (h & 0x3ff) / 1024.0;
    return ldexp(m, (e ? e : 1) - 15) * (h & 0x8000 ? -1 : 1);
}

/* input of rank r, element i, of the call with data seed ds: an integer in [-4, 4] */
static inline int val(uint64_t ds, int r, size_t i)
{
    uint64_t x = ds ^ ((uint64_t)(r + 1) << 44) ^ (uint64_t)i * 0x9E3779B97F4A7C15ULL;

    x ^= x >> 31;
    x *= 0xBF58476D1CE4E5B9ULL;
    x ^= x >> 29;
    return (int)(x % 9) - 4;
}

/* the input of type t (unsigned types shifted to [0, 8]) */
static inline int tval(int t, uint64_t ds, int r, size_t i)
{
    return val(ds, r, i) + (type_unsigned(t) ? 4 : 0);
}

/* the input of a product: {-2, -1, 1, 2}, unsigned {1, 2} */
static inline int pval(int t, uint64_t ds, int r, size_t i)
{
    static const int m[9] = { -2, -1, 1, 2, 1, -2, -1, 2, 1 };
    int v = m[val(ds, r, i) + 4];

    return type_unsigned(t) && v < 0 ? -v : v;
}
static inline int xval(int t, int prod, uint64_t ds, int r, size_t i)
{
    return prod ? pval(t, ds, r, i) : tval(t, ds, r, i);
}

static inline void put(int t, void *buf, size_t i, double v)
{
    switch (t) {
    case T_INT: ((int *)buf)[i] = (int)v; break;
    case T_FLOAT: ((float *)buf)[i] = (float)v; break;
    case T_DOUBLE: ((double *)buf)[i] = v; break;
    case T_I8: ((int8_t *)buf)[i] = (int8_t)v; break;
    case T_U16: ((uint16_t *)buf)[i] = (uint16_t)v; break;
    case T_I64: ((int64_t *)buf)[i] = (int64_t)v; break;
    case T_U8: ((uint8_t *)buf)[i] = (uint8_t)v; break;
    case T_I16: ((int16_t *)buf)[i] = (int16_t)v; break;
    case T_U32: ((uint32_t *)buf)[i] = (uint32_t)v; break;
    case T_F16: ((uint16_t *)buf)[i] = exact_to_half(v, 0); break;
    case T_BF16: ((uint16_t *)buf)[i] = exact_to_half(v, 1); break;
    default: ((uint64_t *)buf)[i] = (uint64_t)v; break;
    }
}

static inline double get(int t, const void *buf, size_t i)
{
    switch (t) {
    case T_INT: return ((const int *)buf)[i];
    case T_FLOAT: return ((const float *)buf)[i];
    case T_DOUBLE: return ((const double *)buf)[i];
    case T_I8: return ((const int8_t *)buf)[i];
    case T_U16: return ((const uint16_t *)buf)[i];
    case T_I64: return (double)((const int64_t *)buf)[i];
    case T_U8: return ((const uint8_t *)buf)[i];
    case T_I16: return ((const int16_t *)buf)[i];
    case T_U32: return ((const uint32_t *)buf)[i];
    case T_F16: return exact_from_half(((const uint16_t *)buf)[i], 0);
    case T_BF16: return exact_from_half(((const uint16_t *)buf)[i], 1);
    default: return (double)((const uint64_t *)buf)[i];
    }
}

/* Element i of rank's output of a call on p ranks with count elements per block (allreduce: in all),
 * data seed ds: the host reference over the ranks' inputs (sum = 1: the sum, 0: the max, 2: the min,
 * 3: the product, 8-bit types wrapped; allgather: the owner's). */
static inline double exact_want(int coll, int t, int sum, uint64_t ds, int rank, int p, size_t count, size_t i)
{
    size_t gi = coll == C_RSB ? (size_t)rank * count + i : i;
    double want;

    if (coll == C_AG) {
        return tval(t, ds, (int)(i / count), i % count);
    }
    if (sum == 3) {
        int64_t pr = 1;

        for (int r = 0; r < p; r++) pr *= pval(t, ds, r, gi);
        return t == T_I8 ? (double)(int8_t)(uint8_t)(pr & 0xff) : t == T_U8 ? (double)(uint8_t)(pr & 0xff) : (double)pr;
    }
    want = tval(t, ds, 0, gi);
    for (int r = 1; r < p; r++) {
        double x = tval(t, ds, r, gi);

        want = sum == 1 ? want + x : sum == 2 ? (x < want ? x : want) : (x > want ? x : want);
    }
    return want;
}

/* The first of the n output elements that differs from exact_want (its value and the reference in
 * *got_p / *want_p), or n when all match. */
static inline size_t exact_first_bad(int coll, int t, int sum, uint64_t ds, int rank, int p, size_t count, const void *out,
                                     size_t n, double *got_p, double *want_p)
{
    for (size_t i = 0; i < n; i++) {
        double got = get(t, out, i), want = exact_want(coll, t, sum, ds, rank, p, count, i);

        if (got != want) {
            *got_p = got;
            *want_p = want;
            return i;
        }
    }
    return n;
}

/* One call of coll on comm (rank of p) with this rank's fresh inputs (seed ds) from host buffer
 * h_in into device buffers d_s / d_r: the receive buffer and guard elements after it poisoned
 * with pv first, the input placed in d_r (in place: allgather at the own block) or d_s. Needs
 * tests/harness.h and the CUDA runtime before this header. Returns the MPI return code. */
static inline int exact_run(MPI_Comm comm, int coll, int t, MPI_Op op, int inplace, size_t count, int rank, int p,
                            uint64_t ds, unsigned char pv, size_t guard, void *h_in, unsigned char *d_s,
                            unsigned char *d_r)
{
    size_t es = type_size(t), in_n = coll == C_RSB ? count * (size_t)p : count;
    size_t out_n = coll == C_AG ? count * (size_t)p : count, buf_n = inplace && in_n > out_n ? in_n : out_n;
    const void *sbuf = d_s;

    for (size_t i = 0; i < in_n; i++) put(t, h_in, i, xval(t, op == MPI_PROD, ds, rank, i));
    TST_CUDA(cudaMemset(d_r, pv, (buf_n + guard) * es));
    if (inplace) {
        size_t off = coll == C_AG ? (size_t)rank * count * es : 0;

        TST_CUDA(cudaMemcpy(d_r + off, h_in, in_n * es, cudaMemcpyHostToDevice));
        sbuf = MPI_IN_PLACE;
    } else {
        TST_CUDA(cudaMemcpy(d_s, h_in, in_n * es, cudaMemcpyHostToDevice));
    }
    switch (coll) {
    case C_AR: return MPI_Allreduce(sbuf, d_r, (int)count, mpi_type(t), op, comm);
    case C_AG: return MPI_Allgather(sbuf, (int)count, mpi_type(t), d_r, (int)count, mpi_type(t), comm);
    default: return MPI_Reduce_scatter_block(sbuf, d_r, (int)count, mpi_type(t), op, comm);
    }
}

#endif
