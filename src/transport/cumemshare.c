/*
 * cumemshare: cuMem allocations mapped between the processes of one host (see cumemshare.h).
 */
#include "config.h"
#include "cumemshare.h"
#include "cudawrap.h"
#include "fdx.h"
#include "xport.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef HAVE_CUDA
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <pthread.h>

/* The driver's VMM entry points this needs. */
static struct {
    CUresult (*retain)(CUmemGenericAllocationHandle *, void *);
    CUresult (*exp)(void *, CUmemGenericAllocationHandle, CUmemAllocationHandleType, unsigned long long);
    CUresult (*imp)(CUmemGenericAllocationHandle *, void *, CUmemAllocationHandleType);
    CUresult (*props)(CUmemAllocationProp *, CUmemGenericAllocationHandle);
    CUresult (*gran)(size_t *, const CUmemAllocationProp *, CUmemAllocationGranularity_flags);
    CUresult (*reserve)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long);
    CUresult (*map)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long);
    CUresult (*access)(CUdeviceptr, size_t, const CUmemAccessDesc *, size_t);
    CUresult (*unmap)(CUdeviceptr, size_t);
    CUresult (*addr_free)(CUdeviceptr, size_t);
    CUresult (*release)(CUmemGenericAllocationHandle);
} cu;
static const char *cu_missing; /* the first entry point the driver lacks (NULL: all there) */
static pthread_once_t cu_once = PTHREAD_ONCE_INIT;

static void cu_load(void)
{
    const struct {
        const char *name;
        void **fn;
    } syms[] = {
        { "cuMemRetainAllocationHandle", (void **)&cu.retain },
        { "cuMemExportToShareableHandle", (void **)&cu.exp },
        { "cuMemImportFromShareableHandle", (void **)&cu.imp },
        { "cuMemGetAllocationPropertiesFromHandle", (void **)&cu.props },
        { "cuMemGetAllocationGranularity", (void **)&cu.gran },
        { "cuMemAddressReserve", (void **)&cu.reserve },
        { "cuMemMap", (void **)&cu.map },
        { "cuMemSetAccess", (void **)&cu.access },
        { "cuMemUnmap", (void **)&cu.unmap },
        { "cuMemAddressFree", (void **)&cu.addr_free },
        { "cuMemRelease", (void **)&cu.release },
    };
    size_t i;

    (void)tlmpi_gpu_probe(NULL); /* tlmpi_cu (cuMemGetAddressRange) */
    if (!tlmpi_cu.get_range) {
        cu_missing = "cuMemGetAddressRange";
    }
    for (i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
        if (!(*syms[i].fn = tlmpi_gpu_driver_entry(syms[i].name)) && !cu_missing) {
            cu_missing = syms[i].name;
        }
    }
}

/* This rank's allocation as a descriptor, and its size. 0, or -1 with why. */
static int cumem_export(void *ptr, int *fd, size_t *alloc_bytes, char *why, size_t len)
{
    CUmemGenericAllocationHandle h;
    CUdeviceptr b = 0;
    size_t s = 0;
    CUresult r;

    *fd = -1;
    if ((r = tlmpi_cu.get_range(&b, &s, (CUdeviceptr)(uintptr_t)ptr)) != CUDA_SUCCESS ||
        b != (CUdeviceptr)(uintptr_t)ptr) {
        snprintf(why, len, "%p is not the start of an allocation (cuMemGetAddressRange: %d)", ptr, (int)r);
        return -1;
    }
    if ((r = cu.retain(&h, ptr)) != CUDA_SUCCESS) {
        snprintf(why, len, "cuMemRetainAllocationHandle: %d (not cuMem memory?)", (int)r);
        return -1;
    }
    r = cu.exp(fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
    cu.release(h); /* the retain's reference; the allocation stays its owner's */
    if (r != CUDA_SUCCESS || *fd < 0) {
        snprintf(why, len, "cuMemExportToShareableHandle (POSIX file descriptor): %d (the allocation was not made "
                 "shareable that way)", (int)r);
        *fd = -1;
        return -1;
    }
    *alloc_bytes = s;
    return 0;
}

/* A peer's descriptor imported and mapped for device dev (fd is closed). 0, or -1 with why. */
static int cumem_import(int fd, size_t bytes, int dev, tlmpi_cumem_map_t *m, char *why, size_t len)
{
    CUmemGenericAllocationHandle h;
    CUmemAllocationProp prop;
    CUmemAccessDesc acc;
    CUdeviceptr p = 0;
    size_t g = 0;
    CUresult r;

    memset(m, 0, sizeof(*m));
    r = cu.imp(&h, (void *)(intptr_t)fd, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    close(fd);
    if (r != CUDA_SUCCESS) {
        snprintf(why, len, "cuMemImportFromShareableHandle: %d", (int)r);
        return -1;
    }
    memset(&prop, 0, sizeof(prop));
    if ((r = cu.props(&prop, h)) != CUDA_SUCCESS ||
        (r = cu.gran(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM)) != CUDA_SUCCESS || !g || bytes % g) {
        snprintf(why, len, "the imported allocation's granularity: %d (granularity %zu, size %zu)", (int)r, g, bytes);
        cu.release(h);
        return -1;
    }
    if ((r = cu.reserve(&p, bytes, g, 0, 0)) != CUDA_SUCCESS) {
        snprintf(why, len, "cuMemAddressReserve of %zu bytes: %d", bytes, (int)r);
        cu.release(h);
        return -1;
    }
    if ((r = cu.map(p, bytes, 0, h, 0)) != CUDA_SUCCESS) {
        snprintf(why, len, "cuMemMap: %d", (int)r);
        cu.addr_free(p, bytes);
        cu.release(h);
        return -1;
    }
    memset(&acc, 0, sizeof(acc));
    acc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    acc.location.id = dev;
    acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    m->ptr = (void *)(uintptr_t)p;
    m->bytes = bytes;
    m->handle = (unsigned long long)h;
    if ((r = cu.access(p, bytes, &acc, 1)) != CUDA_SUCCESS) {
        snprintf(why, len, "cuMemSetAccess for device %d: %d", dev, (int)r);
        tlmpi_cumem_unshare(m, 1);
        return -1;
    }
    return 0;
}

void tlmpi_cumem_unshare(tlmpi_cumem_map_t *maps, int size)
{
    int q;

    for (q = 0; q < size; q++) {
        tlmpi_cumem_map_t *m = &maps[q];

        if (!m->ptr) {
            continue;
        }
        cu.unmap((CUdeviceptr)(uintptr_t)m->ptr, m->bytes);
        cu.addr_free((CUdeviceptr)(uintptr_t)m->ptr, m->bytes);
        cu.release((CUmemGenericAllocationHandle)m->handle);
        memset(m, 0, sizeof(*m));
    }
}

#define CUMEM_MAX_RANKS 64 /* a node's ranks (the node kernels serve 8) */

int tlmpi_cumem_share(MPI_Comm comm, int rank, int size, void *ptr, int dev, void **base, tlmpi_cumem_map_t *maps,
                      char *why, size_t len)
{
    unsigned long long mine[2] = { 0, 0 }, all[2 * CUMEM_MAX_RANKS];
    int fds[CUMEM_MAX_RANKS], fd = -1, ok = 1, q;
    size_t bytes = 0;

    if (size < 1 || size > CUMEM_MAX_RANKS || rank < 0 || rank >= size) {
        snprintf(why, len, "%d ranks (1..%d)", size, CUMEM_MAX_RANKS);
        return -1; /* the same on every rank: nothing collective entered */
    }
    for (q = 0; q < size; q++) {
        memset(&maps[q], 0, sizeof(maps[q]));
        base[q] = q == rank ? ptr : NULL;
    }
    pthread_once(&cu_once, cu_load);
    if (cu_missing) {
        snprintf(why, len, "the driver lacks %s", cu_missing);
        ok = 0;
    } else {
        ok = cumem_export(ptr, &fd, &bytes, why, len) == 0;
    }
    mine[0] = (unsigned long long)ok;
    mine[1] = (unsigned long long)bytes;
    if (PMPI_Allgather(mine, 2, MPI_UNSIGNED_LONG_LONG, all, 2, MPI_UNSIGNED_LONG_LONG, comm) != MPI_SUCCESS) {
        snprintf(why, len, "PMPI_Allgather of the allocations' sizes failed");
        ok = 0;
    }
    for (q = 0; q < size && ok; q++) {
        if (!all[2 * q]) {
            snprintf(why, len, "rank %d cannot export its allocation", q);
            ok = 0;
        }
    }
    if (tlmpi_xport_agree_step(comm, ok, "exporting the allocations", why, len) != 0) {
        goto out;
    }
    if (tlmpi_fdx_allgather(comm, rank, size, fd, fds, why, len) != 0) {
        goto out; /* agreed there */
    }
    for (q = 0; q < size; q++) {
        if (q == rank) {
            continue;
        }
        if (!ok) {
            close(fds[q]); /* an earlier import failed */
        } else if (cumem_import(fds[q], (size_t)all[2 * q + 1], dev, &maps[q], why, len) == 0) {
            base[q] = maps[q].ptr;
        } else {
            ok = 0; /* cumem_import closed it */
        }
    }
    if (tlmpi_xport_agree_step(comm, ok, "mapping the allocations", why, len) != 0) {
        tlmpi_cumem_unshare(maps, size);
        goto out;
    }
    close(fd);
    return 0;
out:
    if (fd >= 0) {
        close(fd);
    }
    for (q = 0; q < size; q++) {
        base[q] = q == rank ? ptr : NULL;
    }
    return -1;
}

#else /* no CUDA */

int tlmpi_cumem_share(MPI_Comm comm, int rank, int size, void *ptr, int dev, void **base, tlmpi_cumem_map_t *maps,
                      char *why, size_t len)
{
    (void)comm, (void)rank, (void)size, (void)ptr, (void)dev, (void)base, (void)maps;
    snprintf(why, len, "built without CUDA");
    return -1;
}

void tlmpi_cumem_unshare(tlmpi_cumem_map_t *maps, int size)
{
    (void)maps, (void)size;
}
#endif
