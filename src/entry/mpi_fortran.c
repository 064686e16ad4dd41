/*
 * The Fortran entry points of the intercepted calls (the collectives, their siblings MPI_ALLGATHERV,
 * MPI_REDUCE_SCATTER, MPI_BCAST, MPI_REDUCE, MPI_ALLTOALL, the MPI_I* forms of all, the completion
 * calls), for Open MPI builds only (TLMPI_FORTRAN_ENTRY, m4/tlmpi_mpi.m4).
 *
 * Open MPI's Fortran bindings (mpif.h, use mpi, use mpi_f08) call PMPI_* directly, so Fortran calls
 * never reach a C MPI_* interposer. libtlmpi therefore defines the Fortran symbols Open MPI exports
 * for these calls, under every name it exports them:
 *   mpif.h and use mpi:  MPI_ALLREDUCE, mpi_allreduce, mpi_allreduce_, mpi_allreduce__ (the four
 *                        compiler manglings) and MPI_Allreduce_f, MPI_Allreduce_f08 (libmpi_mpifh's
 *                        aliases of the same entry point);
 *   use mpi_f08:         mpi_allreduce_f08_ (libmpi_usempif08: the specific procedure the generic
 *                        MPI_Allreduce of the module resolves to).
 * Loaded ahead of the MPI's Fortran libraries (LD_PRELOAD, or -ltlmpi linked before them), these win
 * the lookup. Both conventions are the same: choice buffers by address, INTEGER arguments and handles
 * by reference (an mpi_f08 handle, TYPE(MPI_Comm), is a derived type holding one INTEGER: its address
 * is that of the integer), a status as MPI_STATUS_SIZE INTEGERs (the mpi_f08 TYPE(MPI_Status) of Open
 * MPI 4.1 has the same layout), request arrays as INTEGER arrays, LOGICAL flags of the size of an
 * INTEGER. The only difference is the error argument, optional in mpi_f08 (a null address when
 * absent): every entry point here stores it only when present.
 *
 * Each entry point converts the Fortran handles (PMPI_*_f2c), maps the Fortran address sentinels
 * (MPI_IN_PLACE, MPI_BOTTOM, MPI_STATUS(ES)_IGNORE: their addresses are Fortran common blocks) to the
 * C constants, calls tlmpi's public C entry point (MPI_Allreduce, MPI_Wait, ...: the lookup finds the
 * one in this library, so tlmpi's logic runs, host-buffer calls go through its fast path unchanged to
 * the next C MPI_* in the load order: a PMPI tool loaded after tlmpi sees them as C calls, core/next.h)
 * and converts the results back (handles, statuses, 1-based indices, the error code).
 *
 * Not here: Fortran PMPI_* (pmpi_allreduce_, ...: a profiling layer's calls into the MPI must stay
 * there) and Open MPI's internal ompi_*_f (the mpi_f08 wrappers' callee, also reached from its
 * pmpi_*_f08_ ones); the persistent forms (MPI_ALLREDUCE_INIT, ...: Open MPI 4.1 has none, where an
 * MPI has them (5.x) Fortran calls of those reach the MPI as before, so no tlmpi request ever comes
 * from Fortran and Fortran MPI_START/MPI_STARTALL need not be interposed); the large-count forms
 * (no Fortran binding for them in Open MPI 4.1).
 */
#include "config.h"
#include "compiler.h"

#include <mpi.h>
#include <stddef.h>
#include <stdlib.h>

#if defined(TLMPI_FORTRAN_ENTRY) && defined(OPEN_MPI)

typedef MPI_Fint f_int;
typedef MPI_Fint f_logical; /* a default LOGICAL: .false. is 0 for every compiler; .true. written 1 */

/* INTEGERs in a Fortran status (the MPI_STATUS_SIZE of Open MPI's mpif.h) */
#define F_STATUS_SIZE (sizeof(MPI_Status) / sizeof(MPI_Fint))
_Static_assert(sizeof(MPI_Status) % sizeof(MPI_Fint) == 0, "a Fortran status is a whole number of INTEGERs");

/* The Fortran address sentinels: common blocks named after the constant, under whichever mangling
 * the Fortran compiler uses (libmpi defines the one of its build: only their addresses matter).
 * Weak: a mangling that does not exist has address NULL. */
#define F_SENTINEL(upper, plain)                                                                   \
    extern MPI_Fint upper __attribute__((weak));                                                   \
    extern MPI_Fint plain __attribute__((weak));                                                   \
    extern MPI_Fint plain##_ __attribute__((weak));                                                \
    extern MPI_Fint plain##__ __attribute__((weak))
F_SENTINEL(MPI_FORTRAN_IN_PLACE, mpi_fortran_in_place);
F_SENTINEL(MPI_FORTRAN_BOTTOM, mpi_fortran_bottom);
F_SENTINEL(MPI_FORTRAN_STATUS_IGNORE, mpi_fortran_status_ignore);
F_SENTINEL(MPI_FORTRAN_STATUSES_IGNORE, mpi_fortran_statuses_ignore);

#define F_IS(p, upper, plain)                                                                      \
    ((p) != NULL && ((const void *)(p) == (const void *)&upper || (const void *)(p) == (const void *)&plain || \
                     (const void *)(p) == (const void *)&plain##_ || (const void *)(p) == (const void *)&plain##__))

static inline int f_is_in_place(const void *p)
{
    return F_IS(p, MPI_FORTRAN_IN_PLACE, mpi_fortran_in_place);
}
static inline int f_is_bottom(const void *p)
{
    return F_IS(p, MPI_FORTRAN_BOTTOM, mpi_fortran_bottom);
}
/* MPI_F_STATUS(ES)_IGNORE: the C names of the same addresses (MPI-3) */
static inline int f_status_ignored(const f_int *p)
{
    return p == NULL || p == MPI_F_STATUS_IGNORE ||
           F_IS(p, MPI_FORTRAN_STATUS_IGNORE, mpi_fortran_status_ignore);
}
static inline int f_statuses_ignored(const f_int *p)
{
    return p == NULL || p == MPI_F_STATUSES_IGNORE ||
           F_IS(p, MPI_FORTRAN_STATUSES_IGNORE, mpi_fortran_statuses_ignore);
}

/* a send buffer: MPI_IN_PLACE or MPI_BOTTOM; a receive buffer: MPI_BOTTOM */
static inline const void *f_sbuf(const void *p)
{
    return f_is_in_place(p) ? MPI_IN_PLACE : f_is_bottom(p) ? MPI_BOTTOM : p;
}
static inline void *f_rbuf(void *p)
{
    return f_is_bottom(p) ? MPI_BOTTOM : p;
}

static inline void f_ret(f_int *ierr, int rc)
{
    if (ierr) {
        *ierr = (f_int)rc;
    }
}

static inline void f_status_out(const MPI_Status *c, f_int *f)
{
    PMPI_Status_c2f(c, f);
}

/* Every name Open MPI exports for one Fortran entry point (see the top of the file). */
#define F_NAMES(fn, UPPER, lower, Mixed)                                                           \
    TLMPI_EXPORT __typeof__(fn) UPPER __attribute__((alias(#fn)));                                 \
    TLMPI_EXPORT __typeof__(fn) lower __attribute__((alias(#fn)));                                 \
    TLMPI_EXPORT __typeof__(fn) lower##_ __attribute__((alias(#fn)));                              \
    TLMPI_EXPORT __typeof__(fn) lower##__ __attribute__((alias(#fn)));                             \
    TLMPI_EXPORT __typeof__(fn) Mixed##_f __attribute__((alias(#fn)));                             \
    TLMPI_EXPORT __typeof__(fn) Mixed##_f08 __attribute__((alias(#fn)));                           \
    TLMPI_EXPORT __typeof__(fn) lower##_f08_ __attribute__((alias(#fn)))

/* ---- the collectives ---- */

static void f_allreduce(void *sbuf, void *rbuf, f_int *count, f_int *dtype, f_int *op, f_int *comm, f_int *ierr)
{
    f_ret(ierr, MPI_Allreduce(f_sbuf(sbuf), f_rbuf(rbuf), (int)*count, PMPI_Type_f2c(*dtype), PMPI_Op_f2c(*op),
                              PMPI_Comm_f2c(*comm)));
}
F_NAMES(f_allreduce, MPI_ALLREDUCE, mpi_allreduce, MPI_Allreduce);

static void f_allgather(void *sbuf, f_int *scount, f_int *stype, void *rbuf, f_int *rcount, f_int *rtype,
                        f_int *comm, f_int *ierr)
{
    f_ret(ierr, MPI_Allgather(f_sbuf(sbuf), (int)*scount, PMPI_Type_f2c(*stype), f_rbuf(rbuf), (int)*rcount,
                              PMPI_Type_f2c(*rtype), PMPI_Comm_f2c(*comm)));
}
F_NAMES(f_allgather, MPI_ALLGATHER, mpi_allgather, MPI_Allgather);

static void f_reduce_scatter_block(void *sbuf, void *rbuf, f_int *rcount, f_int *dtype, f_int *op, f_int *comm,
                                   f_int *ierr)
{
    f_ret(ierr, MPI_Reduce_scatter_block(f_sbuf(sbuf), f_rbuf(rbuf), (int)*rcount, PMPI_Type_f2c(*dtype),
                                         PMPI_Op_f2c(*op), PMPI_Comm_f2c(*comm)));
}
F_NAMES(f_reduce_scatter_block, MPI_REDUCE_SCATTER_BLOCK, mpi_reduce_scatter_block, MPI_Reduce_scatter_block);

static void f_iallreduce(void *sbuf, void *rbuf, f_int *count, f_int *dtype, f_int *op, f_int *comm, f_int *req,
                         f_int *ierr)
{
    MPI_Request c = MPI_REQUEST_NULL;
    int rc = MPI_Iallreduce(f_sbuf(sbuf), f_rbuf(rbuf), (int)*count, PMPI_Type_f2c(*dtype), PMPI_Op_f2c(*op),
                            PMPI_Comm_f2c(*comm), &c);

    if (rc == MPI_SUCCESS) {
        *req = PMPI_Request_c2f(c);
    }
    f_ret(ierr, rc);
}
F_NAMES(f_iallreduce, MPI_IALLREDUCE, mpi_iallreduce, MPI_Iallreduce);

static void f_iallgather(void *sbuf, f_int *scount, f_int *stype, void *rbuf, f_int *rcount, f_int *rtype,
                         f_int *comm, f_int *req, f_int *ierr)
{
    MPI_Request c = MPI_REQUEST_NULL;
    int rc = MPI_Iallgather(f_sbuf(sbuf), (int)*scount, PMPI_Type_f2c(*stype), f_rbuf(rbuf), (int)*rcount,
                            PMPI_Type_f2c(*rtype), PMPI_Comm_f2c(*comm), &c);

    if (rc == MPI_SUCCESS) {
        *req = PMPI_Request_c2f(c);
    }
    f_ret(ierr, rc);
}
F_NAMES(f_iallgather, MPI_IALLGATHER, mpi_iallgather, MPI_Iallgather);

static void f_ireduce_scatter_block(void *sbuf, void *rbuf, f_int *rcount, f_int *dtype, f_int *op, f_int *comm,
                                    f_int *req, f_int *ierr)
{
    MPI_Request c = MPI_REQUEST_NULL;
    int rc = MPI_Ireduce_scatter_block(f_sbuf(sbuf), f_rbuf(rbuf), (int)*rcount, PMPI_Type_f2c(*dtype),
                                       PMPI_Op_f2c(*op), PMPI_Comm_f2c(*comm), &c);

    if (rc == MPI_SUCCESS) {
        *req = PMPI_Request_c2f(c);
    }
    f_ret(ierr, rc);
}
F_NAMES(f_ireduce_scatter_block, MPI_IREDUCE_SCATTER_BLOCK, mpi_ireduce_scatter_block, MPI_Ireduce_scatter_block);

/* the siblings; a counts or displacements array is an INTEGER array: MPI_Fint is int here */
_Static_assert(sizeof(MPI_Fint) == sizeof(int), "Fortran INTEGER arrays are C int arrays");

static void f_allgatherv(void *sbuf, f_int *scount, f_int *stype, void *rbuf, const f_int *rcounts,
                         const f_int *displs, f_int *rtype, f_int *comm, f_int *ierr)
{
    f_ret(ierr, MPI_Allgatherv(f_sbuf(sbuf), (int)*scount, PMPI_Type_f2c(*stype), f_rbuf(rbuf), (const int *)rcounts,
                               (const int *)displs, PMPI_Type_f2c(*rtype), PMPI_Comm_f2c(*comm)));
}
F_NAMES(f_allgatherv, MPI_ALLGATHERV, mpi_allgatherv, MPI_Allgatherv);

static void f_reduce_scatter(void *sbuf, void *rbuf, const f_int *rcounts, f_int *dtype, f_int *op, f_int *comm,
                             f_int *ierr)
{
    f_ret(ierr, MPI_Reduce_scatter(f_sbuf(sbuf), f_rbuf(rbuf), (const int *)rcounts, PMPI_Type_f2c(*dtype),
                                   PMPI_Op_f2c(*op), PMPI_Comm_f2c(*comm)));
}
F_NAMES(f_reduce_scatter, MPI_REDUCE_SCATTER, mpi_reduce_scatter, MPI_Reduce_scatter);

static void f_bcast(void *buf, f_int *count, f_int *dtype, f_int *root, f_int *comm, f_int *ierr)
{
    f_ret(ierr, MPI_Bcast(f_rbuf(buf), (int)*count, PMPI_Type_f2c(*dtype), (int)*root, PMPI_Comm_f2c(*comm)));
}
F_NAMES(f_bcast, MPI_BCAST, mpi_bcast, MPI_Bcast);

static void f_reduce(void *sbuf, void *rbuf, f_int *count, f_int *dtype, f_int *op, f_int *root, f_int *comm,
                     f_int *ierr)
{
    f_ret(ierr, MPI_Reduce(f_sbuf(sbuf), f_rbuf(rbuf), (int)*count, PMPI_Type_f2c(*dtype), PMPI_Op_f2c(*op),
                           (int)*root, PMPI_Comm_f2c(*comm)));
}
F_NAMES(f_reduce, MPI_REDUCE, mpi_reduce, MPI_Reduce);

static void f_alltoall(void *sbuf, f_int *scount, f_int *stype, void *rbuf, f_int *rcount, f_int *rtype,
                       f_int *comm, f_int *ierr)
{
    f_ret(ierr, MPI_Alltoall(f_sbuf(sbuf), (int)*scount, PMPI_Type_f2c(*stype), f_rbuf(rbuf), (int)*rcount,
                             PMPI_Type_f2c(*rtype), PMPI_Comm_f2c(*comm)));
}
F_NAMES(f_alltoall, MPI_ALLTOALL, mpi_alltoall, MPI_Alltoall);

/* a non-blocking call's request handed back (only where it was made); rc is the call's, made before
 * (c is its output) */
static inline void f_req_out(int rc, MPI_Request c, f_int *req, f_int *ierr)
{
    if (rc == MPI_SUCCESS) {
        *req = PMPI_Request_c2f(c);
    }
    f_ret(ierr, rc);
}

static void f_iallgatherv(void *sbuf, f_int *scount, f_int *stype, void *rbuf, const f_int *rcounts,
                          const f_int *displs, f_int *rtype, f_int *comm, f_int *req, f_int *ierr)
{
    MPI_Request c = MPI_REQUEST_NULL;
    int rc = MPI_Iallgatherv(f_sbuf(sbuf), (int)*scount, PMPI_Type_f2c(*stype), f_rbuf(rbuf), (const int *)rcounts,
                              (const int *)displs, PMPI_Type_f2c(*rtype), PMPI_Comm_f2c(*comm), &c);

    f_req_out(rc, c, req, ierr);
}
F_NAMES(f_iallgatherv, MPI_IALLGATHERV, mpi_iallgatherv, MPI_Iallgatherv);

static void f_ireduce_scatter(void *sbuf, void *rbuf, const f_int *rcounts, f_int *dtype, f_int *op, f_int *comm,
                              f_int *req, f_int *ierr)
{
    MPI_Request c = MPI_REQUEST_NULL;
    int rc = MPI_Ireduce_scatter(f_sbuf(sbuf), f_rbuf(rbuf), (const int *)rcounts, PMPI_Type_f2c(*dtype),
                                  PMPI_Op_f2c(*op), PMPI_Comm_f2c(*comm), &c);

    f_req_out(rc, c, req, ierr);
}
F_NAMES(f_ireduce_scatter, MPI_IREDUCE_SCATTER, mpi_ireduce_scatter, MPI_Ireduce_scatter);

static void f_ibcast(void *buf, f_int *count, f_int *dtype, f_int *root, f_int *comm, f_int *req, f_int *ierr)
{
    MPI_Request c = MPI_REQUEST_NULL;
    int rc = MPI_Ibcast(f_rbuf(buf), (int)*count, PMPI_Type_f2c(*dtype), (int)*root, PMPI_Comm_f2c(*comm), &c);

    f_req_out(rc, c, req, ierr);
}
F_NAMES(f_ibcast, MPI_IBCAST, mpi_ibcast, MPI_Ibcast);

static void f_ireduce(void *sbuf, void *rbuf, f_int *count, f_int *dtype, f_int *op, f_int *root, f_int *comm,
                      f_int *req, f_int *ierr)
{
    MPI_Request c = MPI_REQUEST_NULL;
    int rc = MPI_Ireduce(f_sbuf(sbuf), f_rbuf(rbuf), (int)*count, PMPI_Type_f2c(*dtype), PMPI_Op_f2c(*op), (int)*root,
                          PMPI_Comm_f2c(*comm), &c);

    f_req_out(rc, c, req, ierr);
}
F_NAMES(f_ireduce, MPI_IREDUCE, mpi_ireduce, MPI_Ireduce);

static void f_ialltoall(void *sbuf, f_int *scount, f_int *stype, void *rbuf, f_int *rcount, f_int *rtype,
                        f_int *comm, f_int *req, f_int *ierr)
{
    MPI_Request c = MPI_REQUEST_NULL;
    int rc = MPI_Ialltoall(f_sbuf(sbuf), (int)*scount, PMPI_Type_f2c(*stype), f_rbuf(rbuf), (int)*rcount,
                            PMPI_Type_f2c(*rtype), PMPI_Comm_f2c(*comm), &c);

    f_req_out(rc, c, req, ierr);
}
F_NAMES(f_ialltoall, MPI_IALLTOALL, mpi_ialltoall, MPI_Ialltoall);

/* ---- the completion calls ---- */

static void f_wait(f_int *req, f_int *status, f_int *ierr)
{
    MPI_Request c = PMPI_Request_f2c(*req);
    MPI_Status cs;
    int ign = f_status_ignored(status);
    int rc = MPI_Wait(&c, ign ? MPI_STATUS_IGNORE : &cs);

    if (rc == MPI_SUCCESS) {
        *req = PMPI_Request_c2f(c);
        if (!ign) {
            f_status_out(&cs, status);
        }
    }
    f_ret(ierr, rc);
}
F_NAMES(f_wait, MPI_WAIT, mpi_wait, MPI_Wait);

static void f_test(f_int *req, f_logical *flag, f_int *status, f_int *ierr)
{
    MPI_Request c = PMPI_Request_f2c(*req);
    MPI_Status cs;
    int ign = f_status_ignored(status), cflag = 0;
    int rc = MPI_Test(&c, &cflag, ign ? MPI_STATUS_IGNORE : &cs);

    if (rc == MPI_SUCCESS) {
        *req = PMPI_Request_c2f(c);
        *flag = cflag ? 1 : 0;
        if (cflag && !ign) {
            f_status_out(&cs, status);
        }
    }
    f_ret(ierr, rc);
}
F_NAMES(f_test, MPI_TEST, mpi_test, MPI_Test);

static void f_request_get_status(f_int *req, f_logical *flag, f_int *status, f_int *ierr)
{
    MPI_Status cs;
    int ign = f_status_ignored(status), cflag = 0;
    int rc = MPI_Request_get_status(PMPI_Request_f2c(*req), &cflag, ign ? MPI_STATUS_IGNORE : &cs);

    if (rc == MPI_SUCCESS) {
        *flag = cflag ? 1 : 0;
        if (cflag && !ign) {
            f_status_out(&cs, status);
        }
    }
    f_ret(ierr, rc);
}
F_NAMES(f_request_get_status, MPI_REQUEST_GET_STATUS, mpi_request_get_status, MPI_Request_get_status);

static void f_request_free(f_int *req, f_int *ierr)
{
    MPI_Request c = PMPI_Request_f2c(*req);
    int rc = MPI_Request_free(&c);

    if (rc == MPI_SUCCESS) {
        *req = PMPI_Request_c2f(c);
    }
    f_ret(ierr, rc);
}
F_NAMES(f_request_free, MPI_REQUEST_FREE, mpi_request_free, MPI_Request_free);

static void f_cancel(f_int *req, f_int *ierr)
{
    MPI_Request c = PMPI_Request_f2c(*req);

    f_ret(ierr, MPI_Cancel(&c));
}
F_NAMES(f_cancel, MPI_CANCEL, mpi_cancel, MPI_Cancel);

/* The C arrays of one array call: requests, statuses, indices. Small arrays on the stack. */
#define F_STACK_N 16
typedef struct {
    MPI_Request *req;
    MPI_Status *st;
    int *idx;
    void *heap;
    MPI_Request req_s[F_STACK_N];
    MPI_Status st_s[F_STACK_N];
    int idx_s[F_STACK_N];
} f_arrays_t;

/* n requests converted from f; 0, or MPI_ERR_NO_MEM (the error handler of MPI_COMM_WORLD ran) */
static int f_arrays_get(f_arrays_t *a, int n, const f_int *f)
{
    int i;

    a->heap = NULL;
    if (n <= F_STACK_N) {
        a->req = a->req_s;
        a->st = a->st_s;
        a->idx = a->idx_s;
    } else {
        /* statuses first: the strictest alignment */
        a->heap = malloc((size_t)n * (sizeof(MPI_Status) + sizeof(MPI_Request) + sizeof(int)));
        if (!a->heap) {
            return PMPI_Comm_call_errhandler(MPI_COMM_WORLD, MPI_ERR_NO_MEM), MPI_ERR_NO_MEM;
        }
        a->st = a->heap;
        a->req = (MPI_Request *)(a->st + n);
        a->idx = (int *)(a->req + n);
    }
    for (i = 0; i < n; i++) {
        a->req[i] = PMPI_Request_f2c(f[i]);
    }
    return MPI_SUCCESS;
}

static inline void f_arrays_put(f_arrays_t *a)
{
    free(a->heap);
}

/* an array call's results: the MPI's verdict on every entry (errors too: completed entries were
 * released in C either way) */
static inline int f_array_done(int rc)
{
    return rc == MPI_SUCCESS || rc == MPI_ERR_IN_STATUS;
}

static void f_waitall(f_int *count, f_int *reqs, f_int *statuses, f_int *ierr)
{
    f_arrays_t a;
    int n = (int)*count, i, rc;
    int ign = f_statuses_ignored(statuses);

    if ((rc = f_arrays_get(&a, n, reqs)) != MPI_SUCCESS) {
        f_ret(ierr, rc);
        return;
    }
    rc = MPI_Waitall(n, a.req, ign ? MPI_STATUSES_IGNORE : a.st);
    if (f_array_done(rc)) {
        for (i = 0; i < n; i++) {
            reqs[i] = PMPI_Request_c2f(a.req[i]);
            if (!ign) {
                f_status_out(&a.st[i], statuses + (size_t)i * F_STATUS_SIZE);
            }
        }
    }
    f_arrays_put(&a);
    f_ret(ierr, rc);
}
F_NAMES(f_waitall, MPI_WAITALL, mpi_waitall, MPI_Waitall);

static void f_testall(f_int *count, f_int *reqs, f_logical *flag, f_int *statuses, f_int *ierr)
{
    f_arrays_t a;
    int n = (int)*count, i, rc, cflag = 0;
    int ign = f_statuses_ignored(statuses);

    if ((rc = f_arrays_get(&a, n, reqs)) != MPI_SUCCESS) {
        f_ret(ierr, rc);
        return;
    }
    rc = MPI_Testall(n, a.req, &cflag, ign ? MPI_STATUSES_IGNORE : a.st);
    if (f_array_done(rc)) {
        *flag = cflag ? 1 : 0;
        for (i = 0; i < n; i++) {
            reqs[i] = PMPI_Request_c2f(a.req[i]);
            if (cflag && !ign) {
                f_status_out(&a.st[i], statuses + (size_t)i * F_STATUS_SIZE);
            }
        }
    }
    f_arrays_put(&a);
    f_ret(ierr, rc);
}
F_NAMES(f_testall, MPI_TESTALL, mpi_testall, MPI_Testall);

/* Waitany / Testany: the index is 1-based in Fortran (MPI_UNDEFINED stays) */
static void f_any(int test, f_int *count, f_int *reqs, f_int *index, f_logical *flag, f_int *status, f_int *ierr)
{
    f_arrays_t a;
    MPI_Status cs;
    int n = (int)*count, rc, idx = MPI_UNDEFINED, cflag = 1;
    int ign = f_status_ignored(status);

    if ((rc = f_arrays_get(&a, n, reqs)) != MPI_SUCCESS) {
        f_ret(ierr, rc);
        return;
    }
    rc = test ? MPI_Testany(n, a.req, &idx, &cflag, ign ? MPI_STATUS_IGNORE : &cs)
              : MPI_Waitany(n, a.req, &idx, ign ? MPI_STATUS_IGNORE : &cs);
    if (rc == MPI_SUCCESS) {
        if (flag) {
            *flag = cflag ? 1 : 0;
        }
        if (cflag && idx != MPI_UNDEFINED && idx >= 0 && idx < n) {
            reqs[idx] = PMPI_Request_c2f(a.req[idx]);
            *index = (f_int)(idx + 1);
        } else {
            *index = (f_int)MPI_UNDEFINED;
        }
        if (cflag && !ign) {
            f_status_out(&cs, status);
        }
    }
    f_arrays_put(&a);
    f_ret(ierr, rc);
}

static void f_waitany(f_int *count, f_int *reqs, f_int *index, f_int *status, f_int *ierr)
{
    f_any(0, count, reqs, index, NULL, status, ierr);
}
F_NAMES(f_waitany, MPI_WAITANY, mpi_waitany, MPI_Waitany);

static void f_testany(f_int *count, f_int *reqs, f_int *index, f_logical *flag, f_int *status, f_int *ierr)
{
    f_any(1, count, reqs, index, flag, status, ierr);
}
F_NAMES(f_testany, MPI_TESTANY, mpi_testany, MPI_Testany);

/* Waitsome / Testsome: 1-based indices; statuses of the completed entries only */
static void f_some(int test, f_int *incount, f_int *reqs, f_int *outcount, f_int *indices, f_int *statuses,
                   f_int *ierr)
{
    f_arrays_t a;
    int n = (int)*incount, i, rc, oc = MPI_UNDEFINED;
    int ign = f_statuses_ignored(statuses);

    if ((rc = f_arrays_get(&a, n, reqs)) != MPI_SUCCESS) {
        f_ret(ierr, rc);
        return;
    }
    rc = test ? MPI_Testsome(n, a.req, &oc, a.idx, ign ? MPI_STATUSES_IGNORE : a.st)
              : MPI_Waitsome(n, a.req, &oc, a.idx, ign ? MPI_STATUSES_IGNORE : a.st);
    if (f_array_done(rc)) {
        *outcount = (f_int)oc;
        for (i = 0; oc != MPI_UNDEFINED && i < oc; i++) {
            int j = a.idx[i];

            if (j >= 0 && j < n) {
                reqs[j] = PMPI_Request_c2f(a.req[j]);
            }
            indices[i] = (f_int)(j + 1);
            if (!ign) {
                f_status_out(&a.st[i], statuses + (size_t)i * F_STATUS_SIZE);
            }
        }
    }
    f_arrays_put(&a);
    f_ret(ierr, rc);
}

static void f_waitsome(f_int *incount, f_int *reqs, f_int *outcount, f_int *indices, f_int *statuses, f_int *ierr)
{
    f_some(0, incount, reqs, outcount, indices, statuses, ierr);
}
F_NAMES(f_waitsome, MPI_WAITSOME, mpi_waitsome, MPI_Waitsome);

static void f_testsome(f_int *incount, f_int *reqs, f_int *outcount, f_int *indices, f_int *statuses, f_int *ierr)
{
    f_some(1, incount, reqs, outcount, indices, statuses, ierr);
}
F_NAMES(f_testsome, MPI_TESTSOME, mpi_testsome, MPI_Testsome);

#endif /* TLMPI_FORTRAN_ENTRY && OPEN_MPI */
