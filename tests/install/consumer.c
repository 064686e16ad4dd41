/*
 * consumer: a program built against an installed tlmpi (tests/install/consume.sh: through
 * find_package(tlmpi) and through pkg-config). It checks that tlmpi's headers and library are the
 * ones found, that MPI_Allreduce resolves to libtlmpi (listed before the MPI: the interposer sees the
 * call) and that a host MPI_Allreduce through it is right. Prints "consumer: PASS" on rank 0.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "tlmpi.h"

int main(int argc, char **argv)
{
    Dl_info info;
    void *f;
    int rank, size, x, sum = 0, ok = 1, all = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    f = dlsym(RTLD_DEFAULT, "MPI_Allreduce");
    if (!f || !dladdr(f, &info) || !info.dli_fname || !strstr(info.dli_fname, "libtlmpi")) {
        printf("consumer: rank %d: MPI_Allreduce resolves to %s, not libtlmpi\n", rank,
               f && info.dli_fname ? info.dli_fname : "nothing");
        ok = 0;
    }
    if (strcmp(tlmpi_version(), TLMPI_VERSION_STRING) != 0) {
        printf("consumer: rank %d: libtlmpi %s, headers %s\n", rank, tlmpi_version(), TLMPI_VERSION_STRING);
        ok = 0;
    }
    x = rank + 1;
    MPI_Allreduce(&x, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (sum != size * (size + 1) / 2) {
        printf("consumer: rank %d: sum %d, expected %d\n", rank, sum, size * (size + 1) / 2);
        ok = 0;
    }
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("consumer: %s (libtlmpi %s from %s)\n", all ? "PASS" : "FAIL", tlmpi_version(),
               f && info.dli_fname ? info.dli_fname : "?");
    }
    MPI_Finalize();
    return all ? 0 : 1;
}
