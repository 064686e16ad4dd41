/*
 * mpi_enqueue: the argument and error paths of tlmpi's stream-ordered entry points
 * (tlmpi_allreduce_enqueue, tlmpi_allgather_enqueue, tlmpi_reduce_scatter_block_enqueue, their _c
 * and _f forms, tlmpi_enqueue_prepare, tlmpi_enqueue_error; include/tlmpi.h "Stream-ordered
 * collectives and CUDA graph capture") against the CPU stand-ins of tests/fakes (the fake CUDA
 * runtime linked in: cudaMalloc'd "device" memory is host memory tlmpi classifies as device memory;
 * the fake NCCL dlopen'ed by tlmpi through tests/fakes/fake_env.c). Run by tests/mpi/enqueue.sh
 * with 2 ranks (and 1) under the MPI of the build (MPICH and Open MPI builds each run it).
 *
 * Cases (every one on every entry point form: plain, _c, _f; every failing call must leave
 * tlmpi_enqueue_error() non-empty and move no counter):
 *  a  argument errors, returned at once as the MPI error class (the communicator's error handler
 *     not called: the calls are also made on a dup with MPI_ERRORS_ARE_FATAL): MPI_COMM_NULL ->
 *     MPI_ERR_COMM; a negative count -> MPI_ERR_COUNT; MPI_DATATYPE_NULL -> the MPI's own class on host
 *     buffers (MPI_ERR_TYPE, or in the reductions MPI_ERR_OP under MPICH 4.0.2 and Open MPI; allgather:
 *     send and receive type); MPI_OP_NULL -> MPI_ERR_OP; a host receive buffer, a host send buffer
 *     and a NULL receive buffer -> MPI_ERR_BUFFER; tlmpi_enqueue_prepare(MPI_COMM_NULL) ->
 *     MPI_ERR_COMM;
 *  b  a tier that cannot run stream-ordered (TLMPI_TIER=staging, and mpi): without the fallback
 *     MPI_ERR_UNSUPPORTED_OPERATION; with tlmpi_enqueue_prepare(comm, TLMPI_ENQUEUE_SYNC_FALLBACK)
 *     (and with TLMPI_ENQUEUE_FALLBACK=sync through tlmpi_config_set) MPI_SUCCESS and results right
 *     when the call returns (in place and not, exact values); a later tlmpi_enqueue_prepare(comm, 0)
 *     takes the fallback away again;
 *  c  (in place, allgather's send count and type are junk: -3 and MPI_DATATYPE_NULL, ignored as in
 *     MPI) eager enqueues where the fakes run them: TLMPI_TIER=nccl (the fake NCCL really communicates
 *     between the ranks) and, on MPI_COMM_SELF, the self path (a device copy): results right after
 *     cudaStreamSynchronize, counted in TLMPI_FORM_ENQUEUE on the nccl / self path (the node tier's
 *     kernels do not run on the fakes: cudaLaunchKernel fails there);
 *  d  tlmpi_enqueue_error() after a success following a failure (informational only);
 *  e  during capture (the fake runtime's capture flag and fake graphs, which run nothing): a call on
 *     a fresh, unprepared dup -> MPI_ERR_UNSUPPORTED_OPERATION and the capture stays active and ends
 *     with cudaSuccess; the same dup prepared afterwards: the calls captured, counted once in
 *     TLMPI_FORM_CAPTURE (never in TLMPI_FORM_ENQUEUE), a launch counting nothing, one event record
 *     node per mixing communicator in the graph with one edge into it, from the latest call (the
 *     fake's fake_graph_counts); the synchronous
 *     fallback refused during capture (MPI_ERR_UNSUPPORTED_OPERATION) and working after it; graphs
 *     holding calls of a mixing and a no-mixing dup destroyed before and after MPI_Comm_free of
 *     their communicators (the order event's lifetime; no crash).
 *  f  (only with --node-shape, 2+ ranks each on a fake GPU of its own: enqueue.sh run node2) the node
 *     kernel's shape, tlmpi_get_node_shape, on TLMPI_TIER=node (the kernels fail to launch on the
 *     fakes; the shape is set up before): first, before any stream-ordered call, a blocking pull
 *     allgather on a dup launches all its columns (more than S) as CTAs, and on a dup made with
 *     OMPI_COMM_WORLD_LOCAL_SIZE at twice the fake GPUs (ranks of other communicators on each GPU:
 *     the plan line says so) at most S CTAs take them in turn; the plan line's barrier scope: system
 *     on a dup whose ranks are on fake GPUs of their own, "GPU scope" on one made with every rank on
 *     device 0, system again there with TLMPI_NODE_BARRIER_SCOPE=system; out-of-range form and NULL
 *     pointers ->
 *     TLMPI_ERR_INVALID_ARG;
 *     an enqueued 1 MiB allreduce by size: one column per CTA, at most the plan's CTAs for a kernel
 *     that may share the GPU (S, from tlmpi_comm_describe); then a blocking one on the same comm: the
 *     same shape (the comm carried a stream-ordered call), and on a fresh dup: the blocking limit's M
 *     columns taken in turn by at most S CTAs; with TLMPI_NODE_CTAS at the blocking
 *     call's limit (M > S): M columns taken in turn by at most S CTAs (the knob is not capped at S);
 *     TLMPI_FORM_CAPTURE reads the same; a blocking call with the knob: M columns; a non-blocking one
 *     (MPI_Iallreduce): M columns taken in turn by at most S CTAs, as the enqueued call; an enqueued
 *     pull allgather by size: min(TLMPI_NODE_PULL_COLS, M) columns taken in turn, by default the
 *     blocking call's columns (MPI_Allgather beside it), with the setting at 0 one column per CTA.
 * Prints "mpi_enqueue: PASS: ..." or "mpi_enqueue: FAIL: ..." on rank 0 (tests/harness.h).
 */
#include "config.h"
#include "tlmpi.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

/* weak: this test links (and skips, 77) against a libtlmpi that lacks the enqueue API */
#pragma weak tlmpi_enqueue_prepare
#pragma weak tlmpi_enqueue_prepare_f
#pragma weak tlmpi_allreduce_enqueue
#pragma weak tlmpi_allgather_enqueue
#pragma weak tlmpi_reduce_scatter_block_enqueue
#pragma weak tlmpi_allreduce_enqueue_c
#pragma weak tlmpi_allgather_enqueue_c
#pragma weak tlmpi_reduce_scatter_block_enqueue_c
#pragma weak tlmpi_allreduce_enqueue_f
#pragma weak tlmpi_allgather_enqueue_f
#pragma weak tlmpi_reduce_scatter_block_enqueue_f
#pragma weak tlmpi_enqueue_error
#pragma weak tlmpi_form_name
#pragma weak tlmpi_get_node_shape

#define N 64 /* elements per rank block */
enum { C_AR, C_AG, C_RSB, C_N };
static const char *const coll_names[C_N] = { "allreduce", "allgather", "reduce_scatter_block" };
static const tlmpi_coll_t coll_ids[C_N] = { TLMPI_COLL_ALLREDUCE, TLMPI_COLL_ALLGATHER, TLMPI_COLL_REDUCE_SCATTER_BLOCK };
enum { E_PLAIN, E_C, E_F, E_N };
static const char *const entry_names[E_N] = { "", "_c", "_f" };

static int g_rank, g_size;
static cudaStream_t g_st;
static int *d_s, *d_r, *h_s, *h_r; /* "device" (fake) and host buffers of (N * size + 64) ints */

/* one call: what may be bad in it */
typedef struct {
    int coll, entry;
    const void *s; /* MPI_IN_PLACE allowed (the _f form: NULL) */
    void *r;
    MPI_Count count;        /* allgather: send and receive count (unless rcount_set) */
    MPI_Datatype st, rt;    /* send / receive type (allgather), the type (others) = st */
    MPI_Op op;
    MPI_Comm comm;
    MPI_Fint commf;         /* the _f form's communicator when commf_set */
    int commf_set;
} call_t;

static call_t base(int coll, int entry, MPI_Comm comm)
{
    call_t c;
    memset(&c, 0, sizeof c);
    c.coll = coll;
    c.entry = entry;
    c.s = d_s;
    c.r = d_r;
    c.count = N;
    c.st = c.rt = MPI_INT;
    c.op = MPI_SUM;
    c.comm = comm;
    return c;
}

static int call(const call_t *c)
{
    void *stream = (void *)g_st;
    if (c->entry == E_F) {
        const void *s = c->s == MPI_IN_PLACE ? NULL : c->s;
        MPI_Fint cf = c->commf_set ? c->commf : MPI_Comm_c2f(c->comm), tf = MPI_Type_c2f(c->st), of = MPI_Op_c2f(c->op);
        switch (c->coll) {
        case C_AR: return tlmpi_allreduce_enqueue_f(s, c->r, (int64_t)c->count, tf, of, cf, stream);
        case C_AG: return tlmpi_allgather_enqueue_f(s, c->r, (int64_t)c->count, tf, cf, stream);
        default: return tlmpi_reduce_scatter_block_enqueue_f(s, c->r, (int64_t)c->count, tf, of, cf, stream);
        }
    }
    /* in place, allgather's send count and type are ignored (as in MPI): junk there */
    if (c->coll == C_AG && c->s == MPI_IN_PLACE) {
        if (c->entry == E_C) return tlmpi_allgather_enqueue_c(c->s, -3, MPI_DATATYPE_NULL, c->r, c->count, c->rt, c->comm, stream);
        if (c->entry == E_PLAIN) return tlmpi_allgather_enqueue(c->s, -3, MPI_DATATYPE_NULL, c->r, (int)c->count, c->rt, c->comm, stream);
    }
    if (c->entry == E_C) {
        switch (c->coll) {
        case C_AR: return tlmpi_allreduce_enqueue_c(c->s, c->r, c->count, c->st, c->op, c->comm, stream);
        case C_AG: return tlmpi_allgather_enqueue_c(c->s, c->count, c->st, c->r, c->count, c->rt, c->comm, stream);
        default: return tlmpi_reduce_scatter_block_enqueue_c(c->s, c->r, c->count, c->st, c->op, c->comm, stream);
        }
    }
    switch (c->coll) {
    case C_AR: return tlmpi_allreduce_enqueue(c->s, c->r, (int)c->count, c->st, c->op, c->comm, stream);
    case C_AG: return tlmpi_allgather_enqueue(c->s, (int)c->count, c->st, c->r, (int)c->count, c->rt, c->comm, stream);
    default: return tlmpi_reduce_scatter_block_enqueue(c->s, c->r, (int)c->count, c->st, c->op, c->comm, stream);
    }
}

static int err_class(int rc)
{
    int cls = rc;
    if (rc != MPI_SUCCESS && PMPI_Error_class(rc, &cls) != MPI_SUCCESS) cls = rc;
    return cls;
}

/* every counter of the three collectives, summed over paths and forms */
static unsigned long long all_calls(void)
{
    unsigned long long n = 0;
    int c, p;
    for (c = 0; c < C_N; c++) {
        for (p = 0; p < TLMPI_PATH_COUNT; p++) {
            tlmpi_stat_t st;
            if (tlmpi_get_stats(coll_ids[c], (tlmpi_path_t)p, &st) == TLMPI_OK) n += st.calls;
        }
    }
    return n;
}

static unsigned long long form_calls(int coll, tlmpi_path_t path, tlmpi_form_t form)
{
    tlmpi_stat_t st;
    return tlmpi_get_form_stats(coll_ids[coll], path, form, &st) == TLMPI_OK ? st.calls : 0;
}

/* a call that must fail with class want: checked, with tlmpi_enqueue_error() and no counter moved */
static void expect_fail(const call_t *c, int want, const char *what)
{
    unsigned long long n0 = all_calls();
    char e[MPI_MAX_ERROR_STRING + 32];
    const char *why;
    int rc = call(c), cls = err_class(rc);
    why = tlmpi_enqueue_error();
    TST_CHECK(cls == want, "%s%s (%s): returned %s, expected class %d", coll_names[c->coll], entry_names[c->entry], what,
              tst_err_string(rc, e), want);
    TST_CHECK(rc == MPI_SUCCESS || (why && *why), "%s%s (%s): tlmpi_enqueue_error() is empty after the failure",
              coll_names[c->coll], entry_names[c->entry], what);
    TST_CHECK(all_calls() == n0, "%s%s (%s): a failed call moved tlmpi's counters", coll_names[c->coll],
              entry_names[c->entry], what);
    if (rc == MPI_SUCCESS) cudaStreamSynchronize(g_st); /* (a wrongly accepted call: let it finish) */
}

/* ---------------------------------------------------------------- a: arguments */

/* The class the MPI itself gives the collective with MPI_DATATYPE_NULL on host buffers (the reductions:
 * MPICH 4.0.2 and Open MPI name the op first, MPI_ERR_OP) */
static int null_type_class(int coll)
{
    static int known[C_N];
    static char hs[64], hr[64];
    MPI_Comm d;
    int rc, cls = MPI_ERR_TYPE;

    if (known[coll]) return known[coll];
    PMPI_Comm_dup(MPI_COMM_WORLD, &d);
    PMPI_Comm_set_errhandler(d, MPI_ERRORS_RETURN);
    if (coll == C_AG) rc = PMPI_Allgather(hs, 1, MPI_DATATYPE_NULL, hr, 1, MPI_DATATYPE_NULL, d);
    else if (coll == C_RSB) rc = PMPI_Reduce_scatter_block(hs, hr, 1, MPI_DATATYPE_NULL, MPI_SUM, d);
    else rc = PMPI_Allreduce(hs, hr, 1, MPI_DATATYPE_NULL, MPI_SUM, d);
    if (rc != MPI_SUCCESS) PMPI_Error_class(rc, &cls);
    PMPI_Comm_free(&d);
    return known[coll] = cls;
}

static void case_args(void)
{
    MPI_Comm fatal;
    int coll, en, k, rc;
    const char *why;

    MPI_Comm_dup(MPI_COMM_WORLD, &fatal);
    MPI_Comm_set_errhandler(fatal, MPI_ERRORS_ARE_FATAL);
    for (k = 0; k < 2; k++) {
        MPI_Comm comm = k ? fatal : MPI_COMM_WORLD;
        for (coll = 0; coll < C_N; coll++) {
            for (en = 0; en < E_N; en++) {
                call_t c;
                c = base(coll, en, MPI_COMM_NULL);
                if (en == E_F) { c.commf = MPI_Comm_c2f(MPI_COMM_NULL); c.commf_set = 1; }
                expect_fail(&c, MPI_ERR_COMM, "MPI_COMM_NULL");
                c = base(coll, en, comm);
                c.count = -1;
                expect_fail(&c, MPI_ERR_COUNT, "count -1");
                c = base(coll, en, comm);
                c.st = c.rt = MPI_DATATYPE_NULL;
                expect_fail(&c, null_type_class(coll), "MPI_DATATYPE_NULL");
                if (coll == C_AG && en != E_F) {
                    c = base(coll, en, comm);
                    c.rt = MPI_DATATYPE_NULL;
                    expect_fail(&c, MPI_ERR_TYPE, "receive type MPI_DATATYPE_NULL");
                    c = base(coll, en, comm);
                    c.st = MPI_DATATYPE_NULL;
                    expect_fail(&c, MPI_ERR_TYPE, "send type MPI_DATATYPE_NULL");
                }
                if (coll != C_AG) {
                    c = base(coll, en, comm);
                    c.op = MPI_OP_NULL;
                    expect_fail(&c, MPI_ERR_OP, "MPI_OP_NULL");
                }
                c = base(coll, en, comm);
                c.r = h_r;
                expect_fail(&c, MPI_ERR_BUFFER, "host receive buffer");
                c = base(coll, en, comm);
                c.s = h_s;
                expect_fail(&c, MPI_ERR_BUFFER, "host send buffer");
                c = base(coll, en, comm);
                c.r = NULL;
                expect_fail(&c, MPI_ERR_BUFFER, "NULL receive buffer");
                c = base(coll, en, comm);
                c.s = MPI_IN_PLACE;
                c.r = h_r;
                expect_fail(&c, MPI_ERR_BUFFER, "in place on a host buffer");
            }
        }
    }
    rc = tlmpi_enqueue_prepare(MPI_COMM_NULL, 0);
    why = tlmpi_enqueue_error();
    TST_CHECK(err_class(rc) == MPI_ERR_COMM, "tlmpi_enqueue_prepare(MPI_COMM_NULL): rc %d, expected MPI_ERR_COMM", rc);
    TST_CHECK(why && *why, "tlmpi_enqueue_prepare(MPI_COMM_NULL): tlmpi_enqueue_error() is empty");
    rc = tlmpi_enqueue_prepare_f(MPI_Comm_c2f(MPI_COMM_NULL), 0);
    TST_CHECK(err_class(rc) == MPI_ERR_COMM, "tlmpi_enqueue_prepare_f(MPI_COMM_NULL): rc %d, expected MPI_ERR_COMM", rc);
    MPI_Comm_free(&fatal);
    if (g_rank == 0) printf("mpi_enqueue: case a (argument errors, every entry point, also under MPI_ERRORS_ARE_FATAL) done\n");
}

/* ---------------------------------------------------------------- results */

static int in_val(int r, int i, unsigned seed) { return (int)((seed * 31u + (unsigned)r * 7u + (unsigned)i * 3u) % 19u) - 9; }

/* inputs into d_s (or in place into d_r), d_r poisoned; the call c; results checked when it returned
 * (sync: the synchronous fallback) or after cudaStreamSynchronize */
static void run_checked(call_t c, int inplace, int sync, unsigned seed, const char *what)
{
    int p, i, n = (int)c.count, in_n, out_n, bad = 0, rc, rank, size;
    char e[MPI_MAX_ERROR_STRING + 32];
    int *img = tst_malloc(((size_t)N * g_size + 64) * sizeof(int));

    MPI_Comm_rank(c.comm, &rank);
    MPI_Comm_size(c.comm, &size);
    in_n = c.coll == C_RSB ? n * size : n;
    out_n = c.coll == C_AG ? n * size : n;
    for (i = 0; i < out_n + 16 || i < in_n + 16; i++) img[i] = 0x5a5a5a5a;
    if (inplace) {
        int *in = img + (c.coll == C_AG ? rank * n : 0);
        for (i = 0; i < in_n; i++) in[i] = in_val(rank, i, seed);
        c.s = MPI_IN_PLACE;
    } else {
        for (i = 0; i < in_n; i++) h_s[i] = in_val(rank, i, seed);
        TST_CUDA(cudaMemcpy(d_s, h_s, (size_t)in_n * sizeof(int), cudaMemcpyHostToDevice));
    }
    TST_CUDA(cudaMemcpy(d_r, img, (size_t)(out_n > in_n ? out_n : in_n) * sizeof(int) + 16 * sizeof(int), cudaMemcpyHostToDevice));
    rc = call(&c);
    TST_CHECK(rc == MPI_SUCCESS, "%s%s (%s): %s (tlmpi_enqueue_error: %s)", coll_names[c.coll], entry_names[c.entry], what,
              tst_err_string(rc, e), tlmpi_enqueue_error());
    if (!sync) TST_CUDA(cudaStreamSynchronize(g_st));
    TST_CUDA(cudaMemcpy(h_r, d_r, (size_t)(out_n > in_n ? out_n : in_n) * sizeof(int) + 16 * sizeof(int), cudaMemcpyDeviceToHost));
    for (i = 0; i < out_n; i++) {
        int want = 0;
        if (c.coll == C_AG) want = in_val(i / n, i % n, seed);
        else for (p = 0; p < size; p++) want += in_val(p, c.coll == C_RSB ? rank * n + i : i, seed);
        if (h_r[i] != want) {
            if (!bad) TST_FAIL("%s%s (%s, in place %d): element %d = %d, expected %d", coll_names[c.coll],
                               entry_names[c.entry], what, inplace, i, h_r[i], want);
            bad++;
        }
    }
    i = (inplace && in_n > out_n ? in_n : out_n);
    TST_CHECK(h_r[i] == 0x5a5a5a5a, "%s%s (%s, in place %d): the element after the output was overwritten",
              coll_names[c.coll], entry_names[c.entry], what, inplace);
    free(img);
}

/* ---------------------------------------------------------------- b: tiers without a stream */

static void case_nostream(const char *tier)
{
    MPI_Comm fb, plain;
    int coll, en, ip, rc;
    unsigned long long n0, n1;

    TST_CHECK(tlmpi_config_set("TIER", tier) == TLMPI_OK, "tlmpi_config_set(TIER, %s)", tier);
    MPI_Comm_dup(MPI_COMM_WORLD, &fb);
    MPI_Comm_dup(MPI_COMM_WORLD, &plain);
    rc = tlmpi_enqueue_prepare(fb, TLMPI_ENQUEUE_SYNC_FALLBACK);
    TST_CHECK(rc == MPI_SUCCESS, "tier %s: tlmpi_enqueue_prepare(SYNC_FALLBACK): rc %d (%s)", tier, rc, tlmpi_enqueue_error());
    rc = tlmpi_enqueue_prepare(plain, 0);
    TST_CHECK(rc == MPI_SUCCESS, "tier %s: tlmpi_enqueue_prepare(0): rc %d (%s)", tier, rc, tlmpi_enqueue_error());
    for (coll = 0; coll < C_N; coll++) {
        for (en = 0; en < E_N; en++) {
            call_t c = base(coll, en, plain);
            char what[64];
            snprintf(what, sizeof what, "tier %s, no fallback", tier);
            expect_fail(&c, MPI_ERR_UNSUPPORTED_OPERATION, what);
            c = base(coll, en, MPI_COMM_WORLD); /* never prepared: the default is no fallback */
            snprintf(what, sizeof what, "tier %s, world, default flags", tier);
            expect_fail(&c, MPI_ERR_UNSUPPORTED_OPERATION, what);
            for (ip = 0; ip < 2; ip++) {
                c = base(coll, en, fb);
                snprintf(what, sizeof what, "tier %s, TLMPI_ENQUEUE_SYNC_FALLBACK", tier);
                n0 = all_calls();
                run_checked(c, ip, 1, 7u * (unsigned)coll + 3u * (unsigned)en + (unsigned)ip, what);
                n1 = all_calls();
                TST_CHECK(n1 == n0 + 1, "%s%s (%s): %llu calls counted, expected 1", coll_names[coll], entry_names[en],
                          what, n1 - n0);
            }
        }
    }
    /* the fallback for every communicator through the setting */
    if (tlmpi_config_set("ENQUEUE_FALLBACK", "sync") == TLMPI_OK) {
        for (coll = 0; coll < C_N; coll++) {
            char what[64];
            snprintf(what, sizeof what, "tier %s, TLMPI_ENQUEUE_FALLBACK=sync", tier);
            run_checked(base(coll, E_PLAIN, plain), coll == C_AG, 1, 11u + (unsigned)coll, what);
        }
        TST_CHECK(tlmpi_config_set("ENQUEUE_FALLBACK", "error") == TLMPI_OK, "tlmpi_config_set(ENQUEUE_FALLBACK, error)");
    } else {
        TST_FAIL("tlmpi_config_set(ENQUEUE_FALLBACK, sync) refused");
    }
    /* a later prepare replaces the flags */
    rc = tlmpi_enqueue_prepare(fb, 0);
    TST_CHECK(rc == MPI_SUCCESS, "tier %s: tlmpi_enqueue_prepare(fb, 0): rc %d", tier, rc);
    {
        call_t c = base(C_AR, E_PLAIN, fb);
        expect_fail(&c, MPI_ERR_UNSUPPORTED_OPERATION, "fallback taken away by a later prepare");
    }
    rc = tlmpi_enqueue_prepare_f(MPI_Comm_c2f(fb), TLMPI_ENQUEUE_SYNC_FALLBACK);
    TST_CHECK(rc == MPI_SUCCESS, "tier %s: tlmpi_enqueue_prepare_f(fb, SYNC_FALLBACK): rc %d", tier, rc);
    run_checked(base(C_RSB, E_F, fb), 0, 1, 99u, "fallback set again by tlmpi_enqueue_prepare_f");
    MPI_Comm_free(&fb);
    MPI_Comm_free(&plain);
    if (g_rank == 0) printf("mpi_enqueue: case b (tier %s: unsupported without the fallback, synchronous with it) done\n", tier);
}

/* ---------------------------------------------------------------- c: eager enqueues */

static void case_eager(const char *tier, MPI_Comm comm, tlmpi_path_t path)
{
    int coll, en, ip, rc;
    MPI_Comm d;

    TST_CHECK(tlmpi_config_set("TIER", tier) == TLMPI_OK, "tlmpi_config_set(TIER, %s)", tier);
    MPI_Comm_dup(comm, &d);
    rc = tlmpi_enqueue_prepare(d, 0);
    TST_CHECK(rc == MPI_SUCCESS, "tier %s: tlmpi_enqueue_prepare: rc %d (%s)", tier, rc, tlmpi_enqueue_error());
    for (coll = 0; coll < C_N; coll++) {
        for (en = 0; en < E_N; en++) {
            for (ip = 0; ip < 2; ip++) {
                unsigned long long f0 = form_calls(coll, path, TLMPI_FORM_ENQUEUE), f1;
                char what[64];
                snprintf(what, sizeof what, "tier %s, eager", tier);
                run_checked(base(coll, en, ip & 1 ? d : comm), ip, 0, 5u * (unsigned)coll + (unsigned)en * 2u + (unsigned)ip,
                            what);
                f1 = form_calls(coll, path, TLMPI_FORM_ENQUEUE);
                TST_CHECK(f1 == f0 + 1, "%s%s (%s): the enqueue form on path %s moved by %llu, expected 1",
                          coll_names[coll], entry_names[en], what, tlmpi_path_name(path), f1 - f0);
            }
        }
    }
    MPI_Comm_free(&d);
    if (g_rank == 0) printf("mpi_enqueue: case c (eager enqueues, tier %s) done\n", tier);
}


/* ---------------------------------------------------------------- e: during capture (fake graphs) */

static void capture_status_ok(const char *what)
{
    enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    cudaError_t e = cudaStreamIsCapturing(g_st, &cs);
    TST_CHECK(e == cudaSuccess && cs == cudaStreamCaptureStatusActive, "%s: the stream no longer captures", what);
}

static void end_capture(const char *what, cudaGraph_t *g)
{
    cudaError_t e = cudaStreamEndCapture(g_st, g);
    TST_CHECK(e == cudaSuccess && *g, "%s: cudaStreamEndCapture: error %d", what, (int)e);
}

/* the fake runtime's record-node and edge counts of a graph (fake_graph_counts; -1 without it) */
static void graph_counts(cudaGraph_t g, int *records, int *edges)
{
    void (*f)(cudaGraph_t, int *, int *) = (void (*)(cudaGraph_t, int *, int *))dlsym(RTLD_DEFAULT, "fake_graph_counts");
    *records = *edges = -1;
    if (f) f(g, records, edges);
}

/* a mixing capture of k calls on one comm and stream: one event record node, one edge into it (from
 * the last call: order.c moves it to each later call) */
static void check_record_node(cudaGraph_t g, int k, const char *what)
{
    int r, e;
    graph_counts(g, &r, &e);
    if (r < 0) return;
    TST_CHECK(r == 1 && e == 1, "%s: the capture of %d calls made %d event record nodes and %d edges into them "
              "(expected 1 and 1: one record node per communicator and capture, its edge from the latest call)",
              what, k, r, e);
}

static void case_capture(void)
{
    MPI_Comm u, fb, d, dw;
    cudaGraph_t g = NULL;
    cudaGraphExec_t x = NULL;
    int coll, en, rc, order;
    unsigned long long c0, c1, e0, e1, n0;

    /* an unprepared communicator (a fresh dup, no call yet) during capture */
    TST_CHECK(tlmpi_config_set("TIER", g_size > 1 ? "nccl" : "self") == TLMPI_OK, "tlmpi_config_set(TIER)");
    MPI_Comm_dup(MPI_COMM_WORLD, &u);
    TST_CUDA(cudaStreamBeginCapture(g_st, cudaStreamCaptureModeGlobal));
    for (coll = 0; coll < C_N; coll++) {
        for (en = 0; en < E_N; en++) {
            call_t c = base(coll, en, u);
            expect_fail(&c, MPI_ERR_UNSUPPORTED_OPERATION, "unprepared communicator during capture");
        }
    }
    capture_status_ok("unprepared communicator");
    end_capture("unprepared communicator", &g);
    if (g) TST_CUDA(cudaGraphDestroy(g));
    g = NULL;
    /* prepared afterwards: the same calls are captured, counted once as captured, never as enqueued */
    rc = tlmpi_enqueue_prepare(u, 0);
    TST_CHECK(rc == MPI_SUCCESS, "tlmpi_enqueue_prepare after the refused capture: rc %d (%s)", rc, tlmpi_enqueue_error());
    for (coll = 0; coll < C_N; coll++) {
        tlmpi_path_t path = g_size > 1 ? TLMPI_PATH_NCCL : TLMPI_PATH_SELF;
        c0 = form_calls(coll, path, TLMPI_FORM_CAPTURE);
        e0 = form_calls(coll, path, TLMPI_FORM_ENQUEUE);
        TST_CUDA(cudaStreamBeginCapture(g_st, cudaStreamCaptureModeGlobal));
        for (en = 0; en < E_N; en++) {
            call_t c = base(coll, en, u);
            char e[MPI_MAX_ERROR_STRING + 32];
            rc = call(&c);
            TST_CHECK(rc == MPI_SUCCESS, "%s%s captured on a prepared dup: %s (%s)", coll_names[coll], entry_names[en],
                      tst_err_string(rc, e), tlmpi_enqueue_error());
        }
        capture_status_ok("prepared communicator");
        end_capture("prepared communicator", &g);
        if (g) check_record_node(g, E_N, coll_names[coll]);
        c1 = form_calls(coll, path, TLMPI_FORM_CAPTURE);
        e1 = form_calls(coll, path, TLMPI_FORM_ENQUEUE);
        TST_CHECK(c1 - c0 == E_N && e1 == e0, "%s: %d captured calls counted %llu captured and %llu enqueued on %s "
                  "(expected %d, 0)", coll_names[coll], E_N, c1 - c0, e1 - e0, tlmpi_path_name(path), E_N);
        if (g) {
            n0 = all_calls();
            TST_CUDA(cudaGraphInstantiate(&x, g, 0));
            TST_CUDA(cudaGraphLaunch(x, g_st));
            TST_CUDA(cudaStreamSynchronize(g_st));
            TST_CHECK(all_calls() == n0, "%s: a graph launch moved tlmpi's counters", coll_names[coll]);
            TST_CUDA(cudaGraphExecDestroy(x));
            TST_CUDA(cudaGraphDestroy(g));
        }
        g = NULL;
    }
    MPI_Comm_free(&u);

    /* the synchronous fallback never runs during capture */
    TST_CHECK(tlmpi_config_set("TIER", "staging") == TLMPI_OK, "tlmpi_config_set(TIER, staging)");
    MPI_Comm_dup(MPI_COMM_WORLD, &fb);
    rc = tlmpi_enqueue_prepare(fb, TLMPI_ENQUEUE_SYNC_FALLBACK);
    TST_CHECK(rc == MPI_SUCCESS, "staging: tlmpi_enqueue_prepare(SYNC_FALLBACK): rc %d", rc);
    TST_CUDA(cudaStreamBeginCapture(g_st, cudaStreamCaptureModeGlobal));
    for (coll = 0; coll < C_N; coll++) {
        for (en = 0; en < E_N; en++) {
            call_t c = base(coll, en, fb);
            expect_fail(&c, MPI_ERR_UNSUPPORTED_OPERATION, "staging with the fallback, during capture");
        }
    }
    capture_status_ok("the fallback during capture");
    end_capture("the fallback during capture", &g);
    if (g) TST_CUDA(cudaGraphDestroy(g));
    g = NULL;
    run_checked(base(C_AR, E_PLAIN, fb), 0, 1, 123u, "the fallback after the capture");
    MPI_Comm_free(&fb);

    /* the graph destroyed before and after MPI_Comm_free of its communicator (the order event's
     * lifetime: the graph's user object keeps it; no crash, nothing replayed after the free) */
    TST_CHECK(tlmpi_config_set("TIER", g_size > 1 ? "nccl" : "self") == TLMPI_OK, "tlmpi_config_set(TIER)");
    for (order = 0; order < 2; order++) {
        MPI_Comm_dup(MPI_COMM_WORLD, &d);
        MPI_Comm_dup(MPI_COMM_WORLD, &dw);
        TST_CHECK(tlmpi_enqueue_prepare(d, 0) == MPI_SUCCESS, "lifetime: prepare");
        TST_CHECK(tlmpi_enqueue_prepare(dw, TLMPI_ENQUEUE_NO_MIXING) == MPI_SUCCESS, "lifetime: prepare (no mixing)");
        TST_CUDA(cudaStreamBeginCapture(g_st, cudaStreamCaptureModeGlobal));
        for (coll = 0; coll < C_N; coll++) {
            call_t c = base(coll, E_PLAIN, d);
            TST_CHECK(call(&c) == MPI_SUCCESS, "lifetime %d: captured %s on d", order, coll_names[coll]);
            c = base(coll, E_C, dw);
            TST_CHECK(call(&c) == MPI_SUCCESS, "lifetime %d: captured %s on the no-mixing dup", order, coll_names[coll]);
        }
        end_capture("lifetime", &g);
        if (g) check_record_node(g, C_N, "lifetime (the no-mixing comm adds none)");
        if (g) TST_CUDA(cudaGraphInstantiate(&x, g, 0));
        if (order == 0) {
            if (g) { TST_CUDA(cudaGraphExecDestroy(x)); TST_CUDA(cudaGraphDestroy(g)); }
            MPI_Comm_free(&d);
            MPI_Comm_free(&dw);
        } else {
            MPI_Comm_free(&d);
            MPI_Comm_free(&dw);
            if (g) { TST_CUDA(cudaGraphExecDestroy(x)); TST_CUDA(cudaGraphDestroy(g)); }
        }
        g = NULL;
        x = NULL;
    }
    if (g_rank == 0) printf("mpi_enqueue: case e (capture on the fake runtime: unprepared communicator, no fallback during "
                            "capture, capture counters, graph and communicator destroyed in either order) done\n");
}

/* f: the shape of form f's last node kernel with the knob at M (the blocking call's column limit,
 * S the CTA limit of a kernel that may share the GPU): M columns taken in turn by at most S CTAs, or
 * where M == S (no columns taken in turn here) one column per CTA; rc: what the call returned */
static void check_knob_shape(tlmpi_form_t f, int S, int M, int rc)
{
    int cols = -1, ctas = -1;
    const char *fn = tlmpi_form_name ? tlmpi_form_name(f) : "?";

    TST_CHECK(tlmpi_get_node_shape(f, &cols, &ctas) == TLMPI_OK, "shape: %s, knob", fn);
    TST_CHECK(M > S ? cols == M && ctas <= S && ctas < cols : cols == ctas && ctas <= S,
              "node shape with TLMPI_NODE_CTAS=%d: %s %d:%d (want %d columns taken in turn by at most %d CTAs, or "
              "one column per CTA where they are equal; the call returned %d)", M, fn, cols, ctas, M, S,
              rc);
}

/* f: an enqueued pull allgather (blocks of count / size ints, past TLMPI_NODE_AG_PUSH_MAX) by
 * size: min(TLMPI_NODE_PULL_COLS, M) columns taken in turn by at most S CTAs, the columns of the
 * blocking call beside it; with the setting at 0 one column per CTA, as every other kind */
static void check_pull_shape(MPI_Comm d, int *ds, int *dr, size_t count, int S, int M)
{
    int per = (int)(count / (size_t)g_size), cols = -1, ctas = -1, bcols = -1, bctas = -1, rc;
    const int want = M < 128 ? M : 128; /* the setting's default: at or above the blocking limit */

    TST_CHECK(tlmpi_config_set("NODE_AG_PUSH_MAX", "4k") == TLMPI_OK, "tlmpi_config_set(NODE_AG_PUSH_MAX, 4k)");
    rc = tlmpi_allgather_enqueue(ds, per, MPI_INT, dr, per, MPI_INT, d, g_st);
    (void)cudaStreamSynchronize(g_st);
    TST_CHECK(tlmpi_get_node_shape(TLMPI_FORM_ENQUEUE, &cols, &ctas) == TLMPI_OK, "shape: pull allgather");
    TST_CHECK(cols == want && ctas <= S && (want > S ? ctas < cols : ctas == cols),
              "node shape, pull allgather by size: enqueue %d:%d (want %d columns, taken in turn by at most %d "
              "CTAs: TLMPI_NODE_PULL_COLS; the call returned %d)", cols, ctas, want, S, rc);
    (void)MPI_Allgather(ds, per, MPI_INT, dr, per, MPI_INT, d);
    TST_CHECK(tlmpi_get_node_shape(TLMPI_FORM_BLOCKING, &bcols, &bctas) == TLMPI_OK && bcols == cols,
              "node shape, pull allgather: enqueue %d:%d, blocking %d:%d (want the blocking call's columns)", cols,
              ctas, bcols, bctas);
    TST_CHECK(tlmpi_config_set("NODE_PULL_COLS", "0") == TLMPI_OK, "tlmpi_config_set(NODE_PULL_COLS, 0)");
    rc = tlmpi_allgather_enqueue(ds, per, MPI_INT, dr, per, MPI_INT, d, g_st);
    (void)cudaStreamSynchronize(g_st);
    TST_CHECK(tlmpi_get_node_shape(TLMPI_FORM_ENQUEUE, &cols, &ctas) == TLMPI_OK && cols == ctas && ctas <= S,
              "node shape, pull allgather with TLMPI_NODE_PULL_COLS=0: enqueue %d:%d (want one column per CTA, "
              "at most %d; the call returned %d)", cols, ctas, S, rc);
    TST_CHECK(tlmpi_config_set("NODE_PULL_COLS", "128") == TLMPI_OK, "tlmpi_config_set(NODE_PULL_COLS, 128)");
    TST_CHECK(tlmpi_config_set("NODE_AG_PUSH_MAX", "1m") == TLMPI_OK, "tlmpi_config_set(NODE_AG_PUSH_MAX, 1m)");
}

/* The limits the plan line names: "..., S CTAs max (blocking calls alone on the GPU: M), ..." */
static void node_limits(MPI_Comm d, int *S, int *M, char *buf, size_t len)
{
    const char *m;

    *S = *M = 0;
    TST_CHECK(tlmpi_comm_describe(d, buf, len) == TLMPI_OK, "node shape: describe");
    if ((m = strstr(buf, " CTAs max (blocking calls alone on the GPU: ")) != NULL) {
        const char *a = m;
        while (a > buf && a[-1] >= '0' && a[-1] <= '9') a--;
        *S = atoi(a);
        *M = atoi(m + strlen(" CTAs max (blocking calls alone on the GPU: "));
    }
    TST_CHECK(*S > 0 && *M >= *S, "node shape: the plan names no CTA limits (S %d, M %d): %s", *S, *M, buf);
}

/* A blocking pull allgather's CTAs before any stream-ordered call of the process: all its columns on
 * a GPU that holds only the comm's ranks, at most S of them where the launcher's local size says the
 * GPU also runs ranks of other communicators (their kernels, NCCL's in the hier tier's rail step,
 * must find room while this one waits for a peer that waits for them). */
static void check_outsiders_shape(int *ds, int *dr, size_t count)
{
    const int per = (int)(count / (size_t)g_size);
    const char *was = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
    char saved[32] = "", buf[4096], v[16];
    int pass, S, M, cols, ctas, ndev = 1;

    if (was) snprintf(saved, sizeof saved, "%s", was);
    (void)cudaGetDeviceCount(&ndev);
    TST_CHECK(tlmpi_config_set("NODE_AG_PUSH_MAX", "4k") == TLMPI_OK, "tlmpi_config_set(NODE_AG_PUSH_MAX, 4k)");
    for (pass = 0; pass < 2; pass++) {
        MPI_Comm d;

        if (pass == 1) {
            /* twice as many local ranks as fake GPUs: two ranks of the job on each rank's GPU */
            snprintf(v, sizeof v, "%d", 2 * (ndev > 0 ? ndev : 1));
            setenv("OMPI_COMM_WORLD_LOCAL_SIZE", v, 1);
        }
        MPI_Comm_dup(MPI_COMM_WORLD, &d);
        (void)MPI_Allgather(ds, per, MPI_INT, dr, per, MPI_INT, d); /* the node tier's setup, then the call */
        node_limits(d, &S, &M, buf, sizeof buf);
        (void)MPI_Allgather(ds, per, MPI_INT, dr, per, MPI_INT, d);
        TST_CHECK(tlmpi_get_node_shape(TLMPI_FORM_BLOCKING, &cols, &ctas) == TLMPI_OK, "shape: blocking pull allgather");
        if (pass == 0) {
            TST_CHECK(cols > S && ctas == cols && !strstr(buf, "other communicators"),
                      "node shape, blocking pull allgather, the GPU the comm's own: %d:%d (want more columns than %d, "
                      "all launched: the kernel alone on the GPU): %s", cols, ctas, S, buf);
        } else {
            TST_CHECK(cols > S && ctas <= S && strstr(buf, "other communicators"),
                      "node shape, blocking pull allgather, ranks of other communicators on the GPU "
                      "(OMPI_COMM_WORLD_LOCAL_SIZE=%s): %d:%d (want the columns taken in turn by at most %d CTAs): %s",
                      v, cols, ctas, S, buf);
        }
        MPI_Comm_free(&d);
    }
    if (was) setenv("OMPI_COMM_WORLD_LOCAL_SIZE", saved, 1);
    else unsetenv("OMPI_COMM_WORLD_LOCAL_SIZE");
    TST_CHECK(tlmpi_config_set("NODE_AG_PUSH_MAX", "1m") == TLMPI_OK, "tlmpi_config_set(NODE_AG_PUSH_MAX, 1m)");
}

/* The barriers' memory scope, from the plan line: system scope where the comm's ranks are on GPUs of
 * their own (the fakes give every rank one), GPU scope where every rank runs on one GPU (every rank
 * made device 0 current before the comm's first call: one PCI bus id in every IPC record; the node
 * tier's setup there runs its smoke-test barrier kernel, which the fakes then launch as a no-op). */
static void check_barrier_scope(void)
{
    const size_t count = 1 << 16;
    int dev = -1, pass, *ds, *dr;
    char buf[4096];

    TST_CUDA(cudaGetDevice(&dev));
    for (pass = 0; pass < 3; pass++) {
        int mine = pass ? 0 : dev, lo = mine, hi = mine, S, M, want;
        MPI_Comm d;

        if (pass == 2) TST_CHECK(tlmpi_config_set("NODE_BARRIER_SCOPE", "system") == TLMPI_OK, "config NODE_BARRIER_SCOPE");

        TST_CUDA(cudaSetDevice(mine));
        TST_CUDA(cudaMalloc((void **)&ds, count * sizeof(int)));
        TST_CUDA(cudaMalloc((void **)&dr, count * sizeof(int) * (size_t)g_size));
        TST_CUDA(cudaMemset(ds, 0, count * sizeof(int)));
        (void)MPI_Allreduce(&mine, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        (void)MPI_Allreduce(&mine, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        MPI_Comm_dup(MPI_COMM_WORLD, &d);
        if (pass) setenv("FAKE_CUDA_LAUNCH_NOOP", "1", 1);
        (void)MPI_Allgather(ds, (int)count, MPI_INT, dr, (int)count, MPI_INT, d); /* the node tier's setup */
        unsetenv("FAKE_CUDA_LAUNCH_NOOP");
        node_limits(d, &S, &M, buf, sizeof buf);
        want = lo == hi && pass < 2;
        TST_CHECK((strstr(buf, "barriers at GPU scope") != NULL) == want,
                  "barrier scope: the comm's ranks on devices %d..%d%s, want %s scope: %s", lo, hi,
                  pass == 2 ? ", TLMPI_NODE_BARRIER_SCOPE=system" : "", want ? "GPU" : "system", buf);
        MPI_Comm_free(&d);
        TST_CUDA(cudaFree(ds));
        TST_CUDA(cudaFree(dr));
    }
    TST_CHECK(tlmpi_config_set("NODE_BARRIER_SCOPE", "auto") == TLMPI_OK, "config NODE_BARRIER_SCOPE auto");
    TST_CUDA(cudaSetDevice(dev));
}

/* f: blocking allreduces of `count` ints by size, past S columns where the blocking call may be alone
 * (M > S), after the process made a stream-ordered call: on d, which carried it, the columns and CTAs
 * of d's enqueued call (cols:ctas, one column per CTA); on a fresh dup, which never did, M columns
 * taken in turn by at most S CTAs (the process is never alone again: tlmpi_gpu_alone) */
static void check_streamed_blocking(MPI_Comm d, int *ds, int *dr, size_t count, int S, int M, int cols, int ctas)
{
    int bc = -1, bt = -1;
    MPI_Comm d2;

    (void)MPI_Allreduce(ds, dr, (int)count, MPI_INT, MPI_SUM, d);
    TST_CHECK(tlmpi_get_node_shape(TLMPI_FORM_BLOCKING, &bc, &bt) == TLMPI_OK && bc == cols && bt == ctas,
              "node shape, blocking allreduce on a comm that carried a stream-ordered call: %d:%d (want its "
              "enqueued call's %d:%d)", bc, bt, cols, ctas);
    MPI_Comm_dup(MPI_COMM_WORLD, &d2);
    (void)MPI_Allreduce(ds, dr, (int)count, MPI_INT, MPI_SUM, d2); /* the node tier's setup, then the call */
    (void)MPI_Allreduce(ds, dr, (int)count, MPI_INT, MPI_SUM, d2);
    TST_CHECK(tlmpi_get_node_shape(TLMPI_FORM_BLOCKING, &bc, &bt) == TLMPI_OK && bc == M && bt <= S && bt < bc,
              "node shape, blocking allreduce on a comm that carried none: %d:%d (want %d columns taken in turn by at "
              "most %d CTAs)", bc, bt, M, S);
    MPI_Comm_free(&d2);
}

/* f: the node kernel's shape (see the head of this file) */
static void case_node_shape(void)
{
    const size_t count = 1 << 18; /* 1 MiB of ints: past the LL kernels */
    int *ds, *dr, cols = -1, ctas = -1, c2, t2, S = 0, M = 0, rc;
    char buf[4096], v[16];
    MPI_Comm d;

    if (!tlmpi_get_node_shape) {
        TST_CHECK(0, "this libtlmpi has no tlmpi_get_node_shape");
        return;
    }
    TST_CHECK(tlmpi_get_node_shape(TLMPI_FORM_COUNT, &cols, &ctas) == TLMPI_ERR_INVALID_ARG, "shape: form out of range");
    TST_CHECK(tlmpi_get_node_shape(TLMPI_FORM_ENQUEUE, NULL, &ctas) == TLMPI_ERR_INVALID_ARG, "shape: NULL cols");
    TST_CHECK(tlmpi_get_node_shape(TLMPI_FORM_ENQUEUE, &cols, NULL) == TLMPI_ERR_INVALID_ARG, "shape: NULL ctas");
    TST_CUDA(cudaMalloc((void **)&ds, count * sizeof(int)));
    TST_CUDA(cudaMalloc((void **)&dr, count * sizeof(int)));
    TST_CUDA(cudaMemset(ds, 0, count * sizeof(int)));
    TST_CHECK(tlmpi_config_set("TIER", "node") == TLMPI_OK, "tlmpi_config_set(TIER, node)");
    TST_CHECK(tlmpi_config_set("NODE_CTAS", "0") == TLMPI_OK, "tlmpi_config_set(NODE_CTAS, 0)");
    check_outsiders_shape(ds, dr, count); /* first: before any stream-ordered call (tlmpi_gpu_alone) */
    check_barrier_scope();
    MPI_Comm_dup(MPI_COMM_WORLD, &d);
    TST_CHECK(tlmpi_enqueue_prepare(d, 0) == MPI_SUCCESS, "node shape: prepare");
    node_limits(d, &S, &M, buf, sizeof buf);
    rc = tlmpi_allreduce_enqueue(ds, dr, (int)count, MPI_INT, MPI_SUM, d, g_st);
    (void)cudaStreamSynchronize(g_st);
    TST_CHECK(tlmpi_get_node_shape(TLMPI_FORM_ENQUEUE, &cols, &ctas) == TLMPI_OK, "shape: enqueue");
    TST_CHECK(cols == ctas && ctas >= 1 && ctas <= S, "node shape by size: enqueue %d:%d (want one column per CTA, "
              "at most %d CTAs; the call returned %d)", cols, ctas, S, rc);
    TST_CHECK(tlmpi_get_node_shape(TLMPI_FORM_CAPTURE, &c2, &t2) == TLMPI_OK && c2 == cols && t2 == ctas,
              "shape: capture reads the enqueue form's (%d:%d, %d:%d)", c2, t2, cols, ctas);
    check_streamed_blocking(d, ds, dr, count, S, M, cols, ctas);
    snprintf(v, sizeof v, "%d", M);
    TST_CHECK(tlmpi_config_set("NODE_CTAS", v) == TLMPI_OK, "tlmpi_config_set(NODE_CTAS, %s)", v);
    rc = tlmpi_allreduce_enqueue(ds, dr, (int)count, MPI_INT, MPI_SUM, d, g_st);
    (void)cudaStreamSynchronize(g_st);
    check_knob_shape(TLMPI_FORM_ENQUEUE, S, M, rc);
    (void)MPI_Allreduce(ds, dr, (int)count, MPI_INT, MPI_SUM, d);
    TST_CHECK(tlmpi_get_node_shape(TLMPI_FORM_BLOCKING, &cols, &ctas) == TLMPI_OK && cols == M && ctas >= 1 &&
                  ctas <= M, "node shape with TLMPI_NODE_CTAS=%d: blocking %d:%d", M, cols, ctas);
    {
        MPI_Request rq = MPI_REQUEST_NULL;

        rc = MPI_Iallreduce(ds, dr, (int)count, MPI_INT, MPI_SUM, d, &rq);
        if (rq != MPI_REQUEST_NULL) (void)MPI_Wait(&rq, MPI_STATUS_IGNORE);
        check_knob_shape(TLMPI_FORM_NONBLOCKING, S, M, rc);
    }
    TST_CHECK(tlmpi_config_set("NODE_CTAS", "0") == TLMPI_OK, "tlmpi_config_set(NODE_CTAS, 0)");
    check_pull_shape(d, ds, dr, count, S, M);
    if (g_rank == 0) printf("mpi_enqueue: case f (node kernel shape; limits %d / %d) done\n", S, M);
    MPI_Comm_free(&d);
    TST_CUDA(cudaFree(ds));
    TST_CUDA(cudaFree(dr));
}

/* d: tlmpi_enqueue_error() after a failure and a success */
static void case_after_failure(void)
{
    call_t c = base(C_AR, E_PLAIN, MPI_COMM_NULL);
    const char *why;
    int rc;

    (void)call(&c);
    TST_CHECK(tlmpi_config_set("TIER", "self") == TLMPI_OK, "tlmpi_config_set(TIER, self)");
    c = base(C_AR, E_PLAIN, MPI_COMM_SELF);
    rc = call(&c);
    TST_CHECK(rc == MPI_SUCCESS, "self allreduce after a failure: rc %d", rc);
    TST_CUDA(cudaStreamSynchronize(g_st));
    why = tlmpi_enqueue_error();
    if (g_rank == 0) printf("mpi_enqueue: tlmpi_enqueue_error() after a failure and then a success: \"%s\"\n", why ? why : "(null)");
}

int main(int argc, char **argv)
{
    size_t bytes;
    int node_shape;

    tst_init("mpi_enqueue", &argc, &argv);
    if (!tlmpi_allreduce_enqueue || !tlmpi_enqueue_prepare || !tlmpi_enqueue_error)
        return tst_skip("this libtlmpi has no stream-ordered entry points (tlmpi_*_enqueue)");
    g_rank = tst_rank;
    g_size = tst_size;
    node_shape = argc > 1 && !strcmp(argv[1], "--node-shape");
    if (node_shape) {
        int ndev = 0;
        /* a fake GPU of its own per rank: the node tier's setup then runs no barrier kernel */
        TST_CUDA(cudaGetDeviceCount(&ndev));
        if (ndev > 0) TST_CUDA(cudaSetDevice(g_rank % ndev));
    }
    bytes = ((size_t)N * (size_t)g_size + 64) * sizeof(int);
    TST_CUDA(cudaMalloc((void **)&d_s, bytes));
    TST_CUDA(cudaMalloc((void **)&d_r, bytes));
    h_s = tst_malloc(bytes);
    h_r = tst_malloc(bytes);
    memset(h_s, 0, bytes);
    TST_CUDA(cudaMemset(d_s, 0, bytes));
    TST_CUDA(cudaStreamCreateWithFlags(&g_st, cudaStreamNonBlocking));

    if (node_shape) {
        tst_expect("the node kernel's shape for each form (tlmpi_get_node_shape)");
        case_node_shape();
    } else {
        tst_expect("argument errors of the enqueue entry points");
        case_args();
        case_nostream("staging");
        case_nostream("mpi");
        if (g_size > 1) case_eager("nccl", MPI_COMM_WORLD, TLMPI_PATH_NCCL);
        case_eager("self", MPI_COMM_SELF, TLMPI_PATH_SELF);
        case_capture();
        case_after_failure();
    }
    TST_CUDA(cudaStreamDestroy(g_st));
    TST_CUDA(cudaFree(d_s));
    TST_CUDA(cudaFree(d_r));
    free(h_s);
    free(h_r);
    return tst_finish();
}
