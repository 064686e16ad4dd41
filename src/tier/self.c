/*
 * self: the collectives of a one-rank communicator on device buffers. With one rank, allreduce,
 * reduce_scatter_block and allgather all leave a copy of the input in the output (no op is applied:
 * there is nothing to combine), so the call is one device-to-device copy on the comm's stream,
 * waited for like the other device tiers wait, without NCCL's enqueue path. In place there is
 * nothing to copy; the wait still orders the return after the caller's earlier stream work.
 */
#include "config.h"
#include "tier.h"
#include "checks.h"
#include "cudawrap.h"

static const char *const self_algos[] = { "copy" };

static unsigned self_local_caps(tlmpi_tier_comm_t *tc, unsigned *want_p, char *why, size_t len)
{
    (void)want_p, (void)why, (void)len;
    return tc->size == 1 ? TLMPI_CAP_SELF : 0;
}

static int self_supports(const tlmpi_call_t *c, unsigned caps)
{
    return (caps & (TLMPI_CAP_SELF | TLMPI_CAP_STREAM | TLMPI_CAP_GPU)) ==
               (TLMPI_CAP_SELF | TLMPI_CAP_STREAM | TLMPI_CAP_GPU) &&
           c->contiguous && tlmpi_call_all_device(c) && !tlmpi_coll_sibling(c->coll);
}

#ifdef HAVE_CUDA
static tlmpi_status_t self_run(tlmpi_tier_comm_t *tc, const tlmpi_call_t *c, int algo, int *mpi_rc_p)
{
    tlmpi_gpu_ctx_t *ctx = tc->ctx;
    tlmpi_status_t st = TLMPI_OK;
    int saved = -1;

    (void)algo, (void)mpi_rc_p;
    if (!c->in_place && c->sbuf != c->rbuf) {
        if (tlmpi_gpu_enter_device(ctx->dev, &saved) != 0) {
            return TLMPI_ERR_UNSUPPORTED;
        }
        TLMPI_CUDA_CHECK_GOTO((cudaError_t)tlmpi_gpu_ctx_begin(ctx), st, out);
        TLMPI_CUDA_CHECK_GOTO(cudaMemcpyAsync(c->rbuf, c->sbuf, c->out_bytes, cudaMemcpyDeviceToDevice,
                                              (cudaStream_t)ctx->stream), st, out);
    }
    st = tlmpi_tier_wait(tc, c, "self", "the device copy");
out:
    tlmpi_gpu_restore_device(saved);
    return st;
}

/* The stream-ordered form: the copy on the caller's stream (a memcpy node under capture). */
static tlmpi_status_t self_enqueue(tlmpi_tier_comm_t *tc, const tlmpi_call_t *c, int algo, void *stream)
{
    tlmpi_status_t st = TLMPI_OK;
    int saved = -1;

    (void)algo;
    if (c->in_place || c->sbuf == c->rbuf) {
        return TLMPI_OK;
    }
    if (tlmpi_gpu_enter_device(tc->ctx ? tc->ctx->dev : tc->dev, &saved) != 0) {
        return TLMPI_ERR_UNSUPPORTED;
    }
    TLMPI_CUDA_CHECK_GOTO(cudaMemcpyAsync(c->rbuf, c->sbuf, c->out_bytes, cudaMemcpyDeviceToDevice,
                                          (cudaStream_t)stream), st, out);
out:
    tlmpi_gpu_restore_device(saved);
    return st;
}
#else
static tlmpi_status_t self_run(tlmpi_tier_comm_t *tc, const tlmpi_call_t *c, int algo, int *mpi_rc_p)
{
    (void)tc, (void)c, (void)algo, (void)mpi_rc_p;
    return TLMPI_ERR_UNSUPPORTED;
}
#define self_enqueue NULL
#endif

const tlmpi_tier_t tlmpi_tier_self = {
    .name = "self",
    .label = TLMPI_PATH_SELF,
    .algos = self_algos,
    .n_algos = 1,
    .cap = TLMPI_CAP_SELF | TLMPI_CAP_STREAM,
    .local_caps = self_local_caps,
    .supports = self_supports,
    .run = self_run,
    .enqueue = self_enqueue,
};
