/*
 * gpu_siblings: MPI_Allgatherv, MPI_Reduce_scatter, MPI_Bcast, MPI_Reduce and MPI_Alltoall on CUDA
 * device buffers through tlmpi on a GPU host (ranks sharing the GPU under MPS: tests/gpu/siblings.sh),
 * in every form this MPI has (blocking, MPI_I* + MPI_Wait, MPI-4 *_init + MPI_Start/MPI_Wait twice) and
 * in tlmpi's stream-ordered forms (tlmpi_<sibling>_enqueue on a non-blocking stream, eager, and captured
 * into a CUDA graph in global capture mode, the graph launched twice), against PMPI_* of the same call
 * on host copies. Both communicators are prepared for capture (tlmpi_enqueue_prepare).
 *
 * Cases (random, the seed printed; every rank draws the same): counts per rank 0 .. C with zeros, one
 * rank holding 8x the others' (the uneven case of FSDP shards and MoE), every count zero, equal counts;
 * allgatherv's blocks at displacements in permuted order with gaps; MPI_CHAR, MPI_INT, MPI_FLOAT and
 * MPI_DOUBLE (the reductions on small integers: exact in any order); MPI_SUM, MPI_MAX, MPI_MIN, MPI_PROD
 * (of ones and twos); every root; in place (allgatherv: the own block; reduce_scatter and alltoall: the
 * whole input; reduce: at the root); a split with reversed ranks. The receive buffer is poisoned the same
 * way for the reference and for the device call, and every byte of it (results, gaps, a guard tail)
 * must be the reference's (in-place MPI_Reduce of more than 100 elements is left out under MPICH, whose
 * 4.0.2 crashes in it on host buffers alike). Large cases (-L) reach several pool steps (run with a small TLMPI_NODE_POOL).
 * At the end every collective must have been served by the node tier in every form that ran
 * (tlmpi_get_form_stats, path node): where tlmpi sends it elsewhere the test says so and fails. The line
 * also gives the calls that ran zero-copy (algorithm direct: the registration cache's, from
 * TLMPI_NODE_REG_MIN, 2 MiB: tests/gpu/siblings.sh's zc runs reach it); -Z makes the first five cases
 * one blocking call of each collective, not in place, every count the largest, and fails the run where
 * some collective had no zero-copy call.
 * Usage: gpu_siblings [-n CASES] [-C MAXCOUNT] [-L] [-Z] [-s SEED] [-v: each case on rank 0 before its call].
 * Exit 77 without a GPU.
 */
#include "config.h"
#include "tlmpi.h"

#include <cuda_runtime_api.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { AGV, RS, BC, RED, A2A, NCOLL };
static const char *const coll_names[NCOLL] = { "Allgatherv", "Reduce_scatter", "Bcast", "Reduce", "Alltoall" };
static const tlmpi_coll_t coll_ids[NCOLL] = { TLMPI_COLL_ALLGATHERV, TLMPI_COLL_REDUCE_SCATTER, TLMPI_COLL_BCAST,
                                              TLMPI_COLL_REDUCE, TLMPI_COLL_ALLTOALL };
enum { BLOCKING, NONBLOCKING, PERSISTENT, ENQUEUE, CAPTURE, NFORMS };
static const char *const form_names[NFORMS] = { "blocking", "non-blocking", "persistent", "stream-ordered",
                                                 "captured" };
static const tlmpi_form_t form_ids[NFORMS] = { TLMPI_FORM_BLOCKING, TLMPI_FORM_NONBLOCKING, TLMPI_FORM_PERSISTENT,
                                               TLMPI_FORM_ENQUEUE, TLMPI_FORM_CAPTURE };
static cudaStream_t g_st; /* the stream-ordered forms' (non-blocking) */
#define MAXP 8
#define GUARD 64

static int g_rank, g_size, g_bad, g_checks, g_verbose;
/* in-place MPI_Reduce_scatter calls with a block longer than the first, per form: tlmpi sends them to
 * staging (src/tier/node.c, node_supports_sibling), the only staged calls the test expects */
static unsigned long long g_rs_staged[5];
/* -Z: case i < NCOLL is collective i, blocking, not in place, on doubles, every count the largest (so
 * that it reaches the registration cache's size): -1 elsewhere */
static int g_force = -1;
static unsigned long long g_rng, g_seed; /* the cases' generator: every rank draws the same */

#define CK(x)                                                                                                      \
    do {                                                                                                           \
        cudaError_t e_ = (x);                                                                                      \
        if (e_ != cudaSuccess) {                                                                                   \
            fprintf(stderr, "gpu_siblings: rank %d: %s: %s\n", g_rank, #x, cudaGetErrorString(e_));               \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                                          \
        }                                                                                                          \
    } while (0)

static unsigned rnd_of(unsigned long long *s, unsigned n)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return n ? (unsigned)((*s >> 33) % n) : 0;
}
/* the case's shape: the same on every rank */
static unsigned rnd(unsigned n)
{
    return rnd_of(&g_rng, n);
}

struct kind {
    MPI_Datatype t;
    int size;
    const char *name;
};
static struct kind g_types[4];

/* value v (a small integer) as an element of type k at p */
static void put(const struct kind *k, char *p, int v)
{
    if (k->t == MPI_CHAR) *p = (char)v;
    else if (k->t == MPI_INT) memcpy(p, &v, 4);
    else if (k->t == MPI_FLOAT) { float f = (float)v; memcpy(p, &f, 4); }
    else { double d = (double)v; memcpy(p, &d, 8); }
}

/* one call of collective c in form f on comm: bufs as given (host or device), returns the MPI's rc */
static int call(int c, int f, int pmpi, int me, MPI_Comm comm, const void *sb, void *rb, const int *counts, const int *displs,
                int count, const struct kind *k, MPI_Op op, int root, int starts)
{
    MPI_Request req = MPI_REQUEST_NULL;
    int rc = MPI_SUCCESS, rep;

    if (pmpi) { /* the reference: blocking PMPI on host buffers */
        switch (c) {
        case AGV: return PMPI_Allgatherv(sb, sb == MPI_IN_PLACE ? 0 : counts[me], k->t, rb, counts, displs, k->t, comm);
        case RS: return PMPI_Reduce_scatter(sb, rb, counts, k->t, op, comm);
        case BC: return PMPI_Bcast(rb, count, k->t, root, comm);
        case RED: return PMPI_Reduce(sb, rb, count, k->t, op, root, comm);
        default: return PMPI_Alltoall(sb, count, k->t, rb, count, k->t, comm);
        }
    }
    if (f == BLOCKING) {
        switch (c) {
        case AGV: return MPI_Allgatherv(sb, sb == MPI_IN_PLACE ? 0 : counts[me], k->t, rb, counts, displs, k->t, comm);
        case RS: return MPI_Reduce_scatter(sb, rb, counts, k->t, op, comm);
        case BC: return MPI_Bcast(rb, count, k->t, root, comm);
        case RED: return MPI_Reduce(sb, rb, count, k->t, op, root, comm);
        default: return MPI_Alltoall(sb, count, k->t, rb, count, k->t, comm);
        }
    }
    if (f == ENQUEUE || f == CAPTURE) {
        cudaGraph_t graph = NULL;
        cudaGraphExec_t exec = NULL;
        cudaError_t e;

        if (f == CAPTURE) CK(cudaStreamBeginCapture(g_st, cudaStreamCaptureModeGlobal));
        switch (c) {
        case AGV: rc = tlmpi_allgatherv_enqueue(sb, sb == MPI_IN_PLACE ? 0 : counts[me], k->t, rb, counts, displs, k->t, comm, g_st); break;
        case RS: rc = tlmpi_reduce_scatter_enqueue(sb, rb, counts, k->t, op, comm, g_st); break;
        case BC: rc = tlmpi_bcast_enqueue(rb, count, k->t, root, comm, g_st); break;
        case RED: rc = tlmpi_reduce_enqueue(sb, rb, count, k->t, op, root, comm, g_st); break;
        default: rc = tlmpi_alltoall_enqueue(sb, count, k->t, rb, count, k->t, comm, g_st); break;
        }
        if (f == ENQUEUE) {
            CK(cudaStreamSynchronize(g_st));
            return rc;
        }
        e = cudaStreamEndCapture(g_st, &graph);
        if (e != cudaSuccess || (e = cudaGraphInstantiate(&exec, graph, 0)) != cudaSuccess) {
            fprintf(stderr, "gpu_siblings: rank %d: %s captured: %s\n", g_rank, coll_names[c], cudaGetErrorString(e));
            return MPI_ERR_OTHER;
        }
        /* the graph launched starts times: the same inputs, the same result */
        for (rep = 0; rc == MPI_SUCCESS && rep < starts; rep++) CK(cudaGraphLaunch(exec, g_st));
        CK(cudaStreamSynchronize(g_st));
        CK(cudaGraphExecDestroy(exec));
        CK(cudaGraphDestroy(graph));
        return rc;
    }
    if (f == NONBLOCKING) {
        switch (c) {
        case AGV: rc = MPI_Iallgatherv(sb, sb == MPI_IN_PLACE ? 0 : counts[me], k->t, rb, counts, displs, k->t, comm, &req); break;
        case RS: rc = MPI_Ireduce_scatter(sb, rb, counts, k->t, op, comm, &req); break;
        case BC: rc = MPI_Ibcast(rb, count, k->t, root, comm, &req); break;
        case RED: rc = MPI_Ireduce(sb, rb, count, k->t, op, root, comm, &req); break;
        default: rc = MPI_Ialltoall(sb, count, k->t, rb, count, k->t, comm, &req); break;
        }
        return rc != MPI_SUCCESS ? rc : MPI_Wait(&req, MPI_STATUS_IGNORE);
    }
#if MPI_VERSION >= 4
    switch (c) {
    case AGV: rc = MPI_Allgatherv_init(sb, sb == MPI_IN_PLACE ? 0 : counts[me], k->t, rb, counts, displs, k->t, comm, MPI_INFO_NULL, &req); break;
    case RS: rc = MPI_Reduce_scatter_init(sb, rb, counts, k->t, op, comm, MPI_INFO_NULL, &req); break;
    case BC: rc = MPI_Bcast_init(rb, count, k->t, root, comm, MPI_INFO_NULL, &req); break;
    case RED: rc = MPI_Reduce_init(sb, rb, count, k->t, op, root, comm, MPI_INFO_NULL, &req); break;
    default: rc = MPI_Alltoall_init(sb, count, k->t, rb, count, k->t, comm, MPI_INFO_NULL, &req); break;
    }
    /* the same inputs starts times: the same result (starts is the same on every rank: once where any
     * rank is in place, whose second start would take the first's output) */
    for (rep = 0; rc == MPI_SUCCESS && rep < starts; rep++) {
        rc = MPI_Start(&req);
        if (rc == MPI_SUCCESS) rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
    }
    if (req != MPI_REQUEST_NULL) MPI_Request_free(&req);
#else
    (void)rep;
    rc = MPI_ERR_OTHER;
#endif
    return rc;
}

static void run_case(int id, MPI_Comm comm, int maxc, int large)
{
    int n, r, q, c = (int)rnd(NCOLL), f = (int)rnd(NFORMS), shape = (int)rnd(5), root, in_place, count = 0, starts;
    int counts[MAXP], displs[MAXP], perm[MAXP], total = 0, mx;
    const struct kind *k;
    MPI_Op ops[4] = { MPI_SUM, MPI_MAX, MPI_MIN, MPI_PROD }, op = MPI_SUM;
    size_t in_elems, out_elems, ib, ob, cmp;
    char *hin, *href, *hgot, *din, *dout;
    unsigned long long dr; /* this rank's data: its own generator */

#if MPI_VERSION < 4
    if (f == PERSISTENT) f = NONBLOCKING;
#endif
    if (g_force >= 0) {
        c = g_force;
        f = BLOCKING;
        shape = 1;
        large = 1;
    }
    MPI_Comm_size(comm, &n);
    MPI_Comm_rank(comm, &r);
    dr = g_seed ^ ((unsigned long long)(id + 1) * 0x9e3779b97f4a7c15ull) ^ ((unsigned long long)(r + 1) << 48);
    k = &g_types[(c == RS || c == RED) ? 1 + rnd(3) : rnd(4)];
    if (g_force >= 0) k = &g_types[3]; /* double: the largest blocks */
    if (c == RS || c == RED) op = ops[rnd(4)];
    root = (int)rnd((unsigned)n);
    in_place = rnd(4) == 0 && g_force < 0;
    mx = large ? maxc : 1 + (int)rnd((unsigned)maxc);
    for (q = 0; q < n; q++) {
        counts[q] = shape == 0 ? 0 : shape == 1 ? mx : shape == 2 ? (q == root ? 8 * (mx / 8 + 1) : mx / 8 + 1)
                                                        : (int)rnd((unsigned)mx + 1) * (rnd(4) != 0);
        perm[q] = q;
    }
    count = c == A2A ? counts[0] : counts[root];
    for (q = n - 1; q > 0; q--) { int j = (int)rnd((unsigned)q + 1), t = perm[q]; perm[q] = perm[j]; perm[j] = t; }
    for (q = 0; q < n; q++) { displs[perm[q]] = total; total += counts[perm[q]] + (int)rnd(3); }
    if (c == RS) { total = 0; for (q = 0; q < n; q++) total += counts[q]; }
    starts = in_place ? 1 : 2; /* before the root alone keeps an in-place MPI_Reduce: every rank's */
    if (c == RED && in_place && r != root) in_place = 0; /* only the root may */
#ifdef MPICH_VERSION
    /* MPICH 4.0.2's own in-place MPI_Reduce crashes from a few hundred elements (host buffers alike:
     * tests/mpi/mpi_siblings.c): the reference would */
    if (c == RED && count > 100) in_place = 0;
    /* and its in-place MPI_Reduce_scatter from 512 KiB (its pairwise algorithm: a memcpy assertion on
     * overlapping ranges; host buffers alike) */
    if (c == RS && (size_t)total * (size_t)k->size >= 512 * 1024) in_place = 0;
#endif
    if (c == BC) in_place = 0;
    if (c == RS && in_place) {
        int longer = 0;

        for (q = 1; q < n; q++) longer |= counts[q] > counts[0];
        if (longer && (f == ENQUEUE || f == CAPTURE)) {
            in_place = 0; /* refused without the synchronous fallback (tlmpi.h): the test prepares none */
        } else if (longer && (size_t)total * (size_t)k->size > 0) {
            g_rs_staged[f]++;
        }
    }
    if (!in_place && c != RED) starts = 2;
    /* element counts of the input and of the receive buffer */
    switch (c) {
    case AGV: in_elems = (size_t)counts[r]; out_elems = (size_t)total; break;
    case RS: in_elems = (size_t)total; out_elems = in_place ? (size_t)total : (size_t)counts[r]; break;
    case BC: in_elems = 0; out_elems = (size_t)count; break;
    case RED: in_elems = (size_t)count; out_elems = (size_t)count; break;
    default: in_elems = out_elems = (size_t)count * (size_t)n; break;
    }
    ib = in_elems * (size_t)k->size + GUARD;
    ob = out_elems * (size_t)k->size + GUARD;
    hin = malloc(ib);
    href = malloc(ob);
    hgot = malloc(ob);
    CK(cudaMalloc((void **)&din, ib));
    CK(cudaMalloc((void **)&dout, ob));
    for (size_t i = 0; i < in_elems; i++) {
        int v = (c == RED || c == RS) && op == MPI_PROD ? 1 + (rnd_of(&dr, 8) == 0) : (int)rnd_of(&dr, 50) + r;
        put(k, hin + i * (size_t)k->size, v);
    }
    for (size_t i = 0; i < ob; i++) href[i] = (char)(0x5a ^ (int)(i * 7));
    if (c == BC && r == root) {
        for (size_t i = 0; i < out_elems; i++) put(k, href + i * (size_t)k->size, (int)rnd_of(&dr, 100));
    }
    if (in_place) {
        /* the input lives in the receive buffer: allgatherv the own block, reduce_scatter / alltoall /
         * reduce all of it */
        size_t at = c == AGV ? (size_t)displs[r] * (size_t)k->size : 0;
        memcpy(href + at, hin, in_elems * (size_t)k->size);
    }
    memcpy(hgot, href, ob);
    /* what is compared: the whole receive buffer, but after an in-place reduce_scatter only the result
     * (the rest of the buffer is the MPI's scratch) */
    cmp = c == RS && in_place ? (size_t)counts[r] * (size_t)k->size : ob;
    CK(cudaMemcpy(din, hin, ib, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dout, href, ob, cudaMemcpyHostToDevice));
    if (g_verbose && r == 0) {
        printf("gpu_siblings: case %d: %s %s %s%s, %d ranks, counts %d %d .., root %d\n", id, coll_names[c], form_names[f],
               k->name, in_place ? " in place" : "", n, counts[0], n > 1 ? counts[1] : 0, root);
        fflush(stdout);
    }
    {
        int rc_ref = call(c, f, 1, r, comm, in_place ? MPI_IN_PLACE : hin, href, counts, displs, count, k, op, root, starts);
        int rc = call(c, f, 0, r, comm, in_place ? MPI_IN_PLACE : din, dout, counts, displs, count, k, op, root, starts);

        CK(cudaMemcpy(hgot, dout, ob, cudaMemcpyDeviceToHost));
        g_checks++;
        if (rc != rc_ref) {
            g_bad++;
            fprintf(stderr, "gpu_siblings: rank %d: case %d %s %s: rc %d, the reference %d\n", g_rank, id,
                    coll_names[c], form_names[f], rc, rc_ref);
        } else if ((c != RED || r == root) && memcmp(hgot, href, cmp) != 0) {
            size_t i = 0;

            while (i < cmp && hgot[i] == href[i]) i++;
            g_bad++;
            fprintf(stderr, "gpu_siblings: rank %d: case %d %s %s %s%s %d ranks (counts %d..%d, root %d): byte %zu of "
                    "%zu differs (0x%02x, the reference 0x%02x)\n", g_rank, id, coll_names[c], form_names[f], k->name,
                    in_place ? " in place" : "", n, counts[0], counts[n - 1], root, i, ob, (unsigned char)hgot[i],
                    (unsigned char)href[i]);
        }
    }
    CK(cudaFree(din));
    CK(cudaFree(dout));
    free(hin);
    free(href);
    free(hgot);
}

int main(int argc, char **argv)
{
    int ndev = 0, cases = 120, maxc = 3000, large = 0, want_zc = 0, i, c, f, fails = 0;
    unsigned long long seed = 0;
    MPI_Comm rev;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < 1) {
        if (g_rank == 0) printf("gpu_siblings: SKIP: no CUDA device\n");
        MPI_Finalize();
        return 77;
    }
    CK(cudaSetDevice(g_rank % ndev));
    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-n") && i + 1 < argc) cases = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-C") && i + 1 < argc) maxc = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-s") && i + 1 < argc) seed = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "-L")) large = 1;
        else if (!strcmp(argv[i], "-Z")) want_zc = 1;
        else if (!strcmp(argv[i], "-v")) g_verbose = 1;
    }
    if (g_size > MAXP) {
        if (g_rank == 0) printf("gpu_siblings: SKIP: more than %d ranks\n", MAXP);
        MPI_Finalize();
        return 77;
    }
    if (!seed) {
        seed = (unsigned long long)time(NULL) ^ 0x9e3779b97f4a7c15ull;
        PMPI_Bcast(&seed, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
    }
    g_rng = g_seed = seed;
    g_types[0] = (struct kind){ MPI_CHAR, 1, "char" };
    g_types[1] = (struct kind){ MPI_INT, 4, "int" };
    g_types[2] = (struct kind){ MPI_FLOAT, 4, "float" };
    g_types[3] = (struct kind){ MPI_DOUBLE, 8, "double" };
    if (g_rank == 0) {
        printf("gpu_siblings: %d ranks, %d cases, counts up to %d%s, seed %llu\n", g_size, cases, maxc,
               large ? " (every case the largest)" : "", seed);
    }
    MPI_Comm_split(MPI_COMM_WORLD, 0, g_size - g_rank, &rev);
    CK(cudaStreamCreateWithFlags(&g_st, cudaStreamNonBlocking));
    if (tlmpi_enqueue_prepare(MPI_COMM_WORLD, 0) != MPI_SUCCESS || tlmpi_enqueue_prepare(rev, 0) != MPI_SUCCESS) {
        fprintf(stderr, "gpu_siblings: rank %d: tlmpi_enqueue_prepare failed\n", g_rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (i = 0; i < cases; i++) {
        g_force = want_zc && i < NCOLL ? i : -1;
        run_case(i, i % 3 == 2 ? rev : MPI_COMM_WORLD, maxc, large);
    }
    MPI_Comm_free(&rev);
    CK(cudaStreamDestroy(g_st));
    /* every collective on the node tier in the forms that ran */
    for (c = 0; c < NCOLL; c++) {
        char line[320];
        int o = snprintf(line, sizeof line, "gpu_siblings: %-14s node calls:", coll_names[c]), other = 0;
        tlmpi_stat_t zc;

        for (f = 0; f < NFORMS; f++) {
            tlmpi_stat_t st, sg;

            memset(&st, 0, sizeof st);
            memset(&sg, 0, sizeof sg);
            tlmpi_get_form_stats(coll_ids[c], TLMPI_PATH_NODE, form_ids[f], &st);
            tlmpi_get_form_stats(coll_ids[c], TLMPI_PATH_STAGING, form_ids[f], &sg);
            o += snprintf(line + o, sizeof line - (size_t)o, " %s %llu (staging %llu)", form_names[f],
                          (unsigned long long)st.calls, (unsigned long long)sg.calls);
            other += sg.calls > (c == RS ? g_rs_staged[f] : 0);
        }
        memset(&zc, 0, sizeof zc);
        tlmpi_get_algo_stats(coll_ids[c], TLMPI_PATH_NODE, "direct", &zc);
        o += snprintf(line + o, sizeof line - (size_t)o, "; zero-copy %llu", (unsigned long long)zc.calls);
        if (other) fails++;
        if (want_zc && !zc.calls) fails++;
        if (g_rank == 0) {
            printf("%s%s%s\n", line, other ? "  <- not all on the node tier" : "",
                   want_zc && !zc.calls ? "  <- none zero-copy (-Z)" : "");
        }
    }
    MPI_Allreduce(MPI_IN_PLACE, &g_bad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &fails, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (g_rank == 0) {
        printf("gpu_siblings: %s: %d checks per rank, %d wrong over %d ranks%s\n", g_bad || fails ? "FAIL" : "PASS",
               g_checks, g_bad, g_size, fails ? ", some calls not on the node tier" : "");
    }
    MPI_Finalize();
    return g_bad || fails ? 1 : 0;
}
