/*
 * tlmpi_costs: what the host-side steps of a device-buffer call cost on this machine, to find
 * where tlmpi's overhead over raw NCCL goes (1 rank). Links tlmpi's internals (libtlmpi_core).
 *   mpiexec -n 1 bench/tlmpi_costs
 * Prints ns per operation, medians of 5 runs of 20000 calls each. It links libtlmpi (whose
 * MPI_Allreduce is timed) and, for the internal functions, a second, static copy of tlmpi's core:
 * so the tier is chosen with TLMPI_TIER in the environment, not tlmpi_config_set.
 */
#include "config.h"
#include "tlmpi.h"
#include "gpu.h"
#include "dtype.h"
#include "ncclwrap.h"

#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>

#define N 20000
#define RUNS 5

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

#define TIME(_name, _stmt)                                                                   \
    do {                                                                                     \
        double r[RUNS];                                                                      \
        for (int k = 0; k < RUNS; k++) {                                                     \
            double t0 = MPI_Wtime();                                                         \
            for (int i = 0; i < N; i++) {                                                    \
                _stmt;                                                                       \
            }                                                                                \
            r[k] = (MPI_Wtime() - t0) / N * 1e9;                                             \
        }                                                                                    \
        qsort(r, RUNS, sizeof(double), cmp);                                                 \
        printf("%-44s %9.1f ns\n", _name, r[RUNS / 2]);                                      \
    } while (0)

int main(int argc, char **argv)
{
    float *d, *h;
    struct cudaPointerAttributes a;
    cudaStream_t s, sb;
    int dev, flag;
    void *attr;
    MPI_Comm dup;

    setenv("TLMPI_TIER", "nccl", 1);
    MPI_Init(&argc, &argv);
    if (cudaMalloc((void **)&d, 1 << 20) != cudaSuccess) {
        printf("tlmpi_costs: no GPU\n");
        MPI_Finalize();
        return 0;
    }
    h = malloc(1 << 20);
    tlmpi_gpu_probe(NULL); /* the static copy of tlmpi's core classifies only after its own probe */
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    cudaStreamCreate(&sb);
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Allreduce(MPI_IN_PLACE, d, 2, MPI_FLOAT, MPI_SUM, dup); /* builds state, NCCL comm */
    TIME("cudaPointerGetAttributes(device ptr)", cudaPointerGetAttributes(&a, d));
    TIME("cudaPointerGetAttributes(malloc ptr)", cudaPointerGetAttributes(&a, h));
    TIME("tlmpi_gpu_mem_type(device ptr, cached)", tlmpi_gpu_mem_type(d, &dev));
    TIME("tlmpi_gpu_mem_type(malloc ptr)", tlmpi_gpu_mem_type(h, &dev));
    TIME("cudaGetDevice", cudaGetDevice(&dev));
    TIME("cudaGetLastError", cudaGetLastError());
    TIME("cudaStreamSynchronize(idle, non-blocking)", cudaStreamSynchronize(s));
    TIME("cudaStreamSynchronize(idle, blocking)", cudaStreamSynchronize(sb));
    TIME("cudaMemcpyAsync 8B D2D + sync (non-blocking)",
         (cudaMemcpyAsync(d + 8, d, 8, cudaMemcpyDeviceToDevice, s), cudaStreamSynchronize(s)));
    TIME("cudaMemcpyAsync 8B D2D + sync (blocking)",
         (cudaMemcpyAsync(d + 8, d, 8, cudaMemcpyDeviceToDevice, sb), cudaStreamSynchronize(sb)));
    TIME("PMPI_Comm_get_attr (miss keyval)", PMPI_Comm_get_attr(dup, MPI_TAG_UB, &attr, &flag));
    TIME("MPI_Allreduce 8B device in place, TIER=nccl",
         MPI_Allreduce(MPI_IN_PLACE, d, 2, MPI_FLOAT, MPI_SUM, dup));
    TIME("MPI_Allreduce 8B device in place, TIER=nccl (WORLD)",
         MPI_Allreduce(MPI_IN_PLACE, d, 2, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD));
#ifdef HAVE_NCCL
    {
        /* tlmpi's whole NCCL-tier call against the same NCCL call made directly, out of place */
        ncclComm_t nc;
        ncclUniqueId id;
        int sz;

        tlmpi_dtype_init();
        TIME("tlmpi_dtype_classify(MPI_FLOAT)", tlmpi_dtype_classify(MPI_FLOAT, &sz));
        if (tlmpi_nccl_load(NULL) && tlmpi_nccl.ncclGetUniqueId(&id) == ncclSuccess &&
            tlmpi_nccl.ncclCommInitRank(&nc, 1, id, 0) == ncclSuccess) {
            for (int k = 0; k < 2; k++) {
                TIME("raw ncclAllReduce 8B out of place + sync (blocking stream)",
                     (tlmpi_nccl.ncclAllReduce(d, d + 64, 2, ncclFloat32, ncclSum, nc, sb), cudaStreamSynchronize(sb)));
                TIME("raw ncclAllReduce 8B out of place + sync (non-blocking)",
                     (tlmpi_nccl.ncclAllReduce(d, d + 64, 2, ncclFloat32, ncclSum, nc, s), cudaStreamSynchronize(s)));
                TIME("MPI_Allreduce 8B out of place, TIER=nccl",
                     MPI_Allreduce(d, d + 64, 2, MPI_FLOAT, MPI_SUM, dup));
                TIME("raw ncclReduceScatter 8B + sync (blocking stream)",
                     (tlmpi_nccl.ncclReduceScatter(d, d + 64, 2, ncclFloat32, ncclSum, nc, sb), cudaStreamSynchronize(sb)));
                TIME("MPI_Reduce_scatter_block 8B, TIER=nccl",
                     MPI_Reduce_scatter_block(d, d + 64, 2, MPI_FLOAT, MPI_SUM, dup));
            }
            tlmpi_nccl.ncclCommDestroy(nc);
        }
    }
#endif
    MPI_Comm_free(&dup);
    cudaFree(d);
    free(h);
    MPI_Finalize();
    return 0;
}
