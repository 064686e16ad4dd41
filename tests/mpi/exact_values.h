/*
 * exact_values.h: the inputs and element access of the MPI tests that check device-buffer
 * collectives exactly (mpi_threads.c, mpi_hier.c): small integers in [-4, 4] that every rank can
 * compute for every rank, exact in int, float and double whatever the order of the summation.
 */
#ifndef TLMPI_TESTS_EXACT_VALUES_H
#define TLMPI_TESTS_EXACT_VALUES_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

enum { C_AR, C_AG, C_RSB, NCOLL }; /* allreduce, allgather, reduce_scatter_block */
enum { T_INT, T_FLOAT, T_DOUBLE, NTYPES };
static const char *const type_name[NTYPES] = { "int", "float", "double" };

static inline MPI_Datatype mpi_type(int t) { return t == T_INT ? MPI_INT : t == T_FLOAT ? MPI_FLOAT : MPI_DOUBLE; }
static inline size_t type_size(int t) { return t == T_DOUBLE ? 8 : 4; }

/* input of rank r, element i, of the call with data seed ds: an integer in [-4, 4] */
static inline int val(uint64_t ds, int r, size_t i)
{
    uint64_t x = ds ^ ((uint64_t)(r + 1) << 44) ^ (uint64_t)i * 0x9E3779B97F4A7C15ULL;

    x ^= x >> 31;
    x *= 0xBF58476D1CE4E5B9ULL;
    x ^= x >> 29;
    return (int)(x % 9) - 4;
}

static inline void put(int t, void *buf, size_t i, double v)
{
    if (t == T_INT) ((int *)buf)[i] = (int)v;
    else if (t == T_FLOAT) ((float *)buf)[i] = (float)v;
    else ((double *)buf)[i] = v;
}

static inline double get(int t, const void *buf, size_t i)
{
    return t == T_INT ? ((const int *)buf)[i] : t == T_FLOAT ? ((const float *)buf)[i] : ((const double *)buf)[i];
}

/* Element i of rank's output of a call on p ranks with count elements per block (allreduce: in all),
 * data seed ds: the host reference (sum or max over the ranks' inputs; allgather: the owner's). */
static inline double exact_want(int coll, int sum, uint64_t ds, int rank, int p, size_t count, size_t i)
{
    size_t gi = coll == C_RSB ? (size_t)rank * count + i : i;
    double want;

    if (coll == C_AG) {
        return val(ds, (int)(i / count), i % count);
    }
    want = val(ds, 0, gi);
    for (int r = 1; r < p; r++) {
        double x = val(ds, r, gi);

        want = sum ? want + x : x > want ? x : want;
    }
    return want;
}

/* The first of the n output elements that differs from exact_want (its value and the reference in
 * *got_p / *want_p), or n when all match. */
static inline size_t exact_first_bad(int coll, int t, int sum, uint64_t ds, int rank, int p, size_t count, const void *out,
                                     size_t n, double *got_p, double *want_p)
{
    for (size_t i = 0; i < n; i++) {
        double got = get(t, out, i), want = exact_want(coll, sum, ds, rank, p, count, i);

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

    for (size_t i = 0; i < in_n; i++) put(t, h_in, i, val(ds, rank, i));
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
