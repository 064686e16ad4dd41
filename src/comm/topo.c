#include "config.h"
#include "topo.h"
#include "cudawrap.h"
#include "hwtopo.h"
#include "env.h"
#include "global.h"
#include "log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int tlmpi_topo_fake_node_color(int rank, int rpn)
{
    return rpn > 0 ? rank / rpn : 0;
}

int tlmpi_topo_concurrent_colls(void)
{
    int c = TLMPI_ENV_I(CONCURRENT_COLLS);

    if (c <= 0) {
        c = tlmpi_g.thread_level == MPI_THREAD_MULTIPLE ? 4 : 2;
    }
    return c > 64 ? 64 : c;
}

int tlmpi_topo_grid_cols(int n, int split, int alone)
{
    int c;

    if (split < 1 || n <= split || alone <= split) {
        return n;
    }
    c = (n + split - 1) / split * split;
    return c < alone ? c : alone;
}

int tlmpi_topo_grid_ctas(int cols, int split, int alone_now)
{
    int rounds;

    if (alone_now || split < 1 || cols <= split) {
        return cols;
    }
    rounds = (cols + split - 1) / split;
    return (cols + rounds - 1) / rounds;
}

int tlmpi_topo_gpu_local_ranks(void)
{
    static const char *const vars[] = { "OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "PMI_LOCAL_SIZE",
                                        "SLURM_NTASKS_PER_NODE" };
    int local = 0, gpus = tlmpi_g.gpu_count > 0 ? tlmpi_g.gpu_count : 1;
    size_t i;

    for (i = 0; i < sizeof(vars) / sizeof(vars[0]) && local <= 0; i++) {
        const char *v = getenv(vars[i]);

        local = v ? atoi(v) : 0;
    }
    return local > 0 ? (local + gpus - 1) / gpus : 0;
}

int tlmpi_topo_gpu_kernel_sharers(int in_comm)
{
    int per = tlmpi_topo_gpu_local_ranks(), n;

    n = per > in_comm ? per : in_comm;
    n = n > 0 ? n : 1;
    /* communicators with kernels in flight at once: threads, and at any thread level non-blocking,
     * stream-ordered and graph-replayed calls of different communicators (their kernels run side by
     * side on the communicators' streams) */
    n *= tlmpi_topo_concurrent_colls();
    return n;
}

#define MPI_TRY(_call)                                                                       \
    do {                                                                                     \
        int _rc = (_call);                                                                   \
        if (_rc != MPI_SUCCESS) {                                                            \
            tlmpi_warn(TOPO, "%s failed (%d)", #_call, _rc);                                 \
            status = TLMPI_ERR_MPI;                                                          \
            goto err;                                                                        \
        }                                                                                    \
    } while (0)

tlmpi_status_t tlmpi_topo_build(MPI_Comm comm, int ranks_per_node, tlmpi_topo_t *t)
{
    tlmpi_status_t status = TLMPI_OK;
    MPI_Comm real_node = MPI_COMM_NULL;
    int is_leader, max[3], local_max[3], hw_rail = -1, real_size = 0;
    tlmpi_hwtopo_info_t hw;

    memset(t, 0, sizeof(*t));
    t->node_comm = t->rail_comm = MPI_COMM_NULL;
    t->gpu_device = -1;
    MPI_TRY(PMPI_Comm_size(comm, &t->size));
    MPI_TRY(PMPI_Comm_rank(comm, &t->rank));
    MPI_TRY(PMPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &real_node));
    if (ranks_per_node > 0) {
        int r, wr;

        /* the color comes from the world rank, not from the position in comm, so that a process
         * is on the same fake node in every communicator (as with real nodes) */
        MPI_TRY(PMPI_Comm_rank(real_node, &r));
        MPI_TRY(PMPI_Comm_size(real_node, &real_size));
        MPI_TRY(PMPI_Comm_rank(MPI_COMM_WORLD, &wr));
        MPI_TRY(PMPI_Comm_split(real_node, tlmpi_topo_fake_node_color(wr, ranks_per_node), r, &t->node_comm));
        /* real_node stays until the GPU sharing is known: fake nodes of one host share its GPUs */
    } else {
        MPI_TRY(PMPI_Comm_size(real_node, &real_size));
        t->node_comm = real_node;
        real_node = MPI_COMM_NULL;
    }
    t->one_host = real_size == t->size; /* the same answer on every rank */
    MPI_TRY(PMPI_Comm_rank(t->node_comm, &t->local_rank));
    MPI_TRY(PMPI_Comm_size(t->node_comm, &t->local_size));
    /* node index: count the node leaders (local rank 0) with a lower rank in comm */
    is_leader = t->local_rank == 0;
    MPI_TRY(PMPI_Exscan(&is_leader, &t->node_index, 1, MPI_INT, MPI_SUM, comm));
    if (t->rank == 0) {
        t->node_index = 0;
    }
    MPI_TRY(PMPI_Bcast(&t->node_index, 1, MPI_INT, 0, t->node_comm));
    MPI_TRY(PMPI_Allreduce(&is_leader, &t->node_count, 1, MPI_INT, MPI_SUM, comm));
    /* GPU and hwloc locality are local queries: do them first so that their agreement rides on
     * the regularity reduction below */
    t->gpu_device = tlmpi_gpu_current_device();
    tlmpi_gpu_pci_bus_id(t->gpu_device, t->gpu_busid, sizeof(t->gpu_busid));
    t->rail_id = t->local_rank;
    t->numa_node = -1;
    if (t->gpu_busid[0] && tlmpi_hwtopo_gpu_locality(t->gpu_busid, &hw) == TLMPI_OK) {
        t->numa_node = hw.numa_node;
        if (hw.rail_id >= 0) {
            hw_rail = hw.rail_id;
            snprintf(t->nic, sizeof(t->nic), "%s", hw.nic);
            snprintf(t->nic_dist, sizeof(t->nic_dist), "%s", tlmpi_hwtopo_dist_name(hw.dist));
        }
    }
    local_max[0] = -t->local_size;
    local_max[1] = t->local_size;
    local_max[2] = hw_rail < 0; /* 1 = this rank has no NIC-derived rail id */
    MPI_TRY(PMPI_Allreduce(local_max, max, 3, MPI_INT, MPI_MAX, comm));
    t->regular = -max[0] == max[1];
    /* rail id from hwloc: the nearest NIC's index in PCI order. Reported only: the rail comm stays
     * "same local rank on every node". Rank-uniform rule: either every rank of comm reports its NIC
     * index or every rank reports its local rank; a mix (a node without NICs, a rank without a GPU,
     * TLMPI_HWLOC=0 somewhere) would put unrelated numbers side by side. */
    if (!max[2]) {
        t->rail_id = hw_rail;
    }
    MPI_TRY(PMPI_Comm_split(comm, t->local_rank, t->node_index, &t->rail_comm));
    MPI_TRY(PMPI_Comm_rank(t->rail_comm, &t->rail_rank));
    MPI_TRY(PMPI_Comm_size(t->rail_comm, &t->rail_size));

    /* shared GPU: every rank of the comm on this host (its real node: fake nodes of one host share
     * its GPUs) gathers their bus ids (the host's rank count is the same on all of them, so all
     * take the same branch) and looks for a duplicate; the answer is host-uniform */
    {
        MPI_Comm host = real_node != MPI_COMM_NULL ? real_node : t->node_comm;
        int hn = real_node != MPI_COMM_NULL ? real_size : t->local_size;

        if (hn <= 64) {
            char ids[64][32];
            int i, j;

            MPI_TRY(PMPI_Allgather(t->gpu_busid, 32, MPI_CHAR, ids, 32, MPI_CHAR, host));
            for (i = 0; i < hn; i++) {
                for (j = i + 1; j < hn && ids[i][0]; j++) {
                    t->shared_gpu |= !strncmp(ids[i], ids[j], 32);
                }
                t->gpu_sharers += t->gpu_busid[0] && !strncmp(ids[i], t->gpu_busid, 32);
            }
        }
    }
    if (real_node != MPI_COMM_NULL) {
        MPI_TRY(PMPI_Comm_free(&real_node));
    }
    tlmpi_debug(TOPO, "rank %d/%d node %d/%d local %d/%d rail %d/%d regular %d gpu %d (%s) shared %d "
                "rail id %d nic %s %s", t->rank, t->size, t->node_index, t->node_count, t->local_rank,
                t->local_size, t->rail_rank, t->rail_size, t->regular, t->gpu_device, t->gpu_busid,
                t->shared_gpu, t->rail_id, t->nic[0] ? t->nic : "none", t->nic_dist);
    return TLMPI_OK;

err:
    if (real_node != MPI_COMM_NULL) {
        PMPI_Comm_free(&real_node);
    }
    tlmpi_topo_destroy(t);
    return status;
}

void tlmpi_topo_destroy(tlmpi_topo_t *t)
{
    if (t->node_comm != MPI_COMM_NULL) {
        PMPI_Comm_free(&t->node_comm);
    }
    if (t->rail_comm != MPI_COMM_NULL) {
        PMPI_Comm_free(&t->rail_comm);
    }
}
