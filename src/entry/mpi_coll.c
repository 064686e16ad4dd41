/*
 * The intercepted MPI entry points: MPI_Allgather, MPI_Reduce_scatter_block, MPI_Allreduce and
 * their MPI-4 large-count (_c) forms. Each is a thin entry into one shared body:
 *
 *   cheap rank-uniform checks (enabled, collective enabled, half type, GPU present, count)
 *     -> pointer classification -> host buffers: PMPI_* unchanged (passthrough)
 *     -> device buffers or half types: classify dtype/op, per-comm state, pure tier choice, run;
 *        a tier that cannot serve before communication starts falls to the next one; errors after
 *        work started go to the communicator's error handler.
 *
 * Only PMPI_* is called inside tlmpi. A device pointer never reaches PMPI_* unless the MPI says it
 * is CUDA-aware.
 */
#include "config.h"
#include "global.h"
#include "stats.h"
#include "comm.h"
#include "dtype.h"
#include "env.h"
#include "classify.h"
#include "log.h"
#include "plan.h"
#include "tier.h"

#include <stdlib.h>

/* One-entry datatype size cache per thread: the passthrough path records bytes without an MPI
 * call for the common case of a repeated datatype. */
static __thread MPI_Datatype size_cache_dt __attribute__((tls_model("initial-exec")));
static __thread int size_cache_sz __attribute__((tls_model("initial-exec")));

static inline uint64_t call_bytes(MPI_Count count, MPI_Datatype dt)
{
    int sz;

    if (TLMPI_LIKELY(dt == size_cache_dt && dt != MPI_DATATYPE_NULL)) {
        sz = size_cache_sz;
    } else {
        if (PMPI_Type_size(dt, &sz) != MPI_SUCCESS) {
            return 0;
        }
        size_cache_dt = dt;
        size_cache_sz = sz;
    }
    return (uint64_t)count * (uint64_t)sz;
}

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

/* PMPI call with the original arguments (or with c->op replaced by op). */
static int call_pmpi(const tlmpi_call_t *c, MPI_Datatype rtype, MPI_Count rcount, MPI_Op op)
{
    switch (c->coll) {
    case TLMPI_COLL_ALLGATHER:
#ifdef HAVE_PMPI_ALLGATHER_C
        if (c->large) {
            return PMPI_Allgather_c(c->sbuf, c->count, c->dtype, c->rbuf, rcount, rtype, c->comm);
        }
#endif
        return PMPI_Allgather(c->sbuf, (int)c->count, c->dtype, c->rbuf, (int)rcount, rtype, c->comm);
    case TLMPI_COLL_REDUCE_SCATTER_BLOCK:
#ifdef HAVE_PMPI_REDUCE_SCATTER_BLOCK_C
        if (c->large) {
            return PMPI_Reduce_scatter_block_c(c->sbuf, c->rbuf, c->count, c->dtype, op, c->comm);
        }
#endif
        return PMPI_Reduce_scatter_block(c->sbuf, c->rbuf, (int)c->count, c->dtype, op, c->comm);
    default:
#ifdef HAVE_PMPI_ALLREDUCE_C
        if (c->large) {
            return PMPI_Allreduce_c(c->sbuf, c->rbuf, c->count, c->dtype, op, c->comm);
        }
#endif
        return PMPI_Allreduce(c->sbuf, c->rbuf, (int)c->count, c->dtype, op, c->comm);
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
static int coll_slow(tlmpi_call_t *c, MPI_Datatype rtype, MPI_Count rcount)
{
    tlmpi_select_in_t in;
    tlmpi_comm_t *tc = NULL;
    tlmpi_path_t path;
    tlmpi_status_t st;
    int rc, is_dev = tlmpi_mem_is_device(c->smem) || tlmpi_mem_is_device(c->rmem);
    /* memory-type signature of the call, checked under TLMPI_VERIFY_UNIFORM */
    int mem_sig = (c->sbuf == MPI_IN_PLACE ? 4 : tlmpi_mem_is_device(c->smem)) | tlmpi_mem_is_device(c->rmem) << 1;

    if (is_dev) {
        /* arguments PMPI would reject: report the same class without handing it a device pointer */
        if (c->comm == MPI_COMM_NULL) {
            return PMPI_Comm_call_errhandler(MPI_COMM_WORLD, MPI_ERR_COMM), MPI_ERR_COMM;
        }
        if (c->dtype == MPI_DATATYPE_NULL || rtype == MPI_DATATYPE_NULL) {
            return PMPI_Comm_call_errhandler(c->comm, MPI_ERR_TYPE), MPI_ERR_TYPE;
        }
        if (c->coll != TLMPI_COLL_ALLGATHER && c->op == MPI_OP_NULL) {
            return PMPI_Comm_call_errhandler(c->comm, MPI_ERR_OP), MPI_ERR_OP;
        }
    }
    c->dt = tlmpi_dtype_classify(c->dtype, &c->dt_size);
    c->opc = c->coll == TLMPI_COLL_ALLGATHER ? TLMPI_OP_SUM : tlmpi_op_classify(c->op);
    c->contiguous = c->dt != TLMPI_DT_DERIVED;
    c->bytes = (size_t)c->count * (size_t)c->dt_size;
    c->rtype = rtype;
    c->rcount = rcount;
    if (c->dt == TLMPI_DT_DERIVED || c->dt == TLMPI_DT_BYTES) {
        /* predefined pair types (MPI_LONG_DOUBLE_INT, ...) may have holes too */
        MPI_Aint lb, extent, tlb, textent;

        if (PMPI_Type_get_extent(c->dtype, &lb, &extent) == MPI_SUCCESS &&
            PMPI_Type_get_true_extent(c->dtype, &tlb, &textent) == MPI_SUCCESS) {
            c->contiguous = lb == 0 && tlb == 0 && extent == c->dt_size && textent == c->dt_size;
        }
    }
    if (c->coll == TLMPI_COLL_ALLGATHER && rtype != c->dtype) {
        c->contiguous = 0; /* differing type signatures: only the generic paths */
    }
    in.coll = c->coll;
    in.bytes = c->bytes;
    in.dtype = c->dt;
    in.contiguous = c->contiguous;
    in.op = c->opc;
    in.device = is_dev;
    in.caps = 0;
    in.tier = (tlmpi_tier_t)TLMPI_ENV_I(TIER);
    if (TLMPI_UNLIKELY(TLMPI_ENV_I(VERIFY_UNIFORM))) {
        verify_uniform(c, mem_sig, "memory type");
    }
    if (!is_dev) {
        path = tlmpi_select_path(&in);
        if (path == TLMPI_PATH_HOSTOP) {
            rc = call_pmpi(c, rtype, rcount, tlmpi_half_op(c->dt, c->opc));
        } else {
            rc = call_pmpi(c, rtype, rcount, c->op);
        }
        if (rc == MPI_SUCCESS) {
            tlmpi_stat_add(c->coll, path, c->bytes);
        }
        return rc;
    }
    tc = tlmpi_comm_get(c->comm);
    if (tc && tc->eligible) {
        /* a lazily created NCCL comm that failed on some rank is off for the comm as a whole */
        in.caps = tc->caps & ~(tc->nccl_failed ? (unsigned)TLMPI_CAP_NCCL : 0u);
    } else {
        /* not accelerated (intercomm, irregular): still never hand PMPI a device pointer */
        in.caps = tlmpi_g.mpi_cuda_aware ? TLMPI_CAP_MPI_CUDA_AWARE : 0;
    }
    path = tlmpi_select_path(&in);
    if (TLMPI_UNLIKELY(TLMPI_ENV_I(VERIFY_UNIFORM))) {
        verify_uniform(c, (int)path, "path");
    }
    for (;;) {
        if (path == TLMPI_PATH_PASSTHROUGH) {
            /* zero bytes, or a CUDA-aware MPI: still never a built-in op on a half type */
            rc = call_pmpi(c, rtype, rcount, tlmpi_tier_pmpi_op(c));
            if (rc == MPI_SUCCESS) {
                tlmpi_stat_add(c->coll, path, c->bytes);
            }
            return rc;
        }
        st = tlmpi_tier_run(tc, path, c);
        if (st == TLMPI_OK) {
            tlmpi_stat_add(c->coll, path, c->bytes);
            return MPI_SUCCESS;
        }
        if (st != TLMPI_ERR_UNSUPPORTED || path == TLMPI_PATH_STAGING) {
            return tlmpi_core_error(c->comm, st, tlmpi_coll_name(c->coll));
        }
        /* the chosen tier declined before communicating (on every rank alike): next tier */
        path = TLMPI_PATH_STAGING;
    }
}

/* Memory type and device of both buffers. Send and receive buffers carved from one allocation
 * (a framework's memory pool) cost one validating driver call, not two. */
static inline void classify_buffers(tlmpi_call_t *c)
{
    tlmpi_mem_seen_t seen = { 0, 0, TLMPI_MEM_HOST, -1 };

    c->rmem = tlmpi_mem_type_in_call(c->rbuf, &c->rdev, &seen);
    c->smem = c->sbuf == MPI_IN_PLACE ? TLMPI_MEM_HOST : tlmpi_mem_type_in_call(c->sbuf, &c->sdev, &seen);
}

static inline int coll_entry(tlmpi_call_t *c, MPI_Datatype rtype, MPI_Count rcount)
{
    int rc;

    if (TLMPI_UNLIKELY(!tlmpi_core_ready()) || TLMPI_UNLIKELY(!tlmpi_g.enabled) ||
        !(tlmpi_g.coll_mask & (1u << c->coll))) {
        goto passthrough;
    }
    if (TLMPI_UNLIKELY(c->coll != TLMPI_COLL_ALLGATHER && is_half_type(c->dtype))) {
        c->smem = c->rmem = TLMPI_MEM_HOST;
        if (tlmpi_g.gpu_count > 0) {
            classify_buffers(c);
        }
        return coll_slow(c, rtype, rcount);
    }
    if (tlmpi_g.gpu_count == 0 || c->count <= 0) {
        goto passthrough;
    }
    classify_buffers(c);
    if (tlmpi_mem_is_device(c->smem) || tlmpi_mem_is_device(c->rmem) ||
        TLMPI_UNLIKELY(TLMPI_ENV_I(VERIFY_UNIFORM))) { /* host calls too, so a mismatch is caught */
        return coll_slow(c, rtype, rcount);
    }
passthrough:
    rc = call_pmpi(c, rtype, rcount, c->op);
    if (TLMPI_LIKELY(rc == MPI_SUCCESS)) {
        tlmpi_stat_add(c->coll, TLMPI_PATH_PASSTHROUGH, call_bytes(c->count, c->dtype));
    }
    return rc;
}

/* The host fast path, decided from tlmpi_g alone (one cache line) before a tlmpi_call_t is built:
 * 1 when coll_entry would certainly hand the call to PMPI_* unchanged (tlmpi off or this collective
 * not taken over; or no GPU in the process and not a half-type reduction). 0 sends the call through
 * coll_entry, which makes the full decision (lazy init, half types, pointer classification). */
static inline __attribute__((always_inline)) int fast_passthrough(tlmpi_coll_t coll, MPI_Datatype dt)
{
    if (TLMPI_UNLIKELY(tlmpi_g.state != TLMPI_STATE_READY)) {
        return 0;
    }
    if (TLMPI_UNLIKELY(!tlmpi_g.enabled) || !(tlmpi_g.coll_mask & (1u << coll))) {
        return 1;
    }
    if (tlmpi_g.gpu_count != 0) {
        return 0;
    }
    return coll == TLMPI_COLL_ALLGATHER || !is_half_type(dt);
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

/* Everything but the fast path: build the call record and run coll_entry. Kept out of line so that
 * the entry points' fast path needs no stack frame for the record. */
static __attribute__((noinline)) int coll_enter(tlmpi_coll_t coll, const void *sbuf, void *rbuf,
                                                MPI_Count count, MPI_Datatype dtype, MPI_Op op,
                                                MPI_Comm comm, int large, MPI_Datatype rtype,
                                                MPI_Count rcount)
{
    tlmpi_call_t c;

    c.coll = coll;
    c.sbuf = sbuf;
    c.rbuf = rbuf;
    c.count = count;
    c.dtype = dtype;
    c.op = op;
    c.comm = comm;
    c.large = large;
    c.sdev = c.rdev = -1;
    return coll_entry(&c, rtype, rcount);
}

TLMPI_EXPORT int MPI_Allreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dtype,
                               MPI_Op op, MPI_Comm comm)
{
    if (TLMPI_LIKELY(fast_passthrough(TLMPI_COLL_ALLREDUCE, dtype))) {
        return fast_done(PMPI_Allreduce(sbuf, rbuf, count, dtype, op, comm), TLMPI_COLL_ALLREDUCE,
                         count, dtype);
    }
    return coll_enter(TLMPI_COLL_ALLREDUCE, sbuf, rbuf, count, dtype, op, comm, 0, dtype, count);
}

TLMPI_EXPORT int MPI_Reduce_scatter_block(const void *sbuf, void *rbuf, int recvcount,
                                          MPI_Datatype dtype, MPI_Op op, MPI_Comm comm)
{
    if (TLMPI_LIKELY(fast_passthrough(TLMPI_COLL_REDUCE_SCATTER_BLOCK, dtype))) {
        return fast_done(PMPI_Reduce_scatter_block(sbuf, rbuf, recvcount, dtype, op, comm),
                         TLMPI_COLL_REDUCE_SCATTER_BLOCK, recvcount, dtype);
    }
    return coll_enter(TLMPI_COLL_REDUCE_SCATTER_BLOCK, sbuf, rbuf, recvcount, dtype, op, comm, 0,
                      dtype, recvcount);
}

/* With MPI_IN_PLACE the own block is already in recvbuf and sendcount/sendtype are ignored by MPI:
 * the call is described by the receive side. */
TLMPI_EXPORT int MPI_Allgather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
                               int rcount, MPI_Datatype rtype, MPI_Comm comm)
{
    int in_place = sbuf == MPI_IN_PLACE;

    if (TLMPI_LIKELY(fast_passthrough(TLMPI_COLL_ALLGATHER, rtype))) {
        return fast_done(PMPI_Allgather(sbuf, scount, stype, rbuf, rcount, rtype, comm), TLMPI_COLL_ALLGATHER,
                         in_place ? rcount : scount, in_place ? rtype : stype);
    }
    return coll_enter(TLMPI_COLL_ALLGATHER, sbuf, rbuf, in_place ? rcount : scount, in_place ? rtype : stype,
                      MPI_OP_NULL, comm, 0, rtype, rcount);
}

#ifdef HAVE_PMPI_ALLREDUCE_C
TLMPI_EXPORT int MPI_Allreduce_c(const void *sbuf, void *rbuf, MPI_Count count, MPI_Datatype dtype,
                                 MPI_Op op, MPI_Comm comm)
{
    if (TLMPI_LIKELY(fast_passthrough(TLMPI_COLL_ALLREDUCE, dtype))) {
        return fast_done(PMPI_Allreduce_c(sbuf, rbuf, count, dtype, op, comm), TLMPI_COLL_ALLREDUCE,
                         count, dtype);
    }
    return coll_enter(TLMPI_COLL_ALLREDUCE, sbuf, rbuf, count, dtype, op, comm, 1, dtype, count);
}
#endif

#ifdef HAVE_PMPI_REDUCE_SCATTER_BLOCK_C
TLMPI_EXPORT int MPI_Reduce_scatter_block_c(const void *sbuf, void *rbuf, MPI_Count recvcount,
                                            MPI_Datatype dtype, MPI_Op op, MPI_Comm comm)
{
    if (TLMPI_LIKELY(fast_passthrough(TLMPI_COLL_REDUCE_SCATTER_BLOCK, dtype))) {
        return fast_done(PMPI_Reduce_scatter_block_c(sbuf, rbuf, recvcount, dtype, op, comm),
                         TLMPI_COLL_REDUCE_SCATTER_BLOCK, recvcount, dtype);
    }
    return coll_enter(TLMPI_COLL_REDUCE_SCATTER_BLOCK, sbuf, rbuf, recvcount, dtype, op, comm, 1,
                      dtype, recvcount);
}
#endif

#ifdef HAVE_PMPI_ALLGATHER_C
TLMPI_EXPORT int MPI_Allgather_c(const void *sbuf, MPI_Count scount, MPI_Datatype stype, void *rbuf,
                                 MPI_Count rcount, MPI_Datatype rtype, MPI_Comm comm)
{
    int in_place = sbuf == MPI_IN_PLACE;

    if (TLMPI_LIKELY(fast_passthrough(TLMPI_COLL_ALLGATHER, rtype))) {
        return fast_done(PMPI_Allgather_c(sbuf, scount, stype, rbuf, rcount, rtype, comm), TLMPI_COLL_ALLGATHER,
                         in_place ? rcount : scount, in_place ? rtype : stype);
    }
    return coll_enter(TLMPI_COLL_ALLGATHER, sbuf, rbuf, in_place ? rcount : scount, in_place ? rtype : stype,
                      MPI_OP_NULL, comm, 1, rtype, rcount);
}
#endif
