/*
 * xport: what the host sides of the node kernels' transports (ipc.c: CUDA IPC; devcomm.c: the NCCL
 * Device API) have in common: the state the node tier reads from whichever transport it runs on
 * (tlmpi_xport_t, the first member of each transport's own state), the host-mapped error record
 * of the kernels' bounded device waits, the CTA limit that keeps every rank's CTAs resident, and
 * the closing agreement of a transport's setup (one PMPI_Allreduce over every rank's success and
 * CTA limit, which also fills the descriptor's rank-uniform fields), and whether NVLink multicast
 * is allowed at all.
 */
#ifndef TLMPI_XPORT_H
#define TLMPI_XPORT_H

#include "kernels.h"
#include <mpi.h>
#include <stddef.h>

typedef struct tlmpi_xport {
    tlmpi_node_xport_t x;               /* what every node kernel launch gets */
    volatile tlmpi_node_err_t *err;     /* host view of x.err */
    int dev;                            /* this rank's device (the pool's) */
    int ranks_on_gpu;                   /* ranks of the comm on this rank's GPU, itself included */
    int shared;                         /* some GPU holds several ranks of the comm (the same on all) */
    int max_ctas;                       /* agreed: the least tlmpi_cuda_node_max_ctas over the ranks:
                                           CTAs of a kernel that may run beside this process's other
                                           kernels (tlmpi_topo_concurrent_colls of them) */
    int max_ctas_alone;                 /* agreed: CTAs of a kernel that runs with no other kernel of
                                           this process in flight (a blocking call: src/tier/node.c),
                                           max_ctas x tlmpi_topo_concurrent_colls() up to
                                           TLMPI_NODE_MAX_CTAS; max_ctas under MPI_THREAD_MULTIPLE and
                                           on multicast (its kernels take one column per CTA). Also the
                                           most columns of any form's kernel whose CTA knob asks for
                                           more than max_ctas (taken in turn by max_ctas CTAs) */
} tlmpi_xport_t;

/* The error record (cudaHostAllocMapped, zeroed) and its device address in t->x.err; 0, or -1 with
 * the reason (nothing left allocated). The pool's device is current. */
int tlmpi_xport_err_create(tlmpi_xport_t *t, char *why, size_t len);
void tlmpi_xport_err_destroy(tlmpi_xport_t *t);

/* The most CTAs a node kernel may use on device dev (0 if the occupancy query fails), for a comm
 * with ranks_on_gpu ranks on it: the resident capacity shared by tlmpi_topo_gpu_kernel_sharers
 * kernels (all CTAs of every kernel that may wait at once must be resident). */
int tlmpi_xport_max_ctas(int dev, int ranks_on_gpu);

/* 1 if this rank may use NVLink multicast on device dev: TLMPI_NVLS is not 0, NCCL_NVLS_ENABLE is
 * not 0 and the device reports multicast support (unknown counts as none); else 0 and why names the
 * first reason ("TLMPI_NVLS=0", "NCCL_NVLS_ENABLE=0", "no multicast support on device 0"). */
int tlmpi_xport_multicast_allowed(int dev, char *why, size_t len);

/* Collective over comm: agree on every rank's success (ok) and on the least t->max_ctas and
 * max_ctas_alone (derived here from each rank's t->max_ctas and t->x.mc_base). On success
 * everywhere: t->max_ctas is the agreed limit, t->x's rank, nranks, data_bytes and timeout_ns are
 * filled (TLMPI_TIMEOUT), x.stuck is 0, and 0 is returned. Otherwise -1 on every rank; on a rank
 * that succeeded, why says "node rank(s) 1,3 <failed>". */
int tlmpi_xport_agree(MPI_Comm comm, int rank, int size, int ok, size_t data_bytes, tlmpi_xport_t *t,
                      const char *failed, char *why, size_t len);
/* One agreement between the collective steps of a setup (MIN of ok over comm): 0 when ok on every
 * rank, else -1 with why (this rank's own reason, or that `step` failed on another rank). */
int tlmpi_xport_agree_step(MPI_Comm comm, int ok, const char *step, char *why, size_t len);

#endif
