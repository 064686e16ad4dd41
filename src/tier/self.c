/*
 * self: the collectives of a one-rank communicator on device buffers. With one rank, allreduce,
 * reduce_scatter_block and allgather all leave a copy of the input in the output (no op is applied:
 * there is nothing to combine), so the call is one device-to-device copy on tlmpi's stream, waited
 * for like the NCCL tier waits (tlmpi_gpu_stream_wait), without NCCL's enqueue path. In place
 * there is nothing to copy; the wait still orders the return after work the caller left on the
 * legacy default stream, as the other device tiers do. Chosen by `auto` only (select.c); forced
 * tiers keep their own paths.
 */
#include "config.h"
#include "tier.h"
#include "classify.h"
#include "cudawrap.h"
#include "stream.h"
#include "log.h"

#ifdef HAVE_CUDA
#include <cuda_runtime_api.h>

tlmpi_status_t tlmpi_self_run(tlmpi_comm_t *tc, const tlmpi_call_t *c)
{
    int in_place = c->sbuf == MPI_IN_PLACE, saved = -1;
    tlmpi_gpu_ctx_t *ctx;
    cudaError_t e = cudaSuccess;

    (void)tc;
    if (!tlmpi_mem_is_device(c->rmem) || (!in_place && !tlmpi_mem_is_device(c->smem)) || !c->contiguous) {
        return TLMPI_ERR_UNSUPPORTED;
    }
    ctx = tlmpi_gpu_ctx(c->rdev);
    if (!ctx) {
        return TLMPI_ERR_UNSUPPORTED;
    }
    /* MPI_IN_PLACE: allreduce and allgather (own block at offset 0 with one rank) and
     * reduce_scatter_block (result at the start of the input) already hold the result */
    if (!in_place && c->sbuf != c->rbuf) {
        if (tlmpi_gpu_enter_device(c->rdev, &saved) != 0) {
            return TLMPI_ERR_UNSUPPORTED;
        }
        e = cudaMemcpyAsync(c->rbuf, c->sbuf, c->bytes, cudaMemcpyDeviceToDevice, (cudaStream_t)ctx->stream);
        if (e != cudaSuccess) {
            tlmpi_error(CUDA, "%s: cudaMemcpyAsync failed: %s", tlmpi_coll_name(c->coll), cudaGetErrorString(e));
            (void)cudaGetLastError();
            tlmpi_gpu_restore_device(saved);
            return TLMPI_ERR_CUDA;
        }
    }
    e = (cudaError_t)tlmpi_gpu_stream_wait(ctx);
    tlmpi_gpu_restore_device(saved);
    if (e != cudaSuccess) {
        tlmpi_error(CUDA, "%s: waiting for the device copy failed: %s", tlmpi_coll_name(c->coll),
                    cudaGetErrorString(e));
        (void)cudaGetLastError();
        return TLMPI_ERR_CUDA;
    }
    return TLMPI_OK;
}

#else

tlmpi_status_t tlmpi_self_run(tlmpi_comm_t *tc, const tlmpi_call_t *c)
{
    (void)tc;
    (void)c;
    return TLMPI_ERR_UNSUPPORTED;
}

#endif
