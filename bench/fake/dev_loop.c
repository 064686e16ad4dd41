/* Part of bench/devpath-callgrind.sh: a loop of 8-byte device-buffer MPI_Allreduce calls. */
#include <mpi.h>
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
/* N intercepted 8-byte device allreduces (TLMPI_TIER=nccl), then N direct "raw" calls for the baseline */
int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 100000; float *d; double t0, t1;
    MPI_Init(&argc, &argv);
    cudaMalloc((void **)&d, 4096);
    MPI_Allreduce(d, d + 64, 2, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    for (int i = 0; i < n; i++) MPI_Allreduce(d, d + 64, 2, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    t1 = MPI_Wtime();
    printf("tlmpi device path (fake CUDA/NCCL): %.1f ns per MPI_Allreduce\n", (t1 - t0) / n * 1e9);
    MPI_Finalize(); return 0; }
