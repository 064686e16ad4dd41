/*
 * staging: the host-staging tier, the correctness fallback for device buffers. Device data is
 * copied to pinned host memory, the real MPI runs on host memory (PMPI_*), the result is copied
 * back. A device pointer never reaches PMPI_* from here.
 *
 * Two paths:
 *  - pipeline (contiguous datatypes, device buffers): a process-wide pinned pool
 *    (TLMPI_STAGING_POOL) cut into slots of TLMPI_STAGING_CHUNK bytes (2..4 used). For chunk k the
 *    host runs PMPI on slot k%S while the copy engines already move chunk k+1 device->host (stream
 *    1) and chunk k-1 host->device (stream 2): two streams, so both directions run at once. One
 *    event per slot says a chunk has landed on the host; a second event per slot says its
 *    host->device copy is done, and the device->host copy that reuses the slot waits for it.
 *    Allreduce chunks the vector; reduce_scatter_block and allgather chunk each rank's block and
 *    move the p pieces of a chunk with one 2D copy, then call PMPI in place on the slot.
 *  - generic (derived or non-contiguous datatypes, mixed host/device pairs, a busy pool, any op):
 *    the whole true-extent span of each device buffer is staged at once (pool or malloc), gaps of an
 *    output type are preserved by copying the output span in first.
 * Half types with arithmetic ops are reduced by tlmpi's own MPI_Ops (half.c), since MPIs cannot
 * (MPICH aborts on MPIX_C_FLOAT16; nobody has bfloat16). User ops run unchanged on host memory.
 *
 * The pool is taken with trylock: a second thread (another comm) that finds it busy uses malloc'd
 * buffers instead of waiting, since waiting could deadlock two threads that are each inside a
 * collective the other rank has not entered yet. The pool is allocated when the first plan is built
 * (fault site pool_alloc); a comm uses it only where every rank has it (TLMPI_CAP_STAGING_POOL),
 * else pageable memory. Streams and events are the comm's own (tc->ctx); a comm without them (its
 * streams could not be created on some rank) stages whole spans on the legacy default stream.
 * Every wait is bounded (TLMPI_TIMEOUT).
 */
#include "config.h"
#include "tier.h"
#include "global.h"
#include "env.h"
#include "classify.h"
#include "cudawrap.h"
#include "stream.h"
#include "log.h"
#include "checks.h"

#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The caller's collective on host memory: an error the MPI returns goes back to the caller as the
 * MPI gave it (*rc_p; the MPI's error handler already ran), unlogged, since the MPI rejects the
 * caller's own arguments here (an op invalid for the type, overlapping buffers, ...). */
#define STAGING_MPI_GOTO(_call, _st, _rc_p, _label)                                          \
    do {                                                                                     \
        int _rc = (_call);                                                                   \
        if (TLMPI_UNLIKELY(_rc != MPI_SUCCESS)) {                                            \
            *(_rc_p) = _rc;                                                                  \
            (_st) = TLMPI_ERR_MPI;                                                           \
            goto _label;                                                                     \
        }                                                                                    \
    } while (0)

#ifdef HAVE_CUDA
#include <cuda_runtime_api.h>

#define MAX_SLOTS 4
#define MIN_CHUNK ((size_t)4096)
#define MAX_CHUNK ((size_t)1 << 30)

static pthread_mutex_t pool_init_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static char *pool;
static size_t pool_bytes;
static int nslots, pool_tried;
static char pool_why[160];

/* Slot (chunk) size: a function of TLMPI_STAGING_CHUNK alone (ALL_EQ), because the number of
 * PMPI calls a pipelined collective makes depends on it and must match on every rank. */
static size_t chunk_bytes(void)
{
    size_t chunk = (size_t)TLMPI_ENV_I(STAGING_CHUNK);

    return chunk < MIN_CHUNK ? MIN_CHUNK : chunk > MAX_CHUNK ? MAX_CHUNK : chunk;
}

static void pool_setup(void)
{
    size_t chunk = chunk_bytes(), total = (size_t)TLMPI_ENV_I(STAGING_POOL);
    cudaError_t e;
    int injected;

    pthread_mutex_lock(&pool_init_lock);
    if (pool_tried) {
        pthread_mutex_unlock(&pool_init_lock);
        return;
    }
    if (total < 2 * chunk) {
        total = 2 * chunk; /* the pipeline needs two slots; TLMPI_STAGING_POOL is raised to that */
    }
    injected = tlmpi_fault_hit(POOL_ALLOC);
    e = injected ? cudaErrorMemoryAllocation : cudaMallocHost((void **)&pool, total);
    if (e != cudaSuccess) {
        snprintf(pool_why, sizeof(pool_why), "cannot allocate the %zu-byte pinned staging pool: %s%s", total,
                 cudaGetErrorString(e), injected ? " (injected: TLMPI_FAULT=pool_alloc)" : "");
        tlmpi_info(MEM, "%s", pool_why);
        (void)cudaGetLastError();
        pool = NULL;
    } else {
        pool_bytes = total;
        nslots = (int)(total / chunk) > MAX_SLOTS ? MAX_SLOTS : (int)(total / chunk);
        tlmpi_info(MEM, "staging pool %zu bytes pinned, %d slots of %zu", total, nslots, chunk);
    }
    __atomic_store_n(&pool_tried, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&pool_init_lock);
}

/* 1 with the pool held, 0 if there is none or another thread has it */
static int pool_acquire(void)
{
    return pool && pthread_mutex_trylock(&pool_lock) == 0;
}

static void pool_release(void)
{
    pthread_mutex_unlock(&pool_lock);
}

static void staging_finalize(void)
{
    pthread_mutex_lock(&pool_init_lock);
    if (pool) {
        cudaFreeHost(pool);
        (void)cudaGetLastError();
        pool = NULL;
    }
    pool_bytes = 0;
    nslots = 0;
    pool_tried = 0;
    pthread_mutex_unlock(&pool_init_lock);
}

/* ---- PMPI with MPI_Count (large-count forms where the MPI has them) ---- */

static int pmpi_allreduce(const void *s, void *r, MPI_Count n, MPI_Datatype t, MPI_Op op, MPI_Comm comm)
{
    if (n <= INT_MAX) {
        return PMPI_Allreduce(s, r, (int)n, t, op, comm);
    }
#ifdef HAVE_PMPI_ALLREDUCE_C
    return PMPI_Allreduce_c(s, r, n, t, op, comm);
#else
    return MPI_ERR_COUNT;
#endif
}

static int pmpi_rsb(const void *s, void *r, MPI_Count n, MPI_Datatype t, MPI_Op op, MPI_Comm comm)
{
    if (n <= INT_MAX) {
        return PMPI_Reduce_scatter_block(s, r, (int)n, t, op, comm);
    }
#ifdef HAVE_PMPI_REDUCE_SCATTER_BLOCK_C
    return PMPI_Reduce_scatter_block_c(s, r, n, t, op, comm);
#else
    return MPI_ERR_COUNT;
#endif
}

static int pmpi_allgather(const void *s, MPI_Count sn, MPI_Datatype st, void *r, MPI_Count rn,
                          MPI_Datatype rt, MPI_Comm comm)
{
    if (sn <= INT_MAX && rn <= INT_MAX) {
        return PMPI_Allgather(s, (int)sn, st, r, (int)rn, rt, comm);
    }
#ifdef HAVE_PMPI_ALLGATHER_C
    return PMPI_Allgather_c(s, sn, st, r, rn, rt, comm);
#else
    return MPI_ERR_COUNT;
#endif
}

/* ---- pipeline ---- */

#define SLOT(_k) (base + (size_t)((_k) % S) * slot)
#define EV(_k) ((cudaEvent_t)ctx->events[(_k) % S])
#define OUTEV(_k) ((cudaEvent_t)ctx->events[TLMPI_GPU_MAX_EVENTS / 2 + (_k) % S])

/* chunk elements per slot: the slot holds `pieces` chunks (1 for allreduce, p for the others) */
static size_t pipe_chunk_elems(size_t esz, int pieces)
{
    return chunk_bytes() / ((size_t)pieces * esz);
}

static tlmpi_status_t pipe_run(const tlmpi_call_t *c, tlmpi_gpu_ctx_t *ctx, MPI_Op op, int p, int rank,
                               char *base, int S, const tlmpi_wait_who_t *who, int *mpi_rc_p)
{
    tlmpi_status_t status = TLMPI_OK;
    cudaStream_t s = (cudaStream_t)ctx->stream, s2 = (cudaStream_t)ctx->stream2;
    size_t slot = chunk_bytes(), esz = (size_t)c->dt_size, n = (size_t)c->count;
    int pieces = c->coll == TLMPI_COLL_ALLREDUCE ? 1 : p;
    size_t ce = pipe_chunk_elems(esz, pieces), nch = (n + ce - 1) / ce, k;
    char *out = c->rbuf;
    const char *in;

    if (c->coll == TLMPI_COLL_ALLGATHER) {
        in = c->sbuf == MPI_IN_PLACE ? out + (size_t)rank * n * esz : c->sbuf;
    } else {
        in = c->sbuf == MPI_IN_PLACE ? out : c->sbuf;
    }
#define CN(_k) ((_k) == nch - 1 ? n - (_k) * ce : ce)
    for (k = 0; k <= nch; k++) {
        /* enqueue the device->host copy of chunk k (one ahead of the PMPI call on chunk k-1) */
        if (k < nch) {
            size_t cn = CN(k), off = k * ce * esz;

            if (k >= (size_t)S) {
                /* the slot's previous chunk must have left for the device before it is refilled */
                TLMPI_CUDA_CHECK_GOTO(cudaStreamWaitEvent(s, OUTEV(k), 0), status, out);
            }
            switch (c->coll) {
            case TLMPI_COLL_ALLREDUCE:
                TLMPI_CUDA_CHECK_GOTO(cudaMemcpyAsync(SLOT(k), in + off, cn * esz, cudaMemcpyDefault, s), status, out);
                break;
            case TLMPI_COLL_REDUCE_SCATTER_BLOCK:
                TLMPI_CUDA_CHECK_GOTO(cudaMemcpy2DAsync(SLOT(k), cn * esz, in + off, n * esz, cn * esz, (size_t)p,
                                           cudaMemcpyDefault, s), status, out);
                break;
            default:
                TLMPI_CUDA_CHECK_GOTO(cudaMemcpyAsync(SLOT(k) + (size_t)rank * cn * esz, in + off, cn * esz,
                                         cudaMemcpyDefault, s), status, out);
                break;
            }
            TLMPI_CUDA_CHECK_GOTO(cudaEventRecord(EV(k), s), status, out);
        }
        if (k > 0) {
            size_t j = k - 1, cn = CN(j), off = j * ce * esz;

            TLMPI_CUDA_CHECK_GOTO((cudaError_t)tlmpi_gpu_event_wait(EV(j), who, "a chunk's copy to the host"), status, out);
            switch (c->coll) {
            case TLMPI_COLL_ALLREDUCE:
                STAGING_MPI_GOTO(PMPI_Allreduce(MPI_IN_PLACE, SLOT(j), (int)cn, c->dtype, op, c->comm), status, mpi_rc_p, out);
                TLMPI_CUDA_CHECK_GOTO(cudaMemcpyAsync(out + off, SLOT(j), cn * esz, cudaMemcpyDefault, s2), status, out);
                break;
            case TLMPI_COLL_REDUCE_SCATTER_BLOCK:
                STAGING_MPI_GOTO(PMPI_Reduce_scatter_block(MPI_IN_PLACE, SLOT(j), (int)cn, c->dtype, op, c->comm), status,
                                 mpi_rc_p, out);
                TLMPI_CUDA_CHECK_GOTO(cudaMemcpyAsync(out + off, SLOT(j), cn * esz, cudaMemcpyDefault, s2), status, out);
                break;
            default:
                STAGING_MPI_GOTO(PMPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, SLOT(j), (int)cn, c->dtype, c->comm), status,
                                 mpi_rc_p, out);
                TLMPI_CUDA_CHECK_GOTO(cudaMemcpy2DAsync(out + off, n * esz, SLOT(j), cn * esz, cn * esz, (size_t)p,
                                           cudaMemcpyDefault, s2), status, out);
                break;
            }
            TLMPI_CUDA_CHECK_GOTO(cudaEventRecord(OUTEV(j), s2), status, out);
        }
    }
#undef CN
out:
    if ((tlmpi_gpu_sync(s, who, "the staging copies to the host") != cudaSuccess ||
         tlmpi_gpu_sync(s2, who, "the staging copies to the device") != cudaSuccess) &&
        status == TLMPI_OK) {
        tlmpi_error(CUDA, "staging stream failed: %s", cudaGetErrorString(cudaGetLastError()));
        status = TLMPI_ERR_CUDA;
    }
    (void)cudaGetLastError();
    return status;
}

/* ---- generic: whole true-extent spans ---- */

typedef struct {
    MPI_Aint off;   /* byte offset of the span's first byte from the buffer pointer */
    size_t bytes;   /* span length */
    int gaps;       /* the span has bytes the datatype does not cover */
} span_t;

static int type_span(MPI_Datatype t, MPI_Count count, span_t *sp)
{
    MPI_Aint lb, ext, tlb, text;
    int size;

    memset(sp, 0, sizeof(*sp));
    if (count <= 0) {
        return 0;
    }
    if (PMPI_Type_get_extent(t, &lb, &ext) != MPI_SUCCESS ||
        PMPI_Type_get_true_extent(t, &tlb, &text) != MPI_SUCCESS || PMPI_Type_size(t, &size) != MPI_SUCCESS) {
        return -1;
    }
    if (ext >= 0) {
        sp->off = tlb;
        sp->bytes = (size_t)(count - 1) * (size_t)ext + (size_t)text;
    } else {
        sp->off = tlb + (MPI_Aint)(count - 1) * ext;
        sp->bytes = (size_t)(count - 1) * (size_t)(-ext) + (size_t)text;
    }
    sp->gaps = sp->bytes != (size_t)count * (size_t)size;
    return 0;
}

/* host scratch for one span: from the pool (carved at *pool_used) or malloc */
typedef struct {
    char *mem;      /* span's first byte */
    int malloced;
} hbuf_t;

static int hbuf_get(hbuf_t *h, size_t bytes, int have_pool, size_t *pool_used)
{
    if (h->mem) {
        return 0; /* a persistent request's own, reused at every start */
    }
    h->malloced = 0;
    if (have_pool && *pool_used + bytes <= pool_bytes) {
        h->mem = pool + *pool_used;
        *pool_used += (bytes + 255) & ~(size_t)255;
        return 0;
    }
    h->mem = malloc(bytes ? bytes : 1);
    h->malloced = 1;
    return h->mem ? 0 : -1;
}

static void hbuf_put(hbuf_t *h)
{
    if (h->malloced) {
        free(h->mem);
    }
    h->mem = NULL;
}

/* The siblings' spans (call_spans): only what is significant on this rank (a reduce's recvbuf at its
 * root, a bcast's result off the root), allgatherv's receive span from its first to its last block
 * (gaps: bytes between them, kept by copying the span in first). */
static int sibling_spans(const tlmpi_call_t *c, int p, span_t *ss, span_t *rs, span_t *os)
{
    memset(ss, 0, sizeof(*ss));
    memset(rs, 0, sizeof(*rs));
    memset(os, 0, sizeof(*os));
    switch (c->coll) {
    case TLMPI_COLL_ALLGATHERV: {
        MPI_Aint lb, ext;
        intptr_t lo = 0, hi = 0;
        size_t covered = 0;
        int i, gaps = 0, any = 0;

        if ((!c->in_place && type_span(c->dtype, c->count, ss)) ||
            PMPI_Type_get_extent(c->rtype, &lb, &ext) != MPI_SUCCESS) {
            return -1;
        }
        for (i = 0; i < c->vn; i++) {
            MPI_Count n = tlmpi_call_vcount(c, i);
            span_t b;
            intptr_t off;

            if (n <= 0) {
                continue;
            }
            if (type_span(c->rtype, n, &b)) {
                return -1;
            }
            off = (intptr_t)tlmpi_call_vdispl(c, i) * (intptr_t)ext + (intptr_t)b.off;
            lo = !any || off < lo ? off : lo;
            hi = !any || off + (intptr_t)b.bytes > hi ? off + (intptr_t)b.bytes : hi;
            any = 1;
            covered += b.bytes;
            gaps |= b.gaps;
        }
        if (any) {
            /* from rbuf on where the first block lies beyond it: an MPI that misplaces a block there
             * (MPICH 4.0.2's allgatherv on one rank ignores the displacement) writes into the span */
            lo = lo > 0 ? 0 : lo;
            rs->off = (MPI_Aint)lo;
            rs->bytes = (size_t)(hi - lo);
            rs->gaps = gaps || covered != rs->bytes;
        }
        *os = *rs;
        return 0;
    }
    case TLMPI_COLL_REDUCE_SCATTER: {
        MPI_Count own = c->rank < c->vn ? tlmpi_call_vcount(c, c->rank) : 0;

        return type_span(c->dtype, c->vtotal, ss) || type_span(c->dtype, c->in_place ? c->vtotal : own, rs) ||
                       type_span(c->dtype, own, os)
                   ? -1
                   : 0;
    }
    case TLMPI_COLL_BCAST:
        /* the buffer is rbuf (in place): copied in, and out again except at the root */
        if (type_span(c->dtype, c->count, rs)) {
            return -1;
        }
        if (!(c->inter ? c->root == MPI_ROOT : c->rank == c->root)) {
            *os = *rs;
        }
        return 0;
    case TLMPI_COLL_REDUCE:
        if ((!c->in_place && type_span(c->dtype, c->count, ss)) || (c->root_here && type_span(c->dtype, c->count, rs))) {
            return -1;
        }
        *os = *rs;
        return 0;
    default: /* alltoall: a block per rank (of the remote group on an intercommunicator) */
        return type_span(c->dtype, c->count * p, ss) || type_span(c->rtype, c->rcount * p, rs) ||
                       type_span(c->rtype, c->rcount * p, os)
                   ? -1
                   : 0;
    }
}

/* The receive buffer the MPI gets: a reduce's off its root is NULL (not significant there; the
 * caller's may be a device pointer, which a non-CUDA-aware MPI must not see) */
static inline char *sibling_rbuf(const tlmpi_call_t *c, char *rp)
{
    return c->coll == TLMPI_COLL_REDUCE && !c->root_here ? NULL : rp;
}

/* The spans of a call on p ranks: of the send buffer (ss), of the receive buffer as staged (rs: in
 * place, reduce_scatter_block's input lives there) and of the output within it (os). -1 when the MPI
 * cannot describe a datatype. */
static int call_spans(const tlmpi_call_t *c, int p, span_t *ss, span_t *rs, span_t *os)
{
    MPI_Datatype rtype = c->coll == TLMPI_COLL_ALLGATHER ? c->rtype : c->dtype;
    MPI_Count rcount_span, scount_span, out_count;

    if (tlmpi_coll_sibling(c->coll)) {
        return sibling_spans(c, p, ss, rs, os);
    }
    switch (c->coll) {
    case TLMPI_COLL_ALLREDUCE:
        scount_span = rcount_span = out_count = c->count;
        break;
    case TLMPI_COLL_REDUCE_SCATTER_BLOCK:
        scount_span = c->count * p;
        rcount_span = c->sbuf == MPI_IN_PLACE ? c->count * p : c->count;
        out_count = c->count;
        break;
    default:
        scount_span = c->count;
        rcount_span = out_count = c->rcount * p;
        break;
    }
    return type_span(c->dtype, scount_span, ss) || type_span(rtype, rcount_span, rs) ||
                   type_span(rtype, out_count, os)
               ? -1
               : 0;
}

/* Host copies of the device spans of call c: the send span (hs) and the receive span (hr, with the
 * input in place and the bytes between an output type's pieces copied in), enqueued on s, and the
 * pointers PMPI gets (*sp_p, *rp_p; host buffers as they are). Device send and receive spans that
 * overlap (not MPI_IN_PLACE) are staged as one span, so the MPI gets the same overlap on host
 * memory as the caller made on the device and answers it as on host buffers. copy 0: the host
 * buffers only, nothing copied (stand-ins for an argument check). */
static tlmpi_status_t stage_in(const tlmpi_call_t *c, const span_t *ss, const span_t *rs, int have_pool,
                               size_t *pool_used, cudaStream_t s, hbuf_t *hs, hbuf_t *hr, const char **sp_p,
                               char **rp_p, int copy)
{
    int in_place = c->sbuf == MPI_IN_PLACE;
    int sdev = !in_place && tlmpi_mem_is_device(c->smem), rdev = tlmpi_mem_is_device(c->rmem);
    uintptr_t s0 = (uintptr_t)c->sbuf + (uintptr_t)ss->off, r0 = (uintptr_t)c->rbuf + (uintptr_t)rs->off;
    uintptr_t s1 = s0 + ss->bytes, r1 = r0 + rs->bytes;

    *sp_p = c->sbuf;
    *rp_p = c->rbuf;
    if (sdev && rdev && ss->bytes && rs->bytes && s0 < r1 && r0 < s1) {
        uintptr_t lo = s0 < r0 ? s0 : r0, hi = s1 > r1 ? s1 : r1;

        if (hbuf_get(hr, hi - lo, have_pool, pool_used)) {
            return TLMPI_ERR_NO_MEMORY;
        }
        if (copy) {
            TLMPI_CUDA_CHECK(cudaMemcpyAsync(hr->mem, (const void *)lo, hi - lo, cudaMemcpyDefault, s));
        }
        *sp_p = hr->mem + (ptrdiff_t)((uintptr_t)c->sbuf - lo);
        *rp_p = hr->mem + (ptrdiff_t)((uintptr_t)c->rbuf - lo);
        return TLMPI_OK;
    }
    if (sdev) {
        if (hbuf_get(hs, ss->bytes, have_pool, pool_used)) {
            return TLMPI_ERR_NO_MEMORY;
        }
        if (copy) {
            TLMPI_CUDA_CHECK(cudaMemcpyAsync(hs->mem, (const char *)c->sbuf + ss->off, ss->bytes, cudaMemcpyDefault, s));
        }
        *sp_p = hs->mem - ss->off;
    }
    if (rdev) {
        if (hbuf_get(hr, rs->bytes, have_pool, pool_used)) {
            return TLMPI_ERR_NO_MEMORY;
        }
        /* the input (in place) or the bytes between the datatype's pieces must survive */
        if (copy && (in_place || rs->gaps)) {
            TLMPI_CUDA_CHECK(cudaMemcpyAsync(hr->mem, (char *)c->rbuf + rs->off, rs->bytes, cudaMemcpyDefault, s));
        }
        *rp_p = hr->mem - rs->off;
    }
    return TLMPI_OK;
}

static tlmpi_status_t generic_run(const tlmpi_call_t *c, tlmpi_gpu_ctx_t *ctx, MPI_Op op, int p, int have_pool,
                                  const tlmpi_wait_who_t *who, int *mpi_rc_p)
{
    tlmpi_status_t status = TLMPI_OK;
    cudaStream_t s = ctx ? (cudaStream_t)ctx->stream : (cudaStream_t)0; /* 0: the legacy stream */
    int rdev = tlmpi_mem_is_device(c->rmem);
    span_t ss, rs, os;
    hbuf_t hs = { NULL, 0 }, hr = { NULL, 0 };
    size_t pool_used = 0;
    const char *sp;  /* what PMPI gets */
    char *rp;

    if (call_spans(c, p, &ss, &rs, &os)) {
        return TLMPI_ERR_MPI;
    }
    TLMPI_CHECK_GOTO(stage_in(c, &ss, &rs, have_pool, &pool_used, s, &hs, &hr, &sp, &rp, 1), status, out);
    rp = sibling_rbuf(c, rp);
    TLMPI_CUDA_CHECK_GOTO((cudaError_t)tlmpi_gpu_sync(s, who, "the input's copy to the host"), status, out);
    switch (tlmpi_coll_sibling(c->coll) ? TLMPI_COLL_COUNT : c->coll) {
    case TLMPI_COLL_COUNT: { /* the siblings: the caller's call on the host copies */
        tlmpi_call_t h = *c;

        h.sbuf = sp;
        h.rbuf = rp;
        STAGING_MPI_GOTO(tlmpi_call_pmpi(&h, op), status, mpi_rc_p, out);
        break;
    }
    case TLMPI_COLL_ALLREDUCE:
        STAGING_MPI_GOTO(pmpi_allreduce(sp, rp, c->count, c->dtype, op, c->comm), status, mpi_rc_p, out);
        break;
    case TLMPI_COLL_REDUCE_SCATTER_BLOCK:
        STAGING_MPI_GOTO(pmpi_rsb(sp, rp, c->count, c->dtype, op, c->comm), status, mpi_rc_p, out);
        break;
    default:
        STAGING_MPI_GOTO(pmpi_allgather(sp, c->count, c->dtype, rp, c->rcount, c->rtype, c->comm), status, mpi_rc_p,
                         out);
        break;
    }
    if (rdev && os.bytes) {
        /* the output span starts where the receive span starts (same type, same lb) */
        TLMPI_CUDA_CHECK_GOTO(cudaMemcpyAsync((char *)c->rbuf + os.off, rp + os.off, os.bytes, cudaMemcpyDefault, s),
                              status, out);
        TLMPI_CUDA_CHECK_GOTO((cudaError_t)tlmpi_gpu_sync(s, who, "the result's copy to the device"), status, out);
    }
out:
    if (status != TLMPI_OK) {
        tlmpi_gpu_sync(s, who, "the staging copies after a failure");
        (void)cudaGetLastError();
    }
    hbuf_put(&hs);
    hbuf_put(&hr);
    return status;
}

static unsigned staging_local_caps(tlmpi_tier_comm_t *tc, unsigned *want_p, char *why, size_t len)
{
    (void)tc;
    if (tlmpi_g.gpu_count <= 0) {
        return 0;
    }
    if (!__atomic_load_n(&pool_tried, __ATOMIC_ACQUIRE)) {
        pool_setup();
    }
    *want_p = TLMPI_CAP_STAGING_POOL;
    if (!pool) {
        snprintf(why, len, "%s", pool_why);
        return 0;
    }
    return TLMPI_CAP_STAGING_POOL;
}

static tlmpi_status_t staging_run(tlmpi_tier_comm_t *tc, const tlmpi_call_t *c, int algo, int *mpi_rc_p)
{
    tlmpi_status_t status;
    tlmpi_gpu_ctx_t *ctx = tc->ctx;
    tlmpi_wait_who_t who = tlmpi_tier_who(tc, c, "staging");
    int dev = ctx ? ctx->dev : c->rdev >= 0 ? c->rdev : c->sdev, saved, have_pool, pipe;

    (void)algo;
    if (dev < 0) {
        dev = tlmpi_gpu_current_device();
    }
    if (tlmpi_gpu_enter_device(dev, &saved) != 0) {
        tlmpi_error(CUDA, "cannot make device %d current", dev);
        return TLMPI_ERR_CUDA;
    }
    if (ctx && tlmpi_gpu_ctx_begin(ctx) != cudaSuccess) {
        tlmpi_error(CUDA, "%s: ordering after the caller's stream work failed", tlmpi_coll_name(c->coll));
        (void)cudaGetLastError();
        tlmpi_gpu_restore_device(saved);
        return TLMPI_ERR_CUDA;
    }
    /* the pool only where every rank of the comm has one (so every rank stages alike) */
    have_pool = (tc->caps & TLMPI_CAP_STAGING_POOL) && pool_acquire();
    /* The pipeline shape (number of PMPI calls) is a function of rank-uniform values only: count,
     * datatype, comm size, TLMPI_STAGING_CHUNK, the memory types (uniform by contract) and the
     * comm's agreed capabilities. Whether this rank got the pool now is not uniform, so it only
     * decides where the slots live. */
    pipe = ctx && !tlmpi_coll_sibling(c->coll) && c->contiguous && c->dt_size > 0 && tlmpi_call_all_device(c) &&
           !c->aliased &&
           pipe_chunk_elems((size_t)c->dt_size, c->coll == TLMPI_COLL_ALLREDUCE ? 1 : c->size) > 0;
    if (pipe && have_pool) {
        status = pipe_run(c, ctx, c->pmpi_op, c->size, c->rank, pool, nslots, &who, mpi_rc_p);
    } else if (pipe) {
        char *tmp = malloc(2 * chunk_bytes());

        if (!tmp) {
            status = TLMPI_ERR_NO_MEMORY;
        } else {
            status = pipe_run(c, ctx, c->pmpi_op, c->size, c->rank, tmp, 2, &who, mpi_rc_p);
            free(tmp);
        }
    } else {
        status = generic_run(c, ctx, c->pmpi_op, c->size, have_pool, &who, mpi_rc_p);
    }
    if (have_pool) {
        pool_release();
    }
    tlmpi_gpu_restore_device(saved);
    return status;
}

/*
 * The non-blocking form (tier.h start): the device spans copied to host memory at the call (a local
 * copy on the comm's stream, behind the comm's earlier device work; bounded), the MPI's own
 * non-blocking collective posted on the host copies (the request's mreq, which the application's
 * completion calls progress), and in finish the result copied back to the device before the request
 * completes. Host memory from malloc, never the shared pool: a request may be outstanding for long.
 */
typedef struct {
    hbuf_t hs, hr;
    span_t os, rs;
    int rdev;
    void *rbuf;
    char *rp;       /* the receive buffer as PMPI got it (host) */
    tlmpi_gpu_ctx_t *ctx;
    int dev;
    tlmpi_wait_who_t who;
} staging_nb_t;

/* The result of a started call to the device (its receive buffer's output span), waited for */
static tlmpi_status_t staging_copy_out(const staging_nb_t *nb)
{
    tlmpi_status_t status = TLMPI_OK;
    cudaStream_t s = nb->ctx ? (cudaStream_t)nb->ctx->stream : (cudaStream_t)0;
    int saved = -1;

    if (!nb->rdev || !nb->os.bytes) {
        return TLMPI_OK;
    }
    if (tlmpi_gpu_enter_device(nb->dev, &saved) != 0) {
        return TLMPI_ERR_CUDA;
    }
    TLMPI_CUDA_CHECK_GOTO(cudaMemcpyAsync((char *)nb->rbuf + nb->os.off, nb->rp + nb->os.off, nb->os.bytes,
                                          cudaMemcpyDefault, s), status, out);
    TLMPI_CUDA_CHECK_GOTO((cudaError_t)tlmpi_gpu_sync(s, &nb->who, "the result's copy to the device"), status, out);
out:
    tlmpi_gpu_restore_device(saved);
    return status;
}

static tlmpi_status_t staging_finish(tlmpi_pending_t *p, int ok)
{
    staging_nb_t *nb = p->state;
    tlmpi_status_t status;

    if (!nb) {
        return TLMPI_OK;
    }
    status = ok ? staging_copy_out(nb) : TLMPI_OK;
    hbuf_put(&nb->hs);
    hbuf_put(&nb->hr);
    free(nb);
    p->state = NULL;
    return status;
}

/* A persistent request that holds the MPI's own persistent request on host copies (kept by
 * tlmpi_staging_check_init: intercommunicators, whose MPI_PROC_NULL ranks hold the MPI's own request
 * without tlmpi, so that every rank of the communicator starts the same kind of request): the host
 * copies and spans of a start, allocated once, and the MPI's request. */
typedef struct {
    staging_nb_t nb;
    span_t ss;
    MPI_Request mreq;
} staging_kept_t;

/* A kept request's start is done: the result to the device, nothing freed (the request's unpersist does) */
static tlmpi_status_t staging_finish_kept(tlmpi_pending_t *p, int ok)
{
    staging_kept_t *k = p->state;

    p->state = NULL;
    return k && ok ? staging_copy_out(&k->nb) : TLMPI_OK;
}

/* A kept request's start: the input to its host copies, then the MPI's MPI_Start */
static tlmpi_status_t staging_start_kept(const tlmpi_call_t *c, tlmpi_pending_t *p, int *mpi_rc_p)
{
    staging_kept_t *k = c->preg;
    staging_nb_t *nb = &k->nb;
    tlmpi_status_t status = TLMPI_OK;
    cudaStream_t s = nb->ctx ? (cudaStream_t)nb->ctx->stream : (cudaStream_t)0;
    size_t unused = 0;
    const char *sp;
    char *rp;
    int saved = -1, rc;

    if (tlmpi_gpu_enter_device(nb->dev, &saved) != 0) {
        return TLMPI_ERR_CUDA;
    }
    if (nb->ctx && tlmpi_gpu_ctx_begin(nb->ctx) != cudaSuccess) {
        (void)cudaGetLastError();
        status = TLMPI_ERR_CUDA;
        goto out;
    }
    TLMPI_CHECK_GOTO(stage_in(c, &k->ss, &nb->rs, 0, &unused, s, &nb->hs, &nb->hr, &sp, &rp, 1), status, out);
    TLMPI_CUDA_CHECK_GOTO((cudaError_t)tlmpi_gpu_sync(s, &nb->who, "the input's copy to the host"), status, out);
    rc = PMPI_Start(&k->mreq);
    if (rc != MPI_SUCCESS) {
        *mpi_rc_p = rc;
        status = TLMPI_ERR_MPI;
        goto out;
    }
    p->mreq = k->mreq; /* the MPI's handle stays k's (a completed persistent request stays allocated) */
    p->finish = staging_finish_kept;
    p->state = k;
out:
    tlmpi_gpu_restore_device(saved);
    return status;
}

static void staging_unpersist(void *preg)
{
    staging_kept_t *k = preg;

    if (k->mreq != MPI_REQUEST_NULL) {
        PMPI_Request_free(&k->mreq);
    }
    hbuf_put(&k->nb.hs);
    hbuf_put(&k->nb.hr);
    free(k);
}

static tlmpi_status_t staging_start(tlmpi_tier_comm_t *tc, const tlmpi_call_t *c, int algo, tlmpi_pending_t *p,
                                    int *mpi_rc_p)
{
    tlmpi_status_t status = TLMPI_OK;
    tlmpi_gpu_ctx_t *ctx = tc->ctx;
    int dev = ctx ? ctx->dev : c->rdev >= 0 ? c->rdev : c->sdev, saved = -1, rc;
    cudaStream_t s = ctx ? (cudaStream_t)ctx->stream : (cudaStream_t)0;
    span_t ss;
    size_t unused = 0;
    const char *sp = c->sbuf;
    char *rp = c->rbuf;
    staging_nb_t *nb;

    (void)algo;
    if (c->preg && c->preg_tier == TLMPI_TIER_STAGING) {
        return staging_start_kept(c, p, mpi_rc_p);
    }
    if (dev < 0) {
        dev = tlmpi_gpu_current_device();
    }
    if (!(nb = calloc(1, sizeof(*nb)))) {
        return TLMPI_ERR_NO_MEMORY;
    }
    nb->ctx = ctx;
    nb->dev = dev;
    nb->rbuf = c->rbuf;
    nb->rdev = tlmpi_mem_is_device(c->rmem);
    nb->who = tlmpi_tier_who(tc, c, "staging");
    if (call_spans(c, c->size, &ss, &nb->rs, &nb->os)) {
        free(nb);
        return TLMPI_ERR_MPI;
    }
    if (tlmpi_gpu_enter_device(dev, &saved) != 0) {
        free(nb);
        return TLMPI_ERR_CUDA;
    }
    if (ctx && tlmpi_gpu_ctx_begin(ctx) != cudaSuccess) {
        (void)cudaGetLastError();
        status = TLMPI_ERR_CUDA;
        goto out;
    }
    TLMPI_CHECK_GOTO(stage_in(c, &ss, &nb->rs, 0, &unused, s, &nb->hs, &nb->hr, &sp, &rp, 1), status, out);
    rp = sibling_rbuf(c, rp);
    nb->rp = rp;
    TLMPI_CUDA_CHECK_GOTO((cudaError_t)tlmpi_gpu_sync(s, &nb->who, "the input's copy to the host"), status, out);
    {
        tlmpi_call_t h = *c;

        h.sbuf = sp;
        h.rbuf = rp;
        rc = tlmpi_call_ipmpi(&h, c->pmpi_op, &p->mreq);
    }
    if (rc != MPI_SUCCESS) {
        *mpi_rc_p = rc;
        status = TLMPI_ERR_MPI;
        goto out;
    }
    p->finish = staging_finish;
    p->state = nb;
    tlmpi_gpu_restore_device(saved);
    return TLMPI_OK;
out:
    tlmpi_gpu_sync(s, &nb->who, "the staging copies after a failure");
    (void)cudaGetLastError();
    hbuf_put(&nb->hs);
    hbuf_put(&nb->hr);
    free(nb);
    tlmpi_gpu_restore_device(saved);
    return status;
}

/* Host stand-ins of c's buffers for the MPI's own argument checks: *h is c on host copies of its
 * spans (overlap kept; the input copied in, synchronously), the request handle *req. 0, or -1 (the
 * spans or host memory failed: nothing held). */
static int standins(const tlmpi_call_t *c, tlmpi_call_t *h, MPI_Request *req, hbuf_t *hs, hbuf_t *hr, span_t *ss,
                    span_t *rs, span_t *os)
{
    size_t unused = 0;
    const char *sp;
    char *rp;

    *h = *c;
    if (call_spans(c, c->size, ss, rs, os) != 0 ||
        stage_in(c, ss, rs, 0, &unused, (cudaStream_t)0, hs, hr, &sp, &rp, 0) != TLMPI_OK) {
        hbuf_put(hs);
        hbuf_put(hr);
        return -1;
    }
    h->sbuf = sp;
    h->rbuf = sibling_rbuf(c, rp);
    h->ureq = req;
    return 0;
}

int tlmpi_staging_check_init(tlmpi_tier_comm_t *tc, const tlmpi_call_t *c, void **keep)
{
    tlmpi_call_t h;
    span_t ss, rs, os;
    hbuf_t hs = { NULL, 0 }, hr = { NULL, 0 };
    MPI_Request req = MPI_REQUEST_NULL;
    int rc;

    if (keep) {
        *keep = NULL;
    }
    if (standins(c, &h, &req, &hs, &hr, &ss, &rs, &os) != 0) {
        return MPI_ERR_NO_MEM;
    }
    rc = tlmpi_call_form(&tlmpi_pmpi, &h, c->pmpi_op);
    if (rc == MPI_SUCCESS && keep && (*keep = calloc(1, sizeof(staging_kept_t))) != NULL) {
        staging_kept_t *k = *keep;

        k->nb.hs = hs;
        k->nb.hr = hr;
        k->nb.os = os;
        k->nb.rs = rs;
        k->nb.rdev = tlmpi_mem_is_device(c->rmem);
        k->nb.rbuf = c->rbuf;
        k->nb.rp = (char *)h.rbuf;
        k->nb.ctx = tc->ctx;
        k->nb.dev = tc->ctx ? tc->ctx->dev : c->rdev >= 0 ? c->rdev : c->sdev;
        if (k->nb.dev < 0) {
            k->nb.dev = tlmpi_gpu_current_device();
        }
        k->nb.who = tlmpi_tier_who(tc, c, "staging");
        k->ss = ss;
        k->mreq = req;
        return MPI_SUCCESS;
    }
    if (rc == MPI_SUCCESS) {
        PMPI_Request_free(&req);
    }
    hbuf_put(&hs);
    hbuf_put(&hr);
    return rc;
}

int tlmpi_staging_check_args(const tlmpi_call_t *c)
{
    tlmpi_call_t h;
    span_t ss, rs, os;
    hbuf_t hs = { NULL, 0 }, hr = { NULL, 0 };
    MPI_Request req = MPI_REQUEST_NULL;
    MPI_Errhandler eh;
    int rc;

    if (standins(c, &h, &req, &hs, &hr, &ss, &rs, &os) != 0) {
        return MPI_ERR_NO_MEM;
    }
    h.form = TLMPI_FORM_NONBLOCKING;
    eh = tlmpi_errh_quiet(c->comm); /* the MPI's verdict as a return code */
    rc = tlmpi_call_form(&tlmpi_pmpi, &h, c->pmpi_op);
    if (rc == MPI_SUCCESS) {
        rc = PMPI_Wait(&req, MPI_STATUS_IGNORE);
    }
    tlmpi_errh_restore(c->comm, eh);
    hbuf_put(&hs);
    hbuf_put(&hr);
    return rc;
}

#else /* !HAVE_CUDA: no device buffers exist */

int tlmpi_staging_check_init(tlmpi_tier_comm_t *tc, const tlmpi_call_t *c, void **keep)
{
    (void)tc, (void)c;
    if (keep) {
        *keep = NULL;
    }
    return MPI_SUCCESS;
}

static void staging_unpersist(void *preg)
{
    (void)preg;
}

int tlmpi_staging_check_args(const tlmpi_call_t *c)
{
    (void)c;
    return MPI_SUCCESS;
}

static unsigned staging_local_caps(tlmpi_tier_comm_t *tc, unsigned *want_p, char *why, size_t len)
{
    (void)tc, (void)want_p, (void)why, (void)len;
    return 0;
}

static tlmpi_status_t staging_run(tlmpi_tier_comm_t *tc, const tlmpi_call_t *c, int algo, int *mpi_rc_p)
{
    (void)tc, (void)c, (void)algo, (void)mpi_rc_p;
    return TLMPI_ERR_INTERNAL;
}

static tlmpi_status_t staging_start(tlmpi_tier_comm_t *tc, const tlmpi_call_t *c, int algo, tlmpi_pending_t *p,
                                    int *mpi_rc_p)
{
    (void)tc, (void)c, (void)algo, (void)p, (void)mpi_rc_p;
    return TLMPI_ERR_INTERNAL;
}

static void staging_finalize(void)
{
}
#endif

/* Any device-buffer call: any datatype (derived ones by their true-extent span), any op, mixed
 * host/device pairs, any comm. */
static int staging_supports(const tlmpi_call_t *c, unsigned caps)
{
    (void)c, (void)caps;
    return 1;
}

static const char *const staging_algos[] = { "pipeline" };

const tlmpi_tier_t tlmpi_tier_staging = {
    .name = "staging",
    .label = TLMPI_PATH_STAGING,
    .algos = staging_algos,
    .n_algos = 1,
    .cap = 0,
    .local_caps = staging_local_caps,
    .supports = staging_supports,
    .run = staging_run,
    .start = staging_start,
    .unpersist = staging_unpersist,
    .finalize = staging_finalize,
};
