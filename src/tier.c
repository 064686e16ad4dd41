/*
 * tier dispatch. Issue 2 skeleton: host-op path only; staging and NCCL come with their modules.
 */
#include "config.h"
#include "tier.h"
#include "core.h"
#include "log.h"
#include "select.h"

unsigned tlmpi_tier_local_caps(tlmpi_comm_t *tc)
{
    unsigned caps = 0;

    if (tlmpi_g.mpi_cuda_aware) {
        caps |= TLMPI_CAP_MPI_CUDA_AWARE;
    }
    return caps;
}

void tlmpi_tier_comm_cleanup(tlmpi_comm_t *tc)
{
}

void tlmpi_tier_finalize(void)
{
}

tlmpi_status_t tlmpi_tier_run(tlmpi_comm_t *tc, tlmpi_path_t path, const tlmpi_call_t *c)
{
    return TLMPI_ERR_UNSUPPORTED;
}
