/*
 * hier_gin: the fused 2D kernels' GIN rail (cuda/rail_gin.cuh) on a communicator, decided once at
 * the hier tier's setup and agreed by every rank: an NCCL devcomm of the whole comm with GIN
 * signals (src/transport/devcomm.c with a GIN request):
 *   1. can every rank attempt it (one PMPI_Allreduce): what any devcomm needs (tlmpi_devcomm_can:
 *      the Device API in the kernels' headers and the same runtime version, no shared GPU, cuMem
 *      and windows on), GIN in those headers (2.28.9+), NCCL_GIN_ENABLE not 0. Nobody calls NCCL
 *      unless everyone does;
 *   2. its own NCCL communicator, the pool as one window (LSA addresses for the node's ranks), and
 *      ncclDevCommCreate with GIN_SIGNALS signals (the top-level ginSignalCount: the resource-list
 *      route drops them up to 2.30.7); GIN works where that succeeds with the same context count
 *      above 0 on every rank (agreed). Without an RDMA NIC with NCCL's GIN support it fails ("GIN not
 *      supported"), which is the answer.
 * What failed is torn down on every rank. The outcome is one info line per rank (why GIN is
 * unavailable), or a warning per rank where TLMPI_HIER_FUSED=gin asked for it and it failed. Fault
 * site gin_init: this rank's ncclDevCommCreate fails (the call is still made).
 */
#include "config.h"
#include "tier.h"
#include "env.h"
#include "log.h"

#include <stdio.h>

#if defined(HAVE_CUDA) && defined(HAVE_NCCL)
#include "devcomm.h"
#include "ipc.h"

/* the signals the fused kernels use: [slot][sender node][group] (cuda/rail.cuh) */
#define GIN_SIGNALS (TLMPI_RAIL_SLOTS * TLMPI_RAIL_MAX_NODES * TLMPI_RAIL_MAX_GROUPS)

tlmpi_devcomm_t *tlmpi_hier_gin_create(tlmpi_tier_comm_t *tc, int asked, char *why, size_t len);

tlmpi_devcomm_t *tlmpi_hier_gin_create(tlmpi_tier_comm_t *tc, int asked, char *why, size_t len)
{
    tlmpi_devcomm_gin_t gin = { GIN_SIGNALS, tc->local_rank, tc->local_size };
    size_t data = tlmpi_ipc_data_bytes((long long)TLMPI_ENV_I(NODE_POOL));
    int attempted = 0, shared = (tc->caps & TLMPI_CAP_SHARED_GPU) || tc->shared_gpu;
    tlmpi_devcomm_t *dc = tlmpi_devcomm_create(tc->comm, tc->rank, tc->size, tc->dev, shared, data,
                                               tc->ctx ? tc->ctx->stream : NULL, &gin, &attempted, why, len);

    if (dc) {
        snprintf(why, len, "ncclDevCommCreate with GIN succeeded (%d contexts granted)", dc->gin_contexts);
    } else if (attempted && asked) {
        tlmpi_warn(COMM, "communicator #%u: TLMPI_HIER_FUSED=gin, but GIN failed (here: %s)", tc->id, why);
    } else {
        tlmpi_info(COMM, "communicator #%u: GIN unavailable for the fused 2D kernels: %s", tc->id, why);
    }
    return dc;
}
#endif
