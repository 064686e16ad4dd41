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
 * For the node tier the data area is an allocation of its own that grows on demand (tlmpi_ipc_grow:
 * the same exchange for the new area, collective, at the call that first needs more), so a
 * communicator whose calls fit the LL region or run zero-copy never holds one; the pool is then its
 * header alone (320 KiB). Areas a captured kernel may still use stay until destroy.
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

/* A data area of every rank (own allocation, the peers' mapped), grown on demand. */
typedef struct tlmpi_ipc_area {
    void *own;                          /* this rank's (cudaMalloc) */
    void *peer[TLMPI_NODE_MAX_RANKS];   /* every rank's as mapped here (own included) */
    unsigned opened;                    /* bit per rank whose peer[] came from cudaIpcOpenMemHandle */
    size_t bytes;
    struct tlmpi_ipc_area *next;        /* retired areas: a captured kernel may still use them */
} tlmpi_ipc_area_t;

typedef struct tlmpi_ipc {
    tlmpi_xport_t t;                    /* what the node tier reads (first: a tlmpi_ipc_t * is one) */
    void *pool;                         /* own pool (t.x.base[t.x.rank]): the header, and the data area
                                           after it where it does not grow */
    unsigned opened;                    /* bit per node rank whose x.base came from cudaIpcOpenMemHandle */
    size_t own_bytes;                   /* device memory this rank's pool holds now (retired areas too) */
    int grows;                          /* the data area is an allocation of its own, grown on demand
                                           (tlmpi_ipc_grow) up to cap; 0: it follows the header, cap bytes */
    size_t cap;
    tlmpi_ipc_area_t area;              /* grows: the current data area (bytes 0: none yet) */
    tlmpi_ipc_area_t *retired;          /* grows: earlier areas kept until destroy (a captured kernel's) */
} tlmpi_ipc_t;

/* Pool data bytes from a setting: rounded down to a multiple of 512, at least 64 KiB. */
size_t tlmpi_ipc_data_bytes(long long setting);

/* Collective over comm (size <= TLMPI_NODE_MAX_RANKS ranks, all on one node; every rank calls it).
 * dev is this rank's device, ranks_on_gpu the comm's ranks on it and shared whether any GPU holds
 * several of them (the comm's topology: comm/topo.h), stream the comm's stream (the header is cleared on it, and waited for,
 * bounded, before the exchange). data_bytes: the data area's size, or with grows its most (the pool
 * then starts as its header alone, data_bytes 0 in the descriptor, and tlmpi_ipc_grow adds the data
 * area). Returns the transport, or NULL on every rank alike with this rank's reason in why (its own
 * failure, or which node ranks failed). The caller's device is restored. */
tlmpi_ipc_t *tlmpi_ipc_create(MPI_Comm comm, int rank, int size, int dev, int ranks_on_gpu, int shared,
                              size_t data_bytes, int grows, void *stream, char *why, size_t len);
/* Collective over comm (a transport made with grows; every rank calls it with the same want): a data
 * area of want bytes (a multiple of 512, at most the cap) on every rank, exchanged as the pool was
 * (one PMPI_Allgather of the handles, the peers mapped, one agreement). The caller has made sure that
 * no kernel of this rank that uses the current area is queued or running (the launch thread drained,
 * the comm's queued kernels waited for), unless captured is set: some kernel captured into a graph on
 * this rank used it. After the agreement every rank has done so, and the old area is freed (its
 * mappings closed) unless some rank said captured: then it is kept until destroy. 0 with the
 * descriptor's data[] and data_bytes updated, or -1 on every rank alike with why (the descriptor
 * unchanged). The caller's device is restored. Fault site: node_pool_grow (this rank's allocation). */
int tlmpi_ipc_grow(tlmpi_ipc_t *ipc, MPI_Comm comm, size_t want, int captured, char *why, size_t len);
/* Unmap the peers' pools, free the own pool and the error record. Not collective: the caller makes
 * sure that no peer still reads or writes this rank's pool (node.c: a last device barrier). */
void tlmpi_ipc_destroy(tlmpi_ipc_t *ipc);

/* (tlmpi_get_pool_stats, tlmpi.h: every node pool of this process, counted here) */

#endif
