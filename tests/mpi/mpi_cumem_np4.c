/*
 * mpi_cumem (4 ranks on one host, the fake CUDA runtime): tlmpi_cumem_share
 * (src/transport/cumemshare.c), every rank's pool mapped into every other rank, as the GIN rail on
 * fake nodes maps the node's NCCL-window pools. The fake runtime stands cuMem in with memfds
 * (tests/fakes/fakecudart.c: a cudaMalloc of 64 KiB or more is shareable, a mapping is the same
 * memory), so what is checked is the real sequence of driver calls and the agreement: each rank
 * fills its pool with a fresh random token and, through the mappings, must read every peer's token
 * where the peer put it, and see what every peer wrote into its own pool through theirs (the same
 * memory, not a copy); the mappings are released with nothing left open; an import refused on one
 * rank (FAKE_CUDA_CUMEM_IMPORT_REFUSE) and an export refused on one rank fail every rank alike, no
 * mapping left, the own pointer kept.
 */
#define _GNU_SOURCE
#include "config.h"
#include "cumemshare.h"
#include "env.h"
#include "harness.h"

#include <cuda_runtime_api.h>
#include <unistd.h>

#define POOL (1u << 20)

static void failing(const char *env, int who, const char *what)
{
    void *pool = NULL, *base[8];
    tlmpi_cumem_map_t maps[8];
    char why[256] = "";
    int q, rc;

    TST_CHECK(cudaMalloc(&pool, POOL) == cudaSuccess, "cudaMalloc");
    if (tst_rank == who) {
        setenv(env, "1", 1);
    }
    rc = tlmpi_cumem_share(MPI_COMM_WORLD, tst_rank, tst_size, pool, 0, base, maps, why, sizeof(why));
    unsetenv(env);
    TST_CHECK(rc == -1 && why[0], "%s on rank %d: share returned %d (%s)", what, who, rc, why);
    for (q = 0; q < tst_size; q++) {
        TST_CHECK(maps[q].ptr == NULL && base[q] == (q == tst_rank ? pool : NULL), "%s: rank %d's mapping left", what, q);
    }
    cudaFree(pool);
}

int main(int argc, char **argv)
{
    void *pool = NULL, *base[8];
    tlmpi_cumem_map_t maps[8];
    uint64_t token, *all;
    char why[256] = "";
    int q, before, round;

    tst_init("mpi_cumem", &argc, &argv);
    tlmpi_env_load(NULL, NULL);
    if (tst_size > 8) {
        tst_skip("more than 8 ranks");
    }
    all = malloc(sizeof(uint64_t) * (size_t)tst_size);
    before = tst_open_fds();
    for (round = 0; round < 3; round++) {
        token = tst_rand();
        TST_CHECK(cudaMalloc(&pool, POOL) == cudaSuccess, "cudaMalloc");
        for (q = 0; q < (int)(POOL / 8); q++) {
            ((uint64_t *)pool)[q] = token ^ (uint64_t)q;
        }
        PMPI_Allgather(&token, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T, MPI_COMM_WORLD);
        TST_CHECK(tlmpi_cumem_share(MPI_COMM_WORLD, tst_rank, tst_size, pool, 0, base, maps, why, sizeof(why)) == 0,
                  "round %d: %s", round, why);
        for (q = 0; q < tst_size; q++) {
            const uint64_t *b = base[q];
            size_t i;

            if (q == tst_rank) {
                TST_CHECK(base[q] == pool && maps[q].ptr == NULL, "round %d: own base", round);
                continue;
            }
            TST_CHECK(b && maps[q].bytes >= POOL, "round %d: rank %d not mapped", round, q);
            for (i = 0; b && i < POOL / 8; i += 4093) {
                TST_CHECK(b[i] == (all[q] ^ (uint64_t)i), "round %d: rank %d's word %zu", round, q, i);
            }
        }
        PMPI_Barrier(MPI_COMM_WORLD);
        for (q = 0; q < tst_size; q++) { /* into every peer's pool, at this rank's slot */
            if (q != tst_rank && base[q]) {
                ((uint64_t *)base[q])[tst_rank] = 0x100 + (uint64_t)tst_rank;
            }
        }
        PMPI_Barrier(MPI_COMM_WORLD);
        for (q = 0; q < tst_size; q++) {
            if (q != tst_rank) {
                TST_CHECK(((uint64_t *)pool)[q] == 0x100 + (uint64_t)q, "round %d: rank %d's store not seen", round, q);
            }
        }
        PMPI_Barrier(MPI_COMM_WORLD);
        tlmpi_cumem_unshare(maps, tst_size);
        for (q = 0; q < tst_size; q++) {
            TST_CHECK(maps[q].ptr == NULL, "round %d: mapping %d not released", round, q);
        }
        cudaFree(pool);
    }
    TST_CHECK(tst_open_fds() == before, "descriptors open: %d before, %d after", before, tst_open_fds());
    failing("FAKE_CUDA_CUMEM_IMPORT_REFUSE", tst_size - 1, "an import refused");
    failing("FAKE_CUDA_CUMEM_EXPORT_REFUSE", 1 % tst_size, "an export refused");
    TST_CHECK(tst_open_fds() == before, "after the failures: descriptors open: %d before, %d after", before, tst_open_fds());
    free(all);
    return tst_finish();
}
