/*
 * ipcreg: user buffers registered with CUDA IPC for the node tier's zero-copy persistent requests
 * (cuda/node_direct.cu; kernels.h tlmpi_node_direct_t), one registration per request, made at its
 * *_init and released when the request is freed.
 *
 * Collective over the node communicator: every rank finds the allocations holding its input and its
 * output (cuMemGetAddressRange), exports them (cudaIpcGetMemHandle of each allocation's base; one
 * handle where both buffers are in one allocation, as with MPI_IN_PLACE) and the ranks exchange one
 * record each {ok, pid, handles, offsets} with ONE PMPI_Allgather; each rank maps its peers'
 * allocations (cudaIpcOpenMemHandle) and they agree on every rank's success with ONE PMPI_Allreduce,
 * so every rank ends with the same outcome: a registration, or none (the request then runs through
 * the pools, as the non-blocking form does). A rank that cannot register (local_ok = 0: buffers not
 * plain device memory of the comm's device; memory CUDA IPC does not export: managed, cuMem/VMM,
 * stream-ordered pools; not 16-byte aligned) still takes part in both collectives with ok = 0.
 *
 * Mappings are shared, process-wide: a table of opened handles with reference counts, because CUDA
 * maps one allocation of another process at most once per process (a second cudaIpcOpenMemHandle of
 * the same handle fails), and applications register the same buffers in several requests (OSU makes
 * one per message size) or carve send and receive buffers from one allocation. A mapping is closed
 * when the last registration holding it is released. Releasing is local (no collective): the caller
 * makes sure its own last zero-copy kernel completed (every such kernel ends with a barrier after
 * which no rank touches another's buffers, so peers never read through a closed mapping).
 */
#ifndef TLMPI_IPCREG_H
#define TLMPI_IPCREG_H

#include "kernels.h"
#include <mpi.h>
#include <stddef.h>

#define TLMPI_IPCREG_MAX_MAPS (2 * TLMPI_NODE_MAX_RANKS)

typedef struct tlmpi_ipc_reg {
    tlmpi_node_direct_t d;      /* every node rank's input and output as mapped here */
    int dev;                    /* the device the mappings belong to */
    int nmaps;
    struct tlmpi_ipcreg_map *maps[TLMPI_IPCREG_MAX_MAPS]; /* the table's entries this registration holds */
} tlmpi_ipc_reg_t;

/* Collective over comm (its size <= TLMPI_NODE_MAX_RANKS ranks of one node; every rank calls it): register
 * in[0, in_bytes) and out[0, out_bytes) of device dev (local_ok = 0: this rank cannot, why_local says
 * why). Returns the registration, or NULL on every rank alike with this rank's reason in why (its own,
 * or which rank could not). The caller's device is restored. */
tlmpi_ipc_reg_t *tlmpi_ipc_reg_create(MPI_Comm comm, int rank, int size, int dev, int local_ok, const char *why_local,
                                      const void *in, size_t in_bytes, void *out, size_t out_bytes, char *why,
                                      size_t len);
/* Release a registration (NULL: nothing): its mappings' references dropped, the last one closed. Local. */
void tlmpi_ipc_reg_destroy(tlmpi_ipc_reg_t *reg);
/* Peer allocations mapped now (process-wide; tests). */
int tlmpi_ipc_reg_mapped(void);

#endif
