/*
 * mpi_regcache: the node tier's registration cache for blocking calls (src/transport/regcache.c) on a
 * machine without a GPU, with the fake CUDA runtime (tests/fakes/fakecudart.c: allocations of 64 KiB
 * and more are memfds that other processes map through CUDA IPC, each with a buffer id of its own) and
 * TLMPI_TIER=node over the ipc transport, one fake GPU per rank (2 ranks, and 3 as _np3). The fake
 * cannot run kernels, so every call falls back to staging after its lookup (one warning) and the results
 * check the call; the cache is checked through tlmpi_get_reg_stats (how each lookup ended, the same on
 * every rank) and the peer allocations mapped in each process (fake_cuda_ipc_mapped):
 *  a  MPI_Allreduce of 256 KiB (TLMPI_NODE_REG_MIN = 128k), separate send and receive allocations: the
 *     first call registers (first), (size - 1) x 2 mapped; the second on the same buffers hits;
 *  b  sub-views of one large allocation at odd 16-byte offsets (send and receive in it): one first, then
 *     hits at every other offset, one more allocation per peer mapped;
 *  c  staleness: the receive buffer freed and allocated again, with its size and with twice it (the
 *     test reports whether the new range overlaps the old one): first, never hit; then all of it in
 *     place hits; a peer's old mapping is let go where its new allocation overlaps the old range, and
 *     stays (until evicted) where it does not;
 *  d  in place, allgather and reduce_scatter_block: hits on known allocations; reduce_scatter_block in
 *     place and messages below TLMPI_NODE_REG_MIN never look (the counters do not move);
 *  e  the last rank's buffers not exportable (FAKE_CUDA_IPC_REFUSE, as CUDA refuses managed, cuMem and
 *     pool memory): pool on every rank, nothing new mapped;
 *  e2 the last rank cannot map its peers' (FAKE_CUDA_IPC_OPEN_REFUSE) while the others can: pool on every
 *     rank (the agreement), the others let go of what they mapped;
 *  f  eviction: a communicator made under TLMPI_NODE_REG_MAX = 512k (two 256 KiB allocations, every
 *     rank's counted) alternating between two buffer pairs never hits and evicts; then a pair that fits
 *     hits again; freeing the communicator lets go of its mappings;
 *  g  a communicator freed: its mappings go with it;
 *  h  stream-ordered calls (tlmpi_allreduce_enqueue; FAKE_CUDA_LAUNCH_NOOP=1: the launch succeeds having
 *     run nothing, so only the lookups are checked): first, then hits, on the same cache as the blocking
 *     calls; under a one-allocation bound the entries a stream-ordered call used are let go after the
 *     drain (evictions counted, mappings let go).
 *  i  non-blocking calls (MPI_Iallreduce + MPI_Wait; their kernels then fall back as the blocking ones'):
 *     on a fresh communicator nothing is gated before a lookup left a memo; after a blocking call on a
 *     pair every rank offers that pair's memo (the describe line's "memo offered here" moves by one on
 *     every rank); another send buffer offers none; the last rank's receive buffer freed and allocated
 *     again: the last rank offers none (the others still do), also where the new allocation has the old
 *     address (a memo matched by address alone would be offered there: the staleness check); a blocking
 *     call on the new pair makes a memo every rank offers again; a communicator whose calls are all
 *     non-blocking never gates (no memo);
 *  j  the siblings (TLMPI_NODE_GATE_SIBLINGS): MPI_Iallgatherv after a blocking MPI_Allgatherv on the same
 *     buffers is not gated by default; with the setting on it is, every rank offering the memo;
 *     MPI_Ireduce after a blocking MPI_Reduce on the same buffers: every rank offers, a non-root too (its
 *     input stands in for the receive buffer it does not have).
 * Every call has fresh random inputs and poisoned outputs, checked exactly (small integers in double).
 */
#include "config.h"
#include "tlmpi.h"

#include <cuda_runtime_api.h>
#include "harness.h"
#include <stdlib.h>
#include <string.h>

#include "fake_reg.h"

static int mapped_extra; /* stale allocations still mapped (case c) */
static tlmpi_reg_stats_t g_last;

/* the lookups since the last check: hits, firsts, pool (every rank the same) */
static void expect_calls(int hit, int first, int pool, const char *what)
{
    tlmpi_reg_stats_t s;
    int got[3];

    TST_CHECK(tlmpi_get_reg_stats(&s) == TLMPI_OK, "%s: tlmpi_get_reg_stats", what);
    got[0] = (int)(s.hits - g_last.hits);
    got[1] = (int)(s.firsts - g_last.firsts);
    got[2] = (int)(s.pool - g_last.pool);
    TST_CHECK(got[0] == hit && got[1] == first && got[2] == pool, "%s: rank %d: %d hit, %d first, %d pool; expected "
              "%d, %d, %d", what, tst_rank, got[0], got[1], got[2], hit, first, pool);
    g_last = s;
}

/* one allreduce of n doubles on comm, checked; in == NULL: in place on out; nb: MPI_Iallreduce + MPI_Wait */
static void allreduce_form(MPI_Comm comm, double *in, double *out, long n, int nb, const char *what)
{
    uint64_t seed;
    long bad = 0, i;
    int r, size, rc;
    MPI_Request q;

    MPI_Comm_size(comm, &size);
    tst_rng_sync();
    seed = tst_rand();
    for (i = 0; i < n; i++) {
        (in ? in : out)[i] = val(seed, tst_rank, i);
    }
    if (in) {
        tst_poison(out, (size_t)n * sizeof(double));
    }
    if (nb) {
        rc = MPI_Iallreduce(in ? in : MPI_IN_PLACE, out, (int)n, MPI_DOUBLE, MPI_SUM, comm, &q);
        rc = rc == MPI_SUCCESS ? MPI_Wait(&q, MPI_STATUS_IGNORE) : rc;
    } else {
        rc = MPI_Allreduce(in ? in : MPI_IN_PLACE, out, (int)n, MPI_DOUBLE, MPI_SUM, comm);
    }
    TST_CHECK(rc == MPI_SUCCESS, "%s: %s", what, nb ? "MPI_Iallreduce + MPI_Wait" : "MPI_Allreduce");
    for (i = 0; i < n; i++) {
        double e = 0;

        for (r = 0; r < size; r++) {
            e += val(seed, r, i);
        }
        bad += out[i] != e;
    }
    TST_CHECK(bad == 0, "%s: %ld wrong elements", what, bad);
}

static void allreduce(MPI_Comm comm, double *in, double *out, long n, const char *what)
{
    allreduce_form(comm, in, out, n, 0, what);
}

static void case_basic(void)
{
    const long n = BIG / sizeof(double);
    double *s, *r, *one, *r2;
    int k;

    TST_CUDA(cudaMalloc((void **)&s, BIG));
    TST_CUDA(cudaMalloc((void **)&r, BIG));
    allreduce(MPI_COMM_WORLD, s, r, n, "a: first call");
    expect_calls(0, 1, 0, "a: first call");
    expect_mapped(2 * (tst_size - 1), "a: first call");
    allreduce(MPI_COMM_WORLD, s, r, n, "a: second call");
    expect_calls(1, 0, 0, "a: second call");
    expect_mapped(2 * (tst_size - 1), "a: second call");
    /* b: sub-views at odd offsets of one allocation */
    TST_CUDA(cudaMalloc((void **)&one, 4 * BIG));
    for (k = 0; k < 4; k++) {
        long o = 2 * (2 * k + 1); /* doubles: the 16-byte aligned offsets 16, 48, 80, 112 bytes */

        allreduce(MPI_COMM_WORLD, one + o, one + n + 3 * o, n / 2, "b: sub-views of one allocation");
    }
    expect_calls(3, 1, 0, "b: sub-views");
    expect_mapped(3 * (tst_size - 1), "b: sub-views");
    /* c: staleness: the receive buffer freed and allocated again, first with its size, then with twice it */
    for (k = 0; k < 2; k++) {
        uintptr_t old = (uintptr_t)r;
        int overlap, all[NMAX], stale = 0, q;

        TST_CUDA(cudaFree(r));
        TST_CUDA(cudaMalloc((void **)&r2, (size_t)(k + 1) * BIG));
        /* the view lets go of a peer's old allocation where the new one overlaps its range; otherwise the
         * old one stays until evicted */
        overlap = (uintptr_t)r2 < old + BIG && old < (uintptr_t)r2 + (size_t)(k + 1) * BIG;
        MPI_Allgather(&overlap, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
        for (q = 0; q < tst_size; q++) {
            stale += q != tst_rank && !all[q];
        }
        if (tst_rank == 0) {
            printf("# c%d: the new receive buffer overlaps the old one on %s rank\n", k + 1,
                   all[0] && all[tst_size - 1] ? "every" : "not every");
        }
        allreduce(MPI_COMM_WORLD, s, r2, n, "c: a re-allocated receive buffer");
        expect_calls(0, 1, 0, "c: re-allocated");
        allreduce(MPI_COMM_WORLD, NULL, r2, (k + 1) * n, "c: again, all of it in place");
        expect_calls(1, 0, 0, "c: again");
        r = r2;
        mapped_extra += stale;
        expect_mapped(3 * (tst_size - 1) + mapped_extra, "c: the freed allocation let go where its range was reused");
    }
    /* d: in place, the other collectives, and calls that do not look */
    allreduce(MPI_COMM_WORLD, NULL, r, n, "d: in place");
    {
        char *sb = (char *)s, *rb = (char *)r;
        int i, bad = 0;

        memset(sb, tst_rank + 1, BIG / 4 / tst_size * tst_size);
        TST_CHECK(MPI_Allgather(sb, BIG / 4 / tst_size, MPI_BYTE, rb, BIG / 4 / tst_size, MPI_BYTE, MPI_COMM_WORLD) ==
                  MPI_SUCCESS, "d: MPI_Allgather");
        for (i = 0; i < BIG / 4 / tst_size * tst_size; i++) {
            bad += rb[i] != (char)(i / (BIG / 4 / tst_size) + 1);
        }
        TST_CHECK(bad == 0, "d: allgather: %d wrong bytes", bad);
    }
    expect_calls(1, 0, 0, "d: in place (allgather of 64 KiB blocks: below the minimum)");
    {
        long m = (long)(BIG / sizeof(double)) / tst_size / 2 * 2, i, bad = 0;

        for (i = 0; i < m * tst_size; i++) {
            s[i] = tst_rank + 1;
        }
        /* a block of at least 128 KiB: only 2 ranks reach it; fewer look */
        TST_CHECK(MPI_Reduce_scatter_block(s, r, (int)m, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS,
                  "d: MPI_Reduce_scatter_block");
        for (i = 0; i < m; i++) {
            bad += r[i] != tst_size * (tst_size + 1) / 2;
        }
        TST_CHECK(bad == 0, "d: reduce_scatter_block: %ld wrong elements", bad);
        expect_calls(m * 8 >= (128 << 10), 0, 0, "d: reduce_scatter_block");
        TST_CHECK(MPI_Reduce_scatter_block(MPI_IN_PLACE, s, (int)m, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD) ==
                  MPI_SUCCESS, "d: MPI_Reduce_scatter_block in place");
        expect_calls(0, 0, 0, "d: reduce_scatter_block in place never looks");
    }
    allreduce(MPI_COMM_WORLD, s, r, 1024, "d: 8 KiB");
    expect_calls(0, 0, 0, "d: below TLMPI_NODE_REG_MIN");
    /* e: the last rank's buffers not exportable */
    if (tst_rank == tst_size - 1) {
        setenv("FAKE_CUDA_IPC_REFUSE", "1", 1);
    }
    {
        double *s3, *r3;

        TST_CUDA(cudaMalloc((void **)&s3, BIG));
        TST_CUDA(cudaMalloc((void **)&r3, BIG));
        allreduce(MPI_COMM_WORLD, s3, r3, n, "e: the last rank cannot export");
        expect_calls(0, 0, 1, "e: cannot export");
        expect_mapped(3 * (tst_size - 1) + mapped_extra, "e: nothing new mapped");
        unsetenv("FAKE_CUDA_IPC_REFUSE");
        /* e2: the last rank cannot map */
        if (tst_rank == tst_size - 1) {
            setenv("FAKE_CUDA_IPC_OPEN_REFUSE", "1", 1);
        }
        allreduce(MPI_COMM_WORLD, s3, r3, n, "e2: the last rank cannot map");
        expect_calls(0, 0, 1, "e2: cannot map");
        expect_mapped(3 * (tst_size - 1) + mapped_extra, "e2: the others let go again");
        unsetenv("FAKE_CUDA_IPC_OPEN_REFUSE");
        allreduce(MPI_COMM_WORLD, s3, r3, n, "e: everyone can again");
        expect_calls(0, 1, 0, "e: everyone can again");
        cudaFree(s3);
        cudaFree(r3);
    }
    cudaFree(s);
    cudaFree(r);
    cudaFree(one);
}

/* f, g: a communicator of its own, under a small bound */
static void case_evict(void)
{
    const long n = BIG / sizeof(double);
    double *a[2], *b[2];
    MPI_Comm dup;
    int i, m0;
    tlmpi_reg_stats_t s0, s1;

    TST_CHECK(tlmpi_config_set("NODE_REG_MAX", "512k") == TLMPI_OK, "f: tlmpi_config_set");
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    for (i = 0; i < 2; i++) {
        TST_CUDA(cudaMalloc((void **)&a[i], BIG));
        TST_CUDA(cudaMalloc((void **)&b[i], BIG));
    }
    allreduce(dup, NULL, a[0], 8, "f: the dup's plan and pools");
    m0 = fake_cuda_ipc_mapped;
    tlmpi_get_reg_stats(&s0);
    g_last = s0;
    for (i = 0; i < 4; i++) {
        allreduce(dup, NULL, a[i % 2], n, "f: alternating in place");
    }
    /* every rank's allocation counts: 2 ranks x 256 KiB fill the bound, so the two never both fit */
    expect_calls(tst_size == 2 ? 0 : 0, 4, 0, "f: alternating under the bound");
    tlmpi_get_reg_stats(&s1);
    TST_CHECK(s1.evicted - s0.evicted >= 3 * (unsigned long long)tst_size, "f: %llu evicted, expected at least %d",
              s1.evicted - s0.evicted, 3 * tst_size);
    TST_CHECK(fake_cuda_ipc_mapped - m0 == tst_size - 1, "f: rank %d maps %d of the dup's allocations, expected %d",
              tst_rank, fake_cuda_ipc_mapped - m0, tst_size - 1);
    allreduce(dup, NULL, a[1], n, "f: the last one again");
    expect_calls(1, 0, 0, "f: the last one again hits");
    (void)b;
    /* g: freeing the communicator lets go */
    MPI_Comm_free(&dup);
    TST_CHECK(fake_cuda_ipc_mapped - m0 == -(tst_size - 1), "g: rank %d: %d mapped after MPI_Comm_free, expected %d",
              tst_rank, fake_cuda_ipc_mapped - m0, -(tst_size - 1));
    for (i = 0; i < 2; i++) {
        cudaFree(a[i]);
        cudaFree(b[i]);
    }
}

/* h: stream-ordered calls look up the same cache */
static void case_enqueue(void)
{
    const long n = BIG / sizeof(double);
    double *a[2];
    MPI_Comm dup;
    int i, m0;
    tlmpi_reg_stats_t s0, s1;

    for (i = 0; i < 2; i++) {
        TST_CUDA(cudaMalloc((void **)&a[i], BIG));
    }
    tlmpi_get_reg_stats(&g_last);
    setenv("FAKE_CUDA_LAUNCH_NOOP", "1", 1);
    for (i = 0; i < 3; i++) {
        TST_CHECK(tlmpi_allreduce_enqueue(MPI_IN_PLACE, a[0], (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, NULL) ==
                  MPI_SUCCESS, "h: tlmpi_allreduce_enqueue: %s", tlmpi_enqueue_error());
    }
    expect_calls(2, 1, 0, "h: stream-ordered calls");
    /* a comm whose bound holds one allocation of every rank: the other buffer's first use lets go of the
     * first, which a stream-ordered call used (the drain) */
    TST_CHECK(tlmpi_config_set("NODE_REG_MAX", "256k") == TLMPI_OK, "h: tlmpi_config_set");
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    TST_CHECK(tlmpi_allreduce_enqueue(MPI_IN_PLACE, a[0], 8, MPI_DOUBLE, MPI_SUM, dup, NULL) == MPI_SUCCESS,
              "h: the dup's setup: %s", tlmpi_enqueue_error());
    m0 = fake_cuda_ipc_mapped;
    tlmpi_get_reg_stats(&s0);
    g_last = s0;
    for (i = 0; i < 4; i++) {
        TST_CHECK(tlmpi_allreduce_enqueue(MPI_IN_PLACE, a[i % 2], (int)n, MPI_DOUBLE, MPI_SUM, dup, NULL) ==
                  MPI_SUCCESS, "h: alternating: %s", tlmpi_enqueue_error());
    }
    expect_calls(0, 4, 0, "h: alternating stream-ordered calls under the bound");
    tlmpi_get_reg_stats(&s1);
    TST_CHECK(s1.evicted - s0.evicted >= 3 * (unsigned long long)tst_size, "h: %llu evicted, expected at least %d",
              s1.evicted - s0.evicted, 3 * tst_size);
    /* a[0] stays mapped for the world's cache; the dup holds a[1] alone */
    TST_CHECK(fake_cuda_ipc_mapped - m0 == tst_size - 1, "h: rank %d maps %d more allocations, expected %d",
              tst_rank, fake_cuda_ipc_mapped - m0, tst_size - 1);
    unsetenv("FAKE_CUDA_LAUNCH_NOOP");
    MPI_Comm_free(&dup);
    for (i = 0; i < 2; i++) {
        cudaFree(a[i]);
    }
}

static void iallreduce(MPI_Comm comm, double *in, double *out, long n, const char *what)
{
    allreduce_form(comm, in, out, n, 1, what);
}

/* The describe line's gated starts and memo offers of comm (collective): 0 0 before any. */
static void gated(MPI_Comm comm, long *starts, long *offered)
{
    static char buf[8192];
    const char *p;

    *starts = *offered = 0;
    TST_CHECK(tlmpi_comm_describe(comm, buf, sizeof(buf)) == TLMPI_OK, "tlmpi_comm_describe");
    if ((p = strstr(buf, "gated on the device: "))) {
        *starts = strtol(p + 21, NULL, 10);
        if ((p = strstr(p, "memo offered here: "))) {
            *offered = strtol(p + 19, NULL, 10);
        }
    }
}

static void expect_gated(MPI_Comm comm, long *s0, long *o0, long ds, long doff, const char *what)
{
    long s1, o1;

    gated(comm, &s1, &o1);
    TST_CHECK(s1 - *s0 == ds && o1 - *o0 == doff, "%s: rank %d: %ld gated, %ld offered; expected %ld, %ld", what,
              tst_rank, s1 - *s0, o1 - *o0, ds, doff);
    *s0 = s1;
    *o0 = o1;
}

static void case_gated(void)
{
    const long n = BIG / sizeof(double);
    double *s, *s2, *r;
    MPI_Comm c, nb;
    long gs = 0, go = 0, ns = 0, no = 0;
    int last = tst_rank == tst_size - 1, k;
    uintptr_t old;

    TST_CUDA(cudaMalloc((void **)&s, BIG));
    TST_CUDA(cudaMalloc((void **)&s2, BIG));
    TST_CUDA(cudaMalloc((void **)&r, BIG));
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    MPI_Comm_dup(MPI_COMM_WORLD, &nb);
    iallreduce(c, s, r, n, "i: before any lookup");
    expect_gated(c, &gs, &go, 0, 0, "i: before any lookup");
    allreduce(c, s, r, n, "i: blocking, makes a memo");
    iallreduce(c, s, r, n, "i: on the memo's pair");
    expect_gated(c, &gs, &go, 1, 1, "i: on the memo's pair");
    iallreduce(c, s2, r, n, "i: another send buffer");
    expect_gated(c, &gs, &go, 1, 0, "i: another send buffer");
    for (k = 0; k < 2; k++) {
        int same = 0, any_same = 0;

        old = (uintptr_t)r;
        if (last) {
            TST_CUDA(cudaFree(r));
            TST_CUDA(cudaMalloc((void **)&r, BIG));
            same = (uintptr_t)r == old;
        }
        MPI_Allreduce(&same, &any_same, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        iallreduce(c, s, r, n, "i: the last rank's receive buffer allocated again");
        expect_gated(c, &gs, &go, 1, last ? 0 : 1, "i: the last rank's receive buffer allocated again");
        if (tst_rank == 0) {
            printf("# i: the re-allocated receive buffer %s its old address\n", any_same ? "had" : "did not have");
        }
        allreduce(c, s, r, n, "i: blocking on the new pair, makes a memo");
        iallreduce(c, s, r, n, "i: on the new pair");
        expect_gated(c, &gs, &go, 1, 1, "i: on the new pair");
    }
    for (k = 0; k < 3; k++) {
        iallreduce(nb, s, r, n, "i: a communicator of non-blocking calls alone");
    }
    expect_gated(nb, &ns, &no, 0, 0, "i: a communicator of non-blocking calls alone");
    MPI_Comm_free(&nb);
    MPI_Comm_free(&c);
    cudaFree(s);
    cudaFree(s2);
    cudaFree(r);
}

/* j: the siblings' gated calls (TLMPI_NODE_GATE_SIBLINGS) */
static void sib_check(MPI_Comm c, int coll, int nb, double *s, double *r, long n, const char *what)
{
    int counts[NMAX], displs[NMAX], q, rc;
    uint64_t seed;
    long bad = 0, i;
    MPI_Request rq = MPI_REQUEST_NULL;

    for (q = 0; q < tst_size; q++) {
        counts[q] = (int)n;
        displs[q] = (int)(q * n);
    }
    tst_rng_sync();
    seed = tst_rand();
    for (i = 0; i < n; i++) s[i] = val(seed, tst_rank, i);
    tst_poison(r, (size_t)n * sizeof(double) * (size_t)tst_size);
    if (coll == 0) {
        rc = nb ? MPI_Iallgatherv(s, (int)n, MPI_DOUBLE, r, counts, displs, MPI_DOUBLE, c, &rq)
                : MPI_Allgatherv(s, (int)n, MPI_DOUBLE, r, counts, displs, MPI_DOUBLE, c);
    } else {
        rc = nb ? MPI_Ireduce(s, r, (int)n, MPI_DOUBLE, MPI_SUM, 0, c, &rq)
                : MPI_Reduce(s, r, (int)n, MPI_DOUBLE, MPI_SUM, 0, c);
    }
    if (rc == MPI_SUCCESS && nb) rc = MPI_Wait(&rq, MPI_STATUS_IGNORE);
    TST_CHECK(rc == MPI_SUCCESS, "%s: the call failed", what);
    for (q = 0; q < (coll == 0 ? tst_size : (tst_rank == 0)); q++) {
        for (i = 0; i < n; i++) {
            double e = 0;

            if (coll == 0) {
                e = val(seed, q, i);
            } else {
                for (int k = 0; k < tst_size; k++) e += val(seed, k, i);
            }
            bad += r[q * n + i] != e;
        }
    }
    TST_CHECK(bad == 0, "%s: %ld wrong elements", what, bad);
}

static void case_gated_siblings(void)
{
    const long n = BIG / sizeof(double);
    double *s, *r;
    MPI_Comm c;
    long gs = 0, go = 0;

    TST_CUDA(cudaMalloc((void **)&s, BIG));
    TST_CUDA(cudaMalloc((void **)&r, BIG * (size_t)tst_size));
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    sib_check(c, 0, 0, s, r, n, "j: blocking allgatherv, makes a memo");
    gated(c, &gs, &go);
    sib_check(c, 0, 1, s, r, n, "j: non-blocking allgatherv, default");
    expect_gated(c, &gs, &go, 0, 0, "j: non-blocking allgatherv, TLMPI_NODE_GATE_SIBLINGS=0");
    TST_CHECK(tlmpi_config_set("NODE_GATE_SIBLINGS", "1") == TLMPI_OK, "j: tlmpi_config_set");
    gated(c, &gs, &go);
    sib_check(c, 0, 1, s, r, n, "j: non-blocking allgatherv, gated");
    expect_gated(c, &gs, &go, 1, 1, "j: non-blocking allgatherv on the memo's pair");
    sib_check(c, 1, 0, s, r, n, "j: blocking reduce, makes a memo");
    gated(c, &gs, &go);
    sib_check(c, 1, 1, s, r, n, "j: non-blocking reduce, gated");
    expect_gated(c, &gs, &go, 1, 1, "j: non-blocking reduce on the memo's pair (a non-root offers its input's)");
    TST_CHECK(tlmpi_config_set("NODE_GATE_SIBLINGS", "0") == TLMPI_OK, "j: tlmpi_config_set");
    MPI_Comm_free(&c);
    cudaFree(s);
    cudaFree(r);
}

int main(int argc, char **argv)
{
    double *d;
    int rc = fake_reg_start("mpi_regcache", "TLMPI_NODE_REG_MIN", &argc, &argv, &d);

    if (rc) {
        return rc;
    }
    tlmpi_get_reg_stats(&g_last);
    case_basic();
    case_evict();
    case_enqueue();
    case_gated();
    case_gated_siblings();
    cudaFree(d);
    return tst_finish();
}
