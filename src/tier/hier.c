/*
 * hier: the 2D collectives of a communicator that spans several nodes of several ranks each,
 * composed of two calls on the topology's sub communicators, each through that sub communicator's
 * own plan: the node comm (the ranks of this node: the node tier's kernels where it can) and the
 * rail comm (the ranks with this rank's local index on every node: NCCL, staging, or what
 * TLMPI_HIER_RAIL names). Ranks must be numbered node by node (rank = node * L + local rank, L ranks
 * per node on N nodes), as with block placement and fake nodes.
 *
 *   allgather (block b)       node allgather of the own block into this node's L blocks of the
 *                             output (they are already where the result wants them), then a rail
 *                             allgather of those L*b bytes in place: node n's chunk lands at n*L*b
 *   reduce_scatter_block (b)  rail reduce-scatter of the N chunks of L blocks (node n's chunk to the
 *                             rail rank on node n), into scratch: the sum over nodes of this node's
 *                             L blocks; then a node reduce-scatter of that into the own block
 *   allreduce, 2d             (count % L = 0) node reduce-scatter into a scratch slice of count/L
 *                             elements, a rail allreduce of the slice in place, a node allgather
 *                             into the output
 *   allreduce, oneshot        (small messages, up to TLMPI_HIER_ONESHOT_MAX, and counts L does not
 *                             divide) node allreduce into the output, then a rail allreduce of it in
 *                             place: two steps, each of the whole vector
 *   allgatherv (counts c[i])  where every node's blocks lie end to end in rank order in the output
 *                             (displs[nL + j + 1] = displs[nL + j] + c[nL + j]: the packed layout of
 *                             FSDP shards and of MPI's own examples): node allgatherv of the node's
 *                             blocks into their places, then a rail allgatherv of the node chunks in
 *                             place (node n's chunk: its L blocks, at displs[nL]); other layouts are
 *                             not served here (the flat tiers serve them)
 *   reduce_scatter (c[i])     the RSB steps with the call's blocks: rail reduce-scatter of the N node
 *                             chunks (node n's: blocks nL .. nL+L-1, end to end in every input) into
 *                             scratch, then a node reduce-scatter of that chunk into the own block
 * The v-forms' steps get counts arrays of the call's own kind (int, or MPI_Count and MPI_Aint from
 * the _c entry points), built per call in arrays the comm holds; where a node chunk's count does not
 * fit an int the call is not served here.
 *
 * Each step is a complete blocking collective (its tier waits for its GPU work before the next step
 * starts): the order between steps is the host's, not yet the streams'. Cross-node traffic per
 * rank is that of the flat algorithms; inside a node the node tier moves it. Each step is counted
 * in TLMPI_STATS under its own collective and tier as well (hier/allreduce 1 call: node RSB, rail
 * allreduce, node allgather).
 */
#include "config.h"
#include "tier.h"
#include "comm.h"
#include "cudawrap.h"
#include "env.h"
#include "global.h"
#include "log.h"
#include "plan.h"
#include "stats.h"
#include "hier_fused.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

enum { H_AUTO, H_2D, H_ONESHOT, H_FUSED, H_COUNT };
static const char *const hier_algos[H_COUNT] = { "auto", "2d", "oneshot", "fused" };

/* The algorithm a call runs (never H_AUTO), from rank-uniform inputs only (fused: whether the
 * fused kernels' rail exists, agreed at setup). */
static int hier_algo(const tlmpi_call_t *c, int algo, int L, int fused)
{
    if (tlmpi_coll_sibling(c->coll)) {
        return H_2D; /* the fused kernels serve the three */
    }
    if (fused && (algo == H_FUSED || algo == H_AUTO)) {
        return H_FUSED;
    }
    if (c->coll != TLMPI_COLL_ALLREDUCE) {
        return H_2D;
    }
    if (c->count % L != 0) {
        return H_ONESHOT; /* 2d needs equal slices */
    }
    if (algo == H_2D || algo == H_ONESHOT) {
        return algo;
    }
    return c->msg_bytes <= (size_t)TLMPI_ENV_I(HIER_ONESHOT_MAX) ? H_ONESHOT : H_2D;
}

static void hier_describe_algo(tlmpi_coll_t coll, int algo, char *buf, size_t len)
{
    if (coll == TLMPI_COLL_ALLGATHERV || coll == TLMPI_COLL_REDUCE_SCATTER) {
        snprintf(buf, len, "2d (node blocks end to end)");
    } else if (algo == H_FUSED) {
        snprintf(buf, len, "fused (where its rail exists, else auto)");
    } else if (coll != TLMPI_COLL_ALLREDUCE) {
        snprintf(buf, len, algo == H_2D ? "2d" : "auto(fused where its rail exists, else 2d)");
    } else if (algo == H_2D || algo == H_ONESHOT) {
        snprintf(buf, len, "%s", hier_algos[algo]);
    } else {
        snprintf(buf, len, "auto(fused where its rail exists, else oneshot<=%lld,2d)", (long long)TLMPI_ENV_I(HIER_ONESHOT_MAX));
    }
}

/* TLMPI_HIER_RAIL {auto,nccl,staging,ipc} -> the TLMPI_TIER value of the rail comm's plan (ipc: the
 * node tier's kernels between the rail's ranks, which must share one host: the emulated rail) */
static const int rail_tier_env[4] = { TLMPI_TIER_ENV_AUTO, TLMPI_TIER_ENV_NCCL, TLMPI_TIER_ENV_STAGING, TLMPI_TIER_ENV_NODE };

struct tlmpi_hier_comm {
    tlmpi_comm_t *node, *rail; /* the sub communicators' states */
    tlmpi_hier_fused_t *fused; /* the fused algorithm's rail (NULL: none, on every rank) */
    char fused_why[192];       /* why there is none */
    void *scratch;             /* on the comm's device: RSB's L blocks, allreduce's slice, reduce_scatter's
                                  largest node chunk */
    size_t scratch_bytes;
    void *vcounts, *vdispls;   /* the v-forms' steps' counts and displacements (8 bytes an entry, as
                                  many entries as the larger sub comm has ranks) */
};

static unsigned hier_local_caps(tlmpi_tier_comm_t *tc, unsigned *want_p, char *why, size_t len)
{
    (void)why, (void)len;
    if (tlmpi_g.gpu_count <= 0 || tc->dev < 0 || tc->nodes < 2 || tc->local_size < 2 || !tc->regular ||
        tc->node_comm == MPI_COMM_NULL || tc->rail_comm == MPI_COMM_NULL ||
        tc->rank != tc->node_index * tc->local_size + tc->local_rank) {
        return 0;
    }
    (void)want_p; /* not wanted: where it cannot be, the flat tiers serve */
    return TLMPI_CAP_HIER;
}

/* The count of node n's chunk of a v-form (its L blocks), -1 where it does not fit the steps' count
 * type (int unless the call came through a _c entry point). */
static MPI_Count hier_chunk(const tlmpi_call_t *c, int n, int L)
{
    MPI_Count k = 0;
    int j;

    for (j = 0; j < L; j++) {
        k += tlmpi_call_vcount(c, n * L + j);
    }
    return !c->large && k > INT_MAX ? -1 : k;
}

/* Whether a v-form's layout has the 2D steps (the table at the top of the file), from its counts and
 * displacements alone: the same answer on every rank. */
static int hier_v_layout(const tlmpi_call_t *c, int L)
{
    int n, j;

    if (c->inter || c->vtotal < 0 || L < 2 || c->vn % L != 0 || c->vn / L < 2 ||
        (c->coll == TLMPI_COLL_ALLGATHERV && !c->in_place && c->rtype != c->dtype)) {
        return 0;
    }
    for (n = 0; n < c->vn / L; n++) {
        if (hier_chunk(c, n, L) < 0) {
            return 0;
        }
        for (j = 1; c->coll == TLMPI_COLL_ALLGATHERV && j < L; j++) {
            const int i = n * L + j;

            if (tlmpi_call_vdispl(c, i) != tlmpi_call_vdispl(c, i - 1) + (MPI_Aint)tlmpi_call_vcount(c, i - 1)) {
                return 0;
            }
        }
    }
    return 1;
}

static int hier_supports(const tlmpi_call_t *c, unsigned caps)
{
    if ((caps & (TLMPI_CAP_HIER | TLMPI_CAP_GPU | TLMPI_CAP_STREAM)) != (TLMPI_CAP_HIER | TLMPI_CAP_GPU | TLMPI_CAP_STREAM) ||
        !c->contiguous || !tlmpi_call_all_device(c) || c->local_size < 2) {
        return 0;
    }
    if (tlmpi_coll_sibling(c->coll)) {
        return (c->coll == TLMPI_COLL_ALLGATHERV || c->coll == TLMPI_COLL_REDUCE_SCATTER) &&
               hier_v_layout(c, c->local_size);
    }
    return 1; /* allreduce counts the ranks per node do not divide run one-shot */
}

static tlmpi_status_t hier_setup(tlmpi_tier_comm_t *tc, char *why, size_t len)
{
    struct tlmpi_hier_comm *hc = calloc(1, sizeof(*hc));
    int ok, all = 0;

    if (!hc) {
        snprintf(why, len, "out of memory");
        return TLMPI_ERR_NO_MEMORY;
    }
    /* collective over the node comm, then over the rail comm: every rank of the comm in this order */
    hc->node = tlmpi_comm_get_sub(tc->node_comm, 0);
    hc->rail = tlmpi_comm_get_sub(tc->rail_comm, rail_tier_env[TLMPI_ENV_I(HIER_RAIL) & 3]);
    {
        const size_t k = (size_t)(tc->nodes > tc->local_size ? tc->nodes : tc->local_size);

        hc->vcounts = malloc(k * 8);
        hc->vdispls = malloc(k * 8);
    }
    ok = hc->node && hc->rail && hc->node->eligible && hc->rail->eligible && hc->vcounts && hc->vdispls;
    if (PMPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, tc->comm) != MPI_SUCCESS || !all) {
        snprintf(why, len, "%s", ok ? "the node or rail communicator of another rank cannot be accelerated"
                                    : "its node or rail communicator cannot be accelerated");
        free(hc->vcounts);
        free(hc->vdispls);
        free(hc); /* the sub states stay with their comms (the topology frees them) */
        return TLMPI_ERR_NOT_FOUND;
    }
    /* the fused algorithm's rail: collective over the comm, the same outcome on every rank */
    hc->fused = tlmpi_hier_fused_create(tc, hc->fused_why, sizeof(hc->fused_why));
    tc->state[TLMPI_TIER_HIER] = hc; /* the plan's info line describes it (hier_describe) */
    return TLMPI_OK;
}

static void hier_cleanup(tlmpi_tier_comm_t *tc)
{
    struct tlmpi_hier_comm *hc = tc->state[TLMPI_TIER_HIER];

    if (!hc) {
        return;
    }
    tc->state[TLMPI_TIER_HIER] = NULL;
    tlmpi_hier_fused_destroy(tc, hc->fused); /* collective over the comm */
    /* the sub comms' teardowns (collective over each) in one order on every rank of this comm */
    tlmpi_comm_release_sub(tc->node_comm);
    tlmpi_comm_release_sub(tc->rail_comm);
#ifdef HAVE_CUDA
    if (hc->scratch) {
        int saved;

        if (tlmpi_gpu_enter_device(tc->dev, &saved) == 0) {
            cudaFree(hc->scratch);
            tlmpi_gpu_restore_device(saved);
        }
        (void)cudaGetLastError();
    }
#endif
    free(hc->vcounts);
    free(hc->vdispls);
    free(hc);
}

/* For tlmpi_info / TLMPI_LOG_LEVEL=info: the layout, the rail setting and the sub comms' plans. */
static void hier_describe(const tlmpi_tier_comm_t *tc, char *buf, size_t len)
{
    static const char *const rail_names[4] = { "auto", "nccl", "staging", "ipc (emulated rail)" };
    const struct tlmpi_hier_comm *hc = tc->state[TLMPI_TIER_HIER];
    char np[512], rp[512], fd[384];

    if (!hc) {
        snprintf(buf, len, "not set up");
        return;
    }
    tlmpi_plan_describe_comm(&hc->node->tier, &hc->node->plan, np, sizeof(np));
    tlmpi_plan_describe_comm(&hc->rail->tier, &hc->rail->plan, rp, sizeof(rp));
    if (hc->fused) {
        tlmpi_hier_fused_describe(hc->fused, fd, sizeof(fd));
    } else {
        snprintf(fd, sizeof(fd), "fused: none (%s)", hc->fused_why);
    }
    snprintf(buf, len, "%d nodes x %d ranks; %s; host-ordered steps: node comm #%u {%s}; rail comm #%u, TLMPI_HIER_RAIL=%s {%s}",
             tc->nodes, tc->local_size, fd, hc->node->tier.id, np, hc->rail->tier.id,
             rail_names[TLMPI_ENV_I(HIER_RAIL) & 3], rp);
}

/* Entry i of the v-forms' step arrays, in the call's own types. */
static void hier_v_set(const tlmpi_call_t *c, struct tlmpi_hier_comm *hc, int i, MPI_Count n, MPI_Aint d)
{
    if (c->large) {
        ((MPI_Count *)hc->vcounts)[i] = n;
        ((MPI_Aint *)hc->vdispls)[i] = d;
    } else {
        ((int *)hc->vcounts)[i] = (int)n;
        ((int *)hc->vdispls)[i] = (int)d;
    }
}

/* The steps of algorithm a (the table at the top of the file). */
static tlmpi_status_t hier_steps(tlmpi_tier_comm_t *tc, struct tlmpi_hier_comm *hc, const tlmpi_call_t *c, int a,
                                 int *mpi_rc_p)
{
    const int L = tc->local_size;
    const size_t b = c->msg_bytes;
    char *rb = c->rbuf;
    tlmpi_status_t st;
    int saved = -1;

    if (a == H_ONESHOT) {
        /* allreduce: node allreduce into the output, then the rail allreduce of it in place */
        st = tlmpi_coll_run_sub(hc->node, c, TLMPI_COLL_ALLREDUCE, c->in_place ? MPI_IN_PLACE : c->sbuf, rb, c->count,
                                mpi_rc_p);
        return st == TLMPI_OK ? tlmpi_coll_run_sub(hc->rail, c, TLMPI_COLL_ALLREDUCE, MPI_IN_PLACE, rb, c->count, mpi_rc_p)
                              : st;
    }
    if (c->coll == TLMPI_COLL_ALLGATHER) {
        /* 1: node allgather into this node's chunk (in place when the own block is already there) */
        char *chunk = rb + (size_t)tc->node_index * L * b;
        const void *own = c->in_place ? MPI_IN_PLACE : c->sbuf;

        st = tlmpi_coll_run_sub(hc->node, c, TLMPI_COLL_ALLGATHER, own, chunk, c->count, mpi_rc_p);
        /* 2: rail allgather of the chunks, in place */
        return st == TLMPI_OK ? tlmpi_coll_run_sub(hc->rail, c, TLMPI_COLL_ALLGATHER, MPI_IN_PLACE, rb, c->count * L,
                                                   mpi_rc_p)
                              : st;
    }
    if (c->coll == TLMPI_COLL_ALLGATHERV) {
        const int n = tc->node_index, N = tc->nodes;
        int j, m;

        /* 1: node allgatherv of this node's blocks into their places (a node whose blocks are all
         * empty skips it: every rank of the node comm alike) */
        for (j = 0; j < L; j++) {
            hier_v_set(c, hc, j, tlmpi_call_vcount(c, n * L + j), tlmpi_call_vdispl(c, n * L + j));
        }
        st = TLMPI_OK;
        if (hier_chunk(c, n, L) > 0) {
            st = tlmpi_coll_run_sub_v(hc->node, c, TLMPI_COLL_ALLGATHERV, c->in_place ? MPI_IN_PLACE : c->sbuf, rb,
                                      c->count, hc->vcounts, hc->vdispls, mpi_rc_p);
        }
        if (st != TLMPI_OK) {
            return st;
        }
        /* 2: rail allgatherv of the node chunks, in place */
        for (m = 0; m < N; m++) {
            hier_v_set(c, hc, m, hier_chunk(c, m, L), tlmpi_call_vdispl(c, m * L));
        }
        return tlmpi_coll_run_sub_v(hc->rail, c, TLMPI_COLL_ALLGATHERV, MPI_IN_PLACE, rb, 0, hc->vcounts, hc->vdispls,
                                    mpi_rc_p);
    }
    /* the reductions stage through scratch on the comm's device; it grows at the same calls on
     * every rank (the sizes are uniform: reduce_scatter's is the largest node chunk), and a growth is
     * agreed: where any rank could not allocate, every rank declines before any data moved (the call
     * is staged) */
    {
        size_t need = c->coll == TLMPI_COLL_REDUCE_SCATTER_BLOCK ? (size_t)L * b : c->in_bytes / (size_t)L;

        if (c->coll == TLMPI_COLL_REDUCE_SCATTER) {
            int m;

            need = 0;
            for (m = 0; m < tc->nodes; m++) {
                size_t k = (size_t)hier_chunk(c, m, L) * (size_t)c->dt_size;

                need = k > need ? k : need;
            }
        }

        need = need ? need : 1;
        if (need > hc->scratch_bytes || !hc->scratch) {
            int ok = 0, all = 0;

            if (tlmpi_gpu_enter_device(tc->dev, &saved) == 0) {
                ok = tlmpi_gpu_scratch_reserve(&hc->scratch, &hc->scratch_bytes, need) == 0;
                tlmpi_gpu_restore_device(saved);
            }
            if (PMPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, tc->comm) != MPI_SUCCESS || !all) {
                tlmpi_warn_once(COLL, "%s on tier hier: %zu bytes of scratch could not be allocated on some rank "
                                "(here: %s); such calls are staged", tlmpi_coll_name(c->coll), need,
                                ok ? "allocated" : "failed");
                return TLMPI_ERR_UNSUPPORTED;
            }
        }
    }
    if (c->coll == TLMPI_COLL_REDUCE_SCATTER) {
        const int n = tc->node_index;
        int j, m;

        /* 1: rail reduce-scatter of the N node chunks into scratch */
        for (m = 0; m < tc->nodes; m++) {
            hier_v_set(c, hc, m, hier_chunk(c, m, L), 0);
        }
        st = tlmpi_coll_run_sub_v(hc->rail, c, TLMPI_COLL_REDUCE_SCATTER, c->in, hc->scratch, 0, hc->vcounts, NULL,
                                  mpi_rc_p);
        if (st != TLMPI_OK || hier_chunk(c, n, L) == 0) {
            return st; /* a node whose blocks are all empty: nothing more (every rank of the node alike) */
        }
        /* 2: node reduce-scatter of this node's chunk into the own block */
        for (j = 0; j < L; j++) {
            hier_v_set(c, hc, j, tlmpi_call_vcount(c, n * L + j), 0);
        }
        return tlmpi_coll_run_sub_v(hc->node, c, TLMPI_COLL_REDUCE_SCATTER, hc->scratch, rb, 0, hc->vcounts, NULL,
                                    mpi_rc_p);
    }
    if (c->coll == TLMPI_COLL_REDUCE_SCATTER_BLOCK) {
        /* 1: rail reduce-scatter of the N chunks of L blocks into scratch; 2: node reduce-scatter */
        st = tlmpi_coll_run_sub(hc->rail, c, TLMPI_COLL_REDUCE_SCATTER_BLOCK, c->in, hc->scratch, c->count * L, mpi_rc_p);
        return st == TLMPI_OK ? tlmpi_coll_run_sub(hc->node, c, TLMPI_COLL_REDUCE_SCATTER_BLOCK, hc->scratch, rb,
                                                   c->count, mpi_rc_p)
                              : st;
    }
    /* allreduce 2d: node reduce-scatter of slices, rail allreduce of the own slice, node allgather */
    {
        MPI_Count k = c->count / L;

        st = tlmpi_coll_run_sub(hc->node, c, TLMPI_COLL_REDUCE_SCATTER_BLOCK, c->in, hc->scratch, k, mpi_rc_p);
        if (st == TLMPI_OK) {
            st = tlmpi_coll_run_sub(hc->rail, c, TLMPI_COLL_ALLREDUCE, MPI_IN_PLACE, hc->scratch, k, mpi_rc_p);
        }
        return st == TLMPI_OK ? tlmpi_coll_run_sub(hc->node, c, TLMPI_COLL_ALLGATHER, hc->scratch, rb, k, mpi_rc_p) : st;
    }
}

static tlmpi_status_t hier_run(tlmpi_tier_comm_t *tc, const tlmpi_call_t *c, int algo, int *mpi_rc_p)
{
    struct tlmpi_hier_comm *hc = tc->state[TLMPI_TIER_HIER];
    int a;
    tlmpi_status_t st;

    if (!hc) {
        return TLMPI_ERR_UNSUPPORTED;
    }
    a = hier_algo(c, TLMPI_ALGO_INDEX(algo), tc->local_size, hc->fused != NULL);
    st = a == H_FUSED ? tlmpi_hier_fused_run(tc, hc->fused, c, TLMPI_ALGO_CTAS(algo)) : hier_steps(tc, hc, c, a, mpi_rc_p);
    if (st == TLMPI_OK) {
        tlmpi_stat_algo_add(c->coll, TLMPI_PATH_HIER, a, c->msg_bytes);
    }
    return st;
}

/* A started call completed: the fused kernel's error record (the steps completed at the start:
 * each is a blocking collective of its sub communicator). */
static void hier_complete(tlmpi_tier_comm_t *tc, const tlmpi_call_t *c, int algo)
{
    struct tlmpi_hier_comm *hc = tc->state[TLMPI_TIER_HIER];

    if (hc && hier_algo(c, TLMPI_ALGO_INDEX(algo), tc->local_size, hc->fused != NULL) == H_FUSED) {
        tlmpi_hier_fused_complete(tc, hc->fused, c);
    }
}

const tlmpi_tier_t tlmpi_tier_hier = {
    .name = "hier",
    .label = TLMPI_PATH_HIER,
    .algos = hier_algos,
    .n_algos = H_COUNT,
    .describe_algo = hier_describe_algo,
    .cap = TLMPI_CAP_HIER,
    .auto_unless = TLMPI_CAP_HIER, /* not in auto until measured against the flat tiers: TLMPI_TIER=hier
                                      or a table names it */
    .device_waits = 1,             /* its steps run on the node tier and NCCL */
    .local_caps = hier_local_caps,
    .setup = hier_setup,
    .supports = hier_supports,
    .run = hier_run,
    .complete = hier_complete,
    .cleanup = hier_cleanup,
    .describe = hier_describe,
};
