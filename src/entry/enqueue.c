/*
 * enqueue: the stream-ordered entry points (include/tlmpi.h: tlmpi_*_enqueue, _c, _f;
 * tlmpi_enqueue_prepare; tlmpi_enqueue_error). One body for every collective and form:
 *
 *   argument checks (the MPI's error classes, before anything is enqueued)
 *     -> both buffers device (or managed) memory, else MPI_ERR_BUFFER
 *     -> the capture status of the stream; the comm's state (built here outside capture: the
 *        comm's first call prepares it; during capture an unprepared comm is refused)
 *     -> the plan's agreed tier, as for the blocking form
 *     -> a tier with an enqueue form: order after the comm's earlier device work (gpu/order.c),
 *        the tier's enqueue on the caller's stream, the order event recorded; counted under
 *        TLMPI_FORM_ENQUEUE or TLMPI_FORM_CAPTURE
 *     -> otherwise (staging, the MPI, hier; and every call whose arguments the MPI decides:
 *        tlmpi_call_mpi_decides): the synchronous fallback where allowed (wait for the stream, run
 *        the blocking form), else, outside capture, the MPI's class where it rejects the arguments
 *        (tlmpi_staging_check_args), else MPI_ERR_UNSUPPORTED_OPERATION.
 *
 * Return values are MPI error classes; the comm's error handler is not called (the calls are tlmpi's,
 * not the MPI's); the reason of a failure is kept per thread for tlmpi_enqueue_error(). During
 * capture nothing here allocates, synchronises or touches the legacy stream or the comm's own
 * streams; the CUDA calls that remain (pointer attributes, the current device) are not capture
 * operations, and the thread runs them in relaxed capture mode, as NCCL does around its own.
 */
#include "config.h"
#include "global.h"
#include "stats.h"
#include "comm.h"
#include "env.h"
#include "classify.h"
#include "log.h"
#include "call.h"
#include "plan.h"
#include "tier.h"
#include "request.h"
#include "stream.h"

#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#ifdef HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

static __thread char enq_err[256];

TLMPI_EXPORT const char *tlmpi_enqueue_error(void)
{
    return enq_err;
}

/* Keep the reason of a failure (one debug line) and return its error class. */
static __attribute__((format(printf, 3, 4), noinline, cold)) int enq_fail(const tlmpi_call_t *c, int rc,
                                                                          const char *fmt, ...)
{
    va_list ap;
    int o = c ? snprintf(enq_err, sizeof(enq_err), "%s_enqueue: ", tlmpi_coll_name(c->coll)) : 0;

    if (o < 0 || (size_t)o >= sizeof(enq_err)) {
        o = 0;
    }
    va_start(ap, fmt);
    vsnprintf(enq_err + o, sizeof(enq_err) - (size_t)o, fmt, ap);
    va_end(ap);
    tlmpi_debug(COLL, "%s", enq_err);
    return rc;
}

#ifdef HAVE_CUDA
/* Relaxed capture mode for this thread while tlmpi's entry runs (restored on the way out). */
typedef struct {
    enum cudaStreamCaptureMode saved;
    int on;
} capture_mode_t;

static void relax_enter(capture_mode_t *m)
{
    m->saved = cudaStreamCaptureModeRelaxed;
    m->on = cudaThreadExchangeStreamCaptureMode(&m->saved) == cudaSuccess;
    if (!m->on) {
        (void)cudaGetLastError();
    }
}

static void relax_leave(capture_mode_t *m)
{
    if (m->on) {
        (void)cudaThreadExchangeStreamCaptureMode(&m->saved);
    }
}
#endif

/* The tier of the plan cannot run the call stream-ordered: the synchronous fallback (outside
 * capture, where allowed: the caller's stream waited for, then the blocking form), else the error. */
static int enq_sync_fallback(tlmpi_comm_t *tc, tlmpi_call_t *c, int t, int algo, void *stream, int capturing,
                             const char *why)
{
    tlmpi_wait_who_t who = { c->comm, tc->tier.id, c->coll, tlmpi_tiers[t]->name };
    const tlmpi_tier_t *tier;
    tlmpi_status_t st;
    int mpi_rc = MPI_SUCCESS;
    int allowed = TLMPI_ENV_I(ENQUEUE_FALLBACK) == 1 || (tc->tier.enq_flags & TLMPI_ENQUEUE_SYNC_FALLBACK);

    if (!allowed && !capturing && tlmpi_call_mpi_decides(c) && c->opc != TLMPI_OP_USER) {
        /* arguments the MPI decides (an op invalid for the type, sendbuf == recvbuf, ...): where it rejects
         * them, its class, as the other forms give (a user op is valid for any type: nothing to ask) */
        int rc = tlmpi_staging_check_args(c), cls = MPI_ERR_OTHER;

        if (rc != MPI_SUCCESS) {
            PMPI_Error_class(rc, &cls);
            return enq_fail(c, cls, "the MPI rejects the arguments (error class %d, as on host buffers)", cls);
        }
    }
    if (!allowed || capturing) {
        return enq_fail(c, MPI_ERR_UNSUPPORTED_OPERATION, "tier %s cannot run stream-ordered (%s)%s",
                        tlmpi_tiers[t]->name, why,
                        capturing ? "; no synchronous fallback during graph capture"
                                  : "; TLMPI_ENQUEUE_SYNC_FALLBACK or TLMPI_ENQUEUE_FALLBACK=sync allows a "
                                    "synchronous call");
    }
    if (tlmpi_gpu_sync(stream, &who, "the caller's stream before a synchronous fallback") != 0) {
        return enq_fail(c, MPI_ERR_OTHER, "waiting for the caller's stream failed");
    }
    tlmpi_req_order(tc);
    {
        /* the MPI's verdict as a return code (a stream-ordered call's failure is returned, never handed to
         * the comm's error handler) */
        MPI_Errhandler eh = tlmpi_errh_quiet(c->comm);
        int cls = MPI_ERR_OTHER;

        st = tlmpi_comm_run(tc, c, t, algo, 1, &tier, &mpi_rc);
        tlmpi_errh_restore(c->comm, eh);
        if (st != TLMPI_OK) {
            if (st == TLMPI_ERR_MPI && mpi_rc != MPI_SUCCESS) {
                PMPI_Error_class(mpi_rc, &cls);
            }
            return enq_fail(c, cls, "the synchronous fallback on tier %s failed: %s", tier->name,
                            tlmpi_status_string(st));
        }
    }
    tlmpi_stat_form_add(c->coll, tier->label, TLMPI_FORM_ENQUEUE, c->msg_bytes);
    return MPI_SUCCESS;
}

/* Everything after the argument checks (device buffers known; cap: the stream's capture status). */
static int enq_run(tlmpi_call_t *c, void *stream, tlmpi_gpu_capture_t *cap_p)
{
#ifdef HAVE_CUDA
    tlmpi_gpu_capture_t cap = *cap_p;
    const tlmpi_tier_t *tier;
    tlmpi_comm_t *tc;
    tlmpi_status_t st;
    int rc = MPI_SUCCESS, t, algo = 0, e;

    if (cap.active) {
        /* an unprepared comm would build its plan now: collective MPI calls, allocations */
        tc = tlmpi_comm_find(c->comm);
        if (!tc || !tc->eligible || !tc->tier.ctx || !tc->tier.ctx->order) {
            return enq_fail(c, MPI_ERR_UNSUPPORTED_OPERATION, "communicator not prepared for graph capture: call "
                            "tlmpi_enqueue_prepare, or make one device-buffer call on it, before the capture");
        }
        if (!tc->tier.ctx->order_on && tlmpi_req_any()) {
            return enq_fail(c, MPI_ERR_UNSUPPORTED_OPERATION, "the communicator's first stream-ordered call is "
                            "captured while non-blocking requests are outstanding: complete them, or make a "
                            "stream-ordered call or tlmpi_enqueue_prepare before the capture");
        }
    } else {
        tc = tlmpi_comm_get(c->comm); /* builds it on first use (collective, as the blocking form) */
        if (!tc) {
            return enq_fail(c, MPI_ERR_OTHER, "the communicator's state could not be built");
        }
    }
    cap.mixing = TLMPI_ENV_I(GRAPH_MIXING) && !(tc->tier.enq_flags & TLMPI_ENQUEUE_NO_MIXING);
    if (!cap.active && TLMPI_UNLIKELY(tc->plan.gen != __atomic_load_n(&tlmpi_g.config_gen, __ATOMIC_RELAXED)) &&
        tc->eligible) {
        tlmpi_comm_refresh(tc); /* collective: settings change identically on every rank */
    }
    tlmpi_call_layout(c, tc->tier.rank, tc->tier.size);
    c->local_size = tc->tier.local_size;
    t = tlmpi_plan_select(&tc->plan, c, &algo);
    if (TLMPI_UNLIKELY(tlmpi_call_mpi_decides(c))) {
        /* the MPI answers them, as in the blocking form (mpi_coll.c): a CUDA-aware MPI or staging,
         * neither stream-ordered */
        t = tlmpi_tier_mpi.supports(c, tc->plan.caps) ? TLMPI_TIER_MPI : TLMPI_TIER_STAGING;
        algo = 0;
    }
    tier = tlmpi_tiers[t];
    /* (no GPU turn under MPI_THREAD_MULTIPLE: a stream-ordered call cannot hold a host-side turn; as
     * with NCCL, threads that enqueue on different communicators order them themselves) */
    if (!tier->enqueue || !tc->tier.ctx) {
        rc = enq_sync_fallback(tc, c, t, algo, stream, cap.active,
                               !tc->tier.ctx ? "the communicator has no device streams" : "it has no stream-ordered form");
        goto out;
    }
    if (!tc->tier.ctx->order_on && (e = tlmpi_gpu_order_enable(tc->tier.ctx)) != 0) {
        rc = enq_fail(c, MPI_ERR_OTHER, "the communicator's order event is missing: %s",
                      cudaGetErrorString((cudaError_t)e));
        goto out;
    }
    if (!cap.active) {
        tlmpi_req_order(tc); /* requests freed while active complete first (host progress) */
    }
    tc->tier.calls++;
    if ((e = tlmpi_gpu_order_before(tc->tier.ctx, stream, &cap)) != 0) {
        (void)cudaGetLastError();
        rc = enq_fail(c, MPI_ERR_OTHER, "ordering after the communicator's earlier work: %s",
                      cudaGetErrorString((cudaError_t)e));
        goto out;
    }
    tlmpi_gpu_note_stream_ordered();
    st = tier->enqueue(&tc->tier, c, algo, stream);
    if (st == TLMPI_ERR_UNSUPPORTED) {
        rc = enq_sync_fallback(tc, c, t, algo, stream, cap.active, "not for these buffers (another device?)");
        goto out;
    }
    if (st != TLMPI_OK) {
        rc = enq_fail(c, MPI_ERR_OTHER, "tier %s: %s", tier->name, tlmpi_status_string(st));
        goto out;
    }
    if ((e = tlmpi_gpu_order_after(tc->tier.ctx, stream, &cap)) != 0) {
        (void)cudaGetLastError();
        rc = enq_fail(c, MPI_ERR_OTHER, "recording the communicator's order event: %s",
                      cudaGetErrorString((cudaError_t)e));
        goto out;
    }
    tc->tier.enqueued = tc->tier.calls;
    tlmpi_stat_form_add(c->coll, tier->label, cap.active ? TLMPI_FORM_CAPTURE : TLMPI_FORM_ENQUEUE, c->msg_bytes);
out:
    return rc;
#else
    (void)stream, (void)cap_p;
    return enq_fail(c, MPI_ERR_UNSUPPORTED_OPERATION, "tlmpi was built without CUDA");
#endif
}

/* The class the MPI gives the blocking form of c with op and host stand-ins for every buffer (nothing
 * is read or written; tlmpi_call_refused), under MPI_ERRORS_RETURN: MPI_SUCCESS where it accepts the
 * arguments, -1 where the comm's error handler could not be read (nothing asked). */
static int enq_mpi_class(const tlmpi_call_t *c, MPI_Op op)
{
    tlmpi_call_t h = *c;
    MPI_Errhandler eh;
    int rc, cls = MPI_SUCCESS;

    if ((eh = tlmpi_errh_quiet(c->comm)) == MPI_ERRHANDLER_NULL) {
        return -1;
    }
    h.smem = h.rmem = TLMPI_MEM_DEVICE;
    h.form = TLMPI_FORM_BLOCKING;
    h.op = op;
    rc = tlmpi_call_refused(&h);
    tlmpi_errh_restore(c->comm, eh);
    if (rc != MPI_SUCCESS) {
        PMPI_Error_class(rc, &cls);
    }
    return cls;
}

/* The class the MPI gives a call with MPI_DATATYPE_NULL or MPI_OP_NULL (it rejects those before it
 * communicates or reads a buffer; which of the two it names first is its own order). MPI_ERR_TYPE /
 * MPI_ERR_OP should it not answer so. */
static int enq_null_class(const tlmpi_call_t *c)
{
    int cls = enq_mpi_class(c, c->op);

    if (cls <= MPI_SUCCESS) {
        cls = c->dtype == MPI_DATATYPE_NULL || c->rtype == MPI_DATATYPE_NULL ? MPI_ERR_TYPE : MPI_ERR_OP;
    }
    return cls;
}

/* Whether this rank's receive buffer is significant (MPI_Reduce: at the root; an intercommunicator's
 * MPI_Bcast: not on the root group's MPI_PROC_NULL ranks), and its send buffer (MPI_Reduce: not there). */
static int enq_rsig(const tlmpi_call_t *c)
{
    int inter = 0, rank = -1;

    if (c->coll != TLMPI_COLL_REDUCE && c->coll != TLMPI_COLL_BCAST) {
        return 1;
    }
    (void)PMPI_Comm_test_inter(c->comm, &inter);
    if (inter) {
        return c->coll == TLMPI_COLL_REDUCE ? c->root == MPI_ROOT : c->root != MPI_PROC_NULL;
    }
    if (c->coll == TLMPI_COLL_BCAST) {
        return 1;
    }
    (void)PMPI_Comm_rank(c->comm, &rank);
    return rank == c->root;
}
static int enq_ssig(const tlmpi_call_t *c)
{
    int inter = 0;

    if (c->coll != TLMPI_COLL_REDUCE) {
        return 1;
    }
    (void)PMPI_Comm_test_inter(c->comm, &inter);
    return !(inter && (c->root == MPI_ROOT || c->root == MPI_PROC_NULL));
}

/* Whether the call moves any data (else it returns MPI_SUCCESS at once, nothing dereferenced): a count,
 * or for the v-forms any of recvcounts; a negative one, or a root out of range, counts too: the MPI
 * judges those whatever the counts */
static int enq_moves(const tlmpi_call_t *c)
{
    int inter = 0, n = 0, i;

    if (c->coll == TLMPI_COLL_BCAST || c->coll == TLMPI_COLL_REDUCE) {
        (void)PMPI_Comm_test_inter(c->comm, &inter);
        if (!inter && (PMPI_Comm_size(c->comm, &n) != MPI_SUCCESS || c->root < 0 || c->root >= n)) {
            return 1;
        }
    }
    if (!tlmpi_coll_vform(c->coll)) {
        return c->count != 0;
    }
    if (!c->rcounts) {
        return 1;
    }
    (void)PMPI_Comm_test_inter(c->comm, &inter);
    if ((inter && c->coll == TLMPI_COLL_ALLGATHERV ? PMPI_Comm_remote_size(c->comm, &n)
                                                  : PMPI_Comm_size(c->comm, &n)) != MPI_SUCCESS) {
        return 1;
    }
    for (i = 0; i < n; i++) {
        if (tlmpi_call_vcount(c, i) != 0) {
            return 1;
        }
    }
    return c->coll == TLMPI_COLL_ALLGATHERV && c->sbuf != MPI_IN_PLACE && c->count != 0;
}

/* A call that moves no data: nothing to enqueue, but the MPI still judges its arguments (an op invalid
 * for the type, ...) with tlmpi's own op where the type needs one (half types): its class; during
 * capture MPI_SUCCESS (nothing is captured). */
static int enq_empty(const tlmpi_call_t *c, const tlmpi_gpu_capture_t *cap)
{
    int cls = cap->active ? MPI_SUCCESS : enq_mpi_class(c, c->pmpi_op);

    if (cls > MPI_SUCCESS) {
        return enq_fail(c, cls, "the MPI rejects the arguments of a call that moves no data (error class %d)", cls);
    }
    return MPI_SUCCESS;
}

/* The argument checks, in the order the MPIs check them, then enq_run. */
static int enq_entry(tlmpi_call_t *c, void *stream)
{
    tlmpi_mem_seen_t seen = { 0, 0, TLMPI_MEM_HOST, -1 };
    tlmpi_gpu_capture_t cap = { 0, 0, NULL, 0 };
    int rc, rsig, ssig;
#ifdef HAVE_CUDA
    capture_mode_t mode = { cudaStreamCaptureModeRelaxed, 0 };
    int e;
#endif

    enq_err[0] = '\0';
    if (!tlmpi_core_ready()) {
        return enq_fail(c, MPI_ERR_OTHER, "tlmpi is not initialised (call MPI_Init first)");
    }
    if (c->comm == MPI_COMM_NULL) {
        return enq_fail(c, MPI_ERR_COMM, "MPI_COMM_NULL");
    }
    if (c->count < 0 || c->rcount < 0) {
        return enq_fail(c, MPI_ERR_COUNT, "negative count");
    }
    if (c->dtype == MPI_DATATYPE_NULL || c->rtype == MPI_DATATYPE_NULL ||
        (tlmpi_coll_reduces(c->coll) && c->op == MPI_OP_NULL)) {
        int cls = enq_null_class(c);

        return enq_fail(c, cls, "%s", cls == MPI_ERR_OP ? "MPI_OP_NULL, or an op for MPI_DATATYPE_NULL" : "MPI_DATATYPE_NULL");
    }
    if (!tlmpi_g.enabled || !(tlmpi_g.coll_mask & (1u << c->coll))) {
        return enq_fail(c, MPI_ERR_UNSUPPORTED_OPERATION, "tlmpi does not take this collective over (TLMPI_ENABLE, "
                        "TLMPI_COLLS)");
    }
    if (tlmpi_g.gpu_count <= 0) {
        return enq_fail(c, MPI_ERR_UNSUPPORTED_OPERATION, "no CUDA device in this process");
    }
    rsig = enq_rsig(c);
    ssig = c->sbuf != MPI_IN_PLACE && enq_ssig(c);
    if ((rsig && !c->rbuf) || (ssig && !c->sbuf)) {
        if (!enq_moves(c)) {
            return MPI_SUCCESS; /* nothing is dereferenced */
        }
        return enq_fail(c, MPI_ERR_BUFFER, "NULL buffer");
    }
#ifdef HAVE_CUDA
    if (stream == NULL) {
        stream = (void *)cudaStreamLegacy;
    }
    if ((e = tlmpi_gpu_capture_status(stream, &cap)) != 0) {
        return enq_fail(c, MPI_ERR_OTHER, "the stream's capture status: %s", cudaGetErrorString((cudaError_t)e));
    }
    if (cap.active) {
        relax_enter(&mode);
    }
#endif
    c->rmem = rsig ? tlmpi_mem_type_in_call(c->rbuf, &c->rdev, &seen) : TLMPI_MEM_HOST;
    c->smem = ssig ? tlmpi_mem_type_in_call(c->sbuf, &c->sdev, &seen) : TLMPI_MEM_HOST;
    if ((rsig && !tlmpi_mem_is_device(c->rmem)) || (ssig && !tlmpi_mem_is_device(c->smem))) {
        rc = enq_fail(c, MPI_ERR_BUFFER, "%s buffer is host memory (stream-ordered calls take device or managed "
                      "memory)", rsig && !tlmpi_mem_is_device(c->rmem) ? "the receive" : "the send");
    } else {
        tlmpi_call_classify(c);
        rc = !enq_moves(c) || c->dt_size == 0 ? enq_empty(c, &cap) : enq_run(c, stream, &cap);
    }
#ifdef HAVE_CUDA
    if (cap.active) {
        relax_leave(&mode);
    }
#endif
    return rc;
}

static int enq_enter_sib(tlmpi_coll_t coll, const void *sbuf, void *rbuf, MPI_Count count, MPI_Datatype dtype,
                         MPI_Op op, MPI_Comm comm, int large, MPI_Datatype rtype, MPI_Count rcount, int root,
                         const void *rcounts, const void *displs, void *stream)
{
    tlmpi_call_t c;

    memset(&c, 0, sizeof(c));
    c.form = TLMPI_FORM_ENQUEUE;
    c.info = MPI_INFO_NULL;
    c.coll = coll;
    c.sbuf = sbuf;
    c.rbuf = rbuf;
    c.count = count;
    c.dtype = dtype;
    c.op = op;
    c.comm = comm;
    c.large = large;
    c.sdev = c.rdev = -1;
    c.rtype = rtype;
    c.rcount = rcount;
    c.root = root;
    c.rcounts = rcounts;
    c.displs = displs;
    return enq_entry(&c, stream);
}

static int enq_enter(tlmpi_coll_t coll, const void *sbuf, void *rbuf, MPI_Count count, MPI_Datatype dtype, MPI_Op op,
                     MPI_Comm comm, int large, MPI_Datatype rtype, MPI_Count rcount, void *stream)
{
    return enq_enter_sib(coll, sbuf, rbuf, count, dtype, op, comm, large, rtype, rcount, 0, NULL, NULL, stream);
}

TLMPI_EXPORT int tlmpi_enqueue_prepare(MPI_Comm comm, int flags)
{
    tlmpi_comm_t *tc;

    enq_err[0] = '\0';
    if (!tlmpi_core_ready()) {
        return enq_fail(NULL, MPI_ERR_OTHER, "tlmpi_enqueue_prepare: tlmpi is not initialised (call MPI_Init first)");
    }
    if (comm == MPI_COMM_NULL) {
        return enq_fail(NULL, MPI_ERR_COMM, "tlmpi_enqueue_prepare: MPI_COMM_NULL");
    }
    if (flags & ~(TLMPI_ENQUEUE_SYNC_FALLBACK | TLMPI_ENQUEUE_NO_MIXING)) {
        return enq_fail(NULL, MPI_ERR_ARG, "tlmpi_enqueue_prepare: unknown flags 0x%x", (unsigned)flags);
    }
    if (!(tc = tlmpi_comm_get(comm))) { /* collective on first use */
        return enq_fail(NULL, MPI_ERR_OTHER, "tlmpi_enqueue_prepare: the communicator's state could not be built");
    }
    tc->tier.enq_flags = flags;
    tlmpi_gpu_order_reap();
    if (tc->tier.ctx && tlmpi_gpu_order_enable(tc->tier.ctx) != 0) {
        return enq_fail(NULL, MPI_ERR_OTHER, "tlmpi_enqueue_prepare: the communicator's order event is missing");
    }
    tc->tier.enq_ready = 1;
    return MPI_SUCCESS;
}

TLMPI_EXPORT int tlmpi_allreduce_enqueue(const void *sbuf, void *rbuf, int count, MPI_Datatype dtype, MPI_Op op,
                                         MPI_Comm comm, void *stream)
{
    return enq_enter(TLMPI_COLL_ALLREDUCE, sbuf, rbuf, count, dtype, op, comm, 0, dtype, count, stream);
}

TLMPI_EXPORT int tlmpi_reduce_scatter_block_enqueue(const void *sbuf, void *rbuf, int rcount, MPI_Datatype dtype,
                                                    MPI_Op op, MPI_Comm comm, void *stream)
{
    return enq_enter(TLMPI_COLL_REDUCE_SCATTER_BLOCK, sbuf, rbuf, rcount, dtype, op, comm, 0, dtype, rcount, stream);
}

/* As MPI_Allgather: with MPI_IN_PLACE the receive side describes the call. */
TLMPI_EXPORT int tlmpi_allgather_enqueue(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                                         MPI_Datatype rtype, MPI_Comm comm, void *stream)
{
    int in_place = sbuf == MPI_IN_PLACE;

    return enq_enter(TLMPI_COLL_ALLGATHER, sbuf, rbuf, in_place ? rcount : scount, in_place ? rtype : stype,
                     MPI_OP_NULL, comm, 0, rtype, rcount, stream);
}

TLMPI_EXPORT int tlmpi_allreduce_enqueue_c(const void *sbuf, void *rbuf, MPI_Count count, MPI_Datatype dtype,
                                           MPI_Op op, MPI_Comm comm, void *stream)
{
    return enq_enter(TLMPI_COLL_ALLREDUCE, sbuf, rbuf, count, dtype, op, comm, 1, dtype, count, stream);
}

TLMPI_EXPORT int tlmpi_reduce_scatter_block_enqueue_c(const void *sbuf, void *rbuf, MPI_Count rcount,
                                                      MPI_Datatype dtype, MPI_Op op, MPI_Comm comm, void *stream)
{
    return enq_enter(TLMPI_COLL_REDUCE_SCATTER_BLOCK, sbuf, rbuf, rcount, dtype, op, comm, 1, dtype, rcount, stream);
}

TLMPI_EXPORT int tlmpi_allgather_enqueue_c(const void *sbuf, MPI_Count scount, MPI_Datatype stype, void *rbuf,
                                           MPI_Count rcount, MPI_Datatype rtype, MPI_Comm comm, void *stream)
{
    int in_place = sbuf == MPI_IN_PLACE;

    return enq_enter(TLMPI_COLL_ALLGATHER, sbuf, rbuf, in_place ? rcount : scount, in_place ? rtype : stype,
                     MPI_OP_NULL, comm, 1, rtype, rcount, stream);
}

/* ---- the siblings (as their MPI calls; mpi_coll.c's sib_enter for the argument mapping) ---- */

TLMPI_EXPORT int tlmpi_allgatherv_enqueue(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
                                          const int rcounts[], const int displs[], MPI_Datatype rtype, MPI_Comm comm,
                                          void *stream)
{
    int in_place = sbuf == MPI_IN_PLACE;

    return enq_enter_sib(TLMPI_COLL_ALLGATHERV, sbuf, rbuf, in_place ? 0 : scount, in_place ? rtype : stype,
                         MPI_OP_NULL, comm, 0, rtype, 0, 0, rcounts, displs, stream);
}

#if !defined(HAVE_PMPI_ALLGATHERV_C) || !defined(HAVE_PMPI_REDUCE_SCATTER_C)
/* An MPI without the v-forms' _c calls: the arrays as int arrays for the int forms (*ic, *id malloc'ed;
 * NULL where the input is), or MPI_ERR_COUNT where an entry does not fit an int. */
static int enq_v_narrow(MPI_Comm comm, int remote, const MPI_Count *rc, const MPI_Aint *dp, int **ic, int **id)
{
    int n = 0, i;

    *ic = *id = NULL;
    if (comm == MPI_COMM_NULL || !rc) {
        return MPI_SUCCESS; /* the int form reports it */
    }
    if ((remote ? PMPI_Comm_remote_size(comm, &n) : PMPI_Comm_size(comm, &n)) != MPI_SUCCESS) {
        return MPI_ERR_COMM;
    }
    if (!(*ic = malloc((size_t)(n ? n : 1) * sizeof(int))) || (dp && !(*id = malloc((size_t)(n ? n : 1) * sizeof(int))))) {
        free(*ic);
        *ic = NULL;
        return MPI_ERR_NO_MEM;
    }
    for (i = 0; i < n; i++) {
        if (rc[i] > INT_MAX || rc[i] < INT_MIN || (dp && (dp[i] > INT_MAX || dp[i] < INT_MIN))) {
            free(*ic);
            free(*id);
            *ic = *id = NULL;
            return MPI_ERR_COUNT;
        }
        (*ic)[i] = (int)rc[i];
        if (dp) {
            (*id)[i] = (int)dp[i];
        }
    }
    return MPI_SUCCESS;
}
#endif

TLMPI_EXPORT int tlmpi_allgatherv_enqueue_c(const void *sbuf, MPI_Count scount, MPI_Datatype stype, void *rbuf,
                                            const MPI_Count rcounts[], const MPI_Aint displs[], MPI_Datatype rtype,
                                            MPI_Comm comm, void *stream)
{
    int in_place = sbuf == MPI_IN_PLACE;
#ifdef HAVE_PMPI_ALLGATHERV_C
    return enq_enter_sib(TLMPI_COLL_ALLGATHERV, sbuf, rbuf, in_place ? 0 : scount, in_place ? rtype : stype,
                         MPI_OP_NULL, comm, 1, rtype, 0, 0, rcounts, displs, stream);
#else
    int *ic, *id, inter = 0, rc;

    if (comm != MPI_COMM_NULL) {
        (void)PMPI_Comm_test_inter(comm, &inter);
    }
    if (scount > INT_MAX || (rc = enq_v_narrow(comm, inter, rcounts, displs, &ic, &id)) == MPI_ERR_COUNT) {
        return enq_fail(NULL, MPI_ERR_COUNT, "a count or displacement beyond int, and the MPI has no MPI_Allgatherv_c");
    }
    if (rc != MPI_SUCCESS) {
        return enq_fail(NULL, rc, "the counts could not be converted");
    }
    rc = enq_enter_sib(TLMPI_COLL_ALLGATHERV, sbuf, rbuf, in_place ? 0 : scount, in_place ? rtype : stype, MPI_OP_NULL,
                       comm, 0, rtype, 0, 0, rcounts ? (const void *)ic : NULL, displs ? (const void *)id : NULL,
                       stream);
    free(ic);
    free(id);
    return rc;
#endif
}

TLMPI_EXPORT int tlmpi_reduce_scatter_enqueue(const void *sbuf, void *rbuf, const int rcounts[], MPI_Datatype dtype,
                                              MPI_Op op, MPI_Comm comm, void *stream)
{
    return enq_enter_sib(TLMPI_COLL_REDUCE_SCATTER, sbuf, rbuf, 0, dtype, op, comm, 0, dtype, 0, 0, rcounts, NULL,
                         stream);
}

TLMPI_EXPORT int tlmpi_reduce_scatter_enqueue_c(const void *sbuf, void *rbuf, const MPI_Count rcounts[],
                                                MPI_Datatype dtype, MPI_Op op, MPI_Comm comm, void *stream)
{
#ifdef HAVE_PMPI_REDUCE_SCATTER_C
    return enq_enter_sib(TLMPI_COLL_REDUCE_SCATTER, sbuf, rbuf, 0, dtype, op, comm, 1, dtype, 0, 0, rcounts, NULL,
                         stream);
#else
    int *ic, *id, rc = enq_v_narrow(comm, 0, rcounts, NULL, &ic, &id);

    if (rc != MPI_SUCCESS) {
        return enq_fail(NULL, rc, rc == MPI_ERR_COUNT ? "a count beyond int, and the MPI has no MPI_Reduce_scatter_c"
                                                      : "the counts could not be converted");
    }
    rc = enq_enter_sib(TLMPI_COLL_REDUCE_SCATTER, sbuf, rbuf, 0, dtype, op, comm, 0, dtype, 0, 0,
                       rcounts ? (const void *)ic : NULL, NULL, stream);
    free(ic);
    return rc;
#endif
}

TLMPI_EXPORT int tlmpi_bcast_enqueue(void *buf, int count, MPI_Datatype dtype, int root, MPI_Comm comm, void *stream)
{
    return enq_enter_sib(TLMPI_COLL_BCAST, MPI_IN_PLACE, buf, count, dtype, MPI_OP_NULL, comm, 0, dtype, count, root,
                         NULL, NULL, stream);
}

TLMPI_EXPORT int tlmpi_bcast_enqueue_c(void *buf, MPI_Count count, MPI_Datatype dtype, int root, MPI_Comm comm,
                                       void *stream)
{
    return enq_enter_sib(TLMPI_COLL_BCAST, MPI_IN_PLACE, buf, count, dtype, MPI_OP_NULL, comm, 1, dtype, count, root,
                         NULL, NULL, stream);
}

TLMPI_EXPORT int tlmpi_reduce_enqueue(const void *sbuf, void *rbuf, int count, MPI_Datatype dtype, MPI_Op op, int root,
                                      MPI_Comm comm, void *stream)
{
    return enq_enter_sib(TLMPI_COLL_REDUCE, sbuf, rbuf, count, dtype, op, comm, 0, dtype, count, root, NULL, NULL,
                         stream);
}

TLMPI_EXPORT int tlmpi_reduce_enqueue_c(const void *sbuf, void *rbuf, MPI_Count count, MPI_Datatype dtype, MPI_Op op,
                                        int root, MPI_Comm comm, void *stream)
{
    return enq_enter_sib(TLMPI_COLL_REDUCE, sbuf, rbuf, count, dtype, op, comm, 1, dtype, count, root, NULL, NULL,
                         stream);
}

TLMPI_EXPORT int tlmpi_alltoall_enqueue(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                                        MPI_Datatype rtype, MPI_Comm comm, void *stream)
{
    int in_place = sbuf == MPI_IN_PLACE;

    return enq_enter_sib(TLMPI_COLL_ALLTOALL, sbuf, rbuf, in_place ? rcount : scount, in_place ? rtype : stype,
                         MPI_OP_NULL, comm, 0, rtype, rcount, 0, NULL, NULL, stream);
}

TLMPI_EXPORT int tlmpi_alltoall_enqueue_c(const void *sbuf, MPI_Count scount, MPI_Datatype stype, void *rbuf,
                                          MPI_Count rcount, MPI_Datatype rtype, MPI_Comm comm, void *stream)
{
    int in_place = sbuf == MPI_IN_PLACE;

    return enq_enter_sib(TLMPI_COLL_ALLTOALL, sbuf, rbuf, in_place ? rcount : scount, in_place ? rtype : stype,
                         MPI_OP_NULL, comm, 1, rtype, rcount, 0, NULL, NULL, stream);
}

/* ---- Fortran handles (ctypes callers: python/tlmpi_enqueue.py); NULL sendbuf means MPI_IN_PLACE ---- */

TLMPI_EXPORT int tlmpi_enqueue_prepare_f(MPI_Fint comm, int flags)
{
    return tlmpi_enqueue_prepare(PMPI_Comm_f2c(comm), flags);
}

TLMPI_EXPORT int tlmpi_allreduce_enqueue_f(const void *sbuf, void *rbuf, int64_t count, MPI_Fint dtype, MPI_Fint op,
                                           MPI_Fint comm, void *stream)
{
    MPI_Datatype t = PMPI_Type_f2c(dtype);

    return enq_enter(TLMPI_COLL_ALLREDUCE, sbuf ? sbuf : MPI_IN_PLACE, rbuf, (MPI_Count)count, t, PMPI_Op_f2c(op),
                     PMPI_Comm_f2c(comm), count > INT_MAX, t, (MPI_Count)count, stream);
}

TLMPI_EXPORT int tlmpi_allgather_enqueue_f(const void *sbuf, void *rbuf, int64_t count, MPI_Fint dtype, MPI_Fint comm,
                                           void *stream)
{
    MPI_Datatype t = PMPI_Type_f2c(dtype);

    return enq_enter(TLMPI_COLL_ALLGATHER, sbuf ? sbuf : MPI_IN_PLACE, rbuf, (MPI_Count)count, t, MPI_OP_NULL,
                     PMPI_Comm_f2c(comm), count > INT_MAX, t, (MPI_Count)count, stream);
}

TLMPI_EXPORT int tlmpi_reduce_scatter_block_enqueue_f(const void *sbuf, void *rbuf, int64_t rcount, MPI_Fint dtype,
                                                      MPI_Fint op, MPI_Fint comm, void *stream)
{
    MPI_Datatype t = PMPI_Type_f2c(dtype);

    return enq_enter(TLMPI_COLL_REDUCE_SCATTER_BLOCK, sbuf ? sbuf : MPI_IN_PLACE, rbuf, (MPI_Count)rcount, t,
                     PMPI_Op_f2c(op), PMPI_Comm_f2c(comm), rcount > INT_MAX, t, (MPI_Count)rcount, stream);
}

/* The siblings' v-form arrays of an _f call (int64_t, as ctypes hands them) as the MPI_Count / MPI_Aint
 * arrays of the _c forms, one entry per rank of the group they describe (remote: an intercommunicator's
 * MPI_Allgatherv), in the small arrays of a for small groups, malloc'ed otherwise (enq_f_free). NULL
 * where the input is NULL, comm is MPI_COMM_NULL or tlmpi is not initialised (the _c form reports
 * those); MPI_ERR_COUNT where an entry does not fit the type. */
#define ENQ_F_SMALL 64
typedef struct {
    MPI_Count *cc;
    MPI_Aint *cd;
    MPI_Count cs[ENQ_F_SMALL];
    MPI_Aint ds[ENQ_F_SMALL];
} enq_f_arrays_t;

static void enq_f_free(enq_f_arrays_t *a)
{
    if (a->cc != a->cs) {
        free(a->cc);
    }
    if (a->cd != a->ds) {
        free(a->cd);
    }
    a->cc = NULL;
    a->cd = NULL;
}

static int enq_f_arrays(enq_f_arrays_t *a, MPI_Comm comm, int remote, const int64_t *rc, const int64_t *dp)
{
    int n = 0, i;

    a->cc = NULL;
    a->cd = NULL;
    if (comm == MPI_COMM_NULL || !rc || !tlmpi_core_ready()) {
        return MPI_SUCCESS;
    }
    if ((remote ? PMPI_Comm_remote_size(comm, &n) : PMPI_Comm_size(comm, &n)) != MPI_SUCCESS || n < 0) {
        return MPI_ERR_COMM;
    }
    if (n <= ENQ_F_SMALL) {
        a->cc = a->cs;
        a->cd = dp ? a->ds : NULL;
    } else if (!(a->cc = malloc((size_t)n * sizeof(MPI_Count))) ||
               (dp && !(a->cd = malloc((size_t)n * sizeof(MPI_Aint))))) {
        enq_f_free(a);
        return MPI_ERR_NO_MEM;
    }
    for (i = 0; i < n; i++) {
        a->cc[i] = (MPI_Count)rc[i];
        if ((int64_t)a->cc[i] != rc[i]) {
            enq_f_free(a);
            return MPI_ERR_COUNT;
        }
        if (dp) {
            a->cd[i] = (MPI_Aint)dp[i];
            if ((int64_t)a->cd[i] != dp[i]) {
                enq_f_free(a);
                return MPI_ERR_COUNT;
            }
        }
    }
    return MPI_SUCCESS;
}

/* One datatype for both sides, as tlmpi_allgather_enqueue_f; sendcount is ignored in place. */
TLMPI_EXPORT int tlmpi_allgatherv_enqueue_f(const void *sbuf, int64_t scount, void *rbuf, const int64_t rcounts[],
                                            const int64_t displs[], MPI_Fint dtype, MPI_Fint comm, void *stream)
{
    MPI_Datatype t = PMPI_Type_f2c(dtype);
    MPI_Comm cm = PMPI_Comm_f2c(comm);
    enq_f_arrays_t a;
    int inter = 0, rc;

    if (cm != MPI_COMM_NULL && tlmpi_core_ready()) {
        (void)PMPI_Comm_test_inter(cm, &inter);
    }
    if ((rc = enq_f_arrays(&a, cm, inter, rcounts, displs)) != MPI_SUCCESS) {
        return enq_fail(NULL, rc, "allgatherv_enqueue: %s", rc == MPI_ERR_COUNT ? "a count or displacement beyond "
                        "MPI_Count / MPI_Aint" : "the counts could not be converted");
    }
    rc = tlmpi_allgatherv_enqueue_c(sbuf ? sbuf : MPI_IN_PLACE, (MPI_Count)scount, t, rbuf, a.cc, a.cd, t, cm,
                                    stream);
    enq_f_free(&a);
    return rc;
}

TLMPI_EXPORT int tlmpi_reduce_scatter_enqueue_f(const void *sbuf, void *rbuf, const int64_t rcounts[], MPI_Fint dtype,
                                                MPI_Fint op, MPI_Fint comm, void *stream)
{
    MPI_Comm cm = PMPI_Comm_f2c(comm);
    enq_f_arrays_t a;
    int rc;

    if ((rc = enq_f_arrays(&a, cm, 0, rcounts, NULL)) != MPI_SUCCESS) {
        return enq_fail(NULL, rc, "reduce_scatter_enqueue: %s", rc == MPI_ERR_COUNT ? "a count beyond MPI_Count"
                                                                                     : "the counts could not be converted");
    }
    rc = tlmpi_reduce_scatter_enqueue_c(sbuf ? sbuf : MPI_IN_PLACE, rbuf, a.cc, PMPI_Type_f2c(dtype), PMPI_Op_f2c(op),
                                        cm, stream);
    enq_f_free(&a);
    return rc;
}

TLMPI_EXPORT int tlmpi_bcast_enqueue_f(void *buf, int64_t count, MPI_Fint dtype, int root, MPI_Fint comm, void *stream)
{
    MPI_Datatype t = PMPI_Type_f2c(dtype);

    return enq_enter_sib(TLMPI_COLL_BCAST, MPI_IN_PLACE, buf, (MPI_Count)count, t, MPI_OP_NULL, PMPI_Comm_f2c(comm),
                         count > INT_MAX, t, (MPI_Count)count, root, NULL, NULL, stream);
}

TLMPI_EXPORT int tlmpi_reduce_enqueue_f(const void *sbuf, void *rbuf, int64_t count, MPI_Fint dtype, MPI_Fint op,
                                        int root, MPI_Fint comm, void *stream)
{
    MPI_Datatype t = PMPI_Type_f2c(dtype);

    return enq_enter_sib(TLMPI_COLL_REDUCE, sbuf ? sbuf : MPI_IN_PLACE, rbuf, (MPI_Count)count, t, PMPI_Op_f2c(op),
                         PMPI_Comm_f2c(comm), count > INT_MAX, t, (MPI_Count)count, root, NULL, NULL, stream);
}

/* One datatype and one count (per rank) for both sides, as tlmpi_allgather_enqueue_f. */
TLMPI_EXPORT int tlmpi_alltoall_enqueue_f(const void *sbuf, void *rbuf, int64_t count, MPI_Fint dtype, MPI_Fint comm,
                                          void *stream)
{
    MPI_Datatype t = PMPI_Type_f2c(dtype);

    return enq_enter_sib(TLMPI_COLL_ALLTOALL, sbuf ? sbuf : MPI_IN_PLACE, rbuf, (MPI_Count)count, t, MPI_OP_NULL,
                         PMPI_Comm_f2c(comm), count > INT_MAX, t, (MPI_Count)count, 0, NULL, NULL, stream);
}
