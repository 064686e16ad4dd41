/*
 * call: classification and layout of one intercepted call (see call.h), and the call with the
 * original arguments to the MPI (PMPI_*) or to the next layer (core/next.h).
 */
#include "config.h"
#include "call.h"

#include <stdint.h>

/* The siblings' counts (call.h): the entries of rcounts, their sum and largest, the root's place. Only
 * PMPI queries of the communicator (the caller checked it is not MPI_COMM_NULL). */
static void classify_sibling(tlmpi_call_t *c)
{
    int size = 0, rank = -1;
    MPI_Count vmax = 0;

    c->inter = 0;
    c->vn = 0;
    c->vtotal = 0;
    c->root_here = 0;
    if (PMPI_Comm_test_inter(c->comm, &c->inter) != MPI_SUCCESS) {
        c->inter = 0;
    }
    switch (c->coll) {
    case TLMPI_COLL_ALLGATHERV:
    case TLMPI_COLL_REDUCE_SCATTER:
        if ((c->inter && c->coll == TLMPI_COLL_ALLGATHERV ? PMPI_Comm_remote_size(c->comm, &size)
                                                         : PMPI_Comm_size(c->comm, &size)) != MPI_SUCCESS ||
            !c->rcounts) {
            size = 0;
        }
        c->vn = size;
        c->vtotal = tlmpi_call_vsum(c, size, &vmax);
        if (c->coll == TLMPI_COLL_ALLGATHERV && c->rtype != c->dtype) {
            int rsz = 0; /* recvcounts are in recvtype's units */

            c->msg_bytes = PMPI_Type_size(c->rtype, &rsz) == MPI_SUCCESS && rsz > 0 ? (size_t)vmax * (size_t)rsz : 0;
        } else {
            c->msg_bytes = (size_t)vmax * (size_t)c->dt_size;
        }
        break;
    case TLMPI_COLL_REDUCE:
        if (PMPI_Comm_rank(c->comm, &rank) != MPI_SUCCESS) {
            rank = -1;
        }
        c->root_here = c->inter ? c->root == MPI_ROOT : rank == c->root;
        if (!c->root_here) {
            /* recvbuf is not significant: neither classified nor staged (any pointer, NULL too) */
            c->rmem = TLMPI_MEM_HOST;
            c->rdev = -1;
        }
        if (c->inter && c->root == MPI_PROC_NULL) {
            c->smem = TLMPI_MEM_HOST; /* an intercommunicator's root group but its root: nothing */
            c->sdev = -1;
        }
        c->msg_bytes = c->count > 0 ? (size_t)c->count * (size_t)c->dt_size : 0;
        break;
    case TLMPI_COLL_BCAST:
        if (c->inter && c->root == MPI_PROC_NULL) {
            c->rmem = TLMPI_MEM_HOST; /* the buffer is not significant there */
            c->rdev = -1;
        }
        /* fall through */
    default:
        c->msg_bytes = c->count > 0 ? (size_t)c->count * (size_t)c->dt_size : 0;
        break;
    }
}

void tlmpi_call_classify(tlmpi_call_t *c)
{
    c->in_place = c->sbuf == MPI_IN_PLACE;
    c->dt = tlmpi_dtype_classify(c->dtype, &c->dt_size);
    c->opc = !tlmpi_coll_reduces(c->coll) ? TLMPI_OP_SUM : tlmpi_op_classify(c->op);
    c->contiguous = c->dt != TLMPI_DT_DERIVED;
    if (c->dt == TLMPI_DT_DERIVED || c->dt == TLMPI_DT_BYTES) {
        /* predefined pair types (MPI_LONG_DOUBLE_INT, ...) may have holes too */
        MPI_Aint lb, extent, tlb, textent;

        if (PMPI_Type_get_extent(c->dtype, &lb, &extent) == MPI_SUCCESS &&
            PMPI_Type_get_true_extent(c->dtype, &tlb, &textent) == MPI_SUCCESS) {
            c->contiguous = lb == 0 && tlb == 0 && extent == c->dt_size && textent == c->dt_size;
        }
    }
    if ((c->coll == TLMPI_COLL_ALLGATHER || c->coll == TLMPI_COLL_ALLGATHERV || c->coll == TLMPI_COLL_ALLTOALL) &&
        c->rtype != c->dtype) {
        c->contiguous = 0; /* differing type signatures: only the generic paths */
    }
    /* the one place that decides whether PMPI_* gets tlmpi's op instead of the caller's */
    c->own_op = 0;
    c->pmpi_op = c->op;
    if (tlmpi_coll_reduces(c->coll) && tlmpi_dtype_needs_own_op(c->dt, c->opc)) {
        MPI_Op op = tlmpi_half_op(c->dt, c->opc);

        if (op != MPI_OP_NULL) {
            c->own_op = 1;
            c->pmpi_op = op;
        }
    }
    c->msg_bytes = (size_t)c->count * (size_t)c->dt_size;
    if (tlmpi_coll_sibling(c->coll)) {
        classify_sibling(c);
    }
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
    case TLMPI_COLL_ALLGATHERV: {
        /* the output: from rbuf to the end of the furthest block (contiguous types reach the tiers) */
        size_t end = 0;
        int i;

        for (i = 0; c->vtotal >= 0 && i < c->vn; i++) {
            MPI_Aint d = tlmpi_call_vdispl(c, i);
            size_t e = d >= 0 ? ((size_t)d + (size_t)tlmpi_call_vcount(c, i)) * (size_t)c->dt_size : 0;

            end = e > end ? e : end;
        }
        c->own_off = rank < c->vn && c->vtotal >= 0 ? (size_t)tlmpi_call_vdispl(c, rank) * (size_t)c->dt_size : 0;
        c->in_bytes = rank < c->vn && c->vtotal >= 0 ? (size_t)tlmpi_call_vcount(c, rank) * (size_t)c->dt_size : 0;
        c->out_bytes = end;
        c->in = c->in_place ? rb + c->own_off : c->sbuf;
        break;
    }
    case TLMPI_COLL_REDUCE_SCATTER:
        c->in_bytes = c->vtotal > 0 ? (size_t)c->vtotal * (size_t)c->dt_size : 0;
        c->out_bytes = rank < c->vn && c->vtotal >= 0 ? (size_t)tlmpi_call_vcount(c, rank) * (size_t)c->dt_size : 0;
        c->own_off = 0;
        for (int i = 0; i < rank && i < c->vn && c->vtotal >= 0; i++) {
            c->own_off += (size_t)tlmpi_call_vcount(c, i) * (size_t)c->dt_size;
        }
        c->in = c->in_place ? rb : c->sbuf;
        break;
    case TLMPI_COLL_ALLTOALL:
        c->in_bytes = c->out_bytes = m * (size_t)size;
        c->own_off = (size_t)rank * m;
        c->in = c->in_place ? rb : c->sbuf;
        break;
    case TLMPI_COLL_REDUCE:
        c->in_bytes = m;
        c->out_bytes = c->root_here ? m : 0;
        c->own_off = 0;
        c->in = c->in_place ? rb : c->sbuf;
        break;
    default: /* allreduce, bcast (its buffer is rbuf: in place) */
        c->in_bytes = c->out_bytes = m;
        c->own_off = 0;
        c->in = c->in_place ? rb : c->sbuf;
        break;
    }
    /* [sbuf, +in_bytes) against [rbuf, +out_bytes): exact for contiguous types, which alone reach
     * tiers other than staging (staging compares the datatypes' true-extent spans) */
    c->aliased = !c->in_place && c->in_bytes && c->out_bytes && (uintptr_t)c->sbuf < (uintptr_t)rb + c->out_bytes &&
                 (uintptr_t)rb < (uintptr_t)c->sbuf + c->in_bytes;
}

/* The blocking call with the original arguments, through m (the MPI's PMPI_* or the next layer). */
static int call_blocking(const tlmpi_mpi_fns_t *m, const tlmpi_call_t *c, MPI_Op op)
{
    switch (c->coll) {
    case TLMPI_COLL_ALLGATHERV:
#ifdef HAVE_PMPI_ALLGATHERV_C
        if (c->large) {
            return m->allgatherv_c(c->sbuf, c->count, c->dtype, c->rbuf, (const MPI_Count *)c->rcounts,
                                   (const MPI_Aint *)c->displs, c->rtype, c->comm);
        }
#endif
        return m->allgatherv(c->sbuf, (int)c->count, c->dtype, c->rbuf, (const int *)c->rcounts,
                             (const int *)c->displs, c->rtype, c->comm);
    case TLMPI_COLL_REDUCE_SCATTER:
#ifdef HAVE_PMPI_REDUCE_SCATTER_C
        if (c->large) {
            return m->reduce_scatter_c(c->sbuf, c->rbuf, (const MPI_Count *)c->rcounts, c->dtype, op, c->comm);
        }
#endif
        return m->reduce_scatter(c->sbuf, c->rbuf, (const int *)c->rcounts, c->dtype, op, c->comm);
    case TLMPI_COLL_BCAST:
#ifdef HAVE_PMPI_BCAST_C
        if (c->large) {
            return m->bcast_c(c->rbuf, c->count, c->dtype, c->root, c->comm);
        }
#endif
        return m->bcast(c->rbuf, (int)c->count, c->dtype, c->root, c->comm);
    case TLMPI_COLL_REDUCE:
#ifdef HAVE_PMPI_REDUCE_C
        if (c->large) {
            return m->reduce_c(c->sbuf, c->rbuf, c->count, c->dtype, op, c->root, c->comm);
        }
#endif
        return m->reduce(c->sbuf, c->rbuf, (int)c->count, c->dtype, op, c->root, c->comm);
    case TLMPI_COLL_ALLTOALL:
#ifdef HAVE_PMPI_ALLTOALL_C
        if (c->large) {
            return m->alltoall_c(c->sbuf, c->count, c->dtype, c->rbuf, c->rcount, c->rtype, c->comm);
        }
#endif
        return m->alltoall(c->sbuf, (int)c->count, c->dtype, c->rbuf, (int)c->rcount, c->rtype, c->comm);
    case TLMPI_COLL_ALLGATHER:
#ifdef HAVE_PMPI_ALLGATHER_C
        if (c->large) {
            return m->allgather_c(c->sbuf, c->count, c->dtype, c->rbuf, c->rcount, c->rtype, c->comm);
        }
#endif
        return m->allgather(c->sbuf, (int)c->count, c->dtype, c->rbuf, (int)c->rcount, c->rtype, c->comm);
    case TLMPI_COLL_REDUCE_SCATTER_BLOCK:
#ifdef HAVE_PMPI_REDUCE_SCATTER_BLOCK_C
        if (c->large) {
            return m->reduce_scatter_block_c(c->sbuf, c->rbuf, c->count, c->dtype, op, c->comm);
        }
#endif
        return m->reduce_scatter_block(c->sbuf, c->rbuf, (int)c->count, c->dtype, op, c->comm);
    default:
#ifdef HAVE_PMPI_ALLREDUCE_C
        if (c->large) {
            return m->allreduce_c(c->sbuf, c->rbuf, c->count, c->dtype, op, c->comm);
        }
#endif
        return m->allreduce(c->sbuf, c->rbuf, (int)c->count, c->dtype, op, c->comm);
    }
}

/* The non-blocking call with the original arguments, through m. */
static int call_nonblocking(const tlmpi_mpi_fns_t *m, const tlmpi_call_t *c, MPI_Op op, MPI_Request *req)
{
    switch (c->coll) {
    case TLMPI_COLL_ALLGATHERV:
#ifdef HAVE_PMPI_IALLGATHERV_C
        if (c->large) {
            return m->iallgatherv_c(c->sbuf, c->count, c->dtype, c->rbuf, (const MPI_Count *)c->rcounts,
                                   (const MPI_Aint *)c->displs, c->rtype, c->comm, req);
        }
#endif
        return m->iallgatherv(c->sbuf, (int)c->count, c->dtype, c->rbuf, (const int *)c->rcounts,
                             (const int *)c->displs, c->rtype, c->comm, req);
    case TLMPI_COLL_REDUCE_SCATTER:
#ifdef HAVE_PMPI_IREDUCE_SCATTER_C
        if (c->large) {
            return m->ireduce_scatter_c(c->sbuf, c->rbuf, (const MPI_Count *)c->rcounts, c->dtype, op, c->comm, req);
        }
#endif
        return m->ireduce_scatter(c->sbuf, c->rbuf, (const int *)c->rcounts, c->dtype, op, c->comm, req);
    case TLMPI_COLL_BCAST:
#ifdef HAVE_PMPI_IBCAST_C
        if (c->large) {
            return m->ibcast_c(c->rbuf, c->count, c->dtype, c->root, c->comm, req);
        }
#endif
        return m->ibcast(c->rbuf, (int)c->count, c->dtype, c->root, c->comm, req);
    case TLMPI_COLL_REDUCE:
#ifdef HAVE_PMPI_IREDUCE_C
        if (c->large) {
            return m->ireduce_c(c->sbuf, c->rbuf, c->count, c->dtype, op, c->root, c->comm, req);
        }
#endif
        return m->ireduce(c->sbuf, c->rbuf, (int)c->count, c->dtype, op, c->root, c->comm, req);
    case TLMPI_COLL_ALLTOALL:
#ifdef HAVE_PMPI_IALLTOALL_C
        if (c->large) {
            return m->ialltoall_c(c->sbuf, c->count, c->dtype, c->rbuf, c->rcount, c->rtype, c->comm, req);
        }
#endif
        return m->ialltoall(c->sbuf, (int)c->count, c->dtype, c->rbuf, (int)c->rcount, c->rtype, c->comm, req);
    case TLMPI_COLL_ALLGATHER:
#ifdef HAVE_PMPI_IALLGATHER_C
        if (c->large) {
            return m->iallgather_c(c->sbuf, c->count, c->dtype, c->rbuf, c->rcount, c->rtype, c->comm, req);
        }
#endif
        return m->iallgather(c->sbuf, (int)c->count, c->dtype, c->rbuf, (int)c->rcount, c->rtype, c->comm, req);
    case TLMPI_COLL_REDUCE_SCATTER_BLOCK:
#ifdef HAVE_PMPI_IREDUCE_SCATTER_BLOCK_C
        if (c->large) {
            return m->ireduce_scatter_block_c(c->sbuf, c->rbuf, c->count, c->dtype, op, c->comm, req);
        }
#endif
        return m->ireduce_scatter_block(c->sbuf, c->rbuf, (int)c->count, c->dtype, op, c->comm, req);
    default:
#ifdef HAVE_PMPI_IALLREDUCE_C
        if (c->large) {
            return m->iallreduce_c(c->sbuf, c->rbuf, c->count, c->dtype, op, c->comm, req);
        }
#endif
        return m->iallreduce(c->sbuf, c->rbuf, (int)c->count, c->dtype, op, c->comm, req);
    }
}

/* The persistent *_init call with the original arguments, through m (MPI-4 MPIs). */
static int call_init(const tlmpi_mpi_fns_t *m, const tlmpi_call_t *c, MPI_Op op, MPI_Request *req)
{
    switch (c->coll) {
    case TLMPI_COLL_ALLGATHERV:
#ifdef HAVE_PMPI_ALLGATHERV_INIT_C
        if (c->large) {
            return m->allgatherv_init_c(c->sbuf, c->count, c->dtype, c->rbuf, (const MPI_Count *)c->rcounts,
                                   (const MPI_Aint *)c->displs, c->rtype, c->comm, c->info, req);
        }
#endif
#ifdef HAVE_PMPI_ALLGATHERV_INIT
        return m->allgatherv_init(c->sbuf, (int)c->count, c->dtype, c->rbuf, (const int *)c->rcounts,
                             (const int *)c->displs, c->rtype, c->comm, c->info, req);
#else
        break;
#endif
    case TLMPI_COLL_REDUCE_SCATTER:
#ifdef HAVE_PMPI_REDUCE_SCATTER_INIT_C
        if (c->large) {
            return m->reduce_scatter_init_c(c->sbuf, c->rbuf, (const MPI_Count *)c->rcounts, c->dtype, op, c->comm, c->info, req);
        }
#endif
#ifdef HAVE_PMPI_REDUCE_SCATTER_INIT
        return m->reduce_scatter_init(c->sbuf, c->rbuf, (const int *)c->rcounts, c->dtype, op, c->comm, c->info, req);
#else
        break;
#endif
    case TLMPI_COLL_BCAST:
#ifdef HAVE_PMPI_BCAST_INIT_C
        if (c->large) {
            return m->bcast_init_c(c->rbuf, c->count, c->dtype, c->root, c->comm, c->info, req);
        }
#endif
#ifdef HAVE_PMPI_BCAST_INIT
        return m->bcast_init(c->rbuf, (int)c->count, c->dtype, c->root, c->comm, c->info, req);
#else
        break;
#endif
    case TLMPI_COLL_REDUCE:
#ifdef HAVE_PMPI_REDUCE_INIT_C
        if (c->large) {
            return m->reduce_init_c(c->sbuf, c->rbuf, c->count, c->dtype, op, c->root, c->comm, c->info, req);
        }
#endif
#ifdef HAVE_PMPI_REDUCE_INIT
        return m->reduce_init(c->sbuf, c->rbuf, (int)c->count, c->dtype, op, c->root, c->comm, c->info, req);
#else
        break;
#endif
    case TLMPI_COLL_ALLTOALL:
#ifdef HAVE_PMPI_ALLTOALL_INIT_C
        if (c->large) {
            return m->alltoall_init_c(c->sbuf, c->count, c->dtype, c->rbuf, c->rcount, c->rtype, c->comm, c->info, req);
        }
#endif
#ifdef HAVE_PMPI_ALLTOALL_INIT
        return m->alltoall_init(c->sbuf, (int)c->count, c->dtype, c->rbuf, (int)c->rcount, c->rtype, c->comm, c->info, req);
#else
        break;
#endif
    case TLMPI_COLL_ALLGATHER:
#ifdef HAVE_PMPI_ALLGATHER_INIT_C
        if (c->large) {
            return m->allgather_init_c(c->sbuf, c->count, c->dtype, c->rbuf, c->rcount, c->rtype, c->comm, c->info,
                                       req);
        }
#endif
#ifdef HAVE_PMPI_ALLGATHER_INIT
        return m->allgather_init(c->sbuf, (int)c->count, c->dtype, c->rbuf, (int)c->rcount, c->rtype, c->comm,
                                 c->info, req);
#else
        break;
#endif
    case TLMPI_COLL_REDUCE_SCATTER_BLOCK:
#ifdef HAVE_PMPI_REDUCE_SCATTER_BLOCK_INIT_C
        if (c->large) {
            return m->reduce_scatter_block_init_c(c->sbuf, c->rbuf, c->count, c->dtype, op, c->comm, c->info, req);
        }
#endif
#ifdef HAVE_PMPI_REDUCE_SCATTER_BLOCK_INIT
        return m->reduce_scatter_block_init(c->sbuf, c->rbuf, (int)c->count, c->dtype, op, c->comm, c->info, req);
#else
        break;
#endif
    default:
#ifdef HAVE_PMPI_ALLREDUCE_INIT_C
        if (c->large) {
            return m->allreduce_init_c(c->sbuf, c->rbuf, c->count, c->dtype, op, c->comm, c->info, req);
        }
#endif
#ifdef HAVE_PMPI_ALLREDUCE_INIT
        return m->allreduce_init(c->sbuf, c->rbuf, (int)c->count, c->dtype, op, c->comm, c->info, req);
#else
        break;
#endif
    }
    (void)m, (void)op, (void)req;
    return MPI_ERR_INTERN; /* not reached: the entry points exist only where the MPI has them */
}

int tlmpi_call_form(const tlmpi_mpi_fns_t *m, const tlmpi_call_t *c, MPI_Op op)
{
    switch (c->form) {
    case TLMPI_FORM_NONBLOCKING:
        return call_nonblocking(m, c, op, c->ureq);
    case TLMPI_FORM_PERSISTENT:
        return call_init(m, c, op, c->ureq);
    default:
        return call_blocking(m, c, op);
    }
}

MPI_Errhandler tlmpi_errh_quiet(MPI_Comm comm)
{
    MPI_Errhandler eh = MPI_ERRHANDLER_NULL;

    if (PMPI_Comm_get_errhandler(comm, &eh) != MPI_SUCCESS) {
        return MPI_ERRHANDLER_NULL;
    }
    PMPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    return eh;
}

void tlmpi_errh_restore(MPI_Comm comm, MPI_Errhandler eh)
{
    if (eh != MPI_ERRHANDLER_NULL) {
        PMPI_Comm_set_errhandler(comm, eh);
        PMPI_Errhandler_free(&eh);
    }
}

int tlmpi_call_refused(const tlmpi_call_t *c)
{
    static char stand_in[2][64] __attribute__((aligned(64)));
    tlmpi_call_t h = *c;

    if (c->sbuf && c->sbuf != MPI_IN_PLACE && tlmpi_mem_is_device(c->smem)) {
        h.sbuf = c->sbuf == c->rbuf ? stand_in[1] : stand_in[0];
    }
    if (c->rbuf && tlmpi_mem_is_device(c->rmem)) {
        h.rbuf = stand_in[1];
    }
    return tlmpi_call_form(&tlmpi_pmpi, &h, c->op);
}

int tlmpi_call_pmpi(const tlmpi_call_t *c, MPI_Op op)
{
    return call_blocking(&tlmpi_pmpi, c, op);
}

int tlmpi_call_ipmpi(const tlmpi_call_t *c, MPI_Op op, MPI_Request *req)
{
    return call_nonblocking(&tlmpi_pmpi, c, op, req);
}
