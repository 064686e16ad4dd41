/*
 * gpu_node: GPU tests of tlmpi's node tier (its own intra-node Allgather / Reduce_scatter_block /
 * Allreduce kernels over a device transport), with every algorithm forced in turn. Run by
 * tests/gpu/node.sh (2, 3, 4 and 8 ranks on one GPU under MPS, a smaller subset without MPS, a
 * 1-rank devcomm run, a pass with a 1 MiB pool) and, under make check, skipped (77) without a GPU.
 *
 *   gpu_node [--quick] [--overflow] [--b2b N] [--expect-auto PATH] [--strict-one-rank] [--any-path]
 *
 * (--any-path accepts staging wherever the node path is expected: for a run against the CPU fakes
 * of tests/fakes, which have no kernels, to check the test's own references on any machine.)
 *
 * Modes (each set with tlmpi_config_set on every rank, between collectives):
 *   node        TLMPI_TIER=node: the tier's own choice of algorithm (TLMPI_NODE_* thresholds)
 *   ar-oneshot  TLMPI_ALLREDUCE_TIERS=node/oneshot      } with TLMPI_TIER=staging behind them,
 *   ar-twoshot  TLMPI_ALLREDUCE_TIERS=node/twoshot      } so that a table tlmpi ignored shows
 *   ag-push     TLMPI_ALLGATHER_TIERS=node/push         } up as the staging path (a failure)
 *   ag-pull     TLMPI_ALLGATHER_TIERS=node/pull         }
 *   rsb-pull    TLMPI_REDUCE_SCATTER_BLOCK_TIERS=node/pull }
 *   ll          all three tables node/ll                } (above 8 KiB, the LL limit: auto)
 *   mixed       all three tables at once with size thresholds (node/ll:4k,node/oneshot:16k,
 *               node/twoshot; node/ll:1k,node/pull; node/ll:2k,node/push:8k,node/pull): algorithms
 *               change from call to call (back to back)
 *
 * Cases (full run; --quick: fewer types/ops, no 1 MiB, 200 back-to-back calls):
 *  - matrix: mode x collective x type {f32 f64 f16 bf16 i8 u8 i16 u16 i32 u32 i64 u64, mpix_f16
 *    where the MPI has it} x op {sum prod min max} x in place {no, yes} x count {1, 7, 4097}
 *    elements, plus 0 elements and 1 MiB per type (allgather: one type per element size);
 *  - --overflow (node.sh runs it with TLMPI_NODE_POOL=1m): 3 MiB + 4 elements and 5 MiB - 3
 *    elements per message, so every algorithm runs several pool steps in one kernel;
 *  - sub-communicators: even/odd halves, thirds (rank % 3), the world in reversed rank order (node
 *    rank != world rank), a dup; the halves' and thirds' kernels run at the same time;
 *  - fallbacks under TLMPI_TIER=node: an op the kernels lack (MPI_BOR), a user op, differing
 *    allgather type signatures, host buffers, a host/device pair: right results, the right path;
 *  - back to back: N calls (default 1000) alternating collective, communicator (world and a dup),
 *    type, op, in place, size (1 element .. 20000 elements, both sides of the table thresholds)
 *    and algorithm, with no host synchronisation and no barrier between them: all inputs are
 *    placed and all outputs poisoned before the first call, everything is checked after the last;
 *    once with the mixed tables, once (full run) with TLMPI_TIER=node;
 *  - the auto tier's choice on the world (--expect-auto node|staging makes it a check: node under
 *    MPS, staging where ranks share a GPU time-sliced), and an 8-byte latency figure (info).
 * Every case: fresh inputs (a hash of seed, case, rank, index: gpu_values.h), send and receive
 * buffers at element-aligned but not 16-byte-aligned offsets that change from case to case, the
 * receive buffer and 64 bytes either side poisoned with a byte that changes per case, results
 * against an exact / f64 host reference, the bytes around the output still poisoned, the send
 * buffer unchanged, and the path taken read from tlmpi's counters (tlmpi_get_stats; the node
 * tier's label is found by name, "node"): node wherever a count is non-zero (0 elements: the
 * passthrough path); on a one-rank communicator node, self or staging (--strict-one-rank: node).
 * Prints "RESULT gpu_node np=N cases=C failures=F time=Ts PASS|FAIL" on rank 0.
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

#define GPU_TEST_NAME "gpu_node"
#define GPU_MODES_SET_HINT ": is the node tier in this build?"
#include "gpu_modes.h"

/* (the staging field of tmode_t, last, is not used here: 0) */
static const tmode_t g_modes[] = {
    { "node", "node", { "", "", "" }, B(C_AR) | B(C_RSB) | B(C_AG), 0 },
    { "ar-oneshot", "staging", { "node/oneshot", "", "" }, B(C_AR), 0 },
    { "ar-twoshot", "staging", { "node/twoshot", "", "" }, B(C_AR), 0 },
    { "ag-push", "staging", { "", "", "node/push" }, B(C_AG), 0 },
    { "ag-pull", "staging", { "", "", "node/pull" }, B(C_AG), 0 },
    { "rsb-pull", "staging", { "", "node/pull", "" }, B(C_RSB), 0 },
    { "ll", "staging", { "node/ll", "node/ll", "node/ll" }, B(C_AR) | B(C_RSB) | B(C_AG), 0 },
};
#define N_MODES ((int)(sizeof(g_modes) / sizeof(g_modes[0])))
static const tmode_t g_mixed = { "mixed", "staging",
                                 { "node/ll:4k,node/oneshot:16k,node/twoshot", "node/ll:1k,node/pull",
                                   "node/ll:2k,node/push:8k,node/pull" },
                                 B(C_AR) | B(C_RSB) | B(C_AG), 0 };
static const tmode_t g_auto = { "auto", "auto", { "", "", "" }, B(C_AR) | B(C_RSB) | B(C_AG), 0 };

/* Optional library functions, looked up at run time (so that this test builds against any
 * tlmpi.h): per-algorithm counters and the plan in words. */
typedef tlmpi_status_t (*algo_stats_fn)(tlmpi_coll_t, tlmpi_path_t, const char *, tlmpi_stat_t *);
typedef tlmpi_status_t (*describe_fn)(MPI_Comm, char *, size_t);
static algo_stats_fn g_algo_stats;
static describe_fn g_describe;

static int g_rank, g_size, g_quick, g_overflow, g_strict1, g_anypath;
static long g_cases;
static unsigned long long g_seed; /* the same on every rank of a communicator (cases run in step) */
static char *d_s, *d_r;           /* device scratch */
static char *h_s, *h_r, *h_c;     /* host: send image, receive image, read-back */
static size_t d_bytes, g_maxblock; /* scratch bytes; the largest per-rank block they hold */

#define GUARD 64 /* poisoned bytes either side of every output */

static void snap(int coll, unsigned long long *calls)
{
    int k;
    for (k = 0; k < g_npaths; k++) {
        tlmpi_stat_t s;
        calls[k] = tlmpi_get_stats(coll_ids[coll], (tlmpi_path_t)k, &s) == TLMPI_OK ? s.calls : 0;
    }
}

/* the one path whose counter moved (-1 none, -2 several) */
static int took_path(const unsigned long long *before, const unsigned long long *after)
{
    int k, took = -1;
    for (k = 0; k < g_npaths; k++) {
        if (after[k] != before[k]) took = took == -1 ? k : -2;
    }
    return took;
}

static unsigned long long algo_calls(int coll, const char *algo)
{
    tlmpi_stat_t s;
    if (!g_algo_stats || P_NODE < 0) return 0;
    return g_algo_stats(coll_ids[coll], (tlmpi_path_t)P_NODE, algo, &s) == TLMPI_OK ? s.calls : 0;
}

/* element-aligned offsets that are not 16-byte aligned in general: 0, 3, 6, 9 elements (mod 48 B) */
static size_t off_of(unsigned long long cs, int which, size_t esz)
{
    return ((((cs >> (2 * which + 3)) ^ (cs >> 11)) & 3) * 3 * esz) % 48;
}

static int call_coll(MPI_Comm comm, int coll, const void *s, void *r, size_t count, MPI_Datatype dt, MPI_Op op)
{
    switch (coll) {
    case C_AR: return MPI_Allreduce(s, r, (int)count, dt, op, comm);
    case C_RSB: return MPI_Reduce_scatter_block(s, r, (int)count, dt, op, comm);
    default: return MPI_Allgather(s, (int)count, dt, r, (int)count, dt, comm);
    }
}

/* Check out (out_n elements, this rank's result) against the reference; 1 if all right. */
static int check_out(const char *msg, int coll, const dtinfo_t *t, unsigned long long cs, int op, int rank, int p,
                     size_t count, const char *out, size_t out_n)
{
    size_t i, bad = 0;
    for (i = 0; i < out_n; i++) {
        double e, tol, got = get(t, out, i);
        if (coll == C_AG) {
            e = val(t, cs, (int)(i / count), i % count);
            tol = 0;
        } else {
            e = ref(t, cs, op, p, coll == C_RSB ? (size_t)rank * count + i : i, &tol);
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

/* allowed-path mask of an ordinary case */
static unsigned default_allow(int p, size_t count)
{
    if (count == 0) return 1u << P_PASS;
    if (p == 1 && !g_strict1) return (1u << P_NODE) | (1u << P_SELF) | (1u << P_STAGING);
    return (1u << P_NODE) | (g_anypath ? 1u << P_STAGING : 0);
}

/*
 * One case on comm, under the current mode: collective, type, op, in place, count (elements per
 * block), allow (mask of acceptable paths; 0: default_allow). sdev/rdev: device (1) or host (0).
 */
static void run_case_x(MPI_Comm comm, int coll, const dtinfo_t *t, int op, int inplace, size_t count, unsigned allow,
                       int sdev, int rdev)
{
    int rank, p, rc, took;
    unsigned long long cs = ++g_seed, before[MAXP], after[MAXP], a0, a1;
    const char *fa;
    size_t esz = (size_t)t->size, in_n, out_n, soff, roff, rspan, sspan, in_b, out_b;
    unsigned char pz = (unsigned char)(0xA0 | (mix(cs) & 0x1f));
    char msg[400];
    char *sbuf, *rbuf;

    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &p);
    sizes_of(coll, count, p, &in_n, &out_n);
    in_b = in_n * esz;
    out_b = out_n * esz;
    roff = GUARD + off_of(cs, 0, esz);
    soff = GUARD + off_of(cs, 1, esz);
    rspan = roff + (out_b > in_b ? out_b : in_b) + GUARD;
    sspan = soff + in_b + GUARD;
    if (rspan > d_bytes || sspan > d_bytes) {
        fprintf(stderr, "gpu_node: case too large (%zu / %zu bytes of %zu)\n", rspan, sspan, d_bytes);
        MPI_Abort(MPI_COMM_WORLD, 4);
    }
    snprintf(msg, sizeof msg, "%s %s %s inplace=%d count=%zu mode=%s np=%d%s%s", coll_names[coll], t->name,
             coll == C_AG ? "-" : op_names[op], inplace, count, g_cur ? g_cur->name : "?", p, sdev ? "" : " s=host",
             rdev ? "" : " r=host");
    if (!allow) allow = default_allow(p, count);
    /* receive image: poison, and the input at its place when in place */
    memset(h_r, pz, rspan);
    memset(h_s, pz ^ 0x5a, sspan);
    {
        char *in = inplace ? h_r + roff + (coll == C_AG ? (size_t)rank * count * esz : 0) : h_s + soff;
        size_t i;
        for (i = 0; i < in_n; i++) put(t, in, i, val(t, cs, rank, i));
    }
    if (rdev) {
        TST_CUDA(cudaMemcpy(d_r, h_r, rspan, cudaMemcpyHostToDevice));
        rbuf = d_r + roff;
    } else {
        memcpy(h_c, h_r, rspan);
        rbuf = h_c + roff;
    }
    if (inplace) {
        sbuf = MPI_IN_PLACE;
    } else if (sdev) {
        TST_CUDA(cudaMemcpy(d_s, h_s, sspan, cudaMemcpyHostToDevice));
        sbuf = d_s + soff;
    } else {
        sbuf = h_s + soff; /* host send buffer: h_s itself (checked unchanged below) */
    }
    fa = forced_algo(g_cur, coll);
    if (fa && !strcmp(fa, "ll") && count * esz > 8192) fa = NULL; /* above the LL limit: auto */
    a0 = fa ? algo_calls(coll, fa) : 0;
    snap(coll, before);
    rc = call_coll(comm, coll, sbuf, rbuf, count, t->dt, ops_of(op));
    snap(coll, after);
    a1 = fa ? algo_calls(coll, fa) : 0;
    g_cases++;
    if (rc != MPI_SUCCESS) {
        TST_FAIL("%s: rc %d", msg, rc);
        return;
    }
    took = took_path(before, after);
    if (took < 0 || !(allow & (1u << took))) {
        char want[128] = "";
        int k;
        for (k = 0; k < g_npaths; k++) {
            if (allow & (1u << k)) {
                snprintf(want + strlen(want), sizeof want - strlen(want), "%s%s", want[0] ? "|" : "", pname(k));
            }
        }
        TST_FAIL("%s: took path %s, expected %s", msg, pname(took), want);
    } else if (fa && g_algo_stats && took == P_NODE && a1 - a0 != 1) {
        TST_FAIL("%s: the node path's %s counter moved by %lld, expected 1", msg, fa, (long long)(a1 - a0));
    }
    if (rdev) TST_CUDA(cudaMemcpy(h_c, d_r, rspan, cudaMemcpyDeviceToHost));
    check_out(msg, coll, t, cs, op, rank, p, count, h_c + roff, out_n);
    check_poison(msg, "byte before the output", (unsigned char *)h_c, roff, pz);
    {
        /* in place, reduce_scatter_block leaves the input beyond the own block undefined */
        size_t tail = roff + (inplace && in_b > out_b ? in_b : out_b);
        check_poison(msg, "byte after the output", (unsigned char *)h_c + tail, rspan - tail, pz);
    }
    if (!inplace) {
        const char *sb = h_s;
        if (sdev) {
            TST_CUDA(cudaMemcpy(h_c, d_s, sspan, cudaMemcpyDeviceToHost));
            sb = h_c;
        }
        /* regenerate the send image to compare (h_s itself may be the host send buffer) */
        memset(h_r, pz ^ 0x5a, sspan);
        {
            size_t i;
            for (i = 0; i < in_n; i++) put(t, h_r + soff, i, val(t, cs, rank, i));
        }
        if (memcmp(sb, h_r, sspan)) TST_FAIL("%s: the send buffer (or the bytes around it) changed", msg);
    }
}

static void run_case(MPI_Comm comm, int coll, const dtinfo_t *t, int op, int inplace, size_t count)
{
    run_case_x(comm, coll, t, op, inplace, count, 0, 1, 1);
}

static const char *const ag_type_names[] = { "u8", "bf16", "f32", "f64" };
static const char *const quick_type_names[] = { "f32", "bf16", "i16", "u8", "f64", "u16" };

/* the matrix of one mode on comm */
static void matrix(MPI_Comm comm, const tmode_t *m)
{
    static const size_t small[3] = { 1, 7, 4097 };
    int c, a, op, ip, s;
    double t0 = now();
    long c0 = g_cases;

    if (!set_mode(m)) return;
    for (c = 0; c < C_N; c++) {
        if (!(m->colls & B(c))) continue;
        if (g_overflow) {
            /* several pool steps per call (TLMPI_NODE_POOL=1m): about 3 and 5 MiB per message */
            static const char *const ov[2] = { "f32", "bf16" };
            static const char *const ovg[2] = { "bf16", "f64" };
            for (a = 0; a < 2; a++) {
                const dtinfo_t *t = type_by_name(c == C_AG ? ovg[a] : ov[a]);
                for (ip = 0; ip < 2; ip++) {
                    run_case(comm, c, t, a ? OP_MAX : OP_SUM, ip, ((size_t)3 << 20) / (size_t)t->size + 4);
                    run_case(comm, c, t, a ? OP_SUM : OP_MAX, ip, ((size_t)5 << 20) / (size_t)t->size - 3);
                }
            }
            continue;
        }
        if (c == C_AG) {
            for (a = 0; a < 4; a++) {
                const dtinfo_t *t = type_by_name(ag_type_names[a]);
                for (ip = 0; ip < 2; ip++) {
                    run_case(comm, c, t, 0, ip, 0);
                    for (s = 0; s < 3; s++) run_case(comm, c, t, 0, ip, small[s]);
                    if (!g_quick) run_case(comm, c, t, 0, ip, ((size_t)1 << 20) / (size_t)t->size);
                }
            }
            continue;
        }
        if (g_quick) {
            for (a = 0; a < (int)(sizeof quick_type_names / sizeof quick_type_names[0]); a++) {
                const dtinfo_t *t = type_by_name(quick_type_names[a]);
                for (ip = 0; ip < 2; ip++) {
                    run_case(comm, c, t, OP_SUM, ip, 0);
                    for (s = 0; s < 3; s++) {
                        run_case(comm, c, t, OP_SUM, ip, small[s]);
                        run_case(comm, c, t, OP_MAX, ip, small[s]);
                        if (a < 2 || a == 3) run_case(comm, c, t, (ip ? OP_MIN : OP_PROD), ip, small[s]);
                    }
                }
            }
            continue;
        }
        for (a = 0; a < g_ntypes; a++) {
            const dtinfo_t *t = &g_types[a];
            for (op = 0; op < OP_N; op++)
                for (ip = 0; ip < 2; ip++)
                    for (s = 0; s < 3; s++) run_case(comm, c, t, op, ip, small[s]);
            for (ip = 0; ip < 2; ip++) {
                run_case(comm, c, t, (a + ip) % OP_N, ip, 0);
                run_case(comm, c, t, (a + 2 * ip) % OP_N, ip, ((size_t)1 << 20) / (size_t)t->size);
            }
        }
    }
    if (g_rank == 0) printf("mode %-10s: %ld cases, %.2f s\n", m->name, g_cases - c0, now() - t0);
}

/* a few cases per mode on a sub-communicator */
static void sub_cases(MPI_Comm comm)
{
    int mi;
    for (mi = 0; mi < N_MODES; mi++) {
        const tmode_t *m = &g_modes[mi];
        if (!set_mode(m)) continue;
        if (m->colls & B(C_AR)) {
            run_case(comm, C_AR, type_by_name("f32"), OP_SUM, 0, 4097);
            run_case(comm, C_AR, type_by_name("i16"), OP_MAX, 1, 7);
            run_case(comm, C_AR, type_by_name("bf16"), OP_SUM, 0, 1);
            if (!g_quick) run_case(comm, C_AR, type_by_name("f64"), OP_MIN, 1, 70000);
        }
        if (m->colls & B(C_RSB)) {
            run_case(comm, C_RSB, type_by_name("f64"), OP_SUM, 1, 1000);
            run_case(comm, C_RSB, type_by_name("u16"), OP_PROD, 0, 33);
            run_case(comm, C_RSB, type_by_name("f16"), OP_SUM, 0, 4097);
        }
        if (m->colls & B(C_AG)) {
            run_case(comm, C_AG, type_by_name("u8"), 0, 0, 4097);
            run_case(comm, C_AG, type_by_name("f32"), 0, 1, 7);
            if (!g_quick) run_case(comm, C_AG, type_by_name("f64"), 0, 0, 30000);
        }
    }
    if (!g_quick && set_mode(&g_modes[0])) {
        /* large enough for the most CTAs on every comm at once (disjoint comms' kernels share the GPU) */
        run_case(comm, C_AR, type_by_name("f32"), OP_SUM, 0, (size_t)g_size * g_maxblock / 8);
        run_case(comm, C_AG, type_by_name("bf16"), 0, 0, g_maxblock / 4);
    }
    if (set_mode(&g_mixed)) {
        run_case(comm, C_AR, type_by_name("f32"), OP_SUM, 1, 100);
        run_case(comm, C_AR, type_by_name("f32"), OP_SUM, 0, 40000);
        run_case(comm, C_RSB, type_by_name("i32"), OP_MIN, 0, 777);
        run_case(comm, C_AG, type_by_name("u8"), 0, 1, 100);
        run_case(comm, C_AG, type_by_name("u8"), 0, 0, 40000);
    }
}

/* derived types, user ops, host buffers under TLMPI_TIER=node: the right result, the right path */
static void user_sum_f64(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    double *a = in, *b = inout;
    int i;
    (void)dt;
    for (i = 0; i < *len; i++) b[i] += a[i];
}

static void fallbacks(MPI_Comm comm)
{
    int rank, p, i, n = 4097, bad = 0;
    unsigned sp = 1u << P_STAGING, any = (1u << P_NODE) | (1u << P_STAGING), pass = 1u << P_PASS;
    unsigned one = (1u << P_NODE) | (1u << P_SELF) | (1u << P_STAGING);
    uint32_t *hu;
    double *hd;
    MPI_Op uop;
    MPI_Datatype c3;
    unsigned long long b0[MAXP], b1[MAXP];

    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &p);
    if (!set_mode(&g_modes[0])) return;
    /* host/device pairs and host buffers */
    run_case_x(comm, C_AR, type_by_name("f32"), OP_SUM, 0, 4097, p == 1 ? one : sp, 0, 1);
    run_case_x(comm, C_RSB, type_by_name("f64"), OP_MAX, 0, 777, p == 1 ? one : sp, 1, 0);
    run_case_x(comm, C_AG, type_by_name("i32"), 0, 0, 333, p == 1 ? one : sp, 0, 1);
    run_case_x(comm, C_AR, type_by_name("f32"), OP_SUM, 0, 4097, pass, 0, 0);
    if (p == 1) return; /* the rest expects staging, which a one-rank comm need not take */
    /* MPI_BOR on u32 (the kernels do sum/prod/min/max only) */
    hu = malloc(n * sizeof *hu);
    for (i = 0; i < n; i++) hu[i] = 1u << ((rank + i) % 32);
    TST_CUDA(cudaMemcpy(d_s, hu, n * sizeof *hu, cudaMemcpyHostToDevice));
    TST_CUDA(cudaMemset(d_r, 0xA5, n * sizeof *hu));
    snap(C_AR, b0);
    if (MPI_Allreduce(d_s, d_r, n, MPI_UINT32_T, MPI_BOR, comm) != MPI_SUCCESS) TST_FAIL("allreduce BOR: rc");
    snap(C_AR, b1);
    if (took_path(b0, b1) != P_STAGING) TST_FAIL("allreduce u32 BOR tier=node: took %s, expected staging", pname(took_path(b0, b1)));
    TST_CUDA(cudaMemcpy(hu, d_r, n * sizeof *hu, cudaMemcpyDeviceToHost));
    for (i = 0; i < n && !bad; i++) {
        uint32_t e = 0;
        int r;
        for (r = 0; r < p; r++) e |= 1u << ((r + i) % 32);
        if (hu[i] != e) { TST_FAIL("allreduce u32 BOR tier=node: element %d = %#x, expected %#x", i, hu[i], e); bad = 1; }
    }
    free(hu);
    g_cases++;
    /* a user op on doubles, in place */
    hd = malloc(n * sizeof *hd);
    for (i = 0; i < n; i++) hd[i] = rank * 0.5 + i;
    TST_CUDA(cudaMemcpy(d_r, hd, n * sizeof *hd, cudaMemcpyHostToDevice));
    MPI_Op_create(user_sum_f64, 1, &uop);
    snap(C_AR, b0);
    if (MPI_Allreduce(MPI_IN_PLACE, d_r, n, MPI_DOUBLE, uop, comm) != MPI_SUCCESS) TST_FAIL("user-op allreduce: rc");
    snap(C_AR, b1);
    MPI_Op_free(&uop);
    if (took_path(b0, b1) != P_STAGING) TST_FAIL("user-op allreduce tier=node: took %s, expected staging", pname(took_path(b0, b1)));
    TST_CUDA(cudaMemcpy(hd, d_r, n * sizeof *hd, cudaMemcpyDeviceToHost));
    for (i = 0, bad = 0; i < n && !bad; i++) {
        double e = 0;
        int r;
        for (r = 0; r < p; r++) e += r * 0.5 + i;
        if (hd[i] != e) { TST_FAIL("user-op allreduce tier=node: element %d = %g, expected %g", i, hd[i], e); bad = 1; }
    }
    free(hd);
    g_cases++;
    /* allgather: send 1 x contiguous(3 int), receive 3 x MPI_INT: node (as bytes) or staging */
    {
        int *hi = malloc(3 * (size_t)p * sizeof(int));
        MPI_Type_contiguous(3, MPI_INT, &c3);
        MPI_Type_commit(&c3);
        for (i = 0; i < 3; i++) hi[i] = rank * 100 + i;
        TST_CUDA(cudaMemcpy(d_s, hi, 3 * sizeof(int), cudaMemcpyHostToDevice));
        TST_CUDA(cudaMemset(d_r, 0xA5, 3 * (size_t)p * sizeof(int)));
        snap(C_AG, b0);
        if (MPI_Allgather(d_s, 1, c3, d_r, 3, MPI_INT, comm) != MPI_SUCCESS) TST_FAIL("allgather c3/int: rc");
        snap(C_AG, b1);
        if (took_path(b0, b1) < 0 || !(any & (1u << took_path(b0, b1))))
            TST_FAIL("allgather c3/int tier=node: took %s, expected node or staging", pname(took_path(b0, b1)));
        TST_CUDA(cudaMemcpy(hi, d_r, 3 * (size_t)p * sizeof(int), cudaMemcpyDeviceToHost));
        for (i = 0; i < 3 * p; i++) {
            if (hi[i] != (i / 3) * 100 + i % 3) { TST_FAIL("allgather c3/int tier=node: element %d = %d", i, hi[i]); break; }
        }
        MPI_Type_free(&c3);
        free(hi);
        g_cases++;
    }
}

/* ---- back to back ---- */
typedef struct {
    int coll, op, inplace, ci;
    const dtinfo_t *t;
    size_t count, soff, roff, rspan, sspan;
    unsigned long long cs;
    unsigned char pz;
} b2b_t;

static void back_to_back(MPI_Comm *comms, int ncomms, int n, const tmode_t *m)
{
    static const char *const tn[8] = { "f32", "i32", "bf16", "f64", "u8", "i16", "f16", "u64" };
    static const size_t cnt[7] = { 1, 7, 33, 4097, 20000, 300, 65 };
    b2b_t *c = calloc((size_t)n, sizeof *c);
    size_t total = 0, in_n, out_n, k;
    char *dev, *host;
    int a, rank[4], p[4], ncalls[C_N] = { 0, 0, 0 }, rc;
    unsigned long long before[C_N][MAXP], after[C_N][MAXP], alg0[7];
    double t0, t1;
    long bad_calls = 0;

    if (!set_mode(m)) {
        free(c);
        return;
    }
    for (a = 0; a < ncomms; a++) {
        MPI_Comm_rank(comms[a], &rank[a]);
        MPI_Comm_size(comms[a], &p[a]);
    }
    for (a = 0; a < n; a++) {
        b2b_t *x = &c[a];
        size_t esz;
        x->coll = a % 3;
        x->ci = (a / 3) % ncomms;
        x->t = type_by_name(tn[(a / 2) % 8]);
        x->op = (a / 5) % OP_N;
        x->inplace = (a / 7) % 2;
        x->count = cnt[(a / 4) % 7];
        x->cs = ++g_seed;
        x->pz = (unsigned char)(0xA0 | (mix(x->cs) & 0x1f));
        esz = (size_t)x->t->size;
        sizes_of(x->coll, x->count, p[x->ci], &in_n, &out_n);
        x->sspan = x->inplace ? 0 : GUARD + off_of(x->cs, 1, esz) + in_n * esz + GUARD;
        x->soff = total;
        total += (x->sspan + 255) & ~(size_t)255;
        x->rspan = GUARD + off_of(x->cs, 0, esz) + (out_n > in_n ? out_n : in_n) * esz + GUARD;
        x->roff = total;
        total += (x->rspan + 255) & ~(size_t)255;
    }
    host = malloc(total);
    TST_CUDA(cudaMalloc((void **)&dev, total));
    for (a = 0; a < n; a++) {
        b2b_t *x = &c[a];
        size_t esz = (size_t)x->t->size, i;
        char *in;
        sizes_of(x->coll, x->count, p[x->ci], &in_n, &out_n);
        memset(host + x->roff, x->pz, x->rspan);
        if (x->sspan) memset(host + x->soff, x->pz ^ 0x5a, x->sspan);
        in = x->inplace ? host + x->roff + GUARD + off_of(x->cs, 0, esz) +
                              (x->coll == C_AG ? (size_t)rank[x->ci] * x->count * esz : 0)
                        : host + x->soff + GUARD + off_of(x->cs, 1, esz);
        for (i = 0; i < in_n; i++) put(x->t, in, i, val(x->t, x->cs, rank[x->ci], i));
    }
    TST_CUDA(cudaMemcpy(dev, host, total, cudaMemcpyHostToDevice));
    for (a = 0; a < C_N; a++) snap(a, before[a]);
    alg0[0] = algo_calls(C_AR, "oneshot");
    alg0[1] = algo_calls(C_AR, "twoshot");
    alg0[2] = algo_calls(C_AG, "push");
    alg0[3] = algo_calls(C_AG, "pull");
    alg0[4] = algo_calls(C_AR, "ll");
    alg0[5] = algo_calls(C_AG, "ll");
    alg0[6] = algo_calls(C_RSB, "ll");
    PMPI_Barrier(MPI_COMM_WORLD); /* the one barrier: before the first call */
    t0 = now();
    for (a = 0; a < n; a++) {
        b2b_t *x = &c[a];
        size_t esz = (size_t)x->t->size;
        char *r = dev + x->roff + GUARD + off_of(x->cs, 0, esz);
        const void *s = x->inplace ? MPI_IN_PLACE : dev + x->soff + GUARD + off_of(x->cs, 1, esz);
        rc = call_coll(comms[x->ci], x->coll, s, r, x->count, x->t->dt, ops_of(x->op));
        if (rc != MPI_SUCCESS) TST_FAIL("back-to-back %s call %d (%s %s): rc %d", m->name, a, coll_names[x->coll], x->t->name, rc);
        ncalls[x->coll]++;
    }
    t1 = now();
    for (a = 0; a < C_N; a++) snap(a, after[a]);
    for (a = 0; a < C_N; a++) {
        unsigned long long d = P_NODE >= 0 ? after[a][P_NODE] - before[a][P_NODE] : 0;
        int allone = 1, ci;
        for (ci = 0; ci < ncomms; ci++) allone &= p[ci] == 1;
        if (d != (unsigned long long)ncalls[a] && !(allone && !g_strict1) && !g_anypath)
            TST_FAIL("back-to-back %s: %llu of %d %s calls took the node path", m->name, d, ncalls[a], coll_names[a]);
    }
    if (g_algo_stats && m == &g_mixed) {
        /* both sides of each table's threshold ran */
        unsigned long long d1 = algo_calls(C_AR, "oneshot") - alg0[0], d2 = algo_calls(C_AR, "twoshot") - alg0[1];
        unsigned long long d3 = algo_calls(C_AG, "push") - alg0[2], d4 = algo_calls(C_AG, "pull") - alg0[3];
        unsigned long long l1 = algo_calls(C_AR, "ll") - alg0[4], l2 = algo_calls(C_AG, "ll") - alg0[5];
        unsigned long long l3 = algo_calls(C_RSB, "ll") - alg0[6];
        if (g_rank == 0)
            printf("back-to-back %s: allreduce ll %llu oneshot %llu twoshot %llu, allgather ll %llu push %llu pull %llu, "
                   "reduce_scatter_block ll %llu calls\n", m->name, l1, d1, d2, l2, d3, d4, l3);
        if (p[0] > 1 && !g_anypath && (l1 + d1 + d2 != (unsigned long long)ncalls[C_AR] ||
                                       l2 + d3 + d4 != (unsigned long long)ncalls[C_AG] || !l1 || !d1 || !d2 || !l2 ||
                                       !d3 || !d4 || !l3 || l3 == (unsigned long long)ncalls[C_RSB]))
            TST_FAIL("back-to-back %s: algorithm counters ll %llu oneshot %llu twoshot %llu (of %d allreduce calls), ll %llu "
                     "push %llu pull %llu (of %d allgather calls), ll %llu (of %d reduce_scatter_block calls): expected "
                     "every algorithm of each table, summing to the calls", m->name, l1, d1, d2, ncalls[C_AR], l2, d3, d4,
                     ncalls[C_AG], l3, ncalls[C_RSB]);
    }
    TST_CUDA(cudaMemcpy(host, dev, total, cudaMemcpyDeviceToHost));
    for (a = 0; a < n; a++) {
        b2b_t *x = &c[a];
        size_t esz = (size_t)x->t->size, ro = GUARD + off_of(x->cs, 0, esz), so, i;
        size_t tail;
        char msg[300];
        sizes_of(x->coll, x->count, p[x->ci], &in_n, &out_n);
        snprintf(msg, sizeof msg, "back-to-back %s call %d: %s %s %s inplace=%d count=%zu comm=%d", m->name, a,
                 coll_names[x->coll], x->t->name, x->coll == C_AG ? "-" : op_names[x->op], x->inplace, x->count, x->ci);
        k = 0;
        k += !check_out(msg, x->coll, x->t, x->cs, x->op, rank[x->ci], p[x->ci], x->count, host + x->roff + ro, out_n);
        k += !check_poison(msg, "byte before the output", (unsigned char *)host + x->roff, ro, x->pz);
        /* in place, reduce_scatter_block leaves the input beyond the own block undefined */
        tail = ro + (x->inplace && in_n > out_n ? in_n : out_n) * esz;
        k += !check_poison(msg, "byte after the output", (unsigned char *)host + x->roff + tail, x->rspan - tail, x->pz);
        if (x->sspan) {
            so = GUARD + off_of(x->cs, 1, esz);
            for (i = 0; i < in_n && !k; i++) {
                if (get(x->t, host + x->soff + so, i) != val(x->t, x->cs, rank[x->ci], i)) {
                    TST_FAIL("%s: send element %zu changed", msg, i);
                    k++;
                }
            }
            k += !check_poison(msg, "byte before the send buffer", (unsigned char *)host + x->soff, so,
                               (unsigned char)(x->pz ^ 0x5a));
        }
        bad_calls += k != 0;
        g_cases++;
    }
    if (g_rank == 0)
        printf("back-to-back %s: %d calls on %d comms in %.3f s (%.1f us per call), %ld wrong on rank 0\n", m->name, n,
               ncomms, t1 - t0, (t1 - t0) * 1e6 / n, bad_calls);
    TST_CUDA(cudaFree(dev));
    free(host);
    free(c);
}

/* the plan of comm in words (rank 0 prints it), where the library has tlmpi_comm_describe */
static void describe(MPI_Comm comm, const char *label)
{
    char buf[4096];
    int rank;
    if (!g_describe) return;
    MPI_Comm_rank(comm, &rank);
    if (g_describe(comm, buf, sizeof buf) != TLMPI_OK) snprintf(buf, sizeof buf, "(tlmpi_comm_describe failed)");
    if (rank == 0 && g_rank == 0) printf("plan of %s (mode %s):\n%s\n", label, g_cur ? g_cur->name : "?", buf);
    fflush(stdout);
}

/* which path TLMPI_TIER=auto takes on comm (f32 sum, 4097 elements); a failure if expect differs */
static void auto_choice(MPI_Comm comm, const char *expect)
{
    unsigned long long b0[MAXP], b1[MAXP];
    int n = 4097, took;

    if (!set_mode(&g_auto)) return;
    TST_CUDA(cudaMemset(d_s, 0, n * 4));
    snap(C_AR, b0);
    if (MPI_Allreduce(d_s, d_r, n, MPI_FLOAT, MPI_SUM, comm) != MPI_SUCCESS) TST_FAIL("auto allreduce: rc");
    snap(C_AR, b1);
    took = took_path(b0, b1);
    if (g_rank == 0) printf("auto: TLMPI_TIER=auto took the %s path (allreduce f32 sum 4097 elements, np=%d)\n", pname(took), g_size);
    if (expect && strcmp(pname(took), expect)) TST_FAIL("auto: took the %s path, expected %s", pname(took), expect);
    g_cases++;
}

/* latency of 8-byte calls through the node tier and through staging (info, not a check) */
static void latency(MPI_Comm comm)
{
    static const tmode_t stg = { "staging", "staging", { "", "", "" }, 7, 0 };
    const tmode_t *ms[2] = { &g_modes[0], &stg };
    int mi, c, i, n = g_quick ? 50 : 200;
    double us[2][C_N];

    for (mi = 0; mi < 2; mi++) {
        if (!set_mode(ms[mi])) return;
        for (c = 0; c < C_N; c++) {
            size_t cnt = c == C_AR ? 2 : c == C_RSB ? 2 : 8; /* 8 bytes: f32 x2, f32 x2 per rank, 8 B */
            MPI_Datatype dt = c == C_AG ? MPI_BYTE : MPI_FLOAT;
            double t0, t;
            for (i = 0; i < 20; i++) call_coll(comm, c, d_s, d_r, cnt, dt, MPI_SUM);
            PMPI_Barrier(comm);
            t0 = now();
            for (i = 0; i < n; i++) call_coll(comm, c, d_s, d_r, cnt, dt, MPI_SUM);
            t = (now() - t0) / n * 1e6;
            PMPI_Allreduce(&t, &us[mi][c], 1, MPI_DOUBLE, MPI_MAX, comm);
        }
    }
    if (g_rank == 0) {
        for (c = 0; c < C_N; c++)
            printf("latency: np=%d %s 8 B: node %.1f us, staging %.1f us per call (max over ranks of the mean of %d)\n",
                   g_size, coll_names[c], us[0][c], us[1][c], n);
    }
}

int main(int argc, char **argv)
{
    int ndev = 0, a, mi, nb2b = -1;
    double t0 = now();
    const char *expect_auto = NULL;
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
        else if (!strcmp(argv[a], "--strict-one-rank")) g_strict1 = 1;
        else if (!strcmp(argv[a], "--any-path")) g_anypath = 1;
        else if (!strcmp(argv[a], "--b2b") && a + 1 < argc) nb2b = atoi(argv[++a]);
        else if (!strcmp(argv[a], "--expect-auto") && a + 1 < argc) expect_auto = argv[++a];
        else {
            fprintf(stderr, "usage: gpu_node [--quick] [--overflow] [--b2b N] [--expect-auto PATH] [--strict-one-rank] [--any-path]\n");
            return 2;
        }
    }
    if (nb2b < 0) nb2b = g_quick ? 200 : 1000;

    tst_init("gpu_node", &argc, &argv);
    g_rank = tst_rank;
    g_size = tst_size;
    tst_rng_sync();
    g_seed = tst_rand();
    TST_CUDA(cudaSetDevice(g_rank % ndev));
    find_paths();
    *(void **)&g_algo_stats = dlsym(RTLD_DEFAULT, "tlmpi_get_algo_stats");
    *(void **)&g_describe = dlsym(RTLD_DEFAULT, "tlmpi_comm_describe");
    if (P_NODE < 0 || P_STAGING < 0 || P_PASS < 0 || P_SELF < 0) {
        if (g_rank == 0) printf("gpu_node: this libtlmpi has no \"node\" path label (no node tier): FAIL\n");
        TST_FAIL("no node path label among tlmpi's %d paths", g_npaths);
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
    g_maxblock = g_overflow ? ((size_t)5 << 20) + 4096 : ((size_t)1 << 20) + 4096;
    d_bytes = (size_t)(g_size + 1) * g_maxblock + 4 * GUARD + 4096;
    TST_CUDA(cudaMalloc((void **)&d_s, d_bytes));
    TST_CUDA(cudaMalloc((void **)&d_r, d_bytes));
    h_s = tst_malloc(d_bytes);
    h_r = tst_malloc(d_bytes);
    h_c = tst_malloc(d_bytes);
    if (g_rank == 0) {
        const char *pool = getenv("TLMPI_NODE_POOL"), *tr = getenv("TLMPI_NODE_TRANSPORT"), *ctas = getenv("TLMPI_NODE_CTAS");
        printf("gpu_node: np=%d devices=%d quick=%d overflow=%d b2b=%d TLMPI_NODE_POOL=%s TLMPI_NODE_TRANSPORT=%s "
               "TLMPI_NODE_CTAS=%s MPS=%s\n", g_size, ndev, g_quick, g_overflow, nb2b, pool ? pool : "(default)",
               tr ? tr : "(default)", ctas ? ctas : "(default)", getenv("CUDA_MPS_PIPE_DIRECTORY") ? "yes" : "no");
        fflush(stdout);
    }

    if (set_mode(&g_modes[0])) describe(MPI_COMM_WORLD, "MPI_COMM_WORLD");
    /* the matrix, every mode */
    for (mi = 0; mi < N_MODES; mi++) matrix(MPI_COMM_WORLD, &g_modes[mi]);
    if (!g_overflow) {
        long c0 = g_cases;
        fallbacks(MPI_COMM_WORLD);
        if (g_rank == 0) printf("fallbacks: %ld cases\n", g_cases - c0);
    }

    /* sub-communicators: halves and thirds run at the same time; reversed order; a dup */
    {
        long c0 = g_cases;
        double tt = now();
        MPI_Comm_split(MPI_COMM_WORLD, g_rank % 2, g_rank, &half);
        MPI_Comm_split(MPI_COMM_WORLD, g_rank % 3, g_rank, &third);
        MPI_Comm_split(MPI_COMM_WORLD, 0, g_size - 1 - g_rank, &rev);
        MPI_Comm_dup(MPI_COMM_WORLD, &dup);
        sub_cases(half);
        if (g_size >= 3) sub_cases(third);
        sub_cases(rev);
        if (!g_quick) sub_cases(dup);
        if (g_rank == 0) printf("sub-communicators: %ld cases, %.2f s\n", g_cases - c0, now() - tt);
    }

    /* back to back, no host synchronisation between calls, on the world and a dup */
    {
        MPI_Comm cm[2] = { MPI_COMM_WORLD, dup };
        back_to_back(cm, 2, nb2b, &g_mixed);
        if (!g_quick && !g_overflow) back_to_back(cm, 2, nb2b / 2, &g_modes[0]);
    }
    MPI_Comm_free(&half);
    MPI_Comm_free(&third);
    MPI_Comm_free(&rev);
    MPI_Comm_free(&dup);

    if (!g_overflow) {
        auto_choice(MPI_COMM_WORLD, expect_auto);
        describe(MPI_COMM_WORLD, "MPI_COMM_WORLD");
        latency(MPI_COMM_WORLD);
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
        printf("RESULT gpu_node np=%d cases=%ld failures=%ld time=%.1fs %s\n", g_size, totals[0], totals[1], now() - t0,
               totals[1] ? "FAIL" : "PASS");
    fflush(stdout);
    if (d_s) TST_CUDA(cudaFree(d_s));
    if (d_r) TST_CUDA(cudaFree(d_r));
    free(h_s);
    free(h_r);
    free(h_c);
    MPI_Finalize();
    return totals[1] ? 1 : 0;
}
