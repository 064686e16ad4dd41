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
 *
 * The siblings (tlmpi_coll_sibling: MPI_Allgatherv, MPI_Reduce_scatter, MPI_Bcast, MPI_Reduce,
 * MPI_Alltoall), every value rank-uniform:
 *   allgatherv            msg_bytes = the largest block, max(recvcounts[i]) * type size (the same as
 *                         allgather's for equal counts; every rank sees the whole counts array)
 *   reduce_scatter        msg_bytes = the largest result block, max(recvcounts[i]) * type size
 *   bcast, reduce         msg_bytes = count * type size (the whole vector)
 *   alltoall              msg_bytes = one rank's block to one peer, sendcount * type size
 * The record keeps the caller's arguments as the MPI takes them: bcast's buffer is rbuf (sbuf is
 * MPI_IN_PLACE), allgatherv's and reduce_scatter's counts arrays (and allgatherv's displacements) are
 * the caller's (int, or MPI_Count / MPI_Aint from the _c entry points: tlmpi_call_vcount, _vdispl).
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
    MPI_Datatype rtype;         /* allgather, allgatherv, alltoall: recvtype */
    MPI_Count rcount;           /* allgather, alltoall: recvcount */
    int root;                   /* bcast, reduce */
    const void *rcounts;        /* allgatherv, reduce_scatter: recvcounts (int[], MPI_Count[] if large) */
    const void *displs;         /* allgatherv: displs (int[], MPI_Aint[] if large) */
    /* the siblings' classification (tlmpi_call_classify) */
    int inter;                  /* an intercommunicator */
    int vn;                     /* entries of rcounts: allgatherv the (remote) group's size,
                                   reduce_scatter the local group's */
    MPI_Count vtotal;           /* sum of rcounts (-1: some count is negative: the MPI answers) */
    int root_here;              /* reduce: this rank's recvbuf is significant (the root, MPI_ROOT) */
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
    /* a persistent request's: what its tier prepared at *_init (tier.h: persist), NULL: nothing; and
     * that tier (tlmpi_tier_id_t: a start that falls back to another tier must not read it) */
    void *preg;
    int preg_tier;
    /* the entry point's form (tlmpi_form_t) and, for the non-blocking and persistent ones, the
     * application's request (and the persistent form's info) */
    int form;
    MPI_Request *ureq;
    MPI_Info info;
} tlmpi_call_t;

/* The collectives that reduce (take an op) */
#define TLMPI_COLL_REDUCING_MASK                                                                   \
    ((1u << TLMPI_COLL_REDUCE_SCATTER_BLOCK) | (1u << TLMPI_COLL_ALLREDUCE) | (1u << TLMPI_COLL_REDUCE_SCATTER) | \
     (1u << TLMPI_COLL_REDUCE))
static inline int tlmpi_coll_reduces(tlmpi_coll_t coll)
{
    return ((1u << coll) & TLMPI_COLL_REDUCING_MASK) != 0;
}
/* MPI_Allgatherv, MPI_Reduce_scatter, MPI_Bcast, MPI_Reduce, MPI_Alltoall */
static inline int tlmpi_coll_sibling(tlmpi_coll_t coll)
{
    return coll >= TLMPI_COLL_ALLGATHERV;
}
/* The v-forms: MPI_Allgatherv, MPI_Reduce_scatter */
static inline int tlmpi_coll_vform(tlmpi_coll_t coll)
{
    return coll == TLMPI_COLL_ALLGATHERV || coll == TLMPI_COLL_REDUCE_SCATTER;
}

/* Classify dtype and op (after the argument checks). */
void tlmpi_call_classify(tlmpi_call_t *c);
/* Compute the layout for a comm of `size` ranks where this rank is `rank`. */
void tlmpi_call_layout(tlmpi_call_t *c, int rank, int size);

/* recvcounts[i] and displs[i] of a v-form, as called (int or large-count arrays) */
static inline MPI_Count tlmpi_call_vcount(const tlmpi_call_t *c, int i)
{
    return c->large ? ((const MPI_Count *)c->rcounts)[i] : (MPI_Count)((const int *)c->rcounts)[i];
}
static inline MPI_Aint tlmpi_call_vdispl(const tlmpi_call_t *c, int i)
{
    return c->large ? ((const MPI_Aint *)c->displs)[i] : (MPI_Aint)((const int *)c->displs)[i];
}
/* The sum of the first n counts and in *vmax the largest; -1 (and 0) where some count is negative. */
static inline MPI_Count tlmpi_call_vsum(const tlmpi_call_t *c, int n, MPI_Count *vmax)
{
    MPI_Count total = 0, m = 0;
    int i;

    for (i = 0; i < n; i++) {
        MPI_Count k = tlmpi_call_vcount(c, i);

        if (k < 0) {
            *vmax = 0;
            return -1;
        }
        total += k;
        m = k > m ? k : m;
    }
    *vmax = m;
    return total;
}

/* 1 when the MPI, not tlmpi, decides whether a call's arguments are valid: overlapping buffers, or a
 * reduction of a datatype tlmpi does not reduce itself (pair, complex, bool, derived, ...) or with
 * an op other than SUM/PROD/MIN/MAX (logical, bitwise, MAXLOC, REPLACE, user ops, ...). Such calls
 * go to a CUDA-aware MPI or to staging, where the MPI gets them on host memory (a persistent one is
 * checked by the MPI at *_init: tlmpi_staging_check_init; so is every persistent sibling, whose roots
 * and counts the MPI checks; a stream-ordered one that cannot run: tlmpi_staging_check_args); and the
 * siblings' own argument errors (a negative count in recvcounts, a root out of range). Needs the
 * layout (c->size: tlmpi_call_layout).
 * Allgather moves any datatype as it is. Needs the classification (tlmpi_call_classify). */
static inline int tlmpi_call_mpi_decides(const tlmpi_call_t *c)
{
    return c->aliased || (tlmpi_coll_reduces(c->coll) && (c->dt >= TLMPI_DT_NUM_ARITH || c->opc >= TLMPI_OP_NUM_ARITH)) ||
           (tlmpi_coll_sibling(c->coll) &&
            (c->vtotal < 0 || ((c->coll == TLMPI_COLL_BCAST || c->coll == TLMPI_COLL_REDUCE) && !c->inter &&
                               (c->root < 0 || c->root >= c->size))));
}

/* 1 if both buffers of the call are device (or managed) memory (MPI_IN_PLACE: the receive buffer). */
static inline int tlmpi_call_all_device(const tlmpi_call_t *c)
{
    return tlmpi_mem_is_device(c->rmem) && (c->in_place || tlmpi_mem_is_device(c->smem));
}

/* 1 if the call has an output that is not device memory (the root's of an MPI_Reduce whose inputs are
 * device memory: the node tier takes it by its input, src/tier/node.c) */
static inline int tlmpi_call_host_out(const tlmpi_call_t *c)
{
    return c->out_bytes && !tlmpi_mem_is_device(c->rmem);
}

/* 1 if a kernel on device dev cannot use the call's buffers as they are: a device buffer on another
 * device, or an output that is not device memory (tlmpi_call_host_out) */
static inline int tlmpi_call_off_device(const tlmpi_call_t *c, int dev)
{
    return (c->rmem == TLMPI_MEM_DEVICE && c->rdev != dev) ||
           (!c->in_place && c->smem == TLMPI_MEM_DEVICE && c->sdev != dev) || tlmpi_call_host_out(c);
}

/* The call of c's form through the MPI (PMPI_*) with host stand-ins for its device buffers (NULL,
 * MPI_IN_PLACE and sendbuf == recvbuf kept): for arguments the MPI rejects before it reads a buffer
 * (MPI_COMM_NULL, MPI_DATATYPE_NULL, MPI_OP_NULL), so that the MPI picks the error class (MPICH
 * reports MPI_DATATYPE_NULL in a reduction as MPI_ERR_OP) and runs its error handler. */
int tlmpi_call_refused(const tlmpi_call_t *c);

/* The MPI's verdict as a return code, not the caller's error handler's to see: comm's handler is
 * MPI_ERRORS_RETURN until tlmpi_errh_restore(comm, the value returned) (MPI_ERRHANDLER_NULL: the
 * handler could not be read, and is left alone). */
MPI_Errhandler tlmpi_errh_quiet(MPI_Comm comm);
void tlmpi_errh_restore(MPI_Comm comm, MPI_Errhandler eh);
/* PMPI_* with the call's arguments and the given op (int or _c entry point as called). */
int tlmpi_call_pmpi(const tlmpi_call_t *c, MPI_Op op);
/* The non-blocking PMPI_I* call with the original arguments (op as above). */
int tlmpi_call_ipmpi(const tlmpi_call_t *c, MPI_Op op, MPI_Request *req);
/* The call of c's form with the original arguments (blocking, I* or *_init with c->ureq) and the
 * given op, through m: tlmpi_pmpi (the MPI's PMPI_*: calls tlmpi serves) or tlmpi_next (the next
 * layer's MPI_*: the calls it passes through). */
int tlmpi_call_form(const tlmpi_mpi_fns_t *m, const tlmpi_call_t *c, MPI_Op op);

#endif
