/*
 * GPU tests of tlmpi's device-buffer tiers (run by tests/gpu/run.sh and, under make check,
 * tests/gpu/check_gpu.sh). Every case: fresh pseudo-random inputs (a hash of seed, case, rank,
 * index, so every rank can compute every rank's input and the reference on the host without
 * communication), device outputs poisoned first, the result compared with an f64/exact host
 * reference, the path taken checked against tlmpi's counters.
 *
 *   gpu_coll --probe          exit 0 if a CUDA device is usable, else 77 (no MPI)
 *   gpu_coll --guard-selftest pass a device pointer to PMPI_Allreduce directly: the guard
 *                             library (LD_PRELOAD libtlmpi_guard.so) must abort
 *   gpu_coll --verify-mismatch  rank 0 device, others host memory under TLMPI_VERIFY_UNIFORM=1:
 *                             tlmpi must abort with its "ranks disagree" message
 *   gpu_coll [--quick]        the suite (--quick: no 1 MiB / 256 MiB sizes, 200 back-to-back calls)
 *
 * Failures are reported and summed over ranks by the tests' harness (tests/harness.h); the case
 * values derive from its seed (TLMPI_TEST_SEED repeats a run). Values and the host reference:
 * tests/gpu/gpu_values.h (shared with gpu_node.c).
 */
#include "config.h"
#include "tlmpi.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TST_MAX_PRINT 30 /* failure lines printed per rank */
#include "harness.h"

#include "gpu_values.h"

enum { C_AR, C_RSB, C_AG, C_N };
static const char *coll_names[C_N] = { "allreduce", "reduce_scatter_block", "allgather" };
static const tlmpi_coll_t coll_ids[C_N] = { TLMPI_COLL_ALLREDUCE, TLMPI_COLL_REDUCE_SCATTER_BLOCK, TLMPI_COLL_ALLGATHER };

static int g_rank, g_size, g_quick;
static long g_cases;
static unsigned long long g_seed; /* from the harness's seed, the same on every rank */
static int g_shared_gpu;
static int g_pool;                  /* device send buffer carved from the receive buffer's allocation */
static char *d_s, *d_r;             /* device scratch */
static size_t d_bytes;
static char *h_in, *h_out, *h_exp;  /* host scratch */

static long long stat_calls(tlmpi_coll_t c, tlmpi_path_t p)
{
    tlmpi_stat_t s;
    tlmpi_get_stats(c, p, &s);
    return (long long)s.calls;
}

static void fail(const char *what)
{
    TST_FAIL("%s", what);
}

/*
 * One case on comm: coll, type, op, in-place, count (elements per rank block), tier name.
 * smem/rmem: 1 = device, 0 = host (mixed-pair cases).
 */
/* Do two ranks of comm use one GPU (then auto must not pick NCCL)? Asked per call: sub-communicators
 * differ (a one-rank half never shares), and comm handles are reused after MPI_Comm_free. */
static int comm_shared_gpu(MPI_Comm comm)
{
    char bus[64] = "", *all;
    int p, i, j, dev = -1, shared = 0;

    MPI_Comm_size(comm, &p);
    if (p == 1) return 0;
    if (cudaGetDevice(&dev) == cudaSuccess) cudaDeviceGetPCIBusId(bus, 64, dev);
    all = malloc((size_t)p * 64);
    MPI_Allgather(bus, 64, MPI_CHAR, all, 64, MPI_CHAR, comm);
    for (i = 0; i < p; i++)
        for (j = 0; j < i; j++)
            if (!strcmp(all + 64 * i, all + 64 * j)) shared = 1;
    free(all);
    return shared;
}

static void run_case(MPI_Comm comm, int coll, const dtinfo_t *t, int op, int inplace, size_t count,
                     const char *tier, int sdev, int rdev)
{
    int rank, p, rc;
    unsigned long long cs = ++g_seed;
    size_t esz = (size_t)t->size, in_n, out_n, i, bad = 0;
    char *sbuf, *rbuf, msg[512];
    long long before[TLMPI_PATH_COUNT], after[TLMPI_PATH_COUNT];
    tlmpi_path_t k;
    double worst = 0;

    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &p);
    in_n = coll == C_AR ? count : coll == C_RSB ? count * p : count;
    out_n = coll == C_AR ? count : coll == C_RSB ? count : count * p;
    if ((in_n + out_n) * esz + 4096 > d_bytes) {
        fprintf(stderr, "case too large\n");
        MPI_Abort(MPI_COMM_WORLD, 4);
    }
    /* own input on the host */
    for (i = 0; i < in_n; i++) put(t, h_in, i, val(t, cs, rank, i));
    char *dsend = g_pool ? d_r + d_bytes / 2 : d_s;
    if (g_pool && (out_n > in_n ? out_n : in_n) * esz > d_bytes / 2) {
        fprintf(stderr, "pool case too large\n");
        MPI_Abort(MPI_COMM_WORLD, 4);
    }
    sbuf = sdev ? dsend : h_in;
    rbuf = rdev ? d_r : h_out;
    /* poison the output, then place the input */
    if (rdev) TST_CUDA(cudaMemset(d_r, 0xA5, out_n * esz > in_n * esz ? out_n * esz : in_n * esz));
    else memset(h_out, 0xA5, (out_n > in_n ? out_n : in_n) * esz);
    if (inplace) {
        size_t off = coll == C_AG ? (size_t)rank * count * esz : 0;
        if (rdev) TST_CUDA(cudaMemcpy(d_r + off, h_in, in_n * esz, cudaMemcpyHostToDevice));
        else memcpy(h_out + off, h_in, in_n * esz);
        sbuf = MPI_IN_PLACE;
    } else if (sdev) {
        TST_CUDA(cudaMemcpy(dsend, h_in, in_n * esz, cudaMemcpyHostToDevice));
    }
    if (tlmpi_config_set("TIER", tier) != TLMPI_OK) {
        fprintf(stderr, "tlmpi_config_set TIER %s failed\n", tier);
        MPI_Abort(MPI_COMM_WORLD, 5);
    }
    for (k = 0; k < TLMPI_PATH_COUNT; k++) before[k] = stat_calls(coll_ids[coll], k);
    switch (coll) {
    case C_AR: rc = MPI_Allreduce(sbuf, rbuf, (int)count, t->dt, ops_of(op), comm); break;
    case C_RSB: rc = MPI_Reduce_scatter_block(sbuf, rbuf, (int)count, t->dt, ops_of(op), comm); break;
    default: rc = MPI_Allgather(sbuf, (int)count, t->dt, rbuf, (int)count, t->dt, comm); break;
    }
    for (k = 0; k < TLMPI_PATH_COUNT; k++) after[k] = stat_calls(coll_ids[coll], k);
    g_cases++;
    snprintf(msg, sizeof(msg), "%s %s %s inplace=%d count=%zu tier=%s np=%d s%s/r%s", coll_names[coll], t->name,
             coll == C_AG ? "-" : op_names[op], inplace, count, tier, p, sdev ? "dev" : "host", rdev ? "dev" : "host");
    if (rc != MPI_SUCCESS) {
        char m2[600];
        snprintf(m2, sizeof(m2), "%s: rc %d", msg, rc);
        fail(m2);
        return;
    }
    /* which path ran */
    {
        tlmpi_path_t took = TLMPI_PATH_COUNT;
        for (k = 0; k < TLMPI_PATH_COUNT; k++) if (after[k] != before[k]) took = k;
        int want_nccl = (coll == C_AG || (t->nccl)) && (sdev || inplace) && rdev;
        tlmpi_path_t want;
        if (count == 0 || (!sdev && !rdev)) want = TLMPI_PATH_PASSTHROUGH;
        else if (!strcmp(tier, "nccl")) want = want_nccl ? TLMPI_PATH_NCCL : TLMPI_PATH_STAGING;
        else if (!strcmp(tier, "staging")) want = TLMPI_PATH_STAGING;
        else if (p == 1 && (sdev || inplace) && rdev) want = TLMPI_PATH_SELF; /* one rank: a device copy */
        else want = (want_nccl && !(g_shared_gpu && comm_shared_gpu(comm))) ? TLMPI_PATH_NCCL : TLMPI_PATH_STAGING;
        if (took != want) {
            char m2[700];
            snprintf(m2, sizeof(m2), "%s: took path %s, expected %s", msg, tlmpi_path_name(took), tlmpi_path_name(want));
            fail(m2);
        }
    }
    if (rdev && out_n) TST_CUDA(cudaMemcpy(h_out, d_r, out_n * esz, cudaMemcpyDeviceToHost));
    for (i = 0; i < out_n; i++) {
        double e, tol, got = get(t, h_out, i);
        if (coll == C_AG) {
            e = val(t, cs, (int)(i / count), i % count);
            tol = 0;
        } else {
            size_t gi = coll == C_RSB ? (size_t)rank * count + i : i;
            e = ref(t, cs, op, p, gi, &tol);
        }
        if (!(fabs(got - e) <= tol)) {
            if (!bad) {
                char m2[800];
                snprintf(m2, sizeof(m2), "%s: element %zu = %.9g, expected %.9g (tol %.3g)", msg, i, got, e, tol);
                fail(m2);
            }
            bad++;
        }
        if (fabs(got - e) > worst) worst = fabs(got - e);
    }
}

/* large f32 sum allreduce (pattern values: exact in f32, reference on the fly) */
static void run_large(MPI_Comm comm, size_t bytes, const char *tier)
{
    size_t n = bytes / 4, i;
    float *h = malloc(bytes), *d;
    int rank, p, r;
    long long bad = 0;
    double t0;
    char msg[256];

    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &p);
    TST_CUDA(cudaMalloc((void **)&d, bytes));
    for (i = 0; i < n; i++) h[i] = (float)((long)((i * 31 + (size_t)rank * 17) % 64) - 32);
    TST_CUDA(cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice));
    tlmpi_config_set("TIER", tier);
    MPI_Barrier(comm);
    t0 = MPI_Wtime();
    if (MPI_Allreduce(MPI_IN_PLACE, d, (int)n, MPI_FLOAT, MPI_SUM, comm) != MPI_SUCCESS) fail("large allreduce rc");
    t0 = MPI_Wtime() - t0;
    memset(h, 0, bytes);
    TST_CUDA(cudaMemcpy(h, d, bytes, cudaMemcpyDeviceToHost));
    for (i = 0; i < n; i++) {
        float e = 0;
        for (r = 0; r < p; r++) e += (float)((long)((i * 31 + (size_t)r * 17) % 64) - 32);
        if (h[i] != e) bad++;
    }
    g_cases++;
    if (bad) {
        snprintf(msg, sizeof(msg), "allreduce f32 sum %zu MiB tier=%s: %lld wrong elements", bytes >> 20, tier, bad);
        fail(msg);
    }
    if (g_rank == 0) printf("large: allreduce f32 sum %zu MiB in place tier=%s np=%d: %.3f s\n", bytes >> 20, tier, p, t0);
    TST_CUDA(cudaFree(d));
    free(h);
}

static dtinfo_t g_types[16];
static int g_ntypes;

static void add_type(const char *name, MPI_Datatype dt, int kind, int size, int nccl)
{
    g_types[g_ntypes++] = (dtinfo_t){ name, dt, kind, size, nccl };
}

/* derived types, user ops, differing send/recv types: the staging tier's generic path */
static void user_sum_f64(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    double *a = in, *b = inout;
    int i;
    (void)dt;
    for (i = 0; i < *len; i++) b[i] += a[i];
}

/* user op on the stride-2 float vector of VEC_N elements (MPICH rejects built-in ops on derived types) */
#define VEC_N 1000
static void user_vec_sum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    float *a = in, *b = inout;
    int k, j;
    (void)dt;
    for (k = 0; k < *len; k++)
        for (j = 0; j < VEC_N; j++) b[(size_t)k * 2 * VEC_N + 2 * j] += a[(size_t)k * 2 * VEC_N + 2 * j];
}

static void special_cases(MPI_Comm comm, const char *tier)
{
    int rank, p, i, j, n = VEC_N;
    MPI_Datatype vec, c3;
    MPI_Op uop, vop;
    float *hf;
    double *hd;
    int *hi;
    char msg[256];

    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &p);
    tlmpi_config_set("TIER", tier);
    /* 1. vector of floats (stride 2): gaps must keep their poison */
    MPI_Type_vector(n, 1, 2, MPI_FLOAT, &vec);
    MPI_Type_commit(&vec);
    hf = malloc(2 * n * sizeof(float));
    for (i = 0; i < 2 * n; i++) hf[i] = (i & 1) ? -7.0f : (float)(rank + i);
    TST_CUDA(cudaMemcpy(d_s, hf, 2 * n * sizeof(float), cudaMemcpyHostToDevice));
    TST_CUDA(cudaMemset(d_r, 0x7f, 2 * n * sizeof(float)));
    MPI_Op_create(user_vec_sum, 1, &vop);
    if (MPI_Allreduce(d_s, d_r, 1, vec, vop, comm) != MPI_SUCCESS) fail("vector allreduce rc");
    MPI_Op_free(&vop);
    TST_CUDA(cudaMemcpy(hf, d_r, 2 * n * sizeof(float), cudaMemcpyDeviceToHost));
    for (i = 0; i < 2 * n; i++) {
        float e;
        uint32_t poison = 0x7f7f7f7f;
        if (i & 1) {
            memcpy(&e, &poison, 4);
            if (memcmp(&hf[i], &e, 4)) { snprintf(msg, sizeof msg, "vector allreduce tier=%s: gap %d overwritten", tier, i); fail(msg); break; }
        } else {
            e = 0;
            for (j = 0; j < p; j++) e += (float)(j + i);
            if (hf[i] != e) { snprintf(msg, sizeof msg, "vector allreduce tier=%s: elem %d %g != %g", tier, i, hf[i], e); fail(msg); break; }
        }
    }
    g_cases++;
    MPI_Type_free(&vec);
    free(hf);
    /* 2. user-defined op on doubles, in place */
    MPI_Op_create(user_sum_f64, 1, &uop);
    hd = malloc(n * sizeof(double));
    for (i = 0; i < n; i++) hd[i] = rank * 0.5 + i;
    TST_CUDA(cudaMemcpy(d_r, hd, n * sizeof(double), cudaMemcpyHostToDevice));
    if (MPI_Allreduce(MPI_IN_PLACE, d_r, n, MPI_DOUBLE, uop, comm) != MPI_SUCCESS) fail("user-op allreduce rc");
    TST_CUDA(cudaMemcpy(hd, d_r, n * sizeof(double), cudaMemcpyDeviceToHost));
    for (i = 0; i < n; i++) {
        double e = 0;
        for (j = 0; j < p; j++) e += j * 0.5 + i;
        if (hd[i] != e) { snprintf(msg, sizeof msg, "user-op allreduce tier=%s: elem %d %g != %g", tier, i, hd[i], e); fail(msg); break; }
    }
    g_cases++;
    MPI_Op_free(&uop);
    free(hd);
    /* 3. allgather: send 1 x contiguous(3 int), receive 3 x MPI_INT (differing signatures) */
    MPI_Type_contiguous(3, MPI_INT, &c3);
    MPI_Type_commit(&c3);
    hi = malloc(3 * p * sizeof(int));
    for (i = 0; i < 3; i++) hi[i] = rank * 100 + i;
    TST_CUDA(cudaMemcpy(d_s, hi, 3 * sizeof(int), cudaMemcpyHostToDevice));
    TST_CUDA(cudaMemset(d_r, 0xA5, 3 * p * sizeof(int)));
    if (MPI_Allgather(d_s, 1, c3, d_r, 3, MPI_INT, comm) != MPI_SUCCESS) fail("allgather c3 rc");
    TST_CUDA(cudaMemcpy(hi, d_r, 3 * p * sizeof(int), cudaMemcpyDeviceToHost));
    for (i = 0; i < 3 * p; i++) {
        if (hi[i] != (i / 3) * 100 + i % 3) { snprintf(msg, sizeof msg, "allgather c3 tier=%s: elem %d", tier, i); fail(msg); break; }
    }
    g_cases++;
    /* 4. the same with c3 on both sides (contiguous derived: NCCL moves it as bytes) */
    for (i = 0; i < 3; i++) hi[i] = rank * 100 + i;
    TST_CUDA(cudaMemcpy(d_s, hi, 3 * sizeof(int), cudaMemcpyHostToDevice));
    TST_CUDA(cudaMemset(d_r, 0xA5, 3 * p * sizeof(int)));
    if (MPI_Allgather(d_s, 1, c3, d_r, 1, c3, comm) != MPI_SUCCESS) fail("allgather c3/c3 rc");
    TST_CUDA(cudaMemcpy(hi, d_r, 3 * p * sizeof(int), cudaMemcpyDeviceToHost));
    for (i = 0; i < 3 * p; i++) {
        if (hi[i] != (i / 3) * 100 + i % 3) { snprintf(msg, sizeof msg, "allgather c3/c3 tier=%s: elem %d", tier, i); fail(msg); break; }
    }
    g_cases++;
    MPI_Type_free(&c3);
    free(hi);
}

static int guard_selftest(void)
{
    float *d;
    tst_init("gpu_coll --guard-selftest", NULL, NULL);
    TST_CUDA(cudaMalloc((void **)&d, 64));
    fprintf(stderr, "guard self-test: passing a device pointer to PMPI_Allreduce directly\n");
    PMPI_Allreduce(MPI_IN_PLACE, d, 4, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    fprintf(stderr, "guard self-test: NOT caught (the guard library is not active)\n");
    MPI_Finalize();
    return 1;
}

/* TLMPI_VERIFY_UNIFORM=1 must abort when rank 0 passes device memory and the others host memory */
static int verify_mismatch(void)
{
    float *d, h[4] = { 1, 2, 3, 4 };
    void *buf;
    tst_init("gpu_coll --verify-mismatch", NULL, NULL);
    g_rank = tst_rank;
    TST_CUDA(cudaMalloc((void **)&d, sizeof(h)));
    TST_CUDA(cudaMemcpy(d, h, sizeof(h), cudaMemcpyHostToDevice));
    tlmpi_config_set("VERIFY_UNIFORM", "1");
    buf = g_rank == 0 ? (void *)d : (void *)h;
    fprintf(stderr, "rank %d: verify-mismatch: allreduce on %s memory\n", g_rank, g_rank ? "host" : "device");
    MPI_Allreduce(MPI_IN_PLACE, buf, 4, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    fprintf(stderr, "rank %d: verify-mismatch: NOT caught\n", g_rank);
    MPI_Finalize();
    return 1;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    int ndev = 0, a, c, ti, op, ip, si, dev, nb2b;
    size_t sizes[8];
    int nsizes = 0;
    const char *tiers[3] = { "nccl", "staging", "auto" };
    double t0 = now();
    char bus[64], allbus[64 * 64];
    MPI_Comm half, dup;
    unsigned long *guard_count;
    long totals[2], fails = 0;

    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        (void)cudaGetLastError();
        if (argc > 1 && !strcmp(argv[1], "--probe")) return 77;
        fprintf(stderr, "SKIP: no CUDA device\n");
        return 77;
    }
    if (argc > 1 && !strcmp(argv[1], "--probe")) return 0;
    if (argc > 1 && !strcmp(argv[1], "--guard-selftest")) return guard_selftest();
    if (argc > 1 && !strcmp(argv[1], "--verify-mismatch")) return verify_mismatch();
    for (a = 1; a < argc; a++) if (!strcmp(argv[a], "--quick")) g_quick = 1;

    tst_init("gpu_coll", &argc, &argv);
    g_rank = tst_rank;
    g_size = tst_size;
    tst_rng_sync();
    g_seed = tst_rand();
    dev = g_rank % ndev;
    TST_CUDA(cudaSetDevice(dev));
    /* several ranks on one GPU? (then auto must not pick NCCL) */
    TST_CUDA(cudaDeviceGetPCIBusId(bus, 64, dev));
    MPI_Allgather(bus, 64, MPI_CHAR, allbus, 64, MPI_CHAR, MPI_COMM_WORLD);
    for (a = 0; a < g_size; a++) if (a != g_rank && !strcmp(allbus + 64 * a, bus)) g_shared_gpu = 1;
    MPI_Allreduce(MPI_IN_PLACE, &g_shared_gpu, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);

    add_type("f32", MPI_FLOAT, K_FLOAT, 4, 1);
    add_type("f64", MPI_DOUBLE, K_FLOAT, 8, 1);
    add_type("f16", TLMPI_FLOAT16, K_F16, 2, 1);
    add_type("bf16", TLMPI_BFLOAT16, K_BF16, 2, 1);
    add_type("i8", MPI_INT8_T, K_INT, 1, 1);
    add_type("u8", MPI_UINT8_T, K_UINT, 1, 1);
    add_type("i32", MPI_INT32_T, K_INT, 4, 1);
    add_type("u32", MPI_UINT32_T, K_UINT, 4, 1);
    add_type("i64", MPI_INT64_T, K_INT, 8, 1);
    add_type("u64", MPI_UINT64_T, K_UINT, 8, 1);
    add_type("i16", MPI_INT16_T, K_INT, 2, 0); /* NCCL lacks it: falls to staging */
#ifdef MPIX_C_FLOAT16
    add_type("mpix_f16", MPIX_C_FLOAT16, K_F16, 2, 1);
#endif
    sizes[nsizes++] = 0;
    sizes[nsizes++] = 1;
    sizes[nsizes++] = 7;
    sizes[nsizes++] = 4097;
    d_bytes = (size_t)(g_size + 1) * ((size_t)1 << 20) + (1 << 16);
    TST_CUDA(cudaMalloc((void **)&d_s, d_bytes));
    TST_CUDA(cudaMalloc((void **)&d_r, d_bytes));
    h_in = malloc(d_bytes);
    h_out = malloc(d_bytes);
    h_exp = malloc(d_bytes);
    if (g_rank == 0) printf("gpu_coll: np=%d devices=%d shared_gpu=%d quick=%d\n", g_size, ndev, g_shared_gpu, g_quick);

    /* the matrix: tier x coll x type x op x in-place x size */
    for (ti = 0; ti < 3; ti++) {
        double tt = now();
        long c0 = g_cases;
        for (c = 0; c < C_N; c++) {
            for (a = 0; a < g_ntypes; a++) {
                const dtinfo_t *t = &g_types[a];
                int nsz = nsizes + (g_quick ? 0 : 1);
                for (op = 0; op < (c == C_AG ? 1 : OP_N); op++) {
                    for (ip = 0; ip < 2; ip++) {
                        for (si = 0; si < nsz; si++) {
                            size_t n = si < nsizes ? sizes[si] : ((size_t)1 << 20) / (size_t)t->size;
                            run_case(MPI_COMM_WORLD, c, t, op, ip, n, tiers[ti], 1, 1);
                        }
                    }
                }
            }
        }
        /* mixed host/device pairs (staging serves them whatever the tier) */
        run_case(MPI_COMM_WORLD, C_AR, &g_types[0], OP_SUM, 0, 4097, tiers[ti], 0, 1);
        run_case(MPI_COMM_WORLD, C_AR, &g_types[0], OP_SUM, 0, 4097, tiers[ti], 1, 0);
        run_case(MPI_COMM_WORLD, C_RSB, &g_types[1], OP_MAX, 0, 777, tiers[ti], 0, 1);
        run_case(MPI_COMM_WORLD, C_RSB, &g_types[3], OP_SUM, 0, 777, tiers[ti], 1, 0);
        run_case(MPI_COMM_WORLD, C_AG, &g_types[6], OP_SUM, 0, 333, tiers[ti], 0, 1);
        run_case(MPI_COMM_WORLD, C_AG, &g_types[6], OP_SUM, 0, 333, tiers[ti], 1, 0);
        run_case(MPI_COMM_WORLD, C_AR, &g_types[0], OP_SUM, 1, 4097, tiers[ti], 0, 0); /* host in place */
        special_cases(MPI_COMM_WORLD, tiers[ti]);
        if (g_rank == 0) printf("tier %-7s: %ld cases, %.2f s\n", tiers[ti], g_cases - c0, now() - tt);
    }

    /* sub-communicators: halves (size 1 when np=2: a one-rank NCCL comm) and a dup */
    MPI_Comm_split(MPI_COMM_WORLD, g_rank % 2, g_rank, &half);
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    for (ti = 0; ti < 2; ti++) {
        MPI_Comm cm[2] = { half, dup };
        int k;
        for (k = 0; k < 2; k++) {
            run_case(cm[k], C_AR, &g_types[0], OP_SUM, 0, 4097, tiers[ti], 1, 1);
            run_case(cm[k], C_AR, &g_types[6], OP_MAX, 1, 7, tiers[ti], 1, 1);
            run_case(cm[k], C_AR, &g_types[3], OP_SUM, 0, 4097, tiers[ti], 1, 1);
            run_case(cm[k], C_RSB, &g_types[1], OP_SUM, 1, 1000, tiers[ti], 1, 1);
            run_case(cm[k], C_AG, &g_types[5], OP_SUM, 0, 4097, tiers[ti], 1, 1);
        }
    }
    MPI_Comm_free(&half);
    MPI_Comm_free(&dup);
    if (g_rank == 0) printf("sub-communicators done (%ld cases so far)\n", g_cases);

    /* Comm handles reused after MPI_Comm_free: tlmpi caches the last comm's state per thread, so a
     * stale entry would run on a freed NCCL comm or with the wrong size. The comm alternates between
     * all ranks and halves (so consecutive comms differ in size), freed after each use. */
    {
        long c0 = g_cases;
        for (a = 0; a < 16; a++) {
            MPI_Comm cm;
            MPI_Comm_split(MPI_COMM_WORLD, a % 2 ? g_rank % 2 : 0, g_rank, &cm);
            run_case(cm, C_AR, &g_types[0], OP_SUM, 0, 4097, tiers[(a / 2) % 3], 1, 1);
            run_case(cm, C_RSB, &g_types[6], OP_MAX, a % 3 == 0, 33, tiers[(a / 2) % 3], 1, 1);
            MPI_Comm_free(&cm);
        }
        if (g_rank == 0) printf("comm handle reuse: %ld cases\n", g_cases - c0);
    }

    /* A process driving two GPUs: buffers on another device than the one the communicator's NCCL
     * tier was created on (this rank's device, by the first call). tlmpi copies through that device;
     * before, the rank returned an error while its peers waited in NCCL. Needs two GPUs. */
    if (ndev >= 2) {
        MPI_Comm dc;
        char *save_s = d_s, *save_r = d_r, *o_s, *o_r;
        int other = (dev + 1) % ndev, cc;
        long c0 = g_cases;

        MPI_Comm_dup(MPI_COMM_WORLD, &dc);
        run_case(dc, C_AR, &g_types[0], OP_SUM, 0, 4097, "nccl", 1, 1);
        TST_CUDA(cudaSetDevice(other));
        TST_CUDA(cudaMalloc((void **)&o_s, d_bytes));
        TST_CUDA(cudaMalloc((void **)&o_r, d_bytes));
        TST_CUDA(cudaSetDevice(dev));
        d_s = o_s;
        d_r = o_r;
        for (cc = 0; cc < C_N; cc++) {
            for (ip = 0; ip < 2; ip++) {
                run_case(dc, cc, &g_types[0], OP_SUM, ip, 4097, "nccl", 1, 1);
                run_case(dc, cc, &g_types[3], OP_MAX, ip, 777, "nccl", 1, 1);
            }
        }
        d_s = save_s;
        d_r = save_r;
        TST_CUDA(cudaFree(o_s));
        TST_CUDA(cudaFree(o_r));
        MPI_Comm_free(&dc);
        if (g_rank == 0) printf("buffers on another GPU than the NCCL tier's: %ld cases\n", g_cases - c0);
    } else if (g_rank == 0) {
        printf("buffers on another GPU than the NCCL tier's: skipped (one GPU)\n");
    }

    /* send and receive buffers in one allocation (a framework's memory pool): one validated
     * classification answers both */
    g_pool = 1;
    for (ti = 0; ti < 3; ti++) {
        run_case(MPI_COMM_WORLD, C_AR, &g_types[0], OP_SUM, 0, 4097, tiers[ti], 1, 1);
        run_case(MPI_COMM_WORLD, C_RSB, &g_types[1], OP_MIN, 0, 1000, tiers[ti], 1, 1);
        run_case(MPI_COMM_WORLD, C_AG, &g_types[6], OP_SUM, 0, 333, tiers[ti], 1, 1);
        run_case(MPI_COMM_WORLD, C_AR, &g_types[0], OP_SUM, 0, 4097, tiers[ti], 0, 1);
    }
    g_pool = 0;

    /* back-to-back mixed calls: tiers, collectives, types, ops, sizes change every call */
    nb2b = g_quick ? 200 : 1000;
    {
        const int tsel[4] = { 0, 6, 3, 1 };
        const size_t bsz[4] = { 1, 7, 33, 4097 };
        double tt = now();
        for (a = 0; a < nb2b; a++) {
            run_case(MPI_COMM_WORLD, a % 3, &g_types[tsel[(a / 3) % 4]], (a / 12) % OP_N, (a / 7) % 2,
                     bsz[(a / 5) % 4], tiers[(a / 2) % 3], 1, 1);
        }
        if (g_rank == 0) printf("back-to-back: %d mixed calls, %.2f s\n", nb2b, now() - tt);
    }

    if (!g_quick) {
        run_large(MPI_COMM_WORLD, (size_t)256 << 20, "nccl");
        run_large(MPI_COMM_WORLD, (size_t)256 << 20, "staging");
    }

    guard_count = dlsym(RTLD_DEFAULT, "tlmpi_guard_checked");
    tst_totals(&fails, NULL);
    totals[0] = g_cases;
    PMPI_Allreduce(MPI_IN_PLACE, totals, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    totals[1] = fails;
    if (g_rank == 0) {
        int nv = 0;
        void *h = dlopen("libnccl.so.2", RTLD_LAZY | RTLD_NOLOAD);
        int (*gv)(int *) = h ? (int (*)(int *))dlsym(h, "ncclGetVersion") : NULL;
        if (gv) gv(&nv);
        printf("guard: %s (%lu PMPI calls checked on rank 0)\n", guard_count ? "active" : "not loaded",
               guard_count ? *guard_count : 0UL);
        printf("nccl runtime version: %d\n", nv);
        printf("RESULT np=%d cases=%ld failures=%ld time=%.1fs %s\n", g_size, totals[0], totals[1], now() - t0,
               totals[1] ? "FAIL" : "PASS");
    }
    TST_CUDA(cudaFree(d_s));
    TST_CUDA(cudaFree(d_r));
    free(h_in);
    free(h_out);
    free(h_exp);
    MPI_Finalize();
    return totals[1] ? 1 : 0;
}
