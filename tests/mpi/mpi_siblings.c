/*
 * mpi_siblings: MPI_Allgatherv, MPI_Reduce_scatter, MPI_Bcast, MPI_Reduce and MPI_Alltoall through
 * tlmpi, in every form this MPI has (blocking, MPI_I* + MPI_Wait, MPI-4 *_init + MPI_Start/MPI_Wait
 * twice, and the _c large-count entry points of each), on host buffers (passed through) and on the
 * fake CUDA runtime's "device" buffers (tests/fakes/fakecudart.c: host memory that
 * cudaPointerGetAttributes calls device memory; tlmpi serves them, through host staging).
 *
 * Every case runs three times on the same inputs and the same poisoned receive buffers:
 *   reference  PMPI_* (blocking; the _c one for a _c case) on host buffers,
 *   host       the intercepted MPI_* form on host buffers,
 *   device     the intercepted MPI_* form on device buffers;
 * the whole receive buffer (results, the bytes between allgatherv's blocks and a datatype's holes,
 * a guard tail) must be byte for byte the reference's in both, and the error class of a rejected
 * call the reference's. Each call is counted once in tlmpi's statistics under its form, on the
 * passthrough path (host) or the staging path (device).
 * Cases (random, the seed printed): counts 0..40 per rank with zeros, one rank holding almost
 * everything, every count zero, equal counts; allgatherv's blocks at random displacements in
 * permuted order with gaps; datatypes of 1, 2, 4 and 8 bytes, integer and floating point, and a
 * vector type with holes; MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX, MPI_BXOR, MPI_LAND; every root; in
 * place (allgatherv: this rank's block; reduce_scatter and alltoall: the whole input; reduce: at the
 * root); MPI_COMM_WORLD, a split with reversed ranks, MPI_COMM_SELF and an intercommunicator (bcast
 * with MPI_ROOT/MPI_PROC_NULL, reduce, allgatherv, alltoall). Bad input: a root out of range,
 * MPI_OP_NULL, MPI_DATATYPE_NULL, a negative count (in allgatherv's counts: not under Open MPI 4.1,
 * which checks its own sendcount alone, so the other ranks wait in the call), MPI_BAND on float.
 * Left out (bugs of MPICH 4.0.2 on host buffers alike): allgatherv with a displacement on a one-rank
 * communicator, whose blocking and MPI_I* forms put the block at displacement 0 (its *_init does
 * not); in-place reduces of more than 100 elements, which crash in MPI_Reduce from about 300 doubles
 * on 2 ranks at a root other than 0, and in MPI_Reduce_c at any root.
 * A guard defined here (PMPI_* of the five collectives, blocking and non-blocking, both count
 * widths: the calls tlmpi makes into the MPI) fails the test when a device pointer reaches the MPI
 * with data to move: a non-CUDA-aware MPI never sees one.
 * tests/local.mk: mpi_siblings (2 ranks) and mpi_siblings_np4 (4 ranks, fewer cases).
 */
#include "config.h"
#include "tlmpi.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include "harness.h"

enum { AGV, RS, BC, RED, A2A, NCOLL };
static const char *const coll_names[NCOLL] = { "Allgatherv", "Reduce_scatter", "Bcast", "Reduce", "Alltoall" };
static const tlmpi_coll_t coll_ids[NCOLL] = { TLMPI_COLL_ALLGATHERV, TLMPI_COLL_REDUCE_SCATTER, TLMPI_COLL_BCAST,
                                              TLMPI_COLL_REDUCE, TLMPI_COLL_ALLTOALL };
enum { BLOCKING, NONBLOCKING, PERSISTENT, NFORMS };
static const char *const form_names[NFORMS] = { "blocking", "non-blocking", "persistent" };
static const tlmpi_form_t form_ids[NFORMS] = { TLMPI_FORM_BLOCKING, TLMPI_FORM_NONBLOCKING, TLMPI_FORM_PERSISTENT };

#define MAXP 16
#define GUARD 24

typedef struct {
    int coll, form, large;
    MPI_Comm comm;
    const char *comm_name;
    int size, rank, inter, rsize; /* rsize: the remote group's size (intercommunicator), else size */
    MPI_Datatype dt, dt_arg;      /* the layout's datatype, the one the calls get (bad input: NULL) */
    const char *dt_name;
    int elem;                     /* bytes of the element the inputs are made of */
    int is_float;
    MPI_Op op;
    const char *op_name;
    int root, in_place;
    int counts[MAXP];             /* allgatherv, reduce_scatter (a v-form's array); count: the others */
    int displs[MAXP];
    int count;
    int expect_error;             /* bad input: the reference must fail, with the same class */
    int null_rbuf;                /* reduce: recvbuf NULL off the root */
} case_t;

static long n_cases, n_calls, n_errors_matched, guard_hits;
static int in_reference; /* the test's own reference calls (host buffers) */
static tst_rng_t data_rng; /* this rank's own data (the harness's stream: the same choices everywhere) */

/* MPI_IN_PLACE on this rank (reduce: at the root only) */
static int use_in_place(const void *kp);
static MPI_Datatype dt_vec;

/* ---- the guard: no device pointer reaches the MPI with data to move ---- */
static int is_dev(const void *p)
{
    struct cudaPointerAttributes a;

    if (!p || p == MPI_IN_PLACE || cudaPointerGetAttributes(&a, p) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
}

static int comm_n(MPI_Comm comm, int remote)
{
    int n = 0, inter = 0;

    if (remote && PMPI_Comm_test_inter(comm, &inter) == MPI_SUCCESS && inter) {
        PMPI_Comm_remote_size(comm, &n);
    } else if (PMPI_Comm_size(comm, &n) != MPI_SUCCESS) {
        n = 0;
    }
    return n;
}

static void guard_check(const char *fn, const void *s, const void *r, MPI_Count moved)
{
    if (moved > 0 && (is_dev(s) || is_dev(r))) {
        guard_hits++;
        TST_FAIL("guard: %s got a device pointer (send %p%s, receive %p%s) with data to move", fn, s,
                 is_dev(s) ? " device" : "", r, is_dev(r) ? " device" : "");
    }
}

#define NEXT(name) static __typeof__(name) *next_; if (!next_) next_ = (__typeof__(name) *)dlsym(RTLD_NEXT, #name)
/* the elements a v-form's counts array moves (none where a count is negative: the MPI rejects it) */
#define VSUM_MOVED(cnts, large, comm, remote)                                                      \
    MPI_Count moved_ = 0;                                                                          \
    for (int i_ = 0, n_ = comm_n(comm, remote); cnts && i_ < n_ && moved_ >= 0; i_++) {            \
        MPI_Count v_ = (large) ? ((const MPI_Count *)(const void *)cnts)[i_] : ((const int *)(const void *)cnts)[i_]; \
        moved_ = v_ < 0 ? -1 : moved_ + v_;                                                        \
    }

int PMPI_Allgatherv(const void *s, int sc, MPI_Datatype st, void *r, const int rc[], const int d[], MPI_Datatype rt,
                    MPI_Comm comm)
{
    NEXT(PMPI_Allgatherv);
    VSUM_MOVED(rc, 0, comm, 1);
    guard_check("PMPI_Allgatherv", s, r, moved_);
    return next_(s, sc, st, r, rc, d, rt, comm);
}
int PMPI_Iallgatherv(const void *s, int sc, MPI_Datatype st, void *r, const int rc[], const int d[], MPI_Datatype rt,
                     MPI_Comm comm, MPI_Request *q)
{
    NEXT(PMPI_Iallgatherv);
    VSUM_MOVED(rc, 0, comm, 1);
    guard_check("PMPI_Iallgatherv", s, r, moved_);
    return next_(s, sc, st, r, rc, d, rt, comm, q);
}
int PMPI_Reduce_scatter(const void *s, void *r, const int rc[], MPI_Datatype t, MPI_Op op, MPI_Comm comm)
{
    NEXT(PMPI_Reduce_scatter);
    VSUM_MOVED(rc, 0, comm, 0);
    guard_check("PMPI_Reduce_scatter", s, r, moved_);
    return next_(s, r, rc, t, op, comm);
}
int PMPI_Ireduce_scatter(const void *s, void *r, const int rc[], MPI_Datatype t, MPI_Op op, MPI_Comm comm,
                         MPI_Request *q)
{
    NEXT(PMPI_Ireduce_scatter);
    VSUM_MOVED(rc, 0, comm, 0);
    guard_check("PMPI_Ireduce_scatter", s, r, moved_);
    return next_(s, r, rc, t, op, comm, q);
}
/* a rooted call moves nothing on this process where the root is MPI_PROC_NULL (an intercommunicator's
 * root group); elsewhere even a reduce's receive buffer off the root must not be a device pointer
 * (tlmpi hands the MPI NULL there) */
#define ROOTED_MOVED(n, root) ((root) == MPI_PROC_NULL ? 0 : (n))

int PMPI_Bcast(void *b, int n, MPI_Datatype t, int root, MPI_Comm comm)
{
    NEXT(PMPI_Bcast);
    guard_check("PMPI_Bcast", NULL, b, ROOTED_MOVED(n, root));
    return next_(b, n, t, root, comm);
}
int PMPI_Ibcast(void *b, int n, MPI_Datatype t, int root, MPI_Comm comm, MPI_Request *q)
{
    NEXT(PMPI_Ibcast);
    guard_check("PMPI_Ibcast", NULL, b, ROOTED_MOVED(n, root));
    return next_(b, n, t, root, comm, q);
}
int PMPI_Reduce(const void *s, void *r, int n, MPI_Datatype t, MPI_Op op, int root, MPI_Comm comm)
{
    NEXT(PMPI_Reduce);
    guard_check("PMPI_Reduce", s, r, ROOTED_MOVED(n, root));
    return next_(s, r, n, t, op, root, comm);
}
int PMPI_Ireduce(const void *s, void *r, int n, MPI_Datatype t, MPI_Op op, int root, MPI_Comm comm, MPI_Request *q)
{
    NEXT(PMPI_Ireduce);
    guard_check("PMPI_Ireduce", s, r, ROOTED_MOVED(n, root));
    return next_(s, r, n, t, op, root, comm, q);
}
int PMPI_Alltoall(const void *s, int sc, MPI_Datatype st, void *r, int rc, MPI_Datatype rt, MPI_Comm comm)
{
    NEXT(PMPI_Alltoall);
    guard_check("PMPI_Alltoall", s, r, rc);
    return next_(s, sc, st, r, rc, rt, comm);
}
int PMPI_Ialltoall(const void *s, int sc, MPI_Datatype st, void *r, int rc, MPI_Datatype rt, MPI_Comm comm,
                   MPI_Request *q)
{
    NEXT(PMPI_Ialltoall);
    guard_check("PMPI_Ialltoall", s, r, rc);
    return next_(s, sc, st, r, rc, rt, comm, q);
}
#ifdef HAVE_PMPI_ALLGATHERV_C
int PMPI_Allgatherv_c(const void *s, MPI_Count sc, MPI_Datatype st, void *r, const MPI_Count rc[], const MPI_Aint d[],
                      MPI_Datatype rt, MPI_Comm comm)
{
    NEXT(PMPI_Allgatherv_c);
    VSUM_MOVED(rc, 1, comm, 1);
    guard_check("PMPI_Allgatherv_c", s, r, moved_);
    return next_(s, sc, st, r, rc, d, rt, comm);
}
int PMPI_Iallgatherv_c(const void *s, MPI_Count sc, MPI_Datatype st, void *r, const MPI_Count rc[],
                       const MPI_Aint d[], MPI_Datatype rt, MPI_Comm comm, MPI_Request *q)
{
    NEXT(PMPI_Iallgatherv_c);
    VSUM_MOVED(rc, 1, comm, 1);
    guard_check("PMPI_Iallgatherv_c", s, r, moved_);
    return next_(s, sc, st, r, rc, d, rt, comm, q);
}
int PMPI_Reduce_scatter_c(const void *s, void *r, const MPI_Count rc[], MPI_Datatype t, MPI_Op op, MPI_Comm comm)
{
    NEXT(PMPI_Reduce_scatter_c);
    VSUM_MOVED(rc, 1, comm, 0);
    guard_check("PMPI_Reduce_scatter_c", s, r, moved_);
    return next_(s, r, rc, t, op, comm);
}
int PMPI_Ireduce_scatter_c(const void *s, void *r, const MPI_Count rc[], MPI_Datatype t, MPI_Op op, MPI_Comm comm,
                           MPI_Request *q)
{
    NEXT(PMPI_Ireduce_scatter_c);
    VSUM_MOVED(rc, 1, comm, 0);
    guard_check("PMPI_Ireduce_scatter_c", s, r, moved_);
    return next_(s, r, rc, t, op, comm, q);
}
int PMPI_Bcast_c(void *b, MPI_Count n, MPI_Datatype t, int root, MPI_Comm comm)
{
    NEXT(PMPI_Bcast_c);
    guard_check("PMPI_Bcast_c", NULL, b, ROOTED_MOVED(n, root));
    return next_(b, n, t, root, comm);
}
int PMPI_Ibcast_c(void *b, MPI_Count n, MPI_Datatype t, int root, MPI_Comm comm, MPI_Request *q)
{
    NEXT(PMPI_Ibcast_c);
    guard_check("PMPI_Ibcast_c", NULL, b, ROOTED_MOVED(n, root));
    return next_(b, n, t, root, comm, q);
}
int PMPI_Reduce_c(const void *s, void *r, MPI_Count n, MPI_Datatype t, MPI_Op op, int root, MPI_Comm comm)
{
    NEXT(PMPI_Reduce_c);
    guard_check("PMPI_Reduce_c", s, r, ROOTED_MOVED(n, root));
    return next_(s, r, n, t, op, root, comm);
}
int PMPI_Ireduce_c(const void *s, void *r, MPI_Count n, MPI_Datatype t, MPI_Op op, int root, MPI_Comm comm,
                   MPI_Request *q)
{
    NEXT(PMPI_Ireduce_c);
    guard_check("PMPI_Ireduce_c", s, r, ROOTED_MOVED(n, root));
    return next_(s, r, n, t, op, root, comm, q);
}
int PMPI_Alltoall_c(const void *s, MPI_Count sc, MPI_Datatype st, void *r, MPI_Count rc, MPI_Datatype rt,
                    MPI_Comm comm)
{
    NEXT(PMPI_Alltoall_c);
    guard_check("PMPI_Alltoall_c", s, r, rc);
    return next_(s, sc, st, r, rc, rt, comm);
}
int PMPI_Ialltoall_c(const void *s, MPI_Count sc, MPI_Datatype st, void *r, MPI_Count rc, MPI_Datatype rt,
                     MPI_Comm comm, MPI_Request *q)
{
    NEXT(PMPI_Ialltoall_c);
    guard_check("PMPI_Ialltoall_c", s, r, rc);
    return next_(s, sc, st, r, rc, rt, comm, q);
}
#endif

/* ---- the calls: the reference (PMPI_*, blocking) and the intercepted forms ---- */
static MPI_Count lcounts[MAXP];
static MPI_Aint ldispls[MAXP];

static int use_in_place(const void *kp)
{
    const case_t *k = kp;

    return k->in_place && (k->coll != RED || k->rank == k->root);
}

static int ref_call(const case_t *k, const void *s, void *r)
{
    const void *sb = use_in_place(k) ? MPI_IN_PLACE : s;
    int sc = k->coll == AGV ? k->counts[k->rank] : k->count;
    int rc;

    in_reference = 1;
#ifdef HAVE_PMPI_ALLGATHERV_C
    if (k->large) {
        switch (k->coll) {
        case AGV: rc = PMPI_Allgatherv_c(sb, sc, k->dt_arg, r, lcounts, ldispls, k->dt_arg, k->comm); break;
        case RS: rc = PMPI_Reduce_scatter_c(sb, r, lcounts, k->dt_arg, k->op, k->comm); break;
        case BC: rc = PMPI_Bcast_c(r, k->count, k->dt_arg, k->root, k->comm); break;
        case RED: rc = PMPI_Reduce_c(sb, r, k->count, k->dt_arg, k->op, k->root, k->comm); break;
        default: rc = PMPI_Alltoall_c(sb, k->count, k->dt_arg, r, k->count, k->dt_arg, k->comm); break;
        }
        in_reference = 0;
        return rc;
    }
#endif
    switch (k->coll) {
    case AGV: rc = PMPI_Allgatherv(sb, sc, k->dt_arg, r, k->counts, k->displs, k->dt_arg, k->comm); break;
    case RS: rc = PMPI_Reduce_scatter(sb, r, k->counts, k->dt_arg, k->op, k->comm); break;
    case BC: rc = PMPI_Bcast(r, k->count, k->dt_arg, k->root, k->comm); break;
    case RED: rc = PMPI_Reduce(sb, r, k->count, k->dt_arg, k->op, k->root, k->comm); break;
    default: rc = PMPI_Alltoall(sb, k->count, k->dt_arg, r, k->count, k->dt_arg, k->comm); break;
    }
    in_reference = 0;
    return rc;
}

/* the intercepted call of k's form: blocking, or the request (MPI_I*, *_init) in *q */
static int tested_call(const case_t *k, const void *s, void *r, MPI_Request *q)
{
    const void *sb = use_in_place(k) ? MPI_IN_PLACE : s;
    int sc = k->coll == AGV ? k->counts[k->rank] : k->count;
    int f = k->form;

#ifdef HAVE_PMPI_ALLGATHERV_C
    if (k->large) {
        switch (k->coll * NFORMS + f) {
        case AGV * NFORMS + BLOCKING: return MPI_Allgatherv_c(sb, sc, k->dt_arg, r, lcounts, ldispls, k->dt_arg, k->comm);
        case AGV * NFORMS + NONBLOCKING: return MPI_Iallgatherv_c(sb, sc, k->dt_arg, r, lcounts, ldispls, k->dt_arg, k->comm, q);
        case RS * NFORMS + BLOCKING: return MPI_Reduce_scatter_c(sb, r, lcounts, k->dt_arg, k->op, k->comm);
        case RS * NFORMS + NONBLOCKING: return MPI_Ireduce_scatter_c(sb, r, lcounts, k->dt_arg, k->op, k->comm, q);
        case BC * NFORMS + BLOCKING: return MPI_Bcast_c(r, k->count, k->dt_arg, k->root, k->comm);
        case BC * NFORMS + NONBLOCKING: return MPI_Ibcast_c(r, k->count, k->dt_arg, k->root, k->comm, q);
        case RED * NFORMS + BLOCKING: return MPI_Reduce_c(sb, r, k->count, k->dt_arg, k->op, k->root, k->comm);
        case RED * NFORMS + NONBLOCKING: return MPI_Ireduce_c(sb, r, k->count, k->dt_arg, k->op, k->root, k->comm, q);
        case A2A * NFORMS + BLOCKING: return MPI_Alltoall_c(sb, k->count, k->dt_arg, r, k->count, k->dt_arg, k->comm);
        case A2A * NFORMS + NONBLOCKING: return MPI_Ialltoall_c(sb, k->count, k->dt_arg, r, k->count, k->dt_arg, k->comm, q);
#ifdef HAVE_PMPI_ALLGATHERV_INIT_C
        case AGV * NFORMS + PERSISTENT:
            return MPI_Allgatherv_init_c(sb, sc, k->dt_arg, r, lcounts, ldispls, k->dt_arg, k->comm, MPI_INFO_NULL, q);
        case RS * NFORMS + PERSISTENT:
            return MPI_Reduce_scatter_init_c(sb, r, lcounts, k->dt_arg, k->op, k->comm, MPI_INFO_NULL, q);
        case BC * NFORMS + PERSISTENT: return MPI_Bcast_init_c(r, k->count, k->dt_arg, k->root, k->comm, MPI_INFO_NULL, q);
        case RED * NFORMS + PERSISTENT:
            return MPI_Reduce_init_c(sb, r, k->count, k->dt_arg, k->op, k->root, k->comm, MPI_INFO_NULL, q);
        case A2A * NFORMS + PERSISTENT:
            return MPI_Alltoall_init_c(sb, k->count, k->dt_arg, r, k->count, k->dt_arg, k->comm, MPI_INFO_NULL, q);
#endif
        default: return MPI_ERR_INTERN;
        }
    }
#endif
    switch (k->coll * NFORMS + f) {
    case AGV * NFORMS + BLOCKING: return MPI_Allgatherv(sb, sc, k->dt_arg, r, k->counts, k->displs, k->dt_arg, k->comm);
    case AGV * NFORMS + NONBLOCKING: return MPI_Iallgatherv(sb, sc, k->dt_arg, r, k->counts, k->displs, k->dt_arg, k->comm, q);
    case RS * NFORMS + BLOCKING: return MPI_Reduce_scatter(sb, r, k->counts, k->dt_arg, k->op, k->comm);
    case RS * NFORMS + NONBLOCKING: return MPI_Ireduce_scatter(sb, r, k->counts, k->dt_arg, k->op, k->comm, q);
    case BC * NFORMS + BLOCKING: return MPI_Bcast(r, k->count, k->dt_arg, k->root, k->comm);
    case BC * NFORMS + NONBLOCKING: return MPI_Ibcast(r, k->count, k->dt_arg, k->root, k->comm, q);
    case RED * NFORMS + BLOCKING: return MPI_Reduce(sb, r, k->count, k->dt_arg, k->op, k->root, k->comm);
    case RED * NFORMS + NONBLOCKING: return MPI_Ireduce(sb, r, k->count, k->dt_arg, k->op, k->root, k->comm, q);
    case A2A * NFORMS + BLOCKING: return MPI_Alltoall(sb, k->count, k->dt_arg, r, k->count, k->dt_arg, k->comm);
    case A2A * NFORMS + NONBLOCKING: return MPI_Ialltoall(sb, k->count, k->dt_arg, r, k->count, k->dt_arg, k->comm, q);
#ifdef HAVE_PMPI_ALLGATHERV_INIT
    case AGV * NFORMS + PERSISTENT:
        return MPI_Allgatherv_init(sb, sc, k->dt_arg, r, k->counts, k->displs, k->dt_arg, k->comm, MPI_INFO_NULL, q);
    case RS * NFORMS + PERSISTENT: return MPI_Reduce_scatter_init(sb, r, k->counts, k->dt_arg, k->op, k->comm, MPI_INFO_NULL, q);
    case BC * NFORMS + PERSISTENT: return MPI_Bcast_init(r, k->count, k->dt_arg, k->root, k->comm, MPI_INFO_NULL, q);
    case RED * NFORMS + PERSISTENT:
        return MPI_Reduce_init(sb, r, k->count, k->dt_arg, k->op, k->root, k->comm, MPI_INFO_NULL, q);
    case A2A * NFORMS + PERSISTENT: return MPI_Alltoall_init(sb, k->count, k->dt_arg, r, k->count, k->dt_arg, k->comm, MPI_INFO_NULL, q);
#endif
    default: return MPI_ERR_INTERN;
    }
}

/* ---- buffers and data ---- */
typedef struct {
    size_t sbytes, rbytes; /* allocated (rbytes includes the guard) */
} layout_t;

static void case_layout(const case_t *k, layout_t *l)
{
    MPI_Aint lb, ext;
    size_t total = 0, end = 0;
    int i, n = k->coll == AGV ? k->rsize : k->size;

    PMPI_Type_get_extent(k->dt, &lb, &ext);
    for (i = 0; (k->coll == AGV || k->coll == RS) && i < n; i++) {
        size_t c = k->counts[i] > 0 ? (size_t)k->counts[i] : 0, e = ((size_t)k->displs[i] + c) * (size_t)ext;

        total += c;
        end = e > end ? e : end;
    }
    switch (k->coll) {
    case AGV: l->sbytes = (size_t)(k->counts[k->rank] > 0 ? k->counts[k->rank] : 0) * (size_t)ext; l->rbytes = end; break;
    case RS: l->sbytes = total * (size_t)ext; l->rbytes = total * (size_t)ext; break;
    case A2A: l->sbytes = l->rbytes = (size_t)k->count * (size_t)k->rsize * (size_t)ext; break;
    default: l->sbytes = l->rbytes = (size_t)(k->count > 0 ? k->count : 0) * (size_t)ext; break;
    }
    l->rbytes += GUARD;
    l->sbytes += 1;
}

/* element values that keep every reduction order exact: small integers (floats: eighths), products
 * of values near 1 */
static void gen(const case_t *k, unsigned char *p, size_t bytes)
{
    size_t i, n = bytes / (size_t)k->elem;

    if (k->op == MPI_OP_NULL || k->op == MPI_BXOR) {
        for (i = 0; i < bytes; i++) {
            p[i] = (unsigned char)(tst_rand_r(&data_rng) >> 56);
        }
        return;
    }
    for (i = 0; i < n; i++, p += k->elem) {
        uint64_t x = tst_rand_r(&data_rng);
        int64_t v = k->op == MPI_PROD ? (int64_t)(x % 4) - 1 : k->op == MPI_LAND ? (int64_t)(x % 2)
                                                                                  : (int64_t)(x % 41) - 20;

        if (k->is_float) {
            double d = k->op == MPI_PROD ? (double)v : (double)v / 8.0;

            if (k->elem == 4) {
                float f = (float)d;
                memcpy(p, &f, 4);
            } else {
                memcpy(p, &d, 8);
            }
        } else if (k->elem == 1) {
            int8_t b = (int8_t)(v & (k->op == MPI_SUM ? 7 : 0xff));
            memcpy(p, &b, 1);
        } else if (k->elem == 2) {
            int16_t b = (int16_t)v;
            memcpy(p, &b, 2);
        } else if (k->elem == 4) {
            int32_t b = (int32_t)v;
            memcpy(p, &b, 4);
        } else {
            memcpy(p, &v, 8);
        }
    }
}

static int first_error(int rc, int *cls)
{
    if (rc != MPI_SUCCESS && *cls == MPI_SUCCESS) {
        PMPI_Error_class(rc, cls);
    }
    return rc;
}

static uint64_t path_calls(int coll, tlmpi_path_t path, int form)
{
    tlmpi_stat_t st;

    tlmpi_get_form_stats(coll_ids[coll], path, form_ids[form], &st);
    return st.calls;
}

/* One case: the reference, then the form on host and on device buffers; rounds: starts of a
 * persistent request (new inputs each), else 1. */
static void run_case(case_t *k)
{
    layout_t l;
    unsigned char *in[2], *ref_r, *init_r, *sb[2], *rb[2];
    int rounds = k->form == PERSISTENT ? 2 : 1, round, kind, i;
    int ref_cls[2] = { MPI_SUCCESS, MPI_SUCCESS };
    unsigned char poison;
    char what[400];
    size_t o, cmp;
    int significant = !(k->inter && k->root == MPI_PROC_NULL && (k->coll == BC || k->coll == RED));
    int rnull = k->coll == RED && k->null_rbuf && !(k->inter ? k->root == MPI_ROOT : k->rank == k->root);

    n_cases++;
    o = (size_t)snprintf(what, sizeof(what), "%s%s %s comm=%s dt=%s op=%s root=%d inplace=%d", coll_names[k->coll],
                         k->large ? "_c" : "", form_names[k->form], k->comm_name, k->dt_name, k->op_name, k->root,
                         k->in_place);
    if (k->coll == AGV || k->coll == RS) {
        o += (size_t)snprintf(what + o, sizeof(what) - o, " counts=");
        for (i = 0; i < (k->coll == AGV ? k->rsize : k->size) && o < sizeof(what) - 16; i++) {
            o += (size_t)snprintf(what + o, sizeof(what) - o, "%s%d", i ? "," : "", k->counts[i]);
            if (k->coll == AGV) {
                o += (size_t)snprintf(what + o, sizeof(what) - o, "@%d", k->displs[i]);
            }
        }
    } else {
        snprintf(what + o, sizeof(what) - o, " count=%d", k->count);
    }
    if (getenv("TLMPI_TEST_VERBOSE")) {
        printf("[r%d] case %ld: %s\n", tst_rank, n_cases, what);
        fflush(stdout);
    }
    for (i = 0; i < MAXP; i++) {
        lcounts[i] = k->counts[i];
        ldispls[i] = k->displs[i];
    }
    case_layout(k, &l);
    /* in-place reduce_scatter: the result block is defined afterwards, the rest of the input not */
    cmp = k->coll == RS && k->in_place ? (size_t)k->counts[k->rank] * (size_t)k->elem *
                                             (size_t)(k->dt == dt_vec ? 3 : 1)
                                       : l.rbytes;
    poison = (unsigned char)(tst_rand() >> 56) | 1;
    init_r = tst_malloc(l.rbytes);
    memset(init_r, poison, l.rbytes);
    ref_r = tst_malloc((size_t)rounds * l.rbytes);
    for (round = 0; round < rounds; round++) {
        unsigned char *sbuf = tst_malloc(l.sbytes);

        in[round] = tst_malloc(l.sbytes + l.rbytes);
        gen(k, in[round], l.sbytes);
        gen(k, in[round] + l.sbytes, l.rbytes - GUARD);   /* in place / bcast: the input in rbuf */
        memcpy(in[round] + l.sbytes + l.rbytes - GUARD, init_r, GUARD);
        if (!k->in_place && k->coll != BC) {
            memcpy(in[round] + l.sbytes, init_r, l.rbytes); /* the receive buffer starts poisoned */
        }
        /* reference: the receive buffer carries over from the round before, as in the persistent runs */
        memcpy(ref_r + (size_t)round * l.rbytes, round ? ref_r : in[round] + l.sbytes, l.rbytes);
        if (round && (k->in_place || k->coll == BC)) {
            memcpy(ref_r + (size_t)round * l.rbytes, in[round] + l.sbytes, l.rbytes - GUARD);
        }
        memcpy(sbuf, in[round], l.sbytes);
        first_error(ref_call(k, sbuf, rnull ? NULL : ref_r + (size_t)round * l.rbytes), &ref_cls[round]);
        free(sbuf);
    }
    TST_CHECK(!k->expect_error || ref_cls[0] != MPI_SUCCESS, "%s: the reference accepted a case meant to fail", what);
    if (k->expect_error && ref_cls[0] != MPI_SUCCESS) {
        n_errors_matched++;
    }
    for (kind = 0; kind < 2; kind++) { /* 0: host buffers, 1: device buffers */
        tlmpi_path_t path = kind && significant ? TLMPI_PATH_STAGING : TLMPI_PATH_PASSTHROUGH;
        uint64_t before = path_calls(k->coll, path, k->form), want = 0;
        MPI_Request q = MPI_REQUEST_NULL;
        int cls = MPI_SUCCESS, made = 0;

        if (kind) {
            TST_CUDA(cudaMalloc((void **)&sb[kind], l.sbytes));
            TST_CUDA(cudaMalloc((void **)&rb[kind], l.rbytes));
        } else {
            sb[kind] = tst_malloc(l.sbytes);
            rb[kind] = tst_malloc(l.rbytes);
        }
        memcpy(rb[kind], in[0] + l.sbytes, l.rbytes);
        for (round = 0; round < rounds; round++) {
            int rc;

            memcpy(sb[kind], in[round], l.sbytes);
            if (round && (k->in_place || k->coll == BC)) {
                memcpy(rb[kind], in[round] + l.sbytes, l.rbytes - GUARD);
            }
            if (k->form == BLOCKING) {
                rc = first_error(tested_call(k, sb[kind], rnull ? NULL : rb[kind], NULL), &cls);
                want += rc == MPI_SUCCESS;
            } else if (k->form == NONBLOCKING) {
                rc = first_error(tested_call(k, sb[kind], rnull ? NULL : rb[kind], &q), &cls);
                if (rc == MPI_SUCCESS) {
                    rc = first_error(MPI_Wait(&q, MPI_STATUS_IGNORE), &cls);
                    want++;
                }
            } else {
                if (!made) {
                    rc = first_error(tested_call(k, sb[kind], rnull ? NULL : rb[kind], &q), &cls);
                    made = rc == MPI_SUCCESS;
                    want += made && path == TLMPI_PATH_PASSTHROUGH; /* the MPI's own request: counted at
                                                                      * *_init (its starts are the MPI's) */
                }
                if (made && cls == MPI_SUCCESS) {
                    rc = first_error(MPI_Start(&q), &cls);
                    want += rc == MPI_SUCCESS && path != TLMPI_PATH_PASSTHROUGH;
                    if (rc == MPI_SUCCESS) {
                        first_error(MPI_Wait(&q, MPI_STATUS_IGNORE), &cls);
                    }
                }
            }
            n_calls++;
            if (cls != MPI_SUCCESS || ref_cls[round] != MPI_SUCCESS) {
                TST_CHECK(cls == ref_cls[round], "%s, %s buffers, round %d: error class %d, the MPI's %d", what,
                          kind ? "device" : "host", round, cls, ref_cls[round]);
                break;
            }
            TST_CHECK(memcmp(rb[kind], ref_r + (size_t)round * l.rbytes, cmp) == 0 &&
                          memcmp(rb[kind] + l.rbytes - GUARD, ref_r + (size_t)round * l.rbytes + l.rbytes - GUARD,
                                 GUARD) == 0,
                      "%s, %s buffers, round %d: the receive buffer differs from PMPI's", what,
                      kind ? "device" : "host", round);
        }
        if (made) {
            MPI_Request_free(&q);
        }
        /* counted once per call (a persistent request: per start), on the path of its buffers;
         * calls that move nothing (every count zero) pass through, device buffers too */
        {
            uint64_t got = path_calls(k->coll, path, k->form) - before;
            int empty = 1;

            for (i = 0; (k->coll == AGV || k->coll == RS) && i < (k->coll == AGV ? k->rsize : k->size); i++) {
                empty &= k->counts[i] == 0;
            }
            if (k->coll != AGV && k->coll != RS) {
                empty = k->count == 0;
            }

            if (!kind || !empty) {
                TST_CHECK(got == want, "%s, %s buffers: %llu calls counted on path %s, expected %llu", what,
                          kind ? "device" : "host", (unsigned long long)got, tlmpi_path_name(path),
                          (unsigned long long)want);
            }
        }
        if (kind) {
            cudaFree(sb[kind]);
            cudaFree(rb[kind]);
        } else {
            free(sb[kind]);
            free(rb[kind]);
        }
    }
    for (round = 0; round < rounds; round++) {
        free(in[round]);
    }
    free(ref_r);
    free(init_r);
}

/* ---- case generation (the same random stream on every rank: tst_rng_sync) ---- */
typedef struct {
    MPI_Datatype dt;
    const char *name;
    int elem, is_float;
} dtype_t;

typedef struct {
    MPI_Comm comm;
    const char *name;
    int size, rank, inter, rsize;
    int group; /* intercommunicator: 0 the root group (even world ranks), 1 the other */
} tcomm_t;

static dtype_t dts[8];
static int n_dts;
static tcomm_t comms[4];
static int n_comms;

static void pick_counts(case_t *k, int n)
{
    int pattern = (int)tst_rand_range(0, 9), i, big = (int)tst_rand_range(0, n - 1), perm[MAXP], at = 0;

    for (i = 0; i < n; i++) {
        switch (pattern) {
        case 0: case 1: /* one rank holds almost everything */
            k->counts[i] = i == big ? (int)tst_rand_range(1500, 4000) : (int)tst_rand_range(0, 2);
            break;
        case 2: /* nothing anywhere */
            k->counts[i] = 0;
            break;
        case 3: case 4: /* equal */
            k->counts[i] = i ? k->counts[0] : (int)tst_rand_range(1, 64);
            break;
        default: /* random, zeros among them */
            k->counts[i] = tst_rand_range(0, 3) == 0 ? 0 : (int)tst_rand_range(1, 40);
            break;
        }
    }
    /* allgatherv's blocks: in a random order, with gaps of 0..5 elements before each */
    for (i = 0; i < n; i++) {
        perm[i] = i;
    }
    for (i = n - 1; i > 0; i--) {
        int j = (int)tst_rand_range(0, i), t = perm[i];

        perm[i] = perm[j];
        perm[j] = t;
    }
    for (i = 0; i < n; i++) {
        at += (int)tst_rand_range(0, 5);
        k->displs[perm[i]] = at;
        at += k->counts[perm[i]];
    }
    if (n == 1) {
        k->displs[0] = 0; /* MPICH 4.0.2 ignores the displacement on one rank (not in its *_init) */
    }
}

/* a random valid case of coll/form/large on comm ci (0: world, 1: reversed split, 2: self, 3: inter) */
static void make_case(case_t *k, int coll, int form, int large, int ci)
{
    const tcomm_t *t = &comms[ci];
    const dtype_t *d;
    static const struct {
        MPI_Op op;
        const char *name;
        int ints_only;
    } ops[] = { { MPI_SUM, "SUM", 0 }, { MPI_PROD, "PROD", 0 }, { MPI_MIN, "MIN", 0 }, { MPI_MAX, "MAX", 0 },
                { MPI_BXOR, "BXOR", 1 }, { MPI_LAND, "LAND", 1 } };
    int oi, in_place_small = 0;

    memset(k, 0, sizeof(*k));
    k->coll = coll;
    k->form = form;
    k->large = large;
    k->comm = t->comm;
    k->comm_name = t->name;
    k->size = t->size;
    k->rank = t->rank;
    k->inter = t->inter;
    k->rsize = t->rsize;
    /* reductions: no vector type (the MPI may reject a built-in op on it) */
    do {
        d = &dts[tst_rand_range(0, n_dts - 1)];
    } while ((coll == RS || coll == RED) && d->dt == dt_vec);
    k->dt = k->dt_arg = d->dt;
    k->dt_name = d->name;
    k->elem = d->elem;
    k->is_float = d->is_float;
    k->op = MPI_OP_NULL;
    k->op_name = "-";
    if (coll == RS || coll == RED) {
        do {
            oi = (int)tst_rand_range(0, (int)(sizeof(ops) / sizeof(ops[0])) - 1);
        } while (ops[oi].ints_only && d->is_float);
        k->op = ops[oi].op;
        k->op_name = ops[oi].name;
    }
    k->in_place = !t->inter && coll != BC && tst_rand_range(0, 2) == 0;
#ifdef MPICH_VERSION
    /* MPICH 4.0.2's MPI_Reduce in place crashes from about 300 doubles at a root other than 0, its
     * MPI_Reduce_c at any root (tlmpi hands it the same call on host copies): small ones only */
    in_place_small = coll == RED;
#endif
    k->root = (int)tst_rand_range(0, t->size - 1);
    if (t->inter) {
        /* the root group's first rank is the root; the other group names it */
        k->root = t->group == 0 ? (t->rank == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
    }
    k->null_rbuf = coll == RED && tst_rand_range(0, 3) == 0;
    if (coll == AGV || coll == RS) {
        pick_counts(k, coll == AGV ? t->rsize : t->size);
    } else {
        int r = (int)tst_rand_range(0, 9);

        k->count = r == 0 ? 0 : r < 3 ? (int)tst_rand_range(1500, 4000) : (int)tst_rand_range(1, 100);
        if (k->in_place && in_place_small && k->count > 100) {
            k->count = (int)tst_rand_range(1, 100);
        }
    }
}

/* bad input (MPI_COMM_WORLD): the MPI's error class on host and device buffers alike */
static void bad_cases(int form, int large)
{
    case_t k;

    for (int b = 0; b < 7; b++) {
        int coll = b == 0 ? BC : b == 1 ? RED : b == 2 ? RS : b == 3 ? BC : b == 4 ? AGV : b == 5 ? A2A : RED;

        make_case(&k, coll, form, large, 0);
        k.in_place = 0;
        k.null_rbuf = 0;
        k.expect_error = 1;
        if (k.count == 0) {
            k.count = 5;
        }
        if (coll == AGV) {
            for (int i = 0; i < k.size; i++) {
                k.counts[i] = i + 1;
                k.displs[i] = i * 8;
            }
        }
        switch (b) {
        case 0: k.root = k.size; k.comm_name = "world (root = size)"; break;
        case 1: k.root = -7; k.comm_name = "world (root = -7)"; break;
        case 2: k.op = MPI_OP_NULL; k.op_name = "MPI_OP_NULL"; k.counts[0] = 3; break;
        case 3: k.count = -1; k.comm_name = "world (count = -1)"; break;
        case 4:
#ifdef OPEN_MPI
            continue; /* Open MPI 4.1 checks only its own sendcount: the other ranks enter the call and wait */
#else
            k.counts[k.size - 1] = -1;
            k.comm_name = "world (a count = -1)";
            break;
#endif
        case 5: k.dt_arg = MPI_DATATYPE_NULL; k.dt_name = "MPI_DATATYPE_NULL"; break;
        default:
            k.dt = k.dt_arg = MPI_FLOAT;
            k.dt_name = "MPI_FLOAT";
            k.elem = 4;
            k.is_float = 1;
            k.op = MPI_BAND;
            k.op_name = "MPI_BAND";
            break;
        }
        run_case(&k);
    }
}

int main(int argc, char **argv)
{
    int reduced, n_each, coll, form, large, n_large = 1, n_forms = 2, i;
    MPI_Comm split, inter = MPI_COMM_NULL, half = MPI_COMM_NULL;
    long failures, checks;

    setenv("FAKE_CUDA_DEVICES", "1", 0);
    setenv("TLMPI_NODE", "0", 0); /* no node tier to set up: its kernels do not run on the fake runtime */
    tst_init("mpi_siblings", &argc, &argv);
    if (tst_size > MAXP) {
        return tst_skip("written for at most 16 ranks");
    }
    data_rng = 0x9E3779B97F4A7C15ULL * (uint64_t)(tst_rank + 7) ^ tst_rng_state;
    tst_rng_sync();
    reduced = tst_size > 2;
    n_each = reduced ? 2 : 5;
#ifdef HAVE_PMPI_ALLGATHERV_C
    n_large = 2;
#endif
#ifdef HAVE_PMPI_ALLGATHERV_INIT
    n_forms = 3;
#endif
    MPI_Type_vector(2, 1, 2, MPI_INT, &dt_vec);
    MPI_Type_commit(&dt_vec);
    dts[n_dts++] = (dtype_t){ MPI_INT8_T, "MPI_INT8_T", 1, 0 };
    dts[n_dts++] = (dtype_t){ MPI_INT16_T, "MPI_INT16_T", 2, 0 };
    dts[n_dts++] = (dtype_t){ MPI_INT, "MPI_INT", 4, 0 };
    dts[n_dts++] = (dtype_t){ MPI_INT64_T, "MPI_INT64_T", 8, 0 };
    dts[n_dts++] = (dtype_t){ MPI_FLOAT, "MPI_FLOAT", 4, 1 };
    dts[n_dts++] = (dtype_t){ MPI_DOUBLE, "MPI_DOUBLE", 8, 1 };
    dts[n_dts++] = (dtype_t){ dt_vec, "vector(2,1,2,MPI_INT)", 4, 0 };

    MPI_Comm_split(MPI_COMM_WORLD, 0, tst_size - tst_rank, &split);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    comms[0] = (tcomm_t){ MPI_COMM_WORLD, "world", 0, 0, 0, 0, 0 };
    comms[1] = (tcomm_t){ split, "split(reversed)", 0, 0, 0, 0, 0 };
    comms[2] = (tcomm_t){ MPI_COMM_SELF, "self", 0, 0, 0, 0, 0 };
    n_comms = 3;
    if (tst_size % 2 == 0) {
        /* even and odd world ranks, joined by an intercommunicator (the same size on both sides) */
        MPI_Comm_split(MPI_COMM_WORLD, tst_rank % 2, tst_rank, &half);
        MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, tst_rank % 2 ? 0 : 1, 77, &inter);
        MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);
        comms[3] = (tcomm_t){ inter, "intercomm", 0, 0, 1, 0, tst_rank % 2 };
        n_comms = 4;
    }
    for (i = 0; i < n_comms; i++) {
        MPI_Comm_size(comms[i].comm, &comms[i].size);
        MPI_Comm_rank(comms[i].comm, &comms[i].rank);
        comms[i].rsize = comms[i].size;
        if (comms[i].inter) {
            MPI_Comm_remote_size(comms[i].comm, &comms[i].rsize);
        }
    }
    tlmpi_reset_stats();

    for (coll = 0; coll < NCOLL; coll++) {
        for (form = 0; form < n_forms; form++) {
            for (large = 0; large < n_large; large++) {
                case_t k;

                for (i = 0; i < n_each; i++) {
                    /* mostly the world and the reversed split; self and the intercommunicator now and then */
                    int r = (int)tst_rand_range(0, 9), ci = r < 5 ? 0 : r < 8 ? 1 : r == 8 ? 2 : 3;

                    if (ci == 3 && (n_comms < 4 || coll == RS)) {
                        ci = 1;
                    }
                    make_case(&k, coll, form, large, ci);
                    run_case(&k);
                }
            }
        }
    }
    for (form = 0; form < n_forms; form++) {
        bad_cases(form, 0);
    }
    TST_CHECK(guard_hits == 0, "%ld device pointers reached the MPI", guard_hits);
    tst_totals(&failures, &checks);
    if (tst_rank == 0) {
        printf("mpi_siblings: %ld cases, %ld intercepted calls per rank, %ld bad-input cases rejected alike; forms: "
               "blocking, non-blocking%s%s\n",
               n_cases, n_calls, n_errors_matched, n_forms > 2 ? ", persistent" : "", n_large > 1 ? ", and their _c" : "");
    }
    MPI_Type_free(&dt_vec);
    MPI_Comm_free(&split);
    if (inter != MPI_COMM_NULL) {
        MPI_Comm_free(&inter);
        MPI_Comm_free(&half);
    }
    return tst_finish();
}
