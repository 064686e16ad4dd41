/*
 * mpi_threads: MPI_THREAD_MULTIPLE with device buffers, as a mpi4py + CuPy program with several
 * threads does it (reproduces a hang first seen on an H200). The main thread makes NTHREADS dups of
 * MPI_COMM_WORLD (the same order on every rank); then NTHREADS pthreads each run, on a dup of their
 * own, a long mix (TLMPI_TEST_ITERS, default 200) of MPI_Allreduce / MPI_Allgather /
 * MPI_Reduce_scatter_block on cudaMalloc'd buffers, all at the same time. Per call, from a generator
 * seeded alike on every rank (and differently per thread): the collective, MPI_INT / MPI_FLOAT /
 * MPI_DOUBLE, MPI_SUM / MPI_MAX, in place or not, and a count from 1 to 64 Ki elements (log-uniform,
 * odd counts included, some just around 16 KiB per rank), so every tier threshold is crossed.
 * Inputs are fresh small integers (exact in float whatever the summation order) that every rank can
 * compute for every other rank; outputs are poisoned before each call (and a guard after them must
 * keep its poison); results are copied back and compared exactly with a host reference.
 *
 * The path check reads the environment to know what tlmpi was told (tlmpi_get_stats, summed over
 * the threads): TLMPI_TIER=nccl: every call on the NCCL path; staging: every call staged; auto (and
 * anything else): every call accelerated (NCCL, node or staging). With a threshold table
 * (TLMPI_ALLREDUCE_TIERS / _ALLGATHER_ / _REDUCE_SCATTER_BLOCK_TIERS set) each collective whose
 * table is set must have used both NCCL and staging; where this tlmpi does not know the table
 * variables (tlmpi_config_set says so), that is only a note.
 *
 * Built twice from this file (tests/local.mk): tests/mpi/mpi_threads with the CPU stand-ins of
 * tests/fakes (the fake CUDA runtime linked in, the fake NCCL dlopen'ed by tlmpi from this
 * program's .libs unless TLMPI_NCCL_LIBRARY says otherwise: tests/fakes/fake_env.c), and
 * tests/gpu/gpu_threads with the real CUDA runtime and NCCL. Run by tests/mpi/threads.sh and
 * tests/gpu/threads.sh. Exit 77 where the MPI gives less than MPI_THREAD_MULTIPLE.
 */
#include "config.h"
#include "tlmpi.h"

#include <cuda_runtime_api.h>
#include "harness.h"
#include "exact_values.h"

#include <pthread.h>
#include <unistd.h>

#define NTHREADS 4
#define MAXCOUNT 65536
#define GUARD 16 /* elements after the output that must keep their poison */

static const char *const coll_name[NCOLL] = { "allreduce", "allgather", "reduce_scatter_block" };
static const tlmpi_coll_t coll_id[NCOLL] = { TLMPI_COLL_ALLREDUCE, TLMPI_COLL_ALLGATHER,
                                             TLMPI_COLL_REDUCE_SCATTER_BLOCK };
static const char *const table_env[NCOLL] = { "TLMPI_ALLREDUCE_TIERS", "TLMPI_ALLGATHER_TIERS",
                                              "TLMPI_REDUCE_SCATTER_BLOCK_TIERS" };

typedef struct {
    int id;
    MPI_Comm comm;
    long iters;
    int dev;
    uint64_t seed;
    long calls[NCOLL];
    long fails;
    double secs;
    unsigned char *d_s, *d_r; /* device buffers, allocated and freed by the main thread */
} worker_t;

static int g_size;
static uint64_t g_seed;

/* the poisoned bytes as the type would read them (compared bytewise) */
static int is_poison(const unsigned char *p, size_t n, unsigned char v)
{
    for (size_t i = 0; i < n; i++) {
        if (p[i] != v) return 0;
    }
    return 1;
}

/* count for one call: log-uniform in [1, MAXCOUNT], sometimes right around 16 KiB per rank */
static size_t pick_count(tst_rng_t *g, size_t es)
{
    size_t c;
    unsigned e;

    if (tst_rand_r(g) % 8 == 0) {
        c = 16384 / es + (size_t)(tst_rand_r(g) % 3) - 1;
    } else {
        e = (unsigned)(tst_rand_r(g) % 17);
        c = ((size_t)1 << e) + (size_t)(tst_rand_r(g) % ((uint64_t)1 << e));
    }
    return c < 1 ? 1 : c > MAXCOUNT ? MAXCOUNT : c;
}

static void *worker(void *arg)
{
    worker_t *w = arg;
    tst_rng_t g;
    int rank, p, rc;
    size_t cap = ((size_t)MAXCOUNT * (size_t)g_size + GUARD) * 8;
    unsigned char *d_s = w->d_s, *d_r = w->d_r, *h_in = malloc(cap), *h_out = malloc(cap);
    double t0 = MPI_Wtime();

    MPI_Comm_rank(w->comm, &rank);
    MPI_Comm_size(w->comm, &p);
    TST_CUDA(cudaSetDevice(w->dev)); /* the current device is per thread */
    tst_rng_seed(&g, w->seed);
    for (long it = 0; it < w->iters; it++) {
        int coll = (int)(tst_rand_r(&g) % NCOLL), t = (int)(tst_rand_r(&g) % NTYPES);
        int sum = (int)(tst_rand_r(&g) % 2), inplace = (int)(tst_rand_r(&g) % 2); /* 1 sum, 0 max */
        if (exact_skip(coll, t)) t = T_U16; /* as mpi_hier: no allgather of the half types */
        size_t es = type_size(t), count = pick_count(&g, es), in_n, out_n, buf_n, i;
        uint64_t ds = tst_rand_r(&g);
        unsigned char pv = (unsigned char)(0xA0 | (tst_rand_r(&g) & 0xF));
        MPI_Op op = exact_op(sum);
        char what[200];

        in_n = coll == C_RSB ? count * (size_t)p : count;
        out_n = coll == C_AG ? count * (size_t)p : count;
        buf_n = inplace && in_n > out_n ? in_n : out_n; /* what the call may write into d_r */
        snprintf(what, sizeof(what), "thread %d iter %ld: %s %s%s%s%s count %zu np %d", w->id, it,
                 coll_name[coll], type_name[t], coll == C_AG ? "" : " ", coll == C_AG ? "" : exact_op_name(sum),
                 inplace ? " in place" : "", count, p);
        /* poison the receive buffer and a guard after it, place the input, call */
        rc = exact_run(w->comm, coll, t, op, inplace, count, rank, p, ds, pv, GUARD, h_in, d_s, d_r);
        w->calls[coll]++;
        if (rc != MPI_SUCCESS) {
            char eb[MPI_MAX_ERROR_STRING + 64];

            w->fails++;
            TST_FAIL("%s: %s", what, tst_err_string(rc, eb));
            continue;
        }
        memset(h_out, (unsigned char)~pv, (buf_n + GUARD) * es);
        TST_CUDA(cudaMemcpy(h_out, d_r, (buf_n + GUARD) * es, cudaMemcpyDeviceToHost));
        {
            double got, want;

            i = exact_first_bad(coll, t, sum, ds, rank, p, count, h_out, out_n, &got, &want);
            if (i < out_n) {
                w->fails++;
                TST_FAIL("%s: element %zu = %.17g, expected %g", what, i, got, want);
            }
        }
        rc = is_poison(h_out + buf_n * es, GUARD * es, pv);
        w->fails += !rc;
        TST_CHECK(rc, "%s: wrote past its output (guard of %d elements after element %zu)", what, GUARD, buf_n);
    }
    free(h_in);
    free(h_out);
    w->secs = MPI_Wtime() - t0;
    return NULL;
}

static long long stat_calls(tlmpi_coll_t c, tlmpi_path_t p)
{
    tlmpi_stat_t st;

    return tlmpi_get_stats(c, p, &st) == TLMPI_OK ? (long long)st.calls : -1;
}

int main(int argc, char **argv)
{
    worker_t w[NTHREADS];
    pthread_t th[NTHREADS];
    MPI_Comm dup[NTHREADS];
    long long before[NCOLL][TLMPI_PATH_COUNT], delta[NCOLL][TLMPI_PATH_COUNT];
    const char *tier = getenv("TLMPI_TIER"), *it_env = getenv("TLMPI_TEST_ITERS");
    int provided, ndev = 0, i, c, k, table[NCOLL], any_table = 0, table_known[NCOLL];
    long iters = it_env && *it_env ? atol(it_env) : 200;
    double t0;

    if (!tier || !*tier) tier = "auto";
    provided = tst_init_thread("mpi_threads", &argc, &argv, MPI_THREAD_MULTIPLE);
    if (provided < MPI_THREAD_MULTIPLE) return tst_skip("the MPI provides no MPI_THREAD_MULTIPLE");
    g_size = tst_size;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < 1) {
        (void)cudaGetLastError();
        return tst_skip("no CUDA device");
    }
    tst_rng_sync();
    g_seed = tst_rand();
    for (c = 0; c < NCOLL; c++) {
        const char *e = getenv(table_env[c]);

        table[c] = e && *e;
        any_table |= table[c];
        /* does this tlmpi know the table? (the same value again: nothing changes) */
        table_known[c] = table[c] && tlmpi_config_set(table_env[c] + 6, e) != TLMPI_ERR_NOT_FOUND;
    }
    if (tst_rank == 0) {
        printf("mpi_threads: %d ranks x %d threads, %ld iterations each, TLMPI_TIER=%s%s%s%s\n", tst_size,
               NTHREADS, iters, tier, any_table ? ", tables " : "",
               any_table ? (getenv("TLMPI_ALLREDUCE_TIERS") ? getenv("TLMPI_ALLREDUCE_TIERS") : "-") : "",
               any_table ? " (allreduce)" : "");
        fflush(stdout);
    }
    for (i = 0; i < NTHREADS; i++) {
        MPI_Comm_dup(MPI_COMM_WORLD, &dup[i]);
    }
    for (c = 0; c < NCOLL; c++) {
        for (k = 0; k < TLMPI_PATH_COUNT; k++) before[c][k] = stat_calls(coll_id[c], (tlmpi_path_t)k);
    }
    TST_CUDA(cudaSetDevice(tst_rank % ndev));
    t0 = MPI_Wtime();
    for (i = 0; i < NTHREADS; i++) {
        memset(&w[i], 0, sizeof(w[i]));
        w[i].id = i;
        w[i].comm = dup[i];
        w[i].iters = iters;
        w[i].dev = tst_rank % ndev;
        w[i].seed = g_seed ^ (uint64_t)(i + 1) * 0xD1B54A32D192ED03ULL;
        /* Allocated here, before any thread communicates, and freed after all joined, as a
         * framework's memory pool does: cudaMalloc/cudaFree synchronise the device (cudaFree
         * also blocks other threads' launches), so a thread freeing while another thread's
         * collective waits for a peer can deadlock two ranks. That hazard is the application's,
         * not tlmpi's; the test must not create it. */
        TST_CUDA(cudaMalloc((void **)&w[i].d_s, ((size_t)MAXCOUNT * (size_t)g_size + GUARD) * 8));
        TST_CUDA(cudaMalloc((void **)&w[i].d_r, ((size_t)MAXCOUNT * (size_t)g_size + GUARD) * 8));
    }
    for (i = 0; i < NTHREADS; i++) {
        if (getenv("THREADS_WARMUP") && atoi(getenv("THREADS_WARMUP"))) {
            /* THREADS_WARMUP=1: the first collective of each comm (where tlmpi builds its plan and
             * creates its NCCL communicator) from the main thread, before any thread runs */
            TST_CUDA(cudaMemset(w[i].d_s, 0, 64));
            TST_CHECK(MPI_Allreduce(MPI_IN_PLACE, w[i].d_s, 4, MPI_INT, MPI_SUM, dup[i]) == MPI_SUCCESS,
                      "warm-up allreduce on dup %d", i);
            w[i].calls[C_AR] = 1; /* counted with the thread's calls in the path check */
        }
    }
    for (i = 0; i < NTHREADS; i++) {
        if (pthread_create(&th[i], NULL, worker, &w[i]) != 0) {
            fprintf(stderr, "mpi_threads: pthread_create failed\n");
            PMPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    for (i = 0; i < NTHREADS; i++) {
        pthread_join(th[i], NULL);
    }
    for (i = 0; i < NTHREADS; i++) {
        TST_CUDA(cudaFree(w[i].d_s));
        TST_CUDA(cudaFree(w[i].d_r));
    }
    t0 = MPI_Wtime() - t0;
    for (i = 0; i < NTHREADS; i++) {
        MPI_Comm_free(&dup[i]);
    }

    /* which paths the calls took (all threads together: the counters are per process) */
    for (c = 0; c < NCOLL; c++) {
        long long made = 0, accel, all = 0;

        for (i = 0; i < NTHREADS; i++) made += w[i].calls[c];
        for (k = 0; k < TLMPI_PATH_COUNT; k++) {
            delta[c][k] = stat_calls(coll_id[c], (tlmpi_path_t)k) - before[c][k];
            all += delta[c][k];
        }
        accel = delta[c][TLMPI_PATH_NCCL] + delta[c][TLMPI_PATH_STAGING] + delta[c][TLMPI_PATH_NODE];
        TST_CHECK(all == made, "%s: tlmpi counted %lld calls, the threads made %lld", coll_name[c], all, made);
        if (table[c]) {
            int both = delta[c][TLMPI_PATH_NCCL] > 0 && delta[c][TLMPI_PATH_STAGING] > 0;

            if (table_known[c]) {
                TST_CHECK(both && accel == made, "%s with %s=%s: nccl %lld, staging %lld of %lld calls (want both)",
                          coll_name[c], table_env[c], getenv(table_env[c]), delta[c][TLMPI_PATH_NCCL],
                          delta[c][TLMPI_PATH_STAGING], made);
            } else if (!both && tst_rank == 0) {
                printf("mpi_threads: NOTE: this tlmpi does not know %s (nccl %lld, staging %lld calls)\n",
                       table_env[c], delta[c][TLMPI_PATH_NCCL], delta[c][TLMPI_PATH_STAGING]);
            }
        } else if (!strcmp(tier, "nccl")) {
            TST_CHECK(delta[c][TLMPI_PATH_NCCL] == made, "%s with TLMPI_TIER=nccl: %lld of %lld calls on NCCL",
                      coll_name[c], delta[c][TLMPI_PATH_NCCL], made);
        } else if (!strcmp(tier, "staging")) {
            TST_CHECK(delta[c][TLMPI_PATH_STAGING] == made, "%s with TLMPI_TIER=staging: %lld of %lld calls staged",
                      coll_name[c], delta[c][TLMPI_PATH_STAGING], made);
        } else {
            TST_CHECK(accel == made, "%s with TLMPI_TIER=%s: nccl %lld + node %lld + staging %lld of %lld calls",
                      coll_name[c], tier, delta[c][TLMPI_PATH_NCCL], delta[c][TLMPI_PATH_NODE],
                      delta[c][TLMPI_PATH_STAGING], made);
        }
    }
    if (tst_rank == 0) {
        for (i = 0; i < NTHREADS; i++) {
            printf("mpi_threads: rank 0 thread %d: %ld allreduce, %ld allgather, %ld reduce_scatter_block, "
                   "%ld failures, %.2f s\n", i, w[i].calls[C_AR], w[i].calls[C_AG], w[i].calls[C_RSB], w[i].fails,
                   w[i].secs);
        }
        printf("mpi_threads: rank 0 paths:");
        for (c = 0; c < NCOLL; c++) {
            printf(" %s nccl=%lld node=%lld staging=%lld", coll_name[c], delta[c][TLMPI_PATH_NCCL],
                   delta[c][TLMPI_PATH_NODE], delta[c][TLMPI_PATH_STAGING]);
        }
        printf("; %.2f s\n", t0);
        fflush(stdout);
    }
    return tst_finish();
}
