/*
 * mpi_hier: the hier tier (2D: node tier inside each node, a rail exchange between nodes) on fake
 * nodes (TLMPI_TOPO_RANKS_PER_NODE), against exact host references. Run by tests/mpi/hier.sh with
 * TLMPI_TIER=hier and, on a GPU host, by tests/gpu/hier.sh (4 ranks as 2 x 2, 6 as 3 x 2, 8 as
 * 2 x 4 and 4 x 2).
 *
 * Cases, every one on fresh inputs (small integers, exact in every type whatever the summation
 * order), the receive buffer poisoned with a byte that changes per case and a guard after it that
 * must keep its poison:
 *  - matrix: allreduce / allgather / reduce_scatter_block x int, float, double (every arithmetic
 *    type with TLMPI_TEST_TYPES=all, exact_values.h) x sum, max, min, prod x in place or not x counts 1, 7, L*3, 4097, L*1031, 65536 + L (allreduce: one-shot up to
 *    TLMPI_HIER_ONESHOT_MAX and where L does not divide the count, 2d above);
 *  - sub-communicators: a dup (hier again), the world with its ranks interleaved across the nodes
 *    (not numbered node by node: the flat tiers serve it), even/odd halves (one rank per node
 *    when L = 2: flat);
 *  - back to back: TLMPI_TEST_ITERS (default 300) calls mixing collective, type, op, in place and
 *    size on the world and the dup, each checked;
 *  - the path: every collective took the hier path at least once on the world (TLMPI_STATS'
 *    counters), never on the interleaved one;
 *  - the v-forms (MPI_Allgatherv, MPI_Reduce_scatter, MPI_INT, sum) on the world, the dup and the
 *    interleaved world against PMPI_* on host copies (every byte of the receive buffer,
 *    gaps and guard included): random counts, one rank's count 8x the others', some counts zero, and
 *    allgatherv's blocks in reversed order with gaps, in place or not; on the world and the dup every
 *    case but the reversed one takes the hier path (the reversed one must not), on the interleaved
 *    world none does (the world: counts up to 17 and up to 3000, and the 8x case through the _c entry
 *    points where the MPI has them; the others: up to 17).
 * Built twice (tests/local.mk): tests/mpi/mpi_hier with the CPU stand-ins of tests/fakes (the node
 * tier's kernels cannot run there, so its steps fall back to staging: the decomposition and the
 * layouts are what is checked) and tests/gpu/gpu_hier with the real CUDA runtime.
 */
#include "config.h"
#include "tlmpi.h"

#include <cuda_runtime_api.h>
#include "harness.h"
#include "exact_values.h"

#include <unistd.h>

#define GUARD 16
static const char *const coll_name[NCOLL] = { "allreduce", "allgather", "reduce_scatter_block" };
static const tlmpi_coll_t coll_id[NCOLL] = { TLMPI_COLL_ALLREDUCE, TLMPI_COLL_ALLGATHER, TLMPI_COLL_REDUCE_SCATTER_BLOCK };

static size_t g_cap;
static unsigned char *d_s, *d_r, *h_in, *h_out;
static uint64_t g_seed;
static long g_cases;

static long long path_calls(int coll, tlmpi_path_t p)
{
    tlmpi_stat_t st;

    return tlmpi_get_stats(coll_id[coll], p, &st) == TLMPI_OK ? (long long)st.calls : -1;
}

/* One call on comm, checked; returns 0 or 1 failure. */
static int one(MPI_Comm comm, int coll, int t, int sum, int inplace, size_t count, const char *tag)
{
    int rank, p, rc;
    size_t es = type_size(t), in_n, out_n, buf_n, i;
    uint64_t ds = g_seed ^ (uint64_t)++g_cases * 0x94D049BB133111EBULL;
    unsigned char pv = (unsigned char)(0xA0 | (g_cases & 0xF));
    MPI_Op op = exact_op(sum);
    const char *opn = exact_op_name(sum);

    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &p);
    in_n = coll == C_RSB ? count * (size_t)p : count;
    out_n = coll == C_AG ? count * (size_t)p : count;
    buf_n = inplace && in_n > out_n ? in_n : out_n;
    if ((buf_n + GUARD) * es > g_cap) return 0;
    rc = exact_run(comm, coll, t, op, inplace, count, rank, p, ds, pv, GUARD, h_in, d_s, d_r);
    if (rc != MPI_SUCCESS) {
        TST_FAIL("%s: %s %s %s%s count %zu np %d: error %d", tag, coll_name[coll], type_name[t], opn,
                 inplace ? " in place" : "", count, p, rc);
        return 1;
    }
    memset(h_out, (unsigned char)~pv, (buf_n + GUARD) * es);
    TST_CUDA(cudaMemcpy(h_out, d_r, (buf_n + GUARD) * es, cudaMemcpyDeviceToHost));
    {
        double got, want;

        i = exact_first_bad(coll, t, sum, ds, rank, p, count, h_out, out_n, &got, &want);
        if (i < out_n) {
            TST_FAIL("%s: %s %s %s%s count %zu np %d: element %zu = %.17g, expected %g", tag, coll_name[coll],
                     type_name[t], coll == C_AG ? "" : opn, inplace ? " in place" : "", count, p, i,
                     got, want);
            return 1;
        }
    }
    for (i = buf_n * es; i < (buf_n + GUARD) * es; i++) {
        if (h_out[i] != pv) {
            TST_FAIL("%s: %s count %zu: wrote past its output (byte %zu)", tag, coll_name[coll], count, i);
            return 1;
        }
    }
    return 0;
}

static void matrix(MPI_Comm comm, int L, const char *tag)
{
    const size_t counts[] = { 1, 7, (size_t)L * 3, 4097, (size_t)L * 1031, 65536 + (size_t)L };

    for (int coll = 0; coll < NCOLL; coll++)
        for (int t = 0; t < NTYPES; t++)
            for (int sum = 0; sum < 4; sum++) {
                if ((coll == C_AG && sum != 1) || exact_skip(coll, t)) continue; /* allgather: no op */
                for (int ip = 0; ip < 2; ip++)
                    for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); k++)
                        one(comm, coll, t, sum, ip, counts[k], tag);
            }
}

/* The v-forms: one MPI_Allgatherv (rs = 0) or MPI_Reduce_scatter (rs = 1) of MPI_INT on comm, against
 * PMPI_* of the same call on host copies. pattern 0: random counts 1 .. maxc, blocks end to end in rank
 * order; 1: the same with one rank's count 8x the others'; 2: every third count zero; 3 (allgatherv):
 * the blocks in reversed order with gaps of 3 elements. Returns 1 where the call took the hier path. */
static int one_v(MPI_Comm comm, int rs, int pattern, int inplace, int maxc, int large, const char *tag)
{
    int rank, p, q, counts[64], displs[64], total = 0, out_n = 0, buf_n, off = 0, rc;
    uint64_t ds = g_seed ^ (uint64_t)++g_cases * 0x94D049BB133111EBULL;
    const unsigned char pv = (unsigned char)(0xA0 | (g_cases & 0xF));
    const tlmpi_coll_t id = rs ? TLMPI_COLL_REDUCE_SCATTER : TLMPI_COLL_ALLGATHERV;
    const char *name = rs ? "reduce_scatter" : "allgatherv";
    tlmpi_stat_t st0, st1;
    tst_rng_t g;
    int *hin = (int *)h_in, *href, *hout = (int *)h_out, i;

    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &p);
    if (p > 64) return 0;
    tst_rng_seed(&g, ds);
    for (q = 0; q < p; q++) {
        counts[q] = 1 + (int)(tst_rand_r(&g) % (uint64_t)maxc);
        if (pattern == 1) counts[q] = q == p / 2 ? 8 * maxc : maxc;
        if (pattern == 2 && q % 3 == 1) counts[q] = 0;
        total += counts[q];
    }
    for (q = 0; q < p; q++) {
        const int k = pattern == 3 && !rs ? p - 1 - q : q;

        displs[k] = off;
        off += counts[k] + (pattern == 3 && !rs ? 3 : 0);
        out_n = displs[k] + counts[k] > out_n ? displs[k] + counts[k] : out_n;
    }
    if (rs) out_n = counts[rank];
    buf_n = rs && inplace ? total : out_n;
    if ((size_t)(buf_n + GUARD) * 4 > g_cap || (size_t)(total + GUARD) * 4 > g_cap) return 0;
    href = malloc((size_t)(buf_n + GUARD) * 4);
    /* inputs: RS every block, allgatherv the own block; the receive buffers poisoned alike */
    for (i = 0; i < (rs ? total : counts[rank]); i++) hin[i] = (int)((ds >> (i % 40)) % 9) - 4 + rank * 3 + (i % 5);
    memset(href, pv, (size_t)(buf_n + GUARD) * 4);
    if (inplace) memcpy(rs ? href : href + displs[rank], hin, (size_t)(rs ? total : counts[rank]) * 4);
    TST_CUDA(cudaMemcpy(d_r, href, (size_t)(buf_n + GUARD) * 4, cudaMemcpyHostToDevice));
    TST_CUDA(cudaMemcpy(d_s, hin, (size_t)(rs ? total : counts[rank]) * 4 + 4, cudaMemcpyHostToDevice));
    if (rs) {
        rc = PMPI_Reduce_scatter(inplace ? MPI_IN_PLACE : (void *)hin, href, counts, MPI_INT, MPI_SUM, comm);
    } else {
        rc = PMPI_Allgatherv(inplace ? MPI_IN_PLACE : (void *)hin, counts[rank], MPI_INT, href, counts, displs, MPI_INT,
                             comm);
    }
    TST_CHECK(rc == MPI_SUCCESS, "%s: the host reference failed", tag);
    tlmpi_get_stats(id, TLMPI_PATH_HIER, &st0);
    if (large) {
#ifdef HAVE_PMPI_ALLGATHERV_C
        MPI_Count lc[64];
        MPI_Aint ld[64];

        for (q = 0; q < p; q++) {
            lc[q] = counts[q];
            ld[q] = displs[q];
        }
        rc = rs ? MPI_Reduce_scatter_c(inplace ? MPI_IN_PLACE : (void *)d_s, d_r, lc, MPI_INT, MPI_SUM, comm)
                : MPI_Allgatherv_c(inplace ? MPI_IN_PLACE : (void *)d_s, counts[rank], MPI_INT, d_r, lc, ld, MPI_INT,
                                   comm);
#else
        rc = MPI_ERR_OTHER;
#endif
    } else if (rs) {
        rc = MPI_Reduce_scatter(inplace ? MPI_IN_PLACE : (void *)d_s, d_r, counts, MPI_INT, MPI_SUM, comm);
    } else {
        rc = MPI_Allgatherv(inplace ? MPI_IN_PLACE : (void *)d_s, counts[rank], MPI_INT, d_r, counts, displs, MPI_INT,
                            comm);
    }
    tlmpi_get_stats(id, TLMPI_PATH_HIER, &st1);
    if (rc != MPI_SUCCESS) {
        TST_FAIL("%s: %s%s pattern %d%s np %d: error %d", tag, name, large ? "_c" : "", pattern,
                 inplace ? " in place" : "", p, rc);
        free(href);
        return 0;
    }
    TST_CUDA(cudaMemcpy(hout, d_r, (size_t)(buf_n + GUARD) * 4, cudaMemcpyDeviceToHost));
    /* the result (allgatherv: every byte of the buffer, gaps included; in-place reduce_scatter: its
     * block, the rest of the input being undefined), then the guard */
    for (i = 0; i < buf_n + GUARD; i++) {
        if ((i < out_n || i >= buf_n) && memcmp(hout + i, href + i, 4)) {
            TST_FAIL("%s: %s pattern %d%s np %d max %d: element %d = %d, expected %d", tag, name, pattern,
                     inplace ? " in place" : "", p, maxc, i, hout[i], href[i]);
            break;
        }
    }
    free(href);
    return st1.calls > st0.calls;
}

/* Every v-form case on comm (sizes 1: the small counts alone, 2: also the large); expect: 1 every case
 * but allgatherv's reversed blocks takes the hier path (and that one does not), 0 none does. */
static void siblings(MPI_Comm comm, int expect, int sizes, const char *tag)
{
    for (int rs = 0; rs < 2; rs++)
        for (int pattern = 0; pattern < (rs ? 3 : 4); pattern++)
            for (int ip = 0; ip < 2; ip++)
                for (int big = 0; big < sizes; big++) {
                    const int h = one_v(comm, rs, pattern, ip, big ? 3000 : 17, 0, tag);
                    const int want = pattern != 3;

                    if (expect >= 0) {
                        TST_CHECK(h == (expect && want), "%s: %s pattern %d%s: %s the hier path", tag,
                                  rs ? "reduce_scatter" : "allgatherv", pattern, ip ? " in place" : "",
                                  h ? "took" : "did not take");
                    }
                }
}

int main(int argc, char **argv)
{
    const char *rpn_env = getenv("TLMPI_TOPO_RANKS_PER_NODE"), *it_env = getenv("TLMPI_TEST_ITERS");
    long iters = it_env && *it_env ? atol(it_env) : 300;
    int L = rpn_env ? atoi(rpn_env) : 0, ndev = 0, c;
    long long before[NCOLL], after[NCOLL], rev_before[NCOLL], step0[NCOLL][TLMPI_PATH_COUNT];
    MPI_Comm dup, rev, half;
    tst_rng_t g;

    tst_init("mpi_hier", &argc, &argv);
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < 1) {
        (void)cudaGetLastError();
        return tst_skip("no CUDA device");
    }
    if (L < 2 || tst_size % L || tst_size / L < 2) {
        return tst_skip("needs TLMPI_TOPO_RANKS_PER_NODE=L with L >= 2 and at least 2 fake nodes");
    }
    TST_CUDA(cudaSetDevice(tst_rank % ndev));
    g_cap = ((size_t)(65536 + L) * (size_t)tst_size + GUARD) * 8;
    TST_CUDA(cudaMalloc((void **)&d_s, g_cap));
    TST_CUDA(cudaMalloc((void **)&d_r, g_cap));
    h_in = malloc(g_cap);
    h_out = malloc(g_cap);
    tst_rng_sync();
    g_seed = tst_rand();
    if (tst_rank == 0) {
        printf("mpi_hier: %d ranks as %d nodes x %d, TLMPI_TIER=%s, TLMPI_HIER_RAIL=%s, TLMPI_HIER_FUSED=%s, "
               "TLMPI_HIER_GROUPS=%s\n", tst_size, tst_size / L, L, getenv("TLMPI_TIER") ? getenv("TLMPI_TIER") : "(unset)",
               getenv("TLMPI_HIER_RAIL") ? getenv("TLMPI_HIER_RAIL") : "(unset)",
               getenv("TLMPI_HIER_FUSED") ? getenv("TLMPI_HIER_FUSED") : "(unset)",
               getenv("TLMPI_HIER_GROUPS") ? getenv("TLMPI_HIER_GROUPS") : "(unset)");
        fflush(stdout);
    }
    for (c = 0; c < NCOLL; c++) {
        before[c] = path_calls(c, TLMPI_PATH_HIER);
        for (int k = 0; k < TLMPI_PATH_COUNT; k++) step0[c][k] = path_calls(c, (tlmpi_path_t)k);
    }
    matrix(MPI_COMM_WORLD, L, "world");
    for (c = 0; c < NCOLL; c++) {
        after[c] = path_calls(c, TLMPI_PATH_HIER);
        for (int k = 0; k < TLMPI_PATH_COUNT; k++) step0[c][k] = path_calls(c, (tlmpi_path_t)k) - step0[c][k];
    }
    /* the steps' tiers (HIER_EXPECT_STEPS=node,nccl on a GPU host: the node tier's kernels and the
     * NCCL rail must each have served some step) */
    {
        const char *want = getenv("HIER_EXPECT_STEPS");
        long long node = 0, nccl = 0, staged = 0;

        for (c = 0; c < NCOLL; c++) {
            node += step0[c][TLMPI_PATH_NODE];
            nccl += step0[c][TLMPI_PATH_NCCL];
            staged += step0[c][TLMPI_PATH_STAGING];
        }
        if (tst_rank == 0) {
            printf("mpi_hier: rank 0 steps on the world: node %lld, nccl %lld, staging %lld\n", node, nccl, staged);
        }
        if (want && strstr(want, "node")) TST_CHECK(node > 0, "no step ran on the node tier");
        if (want && strstr(want, "nccl")) TST_CHECK(nccl > 0, "no step ran on the NCCL tier");
        /* HIER_EXPECT_STEPS=none (the fused kernels: one kernel per call, no sub-comm steps) */
        if (want && !strcmp(want, "none")) TST_CHECK(node + nccl + staged == 0, "a hier call ran steps on sub comms");
    }
    /* HIER_EXPECT_ALGO=fused: every collective ran the fused kernels on the world */
    {
        const char *algo = getenv("HIER_EXPECT_ALGO");

        for (c = 0; algo && *algo && c < NCOLL; c++) {
            tlmpi_stat_t st;

            TST_CHECK(tlmpi_get_algo_stats(coll_id[c], TLMPI_PATH_HIER, algo, &st) == TLMPI_OK && st.calls > 0,
                      "%s never ran hier/%s", coll_name[c], algo);
            if (tst_rank == 0 && c == 0) {
                printf("mpi_hier: rank 0 hier/%s calls: %llu (allreduce)\n", algo, (unsigned long long)st.calls);
            }
        }
    }
    /* HIER_EXPECT_FALLBACK=1 (the CPU stand-ins with the fused kernels: their launches fail, so every
     * rank stages those calls): the calls were served, but not counted on the hier path */
    for (c = 0; c < NCOLL; c++) {
        const char *fb = getenv("HIER_EXPECT_FALLBACK");

        if (fb && *fb == '1') {
            TST_CHECK(after[c] == before[c] && step0[c][TLMPI_PATH_STAGING] > 0,
                      "%s: expected the fused launches to fail and staging to serve (hier %lld, staging %lld)",
                      coll_name[c], after[c] - before[c], step0[c][TLMPI_PATH_STAGING]);
            continue;
        }
        TST_CHECK(after[c] > before[c], "%s never took the hier path on the world (%lld calls)", coll_name[c],
                  after[c] - before[c]);
    }
    siblings(MPI_COMM_WORLD, 1, 2, "world v");
#ifdef HAVE_PMPI_ALLGATHERV_C
    /* the _c entry points: the steps' arrays of MPI_Count and MPI_Aint */
    for (int rs = 0; rs < 2; rs++)
        for (int ip = 0; ip < 2; ip++) {
            TST_CHECK(one_v(MPI_COMM_WORLD, rs, 1, ip, 300, 1, "world v _c"), "world v _c: %s%s did not take the hier path",
                      rs ? "MPI_Reduce_scatter_c" : "MPI_Allgatherv_c", ip ? " in place" : "");
        }
#endif
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    matrix(dup, L, "dup");
    siblings(dup, 1, 1, "dup v");
    /* ranks interleaved across the nodes (comm rank k on node k % N): not numbered node by node,
     * so not hier (the flat tiers serve it) */
    MPI_Comm_split(MPI_COMM_WORLD, 0, (tst_rank % L) * (tst_size / L) + tst_rank / L, &rev);
    for (c = 0; c < NCOLL; c++) rev_before[c] = path_calls(c, TLMPI_PATH_HIER);
    matrix(rev, L, "interleaved");
    siblings(rev, 0, 1, "interleaved v");
    for (c = 0; c < NCOLL; c++) {
        TST_CHECK(path_calls(c, TLMPI_PATH_HIER) == rev_before[c], "%s took the hier path on the interleaved world",
                  coll_name[c]);
    }
    MPI_Comm_split(MPI_COMM_WORLD, tst_rank % 2, tst_rank, &half);
    matrix(half, L, "half");
    /* back to back, mixed */
    tst_rng_seed(&g, g_seed ^ 0x5151);
    for (long it = 0; it < iters; it++) {
        int coll = (int)(tst_rand_r(&g) % NCOLL), t = (int)(tst_rand_r(&g) % NTYPES);
        int sum = coll == C_AG ? 1 : (int)(tst_rand_r(&g) % 4), ip = (int)(tst_rand_r(&g) % 2);
        size_t count = 1 + (size_t)(tst_rand_r(&g) % 20000);

        if (tst_rand_r(&g) % 2) count = (count + L - 1) / L * L; /* allreduce: 2d possible, else one-shot */
        if (exact_skip(coll, t)) t = T_U16;
        one(it % 2 ? dup : MPI_COMM_WORLD, coll, t, sum, ip, count, "b2b");
    }
    MPI_Comm_free(&half);
    MPI_Comm_free(&rev);
    MPI_Comm_free(&dup);
    cudaFree(d_s);
    cudaFree(d_r);
    free(h_in);
    free(h_out);
    if (tst_rank == 0) {
        printf("mpi_hier: %ld cases per rank; hier calls on the world: allreduce %lld, allgather %lld, "
               "reduce_scatter_block %lld\n", g_cases, after[C_AR] - before[C_AR], after[C_AG] - before[C_AG],
               after[C_RSB] - before[C_RSB]);
    }
    return tst_finish();
}
