/*
 * mpi_bad_input: odd and bad input on device buffers gets what the MPI gives on host buffers. Linked
 * with the fake CUDA runtime (tests/fakes/fakecudart.c: "device" memory is host memory that
 * cudaPointerGetAttributes calls device memory). Each case runs twice, with the same inputs and the
 * same initial receive bytes:
 *   reference  the MPI itself (PMPI_*) on host buffers (malloc);
 *   tested     the intercepted MPI_* on the case's buffers (device, managed, pinned, or a mixed
 *              host/device pair),
 * in the blocking form, the non-blocking form (MPI_I* then MPI_Wait) and, where MPI_VERSION >= 4, the
 * persistent form (*_init, MPI_Start, MPI_Wait, MPI_Request_free), with MPI_ERRORS_RETURN on every
 * communicator; and where both buffers are device or managed memory tlmpi's stream-ordered form
 * (tlmpi_*_enqueue on the legacy stream, then cudaStreamSynchronize) against the MPI's blocking call:
 * plain, where a valid call may also be refused with MPI_ERR_UNSUPPORTED_OPERATION (its tier has no
 * stream-ordered form), and on a communicator prepared with TLMPI_ENQUEUE_SYNC_FALLBACK. The error class of the first failing step (MPI_Error_class) must be the same in both
 * runs; where both succeed the receive buffers must be byte for byte the same. The cases: derived
 * datatypes (with holes) with user and built-in ops, user ops commutative and not, pair types with
 * MPI_MAXLOC/MINLOC, logical and bitwise ops, complex types, count 0, MPI_DATATYPE_NULL, ops invalid
 * for the type (MPI_BAND on float, MPI_REPLACE, MPI_NO_OP, MPI_MAX on complex, MPI_SUM on a derived
 * type), sendbuf == recvbuf (not MPI_IN_PLACE), an intercommunicator (MPI_Intercomm_create), mixed
 * host/device pairs, managed and pinned memory, MPI_COMM_SELF.
 * tests/mpi/bad_input.sh runs it and fails on any TLMPI ERROR line (a user's own mistake is no error
 * of tlmpi's). Left out: MPI_LAND on float under MPICH, which aborts there even on host buffers
 * (see mpi_errors.c); MPI_IN_PLACE on the intercommunicator, which the standard does not allow and
 * MPICH 4.0.2 accepts, sending uninitialised memory (no result to compare).
 */
#include "config.h"
#include "tlmpi.h"

#include <cuda_runtime_api.h>

#include "harness.h"

#if defined(MPICH_VERSION)
#define IS_MPICH 1
#else
#define IS_MPICH 0
#endif

enum { AG, RSB, AR };
enum { HOST, DEV, MANAGED, PINNED };
enum { NOT_IN_PLACE, IN_PLACE, ALIASED };
enum { BLOCKING, NONBLOCKING, PERSISTENT, ENQUEUE, ENQUEUE_SYNC, FORMS };
static const char *const coll_names[] = { "Allgather", "Reduce_scatter_block", "Allreduce" };
static const char *const mem_names[] = { "host", "device", "managed", "pinned" };
static const char *const form_names[] = { "blocking", "non-blocking", "persistent", "stream-ordered",
                                           "stream-ordered (synchronous fallback)" };

#define BUF_BYTES 65536

typedef struct {
    int coll;
    const char *what;
    MPI_Datatype dt;
    MPI_Op op;
    int count;
    MPI_Comm comm;
    int smem, rmem; /* memory kinds of the send and receive buffers */
    int place;      /* NOT_IN_PLACE, IN_PLACE, ALIASED (sendbuf == recvbuf, allgather: this rank's block) */
} case_t;

static int n_cases, n_runs, n_errors_matched;

/* ---- user ops: commutative (sum of ints), not commutative (the left operand: the lowest rank's
 * value), and one on the derived type (sum of its ints) ---- */
static void op_isum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    for (int i = 0; i < *len; i++) ((int *)inout)[i] += ((int *)in)[i];
}
static void op_left(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    int sz;

    PMPI_Type_size(*dt, &sz);
    memcpy(inout, in, (size_t)*len * (size_t)sz);
}
/* the vector type below: 2 ints at stride 2 (extent 3 ints) */
static void op_vsum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    for (int i = 0; i < *len; i++) {
        ((int *)inout)[3 * i] += ((int *)in)[3 * i];
        ((int *)inout)[3 * i + 2] += ((int *)in)[3 * i + 2];
    }
}

/* ---- buffers ---- */
static void *mem_alloc(int kind)
{
    void *p = NULL;

    switch (kind) {
    case DEV: TST_CUDA(cudaMalloc(&p, BUF_BYTES)); break;
    case MANAGED: TST_CUDA(cudaMallocManaged(&p, BUF_BYTES, cudaMemAttachGlobal)); break;
    case PINNED: TST_CUDA(cudaMallocHost(&p, BUF_BYTES)); break;
    default: p = tst_malloc(BUF_BYTES); break;
    }
    return p;
}

static void mem_free(int kind, void *p)
{
    switch (kind) {
    case DEV:
    case MANAGED: cudaFree(p); break;
    case PINNED: cudaFreeHost(p); break;
    default: free(p); break;
    }
}

/* Inputs: bytes 0..3 (as floats and doubles: small denormals, summed exactly; never NaN), a
 * function of (rank, byte index, salt); receive buffers start as another pattern. */
static void fill(unsigned char *b, int rank, int salt)
{
    for (int i = 0; i < BUF_BYTES; i++) b[i] = (unsigned char)((rank * 5 + i * 7 + salt * 3 + i / 13) & 3);
}

/* ---- one run of a case in one form ---- */
static int first_error(int rc, int *cls)
{
    if (rc != MPI_SUCCESS && *cls == MPI_SUCCESS) {
        PMPI_Error_class(rc, cls);
    }
    return rc;
}

static int call_block(int pmpi, const case_t *k, const void *s, void *r)
{
    switch (k->coll) {
    case AG:
        return pmpi ? PMPI_Allgather(s, k->count, k->dt, r, k->count, k->dt, k->comm)
                    : MPI_Allgather(s, k->count, k->dt, r, k->count, k->dt, k->comm);
    case RSB:
        return pmpi ? PMPI_Reduce_scatter_block(s, r, k->count, k->dt, k->op, k->comm)
                    : MPI_Reduce_scatter_block(s, r, k->count, k->dt, k->op, k->comm);
    default:
        return pmpi ? PMPI_Allreduce(s, r, k->count, k->dt, k->op, k->comm)
                    : MPI_Allreduce(s, r, k->count, k->dt, k->op, k->comm);
    }
}

static int call_nb(int pmpi, const case_t *k, const void *s, void *r, MPI_Request *q)
{
    switch (k->coll) {
    case AG:
        return pmpi ? PMPI_Iallgather(s, k->count, k->dt, r, k->count, k->dt, k->comm, q)
                    : MPI_Iallgather(s, k->count, k->dt, r, k->count, k->dt, k->comm, q);
    case RSB:
        return pmpi ? PMPI_Ireduce_scatter_block(s, r, k->count, k->dt, k->op, k->comm, q)
                    : MPI_Ireduce_scatter_block(s, r, k->count, k->dt, k->op, k->comm, q);
    default:
        return pmpi ? PMPI_Iallreduce(s, r, k->count, k->dt, k->op, k->comm, q)
                    : MPI_Iallreduce(s, r, k->count, k->dt, k->op, k->comm, q);
    }
}

#if MPI_VERSION >= 4
static int call_init(int pmpi, const case_t *k, const void *s, void *r, MPI_Request *q)
{
    switch (k->coll) {
    case AG:
        return pmpi ? PMPI_Allgather_init(s, k->count, k->dt, r, k->count, k->dt, k->comm, MPI_INFO_NULL, q)
                    : MPI_Allgather_init(s, k->count, k->dt, r, k->count, k->dt, k->comm, MPI_INFO_NULL, q);
    case RSB:
        return pmpi ? PMPI_Reduce_scatter_block_init(s, r, k->count, k->dt, k->op, k->comm, MPI_INFO_NULL, q)
                    : MPI_Reduce_scatter_block_init(s, r, k->count, k->dt, k->op, k->comm, MPI_INFO_NULL, q);
    default:
        return pmpi ? PMPI_Allreduce_init(s, r, k->count, k->dt, k->op, k->comm, MPI_INFO_NULL, q)
                    : MPI_Allreduce_init(s, r, k->count, k->dt, k->op, k->comm, MPI_INFO_NULL, q);
    }
}
#endif

/* tlmpi's stream-ordered call on the legacy stream, waited for: its return value is a class already */
static int call_enqueue(const case_t *k, const void *s, void *r)
{
    int rc;

    switch (k->coll) {
    case AG: rc = tlmpi_allgather_enqueue(s, k->count, k->dt, r, k->count, k->dt, k->comm, NULL); break;
    case RSB: rc = tlmpi_reduce_scatter_block_enqueue(s, r, k->count, k->dt, k->op, k->comm, NULL); break;
    default: rc = tlmpi_allreduce_enqueue(s, r, k->count, k->dt, k->op, k->comm, NULL); break;
    }
    TST_CUDA(cudaStreamSynchronize(NULL));
    return rc;
}

/* The case in one form, through PMPI_* (pmpi) or MPI_*, on send buffer s (MPI_IN_PLACE, or aliasing
 * r) and receive buffer r: the class of the first error, MPI_SUCCESS if none. The MPI's reference of
 * the stream-ordered forms is its blocking call. */
static int run_form(int pmpi, int form, const case_t *k, const void *s, void *r)
{
    MPI_Request q = MPI_REQUEST_NULL;
    int cls = MPI_SUCCESS;

    if (pmpi && form >= ENQUEUE) {
        form = BLOCKING;
    }
    switch (form) {
    case BLOCKING:
        first_error(call_block(pmpi, k, s, r), &cls);
        break;
    case ENQUEUE:
        cls = call_enqueue(k, s, r);
        break;
    case ENQUEUE_SYNC:
        if (k->comm != MPI_COMM_NULL) {
            TST_CHECK(tlmpi_enqueue_prepare(k->comm, TLMPI_ENQUEUE_SYNC_FALLBACK) == MPI_SUCCESS, "prepare");
        }
        cls = call_enqueue(k, s, r);
        if (k->comm != MPI_COMM_NULL) {
            TST_CHECK(tlmpi_enqueue_prepare(k->comm, 0) == MPI_SUCCESS, "prepare");
        }
        break;
    case NONBLOCKING:
        if (first_error(call_nb(pmpi, k, s, r, &q), &cls) == MPI_SUCCESS) {
            first_error(pmpi ? PMPI_Wait(&q, MPI_STATUS_IGNORE) : MPI_Wait(&q, MPI_STATUS_IGNORE), &cls);
        }
        break;
    default:
#if MPI_VERSION >= 4
        if (first_error(call_init(pmpi, k, s, r, &q), &cls) == MPI_SUCCESS) {
            if (first_error(pmpi ? PMPI_Start(&q) : MPI_Start(&q), &cls) == MPI_SUCCESS) {
                first_error(pmpi ? PMPI_Wait(&q, MPI_STATUS_IGNORE) : MPI_Wait(&q, MPI_STATUS_IGNORE), &cls);
            }
            if (q != MPI_REQUEST_NULL) {
                pmpi ? PMPI_Request_free(&q) : MPI_Request_free(&q);
            }
        }
#endif
        break;
    }
    return cls;
}

/* The buffers of one run: send and receive filled, the send pointer as the case places it. */
static const void *setup(const case_t *k, int rank, unsigned char *sb, unsigned char *rb, unsigned char *host_tmp)
{
    MPI_Aint lb = 0, ext = 0;

    /* distinct inputs on every rank, also on MPI_COMM_SELF and the intercommunicator */
    fill(host_tmp, tst_rank, 1);
    TST_CUDA(cudaMemcpy(sb, host_tmp, BUF_BYTES, cudaMemcpyDefault));
    fill(host_tmp, tst_rank, 2);
    TST_CUDA(cudaMemcpy(rb, host_tmp, BUF_BYTES, cudaMemcpyDefault));
    switch (k->place) {
    case IN_PLACE:
        return MPI_IN_PLACE;
    case ALIASED:
        if (k->coll == AG && k->dt != MPI_DATATYPE_NULL) {
            PMPI_Type_get_extent(k->dt, &lb, &ext);
            return rb + (size_t)rank * (size_t)k->count * (size_t)ext;
        }
        return rb;
    default:
        return sb;
    }
}

static void run_case(const case_t *k)
{
    static unsigned char *ref_s, *ref_r, *got, *tmp;
    unsigned char *ts, *tr;
    int rank = 0, form;
    char e0[64], e1[64];

    if (!ref_s) {
        ref_s = tst_malloc(BUF_BYTES);
        ref_r = tst_malloc(BUF_BYTES);
        got = tst_malloc(BUF_BYTES);
        tmp = tst_malloc(BUF_BYTES);
    }
    if (k->comm != MPI_COMM_NULL) {
        PMPI_Comm_rank(k->comm, &rank);
    }
    n_cases++;
    ts = mem_alloc(k->smem);
    tr = mem_alloc(k->rmem);
    for (form = 0; form < FORMS; form++) {
        const void *s;
        int want, have;

        if (form == PERSISTENT && MPI_VERSION < 4) {
            continue;
        }
        if (form >= ENQUEUE && ((k->place != IN_PLACE && (k->smem == HOST || k->smem == PINNED)) ||
                                k->rmem == HOST || k->rmem == PINNED)) {
            continue; /* stream-ordered calls take device memory alone (else MPI_ERR_BUFFER: mpi_enqueue) */
        }
        s = setup(k, rank, ref_s, ref_r, tmp);
        want = run_form(1, form, k, s, ref_r);
        s = setup(k, rank, ts, tr, tmp);
        have = run_form(0, form, k, s, tr);
        n_runs++;
        snprintf(e0, sizeof(e0), "class %d", want);
        snprintf(e1, sizeof(e1), "class %d", have);
        if (form == ENQUEUE && want == MPI_SUCCESS && have == MPI_ERR_UNSUPPORTED_OPERATION) {
            have = want = -1; /* valid, and refused without the synchronous fallback (a tier with no
                                 stream-ordered form): nothing to compare */
        }
        TST_CHECK(want == have, "%s %s (%s, send %s, receive %s), %s: the MPI on host buffers gives %s, device "
                  "buffers %s", coll_names[k->coll], k->what, k->place == IN_PLACE ? "in place"
                  : k->place == ALIASED ? "aliased" : "not in place", mem_names[k->smem], mem_names[k->rmem],
                  form_names[form], want == MPI_SUCCESS ? "MPI_SUCCESS" : e0, have == MPI_SUCCESS ? "MPI_SUCCESS" : e1);
        if (want == MPI_SUCCESS && have == MPI_SUCCESS) {
            TST_CUDA(cudaMemcpy(got, tr, BUF_BYTES, cudaMemcpyDefault));
            if (memcmp(got, ref_r, BUF_BYTES) != 0) {
                size_t i = 0;

                while (got[i] == ref_r[i]) i++;
                TST_FAIL("%s %s (send %s, receive %s), %s: the result differs from the MPI's on host buffers "
                         "from byte %zu", coll_names[k->coll], k->what, mem_names[k->smem], mem_names[k->rmem],
                         form_names[form], i);
            }
        } else if (want > MPI_SUCCESS && want == have) {
            n_errors_matched++;
        }
        if (getenv("TLMPI_TEST_VERBOSE")) {
            printf("  r%d %-20s %-32s %-12s class %d %d\n", tst_rank, coll_names[k->coll], k->what,
                   form_names[form], want, have);
            fflush(stdout);
        }
    }
    mem_free(k->smem, ts);
    mem_free(k->rmem, tr);
}

/* one case for each collective in colls (a bit mask over AG, RSB, AR); the allgather ignores op */
static void cases(unsigned colls, const char *what, MPI_Datatype dt, MPI_Op op, int count, MPI_Comm comm,
                  int smem, int rmem, int place)
{
    for (int c = 0; c < 3; c++) {
        if (colls & (1u << c)) {
            case_t k = { c, what, dt, c == AG ? MPI_OP_NULL : op, count, comm, smem, rmem, place };

            run_case(&k);
        }
    }
}

#define ALL ((1u << AG) | (1u << RSB) | (1u << AR))
#define RED ((1u << RSB) | (1u << AR))

int main(int argc, char **argv)
{
    MPI_Datatype vec;
    MPI_Op isum, left, vsum;
    MPI_Comm dup, split, inter;
    const int n = 37;

    tst_init("mpi_bad_input", &argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
    MPI_Type_vector(2, 1, 2, MPI_INT, &vec); /* ints 0 and 2 of 3: holes */
    MPI_Type_commit(&vec);
    MPI_Op_create(op_isum, 1, &isum);
    MPI_Op_create(op_left, 0, &left);
    MPI_Op_create(op_vsum, 1, &vsum);
    /* an intercommunicator: even world ranks against odd ones */
    MPI_Comm_split(MPI_COMM_WORLD, tst_rank % 2, tst_rank, &split);
    inter = MPI_COMM_NULL;
    if (tst_size >= 2) {
        MPI_Intercomm_create(split, 0, MPI_COMM_WORLD, tst_rank % 2 ? 0 : 1, 7, &inter);
        MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);
    }

    /* derived datatypes: a user op on them, a built-in op (invalid), allgather moves them */
    cases(ALL, "derived type, user op", vec, vsum, n, dup, DEV, DEV, NOT_IN_PLACE);
    cases(RED, "derived type, user op", vec, vsum, n, dup, DEV, DEV, IN_PLACE);
    cases(RED, "derived type, MPI_SUM", vec, MPI_SUM, n, dup, DEV, DEV, NOT_IN_PLACE);
    /* user ops */
    cases(RED, "user op, commutative", MPI_INT, isum, n, dup, DEV, DEV, NOT_IN_PLACE);
    cases(RED, "user op, not commutative", MPI_INT, left, n, dup, DEV, DEV, NOT_IN_PLACE);
    cases(RED, "user op, not commutative", MPI_INT, left, n, dup, DEV, DEV, IN_PLACE);
    /* pair types */
    cases(RED, "MPI_2INT MPI_MAXLOC", MPI_2INT, MPI_MAXLOC, n, dup, DEV, DEV, NOT_IN_PLACE);
    cases(RED, "MPI_FLOAT_INT MPI_MINLOC", MPI_FLOAT_INT, MPI_MINLOC, n, dup, DEV, DEV, NOT_IN_PLACE);
    cases(RED, "MPI_DOUBLE_INT MPI_MAXLOC", MPI_DOUBLE_INT, MPI_MAXLOC, n, dup, DEV, DEV, IN_PLACE);
    cases(RED, "MPI_2INT MPI_SUM", MPI_2INT, MPI_SUM, n, dup, DEV, DEV, NOT_IN_PLACE);
    /* logical and bitwise ops */
    cases(RED, "MPI_INT MPI_LAND", MPI_INT, MPI_LAND, n, dup, DEV, DEV, NOT_IN_PLACE);
    cases(RED, "MPI_C_BOOL MPI_LOR", MPI_C_BOOL, MPI_LOR, n, dup, DEV, DEV, NOT_IN_PLACE);
    cases(RED, "MPI_INT MPI_LXOR", MPI_INT, MPI_LXOR, n, dup, DEV, DEV, IN_PLACE);
    cases(RED, "MPI_UNSIGNED MPI_BAND", MPI_UNSIGNED, MPI_BAND, n, dup, DEV, DEV, NOT_IN_PLACE);
    cases(RED, "MPI_BYTE MPI_BOR", MPI_BYTE, MPI_BOR, n, dup, DEV, DEV, NOT_IN_PLACE);
    cases(RED, "MPI_INT MPI_BXOR", MPI_INT, MPI_BXOR, n, dup, DEV, DEV, NOT_IN_PLACE);
    /* complex types */
    cases(RED, "MPI_C_FLOAT_COMPLEX MPI_SUM", MPI_C_FLOAT_COMPLEX, MPI_SUM, n, dup, DEV, DEV, NOT_IN_PLACE);
    cases(RED, "MPI_C_DOUBLE_COMPLEX MPI_PROD", MPI_C_DOUBLE_COMPLEX, MPI_PROD, n, dup, DEV, DEV, IN_PLACE);
    cases(ALL, "MPI_C_FLOAT_COMPLEX", MPI_C_FLOAT_COMPLEX, MPI_SUM, n, dup, DEV, DEV, NOT_IN_PLACE);
    /* ops invalid for the type */
    cases(RED, "MPI_FLOAT MPI_BAND", MPI_FLOAT, MPI_BAND, n, dup, DEV, DEV, NOT_IN_PLACE);
    cases(RED, "MPI_FLOAT MPI_BAND", MPI_FLOAT, MPI_BAND, n, MPI_COMM_WORLD, DEV, DEV, IN_PLACE);
    cases(RED, "MPI_FLOAT MPI_REPLACE", MPI_FLOAT, MPI_REPLACE, n, dup, DEV, DEV, NOT_IN_PLACE);
    cases(RED, "MPI_FLOAT MPI_NO_OP", MPI_FLOAT, MPI_NO_OP, n, dup, DEV, DEV, NOT_IN_PLACE);
    cases(RED, "MPI_DOUBLE MPI_BXOR", MPI_DOUBLE, MPI_BXOR, n, dup, DEV, DEV, NOT_IN_PLACE);
    cases(RED, "MPI_C_FLOAT_COMPLEX MPI_MAX", MPI_C_FLOAT_COMPLEX, MPI_MAX, n, dup, DEV, DEV, NOT_IN_PLACE);
    cases(RED, "MPI_FLOAT MPI_MAXLOC", MPI_FLOAT, MPI_MAXLOC, n, dup, DEV, DEV, NOT_IN_PLACE);
    if (!IS_MPICH) {
        cases(RED, "MPI_FLOAT MPI_LAND", MPI_FLOAT, MPI_LAND, n, dup, DEV, DEV, NOT_IN_PLACE);
    }
    /* count 0, MPI_DATATYPE_NULL */
    cases(ALL, "count 0", MPI_FLOAT, MPI_SUM, 0, dup, DEV, DEV, NOT_IN_PLACE);
    cases(ALL, "count 0", MPI_FLOAT, MPI_SUM, 0, dup, DEV, DEV, IN_PLACE);
    cases(ALL, "MPI_DATATYPE_NULL", MPI_DATATYPE_NULL, MPI_SUM, n, dup, DEV, DEV, NOT_IN_PLACE);
    /* sendbuf == recvbuf, not MPI_IN_PLACE (allgather: this rank's block) */
    cases(ALL, "sendbuf aliases recvbuf", MPI_FLOAT, MPI_SUM, n, dup, DEV, DEV, ALIASED);
    cases(RED, "sendbuf aliases recvbuf, MPI_BAND", MPI_INT, MPI_BAND, n, dup, DEV, DEV, ALIASED);
    /* the intercommunicator */
    cases(ALL, "intercommunicator", MPI_FLOAT, MPI_SUM, n, inter, DEV, DEV, NOT_IN_PLACE);
    cases(RED, "intercommunicator, user op", MPI_INT, left, n, inter, DEV, DEV, NOT_IN_PLACE);
    cases(RED, "intercommunicator, MPI_FLOAT MPI_BAND", MPI_FLOAT, MPI_BAND, n, inter, DEV, DEV, NOT_IN_PLACE);
    /* mixed host/device pairs */
    cases(ALL, "MPI_FLOAT", MPI_FLOAT, MPI_SUM, n, dup, HOST, DEV, NOT_IN_PLACE);
    cases(ALL, "MPI_FLOAT", MPI_FLOAT, MPI_SUM, n, dup, DEV, HOST, NOT_IN_PLACE);
    cases(RED, "MPI_FLOAT MPI_BAND", MPI_FLOAT, MPI_BAND, n, dup, HOST, DEV, NOT_IN_PLACE);
    cases(RED, "derived type, user op", vec, vsum, n, dup, DEV, HOST, NOT_IN_PLACE);
    /* managed and pinned memory */
    cases(ALL, "MPI_FLOAT", MPI_FLOAT, MPI_SUM, n, dup, MANAGED, MANAGED, NOT_IN_PLACE);
    cases(RED, "MPI_INT MPI_BAND", MPI_INT, MPI_BAND, n, dup, MANAGED, DEV, NOT_IN_PLACE);
    cases(RED, "MPI_FLOAT MPI_BAND", MPI_FLOAT, MPI_BAND, n, dup, MANAGED, MANAGED, NOT_IN_PLACE);
    cases(ALL, "MPI_FLOAT", MPI_FLOAT, MPI_SUM, n, dup, PINNED, PINNED, NOT_IN_PLACE);
    cases(RED, "MPI_FLOAT MPI_BAND", MPI_FLOAT, MPI_BAND, n, dup, PINNED, DEV, NOT_IN_PLACE);
    /* MPI_COMM_SELF (one rank: tlmpi's device copy serves only what the MPI accepts) */
    cases(RED, "MPI_COMM_SELF, MPI_FLOAT MPI_BAND", MPI_FLOAT, MPI_BAND, n, MPI_COMM_SELF, DEV, DEV, NOT_IN_PLACE);
    cases(RED, "MPI_COMM_SELF, user op", MPI_INT, left, n, MPI_COMM_SELF, DEV, DEV, NOT_IN_PLACE);
    cases(ALL, "MPI_COMM_SELF, aliased", MPI_FLOAT, MPI_SUM, n, MPI_COMM_SELF, DEV, DEV, ALIASED);

    if (tst_rank == 0) {
        printf("mpi_bad_input: %d cases, %d runs (forms) compared with the MPI on host buffers, %d of them the same "
               "error (%s, MPI_VERSION %d)\n", n_cases, n_runs, n_errors_matched, IS_MPICH ? "MPICH" : "not MPICH",
               MPI_VERSION);
    }
    if (inter != MPI_COMM_NULL) {
        MPI_Comm_free(&inter);
    }
    MPI_Comm_free(&split);
    MPI_Op_free(&isum);
    MPI_Op_free(&left);
    MPI_Op_free(&vsum);
    MPI_Type_free(&vec);
    MPI_Comm_free(&dup);
    return tst_finish();
}
