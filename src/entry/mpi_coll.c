/*
 * The intercepted MPI entry points: MPI_Allgather, MPI_Reduce_scatter_block, MPI_Allreduce and their
 * siblings MPI_Allgatherv, MPI_Reduce_scatter, MPI_Bcast, MPI_Reduce, MPI_Alltoall, their
 * non-blocking forms (MPI_Iallgather, ...), their MPI-4 persistent forms (MPI_Allgather_init, ...,
 * where the MPI has them) and the large-count (_c) forms of all. Each is a thin entry into one
 * shared body, whatever the form (the call's form and request travel in the call record; the
 * siblings' entry, sib_entry, differs only in what it knows of the arguments):
 *
 *   cheap rank-uniform checks (enabled, collective enabled, half type, GPU present, count)
 *     -> pointer classification -> host buffers: the next layer's MPI_* unchanged (passthrough:
 *        tlmpi_next, core/next.h: a PMPI tool loaded after tlmpi, else the MPI)
 *     -> device buffers or half types: classify dtype/op, per-comm state, pure tier choice, run;
 *        a tier that cannot serve before communication starts falls to the next one; errors after
 *        work started go to the communicator's error handler. A non-blocking call is started on the
 *        same tier and returns a tlmpi request (req/request.h); a persistent one gets a tlmpi request
 *        whose tier and algorithm were chosen at init. Host buffers go to the next layer's own form.
 *
 * Inside tlmpi only PMPI_* is called; the calls passed through go to tlmpi_next. A device pointer
 * never reaches either unless the MPI says it is CUDA-aware.
 */
#include "config.h"
#include "global.h"
#include "stats.h"
#include "comm.h"
#include "dtype.h"
#include "env.h"
#include "classify.h"
#include "log.h"
#include "call.h"
#include "plan.h"
#include "tier.h"
#include "request.h"

#include <stdlib.h>
#include <string.h>

/* tlmpi's own globals, declared hidden here too (they are hidden where they are defined): the entry
 * points' fast path then reads them RIP-relative, without a GOT load each */
extern tlmpi_global_t tlmpi_g __attribute__((visibility("hidden")));
extern tlmpi_stat_t tlmpi_stats[TLMPI_COLL_COUNT][TLMPI_PATH_COUNT] __attribute__((visibility("hidden")));
extern tlmpi_stat_t tlmpi_form_stats[TLMPI_COLL_COUNT][TLMPI_PATH_COUNT][TLMPI_FORM_COUNT]
    __attribute__((visibility("hidden")));
extern tlmpi_env_val_t tlmpi_env_val[TLMPI_ENV_COUNT] __attribute__((visibility("hidden")));

static inline int is_half_type(MPI_Datatype dt)
{
    return dt == tlmpi_g.type_f16 || dt == tlmpi_g.type_bf16
#ifdef MPIX_C_FLOAT16
           || dt == MPIX_C_FLOAT16
#endif
#ifdef MPIX_BFLOAT16
           || dt == MPIX_BFLOAT16
#endif
        ;
}

/* Datatype size caches per thread (one TLS block):
 *  - dt/sz: the last datatype a pass-through call counted, so that its bytes need no MPI call;
 *  - fast_dt/fast_sz: the same, but only a datatype that is not a half type (is_half_type when it
 *    was learned): the entry points' inline pass-through (fast_host) takes only calls of this type,
 *    which therefore need no half-type test. It cannot go stale: a handle that was not a half type
 *    when learned (after tlmpi's init; the fast path runs only then) cannot become tlmpi's half type
 *    (created at init, live until finalize) nor MPIX_C_FLOAT16/MPIX_BFLOAT16 (predefined). Its
 *    initial value 0, 0 needs no test either: a call whose handle is 0 is counted with 0 bytes,
 *    what call_bytes gives a handle PMPI_Type_size rejects. */
static __thread struct {
    MPI_Datatype fast_dt;
    int fast_sz;
    MPI_Datatype dt;
    int sz;
} size_cache __attribute__((tls_model("initial-exec")));

static __attribute__((noinline, cold)) uint64_t call_bytes_miss(MPI_Count count, MPI_Datatype dt)
{
    int sz;

    if (PMPI_Type_size(dt, &sz) != MPI_SUCCESS) {
        return 0;
    }
    size_cache.dt = dt;
    size_cache.sz = sz;
    if (!is_half_type(dt)) {
        size_cache.fast_dt = dt;
        size_cache.fast_sz = sz;
    }
    return (uint64_t)count * (uint64_t)sz;
}

static inline uint64_t call_bytes(MPI_Count count, MPI_Datatype dt)
{
    if (TLMPI_LIKELY(dt == size_cache.dt && dt != MPI_DATATYPE_NULL)) {
        return (uint64_t)count * (uint64_t)size_cache.sz;
    }
    return call_bytes_miss(count, dt);
}

/* One call counted under its path and form (the blocking form's counters are tlmpi_stats). */
static inline void stat_add_form(const tlmpi_call_t *c, tlmpi_path_t path, uint64_t bytes)
{
    if (c->form == TLMPI_FORM_BLOCKING) {
        tlmpi_stat_add(c->coll, path, bytes);
    } else {
        tlmpi_stat_form_add(c->coll, path, (tlmpi_form_t)c->form, bytes);
    }
}

/* Abort with a clear message if ranks disagree on a decision (TLMPI_VERIFY_UNIFORM=1). */
static void verify_uniform(const tlmpi_call_t *c, int value, const char *what)
{
    int mm[2] = { value, -value };

    PMPI_Allreduce(MPI_IN_PLACE, mm, 2, MPI_INT, MPI_MAX, c->comm);
    if (mm[0] != -mm[1]) {
        tlmpi_error(COLL, "TLMPI_VERIFY_UNIFORM: ranks disagree on the %s of a %s call (this rank %d, "
                    "others up to %d/%d); tlmpi assumes buffers of one call have the same memory type "
                    "on every rank", what, tlmpi_coll_name(c->coll), value, -mm[1], mm[0]);
        PMPI_Abort(c->comm, 1);
    }
}

/* The slow path: device buffers, or a half type that needs tlmpi's op. */
static int coll_slow(tlmpi_call_t *c)
{
    tlmpi_comm_t *tc;
    const tlmpi_tier_t *tier;
    tlmpi_status_t st;
    int rc, t, algo = 0, mpi_rc = MPI_SUCCESS;
    void *kept = NULL;
    int is_dev = tlmpi_mem_is_device(c->smem) || tlmpi_mem_is_device(c->rmem);
    /* memory-type signature of the call, checked under TLMPI_VERIFY_UNIFORM */
    int mem_sig = (c->sbuf == MPI_IN_PLACE ? 4 : tlmpi_mem_is_device(c->smem)) | tlmpi_mem_is_device(c->rmem) << 1;

    if (is_dev && (c->comm == MPI_COMM_NULL || c->dtype == MPI_DATATYPE_NULL || c->rtype == MPI_DATATYPE_NULL ||
                   (tlmpi_coll_reduces(c->coll) && c->op == MPI_OP_NULL))) {
        /* arguments the MPI rejects before it reads a buffer: its own class and error handler,
         * without handing it a device pointer */
        return tlmpi_call_refused(c);
    }
    tlmpi_call_classify(c);
    if (tlmpi_coll_sibling(c->coll)) {
        /* what the classification left significant (a reduce's recvbuf at the root only); a reduce's
         * signature is its input's, which every rank has */
        is_dev = tlmpi_mem_is_device(c->smem) || tlmpi_mem_is_device(c->rmem);
        if (c->coll == TLMPI_COLL_REDUCE) {
            mem_sig = tlmpi_mem_is_device(c->in_place ? c->rmem : c->smem);
        }
    }
    if (TLMPI_UNLIKELY(TLMPI_ENV_I(VERIFY_UNIFORM))) {
        verify_uniform(c, mem_sig, "memory type");
    }
    if (!is_dev || c->msg_bytes == 0) {
        /* host buffers with a half type (tlmpi's op), or nothing is dereferenced */
        tlmpi_path_t path = !is_dev && c->own_op ? TLMPI_PATH_HOSTOP : TLMPI_PATH_PASSTHROUGH;

        rc = tlmpi_call_form(path == TLMPI_PATH_PASSTHROUGH ? &tlmpi_next : &tlmpi_pmpi, c, c->pmpi_op);
        if (rc == MPI_SUCCESS) {
            stat_add_form(c, path, c->msg_bytes);
        }
        return rc;
    }
    tc = tlmpi_comm_get(c->comm);
    if (!tc) {
        return tlmpi_core_error(c->comm, TLMPI_ERR_MPI, tlmpi_coll_name(c->coll));
    }
    if (TLMPI_UNLIKELY(tc->plan.gen != __atomic_load_n(&tlmpi_g.config_gen, __ATOMIC_RELAXED)) && tc->eligible) {
        tlmpi_comm_refresh(tc); /* collective: settings change identically on every rank */
    }
    tlmpi_call_layout(c, tc->tier.rank, tc->tier.size);
    c->local_size = tc->tier.local_size;
    t = tlmpi_plan_select(&tc->plan, c, &algo);
    if (TLMPI_UNLIKELY(tlmpi_call_mpi_decides(c))) {
        /* the MPI answers them: a CUDA-aware MPI on the device buffers, else staging on host copies
         * (overlapping buffers overlap there alike) */
        t = tlmpi_tier_mpi.supports(c, tc->plan.caps) ? TLMPI_TIER_MPI : TLMPI_TIER_STAGING;
        algo = 0;
    }
    if (TLMPI_UNLIKELY(TLMPI_ENV_I(VERIFY_UNIFORM))) {
        verify_uniform(c, t, "tier");
    }
    if (c->form != TLMPI_FORM_BLOCKING) {
        if (t == TLMPI_TIER_MPI) {
            /* a CUDA-aware MPI: its own request (counted, and so passed, as a pass-through call) */
            rc = tlmpi_call_form(&tlmpi_next, c, c->op);
            if (rc == MPI_SUCCESS) {
                stat_add_form(c, TLMPI_PATH_PASSTHROUGH, c->msg_bytes);
            }
            return rc;
        }
        if (c->form == TLMPI_FORM_PERSISTENT && (tlmpi_call_mpi_decides(c) || tlmpi_coll_sibling(c->coll))) {
            /* on an intercommunicator staging keeps the MPI's own request (on host copies): the root
             * group's MPI_PROC_NULL ranks hold one without tlmpi, and the MPI's persistent and
             * non-blocking collectives must not mix on one communicator */
            int inter = 0;

            if (t == TLMPI_TIER_STAGING && PMPI_Comm_test_inter(c->comm, &inter) != MPI_SUCCESS) {
                inter = 0;
            }
            if ((rc = tlmpi_staging_check_init(&tc->tier, c, inter ? &kept : NULL)) != MPI_SUCCESS) {
                return rc; /* the MPI rejects the arguments at *_init, as on host buffers */
            }
        }
        return c->form == TLMPI_FORM_NONBLOCKING ? tlmpi_req_istart(tc, c, t, algo)
                                                 : tlmpi_req_persistent(tc, c, t, algo, kept);
    }
    tlmpi_req_order(tc); /* requests freed while active on the comm complete first */
    st = tlmpi_comm_run(tc, c, t, algo, 1, &tier, &mpi_rc);
    if (TLMPI_LIKELY(st == TLMPI_OK)) {
        tlmpi_stat_add(c->coll, tier->label, c->msg_bytes);
        return MPI_SUCCESS;
    }
    if (st == TLMPI_ERR_MPI && mpi_rc != MPI_SUCCESS) {
        return mpi_rc; /* the MPI's own error (its handler already ran) */
    }
    return tlmpi_core_error(c->comm, st, tlmpi_coll_name(c->coll));
}

/* Memory type and device of both buffers. Send and receive buffers carved from one allocation
 * (a framework's memory pool) cost one validating driver call, not two. */
static inline void classify_buffers(tlmpi_call_t *c)
{
    tlmpi_mem_seen_t seen = { 0, 0, TLMPI_MEM_HOST, -1 };

    c->rmem = tlmpi_mem_type_in_call(c->rbuf, &c->rdev, &seen);
    c->smem = c->sbuf == MPI_IN_PLACE ? TLMPI_MEM_HOST : tlmpi_mem_type_in_call(c->sbuf, &c->sdev, &seen);
}

static inline int coll_entry(tlmpi_call_t *c)
{
    int rc;

    if (TLMPI_UNLIKELY(!tlmpi_core_ready()) || TLMPI_UNLIKELY(!tlmpi_g.enabled) ||
        !(tlmpi_g.coll_mask & (1u << c->coll))) {
        goto passthrough;
    }
    if (TLMPI_UNLIKELY(tlmpi_coll_reduces(c->coll) && is_half_type(c->dtype))) {
        c->smem = c->rmem = TLMPI_MEM_HOST;
        if (tlmpi_g.gpu_count > 0) {
            classify_buffers(c);
        }
        return coll_slow(c);
    }
    if (tlmpi_g.gpu_count == 0 || c->count <= 0) {
        goto passthrough;
    }
    classify_buffers(c);
    if (tlmpi_mem_is_device(c->smem) || tlmpi_mem_is_device(c->rmem) ||
        TLMPI_UNLIKELY(TLMPI_ENV_I(VERIFY_UNIFORM))) { /* host calls too, so a mismatch is caught */
        return coll_slow(c);
    }
passthrough:
    rc = tlmpi_call_form(&tlmpi_next, c, c->op);
    if (TLMPI_LIKELY(rc == MPI_SUCCESS)) {
        stat_add_form(c, TLMPI_PATH_PASSTHROUGH, call_bytes(c->count, c->dtype));
    }
    return rc;
}

/* The host fast path, decided inline before a tlmpi_call_t is built: 1 when coll_entry would
 * certainly pass the call through unchanged: tlmpi off or this collective not taken over; or not a
 * half-type reduction and either no GPU in the process or both buffers (the receive buffer alone
 * in place) in the brk heap (tlmpi_mem_host_brk2: no call) or in confirmed host mappings
 * (tlmpi_mem_host_fast2: no CUDA query, no call); never 1 for device memory. 0 sends the call through coll_entry, which makes the full decision (lazy init,
 * half types, pointer classification). */
static inline __attribute__((always_inline)) int fast_passthrough(tlmpi_coll_t coll, MPI_Datatype dt,
                                                                  const void *sbuf, const void *rbuf)
{
    if (TLMPI_UNLIKELY(tlmpi_core_state() != TLMPI_STATE_READY)) {
        return 0;
    }
    if (TLMPI_UNLIKELY(!tlmpi_g.enabled) || !(tlmpi_g.coll_mask & (1u << coll))) {
        return 1;
    }
    if (tlmpi_coll_reduces(coll) && is_half_type(dt)) {
        return 0;
    }
    if (tlmpi_g.gpu_count == 0) {
        return 1;
    }
    /* a GPU node: TLMPI_VERIFY_UNIFORM checks host calls too (coll_slow) */
    if (TLMPI_ENV_I(VERIFY_UNIFORM)) {
        return 0;
    }
    sbuf = sbuf == MPI_IN_PLACE ? rbuf : sbuf;
    return tlmpi_mem_host_brk2(sbuf, rbuf) || tlmpi_mem_host_fast2(sbuf, rbuf);
}

/* The entry points' inline pass-through test (their first statement; everything else, including
 * fast_passthrough, is out of line): 1 when coll_entry would certainly pass the call through
 * unchanged and the datatype is the thread's fast datatype (size_cache.fast_dt: not a half type,
 * size known): tlmpi off or this collective not taken over; no GPU; or both buffers (the receive
 * buffer alone in place) in the newest confirmed host mapping (tlmpi_mem_host_fast2_first: no call,
 * no CUDA query, never 1 for device memory) or in the brk heap (tlmpi_mem_host_brk2, no call either)
 * and no TLMPI_VERIFY_UNIFORM. 0 sends the call to the
 * entry's _full function: fast_passthrough (any confirmed host mapping, any datatype), then
 * coll_entry. */
static inline __attribute__((always_inline)) int fast_host(tlmpi_coll_t coll, MPI_Datatype dt, const void *sbuf,
                                                           const void *rbuf)
{
    if (TLMPI_UNLIKELY(tlmpi_core_state() != TLMPI_STATE_READY) || TLMPI_UNLIKELY(dt != size_cache.fast_dt)) {
        return 0;
    }
    /* host buffers pass through whether or not tlmpi is on for this collective: the common cases
     * first, then TLMPI_ENABLE and TLMPI_COLLS */
    if (tlmpi_g.gpu_count == 0 ||
        (TLMPI_LIKELY(!TLMPI_ENV_I(VERIFY_UNIFORM)) &&
         (TLMPI_LIKELY(tlmpi_mem_host_fast2_first(sbuf == MPI_IN_PLACE ? rbuf : sbuf, rbuf)) ||
          tlmpi_mem_host_brk2(sbuf == MPI_IN_PLACE ? rbuf : sbuf, rbuf)))) {
        return 1;
    }
    return TLMPI_UNLIKELY(!tlmpi_g.enabled) || !(tlmpi_g.coll_mask & (1u << coll));
}

/* Bytes of a fast_host call (before its pass-through call: only this value lives across it) */
static inline __attribute__((always_inline)) uint64_t fast_bytes(MPI_Count count)
{
    return (uint64_t)count * (uint64_t)size_cache.fast_sz;
}

/* A fast_host call of a blocking form: counted when it succeeded (a call the MPI rejects is not
 * counted, as on coll_entry's path) */
static inline __attribute__((always_inline)) int fast_counted(int rc, tlmpi_coll_t coll, uint64_t bytes)
{
    if (TLMPI_LIKELY(rc == MPI_SUCCESS)) {
        tlmpi_stat_add(coll, TLMPI_PATH_PASSTHROUGH, bytes);
    }
    return rc;
}

/* The entry points' fast path: blocking forms (the next layer's call returns through tlmpi, which
 * counts it on success), non-blocking and persistent forms (counted when made, then the next layer's
 * call is a tail call). sbuf and rbuf are the entry point's parameters; a miss goes to the entry's _full
 * function. */
#define FAST_BLOCKING(coll, dt, count, next_call)                                                  \
    if (TLMPI_LIKELY(fast_host(coll, dt, sbuf, rbuf))) {                                          \
        uint64_t fast_bytes_ = fast_bytes(count);                                                 \
        return fast_counted(next_call, coll, fast_bytes_);                                        \
    }
#define FAST_FORM(coll, dt, count, form, next_call)                                                \
    if (TLMPI_LIKELY(fast_host(coll, dt, sbuf, rbuf))) {                                          \
        tlmpi_stat_form_add(coll, TLMPI_PATH_PASSTHROUGH, form, fast_bytes(count));               \
        return next_call;                                                                         \
    }

/* Count a fast-path call: same counters and bytes as coll_entry's passthrough. */
static inline __attribute__((always_inline)) int fast_done(int rc, tlmpi_coll_t coll, MPI_Count count,
                                                           MPI_Datatype dt)
{
    if (TLMPI_LIKELY(rc == MPI_SUCCESS)) {
        tlmpi_stat_add(coll, TLMPI_PATH_PASSTHROUGH, call_bytes(count, dt));
    }
    return rc;
}

/* A fast-path call of the non-blocking or persistent form, counted under its form when it is made
 * (before the next layer's call, which the entry point then tail-calls: its request argument travels
 * on the stack, and a call that returned through tlmpi would cost more than the blocking forms' path). */
static inline __attribute__((always_inline)) void fast_count_form(tlmpi_coll_t coll, MPI_Count count,
                                                                  MPI_Datatype dt, tlmpi_form_t form)
{
    tlmpi_stat_form_add(coll, TLMPI_PATH_PASSTHROUGH, form, call_bytes(count, dt));
}

/* Everything but the fast path: build the call record and run coll_entry. Kept out of line so that
 * the entry points' fast path needs no stack frame for the record. */
static __attribute__((noinline)) int coll_enter_form(tlmpi_coll_t coll, const void *sbuf, void *rbuf,
                                                     MPI_Count count, MPI_Datatype dtype, MPI_Op op,
                                                     MPI_Comm comm, int large, MPI_Datatype rtype,
                                                     MPI_Count rcount, tlmpi_form_t form, MPI_Info info,
                                                     MPI_Request *req)
{
    tlmpi_call_t c;

    c.form = (int)form;
    c.ureq = req;
    c.info = info;
    c.pend = NULL;
    c.preg = NULL;
    c.preg_tier = 0;
    c.inter = 0; /* asked where it matters: the siblings' classification, a persistent call's staging */

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
    return coll_entry(&c);
}

static __attribute__((noinline)) int coll_enter(tlmpi_coll_t coll, const void *sbuf, void *rbuf,
                                                MPI_Count count, MPI_Datatype dtype, MPI_Op op,
                                                MPI_Comm comm, int large, MPI_Datatype rtype,
                                                MPI_Count rcount)
{
    return coll_enter_form(coll, sbuf, rbuf, count, dtype, op, comm, large, rtype, rcount, TLMPI_FORM_BLOCKING,
                           MPI_INFO_NULL, NULL);
}

static __attribute__((noinline)) int allreduce_full(const void *sbuf, void *rbuf, int count, MPI_Datatype dtype,
                               MPI_Op op, MPI_Comm comm)
{
    if (TLMPI_LIKELY(fast_passthrough(TLMPI_COLL_ALLREDUCE, dtype, sbuf, rbuf))) {
        return fast_done(tlmpi_next.allreduce(sbuf, rbuf, count, dtype, op, comm), TLMPI_COLL_ALLREDUCE,
                         count, dtype);
    }
    return coll_enter(TLMPI_COLL_ALLREDUCE, sbuf, rbuf, count, dtype, op, comm, 0, dtype, count);
}
TLMPI_EXPORT int MPI_Allreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dtype,
                               MPI_Op op, MPI_Comm comm)
{
    FAST_BLOCKING(TLMPI_COLL_ALLREDUCE, dtype, count, tlmpi_next.allreduce(sbuf, rbuf, count, dtype, op, comm))
    return allreduce_full(sbuf, rbuf, count, dtype, op, comm);
}

static __attribute__((noinline)) int reduce_scatter_block_full(const void *sbuf, void *rbuf, int recvcount,
                                          MPI_Datatype dtype, MPI_Op op, MPI_Comm comm)
{
    if (TLMPI_LIKELY(fast_passthrough(TLMPI_COLL_REDUCE_SCATTER_BLOCK, dtype, sbuf, rbuf))) {
        return fast_done(tlmpi_next.reduce_scatter_block(sbuf, rbuf, recvcount, dtype, op, comm),
                         TLMPI_COLL_REDUCE_SCATTER_BLOCK, recvcount, dtype);
    }
    return coll_enter(TLMPI_COLL_REDUCE_SCATTER_BLOCK, sbuf, rbuf, recvcount, dtype, op, comm, 0,
                      dtype, recvcount);
}
TLMPI_EXPORT int MPI_Reduce_scatter_block(const void *sbuf, void *rbuf, int recvcount,
                                          MPI_Datatype dtype, MPI_Op op, MPI_Comm comm)
{
    FAST_BLOCKING(TLMPI_COLL_REDUCE_SCATTER_BLOCK, dtype, recvcount, tlmpi_next.reduce_scatter_block(sbuf, rbuf, recvcount, dtype, op, comm))
    return reduce_scatter_block_full(sbuf, rbuf, recvcount, dtype, op, comm);
}

/* With MPI_IN_PLACE the own block is already in recvbuf and sendcount/sendtype are ignored by MPI:
 * the call is described by the receive side. */
static __attribute__((noinline)) int allgather_full(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
                               int rcount, MPI_Datatype rtype, MPI_Comm comm)
{
    int in_place = sbuf == MPI_IN_PLACE;

    if (TLMPI_LIKELY(fast_passthrough(TLMPI_COLL_ALLGATHER, rtype, sbuf, rbuf))) {
        return fast_done(tlmpi_next.allgather(sbuf, scount, stype, rbuf, rcount, rtype, comm), TLMPI_COLL_ALLGATHER,
                         in_place ? rcount : scount, in_place ? rtype : stype);
    }
    return coll_enter(TLMPI_COLL_ALLGATHER, sbuf, rbuf, in_place ? rcount : scount, in_place ? rtype : stype,
                      MPI_OP_NULL, comm, 0, rtype, rcount);
}
TLMPI_EXPORT int MPI_Allgather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
                               int rcount, MPI_Datatype rtype, MPI_Comm comm)
{
    int in_place = sbuf == MPI_IN_PLACE;

    FAST_BLOCKING(TLMPI_COLL_ALLGATHER, in_place ? rtype : stype, in_place ? rcount : scount, tlmpi_next.allgather(sbuf, scount, stype, rbuf, rcount, rtype, comm))
    return allgather_full(sbuf, scount, stype, rbuf, rcount, rtype, comm);
}

#ifdef HAVE_PMPI_ALLREDUCE_C
static __attribute__((noinline)) int allreduce_c_full(const void *sbuf, void *rbuf, MPI_Count count, MPI_Datatype dtype,
                                 MPI_Op op, MPI_Comm comm)
{
    if (TLMPI_LIKELY(fast_passthrough(TLMPI_COLL_ALLREDUCE, dtype, sbuf, rbuf))) {
        return fast_done(tlmpi_next.allreduce_c(sbuf, rbuf, count, dtype, op, comm), TLMPI_COLL_ALLREDUCE,
                         count, dtype);
    }
    return coll_enter(TLMPI_COLL_ALLREDUCE, sbuf, rbuf, count, dtype, op, comm, 1, dtype, count);
}
TLMPI_EXPORT int MPI_Allreduce_c(const void *sbuf, void *rbuf, MPI_Count count, MPI_Datatype dtype,
                                 MPI_Op op, MPI_Comm comm)
{
    FAST_BLOCKING(TLMPI_COLL_ALLREDUCE, dtype, count, tlmpi_next.allreduce_c(sbuf, rbuf, count, dtype, op, comm))
    return allreduce_c_full(sbuf, rbuf, count, dtype, op, comm);
}
#endif

#ifdef HAVE_PMPI_REDUCE_SCATTER_BLOCK_C
static __attribute__((noinline)) int reduce_scatter_block_c_full(const void *sbuf, void *rbuf, MPI_Count recvcount,
                                            MPI_Datatype dtype, MPI_Op op, MPI_Comm comm)
{
    if (TLMPI_LIKELY(fast_passthrough(TLMPI_COLL_REDUCE_SCATTER_BLOCK, dtype, sbuf, rbuf))) {
        return fast_done(tlmpi_next.reduce_scatter_block_c(sbuf, rbuf, recvcount, dtype, op, comm),
                         TLMPI_COLL_REDUCE_SCATTER_BLOCK, recvcount, dtype);
    }
    return coll_enter(TLMPI_COLL_REDUCE_SCATTER_BLOCK, sbuf, rbuf, recvcount, dtype, op, comm, 1,
                      dtype, recvcount);
}
TLMPI_EXPORT int MPI_Reduce_scatter_block_c(const void *sbuf, void *rbuf, MPI_Count recvcount,
                                            MPI_Datatype dtype, MPI_Op op, MPI_Comm comm)
{
    FAST_BLOCKING(TLMPI_COLL_REDUCE_SCATTER_BLOCK, dtype, recvcount, tlmpi_next.reduce_scatter_block_c(sbuf, rbuf, recvcount, dtype, op, comm))
    return reduce_scatter_block_c_full(sbuf, rbuf, recvcount, dtype, op, comm);
}
#endif

#ifdef HAVE_PMPI_ALLGATHER_C
static __attribute__((noinline)) int allgather_c_full(const void *sbuf, MPI_Count scount, MPI_Datatype stype, void *rbuf,
                                 MPI_Count rcount, MPI_Datatype rtype, MPI_Comm comm)
{
    int in_place = sbuf == MPI_IN_PLACE;

    if (TLMPI_LIKELY(fast_passthrough(TLMPI_COLL_ALLGATHER, rtype, sbuf, rbuf))) {
        return fast_done(tlmpi_next.allgather_c(sbuf, scount, stype, rbuf, rcount, rtype, comm), TLMPI_COLL_ALLGATHER,
                         in_place ? rcount : scount, in_place ? rtype : stype);
    }
    return coll_enter(TLMPI_COLL_ALLGATHER, sbuf, rbuf, in_place ? rcount : scount, in_place ? rtype : stype,
                      MPI_OP_NULL, comm, 1, rtype, rcount);
}
TLMPI_EXPORT int MPI_Allgather_c(const void *sbuf, MPI_Count scount, MPI_Datatype stype, void *rbuf,
                                 MPI_Count rcount, MPI_Datatype rtype, MPI_Comm comm)
{
    int in_place = sbuf == MPI_IN_PLACE;

    FAST_BLOCKING(TLMPI_COLL_ALLGATHER, in_place ? rtype : stype, in_place ? rcount : scount, tlmpi_next.allgather_c(sbuf, scount, stype, rbuf, rcount, rtype, comm))
    return allgather_c_full(sbuf, scount, stype, rbuf, rcount, rtype, comm);
}
#endif

/* ---- the non-blocking forms (every MPI-3 MPI) and the persistent forms (MPI-4 MPIs) ---- */

static __attribute__((noinline)) int iallreduce_full(const void *sbuf, void *rbuf, int count, MPI_Datatype dtype, MPI_Op op, MPI_Comm comm,
        MPI_Request *req)
{
    if (TLMPI_LIKELY(fast_passthrough(TLMPI_COLL_ALLREDUCE, dtype, sbuf, rbuf))) {
        fast_count_form(TLMPI_COLL_ALLREDUCE, count, dtype, TLMPI_FORM_NONBLOCKING);
        return tlmpi_next.iallreduce(sbuf, rbuf, count, dtype, op, comm, req);
    }
    return coll_enter_form(TLMPI_COLL_ALLREDUCE, sbuf, rbuf, count, dtype, op, comm, 0, dtype, count, TLMPI_FORM_NONBLOCKING, MPI_INFO_NULL, req);
}
TLMPI_EXPORT int MPI_Iallreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dtype, MPI_Op op, MPI_Comm comm,
        MPI_Request *req)
{
    FAST_FORM(TLMPI_COLL_ALLREDUCE, dtype, count, TLMPI_FORM_NONBLOCKING, tlmpi_next.iallreduce(sbuf, rbuf, count, dtype, op, comm, req))
    return iallreduce_full(sbuf, rbuf, count, dtype, op, comm, req);
}
static __attribute__((noinline)) int ireduce_scatter_block_full(const void *sbuf, void *rbuf, int recvcount, MPI_Datatype dtype, MPI_Op op, MPI_Comm comm,
        MPI_Request *req)
{
    if (TLMPI_LIKELY(fast_passthrough(TLMPI_COLL_REDUCE_SCATTER_BLOCK, dtype, sbuf, rbuf))) {
        fast_count_form(TLMPI_COLL_REDUCE_SCATTER_BLOCK, recvcount, dtype, TLMPI_FORM_NONBLOCKING);
        return tlmpi_next.ireduce_scatter_block(sbuf, rbuf, recvcount, dtype, op, comm, req);
    }
    return coll_enter_form(TLMPI_COLL_REDUCE_SCATTER_BLOCK, sbuf, rbuf, recvcount, dtype, op, comm, 0, dtype, recvcount, TLMPI_FORM_NONBLOCKING, MPI_INFO_NULL, req);
}
TLMPI_EXPORT int MPI_Ireduce_scatter_block(const void *sbuf, void *rbuf, int recvcount, MPI_Datatype dtype, MPI_Op op, MPI_Comm comm,
        MPI_Request *req)
{
    FAST_FORM(TLMPI_COLL_REDUCE_SCATTER_BLOCK, dtype, recvcount, TLMPI_FORM_NONBLOCKING, tlmpi_next.ireduce_scatter_block(sbuf, rbuf, recvcount, dtype, op, comm, req))
    return ireduce_scatter_block_full(sbuf, rbuf, recvcount, dtype, op, comm, req);
}
static __attribute__((noinline)) int iallgather_full(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
        MPI_Datatype rtype, MPI_Comm comm, MPI_Request *req)
{
    int in_place = sbuf == MPI_IN_PLACE;

    if (TLMPI_LIKELY(fast_passthrough(TLMPI_COLL_ALLGATHER, rtype, sbuf, rbuf))) {
        fast_count_form(TLMPI_COLL_ALLGATHER, in_place ? rcount : scount, in_place ? rtype : stype, TLMPI_FORM_NONBLOCKING);
        return tlmpi_next.iallgather(sbuf, scount, stype, rbuf, rcount, rtype, comm, req);
    }
    return coll_enter_form(TLMPI_COLL_ALLGATHER, sbuf, rbuf, in_place ? rcount : scount, in_place ? rtype : stype,
                           MPI_OP_NULL, comm, 0, rtype, rcount, TLMPI_FORM_NONBLOCKING, MPI_INFO_NULL, req);
}
TLMPI_EXPORT int MPI_Iallgather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
        MPI_Datatype rtype, MPI_Comm comm, MPI_Request *req)
{
    int in_place = sbuf == MPI_IN_PLACE;

    FAST_FORM(TLMPI_COLL_ALLGATHER, in_place ? rtype : stype, in_place ? rcount : scount, TLMPI_FORM_NONBLOCKING, tlmpi_next.iallgather(sbuf, scount, stype, rbuf, rcount, rtype, comm, req))
    return iallgather_full(sbuf, scount, stype, rbuf, rcount, rtype, comm, req);
}
#ifdef HAVE_PMPI_IALLREDUCE_C
static __attribute__((noinline)) int iallreduce_c_full(const void *sbuf, void *rbuf, MPI_Count count, MPI_Datatype dtype, MPI_Op op, MPI_Comm comm,
        MPI_Request *req)
{
    if (TLMPI_LIKELY(fast_passthrough(TLMPI_COLL_ALLREDUCE, dtype, sbuf, rbuf))) {
        fast_count_form(TLMPI_COLL_ALLREDUCE, count, dtype, TLMPI_FORM_NONBLOCKING);
        return tlmpi_next.iallreduce_c(sbuf, rbuf, count, dtype, op, comm, req);
    }
    return coll_enter_form(TLMPI_COLL_ALLREDUCE, sbuf, rbuf, count, dtype, op, comm, 1, dtype, count, TLMPI_FORM_NONBLOCKING, MPI_INFO_NULL, req);
}
TLMPI_EXPORT int MPI_Iallreduce_c(const void *sbuf, void *rbuf, MPI_Count count, MPI_Datatype dtype, MPI_Op op, MPI_Comm comm,
        MPI_Request *req)
{
    FAST_FORM(TLMPI_COLL_ALLREDUCE, dtype, count, TLMPI_FORM_NONBLOCKING, tlmpi_next.iallreduce_c(sbuf, rbuf, count, dtype, op, comm, req))
    return iallreduce_c_full(sbuf, rbuf, count, dtype, op, comm, req);
}
#endif
#ifdef HAVE_PMPI_IREDUCE_SCATTER_BLOCK_C
static __attribute__((noinline)) int ireduce_scatter_block_c_full(const void *sbuf, void *rbuf, MPI_Count recvcount, MPI_Datatype dtype, MPI_Op op, MPI_Comm comm,
        MPI_Request *req)
{
    if (TLMPI_LIKELY(fast_passthrough(TLMPI_COLL_REDUCE_SCATTER_BLOCK, dtype, sbuf, rbuf))) {
        fast_count_form(TLMPI_COLL_REDUCE_SCATTER_BLOCK, recvcount, dtype, TLMPI_FORM_NONBLOCKING);
        return tlmpi_next.ireduce_scatter_block_c(sbuf, rbuf, recvcount, dtype, op, comm, req);
    }
    return coll_enter_form(TLMPI_COLL_REDUCE_SCATTER_BLOCK, sbuf, rbuf, recvcount, dtype, op, comm, 1, dtype, recvcount, TLMPI_FORM_NONBLOCKING, MPI_INFO_NULL, req);
}
TLMPI_EXPORT int MPI_Ireduce_scatter_block_c(const void *sbuf, void *rbuf, MPI_Count recvcount, MPI_Datatype dtype, MPI_Op op, MPI_Comm comm,
        MPI_Request *req)
{
    FAST_FORM(TLMPI_COLL_REDUCE_SCATTER_BLOCK, dtype, recvcount, TLMPI_FORM_NONBLOCKING, tlmpi_next.ireduce_scatter_block_c(sbuf, rbuf, recvcount, dtype, op, comm, req))
    return ireduce_scatter_block_c_full(sbuf, rbuf, recvcount, dtype, op, comm, req);
}
#endif
#ifdef HAVE_PMPI_IALLGATHER_C
static __attribute__((noinline)) int iallgather_c_full(const void *sbuf, MPI_Count scount, MPI_Datatype stype, void *rbuf, MPI_Count rcount,
        MPI_Datatype rtype, MPI_Comm comm, MPI_Request *req)
{
    int in_place = sbuf == MPI_IN_PLACE;

    if (TLMPI_LIKELY(fast_passthrough(TLMPI_COLL_ALLGATHER, rtype, sbuf, rbuf))) {
        fast_count_form(TLMPI_COLL_ALLGATHER, in_place ? rcount : scount, in_place ? rtype : stype, TLMPI_FORM_NONBLOCKING);
        return tlmpi_next.iallgather_c(sbuf, scount, stype, rbuf, rcount, rtype, comm, req);
    }
    return coll_enter_form(TLMPI_COLL_ALLGATHER, sbuf, rbuf, in_place ? rcount : scount, in_place ? rtype : stype,
                           MPI_OP_NULL, comm, 1, rtype, rcount, TLMPI_FORM_NONBLOCKING, MPI_INFO_NULL, req);
}
TLMPI_EXPORT int MPI_Iallgather_c(const void *sbuf, MPI_Count scount, MPI_Datatype stype, void *rbuf, MPI_Count rcount,
        MPI_Datatype rtype, MPI_Comm comm, MPI_Request *req)
{
    int in_place = sbuf == MPI_IN_PLACE;

    FAST_FORM(TLMPI_COLL_ALLGATHER, in_place ? rtype : stype, in_place ? rcount : scount, TLMPI_FORM_NONBLOCKING, tlmpi_next.iallgather_c(sbuf, scount, stype, rbuf, rcount, rtype, comm, req))
    return iallgather_c_full(sbuf, scount, stype, rbuf, rcount, rtype, comm, req);
}
#endif
#ifdef HAVE_PMPI_ALLREDUCE_INIT
static __attribute__((noinline)) int allreduce_init_full(const void *sbuf, void *rbuf, int count, MPI_Datatype dtype, MPI_Op op, MPI_Comm comm, MPI_Info info,
        MPI_Request *req)
{
    if (TLMPI_LIKELY(fast_passthrough(TLMPI_COLL_ALLREDUCE, dtype, sbuf, rbuf))) {
        fast_count_form(TLMPI_COLL_ALLREDUCE, count, dtype, TLMPI_FORM_PERSISTENT);
        return tlmpi_next.allreduce_init(sbuf, rbuf, count, dtype, op, comm, info, req);
    }
    return coll_enter_form(TLMPI_COLL_ALLREDUCE, sbuf, rbuf, count, dtype, op, comm, 0, dtype, count, TLMPI_FORM_PERSISTENT, info, req);
}
TLMPI_EXPORT int MPI_Allreduce_init(const void *sbuf, void *rbuf, int count, MPI_Datatype dtype, MPI_Op op, MPI_Comm comm, MPI_Info info,
        MPI_Request *req)
{
    FAST_FORM(TLMPI_COLL_ALLREDUCE, dtype, count, TLMPI_FORM_PERSISTENT, tlmpi_next.allreduce_init(sbuf, rbuf, count, dtype, op, comm, info, req))
    return allreduce_init_full(sbuf, rbuf, count, dtype, op, comm, info, req);
}
#endif
#ifdef HAVE_PMPI_REDUCE_SCATTER_BLOCK_INIT
static __attribute__((noinline)) int reduce_scatter_block_init_full(const void *sbuf, void *rbuf, int recvcount, MPI_Datatype dtype, MPI_Op op, MPI_Comm comm, MPI_Info info,
        MPI_Request *req)
{
    if (TLMPI_LIKELY(fast_passthrough(TLMPI_COLL_REDUCE_SCATTER_BLOCK, dtype, sbuf, rbuf))) {
        fast_count_form(TLMPI_COLL_REDUCE_SCATTER_BLOCK, recvcount, dtype, TLMPI_FORM_PERSISTENT);
        return tlmpi_next.reduce_scatter_block_init(sbuf, rbuf, recvcount, dtype, op, comm, info, req);
    }
    return coll_enter_form(TLMPI_COLL_REDUCE_SCATTER_BLOCK, sbuf, rbuf, recvcount, dtype, op, comm, 0, dtype, recvcount, TLMPI_FORM_PERSISTENT, info, req);
}
TLMPI_EXPORT int MPI_Reduce_scatter_block_init(const void *sbuf, void *rbuf, int recvcount, MPI_Datatype dtype, MPI_Op op, MPI_Comm comm, MPI_Info info,
        MPI_Request *req)
{
    FAST_FORM(TLMPI_COLL_REDUCE_SCATTER_BLOCK, dtype, recvcount, TLMPI_FORM_PERSISTENT, tlmpi_next.reduce_scatter_block_init(sbuf, rbuf, recvcount, dtype, op, comm, info, req))
    return reduce_scatter_block_init_full(sbuf, rbuf, recvcount, dtype, op, comm, info, req);
}
#endif
#ifdef HAVE_PMPI_ALLGATHER_INIT
static __attribute__((noinline)) int allgather_init_full(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
        MPI_Datatype rtype, MPI_Comm comm, MPI_Info info, MPI_Request *req)
{
    int in_place = sbuf == MPI_IN_PLACE;

    if (TLMPI_LIKELY(fast_passthrough(TLMPI_COLL_ALLGATHER, rtype, sbuf, rbuf))) {
        fast_count_form(TLMPI_COLL_ALLGATHER, in_place ? rcount : scount, in_place ? rtype : stype, TLMPI_FORM_PERSISTENT);
        return tlmpi_next.allgather_init(sbuf, scount, stype, rbuf, rcount, rtype, comm, info, req);
    }
    return coll_enter_form(TLMPI_COLL_ALLGATHER, sbuf, rbuf, in_place ? rcount : scount, in_place ? rtype : stype,
                           MPI_OP_NULL, comm, 0, rtype, rcount, TLMPI_FORM_PERSISTENT, info, req);
}
TLMPI_EXPORT int MPI_Allgather_init(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
        MPI_Datatype rtype, MPI_Comm comm, MPI_Info info, MPI_Request *req)
{
    int in_place = sbuf == MPI_IN_PLACE;

    FAST_FORM(TLMPI_COLL_ALLGATHER, in_place ? rtype : stype, in_place ? rcount : scount, TLMPI_FORM_PERSISTENT, tlmpi_next.allgather_init(sbuf, scount, stype, rbuf, rcount, rtype, comm, info, req))
    return allgather_init_full(sbuf, scount, stype, rbuf, rcount, rtype, comm, info, req);
}
#endif
#ifdef HAVE_PMPI_ALLREDUCE_INIT_C
static __attribute__((noinline)) int allreduce_init_c_full(const void *sbuf, void *rbuf, MPI_Count count, MPI_Datatype dtype, MPI_Op op, MPI_Comm comm, MPI_Info info,
        MPI_Request *req)
{
    if (TLMPI_LIKELY(fast_passthrough(TLMPI_COLL_ALLREDUCE, dtype, sbuf, rbuf))) {
        fast_count_form(TLMPI_COLL_ALLREDUCE, count, dtype, TLMPI_FORM_PERSISTENT);
        return tlmpi_next.allreduce_init_c(sbuf, rbuf, count, dtype, op, comm, info, req);
    }
    return coll_enter_form(TLMPI_COLL_ALLREDUCE, sbuf, rbuf, count, dtype, op, comm, 1, dtype, count, TLMPI_FORM_PERSISTENT, info, req);
}
TLMPI_EXPORT int MPI_Allreduce_init_c(const void *sbuf, void *rbuf, MPI_Count count, MPI_Datatype dtype, MPI_Op op, MPI_Comm comm, MPI_Info info,
        MPI_Request *req)
{
    FAST_FORM(TLMPI_COLL_ALLREDUCE, dtype, count, TLMPI_FORM_PERSISTENT, tlmpi_next.allreduce_init_c(sbuf, rbuf, count, dtype, op, comm, info, req))
    return allreduce_init_c_full(sbuf, rbuf, count, dtype, op, comm, info, req);
}
#endif
#ifdef HAVE_PMPI_REDUCE_SCATTER_BLOCK_INIT_C
static __attribute__((noinline)) int reduce_scatter_block_init_c_full(const void *sbuf, void *rbuf, MPI_Count recvcount, MPI_Datatype dtype, MPI_Op op, MPI_Comm comm, MPI_Info info,
        MPI_Request *req)
{
    if (TLMPI_LIKELY(fast_passthrough(TLMPI_COLL_REDUCE_SCATTER_BLOCK, dtype, sbuf, rbuf))) {
        fast_count_form(TLMPI_COLL_REDUCE_SCATTER_BLOCK, recvcount, dtype, TLMPI_FORM_PERSISTENT);
        return tlmpi_next.reduce_scatter_block_init_c(sbuf, rbuf, recvcount, dtype, op, comm, info, req);
    }
    return coll_enter_form(TLMPI_COLL_REDUCE_SCATTER_BLOCK, sbuf, rbuf, recvcount, dtype, op, comm, 1, dtype, recvcount, TLMPI_FORM_PERSISTENT, info, req);
}
TLMPI_EXPORT int MPI_Reduce_scatter_block_init_c(const void *sbuf, void *rbuf, MPI_Count recvcount, MPI_Datatype dtype, MPI_Op op, MPI_Comm comm, MPI_Info info,
        MPI_Request *req)
{
    FAST_FORM(TLMPI_COLL_REDUCE_SCATTER_BLOCK, dtype, recvcount, TLMPI_FORM_PERSISTENT, tlmpi_next.reduce_scatter_block_init_c(sbuf, rbuf, recvcount, dtype, op, comm, info, req))
    return reduce_scatter_block_init_c_full(sbuf, rbuf, recvcount, dtype, op, comm, info, req);
}
#endif
#ifdef HAVE_PMPI_ALLGATHER_INIT_C
static __attribute__((noinline)) int allgather_init_c_full(const void *sbuf, MPI_Count scount, MPI_Datatype stype, void *rbuf, MPI_Count rcount,
        MPI_Datatype rtype, MPI_Comm comm, MPI_Info info, MPI_Request *req)
{
    int in_place = sbuf == MPI_IN_PLACE;

    if (TLMPI_LIKELY(fast_passthrough(TLMPI_COLL_ALLGATHER, rtype, sbuf, rbuf))) {
        fast_count_form(TLMPI_COLL_ALLGATHER, in_place ? rcount : scount, in_place ? rtype : stype, TLMPI_FORM_PERSISTENT);
        return tlmpi_next.allgather_init_c(sbuf, scount, stype, rbuf, rcount, rtype, comm, info, req);
    }
    return coll_enter_form(TLMPI_COLL_ALLGATHER, sbuf, rbuf, in_place ? rcount : scount, in_place ? rtype : stype,
                           MPI_OP_NULL, comm, 1, rtype, rcount, TLMPI_FORM_PERSISTENT, info, req);
}
TLMPI_EXPORT int MPI_Allgather_init_c(const void *sbuf, MPI_Count scount, MPI_Datatype stype, void *rbuf, MPI_Count rcount,
        MPI_Datatype rtype, MPI_Comm comm, MPI_Info info, MPI_Request *req)
{
    int in_place = sbuf == MPI_IN_PLACE;

    FAST_FORM(TLMPI_COLL_ALLGATHER, in_place ? rtype : stype, in_place ? rcount : scount, TLMPI_FORM_PERSISTENT, tlmpi_next.allgather_init_c(sbuf, scount, stype, rbuf, rcount, rtype, comm, info, req))
    return allgather_init_c_full(sbuf, scount, stype, rbuf, rcount, rtype, comm, info, req);
}
#endif

/* ---- the siblings: MPI_Allgatherv, MPI_Reduce_scatter, MPI_Bcast, MPI_Reduce, MPI_Alltoall ---- */

/* One sibling call passed through, counted under its form (after the call succeeded: the v-forms' bytes
 * ask the communicator, which must be valid then) */
static inline __attribute__((always_inline)) void sib_count(tlmpi_coll_t coll, tlmpi_form_t form, uint64_t bytes)
{
    if (form == TLMPI_FORM_BLOCKING) {
        tlmpi_stat_add(coll, TLMPI_PATH_PASSTHROUGH, bytes);
    } else {
        tlmpi_stat_form_add(coll, TLMPI_PATH_PASSTHROUGH, form, bytes);
    }
}

/* The largest entry of a v-form's counts array (int[], or MPI_Count[] from a _c entry point): its
 * message size in elements (call.h). remote: the array has an entry per rank of the remote group on
 * an intercommunicator (allgatherv), else of the local one (reduce_scatter). */
static __attribute__((noinline)) MPI_Count vmax_count(MPI_Comm comm, const void *counts, int large, int remote)
{
    int n = 0, inter = 0, i;
    MPI_Count m = 0;

    if (!counts) {
        return 0;
    }
    if (remote && PMPI_Comm_test_inter(comm, &inter) == MPI_SUCCESS && inter) {
        PMPI_Comm_remote_size(comm, &n);
    } else {
        PMPI_Comm_size(comm, &n);
    }
    for (i = 0; i < n; i++) {
        MPI_Count v = large ? ((const MPI_Count *)counts)[i] : (MPI_Count)((const int *)counts)[i];

        m = v > m ? v : m;
    }
    return m;
}

/* The siblings' fast path (fast_host; FAST_BLOCKING and FAST_FORM for the others): buffers sb and rb
 * (the same for MPI_Bcast), the call counted once it succeeded with bytes_expr (evaluated then). */
#define SIB_FAST(coll, dt, sb, rb, form, bytes_expr, next_call)                                    \
    if (TLMPI_LIKELY(fast_host(coll, dt, sb, rb))) {                                              \
        int rc_ = next_call;                                                                      \
                                                                                                  \
        if (TLMPI_LIKELY(rc_ == MPI_SUCCESS)) {                                                   \
            sib_count(coll, form, bytes_expr);                                                    \
        }                                                                                         \
        return rc_;                                                                               \
    }

/* coll_entry for the siblings: the same decisions, where every count is known only to the call
 * record's classification (the v-forms' counts arrays: a call whose counts are all zero, or any
 * negative, goes to the MPI unchanged from coll_slow) */
static int sib_entry(tlmpi_call_t *c)
{
    int rc;

    if (TLMPI_UNLIKELY(!tlmpi_core_ready()) || TLMPI_UNLIKELY(!tlmpi_g.enabled) ||
        !(tlmpi_g.coll_mask & (1u << c->coll))) {
        goto passthrough;
    }
    if (TLMPI_UNLIKELY(tlmpi_coll_reduces(c->coll) && is_half_type(c->dtype))) {
        c->smem = c->rmem = TLMPI_MEM_HOST;
        if (tlmpi_g.gpu_count > 0) {
            classify_buffers(c);
        }
        return coll_slow(c);
    }
    if (tlmpi_g.gpu_count == 0 || (!tlmpi_coll_vform(c->coll) && c->count <= 0)) {
        goto passthrough;
    }
    classify_buffers(c);
    if (tlmpi_mem_is_device(c->smem) || tlmpi_mem_is_device(c->rmem) || TLMPI_UNLIKELY(TLMPI_ENV_I(VERIFY_UNIFORM))) {
        return coll_slow(c);
    }
passthrough:
    rc = tlmpi_call_form(&tlmpi_next, c, c->op);
    if (TLMPI_LIKELY(rc == MPI_SUCCESS)) {
        stat_add_form(c, TLMPI_PATH_PASSTHROUGH,
                      tlmpi_coll_vform(c->coll)
                          ? call_bytes(vmax_count(c->comm, c->rcounts, c->large, c->coll == TLMPI_COLL_ALLGATHERV),
                                       c->rtype)
                          : call_bytes(c->count, c->dtype));
    }
    return rc;
}

/* Everything but a sibling's fast path: the call record (as coll_enter_form) and sib_entry. */
static __attribute__((noinline)) int sib_enter(tlmpi_coll_t coll, const void *sbuf, void *rbuf, MPI_Count count,
                                               MPI_Datatype dtype, MPI_Op op, MPI_Comm comm, int large,
                                               MPI_Datatype rtype, MPI_Count rcount, int root, const void *rcounts,
                                               const void *displs, tlmpi_form_t form, MPI_Info info, MPI_Request *req)
{
    tlmpi_call_t c;

    memset(&c, 0, sizeof(c));
    c.form = (int)form;
    c.ureq = req;
    c.info = info;
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
    return sib_entry(&c);
}

/* ---- MPI_Allgatherv: every form ---- */
static __attribute__((noinline)) int allgatherv_full(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, const int rcounts[], const int displs[], MPI_Datatype rtype, MPI_Comm comm)
{
    int in_place = sbuf == MPI_IN_PLACE;

    if (TLMPI_LIKELY(fast_passthrough(TLMPI_COLL_ALLGATHERV, in_place ? rtype : stype, sbuf, rbuf))) {
        int rc = tlmpi_next.allgatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype, comm);

        if (TLMPI_LIKELY(rc == MPI_SUCCESS)) {
            sib_count(TLMPI_COLL_ALLGATHERV, TLMPI_FORM_BLOCKING, call_bytes(vmax_count(comm, rcounts, 0, 1), rtype));
        }
        return rc;
    }
    return sib_enter(TLMPI_COLL_ALLGATHERV, sbuf, rbuf, in_place ? 0 : scount, in_place ? rtype : stype, MPI_OP_NULL, comm, 0, rtype, 0, 0, rcounts, displs, TLMPI_FORM_BLOCKING, MPI_INFO_NULL, NULL);
}
TLMPI_EXPORT int MPI_Allgatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, const int rcounts[], const int displs[], MPI_Datatype rtype, MPI_Comm comm)
{
    int in_place = sbuf == MPI_IN_PLACE;

    SIB_FAST(TLMPI_COLL_ALLGATHERV, in_place ? rtype : stype, sbuf, rbuf, TLMPI_FORM_BLOCKING, call_bytes(vmax_count(comm, rcounts, 0, 1), rtype), tlmpi_next.allgatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype, comm))
    return allgatherv_full(sbuf, scount, stype, rbuf, rcounts, displs, rtype, comm);
}
#ifdef HAVE_PMPI_ALLGATHERV_C
static __attribute__((noinline)) int allgatherv_c_full(const void *sbuf, MPI_Count scount, MPI_Datatype stype, void *rbuf, const MPI_Count rcounts[], const MPI_Aint displs[], MPI_Datatype rtype, MPI_Comm comm)
{
    int in_place = sbuf == MPI_IN_PLACE;

    if (TLMPI_LIKELY(fast_passthrough(TLMPI_COLL_ALLGATHERV, in_place ? rtype : stype, sbuf, rbuf))) {
        int rc = tlmpi_next.allgatherv_c(sbuf, scount, stype, rbuf, rcounts, displs, rtype, comm);

        if (TLMPI_LIKELY(rc == MPI_SUCCESS)) {
            sib_count(TLMPI_COLL_ALLGATHERV, TLMPI_FORM_BLOCKING, call_bytes(vmax_count(comm, rcounts, 1, 1), rtype));
        }
        return rc;
    }
    return sib_enter(TLMPI_COLL_ALLGATHERV, sbuf, rbuf, in_place ? 0 : scount, in_place ? rtype : stype, MPI_OP_NULL, comm, 1, rtype, 0, 0, rcounts, displs, TLMPI_FORM_BLOCKING, MPI_INFO_NULL, NULL);
}
TLMPI_EXPORT int MPI_Allgatherv_c(const void *sbuf, MPI_Count scount, MPI_Datatype stype, void *rbuf, const MPI_Count rcounts[], const MPI_Aint displs[], MPI_Datatype rtype, MPI_Comm comm)
{
    int in_place = sbuf == MPI_IN_PLACE;

    SIB_FAST(TLMPI_COLL_ALLGATHERV, in_place ? rtype : stype, sbuf, rbuf, TLMPI_FORM_BLOCKING, call_bytes(vmax_count(comm, rcounts, 1, 1), rtype), tlmpi_next.allgatherv_c(sbuf, scount, stype, rbuf, rcounts, displs, rtype, comm))
    return allgatherv_c_full(sbuf, scount, stype, rbuf, rcounts, displs, rtype, comm);
}
#endif
static __attribute__((noinline)) int iallgatherv_full(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, const int rcounts[], const int displs[], MPI_Datatype rtype, MPI_Comm comm, MPI_Request *req)
{
    int in_place = sbuf == MPI_IN_PLACE;

    if (TLMPI_LIKELY(fast_passthrough(TLMPI_COLL_ALLGATHERV, in_place ? rtype : stype, sbuf, rbuf))) {
        int rc = tlmpi_next.iallgatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype, comm, req);

        if (TLMPI_LIKELY(rc == MPI_SUCCESS)) {
            sib_count(TLMPI_COLL_ALLGATHERV, TLMPI_FORM_NONBLOCKING, call_bytes(vmax_count(comm, rcounts, 0, 1), rtype));
        }
        return rc;
    }
    return sib_enter(TLMPI_COLL_ALLGATHERV, sbuf, rbuf, in_place ? 0 : scount, in_place ? rtype : stype, MPI_OP_NULL, comm, 0, rtype, 0, 0, rcounts, displs, TLMPI_FORM_NONBLOCKING, MPI_INFO_NULL, req);
}
TLMPI_EXPORT int MPI_Iallgatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, const int rcounts[], const int displs[], MPI_Datatype rtype, MPI_Comm comm, MPI_Request *req)
{
    int in_place = sbuf == MPI_IN_PLACE;

    SIB_FAST(TLMPI_COLL_ALLGATHERV, in_place ? rtype : stype, sbuf, rbuf, TLMPI_FORM_NONBLOCKING, call_bytes(vmax_count(comm, rcounts, 0, 1), rtype), tlmpi_next.iallgatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype, comm, req))
    return iallgatherv_full(sbuf, scount, stype, rbuf, rcounts, displs, rtype, comm, req);
}
#ifdef HAVE_PMPI_IALLGATHERV_C
static __attribute__((noinline)) int iallgatherv_c_full(const void *sbuf, MPI_Count scount, MPI_Datatype stype, void *rbuf, const MPI_Count rcounts[], const MPI_Aint displs[], MPI_Datatype rtype, MPI_Comm comm, MPI_Request *req)
{
    int in_place = sbuf == MPI_IN_PLACE;

    if (TLMPI_LIKELY(fast_passthrough(TLMPI_COLL_ALLGATHERV, in_place ? rtype : stype, sbuf, rbuf))) {
        int rc = tlmpi_next.iallgatherv_c(sbuf, scount, stype, rbuf, rcounts, displs, rtype, comm, req);

        if (TLMPI_LIKELY(rc == MPI_SUCCESS)) {
            sib_count(TLMPI_COLL_ALLGATHERV, TLMPI_FORM_NONBLOCKING, call_bytes(vmax_count(comm, rcounts, 1, 1), rtype));
        }
        return rc;
    }
    return sib_enter(TLMPI_COLL_ALLGATHERV, sbuf, rbuf, in_place ? 0 : scount, in_place ? rtype : stype, MPI_OP_NULL, comm, 1, rtype, 0, 0, rcounts, displs, TLMPI_FORM_NONBLOCKING, MPI_INFO_NULL, req);
}
TLMPI_EXPORT int MPI_Iallgatherv_c(const void *sbuf, MPI_Count scount, MPI_Datatype stype, void *rbuf, const MPI_Count rcounts[], const MPI_Aint displs[], MPI_Datatype rtype, MPI_Comm comm, MPI_Request *req)
{
    int in_place = sbuf == MPI_IN_PLACE;

    SIB_FAST(TLMPI_COLL_ALLGATHERV, in_place ? rtype : stype, sbuf, rbuf, TLMPI_FORM_NONBLOCKING, call_bytes(vmax_count(comm, rcounts, 1, 1), rtype), tlmpi_next.iallgatherv_c(sbuf, scount, stype, rbuf, rcounts, displs, rtype, comm, req))
    return iallgatherv_c_full(sbuf, scount, stype, rbuf, rcounts, displs, rtype, comm, req);
}
#endif
#ifdef HAVE_PMPI_ALLGATHERV_INIT
static __attribute__((noinline)) int allgatherv_init_full(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, const int rcounts[], const int displs[], MPI_Datatype rtype, MPI_Comm comm, MPI_Info info, MPI_Request *req)
{
    int in_place = sbuf == MPI_IN_PLACE;

    if (TLMPI_LIKELY(fast_passthrough(TLMPI_COLL_ALLGATHERV, in_place ? rtype : stype, sbuf, rbuf))) {
        int rc = tlmpi_next.allgatherv_init(sbuf, scount, stype, rbuf, rcounts, displs, rtype, comm, info, req);

        if (TLMPI_LIKELY(rc == MPI_SUCCESS)) {
            sib_count(TLMPI_COLL_ALLGATHERV, TLMPI_FORM_PERSISTENT, call_bytes(vmax_count(comm, rcounts, 0, 1), rtype));
        }
        return rc;
    }
    return sib_enter(TLMPI_COLL_ALLGATHERV, sbuf, rbuf, in_place ? 0 : scount, in_place ? rtype : stype, MPI_OP_NULL, comm, 0, rtype, 0, 0, rcounts, displs, TLMPI_FORM_PERSISTENT, info, req);
}
TLMPI_EXPORT int MPI_Allgatherv_init(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, const int rcounts[], const int displs[], MPI_Datatype rtype, MPI_Comm comm, MPI_Info info, MPI_Request *req)
{
    int in_place = sbuf == MPI_IN_PLACE;

    SIB_FAST(TLMPI_COLL_ALLGATHERV, in_place ? rtype : stype, sbuf, rbuf, TLMPI_FORM_PERSISTENT, call_bytes(vmax_count(comm, rcounts, 0, 1), rtype), tlmpi_next.allgatherv_init(sbuf, scount, stype, rbuf, rcounts, displs, rtype, comm, info, req))
    return allgatherv_init_full(sbuf, scount, stype, rbuf, rcounts, displs, rtype, comm, info, req);
}
#endif
#ifdef HAVE_PMPI_ALLGATHERV_INIT_C
static __attribute__((noinline)) int allgatherv_init_c_full(const void *sbuf, MPI_Count scount, MPI_Datatype stype, void *rbuf, const MPI_Count rcounts[], const MPI_Aint displs[], MPI_Datatype rtype, MPI_Comm comm, MPI_Info info, MPI_Request *req)
{
    int in_place = sbuf == MPI_IN_PLACE;

    if (TLMPI_LIKELY(fast_passthrough(TLMPI_COLL_ALLGATHERV, in_place ? rtype : stype, sbuf, rbuf))) {
        int rc = tlmpi_next.allgatherv_init_c(sbuf, scount, stype, rbuf, rcounts, displs, rtype, comm, info, req);

        if (TLMPI_LIKELY(rc == MPI_SUCCESS)) {
            sib_count(TLMPI_COLL_ALLGATHERV, TLMPI_FORM_PERSISTENT, call_bytes(vmax_count(comm, rcounts, 1, 1), rtype));
        }
        return rc;
    }
    return sib_enter(TLMPI_COLL_ALLGATHERV, sbuf, rbuf, in_place ? 0 : scount, in_place ? rtype : stype, MPI_OP_NULL, comm, 1, rtype, 0, 0, rcounts, displs, TLMPI_FORM_PERSISTENT, info, req);
}
TLMPI_EXPORT int MPI_Allgatherv_init_c(const void *sbuf, MPI_Count scount, MPI_Datatype stype, void *rbuf, const MPI_Count rcounts[], const MPI_Aint displs[], MPI_Datatype rtype, MPI_Comm comm, MPI_Info info, MPI_Request *req)
{
    int in_place = sbuf == MPI_IN_PLACE;

    SIB_FAST(TLMPI_COLL_ALLGATHERV, in_place ? rtype : stype, sbuf, rbuf, TLMPI_FORM_PERSISTENT, call_bytes(vmax_count(comm, rcounts, 1, 1), rtype), tlmpi_next.allgatherv_init_c(sbuf, scount, stype, rbuf, rcounts, displs, rtype, comm, info, req))
    return allgatherv_init_c_full(sbuf, scount, stype, rbuf, rcounts, displs, rtype, comm, info, req);
}
#endif

/* ---- MPI_Reduce_scatter: every form ---- */
static __attribute__((noinline)) int reduce_scatter_full(const void *sbuf, void *rbuf, const int rcounts[], MPI_Datatype dtype, MPI_Op op, MPI_Comm comm)
{
    if (TLMPI_LIKELY(fast_passthrough(TLMPI_COLL_REDUCE_SCATTER, dtype, sbuf, rbuf))) {
        int rc = tlmpi_next.reduce_scatter(sbuf, rbuf, rcounts, dtype, op, comm);

        if (TLMPI_LIKELY(rc == MPI_SUCCESS)) {
            sib_count(TLMPI_COLL_REDUCE_SCATTER, TLMPI_FORM_BLOCKING, call_bytes(vmax_count(comm, rcounts, 0, 0), dtype));
        }
        return rc;
    }
    return sib_enter(TLMPI_COLL_REDUCE_SCATTER, sbuf, rbuf, 0, dtype, op, comm, 0, dtype, 0, 0, rcounts, NULL, TLMPI_FORM_BLOCKING, MPI_INFO_NULL, NULL);
}
TLMPI_EXPORT int MPI_Reduce_scatter(const void *sbuf, void *rbuf, const int rcounts[], MPI_Datatype dtype, MPI_Op op, MPI_Comm comm)
{
    SIB_FAST(TLMPI_COLL_REDUCE_SCATTER, dtype, sbuf, rbuf, TLMPI_FORM_BLOCKING, call_bytes(vmax_count(comm, rcounts, 0, 0), dtype), tlmpi_next.reduce_scatter(sbuf, rbuf, rcounts, dtype, op, comm))
    return reduce_scatter_full(sbuf, rbuf, rcounts, dtype, op, comm);
}
#ifdef HAVE_PMPI_REDUCE_SCATTER_C
static __attribute__((noinline)) int reduce_scatter_c_full(const void *sbuf, void *rbuf, const MPI_Count rcounts[], MPI_Datatype dtype, MPI_Op op, MPI_Comm comm)
{
    if (TLMPI_LIKELY(fast_passthrough(TLMPI_COLL_REDUCE_SCATTER, dtype, sbuf, rbuf))) {
        int rc = tlmpi_next.reduce_scatter_c(sbuf, rbuf, rcounts, dtype, op, comm);

        if (TLMPI_LIKELY(rc == MPI_SUCCESS)) {
            sib_count(TLMPI_COLL_REDUCE_SCATTER, TLMPI_FORM_BLOCKING, call_bytes(vmax_count(comm, rcounts, 1, 0), dtype));
        }
        return rc;
    }
    return sib_enter(TLMPI_COLL_REDUCE_SCATTER, sbuf, rbuf, 0, dtype, op, comm, 1, dtype, 0, 0, rcounts, NULL, TLMPI_FORM_BLOCKING, MPI_INFO_NULL, NULL);
}
TLMPI_EXPORT int MPI_Reduce_scatter_c(const void *sbuf, void *rbuf, const MPI_Count rcounts[], MPI_Datatype dtype, MPI_Op op, MPI_Comm comm)
{
    SIB_FAST(TLMPI_COLL_REDUCE_SCATTER, dtype, sbuf, rbuf, TLMPI_FORM_BLOCKING, call_bytes(vmax_count(comm, rcounts, 1, 0), dtype), tlmpi_next.reduce_scatter_c(sbuf, rbuf, rcounts, dtype, op, comm))
    return reduce_scatter_c_full(sbuf, rbuf, rcounts, dtype, op, comm);
}
#endif
static __attribute__((noinline)) int ireduce_scatter_full(const void *sbuf, void *rbuf, const int rcounts[], MPI_Datatype dtype, MPI_Op op, MPI_Comm comm, MPI_Request *req)
{
    if (TLMPI_LIKELY(fast_passthrough(TLMPI_COLL_REDUCE_SCATTER, dtype, sbuf, rbuf))) {
        int rc = tlmpi_next.ireduce_scatter(sbuf, rbuf, rcounts, dtype, op, comm, req);

        if (TLMPI_LIKELY(rc == MPI_SUCCESS)) {
            sib_count(TLMPI_COLL_REDUCE_SCATTER, TLMPI_FORM_NONBLOCKING, call_bytes(vmax_count(comm, rcounts, 0, 0), dtype));
        }
        return rc;
    }
    return sib_enter(TLMPI_COLL_REDUCE_SCATTER, sbuf, rbuf, 0, dtype, op, comm, 0, dtype, 0, 0, rcounts, NULL, TLMPI_FORM_NONBLOCKING, MPI_INFO_NULL, req);
}
TLMPI_EXPORT int MPI_Ireduce_scatter(const void *sbuf, void *rbuf, const int rcounts[], MPI_Datatype dtype, MPI_Op op, MPI_Comm comm, MPI_Request *req)
{
    SIB_FAST(TLMPI_COLL_REDUCE_SCATTER, dtype, sbuf, rbuf, TLMPI_FORM_NONBLOCKING, call_bytes(vmax_count(comm, rcounts, 0, 0), dtype), tlmpi_next.ireduce_scatter(sbuf, rbuf, rcounts, dtype, op, comm, req))
    return ireduce_scatter_full(sbuf, rbuf, rcounts, dtype, op, comm, req);
}
#ifdef HAVE_PMPI_IREDUCE_SCATTER_C
static __attribute__((noinline)) int ireduce_scatter_c_full(const void *sbuf, void *rbuf, const MPI_Count rcounts[], MPI_Datatype dtype, MPI_Op op, MPI_Comm comm, MPI_Request *req)
{
    if (TLMPI_LIKELY(fast_passthrough(TLMPI_COLL_REDUCE_SCATTER, dtype, sbuf, rbuf))) {
        int rc = tlmpi_next.ireduce_scatter_c(sbuf, rbuf, rcounts, dtype, op, comm, req);

        if (TLMPI_LIKELY(rc == MPI_SUCCESS)) {
            sib_count(TLMPI_COLL_REDUCE_SCATTER, TLMPI_FORM_NONBLOCKING, call_bytes(vmax_count(comm, rcounts, 1, 0), dtype));
        }
        return rc;
    }
    return sib_enter(TLMPI_COLL_REDUCE_SCATTER, sbuf, rbuf, 0, dtype, op, comm, 1, dtype, 0, 0, rcounts, NULL, TLMPI_FORM_NONBLOCKING, MPI_INFO_NULL, req);
}
TLMPI_EXPORT int MPI_Ireduce_scatter_c(const void *sbuf, void *rbuf, const MPI_Count rcounts[], MPI_Datatype dtype, MPI_Op op, MPI_Comm comm, MPI_Request *req)
{
    SIB_FAST(TLMPI_COLL_REDUCE_SCATTER, dtype, sbuf, rbuf, TLMPI_FORM_NONBLOCKING, call_bytes(vmax_count(comm, rcounts, 1, 0), dtype), tlmpi_next.ireduce_scatter_c(sbuf, rbuf, rcounts, dtype, op, comm, req))
    return ireduce_scatter_c_full(sbuf, rbuf, rcounts, dtype, op, comm, req);
}
#endif
#ifdef HAVE_PMPI_REDUCE_SCATTER_INIT
static __attribute__((noinline)) int reduce_scatter_init_full(const void *sbuf, void *rbuf, const int rcounts[], MPI_Datatype dtype, MPI_Op op, MPI_Comm comm, MPI_Info info, MPI_Request *req)
{
    if (TLMPI_LIKELY(fast_passthrough(TLMPI_COLL_REDUCE_SCATTER, dtype, sbuf, rbuf))) {
        int rc = tlmpi_next.reduce_scatter_init(sbuf, rbuf, rcounts, dtype, op, comm, info, req);

        if (TLMPI_LIKELY(rc == MPI_SUCCESS)) {
            sib_count(TLMPI_COLL_REDUCE_SCATTER, TLMPI_FORM_PERSISTENT, call_bytes(vmax_count(comm, rcounts, 0, 0), dtype));
        }
        return rc;
    }
    return sib_enter(TLMPI_COLL_REDUCE_SCATTER, sbuf, rbuf, 0, dtype, op, comm, 0, dtype, 0, 0, rcounts, NULL, TLMPI_FORM_PERSISTENT, info, req);
}
TLMPI_EXPORT int MPI_Reduce_scatter_init(const void *sbuf, void *rbuf, const int rcounts[], MPI_Datatype dtype, MPI_Op op, MPI_Comm comm, MPI_Info info, MPI_Request *req)
{
    SIB_FAST(TLMPI_COLL_REDUCE_SCATTER, dtype, sbuf, rbuf, TLMPI_FORM_PERSISTENT, call_bytes(vmax_count(comm, rcounts, 0, 0), dtype), tlmpi_next.reduce_scatter_init(sbuf, rbuf, rcounts, dtype, op, comm, info, req))
    return reduce_scatter_init_full(sbuf, rbuf, rcounts, dtype, op, comm, info, req);
}
#endif
#ifdef HAVE_PMPI_REDUCE_SCATTER_INIT_C
static __attribute__((noinline)) int reduce_scatter_init_c_full(const void *sbuf, void *rbuf, const MPI_Count rcounts[], MPI_Datatype dtype, MPI_Op op, MPI_Comm comm, MPI_Info info, MPI_Request *req)
{
    if (TLMPI_LIKELY(fast_passthrough(TLMPI_COLL_REDUCE_SCATTER, dtype, sbuf, rbuf))) {
        int rc = tlmpi_next.reduce_scatter_init_c(sbuf, rbuf, rcounts, dtype, op, comm, info, req);

        if (TLMPI_LIKELY(rc == MPI_SUCCESS)) {
            sib_count(TLMPI_COLL_REDUCE_SCATTER, TLMPI_FORM_PERSISTENT, call_bytes(vmax_count(comm, rcounts, 1, 0), dtype));
        }
        return rc;
    }
    return sib_enter(TLMPI_COLL_REDUCE_SCATTER, sbuf, rbuf, 0, dtype, op, comm, 1, dtype, 0, 0, rcounts, NULL, TLMPI_FORM_PERSISTENT, info, req);
}
TLMPI_EXPORT int MPI_Reduce_scatter_init_c(const void *sbuf, void *rbuf, const MPI_Count rcounts[], MPI_Datatype dtype, MPI_Op op, MPI_Comm comm, MPI_Info info, MPI_Request *req)
{
    SIB_FAST(TLMPI_COLL_REDUCE_SCATTER, dtype, sbuf, rbuf, TLMPI_FORM_PERSISTENT, call_bytes(vmax_count(comm, rcounts, 1, 0), dtype), tlmpi_next.reduce_scatter_init_c(sbuf, rbuf, rcounts, dtype, op, comm, info, req))
    return reduce_scatter_init_c_full(sbuf, rbuf, rcounts, dtype, op, comm, info, req);
}
#endif

/* ---- MPI_Bcast: every form ---- */
static __attribute__((noinline)) int bcast_full(void *buf, int count, MPI_Datatype dtype, int root, MPI_Comm comm)
{
    if (TLMPI_LIKELY(fast_passthrough(TLMPI_COLL_BCAST, dtype, buf, buf))) {
        int rc = tlmpi_next.bcast(buf, count, dtype, root, comm);

        if (TLMPI_LIKELY(rc == MPI_SUCCESS)) {
            sib_count(TLMPI_COLL_BCAST, TLMPI_FORM_BLOCKING, call_bytes(count, dtype));
        }
        return rc;
    }
    return sib_enter(TLMPI_COLL_BCAST, MPI_IN_PLACE, buf, count, dtype, MPI_OP_NULL, comm, 0, dtype, count, root, NULL, NULL, TLMPI_FORM_BLOCKING, MPI_INFO_NULL, NULL);
}
TLMPI_EXPORT int MPI_Bcast(void *buf, int count, MPI_Datatype dtype, int root, MPI_Comm comm)
{
    SIB_FAST(TLMPI_COLL_BCAST, dtype, buf, buf, TLMPI_FORM_BLOCKING, fast_bytes(count), tlmpi_next.bcast(buf, count, dtype, root, comm))
    return bcast_full(buf, count, dtype, root, comm);
}
#ifdef HAVE_PMPI_BCAST_C
static __attribute__((noinline)) int bcast_c_full(void *buf, MPI_Count count, MPI_Datatype dtype, int root, MPI_Comm comm)
{
    if (TLMPI_LIKELY(fast_passthrough(TLMPI_COLL_BCAST, dtype, buf, buf))) {
        int rc = tlmpi_next.bcast_c(buf, count, dtype, root, comm);

        if (TLMPI_LIKELY(rc == MPI_SUCCESS)) {
            sib_count(TLMPI_COLL_BCAST, TLMPI_FORM_BLOCKING, call_bytes(count, dtype));
        }
        return rc;
    }
    return sib_enter(TLMPI_COLL_BCAST, MPI_IN_PLACE, buf, count, dtype, MPI_OP_NULL, comm, 1, dtype, count, root, NULL, NULL, TLMPI_FORM_BLOCKING, MPI_INFO_NULL, NULL);
}
TLMPI_EXPORT int MPI_Bcast_c(void *buf, MPI_Count count, MPI_Datatype dtype, int root, MPI_Comm comm)
{
    SIB_FAST(TLMPI_COLL_BCAST, dtype, buf, buf, TLMPI_FORM_BLOCKING, fast_bytes(count), tlmpi_next.bcast_c(buf, count, dtype, root, comm))
    return bcast_c_full(buf, count, dtype, root, comm);
}
#endif
static __attribute__((noinline)) int ibcast_full(void *buf, int count, MPI_Datatype dtype, int root, MPI_Comm comm, MPI_Request *req)
{
    if (TLMPI_LIKELY(fast_passthrough(TLMPI_COLL_BCAST, dtype, buf, buf))) {
        int rc = tlmpi_next.ibcast(buf, count, dtype, root, comm, req);

        if (TLMPI_LIKELY(rc == MPI_SUCCESS)) {
            sib_count(TLMPI_COLL_BCAST, TLMPI_FORM_NONBLOCKING, call_bytes(count, dtype));
        }
        return rc;
    }
    return sib_enter(TLMPI_COLL_BCAST, MPI_IN_PLACE, buf, count, dtype, MPI_OP_NULL, comm, 0, dtype, count, root, NULL, NULL, TLMPI_FORM_NONBLOCKING, MPI_INFO_NULL, req);
}
TLMPI_EXPORT int MPI_Ibcast(void *buf, int count, MPI_Datatype dtype, int root, MPI_Comm comm, MPI_Request *req)
{
    SIB_FAST(TLMPI_COLL_BCAST, dtype, buf, buf, TLMPI_FORM_NONBLOCKING, fast_bytes(count), tlmpi_next.ibcast(buf, count, dtype, root, comm, req))
    return ibcast_full(buf, count, dtype, root, comm, req);
}
#ifdef HAVE_PMPI_IBCAST_C
static __attribute__((noinline)) int ibcast_c_full(void *buf, MPI_Count count, MPI_Datatype dtype, int root, MPI_Comm comm, MPI_Request *req)
{
    if (TLMPI_LIKELY(fast_passthrough(TLMPI_COLL_BCAST, dtype, buf, buf))) {
        int rc = tlmpi_next.ibcast_c(buf, count, dtype, root, comm, req);

        if (TLMPI_LIKELY(rc == MPI_SUCCESS)) {
            sib_count(TLMPI_COLL_BCAST, TLMPI_FORM_NONBLOCKING, call_bytes(count, dtype));
        }
        return rc;
    }
    return sib_enter(TLMPI_COLL_BCAST, MPI_IN_PLACE, buf, count, dtype, MPI_OP_NULL, comm, 1, dtype, count, root, NULL, NULL, TLMPI_FORM_NONBLOCKING, MPI_INFO_NULL, req);
}
TLMPI_EXPORT int MPI_Ibcast_c(void *buf, MPI_Count count, MPI_Datatype dtype, int root, MPI_Comm comm, MPI_Request *req)
{
    SIB_FAST(TLMPI_COLL_BCAST, dtype, buf, buf, TLMPI_FORM_NONBLOCKING, fast_bytes(count), tlmpi_next.ibcast_c(buf, count, dtype, root, comm, req))
    return ibcast_c_full(buf, count, dtype, root, comm, req);
}
#endif
#ifdef HAVE_PMPI_BCAST_INIT
static __attribute__((noinline)) int bcast_init_full(void *buf, int count, MPI_Datatype dtype, int root, MPI_Comm comm, MPI_Info info, MPI_Request *req)
{
    if (TLMPI_LIKELY(fast_passthrough(TLMPI_COLL_BCAST, dtype, buf, buf))) {
        int rc = tlmpi_next.bcast_init(buf, count, dtype, root, comm, info, req);

        if (TLMPI_LIKELY(rc == MPI_SUCCESS)) {
            sib_count(TLMPI_COLL_BCAST, TLMPI_FORM_PERSISTENT, call_bytes(count, dtype));
        }
        return rc;
    }
    return sib_enter(TLMPI_COLL_BCAST, MPI_IN_PLACE, buf, count, dtype, MPI_OP_NULL, comm, 0, dtype, count, root, NULL, NULL, TLMPI_FORM_PERSISTENT, info, req);
}
TLMPI_EXPORT int MPI_Bcast_init(void *buf, int count, MPI_Datatype dtype, int root, MPI_Comm comm, MPI_Info info, MPI_Request *req)
{
    SIB_FAST(TLMPI_COLL_BCAST, dtype, buf, buf, TLMPI_FORM_PERSISTENT, fast_bytes(count), tlmpi_next.bcast_init(buf, count, dtype, root, comm, info, req))
    return bcast_init_full(buf, count, dtype, root, comm, info, req);
}
#endif
#ifdef HAVE_PMPI_BCAST_INIT_C
static __attribute__((noinline)) int bcast_init_c_full(void *buf, MPI_Count count, MPI_Datatype dtype, int root, MPI_Comm comm, MPI_Info info, MPI_Request *req)
{
    if (TLMPI_LIKELY(fast_passthrough(TLMPI_COLL_BCAST, dtype, buf, buf))) {
        int rc = tlmpi_next.bcast_init_c(buf, count, dtype, root, comm, info, req);

        if (TLMPI_LIKELY(rc == MPI_SUCCESS)) {
            sib_count(TLMPI_COLL_BCAST, TLMPI_FORM_PERSISTENT, call_bytes(count, dtype));
        }
        return rc;
    }
    return sib_enter(TLMPI_COLL_BCAST, MPI_IN_PLACE, buf, count, dtype, MPI_OP_NULL, comm, 1, dtype, count, root, NULL, NULL, TLMPI_FORM_PERSISTENT, info, req);
}
TLMPI_EXPORT int MPI_Bcast_init_c(void *buf, MPI_Count count, MPI_Datatype dtype, int root, MPI_Comm comm, MPI_Info info, MPI_Request *req)
{
    SIB_FAST(TLMPI_COLL_BCAST, dtype, buf, buf, TLMPI_FORM_PERSISTENT, fast_bytes(count), tlmpi_next.bcast_init_c(buf, count, dtype, root, comm, info, req))
    return bcast_init_c_full(buf, count, dtype, root, comm, info, req);
}
#endif

/* ---- MPI_Reduce: every form ---- */
static __attribute__((noinline)) int reduce_full(const void *sbuf, void *rbuf, int count, MPI_Datatype dtype, MPI_Op op, int root, MPI_Comm comm)
{
    void *rb = rbuf ? rbuf : (void *)sbuf; /* NULL: a non-root's recvbuf, not significant */

    if (TLMPI_LIKELY(fast_passthrough(TLMPI_COLL_REDUCE, dtype, sbuf, rb))) {
        int rc = tlmpi_next.reduce(sbuf, rbuf, count, dtype, op, root, comm);

        if (TLMPI_LIKELY(rc == MPI_SUCCESS)) {
            sib_count(TLMPI_COLL_REDUCE, TLMPI_FORM_BLOCKING, call_bytes(count, dtype));
        }
        return rc;
    }
    return sib_enter(TLMPI_COLL_REDUCE, sbuf, rbuf, count, dtype, op, comm, 0, dtype, count, root, NULL, NULL, TLMPI_FORM_BLOCKING, MPI_INFO_NULL, NULL);
}
TLMPI_EXPORT int MPI_Reduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dtype, MPI_Op op, int root, MPI_Comm comm)
{
    void *rb = rbuf ? rbuf : (void *)sbuf; /* NULL: a non-root's recvbuf, not significant */

    SIB_FAST(TLMPI_COLL_REDUCE, dtype, sbuf, rb, TLMPI_FORM_BLOCKING, fast_bytes(count), tlmpi_next.reduce(sbuf, rbuf, count, dtype, op, root, comm))
    return reduce_full(sbuf, rbuf, count, dtype, op, root, comm);
}
#ifdef HAVE_PMPI_REDUCE_C
static __attribute__((noinline)) int reduce_c_full(const void *sbuf, void *rbuf, MPI_Count count, MPI_Datatype dtype, MPI_Op op, int root, MPI_Comm comm)
{
    void *rb = rbuf ? rbuf : (void *)sbuf; /* NULL: a non-root's recvbuf, not significant */

    if (TLMPI_LIKELY(fast_passthrough(TLMPI_COLL_REDUCE, dtype, sbuf, rb))) {
        int rc = tlmpi_next.reduce_c(sbuf, rbuf, count, dtype, op, root, comm);

        if (TLMPI_LIKELY(rc == MPI_SUCCESS)) {
            sib_count(TLMPI_COLL_REDUCE, TLMPI_FORM_BLOCKING, call_bytes(count, dtype));
        }
        return rc;
    }
    return sib_enter(TLMPI_COLL_REDUCE, sbuf, rbuf, count, dtype, op, comm, 1, dtype, count, root, NULL, NULL, TLMPI_FORM_BLOCKING, MPI_INFO_NULL, NULL);
}
TLMPI_EXPORT int MPI_Reduce_c(const void *sbuf, void *rbuf, MPI_Count count, MPI_Datatype dtype, MPI_Op op, int root, MPI_Comm comm)
{
    void *rb = rbuf ? rbuf : (void *)sbuf; /* NULL: a non-root's recvbuf, not significant */

    SIB_FAST(TLMPI_COLL_REDUCE, dtype, sbuf, rb, TLMPI_FORM_BLOCKING, fast_bytes(count), tlmpi_next.reduce_c(sbuf, rbuf, count, dtype, op, root, comm))
    return reduce_c_full(sbuf, rbuf, count, dtype, op, root, comm);
}
#endif
static __attribute__((noinline)) int ireduce_full(const void *sbuf, void *rbuf, int count, MPI_Datatype dtype, MPI_Op op, int root, MPI_Comm comm, MPI_Request *req)
{
    void *rb = rbuf ? rbuf : (void *)sbuf; /* NULL: a non-root's recvbuf, not significant */

    if (TLMPI_LIKELY(fast_passthrough(TLMPI_COLL_REDUCE, dtype, sbuf, rb))) {
        int rc = tlmpi_next.ireduce(sbuf, rbuf, count, dtype, op, root, comm, req);

        if (TLMPI_LIKELY(rc == MPI_SUCCESS)) {
            sib_count(TLMPI_COLL_REDUCE, TLMPI_FORM_NONBLOCKING, call_bytes(count, dtype));
        }
        return rc;
    }
    return sib_enter(TLMPI_COLL_REDUCE, sbuf, rbuf, count, dtype, op, comm, 0, dtype, count, root, NULL, NULL, TLMPI_FORM_NONBLOCKING, MPI_INFO_NULL, req);
}
TLMPI_EXPORT int MPI_Ireduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dtype, MPI_Op op, int root, MPI_Comm comm, MPI_Request *req)
{
    void *rb = rbuf ? rbuf : (void *)sbuf; /* NULL: a non-root's recvbuf, not significant */

    SIB_FAST(TLMPI_COLL_REDUCE, dtype, sbuf, rb, TLMPI_FORM_NONBLOCKING, fast_bytes(count), tlmpi_next.ireduce(sbuf, rbuf, count, dtype, op, root, comm, req))
    return ireduce_full(sbuf, rbuf, count, dtype, op, root, comm, req);
}
#ifdef HAVE_PMPI_IREDUCE_C
static __attribute__((noinline)) int ireduce_c_full(const void *sbuf, void *rbuf, MPI_Count count, MPI_Datatype dtype, MPI_Op op, int root, MPI_Comm comm, MPI_Request *req)
{
    void *rb = rbuf ? rbuf : (void *)sbuf; /* NULL: a non-root's recvbuf, not significant */

    if (TLMPI_LIKELY(fast_passthrough(TLMPI_COLL_REDUCE, dtype, sbuf, rb))) {
        int rc = tlmpi_next.ireduce_c(sbuf, rbuf, count, dtype, op, root, comm, req);

        if (TLMPI_LIKELY(rc == MPI_SUCCESS)) {
            sib_count(TLMPI_COLL_REDUCE, TLMPI_FORM_NONBLOCKING, call_bytes(count, dtype));
        }
        return rc;
    }
    return sib_enter(TLMPI_COLL_REDUCE, sbuf, rbuf, count, dtype, op, comm, 1, dtype, count, root, NULL, NULL, TLMPI_FORM_NONBLOCKING, MPI_INFO_NULL, req);
}
TLMPI_EXPORT int MPI_Ireduce_c(const void *sbuf, void *rbuf, MPI_Count count, MPI_Datatype dtype, MPI_Op op, int root, MPI_Comm comm, MPI_Request *req)
{
    void *rb = rbuf ? rbuf : (void *)sbuf; /* NULL: a non-root's recvbuf, not significant */

    SIB_FAST(TLMPI_COLL_REDUCE, dtype, sbuf, rb, TLMPI_FORM_NONBLOCKING, fast_bytes(count), tlmpi_next.ireduce_c(sbuf, rbuf, count, dtype, op, root, comm, req))
    return ireduce_c_full(sbuf, rbuf, count, dtype, op, root, comm, req);
}
#endif
#ifdef HAVE_PMPI_REDUCE_INIT
static __attribute__((noinline)) int reduce_init_full(const void *sbuf, void *rbuf, int count, MPI_Datatype dtype, MPI_Op op, int root, MPI_Comm comm, MPI_Info info, MPI_Request *req)
{
    void *rb = rbuf ? rbuf : (void *)sbuf; /* NULL: a non-root's recvbuf, not significant */

    if (TLMPI_LIKELY(fast_passthrough(TLMPI_COLL_REDUCE, dtype, sbuf, rb))) {
        int rc = tlmpi_next.reduce_init(sbuf, rbuf, count, dtype, op, root, comm, info, req);

        if (TLMPI_LIKELY(rc == MPI_SUCCESS)) {
            sib_count(TLMPI_COLL_REDUCE, TLMPI_FORM_PERSISTENT, call_bytes(count, dtype));
        }
        return rc;
    }
    return sib_enter(TLMPI_COLL_REDUCE, sbuf, rbuf, count, dtype, op, comm, 0, dtype, count, root, NULL, NULL, TLMPI_FORM_PERSISTENT, info, req);
}
TLMPI_EXPORT int MPI_Reduce_init(const void *sbuf, void *rbuf, int count, MPI_Datatype dtype, MPI_Op op, int root, MPI_Comm comm, MPI_Info info, MPI_Request *req)
{
    void *rb = rbuf ? rbuf : (void *)sbuf; /* NULL: a non-root's recvbuf, not significant */

    SIB_FAST(TLMPI_COLL_REDUCE, dtype, sbuf, rb, TLMPI_FORM_PERSISTENT, fast_bytes(count), tlmpi_next.reduce_init(sbuf, rbuf, count, dtype, op, root, comm, info, req))
    return reduce_init_full(sbuf, rbuf, count, dtype, op, root, comm, info, req);
}
#endif
#ifdef HAVE_PMPI_REDUCE_INIT_C
static __attribute__((noinline)) int reduce_init_c_full(const void *sbuf, void *rbuf, MPI_Count count, MPI_Datatype dtype, MPI_Op op, int root, MPI_Comm comm, MPI_Info info, MPI_Request *req)
{
    void *rb = rbuf ? rbuf : (void *)sbuf; /* NULL: a non-root's recvbuf, not significant */

    if (TLMPI_LIKELY(fast_passthrough(TLMPI_COLL_REDUCE, dtype, sbuf, rb))) {
        int rc = tlmpi_next.reduce_init_c(sbuf, rbuf, count, dtype, op, root, comm, info, req);

        if (TLMPI_LIKELY(rc == MPI_SUCCESS)) {
            sib_count(TLMPI_COLL_REDUCE, TLMPI_FORM_PERSISTENT, call_bytes(count, dtype));
        }
        return rc;
    }
    return sib_enter(TLMPI_COLL_REDUCE, sbuf, rbuf, count, dtype, op, comm, 1, dtype, count, root, NULL, NULL, TLMPI_FORM_PERSISTENT, info, req);
}
TLMPI_EXPORT int MPI_Reduce_init_c(const void *sbuf, void *rbuf, MPI_Count count, MPI_Datatype dtype, MPI_Op op, int root, MPI_Comm comm, MPI_Info info, MPI_Request *req)
{
    void *rb = rbuf ? rbuf : (void *)sbuf; /* NULL: a non-root's recvbuf, not significant */

    SIB_FAST(TLMPI_COLL_REDUCE, dtype, sbuf, rb, TLMPI_FORM_PERSISTENT, fast_bytes(count), tlmpi_next.reduce_init_c(sbuf, rbuf, count, dtype, op, root, comm, info, req))
    return reduce_init_c_full(sbuf, rbuf, count, dtype, op, root, comm, info, req);
}
#endif

/* ---- MPI_Alltoall: every form ---- */
static __attribute__((noinline)) int alltoall_full(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype, MPI_Comm comm)
{
    int in_place = sbuf == MPI_IN_PLACE;

    if (TLMPI_LIKELY(fast_passthrough(TLMPI_COLL_ALLTOALL, in_place ? rtype : stype, sbuf, rbuf))) {
        int rc = tlmpi_next.alltoall(sbuf, scount, stype, rbuf, rcount, rtype, comm);

        if (TLMPI_LIKELY(rc == MPI_SUCCESS)) {
            sib_count(TLMPI_COLL_ALLTOALL, TLMPI_FORM_BLOCKING, call_bytes(in_place ? rcount : scount, in_place ? rtype : stype));
        }
        return rc;
    }
    return sib_enter(TLMPI_COLL_ALLTOALL, sbuf, rbuf, in_place ? rcount : scount, in_place ? rtype : stype, MPI_OP_NULL, comm, 0, rtype, rcount, 0, NULL, NULL, TLMPI_FORM_BLOCKING, MPI_INFO_NULL, NULL);
}
TLMPI_EXPORT int MPI_Alltoall(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype, MPI_Comm comm)
{
    int in_place = sbuf == MPI_IN_PLACE;

    SIB_FAST(TLMPI_COLL_ALLTOALL, in_place ? rtype : stype, sbuf, rbuf, TLMPI_FORM_BLOCKING, fast_bytes(in_place ? rcount : scount), tlmpi_next.alltoall(sbuf, scount, stype, rbuf, rcount, rtype, comm))
    return alltoall_full(sbuf, scount, stype, rbuf, rcount, rtype, comm);
}
#ifdef HAVE_PMPI_ALLTOALL_C
static __attribute__((noinline)) int alltoall_c_full(const void *sbuf, MPI_Count scount, MPI_Datatype stype, void *rbuf, MPI_Count rcount, MPI_Datatype rtype, MPI_Comm comm)
{
    int in_place = sbuf == MPI_IN_PLACE;

    if (TLMPI_LIKELY(fast_passthrough(TLMPI_COLL_ALLTOALL, in_place ? rtype : stype, sbuf, rbuf))) {
        int rc = tlmpi_next.alltoall_c(sbuf, scount, stype, rbuf, rcount, rtype, comm);

        if (TLMPI_LIKELY(rc == MPI_SUCCESS)) {
            sib_count(TLMPI_COLL_ALLTOALL, TLMPI_FORM_BLOCKING, call_bytes(in_place ? rcount : scount, in_place ? rtype : stype));
        }
        return rc;
    }
    return sib_enter(TLMPI_COLL_ALLTOALL, sbuf, rbuf, in_place ? rcount : scount, in_place ? rtype : stype, MPI_OP_NULL, comm, 1, rtype, rcount, 0, NULL, NULL, TLMPI_FORM_BLOCKING, MPI_INFO_NULL, NULL);
}
TLMPI_EXPORT int MPI_Alltoall_c(const void *sbuf, MPI_Count scount, MPI_Datatype stype, void *rbuf, MPI_Count rcount, MPI_Datatype rtype, MPI_Comm comm)
{
    int in_place = sbuf == MPI_IN_PLACE;

    SIB_FAST(TLMPI_COLL_ALLTOALL, in_place ? rtype : stype, sbuf, rbuf, TLMPI_FORM_BLOCKING, fast_bytes(in_place ? rcount : scount), tlmpi_next.alltoall_c(sbuf, scount, stype, rbuf, rcount, rtype, comm))
    return alltoall_c_full(sbuf, scount, stype, rbuf, rcount, rtype, comm);
}
#endif
static __attribute__((noinline)) int ialltoall_full(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype, MPI_Comm comm, MPI_Request *req)
{
    int in_place = sbuf == MPI_IN_PLACE;

    if (TLMPI_LIKELY(fast_passthrough(TLMPI_COLL_ALLTOALL, in_place ? rtype : stype, sbuf, rbuf))) {
        int rc = tlmpi_next.ialltoall(sbuf, scount, stype, rbuf, rcount, rtype, comm, req);

        if (TLMPI_LIKELY(rc == MPI_SUCCESS)) {
            sib_count(TLMPI_COLL_ALLTOALL, TLMPI_FORM_NONBLOCKING, call_bytes(in_place ? rcount : scount, in_place ? rtype : stype));
        }
        return rc;
    }
    return sib_enter(TLMPI_COLL_ALLTOALL, sbuf, rbuf, in_place ? rcount : scount, in_place ? rtype : stype, MPI_OP_NULL, comm, 0, rtype, rcount, 0, NULL, NULL, TLMPI_FORM_NONBLOCKING, MPI_INFO_NULL, req);
}
TLMPI_EXPORT int MPI_Ialltoall(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype, MPI_Comm comm, MPI_Request *req)
{
    int in_place = sbuf == MPI_IN_PLACE;

    SIB_FAST(TLMPI_COLL_ALLTOALL, in_place ? rtype : stype, sbuf, rbuf, TLMPI_FORM_NONBLOCKING, fast_bytes(in_place ? rcount : scount), tlmpi_next.ialltoall(sbuf, scount, stype, rbuf, rcount, rtype, comm, req))
    return ialltoall_full(sbuf, scount, stype, rbuf, rcount, rtype, comm, req);
}
#ifdef HAVE_PMPI_IALLTOALL_C
static __attribute__((noinline)) int ialltoall_c_full(const void *sbuf, MPI_Count scount, MPI_Datatype stype, void *rbuf, MPI_Count rcount, MPI_Datatype rtype, MPI_Comm comm, MPI_Request *req)
{
    int in_place = sbuf == MPI_IN_PLACE;

    if (TLMPI_LIKELY(fast_passthrough(TLMPI_COLL_ALLTOALL, in_place ? rtype : stype, sbuf, rbuf))) {
        int rc = tlmpi_next.ialltoall_c(sbuf, scount, stype, rbuf, rcount, rtype, comm, req);

        if (TLMPI_LIKELY(rc == MPI_SUCCESS)) {
            sib_count(TLMPI_COLL_ALLTOALL, TLMPI_FORM_NONBLOCKING, call_bytes(in_place ? rcount : scount, in_place ? rtype : stype));
        }
        return rc;
    }
    return sib_enter(TLMPI_COLL_ALLTOALL, sbuf, rbuf, in_place ? rcount : scount, in_place ? rtype : stype, MPI_OP_NULL, comm, 1, rtype, rcount, 0, NULL, NULL, TLMPI_FORM_NONBLOCKING, MPI_INFO_NULL, req);
}
TLMPI_EXPORT int MPI_Ialltoall_c(const void *sbuf, MPI_Count scount, MPI_Datatype stype, void *rbuf, MPI_Count rcount, MPI_Datatype rtype, MPI_Comm comm, MPI_Request *req)
{
    int in_place = sbuf == MPI_IN_PLACE;

    SIB_FAST(TLMPI_COLL_ALLTOALL, in_place ? rtype : stype, sbuf, rbuf, TLMPI_FORM_NONBLOCKING, fast_bytes(in_place ? rcount : scount), tlmpi_next.ialltoall_c(sbuf, scount, stype, rbuf, rcount, rtype, comm, req))
    return ialltoall_c_full(sbuf, scount, stype, rbuf, rcount, rtype, comm, req);
}
#endif
#ifdef HAVE_PMPI_ALLTOALL_INIT
static __attribute__((noinline)) int alltoall_init_full(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype, MPI_Comm comm, MPI_Info info, MPI_Request *req)
{
    int in_place = sbuf == MPI_IN_PLACE;

    if (TLMPI_LIKELY(fast_passthrough(TLMPI_COLL_ALLTOALL, in_place ? rtype : stype, sbuf, rbuf))) {
        int rc = tlmpi_next.alltoall_init(sbuf, scount, stype, rbuf, rcount, rtype, comm, info, req);

        if (TLMPI_LIKELY(rc == MPI_SUCCESS)) {
            sib_count(TLMPI_COLL_ALLTOALL, TLMPI_FORM_PERSISTENT, call_bytes(in_place ? rcount : scount, in_place ? rtype : stype));
        }
        return rc;
    }
    return sib_enter(TLMPI_COLL_ALLTOALL, sbuf, rbuf, in_place ? rcount : scount, in_place ? rtype : stype, MPI_OP_NULL, comm, 0, rtype, rcount, 0, NULL, NULL, TLMPI_FORM_PERSISTENT, info, req);
}
TLMPI_EXPORT int MPI_Alltoall_init(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype, MPI_Comm comm, MPI_Info info, MPI_Request *req)
{
    int in_place = sbuf == MPI_IN_PLACE;

    SIB_FAST(TLMPI_COLL_ALLTOALL, in_place ? rtype : stype, sbuf, rbuf, TLMPI_FORM_PERSISTENT, fast_bytes(in_place ? rcount : scount), tlmpi_next.alltoall_init(sbuf, scount, stype, rbuf, rcount, rtype, comm, info, req))
    return alltoall_init_full(sbuf, scount, stype, rbuf, rcount, rtype, comm, info, req);
}
#endif
#ifdef HAVE_PMPI_ALLTOALL_INIT_C
static __attribute__((noinline)) int alltoall_init_c_full(const void *sbuf, MPI_Count scount, MPI_Datatype stype, void *rbuf, MPI_Count rcount, MPI_Datatype rtype, MPI_Comm comm, MPI_Info info, MPI_Request *req)
{
    int in_place = sbuf == MPI_IN_PLACE;

    if (TLMPI_LIKELY(fast_passthrough(TLMPI_COLL_ALLTOALL, in_place ? rtype : stype, sbuf, rbuf))) {
        int rc = tlmpi_next.alltoall_init_c(sbuf, scount, stype, rbuf, rcount, rtype, comm, info, req);

        if (TLMPI_LIKELY(rc == MPI_SUCCESS)) {
            sib_count(TLMPI_COLL_ALLTOALL, TLMPI_FORM_PERSISTENT, call_bytes(in_place ? rcount : scount, in_place ? rtype : stype));
        }
        return rc;
    }
    return sib_enter(TLMPI_COLL_ALLTOALL, sbuf, rbuf, in_place ? rcount : scount, in_place ? rtype : stype, MPI_OP_NULL, comm, 1, rtype, rcount, 0, NULL, NULL, TLMPI_FORM_PERSISTENT, info, req);
}
TLMPI_EXPORT int MPI_Alltoall_init_c(const void *sbuf, MPI_Count scount, MPI_Datatype stype, void *rbuf, MPI_Count rcount, MPI_Datatype rtype, MPI_Comm comm, MPI_Info info, MPI_Request *req)
{
    int in_place = sbuf == MPI_IN_PLACE;

    SIB_FAST(TLMPI_COLL_ALLTOALL, in_place ? rtype : stype, sbuf, rbuf, TLMPI_FORM_PERSISTENT, fast_bytes(in_place ? rcount : scount), tlmpi_next.alltoall_init_c(sbuf, scount, stype, rbuf, rcount, rtype, comm, info, req))
    return alltoall_init_c_full(sbuf, scount, stype, rbuf, rcount, rtype, comm, info, req);
}
#endif
