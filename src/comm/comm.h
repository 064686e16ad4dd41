/*
 * comm: per-communicator state, cached in an MPI attribute (keyval with a delete callback).
 * Built lazily and collectively on the first call that needs it; every rank reaches the build
 * with the same answer to the cheap checks before it (rank-uniform), and the outcome is agreed
 * with one PMPI_Allreduce so the comm is accelerated as a whole or not at all, then its plan is
 * built (plan.h). Ineligible comms (intercomm, irregular layout) are negative-cached: their calls
 * are staged whole through the host (or go to a CUDA-aware MPI). All states are also on a live list so
 * MPI_Finalize can tear down comms the application never freed.
 */
#ifndef TLMPI_COMM_H
#define TLMPI_COMM_H

#include "plan.h"
#include "tier.h"
#include "tlmpi.h"
#include "topo.h"
#include <mpi.h>

typedef struct tlmpi_comm {
    MPI_Comm comm;              /* the application's handle (not owned) */
    int eligible;
    const char *reason;         /* why not eligible */
    tlmpi_topo_t topo;
    tlmpi_tier_comm_t tier;     /* what the tiers see: caps, streams, per-tier state */
    tlmpi_plan_t plan;          /* which tier serves which call */
    struct tlmpi_comm *prev, *next; /* live list */
} tlmpi_comm_t;

/* Create keyvals (core init). */
int tlmpi_comm_module_init(void);
/* Look up or build the state of comm. Collective on the first call for a comm. Returns NULL only
 * if MPI itself failed; an ineligible comm returns a state with eligible = 0. */
tlmpi_comm_t *tlmpi_comm_get(MPI_Comm comm);
/* Collective: rebuild comm's tables after tlmpi_config_set changed a setting. */
void tlmpi_comm_refresh(tlmpi_comm_t *tc);
/* Finalize: delete the state of every live comm (newest first), then free the keyval. */
void tlmpi_comm_module_finalize(void);

#endif
