/*
 * cumemshare: a cuMem allocation of every rank mapped into every other rank of a communicator whose
 * ranks are all on one host: what CUDA IPC (cudaIpcGetMemHandle) cannot do for memory that is not
 * cudaMalloc's, e.g. a pool from ncclMemAlloc that is also an NCCL window. Used by the GIN rail on
 * fake nodes (devcomm.c), where NCCL's LSA team is one rank (each rank its own NCCL host, since NCCL
 * refuses two ranks of one host on one GPU) and the node's pools are mapped here instead.
 *
 * Collective (every rank calls tlmpi_cumem_share; all end alike): each rank exports its allocation
 * as a POSIX file descriptor (cuMemRetainAllocationHandle, cuMemExportToShareableHandle: the
 * allocation must have been made with that handle type, as NCCL's cuMem allocations are), the sizes
 * are gathered (PMPI_Allgather), the descriptors passed (fdx.h), and each rank imports every peer's
 * (cuMemImportFromShareableHandle), reserves an address range at the allocation's granularity, maps it
 * and makes it readable and writable from its device (cuMemAddressReserve, cuMemMap, cuMemSetAccess).
 * The driver entry points come through tlmpi_gpu_driver_entry (libcuda is never linked).
 * A failure anywhere undoes this rank's mappings on every rank (agreed).
 */
#ifndef TLMPI_CUMEMSHARE_H
#define TLMPI_CUMEMSHARE_H

#include <mpi.h>
#include <stddef.h>

typedef struct {
    void *ptr;                  /* the mapping (NULL: none) */
    size_t bytes;
    unsigned long long handle;  /* the imported allocation (a CUmemGenericAllocationHandle) */
} tlmpi_cumem_map_t;

/* base[q] (size entries): rank q's allocation as mapped here (own: ptr itself), maps[q] what to unmap
 * (own: none). ptr must be the start of this rank's allocation (the whole allocation is mapped).
 * dev: this rank's device. 0, or -1 with why on every rank. */
int tlmpi_cumem_share(MPI_Comm comm, int rank, int size, void *ptr, int dev, void **base, tlmpi_cumem_map_t *maps,
                      char *why, size_t len);
/* Unmap and release what tlmpi_cumem_share mapped (size entries; the empty ones are skipped). Local. */
void tlmpi_cumem_unshare(tlmpi_cumem_map_t *maps, int size);

#endif
