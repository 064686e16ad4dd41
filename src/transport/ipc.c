/*
 * ipc: the CUDA-IPC transport's host side (see ipc.h): the per-rank pool, the one exchange of IPC
 * handles, the peers' mappings, the agreed CTA limit, teardown.
 */
#include "config.h"
#include "ipc.h"
#include "checks.h"
#include "cudawrap.h"
#include "env.h"
#include "fault.h"
#include "log.h"
#include "stream.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

size_t tlmpi_ipc_data_bytes(long long setting)
{
    size_t b = setting > 0 ? (size_t)setting : 0;

    b &= ~(size_t)511;
    return b < ((size_t)64 << 10) ? (size_t)64 << 10 : b;
}

#ifdef HAVE_CUDA
#include <cuda_runtime_api.h>

/* What every rank tells the others (one PMPI_Allgather of these). */
typedef struct {
    int ok;                             /* the pool and its handle exist */
    int pid;                            /* peers in this process cannot open the handle */
    int dev;
    int pad;
    cudaIpcMemHandle_t handle;
    char busid[32];                     /* PCI bus id of dev: ranks on one GPU have the same */
    char why[96];                       /* ok = 0: why not (for the other ranks' reasons) */
} ipc_rec_t;

static void ipc_free(tlmpi_ipc_t *ipc)
{
    int q;

    for (q = 0; q < TLMPI_NODE_MAX_RANKS; q++) {
        if (ipc->opened & (1u << q)) {
            cudaIpcCloseMemHandle(ipc->t.x.base[q]);
        }
    }
    ipc->opened = 0;
    if (ipc->pool) {
        cudaFree(ipc->pool);
    }
    tlmpi_xport_err_destroy(&ipc->t);
    free(ipc);
}

/* This rank's pool, its handle and the error record; rec->ok says whether it worked. */
static void ipc_local(tlmpi_ipc_t *ipc, size_t data_bytes, void *stream, ipc_rec_t *rec)
{
    tlmpi_wait_who_t who = { MPI_COMM_NULL, 0, TLMPI_COLL_ALLREDUCE, "node (setup)" };
    size_t total = TLMPI_NODE_HDR_BYTES + data_bytes;
    cudaError_t e;

    rec->ok = 0;
    if (tlmpi_fault_hit(NODE_POOL)) {
        snprintf(rec->why, sizeof(rec->why), "cannot allocate its %zu-byte node pool (injected: TLMPI_FAULT=node_pool)",
                 total);
        return;
    }
    if ((e = cudaMalloc(&ipc->pool, total)) != cudaSuccess) {
        ipc->pool = NULL;
        snprintf(rec->why, sizeof(rec->why), "cannot allocate its %zu-byte node pool: %s", total, cudaGetErrorString(e));
        goto fail;
    }
    /* the barrier flags start at 0, before any peer can store into them */
    if ((e = cudaMemsetAsync(ipc->pool, 0, TLMPI_NODE_HDR_BYTES, (cudaStream_t)stream)) != cudaSuccess ||
        (e = (cudaError_t)tlmpi_gpu_sync(stream, &who, "the node pool's header to clear")) != cudaSuccess) {
        snprintf(rec->why, sizeof(rec->why), "cannot clear its node pool's header: %s", cudaGetErrorString(e));
        goto fail;
    }
    if ((e = cudaIpcGetMemHandle(&rec->handle, ipc->pool)) != cudaSuccess) {
        snprintf(rec->why, sizeof(rec->why), "cudaIpcGetMemHandle: %s", cudaGetErrorString(e));
        goto fail;
    }
    if (tlmpi_xport_err_create(&ipc->t, rec->why, sizeof(rec->why)) != 0) {
        goto fail;
    }
    rec->ok = 1;
    return;
fail:
    (void)cudaGetLastError();
    tlmpi_info(CUDA, "node transport ipc: %s", rec->why);
}

/* Map every peer's pool; 0 or -1 with the reason. */
static int ipc_open_peers(tlmpi_ipc_t *ipc, const ipc_rec_t *recs, int rank, int size, char *why, size_t len)
{
    int q;

    for (q = 0; q < size; q++) {
        cudaError_t e;

        if (q == rank) {
            ipc->t.x.base[q] = ipc->pool;
            continue;
        }
        if (recs[q].pid == recs[rank].pid) {
            snprintf(why, len, "node rank %d is in this process (pid %d): its pool cannot be opened", q, recs[q].pid);
            return -1;
        }
        if (tlmpi_fault_hit(IPC_OPEN)) {
            snprintf(why, len, "cannot open node rank %d's pool (injected: TLMPI_FAULT=ipc_open)", q);
            return -1;
        }
        e = cudaIpcOpenMemHandle(&ipc->t.x.base[q], recs[q].handle, cudaIpcMemLazyEnablePeerAccess);
        if (e != cudaSuccess) {
            snprintf(why, len, "cudaIpcOpenMemHandle of node rank %d's pool (device %d, %s; this rank on %s): %s", q,
                     recs[q].dev, recs[q].busid, recs[rank].busid, cudaGetErrorString(e));
            (void)cudaGetLastError();
            ipc->t.x.base[q] = NULL;
            return -1;
        }
        ipc->opened |= 1u << q;
    }
    return 0;
}

tlmpi_ipc_t *tlmpi_ipc_create(MPI_Comm comm, int rank, int size, int dev, int ranks_on_gpu, int shared,
                              size_t data_bytes, void *stream, char *why, size_t len)
{
    tlmpi_ipc_t *ipc;
    ipc_rec_t *recs = NULL, mine;
    int q, saved = -1, entered = 0, ok;

    if (size < 1 || size > TLMPI_NODE_MAX_RANKS || rank < 0 || rank >= size) {
        snprintf(why, len, "%d ranks (the node kernels serve 1..%d)", size, TLMPI_NODE_MAX_RANKS);
        return NULL; /* the same on every rank: no collective was entered */
    }
    ipc = calloc(1, sizeof(*ipc));
    recs = calloc((size_t)size, sizeof(*recs));
    memset(&mine, 0, sizeof(mine));
    mine.pid = (int)getpid();
    mine.dev = dev;
    tlmpi_gpu_pci_bus_id(dev, mine.busid, sizeof(mine.busid));
    if (!ipc || !recs) {
        snprintf(mine.why, sizeof(mine.why), "out of host memory");
    } else if (tlmpi_gpu_enter_device(dev, &saved) != 0) {
        snprintf(mine.why, sizeof(mine.why), "cannot make device %d current", dev);
    } else {
        entered = 1;
        ipc->t.dev = dev;
        ipc_local(ipc, data_bytes, stream, &mine);
    }
    /* 1: every rank's record, whatever happened here */
    if (!recs) {
        /* still take part, with a record on the stack, so that the others do not hang */
        ipc_rec_t tmp[TLMPI_NODE_MAX_RANKS];

        PMPI_Allgather(&mine, (int)sizeof(mine), MPI_BYTE, tmp, (int)sizeof(mine), MPI_BYTE, comm);
        snprintf(why, len, "%s", mine.why);
        goto fail;
    }
    if (PMPI_Allgather(&mine, (int)sizeof(mine), MPI_BYTE, recs, (int)sizeof(mine), MPI_BYTE, comm) != MPI_SUCCESS) {
        snprintf(why, len, "PMPI_Allgather of the IPC handles failed");
        goto fail;
    }
    for (q = 0; q < size; q++) {
        if (!recs[q].ok) {
            /* every rank sees the same records: all give up here, without another collective */
            if (q == rank) {
                snprintf(why, len, "%s", mine.why);
            } else {
                snprintf(why, len, "node rank %d %s", q, recs[q].why);
            }
            goto fail;
        }
    }
    ipc->t.ranks_on_gpu = ranks_on_gpu > 0 ? ranks_on_gpu : 1;
    ipc->t.shared = shared;
    /* every rank on this GPU (the same records everywhere: the same answer): the kernels' barriers at
     * GPU scope (kernels.h: gpu_scope), unless TLMPI_NODE_BARRIER_SCOPE=system */
    ipc->t.x.gpu_scope = mine.busid[0] != '\0' && TLMPI_ENV_I(NODE_BARRIER_SCOPE) == 0;
    for (q = 0; q < size; q++) {
        if (strcmp(recs[q].busid, mine.busid) != 0) {
            ipc->t.x.gpu_scope = 0;
        }
    }
    /* 2: map the peers, then agree on every rank's success and on the CTA limit */
    why[0] = '\0';
    ok = ipc_open_peers(ipc, recs, rank, size, why, len) == 0;
    if (ok && (ipc->t.max_ctas = tlmpi_xport_max_ctas(dev, ipc->t.ranks_on_gpu)) <= 0) {
        ok = 0;
        snprintf(why, len, "no node kernel can run on device %d (occupancy query failed)", dev);
    }
    if (tlmpi_xport_agree(comm, rank, size, ok, data_bytes, &ipc->t, "could not map the peers' pools", why, len) != 0) {
        goto fail;
    }
    tlmpi_gpu_restore_device(saved);
    free(recs);
    return ipc;
fail:
    tlmpi_info(CUDA, "node transport ipc not created: %s", why);
    if (ipc) {
        if (entered) {
            ipc_free(ipc);
        } else {
            free(ipc);
        }
    }
    if (entered) {
        tlmpi_gpu_restore_device(saved);
    }
    free(recs);
    return NULL;
}

void tlmpi_ipc_destroy(tlmpi_ipc_t *ipc)
{
    int saved = -1;

    if (!ipc) {
        return;
    }
    if (tlmpi_gpu_enter_device(ipc->t.dev, &saved) != 0) {
        saved = -1;
    }
    ipc_free(ipc);
    tlmpi_gpu_restore_device(saved);
}

#else /* !HAVE_CUDA */

tlmpi_ipc_t *tlmpi_ipc_create(MPI_Comm comm, int rank, int size, int dev, int ranks_on_gpu, int shared,
                              size_t data_bytes, void *stream, char *why, size_t len)
{
    (void)comm, (void)rank, (void)size, (void)dev, (void)ranks_on_gpu, (void)shared, (void)data_bytes, (void)stream;
    snprintf(why, len, "built without CUDA");
    return NULL;
}

void tlmpi_ipc_destroy(tlmpi_ipc_t *ipc)
{
    (void)ipc;
}
#endif
