/*
 * mpi_half: half-precision reductions on host buffers. TLMPI_BFLOAT16 and TLMPI_FLOAT16 (and,
 * where the MPI defines it, MPIX_C_FLOAT16, on which MPICH 4.0.2 itself aborts for any built-in
 * op) with MPI_SUM, MPI_MIN, MPI_MAX through MPI_Allreduce and MPI_Reduce_scatter_block, in place
 * and not. tlmpi swaps in its own MPI_Op for these (path HOSTOP).
 *
 * Reference: every rank generates every rank's inputs (random normal half values of both signs,
 * from one shared random stream) and computes the exact result in double. MIN/MAX must match
 * exactly; a SUM of P values, rounded to the half type after each of the P-1 additions, must be
 * within (P-1) * u * sum(|x_i|) of the exact sum (u = 2^-11 for binary16, 2^-8 for bfloat16).
 * Also checked: every rank got the same bits, outputs are fully written (poisoned first), nothing
 * is written past the result, MPIX_C_FLOAT16 gives the same bits as TLMPI_FLOAT16 on the same data,
 * and tlmpi_get_stats shows each call once on the HOSTOP path.
 */
#include "config.h"
#include "tlmpi.h"
#include "harness.h"

#include <math.h>

enum { T_BF16, T_F16 };
enum { RSB, AR };
#define GUARD 8

typedef struct {
    MPI_Datatype dt;
    const char *name;
    int kind;
} htype_t;

static uint64_t hostop_calls[2];
static double max_rel[2];

static double half_to_double(uint16_t h, int kind)
{
    int s = h >> 15, e, m;
    double v;

    if (kind == T_BF16) {
        uint32_t bits = (uint32_t)h << 16;
        float f;

        memcpy(&f, &bits, 4);
        return f;
    }
    e = (h >> 10) & 0x1f;
    m = h & 0x3ff;
    if (e == 0x1f) {
        v = m ? NAN : INFINITY;
    } else if (e == 0) {
        v = ldexp(m, -24); /* subnormal */
    } else {
        v = ldexp(1024 + m, e - 25);
    }
    return s ? -v : v;
}

/* A random normal value with exponent in [-4, 4], either sign. */
static uint16_t rand_half(int kind)
{
    uint16_t s = (uint16_t)(tst_rand() >> 63) << 15;
    int e = (int)tst_rand_range(-4, 4);

    if (kind == T_BF16) {
        return s | (uint16_t)((e + 127) << 7) | (uint16_t)(tst_rand() >> 57);
    }
    return s | (uint16_t)((e + 15) << 10) | (uint16_t)(tst_rand() >> 54);
}

static void run_case(const htype_t *t, MPI_Op op, const char *opname, int coll, int inplace, int count,
                     uint16_t *out_copy)
{
    int P = tst_size, me = tst_rank, r, i, rc, n_in = coll == RSB ? count * P : count;
    uint16_t *inputs = tst_malloc((size_t)P * (size_t)n_in * 2), *buf, *sbuf, poison;
    size_t buf_elems = (size_t)(inplace ? n_in : count) + GUARD;
    double u = t->kind == T_BF16 ? ldexp(1, -8) : ldexp(1, -11);
    char what[160], e0[MPI_MAX_ERROR_STRING + 40];
    uint64_t h = 1469598103934665603ULL, hmin, hmax;

    snprintf(what, sizeof(what), "%s %s %s inplace=%d count=%d", coll == AR ? "Allreduce" : "Reduce_scatter_block",
             t->name, opname, inplace, count);
    for (i = 0; i < P * n_in; i++) {
        inputs[i] = rand_half(t->kind);
    }
    poison = (uint16_t)(0x7e00 | (tst_rand() >> 58)); /* a NaN pattern in both formats */
    buf = tst_malloc(buf_elems * 2);
    sbuf = tst_malloc((size_t)n_in * 2 + 2);
    for (i = 0; i < (int)buf_elems; i++) {
        buf[i] = poison;
    }
    memcpy(sbuf, inputs + (size_t)me * (size_t)n_in, (size_t)n_in * 2);
    if (inplace) {
        memcpy(buf, sbuf, (size_t)n_in * 2);
    }
    if (coll == AR) {
        rc = MPI_Allreduce(inplace ? MPI_IN_PLACE : sbuf, buf, count, t->dt, op, MPI_COMM_WORLD);
    } else {
        rc = MPI_Reduce_scatter_block(inplace ? MPI_IN_PLACE : sbuf, buf, count, t->dt, op, MPI_COMM_WORLD);
    }
    TST_CHECK(rc == MPI_SUCCESS, "%s: rc %s", what, tst_err_string(rc, e0));
    if (rc == MPI_SUCCESS) {
        hostop_calls[coll]++;
    }
    for (i = 0; i < GUARD; i++) {
        TST_CHECK(buf[buf_elems - GUARD + (size_t)i] == poison, "%s: written past the result", what);
    }
    /* compare with the exact result */
    for (i = 0; i < count && rc == MPI_SUCCESS; i++) {
        int idx = (coll == RSB ? me * count : 0) + i;
        double exact = 0, abs_sum = 0, got = half_to_double(buf[i], t->kind), x;

        for (r = 0; r < P; r++) {
            x = half_to_double(inputs[(size_t)r * (size_t)n_in + (size_t)idx], t->kind);
            abs_sum += fabs(x);
            if (r == 0 || op == MPI_SUM) {
                exact = r == 0 ? x : exact + x;
            } else if (op == MPI_MIN) {
                exact = x < exact ? x : exact;
            } else {
                exact = x > exact ? x : exact;
            }
        }
        if (op == MPI_SUM) {
            double err = fabs(got - exact), tol = (P - 1) * u * abs_sum;

            if (abs_sum > 0 && err / abs_sum > max_rel[t->kind]) {
                max_rel[t->kind] = err / abs_sum;
            }
            TST_CHECK(err <= tol && !isnan(got), "%s: element %d = %.8g (0x%04x), exact %.8g, error %.3g > %.3g",
                      what, i, got, buf[i], exact, err, tol);
        } else {
            TST_CHECK(got == exact, "%s: element %d = %.8g (0x%04x), expected %.8g", what, i, got, buf[i], exact);
        }
        h = (h ^ buf[i]) * 1099511628211ULL;
    }
    /* Allreduce: every rank must hold the same bits */
    if (coll == AR) {
        hmin = hmax = h;
        PMPI_Allreduce(MPI_IN_PLACE, &hmin, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
        PMPI_Allreduce(MPI_IN_PLACE, &hmax, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
        TST_CHECK(hmin == hmax, "%s: ranks hold different results", what);
    }
    if (out_copy) {
        memcpy(out_copy, buf, (size_t)count * 2);
    }
    free(sbuf);
    free(buf);
    free(inputs);
}

int main(int argc, char **argv)
{
    static const int counts[] = { 1, 3, 100, 1000 };
    htype_t types[3];
    MPI_Op ops[3] = { MPI_SUM, MPI_MIN, MPI_MAX };
    const char *opnames[3] = { "SUM", "MIN", "MAX" };
    int n_types = 2, ti, oi, coll, inplace, n = 0, c;
    tlmpi_stat_t s;

    tst_init("mpi_half", &argc, &argv);
    tlmpi_reset_stats();
    types[0].dt = TLMPI_BFLOAT16;
    types[0].name = "TLMPI_BFLOAT16";
    types[0].kind = T_BF16;
    types[1].dt = TLMPI_FLOAT16;
    types[1].name = "TLMPI_FLOAT16";
    types[1].kind = T_F16;
#ifdef MPIX_C_FLOAT16
    types[2].dt = MPIX_C_FLOAT16;
    types[2].name = "MPIX_C_FLOAT16";
    types[2].kind = T_F16;
    n_types = 3;
#endif
    TST_CHECK(types[0].dt != MPI_DATATYPE_NULL && types[1].dt != MPI_DATATYPE_NULL,
              "TLMPI_BFLOAT16/TLMPI_FLOAT16 are MPI_DATATYPE_NULL");
    tst_rng_sync();
    for (ti = 0; ti < n_types; ti++) {
        for (oi = 0; oi < 3; oi++) {
            for (coll = RSB; coll <= AR; coll++) {
                for (inplace = 0; inplace < 2; inplace++) {
                    run_case(&types[ti], ops[oi], opnames[oi], coll, inplace,
                             counts[(n++ + (tst_size > 2)) % 4], NULL);
                }
            }
        }
    }
#ifdef MPIX_C_FLOAT16
    /* MPIX_C_FLOAT16 and TLMPI_FLOAT16 use the same op: same data must give the same bits */
    {
        uint16_t a[257], b[257];
        uint64_t save = tst_rng_state;

        run_case(&types[2], MPI_SUM, "SUM", AR, 0, 257, a);
        tst_rng_state = save;
        run_case(&types[1], MPI_SUM, "SUM", AR, 0, 257, b);
        TST_CHECK(memcmp(a, b, sizeof(a)) == 0, "MPIX_C_FLOAT16 and TLMPI_FLOAT16 sums differ");
    }
#endif
    for (c = 0; c < 2; c++) {
        tlmpi_coll_t id = c == RSB ? TLMPI_COLL_REDUCE_SCATTER_BLOCK : TLMPI_COLL_ALLREDUCE;
        int p;

        for (p = 0; p < TLMPI_PATH_COUNT; p++) {
            tlmpi_get_stats(id, (tlmpi_path_t)p, &s);
            if (p == TLMPI_PATH_HOSTOP) {
                TST_CHECK(s.calls == hostop_calls[c], "stats: %s hostop calls %llu, expected %llu",
                          tlmpi_coll_name(id), (unsigned long long)s.calls, (unsigned long long)hostop_calls[c]);
            } else {
                TST_CHECK(s.calls == 0, "stats: %s took path %s %llu times", tlmpi_coll_name(id),
                          tlmpi_path_name((tlmpi_path_t)p), (unsigned long long)s.calls);
            }
        }
    }
    PMPI_Allreduce(MPI_IN_PLACE, max_rel, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (tst_rank == 0) {
        printf("mpi_half: %d types%s; max SUM error relative to sum|x|: bf16 %.3g (2^%.1f), f16 %.3g (2^%.1f)\n",
               n_types, n_types == 3 ? " (with MPIX_C_FLOAT16)" : "", max_rel[T_BF16],
               max_rel[T_BF16] > 0 ? log2(max_rel[T_BF16]) : -INFINITY, max_rel[T_F16],
               max_rel[T_F16] > 0 ? log2(max_rel[T_F16]) : -INFINITY);
    }
    return tst_finish();
}
