/*
 * tier: the paths that serve device buffers (and tlmpi's own half-precision ops on host buffers),
 * behind one interface so the dispatcher (pmpi_coll.c) never knows how a tier works.
 *   tlmpi_tier_local_caps : what this rank could do on a comm (ANDed over ranks by comm.c)
 *   tlmpi_tier_run        : run one call on the chosen path; UNSUPPORTED only before any
 *                           communication started (the dispatcher then tries the next tier)
 */
#ifndef TLMPI_TIER_H
#define TLMPI_TIER_H

#include "comm.h"
#include "dtype.h"
#include "classify.h"
#include <mpi.h>

/* One intercepted call, classified. */
typedef struct {
    tlmpi_coll_t coll;
    const void *sbuf;           /* MPI_IN_PLACE allowed */
    void *rbuf;
    MPI_Count count;            /* sendcount (allgather), recvcount (RSB), count (allreduce) */
    MPI_Datatype dtype;         /* allgather: sendtype (== recvtype for accelerated calls) */
    MPI_Op op;                  /* MPI_OP_NULL for allgather */
    MPI_Comm comm;
    int large;                  /* called through the MPI-4 _c entry point */
    tlmpi_dtype_t dt;
    int dt_size;                /* MPI_Type_size */
    int contiguous;
    tlmpi_op_t opc;
    tlmpi_mem_type_t smem, rmem;
    int sdev, rdev;             /* device ordinals, -1 for host */
    size_t bytes;               /* full vector (see tlmpi_stat_t) */
    MPI_Datatype rtype;         /* allgather: recvtype (set by the dispatcher's slow path) */
    MPI_Count rcount;           /* allgather: recvcount */
} tlmpi_call_t;

unsigned tlmpi_tier_local_caps(tlmpi_comm_t *tc);
void tlmpi_tier_comm_cleanup(tlmpi_comm_t *tc);
tlmpi_status_t tlmpi_tier_run(tlmpi_comm_t *tc, tlmpi_path_t path, const tlmpi_call_t *call);
/* Process-wide teardown of tier resources (pools, streams, NCCL library) at finalize. */
void tlmpi_tier_finalize(void);

/* staging.c: the host-staging tier, the correctness fallback for device buffers: any datatype
 * (derived ones by their true-extent span), any op, mixed host/device pairs. tc may be NULL or an
 * ineligible comm. Never returns UNSUPPORTED. */
tlmpi_status_t tlmpi_staging_run(tlmpi_comm_t *tc, const tlmpi_call_t *call);
void tlmpi_staging_finalize(void);

/* nccl.c: the flat NCCL tier. UNSUPPORTED (uniformly, before any data moved) when the comm's NCCL
 * communicator cannot be created on some rank or the call's buffers are not device memory. */
unsigned tlmpi_nccl_local_caps(tlmpi_comm_t *tc);
tlmpi_status_t tlmpi_nccl_run(tlmpi_comm_t *tc, const tlmpi_call_t *call);

/* self.c: a one-rank communicator's collective on device buffers, as one device-to-device copy on
 * tlmpi's stream (nothing to copy in place). UNSUPPORTED (before anything ran) when a buffer is not
 * device memory. */
tlmpi_status_t tlmpi_self_run(tlmpi_comm_t *tc, const tlmpi_call_t *call);
void tlmpi_nccl_comm_cleanup(tlmpi_comm_t *tc);

/* The MPI_Op to hand PMPI for this call: tlmpi's own op for half types, else the caller's. */
MPI_Op tlmpi_tier_pmpi_op(const tlmpi_call_t *call);

/* half.c: tlmpi's MPI_Ops for f16/bf16 (MPI_OP_NULL if none), and the host-op path. */
MPI_Op tlmpi_half_op(tlmpi_dtype_t dt, tlmpi_op_t op);
int tlmpi_half_init(void);
void tlmpi_half_finalize(void);

#endif
