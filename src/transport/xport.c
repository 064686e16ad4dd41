/*
 * xport: the parts every node-kernel transport's host side shares (see xport.h): the mapped error
 * record, the CTA limit, the closing agreement of a setup.
 */
#include "config.h"
#include "xport.h"
#include "cudawrap.h"
#include "env.h"
#include "global.h"
#include "topo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "1,3" from a bit per node rank */
static void rank_list(unsigned bits, char *buf, size_t len)
{
    size_t o = 0;
    int q;

    buf[0] = '\0';
    for (q = 0; q < TLMPI_NODE_MAX_RANKS && o < len; q++) {
        if (bits & (1u << q)) {
            o += (size_t)snprintf(buf + o, len - o, "%s%d", o ? "," : "", q);
        }
    }
}

int tlmpi_xport_multicast_allowed(int dev, char *why, size_t len)
{
    why[0] = '\0';
    if (TLMPI_ENV_I(NVLS) == TLMPI_TRI_NO) {
        snprintf(why, len, "TLMPI_NVLS=0");
    } else if (tlmpi_g.nccl_nvls_off) {
        snprintf(why, len, "NCCL_NVLS_ENABLE=0");
    } else if (!tlmpi_gpu_multicast_supported(dev)) {
        snprintf(why, len, "no multicast support on device %d", dev);
    } else {
        return 1;
    }
    return 0;
}

int tlmpi_xport_agree_step(MPI_Comm comm, int ok, const char *step, char *why, size_t len)
{
    int all = 0;

    if (PMPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, comm) != MPI_SUCCESS) {
        snprintf(why, len, "PMPI_Allreduce after %s failed", step);
        return -1;
    }
    if (!all && ok) {
        snprintf(why, len, "%s failed on another rank", step);
    }
    return all ? 0 : -1;
}

/* This rank's max_ctas_alone (xport.h) from its max_ctas: the kernels sized for one kernel of the
 * process in flight instead of tlmpi_topo_concurrent_colls() of them. Every process's CTAs on the GPU
 * stay within its share either way (max_ctas x concurrent <= the GPU's resident CTAs / sharers). */
static int alone_ctas(const tlmpi_xport_t *t)
{
    long a = (long)t->max_ctas * tlmpi_topo_concurrent_colls();

    if (tlmpi_g.thread_level == MPI_THREAD_MULTIPLE || t->x.mc_base) {
        return t->max_ctas;
    }
    return (int)(a > TLMPI_NODE_MAX_CTAS ? TLMPI_NODE_MAX_CTAS : a);
}

int tlmpi_xport_agree(MPI_Comm comm, int rank, int size, int ok, size_t data_bytes, tlmpi_xport_t *t,
                      const char *failed, char *why, size_t len)
{
    int agree[2 + TLMPI_NODE_MAX_RANKS], q, bad = 0;
    long timeout = (long)TLMPI_ENV_I(TIMEOUT);
    char list[32];

    for (q = 0; q < 2 + TLMPI_NODE_MAX_RANKS; q++) {
        agree[q] = 0;
    }
    agree[0] = ok ? -t->max_ctas : 0;   /* MAX of -ctas: the least; 0 when any rank failed */
    agree[1] = ok ? -alone_ctas(t) : 0;
    agree[2 + rank] = !ok;
    if (PMPI_Allreduce(MPI_IN_PLACE, agree, 2 + TLMPI_NODE_MAX_RANKS, MPI_INT, MPI_MAX, comm) != MPI_SUCCESS) {
        snprintf(why, len, "PMPI_Allreduce of the transport's outcome failed");
        return -1;
    }
    for (q = 0; q < size; q++) {
        bad |= agree[2 + q] << q;
    }
    if (bad) {
        if (!(bad & (1 << rank))) {
            rank_list((unsigned)bad, list, sizeof(list));
            snprintf(why, len, "node rank(s) %s %s", list, failed);
        }
        return -1;
    }
    t->max_ctas = -agree[0];
    t->max_ctas_alone = -agree[1];
    t->x.rank = rank;
    t->x.nranks = size;
    t->x.data_bytes = data_bytes;
    t->x.timeout_ns = timeout > 0 ? (unsigned long long)timeout * 1000000000ULL : 0;
    t->x.stuck = 0;
    return 0;
}

#ifdef HAVE_CUDA
#include <cuda_runtime_api.h>

int tlmpi_xport_err_create(tlmpi_xport_t *t, char *why, size_t len)
{
    void *derr = NULL;
    cudaError_t e;

    if ((e = cudaHostAlloc((void **)&t->err, sizeof(tlmpi_node_err_t), cudaHostAllocMapped | cudaHostAllocPortable)) !=
        cudaSuccess) {
        t->err = NULL;
        snprintf(why, len, "cannot allocate the mapped error record: %s", cudaGetErrorString(e));
        (void)cudaGetLastError();
        return -1;
    }
    memset((void *)t->err, 0, sizeof(tlmpi_node_err_t));
    if ((e = cudaHostGetDevicePointer(&derr, (void *)t->err, 0)) != cudaSuccess) {
        snprintf(why, len, "no device address for the error record: %s", cudaGetErrorString(e));
        tlmpi_xport_err_destroy(t);
        return -1;
    }
    t->x.err = derr;
    return 0;
}

void tlmpi_xport_err_destroy(tlmpi_xport_t *t)
{
    if (t->err) {
        cudaFreeHost((void *)t->err);
    }
    t->err = NULL;
    t->x.err = NULL;
    (void)cudaGetLastError();
}

int tlmpi_xport_max_ctas(int dev, int ranks_on_gpu)
{
    int n = tlmpi_cuda_node_max_ctas(dev, tlmpi_topo_gpu_kernel_sharers(ranks_on_gpu));

    (void)cudaGetLastError();
    return n;
}

#else /* !HAVE_CUDA: no transport is ever created */

int tlmpi_xport_err_create(tlmpi_xport_t *t, char *why, size_t len)
{
    (void)t;
    snprintf(why, len, "built without CUDA");
    return -1;
}

void tlmpi_xport_err_destroy(tlmpi_xport_t *t)
{
    (void)t;
}

int tlmpi_xport_max_ctas(int dev, int ranks_on_gpu)
{
    (void)dev, (void)ranks_on_gpu;
    return 0;
}
#endif
