/*
 * call: classification and layout of one intercepted call (see call.h), and the PMPI_* call with
 * the original arguments.
 */
#include "config.h"
#include "call.h"

void tlmpi_call_classify(tlmpi_call_t *c)
{
    c->in_place = c->sbuf == MPI_IN_PLACE;
    c->dt = tlmpi_dtype_classify(c->dtype, &c->dt_size);
    c->opc = c->coll == TLMPI_COLL_ALLGATHER ? TLMPI_OP_SUM : tlmpi_op_classify(c->op);
    c->contiguous = c->dt != TLMPI_DT_DERIVED;
    if (c->dt == TLMPI_DT_DERIVED || c->dt == TLMPI_DT_BYTES) {
        /* predefined pair types (MPI_LONG_DOUBLE_INT, ...) may have holes too */
        MPI_Aint lb, extent, tlb, textent;

        if (PMPI_Type_get_extent(c->dtype, &lb, &extent) == MPI_SUCCESS &&
            PMPI_Type_get_true_extent(c->dtype, &tlb, &textent) == MPI_SUCCESS) {
            c->contiguous = lb == 0 && tlb == 0 && extent == c->dt_size && textent == c->dt_size;
        }
    }
    if (c->coll == TLMPI_COLL_ALLGATHER && c->rtype != c->dtype) {
        c->contiguous = 0; /* differing type signatures: only the generic paths */
    }
    /* the one place that decides whether PMPI_* gets tlmpi's op instead of the caller's */
    c->own_op = 0;
    c->pmpi_op = c->op;
    if (c->coll != TLMPI_COLL_ALLGATHER && tlmpi_dtype_needs_own_op(c->dt, c->opc)) {
        MPI_Op op = tlmpi_half_op(c->dt, c->opc);

        if (op != MPI_OP_NULL) {
            c->own_op = 1;
            c->pmpi_op = op;
        }
    }
    c->msg_bytes = (size_t)c->count * (size_t)c->dt_size;
}

void tlmpi_call_layout(tlmpi_call_t *c, int rank, int size)
{
    size_t m = c->msg_bytes;
    const char *rb = c->rbuf;

    c->rank = rank;
    c->size = size;
    switch (c->coll) {
    case TLMPI_COLL_ALLGATHER:
        c->in_bytes = m;
        c->out_bytes = m * (size_t)size;
        c->own_off = (size_t)rank * m;
        c->in = c->in_place ? rb + c->own_off : c->sbuf;
        break;
    case TLMPI_COLL_REDUCE_SCATTER_BLOCK:
        c->in_bytes = m * (size_t)size;
        c->out_bytes = m;
        c->own_off = (size_t)rank * m;
        c->in = c->in_place ? rb : c->sbuf;
        break;
    default:
        c->in_bytes = c->out_bytes = m;
        c->own_off = 0;
        c->in = c->in_place ? rb : c->sbuf;
        break;
    }
}

int tlmpi_call_pmpi(const tlmpi_call_t *c, MPI_Op op)
{
    switch (c->coll) {
    case TLMPI_COLL_ALLGATHER:
#ifdef HAVE_PMPI_ALLGATHER_C
        if (c->large) {
            return PMPI_Allgather_c(c->sbuf, c->count, c->dtype, c->rbuf, c->rcount, c->rtype, c->comm);
        }
#endif
        return PMPI_Allgather(c->sbuf, (int)c->count, c->dtype, c->rbuf, (int)c->rcount, c->rtype, c->comm);
    case TLMPI_COLL_REDUCE_SCATTER_BLOCK:
#ifdef HAVE_PMPI_REDUCE_SCATTER_BLOCK_C
        if (c->large) {
            return PMPI_Reduce_scatter_block_c(c->sbuf, c->rbuf, c->count, c->dtype, op, c->comm);
        }
#endif
        return PMPI_Reduce_scatter_block(c->sbuf, c->rbuf, (int)c->count, c->dtype, op, c->comm);
    default:
#ifdef HAVE_PMPI_ALLREDUCE_C
        if (c->large) {
            return PMPI_Allreduce_c(c->sbuf, c->rbuf, c->count, c->dtype, op, c->comm);
        }
#endif
        return PMPI_Allreduce(c->sbuf, c->rbuf, (int)c->count, c->dtype, op, c->comm);
    }
}

int tlmpi_call_ipmpi(const tlmpi_call_t *c, MPI_Op op, MPI_Request *req)
{
    switch (c->coll) {
    case TLMPI_COLL_ALLGATHER:
#ifdef HAVE_PMPI_IALLGATHER_C
        if (c->large) {
            return PMPI_Iallgather_c(c->sbuf, c->count, c->dtype, c->rbuf, c->rcount, c->rtype, c->comm, req);
        }
#endif
        return PMPI_Iallgather(c->sbuf, (int)c->count, c->dtype, c->rbuf, (int)c->rcount, c->rtype, c->comm, req);
    case TLMPI_COLL_REDUCE_SCATTER_BLOCK:
#ifdef HAVE_PMPI_IREDUCE_SCATTER_BLOCK_C
        if (c->large) {
            return PMPI_Ireduce_scatter_block_c(c->sbuf, c->rbuf, c->count, c->dtype, op, c->comm, req);
        }
#endif
        return PMPI_Ireduce_scatter_block(c->sbuf, c->rbuf, (int)c->count, c->dtype, op, c->comm, req);
    default:
#ifdef HAVE_PMPI_IALLREDUCE_C
        if (c->large) {
            return PMPI_Iallreduce_c(c->sbuf, c->rbuf, c->count, c->dtype, op, c->comm, req);
        }
#endif
        return PMPI_Iallreduce(c->sbuf, c->rbuf, (int)c->count, c->dtype, op, c->comm, req);
    }
}

/* The persistent PMPI_*_init call with the original arguments (MPI-4 MPIs). */
static int call_pmpi_init(const tlmpi_call_t *c, MPI_Op op, MPI_Request *req)
{
    switch (c->coll) {
    case TLMPI_COLL_ALLGATHER:
#ifdef HAVE_PMPI_ALLGATHER_INIT_C
        if (c->large) {
            return PMPI_Allgather_init_c(c->sbuf, c->count, c->dtype, c->rbuf, c->rcount, c->rtype, c->comm, c->info,
                                         req);
        }
#endif
#ifdef HAVE_PMPI_ALLGATHER_INIT
        return PMPI_Allgather_init(c->sbuf, (int)c->count, c->dtype, c->rbuf, (int)c->rcount, c->rtype, c->comm,
                                   c->info, req);
#else
        break;
#endif
    case TLMPI_COLL_REDUCE_SCATTER_BLOCK:
#ifdef HAVE_PMPI_REDUCE_SCATTER_BLOCK_INIT_C
        if (c->large) {
            return PMPI_Reduce_scatter_block_init_c(c->sbuf, c->rbuf, c->count, c->dtype, op, c->comm, c->info, req);
        }
#endif
#ifdef HAVE_PMPI_REDUCE_SCATTER_BLOCK_INIT
        return PMPI_Reduce_scatter_block_init(c->sbuf, c->rbuf, (int)c->count, c->dtype, op, c->comm, c->info, req);
#else
        break;
#endif
    default:
#ifdef HAVE_PMPI_ALLREDUCE_INIT_C
        if (c->large) {
            return PMPI_Allreduce_init_c(c->sbuf, c->rbuf, c->count, c->dtype, op, c->comm, c->info, req);
        }
#endif
#ifdef HAVE_PMPI_ALLREDUCE_INIT
        return PMPI_Allreduce_init(c->sbuf, c->rbuf, (int)c->count, c->dtype, op, c->comm, c->info, req);
#else
        break;
#endif
    }
    (void)op, (void)req;
    return MPI_ERR_INTERN; /* not reached: the entry points exist only where the MPI has them */
}

int tlmpi_call_pmpi_form(const tlmpi_call_t *c, MPI_Op op)
{
    switch (c->form) {
    case TLMPI_FORM_NONBLOCKING:
        return tlmpi_call_ipmpi(c, op, c->ureq);
    case TLMPI_FORM_PERSISTENT:
        return call_pmpi_init(c, op, c->ureq);
    default:
        return tlmpi_call_pmpi(c, op);
    }
}
