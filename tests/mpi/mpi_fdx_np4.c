/*
 * mpi_fdx (4 ranks on one host): tlmpi_fdx_allgather (src/transport/fdx.c), the descriptors a
 * cuMem allocation is shared through (cumemshare.h), with memfd files standing in for the memory.
 * Each rank writes a fresh random token into a memfd and passes it; every rank then reads each
 * peer's descriptor and must find that peer's token (gathered separately with PMPI_Allgather), so a
 * descriptor placed by arrival order instead of by its sender's rank, a lost or doubled one, or one
 * of another exchange fails. Three exchanges in a row (the keys must not collide), on
 * MPI_COMM_WORLD and on a split communicator (ranks 3, 1 of the odd half: ranks reorder); a rank
 * without a descriptor makes every rank fail alike, nothing left open; and a rank that sends nothing
 * (TLMPI_FAULT=fdx_silent:3) makes the others' receives end at TLMPI_TIMEOUT naming rank 3 alone.
 */
#define _GNU_SOURCE
#include "config.h"
#include "env.h"
#include "fault.h"
#include "fdx.h"
#include "harness.h"

#include <sys/mman.h>
#include <unistd.h>

static void exchange(MPI_Comm comm, const char *what)
{
    int rank, size, q, fd, *fds;
    uint64_t token = tst_rand(), *all;
    char why[256] = "";

    PMPI_Comm_rank(comm, &rank);
    PMPI_Comm_size(comm, &size);
    fds = malloc(sizeof(int) * (size_t)size);
    all = malloc(sizeof(uint64_t) * (size_t)size);
    fd = memfd_create("tlmpi-fdx-test", MFD_CLOEXEC);
    TST_CHECK(fd >= 0 && pwrite(fd, &token, sizeof(token), 0) == (ssize_t)sizeof(token), "%s: memfd", what);
    PMPI_Allgather(&token, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T, comm);
    TST_CHECK(tlmpi_fdx_allgather(comm, rank, size, fd, fds, why, sizeof(why)) == 0, "%s: %s", what, why);
    for (q = 0; q < size; q++) {
        uint64_t got = 0;

        if (q == rank) {
            TST_CHECK(fds[q] == -1, "%s: fds[own] = %d", what, fds[q]);
            continue;
        }
        TST_CHECK(fds[q] >= 0 && pread(fds[q], &got, sizeof(got), 0) == (ssize_t)sizeof(got) && got == all[q],
                  "%s: rank %d's descriptor %d holds %llx, want %llx", what, q, fds[q], (unsigned long long)got,
                  (unsigned long long)all[q]);
        if (fds[q] >= 0) {
            close(fds[q]);
        }
    }
    close(fd);
    free(fds);
    free(all);
}

int main(int argc, char **argv)
{
    MPI_Comm odd;
    int before, *fds, rc;
    char why[256] = "";

    tst_init("mpi_fdx", &argc, &argv);
    tlmpi_env_load(NULL, NULL);
    before = tst_open_fds();
    exchange(MPI_COMM_WORLD, "world 1");
    exchange(MPI_COMM_WORLD, "world 2");
    exchange(MPI_COMM_WORLD, "world 3");
    PMPI_Comm_split(MPI_COMM_WORLD, tst_rank % 2, -tst_rank, &odd);
    exchange(odd, "split");
    PMPI_Comm_free(&odd);
    /* a rank without a descriptor: every rank fails, nothing left open */
    fds = malloc(sizeof(int) * (size_t)tst_size);
    {
        int fd = tst_rank == tst_size - 1 ? -1 : memfd_create("tlmpi-fdx-test", MFD_CLOEXEC);

        rc = tlmpi_fdx_allgather(MPI_COMM_WORLD, tst_rank, tst_size, fd, fds, why, sizeof(why));
        TST_CHECK(rc == -1, "a rank without a descriptor: exchange returned %d", rc);
        TST_CHECK(why[0] != '\0', "no reason given");
        if (fd >= 0) {
            close(fd);
        }
    }
    for (int q = 0; q < tst_size; q++) {
        TST_CHECK(fds[q] == -1, "after the failed exchange fds[%d] = %d", q, fds[q]);
    }
    /* the last rank sends nothing: the others wait TLMPI_TIMEOUT (2 s) and say whom they waited for */
    {
        int fd = memfd_create("tlmpi-fdx-test", MFD_CLOEXEC), silent = tst_size - 1;
        char spec[32];
        double t0;

        setenv("TLMPI_TIMEOUT", "2", 1);
        tlmpi_env_load(NULL, NULL);
        snprintf(spec, sizeof(spec), "fdx_silent:%d", silent);
        tlmpi_fault_configure(spec, tst_rank);
        why[0] = '\0';
        t0 = MPI_Wtime();
        rc = tlmpi_fdx_allgather(MPI_COMM_WORLD, tst_rank, tst_size, fd, fds, why, sizeof(why));
        TST_CHECK(rc == -1, "a silent rank: exchange returned %d", rc);
        if (tst_rank != silent) {
            char want[64];

            snprintf(want, sizeof(want), "(no descriptor from rank %d)", silent);
            TST_CHECK(strstr(why, want) != NULL, "a silent rank: the reason does not name it alone: %s", why);
            TST_CHECK(MPI_Wtime() - t0 > 1.5, "a silent rank: gave up after %.1f s, before TLMPI_TIMEOUT",
                      MPI_Wtime() - t0);
        }
        tlmpi_fault_configure("", tst_rank);
        close(fd);
    }
    for (int q = 0; q < tst_size; q++) {
        TST_CHECK(fds[q] == -1, "after the failed exchange fds[%d] = %d", q, fds[q]);
    }
    free(fds);
    TST_CHECK(tst_open_fds() == before, "descriptors open: %d before, %d after", before, tst_open_fds());
    return tst_finish();
}
