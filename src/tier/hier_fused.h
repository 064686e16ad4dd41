/*
 * hier_fused: the host side of the hier tier's fused algorithm (kernels: cuda/hier_fused_*.cu, rail
 * operations: cuda/rail.cuh): one kernel per call for the whole 2D collective, the intra-node
 * phases over the node's pools and the inter-node ones as rail puts with signals.
 *
 * Rail transport, chosen at the hier tier's setup (TLMPI_HIER_FUSED) and agreed by every rank:
 *   gin       the NCCL Device API's GPU-initiated networking: available only where the kernels were
 *             built with GIN and ncclDevCommCreate with GIN signals succeeds on every rank (an RDMA
 *             NIC with NCCL's GIN support). Not in this build: the probe (hier_gin.c) says why, once,
 *             agreed, and auto goes on to the emulated rail or to none.
 *   emulated  the comm's ranks share one host (fake nodes): one pool per rank (TLMPI_NODE_POOL)
 *             mapped by every rank of the comm with CUDA IPC (src/transport/ipc.c, at most
 *             TLMPI_NODE_MAX_RANKS ranks in all); a rail put is a copy into the rail peer's mapped pool,
 *             a signal a release fence plus a system-scope atomic add, a wait an acquire poll.
 * The host keeps the communicator's node barrier epoch, rail step and signal totals (the running
 * totals rail.cuh's targets come from), the same on every rank because every rank launches the
 * same kernels. Teardown: the stream drained, then PMPI_Barrier over the comm (no peer still writes
 * this rank's pool), then the pools unmapped and freed.
 */
#ifndef TLMPI_HIER_FUSED_H
#define TLMPI_HIER_FUSED_H

#include "tier.h"

typedef struct tlmpi_hier_fused tlmpi_hier_fused_t;

/* Collective over tc->comm: the fused algorithm's rail transport as TLMPI_HIER_FUSED allows, or
 * NULL on every rank alike with the reason in why (not an error: hier then runs host-ordered steps). */
tlmpi_hier_fused_t *tlmpi_hier_fused_create(tlmpi_tier_comm_t *tc, char *why, size_t len);
/* One call (every rank of the comm with the same call): TLMPI_OK, TLMPI_ERR_UNSUPPORTED before any
 * data moved (a launch failure: the caller falls back), or a wait's error; a device wait that timed
 * out aborts the job with the diagnostic. */
tlmpi_status_t tlmpi_hier_fused_run(tlmpi_tier_comm_t *tc, tlmpi_hier_fused_t *hf, const tlmpi_call_t *c, int ctas_knob);
/* A started fused call's kernel completed: the check run makes after its wait (the error record). */
void tlmpi_hier_fused_complete(tlmpi_tier_comm_t *tc, tlmpi_hier_fused_t *hf, const tlmpi_call_t *c);
/* Collective over tc->comm (teardown). */
void tlmpi_hier_fused_destroy(tlmpi_tier_comm_t *tc, tlmpi_hier_fused_t *hf);
/* "emulated rail (CUDA IPC), 2 groups, pool 128 MiB, 64 CTAs max" */
void tlmpi_hier_fused_describe(const tlmpi_hier_fused_t *hf, char *buf, size_t len);

#endif
