/*
 * call: one intercepted collective call, classified, with its layout computed once
 * (tlmpi_call_layout) so that no tier redoes byte arithmetic.
 *
 * Message size, one definition everywhere (stats, thresholds, bench): NCCL's per-rank convention.
 *   allreduce             msg_bytes = count * type size               (in = out = msg_bytes)
 *   allgather             msg_bytes = sendcount * type size (a block)  (in = msg, out = size * msg)
 *   reduce_scatter_block  msg_bytes = recvcount * type size (a block)  (in = size * msg, out = msg)
 * In place (MPI_IN_PLACE as the send buffer): the input is read from the receive buffer; for
 * allgather it is this rank's block there (at own_off), for the reductions the whole buffer.
 */
#ifndef TLMPI_CALL_H
#define TLMPI_CALL_H

#include "classify.h"
#include "dtype.h"
#include "next.h"
#include "tlmpi.h"
#include <mpi.h>
#include <stddef.h>

typedef struct tlmpi_call {
    /* the arguments */
    tlmpi_coll_t coll;
    const void *sbuf;           /* MPI_IN_PLACE allowed */
    void *rbuf;
    MPI_Count count;            /* sendcount (allgather), recvcount (RSB), count (allreduce) */
    MPI_Datatype dtype;         /* allgather: sendtype (== recvtype for accelerated calls) */
    MPI_Op op;                  /* MPI_OP_NULL for allgather */
    MPI_Comm comm;
    int large;                  /* called through the MPI-4 _c entry point */
    MPI_Datatype rtype;         /* allgather: recvtype */
    MPI_Count rcount;           /* allgather: recvcount */
    /* classification */
    tlmpi_dtype_t dt;
    int dt_size;                /* MPI_Type_size */
    int contiguous;             /* no holes, lb 0 (and, for allgather, recvtype == sendtype) */
    tlmpi_op_t opc;
    MPI_Op pmpi_op;             /* the op to hand PMPI_*: tlmpi's own for half types, else op */
    int own_op;                 /* pmpi_op is tlmpi's (half types with an arithmetic op) */
    tlmpi_mem_type_t smem, rmem;
    int sdev, rdev;             /* device ordinals, -1 for host */
    /* layout (tlmpi_call_layout) */
    int in_place;
    int rank, size;             /* in comm */
    int local_size;             /* ranks of this rank's node in comm (set by the dispatcher) */
    size_t msg_bytes;           /* the message size (see above); also what stats count */
    size_t in_bytes, out_bytes; /* bytes of the input and of the output vector */
    const char *in;             /* where the input starts (MPI_IN_PLACE resolved) */
    int aliased;                /* not in place, and the send bytes overlap the receive bytes */
    size_t own_off;             /* byte offset of this rank's block: in rbuf (allgather), in the input (RSB) */
    /* the form: NULL for a blocking call; a non-blocking or persistent start's completion record
     * (tier.h: tlmpi_pending_t), which the tiers fill instead of waiting */
    struct tlmpi_pending *pend;
    /* a persistent request's: what its tier prepared at *_init (tier.h: persist), NULL: nothing */
    void *preg;
    /* the entry point's form (tlmpi_form_t) and, for the non-blocking and persistent ones, the
     * application's request (and the persistent form's info) */
    int form;
    MPI_Request *ureq;
    MPI_Info info;
} tlmpi_call_t;

/* Classify dtype and op (after the argument checks). */
void tlmpi_call_classify(tlmpi_call_t *c);
/* Compute the layout for a comm of `size` ranks where this rank is `rank`. */
void tlmpi_call_layout(tlmpi_call_t *c, int rank, int size);

/* 1 if both buffers of the call are device (or managed) memory (MPI_IN_PLACE: the receive buffer). */
static inline int tlmpi_call_all_device(const tlmpi_call_t *c)
{
    return tlmpi_mem_is_device(c->rmem) && (c->in_place || tlmpi_mem_is_device(c->smem));
}

/* The call of c's form through the MPI (PMPI_*) with host stand-ins for its device buffers (NULL,
 * MPI_IN_PLACE and sendbuf == recvbuf kept): for arguments the MPI rejects before it reads a buffer
 * (MPI_COMM_NULL, MPI_DATATYPE_NULL, MPI_OP_NULL), so that the MPI picks the error class (MPICH
 * reports MPI_DATATYPE_NULL in a reduction as MPI_ERR_OP) and runs its error handler. */
int tlmpi_call_refused(const tlmpi_call_t *c);
/* PMPI_* with the call's arguments and the given op (int or _c entry point as called). */
int tlmpi_call_pmpi(const tlmpi_call_t *c, MPI_Op op);
/* The non-blocking PMPI_I* call with the original arguments (op as above). */
int tlmpi_call_ipmpi(const tlmpi_call_t *c, MPI_Op op, MPI_Request *req);
/* The call of c's form with the original arguments (blocking, I* or *_init with c->ureq) and the
 * given op, through m: tlmpi_pmpi (the MPI's PMPI_*: calls tlmpi serves) or tlmpi_next (the next
 * layer's MPI_*: the calls it passes through). */
int tlmpi_call_form(const tlmpi_mpi_fns_t *m, const tlmpi_call_t *c, MPI_Op op);

#endif
