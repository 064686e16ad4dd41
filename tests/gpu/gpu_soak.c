/*
 * gpu_soak: a long random mix of everything tlmpi serves on device buffers, every result checked
 * (issue 46, item 4). Run by tests/gpu/soak.sh on the GPU host (4 and 8 ranks on one GPU under MPS)
 * and, briefly, against the CPU fakes of tests/fakes by tests/mpi/soak.sh (make check). Exit 77
 * without a GPU.
 *
 *   gpu_soak --probe   (exit 0 with a CUDA device, 77 without; no MPI)
 *   gpu_soak [-t SECONDS] [-m MAXBYTES] [-s SEED] [--comms N] [--inflight N] [--cp SECONDS]
 *            [--no-graph] [--no-persist] [--no-enqueue] [--mem-check]
 *            [--die-rank R --die-after SECONDS [--die-at issue|complete|any]] [--mutant N]
 *
 * All ranks draw the same decisions from one generator seeded by the shared seed (printed at the
 * start and in the summary; -s SEED or TLMPI_TEST_SEED=SEED replays a run: the same steps, calls,
 * sizes and data). The run is a sequence of steps until -t seconds (default 60; agreed over the ranks
 * after every step, so every rank stops after the same step):
 *   churn    free a random live communicator and/or make a new one: MPI_Comm_dup of the world or of a
 *            live communicator, MPI_Comm_split of the world (2 or 3 colours, keys in or against rank
 *            order) or of a live communicator, MPI_Comm_create_group of the world without one rank
 *            (that rank holds MPI_COMM_NULL and sits the communicator's calls out); at most --comms
 *            (default 6) besides MPI_COMM_WORLD; each new one prepared for stream-ordered calls
 *            (tlmpi_enqueue_prepare);
 *   batch    1..4 calls, on at most --inflight (default 2, TLMPI_CONCURRENT_COLLS' default)
 *            communicators, each blocking (MPI_Allreduce ...), non-blocking (MPI_Iallreduce ...),
 *            persistent (MPI_Allreduce_init + MPI_Start, where the MPI has MPI-4 persistent
 *            collectives: MPI_VERSION >= 4 at compile time) or stream-ordered
 *            (tlmpi_allreduce_enqueue ... on one of two streams); the large-count _c forms 1 in 8;
 *            all issued before any is completed; the requests then completed by one of MPI_Waitall,
 *            MPI_Waitany, MPI_Testsome, MPI_Wait in reverse order, MPI_Testall; the streams
 *            synchronised;
 *   persist  (MPI-4) 1..3 persistent requests on at most --inflight communicators, started 1..4
 *            rounds (MPI_Startall or MPI_Start each), new data every round, a non-blocking call beside
 *            them half the time, each round completed by a random method as above; then freed;
 *   graph    1..3 stream-ordered calls on at most --inflight communicators captured into a CUDA graph
 *            (cudaStreamCaptureModeGlobal), replayed 1..4 times with new data, a blocking call on one
 *            of the graph's communicators right after the launch 1 in 3 replays (tlmpi orders it after
 *            the replay's calls); then destroyed (--no-graph: never; the fakes' graphs run nothing).
 * Every call: the collective, the element type (the 12 arithmetic types, TLMPI_FLOAT16 and
 * TLMPI_BFLOAT16 for the half types, MPIX_C_FLOAT16 where the MPI has it), the op (sum, prod, min,
 * max), in place 1 in 4, and the size drawn at random: 0 bytes 1 in 32, else log-uniform in
 * [1, MAXBYTES] (-m, default 64m; the largest buffer of the call on one rank: the allgather's output,
 * the reduce-scatter's input); send and receive regions at element-aligned, not 16-byte-aligned
 * offsets in per-slot device buffers; fresh inputs (a hash of the call's seed, rank and index:
 * gpu_values.h), the output region and 64 bytes either side poisoned with a byte that changes per
 * call. After completion the output is checked against the host reference (exact for integers, f64
 * with gpu_values.h's tolerance for floating types), the poison around it and the send region
 * unchanged. Every wait of the test is bounded (Test loops and stream polls: TLMPI_TIMEOUT + 60 s,
 * then a line naming the step and MPI_Abort).
 *
 * Every --cp seconds (default 30) and at the end, a checkpoint: every churned communicator freed,
 * then one line with the calls so far, the device's used memory (cudaMemGetInfo: every process on
 * the GPU), tlmpi's node pools (tlmpi_get_pool_stats, the largest rank) and the resident set (the
 * largest rank; beside it the largest anonymous part, RssAnon, and the largest C heap in use, mallinfo2:
 * growth of the heap is allocations someone keeps, growth outside it the driver's or the MPI's
 * mappings). The memory verdict compares the last checkpoint with the first one at or after 60 s (the
 * first one in a shorter run): flat when the device's used memory grew by at most
 * max(128 MiB, 5%) and the largest RSS by at most max(64 MiB, 10%); --mem-check makes growth a
 * failure.
 *
 * Dying rank (--die-rank R --die-after S): once S seconds have passed (agreed), the next step is a
 * batch of 2..4 non-blocking, persistent or stream-ordered calls on MPI_COMM_WORLD, and world rank R
 * prints "gpu_soak: DYING: ..." (with the CLOCK_REALTIME second it dies at) and sends itself SIGKILL
 * at a random point of it (--die-at issue: after issuing a random number of the calls, the others in
 * flight; complete: inside the completion, after a random number of polls; any: either, default).
 * The other ranks go on as before: what ends them (the MPI's abort or tlmpi's TLMPI_TIMEOUT
 * diagnostic) is for tests/gpu/soak.sh to judge.
 *
 * GPU_SOAK_TRACE=1 (environment): every call is named on stderr as it is issued.
 *
 * --mutant N: the reference of the first call with serial number >= N that checks an element is
 * off by one there (the test must then fail).
 *
 * Prints at the end (rank 0): the calls and bytes per form and collective, completion methods,
 * communicators made and freed, tlmpi's calls per path, the memory verdict and
 * "RESULT gpu_soak np=N seed=S ops=O checks=C failures=F time=Ts PASS|FAIL".
 */
#include "config.h"
#include "tlmpi.h"

#include <cuda_runtime_api.h>
#include <math.h>
#include <mpi.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
#include <malloc.h>
#define SOAK_HAVE_MALLINFO2 1
#endif

#define TST_MAX_PRINT 30 /* failure lines printed per rank */
#include "harness.h"

#include "gpu_values.h"

#define GPU_TEST_NAME "gpu_soak"
#include "gpu_modes.h"

#if MPI_VERSION >= 4
#define SOAK_PERSIST 1
#else
#define SOAK_PERSIST 0
#endif

enum { F_BLOCK, F_NB, F_PERSIST, F_ENQ, F_GRAPH, F_N };
static const char *const form_names[F_N] = { "blocking", "non-blocking", "persistent", "stream-ordered",
                                             "graph-replayed" };
enum { M_WAITALL, M_WAITANY, M_TESTSOME, M_WAIT_REV, M_TESTALL, M_N };
static const char *const method_names[M_N] = { "MPI_Waitall", "MPI_Waitany", "MPI_Testsome", "MPI_Wait (reverse)",
                                               "MPI_Testall" };
enum { S_CHURN, S_BATCH, S_PERSIST, S_GRAPH, S_N };

#define GUARD 64
#define NSLOT 5   /* calls with buffers at once: 4 in a batch or graph, + 1 beside */
#define MAXC 16   /* communicators besides the world */
#define MAXOPS 5
#define MAXCP 64  /* checkpoints kept for the memory verdict */

typedef struct {
    MPI_Comm comm; /* MPI_COMM_NULL on ranks outside it */
    int id;
    char what[48];
} live_t;

typedef struct {
    int form, coll, op, inplace, big, li, slot, stream;
    const dtinfo_t *t;
    size_t bytes;           /* drawn size: the largest buffer of the call on one rank */
    size_t ro, so;          /* offsets in elements beyond GUARD */
    long serial;
    /* this rank's view */
    MPI_Comm comm;
    int rank, p;
    size_t count, in_n, out_n;
    unsigned long long cs;  /* data seed */
    unsigned char pz;
    size_t roff, soff, rspan, sspan;
    void *sbuf, *rbuf;
    MPI_Request req;
    char msg[192];
} op_t;

static int g_rank, g_size, g_ndev;
static tst_rng_t g_rng; /* shared decisions */
static unsigned long long g_seed;
static size_t g_cap = (size_t)64 << 20, g_slot_bytes;
static double g_dur = 60, g_cp_every = 30, g_limit, g_t0;
static int g_trace, g_maxc = 6, g_inflight = 2, g_nograph, g_nopersist, g_noenq, g_memcheck;
static int g_die_rank = -1, g_die_at; /* 0 any, 1 issue, 2 complete */
static double g_die_after = -1;
static long g_mutant = -1, g_serial, g_step, g_checks;
static char *d_s[NSLOT], *d_r[NSLOT], *h_s[NSLOT], *h_r[NSLOT], *h_c[NSLOT];
static cudaStream_t g_st[2];
static live_t g_live[MAXC + 1];
static int g_nlive, g_next_id;
static long g_ops[F_N][C_N], g_methods[M_N], g_made[5], g_freed, g_steps[S_N], g_replays, g_captures;
static double g_bytes[F_N][C_N];
static const char *const made_names[5] = { "dup of the world", "dup of a live one", "split of the world",
                                           "create_group", "split of a live one" };

/* ---------------------------------------------------------------- small helpers */

static uint64_t rnd64(void) { return tst_rand_r(&g_rng); }
static unsigned rnd(unsigned n) { return (unsigned)(rnd64() >> 33) % n; }
static double rnd_unit(void) { return (double)(rnd64() >> 11) / 9007199254740992.0; }

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void die_now(const char *where)
{
    fprintf(stderr, "gpu_soak: DYING: world rank %d (pid %d) sends itself SIGKILL at %.3f (CLOCK_REALTIME), "
                    "%.1f s into the run, step %ld: %s\n", g_rank, (int)getpid(), wall_now(), now() - g_t0, g_step,
            where);
    fflush(stderr);
    fflush(stdout);
    kill(getpid(), SIGKILL);
    for (;;) pause();
}

static void bound(double t0, const char *what)
{
    if (now() - t0 > g_limit) {
        fprintf(stderr, "[gpu_soak r%d] FAIL: step %ld: %s not complete after %.0f s (the test's own bound): "
                        "aborting\n", g_rank, g_step, what, g_limit);
        fflush(stderr);
        MPI_Abort(MPI_COMM_WORLD, 5);
    }
}

static void sync_stream(cudaStream_t s, const char *what)
{
    double t0 = now();
    cudaError_t e;
    while ((e = cudaStreamQuery(s)) == cudaErrorNotReady) bound(t0, what);
    if (e != cudaSuccess) {
        fprintf(stderr, "[gpu_soak r%d] FAIL: step %ld: %s: the stream reports %s: aborting\n", g_rank, g_step, what,
                cudaGetErrorString(e));
        fflush(stderr);
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
}

static size_t parse_size(const char *s)
{
    char *e;
    double v = strtod(s, &e);
    if (*e == 'k' || *e == 'K') v *= 1024;
    else if (*e == 'm' || *e == 'M') v *= 1048576;
    else if (*e == 'g' || *e == 'G') v *= 1073741824.0;
    return (size_t)v;
}

static double rss_mib(void)
{
    long pages = 0, res = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &res) != 2) res = 0;
        fclose(f);
    }
    return (double)res * (double)sysconf(_SC_PAGESIZE) / 1048576.0;
}

/* The anonymous part of the resident set (/proc/self/status RssAnon: the heap, thread stacks and anonymous
 * mappings, not the mapped files and shared memory of the driver and MPI); -1 if unknown. */
static double rss_anon_mib(void)
{
    char line[256];
    double v = -1;
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return -1;
    while (fgets(line, sizeof line, f)) {
        long kb;
        if (sscanf(line, "RssAnon: %ld kB", &kb) == 1) {
            v = (double)kb / 1024.0;
            break;
        }
    }
    fclose(f);
    return v;
}

/* Bytes the C heap holds in use (malloc's arenas and its own mmaps: mallinfo2), MiB; -1 if unknown. */
static double heap_mib(void)
{
#ifdef SOAK_HAVE_MALLINFO2
    struct mallinfo2 m = mallinfo2();
    return (double)(m.uordblks + m.hblkhd) / 1048576.0;
#else
    return -1;
#endif
}

static const char *err_str(int rc)
{
    static char buf[MPI_MAX_ERROR_STRING];
    int len = 0;
    buf[0] = 0;
    MPI_Error_string(rc, buf, &len);
    return buf;
}

/* ---------------------------------------------------------------- calls */

/* draw a call (every rank the same draws), then this rank's view of it */
static void draw(op_t *x, int form, int li, int slot)
{
    memset(x, 0, sizeof *x);
    x->form = form;
    x->li = li;
    x->slot = slot;
    x->coll = (int)rnd(C_N);
    x->t = &g_types[rnd((unsigned)g_ntypes)];
    x->op = (int)rnd(OP_N);
    x->inplace = rnd(4) == 0;
    x->big = rnd(8) == 0; /* the _c entry point (the MPI's only under MPI-4) */
    if (MPI_VERSION < 4 && form < F_ENQ) x->big = 0;
    x->stream = (int)rnd(2);
    if (rnd(32) == 0) {
        x->bytes = 0;
    } else {
        x->bytes = (size_t)exp(rnd_unit() * log((double)g_cap));
        if (x->bytes < 1) x->bytes = 1;
        if (x->bytes > g_cap) x->bytes = g_cap;
    }
    x->ro = rnd(16);
    x->so = rnd(16);
    x->serial = g_serial++;
    x->comm = g_live[li].comm;
    x->req = MPI_REQUEST_NULL;
    if (x->comm != MPI_COMM_NULL) {
        size_t esz = (size_t)x->t->size;
        MPI_Comm_rank(x->comm, &x->rank);
        MPI_Comm_size(x->comm, &x->p);
        x->count = x->coll == C_AR ? x->bytes / esz : x->bytes / (esz * (size_t)x->p);
#ifdef MPICH_VERSION
        /* A persistent call of count 0 is passed through to the MPI, and MPICH 4.0.2's own persistent
         * collective requests misbehave on host buffers without tlmpi too: MPI_Waitany returns a
         * completed one again (it stays active), MPI_Testall returns MPI_ERR_IN_STATUS with every status
         * MPI_SUCCESS when it completes one. So persistent calls carry at least one element there. */
        if (form == F_PERSIST && x->count == 0) x->count = 1;
#endif
        sizes_of(x->coll, x->count, x->p, &x->in_n, &x->out_n);
    }
    g_ops[form][x->coll]++;
    g_bytes[form][x->coll] += (double)x->bytes;
}

/* new data for the call (every rank the same draws): seed and poison */
static void redraw_data(op_t *x)
{
    x->cs = rnd64();
    x->pz = (unsigned char)(0xA5 ^ (rnd64() >> 56));
    if (x->pz == 0) x->pz = 0x5A;
}

/* write the call's inputs and poison into its slot (host images, then the device); no device sync */
static void fill(op_t *x)
{
    size_t esz = (size_t)x->t->size, in_b = x->in_n * esz, out_b = x->out_n * esz, i;
    int k = x->slot;
    char *in;

    if (x->comm == MPI_COMM_NULL) return;
    x->roff = GUARD + x->ro * esz;
    x->soff = GUARD + x->so * esz;
    x->rspan = x->roff + (out_b > in_b ? out_b : in_b) + GUARD;
    x->sspan = x->soff + in_b + GUARD;
    if (x->rspan > g_slot_bytes || x->sspan > g_slot_bytes) {
        fprintf(stderr, "gpu_soak: call too large (%zu / %zu bytes of %zu)\n", x->rspan, x->sspan, g_slot_bytes);
        MPI_Abort(MPI_COMM_WORLD, 4);
    }
    snprintf(x->msg, sizeof x->msg, "call %ld (step %ld, %s %s%s %s %s, in place %d, count %zu, %zu bytes, "
             "communicator #%d %s, rank %d of %d)", x->serial, g_step, form_names[x->form], coll_names[x->coll],
             x->big ? " _c" : "", x->t->name, x->coll == C_AG ? "-" : op_names[x->op], x->inplace, x->count,
             x->bytes, g_live[x->li].id, g_live[x->li].what, x->rank, x->p);
    memset(h_r[k], x->pz, x->rspan);
    memset(h_s[k], x->pz ^ 0x5a, x->sspan);
    in = x->inplace ? h_r[k] + x->roff + (x->coll == C_AG ? (size_t)x->rank * x->count * esz : 0) : h_s[k] + x->soff;
    for (i = 0; i < x->in_n; i++) put(x->t, in, i, val(x->t, x->cs, x->rank, i));
    TST_CUDA(cudaMemcpy(d_r[k], h_r[k], x->rspan, cudaMemcpyHostToDevice));
    x->rbuf = d_r[k] + x->roff;
    if (x->inplace) {
        x->sbuf = MPI_IN_PLACE;
    } else {
        TST_CUDA(cudaMemcpy(d_s[k], h_s[k], x->sspan, cudaMemcpyHostToDevice));
        x->sbuf = d_s[k] + x->soff;
    }
}

static int issue_blocking(op_t *x)
{
    int n = (int)x->count;
    MPI_Datatype dt = x->t->dt;
    MPI_Op op = ops_of(x->op);
#if MPI_VERSION >= 4
    if (x->big) {
        MPI_Count c = (MPI_Count)x->count;
        switch (x->coll) {
        case C_AR: return MPI_Allreduce_c(x->sbuf, x->rbuf, c, dt, op, x->comm);
        case C_RSB: return MPI_Reduce_scatter_block_c(x->sbuf, x->rbuf, c, dt, op, x->comm);
        default: return MPI_Allgather_c(x->sbuf, c, dt, x->rbuf, c, dt, x->comm);
        }
    }
#endif
    switch (x->coll) {
    case C_AR: return MPI_Allreduce(x->sbuf, x->rbuf, n, dt, op, x->comm);
    case C_RSB: return MPI_Reduce_scatter_block(x->sbuf, x->rbuf, n, dt, op, x->comm);
    default: return MPI_Allgather(x->sbuf, n, dt, x->rbuf, n, dt, x->comm);
    }
}

static int issue_nb(op_t *x)
{
    int n = (int)x->count;
    MPI_Datatype dt = x->t->dt;
    MPI_Op op = ops_of(x->op);
#if MPI_VERSION >= 4
    if (x->big) {
        MPI_Count c = (MPI_Count)x->count;
        switch (x->coll) {
        case C_AR: return MPI_Iallreduce_c(x->sbuf, x->rbuf, c, dt, op, x->comm, &x->req);
        case C_RSB: return MPI_Ireduce_scatter_block_c(x->sbuf, x->rbuf, c, dt, op, x->comm, &x->req);
        default: return MPI_Iallgather_c(x->sbuf, c, dt, x->rbuf, c, dt, x->comm, &x->req);
        }
    }
#endif
    switch (x->coll) {
    case C_AR: return MPI_Iallreduce(x->sbuf, x->rbuf, n, dt, op, x->comm, &x->req);
    case C_RSB: return MPI_Ireduce_scatter_block(x->sbuf, x->rbuf, n, dt, op, x->comm, &x->req);
    default: return MPI_Iallgather(x->sbuf, n, dt, x->rbuf, n, dt, x->comm, &x->req);
    }
}

#if SOAK_PERSIST
static int persist_init(op_t *x)
{
    int n = (int)x->count;
    MPI_Datatype dt = x->t->dt;
    MPI_Op op = ops_of(x->op);
    if (x->big) {
        MPI_Count c = (MPI_Count)x->count;
        switch (x->coll) {
        case C_AR: return MPI_Allreduce_init_c(x->sbuf, x->rbuf, c, dt, op, x->comm, MPI_INFO_NULL, &x->req);
        case C_RSB: return MPI_Reduce_scatter_block_init_c(x->sbuf, x->rbuf, c, dt, op, x->comm, MPI_INFO_NULL, &x->req);
        default: return MPI_Allgather_init_c(x->sbuf, c, dt, x->rbuf, c, dt, x->comm, MPI_INFO_NULL, &x->req);
        }
    }
    switch (x->coll) {
    case C_AR: return MPI_Allreduce_init(x->sbuf, x->rbuf, n, dt, op, x->comm, MPI_INFO_NULL, &x->req);
    case C_RSB: return MPI_Reduce_scatter_block_init(x->sbuf, x->rbuf, n, dt, op, x->comm, MPI_INFO_NULL, &x->req);
    default: return MPI_Allgather_init(x->sbuf, n, dt, x->rbuf, n, dt, x->comm, MPI_INFO_NULL, &x->req);
    }
}
#endif

static int issue_enqueue(op_t *x, cudaStream_t s)
{
    int n = (int)x->count;
    MPI_Datatype dt = x->t->dt;
    MPI_Op op = ops_of(x->op);
    if (x->big) {
        MPI_Count c = (MPI_Count)x->count;
        switch (x->coll) {
        case C_AR: return tlmpi_allreduce_enqueue_c(x->sbuf, x->rbuf, c, dt, op, x->comm, s);
        case C_RSB: return tlmpi_reduce_scatter_block_enqueue_c(x->sbuf, x->rbuf, c, dt, op, x->comm, s);
        default: return tlmpi_allgather_enqueue_c(x->sbuf, c, dt, x->rbuf, c, dt, x->comm, s);
        }
    }
    switch (x->coll) {
    case C_AR: return tlmpi_allreduce_enqueue(x->sbuf, x->rbuf, n, dt, op, x->comm, s);
    case C_RSB: return tlmpi_reduce_scatter_block_enqueue(x->sbuf, x->rbuf, n, dt, op, x->comm, s);
    default: return tlmpi_allgather_enqueue(x->sbuf, n, dt, x->rbuf, n, dt, x->comm, s);
    }
}

/* issue a call of form blocking, non-blocking or stream-ordered (persistent: init + start); 1 if issued */
static int issue(op_t *x)
{
    int rc;
    if (x->comm == MPI_COMM_NULL) return 0;
    if (g_trace) fprintf(stderr, "gpu_soak: r%d: issue %s\n", g_rank, x->msg);
    switch (x->form) {
    case F_BLOCK: rc = issue_blocking(x); break;
    case F_NB: rc = issue_nb(x); break;
#if SOAK_PERSIST
    case F_PERSIST:
        rc = persist_init(x);
        if (rc == MPI_SUCCESS) rc = MPI_Start(&x->req);
        break;
#endif
    default: rc = issue_enqueue(x, g_st[x->stream]); break;
    }
    if (rc != MPI_SUCCESS) {
        TST_FAIL("%s: returned %d (%s)%s%s", x->msg, rc, err_str(rc), x->form >= F_ENQ ? ": " : "",
                 x->form >= F_ENQ ? tlmpi_enqueue_error() : "");
        if (x->form != F_PERSIST) x->req = MPI_REQUEST_NULL;
        return 0;
    }
    return 1;
}

/* ---------------------------------------------------------------- checks */

static void check(op_t *x)
{
    int k = x->slot, mut;
    size_t esz = (size_t)x->t->size, in_b = x->in_n * esz, out_b = x->out_n * esz, tail, i, bad = 0;
    const char *out;

    if (x->comm == MPI_COMM_NULL) return;
    TST_CUDA(cudaMemcpy(h_c[k], d_r[k], x->rspan, cudaMemcpyDeviceToHost));
    out = h_c[k] + x->roff;
    mut = g_mutant >= 0 && x->serial >= g_mutant && x->out_n > 0;
    if (mut) {
        fprintf(stderr, "gpu_soak: rank %d: mutant: the reference of element 0 of %s is off by one\n", g_rank, x->msg);
        g_mutant = -1;
    }
    for (i = 0; i < x->out_n; i++) {
        double e, tol, got = get(x->t, out, i);
        if (x->coll == C_AG) {
            e = val(x->t, x->cs, (int)(i / x->count), i % x->count);
            tol = 0;
        } else {
            e = ref(x->t, x->cs, x->op, x->p, x->coll == C_RSB ? (size_t)x->rank * x->count + i : i, &tol);
        }
        if (mut && i == 0) e += 1 + 2 * tol;
        if (!(fabs(got - e) <= tol)) {
            if (!bad) TST_FAIL("%s: element %zu = %.9g, expected %.9g (tol %.3g)", x->msg, i, got, e, tol);
            bad++;
        }
    }
    g_checks += (long)x->out_n;
    if (bad > 1) TST_FAIL("%s: %zu of %zu elements wrong", x->msg, bad, x->out_n);
    for (i = 0; i < x->roff; i++) {
        if ((unsigned char)h_c[k][i] != x->pz) {
            TST_FAIL("%s: byte %zu before the output overwritten (0x%02x, poison 0x%02x)", x->msg, x->roff - i,
                     (unsigned char)h_c[k][i], x->pz);
            break;
        }
    }
    /* in place, reduce_scatter_block leaves the input beyond the own block undefined */
    tail = x->roff + (x->inplace && in_b > out_b ? in_b : out_b);
    for (i = tail; i < x->rspan; i++) {
        if ((unsigned char)h_c[k][i] != x->pz) {
            TST_FAIL("%s: byte %zu after the output overwritten (0x%02x, poison 0x%02x)", x->msg, i - tail,
                     (unsigned char)h_c[k][i], x->pz);
            break;
        }
    }
    if (!x->inplace) {
        TST_CUDA(cudaMemcpy(h_c[k], d_s[k], x->sspan, cudaMemcpyDeviceToHost));
        if (memcmp(h_c[k], h_s[k], x->sspan)) TST_FAIL("%s: the send buffer (or the bytes around it) changed", x->msg);
    }
    g_checks += 3;
}

/* ---------------------------------------------------------------- completion */

/* the calls whose status says MPI_ERROR after a completion call returned MPI_ERR_IN_STATUS (idx: the
 * completed indices, NULL for all n) */
static void status_errors(const op_t *ops, int n, const MPI_Status *st, const int *idx, int cnt, int rc)
{
    int i, k;
    if (rc != MPI_ERR_IN_STATUS) return;
    for (i = 0; i < cnt; i++) {
        k = idx ? idx[i] : i;
        if (k < 0 || k >= n) continue;
        if (getenv("GPU_SOAK_TRACE")) fprintf(stderr, "gpu_soak: r%d: status %d of %s: MPI_ERROR %d\n", g_rank, k, ops[k].msg, st[i].MPI_ERROR);
        if (st[i].MPI_ERROR != MPI_SUCCESS) {
            TST_FAIL("%s: its status says %d (%s), request %s", ops[k].msg, st[i].MPI_ERROR, err_str(st[i].MPI_ERROR),
                     ops[k].req == MPI_REQUEST_NULL ? "null before" : "set before");
        }
    }
}

/* complete the requests of ops[0..n) (MPI_REQUEST_NULL where none) by method; die_polls >= 0: this rank
 * dies after that many polls (or at once for the blocking methods) */
static void complete(op_t *ops, int n, int method, long die_polls)
{
    MPI_Request r[MAXOPS + 1];
    MPI_Status stv[MAXOPS + 1];
    int i, j, idx[MAXOPS + 1], cnt, flag, rc, left, active = 0;
    double t0 = now();
    long polls = 0;
    char what[96];

    for (i = 0; i < n; i++) {
        r[i] = ops[i].req;
        active += r[i] != MPI_REQUEST_NULL;
    }
    snprintf(what, sizeof what, "%d requests completed by %s", active, method_names[method]);
    g_methods[method]++;
    if (die_polls >= 0 && (method == M_WAITALL || method == M_WAITANY || method == M_WAIT_REV)) die_now(what);
    switch (method) {
    case M_WAITALL:
        rc = MPI_Waitall(n, r, stv);
        if (rc != MPI_SUCCESS) {
            TST_FAIL("step %ld: MPI_Waitall returned %d (%s)", g_step, rc, err_str(rc));
            status_errors(ops, n, stv, NULL, n, rc);
        }
        break;
    case M_WAITANY:
        for (left = active; left > 0; left--) {
            rc = MPI_Waitany(n, r, &j, MPI_STATUS_IGNORE);
            if (rc != MPI_SUCCESS || j == MPI_UNDEFINED) {
                TST_FAIL("step %ld: MPI_Waitany returned %d (%s), index %d%s%s", g_step, rc, err_str(rc), j,
                         j >= 0 && j < n ? ": " : "", j >= 0 && j < n ? ops[j].msg : "");
                break;
            }
        }
        break;
    case M_TESTSOME:
        for (left = active; left > 0;) {
            rc = MPI_Testsome(n, r, &cnt, idx, stv);
            if (rc != MPI_SUCCESS || cnt == MPI_UNDEFINED) {
                TST_FAIL("step %ld: MPI_Testsome returned %d (%s), outcount %d", g_step, rc, err_str(rc), cnt);
                if (cnt != MPI_UNDEFINED) status_errors(ops, n, stv, idx, cnt, rc);
                break;
            }
            left -= cnt;
            if (die_polls >= 0 && polls++ >= die_polls) die_now(what);
            bound(t0, what);
        }
        break;
    case M_WAIT_REV:
        for (i = n - 1; i >= 0; i--) {
            rc = MPI_Wait(&r[i], MPI_STATUS_IGNORE);
            if (rc != MPI_SUCCESS) TST_FAIL("step %ld: MPI_Wait returned %d (%s): %s", g_step, rc, err_str(rc), ops[i].msg);
        }
        break;
    default:
        for (flag = 0; !flag;) {
            rc = MPI_Testall(n, r, &flag, stv);
            if (rc != MPI_SUCCESS) {
                TST_FAIL("step %ld: MPI_Testall returned %d (%s)", g_step, rc, err_str(rc));
                status_errors(ops, n, stv, NULL, n, rc);
                break;
            }
            if (die_polls >= 0 && polls++ >= die_polls) die_now(what);
            bound(t0, what);
        }
        break;
    }
    for (i = 0; i < n; i++) {
        /* a persistent request stays (inactive); everything else must be MPI_REQUEST_NULL now */
        if (ops[i].form == F_PERSIST) continue;
        if (r[i] != MPI_REQUEST_NULL) TST_FAIL("step %ld: %s: request not MPI_REQUEST_NULL after %s", g_step, ops[i].msg,
                                               method_names[method]);
        ops[i].req = r[i];
    }
}

static void sync_streams(const char *what)
{
    sync_stream(g_st[0], what);
    sync_stream(g_st[1], what);
}

/* ---------------------------------------------------------------- steps */

/* pick up to --inflight live communicators (distinct) into li[]; returns how many */
static int pick_comms(int *li)
{
    int n = 1 + (int)rnd((unsigned)(g_inflight < g_nlive ? g_inflight : g_nlive)), i, j, c, dup;
    for (i = 0; i < n;) {
        c = (int)rnd((unsigned)g_nlive);
        for (dup = 0, j = 0; j < i; j++) dup |= li[j] == c;
        if (!dup) li[i++] = c;
    }
    return n;
}

static int random_form(int allow_block)
{
    for (;;) {
        int f = (int)rnd(4);
        if (f == F_BLOCK && !allow_block) continue;
        if (f == F_PERSIST && (!SOAK_PERSIST || g_nopersist)) continue;
        if (f == F_ENQ && g_noenq) continue;
        return f;
    }
}

static void step_batch(int dying)
{
    op_t ops[MAXOPS];
    int li[MAXC + 1], nc, n, i, method, die_point = -1, any_enq = 0;
    long die_polls = -1;

    g_steps[S_BATCH]++;
    nc = pick_comms(li);
    n = 1 + (int)rnd(4);
    if (dying) {
        nc = 1;
        li[0] = 0;
        n = 2 + (int)rnd(3);
    }
    for (i = 0; i < n; i++) {
        draw(&ops[i], random_form(!dying), li[rnd((unsigned)nc)], i);
        redraw_data(&ops[i]);
        fill(&ops[i]);
        any_enq |= ops[i].form == F_ENQ;
    }
    method = (int)rnd(M_N);
    if (dying && g_rank == g_die_rank) {
        /* this rank's own choice (its generator, not the shared one) */
        int mode = g_die_at ? g_die_at : 1 + (int)(tst_rand() % 2);
        if (mode == 1) die_point = (int)(tst_rand() % (uint64_t)n);
        else die_polls = (long)(tst_rand() % 64);
    }
    TST_CUDA(cudaDeviceSynchronize()); /* inputs on the device before any call */
    for (i = 0; i < n; i++) {
        issue(&ops[i]);
        if (i == die_point) {
            char w[256];
            snprintf(w, sizeof w, "after issuing %d of %d calls, the last %s", i + 1, n, ops[i].msg);
            die_now(w);
        }
    }
    complete(ops, n, method, die_polls);
    if (die_polls >= 0 && !any_enq) die_now("after the completion");
    sync_streams("the batch's stream-ordered calls");
    if (die_polls >= 0) die_now("after the streams' synchronisation");
    for (i = 0; i < n; i++) {
        check(&ops[i]);
        if (ops[i].form == F_PERSIST && ops[i].req != MPI_REQUEST_NULL) MPI_Request_free(&ops[i].req);
    }
}

#if SOAK_PERSIST
static void step_persist(void)
{
    op_t ops[MAXOPS];
    int li[MAXC + 1], nc, n, rounds, r, i, rc, nb, startall;
    MPI_Request sr[MAXOPS];

    g_steps[S_PERSIST]++;
    nc = pick_comms(li);
    n = 1 + (int)rnd(3);
    rounds = 1 + (int)rnd(4);
    for (i = 0; i < n; i++) {
        draw(&ops[i], F_PERSIST, li[rnd((unsigned)nc)], i);
        g_ops[F_PERSIST][ops[i].coll] += rounds - 1; /* counted per start */
        g_bytes[F_PERSIST][ops[i].coll] += (double)(rounds - 1) * (double)ops[i].bytes;
    }
    for (r = 0; r < rounds; r++) {
        nb = rnd(2);
        startall = rnd(2);
        if (nb) draw(&ops[n], F_NB, li[rnd((unsigned)nc)], n);
        for (i = 0; i < n + nb; i++) {
            redraw_data(&ops[i]);
            fill(&ops[i]); /* the same regions every round: offsets and sizes are the call's */
        }
        TST_CUDA(cudaDeviceSynchronize());
        if (r == 0) {
            for (i = 0; i < n; i++) {
                if (ops[i].comm == MPI_COMM_NULL) continue;
                rc = persist_init(&ops[i]);
                if (rc != MPI_SUCCESS) {
                    TST_FAIL("%s: init returned %d (%s)", ops[i].msg, rc, err_str(rc));
                    ops[i].req = MPI_REQUEST_NULL;
                }
            }
        }
        if (startall) {
            int m = 0;
            for (i = 0; i < n; i++) if (ops[i].req != MPI_REQUEST_NULL) sr[m++] = ops[i].req;
            if (m && (rc = MPI_Startall(m, sr)) != MPI_SUCCESS) TST_FAIL("step %ld: MPI_Startall returned %d (%s)", g_step, rc, err_str(rc));
        } else {
            for (i = 0; i < n; i++) {
                if (ops[i].req != MPI_REQUEST_NULL && (rc = MPI_Start(&ops[i].req)) != MPI_SUCCESS) {
                    TST_FAIL("%s: MPI_Start returned %d (%s)", ops[i].msg, rc, err_str(rc));
                }
            }
        }
        if (nb) issue(&ops[n]);
        complete(ops, n + nb, (int)rnd(M_N), -1);
        for (i = 0; i < n + nb; i++) check(&ops[i]);
    }
    for (i = 0; i < n; i++) {
        if (ops[i].req != MPI_REQUEST_NULL) MPI_Request_free(&ops[i].req);
    }
}
#endif

static void step_graph(void)
{
    op_t ops[MAXOPS];
    int li[MAXC + 1], nc, n, replays, r, i, rc, mine = 0, mix;
    cudaGraph_t g = NULL;
    cudaGraphExec_t ge = NULL;
    cudaStream_t s = g_st[0];
    enum cudaStreamCaptureStatus cst;

    g_steps[S_GRAPH]++;
    nc = pick_comms(li);
    n = 1 + (int)rnd(3);
    replays = 1 + (int)rnd(4);
    for (i = 0; i < n; i++) {
        draw(&ops[i], F_GRAPH, li[rnd((unsigned)nc)], i);
        g_ops[F_GRAPH][ops[i].coll] += replays - 1; /* counted per replay */
        g_bytes[F_GRAPH][ops[i].coll] += (double)(replays - 1) * (double)ops[i].bytes;
        redraw_data(&ops[i]);
        fill(&ops[i]); /* the regions (the data is written again before each replay) */
        mine += ops[i].comm != MPI_COMM_NULL;
    }
    g_captures++;
    if (mine) {
        TST_CUDA(cudaDeviceSynchronize());
        TST_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
        for (i = 0; i < n; i++) {
            if (ops[i].comm == MPI_COMM_NULL) continue;
            rc = issue_enqueue(&ops[i], s);
            if (rc != MPI_SUCCESS) TST_FAIL("%s: captured call returned %d (%s): %s", ops[i].msg, rc, err_str(rc),
                                            tlmpi_enqueue_error());
            if (cudaStreamIsCapturing(s, &cst) != cudaSuccess || cst != cudaStreamCaptureStatusActive) {
                TST_FAIL("%s: the capture is no longer active after the call", ops[i].msg);
            }
        }
        TST_CUDA(cudaStreamEndCapture(s, &g));
        TST_CUDA(cudaGraphInstantiate(&ge, g, 0));
    }
    for (r = 0; r < replays; r++) {
        mix = rnd(3) == 0;
        for (i = 0; i < n; i++) {
            if (r > 0) {
                redraw_data(&ops[i]);
                fill(&ops[i]);
            }
        }
        if (mix) {
            /* a blocking call on the first call's communicator right after the launch */
            draw(&ops[n], F_BLOCK, ops[0].li, n);
            redraw_data(&ops[n]);
            fill(&ops[n]);
        }
        TST_CUDA(cudaDeviceSynchronize());
        if (mine) TST_CUDA(cudaGraphLaunch(ge, s));
        g_replays++;
        if (mix) issue(&ops[n]);
        sync_stream(s, "a graph replay");
        for (i = 0; i < n + mix; i++) check(&ops[i]);
    }
    if (mine) {
        TST_CUDA(cudaGraphExecDestroy(ge));
        TST_CUDA(cudaGraphDestroy(g));
    }
}

/* ---------------------------------------------------------------- communicators */

static void comm_free_at(int i)
{
    if (g_live[i].comm != MPI_COMM_NULL) MPI_Comm_free(&g_live[i].comm);
    g_live[i] = g_live[--g_nlive];
    g_freed++;
}

static void comm_make(void)
{
    int kind = (int)rnd(5), j = (int)rnd((unsigned)g_nlive), colors = 2 + (int)rnd(2), rev = rnd(2),
        out = (int)rnd((unsigned)g_size), rc = MPI_SUCCESS, r;
    MPI_Comm c = MPI_COMM_NULL, base = g_live[j].comm;
    live_t *l = &g_live[g_nlive];

    switch (kind) {
    case 0:
        rc = MPI_Comm_dup(MPI_COMM_WORLD, &c);
        snprintf(l->what, sizeof l->what, "dup of the world");
        break;
    case 1:
        if (base != MPI_COMM_NULL) rc = MPI_Comm_dup(base, &c);
        snprintf(l->what, sizeof l->what, "dup of #%d", g_live[j].id);
        break;
    case 2:
        rc = MPI_Comm_split(MPI_COMM_WORLD, g_rank % colors, rev ? g_size - g_rank : g_rank, &c);
        snprintf(l->what, sizeof l->what, "split of the world in %d%s", colors, rev ? ", reversed" : "");
        break;
    case 3: {
        MPI_Group wg, gg;
        MPI_Comm_group(MPI_COMM_WORLD, &wg);
        MPI_Group_excl(wg, 1, &out, &gg);
        if (g_rank != out) rc = MPI_Comm_create_group(MPI_COMM_WORLD, gg, 46, &c);
        MPI_Group_free(&gg);
        MPI_Group_free(&wg);
        snprintf(l->what, sizeof l->what, "world without rank %d", out);
        break;
    }
    default:
        if (base != MPI_COMM_NULL) {
            MPI_Comm_rank(base, &r);
            rc = MPI_Comm_split(base, r % 2, rev ? -r : r, &c);
        }
        snprintf(l->what, sizeof l->what, "split of #%d in 2", g_live[j].id);
        break;
    }
    if (rc != MPI_SUCCESS) {
        TST_FAIL("step %ld: making a communicator (%s) returned %d (%s)", g_step, l->what, rc, err_str(rc));
        c = MPI_COMM_NULL;
    }
    if (c != MPI_COMM_NULL && !g_noenq && (rc = tlmpi_enqueue_prepare(c, 0)) != MPI_SUCCESS) {
        TST_FAIL("step %ld: tlmpi_enqueue_prepare on a new communicator (%s) returned %d (%s): %s", g_step, l->what, rc,
                 err_str(rc), tlmpi_enqueue_error());
    }
    l->comm = c;
    l->id = ++g_next_id;
    g_nlive++;
    g_made[kind]++;
}

static void step_churn(void)
{
    g_steps[S_CHURN]++;
    if (g_nlive > 1 && (g_nlive == g_maxc + 1 || rnd(2))) comm_free_at(1 + (int)rnd((unsigned)(g_nlive - 1)));
    if (g_nlive < g_maxc + 1 && rnd(3)) comm_make();
}

/* ---------------------------------------------------------------- checkpoints */

typedef struct {
    double t, used, pools, rss, anon, heap;
} cp_t;
static cp_t g_cp[MAXCP];
static int g_ncp;

static void checkpoint(double t)
{
    size_t fr = 0, tot = 0;
    tlmpi_pool_stats_t ps;
    double v[4], used;
    long fails = 0, ops = 0;
    int f, c;
    cp_t *p = &g_cp[g_ncp < MAXCP ? g_ncp : MAXCP - 1];

    while (g_nlive > 1) comm_free_at(g_nlive - 1);
    TST_CUDA(cudaDeviceSynchronize());
    PMPI_Barrier(MPI_COMM_WORLD);
    TST_CUDA(cudaMemGetInfo(&fr, &tot));
    used = (double)(tot - fr) / 1048576.0;
    memset(&ps, 0, sizeof ps);
    tlmpi_get_pool_stats(&ps);
    v[0] = (double)ps.bytes / 1048576.0;
    v[1] = rss_mib();
    v[2] = rss_anon_mib();
    v[3] = heap_mib();
    PMPI_Allreduce(MPI_IN_PLACE, v, 4, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    fails = __atomic_load_n(&tst_failures, __ATOMIC_RELAXED);
    PMPI_Allreduce(MPI_IN_PLACE, &fails, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    PMPI_Bcast(&used, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    for (f = 0; f < F_N; f++) for (c = 0; c < C_N; c++) ops += g_ops[f][c];
    if (g_ncp < MAXCP) g_ncp++;
    p->t = t;
    p->used = used;
    p->pools = v[0];
    p->rss = v[1];
    p->anon = v[2];
    p->heap = v[3];
    if (g_rank == 0) {
        printf("gpu_soak: t=%5.0f s: %ld calls, %ld failures; device used %.0f MiB, tlmpi node pools %.1f MiB "
               "(largest rank), RSS %.1f MiB (largest rank; anonymous %.1f, C heap in use %.1f)\n", t, ops, fails, used,
               v[0], v[1], v[2], v[3]);
        fflush(stdout);
    }
}

/* the memory verdict; 1 if flat */
static int memory_verdict(void)
{
    int b = 0, i, flat;
    const cp_t *a, *z;
    double du, dr;

    if (g_ncp < 2) {
        if (g_rank == 0) printf("gpu_soak: memory: fewer than 2 checkpoints, no verdict\n");
        return 1;
    }
    for (i = 0; i < g_ncp - 1; i++) {
        if (g_cp[i].t >= 60) {
            b = i;
            break;
        }
    }
    a = &g_cp[b];
    z = &g_cp[g_ncp - 1];
    du = z->used - a->used;
    dr = z->rss - a->rss;
    flat = du <= fmax(128, 0.05 * a->used) && dr <= fmax(64, 0.10 * a->rss);
    if (g_rank == 0) {
        printf("gpu_soak: memory from t=%.0f s to t=%.0f s: device used %.0f -> %.0f MiB (%+.0f), node pools %.1f -> %.1f "
               "MiB, RSS %.1f -> %.1f MiB (%+.1f; anonymous %+.1f, C heap in use %+.1f): %s\n", a->t, z->t, a->used, z->used,
               du, a->pools, z->pools, a->rss, z->rss, dr, z->anon - a->anon, z->heap - a->heap, flat ? "flat" : "GREW");
    }
    return flat;
}

/* ---------------------------------------------------------------- main */

static int usage(void)
{
    fprintf(stderr, "usage: gpu_soak [-t SECONDS] [-m MAXBYTES] [-s SEED] [--comms N] [--inflight N] [--cp SECONDS] "
                    "[--no-graph] [--no-persist] [--no-enqueue] [--mem-check] [--die-rank R --die-after SECONDS "
                    "[--die-at issue|complete|any]] [--mutant N]\n");
    return 2;
}

int main(int argc, char **argv)
{
    int a, f, c, flat, dying = 0;
    long fails, totals[2], allops = 0;
    double t = 0, next_cp;
    const char *tt = getenv("TLMPI_TIMEOUT");

    if (argc == 2 && !strcmp(argv[1], "--probe")) { /* a device or not, without MPI (tests/gpu/soak.sh) */
        int n = 0;
        return cudaGetDeviceCount(&n) == cudaSuccess && n > 0 ? 0 : 77;
    }
    for (a = 1; a < argc; a++) {
        const char *o = argv[a], *v = a + 1 < argc ? argv[a + 1] : NULL;
        if (!strcmp(o, "-t") && v) g_dur = atof(argv[++a]);
        else if (!strcmp(o, "-m") && v) g_cap = parse_size(argv[++a]);
        else if (!strcmp(o, "-s") && v) setenv("TLMPI_TEST_SEED", argv[++a], 1);
        else if (!strcmp(o, "--comms") && v) g_maxc = atoi(argv[++a]);
        else if (!strcmp(o, "--inflight") && v) g_inflight = atoi(argv[++a]);
        else if (!strcmp(o, "--cp") && v) g_cp_every = atof(argv[++a]);
        else if (!strcmp(o, "--no-graph")) g_nograph = 1;
        else if (!strcmp(o, "--no-persist")) g_nopersist = 1;
        else if (!strcmp(o, "--no-enqueue")) g_noenq = g_nograph = 1;
        else if (!strcmp(o, "--mem-check")) g_memcheck = 1;
        else if (!strcmp(o, "--die-rank") && v) g_die_rank = atoi(argv[++a]);
        else if (!strcmp(o, "--die-after") && v) g_die_after = atof(argv[++a]);
        else if (!strcmp(o, "--die-at") && v) {
            v = argv[++a];
            g_die_at = !strcmp(v, "issue") ? 1 : !strcmp(v, "complete") ? 2 : 0;
        } else if (!strcmp(o, "--mutant") && v) g_mutant = atol(argv[++a]);
        else return usage();
    }
    if (g_maxc < 0) g_maxc = 0;
    if (g_maxc > MAXC) g_maxc = MAXC;
    if (g_inflight < 1) g_inflight = 1;
    if (g_cap < 16) g_cap = 16;
    if (g_cp_every <= 0) g_cp_every = 30;
    g_trace = getenv("GPU_SOAK_TRACE") != NULL;
    g_limit = (tt && atol(tt) > 0 ? (double)atol(tt) : 300.0) + 60.0;

    g_t0 = now();
    tst_init("gpu_soak", &argc, &argv);
    g_rank = tst_rank;
    g_size = tst_size;
    if (cudaGetDeviceCount(&g_ndev) != cudaSuccess || g_ndev < 1) {
        cudaGetLastError();
        return tst_skip("no GPU");
    }
    tst_rng_sync();
    g_seed = tst_rand();
    if (getenv("TLMPI_TEST_SEED") && *getenv("TLMPI_TEST_SEED")) g_seed = strtoull(getenv("TLMPI_TEST_SEED"), NULL, 0);
    tst_rng_seed(&g_rng, g_seed);
    /* this rank's own generator again (the dying rank's choices) */
    tst_rng_seed(&tst_rng_state, g_seed ^ (0x9E3779B97F4A7C15ULL * (uint64_t)(g_rank + 1)));
    TST_CUDA(cudaSetDevice(g_rank % g_ndev));
    TST_CUDA(cudaStreamCreateWithFlags(&g_st[0], cudaStreamNonBlocking));
    TST_CUDA(cudaStreamCreateWithFlags(&g_st[1], cudaStreamNonBlocking));
    find_paths();

    add_type("f32", MPI_FLOAT, K_FLOAT, 4);
    add_type("f64", MPI_DOUBLE, K_FLOAT, 8);
    add_type("f16", TLMPI_FLOAT16, K_F16, 2);
    add_type("bf16", TLMPI_BFLOAT16, K_BF16, 2);
    add_type("i8", MPI_INT8_T, K_INT, 1);
    add_type("u8", MPI_UINT8_T, K_UINT, 1);
    add_type("i16", MPI_INT16_T, K_INT, 2);
    add_type("u16", MPI_UINT16_T, K_UINT, 2);
    add_type("i32", MPI_INT32_T, K_INT, 4);
    add_type("u32", MPI_UINT32_T, K_UINT, 4);
    add_type("i64", MPI_INT64_T, K_INT, 8);
    add_type("u64", MPI_UINT64_T, K_UINT, 8);
#ifdef MPIX_C_FLOAT16
    add_type("mpix_f16", MPIX_C_FLOAT16, K_F16, 2);
#endif

    g_slot_bytes = g_cap + 2 * GUARD + 16 * 8 + 64;
    for (a = 0; a < NSLOT; a++) {
        TST_CUDA(cudaMalloc((void **)&d_s[a], g_slot_bytes));
        TST_CUDA(cudaMalloc((void **)&d_r[a], g_slot_bytes));
        h_s[a] = tst_malloc(g_slot_bytes);
        h_r[a] = tst_malloc(g_slot_bytes);
        h_c[a] = tst_malloc(g_slot_bytes);
        /* every page resident from the start: the checkpoints' RSS then counts no page of the test's own
         * buffers that a larger call touches for the first time later on */
        memset(h_s[a], 0, g_slot_bytes);
        memset(h_r[a], 0, g_slot_bytes);
        memset(h_c[a], 0, g_slot_bytes);
    }
    g_live[0].comm = MPI_COMM_WORLD;
    g_live[0].id = 0;
    snprintf(g_live[0].what, sizeof g_live[0].what, "MPI_COMM_WORLD");
    g_nlive = 1;
    if (!g_noenq) {
        int rc = tlmpi_enqueue_prepare(MPI_COMM_WORLD, 0);
        if (rc != MPI_SUCCESS) TST_FAIL("tlmpi_enqueue_prepare(MPI_COMM_WORLD) returned %d: %s", rc, tlmpi_enqueue_error());
    }
    if (g_rank == 0) {
        printf("gpu_soak: np=%d devices=%d seed %llu (replay: -s %llu) duration %.0f s, sizes 0 .. %zu bytes, "
               "%d communicators besides the world at most, %d in flight; forms: blocking, non-blocking%s%s%s; "
               "MPI %d.%d; TLMPI_TIMEOUT=%s, MPS %s%s\n", g_size, g_ndev, g_seed, g_seed, g_dur, g_cap, g_maxc,
               g_inflight, SOAK_PERSIST && !g_nopersist ? ", persistent" : "", g_noenq ? "" : ", stream-ordered",
               g_nograph ? "" : ", graph-replayed", MPI_VERSION, MPI_SUBVERSION, tt ? tt : "(default)",
               getenv("CUDA_MPS_PIPE_DIRECTORY") ? "yes" : "no", g_mutant >= 0 ? "; MUTANT (a reference off by one)" : "");
        if (g_die_rank >= 0) {
            printf("gpu_soak: dying rank: world rank %d sends itself SIGKILL mid-collective after %.0f s (%s)\n",
                   g_die_rank, g_die_after, g_die_at == 1 ? "after issuing" : g_die_at == 2 ? "while completing" : "any point");
        }
        fflush(stdout);
    }
    PMPI_Barrier(MPI_COMM_WORLD);
    g_t0 = now();
    next_cp = g_cp_every;
    for (g_step = 0;; g_step++) {
        int kind;
        t = now() - g_t0;
        PMPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        if (t >= g_dur) break;
        if (t >= next_cp) {
            checkpoint(t);
            while (next_cp <= t) next_cp += g_cp_every;
        }
        dying = g_die_rank >= 0 && g_die_rank < g_size && g_die_after >= 0 && t >= g_die_after;
        kind = (int)rnd(20);
        kind = kind < 3 ? S_CHURN : kind < 12 ? S_BATCH : kind < 16 ? S_PERSIST : S_GRAPH;
        if (kind == S_PERSIST && (!SOAK_PERSIST || g_nopersist)) kind = S_BATCH;
        if (kind == S_GRAPH && g_nograph) kind = S_BATCH;
        if (dying) kind = S_BATCH;
        switch (kind) {
        case S_CHURN: step_churn(); break;
#if SOAK_PERSIST
        case S_PERSIST: step_persist(); break;
#endif
        case S_GRAPH: step_graph(); break;
        default: step_batch(dying); break;
        }
    }
    checkpoint(t);
    flat = memory_verdict();
    if (!flat && g_memcheck && g_rank == 0) TST_FAIL("memory grew after the first minute (--mem-check)");

    tst_totals(&fails, NULL);
    totals[0] = g_checks;
    PMPI_Allreduce(MPI_IN_PLACE, totals, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    totals[1] = fails;
    if (g_rank == 0) {
        int k, m;
        tlmpi_stat_t st;
        printf("gpu_soak: summary: seed %llu, %.0f s, %d ranks, %ld steps (churn %ld, batch %ld, persistent %ld, graph "
               "%ld: %ld captures, %ld replays)\n", g_seed, t, g_size, g_step, g_steps[S_CHURN], g_steps[S_BATCH],
               g_steps[S_PERSIST], g_steps[S_GRAPH], g_captures, g_replays);
        for (f = 0; f < F_N; f++) {
            long n = 0;
            double b = 0;
            for (c = 0; c < C_N; c++) {
                n += g_ops[f][c];
                b += g_bytes[f][c];
            }
            allops += n;
            printf("gpu_soak:   %-15s %7ld calls, %9.1f MiB:", form_names[f], n, b / 1048576.0);
            for (c = 0; c < C_N; c++) printf(" %s %ld (%.1f MiB)%s", coll_names[c], g_ops[f][c], g_bytes[f][c] / 1048576.0,
                                             c + 1 < C_N ? "," : "\n");
        }
        printf("gpu_soak:   completions:");
        for (m = 0; m < M_N; m++) printf(" %s %ld%s", method_names[m], g_methods[m], m + 1 < M_N ? "," : "\n");
        printf("gpu_soak:   communicators made %ld (", g_made[0] + g_made[1] + g_made[2] + g_made[3] + g_made[4]);
        for (m = 0; m < 5; m++) printf("%s %ld%s", made_names[m], g_made[m], m + 1 < 5 ? ", " : "), ");
        printf("freed %ld\n", g_freed);
        printf("gpu_soak:   tlmpi's calls per path on rank 0:");
        for (c = 0; c < C_N; c++) {
            printf(" %s", coll_names[c]);
            for (k = 0; k < g_npaths && k < MAXP; k++) {
                if (tlmpi_get_stats(coll_ids[c], (tlmpi_path_t)k, &st) == TLMPI_OK && st.calls) {
                    printf(" %s %llu", pname(k), (unsigned long long)st.calls);
                }
            }
            printf("%s", c + 1 < C_N ? ";" : "\n");
        }
        printf("RESULT gpu_soak np=%d seed=%llu ops=%ld checks=%ld failures=%ld time=%.0fs memory=%s %s\n", g_size,
               g_seed, allops, totals[0], totals[1], t, flat ? "flat" : "grew", totals[1] ? "FAIL" : "PASS");
        fflush(stdout);
    }
    for (a = 0; a < NSLOT; a++) {
        cudaFree(d_s[a]);
        cudaFree(d_r[a]);
        free(h_s[a]);
        free(h_r[a]);
        free(h_c[a]);
    }
    cudaStreamDestroy(g_st[0]);
    cudaStreamDestroy(g_st[1]);
    MPI_Finalize();
    (void)g_cur;
    return totals[1] ? 1 : 0;
}
