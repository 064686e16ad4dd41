/*
 * topo: where the ranks of a communicator live. Node comm = PMPI_Comm_split_type(SHARED),
 * optionally split further into fake nodes of TLMPI_TOPO_RANKS_PER_NODE consecutive world ranks
 * (tests). Rail comm = the ranks with the same local rank on every node. A layout with unequal
 * ranks per node is irregular: tlmpi does not accelerate it. GPU/NIC locality comes from hwtopo (hwloc).
 */
#ifndef TLMPI_TOPO_H
#define TLMPI_TOPO_H

#include "tlmpi.h"
#include <mpi.h>

typedef struct {
    int size, rank;
    MPI_Comm node_comm;     /* owned; MPI_COMM_NULL when not built */
    MPI_Comm rail_comm;     /* owned; MPI_COMM_NULL when not built or irregular */
    int node_count, node_index;
    int local_rank, local_size;
    int rail_rank, rail_size;
    int regular;            /* same number of ranks on every node */
    int one_host;           /* every rank of the comm is on this rank's real node (shared memory),
                             * fake nodes or not */
    int gpu_device;         /* CUDA device of this rank (current device at build), -1 none */
    char gpu_busid[32];     /* PCI bus id of that device, "" if none */
    int shared_gpu;         /* another rank of the comm on this host (real node) uses the same GPU */
    int gpu_sharers;        /* ranks of the comm on this host on this rank's GPU, itself included (0: unknown) */
    int rail_id;            /* nearest NIC's index (hwloc, PCI order) if every rank of the comm
                             * knows its NIC, else local_rank on every rank (never mixed) */
    char nic[32];           /* nearest NIC name from hwloc, "" if none */
    char nic_dist[8];       /* GPU -> nic distance class (PIX/PXB/PHB/NODE/SYS), "" if none */
    int numa_node;          /* NUMA node of the GPU (hwloc), -1 if unknown */
} tlmpi_topo_t;

/* Pure helper (unit-tested): the fake-node color of a process, with rpn ranks per fake node
 * (rpn <= 0: no split, color 0). topo_build passes the MPI_COMM_WORLD rank, so fake node k of a
 * real node holds world ranks k*rpn .. k*rpn+rpn-1 in every communicator (consistent under dup and
 * split, like real nodes). */
int tlmpi_topo_fake_node_color(int rank, int rpn);

/* This node's MPI processes per visible GPU, from the launcher's local-size variable (Open MPI,
 * MPICH/Hydra, PMI, Slurm): ceil(local size / GPUs); 0 when no launcher says. Not collective. */
int tlmpi_topo_gpu_local_ranks(void);
/* How many waiting kernels of tlmpi may have to be resident on this rank's GPU at once: the ranks of
 * the comm that share it (in_comm) or, when larger, this node's MPI processes per visible GPU (from
 * the launcher's local-size variable: Open MPI, MPICH/Hydra, PMI, Slurm; disjoint
 * sub-communicators run at once), times tlmpi_topo_concurrent_colls() (communicators whose kernels
 * one process may have in flight at once: threads, and non-blocking, stream-ordered and replayed
 * calls on different communicators at any thread level). Not collective; the caller agrees on what
 * it derives. */
int tlmpi_topo_gpu_kernel_sharers(int in_comm);
/* TLMPI_CONCURRENT_COLLS, its 0 (auto) resolved: 4 under MPI_THREAD_MULTIPLE, else 2 (1..64). */
int tlmpi_topo_concurrent_colls(void);

/* A node kernel's columns and CTAs (cuda/kernels.h: tlmpi_node_args_t.cols, ctas) where a call may
 * run alone on the GPU (a blocking call: src/tier/node.c). split: the CTAs of a kernel beside the
 * process's others (tlmpi_xport_t.max_ctas); alone: those of a kernel with none beside it
 * (max_ctas_alone). _cols: the columns from the size's count n (<= alone), rounded up to a multiple
 * of split when above it (at most alone), so that split CTAs take them in whole rounds; the same on
 * every rank. _ctas: the CTAs this rank launches for them: all when nothing else of the process is in
 * flight (alone_now: tlmpi_gpu_alone), else at most split, as few as take the columns in the same
 * number of rounds (ceil(cols / rounds)). Pure functions. */
int tlmpi_topo_grid_cols(int n, int split, int alone);
int tlmpi_topo_grid_ctas(int cols, int split, int alone_now);

/* Collective over comm. On success every field is set; irregular layouts succeed with regular=0. */
tlmpi_status_t tlmpi_topo_build(MPI_Comm comm, int ranks_per_node, tlmpi_topo_t *topo);
void tlmpi_topo_destroy(tlmpi_topo_t *topo);

#endif
