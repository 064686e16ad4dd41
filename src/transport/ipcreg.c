/*
 * ipcreg: user buffers registered with CUDA IPC for the zero-copy persistent requests (see ipcreg.h):
 * the export, the one exchange, the shared table of peers' mappings, the agreement, the release.
 */
#include "config.h"
#include "ipcreg.h"
#include "cudawrap.h"
#include "log.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef HAVE_CUDA
#include <cuda_runtime_api.h>

/* One peer allocation mapped in this process, shared by every registration that uses it. */
typedef struct tlmpi_ipcreg_map {
    struct tlmpi_ipcreg_map *next;
    cudaIpcMemHandle_t handle;
    int dev;
    void *base;
    int refs;
} ipcreg_map_t;

static pthread_mutex_t map_lock = PTHREAD_MUTEX_INITIALIZER;
static ipcreg_map_t *maps;
static int n_mapped;

/* What every rank tells the others: its buffers as (allocation handle, offset) pairs. */
typedef struct {
    int ok, pid, nh, pad;
    int which[2];               /* input, output: index into h */
    unsigned long long off[2];  /* their offsets in that allocation */
    cudaIpcMemHandle_t h[2];
    char why[96];               /* ok = 0: why not */
} reg_rec_t;

/* A peer allocation's mapping, shared (refs + 1); NULL with the reason. map_lock is held. */
static ipcreg_map_t *map_get(const cudaIpcMemHandle_t *h, int dev, char *why, size_t len)
{
    ipcreg_map_t *m;
    cudaError_t e;

    for (m = maps; m; m = m->next) {
        if (m->dev == dev && !memcmp(&m->handle, h, sizeof(*h))) {
            m->refs++;
            return m;
        }
    }
    if (!(m = calloc(1, sizeof(*m)))) {
        snprintf(why, len, "out of host memory");
        return NULL;
    }
    e = cudaIpcOpenMemHandle(&m->base, *h, cudaIpcMemLazyEnablePeerAccess);
    if (e != cudaSuccess) {
        snprintf(why, len, "cudaIpcOpenMemHandle: %s", cudaGetErrorString(e));
        (void)cudaGetLastError();
        free(m);
        return NULL;
    }
    m->handle = *h;
    m->dev = dev;
    m->refs = 1;
    m->next = maps;
    maps = m;
    n_mapped++;
    return m;
}

/* Drop one reference; the last closes the mapping. map_lock is held, the mapping's device current. */
static void map_put(ipcreg_map_t *m)
{
    ipcreg_map_t **pp;

    if (--m->refs > 0) {
        return;
    }
    for (pp = &maps; *pp && *pp != m; pp = &(*pp)->next) {
    }
    if (*pp) {
        *pp = m->next;
    }
    if (cudaIpcCloseMemHandle(m->base) != cudaSuccess) {
        (void)cudaGetLastError();
    }
    n_mapped--;
    free(m);
}

/* This rank's record: the allocations of in and out exported; rec->ok says whether it worked. */
static void reg_local(reg_rec_t *rec, const void *in, void *out)
{
    const void *p[2] = { in, out };
    CUdeviceptr base[2] = { 0, 0 };
    int i;

    if (!tlmpi_cu.get_range) {
        snprintf(rec->why, sizeof(rec->why), "the driver has no cuMemGetAddressRange");
        return;
    }
    for (i = 0; i < 2; i++) {
        size_t sz = 0;
        cudaError_t e;

        if (((uintptr_t)p[i] & 15u) != 0) {
            snprintf(rec->why, sizeof(rec->why), "its %s buffer is not 16-byte aligned", i ? "receive" : "send");
            return;
        }
        if (tlmpi_cu.get_range(&base[i], &sz, (CUdeviceptr)(uintptr_t)p[i]) != CUDA_SUCCESS) {
            snprintf(rec->why, sizeof(rec->why), "cuMemGetAddressRange of its %s buffer failed", i ? "receive" : "send");
            return;
        }
        rec->off[i] = (unsigned long long)((uintptr_t)p[i] - (uintptr_t)base[i]);
        if (i == 1 && base[1] == base[0]) {
            rec->which[1] = 0; /* one allocation (in place, or carved from one) */
            continue;
        }
        rec->which[i] = rec->nh;
        if ((e = cudaIpcGetMemHandle(&rec->h[rec->nh], (void *)(uintptr_t)base[i])) != cudaSuccess) {
            (void)cudaGetLastError();
            snprintf(rec->why, sizeof(rec->why), "CUDA IPC does not export its %s buffer (managed, cuMem or pool "
                     "memory?): %s", i ? "receive" : "send", cudaGetErrorString(e));
            return;
        }
        rec->nh++;
    }
    rec->ok = 1;
}

static void reg_release(tlmpi_ipc_reg_t *reg)
{
    int i;

    pthread_mutex_lock(&map_lock);
    for (i = 0; i < reg->nmaps; i++) {
        map_put(reg->maps[i]);
    }
    pthread_mutex_unlock(&map_lock);
    reg->nmaps = 0;
}

/* Map every peer's allocations into reg->d; 0 or -1 with the reason. */
static int reg_open(tlmpi_ipc_reg_t *reg, const reg_rec_t *recs, int rank, int size, const void *in, void *out,
                    char *why, size_t len)
{
    int q, rc = 0;

    pthread_mutex_lock(&map_lock);
    for (q = 0; q < size && rc == 0; q++) {
        char *b[2] = { NULL, NULL };
        int j;

        if (q == rank) {
            reg->d.in[q] = in;
            reg->d.out[q] = out;
            continue;
        }
        if (recs[q].pid == recs[rank].pid) {
            snprintf(why, len, "node rank %d is in this process", q);
            rc = -1;
            break;
        }
        for (j = 0; j < recs[q].nh; j++) {
            char mwhy[128];
            ipcreg_map_t *m = map_get(&recs[q].h[j], reg->dev, mwhy, sizeof(mwhy));

            if (!m) {
                snprintf(why, len, "node rank %d's buffers: %s", q, mwhy);
                rc = -1;
                break;
            }
            reg->maps[reg->nmaps++] = m;
            b[j] = m->base;
        }
        if (rc == 0) {
            reg->d.in[q] = b[recs[q].which[0]] + recs[q].off[0];
            reg->d.out[q] = b[recs[q].which[1]] + recs[q].off[1];
        }
    }
    pthread_mutex_unlock(&map_lock);
    return rc;
}

tlmpi_ipc_reg_t *tlmpi_ipc_reg_create(MPI_Comm comm, int rank, int size, int dev, int local_ok, const char *why_local,
                                      const void *in, size_t in_bytes, void *out, size_t out_bytes, char *why,
                                      size_t len)
{
    tlmpi_ipc_reg_t *reg = NULL;
    reg_rec_t mine, recs[TLMPI_NODE_MAX_RANKS];
    int q, saved = -1, entered = 0, ok;

    (void)in_bytes, (void)out_bytes; /* inside their allocations by MPI's rules: nothing to check */
    if (size < 1 || size > TLMPI_NODE_MAX_RANKS || rank < 0 || rank >= size) {
        snprintf(why, len, "%d ranks (the node kernels serve 1..%d)", size, TLMPI_NODE_MAX_RANKS);
        return NULL; /* the same on every rank: no collective was entered */
    }
    memset(&mine, 0, sizeof(mine));
    memset(recs, 0, sizeof(recs));
    mine.pid = (int)getpid();
    if (!local_ok) {
        snprintf(mine.why, sizeof(mine.why), "%s", why_local ? why_local : "cannot register");
    } else if (!(reg = calloc(1, sizeof(*reg)))) {
        snprintf(mine.why, sizeof(mine.why), "out of host memory");
    } else if (tlmpi_gpu_enter_device(dev, &saved) != 0) {
        snprintf(mine.why, sizeof(mine.why), "cannot make device %d current", dev);
    } else {
        entered = 1;
        reg->dev = dev;
        reg_local(&mine, in, out);
    }
    /* 1: every rank's record, whatever happened here */
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
    /* 2: map the peers' buffers, then agree on every rank's success */
    why[0] = '\0';
    ok = reg_open(reg, recs, rank, size, in, out, why, len) == 0;
    if (PMPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, comm) != MPI_SUCCESS) {
        ok = 0;
        snprintf(why, len, "PMPI_Allreduce of the outcome failed");
    }
    if (!ok) {
        if (!why[0]) {
            snprintf(why, len, "another node rank could not map its peers' buffers");
        }
        reg_release(reg);
        goto fail;
    }
    tlmpi_gpu_restore_device(saved);
    return reg;
fail:
    tlmpi_debug(CUDA, "user buffers not registered: %s", why);
    if (entered) {
        tlmpi_gpu_restore_device(saved);
    }
    free(reg);
    return NULL;
}

void tlmpi_ipc_reg_destroy(tlmpi_ipc_reg_t *reg)
{
    int saved = -1;

    if (!reg) {
        return;
    }
    if (tlmpi_gpu_enter_device(reg->dev, &saved) != 0) {
        saved = -1;
    }
    reg_release(reg);
    tlmpi_gpu_restore_device(saved);
    free(reg);
}

int tlmpi_ipc_reg_mapped(void)
{
    int n;

    pthread_mutex_lock(&map_lock);
    n = n_mapped;
    pthread_mutex_unlock(&map_lock);
    return n;
}

#else /* !HAVE_CUDA */

tlmpi_ipc_reg_t *tlmpi_ipc_reg_create(MPI_Comm comm, int rank, int size, int dev, int local_ok, const char *why_local,
                                      const void *in, size_t in_bytes, void *out, size_t out_bytes, char *why,
                                      size_t len)
{
    (void)comm, (void)rank, (void)size, (void)dev, (void)local_ok, (void)why_local, (void)in, (void)in_bytes;
    (void)out, (void)out_bytes;
    snprintf(why, len, "built without CUDA");
    return NULL;
}

void tlmpi_ipc_reg_destroy(tlmpi_ipc_reg_t *reg)
{
    (void)reg;
}

int tlmpi_ipc_reg_mapped(void)
{
    return 0;
}
#endif
