/*
 * MPI test: tlmpi's view of nodes and rails (tlmpi_comm_query) with fake nodes.
 * Built three times from this file (tests/local.mk):
 *   mpi_topo       2 ranks, no fake nodes: 1 node x 2; then TOPO_RANKS_PER_NODE=1 through
 *                  tlmpi_config_set on a dup: 2 nodes x 1.
 *   mpi_topo_np4   4 ranks, TLMPI_TOPO_RANKS_PER_NODE=2 set with setenv before MPI_Init:
 *                  2 nodes x 2 on MPI_COMM_WORLD, a dup and an even/odd split.
 *   mpi_topo_np3   3 ranks, TOPO_RANKS_PER_NODE=2 through tlmpi_config_set before the first query:
 *                  irregular (2 + 1), not eligible; MPI_Allreduce on host buffers still correct and
 *                  counted as passthrough.
 * Expected values are computed independently from each comm's world ranks. Failures are reported
 * and summed over ranks by the tests' harness (tests/harness.h), so every rank exits alike (0 or 1).
 */
#include "config.h"
#include "tlmpi.h"
#include "harness.h"

#ifndef MPI_TOPO_MODE
#define MPI_TOPO_MODE 2
#endif

static int world_rank;

/* Expected layout of comm when world rank w sits on fake node w / rpn (rpn 0: one node). */
typedef struct {
    int node_count, node_index, local_rank, local_size, rail_rank, rail_size, regular;
} expect_t;

static void expected(MPI_Comm comm, int rpn, expect_t *e)
{
    MPI_Group wg, cg;
    int size, rank, i, *cr, *wr, *node, *lrank, *nsize, nnodes = 0;

    PMPI_Comm_size(comm, &size);
    PMPI_Comm_rank(comm, &rank);
    cr = malloc(5 * size * sizeof(int));
    wr = cr + size;
    node = wr + size;  /* node index of comm rank i (by order of the lowest comm rank) */
    lrank = node + size;
    nsize = lrank + size; /* ranks per node index */
    for (i = 0; i < size; i++) {
        cr[i] = i;
    }
    PMPI_Comm_group(MPI_COMM_WORLD, &wg);
    PMPI_Comm_group(comm, &cg);
    PMPI_Group_translate_ranks(cg, size, cr, wg, wr);
    PMPI_Group_free(&wg);
    PMPI_Group_free(&cg);
    for (i = 0; i < size; i++) {
        int j, key = rpn > 0 ? wr[i] / rpn : 0;

        node[i] = -1;
        lrank[i] = 0;
        for (j = 0; j < i; j++) {
            if ((rpn > 0 ? wr[j] / rpn : 0) == key) {
                node[i] = node[j];
                lrank[i]++;
            }
        }
        if (node[i] < 0) {
            node[i] = nnodes;
            nsize[nnodes++] = 0;
        }
        nsize[node[i]]++;
    }
    e->node_count = nnodes;
    e->node_index = node[rank];
    e->local_rank = lrank[rank];
    e->local_size = nsize[node[rank]];
    e->regular = 1;
    for (i = 0; i < nnodes; i++) {
        e->regular &= nsize[i] == nsize[0];
    }
    e->rail_rank = e->rail_size = 0;
    for (i = 0; i < size; i++) {
        if (lrank[i] == e->local_rank) {
            e->rail_rank += node[i] < e->node_index;
            e->rail_size++;
        }
    }
    free(cr);
}

static void check_comm(const char *what, MPI_Comm comm, int rpn)
{
    tlmpi_comm_info_t info;
    expect_t e;
    tlmpi_status_t st;
    int size, rank;

    PMPI_Comm_size(comm, &size);
    PMPI_Comm_rank(comm, &rank);
    memset(&info, 0x5a, sizeof(info)); /* poison */
    st = tlmpi_comm_query(comm, &info);
    TST_CHECK(st == TLMPI_OK, "%s: tlmpi_comm_query: %s", what, tlmpi_status_string(st));
    if (st != TLMPI_OK) {
        return;
    }
    TST_CHECK(info.size == size && info.rank == rank, "%s: size/rank %d/%d", what, info.size, info.rank);
    if (size < 2) {
        /* size 1 stays eligible (a device call on it is a one-rank NCCL copy): 1 node x 1 rank */
        TST_CHECK(info.eligible && info.node_count == 1 && info.local_size == 1 && info.rail_size == 1,
              "%s: size-1 comm: eligible %d nodes %d local %d rail %d", what, info.eligible,
              info.node_count, info.local_size, info.rail_size);
        return;
    }
    expected(comm, rpn, &e);
    printf("[rank %d] %s: node %d/%d local %d/%d rail %d/%d regular %d eligible %d%s%s gpu %d rail_id %d\n",
           world_rank, what, info.node_index, info.node_count, info.local_rank, info.local_size,
           info.rail_rank, info.rail_size, info.regular, info.eligible, info.eligible ? "" : " ",
           info.eligible ? "" : info.reason, info.gpu_device, info.rail_id);
    TST_CHECK(info.node_count == e.node_count, "%s: node_count %d, want %d", what, info.node_count, e.node_count);
    TST_CHECK(info.node_index == e.node_index, "%s: node_index %d, want %d", what, info.node_index, e.node_index);
    TST_CHECK(info.local_rank == e.local_rank, "%s: local_rank %d, want %d", what, info.local_rank, e.local_rank);
    TST_CHECK(info.local_size == e.local_size, "%s: local_size %d, want %d", what, info.local_size, e.local_size);
    TST_CHECK(info.rail_rank == e.rail_rank, "%s: rail_rank %d, want %d", what, info.rail_rank, e.rail_rank);
    TST_CHECK(info.rail_size == e.rail_size, "%s: rail_size %d, want %d", what, info.rail_size, e.rail_size);
    TST_CHECK(info.regular == e.regular, "%s: regular %d, want %d", what, info.regular, e.regular);
    TST_CHECK(info.eligible == e.regular, "%s: eligible %d with regular %d (%s)", what, info.eligible,
          e.regular, info.reason ? info.reason : "(null)");
    TST_CHECK(info.reason != NULL, "%s: reason is NULL", what);
    if (info.gpu_device < 0) {
        /* no GPU: no bus id, so no hwloc rail id; every rank falls back to its local rank */
        TST_CHECK(info.rail_id == info.local_rank, "%s: rail_id %d without a GPU, want local rank %d", what,
              info.rail_id, info.local_rank);
    } else {
        TST_CHECK(info.rail_id >= 0, "%s: rail_id %d", what, info.rail_id);
    }
}

/* Literal expectations for MPI_COMM_WORLD, on top of the computed ones. */
static void check_world_literal(int size, int rpn)
{
    tlmpi_comm_info_t info;

    if (tlmpi_comm_query(MPI_COMM_WORLD, &info) != TLMPI_OK) {
        TST_FAIL("tlmpi_comm_query(WORLD) failed");
        return;
    }
    if (size == 4 && rpn == 2) {
        TST_CHECK(info.node_count == 2 && info.local_size == 2, "want 2 nodes x 2, got %d x %d",
              info.node_count, info.local_size);
        TST_CHECK(info.node_index == world_rank / 2 && info.local_rank == world_rank % 2,
              "node %d local %d", info.node_index, info.local_rank);
        TST_CHECK(info.rail_rank == world_rank / 2 && info.rail_size == 2, "rail %d/%d", info.rail_rank,
              info.rail_size);
        TST_CHECK(info.regular == 1 && info.eligible == 1, "regular %d eligible %d", info.regular, info.eligible);
    } else if (size == 3 && rpn == 2) {
        TST_CHECK(info.node_count == 2, "node_count %d", info.node_count);
        TST_CHECK(info.local_size == (world_rank < 2 ? 2 : 1), "local_size %d", info.local_size);
        TST_CHECK(info.regular == 0 && info.eligible == 0, "regular %d eligible %d", info.regular, info.eligible);
        TST_CHECK(info.reason && strstr(info.reason, "irregular"), "reason '%s'", info.reason ? info.reason : "");
    } else if (size == 2 && rpn == 0) {
        TST_CHECK(info.node_count == 1 && info.local_size == 2 && info.local_rank == world_rank,
              "want 1 node x 2, got %d x %d (local %d)", info.node_count, info.local_size, info.local_rank);
        TST_CHECK(info.rail_size == 1 && info.rail_rank == 0, "rail %d/%d", info.rail_rank, info.rail_size);
        TST_CHECK(info.regular == 1 && info.eligible == 1, "regular %d eligible %d", info.regular, info.eligible);
    }
}

/* Host-buffer MPI_Allreduce on comm: exact integer result, counted as passthrough. */
static void check_host_allreduce(MPI_Comm comm, int iters)
{
    tlmpi_stat_t before, after;
    int size, rank, it, n = 1000, i;
    long long *in = malloc(n * sizeof(*in)), *out = malloc(n * sizeof(*out));

    PMPI_Comm_size(comm, &size);
    PMPI_Comm_rank(comm, &rank);
    srand(12345u + 977u * (unsigned)world_rank);
    tlmpi_get_stats(TLMPI_COLL_ALLREDUCE, TLMPI_PATH_PASSTHROUGH, &before);
    for (it = 0; it < iters; it++) {
        int salt = rand() % 1000;
        int salts[16];

        /* everyone's salt, to compute the expected sum locally (PMPI: not counted) */
        for (i = 0; i < n; i++) {
            in[i] = (long long)(rank + 1) * (i + 1) + salt;
            out[i] = -777; /* poison */
        }
        PMPI_Allgather(&salt, 1, MPI_INT, salts, 1, MPI_INT, comm);
        MPI_Allreduce(in, out, n, MPI_LONG_LONG, MPI_SUM, comm);
        for (i = 0; i < n; i++) {
            long long want = (long long)size * (size + 1) / 2 * (i + 1);
            int r;

            for (r = 0; r < size; r++) {
                want += salts[r];
            }
            if (out[i] != want) {
                TST_FAIL("allreduce iter %d element %d: %lld, want %lld", it, i, out[i], want);
                break;
            }
        }
    }
    tlmpi_get_stats(TLMPI_COLL_ALLREDUCE, TLMPI_PATH_PASSTHROUGH, &after);
    TST_CHECK(after.calls - before.calls == (uint64_t)iters, "passthrough calls +%llu, want +%d",
          (unsigned long long)(after.calls - before.calls), iters);
    TST_CHECK(after.bytes - before.bytes == (uint64_t)iters * n * sizeof(long long), "passthrough bytes +%llu",
          (unsigned long long)(after.bytes - before.bytes));
    free(in);
    free(out);
}

int main(int argc, char **argv)
{
    MPI_Comm dup, half;
    int size, rpn = 0;
    tlmpi_status_t st = TLMPI_OK;

    (void)st; /* used only in some of the three builds of this file */

#if MPI_TOPO_MODE == 4
    setenv("TLMPI_TOPO_RANKS_PER_NODE", "2", 1);
    rpn = 2;
#endif
    tst_init(MPI_TOPO_MODE == 4 ? "mpi_topo_np4" : MPI_TOPO_MODE == 3 ? "mpi_topo_np3" : "mpi_topo", &argc, &argv);
    world_rank = tst_rank;
    PMPI_Comm_size(MPI_COMM_WORLD, &size);
#if MPI_TOPO_MODE == 3
    st = tlmpi_config_set("TOPO_RANKS_PER_NODE", "2");
    TST_CHECK(st == TLMPI_OK, "tlmpi_config_set: %s", tlmpi_status_string(st));
    rpn = 2;
#endif
    TST_CHECK(size == MPI_TOPO_MODE, "built for %d ranks, running with %d", MPI_TOPO_MODE, size);

    check_comm("world", MPI_COMM_WORLD, rpn);
    check_world_literal(size, rpn);
    PMPI_Comm_dup(MPI_COMM_WORLD, &dup);
    check_comm("dup", dup, rpn);
    PMPI_Comm_split(MPI_COMM_WORLD, world_rank % 2, world_rank, &half);
    check_comm(world_rank % 2 ? "odd" : "even", half, rpn);
    check_comm("self", MPI_COMM_SELF, rpn);
    if (size == 3) {
        /* irregular world: not accelerated, host collectives still right, counted as passthrough */
        check_host_allreduce(MPI_COMM_WORLD, 8);
    } else {
        check_host_allreduce(dup, 4);
    }
    PMPI_Comm_free(&half);
    PMPI_Comm_free(&dup);
#if MPI_TOPO_MODE == 2
    {
        MPI_Comm dup1;

        /* fake nodes of one rank each, switched on at run time: only new comms see it */
        st = tlmpi_config_set("TOPO_RANKS_PER_NODE", "1");
        TST_CHECK(st == TLMPI_OK, "tlmpi_config_set: %s", tlmpi_status_string(st));
        PMPI_Comm_dup(MPI_COMM_WORLD, &dup1);
        check_comm("dup rpn=1", dup1, 1);
        check_world_literal(size, 0); /* world's state was built before: unchanged */
        PMPI_Comm_free(&dup1);
    }
#endif
    TST_CHECK(tlmpi_config_set("NO_SUCH_SETTING", "1") == TLMPI_ERR_NOT_FOUND, "unknown setting accepted");
    TST_CHECK(tlmpi_config_set("TOPO_RANKS_PER_NODE", "two") == TLMPI_ERR_INVALID_ARG, "bad value accepted");

    return tst_finish();
}
