/*
 * mpi_nbc: the non-blocking (MPI_Iallreduce, MPI_Iallgather, MPI_Ireduce_scatter_block and their
 * _c forms) and MPI-4 persistent (MPI_Allreduce_init, MPI_Allgather_init,
 * MPI_Reduce_scatter_block_init) collectives on device buffers, completed through the
 * application's MPI_Wait/MPI_Test family, against the CPU stand-ins of tests/fakes (the fake CUDA
 * runtime linked in: cudaMalloc'd "device" memory is host memory that tlmpi classifies as device
 * memory; the fake NCCL dlopen'ed by tlmpi, tests/fakes/fake_env.c). Run by tests/mpi/nbc.sh.
 *
 * Every call gets fresh inputs (small integers, exact in int, float and double whatever the
 * summation order, tests/mpi/exact_values.h) that every rank computes for every rank from a
 * generator seeded alike on all ranks; its receive buffer and a guard after it are poisoned with a
 * byte that changes per call; the result is copied back and compared exactly with the host
 * reference, and the guard must keep its poison. Counts come from {0, 1, 2, 7, 33, 129, 1031,
 * 2049} (persistent: up to 64); types int, float, double (every arithmetic type with
 * TLMPI_TEST_TYPES=all); sum or max; in place or not.
 *
 * Cases (NBC_CASES=letters picks some; default all):
 *  a  every completion call, for batches of the three collectives in place and not: MPI_Wait (in a
 *     per-rank random order), MPI_Test in a loop, MPI_Waitall, MPI_Waitany until MPI_UNDEFINED,
 *     MPI_Waitsome until MPI_UNDEFINED, MPI_Testall, MPI_Testany, MPI_Testsome (each in a loop),
 *     MPI_Request_get_status in a loop (the request must stay allocated: the data is checked as soon
 *     as it says complete, then MPI_Wait frees it); and MPI_Request_free on a just-posted request
 *     (NBC_FREE_ACTIVE=0 leaves that out: the MPI standard calls MPI_Request_free of a
 *     non-blocking collective's request erroneous, so this checks a tlmpi guarantee, not an MPI
 *     one), its result checked after a blocking device-buffer allreduce on the same communicator
 *     (where it is not there yet, a later MPI_Iallreduce + MPI_Wait tells whether it comes then).
 *  b  status handling, in each of the a/c rounds: MPI_STATUS_IGNORE / MPI_STATUSES_IGNORE or real
 *     statuses (prefilled with junk): for tlmpi's own requests (device buffers, count > 0)
 *     MPI_Test_cancelled false and MPI_Get_count 0 (or what PMPI gives for its own host-buffer
 *     MPI_Iallreduce, probed at start); the MPI's own collective requests (host buffers, count 0)
 *     define no more than MPI_ERROR (Open MPI 4.1 leaves count and cancelled uninitialised, MPICH
 *     4.0.2 those of its last internal message); MPI_ERROR of the multiple-completion calls
 *     MPI_SUCCESS (or untouched, for the MPI's own requests); requests MPI_REQUEST_NULL after
 *     completion and untouched while not complete (Testall false, Testany/Testsome none); index
 *     and outcount semantics; arrays of only null requests (MPI_UNDEFINED, flag true, the empty
 *     status as PMPI gives it).
 *  c  mixed arrays: a host-buffer MPI_Irecv from the left and MPI_Isend to the right neighbour (a
 *     ring) and a host-buffer MPI_Iallreduce next to the device-buffer collectives, with every
 *     completion call of (a); the point-to-point data and status (source, tag, count) checked.
 *  d  16 outstanding collectives of mixed kinds on one communicator, completed with MPI_Wait from
 *     the last to the first, then 16 more in a per-rank random order.
 *  e  blocking and non-blocking interleaved on one communicator: MPI_Iallreduce, MPI_Allgather,
 *     MPI_Ireduce_scatter_block, MPI_Allreduce, then MPI_Waitall.
 *  f  two dups of MPI_COMM_WORLD posted in opposite orders on even and odd ranks, completed with
 *     MPI_Waitall and with MPI_Wait in opposite orders: must not deadlock (nbc.sh bounds it). Only
 *     where the tier is staging (or one rank): the fake NCCL runs a collective to its end inside
 *     ncclAllReduce, so under the fakes the NCCL tier cannot have two communicators' collectives
 *     outstanding in opposite orders (NBC_OPPOSITE=1 forces it).
 *  g  MPI_THREAD_MULTIPLE (skipped with a note when not provided): the main thread posts, a second
 *     thread completes (MPI_Wait, MPI_Test loop, MPI_Waitall, MPI_Request_get_status), handed over
 *     through a mutex and condition variable, up to 3 requests in flight, NBC_THREAD_ROUNDS rounds.
 *  h  persistent forms where the MPI has them (MPI_VERSION >= 4: MPICH 4; not Open MPI 4.1): the
 *     six *_init requests (three collectives, in place and not) with MPI_INFO_NULL; MPI_Wait,
 *     MPI_Test and MPI_Request_get_status on them before the first start return at once; then
 *     NBC_PERSIST_ITERS (default 1000) iterations of new data written into the buffers and
 *     MPI_Start + MPI_Wait of one request, or MPI_Startall of all six completed by MPI_Waitall,
 *     MPI_Testall, MPI_Waitsome (with a point-to-point pair) or MPI_Waitany, every result checked;
 *     the handles stay the same (inactive) after completion; then MPI_Wait on the inactive ones and
 *     MPI_Request_free; a request freed without ever being started. Count 0 (the MPI's own
 *     request: tlmpi counts it once, at init) only with MPI_Start + MPI_Wait: MPICH 4.0.2's own
 *     persistent collective requests are never inactive to its array calls, and MPI_Wait on one
 *     never started hangs.
 *  j  the MPI-4 _c forms (MPI_Iallreduce_c, ..., MPI_Allreduce_init_c, ...), where they exist.
 *  i  the path (always, at the end): tlmpi_get_form_stats says every device-buffer call of count
 *     > 0 was taken by tlmpi on the tier the environment forced (TLMPI_TIER=staging: staging,
 *     nccl: NCCL, self or a one-rank run: self; otherwise any accelerated path), in its form
 *     (non-blocking, persistent once per start, blocking), host-buffer calls as passthrough (count 0
 *     calls may be either), nothing on another path, the forms summing to tlmpi_get_stats. Under
 *     the GPU turn (MPI_THREAD_MULTIPLE, TLMPI_GPU_TURNS auto or yes) the non-blocking and persistent
 *     calls of TLMPI_TIER=nccl are staged (a started call cannot hold the turn).
 *
 * NBC_THREAD_LEVEL=single|funneled|serialized|multiple (default multiple) is the level asked for.
 * NBC_SPIN_LIMIT (default 100) seconds bounds every Test/get_status loop (then it aborts with what
 * it waited for).
 */
#include "config.h"
#include "tlmpi.h"

#include <cuda_runtime_api.h>
#include "harness.h"
#include "exact_values.h"

#include <pthread.h>
#include <unistd.h>

#define MAXCOUNT 2049
#define GUARD 8
#define MAXREQ 32
#define NOUT 16 /* case d: outstanding collectives */
#define P2P_TAG 4711
#define JUNK_ERR 424242 /* what a prefilled status carries in MPI_ERROR */

#if MPI_VERSION >= 4
#define HAVE_MPI4_FORMS 1 /* MPI_Allreduce_init ..., MPI_Iallreduce_c ... */
#endif

static const char *const coll_name[NCOLL] = { "allreduce", "allgather", "reduce_scatter_block" };
static const tlmpi_coll_t coll_id[NCOLL] = { TLMPI_COLL_ALLREDUCE, TLMPI_COLL_ALLGATHER,
                                             TLMPI_COLL_REDUCE_SCATTER_BLOCK };
static const size_t counts[] = { 0, 1, 2, 7, 33, 129, 1031, 2049 };
#define NCOUNTS (sizeof(counts) / sizeof(counts[0]))
#ifdef HAVE_MPI4_FORMS
/* persistent: small (1000 iterations); count 0 apart (case_persistent_zero) */
static const size_t pcounts[] = { 1, 3, 17, 33, 64 };
#define NPCOUNTS (sizeof(pcounts) / sizeof(pcounts[0]))
#endif

static tst_rng_t G; /* the same on every rank: every rank-uniform choice comes from it */
/* MPI_STATUSES_IGNORE through a volatile pointer: with MPICH's (MPI_Status *)1 gcc -O2 warns that a
 * literal one points to a region of size 0 (-Wstringop-overflow) */
static MPI_Status *volatile statuses_ignore = MPI_STATUSES_IGNORE;
static double g_spin_limit = 100;

/* what PMPI gives for its own collective requests (probed at start) */
static int ref_count_int, ref_multi_err, ref_empty_src, ref_empty_tag, ref_empty_count;

/* calls made, per form, collective and kind: device buffers count > 0, device count 0, host */
enum { K_DEV, K_DEV0, K_HOST, NKIND };
static long made[TLMPI_FORM_COUNT][NCOLL][NKIND];

/* ------------------------------------------------------------------------------------------ */
/* one collective call's buffers and arguments */

enum { F_NB, F_BLOCK, F_INIT, F_NB_C, F_INIT_C }; /* how nbc_post calls it */

typedef struct {
    MPI_Comm comm;
    int rank, p, host;
    int coll, t, sum, inplace;
    size_t count;
    uint64_t ds;
    unsigned char pv;
    unsigned char *s, *r; /* cudaMalloc'd (host: malloc'd) */
    unsigned char *h_in, *h_out;
    size_t cap;
    MPI_Request req;
    int persistent;
    long seq;
    char what[200];
} nbc_t;

static long g_seq;

static void buf_put(const nbc_t *o, void *dst, const void *src, size_t n)
{
    if (o->host) {
        memcpy(dst, src, n);
    } else {
        TST_CUDA(cudaMemcpy(dst, src, n, cudaMemcpyHostToDevice));
    }
}

static void buf_get(const nbc_t *o, void *dst, const void *src, size_t n)
{
    if (o->host) {
        memcpy(dst, src, n);
    } else {
        TST_CUDA(cudaMemcpy(dst, src, n, cudaMemcpyDeviceToHost));
    }
}

static void buf_set(const nbc_t *o, void *dst, int v, size_t n)
{
    if (o->host) {
        memset(dst, v, n);
    } else {
        TST_CUDA(cudaMemset(dst, v, n));
    }
}

static void nbc_alloc(nbc_t *o, MPI_Comm comm, int host)
{
    memset(o, 0, sizeof(*o));
    o->comm = comm;
    o->host = host;
    MPI_Comm_rank(comm, &o->rank);
    MPI_Comm_size(comm, &o->p);
    o->cap = ((size_t)MAXCOUNT * (size_t)o->p + GUARD) * 8;
    if (o->cap < ((size_t)80 << 10)) {
        o->cap = (size_t)80 << 10; /* the fake runtime mmaps (not the brk heap) from 64 KiB on */
    }
    if (host) {
        o->s = tst_malloc(o->cap);
        o->r = tst_malloc(o->cap);
    } else {
        TST_CUDA(cudaMalloc((void **)&o->s, o->cap));
        TST_CUDA(cudaMalloc((void **)&o->r, o->cap));
    }
    o->h_in = tst_malloc(o->cap);
    o->h_out = tst_malloc(o->cap);
    o->req = MPI_REQUEST_NULL;
}

static void nbc_free(nbc_t *o)
{
    if (o->host) {
        free(o->s);
        free(o->r);
    } else {
        TST_CUDA(cudaFree(o->s));
        TST_CUDA(cudaFree(o->r));
    }
    free(o->h_in);
    free(o->h_out);
    o->s = o->r = o->h_in = o->h_out = NULL;
}

static size_t in_elems(const nbc_t *o) { return o->coll == C_RSB ? o->count * (size_t)o->p : o->count; }
static size_t out_elems(const nbc_t *o) { return o->coll == C_AG ? o->count * (size_t)o->p : o->count; }
static size_t buf_elems(const nbc_t *o)
{
    size_t in_n = in_elems(o), out_n = out_elems(o);

    return o->inplace && in_n > out_n ? in_n : out_n;
}

static int pick_type(void)
{
    int t = (int)(tst_rand_r(&G) % (uint64_t)NTYPES);

    return t;
}

/* the arguments of the next calls of o (rank-uniform: from G) */
static void nbc_args(nbc_t *o, int coll, int inplace, size_t count)
{
    o->coll = coll;
    o->inplace = inplace;
    o->count = count;
    o->t = pick_type();
    if (exact_skip(coll, o->t)) o->t = T_U16;
    o->sum = (int)(tst_rand_r(&G) % 2); /* 1 sum, 0 max */
}

static void nbc_args_random(nbc_t *o)
{
    int coll = (int)(tst_rand_r(&G) % NCOLL), inplace = (int)(tst_rand_r(&G) % 2);

    nbc_args(o, coll, inplace, counts[tst_rand_r(&G) % NCOUNTS]);
}

/* fresh inputs (a new data seed from G), the receive buffer and its guard poisoned */
static void nbc_fill(nbc_t *o, const char *ctx)
{
    size_t es = type_size(o->t), in_n = in_elems(o), i;

    o->ds = tst_rand_r(&G);
    o->pv = (unsigned char)(0xA0 | (tst_rand_r(&G) & 0xF));
    o->seq = ++g_seq;
    for (i = 0; i < in_n; i++) put(o->t, o->h_in, i, xval(o->t, 0, o->ds, o->rank, i));
    buf_set(o, o->r, o->pv, (buf_elems(o) + GUARD) * es);
    if (o->inplace) {
        size_t off = o->coll == C_AG ? (size_t)o->rank * o->count * es : 0;

        buf_put(o, o->r + off, o->h_in, in_n * es);
    } else {
        buf_put(o, o->s, o->h_in, in_n * es);
    }
    snprintf(o->what, sizeof(o->what), "%s: #%ld %s%s %s%s%s%s count %zu np %d", ctx, o->seq,
             o->persistent ? "persistent " : "", coll_name[o->coll], type_name[o->t], o->coll == C_AG ? "" : " ",
             o->coll == C_AG ? "" : exact_op_name(o->sum), o->inplace ? " in place" : "", o->count, o->p);
}

static void tally(const nbc_t *o, tlmpi_form_t form)
{
    int k = o->host ? K_HOST : o->count ? K_DEV : K_DEV0;

    __atomic_fetch_add(&made[form][o->coll][k], 1, __ATOMIC_RELAXED);
}

/* post (or run, or create) the call; returns the MPI return code */
static int nbc_post(nbc_t *o, int how)
{
    const void *sb = o->inplace ? MPI_IN_PLACE : o->s;
    MPI_Datatype dt = mpi_type(o->t);
    MPI_Op op = exact_op(o->sum);
    int n = (int)o->count, rc = MPI_ERR_OTHER;

    switch (how) {
    case F_NB:
        o->req = MPI_REQUEST_NULL;
        rc = o->coll == C_AR    ? MPI_Iallreduce(sb, o->r, n, dt, op, o->comm, &o->req)
             : o->coll == C_AG  ? MPI_Iallgather(sb, n, dt, o->r, n, dt, o->comm, &o->req)
                                : MPI_Ireduce_scatter_block(sb, o->r, n, dt, op, o->comm, &o->req);
        tally(o, TLMPI_FORM_NONBLOCKING);
        TST_CHECK(rc != MPI_SUCCESS || o->req != MPI_REQUEST_NULL, "%s: posted, but the request is MPI_REQUEST_NULL",
                  o->what);
        break;
    case F_BLOCK:
        rc = o->coll == C_AR    ? MPI_Allreduce(sb, o->r, n, dt, op, o->comm)
             : o->coll == C_AG  ? MPI_Allgather(sb, n, dt, o->r, n, dt, o->comm)
                                : MPI_Reduce_scatter_block(sb, o->r, n, dt, op, o->comm);
        tally(o, TLMPI_FORM_BLOCKING);
        break;
#ifdef HAVE_MPI4_FORMS
    case F_NB_C:
        o->req = MPI_REQUEST_NULL;
        rc = o->coll == C_AR    ? MPI_Iallreduce_c(sb, o->r, (MPI_Count)n, dt, op, o->comm, &o->req)
             : o->coll == C_AG  ? MPI_Iallgather_c(sb, (MPI_Count)n, dt, o->r, (MPI_Count)n, dt, o->comm, &o->req)
                                : MPI_Ireduce_scatter_block_c(sb, o->r, (MPI_Count)n, dt, op, o->comm, &o->req);
        tally(o, TLMPI_FORM_NONBLOCKING);
        break;
    case F_INIT:
        o->req = MPI_REQUEST_NULL;
        o->persistent = 1;
        if (!o->count) tally(o, TLMPI_FORM_PERSISTENT); /* the MPI's own request: counted once, here */
        rc = o->coll == C_AR ? MPI_Allreduce_init(sb, o->r, n, dt, op, o->comm, MPI_INFO_NULL, &o->req)
             : o->coll == C_AG
                 ? MPI_Allgather_init(sb, n, dt, o->r, n, dt, o->comm, MPI_INFO_NULL, &o->req)
                 : MPI_Reduce_scatter_block_init(sb, o->r, n, dt, op, o->comm, MPI_INFO_NULL, &o->req);
        break;
    case F_INIT_C:
        o->req = MPI_REQUEST_NULL;
        o->persistent = 1;
        if (!o->count) tally(o, TLMPI_FORM_PERSISTENT);
        rc = o->coll == C_AR
                 ? MPI_Allreduce_init_c(sb, o->r, (MPI_Count)n, dt, op, o->comm, MPI_INFO_NULL, &o->req)
             : o->coll == C_AG ? MPI_Allgather_init_c(sb, (MPI_Count)n, dt, o->r, (MPI_Count)n, dt, o->comm,
                                                      MPI_INFO_NULL, &o->req)
                               : MPI_Reduce_scatter_block_init_c(sb, o->r, (MPI_Count)n, dt, op, o->comm,
                                                                 MPI_INFO_NULL, &o->req);
        break;
#endif
    default:
        break;
    }
    if (rc != MPI_SUCCESS) {
        char eb[MPI_MAX_ERROR_STRING + 64];

        TST_FAIL("%s: the call returned %s", o->what, tst_err_string(rc, eb));
    }
    return rc;
}

static int is_poison(const unsigned char *p, size_t n, unsigned char v)
{
    for (size_t i = 0; i < n; i++) {
        if (p[i] != v) return 0;
    }
    return 1;
}

/* the result against the host reference, and the guard; returns 1 on a failure (reported
 * unless quiet) */
static int nbc_check_(nbc_t *o, const char *when, int quiet)
{
    size_t es = type_size(o->t), out_n = out_elems(o), buf_n = buf_elems(o), i;
    double got = 0, want = 0;
    int bad = 0;

    memset(o->h_out, (unsigned char)~o->pv, (buf_n + GUARD) * es);
    buf_get(o, o->h_out, o->r, (buf_n + GUARD) * es);
    i = exact_first_bad(o->coll, o->t, o->sum, o->ds, o->rank, o->p, o->count, o->h_out, out_n, &got, &want);
    if (quiet) {
        return i < out_n || !is_poison(o->h_out + buf_n * es, GUARD * es, o->pv);
    }
    __atomic_fetch_add(&tst_checks, 2, __ATOMIC_RELAXED);
    if (i < out_n) {
        TST_FAIL("%s%s: element %zu = %.17g, expected %g%s", o->what, when, i, got, want,
                 is_poison(o->h_out + i * es, es, o->pv) ? " (still the poison: not written)" : "");
        bad = 1;
    }
    if (!is_poison(o->h_out + buf_n * es, GUARD * es, o->pv)) {
        TST_FAIL("%s%s: wrote past its output (guard of %d elements after element %zu)", o->what, when, GUARD, buf_n);
        bad = 1;
    }
    return bad;
}

static int nbc_check(nbc_t *o, const char *when)
{
    return nbc_check_(o, when, 0);
}

/* ------------------------------------------------------------------------------------------ */
/* what a completion call completes: a collective or a host-buffer point-to-point operation */

enum { IT_NBC, IT_SEND, IT_RECV };

typedef struct {
    int kind;
    nbc_t *op;
    int *buf, n, peer;
    uint64_t ds;
    MPI_Request handle; /* as posted (a persistent request keeps it) */
    int persistent;
    int done;
} item_t;

static int p2p_val(uint64_t ds, int sender, int i)
{
    return val(ds, sender, (size_t)i) * 1000 + i;
}

static void item_nbc(item_t *it, nbc_t *o)
{
    memset(it, 0, sizeof(*it));
    it->kind = IT_NBC;
    it->op = o;
    it->handle = o->req;
    it->persistent = o->persistent;
}

/* a host-buffer ring exchange: recv from the left and send to the right (n ints, fresh values) */
static void post_p2p(item_t *rit, item_t *sit, MPI_Request *rr, MPI_Request *sr, int *rbuf, int *sbuf, int n)
{
    int left = (tst_rank + tst_size - 1) % tst_size, right = (tst_rank + 1) % tst_size, i, rc;
    uint64_t ds = tst_rand_r(&G);

    memset(rit, 0, sizeof(*rit));
    memset(sit, 0, sizeof(*sit));
    for (i = 0; i < n; i++) {
        sbuf[i] = p2p_val(ds, tst_rank, i);
        rbuf[i] = -77777777;
    }
    rbuf[n] = -77777777; /* guard */
    rc = MPI_Irecv(rbuf, n, MPI_INT, left, P2P_TAG, MPI_COMM_WORLD, rr);
    TST_CHECK(rc == MPI_SUCCESS, "MPI_Irecv: rc %d", rc);
    rc = MPI_Isend(sbuf, n, MPI_INT, right, P2P_TAG, MPI_COMM_WORLD, sr);
    TST_CHECK(rc == MPI_SUCCESS, "MPI_Isend: rc %d", rc);
    rit->kind = IT_RECV;
    rit->buf = rbuf;
    rit->n = n;
    rit->peer = left;
    rit->ds = ds;
    rit->handle = *rr;
    sit->kind = IT_SEND;
    sit->buf = sbuf;
    sit->n = n;
    sit->peer = right;
    sit->ds = ds;
    sit->handle = *sr;
}

static void status_prefill(MPI_Status *st, int n)
{
    memset(st, 0x5a, sizeof(MPI_Status) * (size_t)n);
    for (int i = 0; i < n; i++) st[i].MPI_ERROR = JUNK_ERR;
}

static const char *item_what(const item_t *it, char *buf, size_t len)
{
    if (it->kind == IT_NBC) return it->op->what;
    snprintf(buf, len, "host %s of %d ints %s rank %d", it->kind == IT_RECV ? "MPI_Irecv" : "MPI_Isend", it->n,
             it->kind == IT_RECV ? "from" : "to", it->peer);
    return buf;
}

/* a device-buffer collective that moves data: tlmpi's own request (host buffers and count 0 go to
 * the MPI) */
static int tlmpi_own(const item_t *it)
{
    return it->kind == IT_NBC && !it->op->host && it->op->count > 0;
}

/* An item the completion call reported complete: its data now, its status (NULL: ignored;
 * multi: from a multiple-completion call, where MPI_ERROR is defined) */
static void item_done(item_t *it, const MPI_Status *st, int multi, const char *ctx)
{
    char wb[160], when[300];
    const char *what = item_what(it, wb, sizeof(wb));
    int cnt = -1, canc = -1, i;

    TST_CHECK(!it->done, "%s: %s reported complete twice", ctx, what);
    it->done = 1;
    if (it->kind == IT_NBC) {
        snprintf(when, sizeof(when), ", completed in %s", ctx);
        nbc_check(it->op, when);
    } else if (it->kind == IT_RECV) {
        for (i = 0; i < it->n; i++) {
            if (it->buf[i] != p2p_val(it->ds, it->peer, i)) {
                TST_FAIL("%s: %s: element %d = %d, expected %d", ctx, what, i, it->buf[i],
                         p2p_val(it->ds, it->peer, i));
                break;
            }
        }
        TST_CHECK(it->buf[it->n] == -77777777, "%s: %s wrote past its buffer", ctx, what);
    }
    if (!st) return;
    if (multi) {
        /* MPI_ERROR: a multiple-completion call that returns MPI_SUCCESS need not touch it (MPI
         * changes it only with MPI_ERR_IN_STATUS); where it does, MPI_SUCCESS. tlmpi's own requests:
         * MPI_SUCCESS, or what PMPI_Waitall leaves there */
        int e = st->MPI_ERROR, ok = e == MPI_SUCCESS || e == ref_multi_err || (!tlmpi_own(it) && e == JUNK_ERR);

        TST_CHECK(ok, "%s: %s: MPI_ERROR of its status %d after a call that returned MPI_SUCCESS", ctx, what, e);
    }
    if (it->kind == IT_NBC && !tlmpi_own(it)) {
        /* possibly the MPI's own request (host buffers, or nothing to move: tlmpi passes those
         * through): the MPI need not define more of its status (Open MPI 4.1 leaves the count and
         * the cancelled flag of its non-blocking collectives' requests uninitialised; MPICH 4.0.2
         * leaves those of its last internal message there) */
        return;
    }
    MPI_Test_cancelled(st, &canc);
    TST_CHECK(canc == 0, "%s: %s: MPI_Test_cancelled says %d", ctx, what, canc);
    MPI_Get_count(st, MPI_INT, &cnt);
    if (it->kind == IT_NBC) {
        TST_CHECK(cnt == 0 || cnt == ref_count_int,
                  "%s: %s: MPI_Get_count of its status %d (source %d tag %d error %d); want 0 (PMPI gives %d for its "
                  "own collectives)", ctx, what, cnt, st->MPI_SOURCE, st->MPI_TAG, st->MPI_ERROR, ref_count_int);
    } else if (it->kind == IT_RECV) {
        TST_CHECK(cnt == it->n, "%s: %s: MPI_Get_count %d", ctx, what, cnt);
        TST_CHECK(st->MPI_SOURCE == it->peer && st->MPI_TAG == P2P_TAG, "%s: %s: status source %d tag %d", ctx, what,
                  st->MPI_SOURCE, st->MPI_TAG);
    }
}

/* after completion: MPI_REQUEST_NULL, or a persistent request's own (now inactive) handle */
static int req_done_ok(const item_t *it, MPI_Request r)
{
    return it->persistent ? r == it->handle : r == MPI_REQUEST_NULL;
}

static void spin_guard(double t0, const char *ctx, const char *call)
{
    if (MPI_Wtime() - t0 > g_spin_limit) {
        fprintf(stderr, "[mpi_nbc r%d] %s: %s still says not complete after %.0f s\n", tst_rank, ctx, call,
                g_spin_limit);
        PMPI_Abort(MPI_COMM_WORLD, 4);
    }
}

enum { M_WAIT, M_TEST, M_WAITALL, M_WAITANY, M_WAITSOME, M_TESTALL, M_TESTANY, M_TESTSOME, M_GETSTATUS, NMETHODS };
static const char *const method_name[NMETHODS] = { "MPI_Wait",    "MPI_Test",    "MPI_Waitall",
                                                   "MPI_Waitany", "MPI_Waitsome", "MPI_Testall",
                                                   "MPI_Testany", "MPI_Testsome", "MPI_Request_get_status" };

/* requests other than the completed ones keep their handles */
static void check_untouched(int n, const item_t *it, const MPI_Request *rq, const MPI_Request *saved, const char *ctx,
                            const char *call)
{
    for (int i = 0; i < n; i++) {
        if (!it[i].done && rq[i] != saved[i]) {
            char wb[160];

            TST_FAIL("%s: %s changed the handle of %s, which it did not complete", ctx, call,
                     item_what(&it[i], wb, sizeof(wb)));
        }
    }
}

static int rc_ok(int rc, const char *ctx, const char *call)
{
    char eb[MPI_MAX_ERROR_STRING + 64];

    if (rc != MPI_SUCCESS) { /* not counted as a check: polling loops call it many times */
        TST_FAIL("%s: %s returned %s", ctx, call, tst_err_string(rc, eb));
        return 0;
    }
    return 1;
}

/* Complete the n requests rq (items it) with method m; statuses real or ignored. order: for the
 * one-request methods, 0 in order, 1 reversed, 2 a per-rank random order. */
static void complete(int m, int n, item_t *it, MPI_Request *rq, int use_st, int order, const char *ctx0)
{
    MPI_Status sts[MAXREQ], st;
    MPI_Request saved[MAXREQ];
    int idx[MAXREQ], perm[MAXREQ], i, k, rc, flag, index, out, left = 0, guard;
    double t0 = MPI_Wtime();
    char ctx[240];

    snprintf(ctx, sizeof(ctx), "%s [%s, %s]", ctx0, method_name[m], use_st ? "statuses" : "statuses ignored");
    for (i = 0; i < n; i++) {
        it[i].done = 0;
        left++;
        perm[i] = order == 1 ? n - 1 - i : i;
    }
    if (order == 2) {
        for (i = n - 1; i > 0; i--) {
            int j = (int)(tst_rand() % (uint64_t)(i + 1)), x = perm[i];

            perm[i] = perm[j];
            perm[j] = x;
        }
    }
    memcpy(saved, rq, sizeof(MPI_Request) * (size_t)n);
    switch (m) {
    case M_WAIT:
        for (k = 0; k < n; k++) {
            i = perm[k];
            status_prefill(&st, 1);
            rc = MPI_Wait(&rq[i], use_st ? &st : MPI_STATUS_IGNORE);
            if (!rc_ok(rc, ctx, "MPI_Wait")) continue;
            TST_CHECK(req_done_ok(&it[i], rq[i]), "%s: request %d after MPI_Wait: %s", ctx, i,
                      it[i].persistent ? "not its own handle" : "not MPI_REQUEST_NULL");
            item_done(&it[i], use_st ? &st : NULL, 0, ctx);
        }
        break;
    case M_TEST:
        for (k = 0; k < n; k++) {
            i = perm[k];
            do {
                status_prefill(&st, 1);
                flag = -1;
                rc = MPI_Test(&rq[i], &flag, use_st ? &st : MPI_STATUS_IGNORE);
                if (!rc_ok(rc, ctx, "MPI_Test")) break;
                if (flag != 0 && flag != 1) TST_FAIL("%s: MPI_Test flag %d", ctx, flag);
                if (!flag) {
                    if (rq[i] != saved[i]) TST_FAIL("%s: MPI_Test said not complete but changed request %d", ctx, i);
                    spin_guard(t0, ctx, "MPI_Test");
                }
            } while (!flag);
            if (rc != MPI_SUCCESS) continue;
            TST_CHECK(req_done_ok(&it[i], rq[i]), "%s: request %d after MPI_Test flag 1: not MPI_REQUEST_NULL", ctx, i);
            item_done(&it[i], use_st ? &st : NULL, 0, ctx);
        }
        break;
    case M_WAITALL:
        status_prefill(sts, n);
        rc = MPI_Waitall(n, rq, use_st ? sts : statuses_ignore);
        if (!rc_ok(rc, ctx, "MPI_Waitall")) break;
        for (i = 0; i < n; i++) {
            TST_CHECK(req_done_ok(&it[i], rq[i]), "%s: request %d after MPI_Waitall", ctx, i);
            item_done(&it[i], use_st ? &sts[i] : NULL, 1, ctx);
        }
        break;
    case M_WAITANY:
        for (guard = 0; guard <= n + 1; guard++) {
            status_prefill(&st, 1);
            index = -5;
            rc = MPI_Waitany(n, rq, &index, use_st ? &st : MPI_STATUS_IGNORE);
            if (!rc_ok(rc, ctx, "MPI_Waitany")) break;
            if (index == MPI_UNDEFINED) {
                TST_CHECK(left == 0, "%s: MPI_Waitany said MPI_UNDEFINED with %d requests not complete", ctx, left);
                break;
            }
            if (index < 0 || index >= n || it[index].done) {
                TST_FAIL("%s: MPI_Waitany index %d (%d requests, %d left)", ctx, index, n, left);
                break;
            }
            TST_CHECK(req_done_ok(&it[index], rq[index]), "%s: request %d after MPI_Waitany chose it", ctx, index);
            item_done(&it[index], use_st ? &st : NULL, 0, ctx);
            left--;
            check_untouched(n, it, rq, saved, ctx, "MPI_Waitany");
        }
        TST_CHECK(guard <= n, "%s: MPI_Waitany never said MPI_UNDEFINED", ctx);
        break;
    case M_WAITSOME:
        for (guard = 0; guard <= n + 1; guard++) {
            status_prefill(sts, n);
            out = -5;
            rc = MPI_Waitsome(n, rq, &out, idx, use_st ? sts : statuses_ignore);
            if (!rc_ok(rc, ctx, "MPI_Waitsome")) break;
            if (out == MPI_UNDEFINED) {
                TST_CHECK(left == 0, "%s: MPI_Waitsome said MPI_UNDEFINED with %d requests not complete", ctx, left);
                break;
            }
            if (out < 1 || out > left) {
                TST_FAIL("%s: MPI_Waitsome outcount %d with %d left", ctx, out, left);
                break;
            }
            for (k = 0; k < out; k++) {
                index = idx[k];
                if (index < 0 || index >= n || it[index].done) {
                    TST_FAIL("%s: MPI_Waitsome index %d (%d requests)", ctx, index, n);
                    continue;
                }
                TST_CHECK(req_done_ok(&it[index], rq[index]), "%s: request %d after MPI_Waitsome chose it", ctx, index);
                item_done(&it[index], use_st ? &sts[k] : NULL, 1, ctx);
                left--;
            }
            check_untouched(n, it, rq, saved, ctx, "MPI_Waitsome");
        }
        TST_CHECK(guard <= n, "%s: MPI_Waitsome never said MPI_UNDEFINED", ctx);
        break;
    case M_TESTALL:
        for (;;) {
            status_prefill(sts, n);
            flag = -1;
            rc = MPI_Testall(n, rq, &flag, use_st ? sts : statuses_ignore);
            if (!rc_ok(rc, ctx, "MPI_Testall")) break;
            if (!flag) {
                check_untouched(n, it, rq, saved, ctx, "MPI_Testall (flag false)");
                spin_guard(t0, ctx, "MPI_Testall");
                continue;
            }
            TST_CHECK(flag == 1, "%s: MPI_Testall flag %d", ctx, flag);
            for (i = 0; i < n; i++) {
                TST_CHECK(req_done_ok(&it[i], rq[i]), "%s: request %d after MPI_Testall flag 1", ctx, i);
                item_done(&it[i], use_st ? &sts[i] : NULL, 1, ctx);
            }
            break;
        }
        break;
    case M_TESTANY:
        for (;;) {
            status_prefill(&st, 1);
            flag = -1;
            index = -5;
            rc = MPI_Testany(n, rq, &index, &flag, use_st ? &st : MPI_STATUS_IGNORE);
            if (!rc_ok(rc, ctx, "MPI_Testany")) break;
            if (!flag) {
                if (index != MPI_UNDEFINED) {
                    TST_FAIL("%s: MPI_Testany flag false, index %d (want MPI_UNDEFINED)", ctx, index);
                }
                if (left <= 0) TST_FAIL("%s: MPI_Testany flag false with nothing left to complete", ctx);
                check_untouched(n, it, rq, saved, ctx, "MPI_Testany (flag false)");
                spin_guard(t0, ctx, "MPI_Testany");
                continue;
            }
            if (index == MPI_UNDEFINED) {
                TST_CHECK(left == 0, "%s: MPI_Testany said flag true, MPI_UNDEFINED with %d left", ctx, left);
                break;
            }
            if (index < 0 || index >= n || it[index].done) {
                TST_FAIL("%s: MPI_Testany index %d (%d requests, %d left)", ctx, index, n, left);
                break;
            }
            TST_CHECK(req_done_ok(&it[index], rq[index]), "%s: request %d after MPI_Testany chose it", ctx, index);
            item_done(&it[index], use_st ? &st : NULL, 0, ctx);
            left--;
            check_untouched(n, it, rq, saved, ctx, "MPI_Testany");
        }
        break;
    case M_TESTSOME:
        for (;;) {
            status_prefill(sts, n);
            out = -5;
            rc = MPI_Testsome(n, rq, &out, idx, use_st ? sts : statuses_ignore);
            if (!rc_ok(rc, ctx, "MPI_Testsome")) break;
            if (out == MPI_UNDEFINED) {
                TST_CHECK(left == 0, "%s: MPI_Testsome said MPI_UNDEFINED with %d left", ctx, left);
                break;
            }
            if (out < 0 || out > left) {
                TST_FAIL("%s: MPI_Testsome outcount %d with %d left", ctx, out, left);
                break;
            }
            for (k = 0; k < out; k++) {
                index = idx[k];
                if (index < 0 || index >= n || it[index].done) {
                    TST_FAIL("%s: MPI_Testsome index %d (%d requests)", ctx, index, n);
                    continue;
                }
                TST_CHECK(req_done_ok(&it[index], rq[index]), "%s: request %d after MPI_Testsome chose it", ctx, index);
                item_done(&it[index], use_st ? &sts[k] : NULL, 1, ctx);
                left--;
            }
            check_untouched(n, it, rq, saved, ctx, "MPI_Testsome");
            if (!out) spin_guard(t0, ctx, "MPI_Testsome");
        }
        break;
    case M_GETSTATUS:
        for (k = 0; k < n; k++) {
            i = perm[k];
            do {
                status_prefill(&st, 1);
                flag = -1;
                rc = MPI_Request_get_status(rq[i], &flag, use_st ? &st : MPI_STATUS_IGNORE);
                if (!rc_ok(rc, ctx, "MPI_Request_get_status")) break;
                if (rq[i] != saved[i]) TST_FAIL("%s: MPI_Request_get_status changed request %d", ctx, i);
                if (!flag) spin_guard(t0, ctx, "MPI_Request_get_status");
            } while (!flag);
            if (rc != MPI_SUCCESS) continue;
            /* complete: the data is there now, and the request still exists */
            item_done(&it[i], use_st ? &st : NULL, 0, ctx);
            flag = -1;
            rc = MPI_Request_get_status(rq[i], &flag, MPI_STATUS_IGNORE);
            TST_CHECK(rc == MPI_SUCCESS && flag == 1 && rq[i] == saved[i],
                      "%s: MPI_Request_get_status again on complete request %d: rc %d flag %d", ctx, i, rc, flag);
            if (it[i].kind == IT_NBC) {
                /* MPI_Request_free of a collective's request is erroneous in MPI: MPI_Wait frees it */
                status_prefill(&st, 1);
                rc = MPI_Wait(&rq[i], use_st ? &st : MPI_STATUS_IGNORE);
                rc_ok(rc, ctx, "MPI_Wait after MPI_Request_get_status");
                TST_CHECK(req_done_ok(&it[i], rq[i]), "%s: request %d after MPI_Wait after get_status", ctx, i);
                if (use_st && rc == MPI_SUCCESS) {
                    int canc = -1;

                    MPI_Test_cancelled(&st, &canc);
                    TST_CHECK(canc == 0, "%s: MPI_Test_cancelled %d after MPI_Wait after get_status", ctx, canc);
                }
            } else {
                rc = MPI_Request_free(&rq[i]);
                rc_ok(rc, ctx, "MPI_Request_free of a complete point-to-point request");
                TST_CHECK(rq[i] == MPI_REQUEST_NULL, "%s: request %d after MPI_Request_free", ctx, i);
            }
        }
        break;
    default:
        break;
    }
    for (i = 0; i < n; i++) {
        char wb[160];

        TST_CHECK(it[i].done, "%s: %s never reported complete", ctx, item_what(&it[i], wb, sizeof(wb)));
        if (!it[i].done && !it[i].persistent && rq[i] != MPI_REQUEST_NULL) {
            MPI_Wait(&rq[i], MPI_STATUS_IGNORE); /* so that the next case starts clean */
        }
    }
}

/* ------------------------------------------------------------------------------------------ */
/* the cases */

static double case_t0;
static long case_seq0;

static void case_begin(void)
{
    case_t0 = MPI_Wtime();
    case_seq0 = g_seq;
}

static void case_end(const char *name)
{
    long f = __atomic_load_n(&tst_failures, __ATOMIC_RELAXED);

    if (tst_rank == 0) {
        printf("mpi_nbc: case %s: %ld calls, %.2f s%s\n", name, g_seq - case_seq0, MPI_Wtime() - case_t0,
               f ? " (failures so far on rank 0)" : "");
        fflush(stdout);
    }
}

/* a: every completion call; b: statuses; c: mixed arrays. Batches of the three collectives in
 * place and not (6 device-buffer requests), in round r: statuses real when r is odd; from r = 2 on
 * (case c) with a host ring exchange and a host-buffer MPI_Iallreduce in the same array. */
static void case_completion(MPI_Comm comm, int mixed_too)
{
    nbc_t ops[6], host_op;
    item_t it[MAXREQ];
    MPI_Request rq[MAXREQ];
    int *rbuf = tst_malloc(sizeof(int) * 4100), *sbuf = tst_malloc(sizeof(int) * 4100);
    int m, r, k, n, rounds = mixed_too ? 4 : 2;
    char ctx[200];

    for (k = 0; k < 6; k++) nbc_alloc(&ops[k], comm, 0);
    nbc_alloc(&host_op, comm, 1);
    for (m = 0; m < NMETHODS; m++) {
        for (r = 0; r < rounds; r++) {
            int mixed = r >= 2, pos_p2p = (int)(tst_rand_r(&G) % 7), pos_host = (int)(tst_rand_r(&G) % 7);

            snprintf(ctx, sizeof(ctx), "case %s round %d", mixed ? "c (mixed)" : "a/b", r);
            n = 0;
            for (k = 0; k <= 6; k++) {
                if (mixed && k == pos_p2p) {
                    post_p2p(&it[n], &it[n + 1], &rq[n], &rq[n + 1], rbuf, sbuf,
                             (int)counts[tst_rand_r(&G) % NCOUNTS] + 1);
                    n += 2;
                }
                if (mixed && k == pos_host) {
                    nbc_args(&host_op, C_AR, (int)(tst_rand_r(&G) % 2), counts[1 + tst_rand_r(&G) % (NCOUNTS - 1)]);
                    nbc_fill(&host_op, ctx);
                    strncat(host_op.what, " (host buffers)", sizeof(host_op.what) - strlen(host_op.what) - 1);
                    nbc_post(&host_op, F_NB);
                    rq[n] = host_op.req;
                    item_nbc(&it[n++], &host_op);
                }
                if (k == 6) break;
                nbc_args(&ops[k], k % 3, k / 3, counts[tst_rand_r(&G) % NCOUNTS]);
                nbc_fill(&ops[k], ctx);
                nbc_post(&ops[k], F_NB);
                rq[n] = ops[k].req;
                item_nbc(&it[n++], &ops[k]);
            }
            complete(m, n, it, rq, r & 1, m == M_WAIT ? 2 : m == M_GETSTATUS ? 1 : 0, ctx);
        }
    }
    for (k = 0; k < 6; k++) nbc_free(&ops[k]);
    nbc_free(&host_op);
    free(rbuf);
    free(sbuf);
}

/* a, last part: MPI_Request_free on active requests; the results checked after a blocking
 * device-buffer collective on the same communicator */
static void case_free_active(MPI_Comm comm)
{
    nbc_t ops[6], fence;
    int k, r, rc, bad[6], any[6];

    for (k = 0; k < 6; k++) nbc_alloc(&ops[k], comm, 0);
    nbc_alloc(&fence, comm, 0);
    for (r = 0; r < 3; r++) {
        int nfree = r == 0 ? 1 : 6;

        for (k = 0; k < nfree; k++) {
            int coll = r == 0 ? (int)(tst_rand_r(&G) % 3) : k % 3;

            nbc_args(&ops[k], coll, r == 0 ? (int)(tst_rand_r(&G) % 2) : k / 3,
                     counts[1 + tst_rand_r(&G) % (NCOUNTS - 1)]);
            nbc_fill(&ops[k], "case a (MPI_Request_free while active)");
            if (nbc_post(&ops[k], F_NB) != MPI_SUCCESS) continue;
            rc = MPI_Request_free(&ops[k].req);
            rc_ok(rc, ops[k].what, "MPI_Request_free");
            TST_CHECK(ops[k].req == MPI_REQUEST_NULL, "%s: request not MPI_REQUEST_NULL after MPI_Request_free",
                      ops[k].what);
        }
        nbc_args(&fence, C_AR, 0, 5);
        nbc_fill(&fence, "case a (the blocking allreduce after the freed requests)");
        if (nbc_post(&fence, F_BLOCK) == MPI_SUCCESS) nbc_check(&fence, "");
        for (k = 0; k < nfree; k++) bad[k] = nbc_check_(&ops[k], "", 1);
        /* the same on every rank from here on (the next call is collective) */
        PMPI_Allreduce(bad, any, nfree, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        for (k = 0; k < nfree; k++) {
            if (!any[k]) {
                __atomic_fetch_add(&tst_checks, 1, __ATOMIC_RELAXED);
                continue;
            }
            /* not there on some rank: say whether it arrives after a later completion call (a
             * non-blocking allreduce on the same communicator and its MPI_Wait) */
            nbc_args(&fence, C_AR, 0, 5);
            nbc_fill(&fence, "case a (the MPI_Iallreduce + MPI_Wait after the freed requests)");
            if (nbc_post(&fence, F_NB) == MPI_SUCCESS &&
                rc_ok(MPI_Wait(&fence.req, MPI_STATUS_IGNORE), fence.what, "MPI_Wait")) {
                nbc_check(&fence, "");
            }
            if (!bad[k]) {
                __atomic_fetch_add(&tst_checks, 1, __ATOMIC_RELAXED);
            } else if (nbc_check_(&ops[k], "", 1)) {
                nbc_check(&ops[k], " (freed while active: not complete after the blocking allreduce that followed it, "
                                   "nor after a later MPI_Iallreduce + MPI_Wait)");
            } else {
                TST_FAIL("%s (freed while active): not complete after the blocking allreduce that followed it (only "
                         "after a later MPI_Iallreduce + MPI_Wait on the communicator)", ops[k].what);
            }
        }
    }
    for (k = 0; k < 6; k++) nbc_free(&ops[k]);
    nbc_free(&fence);
}

/* b: arrays of only null requests, and an empty array */
static void case_null_requests(void)
{
    MPI_Request rq[4] = { MPI_REQUEST_NULL, MPI_REQUEST_NULL, MPI_REQUEST_NULL, MPI_REQUEST_NULL };
    MPI_Status st, sts[4];
    int rc, flag, index, out, idx[4], cnt = -1, n;

    for (n = 0; n <= 3; n += 3) {
        status_prefill(&st, 1);
        rc = MPI_Wait(&rq[0], &st);
        MPI_Get_count(&st, MPI_INT, &cnt);
        TST_CHECK(rc == MPI_SUCCESS && st.MPI_SOURCE == ref_empty_src && st.MPI_TAG == ref_empty_tag &&
                      cnt == ref_empty_count,
                  "MPI_Wait(MPI_REQUEST_NULL): rc %d, status source %d tag %d count %d (PMPI: %d %d %d)", rc,
                  st.MPI_SOURCE, st.MPI_TAG, cnt, ref_empty_src, ref_empty_tag, ref_empty_count);
        flag = -1;
        rc = MPI_Test(&rq[0], &flag, MPI_STATUS_IGNORE);
        TST_CHECK(rc == MPI_SUCCESS && flag == 1, "MPI_Test(MPI_REQUEST_NULL): rc %d flag %d", rc, flag);
        flag = -1;
        rc = MPI_Request_get_status(MPI_REQUEST_NULL, &flag, &st);
        TST_CHECK(rc == MPI_SUCCESS && flag == 1, "MPI_Request_get_status(MPI_REQUEST_NULL): rc %d flag %d", rc, flag);
        rc = MPI_Waitall(n, rq, sts);
        TST_CHECK(rc == MPI_SUCCESS, "MPI_Waitall of %d null requests: rc %d", n, rc);
        index = -5;
        rc = MPI_Waitany(n, rq, &index, &st);
        TST_CHECK(rc == MPI_SUCCESS && index == MPI_UNDEFINED, "MPI_Waitany of %d null requests: rc %d index %d", n, rc,
                  index);
        out = -5;
        rc = MPI_Waitsome(n, rq, &out, idx, sts);
        TST_CHECK(rc == MPI_SUCCESS && out == MPI_UNDEFINED, "MPI_Waitsome of %d null requests: rc %d outcount %d", n,
                  rc, out);
        flag = -1;
        rc = MPI_Testall(n, rq, &flag, statuses_ignore);
        TST_CHECK(rc == MPI_SUCCESS && flag == 1, "MPI_Testall of %d null requests: rc %d flag %d", n, rc, flag);
        flag = -1;
        index = -5;
        rc = MPI_Testany(n, rq, &index, &flag, MPI_STATUS_IGNORE);
        TST_CHECK(rc == MPI_SUCCESS && flag == 1 && index == MPI_UNDEFINED,
                  "MPI_Testany of %d null requests: rc %d flag %d index %d", n, rc, flag, index);
        out = -5;
        rc = MPI_Testsome(n, rq, &out, idx, statuses_ignore);
        TST_CHECK(rc == MPI_SUCCESS && out == MPI_UNDEFINED, "MPI_Testsome of %d null requests: rc %d outcount %d", n,
                  rc, out);
    }
}

/* d: NOUT outstanding collectives of mixed kinds on one communicator */
static void case_many(MPI_Comm comm)
{
    nbc_t ops[NOUT];
    item_t it[NOUT];
    MPI_Request rq[NOUT];
    int k, pass;

    for (k = 0; k < NOUT; k++) nbc_alloc(&ops[k], comm, 0);
    for (pass = 0; pass < 4; pass++) {
        const char *ctx = pass & 1 ? "case d (16 outstanding, MPI_Wait in a random order)"
                                   : "case d (16 outstanding, MPI_Wait from the last to the first)";

        for (k = 0; k < NOUT; k++) {
            nbc_args_random(&ops[k]);
            nbc_fill(&ops[k], ctx);
            nbc_post(&ops[k], F_NB);
            rq[k] = ops[k].req;
            item_nbc(&it[k], &ops[k]);
        }
        complete(M_WAIT, NOUT, it, rq, pass >> 1, pass & 1 ? 2 : 1, ctx);
    }
    for (k = 0; k < NOUT; k++) nbc_free(&ops[k]);
}

/* e: Iallreduce, Allgather, Ireduce_scatter_block, Allreduce, Waitall on one communicator */
static void case_interleaved(MPI_Comm comm)
{
    nbc_t a, b, c, d;
    item_t it[2];
    MPI_Request rq[2];
    int r;
    const char *ctx = "case e (blocking and non-blocking interleaved)";

    nbc_alloc(&a, comm, 0);
    nbc_alloc(&b, comm, 0);
    nbc_alloc(&c, comm, 0);
    nbc_alloc(&d, comm, 0);
    for (r = 0; r < 6; r++) {
        nbc_args(&a, C_AR, r & 1, counts[1 + tst_rand_r(&G) % (NCOUNTS - 1)]);
        nbc_args(&b, C_AG, (r >> 1) & 1, counts[1 + tst_rand_r(&G) % (NCOUNTS - 1)]);
        nbc_args(&c, C_RSB, r & 1, counts[1 + tst_rand_r(&G) % (NCOUNTS - 1)]);
        nbc_args(&d, C_AR, (r >> 1) & 1, counts[1 + tst_rand_r(&G) % (NCOUNTS - 1)]);
        nbc_fill(&a, ctx);
        nbc_fill(&b, ctx);
        nbc_fill(&c, ctx);
        nbc_fill(&d, ctx);
        nbc_post(&a, F_NB);
        if (nbc_post(&b, F_BLOCK) == MPI_SUCCESS) nbc_check(&b, " (blocking, after MPI_Iallreduce)");
        nbc_post(&c, F_NB);
        if (nbc_post(&d, F_BLOCK) == MPI_SUCCESS) nbc_check(&d, " (blocking, after MPI_Ireduce_scatter_block)");
        rq[0] = a.req;
        rq[1] = c.req;
        item_nbc(&it[0], &a);
        item_nbc(&it[1], &c);
        complete(r < 4 ? M_WAITALL : M_WAITANY, 2, it, rq, 1, 0, ctx);
    }
    nbc_free(&a);
    nbc_free(&b);
    nbc_free(&c);
    nbc_free(&d);
}

/* f: two communicators, posted in opposite orders on even and odd ranks */
static void case_opposite(MPI_Comm ca, MPI_Comm cb)
{
    nbc_t ops[4]; /* 0, 1 on ca; 2, 3 on cb */
    item_t it[4];
    MPI_Request rq[4];
    int r, k, odd = tst_rank & 1;
    const char *ctx = "case f (two communicators in opposite orders)";

    for (k = 0; k < 4; k++) nbc_alloc(&ops[k], k < 2 ? ca : cb, 0);
    for (r = 0; r < 6; r++) {
        for (k = 0; k < 4; k++) {
            nbc_args(&ops[k], (r + k) % 3, (int)(tst_rand_r(&G) % 2), counts[1 + tst_rand_r(&G) % (NCOUNTS - 1)]);
            nbc_fill(&ops[k], ctx);
        }
        /* even ranks: A0 A1 B0 B1; odd ranks: B0 B1 A0 A1 (each communicator's own order kept) */
        for (k = 0; k < 4; k++) {
            int j = odd ? (k + 2) % 4 : k;

            nbc_post(&ops[j], F_NB);
        }
        for (k = 0; k < 4; k++) {
            rq[k] = ops[k].req;
            item_nbc(&it[k], &ops[k]);
        }
        if (r & 1) {
            complete(M_WAITALL, 4, it, rq, 1, 0, ctx);
        } else {
            /* MPI_Wait one by one: even ranks the last posted first, odd ranks in posting order */
            MPI_Request rq2[4];
            item_t it2[4];

            for (k = 0; k < 4; k++) {
                int j = odd ? (k + 2) % 4 : 3 - k;

                rq2[k] = rq[j];
                it2[k] = it[j];
            }
            complete(M_WAIT, 4, it2, rq2, 0, 0, ctx);
        }
    }
    for (k = 0; k < 4; k++) nbc_free(&ops[k]);
}

/* g: one thread posts, another completes */
#define TQ 3       /* requests in flight */
#define TSLOTS (TQ + 1)
typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    nbc_t ops[TSLOTS];
    int busy[TSLOTS];
    int queue[TSLOTS], head, tail, queued;
    int rounds, stop;
    long completed;
} tq_t;

static void *completer(void *arg)
{
    tq_t *q = arg;
    long round = 0;
    int ndev = 1;

    if (cudaGetDeviceCount(&ndev) == cudaSuccess && ndev > 0) TST_CUDA(cudaSetDevice(tst_rank % ndev));

    for (;;) {
        int slot, flag = 0, rc;
        nbc_t *o;
        double t0;
            MPI_Status st;

        pthread_mutex_lock(&q->mu);
        while (!q->queued && !q->stop) pthread_cond_wait(&q->cv, &q->mu);
        if (!q->queued && q->stop) {
            pthread_mutex_unlock(&q->mu);
            break;
        }
        slot = q->queue[q->head];
        q->head = (q->head + 1) % TSLOTS;
        q->queued--;
        pthread_mutex_unlock(&q->mu);
        o = &q->ops[slot];
        t0 = MPI_Wtime();
        switch (round++ % 4) {
        case 0:
            rc = MPI_Wait(&o->req, &st);
            break;
        case 1:
            do {
                rc = MPI_Test(&o->req, &flag, MPI_STATUS_IGNORE);
                if (!flag) spin_guard(t0, o->what, "MPI_Test (completing thread)");
            } while (rc == MPI_SUCCESS && !flag);
            break;
        case 2:
            rc = MPI_Waitall(1, &o->req, statuses_ignore);
            break;
        default:
            do {
                rc = MPI_Request_get_status(o->req, &flag, MPI_STATUS_IGNORE);
                if (!flag) spin_guard(t0, o->what, "MPI_Request_get_status (completing thread)");
            } while (rc == MPI_SUCCESS && !flag);
            if (rc == MPI_SUCCESS) rc = MPI_Wait(&o->req, MPI_STATUS_IGNORE);
            break;
        }
        rc_ok(rc, o->what, "the completing thread's call");
        TST_CHECK(o->req == MPI_REQUEST_NULL, "%s: request not MPI_REQUEST_NULL after the completing thread's call",
                  o->what);
        nbc_check(o, " (completed by the second thread)");
        pthread_mutex_lock(&q->mu);
        q->busy[slot] = 0;
        q->completed++;
        pthread_cond_broadcast(&q->cv);
        pthread_mutex_unlock(&q->mu);
    }
    return NULL;
}

static void case_threads(MPI_Comm comm, int rounds)
{
    tq_t q;
    pthread_t th;
    int r, k;

    memset(&q, 0, sizeof(q));
    pthread_mutex_init(&q.mu, NULL);
    pthread_cond_init(&q.cv, NULL);
    for (k = 0; k < TSLOTS; k++) nbc_alloc(&q.ops[k], comm, 0);
    if (pthread_create(&th, NULL, completer, &q) != 0) {
        TST_FAIL("case g: pthread_create failed");
        return;
    }
    for (r = 0; r < rounds; r++) {
        int slot = r % TSLOTS;
        nbc_t *o = &q.ops[slot];

        pthread_mutex_lock(&q.mu);
        while (q.busy[slot]) pthread_cond_wait(&q.cv, &q.mu);
        pthread_mutex_unlock(&q.mu);
        nbc_args_random(o);
        nbc_fill(o, "case g (posted by the main thread)");
        nbc_post(o, F_NB);
        pthread_mutex_lock(&q.mu);
        q.busy[slot] = 1;
        q.queue[q.tail] = slot;
        q.tail = (q.tail + 1) % TSLOTS;
        q.queued++;
        pthread_cond_broadcast(&q.cv);
        pthread_mutex_unlock(&q.mu);
    }
    pthread_mutex_lock(&q.mu);
    q.stop = 1;
    pthread_cond_broadcast(&q.cv);
    pthread_mutex_unlock(&q.mu);
    pthread_join(th, NULL);
    TST_CHECK(q.completed == rounds, "case g: the second thread completed %ld of %d requests", q.completed, rounds);
    for (k = 0; k < TSLOTS; k++) nbc_free(&q.ops[k]);
    pthread_mutex_destroy(&q.mu);
    pthread_cond_destroy(&q.cv);
}

#ifdef HAVE_MPI4_FORMS
/* MPI_Start/MPI_Startall of the requests ops[first..first+n) (each with new data first) */
static void pers_start(nbc_t *ops, int first, int n, int all, const char *ctx)
{
    MPI_Request rq[8];
    int k, rc;

    for (k = first; k < first + n; k++) {
        nbc_fill(&ops[k], ctx);
        if (ops[k].count) tally(&ops[k], TLMPI_FORM_PERSISTENT); /* tlmpi's own: once per start */
        rq[k - first] = ops[k].req;
    }
    if (all) {
        rc = MPI_Startall(n, rq);
        rc_ok(rc, ctx, "MPI_Startall");
    } else {
        for (k = 0; k < n; k++) {
            rc = MPI_Start(&rq[k]);
            rc_ok(rc, ctx, "MPI_Start");
        }
    }
    for (k = 0; k < n; k++) {
        TST_CHECK(rq[k] == ops[first + k].req, "%s: MPI_Start%s changed the handle of %s", ctx, all ? "all" : "",
                  ops[first + k].what);
    }
}

/* MPI_Wait, MPI_Test and MPI_Request_get_status on an inactive persistent request: at once */
static void pers_inactive(nbc_t *o, const char *when)
{
    MPI_Request h = o->req;
    MPI_Status st;
    int rc, flag = -1, cnt = -1;

    status_prefill(&st, 1);
    rc = MPI_Wait(&o->req, &st);
    MPI_Get_count(&st, MPI_INT, &cnt);
    TST_CHECK(rc == MPI_SUCCESS && o->req == h && cnt == ref_empty_count && st.MPI_TAG == ref_empty_tag,
              "%s: MPI_Wait on the inactive request %s: rc %d, handle %s, count %d, tag %d", o->what, when, rc,
              o->req == h ? "kept" : "changed", cnt, st.MPI_TAG);
    rc = MPI_Test(&o->req, &flag, MPI_STATUS_IGNORE);
    TST_CHECK(rc == MPI_SUCCESS && flag == 1 && o->req == h, "%s: MPI_Test on the inactive request %s: rc %d flag %d",
              o->what, when, rc, flag);
    flag = -1;
    rc = MPI_Request_get_status(o->req, &flag, MPI_STATUS_IGNORE);
    TST_CHECK(rc == MPI_SUCCESS && flag == 1 && o->req == h,
              "%s: MPI_Request_get_status on the inactive request %s: rc %d flag %d", o->what, when, rc, flag);
}

/* h: persistent collectives (and, with init = F_INIT_C, their _c forms: j) */
static void case_persistent(MPI_Comm comm, int init, long iters)
{
    nbc_t ops[6], never;
    item_t it[MAXREQ];
    MPI_Request rq[MAXREQ];
    int *rbuf = tst_malloc(sizeof(int) * 80), *sbuf = tst_malloc(sizeof(int) * 80);
    int k, n, rc;
    long i;
    const char *ctx = init == F_INIT ? "case h (persistent)" : "case j (persistent _c)";

    for (k = 0; k < 6; k++) {
        nbc_alloc(&ops[k], comm, 0);
        ops[k].persistent = 1;
        nbc_args(&ops[k], k % 3, k / 3, pcounts[tst_rand_r(&G) % NPCOUNTS]);
        nbc_fill(&ops[k], ctx); /* for the name; every start writes new data */
        if (nbc_post(&ops[k], init) != MPI_SUCCESS || ops[k].req == MPI_REQUEST_NULL) {
            TST_FAIL("%s: no request from the init call", ops[k].what);
            for (; k >= 0; k--) nbc_free(&ops[k]);
            free(rbuf);
            free(sbuf);
            return;
        }
        pers_inactive(&ops[k], "before its first start");
    }
    for (i = 0; i < iters; i++) {
        int how = (int)(i % 8);

        if (how < 4) {
            /* MPI_Start + MPI_Wait, one request (each of the six in turn) */
            k = (int)((i / 2) % 6);
            pers_start(ops, k, 1, 0, ctx);
            rq[0] = ops[k].req;
            item_nbc(&it[0], &ops[k]);
            complete(how & 1 ? M_TEST : M_WAIT, 1, it, rq, how >> 1, 0, ctx);
            continue;
        }
        /* MPI_Startall of all six, completed by Waitall, Testall, Waitsome (with a host ring
         * exchange in the array) or Waitany */
        pers_start(ops, 0, 6, 1, ctx);
        for (k = 0; k < 6; k++) {
            rq[k] = ops[k].req;
            item_nbc(&it[k], &ops[k]);
        }
        n = 6;
        if (how == 6) {
            post_p2p(&it[6], &it[7], &rq[6], &rq[7], rbuf, sbuf, 1 + (int)(i % 64));
            n = 8;
        }
        complete(how == 4 ? M_WAITALL : how == 5 ? M_TESTALL : how == 6 ? M_WAITSOME : M_WAITANY, n, it, rq,
                 (int)((i / 8) & 1), 0, ctx);
    }
    for (k = 0; k < 6; k++) {
        pers_inactive(&ops[k], "after its last completion");
        rc = MPI_Request_free(&ops[k].req);
        TST_CHECK(rc == MPI_SUCCESS && ops[k].req == MPI_REQUEST_NULL,
                  "%s: MPI_Request_free of the inactive request: rc %d", ops[k].what, rc);
        nbc_free(&ops[k]);
    }
    /* a persistent request freed without ever being started */
    nbc_alloc(&never, comm, 0);
    nbc_args(&never, (int)(tst_rand_r(&G) % 3), 0, 7);
    nbc_fill(&never, ctx);
    if (nbc_post(&never, init) == MPI_SUCCESS) {
        rc = MPI_Request_free(&never.req);
        TST_CHECK(rc == MPI_SUCCESS && never.req == MPI_REQUEST_NULL, "%s: MPI_Request_free, never started: rc %d",
                  never.what, rc);
    }
    nbc_free(&never);
    free(rbuf);
    free(sbuf);
}

/* h: persistent requests of count 0, which tlmpi hands to the MPI (counted once, at init): MPI_Start
 * + MPI_Wait only. MPICH 4.0.2's own persistent collective requests are never inactive to its
 * array calls (MPI_Waitany / MPI_Waitsome return a completed one again and again, MPI_Testall
 * returns MPI_ERR_IN_STATUS), and MPI_Wait on one never started hangs: not asked here. */
static void case_persistent_zero(MPI_Comm comm, int init)
{
    nbc_t o;
    item_t it;
    MPI_Request rq;
    int c, k, rc;
    const char *ctx = init == F_INIT ? "case h (persistent, count 0)" : "case j (persistent _c, count 0)";

    nbc_alloc(&o, comm, 0);
    for (c = 0; c < NCOLL; c++) {
        o.persistent = 1;
        nbc_args(&o, c, (int)(tst_rand_r(&G) % 2), 0);
        nbc_fill(&o, ctx);
        if (nbc_post(&o, init) != MPI_SUCCESS || o.req == MPI_REQUEST_NULL) continue;
        for (k = 0; k < 3; k++) {
            pers_start(&o, 0, 1, k & 1, ctx);
            rq = o.req;
            item_nbc(&it, &o);
            complete(M_WAIT, 1, &it, &rq, k & 1, 0, ctx);
        }
        pers_inactive(&o, "after its last completion");
        rc = MPI_Request_free(&o.req);
        TST_CHECK(rc == MPI_SUCCESS && o.req == MPI_REQUEST_NULL, "%s: MPI_Request_free of the inactive request: rc %d",
                  o.what, rc);
    }
    nbc_free(&o);
}

/* j: the non-blocking _c forms */
static void case_large_count_forms(MPI_Comm comm)
{
    nbc_t ops[6];
    item_t it[6];
    MPI_Request rq[6];
    int k, r;
    const char *ctx = "case j (_c forms)";

    for (k = 0; k < 6; k++) nbc_alloc(&ops[k], comm, 0);
    for (r = 0; r < 2; r++) {
        for (k = 0; k < 6; k++) {
            nbc_args(&ops[k], k % 3, k / 3, counts[tst_rand_r(&G) % NCOUNTS]);
            nbc_fill(&ops[k], ctx);
            nbc_post(&ops[k], F_NB_C);
            rq[k] = ops[k].req;
            item_nbc(&it[k], &ops[k]);
        }
        complete(r ? M_WAITSOME : M_WAITALL, 6, it, rq, 1, 0, ctx);
    }
    for (k = 0; k < 6; k++) nbc_free(&ops[k]);
    case_persistent(comm, F_INIT_C, 12);
    case_persistent_zero(comm, F_INIT_C);
}
#endif

/* ------------------------------------------------------------------------------------------ */
/* i: the paths */

static long long form_calls(int coll, tlmpi_path_t p, tlmpi_form_t f)
{
    tlmpi_stat_t st;

    return tlmpi_get_form_stats(coll_id[coll], p, f, &st) == TLMPI_OK ? (long long)st.calls : -1000000;
}

static long long path_calls(int coll, tlmpi_path_t p)
{
    tlmpi_stat_t st;

    return tlmpi_get_stats(coll_id[coll], p, &st) == TLMPI_OK ? (long long)st.calls : -1000000;
}

static long long snap_form[NCOLL][TLMPI_PATH_COUNT][TLMPI_FORM_COUNT], snap_path[NCOLL][TLMPI_PATH_COUNT];

static void stats_snapshot(void)
{
    for (int c = 0; c < NCOLL; c++) {
        for (int p = 0; p < TLMPI_PATH_COUNT; p++) {
            snap_path[c][p] = path_calls(c, (tlmpi_path_t)p);
            for (int f = 0; f < TLMPI_FORM_COUNT; f++)
                snap_form[c][p][f] = form_calls(c, (tlmpi_path_t)p, (tlmpi_form_t)f);
        }
    }
}

static void check_paths(const int *want_form)
{
    static const char *const fname[TLMPI_FORM_PERSISTENT + 1] = { "blocking", "non-blocking", "persistent" };

    for (int f = 0; f <= TLMPI_FORM_PERSISTENT; f++) { /* the forms this test makes */
        for (int c = 0; c < NCOLL; c++) {
            long long d[TLMPI_PATH_COUNT], all = 0, accel;
            long dev = made[f][c][K_DEV], dev0 = made[f][c][K_DEV0], host = made[f][c][K_HOST];
            int want = want_form[f];
            char line[400];
            size_t len = 0;

            for (int p = 0; p < TLMPI_PATH_COUNT; p++) {
                d[p] = form_calls(c, (tlmpi_path_t)p, (tlmpi_form_t)f) - snap_form[c][p][f];
                all += d[p];
                if (d[p]) {
                    len += (size_t)snprintf(line + len, sizeof(line) - len, " %s=%lld",
                                            tlmpi_path_name((tlmpi_path_t)p), d[p]);
                }
            }
            if (!len) snprintf(line, sizeof(line), " none");
            accel = all - d[TLMPI_PATH_PASSTHROUGH] - d[TLMPI_PATH_HOSTOP];
            if (tst_rank == 0 && dev + dev0 + host) {
                printf("mpi_nbc: rank 0 %s %s: made %ld device (+%ld of count 0) and %ld host calls; paths:%s\n",
                       fname[f], coll_name[c], dev, dev0, host, line);
            }
            TST_CHECK(all == dev + dev0 + host,
                      "path check: %s %s: tlmpi counted %lld calls, the test made %ld (paths:%s)", fname[f],
                      coll_name[c], all, dev + dev0 + host, line);
            TST_CHECK(d[TLMPI_PATH_PASSTHROUGH] >= host && d[TLMPI_PATH_PASSTHROUGH] <= host + dev0,
                      "path check: %s %s: %lld passthrough calls; the test made %ld host-buffer calls and %ld device "
                      "calls of count 0 (paths:%s)",
                      fname[f], coll_name[c], d[TLMPI_PATH_PASSTHROUGH], host, dev0, line);
            if (want >= 0) {
                TST_CHECK(d[want] >= dev && d[want] <= dev + dev0 && d[want] + d[TLMPI_PATH_PASSTHROUGH] == all,
                          "path check: %s %s: %lld calls on %s, the test made %ld device calls of count > 0 (+%ld of "
                          "count 0); paths:%s",
                          fname[f], coll_name[c], d[want], tlmpi_path_name((tlmpi_path_t)want), dev, dev0, line);
            } else {
                TST_CHECK(
                    accel >= dev && accel <= dev + dev0,
                    "path check: %s %s: %lld accelerated calls, the test made %ld device calls of count > 0; paths:%s",
                    fname[f], coll_name[c], accel, dev, line);
            }
        }
    }
    /* every call of every form is in tlmpi_get_stats too */
    for (int c = 0; c < NCOLL; c++) {
        for (int p = 0; p < TLMPI_PATH_COUNT; p++) {
            long long dp = path_calls(c, (tlmpi_path_t)p) - snap_path[c][p], df = 0;

            for (int f = 0; f < TLMPI_FORM_COUNT; f++)
                df += form_calls(c, (tlmpi_path_t)p, (tlmpi_form_t)f) - snap_form[c][p][f];
            TST_CHECK(dp == df, "path check: %s %s: tlmpi_get_stats counted %lld calls, the forms together %lld",
                      coll_name[c], tlmpi_path_name((tlmpi_path_t)p), dp, df);
        }
    }
}

/* ------------------------------------------------------------------------------------------ */

/* what PMPI itself gives for its collective requests and for null requests */
static void probe_pmpi(void)
{
    int a[3] = { 1, 2, 3 }, b[3];
    MPI_Request r = MPI_REQUEST_NULL;
    MPI_Status st;

    PMPI_Iallreduce(a, b, 3, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r);
    status_prefill(&st, 1);
    PMPI_Waitall(1, &r, &st);
    PMPI_Get_count(&st, MPI_INT, &ref_count_int);
    ref_multi_err = st.MPI_ERROR;
    r = MPI_REQUEST_NULL;
    status_prefill(&st, 1);
    PMPI_Wait(&r, &st);
    ref_empty_src = st.MPI_SOURCE;
    ref_empty_tag = st.MPI_TAG;
    PMPI_Get_count(&st, MPI_INT, &ref_empty_count);
}

static int case_on(const char *cases, char c)
{
    return !cases || !*cases || strchr(cases, c) != NULL;
}

int main(int argc, char **argv)
{
    const char *tier = getenv("TLMPI_TIER"), *cases = getenv("NBC_CASES"), *e;
    int provided, required = MPI_THREAD_MULTIPLE, ndev = 0, want[TLMPI_FORM_COUNT], turns, opposite;
    long persist_iters = 1000, thread_rounds = 60;
    MPI_Comm ca, cb;

    if (!tier || !*tier) tier = "auto";
    if ((e = getenv("NBC_SPIN_LIMIT")) && *e) g_spin_limit = atof(e);
    if ((e = getenv("NBC_PERSIST_ITERS")) && *e) persist_iters = atol(e);
    (void)persist_iters; /* without the MPI-4 forms */
    if ((e = getenv("NBC_THREAD_ROUNDS")) && *e) thread_rounds = atol(e);
    if ((e = getenv("NBC_THREAD_LEVEL")) && *e) {
        required = !strcmp(e, "single") ? MPI_THREAD_SINGLE : !strcmp(e, "funneled") ? MPI_THREAD_FUNNELED
                   : !strcmp(e, "serialized") ? MPI_THREAD_SERIALIZED : MPI_THREAD_MULTIPLE;
    }
    provided = tst_init_thread("mpi_nbc", &argc, &argv, required);
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < 1) {
        (void)cudaGetLastError();
        return tst_skip("no CUDA device");
    }
    TST_CUDA(cudaSetDevice(tst_rank % ndev));
    tst_rng_sync();
    tst_rng_seed(&G, tst_rand());
    /* the GPU turn (TLMPI_GPU_TURNS: auto = on under MPI_THREAD_MULTIPLE): a started call cannot
     * hold it, so the non-blocking and persistent forms of the tiers that take it (nccl, node,
     * hier) are staged instead (src/comm/comm.c) */
    e = getenv("TLMPI_GPU_TURNS");
    turns = e && (!strcmp(e, "no") || !strcmp(e, "0") || !strcmp(e, "false") || !strcmp(e, "off")) ? 0
            : e && (!strcmp(e, "yes") || !strcmp(e, "1") || !strcmp(e, "true") || !strcmp(e, "on"))
                ? 1
                : provided >= MPI_THREAD_MULTIPLE;
    if (!strcmp(tier, "staging")) {
        want[0] = TLMPI_PATH_STAGING;
    } else if (!strcmp(tier, "nccl")) {
        want[0] = TLMPI_PATH_NCCL;
    } else if (!strcmp(tier, "self") || (tst_size == 1 && !strcmp(tier, "auto"))) {
        want[0] = TLMPI_PATH_SELF;
    } else {
        want[0] = -1;
    }
    want[TLMPI_FORM_BLOCKING] = want[0];
    want[TLMPI_FORM_NONBLOCKING] = want[TLMPI_FORM_PERSISTENT] =
        want[0] == TLMPI_PATH_NCCL && turns && tst_size > 1 ? TLMPI_PATH_STAGING : want[0];
    opposite = !strcmp(tier, "staging") || tst_size == 1 || ((e = getenv("NBC_OPPOSITE")) && atoi(e));
    if (tst_rank == 0) {
        printf("mpi_nbc: %d ranks, TLMPI_TIER=%s (device calls expected on %s, non-blocking and persistent on %s%s), "
               "MPI_VERSION %d.%d, thread level %d%s\n", tst_size, tier,
               want[0] >= 0 ? tlmpi_path_name((tlmpi_path_t)want[0]) : "any accelerated path",
               want[1] >= 0 ? tlmpi_path_name((tlmpi_path_t)want[1]) : "any accelerated path",
               want[1] != want[0] ? ": the GPU turn" : "", MPI_VERSION, MPI_SUBVERSION, provided,
               provided >= MPI_THREAD_MULTIPLE ? " (multiple)" : "");
        fflush(stdout);
    }
    probe_pmpi();
    MPI_Comm_dup(MPI_COMM_WORLD, &ca);
    MPI_Comm_dup(MPI_COMM_WORLD, &cb);
    stats_snapshot();

    if (case_on(cases, 'a') || case_on(cases, 'b') || case_on(cases, 'c')) {
        case_begin();
        case_null_requests();
        case_completion(ca, case_on(cases, 'c'));
        case_end("a/b/c (every completion call, statuses, mixed arrays)");
    }
    if (case_on(cases, 'a')) {
        e = getenv("NBC_FREE_ACTIVE");
        if (!e || atoi(e)) {
            case_begin();
            case_free_active(ca);
            case_end("a (MPI_Request_free on active requests)");
        } else if (tst_rank == 0) {
            printf("mpi_nbc: case a (MPI_Request_free on active requests): left out (NBC_FREE_ACTIVE=0)\n");
        }
    }
    if (case_on(cases, 'd')) {
        case_begin();
        case_many(ca);
        case_end("d (16 outstanding, reverse and random order)");
    }
    if (case_on(cases, 'e')) {
        case_begin();
        case_interleaved(cb);
        case_end("e (blocking and non-blocking interleaved)");
    }
    if (case_on(cases, 'f')) {
        if (opposite) {
            case_begin();
            case_opposite(ca, cb);
            case_end("f (two communicators in opposite orders)");
        } else if (tst_rank == 0) {
            printf("mpi_nbc: case f (two communicators in opposite orders): SKIPPED on TLMPI_TIER=%s: the fake NCCL "
                   "runs each collective to its end inside the ncclAllReduce call, so opposite orders on two "
                   "communicators cannot complete under the fakes (NBC_OPPOSITE=1 runs it anyway)\n", tier);
        }
    }
    if (case_on(cases, 'g')) {
        if (provided >= MPI_THREAD_MULTIPLE) {
            case_begin();
            case_threads(cb, (int)thread_rounds);
            case_end("g (one thread posts, another completes)");
        } else if (tst_rank == 0) {
            printf("mpi_nbc: case g (threads): SKIPPED: the MPI provides no MPI_THREAD_MULTIPLE (level %d)\n",
                   provided);
        }
    }
#ifdef HAVE_MPI4_FORMS
    if (case_on(cases, 'h')) {
        case_begin();
        case_persistent(ca, F_INIT, persist_iters);
        case_persistent_zero(ca, F_INIT);
        case_end("h (persistent)");
    }
    if (case_on(cases, 'j')) {
        case_begin();
        case_large_count_forms(cb);
        case_end("j (_c forms)");
    }
#else
    if (tst_rank == 0 && (case_on(cases, 'h') || case_on(cases, 'j'))) {
        printf("mpi_nbc: cases h (persistent) and j (_c forms): SKIPPED: this MPI is MPI %d.%d (no MPI-4 "
               "persistent collectives or _c forms)\n", MPI_VERSION, MPI_SUBVERSION);
    }
#endif
    PMPI_Barrier(MPI_COMM_WORLD);
    check_paths(want);
    MPI_Comm_free(&ca);
    MPI_Comm_free(&cb);
    return tst_finish();
}
