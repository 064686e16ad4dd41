/*
 * hier_gin: whether the fused 2D kernels' rail can be NCCL's GIN (GPU-initiated networking) on a
 * communicator, decided once at the hier tier's setup and agreed by every rank:
 *   1. can every rank attempt it (one PMPI_Allreduce, MIN): what any devcomm needs
 *      (tlmpi_devcomm_can: the Device API in the kernels' headers and the same runtime version, no
 *      shared GPU, ...), GIN in those headers (2.28.9+), NCCL_GIN_ENABLE not 0. Nobody calls NCCL
 *      unless everyone does;
 *   2. an NCCL communicator of its own over the comm and ncclDevCommCreate with GIN signals (the
 *      top-level ginSignalCount: the resource-list route drops them up to 2.30.7); GIN works where
 *      that succeeds with a granted context count above 0 on every rank (agreed). Without an RDMA
 *      NIC with NCCL's GIN support it fails ("GIN not supported"), which is the answer.
 * What was created is destroyed again on every rank. The outcome is one info line per rank (why
 * GIN is unavailable), or a warning per rank where it was attempted and failed on some rank only.
 * Fault site gin_init: this rank's ncclDevCommCreate fails (the call is still made, so that a real
 * NCCL's collective steps stay matched).
 */
#include "config.h"
#include "tier.h"
#include "fault.h"
#include "global.h"
#include "log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int tlmpi_hier_gin_probe(tlmpi_tier_comm_t *tc, int asked, char *why, size_t len);

/* the signals the fused kernels use: [slot][sender node][group] (cuda/rail.cuh) */
#define GIN_SIGNALS (TLMPI_RAIL_SLOTS * TLMPI_RAIL_MAX_NODES * TLMPI_RAIL_MAX_GROUPS)

#if defined(HAVE_CUDA) && defined(HAVE_NCCL)
#include "cudawrap.h"
#include "devcomm.h"
#include "kernels.h"
#include "ncclwrap.h"

static int gin_can(const tlmpi_tier_comm_t *tc, char *why, size_t len)
{
    const char *v;
    char b[16];

    if (!tlmpi_devcomm_can((tc->caps & TLMPI_CAP_SHARED_GPU) || tc->shared_gpu, why, len)) {
        return 0;
    }
    if (!tlmpi_cuda_devcomm_gin_built()) {
        tlmpi_devcomm_version_string(tlmpi_cuda_devcomm_version(), b, sizeof(b));
        snprintf(why, len, "the kernels were built against NCCL %s headers, without GIN (2.28.9+)", b);
    } else if ((v = getenv("NCCL_GIN_ENABLE")) && !strcmp(v, "0")) {
        snprintf(why, len, "NCCL_GIN_ENABLE=0");
    } else {
        return 1;
    }
    return 0;
}

/* Steps 1 and 2; 1 where GIN works on every rank, else 0 with why (the same outcome everywhere). */
static int gin_probe(tlmpi_tier_comm_t *tc, char *why, size_t len, int *attempted_p)
{
    struct {
        ncclUniqueId id;
        int ok;
    } boot;
    size_t reqs_size = 0, dc_size = tlmpi_cuda_devcomm_sizes(&reqs_size);
    void *reqs = NULL, *dc = NULL;
    ncclComm_t nccl = NULL;
    ncclResult_t r;
    int ok, all = 0, saved = -1, entered = 0, created = 0, contexts = 0;

    *attempted_p = 0;
    ok = gin_can(tc, why, len);
    if (ok) {
        reqs = calloc(1, reqs_size ? reqs_size : 1);
        dc = calloc(1, dc_size ? dc_size : 1);
        if (!reqs || !dc) {
            ok = 0;
            snprintf(why, len, "out of host memory");
        } else if (tlmpi_gpu_enter_device(tc->dev, &saved) != 0) {
            ok = 0;
            snprintf(why, len, "cannot make device %d current", tc->dev);
        } else {
            entered = 1;
        }
    }
    if (PMPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, tc->comm) != MPI_SUCCESS || !all) {
        if (ok) {
            snprintf(why, len, "GIN cannot be attempted on another rank");
        }
        goto out;
    }
    *attempted_p = 1;
    memset(&boot, 0, sizeof(boot));
    if (tc->rank == 0) {
        boot.ok = tlmpi_nccl.ncclGetUniqueId(&boot.id) == ncclSuccess;
    }
    if (PMPI_Bcast(&boot, (int)sizeof(boot), MPI_BYTE, 0, tc->comm) != MPI_SUCCESS || !boot.ok) {
        snprintf(why, len, "%s", boot.ok ? "PMPI_Bcast of the NCCL unique id failed" : "ncclGetUniqueId failed on rank 0");
        all = 0;
        goto out;
    }
    if ((r = tlmpi_nccl.ncclCommInitRank(&nccl, tc->size, boot.id, tc->rank)) != ncclSuccess) {
        snprintf(why, len, "ncclCommInitRank: %s", tlmpi_nccl.ncclGetErrorString(r));
        nccl = NULL;
        ok = 0;
    } else {
        tlmpi_cuda_devcomm_gin_requirements(reqs, GIN_SIGNALS);
        r = tlmpi_nccl.ncclDevCommCreate(nccl, reqs, dc);
        created = r == ncclSuccess;
        contexts = created ? tlmpi_cuda_devcomm_gin_contexts(dc) : 0;
        ok = created && contexts > 0;
        if (tlmpi_fault_hit(GIN_INIT)) {
            ok = 0;
            snprintf(why, len, "ncclDevCommCreate with GIN failed (injected: TLMPI_FAULT=gin_init)");
        } else if (!created) {
            snprintf(why, len, "ncclDevCommCreate with %d GIN signals: %s (%s)", GIN_SIGNALS, tlmpi_nccl.ncclGetErrorString(r),
                     tlmpi_nccl.ncclGetLastError(nccl));
        } else if (contexts <= 0) {
            snprintf(why, len, "ncclDevCommCreate granted no GIN context");
        }
    }
    if (PMPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, tc->comm) != MPI_SUCCESS) {
        all = 0;
    }
    if (!all && ok) {
        snprintf(why, len, "ncclDevCommCreate with GIN failed on another rank");
    }
    if (all) {
        snprintf(why, len, "ncclDevCommCreate with GIN succeeded (%d contexts granted)", contexts);
    }
out:
    if (created && (r = tlmpi_nccl.ncclDevCommDestroy(nccl, dc)) != ncclSuccess) {
        tlmpi_info(NCCL, "GIN probe: ncclDevCommDestroy: %s", tlmpi_nccl.ncclGetErrorString(r));
    }
    if (nccl && (r = tlmpi_nccl.ncclCommDestroy(nccl)) != ncclSuccess) {
        tlmpi_info(NCCL, "GIN probe: ncclCommDestroy: %s", tlmpi_nccl.ncclGetErrorString(r));
    }
    if (entered) {
        tlmpi_gpu_restore_device(saved);
    }
    free(reqs);
    free(dc);
    return all != 0;
}

int tlmpi_hier_gin_probe(tlmpi_tier_comm_t *tc, int asked, char *why, size_t len)
{
    int attempted = 0, works = gin_probe(tc, why, len, &attempted);

    if (!works && attempted && asked) {
        tlmpi_warn(COMM, "communicator #%u: TLMPI_HIER_FUSED=gin, but GIN failed (here: %s)", tc->id, why);
    } else if (!works) {
        tlmpi_info(COMM, "communicator #%u: GIN unavailable for the fused 2D kernels: %s", tc->id, why);
    }
    return works;
}

#else

int tlmpi_hier_gin_probe(tlmpi_tier_comm_t *tc, int asked, char *why, size_t len)
{
    (void)tc, (void)asked;
    snprintf(why, len, "built without CUDA or NCCL headers");
    return 0;
}
#endif
