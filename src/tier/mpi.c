/*
 * mpi: device pointers handed to PMPI_* unchanged, where the MPI reports it is CUDA-aware
 * (MPIX_Query_cuda_support). Never with a half type and an arithmetic op: no MPI here reduces
 * those, and tlmpi's own op runs on the host.
 */
#include "config.h"
#include "tier.h"
#include "global.h"

static const char *const mpi_algos[] = { "pmpi" };

static unsigned mpi_local_caps(tlmpi_tier_comm_t *tc, unsigned *want_p, char *why, size_t len)
{
    (void)tc, (void)want_p, (void)why, (void)len;
    return tlmpi_g.mpi_cuda_aware ? TLMPI_CAP_MPI_CUDA_AWARE : 0;
}

static int mpi_supports(const tlmpi_call_t *c, unsigned caps)
{
    return (caps & TLMPI_CAP_MPI_CUDA_AWARE) &&
           (!tlmpi_coll_reduces(c->coll) || !tlmpi_dtype_needs_own_op(c->dt, c->opc));
}

static tlmpi_status_t mpi_run(tlmpi_tier_comm_t *tc, const tlmpi_call_t *c, int algo, int *mpi_rc_p)
{
    int rc = tlmpi_call_pmpi(c, c->op);

    (void)tc, (void)algo;
    if (rc != MPI_SUCCESS) {
        *mpi_rc_p = rc;
        return TLMPI_ERR_MPI;
    }
    return TLMPI_OK;
}

const tlmpi_tier_t tlmpi_tier_mpi = {
    .name = "mpi",
    .label = TLMPI_PATH_PASSTHROUGH,
    .algos = mpi_algos,
    .n_algos = 1,
    .cap = TLMPI_CAP_MPI_CUDA_AWARE,
    .local_caps = mpi_local_caps,
    .supports = mpi_supports,
    .run = mpi_run,
};
