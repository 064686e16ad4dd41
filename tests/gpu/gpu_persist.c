/*
 * gpu_persist: GPU tests of tlmpi's MPI-4 persistent collectives on device buffers
 * (MPI_Allreduce_init, MPI_Allgather_init, MPI_Reduce_scatter_block_init and their _c forms, started
 * with MPI_Start / MPI_Startall, completed by the MPI_Wait / MPI_Test family). Built everywhere; where
 * the MPI is older than MPI-4 (Open MPI 4.1) it says so and exits 77, as it does without a GPU. On
 * the GPU host it runs with Debian's MPICH 4.0.2 unpacked from its packages (tests/gpu/nbc.sh with
 * NBC_DEBS, tests/gpu/device-run.sh part nbc).
 *
 *   gpu_persist [--iters N] [--quick] [--overflow] [--any-path] [--no-form-check] [--late N]
 *
 * Sections:
 *  - loop: nine persistent requests made once on the world (allreduce f32 1000 elements, bf16 70000
 *    in place; allgather i32 333, u8 30000 in place; reduce_scatter_block f64 max 77, f16 4097 in
 *    place: the LL, one-shot / two-shot, push / pull sizes, at element-aligned offsets that change
 *    with the seed; and 1 MiB at 16-byte aligned offsets: allreduce f32, allgather u8 in place,
 *    reduce_scatter_block f32, the node tier's zero-copy kernels), then N (default 1000) rounds:
 *    fresh inputs written into the bound buffers, the outputs poisoned anew, the first six started
 *    (the 1 MiB three too in every 10th round) (MPI_Startall,
 *    or MPI_Start one by one) and completed by one of MPI_Wait (in order or reversed), MPI_Waitall,
 *    MPI_Test / MPI_Testall / MPI_Testany / MPI_Testsome loops, MPI_Waitany, MPI_Waitsome; every
 *    result checked every round; the requests must stay allocated (inactive, not MPI_REQUEST_NULL);
 *  - matrix: every type x op x in place x count {0, 1, 7, 4097} (allgather: one type per element
 *    size) and 1 MiB per type (--overflow: 3 MiB + 4 and 5 MiB - 3 elements, for a 1 MiB pool):
 *    made, started 3 times with fresh data, freed;
 *  - mixed arrays: device requests (tlmpi's) and host-buffer requests (the MPI's own) in one
 *    MPI_Startall / MPI_Waitall / MPI_Testall, MPI_Wait on requests never started and on completed
 *    ones (must return at once), a persistent request, a non-blocking call and a blocking call in
 *    flight on one communicator at the same time; requests on a dup and on halves of the world;
 *  - the _c forms (MPI_Allreduce_init_c, ...);
 *  - --late N (alone, under TLMPI_FAULT=node_late:R): the three zero-copy requests with a late peer,
 *    each rank's buffers poisoned as soon as its wait returned (late_section).
 * Every start: fresh inputs (gpu_values.h), the receive buffer and 64 bytes either side poisoned
 * with a byte that changes per start, results against the host reference, the send buffer
 * unchanged. tlmpi's counters: each start in its path (node where expected, passthrough for host
 * buffers and 0 elements) and in TLMPI_FORM_PERSISTENT (tlmpi_get_form_stats), none blocking or
 * non-blocking. Prints "RESULT gpu_persist np=N cases=C failures=F time=Ts PASS|FAIL" on rank 0.
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

#if MPI_VERSION >= 4

#define TST_MAX_PRINT 30
#include "harness.h"

#include "gpu_values.h"

#define GPU_TEST_NAME "gpu_persist"
#include "gpu_modes.h"

typedef tlmpi_status_t (*form_stats_fn)(tlmpi_coll_t, tlmpi_path_t, tlmpi_form_t, tlmpi_stat_t *);
static form_stats_fn g_form_stats;

static int g_rank, g_size, g_quick, g_overflow, g_anypath, g_noform;
static long g_cases, g_starts;
static unsigned long long g_seed;
static tst_rng_t g_urng;

#define GUARD 64
#define NSLOT 9
static char *d_s[NSLOT], *d_r[NSLOT], *h_s[NSLOT], *h_r[NSLOT], *h_c[NSLOT], *hb_s[NSLOT], *hb_r[NSLOT];
static size_t d_bytes;

static unsigned urand(unsigned n) { return (unsigned)(tst_rand_r(&g_urng) >> 33) % n; }

static int g_aligned; /* preq_init: buffers at 16-byte aligned offsets */
static size_t off_of(unsigned long long cs, int which, size_t esz)
{
    return ((((cs >> (2 * which + 3)) ^ (cs >> 11)) & 3) * 3 * esz) % 48;
}

/* ---------------------------------------------------------------- counters */

typedef struct {
    unsigned long long path[C_N][MAXP], form[C_N][3];
} snap_t;

static void take_snap(snap_t *s)
{
    int c, k, f;
    memset(s, 0, sizeof *s);
    for (c = 0; c < C_N; c++) {
        for (k = 0; k < g_npaths; k++) {
            tlmpi_stat_t st;
            s->path[c][k] = tlmpi_get_stats(coll_ids[c], (tlmpi_path_t)k, &st) == TLMPI_OK ? st.calls : 0;
            for (f = 0; f < 3 && g_form_stats; f++)
                s->form[c][f] += g_form_stats(coll_ids[c], (tlmpi_path_t)k, (tlmpi_form_t)f, &st) == TLMPI_OK ? st.calls : 0;
        }
    }
}

/* ---------------------------------------------------------------- one persistent request */

typedef struct {
    MPI_Comm comm;
    int coll, op, inplace, host, use_c, slot, rank, p, expect;
    const dtinfo_t *t;
    size_t count, in_n, out_n, soff, roff, sspan, rspan;
    unsigned long long cs;
    unsigned char pz;
    char *sbuf, *rbuf; /* bound at init */
    MPI_Request req;
    char msg[256];
} preq_t;

/* make the request on buffers of slot `slot` (device, or host with host=1) */
static void preq_init(preq_t *x, MPI_Comm comm, int coll, const char *tn, int op, int inplace, size_t count, int slot,
                      int host, int use_c)
{
    size_t esz, in_b, out_b;
    unsigned long long cs0 = ++g_seed;
    int rc;
    MPI_Datatype dt;

    memset(x, 0, sizeof *x);
    x->comm = comm;
    x->coll = coll;
    x->t = type_by_name(tn);
    x->op = op;
    x->inplace = inplace;
    x->count = count;
    x->slot = slot;
    x->host = host;
    x->use_c = use_c;
    MPI_Comm_rank(comm, &x->rank);
    MPI_Comm_size(comm, &x->p);
    esz = (size_t)x->t->size;
    sizes_of(coll, count, x->p, &x->in_n, &x->out_n);
    in_b = x->in_n * esz;
    out_b = x->out_n * esz;
    /* fixed for the request's life: its buffers are bound; g_aligned: 16-byte aligned (zero-copy) */
    x->roff = GUARD + (g_aligned ? 0 : off_of(cs0, 0, esz));
    x->soff = GUARD + (g_aligned ? 0 : off_of(cs0, 1, esz));
    x->rspan = x->roff + (out_b > in_b ? out_b : in_b) + GUARD;
    x->sspan = x->soff + in_b + GUARD;
    if (x->rspan > d_bytes || x->sspan > d_bytes) {
        fprintf(stderr, "gpu_persist: request too large (%zu / %zu of %zu bytes)\n", x->rspan, x->sspan, d_bytes);
        MPI_Abort(MPI_COMM_WORLD, 4);
    }
    x->rbuf = (host ? hb_r[slot] : d_r[slot]) + x->roff;
    x->sbuf = inplace ? MPI_IN_PLACE : (host ? hb_s[slot] : d_s[slot]) + x->soff;
    if (count == 0 || host) x->expect = -2; /* the MPI's own request (or none): its starts may go uncounted */
    else if (x->p == 1 || g_anypath) x->expect = -1;
    else x->expect = P_NODE;
    snprintf(x->msg, sizeof x->msg, "persistent%s %s %s %s inplace=%d count=%zu np=%d%s", use_c ? " _c" : "",
             coll_names[coll], tn, coll == C_AG ? "-" : op_names[op], inplace, count, x->p, host ? " host" : "");
    dt = x->t->dt;
    x->req = MPI_REQUEST_NULL;
    if (use_c) {
        MPI_Count n = (MPI_Count)count;
        switch (coll) {
        case C_AR: rc = MPI_Allreduce_init_c(x->sbuf, x->rbuf, n, dt, ops_of(op), comm, MPI_INFO_NULL, &x->req); break;
        case C_RSB: rc = MPI_Reduce_scatter_block_init_c(x->sbuf, x->rbuf, n, dt, ops_of(op), comm, MPI_INFO_NULL, &x->req); break;
        default: rc = MPI_Allgather_init_c(x->sbuf, n, dt, x->rbuf, n, dt, comm, MPI_INFO_NULL, &x->req); break;
        }
    } else {
        int n = (int)count;
        switch (coll) {
        case C_AR: rc = MPI_Allreduce_init(x->sbuf, x->rbuf, n, dt, ops_of(op), comm, MPI_INFO_NULL, &x->req); break;
        case C_RSB: rc = MPI_Reduce_scatter_block_init(x->sbuf, x->rbuf, n, dt, ops_of(op), comm, MPI_INFO_NULL, &x->req); break;
        default: rc = MPI_Allgather_init(x->sbuf, n, dt, x->rbuf, n, dt, comm, MPI_INFO_NULL, &x->req); break;
        }
    }
    if (rc != MPI_SUCCESS) {
        char eb[MPI_MAX_ERROR_STRING + 64];
        TST_FAIL("%s: init: %s", x->msg, tst_err_string(rc, eb));
    }
    if (x->req == MPI_REQUEST_NULL) TST_FAIL("%s: init gave MPI_REQUEST_NULL", x->msg);
}

/* fresh inputs and a new poison in the bound buffers, before a start */
static void preq_fill(preq_t *x)
{
    int k = x->slot;
    size_t esz = (size_t)x->t->size, i;
    char *in;

    x->cs = ++g_seed;
    x->pz = (unsigned char)(0xA0 | (mix(x->cs) & 0x1f));
    memset(h_r[k], x->pz, x->rspan);
    memset(h_s[k], x->pz ^ 0x5a, x->sspan);
    in = x->inplace ? h_r[k] + x->roff + (x->coll == C_AG ? (size_t)x->rank * x->count * esz : 0) : h_s[k] + x->soff;
    for (i = 0; i < x->in_n; i++) put(x->t, in, i, val(x->t, x->cs, x->rank, i));
    if (x->host) {
        memcpy(hb_r[k], h_r[k], x->rspan);
        if (!x->inplace) memcpy(hb_s[k], h_s[k], x->sspan);
    } else {
        TST_CUDA(cudaMemcpy(d_r[k], h_r[k], x->rspan, cudaMemcpyHostToDevice));
        if (!x->inplace) TST_CUDA(cudaMemcpy(d_s[k], h_s[k], x->sspan, cudaMemcpyHostToDevice));
    }
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

/* the results of the last start; 1 if right. copied: the receive span is already in h_c (late
 * section: the buffers were poisoned since, so the send buffer is not compared) */
static int preq_check_copied(preq_t *x, const char *when, int copied);
static int preq_check(preq_t *x, const char *when)
{
    return preq_check_copied(x, when, 0);
}
static int preq_check_copied(preq_t *x, const char *when, int copied)
{
    int k = x->slot, ok = 1;
    size_t esz = (size_t)x->t->size, in_b = x->in_n * esz, out_b = x->out_n * esz, i, bad = 0, tail;
    const char *out;
    char msg[400];

    snprintf(msg, sizeof msg, "%s (%s)", x->msg, when);
    if (copied) {
        /* h_c[k] holds the receive span */
    } else if (x->host) {
        memcpy(h_c[k], hb_r[k], x->rspan);
    } else {
        TST_CUDA(cudaMemcpy(h_c[k], d_r[k], x->rspan, cudaMemcpyDeviceToHost));
    }
    out = h_c[k] + x->roff;
    for (i = 0; i < x->out_n; i++) {
        double e, tol, got = get(x->t, out, i);
        if (x->coll == C_AG) {
            e = val(x->t, x->cs, (int)(i / x->count), i % x->count);
            tol = 0;
        } else {
            e = ref(x->t, x->cs, x->op, x->p, x->coll == C_RSB ? (size_t)x->rank * x->count + i : i, &tol);
        }
        if (!(fabs(got - e) <= tol)) {
            if (!bad) TST_FAIL("%s: element %zu = %.9g, expected %.9g (tol %.3g)", msg, i, got, e, tol);
            bad++;
        }
    }
    if (bad > 1) TST_FAIL("%s: %zu of %zu elements wrong", msg, bad, x->out_n);
    ok &= bad == 0;
    ok &= check_poison(msg, "byte before the output", (unsigned char *)h_c[k], x->roff, x->pz);
    tail = x->roff + (x->inplace && in_b > out_b ? in_b : out_b);
    ok &= check_poison(msg, "byte after the output", (unsigned char *)h_c[k] + tail, x->rspan - tail, x->pz);
    if (!x->inplace && !copied) {
        if (x->host) memcpy(h_c[k], hb_s[k], x->sspan);
        else TST_CUDA(cudaMemcpy(h_c[k], d_s[k], x->sspan, cudaMemcpyDeviceToHost));
        if (memcmp(h_c[k], h_s[k], x->sspan)) {
            TST_FAIL("%s: the send buffer (or the bytes around it) changed", msg);
            ok = 0;
        }
    }
    g_cases++;
    return ok;
}

static void preq_free(preq_t *x)
{
    int rc;
    if (getenv("GPU_PERSIST_TRACE")) fprintf(stderr, "[gpu_persist r%d] MPI_Request_free: %s\n", g_rank, x->msg);
    rc = MPI_Request_free(&x->req);
    if (rc != MPI_SUCCESS) TST_FAIL("%s: MPI_Request_free: rc %d", x->msg, rc);
    if (x->req != MPI_REQUEST_NULL) TST_FAIL("%s: MPI_Request_free left the handle set", x->msg);
}

/* ---------------------------------------------------------------- start and completion */

enum { M_WAIT, M_WAIT_REV, M_WAITALL, M_TEST, M_TESTALL, M_WAITANY, M_WAITSOME, M_TESTANY, M_TESTSOME, M_N };
static const char *const method_names[M_N] = { "MPI_Wait", "MPI_Wait (reverse order)", "MPI_Waitall", "MPI_Test loop",
                                               "MPI_Testall loop", "MPI_Waitany", "MPI_Waitsome", "MPI_Testany loop",
                                               "MPI_Testsome loop" };
static long g_method_uses[M_N];

static void loop_limit(double t0, const char *what)
{
    if (now() - t0 > 60.0) {
        fprintf(stderr, "[gpu_persist r%d] FAIL: %s did not complete within 60 s: aborting\n", g_rank, what);
        fflush(stderr);
        MPI_Abort(MPI_COMM_WORLD, 5);
    }
}

/* complete the active persistent requests reqs[0..n): they must stay allocated (inactive). The
 * Waitany / Testany / Waitsome / Testsome loops pass a copy in which each request, once reported
 * complete, is MPI_REQUEST_NULL: MPI-4 says such calls skip inactive requests and give
 * MPI_UNDEFINED when none is active, but MPICH 4.0.2 reports a completed persistent collective
 * request again (seen with plain MPICH, host buffers, no tlmpi), so the test does not rely on it. */
static void complete(MPI_Request *reqs_in, int n, int m, const char *label)
{
    int i, rc, flag, idx, outc, ind[64];
    double t0 = now();
    char seen[64] = { 0 };
    MPI_Request copy[64], *reqs = reqs_in;

    if (m == M_WAITANY || m == M_TESTANY || m == M_WAITSOME || m == M_TESTSOME) {
        memcpy(copy, reqs_in, (size_t)n * sizeof *copy);
        reqs = copy;
    }

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
    case M_WAITALL:
        rc = MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE);
        if (rc != MPI_SUCCESS) TST_FAIL("%s: MPI_Waitall: rc %d", label, rc);
        break;
    case M_TEST: {
        int done = 0;
        while (done < n) {
            done = 0;
            for (i = 0; i < n; i++) {
                flag = 0;
                rc = MPI_Test(&reqs[i], &flag, MPI_STATUS_IGNORE);
                if (rc != MPI_SUCCESS) TST_FAIL("%s: MPI_Test: rc %d", label, rc);
                done += flag != 0; /* a completed (inactive) request tests true again */
            }
            loop_limit(t0, "an MPI_Test loop");
        }
        break;
    }
    case M_TESTALL: {
        MPI_Status st[64];
        flag = 0;
        while (!flag) {
            rc = MPI_Testall(n, reqs, &flag, st);
            if (rc == MPI_ERR_IN_STATUS) {
                /* MPICH 4.0.2 on its own persistent collective requests (plain MPICH too, no tlmpi:
                 * reproduced on the CPU box): MPI_ERR_IN_STATUS with every MPI_ERROR MPI_SUCCESS when
                 * they complete, and with MPI_ERR_PENDING in the statuses of those not yet complete
                 * (flag 0) */
                int bad = 0;
                for (i = 0; i < n; i++) bad |= st[i].MPI_ERROR != MPI_SUCCESS && (flag || st[i].MPI_ERROR != MPI_ERR_PENDING);
                if (!bad) rc = MPI_SUCCESS;
            }
            if (rc != MPI_SUCCESS) { TST_FAIL("%s: MPI_Testall: rc %d", label, rc); break; }
            loop_limit(t0, "an MPI_Testall loop");
        }
        break;
    }
    case M_WAITANY:
    case M_TESTANY:
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
            if (!flag) { loop_limit(t0, method_names[m]); continue; }
            if (idx == MPI_UNDEFINED) break; /* every request inactive */
            if (idx < 0 || idx >= n || seen[idx]) {
                TST_FAIL("%s: %s returned index %d (n %d)%s", label, method_names[m], idx, n,
                         idx >= 0 && idx < n ? " twice (its handle was MPI_REQUEST_NULL)" : "");
                break;
            }
            seen[idx] = 1;
            reqs[idx] = MPI_REQUEST_NULL; /* the copy's: reported complete */
            loop_limit(t0, method_names[m]);
        }
        break;
    default:
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
                    TST_FAIL("%s: %s: index %d bad or repeated", label, method_names[m], ind[i]);
                    outc = -1;
                    break;
                }
                seen[ind[i]] = 1;
                reqs[ind[i]] = MPI_REQUEST_NULL; /* the copy's */
            }
            if (outc < 0) break;
            loop_limit(t0, method_names[m]);
        }
        break;
    }
    for (i = 0; i < n; i++) {
        if (reqs_in[i] == MPI_REQUEST_NULL) TST_FAIL("%s: after %s persistent request %d is MPI_REQUEST_NULL", label, method_names[m], i);
        if (reqs != reqs_in && !seen[i]) TST_FAIL("%s: %s never reported request %d complete", label, method_names[m], i);
    }
}

/* start xs[0..n) (MPI_Startall or one by one), complete by method m, check; counters per call */
static void round_of(preq_t **xs, int n, int m, int startall, const char *label)
{
    MPI_Request reqs[NSLOT];
    int i, rc, c, k, det = 1;
    unsigned long long exp_path[C_N][MAXP], exp_n[C_N], lax[C_N];
    snap_t b0, b1;
    char lab[400];

    memset(exp_path, 0, sizeof exp_path);
    memset(exp_n, 0, sizeof exp_n);
    memset(lax, 0, sizeof lax);
    for (i = 0; i < n; i++) {
        preq_fill(xs[i]);
        reqs[i] = xs[i]->req;
        if (xs[i]->expect == -2) { /* host buffers or 0 elements: 0 or 1 count per start, passthrough */
            lax[xs[i]->coll]++;
            continue;
        }
        exp_n[xs[i]->coll]++;
        if (xs[i]->expect < 0) det = 0;
        else exp_path[xs[i]->coll][xs[i]->expect]++;
    }
    snprintf(lab, sizeof lab, "%s (%d requests%s%s, %s, %s)", label, n, n == 1 ? ": " : "", n == 1 ? xs[0]->msg : "",
             startall ? "MPI_Startall" : "MPI_Start", method_names[m]);
    take_snap(&b0);
    if (startall) {
        rc = MPI_Startall(n, reqs);
        if (rc != MPI_SUCCESS) {
            char eb[MPI_MAX_ERROR_STRING + 64];
            TST_FAIL("%s: MPI_Startall: %s", lab, tst_err_string(rc, eb));
        }
    } else {
        for (i = 0; i < n; i++) {
            rc = MPI_Start(&reqs[i]);
            if (rc != MPI_SUCCESS) TST_FAIL("%s: MPI_Start of %s: rc %d", lab, xs[i]->msg, rc);
        }
    }
    complete(reqs, n, m, lab);
    take_snap(&b1);
    g_starts += n;
    for (i = 0; i < n; i++) {
        if (reqs[i] != xs[i]->req) TST_FAIL("%s: the handle of %s changed across start and completion", lab, xs[i]->msg);
        preq_check(xs[i], lab);
    }
    for (c = 0; c < C_N; c++) {
        unsigned long long all = 0;
        for (k = 0; k < g_npaths; k++) {
            unsigned long long d = b1.path[c][k] - b0.path[c][k];
            all += d;
            if (det && (k == P_PASS ? d < exp_path[c][k] || d > exp_path[c][k] + lax[c] : d != exp_path[c][k]))
                TST_FAIL("%s: %s path %s: %llu starts counted, expected %llu%s", lab, coll_names[c], pname(k), d,
                         exp_path[c][k], k == P_PASS && lax[c] ? " (+ up to the host / empty requests)" : "");
        }
        if (all < exp_n[c] || all > exp_n[c] + lax[c])
            TST_FAIL("%s: %s: %llu starts counted over all paths, expected %llu (+ %llu host / empty)", lab, coll_names[c],
                     all, exp_n[c], lax[c]);
        if (g_form_stats && !g_noform &&
            (b1.form[c][TLMPI_FORM_PERSISTENT] - b0.form[c][TLMPI_FORM_PERSISTENT] < exp_n[c] ||
             b1.form[c][TLMPI_FORM_PERSISTENT] - b0.form[c][TLMPI_FORM_PERSISTENT] > exp_n[c] + lax[c] ||
             b1.form[c][TLMPI_FORM_BLOCKING] != b0.form[c][TLMPI_FORM_BLOCKING] ||
             b1.form[c][TLMPI_FORM_NONBLOCKING] != b0.form[c][TLMPI_FORM_NONBLOCKING]))
            TST_FAIL("%s: %s: form counters moved by %llu persistent, %llu blocking, %llu non-blocking; expected %llu (+ host / empty), 0, 0",
                     lab, coll_names[c], b1.form[c][TLMPI_FORM_PERSISTENT] - b0.form[c][TLMPI_FORM_PERSISTENT],
                     b1.form[c][TLMPI_FORM_BLOCKING] - b0.form[c][TLMPI_FORM_BLOCKING],
                     b1.form[c][TLMPI_FORM_NONBLOCKING] - b0.form[c][TLMPI_FORM_NONBLOCKING], exp_n[c]);
    }
}

/* ---------------------------------------------------------------- sections */

static void loop_section(int iters)
{
    preq_t x[9], *xs[9];
    int it, i;
    double t0 = now();
    long c0 = g_cases;

    preq_init(&x[0], MPI_COMM_WORLD, C_AR, "f32", OP_SUM, 0, 1000, 0, 0, 0);
    preq_init(&x[1], MPI_COMM_WORLD, C_AR, "bf16", OP_SUM, 1, 70000, 1, 0, 0);
    preq_init(&x[2], MPI_COMM_WORLD, C_AG, "i32", 0, 0, 333, 2, 0, 0);
    preq_init(&x[3], MPI_COMM_WORLD, C_AG, "u8", 0, 1, 30000, 3, 0, 0);
    preq_init(&x[4], MPI_COMM_WORLD, C_RSB, "f64", OP_MAX, 0, 77, 4, 0, 0);
    preq_init(&x[5], MPI_COMM_WORLD, C_RSB, "f16", OP_SUM, 1, 4097, 5, 0, 0);
    /* 1 MiB, 16-byte aligned: the node tier's zero-copy kernels (TLMPI_NODE_DIRECT_MIN's default) */
    g_aligned = 1;
    preq_init(&x[6], MPI_COMM_WORLD, C_AR, "f32", OP_SUM, 0, 262144, 6, 0, 0);
    preq_init(&x[7], MPI_COMM_WORLD, C_AG, "u8", 0, 1, 1048576, 7, 0, 0);
    preq_init(&x[8], MPI_COMM_WORLD, C_RSB, "f32", OP_SUM, 0, 262144, 8, 0, 0);
    g_aligned = 0;
    for (i = 0; i < 9; i++) xs[i] = &x[i];
    for (i = 0; i < 9; i++) {
        if (x[i].req == MPI_REQUEST_NULL) {
            TST_FAIL("loop: not run (a request could not be made)");
            iters = 0;
        }
    }
    for (it = 0; it < iters; it++) {
        char lab[64];
        int m = (int)urand(M_N);
        snprintf(lab, sizeof lab, "loop round %d", it);
        /* the 1 MiB requests every 10th round (their host check is what the loop's time goes to) */
        round_of(xs, it % 10 == 0 ? 9 : 6, m, it % 2 == 0, lab);
    }
    for (i = 0; i < 9; i++) if (x[i].req != MPI_REQUEST_NULL) preq_free(&x[i]);
    if (g_rank == 0)
        printf("loop: %d rounds of 6 persistent requests, 9 every 10th (all three collectives), %ld starts checked, %.2f s\n", iters,
               g_cases - c0, now() - t0);
    fflush(stdout);
}

/* --late N: the zero-copy requests with a late peer. Run with TLMPI_FAULT=node_late:R (world rank
 * R's node kernels pause 2 ms after every barrier). The three 1 MiB 16-byte-aligned requests of the
 * loop, N rounds each: start, wait, copy the result to the host, then at once poison this rank's send
 * and receive buffers on the device, a barrier, and only then the check. A rank whose call completed
 * while the late rank still read its buffers (no exit barrier) has poisoned what the late rank reads:
 * the late rank's result is wrong. Each start's wait is timed: on the ranks that are not late it must
 * take the pause (>= 1.5 ms), else the fault did not make a rank late and the section proves nothing. */
static void late_section(int iters)
{
    preq_t x[3];
    int it, i, late = -1;
    double tw[3] = { 0, 0, 0 };
    const char *f = getenv("TLMPI_FAULT"), *c;

    if (f && (c = strstr(f, "node_late:")) != NULL) late = atoi(c + 10);
    if (late < 0 || late >= g_size) {
        TST_FAIL("late: TLMPI_FAULT must name node_late:R with R a world rank (it is \"%s\")", f ? f : "");
        return;
    }
    g_aligned = 1;
    preq_init(&x[0], MPI_COMM_WORLD, C_AR, "f32", OP_SUM, 0, 262144, 0, 0, 0);
    preq_init(&x[1], MPI_COMM_WORLD, C_AG, "u8", 0, 1, 1048576, 1, 0, 0);
    preq_init(&x[2], MPI_COMM_WORLD, C_RSB, "f32", OP_SUM, 0, 262144, 2, 0, 0);
    g_aligned = 0;
    for (it = 0; it < iters; it++) {
        for (i = 0; i < 3; i++) {
            char lab[64];
            double t0;
            int rc;

            if (x[i].req == MPI_REQUEST_NULL) continue;
            snprintf(lab, sizeof lab, "late round %d", it);
            preq_fill(&x[i]);
            PMPI_Barrier(MPI_COMM_WORLD);
            rc = MPI_Start(&x[i].req);
            if (rc != MPI_SUCCESS) TST_FAIL("%s: MPI_Start of %s: rc %d", lab, x[i].msg, rc);
            t0 = now();
            rc = MPI_Wait(&x[i].req, MPI_STATUS_IGNORE);
            tw[i] += now() - t0;
            if (rc != MPI_SUCCESS) TST_FAIL("%s: MPI_Wait of %s: rc %d", lab, x[i].msg, rc);
            TST_CUDA(cudaMemcpy(h_c[x[i].slot], d_r[x[i].slot], x[i].rspan, cudaMemcpyDeviceToHost));
            TST_CUDA(cudaMemset(d_r[x[i].slot], 0xEE, x[i].rspan));
            if (!x[i].inplace) TST_CUDA(cudaMemset(d_s[x[i].slot], 0xEE, x[i].sspan));
            TST_CUDA(cudaDeviceSynchronize());
            PMPI_Barrier(MPI_COMM_WORLD);
            preq_check_copied(&x[i], lab, 1);
            g_starts++;
        }
    }
    for (i = 0; i < 3; i++) {
        double w = iters ? tw[i] / iters : 0;

        if (g_rank != late && iters && w < 1.5e-3)
            TST_FAIL("late: %s: a wait took %.3f ms on average on rank %d (not late): the late rank %d did not pause "
                     "(TLMPI_FAULT node_late), so this section proves nothing", x[i].msg, w * 1e3, g_rank, late);
        if (g_rank == 0) printf("late: %s: %d starts, wait %.3f ms on average on rank 0 (late rank %d)\n", x[i].msg,
                                iters, w * 1e3, late);
        if (x[i].req != MPI_REQUEST_NULL) preq_free(&x[i]);
    }
    fflush(stdout);
}

static const char *const ag_type_names[] = { "u8", "bf16", "f32", "f64" };
static const char *const quick_type_names[] = { "f32", "bf16", "i16", "u8", "f64", "u16" };

static void one_request(int coll, const char *tn, int op, int ip, size_t count, int starts)
{
    preq_t x, *xs[1] = { &x };
    int s;
    preq_init(&x, MPI_COMM_WORLD, coll, tn, op, ip, count, 0, 0, 0);
    if (x.req == MPI_REQUEST_NULL) return; /* said by preq_init */
    for (s = 0; s < starts; s++) round_of(xs, 1, (int)urand(M_N), (int)urand(2), "matrix");
    preq_free(&x);
}

static void matrix_section(void)
{
    static const size_t cnt[4] = { 0, 1, 7, 4097 };
    int c, a, op, ip, s, nt = g_quick ? (int)(sizeof quick_type_names / sizeof quick_type_names[0]) : g_ntypes;
    double t0 = now();
    long c0 = g_cases;

    for (c = 0; c < C_N; c++) {
        if (g_overflow) {
            const char *tn[2] = { c == C_AG ? "bf16" : "f32", c == C_AG ? "f64" : "bf16" };
            for (a = 0; a < 2; a++)
                for (ip = 0; ip < 2; ip++) {
                    size_t esz = (size_t)type_by_name(tn[a])->size;
                    one_request(c, tn[a], a ? OP_MAX : OP_SUM, ip, ((size_t)3 << 20) / esz + 4, 2);
                    one_request(c, tn[a], a ? OP_SUM : OP_MAX, ip, ((size_t)5 << 20) / esz - 3, 2);
                }
            continue;
        }
        if (c == C_AG) {
            for (a = 0; a < 4; a++)
                for (ip = 0; ip < 2; ip++) {
                    for (s = 0; s < 4; s++) {
#ifdef MPICH_VERSION
                        /* MPICH 4.0.2 asserts in MPI_Request_free after a persistent allgather of 0
                         * elements of a derived type (seen with plain MPICH, no tlmpi): tlmpi's bf16 */
                        if (!cnt[s] && type_by_name(ag_type_names[a])->kind == K_BF16) continue;
#endif
                        one_request(c, ag_type_names[a], 0, ip, cnt[s], 3);
                    }
                    if (!g_quick) one_request(c, ag_type_names[a], 0, ip, ((size_t)1 << 20) / (size_t)type_by_name(ag_type_names[a])->size, 2);
                }
            continue;
        }
        for (a = 0; a < nt; a++) {
            const char *tn = g_quick ? quick_type_names[a] : g_types[a].name;
            for (op = 0; op < OP_N; op++)
                for (ip = 0; ip < 2; ip++)
                    for (s = 0; s < 4; s++) {
                        if (g_quick && s == 0 && op) continue;
                        one_request(c, tn, op, ip, cnt[s], g_quick ? 2 : 3);
                    }
            if (!g_quick)
                for (ip = 0; ip < 2; ip++) one_request(c, tn, (a + ip) % OP_N, ip, ((size_t)1 << 20) / (size_t)type_by_name(tn)->size, 2);
        }
    }
    if (g_rank == 0) printf("matrix: %ld starts checked, %.2f s\n", g_cases - c0, now() - t0);
    fflush(stdout);
}

static void mixed_section(MPI_Comm dup, MPI_Comm half)
{
    preq_t x[8], *xs[8];
    int i, r, rc;
    double t0 = now();
    long c0 = g_cases;
    MPI_Request q;

    /* tlmpi's requests and the MPI's own (host buffers) in one array */
    preq_init(&x[0], MPI_COMM_WORLD, C_AR, "f32", OP_SUM, 0, 4097, 0, 0, 0);
    preq_init(&x[1], MPI_COMM_WORLD, C_AR, "f64", OP_MAX, 0, 100, 1, 1, 0);   /* host */
    preq_init(&x[2], MPI_COMM_WORLD, C_AG, "u8", 0, 1, 1000, 2, 0, 0);
    preq_init(&x[3], MPI_COMM_WORLD, C_RSB, "i32", OP_SUM, 0, 33, 3, 1, 0);   /* host */
    preq_init(&x[4], dup, C_RSB, "bf16", OP_SUM, 0, 4097, 4, 0, 0);           /* another comm */
    preq_init(&x[5], half, C_AR, "i16", OP_MIN, 1, 777, 5, 0, 0);             /* halves at once */
    preq_init(&x[6], MPI_COMM_WORLD, C_AR, "f32", OP_SUM, 0, 0, 6, 0, 0);     /* 0 elements */
    for (i = 0; i < 7; i++) xs[i] = &x[i];
    for (i = 0; i < 7; i++) {
        if (x[i].req == MPI_REQUEST_NULL) {
            TST_FAIL("mixed arrays: not run (a request could not be made)");
            for (i = 0; i < 7; i++) if (x[i].req != MPI_REQUEST_NULL) preq_free(&x[i]);
            return;
        }
    }
    /* MPI_Wait / MPI_Test on requests never started return at once: tlmpi's requests only (MPICH
     * 4.0.2's own persistent collective requests test false and wait for ever before their first
     * start: seen with plain MPICH, host buffers, no tlmpi) */
    for (i = 0; i < 7; i++) {
        int flag = 0;
        if (x[i].expect == -2) continue; /* the MPI's own */
        rc = MPI_Wait(&x[i].req, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS || x[i].req == MPI_REQUEST_NULL) TST_FAIL("%s: MPI_Wait before any start: rc %d, handle %s", x[i].msg, rc, x[i].req == MPI_REQUEST_NULL ? "null" : "kept");
        rc = MPI_Test(&x[i].req, &flag, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS || !flag) TST_FAIL("%s: MPI_Test before any start: rc %d flag %d", x[i].msg, rc, flag);
    }
    for (r = 0; r < (g_quick ? 10 : 40); r++) round_of(xs, 7, r % 2 ? M_TESTALL : M_WAITALL, 1, "mixed array");
    /* completed requests: MPI_Wait returns at once, the results stay */
    for (i = 0; i < 7; i++) {
        rc = MPI_Wait(&x[i].req, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) TST_FAIL("%s: MPI_Wait on a completed request: rc %d", x[i].msg, rc);
        preq_check(&x[i], "after a second MPI_Wait");
    }
    /* a persistent request, a non-blocking call and a blocking call in flight on one comm */
    for (r = 0; r < (g_quick ? 5 : 20); r++) {
        preq_t *p0 = &x[0];
        float *hb = (float *)hb_s[7];
        int n = 2049, j, bad = 0;
        preq_fill(p0);
        TST_CUDA(cudaMemset(d_s[7], 0, (size_t)n * 4));
        for (j = 0; j < n; j++) hb[j] = (float)(g_rank + j % 5);
        TST_CUDA(cudaMemcpy(d_s[7], hb, (size_t)n * 4, cudaMemcpyHostToDevice));
        TST_CUDA(cudaMemset(d_r[7], 0x7f, (size_t)n * 4 * 2));
        rc = MPI_Start(&p0->req);
        if (rc != MPI_SUCCESS) TST_FAIL("interleaved: MPI_Start: rc %d", rc);
        rc = MPI_Iallreduce(d_s[7], d_r[7], n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &q);
        if (rc != MPI_SUCCESS) TST_FAIL("interleaved: MPI_Iallreduce: rc %d", rc);
        rc = MPI_Allreduce(d_s[7], d_r[7] + (size_t)n * 4, n, MPI_FLOAT, MPI_MAX, MPI_COMM_WORLD);
        if (rc != MPI_SUCCESS) TST_FAIL("interleaved: MPI_Allreduce: rc %d", rc);
        if (r % 2) {
            MPI_Request two[2] = { q, p0->req };
            rc = MPI_Waitall(2, two, MPI_STATUSES_IGNORE);
            q = two[0];
            if (two[1] != p0->req) TST_FAIL("interleaved: the persistent handle changed in MPI_Waitall");
        } else {
            rc = MPI_Wait(&p0->req, MPI_STATUS_IGNORE);
            rc |= MPI_Wait(&q, MPI_STATUS_IGNORE);
        }
        if (rc != MPI_SUCCESS || q != MPI_REQUEST_NULL) TST_FAIL("interleaved: completion rc %d, request %s", rc, q == MPI_REQUEST_NULL ? "null" : "kept");
        preq_check(p0, "interleaved with MPI_Iallreduce and MPI_Allreduce");
        TST_CUDA(cudaMemcpy(hb, d_r[7], (size_t)n * 4 * 2, cudaMemcpyDeviceToHost));
        for (j = 0; j < n && !bad; j++) {
            float es = (float)(g_size * (g_size - 1) / 2 + g_size * (j % 5)), em = (float)(g_size - 1 + j % 5);
            if (hb[j] != es || hb[n + j] != em) {
                TST_FAIL("interleaved: element %d: sum %g (want %g), max %g (want %g)", j, hb[j], es, hb[n + j], em);
                bad = 1;
            }
        }
        g_cases += 2;
    }
    for (i = 0; i < 7; i++) preq_free(&x[i]);
    if (g_rank == 0) printf("mixed arrays, other communicators, interleaved forms: %ld checks, %.2f s\n", g_cases - c0, now() - t0);
    fflush(stdout);
}

static void c_section(void)
{
    preq_t x[3], *xs[3];
    int r = 0, i;
    long c0 = g_cases;

    preq_init(&x[0], MPI_COMM_WORLD, C_AR, "f32", OP_SUM, 1, 4097, 0, 0, 1);
    preq_init(&x[1], MPI_COMM_WORLD, C_AG, "f64", 0, 0, 100, 1, 0, 1);
    preq_init(&x[2], MPI_COMM_WORLD, C_RSB, "u16", OP_MAX, 0, 7, 2, 0, 1);
    for (i = 0; i < 3; i++) xs[i] = &x[i];
    for (i = 0; i < 3; i++) if (x[i].req == MPI_REQUEST_NULL) r = -1;
    for (r = r < 0 ? 10 : 0; r < 10; r++) round_of(xs, 3, (int)urand(M_N), r % 2, "_c forms");
    for (i = 0; i < 3; i++) if (x[i].req != MPI_REQUEST_NULL) preq_free(&x[i]);
    if (g_rank == 0) printf("_c forms: %ld starts checked\n", g_cases - c0);
}

int main(int argc, char **argv)
{
    int ndev = 0, a, iters = 1000, provided_v = 0, sub = 0, late_iters = -1;
    double t0 = now();
    long totals[2], fails = 0;
    MPI_Comm dup, half;

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
        else if (!strcmp(argv[a], "--iters") && a + 1 < argc) iters = atoi(argv[++a]);
        else if (!strcmp(argv[a], "--late") && a + 1 < argc) late_iters = atoi(argv[++a]);
        else {
            fprintf(stderr, "usage: gpu_persist [--iters N] [--quick] [--overflow] [--any-path] [--no-form-check] [--late N]\n");
            return 2;
        }
    }
    tst_init("gpu_persist", &argc, &argv);
    g_rank = tst_rank;
    g_size = tst_size;
    MPI_Get_version(&provided_v, &sub);
    tst_rng_sync();
    g_seed = tst_rand();
    tst_rng_seed(&g_urng, g_seed);
    TST_CUDA(cudaSetDevice(g_rank % ndev));
    find_paths();
    *(void **)&g_form_stats = dlsym(RTLD_DEFAULT, "tlmpi_get_form_stats");
    if (!g_form_stats && !g_noform) TST_FAIL("this libtlmpi has no tlmpi_get_form_stats (--no-form-check skips its checks)");
    if (P_NODE < 0 || P_PASS < 0) {
        TST_FAIL("no node / passthrough path label among tlmpi's %d paths", g_npaths);
        goto done;
    }
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
    d_bytes = (size_t)(g_size + 1) * ((g_overflow ? ((size_t)5 << 20) : ((size_t)1 << 20)) + 4096) + 4 * GUARD + 4096;
    for (a = 0; a < NSLOT; a++) {
        TST_CUDA(cudaMalloc((void **)&d_s[a], d_bytes));
        TST_CUDA(cudaMalloc((void **)&d_r[a], d_bytes));
        h_s[a] = tst_malloc(d_bytes);
        h_r[a] = tst_malloc(d_bytes);
        h_c[a] = tst_malloc(d_bytes);
        hb_s[a] = tst_malloc(d_bytes);
        hb_r[a] = tst_malloc(d_bytes);
    }
    if (g_rank == 0) {
        const char *pool = getenv("TLMPI_NODE_POOL");
        printf("gpu_persist: np=%d devices=%d MPI %d.%d quick=%d overflow=%d iters=%d TLMPI_NODE_POOL=%s MPS=%s form "
               "counters %s\n", g_size, ndev, provided_v, sub, g_quick, g_overflow, iters, pool ? pool : "(default)",
               getenv("CUDA_MPS_PIPE_DIRECTORY") ? "yes" : "no",
               g_form_stats ? (g_noform ? "present, not checked" : "checked") : "absent");
        fflush(stdout);
    }
    if (late_iters >= 0) {
        late_section(late_iters);
        goto done;
    }
    if (!g_overflow) loop_section(iters);
    matrix_section();
    if (!g_overflow) {
        MPI_Comm_dup(MPI_COMM_WORLD, &dup);
        MPI_Comm_split(MPI_COMM_WORLD, g_rank % 2, g_rank, &half);
        mixed_section(dup, half);
        c_section();
        MPI_Comm_free(&dup);
        MPI_Comm_free(&half);
    }
    if (g_rank == 0) {
        int m;
        printf("completion methods used:");
        for (m = 0; m < M_N; m++) printf(" %s %ld%s", method_names[m], g_method_uses[m], m + 1 < M_N ? "," : "\n");
        printf("starts: %ld on rank 0\n", g_starts);
    }
done:
    tst_totals(&fails, NULL);
    totals[0] = g_cases;
    PMPI_Allreduce(MPI_IN_PLACE, totals, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    totals[1] = fails;
    if (g_rank == 0) {
        unsigned long *guard = dlsym(RTLD_DEFAULT, "tlmpi_guard_checked");
        printf("guard: %s (%lu PMPI calls checked on rank 0)\n", guard ? "active" : "not loaded", guard ? *guard : 0UL);
    }
    if (g_rank == 0)
        printf("RESULT gpu_persist np=%d cases=%ld failures=%ld time=%.1fs %s\n", g_size, totals[0], totals[1],
               now() - t0, totals[1] ? "FAIL" : "PASS");
    fflush(stdout);
    for (a = 0; a < NSLOT; a++) {
        if (d_s[a]) cudaFree(d_s[a]);
        if (d_r[a]) cudaFree(d_r[a]);
        free(h_s[a]);
        free(h_r[a]);
        free(h_c[a]);
        free(hb_s[a]);
        free(hb_r[a]);
    }
    MPI_Finalize();
    return totals[1] ? 1 : 0;
}

#else /* MPI_VERSION < 4 */

int main(int argc, char **argv)
{
    int ndev = 0, v = 0, sv = 0, rank = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        (void)cudaGetLastError();
        fprintf(stderr, "SKIP: no CUDA device\n");
        return 77;
    }
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Get_version(&v, &sv);
    if (rank == 0)
        printf("gpu_persist: SKIP: built against MPI %d.%d (runs MPI %d.%d): no persistent collectives "
               "(MPI_Allreduce_init is MPI-4)\nRESULT gpu_persist SKIP\n", MPI_VERSION, MPI_SUBVERSION, v, sv);
    MPI_Finalize();
    return 77;
}

#endif
