/*
 * tier dispatch: the dispatcher (pmpi_coll.c) picks a path with tlmpi_select_path and runs it here.
 *   NCCL    -> nccl.c (flat NCCL tier; may decline with UNSUPPORTED before any data moved)
 *   SELF    -> self.c (one-rank communicator: a device copy; declines for host buffers)
 *   STAGING -> staging.c (host staging; the correctness fallback, never declines)
 */
#include "config.h"
#include "tier.h"
#include "global.h"
#include "stream.h"
#include "log.h"
#include "plan.h"

unsigned tlmpi_tier_local_caps(tlmpi_comm_t *tc)
{
    unsigned caps = 0;

    if (tlmpi_g.mpi_cuda_aware) {
        caps |= TLMPI_CAP_MPI_CUDA_AWARE;
    }
    if (tlmpi_g.gpu_count > 0) {
        int size = 0;

        caps |= TLMPI_CAP_STAGING;
        caps |= tlmpi_nccl_local_caps(tc);
        if (PMPI_Comm_size(tc->comm, &size) == MPI_SUCCESS && size == 1) {
            caps |= TLMPI_CAP_SELF;
        }
    }
    return caps;
}

void tlmpi_tier_comm_cleanup(tlmpi_comm_t *tc)
{
    tlmpi_nccl_comm_cleanup(tc);
}

void tlmpi_tier_finalize(void)
{
    tlmpi_staging_finalize();
    tlmpi_gpu_finalize();
}

MPI_Op tlmpi_tier_pmpi_op(const tlmpi_call_t *c)
{
    if (tlmpi_select_needs_own_op(c->coll, c->dt, c->opc)) {
        MPI_Op op = tlmpi_half_op(c->dt, c->opc);

        if (op != MPI_OP_NULL) {
            return op;
        }
    }
    return c->op;
}

tlmpi_status_t tlmpi_tier_run(tlmpi_comm_t *tc, tlmpi_path_t path, const tlmpi_call_t *c)
{
    switch (path) {
    case TLMPI_PATH_NCCL:
        return tlmpi_nccl_run(tc, c);
    case TLMPI_PATH_STAGING:
        return tlmpi_staging_run(tc, c);
    case TLMPI_PATH_SELF:
        return tlmpi_self_run(tc, c);
    default:
        return TLMPI_ERR_UNSUPPORTED;
    }
}
