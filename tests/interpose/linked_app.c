/*
 * linked_app: a program linked with -ltlmpi (linked.sh builds it the way a user would:
 * `mpicc linked_app.c -ltlmpi`). It calls the three collectives through MPI_* and reads
 * tlmpi_get_stats: each call must be counted once on the PASSTHROUGH path (host buffers). The same
 * collectives called through PMPI_* must not be counted (they bypass the interposer).
 */
#include <tlmpi.h>

#include <stdio.h>
#include <stdlib.h>

static uint64_t calls(tlmpi_coll_t coll)
{
    tlmpi_stat_t s = { 0, 0 };

    tlmpi_get_stats(coll, TLMPI_PATH_PASSTHROUGH, &s);
    return s.calls;
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0, a = 1, b = 0, *g;
    uint64_t ar0, ag0, rsb0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    g = calloc((size_t)size, sizeof(int));
    printf("linked_app: rank %d: tlmpi %s\n", rank, tlmpi_version());
    ar0 = calls(TLMPI_COLL_ALLREDUCE);
    ag0 = calls(TLMPI_COLL_ALLGATHER);
    rsb0 = calls(TLMPI_COLL_REDUCE_SCATTER_BLOCK);

    MPI_Allreduce(&a, &b, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    errs += b != size;
    MPI_Allreduce(MPI_IN_PLACE, &b, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    errs += b != size * size;
    MPI_Allgather(&rank, 1, MPI_INT, g, 1, MPI_INT, MPI_COMM_WORLD);
    errs += g[size - 1] != size - 1;
    MPI_Reduce_scatter_block(g, &b, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    errs += b != size * rank;
    /* through PMPI_: not intercepted, not counted */
    PMPI_Allreduce(&a, &b, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    PMPI_Allgather(&rank, 1, MPI_INT, g, 1, MPI_INT, MPI_COMM_WORLD);

    if (calls(TLMPI_COLL_ALLREDUCE) - ar0 != 2 || calls(TLMPI_COLL_ALLGATHER) - ag0 != 1 ||
        calls(TLMPI_COLL_REDUCE_SCATTER_BLOCK) - rsb0 != 1) {
        printf("linked_app: rank %d: counters allreduce %llu allgather %llu reduce_scatter_block %llu, "
               "expected 2 1 1\n", rank, (unsigned long long)(calls(TLMPI_COLL_ALLREDUCE) - ar0),
               (unsigned long long)(calls(TLMPI_COLL_ALLGATHER) - ag0),
               (unsigned long long)(calls(TLMPI_COLL_REDUCE_SCATTER_BLOCK) - rsb0));
        errs++;
    }
    printf("linked_app: %s rank %d (%d errors)\n", errs ? "FAIL" : "OK", rank, errs);
    free(g);
    MPI_Finalize();
    return errs != 0;
}
