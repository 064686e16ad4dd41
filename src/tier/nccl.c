/*
 * nccl: the flat NCCL tier. One NCCL communicator per MPI communicator that uses this tier,
 * created lazily on the first NCCL-tier call (unique id from rank 0 by PMPI_Bcast), destroyed with
 * the MPI communicator (attribute delete callback -> tlmpi_tier_comm_cleanup). Collectives run on
 * tlmpi's own stream of the buffer's device and are synchronised before the MPI call returns; the
 * caller's current device is restored and its streams are never touched.
 *
 * Creation is agreed by all ranks: first whether every rank can attempt it (library loaded, a
 * device), then whether it succeeded everywhere (PMPI_Allreduce MIN each). On any failure the comm's
 * NCCL tier is marked unusable on every rank (one warning) and the call returns UNSUPPORTED before
 * any data moved, so the dispatcher uses staging on every rank alike.
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
#include "plan.h"

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

/*
 * TLMPI_NVLS=0 promises that tlmpi creates no NVLink multicast, and NCCL would create some for its
 * own communicators on NVLS-capable nodes. NCCL has no per-communicator switch for it in 2.28, only
 * NCCL_NVLS_ENABLE (read once per process): set it to 0 if unset; if the user set it to anything
 * else, the two settings conflict and the flat NCCL tier stays off on this rank (agreed over the
 * comm like any capability).
 */
static int nvls_guard_ok(void)
{
    const char *v;

    if (TLMPI_ENV_I(NVLS) != TLMPI_TRI_NO) {
        return 1;
    }
    v = getenv("NCCL_NVLS_ENABLE");
    if (!v) {
        setenv("NCCL_NVLS_ENABLE", "0", 0);
        return 1;
    }
    if (strcmp(v, "0") != 0) {
        tlmpi_warn_once(NCCL, "TLMPI_NVLS=0 but NCCL_NVLS_ENABLE=%s: the flat NCCL tier stays off so that "
                        "no NVLink multicast is created", v);
        return 0;
    }
    return 1;
}

unsigned tlmpi_nccl_local_caps(tlmpi_comm_t *tc)
{
    const char *why;

    if (tlmpi_g.gpu_count <= 0 || tc->topo.gpu_device < 0 || !nvls_guard_ok()) {
        return 0;
    }
    if (!tlmpi_nccl_load(&why)) {
        tlmpi_info(NCCL, "flat NCCL tier unavailable: %s", why);
        return 0;
    }
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

static void mark_failed(tlmpi_comm_t *tc, const char *why)
{
    tc->nccl_failed = 1;
    tlmpi_warn(NCCL, "flat NCCL tier disabled on this communicator (all ranks): %s; using host staging", why);
}

/* Collective over tc->comm. Returns the NCCL comm or NULL (then tc->nccl_failed is set everywhere). */
static struct tlmpi_nccl_comm *nccl_comm_create(tlmpi_comm_t *tc, int dev)
{
    struct tlmpi_nccl_comm *nc = NULL;
    ncclUniqueId id;
    ncclResult_t r = ncclSuccess;
    int ok, all, saved = -1, entered = 0;
    const char *why = "";

    ok = tlmpi_nccl_load(&why) && dev >= 0;
    if (PMPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, tc->comm) != MPI_SUCCESS || !all) {
        mark_failed(tc, ok ? "NCCL unavailable on another rank" : why);
        return NULL;
    }
    nc = calloc(1, sizeof(*nc));
    PMPI_Comm_rank(tc->comm, &nc->rank);
    PMPI_Comm_size(tc->comm, &nc->size);
    nc->dev = dev;
    memset(&id, 0, sizeof(id));
    ok = 1;
    if (nc->rank == 0 && (r = tlmpi_nccl.ncclGetUniqueId(&id)) != ncclSuccess) {
        ok = 0; /* broadcast the zero id anyway and agree below */
    }
    /* agree on the id before anyone enters the (blocking) init */
    if (PMPI_Bcast(&id, (int)sizeof(id), MPI_BYTE, 0, tc->comm) != MPI_SUCCESS ||
        PMPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, tc->comm) != MPI_SUCCESS || !ok) {
        free(nc);
        mark_failed(tc, "ncclGetUniqueId failed on rank 0");
        return NULL;
    }
    if (tlmpi_gpu_enter_device(dev, &saved) == 0) {
        entered = 1;
        r = tlmpi_nccl.ncclCommInitRank(&nc->comm, nc->size, id, nc->rank);
        ok = r == ncclSuccess;
        if (!ok) {
            tlmpi_warn(NCCL, "ncclCommInitRank failed: %s (%s)", tlmpi_nccl.ncclGetErrorString(r),
                       tlmpi_nccl.ncclGetLastError(NULL));
            nc->comm = NULL;
        }
    } else {
        ok = 0;
    }
    (void)cudaGetLastError();
    if (PMPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, tc->comm) != MPI_SUCCESS || !ok) {
        if (nc->comm) {
            tlmpi_nccl.ncclCommDestroy(nc->comm);
        }
        if (entered) {
            tlmpi_gpu_restore_device(saved);
        }
        free(nc);
        mark_failed(tc, "ncclCommInitRank failed on some rank");
        return NULL;
    }
    if (entered) {
        tlmpi_gpu_restore_device(saved);
    }
    tlmpi_info(NCCL, "flat NCCL communicator of %d ranks on device %d (NCCL %d)", nc->size, dev,
               tlmpi_nccl_runtime_version());
    return nc;
}

void tlmpi_nccl_comm_cleanup(tlmpi_comm_t *tc)
{
    struct tlmpi_nccl_comm *nc = tc->nccl;
    int saved;

    if (!nc) {
        return;
    }
    tc->nccl = NULL;
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

/* An NCCL call failed: report it, drain the stream, restore the caller's device. */
static tlmpi_status_t nccl_failed(struct tlmpi_nccl_comm *nc, const tlmpi_call_t *c, ncclResult_t r, cudaStream_t s,
                                  int saved)
{
    tlmpi_error(NCCL, "%s: NCCL failed: %s (%s)", tlmpi_coll_name(c->coll), tlmpi_nccl.ncclGetErrorString(r),
                tlmpi_nccl.ncclGetLastError(nc->comm));
    cudaStreamSynchronize(s);
    (void)cudaGetLastError();
    tlmpi_gpu_restore_device(saved);
    return TLMPI_ERR_NCCL;
}

/*
 * A call whose buffers are on another device than the one the communicator's NCCL tier was created
 * on (a process driving several GPUs). This rank still takes part in the collective, since the other
 * ranks chose NCCL too, and a refusal here would hang them. The input is copied into scratch memory
 * on the communicator's device, the collective runs there, and the result is copied back; the copies
 * go between devices through CUDA's unified addressing. n is NCCL's element count (bytes for
 * allgather).
 */
static tlmpi_status_t nccl_run_other_device(struct tlmpi_nccl_comm *nc, const tlmpi_call_t *c,
                                            ncclDataType_t t, ncclRedOp_t o, size_t n)
{
    int in_place = c->sbuf == MPI_IN_PLACE, saved = -1;
    size_t esz = c->coll == TLMPI_COLL_ALLGATHER ? 1 : (size_t)c->dt_size, in_b, out_b, need;
    const char *src;
    char *rb = c->rbuf, *tin, *tout;
    tlmpi_gpu_ctx_t *ctx;
    cudaStream_t s;
    cudaError_t e;
    ncclResult_t r;

    tlmpi_warn_once(NCCL, "%s: buffers on device %d/%d, but this communicator's NCCL tier runs on device "
                    "%d: copying through device %d (slower; keep a communicator's buffers on one GPU)",
                    tlmpi_coll_name(c->coll), in_place ? c->rdev : c->sdev, c->rdev, nc->dev, nc->dev);
    switch (c->coll) {
    case TLMPI_COLL_ALLREDUCE:
        src = in_place ? rb : c->sbuf;
        in_b = out_b = n * esz;
        break;
    case TLMPI_COLL_REDUCE_SCATTER_BLOCK:
        src = in_place ? rb : c->sbuf;
        in_b = n * esz * (size_t)nc->size;
        out_b = n * esz;
        break;
    default:
        src = in_place ? rb + (size_t)nc->rank * n : c->sbuf;
        in_b = n;
        out_b = n * (size_t)nc->size;
        break;
    }
    ctx = tlmpi_gpu_ctx(nc->dev);
    if (!ctx || tlmpi_gpu_enter_device(nc->dev, &saved) != 0) {
        return TLMPI_ERR_CUDA;
    }
    s = (cudaStream_t)ctx->stream;
    need = ((in_b + 255) & ~(size_t)255) + out_b;
    if (need > nc->scratch_bytes) {
        if (nc->scratch) {
            cudaStreamSynchronize(s); /* earlier calls are complete (they waited), but be sure */
            cudaFree(nc->scratch);
        }
        nc->scratch = NULL;
        nc->scratch_bytes = 0;
        if ((e = cudaMalloc(&nc->scratch, need)) != cudaSuccess) {
            tlmpi_error(CUDA, "%s: cudaMalloc(%zu) of scratch on device %d failed: %s", tlmpi_coll_name(c->coll),
                        need, nc->dev, cudaGetErrorString(e));
            nc->scratch = NULL;
            goto cuda_err;
        }
        nc->scratch_bytes = need;
    }
    tin = nc->scratch;
    tout = tin + ((in_b + 255) & ~(size_t)255);
    if ((e = cudaMemcpyAsync(tin, src, in_b, cudaMemcpyDefault, s)) != cudaSuccess) {
        tlmpi_error(CUDA, "%s: copy to device %d failed: %s", tlmpi_coll_name(c->coll), nc->dev, cudaGetErrorString(e));
        goto cuda_err;
    }
    switch (c->coll) {
    case TLMPI_COLL_ALLREDUCE:
        r = tlmpi_nccl.ncclAllReduce(tin, tout, n, t, o, nc->comm, s);
        break;
    case TLMPI_COLL_REDUCE_SCATTER_BLOCK:
        r = tlmpi_nccl.ncclReduceScatter(tin, tout, n, t, o, nc->comm, s);
        break;
    default:
        r = tlmpi_nccl.ncclAllGather(tin, tout, n, t, nc->comm, s);
        break;
    }
    if (r != ncclSuccess) {
        return nccl_failed(nc, c, r, s, saved);
    }
    if ((e = cudaMemcpyAsync(rb, tout, out_b, cudaMemcpyDefault, s)) != cudaSuccess) {
        tlmpi_error(CUDA, "%s: copy from device %d failed: %s", tlmpi_coll_name(c->coll), nc->dev, cudaGetErrorString(e));
        goto cuda_err;
    }
    if ((e = (cudaError_t)tlmpi_gpu_stream_wait(ctx)) != cudaSuccess) {
        tlmpi_error(CUDA, "%s: waiting for the NCCL collective failed: %s", tlmpi_coll_name(c->coll),
                    cudaGetErrorString(e));
        goto cuda_err;
    }
    tlmpi_gpu_restore_device(saved);
    return TLMPI_OK;
cuda_err:
    cudaStreamSynchronize(s);
    (void)cudaGetLastError();
    tlmpi_gpu_restore_device(saved);
    return TLMPI_ERR_CUDA;
}

tlmpi_status_t tlmpi_nccl_run(tlmpi_comm_t *tc, const tlmpi_call_t *c)
{
    struct tlmpi_nccl_comm *nc;
    tlmpi_gpu_ctx_t *ctx;
    ncclDataType_t t;
    ncclRedOp_t o = ncclSum;
    ncclResult_t r;
    cudaStream_t s;
    cudaError_t e;
    size_t n;
    int saved, in_place = c->sbuf == MPI_IN_PLACE;
    char *rb = c->rbuf;
    const char *sb;

    if (!tc || !tc->eligible || tc->nccl_failed) {
        return TLMPI_ERR_UNSUPPORTED;
    }
    /* Both buffers must be device memory (memory types are uniform by contract, so this declines
     * on every rank alike); mixed host/device pairs go to staging. */
    if (!tlmpi_mem_is_device(c->rmem) || (!in_place && !tlmpi_mem_is_device(c->smem))) {
        return TLMPI_ERR_UNSUPPORTED;
    }
    if (c->coll == TLMPI_COLL_ALLGATHER) {
        t = ncclInt8; /* any contiguous datatype moves as bytes */
        n = (size_t)c->count * (size_t)c->dt_size;
    } else {
        if (!nccl_dtype(c->dt, &t) || !nccl_op(c->opc, &o)) {
            return TLMPI_ERR_UNSUPPORTED;
        }
        n = (size_t)c->count;
    }
    if (!tc->nccl) {
        tc->nccl = nccl_comm_create(tc, c->rdev);
        if (!tc->nccl) {
            return TLMPI_ERR_UNSUPPORTED;
        }
    }
    nc = tc->nccl;
    if (c->rdev != nc->dev || (!in_place && c->sdev != nc->dev)) {
        /* Not an error, and never a decline: the other ranks are already committed to NCCL, so
         * this rank must take part too. */
        return nccl_run_other_device(nc, c, t, o, n);
    }
    /* No device switch here: NCCL makes the communicator's device current around its own calls
     * (and restores it), and a stream synchronize needs no current device. Only the in-place
     * reduce-scatter fix-up copy below switches, since it is a plain CUDA call. */
    ctx = tlmpi_gpu_ctx(nc->dev);
    if (!ctx) {
        return TLMPI_ERR_CUDA;
    }
    saved = -1;
    s = (cudaStream_t)ctx->stream;
    switch (c->coll) {
    case TLMPI_COLL_ALLREDUCE:
        r = tlmpi_nccl.ncclAllReduce(in_place ? rb : c->sbuf, rb, n, t, o, nc->comm, s);
        break;
    case TLMPI_COLL_REDUCE_SCATTER_BLOCK: {
        size_t esz = (size_t)c->dt_size;

        if (in_place) {
            /* MPI: the full input is in rbuf and the result goes to its start; NCCL in place puts it
             * at rbuf + rank*n. Run in place, then move the block to the front (disjoint for rank > 0). */
            r = tlmpi_nccl.ncclReduceScatter(rb, rb + (size_t)nc->rank * n * esz, n, t, o, nc->comm, s);
            if (r == ncclSuccess && nc->rank > 0 && tlmpi_gpu_enter_device(nc->dev, &saved) != 0) {
                cudaStreamSynchronize(s);
                (void)cudaGetLastError();
                return TLMPI_ERR_CUDA;
            }
            if (r == ncclSuccess && nc->rank > 0 &&
                (e = cudaMemcpyAsync(rb, rb + (size_t)nc->rank * n * esz, n * esz, cudaMemcpyDeviceToDevice, s)) !=
                    cudaSuccess) {
                tlmpi_error(CUDA, "cudaMemcpyAsync failed: %s", cudaGetErrorString(e));
                (void)cudaGetLastError();
                tlmpi_gpu_restore_device(saved);
                return TLMPI_ERR_CUDA;
            }
        } else {
            r = tlmpi_nccl.ncclReduceScatter(c->sbuf, rb, n, t, o, nc->comm, s);
        }
        break;
    }
    default:
        /* in place: the own block already sits at rbuf + rank*n, which is NCCL's in-place layout */
        sb = in_place ? rb + (size_t)nc->rank * n : c->sbuf;
        r = tlmpi_nccl.ncclAllGather(sb, rb, n, t, nc->comm, s);
        break;
    }
    if (r != ncclSuccess) {
        return nccl_failed(nc, c, r, s, saved);
    }
    e = (cudaError_t)tlmpi_gpu_stream_wait(ctx);
    tlmpi_gpu_restore_device(saved);
    if (e != cudaSuccess) {
        tlmpi_error(CUDA, "%s: waiting for the NCCL collective failed: %s", tlmpi_coll_name(c->coll),
                    cudaGetErrorString(e));
        (void)cudaGetLastError();
        return TLMPI_ERR_CUDA;
    }
    return TLMPI_OK;
}

#else /* no CUDA or no NCCL headers: the tier does not exist */

unsigned tlmpi_nccl_local_caps(tlmpi_comm_t *tc)
{
    (void)tc;
    return 0;
}

tlmpi_status_t tlmpi_nccl_run(tlmpi_comm_t *tc, const tlmpi_call_t *c)
{
    (void)tc;
    (void)c;
    return TLMPI_ERR_UNSUPPORTED;
}

void tlmpi_nccl_comm_cleanup(tlmpi_comm_t *tc)
{
    (void)tc;
}
#endif
