/* Part of bench/devpath-callgrind.sh: a loop of 8-byte device-buffer MPI_Allreduce calls.
 *   dev_loop N        send and receive buffers from two cudaMalloc calls (as OSU and tlmpi_bench)
 *   dev_loop N pool   both carved from one allocation (as a framework's memory pool) */
#include <mpi.h>
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 100000, pool = argc > 2 && !strcmp(argv[2], "pool");
    float *s, *r; double t0, t1;
    MPI_Init(&argc, &argv);
    cudaMalloc((void **)&s, 4096);
    if (pool) r = s + 64; else cudaMalloc((void **)&r, 4096);
    MPI_Allreduce(s, r, 2, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    for (int i = 0; i < n; i++) MPI_Allreduce(s, r, 2, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    t1 = MPI_Wtime();
    printf("tlmpi device path (fake CUDA/NCCL, %s): %.1f ns per MPI_Allreduce\n",
           pool ? "buffers in one allocation" : "two allocations", (t1 - t0) / n * 1e9);
    MPI_Finalize(); return 0; }
