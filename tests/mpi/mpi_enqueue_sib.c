/*
 * mpi_enqueue_sib: the siblings' stream-ordered entry points (tlmpi_allgatherv_enqueue,
 * tlmpi_reduce_scatter_enqueue, tlmpi_bcast_enqueue, tlmpi_reduce_enqueue, tlmpi_alltoall_enqueue,
 * their _c forms and their _f forms with Fortran handles and int64_t counts; include/tlmpi.h) against the CPU stand-ins of tests/fakes (cudaMalloc'd "device"
 * memory is host memory tlmpi classifies as device memory; the node tier's kernels do not run there,
 * so the calls run on TLMPI_TIER=staging). 2 and 4 ranks (tests/local.mk).
 *
 * Cases, in random order with random counts (zeros, one rank at 8x), types, ops, roots and in place,
 * each through the plain, the _c or the _f entry point (_f: NULL sendbuf for MPI_IN_PLACE; every
 * collective also through _f in place and not), the same on every rank:
 *  a  a communicator prepared with TLMPI_ENQUEUE_SYNC_FALLBACK: MPI_SUCCESS and the whole receive buffer
 *     byte for byte what PMPI_* gives on host copies (poisoned beforehand; MPI_Reduce's at the root);
 *     MPI_Reduce with recvbuf NULL off the root;
 *  b  the same call on an unprepared communicator: MPI_ERR_UNSUPPORTED_OPERATION (staging has no
 *     stream-ordered form), nothing written;
 *  c  bad arguments get the class the MPI gives the blocking call on host buffers, with and without the
 *     fallback: a root out of range, a negative count in recvcounts, MPI_DATATYPE_NULL, an op invalid
 *     for the type (MPI_BAND on float); a host receive buffer: MPI_ERR_BUFFER; all counts zero with NULL
 *     buffers: MPI_SUCCESS; the _f forms on MPI_COMM_NULL's handle: MPI_ERR_COMM.
 * Every failing call leaves tlmpi_enqueue_error() non-empty.
 */
#include "config.h"
#include "tlmpi.h"

#include <cuda_runtime_api.h>

#include "harness.h"

enum { AGV, RS, BC, RED, A2A, NCOLL };
enum { F_INT, F_LARGE, F_FORT, NFORM }; /* the entry point: plain, _c, _f */
static const char *const form_names[NFORM] = { "", " (_c)", " (_f)" };
static const char *const coll_names[NCOLL] = { "allgatherv", "reduce_scatter", "bcast", "reduce", "alltoall" };
#define MAXP 16
#ifdef MPICH_VERSION
#define IS_MPICH 1
#else
#define IS_MPICH 0
#endif
#define POISON 0x5a

typedef struct {
    int coll, form, root, in_place, count, null_rbuf;
    int counts[MAXP], displs[MAXP];
    MPI_Datatype dt;
    int esize;
    MPI_Op op;
    MPI_Comm comm;
} case_t;

static int g_size;
static tst_rng_t g_data; /* this rank's data */

/* one call: tlmpi's stream-ordered entry point (then the legacy stream synchronised) or, pmpi, the
 * MPI's blocking call; returns an error class */
static int call(const case_t *k, int pmpi, const void *s, void *r)
{
    MPI_Count cc[MAXP];
    MPI_Aint cd[MAXP];
    int64_t fc[MAXP], fd[MAXP];
    int i, rc, cls = MPI_SUCCESS;
    const void *sb = k->in_place ? MPI_IN_PLACE : s;

    for (i = 0; i < g_size; i++) {
        cc[i] = k->counts[i];
        cd[i] = k->displs[i];
        fc[i] = k->counts[i];
        fd[i] = k->displs[i];
    }
    if (pmpi) {
        switch (k->coll) {
        case AGV: rc = PMPI_Allgatherv(sb, k->in_place ? 0 : k->counts[tst_rank], k->dt, r, k->counts, k->displs, k->dt, k->comm); break;
        case RS: rc = PMPI_Reduce_scatter(sb, r, k->counts, k->dt, k->op, k->comm); break;
        case BC: rc = PMPI_Bcast(r, k->count, k->dt, k->root, k->comm); break;
        case RED: rc = PMPI_Reduce(sb, r, k->count, k->dt, k->op, k->root, k->comm); break;
        default: rc = PMPI_Alltoall(sb, k->count, k->dt, r, k->count, k->dt, k->comm); break;
        }
        if (rc != MPI_SUCCESS) PMPI_Error_class(rc, &cls);
        return cls;
    }
    if (k->null_rbuf) r = NULL;
    if (k->form == F_FORT) {
        MPI_Fint tf = PMPI_Type_c2f(k->dt), of = PMPI_Op_c2f(k->op), cf = PMPI_Comm_c2f(k->comm);
        const void *sf = k->in_place ? NULL : s;

        switch (k->coll) {
        case AGV: rc = tlmpi_allgatherv_enqueue_f(sf, k->in_place ? 0 : fc[tst_rank], r, fc, fd, tf, cf, NULL); break;
        case RS: rc = tlmpi_reduce_scatter_enqueue_f(sf, r, fc, tf, of, cf, NULL); break;
        case BC: rc = tlmpi_bcast_enqueue_f(r, k->count, tf, k->root, cf, NULL); break;
        case RED: rc = tlmpi_reduce_enqueue_f(sf, r, k->count, tf, of, k->root, cf, NULL); break;
        default: rc = tlmpi_alltoall_enqueue_f(sf, r, k->count, tf, cf, NULL); break;
        }
    } else if (k->form == F_LARGE) {
        switch (k->coll) {
        case AGV: rc = tlmpi_allgatherv_enqueue_c(sb, k->in_place ? 0 : cc[tst_rank], k->dt, r, cc, cd, k->dt, k->comm, NULL); break;
        case RS: rc = tlmpi_reduce_scatter_enqueue_c(sb, r, cc, k->dt, k->op, k->comm, NULL); break;
        case BC: rc = tlmpi_bcast_enqueue_c(r, k->count, k->dt, k->root, k->comm, NULL); break;
        case RED: rc = tlmpi_reduce_enqueue_c(sb, r, k->count, k->dt, k->op, k->root, k->comm, NULL); break;
        default: rc = tlmpi_alltoall_enqueue_c(sb, k->count, k->dt, r, k->count, k->dt, k->comm, NULL); break;
        }
    } else {
        switch (k->coll) {
        case AGV: rc = tlmpi_allgatherv_enqueue(sb, k->in_place ? 0 : k->counts[tst_rank], k->dt, r, k->counts, k->displs, k->dt, k->comm, NULL); break;
        case RS: rc = tlmpi_reduce_scatter_enqueue(sb, r, k->counts, k->dt, k->op, k->comm, NULL); break;
        case BC: rc = tlmpi_bcast_enqueue(r, k->count, k->dt, k->root, k->comm, NULL); break;
        case RED: rc = tlmpi_reduce_enqueue(sb, r, k->count, k->dt, k->op, k->root, k->comm, NULL); break;
        default: rc = tlmpi_alltoall_enqueue(sb, k->count, k->dt, r, k->count, k->dt, k->comm, NULL); break;
        }
    }
    TST_CUDA(cudaStreamSynchronize(NULL));
    if (rc != MPI_SUCCESS) {
        const char *why = tlmpi_enqueue_error();
        TST_CHECK(why && *why, "%s: tlmpi_enqueue_error() empty after class %d", coll_names[k->coll], rc);
    }
    return rc;
}

/* element counts of the input and the receive buffer of case k on this rank */
static void sizes(const case_t *k, size_t *in_n, size_t *out_n)
{
    size_t tot = 0;
    int i;

    size_t own = k->counts[tst_rank] > 0 ? (size_t)k->counts[tst_rank] : 0, cnt = k->count > 0 ? (size_t)k->count : 0;

    for (i = 0; i < g_size; i++) {
        size_t c = k->counts[i] > 0 ? (size_t)k->counts[i] : 0, end = (size_t)k->displs[i] + c;

        if (k->coll == AGV) tot = end > tot ? end : tot;
        else tot += c;
    }
    switch (k->coll) {
    case AGV: *in_n = own; *out_n = tot; break;
    case RS: *in_n = tot; *out_n = k->in_place ? tot : own; break;
    case BC: *in_n = 0; *out_n = cnt; break;
    case RED: *in_n = cnt; *out_n = cnt; break;
    default: *in_n = *out_n = cnt * (size_t)g_size; break;
    }
}

/* whether case k moves any data */
static int moves(const case_t *k)
{
    int i;

    if (k->coll != AGV && k->coll != RS) return k->count != 0;
    for (i = 0; i < g_size; i++) if (k->counts[i] != 0) return 1;
    return 0;
}

/* case k on an unprepared dup of its communicator, then on one prepared with the fallback, against
 * PMPI_* on host copies */
static void run(const case_t *k0, const char *what)
{
    case_t k = *k0;
    size_t in_n, out_n, ib, ob, i;
    unsigned char *hi, *href, *hgot, *di, *dr;
    int want, have, prep;
    MPI_Comm prepared;

    sizes(&k, &in_n, &out_n);
    ib = in_n * (size_t)k.esize + 64;
    ob = out_n * (size_t)k.esize + 64;
    hi = tst_malloc(ib);
    href = tst_malloc(ob);
    hgot = tst_malloc(ob);
    TST_CUDA(cudaMalloc((void **)&di, ib));
    TST_CUDA(cudaMalloc((void **)&dr, ob));
    /* this rank's data from a generator of its own (the shared one stays in step across ranks); small
     * values: sums exact */
    for (i = 0; i + 4 <= ib; i += 4) {
        int v = (int)(tst_rand_r(&g_data) % 9);
        float f = (float)v;

        memcpy(hi + i, k.dt == MPI_FLOAT ? (const void *)&f : (const void *)&v, 4);
    }
    if (getenv("TLMPI_TEST_VERBOSE")) {
        printf("[r%d] %s %s%s root %d in place %d count %d counts %d %d\n", tst_rank, coll_names[k.coll], what,
               form_names[k.form], k.root, k.in_place, k.count, k.counts[0], k.counts[1]);
        fflush(stdout);
    }
    PMPI_Comm_dup(k.comm, &prepared);
    PMPI_Comm_set_errhandler(prepared, MPI_ERRORS_RETURN);
    for (prep = 0; prep < 2; prep++) {
        k.comm = prepared;
        if (prep) TST_CHECK(tlmpi_enqueue_prepare(prepared, TLMPI_ENQUEUE_SYNC_FALLBACK) == MPI_SUCCESS, "prepare");
        memset(href, POISON, ob);
        if (k.coll == BC && tst_rank == k.root)
            for (i = 0; i < ob; i++) href[i] = (unsigned char)(tst_rand_r(&g_data) & 0xff);
        if (k.in_place) {
            size_t at = k.coll == AGV ? (size_t)k.displs[tst_rank] * (size_t)k.esize : 0;
            memcpy(href + at, hi, in_n * (size_t)k.esize);
        }
        TST_CUDA(cudaMemcpy(di, hi, ib, cudaMemcpyHostToDevice));
        TST_CUDA(cudaMemcpy(dr, href, ob, cudaMemcpyHostToDevice));
        memcpy(hgot, href, ob);
        want = call(&k, 1, hi, href);
        have = call(&k, 0, di, dr);
        TST_CUDA(cudaMemcpy(hgot, dr, ob, cudaMemcpyDeviceToHost));
        if (want == MPI_SUCCESS && !prep) {
            /* valid: refused without the fallback (staging is not stream-ordered), or done at once where
             * it moves nothing */
            TST_CHECK(have == MPI_ERR_UNSUPPORTED_OPERATION || (have == MPI_SUCCESS && !moves(&k)),
                      "%s %s, no fallback: class %d, expected %d (unsupported)", coll_names[k.coll], what, have,
                      MPI_ERR_UNSUPPORTED_OPERATION);
            continue;
        }
        TST_CHECK(have == want, "%s %s%s%s: class %d, the MPI on host buffers %d", coll_names[k.coll], what,
                  form_names[k.form], prep ? ", fallback" : "", have, want);
        if (want == MPI_SUCCESS && have == MPI_SUCCESS && (k.coll != RED || tst_rank == k.root) &&
            !(k.coll == RS && k.in_place)) {
            TST_CHECK(memcmp(hgot, href, ob) == 0, "%s %s%s: the receive buffer differs from the MPI's",
                      coll_names[k.coll], what, form_names[k.form]);
        }
        if (want == MPI_SUCCESS && have == MPI_SUCCESS && k.coll == RS && k.in_place) {
            TST_CHECK(memcmp(hgot, href, (size_t)k.counts[tst_rank] * (size_t)k.esize) == 0,
                      "%s %s%s: the result differs from the MPI's", coll_names[k.coll], what, form_names[k.form]);
        }
    }
    PMPI_Comm_free(&prepared);
    TST_CUDA(cudaFree(di));
    TST_CUDA(cudaFree(dr));
    free(hi);
    free(href);
    free(hgot);
}

/* a random case of coll; in place drawn where in_place < 0 (never for MPI_Bcast; MPI_Reduce's at the root) */
static void random_case(case_t *k, int coll, int in_place)
{
    int i, shape = (int)tst_rand_range(0, 3), mx = (int)tst_rand_range(1, 700), total = 0;

    memset(k, 0, sizeof(*k));
    k->coll = coll;
    k->comm = MPI_COMM_WORLD;
    k->form = (int)tst_rand_range(0, NFORM - 1);
    k->root = (int)tst_rand_range(0, g_size - 1);
    k->dt = coll == RS || coll == RED ? (tst_rand_range(0, 1) ? MPI_FLOAT : MPI_INT) : MPI_INT;
    k->esize = 4;
    k->op = coll == RS || coll == RED ? (tst_rand_range(0, 1) ? MPI_SUM : MPI_MAX) : MPI_OP_NULL;
    for (i = 0; i < g_size; i++) {
        k->counts[i] = shape == 0 ? mx : shape == 1 ? (i == 0 ? 8 * mx : mx) : (int)tst_rand_range(0, mx) * (tst_rand_range(0, 3) != 0);
        k->displs[i] = total + (coll == AGV ? (int)tst_rand_range(0, 2) : 0);
        total = k->displs[i] + k->counts[i];
    }
    k->count = k->counts[k->root];
    k->in_place = coll != BC && (in_place < 0 ? tst_rand_range(0, 3) == 0 : in_place);
    if (coll == RED && k->in_place && tst_rank != k->root) k->in_place = 0; /* the root alone */
#ifdef MPICH_VERSION
    if (coll == RED && k->count > 100) k->in_place = 0; /* MPICH 4.0.2's own in-place MPI_Reduce crashes */
#endif
    k->null_rbuf = (int)tst_rand_range(0, 1); /* drawn on every rank: the shared stream stays in step */
    k->null_rbuf = k->null_rbuf && coll == RED && tst_rank != k->root;
}

int main(int argc, char **argv)
{
    case_t k;
    int i, coll, ncases = 40;
    long failures = 0, checks = 0;

    tst_init("mpi_enqueue_sib", &argc, &argv);
    g_size = tst_size;
    if (g_size > MAXP) return tst_skip("more ranks than the test's arrays");
    if (tlmpi_config_set("TIER", "staging") != TLMPI_OK) TST_FAIL("tlmpi_config_set(TIER, staging)");
    tst_rng_seed(&g_data, (uint64_t)time(NULL) ^ ((uint64_t)tst_rank << 32));
    tst_rng_sync(); /* rank-uniform choices below; the per-rank parts (in place off the root) use rank */
    for (i = 0; i < ncases; i++) {
        coll = (int)tst_rand_range(0, NCOLL - 1);
        random_case(&k, coll, -1);
        run(&k, "random");
    }
    /* every collective through its _f entry point, in place (but MPI_Bcast) and not */
    for (coll = 0; coll < NCOLL; coll++) {
        for (i = 0; i < 1 + (coll != BC); i++) {
            random_case(&k, coll, i);
            k.form = F_FORT;
            run(&k, i ? "in place" : "not in place");
        }
    }
    /* c: bad arguments */
    for (coll = 0; coll < NCOLL; coll++) {
        random_case(&k, coll, -1);
        k.in_place = 0;
        k.null_rbuf = 0;
        k.dt = MPI_DATATYPE_NULL;
        k.count = 5; /* (MPICH 4.0.2 asserts in MPI_Bcast of count 0 with MPI_DATATYPE_NULL, host buffers alike) */
        for (i = 0; i < g_size; i++) k.counts[i] = 5, k.displs[i] = 5 * i;
        run(&k, "MPI_DATATYPE_NULL");
        if (coll == BC || coll == RED) {
            random_case(&k, coll, -1);
            k.in_place = k.null_rbuf = 0;
            k.root = g_size + 1;
            run(&k, "root out of range");
        }
        if (coll == RS || (coll == AGV && IS_MPICH)) {
            /* (Open MPI 4.1 checks allgatherv's own sendcount alone: the other ranks wait in the call,
             * host buffers alike) */
            random_case(&k, coll, -1);
            k.in_place = 0;
            k.counts[g_size - 1] = -2;
            run(&k, "negative count");
        }
        if (coll == RS || coll == RED) {
            random_case(&k, coll, -1);
            k.in_place = k.null_rbuf = 0;
            k.dt = MPI_FLOAT;
            k.op = MPI_BAND;
            run(&k, "MPI_BAND on float");
        }
    }
    /* a host receive buffer; all counts zero with NULL buffers */
    {
        static int host[64];
        int zeros[MAXP] = { 0 }, rc;
        int *d;

        TST_CUDA(cudaMalloc((void **)&d, sizeof(host)));
        rc = tlmpi_bcast_enqueue(host, 4, MPI_INT, 0, MPI_COMM_WORLD, NULL);
        TST_CHECK(rc == MPI_ERR_BUFFER, "bcast on a host buffer: class %d", rc);
        rc = tlmpi_alltoall_enqueue(d, 1, MPI_INT, host, 1, MPI_INT, MPI_COMM_WORLD, NULL);
        TST_CHECK(rc == MPI_ERR_BUFFER, "alltoall into a host buffer: class %d", rc);
        rc = tlmpi_reduce_scatter_enqueue(NULL, NULL, zeros, MPI_INT, MPI_SUM, MPI_COMM_WORLD, NULL);
        TST_CHECK(rc == MPI_SUCCESS, "reduce_scatter of zero counts, NULL buffers: class %d", rc);
        rc = tlmpi_allgatherv_enqueue(NULL, 0, MPI_INT, NULL, zeros, zeros, MPI_INT, MPI_COMM_WORLD, NULL);
        TST_CHECK(rc == MPI_SUCCESS, "allgatherv of zero counts, NULL buffers: class %d", rc);
        {
            int64_t z[MAXP] = { 0 };
            MPI_Fint tf = PMPI_Type_c2f(MPI_INT), cf = PMPI_Comm_c2f(MPI_COMM_WORLD), nf = PMPI_Comm_c2f(MPI_COMM_NULL);

            rc = tlmpi_bcast_enqueue_f(host, 4, tf, 0, cf, NULL);
            TST_CHECK(rc == MPI_ERR_BUFFER, "bcast_f on a host buffer: class %d", rc);
            rc = tlmpi_alltoall_enqueue_f(d, host, 1, tf, cf, NULL);
            TST_CHECK(rc == MPI_ERR_BUFFER, "alltoall_f into a host buffer: class %d", rc);
            rc = tlmpi_reduce_scatter_enqueue_f(NULL, NULL, z, tf, PMPI_Op_c2f(MPI_SUM), cf, NULL);
            TST_CHECK(rc == MPI_SUCCESS, "reduce_scatter_f of zero counts, NULL buffers: class %d", rc);
            rc = tlmpi_allgatherv_enqueue_f(NULL, 0, NULL, z, z, tf, cf, NULL);
            TST_CHECK(rc == MPI_SUCCESS, "allgatherv_f of zero counts, NULL buffers: class %d", rc);
            rc = tlmpi_allgatherv_enqueue_f(d, 1, d, z, z, tf, nf, NULL);
            TST_CHECK(rc == MPI_ERR_COMM, "allgatherv_f on MPI_COMM_NULL: class %d", rc);
            rc = tlmpi_reduce_scatter_enqueue_f(d, d, z, tf, PMPI_Op_c2f(MPI_SUM), nf, NULL);
            TST_CHECK(rc == MPI_ERR_COMM, "reduce_scatter_f on MPI_COMM_NULL: class %d", rc);
        }
        TST_CUDA(cudaFree(d));
    }
    tst_totals(&failures, &checks);
    if (tst_rank == 0) printf("mpi_enqueue_sib: %d random cases and the bad ones, both entry forms\n", ncases);
    return tst_finish();
}
