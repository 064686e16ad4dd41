/*
 * gpu_nbc: GPU tests of tlmpi's non-blocking collectives on device buffers (MPI_Iallreduce,
 * MPI_Iallgather, MPI_Ireduce_scatter_block; the MPI-4 _c forms where the MPI has them), completed
 * by the application's own MPI_Wait / MPI_Test family. Run by tests/gpu/nbc.sh (2, 4 and 8 ranks on
 * one GPU under MPS, a pass with a 1 MiB node pool so that every message takes several pool
 * chunks); exit 77 without a GPU.
 *
 *   gpu_nbc [--quick] [--overflow] [--b2b N] [--expect-auto PATH] [--any-path] [--no-form-check]
 *
 * (--any-path accepts staging wherever the node path is expected, for a run against the CPU fakes
 * of tests/fakes; --no-form-check skips the tlmpi_get_form_stats checks, for a library without it.)
 *
 * Modes (tlmpi_config_set on every rank between batches, as in gpu_node): node (TLMPI_TIER=node,
 * the tier's own algorithm choice), ll / ar-oneshot / ar-twoshot / ag-push / ag-pull / rsb-pull
 * (one node algorithm forced by its table, staging behind it), staging (TLMPI_TIER=staging), auto.
 *
 * Every case: fresh inputs (a hash of seed, case, rank, index: gpu_values.h), send and receive
 * buffers at element-aligned, not 16-byte-aligned offsets, the receive buffer and 64 bytes either
 * side poisoned with a byte that changes per case, results against the exact / f64 host reference,
 * the bytes around the output still poisoned, the send buffer unchanged. Cases run in batches of 1
 * to 6: every case of a batch is issued (MPI_I<coll>, each in its own buffers) before any is
 * completed, and the batch is completed by one of MPI_Wait in issue order, MPI_Wait in reverse
 * order, MPI_Waitall (an MPI_REQUEST_NULL among the requests), MPI_Test round robin, MPI_Testall,
 * MPI_Waitany, MPI_Waitsome, MPI_Testany, MPI_Testsome (every loop bounded: 60 s, then a failure
 * and MPI_Abort). Batches also hold blocking calls on device buffers (issued while the batch's
 * non-blocking calls are pending), non-blocking calls on host buffers (the MPI's own requests in the
 * same arrays) and host/device pairs (staging). After completion every request must be
 * MPI_REQUEST_NULL. Per batch, tlmpi's counters must have moved as the batch's calls say:
 * tlmpi_get_stats per path (node wherever a device call of non-zero count is expected there, 0
 * elements and host buffers passthrough, host/device pairs staging), tlmpi_get_form_stats per form
 * (the non-blocking calls in TLMPI_FORM_NONBLOCKING, the blocking ones in TLMPI_FORM_BLOCKING, none
 * persistent) and, where a mode forces an algorithm, tlmpi_get_algo_stats.
 *
 * Sections: the matrix of every mode (node: every type x op x in place x count {1, 7, 4097} plus 0
 * and 1 MiB per type; the other modes fewer types); --overflow: 3 MiB + 4 and 5 MiB - 3 elements,
 * two such calls in flight at once (node.sh's pool of 1 MiB: several pool chunks each); batches on
 * sub-communicators (halves, thirds, the reversed world, a dup) mixed with the world, in flight at
 * the same time; N (default 100) back-to-back 8-byte non-blocking calls of all three collectives
 * (types, ops, in place changing), then one MPI_Waitall, results checked; N back-to-back calls of
 * mixed sizes across the algorithm thresholds on the world and a dup (mixed tables), then one
 * MPI_Waitall (or an MPI_Testall loop); per-call return time of 8-byte calls (info).
 * Prints "RESULT gpu_nbc np=N cases=C failures=F time=Ts PASS|FAIL" on rank 0.
 */
#include "config.h"
#include "tlmpi.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TST_MAX_PRINT 30 /* failure lines printed per rank */
#include "harness.h"

#include "gpu_values.h"

#define GPU_TEST_NAME "gpu_nbc"
#include "gpu_modes.h"

static const tmode_t g_modes[] = {
    { "node", "node", { "", "", "" }, B(C_AR) | B(C_RSB) | B(C_AG), 0 },
    { "ll", "staging", { "node/ll", "node/ll", "node/ll" }, B(C_AR) | B(C_RSB) | B(C_AG), 0 },
    { "ar-oneshot", "staging", { "node/oneshot", "", "" }, B(C_AR), 0 },
    { "ar-twoshot", "staging", { "node/twoshot", "", "" }, B(C_AR), 0 },
    { "ag-push", "staging", { "", "", "node/push" }, B(C_AG), 0 },
    { "ag-pull", "staging", { "", "", "node/pull" }, B(C_AG), 0 },
    { "rsb-pull", "staging", { "", "node/pull", "" }, B(C_RSB), 0 },
    { "staging", "staging", { "", "", "" }, B(C_AR) | B(C_RSB) | B(C_AG), 1 },
};
#define N_MODES ((int)(sizeof(g_modes) / sizeof(g_modes[0])))
static const tmode_t g_mixed = { "mixed", "staging",
                                 { "node/ll:4k,node/oneshot:16k,node/twoshot", "node/ll:1k,node/pull",
                                   "node/ll:2k,node/push:8k,node/pull" },
                                 B(C_AR) | B(C_RSB) | B(C_AG), 0 };
static const tmode_t g_auto = { "auto", "auto", { "", "", "" }, B(C_AR) | B(C_RSB) | B(C_AG), 0 };

/* library functions looked up at run time (this test builds against any tlmpi.h) */
typedef tlmpi_status_t (*algo_stats_fn)(tlmpi_coll_t, tlmpi_path_t, const char *, tlmpi_stat_t *);
typedef tlmpi_status_t (*form_stats_fn)(tlmpi_coll_t, tlmpi_path_t, tlmpi_form_t, tlmpi_stat_t *);
static algo_stats_fn g_algo_stats;
static form_stats_fn g_form_stats;

static int g_rank, g_size, g_quick, g_overflow, g_anypath, g_noform;
static const char *g_expect_auto;
static long g_cases, g_batches;
static unsigned long long g_seed; /* the same on every rank (cases run in step) */
static tst_rng_t g_urng;          /* rank-uniform choices: batch sizes, completion methods */

#define GUARD 64
#define NSLOT 6 /* cases per batch at most */
static int g_nslot = NSLOT;
static char *d_s[NSLOT], *d_r[NSLOT];          /* device scratch per slot */
static char *h_s[NSLOT], *h_r[NSLOT], *h_c[NSLOT]; /* host: send image, receive image, read-back */
static size_t d_bytes, g_maxblock;

static unsigned urand(unsigned n) { return (unsigned)(tst_rand_r(&g_urng) >> 33) % n; }

static size_t off_of(unsigned long long cs, int which, size_t esz)
{
    return ((((cs >> (2 * which + 3)) ^ (cs >> 11)) & 3) * 3 * esz) % 48;
}

/* ---------------------------------------------------------------- counters */

typedef struct {
    unsigned long long path[C_N][MAXP];           /* tlmpi_get_stats calls */
    unsigned long long form[C_N][MAXP][3];        /* tlmpi_get_form_stats calls per form */
    unsigned long long algo[C_N];                 /* calls of the algorithm the mode forces */
} snap_t;

static void take_snap(snap_t *s)
{
    int c, k, f;
    memset(s, 0, sizeof *s);
    for (c = 0; c < C_N; c++) {
        const char *fa = forced_algo(g_cur, c);
        tlmpi_stat_t st;
        for (k = 0; k < g_npaths; k++) {
            s->path[c][k] = tlmpi_get_stats(coll_ids[c], (tlmpi_path_t)k, &st) == TLMPI_OK ? st.calls : 0;
            for (f = 0; f < 3 && g_form_stats; f++)
                s->form[c][k][f] = g_form_stats(coll_ids[c], (tlmpi_path_t)k, (tlmpi_form_t)f, &st) == TLMPI_OK ? st.calls : 0;
        }
        if (fa && g_algo_stats && P_NODE >= 0)
            s->algo[c] = g_algo_stats(coll_ids[c], (tlmpi_path_t)P_NODE, fa, &st) == TLMPI_OK ? st.calls : 0;
    }
}

/* ---------------------------------------------------------------- one case */

typedef struct {
    MPI_Comm comm;
    int coll, op, inplace, sdev, rdev, blocking;
    const dtinfo_t *t;
    size_t count;
} spec_t;

typedef struct {
    spec_t s;
    int slot, rank, p, expect; /* expect: path index, or -1 when several are acceptable */
    int algo;                  /* counts toward the forced algorithm's counter */
    size_t in_n, out_n, soff, roff, sspan, rspan;
    unsigned long long cs;
    unsigned char pz;
    char *sbuf, *rbuf;
    char msg[320];
} case_t;

static int expected_path(const spec_t *s, int p)
{
    if (s->count == 0) return P_PASS;
    if (!s->rdev && (s->inplace || !s->sdev)) return P_PASS;
    if (!s->inplace && s->sdev != s->rdev) return P_STAGING;
    if (p == 1 || g_anypath) return -1;
    if (g_cur == &g_auto) {
        if (!g_expect_auto) return -1;
        return !strcmp(g_expect_auto, "node") ? P_NODE : !strcmp(g_expect_auto, "staging") ? P_STAGING : -1;
    }
    return g_cur && g_cur->staging ? P_STAGING : P_NODE;
}

static void prepare(case_t *x, int slot)
{
    const spec_t *s = &x->s;
    size_t esz = (size_t)s->t->size, in_b, out_b, i;
    const char *fa;
    char *in;

    x->slot = slot;
    x->cs = ++g_seed;
    x->pz = (unsigned char)(0xA0 | (mix(x->cs) & 0x1f));
    MPI_Comm_rank(s->comm, &x->rank);
    MPI_Comm_size(s->comm, &x->p);
    sizes_of(s->coll, s->count, x->p, &x->in_n, &x->out_n);
    in_b = x->in_n * esz;
    out_b = x->out_n * esz;
    x->roff = GUARD + off_of(x->cs, 0, esz);
    x->soff = GUARD + off_of(x->cs, 1, esz);
    x->rspan = x->roff + (out_b > in_b ? out_b : in_b) + GUARD;
    x->sspan = x->soff + in_b + GUARD;
    if (x->rspan > d_bytes || x->sspan > d_bytes) {
        fprintf(stderr, "gpu_nbc: case too large (%zu / %zu bytes of %zu)\n", x->rspan, x->sspan, d_bytes);
        MPI_Abort(MPI_COMM_WORLD, 4);
    }
    x->expect = expected_path(s, x->p);
    fa = forced_algo(g_cur, s->coll);
    if (fa && !strcmp(fa, "ll") && s->count * esz > 8192) fa = NULL; /* above the LL limit: auto */
    x->algo = fa && x->expect == P_NODE;
    snprintf(x->msg, sizeof x->msg, "%s%s %s %s inplace=%d count=%zu mode=%s np=%d%s%s (batch %ld)",
             s->blocking ? "blocking " : "", coll_names[s->coll], s->t->name,
             s->coll == C_AG ? "-" : op_names[s->op], s->inplace, s->count, g_cur ? g_cur->name : "?", x->p,
             s->sdev ? "" : " s=host", s->rdev ? "" : " r=host", g_batches);
    memset(h_r[slot], x->pz, x->rspan);
    memset(h_s[slot], x->pz ^ 0x5a, x->sspan);
    in = s->inplace ? h_r[slot] + x->roff + (s->coll == C_AG ? (size_t)x->rank * s->count * esz : 0) : h_s[slot] + x->soff;
    for (i = 0; i < x->in_n; i++) put(s->t, in, i, val(s->t, x->cs, x->rank, i));
    if (s->rdev) {
        TST_CUDA(cudaMemcpy(d_r[slot], h_r[slot], x->rspan, cudaMemcpyHostToDevice));
        x->rbuf = d_r[slot] + x->roff;
    } else {
        memcpy(h_c[slot], h_r[slot], x->rspan);
        x->rbuf = h_c[slot] + x->roff;
    }
    if (s->inplace) {
        x->sbuf = MPI_IN_PLACE;
    } else if (s->sdev) {
        TST_CUDA(cudaMemcpy(d_s[slot], h_s[slot], x->sspan, cudaMemcpyHostToDevice));
        x->sbuf = d_s[slot] + x->soff;
    } else {
        x->sbuf = h_s[slot] + x->soff; /* the image itself is the host send buffer */
    }
}

/* issue the case: a request (non-blocking) or a completed blocking call; the _c forms now and then */
static int issue(case_t *x, MPI_Request *req)
{
    const spec_t *s = &x->s;
    int n = (int)s->count;
    MPI_Datatype dt = s->t->dt;
    MPI_Op op = ops_of(s->op);
#if MPI_VERSION >= 4
    if ((x->cs & 7) == 3) {
        MPI_Count nc = (MPI_Count)s->count;
        if (s->blocking) {
            switch (s->coll) {
            case C_AR: return MPI_Allreduce_c(x->sbuf, x->rbuf, nc, dt, op, s->comm);
            case C_RSB: return MPI_Reduce_scatter_block_c(x->sbuf, x->rbuf, nc, dt, op, s->comm);
            default: return MPI_Allgather_c(x->sbuf, nc, dt, x->rbuf, nc, dt, s->comm);
            }
        }
        switch (s->coll) {
        case C_AR: return MPI_Iallreduce_c(x->sbuf, x->rbuf, nc, dt, op, s->comm, req);
        case C_RSB: return MPI_Ireduce_scatter_block_c(x->sbuf, x->rbuf, nc, dt, op, s->comm, req);
        default: return MPI_Iallgather_c(x->sbuf, nc, dt, x->rbuf, nc, dt, s->comm, req);
        }
    }
#endif
    if (s->blocking) {
        switch (s->coll) {
        case C_AR: return MPI_Allreduce(x->sbuf, x->rbuf, n, dt, op, s->comm);
        case C_RSB: return MPI_Reduce_scatter_block(x->sbuf, x->rbuf, n, dt, op, s->comm);
        default: return MPI_Allgather(x->sbuf, n, dt, x->rbuf, n, dt, s->comm);
        }
    }
    switch (s->coll) {
    case C_AR: return MPI_Iallreduce(x->sbuf, x->rbuf, n, dt, op, s->comm, req);
    case C_RSB: return MPI_Ireduce_scatter_block(x->sbuf, x->rbuf, n, dt, op, s->comm, req);
    default: return MPI_Iallgather(x->sbuf, n, dt, x->rbuf, n, dt, s->comm, req);
    }
}

static int check_out(const char *msg, const spec_t *s, unsigned long long cs, int rank, int p, const char *out,
                     size_t out_n)
{
    size_t i, bad = 0;
    for (i = 0; i < out_n; i++) {
        double e, tol, got = get(s->t, out, i);
        if (s->coll == C_AG) {
            e = val(s->t, cs, (int)(i / s->count), i % s->count);
            tol = 0;
        } else {
            e = ref(s->t, cs, s->op, p, s->coll == C_RSB ? (size_t)rank * s->count + i : i, &tol);
        }
        if (!(fabs(got - e) <= tol)) {
            if (!bad) TST_FAIL("%s: element %zu = %.9g, expected %.9g (tol %.3g)", msg, i, got, e, tol);
            bad++;
        }
    }
    if (bad > 1) TST_FAIL("%s: %zu of %zu elements wrong", msg, bad, out_n);
    return bad == 0;
}

static int check_poison(const char *msg, const char *what, const unsigned char *p, size_t n, unsigned char pz)
{
    size_t i;
    for (i = 0; i < n; i++) {
        if (p[i] != pz) {
            TST_FAIL("%s: %s byte %zu overwritten (0x%02x, poison 0x%02x)", msg, what, i, p[i], pz);
            return 0;
        }
    }
    return 1;
}

/* results of a completed case; 1 if all right */
static int check_case(case_t *x)
{
    const spec_t *s = &x->s;
    int k = x->slot, ok = 1;
    size_t esz = (size_t)s->t->size, in_b = x->in_n * esz, out_b = x->out_n * esz, tail, i;

    if (s->rdev) TST_CUDA(cudaMemcpy(h_c[k], d_r[k], x->rspan, cudaMemcpyDeviceToHost));
    ok &= check_out(x->msg, s, x->cs, x->rank, x->p, h_c[k] + x->roff, x->out_n);
    ok &= check_poison(x->msg, "byte before the output", (unsigned char *)h_c[k], x->roff, x->pz);
    /* in place, reduce_scatter_block leaves the input beyond the own block undefined */
    tail = x->roff + (s->inplace && in_b > out_b ? in_b : out_b);
    ok &= check_poison(x->msg, "byte after the output", (unsigned char *)h_c[k] + tail, x->rspan - tail, x->pz);
    if (!s->inplace) {
        const char *sb = h_s[k];
        if (s->sdev) {
            TST_CUDA(cudaMemcpy(h_c[k], d_s[k], x->sspan, cudaMemcpyDeviceToHost));
            sb = h_c[k];
        }
        memset(h_r[k], x->pz ^ 0x5a, x->sspan);
        for (i = 0; i < x->in_n; i++) put(s->t, h_r[k] + x->soff, i, val(s->t, x->cs, x->rank, i));
        if (memcmp(sb, h_r[k], x->sspan)) {
            TST_FAIL("%s: the send buffer (or the bytes around it) changed", x->msg);
            ok = 0;
        }
    }
    g_cases++;
    return ok;
}

/* ---------------------------------------------------------------- completion */

enum { M_WAIT, M_WAIT_REV, M_WAITALL, M_TEST, M_TESTALL, M_WAITANY, M_WAITSOME, M_TESTANY, M_TESTSOME, M_N };
static const char *const method_names[M_N] = { "MPI_Wait", "MPI_Wait (reverse order)", "MPI_Waitall", "MPI_Test loop",
                                               "MPI_Testall loop", "MPI_Waitany", "MPI_Waitsome", "MPI_Testany loop",
                                               "MPI_Testsome loop" };
static long g_method_uses[M_N];

#define LOOP_LIMIT_S 60.0

static void loop_limit(double t0, const char *what)
{
    if (now() - t0 > LOOP_LIMIT_S) {
        fprintf(stderr, "[gpu_nbc r%d] FAIL: %s did not complete within %.0f s (batch %ld): aborting\n", g_rank, what,
                LOOP_LIMIT_S, g_batches);
        fflush(stderr);
        MPI_Abort(MPI_COMM_WORLD, 5);
    }
}

/* complete reqs[0..n) (some may be MPI_REQUEST_NULL already) by method m */
static void complete(MPI_Request *reqs, int n, int m, const char *label)
{
    int i, rc, done = 0, idx, flag, outc, ind[64];
    double t0 = now();
    MPI_Request arr[65];

    if (n > 64 && m != M_WAIT && m != M_WAIT_REV && m != M_TEST && m != M_TESTALL) m = M_TESTALL; /* arrays of 64 */
    g_method_uses[m]++;
    switch (m) {
    case M_WAIT:
    case M_WAIT_REV:
        for (i = 0; i < n; i++) {
            int j = m == M_WAIT ? i : n - 1 - i;
            rc = MPI_Wait(&reqs[j], MPI_STATUS_IGNORE);
            if (rc != MPI_SUCCESS) TST_FAIL("%s: MPI_Wait of request %d: rc %d", label, j, rc);
        }
        break;
    case M_WAITALL: {
        /* an MPI_REQUEST_NULL among them, at a place that changes */
        int z = (int)urand((unsigned)n + 1), k = 0;
        MPI_Status st[65];
        for (i = 0; i <= n; i++) arr[i] = i == z ? MPI_REQUEST_NULL : reqs[k++];
        rc = MPI_Waitall(n + 1, arr, (g_batches & 1) ? st : MPI_STATUSES_IGNORE);
        if (rc != MPI_SUCCESS) TST_FAIL("%s: MPI_Waitall: rc %d", label, rc);
        for (i = 0, k = 0; i <= n; i++) if (i != z) reqs[k++] = arr[i];
        break;
    }
    case M_TEST:
        while (done < n) {
            done = 0;
            for (i = 0; i < n; i++) {
                flag = 0;
                if (reqs[i] == MPI_REQUEST_NULL) { done++; continue; }
                rc = MPI_Test(&reqs[i], &flag, MPI_STATUS_IGNORE);
                if (rc != MPI_SUCCESS) TST_FAIL("%s: MPI_Test of request %d: rc %d", label, i, rc);
                if (flag && reqs[i] != MPI_REQUEST_NULL) {
                    TST_FAIL("%s: MPI_Test gave flag 1 but request %d is not MPI_REQUEST_NULL", label, i);
                    reqs[i] = MPI_REQUEST_NULL;
                }
                done += flag != 0;
            }
            loop_limit(t0, "an MPI_Test loop");
        }
        break;
    case M_TESTALL:
        flag = 0;
        while (!flag) {
            rc = MPI_Testall(n, reqs, &flag, MPI_STATUSES_IGNORE);
            if (rc != MPI_SUCCESS) { TST_FAIL("%s: MPI_Testall: rc %d", label, rc); break; }
            loop_limit(t0, "an MPI_Testall loop");
        }
        break;
    case M_WAITANY:
    case M_TESTANY: {
        char seen[64] = { 0 };
        for (;;) {
            idx = -5;
            flag = 0;
            if (m == M_WAITANY) {
                rc = MPI_Waitany(n, reqs, &idx, MPI_STATUS_IGNORE);
                flag = 1;
            } else {
                rc = MPI_Testany(n, reqs, &idx, &flag, MPI_STATUS_IGNORE);
            }
            if (rc != MPI_SUCCESS) { TST_FAIL("%s: %s: rc %d", label, method_names[m], rc); break; }
            if (!flag) { loop_limit(t0, "an MPI_Testany loop"); continue; }
            if (idx == MPI_UNDEFINED) break; /* every request null */
            if (idx < 0 || idx >= n || seen[idx]) {
                TST_FAIL("%s: %s returned index %d (n %d)%s", label, method_names[m], idx, n,
                         idx >= 0 && idx < n ? " twice" : "");
                break;
            }
            seen[idx] = 1;
            if (reqs[idx] != MPI_REQUEST_NULL) TST_FAIL("%s: %s: request %d not MPI_REQUEST_NULL", label, method_names[m], idx);
            loop_limit(t0, method_names[m]);
        }
        break;
    }
    case M_WAITSOME:
    case M_TESTSOME: {
        char seen[64] = { 0 };
        for (;;) {
            outc = -5;
            if (m == M_WAITSOME) rc = MPI_Waitsome(n, reqs, &outc, ind, MPI_STATUSES_IGNORE);
            else rc = MPI_Testsome(n, reqs, &outc, ind, MPI_STATUSES_IGNORE);
            if (rc != MPI_SUCCESS) { TST_FAIL("%s: %s: rc %d", label, method_names[m], rc); break; }
            if (outc == MPI_UNDEFINED) break;
            if (outc < 0 || outc > n || (m == M_WAITSOME && outc == 0)) {
                TST_FAIL("%s: %s: outcount %d (n %d)", label, method_names[m], outc, n);
                break;
            }
            for (i = 0; i < outc; i++) {
                if (ind[i] < 0 || ind[i] >= n || seen[ind[i]]) {
                    TST_FAIL("%s: %s: index %d (n %d) bad or repeated", label, method_names[m], ind[i], n);
                    outc = -1;
                    break;
                }
                seen[ind[i]] = 1;
            }
            if (outc < 0) break;
            loop_limit(t0, method_names[m]);
        }
        break;
    }
    }
    for (i = 0; i < n; i++) {
        if (reqs[i] != MPI_REQUEST_NULL) {
            TST_FAIL("%s: after %s request %d is not MPI_REQUEST_NULL", label, method_names[m], i);
            reqs[i] = MPI_REQUEST_NULL;
        }
    }
}

/* ---------------------------------------------------------------- a batch */

/* Run specs[0..n) as one batch: prepare all, issue all in order (blocking ones complete at once),
 * complete the non-blocking ones by a method picked here (or `method` >= 0), check the counters
 * and every result. */
static void run_batch(const spec_t *specs, int n, int method)
{
    case_t x[NSLOT];
    MPI_Request reqs[NSLOT];
    int ri[NSLOT], nreq = 0, i, c, k, m, rc, det = 1;
    unsigned long long exp_path[C_N][MAXP], exp_nbp[C_N][MAXP], exp_nb[C_N], exp_blk[C_N], exp_algo[C_N];
    snap_t b0, b1;
    char label[64];

    if (n > g_nslot) n = g_nslot;
    g_batches++;
    memset(exp_path, 0, sizeof exp_path);
    memset(exp_nbp, 0, sizeof exp_nbp);
    memset(exp_nb, 0, sizeof exp_nb);
    memset(exp_blk, 0, sizeof exp_blk);
    memset(exp_algo, 0, sizeof exp_algo);
    for (i = 0; i < n; i++) {
        x[i].s = specs[i];
        prepare(&x[i], i);
        c = x[i].s.coll;
        if (x[i].s.blocking) exp_blk[c]++;
        else exp_nb[c]++;
        if (x[i].expect < 0) det = 0;
        else {
            exp_path[c][x[i].expect]++;
            if (!x[i].s.blocking) exp_nbp[c][x[i].expect]++;
        }
        exp_algo[c] += x[i].algo;
    }
    m = method >= 0 ? method : (int)urand(M_N);
    snprintf(label, sizeof label, "batch %ld (%d calls, %s)", g_batches, n, method_names[m]);
    take_snap(&b0);
    for (i = 0; i < n; i++) {
        MPI_Request r = MPI_REQUEST_NULL;
        rc = issue(&x[i], &r);
        if (rc != MPI_SUCCESS) TST_FAIL("%s: %s: rc %d", label, x[i].msg, rc);
        if (!x[i].s.blocking) {
            if (rc == MPI_SUCCESS && r == MPI_REQUEST_NULL)
                TST_FAIL("%s: %s: returned MPI_REQUEST_NULL for a non-blocking call", label, x[i].msg);
            ri[nreq] = i;
            reqs[nreq++] = r;
        }
    }
    if (nreq) complete(reqs, nreq, m, label);
    take_snap(&b1);
    /* counters: every call in its path; the non-blocking ones in the non-blocking form */
    for (c = 0; c < C_N; c++) {
        unsigned long long all = 0, fnb = 0, fblk = 0, fper = 0;
        for (k = 0; k < g_npaths; k++) {
            unsigned long long d = b1.path[c][k] - b0.path[c][k];
            all += d;
            fblk += b1.form[c][k][TLMPI_FORM_BLOCKING] - b0.form[c][k][TLMPI_FORM_BLOCKING];
            fnb += b1.form[c][k][TLMPI_FORM_NONBLOCKING] - b0.form[c][k][TLMPI_FORM_NONBLOCKING];
            fper += b1.form[c][k][TLMPI_FORM_PERSISTENT] - b0.form[c][k][TLMPI_FORM_PERSISTENT];
            if (det && d != exp_path[c][k])
                TST_FAIL("%s: %s path %s: %llu calls counted, expected %llu", label, coll_names[c], pname(k), d,
                         exp_path[c][k]);
            if (det && g_form_stats && !g_noform) {
                unsigned long long dn = b1.form[c][k][TLMPI_FORM_NONBLOCKING] - b0.form[c][k][TLMPI_FORM_NONBLOCKING];
                if (dn != exp_nbp[c][k])
                    TST_FAIL("%s: %s path %s: %llu non-blocking calls counted, expected %llu", label, coll_names[c],
                             pname(k), dn, exp_nbp[c][k]);
            }
        }
        if (all != exp_nb[c] + exp_blk[c])
            TST_FAIL("%s: %s: %llu calls counted over all paths, expected %llu", label, coll_names[c], all,
                     exp_nb[c] + exp_blk[c]);
        if (g_form_stats && !g_noform && (fnb != exp_nb[c] || fblk != exp_blk[c] || fper != 0))
            TST_FAIL("%s: %s: form counters moved by %llu non-blocking, %llu blocking, %llu persistent; expected "
                     "%llu, %llu, 0", label, coll_names[c], fnb, fblk, fper, exp_nb[c], exp_blk[c]);
        if (g_algo_stats && forced_algo(g_cur, c) && det && b1.algo[c] - b0.algo[c] != exp_algo[c])
            TST_FAIL("%s: %s: the node path's %s counter moved by %llu, expected %llu", label, coll_names[c],
                     forced_algo(g_cur, c), b1.algo[c] - b0.algo[c], exp_algo[c]);
    }
    for (i = 0; i < n; i++) {
        if (!check_case(&x[i])) {
            int j;
            for (j = 0; j < nreq; j++) if (ri[j] == i) break;
            TST_FAIL("    (%s: case %d of the batch%s)", label, i, j < nreq ? ", non-blocking" : ", blocking");
        }
    }
}

/* run a list of specs in batches of 1..maxb calls (sizes from the uniform generator; fixed: maxb) */
static void run_specs(const spec_t *specs, int n, int maxb, int fixed)
{
    int i = 0;
    while (i < n) {
        int b = fixed ? maxb : 1 + (int)urand((unsigned)maxb);
        if (b > n - i) b = n - i;
        run_batch(specs + i, b, -1);
        i += b;
    }
}

/* ---------------------------------------------------------------- spec lists */

static spec_t *g_specs;
static int g_nspecs, g_capspecs;

static void add_spec(MPI_Comm comm, int coll, const char *tn, int op, int inplace, size_t count, int sdev, int rdev,
                     int blocking)
{
    if (g_nspecs == g_capspecs) {
        g_capspecs = g_capspecs ? 2 * g_capspecs : 1024;
        g_specs = realloc(g_specs, (size_t)g_capspecs * sizeof *g_specs);
    }
    g_specs[g_nspecs++] = (spec_t){ comm, coll, op, inplace, sdev, rdev, blocking, type_by_name(tn), count };
}
#define ADD(comm, coll, tn, op, ip, count) add_spec(comm, coll, tn, op, ip, count, 1, 1, 0)

/* a blocking device call, a host-buffer non-blocking call or a host/device pair now and then */
static void add_extra(MPI_Comm comm, int mask)
{
    unsigned r = urand(8);
    int c = (int)urand(C_N);
    while (!(mask & B(c))) c = (c + 1) % C_N;
    if (r == 0) add_spec(comm, c, "f32", OP_SUM, 0, 100, 1, 1, 1);                /* blocking, device */
    else if (r == 1) add_spec(comm, c, "f64", OP_MAX, (int)urand(2), 33, 1, 1, 1); /* blocking, device */
    else if (r == 2) add_spec(comm, c, "i32", OP_SUM, 0, 257, 0, 0, 0);           /* non-blocking, host */
    else if (r == 3) add_spec(comm, c, "f32", OP_MIN, 1, 77, 0, 0, 0);            /* host, in place */
    else if (r == 4) add_spec(comm, c, "f32", OP_SUM, 0, 4097, 0, 1, 0);          /* host send, device receive */
}

static const char *const ag_type_names[] = { "u8", "bf16", "f32", "f64" };
static const char *const quick_type_names[] = { "f32", "bf16", "i16", "u8", "f64", "u16" };

static void matrix(MPI_Comm comm, const tmode_t *m)
{
    static const size_t small[3] = { 1, 7, 4097 };
    int c, a, op, ip, s, full = m == &g_modes[0] && !g_quick;
    double t0 = now();
    long c0 = g_cases;

    if (!set_mode(m)) return;
    g_nspecs = 0;
    for (c = 0; c < C_N; c++) {
        if (!(m->colls & B(c))) continue;
        if (g_overflow) {
            static const char *const ov[2] = { "f32", "bf16" };
            static const char *const ovg[2] = { "bf16", "f64" };
            for (a = 0; a < 2; a++) {
                const dtinfo_t *t = type_by_name(c == C_AG ? ovg[a] : ov[a]);
                for (ip = 0; ip < 2; ip++) {
                    ADD(comm, c, t->name, a ? OP_MAX : OP_SUM, ip, ((size_t)3 << 20) / (size_t)t->size + 4);
                    ADD(comm, c, t->name, a ? OP_SUM : OP_MAX, ip, ((size_t)5 << 20) / (size_t)t->size - 3);
                }
            }
            continue;
        }
        if (c == C_AG) {
            for (a = 0; a < 4; a++) {
                const char *tn = ag_type_names[a];
                for (ip = 0; ip < 2; ip++) {
                    ADD(comm, c, tn, 0, ip, 0);
                    for (s = 0; s < 3; s++) {
                        ADD(comm, c, tn, 0, ip, small[s]);
                        if (!(g_nspecs % 5)) add_extra(comm, m->colls);
                    }
                    if (full || (!g_quick && a == 2)) ADD(comm, c, tn, 0, ip, ((size_t)1 << 20) / (size_t)type_by_name(tn)->size);
                }
            }
            continue;
        }
        if (!full) {
            int nt = (int)(sizeof quick_type_names / sizeof quick_type_names[0]);
            for (a = 0; a < nt; a++) {
                const char *tn = quick_type_names[a];
                for (ip = 0; ip < 2; ip++) {
                    ADD(comm, c, tn, OP_SUM, ip, 0);
                    for (s = 0; s < 3; s++) {
                        ADD(comm, c, tn, OP_SUM, ip, small[s]);
                        ADD(comm, c, tn, OP_MAX, ip, small[s]);
                        if (a < 2 || a == 3) ADD(comm, c, tn, ip ? OP_MIN : OP_PROD, ip, small[s]);
                        if (!(g_nspecs % 5)) add_extra(comm, m->colls);
                    }
                }
            }
            if (!g_quick) ADD(comm, c, "f32", OP_SUM, 0, ((size_t)1 << 20) / 4);
            continue;
        }
        for (a = 0; a < g_ntypes; a++) {
            const dtinfo_t *t = &g_types[a];
            for (op = 0; op < OP_N; op++)
                for (ip = 0; ip < 2; ip++)
                    for (s = 0; s < 3; s++) {
                        ADD(comm, c, t->name, op, ip, small[s]);
                        if (!(g_nspecs % 7)) add_extra(comm, m->colls);
                    }
            for (ip = 0; ip < 2; ip++) {
                ADD(comm, c, t->name, (a + ip) % OP_N, ip, 0);
                ADD(comm, c, t->name, (a + 2 * ip) % OP_N, ip, ((size_t)1 << 20) / (size_t)t->size);
            }
        }
    }
    /* overflow: two multi-chunk calls in flight at once */
    run_specs(g_specs, g_nspecs, g_overflow ? 2 : g_nslot, g_overflow);
    if (g_rank == 0) printf("mode %-10s: %ld cases, %.2f s\n", m->name, g_cases - c0, now() - t0);
    fflush(stdout);
}

/* batches mixing the world with sub-communicators (all in flight at once) */
static void sub_batches(MPI_Comm half, MPI_Comm third, MPI_Comm rev, MPI_Comm dup)
{
    MPI_Comm cm[5] = { MPI_COMM_WORLD, half, third, rev, dup };
    static const char *const tn[6] = { "f32", "i16", "bf16", "f64", "u8", "i32" };
    static const size_t cnt[6] = { 1, 7, 4097, 1000, 33, 20000 };
    int i, ncm = g_size >= 3 ? 5 : 4, nb = g_quick ? 12 : 40;
    long c0 = g_cases;
    double t0 = now();

    if (ncm == 4) cm[2] = dup;
    for (i = 0; i < nb; i++) {
        spec_t sp[NSLOT];
        int k, n = 2 + (int)urand(NSLOT - 1);
        for (k = 0; k < n; k++) {
            int c = (int)urand(C_N), ci, op, ip, blk;
            const char *t = c == C_AG ? ag_type_names[urand(4)] : tn[urand(6)];
            ci = (int)urand((unsigned)ncm);
            op = (int)urand(OP_N);
            ip = (int)urand(2);
            blk = urand(6) == 0;
            sp[k] = (spec_t){ cm[ci], c, op, ip, 1, 1, blk, type_by_name(t), cnt[urand(6)] };
        }
        set_mode(i % 3 == 2 ? &g_mixed : &g_modes[0]);
        run_batch(sp, n, -1);
    }
    if (g_rank == 0) printf("sub-communicators: %ld cases in %d batches, %.2f s\n", g_cases - c0, nb, now() - t0);
    fflush(stdout);
}

/* ---------------------------------------------------------------- back to back */

typedef struct {
    spec_t s;
    size_t soff, roff, sspan, rspan, in_n, out_n;
    unsigned long long cs;
    unsigned char pz;
    int rank, p;
} b2b_t;

/* n non-blocking calls issued back to back (each its own buffers), then one completion; 8 bytes per
 * call (bytes8) or mixed sizes across the algorithm thresholds on two communicators */
static void back_to_back(MPI_Comm *comms, int ncomms, int n, int bytes8, const tmode_t *m, int method)
{
    static const char *const ar8[5] = { "f32", "i64", "u8", "bf16", "f64" };   /* 8 B: x2, x1, x8, x4, x1 */
    static const char *const ag8[3] = { "u8", "f32", "i16" };
    static const char *const rsb8[4] = { "f32", "i32", "f16", "u64" };
    static const char *const tn[8] = { "f32", "i32", "bf16", "f64", "u8", "i16", "f16", "u64" };
    static const size_t cnt[7] = { 1, 7, 33, 4097, 20000, 300, 65 };
    b2b_t *c = calloc((size_t)n, sizeof *c);
    MPI_Request *reqs = malloc((size_t)n * sizeof *reqs);
    size_t total = 0;
    char *dev, *host;
    int a, rc, ncalls[C_N] = { 0, 0, 0 }, k;
    long bad_calls = 0;
    snap_t b0, b1;
    double t0, t1, t2;

    if (!set_mode(m)) { free(c); free(reqs); return; }
    for (a = 0; a < n; a++) {
        b2b_t *x = &c[a];
        size_t esz;
        x->s.comm = comms[(a / 3) % ncomms];
        x->s.coll = a % 3;
        x->s.op = (a / 5) % OP_N;
        x->s.inplace = (a / 7) % 2;
        x->s.sdev = x->s.rdev = 1;
        if (bytes8) {
            const char *t = x->s.coll == C_AR ? ar8[(a / 3) % 5] : x->s.coll == C_AG ? ag8[(a / 3) % 3] : rsb8[(a / 3) % 4];
            x->s.t = type_by_name(t);
            x->s.count = 8 / (size_t)x->s.t->size;
        } else {
            x->s.t = type_by_name(tn[(a / 2) % 8]);
            x->s.count = cnt[(a / 4) % 7];
        }
        MPI_Comm_rank(x->s.comm, &x->rank);
        MPI_Comm_size(x->s.comm, &x->p);
        x->cs = ++g_seed;
        x->pz = (unsigned char)(0xA0 | (mix(x->cs) & 0x1f));
        esz = (size_t)x->s.t->size;
        sizes_of(x->s.coll, x->s.count, x->p, &x->in_n, &x->out_n);
        x->sspan = x->s.inplace ? 0 : GUARD + off_of(x->cs, 1, esz) + x->in_n * esz + GUARD;
        x->soff = total;
        total += (x->sspan + 255) & ~(size_t)255;
        x->rspan = GUARD + off_of(x->cs, 0, esz) + (x->out_n > x->in_n ? x->out_n : x->in_n) * esz + GUARD;
        x->roff = total;
        total += (x->rspan + 255) & ~(size_t)255;
    }
    host = malloc(total);
    TST_CUDA(cudaMalloc((void **)&dev, total));
    for (a = 0; a < n; a++) {
        b2b_t *x = &c[a];
        size_t esz = (size_t)x->s.t->size, i;
        char *in;
        memset(host + x->roff, x->pz, x->rspan);
        if (x->sspan) memset(host + x->soff, x->pz ^ 0x5a, x->sspan);
        in = x->s.inplace ? host + x->roff + GUARD + off_of(x->cs, 0, esz) +
                                (x->s.coll == C_AG ? (size_t)x->rank * x->s.count * esz : 0)
                          : host + x->soff + GUARD + off_of(x->cs, 1, esz);
        for (i = 0; i < x->in_n; i++) put(x->s.t, in, i, val(x->s.t, x->cs, x->rank, i));
    }
    TST_CUDA(cudaMemcpy(dev, host, total, cudaMemcpyHostToDevice));
    TST_CUDA(cudaDeviceSynchronize());
    take_snap(&b0);
    PMPI_Barrier(MPI_COMM_WORLD);
    t0 = now();
    for (a = 0; a < n; a++) {
        b2b_t *x = &c[a];
        size_t esz = (size_t)x->s.t->size;
        char *r = dev + x->roff + GUARD + off_of(x->cs, 0, esz);
        const void *s = x->s.inplace ? MPI_IN_PLACE : dev + x->soff + GUARD + off_of(x->cs, 1, esz);
        int cn = (int)x->s.count;
        MPI_Datatype dt = x->s.t->dt;
        reqs[a] = MPI_REQUEST_NULL;
        switch (x->s.coll) {
        case C_AR: rc = MPI_Iallreduce(s, r, cn, dt, ops_of(x->s.op), x->s.comm, &reqs[a]); break;
        case C_RSB: rc = MPI_Ireduce_scatter_block(s, r, cn, dt, ops_of(x->s.op), x->s.comm, &reqs[a]); break;
        default: rc = MPI_Iallgather(s, cn, dt, r, cn, dt, x->s.comm, &reqs[a]); break;
        }
        if (rc != MPI_SUCCESS) TST_FAIL("back-to-back call %d (%s %s): rc %d", a, coll_names[x->s.coll], x->s.t->name, rc);
        ncalls[x->s.coll]++;
    }
    t1 = now();
    {
        char label[96];
        snprintf(label, sizeof label, "back-to-back %s (%d calls, %s)", bytes8 ? "8 B" : "mixed sizes", n, method_names[method]);
        if (method == M_WAITALL) {
            rc = MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE);
            if (rc != MPI_SUCCESS) TST_FAIL("%s: MPI_Waitall: rc %d", label, rc);
            for (a = 0; a < n; a++) if (reqs[a] != MPI_REQUEST_NULL) { TST_FAIL("%s: request %d not null", label, a); break; }
            g_method_uses[M_WAITALL]++;
        } else {
            complete(reqs, n, method, label);
        }
    }
    t2 = now();
    take_snap(&b1);
    for (k = 0; k < C_N; k++) {
        int pe = m->staging ? P_STAGING : P_NODE;
        unsigned long long node = b1.path[k][pe] - b0.path[k][pe], nb = 0;
        int allone = 1, ci;
        for (ci = 0; ci < ncomms; ci++) {
            int p;
            MPI_Comm_size(comms[ci], &p);
            allone &= p == 1;
        }
        if (node != (unsigned long long)ncalls[k] && !allone && !g_anypath)
            TST_FAIL("back-to-back %s: %llu of %d %s calls took the %s path", bytes8 ? "8 B" : "mixed", node, ncalls[k],
                     coll_names[k], pname(pe));
        if (g_form_stats && !g_noform) {
            int p2;
            for (p2 = 0; p2 < g_npaths; p2++) nb += b1.form[k][p2][TLMPI_FORM_NONBLOCKING] - b0.form[k][p2][TLMPI_FORM_NONBLOCKING];
            if (nb != (unsigned long long)ncalls[k])
                TST_FAIL("back-to-back %s: %llu of %d %s calls counted as non-blocking", bytes8 ? "8 B" : "mixed", nb,
                         ncalls[k], coll_names[k]);
        }
    }
    TST_CUDA(cudaMemcpy(host, dev, total, cudaMemcpyDeviceToHost));
    for (a = 0; a < n; a++) {
        b2b_t *x = &c[a];
        size_t esz = (size_t)x->s.t->size, ro = GUARD + off_of(x->cs, 0, esz), so, i, tail;
        char msg[300];
        int bad = 0;
        snprintf(msg, sizeof msg, "back-to-back %s call %d: %s %s %s inplace=%d count=%zu", bytes8 ? "8 B" : "mixed", a,
                 coll_names[x->s.coll], x->s.t->name, x->s.coll == C_AG ? "-" : op_names[x->s.op], x->s.inplace, x->s.count);
        bad += !check_out(msg, &x->s, x->cs, x->rank, x->p, host + x->roff + ro, x->out_n);
        bad += !check_poison(msg, "byte before the output", (unsigned char *)host + x->roff, ro, x->pz);
        tail = ro + (x->s.inplace && x->in_n > x->out_n ? x->in_n : x->out_n) * esz;
        bad += !check_poison(msg, "byte after the output", (unsigned char *)host + x->roff + tail, x->rspan - tail, x->pz);
        if (x->sspan) {
            so = GUARD + off_of(x->cs, 1, esz);
            for (i = 0; i < x->in_n && !bad; i++) {
                if (get(x->s.t, host + x->soff + so, i) != val(x->s.t, x->cs, x->rank, i)) {
                    TST_FAIL("%s: send element %zu changed", msg, i);
                    bad++;
                }
            }
        }
        bad_calls += bad != 0;
        g_cases++;
    }
    if (g_rank == 0)
        printf("back-to-back %s: %d non-blocking calls (mode %s) issued in %.1f us (%.2f us per call), completed by %s "
               "%.1f us later (%.2f us per call in all), %ld wrong on rank 0\n", bytes8 ? "8 B" : "mixed sizes", n,
               m->name, (t1 - t0) * 1e6, (t1 - t0) * 1e6 / n, method_names[method], (t2 - t1) * 1e6,
               (t2 - t0) * 1e6 / n, bad_calls);
    fflush(stdout);
    TST_CUDA(cudaFree(dev));
    free(host);
    free(c);
    free(reqs);
}

/* per-call return time of 8-byte MPI_Iallreduce on the node tier (info) */
static void return_time(void)
{
    int i, n = g_quick ? 50 : 200;
    double tr = 0, tw = 0, t, mx[2];
    MPI_Request r;

    if (!set_mode(&g_modes[0])) return;
    for (i = 0; i < 20; i++) {
        MPI_Iallreduce(d_s[0], d_r[0], 2, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
    }
    PMPI_Barrier(MPI_COMM_WORLD);
    for (i = 0; i < n; i++) {
        t = now();
        MPI_Iallreduce(d_s[0], d_r[0], 2, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &r);
        tr += now() - t;
        t = now();
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        tw += now() - t;
    }
    tr = tr / n * 1e6;
    tw = tw / n * 1e6;
    PMPI_Allreduce(&tr, &mx[0], 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    PMPI_Allreduce(&tw, &mx[1], 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (g_rank == 0)
        printf("latency: np=%d MPI_Iallreduce 8 B (mode node): returns after %.2f us, MPI_Wait %.2f us more (max over "
               "ranks of the mean of %d)\n", g_size, mx[0], mx[1], n);
}

int main(int argc, char **argv)
{
    int ndev = 0, a, mi, nb2b = 100;
    double t0 = now();
    MPI_Comm half, third, rev, dup;
    long totals[2], fails = 0;

    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        (void)cudaGetLastError();
        fprintf(stderr, "SKIP: no CUDA device\n");
        return 77;
    }
    for (a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--probe")) return 0;
        else if (!strcmp(argv[a], "--quick")) g_quick = 1;
        else if (!strcmp(argv[a], "--overflow")) g_overflow = 1;
        else if (!strcmp(argv[a], "--any-path")) g_anypath = 1;
        else if (!strcmp(argv[a], "--no-form-check")) g_noform = 1;
        else if (!strcmp(argv[a], "--b2b") && a + 1 < argc) nb2b = atoi(argv[++a]);
        else if (!strcmp(argv[a], "--expect-auto") && a + 1 < argc) g_expect_auto = argv[++a];
        else {
            fprintf(stderr, "usage: gpu_nbc [--quick] [--overflow] [--b2b N] [--expect-auto PATH] [--any-path] "
                            "[--no-form-check]\n");
            return 2;
        }
    }
    if (nb2b < 1) nb2b = 1;

    tst_init("gpu_nbc", &argc, &argv);
    g_rank = tst_rank;
    g_size = tst_size;
    tst_rng_sync();
    g_seed = tst_rand();
    tst_rng_seed(&g_urng, g_seed);
    TST_CUDA(cudaSetDevice(g_rank % ndev));
    find_paths();
    *(void **)&g_algo_stats = dlsym(RTLD_DEFAULT, "tlmpi_get_algo_stats");
    *(void **)&g_form_stats = dlsym(RTLD_DEFAULT, "tlmpi_get_form_stats");
    if (P_NODE < 0 || P_STAGING < 0 || P_PASS < 0 || P_SELF < 0) {
        TST_FAIL("no node / staging / passthrough / self path label among tlmpi's %d paths", g_npaths);
        goto done;
    }
    if (!g_form_stats && !g_noform) TST_FAIL("this libtlmpi has no tlmpi_get_form_stats (--no-form-check skips its checks)");
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
    if (g_overflow) g_nslot = 2;
    g_maxblock = g_overflow ? ((size_t)5 << 20) + 4096 : ((size_t)1 << 20) + 4096;
    d_bytes = (size_t)(g_size + 1) * g_maxblock + 4 * GUARD + 4096;
    for (a = 0; a < g_nslot; a++) {
        TST_CUDA(cudaMalloc((void **)&d_s[a], d_bytes));
        TST_CUDA(cudaMalloc((void **)&d_r[a], d_bytes));
        h_s[a] = tst_malloc(d_bytes);
        h_r[a] = tst_malloc(d_bytes);
        h_c[a] = tst_malloc(d_bytes);
    }
    if (g_rank == 0) {
        const char *pool = getenv("TLMPI_NODE_POOL"), *ctas = getenv("TLMPI_NODE_CTAS");
        printf("gpu_nbc: np=%d devices=%d quick=%d overflow=%d b2b=%d TLMPI_NODE_POOL=%s TLMPI_NODE_CTAS=%s MPS=%s "
               "MPI %d.%d form counters %s\n", g_size, ndev, g_quick, g_overflow, nb2b, pool ? pool : "(default)",
               ctas ? ctas : "(default)", getenv("CUDA_MPS_PIPE_DIRECTORY") ? "yes" : "no", MPI_VERSION,
               MPI_SUBVERSION, g_form_stats ? (g_noform ? "present, not checked" : "checked") : "absent");
        fflush(stdout);
    }

    for (mi = 0; mi < N_MODES; mi++) {
        if (g_overflow && g_modes[mi].staging) continue;
        matrix(MPI_COMM_WORLD, &g_modes[mi]);
    }
    if (!g_overflow) matrix(MPI_COMM_WORLD, &g_auto);

    MPI_Comm_split(MPI_COMM_WORLD, g_rank % 2, g_rank, &half);
    MPI_Comm_split(MPI_COMM_WORLD, g_rank % 3, g_rank, &third);
    MPI_Comm_split(MPI_COMM_WORLD, 0, g_size - 1 - g_rank, &rev);
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    if (!g_overflow) sub_batches(half, third, rev, dup);

    {
        MPI_Comm w[1] = { MPI_COMM_WORLD }, cm[2] = { MPI_COMM_WORLD, dup };
        back_to_back(w, 1, nb2b, 1, &g_modes[0], M_WAITALL);
        if (!g_overflow) {
            back_to_back(cm, 2, nb2b, 1, &g_mixed, M_WAITALL);
            back_to_back(cm, 2, nb2b, 0, &g_mixed, M_WAITALL);
            back_to_back(cm, 2, nb2b, 0, &g_modes[0], M_TESTALL);
            if (!g_quick) back_to_back(w, 1, nb2b, 1, &g_modes[N_MODES - 1], M_WAITALL); /* staging */
        }
    }
    MPI_Comm_free(&half);
    MPI_Comm_free(&third);
    MPI_Comm_free(&rev);
    MPI_Comm_free(&dup);
    if (!g_overflow) return_time();
    if (g_rank == 0) {
        int m;
        printf("completion methods used (batches):");
        for (m = 0; m < M_N; m++) printf(" %s %ld%s", method_names[m], g_method_uses[m], m + 1 < M_N ? "," : "\n");
    }

done:
    tst_totals(&fails, NULL);
    totals[0] = g_cases;
    PMPI_Allreduce(MPI_IN_PLACE, totals, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    totals[1] = fails;
    if (g_rank == 0) {
        unsigned long *guard = dlsym(RTLD_DEFAULT, "tlmpi_guard_checked");
        printf("guard: %s (%lu PMPI calls checked on rank 0)\n", guard ? "active" : "not loaded", guard ? *guard : 0UL);
        printf("RESULT gpu_nbc np=%d cases=%ld failures=%ld time=%.1fs %s\n", g_size, totals[0], totals[1], now() - t0,
               totals[1] ? "FAIL" : "PASS");
    }
    fflush(stdout);
    for (a = 0; a < g_nslot; a++) {
        if (d_s[a]) TST_CUDA(cudaFree(d_s[a]));
        if (d_r[a]) TST_CUDA(cudaFree(d_r[a]));
        free(h_s[a]);
        free(h_r[a]);
        free(h_c[a]);
    }
    free(g_specs);
    MPI_Finalize();
    return totals[1] ? 1 : 0;
}
