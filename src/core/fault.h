/*
 * fault: named failure sites for tests (TLMPI_FAULT=site[:world_rank],...). Compiled in and off by
 * default: a site costs one load and a predicted branch. A site that fires behaves as if the call it
 * guards had failed, so the recovery code runs exactly as it would on a real failure.
 */
#ifndef TLMPI_FAULT_H
#define TLMPI_FAULT_H

#include "compiler.h"

/* The sites, in the order of tlmpi_fault_names (fault.c); TLMPI_FAULT's help in env.def lists them. */
typedef enum {
    TLMPI_FAULT_NCCL_INIT = 0,   /* flat NCCL communicator creation (plan build) */
    TLMPI_FAULT_POOL_ALLOC,      /* the pinned staging pool (plan build) */
    TLMPI_FAULT_STREAM_CREATE,   /* a communicator's streams and events (plan build) */
    TLMPI_FAULT_WAIT_STUCK,      /* a host wait never sees its GPU work complete (bounded by TLMPI_TIMEOUT) */
    TLMPI_FAULT_IPC_OPEN,        /* cudaIpcOpenMemHandle of a peer's node pool (node tier setup) */
    TLMPI_FAULT_NODE_POOL,       /* the node tier's device pool allocation (node tier setup) */
    TLMPI_FAULT_NODE_POOL_GROW,  /* the node tier's data area growing on demand: this rank's allocation fails */
    TLMPI_FAULT_DEVCOMM_INIT,    /* this rank's ncclDevCommCreate of the node tier's devcomm transport fails */
    TLMPI_FAULT_BARRIER_STUCK,   /* this rank's node kernels never arrive at their barriers (device timeout) */
    TLMPI_FAULT_RAIL_STUCK,      /* this rank's fused 2D kernels never signal their rail peers (device timeout) */
    TLMPI_FAULT_GIN_INIT,        /* this rank's ncclDevCommCreate with GIN (the fused kernels' rail) fails */
    TLMPI_FAULT_TURN_STUCK,      /* this rank never gets the GPU turn (turn.h): every rank's take ends at TLMPI_TIMEOUT */
    TLMPI_FAULT_NODE_LATE,       /* this rank's node kernels pause 2 ms after each barrier (a late peer: the others
                                    must not leave a call while it still reads their buffers) */
    TLMPI_FAULT_GIN_WAIT_FULL,   /* mutant of the GIN rail's waits: each context waits for the grid-wide target
                                    (hangs into TLMPI_TIMEOUT where more than one context was granted) */
    TLMPI_FAULT_GIN_WAIT_SHORT,  /* mutant of the GIN rail's waits: target / (2 x contexts), returns early */
    TLMPI_FAULT_FDX_SILENT,      /* this rank sends no descriptor in a descriptor exchange (fdx.c): the peers'
                                    receives end at TLMPI_TIMEOUT, naming it */
    TLMPI_FAULT_FDX_NOCRED,      /* mutant of the descriptor exchange (fdx.c): this rank checks no credentials
                                    and takes whatever message claims a rank still owed as that rank's */
    TLMPI_FAULT_COUNT
} tlmpi_fault_site_t;

extern unsigned tlmpi_fault_mask; /* bit per site armed on this rank */

/* Parse TLMPI_FAULT for this world rank; unknown sites are warned about. Returns the mask. */
unsigned tlmpi_fault_configure(const char *spec, int world_rank);
const char *tlmpi_fault_name(tlmpi_fault_site_t site);

/* 1 if site fires here (logged at info level, once per site). */
int tlmpi_fault_fire_(tlmpi_fault_site_t site);
#define tlmpi_fault_hit(_site) \
    (TLMPI_UNLIKELY(tlmpi_fault_mask != 0) && tlmpi_fault_fire_(TLMPI_FAULT_##_site))

#endif
