/*
 * mpi_persist_reg: the node tier's registration of persistent requests' buffers (src/transport/ipcreg.c)
 * on a machine without a GPU, with the fake CUDA runtime (tests/fakes/fakecudart.c: allocations of 64 KiB
 * and more are memfds that other processes map through CUDA IPC; smaller ones cannot be exported) and
 * TLMPI_TIER=node over the ipc transport, one fake GPU per rank (tests/local.mk runs it with 2 ranks,
 * tests/mpi/persist_reg.sh with 3). The fake cannot run kernels, so every start falls back to staging
 * (one warning) and the results check the request's call record; the registration itself is checked by
 * counting the peer allocations mapped in each process (fake_cuda_ipc_mapped):
 *  a  MPI_Allreduce_init of 256 KiB (not in place): (size - 1) x 2 allocations mapped once the
 *     request exists (every peer's send and receive buffer), 0 after MPI_Request_free;
 *  b  in place: one allocation per peer;
 *  c  send and receive buffers carved from one allocation: one per peer;
 *  d  two requests on the same buffers (OSU makes one per message size): mapped once (a second
 *     cudaIpcOpenMemHandle of one handle fails in CUDA), still mapped after the first is freed, unmapped
 *     after the second;
 *  e  the last rank's buffers not exportable (FAKE_CUDA_IPC_REFUSE, as CUDA refuses managed, cuMem and
 *     pool memory): nothing mapped on any rank (the ranks agree), and the request still correct;
 *  e2 the last rank cannot map its peers' buffers (FAKE_CUDA_IPC_OPEN_REFUSE) while the others can: the
 *     others unmap again (the agreement), nothing mapped anywhere;
 *  f  a message below TLMPI_NODE_DIRECT_MIN (set to 128k here): not registered;
 *  g  allgather and reduce_scatter_block requests registered; reduce_scatter_block in place not;
 *  h  a registered request's communicator freed before the request: the mappings go with the
 *     communicator, the request's MPI_Start then fails (MPI_ERR_COMM class), MPI_Request_free works;
 *  s  the siblings (TLMPI_NODE_SIBLINGS): MPI_Allgatherv_init and MPI_Reduce_scatter_init with one rank's
 *     block 4x the others' (allgatherv's blocks in reversed order), MPI_Alltoall_init: every peer's two
 *     allocations; MPI_Bcast_init: its one buffer; MPI_Reduce_init: the root's two allocations, a
 *     non-root's input alone (its receive buffer is not used), so a process maps one allocation more
 *     per non-root peer; MPI_Reduce_scatter_init and MPI_Alltoall_init in place: not registered.
 * Every start has fresh random inputs and poisoned outputs, checked exactly (small integers in double);
 * each request is started 3 times. Exit 77 where the MPI has no persistent collectives (MPI-3).
 */
#include "config.h"
#include "tlmpi.h"

#include <cuda_runtime_api.h>
#include "harness.h"
#include <stdlib.h>
#include <string.h>

#if MPI_VERSION >= 4

#include "fake_reg.h"

/* start, wait and check an allreduce request 3 times; in == NULL: in place on out */
static void run_allreduce(MPI_Request *rq, double *in, double *out, long n, const char *what)
{
    int it, i;

    for (it = 0; it < 3; it++) {
        uint64_t seed;
        long bad = 0;

        tst_rng_sync();
        seed = tst_rand();
        for (i = 0; i < n; i++) {
            (in ? in : out)[i] = val(seed, tst_rank, i);
        }
        if (in) {
            tst_poison(out, (size_t)n * sizeof(double));
        }
        TST_CHECK(MPI_Start(rq) == MPI_SUCCESS, "%s: MPI_Start", what);
        TST_CHECK(MPI_Wait(rq, MPI_STATUS_IGNORE) == MPI_SUCCESS, "%s: MPI_Wait", what);
        for (i = 0; i < n; i++) {
            double e = 0;
            int r;

            for (r = 0; r < tst_size; r++) {
                e += val(seed, r, i);
            }
            bad += out[i] != e;
        }
        TST_CHECK(bad == 0, "%s, start %d: %ld wrong elements", what, it, bad);
    }
}

static void case_allreduce(void)
{
    long n = BIG / sizeof(double);
    double *s, *r, *one;
    MPI_Request rq, rq2;

    TST_CUDA(cudaMalloc((void **)&s, BIG));
    TST_CUDA(cudaMalloc((void **)&r, BIG));
    /* a: not in place */
    TST_CHECK(MPI_Allreduce_init(s, r, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &rq) == MPI_SUCCESS,
              "a: MPI_Allreduce_init");
    expect_mapped(2 * (tst_size - 1), "a: a registered request");
    run_allreduce(&rq, s, r, n, "a: allreduce");
    TST_CHECK(MPI_Request_free(&rq) == MPI_SUCCESS && rq == MPI_REQUEST_NULL, "a: MPI_Request_free");
    expect_mapped(0, "a: after MPI_Request_free");
    /* b: in place */
    TST_CHECK(MPI_Allreduce_init(MPI_IN_PLACE, r, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &rq) ==
                  MPI_SUCCESS, "b: MPI_Allreduce_init in place");
    expect_mapped(tst_size - 1, "b: in place");
    run_allreduce(&rq, NULL, r, n, "b: allreduce in place");
    MPI_Request_free(&rq);
    expect_mapped(0, "b: after MPI_Request_free");
    /* c: both buffers in one allocation */
    TST_CUDA(cudaMalloc((void **)&one, 2 * BIG));
    MPI_Allreduce_init(one, one + n, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &rq);
    expect_mapped(tst_size - 1, "c: one allocation");
    run_allreduce(&rq, one, one + n, n, "c: allreduce in one allocation");
    MPI_Request_free(&rq);
    expect_mapped(0, "c: after MPI_Request_free");
    /* d: two requests on the same buffers (the second: half the count) */
    MPI_Allreduce_init(s, r, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &rq);
    MPI_Allreduce_init(s, r, (int)n / 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &rq2);
    expect_mapped(2 * (tst_size - 1), "d: two requests on the same buffers");
    run_allreduce(&rq2, s, r, n / 2, "d: the second request");
    MPI_Request_free(&rq);
    expect_mapped(2 * (tst_size - 1), "d: after freeing the first");
    run_allreduce(&rq2, s, r, n / 2, "d: the second request after the first was freed");
    MPI_Request_free(&rq2);
    expect_mapped(0, "d: after freeing both");
    /* e: the last rank's buffers cannot be exported (FAKE_CUDA_IPC_REFUSE: as managed or pool memory; fresh
     * allocations, since an exportable one stays exportable and its handle is cached) */
    {
        double *s2, *r2;

        TST_CUDA(cudaMalloc((void **)&s2, BIG));
        TST_CUDA(cudaMalloc((void **)&r2, BIG));
        if (tst_rank == tst_size - 1) setenv("FAKE_CUDA_IPC_REFUSE", "1", 1);
        MPI_Allreduce_init(s2, r2, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &rq);
        unsetenv("FAKE_CUDA_IPC_REFUSE");
        expect_mapped(0, "e: one rank cannot register (every rank agrees)");
        run_allreduce(&rq, s2, r2, n, "e: unregistered request");
        MPI_Request_free(&rq);
        cudaFree(s2);
        cudaFree(r2);
    }
    /* e2: the last rank cannot map its peers' buffers (FAKE_CUDA_IPC_OPEN_REFUSE) while the others can */
    if (tst_rank == tst_size - 1) setenv("FAKE_CUDA_IPC_OPEN_REFUSE", "1", 1);
    MPI_Allreduce_init(s, r, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &rq);
    unsetenv("FAKE_CUDA_IPC_OPEN_REFUSE");
    expect_mapped(0, "e2: one rank cannot map (every rank agrees, the others unmap)");
    run_allreduce(&rq, s, r, n, "e2: unregistered request");
    MPI_Request_free(&rq);
    /* f: below TLMPI_NODE_DIRECT_MIN */
    MPI_Allreduce_init(s, r, 1024, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &rq);
    expect_mapped(0, "f: 8 KiB, below TLMPI_NODE_DIRECT_MIN");
    run_allreduce(&rq, s, r, 1024, "f: allreduce below the size");
    MPI_Request_free(&rq);
    cudaFree(one);
    cudaFree(s);
    cudaFree(r);
}

/* g: allgather and reduce_scatter_block */
static void case_others(void)
{
    long n = BIG / sizeof(double); /* a block */
    size_t all = (size_t)BIG * (size_t)tst_size;
    double *s, *r;
    MPI_Request rq;
    int it, i;

    TST_CUDA(cudaMalloc((void **)&s, all));
    TST_CUDA(cudaMalloc((void **)&r, all));
    MPI_Allgather_init(s, (int)n, MPI_DOUBLE, r, (int)n, MPI_DOUBLE, MPI_COMM_WORLD, MPI_INFO_NULL, &rq);
    expect_mapped(2 * (tst_size - 1), "g: allgather");
    for (it = 0; it < 3; it++) {
        uint64_t seed;
        long bad = 0;

        tst_rng_sync();
        seed = tst_rand();
        for (i = 0; i < n; i++) s[i] = val(seed, tst_rank, i);
        tst_poison(r, all);
        MPI_Start(&rq);
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
        for (i = 0; i < n * tst_size; i++) bad += r[i] != val(seed, (int)(i / n), i % n);
        TST_CHECK(bad == 0, "g: allgather start %d: %ld wrong elements", it, bad);
    }
    MPI_Request_free(&rq);
    expect_mapped(0, "g: after freeing the allgather");
    MPI_Reduce_scatter_block_init(s, r, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &rq);
    expect_mapped(2 * (tst_size - 1), "g: reduce_scatter_block");
    for (it = 0; it < 3; it++) {
        uint64_t seed;
        long bad = 0;

        tst_rng_sync();
        seed = tst_rand();
        for (i = 0; i < n * tst_size; i++) s[i] = val(seed, tst_rank, i);
        tst_poison(r, all);
        MPI_Start(&rq);
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
        for (i = 0; i < n; i++) {
            double e = 0;

            for (int q = 0; q < tst_size; q++) e += val(seed, q, tst_rank * n + i);
            bad += r[i] != e;
        }
        TST_CHECK(bad == 0, "g: reduce_scatter_block start %d: %ld wrong elements", it, bad);
    }
    MPI_Request_free(&rq);
    MPI_Reduce_scatter_block_init(MPI_IN_PLACE, s, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &rq);
    expect_mapped(0, "g: reduce_scatter_block in place is not registered");
    MPI_Start(&rq);
    MPI_Wait(&rq, MPI_STATUS_IGNORE);
    MPI_Request_free(&rq);
    cudaFree(s);
    cudaFree(r);
}

/* every rank's count of peer allocations mapped beyond the pools: want(rank) on every rank */
static void expect_mapped_each(const int *want, const char *what)
{
    int m = fake_cuda_ipc_mapped - g_base, all[NMAX], i;

    MPI_Allgather(&m, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
    for (i = 0; i < tst_size; i++) {
        TST_CHECK(all[i] == want[i], "%s: rank %d has %d peer allocations mapped, expected %d", what, i, all[i], want[i]);
    }
}

/* start and wait rq twice: fill(seed) writes the inputs, check(seed) counts wrong elements */
#define SIB_RUNS(rq, what, fill, check)                                                             \
    for (int it_ = 0; it_ < 2; it_++) {                                                             \
        uint64_t seed;                                                                              \
        long bad = 0;                                                                               \
        tst_rng_sync();                                                                             \
        seed = tst_rand();                                                                          \
        fill;                                                                                       \
        TST_CHECK(MPI_Start(&(rq)) == MPI_SUCCESS, "%s: MPI_Start", what);                          \
        TST_CHECK(MPI_Wait(&(rq), MPI_STATUS_IGNORE) == MPI_SUCCESS, "%s: MPI_Wait", what);         \
        check;                                                                                      \
        TST_CHECK(bad == 0, "%s, start %d: %ld wrong elements", what, it_, bad);                    \
    }

/* s: the siblings */
static void case_siblings(void)
{
    const long n = BIG / sizeof(double); /* the largest block */
    const int p = tst_size, me = tst_rank;
    size_t all = (size_t)BIG * (size_t)p;
    int counts[NMAX], displs[NMAX], want[NMAX], q, total = 0, off = 0;
    double *s, *r;
    MPI_Request rq;
    unsigned char pv = 0;
    long i;

    for (q = 0; q < p; q++) {
        counts[q] = (int)(q == p - 1 ? n : n / 4); /* the largest block: TLMPI_NODE_DIRECT_MIN's measure */
        total += counts[q];
    }
    for (q = p - 1; q >= 0; q--) { /* allgatherv's blocks in reversed order */
        displs[q] = off;
        off += counts[q];
    }
    TST_CUDA(cudaMalloc((void **)&s, all));
    TST_CUDA(cudaMalloc((void **)&r, all));

    MPI_Allgatherv_init(s, counts[me], MPI_DOUBLE, r, counts, displs, MPI_DOUBLE, MPI_COMM_WORLD, MPI_INFO_NULL, &rq);
    expect_mapped(2 * (p - 1), "s: allgatherv");
    SIB_RUNS(rq, "s: allgatherv", ({ for (i = 0; i < counts[me]; i++) s[i] = val(seed, me, i); tst_poison(r, all); }),
             ({ for (q = 0; q < p; q++) for (i = 0; i < counts[q]; i++) bad += r[displs[q] + i] != val(seed, q, i); }));
    MPI_Request_free(&rq);
    expect_mapped(0, "s: after freeing the allgatherv");

    MPI_Reduce_scatter_init(s, r, counts, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &rq);
    expect_mapped(2 * (p - 1), "s: reduce_scatter");
    off = 0;
    for (q = 0; q < me; q++) off += counts[q];
    SIB_RUNS(rq, "s: reduce_scatter", ({ for (i = 0; i < total; i++) s[i] = val(seed, me, i); tst_poison(r, all); }),
             ({ for (i = 0; i < counts[me]; i++) { double e = 0; for (q = 0; q < p; q++) e += val(seed, q, off + i);
                    bad += r[i] != e; } }));
    MPI_Request_free(&rq);
    MPI_Reduce_scatter_init(MPI_IN_PLACE, s, counts, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &rq);
    expect_mapped(0, "s: reduce_scatter in place is not registered");
    SIB_RUNS(rq, "s: reduce_scatter in place", ({ for (i = 0; i < total; i++) s[i] = val(seed, me, i); }),
             ({ for (i = 0; i < counts[me]; i++) { double e = 0; for (q = 0; q < p; q++) e += val(seed, q, off + i);
                    bad += s[i] != e; } }));
    MPI_Request_free(&rq);

    MPI_Bcast_init(r, (int)n, MPI_DOUBLE, p - 1, MPI_COMM_WORLD, MPI_INFO_NULL, &rq);
    expect_mapped(p - 1, "s: bcast");
    SIB_RUNS(rq, "s: bcast", ({ if (me == p - 1) for (i = 0; i < n; i++) r[i] = val(seed, p - 1, i);
                                else tst_poison(r, BIG); }),
             ({ for (i = 0; i < n; i++) bad += r[i] != val(seed, p - 1, i); }));
    MPI_Request_free(&rq);
    expect_mapped(0, "s: after freeing the bcast");

    MPI_Reduce_init(s, r, (int)n, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &rq);
    for (q = 0; q < p; q++) want[q] = q == 0 ? p - 1 : p; /* the root's two allocations, each non-root's input */
    expect_mapped_each(want, "s: reduce");
    SIB_RUNS(rq, "s: reduce", ({ for (i = 0; i < n; i++) s[i] = val(seed, me, i); pv = tst_poison(r, BIG); }),
             ({ for (i = 0; i < n; i++) { double e = 0; for (q = 0; q < p; q++) e += val(seed, q, i);
                    bad += me == 0 ? r[i] != e : ((const unsigned char *)r)[i] != pv; } }));
    MPI_Request_free(&rq);
    expect_mapped(0, "s: after freeing the reduce");

    MPI_Alltoall_init(s, (int)n, MPI_DOUBLE, r, (int)n, MPI_DOUBLE, MPI_COMM_WORLD, MPI_INFO_NULL, &rq);
    expect_mapped(2 * (p - 1), "s: alltoall");
    SIB_RUNS(rq, "s: alltoall", ({ for (i = 0; i < n * p; i++) s[i] = val(seed, me, i); tst_poison(r, all); }),
             ({ for (q = 0; q < p; q++) for (i = 0; i < n; i++) bad += r[q * n + i] != val(seed, q, me * n + i); }));
    MPI_Request_free(&rq);
    MPI_Alltoall_init(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, s, (int)n, MPI_DOUBLE, MPI_COMM_WORLD, MPI_INFO_NULL, &rq);
    expect_mapped(0, "s: alltoall in place is not registered");
    SIB_RUNS(rq, "s: alltoall in place", ({ for (i = 0; i < n * p; i++) s[i] = val(seed, me, i); }),
             ({ for (q = 0; q < p; q++) for (i = 0; i < n; i++) bad += s[q * n + i] != val(seed, q, me * n + i); }));
    MPI_Request_free(&rq);
    cudaFree(s);
    cudaFree(r);
}

/* h: the communicator goes first */
static void case_comm_gone(void)
{
    double *s, *r;
    MPI_Comm dup;
    MPI_Request rq;
    int rc, cls = 0, base0 = g_base, before;

    TST_CUDA(cudaMalloc((void **)&s, BIG));
    TST_CUDA(cudaMalloc((void **)&r, BIG));
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
    before = fake_cuda_ipc_mapped;
    MPI_Allreduce(s, r, 8, MPI_DOUBLE, MPI_SUM, dup); /* the dup's plan and pools */
    g_base += fake_cuda_ipc_mapped - before;
    MPI_Allreduce_init(s, r, BIG / 8, MPI_DOUBLE, MPI_SUM, dup, MPI_INFO_NULL, &rq);
    expect_mapped(2 * (tst_size - 1), "h: a request on a dup");
    run_allreduce(&rq, s, r, BIG / 8, "h: allreduce on the dup");
    MPI_Comm_free(&dup);
    g_base = base0;
    expect_mapped(0, "h: after MPI_Comm_free (the request still exists)");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    rc = MPI_Start(&rq);
    if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
    TST_CHECK(rc != MPI_SUCCESS && cls == MPI_ERR_COMM, "h: MPI_Start after MPI_Comm_free: rc %d class %d", rc, cls);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    TST_CHECK(MPI_Request_free(&rq) == MPI_SUCCESS, "h: MPI_Request_free");
    cudaFree(s);
    cudaFree(r);
}

int main(int argc, char **argv)
{
    double *d;
    int rc = fake_reg_start("mpi_persist_reg", "TLMPI_NODE_DIRECT_MIN", &argc, &argv, &d);

    if (rc) {
        return rc;
    }
    case_allreduce();
    case_others();
    case_siblings();
    case_comm_gone();
    cudaFree(d);
    return tst_finish();
}

#else
int main(int argc, char **argv)
{
    tst_init("mpi_persist_reg", &argc, &argv);
    return tst_skip("the MPI has no persistent collectives (MPI-4)");
}
#endif
