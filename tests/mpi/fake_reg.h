/*
 * fake_reg.h: what the registration tests on the fake CUDA runtime share (tests/mpi/mpi_persist_reg,
 * tests/mpi/mpi_regcache): the node tier over the ipc transport with TLMPI_TIER=node and one fake GPU
 * per rank, the world's plan and pools set up first (their mappings are the base the tests count
 * from), exact small-integer values, and the count of peer allocations mapped in every process
 * (fake_cuda_ipc_mapped: tests/fakes/fakecudart.c). Include after harness.h.
 */
#ifndef TLMPI_TEST_FAKE_REG_H
#define TLMPI_TEST_FAKE_REG_H

#include <cuda_runtime_api.h>
#include <stdlib.h>

#define BIG (256 << 10) /* bytes of a registered buffer (>= the fake's 64 KiB export size) */
#define NMAX 8

extern int fake_cuda_ipc_mapped;

static int g_base; /* the node tier's pools' mappings */

static inline double val(uint64_t seed, int r, long i)
{
    uint64_t x = seed ^ ((uint64_t)(r + 1) << 40) ^ (uint64_t)i * 0x9E3779B97F4A7C15ULL;

    x ^= x >> 31;
    x *= 0xBF58476D1CE4E5B9ULL;
    x ^= x >> 29;
    return (double)((int)(x % 9) - 4);
}

/* every rank's count of peer allocations mapped beyond the pools, checked against want on every rank */
static inline void expect_mapped(int want, const char *what)
{
    int m = fake_cuda_ipc_mapped - g_base, all[NMAX], i;

    MPI_Allgather(&m, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
    for (i = 0; i < tst_size; i++) {
        TST_CHECK(all[i] == want, "%s: rank %d has %d peer allocations mapped, expected %d", what, i, all[i], want);
    }
}

/* MPI_Init with the settings (min_var, e.g. TLMPI_NODE_DIRECT_MIN, at 128k), the world's plan and pools
 * built with one small call on *world (a BIG device buffer, freed by the caller) and g_base counted.
 * Returns 0, or the exit status of a skip (more ranks than NMAX). */
static inline int fake_reg_start(const char *name, const char *min_var, int *argc, char ***argv, double **world)
{
    setenv("FAKE_CUDA_DEVICES", "8", 1);
    setenv("TLMPI_TIER", "node", 1);
    setenv("TLMPI_NODE_TRANSPORT", "ipc", 1);
    /* the whole pool at setup: the counts of peer allocations mapped are the registrations' alone (a
     * data area growing maps the peers' new areas: tests/mpi/mpi_pool_grow counts those) */
    setenv("TLMPI_NODE_POOL_GROW", "0", 1);
    setenv(min_var, "128k", 1);
    tst_init(name, argc, argv);
    if (tst_size > NMAX) {
        return tst_skip("written for at most 8 ranks");
    }
    TST_CUDA(cudaSetDevice(tst_rank));
    TST_CUDA(cudaMalloc((void **)world, BIG));
    MPI_Allreduce(MPI_IN_PLACE, *world, 8, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    g_base = fake_cuda_ipc_mapped;
    TST_CHECK(g_base == tst_size - 1, "the node tier's pools: %d peer pools mapped, expected %d (is the node tier "
              "set up?)", g_base, tst_size - 1);
    return 0;
}

#endif
