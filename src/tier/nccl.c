/*
 * nccl: the flat NCCL tier. One NCCL communicator per MPI communicator whose plan can pick this
 * tier, created at plan build (tier setup; unique id from rank 0 by PMPI_Bcast), destroyed with the
 * MPI communicator (tier cleanup). Collectives run on the communicator's own stream and are waited
 * for (bounded) before the MPI call returns; the caller's current device is restored and its
 * streams are never touched.
 *
 * Creation is agreed by all ranks: first whether every rank can attempt it (library loaded, a
 * device, no injected fault at nccl_init), so that no rank enters the blocking ncclCommInitRank
 * alone, then whether it succeeded everywhere. The plan builder agrees on the outcome once more and
 * prints the one warning per rank; calls then go to the next tier on every rank alike.
 *
 * This communicator is the flat tier's own object and is never handed to ncclDevCommCreate:
 * ncclDevCommCreate crashes on a communicator that already ran a collective (algorithms.md T14),
 * so the Device API tier creates its own NCCL communicator (and its devcomm before any collective).
 */
#include "config.h"
#include "tier.h"
#include "global.h"
#include "env.h"
#include "classify.h"
#include "cudawrap.h"
#include "stream.h"
#include "log.h"
#include "ncclwrap.h"
#include "checks.h"

#include <stdlib.h>
#include <string.h>

#if defined(HAVE_CUDA) && defined(HAVE_NCCL)
#include <cuda_runtime_api.h>

struct tlmpi_nccl_comm {
    ncclComm_t comm;
    int dev;            /* device the communicator was created on */
    int rank, size;
    void *scratch;      /* on dev: for calls whose buffers are on another device (grown on demand) */
    size_t scratch_bytes;
};

static const char *const nccl_algos[] = { "nccl" };

static unsigned nccl_local_caps(tlmpi_tier_comm_t *tc, unsigned *want_p, char *why, size_t len)
{
    const char *lw;

    if (tlmpi_g.gpu_count <= 0 || tc->dev < 0) {
        return 0;
    }
    if (tc->size < 2 && !tlmpi_tier_named("nccl", TLMPI_TIER_ENV_NCCL)) {
        /* one rank: auto copies on the device (self); a one-rank NCCL communicator would still hold its
         * buffers (hundreds of MiB of GPU memory) for nothing */
        return 0;
    }
    if (!tlmpi_nccl_env_ready()) {
        *want_p = TLMPI_CAP_NCCL;
        snprintf(why, len, "TLMPI_NVLS=0 conflicts with NCCL_NVLS_ENABLE=%s", getenv("NCCL_NVLS_ENABLE"));
        return 0;
    }
    if (!tlmpi_nccl_load(&lw)) {
        tlmpi_info(NCCL, "flat NCCL tier unavailable: %s", lw);
        return 0;
    }
    *want_p = TLMPI_CAP_NCCL;
    return TLMPI_CAP_NCCL;
}

static int nccl_dtype(tlmpi_dtype_t dt, ncclDataType_t *t)
{
    switch (dt) {
    case TLMPI_DT_I8:   *t = ncclInt8; return 1;
    case TLMPI_DT_U8:   *t = ncclUint8; return 1;
    case TLMPI_DT_I32:  *t = ncclInt32; return 1;
    case TLMPI_DT_U32:  *t = ncclUint32; return 1;
    case TLMPI_DT_I64:  *t = ncclInt64; return 1;
    case TLMPI_DT_U64:  *t = ncclUint64; return 1;
    case TLMPI_DT_F16:  *t = ncclFloat16; return 1;
    case TLMPI_DT_BF16: *t = ncclBfloat16; return 1;
    case TLMPI_DT_F32:  *t = ncclFloat32; return 1;
    case TLMPI_DT_F64:  *t = ncclFloat64; return 1;
    default:            return 0;
    }
}

static int nccl_op(tlmpi_op_t op, ncclRedOp_t *o)
{
    switch (op) {
    case TLMPI_OP_SUM:  *o = ncclSum; return 1;
    case TLMPI_OP_PROD: *o = ncclProd; return 1;
    case TLMPI_OP_MIN:  *o = ncclMin; return 1;
    case TLMPI_OP_MAX:  *o = ncclMax; return 1;
    default:            return 0;
    }
}

static int nccl_supports(const tlmpi_call_t *c, unsigned caps)
{
    ncclDataType_t t;
    ncclRedOp_t o;

    if ((caps & (TLMPI_CAP_NCCL | TLMPI_CAP_STREAM | TLMPI_CAP_GPU)) !=
            (TLMPI_CAP_NCCL | TLMPI_CAP_STREAM | TLMPI_CAP_GPU) || !tlmpi_call_all_device(c) ||
        tlmpi_coll_sibling(c->coll)) {
        return 0;
    }
    if (c->coll == TLMPI_COLL_ALLGATHER) {
        return c->contiguous; /* any contiguous datatype moves as bytes */
    }
    return nccl_dtype(c->dt, &t) && nccl_op(c->opc, &o); /* no 16-bit integers in NCCL */
}

/* Tier setup (collective over tc->comm): the communicator's NCCL communicator on tc->dev. */
static tlmpi_status_t nccl_setup(tlmpi_tier_comm_t *tc, char *why, size_t len)
{
    struct tlmpi_nccl_comm *nc = NULL;
    ncclUniqueId id;
    ncclResult_t r = ncclSuccess;
    int ok, all, saved = -1, entered = 0;
    const char *lw = "";

    /* can every rank attempt it? (nobody may enter the blocking init alone) */
    if (tlmpi_fault_hit(NCCL_INIT)) {
        ok = 0;
        lw = "NCCL communicator creation failed (injected: TLMPI_FAULT=nccl_init)";
    } else {
        ok = tlmpi_nccl_load(&lw) && tc->dev >= 0;
    }
    if (PMPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, tc->comm) != MPI_SUCCESS || !all) {
        snprintf(why, len, "%s", ok ? "another rank cannot create it" : lw);
        return TLMPI_ERR_NOT_FOUND;
    }
    nc = calloc(1, sizeof(*nc));
    nc->rank = tc->rank;
    nc->size = tc->size;
    nc->dev = tc->dev;
    memset(&id, 0, sizeof(id));
    ok = 1;
    if (nc->rank == 0 && (r = tlmpi_nccl.ncclGetUniqueId(&id)) != ncclSuccess) {
        ok = 0; /* broadcast the zero id anyway and agree below */
    }
    /* agree on the id before anyone enters the (blocking) init */
    if (PMPI_Bcast(&id, (int)sizeof(id), MPI_BYTE, 0, tc->comm) != MPI_SUCCESS ||
        PMPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, tc->comm) != MPI_SUCCESS || !ok) {
        free(nc);
        snprintf(why, len, "ncclGetUniqueId failed on rank 0");
        return TLMPI_ERR_NCCL;
    }
    if (tlmpi_gpu_enter_device(nc->dev, &saved) == 0) {
        entered = 1;
        r = tlmpi_nccl.ncclCommInitRank(&nc->comm, nc->size, id, nc->rank);
        ok = r == ncclSuccess;
        if (!ok) {
            snprintf(why, len, "ncclCommInitRank: %s (%s)", tlmpi_nccl.ncclGetErrorString(r),
                     tlmpi_nccl.ncclGetLastError(NULL));
            nc->comm = NULL;
        }
    } else {
        ok = 0;
        snprintf(why, len, "cannot make device %d current", nc->dev);
    }
    (void)cudaGetLastError();
    if (entered) {
        tlmpi_gpu_restore_device(saved);
    }
    if (!ok) {
        free(nc);
        return TLMPI_ERR_NCCL;
    }
    tc->state[TLMPI_TIER_NCCL] = nc;
    tlmpi_info(NCCL, "flat NCCL communicator of %d ranks on device %d (NCCL %d)", nc->size, nc->dev,
               tlmpi_nccl_runtime_version());
    return TLMPI_OK;
}

static void nccl_cleanup(tlmpi_tier_comm_t *tc)
{
    struct tlmpi_nccl_comm *nc = tc->state[TLMPI_TIER_NCCL];
    int saved;

    if (!nc) {
        return;
    }
    tc->state[TLMPI_TIER_NCCL] = NULL;
    if (tlmpi_gpu_enter_device(nc->dev, &saved) == 0) {
        ncclResult_t r = tlmpi_nccl.ncclCommDestroy(nc->comm);

        if (r != ncclSuccess) {
            tlmpi_warn(NCCL, "ncclCommDestroy failed: %s", tlmpi_nccl.ncclGetErrorString(r));
        }
        if (nc->scratch) {
            cudaFree(nc->scratch);
        }
        tlmpi_gpu_restore_device(saved);
    }
    (void)cudaGetLastError();
    free(nc);
}

/* The NCCL call of one collective; in/out as NCCL sees them (see the in-place notes in run). */
static ncclResult_t nccl_coll(struct tlmpi_nccl_comm *nc, tlmpi_coll_t coll, const void *in, void *out, size_t n,
                              ncclDataType_t t, ncclRedOp_t o, cudaStream_t s)
{
    switch (coll) {
    case TLMPI_COLL_ALLREDUCE:
        return tlmpi_nccl.ncclAllReduce(in, out, n, t, o, nc->comm, s);
    case TLMPI_COLL_REDUCE_SCATTER_BLOCK:
        return tlmpi_nccl.ncclReduceScatter(in, out, n, t, o, nc->comm, s);
    default:
        return tlmpi_nccl.ncclAllGather(in, out, n, t, nc->comm, s);
    }
}

/*
 * A call whose buffers are on another device than the one the communicator's NCCL tier was created
 * on (a process driving several GPUs). This rank still takes part in the collective, since the other
 * ranks chose NCCL too, and a refusal here would hang them. The input is copied into scratch memory
 * on the communicator's device, the collective runs there, and the result is copied back; the copies
 * go between devices through CUDA's unified addressing. n is NCCL's element count (bytes for
 * allgather).
 */
static tlmpi_status_t nccl_run_other_device(struct tlmpi_nccl_comm *nc, tlmpi_tier_comm_t *tc, const tlmpi_call_t *c,
                                            ncclDataType_t t, ncclRedOp_t o, size_t n)
{
    tlmpi_status_t st = TLMPI_OK;
    size_t need = ((c->in_bytes + 255) & ~(size_t)255) + c->out_bytes;
    cudaStream_t s = (cudaStream_t)tc->ctx->stream;
    char *tin, *tout;
    int saved = -1;

    tlmpi_warn_once(NCCL, "%s: buffers on device %d/%d, but this communicator's NCCL tier runs on device "
                    "%d: copying through device %d (slower; keep a communicator's buffers on one GPU)",
                    tlmpi_coll_name(c->coll), c->in_place ? c->rdev : c->sdev, c->rdev, nc->dev, nc->dev);
    if (tlmpi_gpu_enter_device(nc->dev, &saved) != 0) {
        return TLMPI_ERR_CUDA;
    }
    TLMPI_CUDA_CHECK_GOTO((cudaError_t)tlmpi_gpu_scratch_reserve(&nc->scratch, &nc->scratch_bytes, need), st, out);
    tin = nc->scratch;
    tout = tin + ((c->in_bytes + 255) & ~(size_t)255);
    TLMPI_CUDA_CHECK_GOTO((cudaError_t)tlmpi_gpu_ctx_begin(tc->ctx), st, out);
    TLMPI_CUDA_CHECK_GOTO(cudaMemcpyAsync(tin, c->in, c->in_bytes, cudaMemcpyDefault, s), st, out);
    TLMPI_NCCL_CHECK_GOTO(nccl_coll(nc, c->coll, tin, tout, n, t, o, s), st, out);
    TLMPI_CUDA_CHECK_GOTO(cudaMemcpyAsync(c->rbuf, tout, c->out_bytes, cudaMemcpyDefault, s), st, out);
out:
    {
        /* drain the stream also after a failure: nothing may still run on the scratch memory */
        tlmpi_status_t ws = tlmpi_tier_wait(tc, c, "nccl", "the NCCL collective (through scratch memory)");

        st = st != TLMPI_OK ? st : ws;
    }
    tlmpi_gpu_restore_device(saved);
    return st;
}

/* NCCL's type, op and element count for call c (allgather: bytes, any contiguous datatype). */
static void nccl_args(const tlmpi_call_t *c, ncclDataType_t *t, ncclRedOp_t *o, size_t *n)
{
    *t = ncclInt8;
    *o = ncclSum;
    if (c->coll == TLMPI_COLL_ALLGATHER) {
        *n = c->msg_bytes;
    } else {
        nccl_dtype(c->dt, t);
        nccl_op(c->opc, o);
        *n = (size_t)c->count;
    }
}

/* The call's NCCL collective on stream s, with the in-place reduce-scatter's fix-up copy. In place,
 * NCCL's layouts: allreduce in == out; allgather the own block at rbuf + own_off (which is c->in);
 * reduce-scatter the result at rbuf + own_off, moved to the front afterwards (disjoint for rank > 0).
 * Only that copy switches the device, since it is a plain CUDA call: NCCL makes the communicator's
 * device current around its own calls (and restores it). */
static tlmpi_status_t nccl_issue(struct tlmpi_nccl_comm *nc, const tlmpi_call_t *c, ncclDataType_t t, ncclRedOp_t o,
                                 size_t n, cudaStream_t s)
{
    tlmpi_status_t st = TLMPI_OK;
    char *rb = c->rbuf;
    int saved = -1;

    if (c->coll == TLMPI_COLL_REDUCE_SCATTER_BLOCK && c->in_place) {
        TLMPI_NCCL_CHECK_GOTO(nccl_coll(nc, c->coll, rb, rb + c->own_off, n, t, o, s), st, out);
        if (nc->rank > 0) {
            if (tlmpi_gpu_enter_device(nc->dev, &saved) != 0) {
                return TLMPI_ERR_CUDA;
            }
            TLMPI_CUDA_CHECK_GOTO(cudaMemcpyAsync(rb, rb + c->own_off, c->out_bytes, cudaMemcpyDeviceToDevice, s),
                                  st, out);
        }
    } else {
        TLMPI_NCCL_CHECK_GOTO(nccl_coll(nc, c->coll, c->in, rb, n, t, o, s), st, out);
    }
out:
    tlmpi_gpu_restore_device(saved);
    return st;
}

/* The stream-ordered form: the collective on the caller's stream (NCCL records it into a graph when
 * the stream is being captured). Buffers on another device than the tier's: not stream-ordered. */
static tlmpi_status_t nccl_enqueue(tlmpi_tier_comm_t *tc, const tlmpi_call_t *c, int algo, void *stream)
{
    struct tlmpi_nccl_comm *nc = tc->state[TLMPI_TIER_NCCL];
    ncclDataType_t t;
    ncclRedOp_t o;
    size_t n;

    (void)algo;
    if (!nc || c->rdev != nc->dev || (!c->in_place && c->sdev != nc->dev)) {
        return TLMPI_ERR_UNSUPPORTED;
    }
    nccl_args(c, &t, &o, &n);
    return nccl_issue(nc, c, t, o, n, (cudaStream_t)stream);
}

static tlmpi_status_t nccl_run(tlmpi_tier_comm_t *tc, const tlmpi_call_t *c, int algo, int *mpi_rc_p)
{
    struct tlmpi_nccl_comm *nc = tc->state[TLMPI_TIER_NCCL];
    tlmpi_status_t st = TLMPI_OK;
    cudaStream_t s;
    ncclDataType_t t;
    ncclRedOp_t o;
    size_t n;

    (void)algo, (void)mpi_rc_p;
    if (!nc) {
        return TLMPI_ERR_UNSUPPORTED; /* not set up (cannot happen when supports() said yes) */
    }
    nccl_args(c, &t, &o, &n);
    if (c->rdev != nc->dev || (!c->in_place && c->sdev != nc->dev)) {
        /* Not an error, and never a decline: the other ranks are already committed to NCCL, so
         * this rank must take part too. */
        return nccl_run_other_device(nc, tc, c, t, o, n);
    }
    s = (cudaStream_t)tc->ctx->stream;
    if (TLMPI_UNLIKELY(tlmpi_gpu_ctx_needs_begin(tc->ctx))) {
        TLMPI_CUDA_CHECK_GOTO((cudaError_t)tlmpi_gpu_ctx_begin(tc->ctx), st, out);
    }
    /* no device switch (nccl_issue), and the wait needs no current device */
    st = nccl_issue(nc, c, t, o, n, s);
    if (st != TLMPI_OK) {
        goto out;
    }
    tc->enqueued = tc->calls;
out:
    {
        tlmpi_status_t ws = tlmpi_tier_wait(tc, c, "nccl", "the NCCL collective");

        st = st != TLMPI_OK ? st : ws;
    }
    return st;
}

const tlmpi_tier_t tlmpi_tier_nccl = {
    .name = "nccl",
    .label = TLMPI_PATH_NCCL,
    .device_waits = 1,
    .algos = nccl_algos,
    .n_algos = 1,
    .cap = TLMPI_CAP_NCCL | TLMPI_CAP_STREAM,
    .auto_unless = TLMPI_CAP_SHARED_GPU,
    .local_caps = nccl_local_caps,
    .setup = nccl_setup,
    .supports = nccl_supports,
    .run = nccl_run,
    .enqueue = nccl_enqueue,
    .cleanup = nccl_cleanup,
};

#else /* no CUDA or no NCCL headers: the tier does not exist */

static const char *const nccl_algos[] = { "nccl" };

static unsigned nccl_local_caps(tlmpi_tier_comm_t *tc, unsigned *want_p, char *why, size_t len)
{
    (void)tc, (void)want_p, (void)why, (void)len;
    return 0;
}

static int nccl_supports(const tlmpi_call_t *c, unsigned caps)
{
    (void)c, (void)caps;
    return 0;
}

static tlmpi_status_t nccl_run(tlmpi_tier_comm_t *tc, const tlmpi_call_t *c, int algo, int *mpi_rc_p)
{
    (void)tc, (void)c, (void)algo, (void)mpi_rc_p;
    return TLMPI_ERR_UNSUPPORTED;
}

const tlmpi_tier_t tlmpi_tier_nccl = {
    .name = "nccl",
    .label = TLMPI_PATH_NCCL,
    .device_waits = 1,
    .algos = nccl_algos,
    .n_algos = 1,
    .cap = TLMPI_CAP_NCCL,
    .auto_unless = TLMPI_CAP_SHARED_GPU,
    .local_caps = nccl_local_caps,
    .supports = nccl_supports,
    .run = nccl_run,
};
#endif
