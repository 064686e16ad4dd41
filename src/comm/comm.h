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
/* The state of comm if it was built, else NULL; never builds (not collective: graph capture). */
tlmpi_comm_t *tlmpi_comm_find(MPI_Comm comm);
/* The state of a hier comm's node or rail comm (topology-owned), built on first use with its plan
 * ignoring TLMPI_TIER and the tables: tier_env is the TLMPI_TIER value it uses instead (0 auto).
 * Collective over comm on the first call. */
tlmpi_comm_t *tlmpi_comm_get_sub(MPI_Comm comm, int tier_env);
/* Run call c (laid out for tc) on the tier the plan selected (t, algorithm word algo), falling back
 * to staging where that tier declined before data moved; *tier_p gets the tier that ran it. Keeps
 * the comm's diagnostics (calls, the call in progress); a top-level call (top = 1; not a hier step,
 * which runs inside its parent's call) on a tier with device_waits takes the GPU turn first where
 * the comm has TLMPI_CAP_TURNS (turn.h). The one dispatch of the entry points and of hier's steps. */
tlmpi_status_t tlmpi_comm_run(tlmpi_comm_t *tc, const tlmpi_call_t *c, int t, int algo, int top,
                              const tlmpi_tier_t **tier_p, int *mpi_rc_p);
/* Run one collective on a sub comm (hier's steps) through its plan, as the dispatcher runs a call:
 * the parent call's classification (type, op, memory) with these buffers and count. Counted in
 * the stats under the step's collective and tier (a hier call counts once under hier, and each of
 * its steps under the tier that ran it). */
tlmpi_status_t tlmpi_coll_run_sub(tlmpi_comm_t *sub, const tlmpi_call_t *parent, tlmpi_coll_t coll, const void *sbuf,
                                  void *rbuf, MPI_Count count, int *mpi_rc_p);
/* The same for a v-form step (MPI_Allgatherv, MPI_Reduce_scatter): count = allgatherv's send count
 * (the own block's), rcounts (and allgatherv's displs) in the parent's array types (int, or MPI_Count
 * and MPI_Aint where the parent came through a _c entry point), one entry per rank of sub. */
tlmpi_status_t tlmpi_coll_run_sub_v(tlmpi_comm_t *sub, const tlmpi_call_t *parent, tlmpi_coll_t coll, const void *sbuf,
                                    void *rbuf, MPI_Count count, const void *rcounts, const void *displs,
                                    int *mpi_rc_p);
/* Collective over comm: delete that state (a hier comm's cleanup, before its topology frees comm). */
void tlmpi_comm_release_sub(MPI_Comm comm);
/* Collective: rebuild comm's tables after tlmpi_config_set changed a setting. */
void tlmpi_comm_refresh(tlmpi_comm_t *tc);
/* Finalize: delete the state of every live comm (newest first), then free the keyval. */
void tlmpi_comm_module_finalize(void);

#endif
