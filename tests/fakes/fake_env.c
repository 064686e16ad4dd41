/*
 * fake_env: linked into the MPI test programs that run against the CPU fakes (tests/fakes): before
 * main, point tlmpi at the fake NCCL next to the program (libtool puts the module in .libs) unless
 * TLMPI_NCCL_LIBRARY says otherwise, and give each rank a fake GPU of its own (FAKE_CUDA_DEVICES=8,
 * distinct bus ids) unless the caller chose. Programs built once with the fakes and once with the
 * real CUDA runtime (tests/mpi/mpi_threads.c, mpi_hier.c, tools/tlmpi_tune.c) then carry no code
 * for it.
 */
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

__attribute__((constructor)) static void fake_env(void)
{
    char exe[4096], lib[4200];
    ssize_t len;

    if (!getenv("TLMPI_NCCL_LIBRARY") && (len = readlink("/proc/self/exe", exe, sizeof(exe) - 1)) > 0) {
        exe[len] = '\0';
        snprintf(lib, sizeof(lib), "%s/.libs/libfakenccl.so", dirname(exe));
        setenv("TLMPI_NCCL_LIBRARY", lib, 1);
    }
    setenv("FAKE_CUDA_DEVICES", "8", 0);
}
