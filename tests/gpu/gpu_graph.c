/*
 * gpu_graph: GPU test of tlmpi's stream-ordered collectives and CUDA graph capture (issue 21, item
 * 1): tlmpi_allreduce_enqueue / tlmpi_allgather_enqueue / tlmpi_reduce_scatter_block_enqueue (and
 * their _c and _f forms) on device buffers, on the node tier (TLMPI_TIER=node: tests/gpu/graph.sh
 * runs it with 2, 4 and 8 ranks on one GPU under MPS, and again with a 1 MiB node pool so that
 * the larger messages take several pool chunks). Exit 77 without a GPU.
 *
 *   gpu_graph [--replays N] [--overflow] [--quick] [--any-path] [--no-algo-check] [--no-graph]
 *
 * (--any-path: no path / algorithm checks, for a run on another tier; --no-algo-check: no
 * algorithm counter checks; --overflow adds the 3 and 5 MiB sequence, for the small-pool run;
 * --no-graph: only the uncaptured runs of the sequences and the unprepared-communicator case, for a
 * check of the test itself against the CPU fakes, whose graphs run nothing: LD_PRELOAD of
 * tests/mpi/.libs/libfakecudart.so, TLMPI_NCCL_LIBRARY=tests/mpi/.libs/libfakenccl.so,
 * TLMPI_TIER=nccl, --any-path --no-graph.)
 *
 * A sequence is a list of calls (collective, communicator, type, op, in place or not, count),
 * each with its own send and receive regions in one device arena (element-aligned, not 16-byte
 * aligned offsets; 64 bytes either side of every region poisoned with a byte that changes per call
 * and replay). The main sequence crosses every node algorithm threshold at the default settings
 * (src/core/env.def: TLMPI_NODE_LL_MAX 8k, TLMPI_NODE_ONESHOT_MAX 256k, TLMPI_NODE_AG_PUSH_MAX
 * 1m: allreduce ll / one-shot / two-shot, allgather ll / push / pull, reduce_scatter_block ll /
 * pull), several types and ops, in place and not, the plain, _c and _f entry points, on
 * MPI_COMM_WORLD (prepared by tlmpi_enqueue_prepare) and a dup (prepared by a blocking device
 * call) interleaved: two communicators in one graph.
 *
 * A sequence runs as
 *   graph      captured once (cudaStreamBeginCapture in cudaStreamCaptureModeGlobal, on a
 *              non-blocking stream): a cudaMemcpyAsync of the whole arena from a pinned host image,
 *              the calls, a cudaMemcpyAsync of the arena back into pinned host memory; then replayed
 *              N times (default 200), the host writing new inputs (a hash of seed, call, rank,
 *              element: gpu_values.h) and new poison into the image before every cudaGraphLaunch,
 *              every replay's outputs checked against the exact (integers) or f64 (floats, with
 *              gpu_values.h's tolerance) host reference, the poison around them and the send
 *              regions unchanged;
 *   eager      the same with the tlmpi_*_enqueue calls made directly (on the graph's stream or a
 *              second one), one stream synchronisation;
 *   blocking / non-blocking  MPI_Allreduce etc. / MPI_Iallreduce etc. (an MPI_Test loop).
 * Between replays, every few of them, a small sequence on the same communicators runs eager (same
 * stream and a second stream), blocking or non-blocking, checked too; in mixing mode (the default)
 * also concurrently: right after cudaGraphLaunch, before the stream is synchronised (ordered by
 * tlmpi's communicator order, the reason for the mode).
 * Every capture: every call returns MPI_SUCCESS, the stream still capturing (status active) after
 * each, cudaStreamEndCapture returns cudaSuccess and cudaGraphInstantiate works (global capture mode
 * stays valid: tlmpi allocates, synchronises and uses the legacy stream nowhere during capture).
 * Counters (tlmpi_get_form_stats, tlmpi_get_stats): a capture counts each call once in
 * TLMPI_FORM_CAPTURE and on the node path, a replay counts nothing, an eager call counts in
 * TLMPI_FORM_ENQUEUE, blocking / non-blocking calls in their forms; the eager run of the main
 * sequence moves each node algorithm's counter (tlmpi_get_algo_stats) by the calls expected on it.
 *
 * Sections: main sequence, graph + eager + blocking + non-blocking (and a thread-local capture of
 * it); a capture made while non-blocking calls on the same communicators are in flight; an eager
 * call on another stream right after each launch of a graph whose last call of the comm comes
 * milliseconds after its first (it must wait for the last); a sequence on a communicator prepared with TLMPI_ENQUEUE_NO_MIXING (uncaptured calls only
 * between replays, after a stream synchronisation); graph and communicator destroyed in either
 * order (graph first; MPI_Comm_free first, the graph destroyed after, never replayed); a call on
 * an unprepared communicator (a fresh MPI_Comm_dup) during capture: MPI_ERR_UNSUPPORTED_OPERATION,
 * tlmpi_enqueue_error() says why, the capture still ends with cudaSuccess; --overflow: 3 and 5 MiB
 * messages (several pool chunks with graph.sh's TLMPI_NODE_POOL=1m), fewer replays (20).
 * Every wait is bounded (stream polls and MPI_Test loops: 60 s, then a failure and MPI_Abort).
 * Prints "RESULT gpu_graph np=N cases=C failures=F time=Ts PASS|FAIL" on rank 0.
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

#define GPU_TEST_NAME "gpu_graph"
#include "gpu_modes.h"

enum { F_PLAIN, F_C, F_F }; /* entry point: tlmpi_<coll>_enqueue, _c, _f */
static const char *const form_entry[3] = { "", "_c", "_f" };
enum { R_GRAPH, R_EAGER, R_EAGER2, R_BLOCKING, R_NONBLOCKING, R_N }; /* how a sequence runs */
static const char *const run_names[R_N] = { "graph", "eager", "eager (second stream)", "blocking", "non-blocking" };

#define GUARD 64
#define LOOP_LIMIT_S 60.0
#define NF TLMPI_FORM_COUNT

static int g_rank, g_size, g_quick, g_anypath, g_noalgo, g_overflow, g_nograph, g_replays = 200;
static long g_cases;
static unsigned long long g_seed; /* the same on every rank */
static cudaStream_t g_st, g_st2;  /* non-blocking streams */

static void limit_abort(double t0, const char *what)
{
    if (now() - t0 > LOOP_LIMIT_S) {
        fprintf(stderr, "[gpu_graph r%d] FAIL: %s did not complete within %.0f s: aborting\n", g_rank, what, LOOP_LIMIT_S);
        fflush(stderr);
        MPI_Abort(MPI_COMM_WORLD, 5);
    }
}

/* wait for a stream, bounded */
static void sync_bounded(cudaStream_t s, const char *what)
{
    double t0 = now();
    cudaError_t e;
    while ((e = cudaStreamQuery(s)) == cudaErrorNotReady) limit_abort(t0, what);
    if (e != cudaSuccess) {
        fprintf(stderr, "[gpu_graph r%d] FAIL: %s: the stream reports %s: aborting\n", g_rank, what, cudaGetErrorString(e));
        fflush(stderr);
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
}

/* ---------------------------------------------------------------- counters */

typedef struct {
    unsigned long long path[C_N][MAXP], form[C_N][NF], algo[C_N][5];
    unsigned long long exp_form[C_N][NF], exp_node[C_N], exp_algo[C_N][5]; /* expected deltas */
    int algo_checked;
} snap_t;

static const char *const algo_names[5] = { "ll", "oneshot", "twoshot", "push", "pull" }; /* src/tier/node.c */

static void snap_read(unsigned long long path[C_N][MAXP], unsigned long long form[C_N][NF],
                      unsigned long long algo[C_N][5])
{
    int c, k, f;
    tlmpi_stat_t st;
    for (c = 0; c < C_N; c++) {
        for (f = 0; f < NF; f++) form[c][f] = 0;
        for (k = 0; k < g_npaths && k < MAXP; k++) {
            path[c][k] = tlmpi_get_stats(coll_ids[c], (tlmpi_path_t)k, &st) == TLMPI_OK ? st.calls : 0;
            for (f = 0; f < NF; f++)
                form[c][f] += tlmpi_get_form_stats(coll_ids[c], (tlmpi_path_t)k, (tlmpi_form_t)f, &st) == TLMPI_OK ? st.calls : 0;
        }
        for (k = 0; k < 5; k++)
            algo[c][k] = tlmpi_get_algo_stats(coll_ids[c], TLMPI_PATH_NODE, algo_names[k], &st) == TLMPI_OK ? st.calls : 0;
    }
}

static void snap_begin(snap_t *s)
{
    memset(s, 0, sizeof *s);
    snap_read(s->path, s->form, s->algo);
}

/* compare the counters' movement with what was expected since snap_begin */
static void snap_check(const snap_t *s, const char *label)
{
    unsigned long long path[C_N][MAXP], form[C_N][NF], algo[C_N][5];
    int c, k, f;
    snap_read(path, form, algo);
    for (c = 0; c < C_N; c++) {
        unsigned long long all = 0, want = 0;
        for (f = 0; f < NF; f++) {
            unsigned long long d = form[c][f] - s->form[c][f];
            want += s->exp_form[c][f];
            TST_CHECK(d == s->exp_form[c][f], "%s: %s: form %s moved by %llu, expected %llu", label, coll_names[c],
                      tlmpi_form_name((tlmpi_form_t)f) ? tlmpi_form_name((tlmpi_form_t)f) : "?", d, s->exp_form[c][f]);
        }
        for (k = 0; k < g_npaths && k < MAXP; k++) all += path[c][k] - s->path[c][k];
        TST_CHECK(all == want, "%s: %s: %llu calls counted over all paths, expected %llu", label, coll_names[c], all, want);
        if (!g_anypath) {
            unsigned long long d = path[c][TLMPI_PATH_NODE] - s->path[c][TLMPI_PATH_NODE];
            TST_CHECK(d == s->exp_node[c], "%s: %s: node path moved by %llu, expected %llu", label, coll_names[c], d,
                      s->exp_node[c]);
        }
        if (s->algo_checked && !g_anypath && !g_noalgo) {
            for (k = 0; k < 5; k++) {
                unsigned long long d = algo[c][k] - s->algo[c][k];
                TST_CHECK(d == s->exp_algo[c][k], "%s: %s: node algorithm %s moved by %llu, expected %llu", label,
                          coll_names[c], algo_names[k], d, s->exp_algo[c][k]);
            }
        }
    }
}

/* ---------------------------------------------------------------- sequences */

typedef struct {
    MPI_Comm comm;
    int coll, op, inplace, entry;
    const dtinfo_t *t;
    size_t count;
    /* layout and state */
    int rank, p;
    size_t in_n, out_n, sreg, rreg, sspan, rspan, sdat, rdat; /* regions (arena offsets), spans, data offsets */
    unsigned long long cs;
    unsigned char pz;
} gop_t;

typedef struct {
    const char *name;
    gop_t ops[32];
    int n;
    size_t bytes;
    char *dev;          /* device arena */
    char *h_in, *h_out; /* pinned host: the image copied in, the arena copied back */
    int calls[C_N];
} seq_t;

static size_t off_of(unsigned long long cs, int which, size_t esz)
{
    return ((((cs >> (2 * which + 3)) ^ (cs >> 11)) & 3) * 3 * esz) % 48;
}

static void seq_add(seq_t *q, MPI_Comm comm, int coll, const char *tn, int op, int inplace, size_t count, int entry)
{
    gop_t *x = &q->ops[q->n++];
    memset(x, 0, sizeof *x);
    x->comm = comm;
    x->coll = coll;
    x->t = type_by_name(tn);
    x->op = op;
    x->inplace = inplace;
    x->count = count;
    x->entry = entry;
    q->calls[coll]++;
}

/* lay out the arena and allocate it (outside any capture) */
static void seq_layout(seq_t *q)
{
    size_t total = 0;
    int i;
    for (i = 0; i < q->n; i++) {
        gop_t *x = &q->ops[i];
        size_t esz = (size_t)x->t->size, in_b, out_b;
        MPI_Comm_rank(x->comm, &x->rank);
        MPI_Comm_size(x->comm, &x->p);
        sizes_of(x->coll, x->count, x->p, &x->in_n, &x->out_n);
        in_b = x->in_n * esz;
        out_b = x->out_n * esz;
        x->sspan = x->inplace ? 0 : GUARD + 48 + in_b + GUARD;
        x->sreg = total;
        total += (x->sspan + 255) & ~(size_t)255;
        x->rspan = GUARD + 48 + (out_b > in_b ? out_b : in_b) + GUARD;
        x->rreg = total;
        total += (x->rspan + 255) & ~(size_t)255;
        /* element-aligned data offsets, fixed for the sequence's life (a graph holds the pointers) */
        x->rdat = x->rreg + GUARD + off_of(mix(g_seed + 2 * (unsigned long long)i), 0, esz);
        x->sdat = x->sreg + GUARD + off_of(mix(g_seed + 2 * (unsigned long long)i + 1), 1, esz);
    }
    g_seed += 2 * (unsigned long long)q->n;
    q->bytes = total;
    TST_CUDA(cudaMalloc((void **)&q->dev, total));
    TST_CUDA(cudaHostAlloc((void **)&q->h_in, total, cudaHostAllocDefault));
    TST_CUDA(cudaHostAlloc((void **)&q->h_out, total, cudaHostAllocDefault));
    memset(q->h_in, 0, total);
    memset(q->h_out, 0, total);
}

static void seq_free(seq_t *q)
{
    if (q->dev) TST_CUDA(cudaFree(q->dev));
    if (q->h_in) TST_CUDA(cudaFreeHost(q->h_in));
    if (q->h_out) TST_CUDA(cudaFreeHost(q->h_out));
    q->dev = q->h_in = q->h_out = NULL;
}

/* new inputs and poison for every call of the sequence, into the host image (same seeds on every rank) */
static void seq_fill(seq_t *q)
{
    int j;
    for (j = 0; j < q->n; j++) {
        gop_t *x = &q->ops[j];
        size_t esz = (size_t)x->t->size, i;
        char *in;
        x->cs = ++g_seed;
        x->pz = (unsigned char)(0xA0 | (mix(x->cs) & 0x1f));
        memset(q->h_in + x->rreg, x->pz, x->rspan);
        if (x->sspan) memset(q->h_in + x->sreg, x->pz ^ 0x5a, x->sspan);
        in = x->inplace ? q->h_in + x->rdat + (x->coll == C_AG ? (size_t)x->rank * x->count * esz : 0) : q->h_in + x->sdat;
        for (i = 0; i < x->in_n; i++) put(x->t, in, i, val(x->t, x->cs, x->rank, i));
    }
}

static void op_label(const seq_t *q, int j, const char *how, char *buf, size_t len)
{
    const gop_t *x = &q->ops[j];
    snprintf(buf, len, "%s call %d (%s): %s%s %s %s inplace=%d count=%zu %s np=%d", q->name, j, how,
             coll_names[x->coll], form_entry[x->entry], x->t->name, x->coll == C_AG ? "-" : op_names[x->op], x->inplace,
             x->count, x->comm == MPI_COMM_WORLD ? "world" : "dup", x->p);
}

/* check every call's outputs in the arena read back (h_out); number of wrong calls */
static int seq_check(seq_t *q, const char *how)
{
    int j, badcalls = 0;
    for (j = 0; j < q->n; j++) {
        gop_t *x = &q->ops[j];
        size_t esz = (size_t)x->t->size, i, bad = 0, tail, in_b = x->in_n * esz, out_b = x->out_n * esz;
        const char *out = q->h_out + x->rdat;
        const unsigned char *r = (const unsigned char *)q->h_out + x->rreg;
        char msg[256];
        op_label(q, j, how, msg, sizeof msg);
        for (i = 0; i < x->out_n; i++) {
            double e, tol, got = get(x->t, out, i);
            if (x->coll == C_AG) {
                e = val(x->t, x->cs, (int)(i / x->count), i % x->count);
                tol = 0;
            } else {
                e = ref(x->t, x->cs, x->op, x->p, x->coll == C_RSB ? (size_t)x->rank * x->count + i : i, &tol);
            }
            if (!(fabs(got - e) <= tol)) {
                if (!bad) TST_FAIL("%s: element %zu = %.9g, expected %.9g (tol %.3g)", msg, i, got, e, tol);
                bad++;
            }
        }
        if (bad > 1) TST_FAIL("%s: %zu of %zu elements wrong", msg, bad, x->out_n);
        for (i = 0; i < x->rdat - x->rreg; i++) {
            if (r[i] != x->pz) {
                TST_FAIL("%s: byte %zu before the output overwritten (0x%02x, poison 0x%02x)", msg, i, r[i], x->pz);
                bad++;
                break;
            }
        }
        /* in place, reduce_scatter_block leaves the input beyond the own block undefined */
        tail = (x->rdat - x->rreg) + (x->inplace && in_b > out_b ? in_b : out_b);
        for (i = tail; i < x->rspan; i++) {
            if (r[i] != x->pz) {
                TST_FAIL("%s: byte %zu after the output overwritten (0x%02x, poison 0x%02x)", msg, i - tail, r[i], x->pz);
                bad++;
                break;
            }
        }
        if (x->sspan && memcmp(q->h_out + x->sreg, q->h_in + x->sreg, x->sspan)) {
            TST_FAIL("%s: the send buffer (or the bytes around it) changed", msg);
            bad++;
        }
        badcalls += bad != 0;
        g_cases++;
    }
    return badcalls;
}

/* the expected counter movement of the sequence's calls in form f (capture, enqueue, ...) */
static void expect_seq(snap_t *s, const seq_t *q, int form)
{
    int j;
    for (j = 0; j < q->n; j++) {
        const gop_t *x = &q->ops[j];
        s->exp_form[x->coll][form]++;
        if (x->p > 1) s->exp_node[x->coll]++;
    }
}

/* the node algorithm a call of the main sequence runs at the default thresholds */
static int expected_algo(const gop_t *x)
{
    size_t b = x->count * (size_t)x->t->size; /* allreduce: the vector; the others: one block */
    if (b <= 8192) return 0;                  /* ll */
    if (x->coll == C_AR) return b <= 262144 ? 1 : 2;
    if (x->coll == C_AG) return b <= 1048576 ? 3 : 4;
    return 4;
}

/* one call of the sequence: mode R_GRAPH / R_EAGER* (an enqueue on stream), R_BLOCKING, R_NONBLOCKING */
static int issue(seq_t *q, int j, int mode, cudaStream_t st, MPI_Request *req)
{
    gop_t *x = &q->ops[j];
    void *r = q->dev + x->rdat;
    const void *s = x->inplace ? MPI_IN_PLACE : (const void *)(q->dev + x->sdat);
    MPI_Datatype dt = x->t->dt;
    MPI_Op op = ops_of(x->op);
    int n = (int)x->count;

    if (mode == R_BLOCKING) {
        switch (x->coll) {
        case C_AR: return MPI_Allreduce(s, r, n, dt, op, x->comm);
        case C_RSB: return MPI_Reduce_scatter_block(s, r, n, dt, op, x->comm);
        default: return MPI_Allgather(s, n, dt, r, n, dt, x->comm);
        }
    }
    if (mode == R_NONBLOCKING) {
        switch (x->coll) {
        case C_AR: return MPI_Iallreduce(s, r, n, dt, op, x->comm, req);
        case C_RSB: return MPI_Ireduce_scatter_block(s, r, n, dt, op, x->comm, req);
        default: return MPI_Iallgather(s, n, dt, r, n, dt, x->comm, req);
        }
    }
    if (x->entry == F_C) {
        MPI_Count c = (MPI_Count)x->count;
        switch (x->coll) {
        case C_AR: return tlmpi_allreduce_enqueue_c(s, r, c, dt, op, x->comm, (void *)st);
        case C_RSB: return tlmpi_reduce_scatter_block_enqueue_c(s, r, c, dt, op, x->comm, (void *)st);
        default: /* in place the send count and type are ignored (as in MPI): junk there */
            return tlmpi_allgather_enqueue_c(s, x->inplace ? -3 : c, x->inplace ? MPI_DATATYPE_NULL : dt, r, c, dt,
                                             x->comm, (void *)st);
        }
    }
    if (x->entry == F_F) {
        const void *sf = x->inplace ? NULL : s;
        MPI_Fint cf = MPI_Comm_c2f(x->comm), tf = MPI_Type_c2f(dt), of = MPI_Op_c2f(op);
        switch (x->coll) {
        case C_AR: return tlmpi_allreduce_enqueue_f(sf, r, (int64_t)x->count, tf, of, cf, (void *)st);
        case C_RSB: return tlmpi_reduce_scatter_block_enqueue_f(sf, r, (int64_t)x->count, tf, of, cf, (void *)st);
        default: return tlmpi_allgather_enqueue_f(sf, r, (int64_t)x->count, tf, cf, (void *)st);
        }
    }
    switch (x->coll) {
    case C_AR: return tlmpi_allreduce_enqueue(s, r, n, dt, op, x->comm, (void *)st);
    case C_RSB: return tlmpi_reduce_scatter_block_enqueue(s, r, n, dt, op, x->comm, (void *)st);
    default: return tlmpi_allgather_enqueue(s, x->inplace ? 0 : n, x->inplace ? MPI_DATATYPE_NULL : dt, r, n, dt, x->comm,
                                            (void *)st);
    }
}

static void rc_fail(int rc, const char *msg)
{
    char e[MPI_MAX_ERROR_STRING + 40];
    const char *why = tlmpi_enqueue_error();
    TST_FAIL("%s: rc %s (tlmpi_enqueue_error: \"%s\")", msg, tst_err_string(rc, e), why ? why : "(null)");
}

/* run the sequence uncaptured in mode (R_EAGER, R_EAGER2, R_BLOCKING, R_NONBLOCKING), with fresh
 * inputs, and check it; the counters move as the mode says (into s) */
static void seq_start(seq_t *q, int mode, snap_t *s, MPI_Request *reqs, int *nreq)
{
    cudaStream_t st = mode == R_EAGER2 ? g_st2 : g_st;
    char msg[256];
    int j, rc;
    seq_fill(q);
    *nreq = 0;
    if (mode == R_EAGER || mode == R_EAGER2) TST_CUDA(cudaMemcpyAsync(q->dev, q->h_in, q->bytes, cudaMemcpyHostToDevice, st));
    else TST_CUDA(cudaMemcpy(q->dev, q->h_in, q->bytes, cudaMemcpyHostToDevice));
    for (j = 0; j < q->n; j++) {
        MPI_Request r = MPI_REQUEST_NULL;
        rc = issue(q, j, mode, st, &r);
        if (rc != MPI_SUCCESS) {
            op_label(q, j, run_names[mode], msg, sizeof msg);
            rc_fail(rc, msg);
        }
        if (mode == R_NONBLOCKING) reqs[(*nreq)++] = r;
    }
    if (s) expect_seq(s, q, mode == R_BLOCKING ? TLMPI_FORM_BLOCKING : mode == R_NONBLOCKING ? TLMPI_FORM_NONBLOCKING
                                                                                            : TLMPI_FORM_ENQUEUE);
    if (mode == R_EAGER || mode == R_EAGER2) TST_CUDA(cudaMemcpyAsync(q->h_out, q->dev, q->bytes, cudaMemcpyDeviceToHost, st));
}

static void seq_finish(seq_t *q, int mode, MPI_Request *reqs, int nreq)
{
    if (mode == R_EAGER || mode == R_EAGER2) {
        sync_bounded(mode == R_EAGER2 ? g_st2 : g_st, "an eager sequence");
    } else {
        if (mode == R_NONBLOCKING) {
            double t0 = now();
            int flag = 0, rc;
            while (!flag) {
                rc = MPI_Testall(nreq, reqs, &flag, MPI_STATUSES_IGNORE);
                if (rc != MPI_SUCCESS) { TST_FAIL("%s: MPI_Testall: rc %d", q->name, rc); break; }
                limit_abort(t0, "an MPI_Testall loop");
            }
        }
        TST_CUDA(cudaMemcpy(q->h_out, q->dev, q->bytes, cudaMemcpyDeviceToHost));
    }
    seq_check(q, run_names[mode]);
}

static void seq_run(seq_t *q, int mode, snap_t *s)
{
    MPI_Request reqs[32];
    int nreq;
    seq_start(q, mode, s, reqs, &nreq);
    seq_finish(q, mode, reqs, nreq);
}

/* capture the sequence on g_st in capture mode cm; 1 and *exec on success */
static int seq_capture(seq_t *q, enum cudaStreamCaptureMode cm, cudaGraph_t *graph, cudaGraphExec_t *exec)
{
    snap_t s;
    cudaError_t e;
    enum cudaStreamCaptureStatus cs;
    char msg[256];
    int j, rc, ok = 1;

    *graph = NULL;
    *exec = NULL;
    snap_begin(&s);
    TST_CUDA(cudaStreamBeginCapture(g_st, cm));
    TST_CUDA(cudaMemcpyAsync(q->dev, q->h_in, q->bytes, cudaMemcpyHostToDevice, g_st));
    for (j = 0; j < q->n; j++) {
        rc = issue(q, j, R_GRAPH, g_st, NULL);
        op_label(q, j, "capture", msg, sizeof msg);
        if (rc != MPI_SUCCESS) {
            rc_fail(rc, msg);
            ok = 0;
        }
        cs = cudaStreamCaptureStatusNone;
        e = cudaStreamIsCapturing(g_st, &cs);
        if (e != cudaSuccess || cs != cudaStreamCaptureStatusActive) {
            TST_FAIL("%s: after the call the stream is %s (cudaStreamIsCapturing: %s): capture %s", msg,
                     cs == cudaStreamCaptureStatusInvalidated ? "invalidated" : cs == cudaStreamCaptureStatusNone ? "not capturing" : "?",
                     cudaGetErrorString(e), cm == cudaStreamCaptureModeGlobal ? "global" : "thread-local");
            ok = 0;
            break;
        }
    }
    TST_CUDA(cudaMemcpyAsync(q->h_out, q->dev, q->bytes, cudaMemcpyDeviceToHost, g_st));
    e = cudaStreamEndCapture(g_st, graph);
    if (e != cudaSuccess || !*graph) {
        TST_FAIL("%s: cudaStreamEndCapture: %s (capture mode %s)", q->name, cudaGetErrorString(e),
                 cm == cudaStreamCaptureModeGlobal ? "global" : "thread-local");
        (void)cudaGetLastError();
        ok = 0;
    } else {
        e = cudaGraphInstantiate(exec, *graph, 0);
        if (e != cudaSuccess) {
            TST_FAIL("%s: cudaGraphInstantiate: %s", q->name, cudaGetErrorString(e));
            (void)cudaGetLastError();
            *exec = NULL;
            ok = 0;
        }
    }
    expect_seq(&s, q, TLMPI_FORM_CAPTURE);
    snprintf(msg, sizeof msg, "%s: capture", q->name);
    snap_check(&s, msg);
    /* every rank replays only a capture that worked on every rank (replays are collective) */
    PMPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    return ok;
}

static void graph_destroy(cudaGraph_t *g, cudaGraphExec_t *x)
{
    if (*x) TST_CUDA(cudaGraphExecDestroy(*x));
    if (*g) TST_CUDA(cudaGraphDestroy(*g));
    *x = NULL;
    *g = NULL;
}

/*
 * Replay exec (the capture of q) n times, new inputs before each. Every `every` replays (0: never)
 * the small sequence b runs between two replays, in a mode that rotates over eager, eager on the
 * second stream, blocking and non-blocking; with mixing, also right after the launch (before the
 * stream sync). The counters: a replay moves none; b's calls move their forms.
 */
static void replay_loop(seq_t *q, cudaGraphExec_t exec, int n, seq_t *b, int every, int mixing)
{
    static const int rot[4] = { R_EAGER, R_EAGER2, R_BLOCKING, R_NONBLOCKING };
    int rep, k = 0, bad = 0, conc = 0, between = 0;
    double t0 = now();
    char label[160];
    long c0 = g_cases;

    for (rep = 0; rep < n; rep++) {
        snap_t s;
        MPI_Request reqs[32];
        int nreq = 0, cm = -1;
        cudaError_t e;
        snap_begin(&s);
        seq_fill(q);
        e = cudaGraphLaunch(exec, g_st);
        if (e != cudaSuccess) {
            TST_FAIL("%s: cudaGraphLaunch of replay %d: %s", q->name, rep, cudaGetErrorString(e));
            break;
        }
        if (b && every && mixing && rep % every == every / 2) {
            cm = rot[(k++) % 4];
            seq_start(b, cm, &s, reqs, &nreq); /* concurrent with the replay */
            conc++;
        }
        sync_bounded(g_st, "a graph replay");
        if (cm >= 0) seq_finish(b, cm, reqs, nreq);
        bad += seq_check(q, "replay") != 0;
        snprintf(label, sizeof label, "%s: replay %d%s%s", q->name, rep, cm >= 0 ? " with a concurrent " : "",
                 cm >= 0 ? run_names[cm] : "");
        snap_check(&s, label);
        if (b && every && rep % every == 0) {
            snap_begin(&s);
            cm = rot[(k++) % 4];
            seq_run(b, cm, &s);
            snprintf(label, sizeof label, "%s: %s sequence %s between replays", q->name, run_names[cm], b->name);
            snap_check(&s, label);
            between++;
        }
    }
    if (g_rank == 0)
        printf("%s: %d replays (%d with a concurrent sequence, %d sequences between), %ld calls checked, %d replays "
               "wrong on rank 0, %.2f s\n", q->name, n, conc, between, g_cases - c0, bad, now() - t0);
    fflush(stdout);
}

/* ---------------------------------------------------------------- sequences of the test */

static void build_main(seq_t *q, MPI_Comm w, MPI_Comm d)
{
    memset(q, 0, sizeof *q);
    q->name = "main";
    /* ll */
    seq_add(q, w, C_AR, "f32", OP_SUM, 0, 2, F_PLAIN);
    seq_add(q, d, C_AG, "u8", 0, 1, 8, F_PLAIN);
    seq_add(q, w, C_RSB, "i32", OP_SUM, 0, 2, F_C);
    seq_add(q, d, C_AR, "bf16", OP_MAX, 1, 4096, F_PLAIN);      /* 8192 B: the ll limit */
    seq_add(q, w, C_AR, "i64", OP_MIN, 0, 7, F_F);
    seq_add(q, d, C_RSB, "u8", OP_SUM, 1, 8192, F_PLAIN);       /* 8192 B block */
    /* above ll */
    seq_add(q, w, C_AR, "f64", OP_SUM, 0, 1025, F_PLAIN);       /* 8200 B: one-shot */
    seq_add(q, w, C_AG, "f32", 0, 0, 2050, F_F);                /* 8200 B block: push */
    seq_add(q, d, C_RSB, "f32", OP_SUM, 1, 2050, F_PLAIN);      /* 8200 B block: pull */
    seq_add(q, d, C_AG, "i16", 0, 1, 4097, F_C);                /* 8194 B block: push */
    seq_add(q, w, C_AR, "i32", OP_PROD, 0, 65536, F_PLAIN);     /* 256 KiB: one-shot limit */
    seq_add(q, w, C_AR, "f32", OP_SUM, 1, 65537, F_C);          /* two-shot */
    seq_add(q, d, C_AR, "f16", OP_SUM, 0, 300001, F_PLAIN);     /* two-shot */
    seq_add(q, d, C_AG, "f64", 0, 0, 131072, F_PLAIN);          /* 1 MiB block: push limit */
    seq_add(q, w, C_AG, "f64", 0, 1, 131073, F_PLAIN);          /* pull */
    seq_add(q, w, C_RSB, "bf16", OP_MIN, 0, 150001, F_F);       /* pull, odd count */
    seq_add(q, d, C_AR, "u16", OP_MAX, 1, 33, F_PLAIN);
    seq_add(q, w, C_RSB, "i64", OP_PROD, 1, 3, F_PLAIN);
}

static void build_small(seq_t *q, const char *name, MPI_Comm a, MPI_Comm b)
{
    memset(q, 0, sizeof *q);
    q->name = name;
    seq_add(q, a, C_AR, "f32", OP_SUM, 0, 2, F_PLAIN);
    seq_add(q, b, C_AG, "f32", 0, 1, 3, F_PLAIN);
    seq_add(q, a, C_RSB, "f64", OP_MAX, 0, 5, F_PLAIN);
    seq_add(q, b, C_AR, "i32", OP_SUM, 1, 5000, F_PLAIN);       /* one-shot */
    seq_add(q, a, C_AG, "u8", 0, 0, 20000, F_PLAIN);            /* push */
}

static void build_overflow(seq_t *q, MPI_Comm w, MPI_Comm d)
{
    memset(q, 0, sizeof *q);
    q->name = "overflow";
    seq_add(q, w, C_AR, "f32", OP_SUM, 0, ((size_t)3 << 20) / 4 + 4, F_PLAIN);
    seq_add(q, d, C_AG, "bf16", 0, 1, ((size_t)5 << 20) / 2 - 3, F_PLAIN);
    seq_add(q, w, C_RSB, "f32", OP_MAX, 0, ((size_t)3 << 20) / 4 + 4, F_C);
    seq_add(q, d, C_AR, "bf16", OP_SUM, 1, ((size_t)5 << 20) / 2 - 3, F_PLAIN);
    seq_add(q, w, C_AG, "f64", 0, 0, ((size_t)3 << 20) / 8 + 1, F_PLAIN);
}

/* the main sequence eager with the algorithm counters checked */
static void eager_algos(seq_t *q)
{
    snap_t s;
    int j;
    snap_begin(&s);
    s.algo_checked = getenv("TLMPI_NODE_LL_MAX") == NULL && getenv("TLMPI_NODE_ONESHOT_MAX") == NULL &&
                     getenv("TLMPI_NODE_AG_PUSH_MAX") == NULL;
    for (j = 0; j < q->n; j++) if (q->ops[j].p > 1) s.exp_algo[q->ops[j].coll][expected_algo(&q->ops[j])]++;
    seq_run(q, R_EAGER, &s);
    snap_check(&s, "main: eager (algorithm counters)");
}

/* a call on a communicator nobody prepared, during a global-mode capture */
static void unprepared(void)
{
    MPI_Comm u;
    cudaGraph_t g = NULL;
    cudaGraphExec_t x = NULL;
    cudaError_t e;
    enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    char *d;
    const char *why;
    char whybuf[256];
    int rc, cls = -1, rc2;
    snap_t s;

    MPI_Comm_dup(MPI_COMM_WORLD, &u);
    TST_CUDA(cudaMalloc((void **)&d, 4096));
    TST_CUDA(cudaMemset(d, 0, 4096));
    TST_CUDA(cudaDeviceSynchronize());
    snap_begin(&s);
    tst_expect("a captured call on an unprepared communicator");
    TST_CUDA(cudaStreamBeginCapture(g_st, cudaStreamCaptureModeGlobal));
    TST_CUDA(cudaMemsetAsync(d, 1, 64, g_st));
    rc = tlmpi_allreduce_enqueue(d, d + 1024, 2, MPI_FLOAT, MPI_SUM, u, (void *)g_st);
    why = tlmpi_enqueue_error();
    snprintf(whybuf, sizeof whybuf, "%s", why ? why : "");
    why = whybuf;
    rc2 = tlmpi_allgather_enqueue(d, 1, MPI_INT, d + 2048, 1, MPI_INT, u, (void *)g_st);
    e = cudaStreamIsCapturing(g_st, &cs);
    TST_CHECK(e == cudaSuccess && cs == cudaStreamCaptureStatusActive,
              "unprepared: the capture is no longer active after the failed calls (%s, status %d)", cudaGetErrorString(e), (int)cs);
    e = cudaStreamEndCapture(g_st, &g);
    TST_CHECK(e == cudaSuccess && g, "unprepared: cudaStreamEndCapture after the failed calls: %s", cudaGetErrorString(e));
    if (e != cudaSuccess) (void)cudaGetLastError();
    if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
    TST_CHECK(rc == MPI_ERR_UNSUPPORTED_OPERATION || cls == MPI_ERR_UNSUPPORTED_OPERATION,
              "unprepared: a captured tlmpi_allreduce_enqueue on a fresh dup returned %d (class %d), expected "
              "MPI_ERR_UNSUPPORTED_OPERATION (%d)", rc, cls, MPI_ERR_UNSUPPORTED_OPERATION);
    TST_CHECK(why && *why, "unprepared: tlmpi_enqueue_error() is empty after the failure");
    cls = -1;
    if (rc2 != MPI_SUCCESS) MPI_Error_class(rc2, &cls);
    TST_CHECK(rc2 == MPI_ERR_UNSUPPORTED_OPERATION || cls == MPI_ERR_UNSUPPORTED_OPERATION,
              "unprepared: a second captured call (allgather) on the unprepared dup returned %d (class %d)", rc2, cls);
    cls = -1;
    if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
    if (g) {
        e = cudaGraphInstantiate(&x, g, 0);
        TST_CHECK(e == cudaSuccess, "unprepared: cudaGraphInstantiate of the capture: %s", cudaGetErrorString(e));
        if (e == cudaSuccess) {
            TST_CUDA(cudaGraphLaunch(x, g_st));
            sync_bounded(g_st, "the unprepared capture's replay");
        }
        graph_destroy(&g, &x);
    }
    snap_check(&s, "unprepared: the failed calls"); /* nothing counted */
    if (g_rank == 0) printf("unprepared communicator during capture: rc %d (class %d), \"%s\"\n", rc, cls, why ? why : "");
    /* the same communicator prepared afterwards works, captured */
    rc = tlmpi_enqueue_prepare(u, 0);
    TST_CHECK(rc == MPI_SUCCESS, "unprepared: tlmpi_enqueue_prepare afterwards: rc %d", rc);
    if (!g_nograph) {
        seq_t q;
        build_small(&q, "prepared-late", u, u);
        seq_layout(&q);
        seq_fill(&q);
        if (seq_capture(&q, cudaStreamCaptureModeGlobal, &g, &x)) replay_loop(&q, x, g_quick ? 3 : 10, NULL, 0, 1);
        graph_destroy(&g, &x);
        seq_free(&q);
    }
    MPI_Comm_free(&u);
    TST_CUDA(cudaFree(d));
}

/*
 * An uncaptured call issued right after cudaGraphLaunch waits for the replay's *last* call of the
 * comm, not its first (mixing mode; src/gpu/order.c's one record node per capture). The graph: a
 * small allreduce on the comm, ~BIGN bytes of device memsets (milliseconds), then the allreduce that
 * writes x; right after each launch, an eager allreduce of x on the second stream. An eager call that
 * ran after the first captured call only reads x before the replay wrote it (poisoned: NaN) and
 * returns the wrong sum, or runs concurrently with the last captured call (the comm's epoch read
 * twice) and hangs into the timeout.
 */
static void order_after_replay(MPI_Comm comm)
{
    enum { N = 1024, REPS = 5 };
    const size_t BIGN = (size_t)256 << 20;
    float *d, *y, h[N], hy[N];
    char *big;
    cudaGraph_t g = NULL;
    cudaGraphExec_t x = NULL;
    int rep, i, k, bad = 0, ok = 1, size;

    MPI_Comm_size(comm, &size);
    TST_CUDA(cudaMalloc((void **)&d, 4 * N * sizeof(float))); /* a | out of a | in | x */
    TST_CUDA(cudaMalloc((void **)&y, N * sizeof(float)));
    TST_CUDA(cudaMalloc((void **)&big, BIGN));
    TST_CUDA(cudaStreamBeginCapture(g_st, cudaStreamCaptureModeGlobal));
    if (tlmpi_allreduce_enqueue(d, d + N, 2, MPI_FLOAT, MPI_SUM, comm, (void *)g_st) != MPI_SUCCESS) ok = 0;
    for (k = 0; k < 4; k++) TST_CUDA(cudaMemsetAsync(big, k, BIGN, g_st));
    if (tlmpi_allreduce_enqueue(d + 2 * N, d + 3 * N, N, MPI_FLOAT, MPI_SUM, comm, (void *)g_st) != MPI_SUCCESS) ok = 0;
    if (cudaStreamEndCapture(g_st, &g) != cudaSuccess || !g) ok = 0;
    if (ok && cudaGraphInstantiate(&x, g, 0) != cudaSuccess) ok = 0;
    TST_CHECK(ok, "order after a replay: the capture failed (%s)", tlmpi_enqueue_error());
    PMPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    for (rep = 0; ok && rep < REPS; rep++) {
        for (i = 0; i < N; i++) h[i] = (float)(g_rank + i % 7 + rep);
        TST_CUDA(cudaMemcpy(d + 2 * N, h, sizeof h, cudaMemcpyHostToDevice));
        TST_CUDA(cudaMemset(d + 3 * N, 0xff, N * sizeof(float))); /* x and y poisoned: NaN */
        TST_CUDA(cudaMemset(y, 0xff, N * sizeof(float)));
        TST_CUDA(cudaMemset(d, 0, 2 * sizeof(float)));
        TST_CUDA(cudaDeviceSynchronize());
        PMPI_Barrier(MPI_COMM_WORLD);
        TST_CUDA(cudaGraphLaunch(x, g_st));
        if (tlmpi_allreduce_enqueue(d + 3 * N, y, N, MPI_FLOAT, MPI_SUM, comm, (void *)g_st2) != MPI_SUCCESS)
            TST_FAIL("order after a replay: the eager allreduce: %s", tlmpi_enqueue_error());
        sync_bounded(g_st2, "the eager call after a replay");
        sync_bounded(g_st, "the replay before the eager call");
        TST_CUDA(cudaMemcpy(hy, y, sizeof hy, cudaMemcpyDeviceToHost));
        for (i = 0; i < N; i++) {
            /* x[i] = sum over ranks of (r + i % 7 + rep); y = size * x */
            const double xi = (double)size * (size - 1) / 2 + (double)size * (i % 7 + rep);
            g_cases++;
            if (hy[i] != (float)(size * xi)) {
                if (!bad++) TST_FAIL("order after a replay (replay %d): y[%d] = %g, expected %g: the eager call on "
                                     "the second stream did not wait for the replay's last call of the comm",
                                     rep, i, (double)hy[i], size * xi);
            }
        }
    }
    graph_destroy(&g, &x);
    TST_CUDA(cudaFree(big));
    TST_CUDA(cudaFree(y));
    TST_CUDA(cudaFree(d));
    if (g_rank == 0) printf("order after a replay: %d replays, each followed at once by an eager call on another stream: "
                            "%d wrong values on rank 0\n", REPS, bad);
}

/* graph destroyed before, and after, MPI_Comm_free of its communicator */
static void lifetimes(void)
{
    int order;
    for (order = 0; order < 2; order++) {
        MPI_Comm c;
        seq_t q;
        cudaGraph_t g;
        cudaGraphExec_t x;
        int rc;
        MPI_Comm_dup(MPI_COMM_WORLD, &c);
        rc = tlmpi_enqueue_prepare(c, 0);
        TST_CHECK(rc == MPI_SUCCESS, "lifetime %d: tlmpi_enqueue_prepare: rc %d", order, rc);
        build_small(&q, order ? "freed-first" : "graph-first", c, c);
        seq_layout(&q);
        seq_fill(&q);
        if (seq_capture(&q, cudaStreamCaptureModeGlobal, &g, &x)) replay_loop(&q, x, g_quick ? 3 : 10, NULL, 0, 1);
        sync_bounded(g_st, "the lifetime replays");
        if (order == 0) {
            graph_destroy(&g, &x);
            MPI_Comm_free(&c);
        } else {
            MPI_Comm_free(&c); /* the graph outlives its communicator: destroyed, never replayed */
            graph_destroy(&g, &x);
        }
        TST_CUDA(cudaDeviceSynchronize());
        seq_free(&q);
        PMPI_Barrier(MPI_COMM_WORLD);
        if (g_rank == 0) printf("lifetime: graph destroyed %s MPI_Comm_free: no failure\n", order ? "after" : "before");
    }
}

int main(int argc, char **argv)
{
    int ndev = 0, a, rc;
    double t0 = now();
    MPI_Comm dup, nomix;
    long totals[2], fails = 0;
    seq_t qm, qs, qn, qo;
    cudaGraph_t g;
    cudaGraphExec_t x;
    snap_t s;

    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        (void)cudaGetLastError();
        fprintf(stderr, "SKIP: no CUDA device\n");
        return 77;
    }
    for (a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--probe")) return 0;
        else if (!strcmp(argv[a], "--quick")) g_quick = 1;
        else if (!strcmp(argv[a], "--overflow")) g_overflow = 1;
        else if (!strcmp(argv[a], "--any-path")) g_anypath = 1;
        else if (!strcmp(argv[a], "--no-algo-check")) g_noalgo = 1;
        else if (!strcmp(argv[a], "--no-graph")) g_nograph = 1;
        else if (!strcmp(argv[a], "--replays") && a + 1 < argc) g_replays = atoi(argv[++a]);
        else {
            fprintf(stderr, "usage: gpu_graph [--replays N] [--overflow] [--quick] [--any-path] [--no-algo-check] [--no-graph]\n");
            return 2;
        }
    }
    if (g_replays < 1) g_replays = 1;

    tst_init("gpu_graph", &argc, &argv);
    if (!tlmpi_allreduce_enqueue || !tlmpi_enqueue_prepare || !tlmpi_enqueue_error || !tlmpi_form_name)
        return tst_skip("this libtlmpi has no stream-ordered entry points (tlmpi_*_enqueue)");
    g_rank = tst_rank;
    g_size = tst_size;
    tst_rng_sync();
    g_seed = tst_rand();
    TST_CUDA(cudaSetDevice(g_rank % ndev));
    find_paths();
    add_type("f32", MPI_FLOAT, K_FLOAT, 4);
    add_type("f64", MPI_DOUBLE, K_FLOAT, 8);
    add_type("f16", TLMPI_FLOAT16, K_F16, 2);
    add_type("bf16", TLMPI_BFLOAT16, K_BF16, 2);
    add_type("u8", MPI_UINT8_T, K_UINT, 1);
    add_type("i16", MPI_INT16_T, K_INT, 2);
    add_type("u16", MPI_UINT16_T, K_UINT, 2);
    add_type("i32", MPI_INT32_T, K_INT, 4);
    add_type("i64", MPI_INT64_T, K_INT, 8);
    if (!getenv("TLMPI_TIER") && tlmpi_config_set("TIER", "node") != TLMPI_OK) TST_FAIL("tlmpi_config_set(TIER, node) refused");
    TST_CUDA(cudaStreamCreateWithFlags(&g_st, cudaStreamNonBlocking));
    TST_CUDA(cudaStreamCreateWithFlags(&g_st2, cudaStreamNonBlocking));
    if (g_rank == 0) {
        const char *pool = getenv("TLMPI_NODE_POOL"), *tier = getenv("TLMPI_TIER");
        printf("gpu_graph: np=%d devices=%d replays=%d quick=%d overflow=%d TLMPI_TIER=%s TLMPI_NODE_POOL=%s MPS=%s "
               "MPI %d.%d\n", g_size, ndev, g_replays, g_quick, g_overflow, tier ? tier : "(unset: node set)",
               pool ? pool : "(default)", getenv("CUDA_MPS_PIPE_DIRECTORY") ? "yes" : "no", MPI_VERSION, MPI_SUBVERSION);
        fflush(stdout);
    }

    /* the world prepared explicitly, the dup by a blocking device call */
    rc = tlmpi_enqueue_prepare(MPI_COMM_WORLD, 0);
    TST_CHECK(rc == MPI_SUCCESS, "tlmpi_enqueue_prepare(MPI_COMM_WORLD, 0): rc %d (%s)", rc, tlmpi_enqueue_error());
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    build_small(&qs, "small", MPI_COMM_WORLD, dup);
    seq_layout(&qs);
    {
        seq_t q1;
        memset(&q1, 0, sizeof q1);
        q1.name = "prepare-dup";
        seq_add(&q1, dup, C_AR, "f32", OP_SUM, 0, 2, F_PLAIN);
        seq_layout(&q1);
        seq_run(&q1, R_BLOCKING, NULL);
        seq_free(&q1);
    }

    /* 1. the main sequence: captured first (nothing of its sizes ran before), replayed, then the
     *    other forms of it; a thread-local capture of it too */
    build_main(&qm, MPI_COMM_WORLD, dup);
    seq_layout(&qm);
    seq_fill(&qm);
    if (g_nograph) {
        for (a = R_EAGER; a < R_N; a++) {
            char label[64];
            snap_begin(&s);
            seq_run(&qm, a, &s);
            seq_run(&qs, (a + 1) % R_N ? (a + 1) % R_N : R_EAGER, &s);
            snprintf(label, sizeof label, "main (no graph): %s", run_names[a]);
            snap_check(&s, label);
        }
        if (g_overflow) {
            build_overflow(&qo, MPI_COMM_WORLD, dup);
            seq_layout(&qo);
            seq_run(&qo, R_EAGER, NULL);
            seq_run(&qo, R_NONBLOCKING, NULL);
            seq_free(&qo);
        }
        unprepared();
        goto done;
    }
    if (seq_capture(&qm, cudaStreamCaptureModeGlobal, &g, &x)) replay_loop(&qm, x, g_replays, &qs, 5, 1);
    graph_destroy(&g, &x);
    eager_algos(&qm);
    for (a = R_EAGER2; a < R_N; a++) {
        char label[64];
        snap_begin(&s);
        seq_run(&qm, a, &s);
        snprintf(label, sizeof label, "main: %s", run_names[a]);
        snap_check(&s, label);
    }
    if (seq_capture(&qm, cudaStreamCaptureModeThreadLocal, &g, &x)) replay_loop(&qm, x, g_quick ? 5 : 20, &qs, 3, 1);
    graph_destroy(&g, &x);
    if (g_rank == 0) printf("main sequence: %d calls, %zu arena bytes per rank\n", qm.n, qm.bytes);

    /* 1b. a capture while non-blocking calls on the same communicators are in flight (mixing) */
    {
        seq_t qi;
        MPI_Request reqs[32];
        int nreq = 0;
        build_small(&qi, "inflight", dup, MPI_COMM_WORLD);
        seq_layout(&qi);
        seq_fill(&qi);
        seq_start(&qs, R_NONBLOCKING, NULL, reqs, &nreq);
        a = seq_capture(&qi, cudaStreamCaptureModeGlobal, &g, &x);
        seq_finish(&qs, R_NONBLOCKING, reqs, nreq);
        if (a) replay_loop(&qi, x, g_quick ? 5 : 20, &qs, 2, 1);
        graph_destroy(&g, &x);
        seq_free(&qi);
    }

    /* 2. no mixing: a communicator of its own, uncaptured calls only after the replay's sync */
    MPI_Comm_dup(MPI_COMM_WORLD, &nomix);
    rc = tlmpi_enqueue_prepare(nomix, TLMPI_ENQUEUE_NO_MIXING);
    TST_CHECK(rc == MPI_SUCCESS, "tlmpi_enqueue_prepare(NO_MIXING): rc %d (%s)", rc, tlmpi_enqueue_error());
    build_main(&qn, nomix, nomix);
    qn.name = "no-mixing";
    seq_layout(&qn);
    seq_fill(&qn);
    {
        seq_t qb;
        build_small(&qb, "small-nomix", nomix, nomix);
        seq_layout(&qb);
        if (seq_capture(&qn, cudaStreamCaptureModeGlobal, &g, &x)) replay_loop(&qn, x, g_quick ? 20 : g_replays, &qb, 4, 0);
        graph_destroy(&g, &x);
        seq_free(&qb);
    }
    seq_free(&qn);
    MPI_Comm_free(&nomix);

    /* 3. large messages (several pool chunks under TLMPI_NODE_POOL=1m) */
    if (g_overflow) {
        build_overflow(&qo, MPI_COMM_WORLD, dup);
        seq_layout(&qo);
        seq_fill(&qo);
        if (seq_capture(&qo, cudaStreamCaptureModeGlobal, &g, &x)) replay_loop(&qo, x, g_quick ? 5 : 20, &qs, 7, 1);
        graph_destroy(&g, &x);
        snap_begin(&s);
        seq_run(&qo, R_EAGER, &s);
        snap_check(&s, "overflow: eager");
        seq_free(&qo);
    }

    /* 3b. an eager call right after a launch waits for the replay's last call of the comm */
    order_after_replay(MPI_COMM_WORLD);

    /* 4. graph and communicator destroyed in either order; 5. an unprepared communicator */
    lifetimes();
    unprepared();

done:
    seq_free(&qm);
    seq_free(&qs);
    MPI_Comm_free(&dup);
    TST_CUDA(cudaStreamDestroy(g_st));
    TST_CUDA(cudaStreamDestroy(g_st2));

    tst_totals(&fails, NULL);
    totals[0] = g_cases;
    PMPI_Allreduce(MPI_IN_PLACE, totals, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    totals[1] = fails;
    if (g_rank == 0)
        printf("RESULT gpu_graph np=%d cases=%ld failures=%ld time=%.1fs %s\n", g_size, totals[0], totals[1], now() - t0,
               totals[1] ? "FAIL" : "PASS");
    fflush(stdout);
    MPI_Finalize();
    return totals[1] ? 1 : 0;
}
