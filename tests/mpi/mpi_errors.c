/*
 * mpi_errors: bad arguments. With MPI_ERRORS_RETURN on MPI_COMM_WORLD (and so on its dup), each
 * bad call goes once through the intercepted MPI_* entry point and once through PMPI_* with the
 * same arguments; the two must return the same error class (MPI_Error_class), and nothing may
 * crash. Afterwards the communicator must still work, and tlmpi's counters must have counted
 * exactly the intercepted calls that succeeded.
 *
 * The half types (TLMPI_FLOAT16, TLMPI_BFLOAT16, MPIX_C_FLOAT16) take tlmpi's own path even on a
 * host without GPU: tlmpi replaces SUM/PROD/MIN/MAX by its own MPI_Op. Their reference is PMPI_*
 * with the same arguments and a test-defined user op in place of a built-in arithmetic op, which
 * is what tlmpi hands to PMPI.
 *
 * Cases left out because the MPI itself crashes or aborts on them even through PMPI (probed with
 * a plain PMPI program, 2 ranks, MPI_ERRORS_RETURN):
 *  - MPICH 4.0.2: a negative count in Allreduce or Reduce_scatter_block aborts
 *    ("Assertion failed in typerep_yaksa_pack.c line 286"); LAND on MPI_FLOAT aborts
 *    ("Assertion failed in opland.c line 60"). Allgather with a negative count is fine.
 *  - Open MPI 4.1: NULL send or receive buffers with a nonzero count segfault in all three
 *    collectives (no argument check), and so does MPI_Allgather on MPI_COMM_NULL.
 * Aliased send and receive buffers (not MPI_IN_PLACE) are an error for MPICH; Open MPI does not
 * check and runs the call (the test then only requires the same class, MPI_SUCCESS, from both).
 */
#include "config.h"
#include "tlmpi.h"
#include "harness.h"

#if defined(MPICH_VERSION)
#define IS_MPICH 1
#else
#define IS_MPICH 0
#endif

enum { AG, RSB, AR };
static const char *const coll_names[] = { "Allgather", "Reduce_scatter_block", "Allreduce" };
static const tlmpi_coll_t coll_ids[] = { TLMPI_COLL_ALLGATHER, TLMPI_COLL_REDUCE_SCATTER_BLOCK,
                                         TLMPI_COLL_ALLREDUCE };
static uint64_t ok_calls[3];
static int n_cases;
static MPI_Op ref_half_op;

typedef struct {
    int coll;
    const char *what;
    const void *s;  /* send buffer (or MPI_IN_PLACE, NULL) */
    void *r;        /* receive buffer */
    int count;
    MPI_Datatype dt;
    MPI_Op op;
    MPI_Comm comm;
} bad_t;

static int call(int pmpi, const bad_t *b, MPI_Op op)
{
    switch (b->coll) {
    case AG:
        return pmpi ? PMPI_Allgather(b->s, b->count, b->dt, b->r, b->count, b->dt, b->comm)
                    : MPI_Allgather(b->s, b->count, b->dt, b->r, b->count, b->dt, b->comm);
    case RSB:
        return pmpi ? PMPI_Reduce_scatter_block(b->s, b->r, b->count, b->dt, op, b->comm)
                    : MPI_Reduce_scatter_block(b->s, b->r, b->count, b->dt, op, b->comm);
    default:
        return pmpi ? PMPI_Allreduce(b->s, b->r, b->count, b->dt, op, b->comm)
                    : MPI_Allreduce(b->s, b->r, b->count, b->dt, op, b->comm);
    }
}

static int is_arith(MPI_Op op)
{
    return op == MPI_SUM || op == MPI_PROD || op == MPI_MIN || op == MPI_MAX;
}

/* Run one case; half != 0: the reference replaces a built-in arithmetic op by a user op. */
static void run(const bad_t *b, int half)
{
    int rc_mpi, rc_pmpi, cls_mpi = MPI_SUCCESS, cls_pmpi = MPI_SUCCESS;
    char e0[MPI_MAX_ERROR_STRING + 40], e1[MPI_MAX_ERROR_STRING + 40];

    n_cases++;
    rc_mpi = call(0, b, b->op);
    rc_pmpi = call(1, b, half && b->dt != MPI_DATATYPE_NULL && is_arith(b->op) ? ref_half_op : b->op);
    if (rc_mpi != MPI_SUCCESS) {
        PMPI_Error_class(rc_mpi, &cls_mpi);
    } else {
        ok_calls[b->coll]++;
    }
    if (rc_pmpi != MPI_SUCCESS) {
        PMPI_Error_class(rc_pmpi, &cls_pmpi);
    }
    TST_CHECK(cls_mpi == cls_pmpi, "%s %s: MPI_ gives %s, PMPI_ gives %s", coll_names[b->coll], b->what,
              tst_err_string(rc_mpi, e0), tst_err_string(rc_pmpi, e1));
    if (getenv("TLMPI_TEST_VERBOSE")) {
        printf("  r%d %-22s %-40s class %d %d\n", tst_rank, coll_names[b->coll], b->what, cls_mpi, cls_pmpi);
        fflush(stdout);
    }
}

/* the test's stand-in for tlmpi's op: any user op makes PMPI accept the 2-byte types */
static void half_first(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    memcpy(inout, in, (size_t)*len * 2);
}

#define CASE(_coll, _what, _s, _r, _count, _dt, _op, _comm)                                   \
    do {                                                                                     \
        bad_t b_ = { _coll, _what, _s, _r, _count, _dt, _op, _comm };                        \
        run(&b_, half);                                                                      \
    } while (0)

static void cases_for_type(MPI_Datatype dt, MPI_Comm comm, int half)
{
    static char sb[4096], rb[4096];
    int c, rank, tsize = 4;

    PMPI_Comm_rank(comm, &rank);
    PMPI_Type_size(dt, &tsize);

    for (c = 0; c < 3; c++) {
        MPI_Op op = c == AG ? MPI_OP_NULL : MPI_SUM;

        /* MPICH aborts on negative counts in the reductions (see the top of the file) */
        if (c == AG || !IS_MPICH) {
            CASE(c, "negative count", sb, rb, -1, dt, op, comm);
        }
        CASE(c, "MPI_DATATYPE_NULL", sb, rb, 4, MPI_DATATYPE_NULL, op, comm);
        if (c != AG) {
            CASE(c, "MPI_OP_NULL", sb, rb, 4, dt, MPI_OP_NULL, comm);
            CASE(c, "op MPI_BAND", sb, rb, 4, dt, MPI_BAND, comm); /* invalid on float, f16, bf16 */
        }
        if (c != AG || IS_MPICH) {
            CASE(c, "MPI_COMM_NULL", sb, rb, 4, dt, op, MPI_COMM_NULL);
        }
        CASE(c, "recvbuf MPI_IN_PLACE", sb, MPI_IN_PLACE, 4, dt, op, comm);
        CASE(c, "sendbuf and recvbuf MPI_IN_PLACE", MPI_IN_PLACE, MPI_IN_PLACE, 4, dt, op, comm);
        /* Allgather: MPICH checks the send buffer against this rank's block of the receive
         * buffer, so alias that block on every rank (sendbuf == recvbuf would be an error on
         * rank 0 only, and the other ranks would wait in the collective for ever) */
        CASE(c, "sendbuf aliases recvbuf", c == AG ? rb + (size_t)rank * 4 * (size_t)tsize : rb, rb, 4, dt, op, comm);
        if (IS_MPICH) {
            /* Open MPI segfaults here (see the top of the file) */
            CASE(c, "NULL sendbuf, count 4", NULL, rb, 4, dt, op, comm);
            CASE(c, "NULL recvbuf, count 4", sb, NULL, 4, dt, op, comm);
            CASE(c, "MPI_IN_PLACE, NULL recvbuf, count 4", MPI_IN_PLACE, NULL, 4, dt, op, comm);
        }
        /* valid: count 0 with NULL buffers */
        CASE(c, "count 0, NULL buffers", NULL, NULL, 0, dt, op, comm);
    }
}

int main(int argc, char **argv)
{
    MPI_Comm dup;
    int i, x[2], y[2];
    tlmpi_stat_t s;
    int eh_ok;
    MPI_Errhandler eh;

    tst_init("mpi_errors", &argc, &argv);
    tlmpi_reset_stats();
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
    MPI_Comm_get_errhandler(dup, &eh);
    eh_ok = eh == MPI_ERRORS_RETURN;
    MPI_Errhandler_free(&eh);
    TST_CHECK(eh_ok, "errhandler of the dup is not MPI_ERRORS_RETURN");
    MPI_Op_create(half_first, 1, &ref_half_op);

    cases_for_type(MPI_FLOAT, MPI_COMM_WORLD, 0);
    cases_for_type(MPI_INT, dup, 0);
    /* half types: tlmpi's own path (op swap) on host buffers */
    cases_for_type(TLMPI_FLOAT16, dup, 1);
    cases_for_type(TLMPI_BFLOAT16, MPI_COMM_WORLD, 1);
#ifdef MPIX_C_FLOAT16
    cases_for_type(MPIX_C_FLOAT16, dup, 1);
#endif

    /* the communicators still work after all that */
    x[0] = tst_rank + 1;
    x[1] = -(tst_rank + 1);
    TST_CHECK(MPI_Allreduce(x, y, 2, MPI_INT, MPI_SUM, dup) == MPI_SUCCESS, "Allreduce after errors failed");
    ok_calls[AR]++;
    TST_CHECK(y[0] == tst_size * (tst_size + 1) / 2 && y[1] == -y[0], "Allreduce after errors: wrong result");

    /* counters: exactly the successful intercepted calls; host buffers never leave the passthrough
     * path except half types with an arithmetic op (HOSTOP), so compare the sum over paths */
    for (i = 0; i < 3; i++) {
        uint64_t total = 0;
        int p;

        for (p = 0; p < TLMPI_PATH_COUNT; p++) {
            tlmpi_get_stats(coll_ids[i], (tlmpi_path_t)p, &s);
            total += s.calls;
            if (p > TLMPI_PATH_HOSTOP) {
                TST_CHECK(s.calls == 0, "stats: %s path %s used on host buffers", coll_names[i],
                          tlmpi_path_name((tlmpi_path_t)p));
            }
        }
        TST_CHECK(total == ok_calls[i], "stats: %s counted %llu calls, %llu succeeded", coll_names[i],
                  (unsigned long long)total, (unsigned long long)ok_calls[i]);
    }
    if (tst_rank == 0) {
        printf("mpi_errors: %d bad-argument cases compared with PMPI_ (%s)\n", n_cases,
               IS_MPICH ? "MPICH" : "not MPICH");
    }
    MPI_Op_free(&ref_half_op);
    MPI_Comm_free(&dup);
    return tst_finish();
}
