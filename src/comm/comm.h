/*
 * comm: per-communicator state, cached in an MPI attribute (keyval with a delete callback).
 * Built lazily and collectively on the first call that needs it; every rank reaches the build
 * with the same answer to the cheap checks before it (rank-uniform), and the outcome is agreed
 * with one PMPI_Allreduce so the comm is accelerated as a whole or not at all. Ineligible comms
 * (intercomm, size 1, irregular layout) are negative-cached. All states are also on a live list so
 * MPI_Finalize can tear down comms the application never freed.
 */
#ifndef TLMPI_COMM_H
#define TLMPI_COMM_H

#include "tlmpi.h"
#include "topo.h"
#include <mpi.h>

struct tlmpi_nccl_comm;
struct tlmpi_staging;

typedef struct tlmpi_comm {
    MPI_Comm comm;              /* the application's handle (not owned) */
    int eligible;
    const char *reason;         /* why not eligible */
    tlmpi_topo_t topo;
    unsigned caps;              /* TLMPI_CAP_*, agreed by all ranks */
    struct tlmpi_nccl_comm *nccl; /* flat NCCL tier, created lazily on first use (NULL = not yet) */
    int nccl_failed;            /* NCCL setup failed on some rank: never retried */
    struct tlmpi_comm *prev, *next; /* live list */
} tlmpi_comm_t;

/* Create keyvals (core init). */
int tlmpi_comm_module_init(void);
/* Look up or build the state of comm. Collective on the first call for a comm. Returns NULL only
 * if MPI itself failed; an ineligible comm returns a state with eligible = 0. */
tlmpi_comm_t *tlmpi_comm_get(MPI_Comm comm);
/* Finalize: delete the state of every live comm (newest first), then free the keyval. */
void tlmpi_comm_module_finalize(void);

#endif
