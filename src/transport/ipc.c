/*
 * ipc: the CUDA-IPC transport's host side (see ipc.h): the per-rank pool and its data area grown on
 * demand, the exchanges of IPC handles, the peers' mappings, the agreed CTA limit, teardown, and the
 * process's pool totals (tlmpi_get_pool_stats).
 */
#include "config.h"
#include "ipc.h"
#include "checks.h"
#include "compiler.h"
#include "cudawrap.h"
#include "env.h"
#include "fault.h"
#include "log.h"
#include "stream.h"
#include "tlmpi.h"

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

/* Every node pool of this process (tlmpi_ipc_totals) */
static unsigned long long g_pool_bytes, g_grown;
static int g_pools;

static void pool_count(long long bytes, int pools)
{
    __atomic_add_fetch(&g_pool_bytes, (unsigned long long)bytes, __ATOMIC_RELAXED);
    __atomic_add_fetch(&g_pools, pools, __ATOMIC_RELAXED);
}

TLMPI_EXPORT tlmpi_status_t tlmpi_get_pool_stats(tlmpi_pool_stats_t *s)
{
    if (!s) {
        return TLMPI_ERR_INVALID_ARG;
    }
    s->bytes = __atomic_load_n(&g_pool_bytes, __ATOMIC_RELAXED);
    s->pools = __atomic_load_n(&g_pools, __ATOMIC_RELAXED);
    s->grown = __atomic_load_n(&g_grown, __ATOMIC_RELAXED);
    return TLMPI_OK;
}

/* A data area's mappings closed and its own allocation freed. The pool's device is current. */
static void area_free(tlmpi_ipc_area_t *a)
{
    int q;

    for (q = 0; q < TLMPI_NODE_MAX_RANKS; q++) {
        if (a->opened & (1u << q)) {
            cudaIpcCloseMemHandle(a->peer[q]);
        }
    }
    a->opened = 0;
    if (a->own) {
        cudaFree(a->own);
    }
    (void)cudaGetLastError();
}

static void ipc_free(tlmpi_ipc_t *ipc)
{
    int q;

    area_free(&ipc->area);
    while (ipc->retired) {
        tlmpi_ipc_area_t *r = ipc->retired;

        ipc->retired = r->next;
        area_free(r);
        free(r);
    }
    for (q = 0; q < TLMPI_NODE_MAX_RANKS; q++) {
        if (ipc->opened & (1u << q)) {
            cudaIpcCloseMemHandle(ipc->t.x.base[q]);
        }
    }
    ipc->opened = 0;
    if (ipc->pool) {
        cudaFree(ipc->pool);
        pool_count(-(long long)ipc->own_bytes, -1);
    }
    tlmpi_xport_err_destroy(&ipc->t);
    free(ipc);
}

/* This rank's pool, its handle and the error record; rec->ok says whether it worked. */
static void ipc_local(tlmpi_ipc_t *ipc, size_t data_bytes, void *stream, ipc_rec_t *rec)
{
    tlmpi_wait_who_t who = { MPI_COMM_NULL, 0, TLMPI_COLL_ALLREDUCE, "node (setup)" };
    size_t total = TLMPI_NODE_HDR_BYTES + (ipc->grows ? 0 : data_bytes);
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
    ipc->own_bytes = total;
    pool_count((long long)total, 1);
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
                              size_t data_bytes, int grows, void *stream, char *why, size_t len)
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
        ipc->grows = grows;
        ipc->cap = data_bytes;
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
    if (tlmpi_xport_agree(comm, rank, size, ok, grows ? 0 : data_bytes, &ipc->t, "could not map the peers' pools", why,
                          len) != 0) {
        goto fail;
    }
    if (grows) {
        memset(ipc->t.x.data, 0, sizeof(ipc->t.x.data)); /* none yet */
        ipc->t.x.step_bytes = data_bytes;
    } else {
        tlmpi_node_xport_data_after_header(&ipc->t.x);
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

/* What every rank tells the others when the data area grows (one PMPI_Allgather of these). */
typedef struct {
    int ok;
    int captured;                       /* a captured kernel of this rank used the current area */
    cudaIpcMemHandle_t handle;
    char why[96];
} grow_rec_t;

int tlmpi_ipc_grow(tlmpi_ipc_t *ipc, MPI_Comm comm, size_t want, int captured, char *why, size_t len)
{
    const int rank = ipc->t.x.rank, size = ipc->t.x.nranks;
    grow_rec_t mine, recs[TLMPI_NODE_MAX_RANKS];
    tlmpi_ipc_area_t a;
    int q, saved = -1, entered, ok, keep = 0;
    cudaError_t e;

    memset(&mine, 0, sizeof(mine));
    memset(&a, 0, sizeof(a));
    a.bytes = want;
    mine.captured = captured;
    entered = tlmpi_gpu_enter_device(ipc->t.dev, &saved) == 0;
    if (!ipc->grows || want == 0 || want > ipc->cap || want % 512 || want <= ipc->area.bytes) {
        snprintf(mine.why, sizeof(mine.why), "asked for a data area of %zu bytes (now %zu, at most %zu)", want,
                 ipc->area.bytes, ipc->cap);
    } else if (!entered) {
        snprintf(mine.why, sizeof(mine.why), "cannot make device %d current", ipc->t.dev);
    } else if (tlmpi_fault_hit(NODE_POOL_GROW)) {
        snprintf(mine.why, sizeof(mine.why), "cannot allocate a %zu-byte data area (injected: TLMPI_FAULT=node_pool_grow)",
                 want);
    } else if ((e = cudaMalloc(&a.own, want)) != cudaSuccess) {
        a.own = NULL;
        snprintf(mine.why, sizeof(mine.why), "cannot allocate a %zu-byte data area: %s", want, cudaGetErrorString(e));
    } else if ((e = cudaIpcGetMemHandle(&mine.handle, a.own)) != cudaSuccess) {
        snprintf(mine.why, sizeof(mine.why), "cudaIpcGetMemHandle of its data area: %s", cudaGetErrorString(e));
    } else {
        mine.ok = 1;
    }
    (void)cudaGetLastError();
    ok = PMPI_Allgather(&mine, (int)sizeof(mine), MPI_BYTE, recs, (int)sizeof(mine), MPI_BYTE, comm) == MPI_SUCCESS;
    if (!ok) {
        snprintf(why, len, "PMPI_Allgather of the data areas' IPC handles failed");
    }
    for (q = 0; q < size && ok; q++) {
        keep |= recs[q].captured;
        if (!recs[q].ok) {
            /* the same records everywhere: every rank stops here */
            ok = 0;
            if (q == rank) {
                snprintf(why, len, "%s", mine.why);
            } else {
                snprintf(why, len, "node rank %d %s", q, recs[q].why);
            }
        }
    }
    for (q = 0; q < size && ok; q++) {
        if (q == rank) {
            a.peer[q] = a.own;
        } else if (tlmpi_fault_hit(IPC_OPEN)) {
            snprintf(why, len, "cannot open node rank %d's data area (injected: TLMPI_FAULT=ipc_open)", q);
            ok = 0;
        } else if ((e = cudaIpcOpenMemHandle(&a.peer[q], recs[q].handle, cudaIpcMemLazyEnablePeerAccess)) !=
                   cudaSuccess) {
            snprintf(why, len, "cudaIpcOpenMemHandle of node rank %d's data area: %s", q, cudaGetErrorString(e));
            (void)cudaGetLastError();
            a.peer[q] = NULL;
            ok = 0;
        } else {
            a.opened |= 1u << q;
        }
    }
    if (tlmpi_xport_agree_step(comm, ok, "growing the node pools' data area", why, len) != 0) {
        if (entered) {
            area_free(&a);
            tlmpi_gpu_restore_device(saved);
        }
        return -1;
    }
    /* every rank drained its kernels before the exchange: the old area is free to go unless a graph
     * may replay a kernel that uses it */
    pool_count((long long)want, 0);
    ipc->own_bytes += want;
    if (ipc->area.bytes) {
        tlmpi_ipc_area_t *r = keep ? malloc(sizeof(*r)) : NULL;

        if (r) {
            *r = ipc->area;
            r->next = ipc->retired;
            ipc->retired = r;
        } else if (!keep) {
            area_free(&ipc->area);
            pool_count(-(long long)ipc->area.bytes, 0);
            ipc->own_bytes -= ipc->area.bytes;
        } /* else: out of host memory, kept (leaked) rather than freed under a graph */
    }
    ipc->area = a;
    memcpy(ipc->t.x.data, a.peer, sizeof(ipc->t.x.data));
    ipc->t.x.data_bytes = want;
    __atomic_add_fetch(&g_grown, 1, __ATOMIC_RELAXED);
    tlmpi_gpu_restore_device(saved);
    return 0;
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
                              size_t data_bytes, int grows, void *stream, char *why, size_t len)
{
    (void)comm, (void)rank, (void)size, (void)dev, (void)ranks_on_gpu, (void)shared, (void)data_bytes, (void)grows,
        (void)stream;
    snprintf(why, len, "built without CUDA");
    return NULL;
}

int tlmpi_ipc_grow(tlmpi_ipc_t *ipc, MPI_Comm comm, size_t want, int captured, char *why, size_t len)
{
    (void)ipc, (void)comm, (void)want, (void)captured;
    snprintf(why, len, "built without CUDA");
    return -1;
}

TLMPI_EXPORT tlmpi_status_t tlmpi_get_pool_stats(tlmpi_pool_stats_t *s)
{
    if (!s) {
        return TLMPI_ERR_INVALID_ARG;
    }
    memset(s, 0, sizeof(*s));
    return TLMPI_OK;
}

void tlmpi_ipc_destroy(tlmpi_ipc_t *ipc)
{
    (void)ipc;
}
#endif
