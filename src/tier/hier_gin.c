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
 *      supported"), which is the answer (or a GIN plugin: tests/gin-loopback).
 * Fake nodes whose ranks share a GPU: NCCL refuses two ranks of one host on one GPU (v2.28.9-1
 * src/init.cc:903), so each rank must be an NCCL host of its own (NCCL_HOSTID set, different on
 * every rank: one PMPI_Allgather of its hash says so); then the devcomm is a world one (devcomm.h:
 * NCCL's LSA team is the rank alone, the node's pools are mapped through cumemshare.h, the rail
 * addressed in the world team).
 * What failed is torn down on every rank. The outcome is one info line per rank (why GIN is
 * unavailable), or a warning per rank where TLMPI_HIER_FUSED=gin asked for it and it failed. Fault
 * site gin_init: this rank's ncclDevCommCreate fails (the call is still made).
 */
#include "config.h"
#include "tier.h"
#include "env.h"
#include "log.h"

#include <stdio.h>
#include <stdlib.h>

#if defined(HAVE_CUDA) && defined(HAVE_NCCL)
#include "devcomm.h"
#include "ipc.h"

/* the signals the fused kernels use: [slot][sender node][group] (cuda/rail.cuh) */
#define GIN_SIGNALS (TLMPI_RAIL_SLOTS * TLMPI_RAIL_MAX_NODES * TLMPI_RAIL_MAX_GROUPS)

tlmpi_devcomm_t *tlmpi_hier_gin_create(tlmpi_tier_comm_t *tc, int asked, char *why, size_t len);

/* Whether NCCL sees every rank of comm as a host of its own: NCCL_HOSTID set on every rank, no two
 * alike (collective over a comm of at most 64 ranks, one host's; larger: 0 without communicating;
 * the same answer everywhere). */
static int hostid_per_rank(MPI_Comm comm, int size)
{
    const char *h = getenv("NCCL_HOSTID");
    unsigned long long mine = 0, all[64];
    int q, r, per_rank = 1;

    if (size > 64) {
        return 0;
    }
    if (h && *h) { /* unset: 0 */
        for (; *h; h++) {
            mine = (mine ^ (unsigned char)*h) * 1099511628211ull; /* FNV-1a */
        }
        mine |= 1ull << 63; /* set: never 0 */
    }
    if (PMPI_Allgather(&mine, 1, MPI_UNSIGNED_LONG_LONG, all, 1, MPI_UNSIGNED_LONG_LONG, comm) != MPI_SUCCESS) {
        return 0; /* MPI errors are fatal by default: the same everywhere */
    }
    for (q = 0; q < size && per_rank; q++) {
        per_rank = all[q] != 0;
        for (r = 0; r < q && per_rank; r++) {
            per_rank = all[q] != all[r];
        }
    }
    return per_rank;
}

tlmpi_devcomm_t *tlmpi_hier_gin_create(tlmpi_tier_comm_t *tc, int asked, char *why, size_t len)
{
    size_t data = tlmpi_ipc_data_bytes((long long)TLMPI_ENV_I(NODE_POOL));
    int attempted = 0, shared = (tc->caps & TLMPI_CAP_SHARED_GPU) || tc->shared_gpu;
    tlmpi_devcomm_gin_t gin = { GIN_SIGNALS, tc->local_rank, tc->local_size, 0, tc->gpu_sharers };

    gin.world = hostid_per_rank(tc->comm, tc->size) && shared; /* collective first, on every rank */
    tlmpi_devcomm_t *dc = tlmpi_devcomm_create(tc->comm, tc->rank, tc->size, tc->dev, shared, data,
                                               tc->ctx ? tc->ctx->stream : NULL, &gin, &attempted, why, len);

    if (dc) {
        snprintf(why, len, "ncclDevCommCreate with GIN succeeded (%d contexts granted, %s)", dc->gin_contexts,
                 dc->gin_proxy ? "NCCL's CPU proxy" : "device-initiated");
    } else if (attempted && asked) {
        tlmpi_warn(COMM, "communicator #%u: TLMPI_HIER_FUSED=gin, but GIN failed (here: %s)", tc->id, why);
    } else {
        tlmpi_info(COMM, "communicator #%u: GIN unavailable for the fused 2D kernels: %s", tc->id, why);
    }
    return dc;
}
#endif
