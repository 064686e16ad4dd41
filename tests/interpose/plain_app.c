/*
 * plain_app: an ordinary MPI program that knows nothing of tlmpi (built by preload.sh with the
 * plain MPI compiler wrapper, no tlmpi header or library). It calls MPI_Allreduce 5 times,
 * MPI_Allgather 3 times and MPI_Reduce_scatter_block 2 times on host buffers and checks the
 * results. Run with LD_PRELOAD=libtlmpi.so and TLMPI_STATS=1, tlmpi's statistics printed at
 * MPI_Finalize show exactly these counts, which proves the calls were intercepted.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    int rank, size, i, k, errs = 0, a[8], b[8], *g, *rs;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    g = malloc(sizeof(int) * 8 * (size_t)size);
    rs = malloc(sizeof(int) * 8 * (size_t)size);
    for (k = 0; k < 5; k++) {
        for (i = 0; i < 8; i++) {
            a[i] = rank * 100 + i + k;
            b[i] = -1;
        }
        MPI_Allreduce(a, b, 8, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        for (i = 0; i < 8; i++) {
            errs += b[i] != 100 * size * (size - 1) / 2 + size * (i + k);
        }
    }
    for (k = 0; k < 3; k++) {
        for (i = 0; i < 8 * size; i++) {
            g[i] = -1;
        }
        MPI_Allgather(a, 8, MPI_INT, g, 8, MPI_INT, MPI_COMM_WORLD);
        for (i = 0; i < 8 * size; i++) {
            errs += g[i] != (i / 8) * 100 + i % 8 + 4;
        }
    }
    for (k = 0; k < 2; k++) {
        for (i = 0; i < 8 * size; i++) {
            rs[i] = i + k;
        }
        MPI_Reduce_scatter_block(rs, b, 8, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        for (i = 0; i < 8; i++) {
            errs += b[i] != size * (rank * 8 + i + k);
        }
    }
    printf("plain_app: %s rank %d (%d errors)\n", errs ? "FAIL" : "OK", rank, errs);
    free(g);
    free(rs);
    MPI_Finalize();
    return errs != 0;
}
