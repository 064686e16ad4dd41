/*
 * ipc: the host side of the CUDA-IPC transport of the node kernels (cuda/transport_ipc.cuh), one per
 * communicator whose ranks are all on one node. Each rank allocates one pool of device memory
 * (cudaMalloc: TLMPI_NODE_HDR_BYTES of barrier flags, zeroed before anyone can see it, then the data
 * area), exports it with cudaIpcGetMemHandle and exchanges one record per rank with ONE
 * PMPI_Allgather over the communicator {ok, handle, pid, device, PCI bus id, failure reason}; then
 * maps every peer's pool (cudaIpcOpenMemHandle with lazy peer access; its own pool directly), asks
 * the kernels how many CTAs stay resident with the ranks that share its GPU (counted from the
 * gathered bus ids) and agrees on the minimum and on every rank's success with one PMPI_Allreduce.
 * The device wait's error record, the CTA limit and the closing agreement are the transports'
 * shared parts (xport.h).
 *
 * Every rank takes part in both collectives whatever failed locally before them (a failed pool is
 * a record with ok = 0), so a local failure never desynchronises the ranks' collective calls, and
 * every rank ends with the same outcome. The transport creates no multicast object: the kernels
 * emulate multicast by looping over the peers. Fault sites: node_pool (the pool allocation),
 * ipc_open (mapping a peer's pool).
 */
#ifndef TLMPI_IPC_H
#define TLMPI_IPC_H

#include "xport.h"
#include <mpi.h>
#include <stddef.h>

typedef struct tlmpi_ipc {
    tlmpi_xport_t t;                    /* what the node tier reads (first: a tlmpi_ipc_t * is one) */
    void *pool;                         /* own pool (t.x.base[t.x.rank]) */
    unsigned opened;                    /* bit per node rank whose x.base came from cudaIpcOpenMemHandle */
} tlmpi_ipc_t;

/* Pool data bytes from a setting: rounded down to a multiple of 512, at least 64 KiB. */
size_t tlmpi_ipc_data_bytes(long long setting);

/* Collective over comm (size <= TLMPI_NODE_MAX_RANKS ranks, all on one node; every rank calls it).
 * dev is this rank's device, ranks_on_gpu the comm's ranks on it and shared whether any GPU holds
 * several of them (the comm's topology: comm/topo.h), stream the comm's stream (the header is cleared on it, and waited for,
 * bounded, before the exchange). Returns the transport, or NULL on every rank alike with this rank's
 * reason in why (its own failure, or which node ranks failed). The caller's device is restored. */
tlmpi_ipc_t *tlmpi_ipc_create(MPI_Comm comm, int rank, int size, int dev, int ranks_on_gpu, int shared,
                              size_t data_bytes, void *stream, char *why, size_t len);
/* Unmap the peers' pools, free the own pool and the error record. Not collective: the caller makes
 * sure that no peer still reads or writes this rank's pool (node.c: a last device barrier). */
void tlmpi_ipc_destroy(tlmpi_ipc_t *ipc);

#endif
