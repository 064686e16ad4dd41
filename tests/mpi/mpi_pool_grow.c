/*
 * mpi_pool_grow: the node tier's data area growing on demand (src/transport/ipc.c: tlmpi_ipc_grow,
 * src/tier/node.c: node_pool_ready) on a machine without a GPU, with the fake CUDA runtime
 * (tests/fakes/fakecudart.c: its allocations of 64 KiB and more are memfds that the other processes map
 * through CUDA IPC) and TLMPI_TIER=node over the ipc transport, one fake GPU per rank, 3 ranks. The
 * fake cannot run kernels, so every call that reaches a launch goes to staging (one warning) and its
 * result checks the call; the pools are checked through tlmpi_get_pool_stats (bytes, pools, growths:
 * the same on every rank where every rank is in the communicator) and the peers' allocations mapped in
 * each process (fake_cuda_ipc_mapped). Settings: TLMPI_NODE_POOL=8m (the cap), TLMPI_NODE_REG=0 and
 * TLMPI_NODE_DIRECT=0 (every call through the pools), TLMPI_NODE_AG_PUSH_MAX=1g (allgather: push).
 *  a  a communicator's pool is its 320 KiB header alone: LL-sized calls never grow it;
 *  b  the first call above the LL limit grows the data area to the power of two that runs it in one
 *     step (allreduce: 2 x the message), at least 1 MiB; a smaller call later does not grow it;
 *  c  reduce_scatter_block and allgather (push) want 2 x ranks x the block: the area grows to the next
 *     power of two (at least twice what it had), the old area freed and its mappings closed (the
 *     peers' data areas mapped once, with their headers);
 *  d  the cap: a call beyond TLMPI_NODE_POOL grows it to the cap and no further;
 *  e  a dup of blocking calls shares the world's pool (TLMPI_NODE_SHARE: the same processes): no header
 *     of its own, its calls run in the world's area; freeing it leaves the pool; a split into 2 + 1
 *     ranks (other processes): a pool of its own on the two-rank side only (one rank runs the self tier);
 *  f  a dup's first non-blocking call gives it a pool of its own and grows it at its start; a
 *     persistent request (MPI-4) at its init, before any start;
 *  g  the world's own first non-blocking call while a dup shares its pool: the world gets a new pool,
 *     the dup keeps the old one until it is freed; a later dup finds no pool to share (the world's is
 *     its own now) and makes one.
 * With TLMPI_NODE_SHARE=0 case e counts a pool per dup and fails.
 * Every call has fresh inputs and poisoned outputs, checked exactly (small integers in double).
 */
#include "config.h"
#include "tlmpi.h"

#include <cuda_runtime_api.h>
#include "harness.h"
#include <stdlib.h>
#include <string.h>

#define HDR 327680ULL /* the pool header: TLMPI_NODE_HDR_BYTES */
#define MIB (1ULL << 20)

extern int fake_cuda_ipc_mapped;

static uint64_t g_seed = 1;

static double val(uint64_t seed, int r, long i)
{
    uint64_t x = seed ^ ((uint64_t)(r + 1) << 40) ^ (uint64_t)i * 0x9E3779B97F4A7C15ULL;

    x ^= x >> 31;
    x *= 0xBF58476D1CE4E5B9ULL;
    x ^= x >> 29;
    return (double)((int)(x % 9) - 4);
}

/* the pools now, checked on this rank */
static void expect_pools(unsigned long long bytes, int pools, unsigned long long grown, const char *what)
{
    tlmpi_pool_stats_t s;

    TST_CHECK(tlmpi_get_pool_stats(&s) == TLMPI_OK, "%s: tlmpi_get_pool_stats", what);
    TST_CHECK(s.bytes == bytes && s.pools == pools && s.grown == grown, "%s: rank %d: pools hold %llu bytes (%llu KiB "
              "beyond the headers), %d pools, %llu growths; expected %llu bytes (%llu KiB), %d, %llu", what, tst_rank,
              s.bytes, (s.bytes - (unsigned long long)s.pools * HDR) >> 10, s.pools, s.grown, bytes,
              (bytes - (unsigned long long)pools * HDR) >> 10, pools, grown);
}

/* coll 0 allreduce (count: all), 1 allgather (count: a block), 2 reduce_scatter_block (a block) on
 * device buffers of comm; form 0 blocking, 1 non-blocking + wait, 2 persistent (init, start, wait,
 * free: where the MPI has them); the result checked against the host reference */
static void call(MPI_Comm comm, int coll, long count, int form, const char *what)
{
    int r, n, i;
    long nin, nout;
    double *hs, *hr, *ds, *dr;
    MPI_Request req = MPI_REQUEST_NULL;
    uint64_t seed = g_seed++;

    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &n);
    nin = coll == 2 ? count * n : count;
    nout = coll == 1 ? count * n : count;
    hs = malloc((size_t)nin * sizeof(double));
    hr = malloc((size_t)nout * sizeof(double));
    TST_CUDA(cudaMalloc((void **)&ds, (size_t)nin * sizeof(double)));
    TST_CUDA(cudaMalloc((void **)&dr, (size_t)nout * sizeof(double)));
    for (i = 0; i < nin; i++) {
        hs[i] = val(seed, r, i);
    }
    for (i = 0; i < nout; i++) {
        hr[i] = -1e9; /* poison */
    }
    TST_CUDA(cudaMemcpy(ds, hs, (size_t)nin * sizeof(double), cudaMemcpyHostToDevice));
    TST_CUDA(cudaMemcpy(dr, hr, (size_t)nout * sizeof(double), cudaMemcpyHostToDevice));
    if (form == 0) {
        if (coll == 0) MPI_Allreduce(ds, dr, (int)count, MPI_DOUBLE, MPI_SUM, comm);
        if (coll == 1) MPI_Allgather(ds, (int)count, MPI_DOUBLE, dr, (int)count, MPI_DOUBLE, comm);
        if (coll == 2) MPI_Reduce_scatter_block(ds, dr, (int)count, MPI_DOUBLE, MPI_SUM, comm);
    } else if (form == 1) {
        if (coll == 0) MPI_Iallreduce(ds, dr, (int)count, MPI_DOUBLE, MPI_SUM, comm, &req);
        if (coll == 1) MPI_Iallgather(ds, (int)count, MPI_DOUBLE, dr, (int)count, MPI_DOUBLE, comm, &req);
        if (coll == 2) MPI_Ireduce_scatter_block(ds, dr, (int)count, MPI_DOUBLE, MPI_SUM, comm, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
    }
#if MPI_VERSION >= 4
    else {
        MPI_Allreduce_init(ds, dr, (int)count, MPI_DOUBLE, MPI_SUM, comm, MPI_INFO_NULL, &req);
        MPI_Start(&req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        MPI_Request_free(&req);
    }
#endif
    TST_CUDA(cudaMemcpy(hr, dr, (size_t)nout * sizeof(double), cudaMemcpyDeviceToHost));
    for (i = 0; i < nout; i++) {
        double want = 0;
        int q;

        if (coll == 1) {
            want = val(seed, (int)(i / count), i % count);
        } else {
            for (q = 0; q < n; q++) {
                want += val(seed, q, coll == 2 ? (long)r * count + i : i);
            }
        }
        if (hr[i] != want) {
            TST_FAIL("%s: rank %d: element %d = %g, expected %g", what, r, i, hr[i], want);
            break;
        }
    }
    TST_CUDA(cudaFree(ds));
    TST_CUDA(cudaFree(dr));
    free(hs);
    free(hr);
}

int main(int argc, char **argv)
{
    const long K = 1024 / 8; /* doubles per KiB */
    unsigned long long g = 0;
    int base;
    MPI_Comm dup, half;

    setenv("FAKE_CUDA_DEVICES", "8", 1);
    setenv("TLMPI_TIER", "node", 1);
    setenv("TLMPI_NODE_TRANSPORT", "ipc", 1);
    setenv("TLMPI_NODE_POOL", "8m", 1);
    setenv("TLMPI_NODE_REG", "0", 1);
    setenv("TLMPI_NODE_DIRECT", "0", 1);
    setenv("TLMPI_NODE_AG_PUSH_MAX", "1g", 1);
    tst_init("mpi_pool_grow", &argc, &argv);
    if (tst_size != 3) {
        return tst_skip("written for 3 ranks");
    }
    TST_CUDA(cudaSetDevice(tst_rank));

    /* a: the header alone */
    call(MPI_COMM_WORLD, 0, 8, 0, "a: allreduce of 8 doubles");
    expect_pools(HDR, 1, 0, "a: after an 8-double allreduce");
    base = fake_cuda_ipc_mapped;
    TST_CHECK(base == tst_size - 1, "a: %d peer allocations mapped, expected the %d headers", base, tst_size - 1);
    call(MPI_COMM_WORLD, 0, 1 * K, 0, "a: allreduce of 1 KiB");
    call(MPI_COMM_WORLD, 1, 8, 0, "a: allgather of 8 doubles");
    expect_pools(HDR, 1, 0, "a: after LL-sized calls");

    /* b: the first call above the LL limit */
    call(MPI_COMM_WORLD, 0, 64 * K, 0, "b: allreduce of 64 KiB");
    expect_pools(HDR + MIB, 1, ++g, "b: allreduce of 64 KiB (wants 128 KiB: 1 MiB)");
    TST_CHECK(fake_cuda_ipc_mapped == 2 * (tst_size - 1), "b: %d peer allocations mapped, expected %d (headers and "
              "data areas)", fake_cuda_ipc_mapped, 2 * (tst_size - 1));
    call(MPI_COMM_WORLD, 0, 256 * K, 0, "b: allreduce of 256 KiB");
    expect_pools(HDR + MIB, 1, g, "b: allreduce of 256 KiB (wants 512 KiB: fits)");

    /* c: reduce_scatter_block and allgather want 2 x ranks x the block */
    call(MPI_COMM_WORLD, 2, 256 * K, 0, "c: reduce_scatter_block of 256 KiB blocks");
    expect_pools(HDR + 2 * MIB, 1, ++g, "c: reduce_scatter_block of 256 KiB blocks (wants 1.5 MiB: 2 MiB)");
    TST_CHECK(fake_cuda_ipc_mapped == 2 * (tst_size - 1), "c: %d peer allocations mapped, expected %d (the old "
              "data areas closed)", fake_cuda_ipc_mapped, 2 * (tst_size - 1));
    call(MPI_COMM_WORLD, 1, 1024 * K, 0, "c: allgather of 1 MiB blocks");
    expect_pools(HDR + 8 * MIB, 1, ++g, "c: allgather of 1 MiB blocks (wants 6 MiB: 8 MiB)");

    /* d: the cap */
    call(MPI_COMM_WORLD, 0, 32 * 1024 * K, 0, "d: allreduce of 32 MiB");
    expect_pools(HDR + 8 * MIB, 1, g, "d: allreduce of 32 MiB (at the cap already)");

    /* e: a dup shares the world's pool; a split */
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    call(dup, 0, 8, 0, "e: allreduce of 8 doubles on a dup");
    expect_pools(HDR + 8 * MIB, 1, g, "e: a dup after an 8-double allreduce (the world's pool, shared)");
    TST_CHECK(fake_cuda_ipc_mapped == 2 * (tst_size - 1), "e: %d peer allocations mapped with the dup, expected "
              "%d (nothing new)", fake_cuda_ipc_mapped, 2 * (tst_size - 1));
    call(dup, 0, 100 * K, 0, "e: allreduce of 100 KiB on the dup");
    call(MPI_COMM_WORLD, 0, 100 * K, 0, "e: allreduce of 100 KiB on the world between the dup's");
    call(dup, 2, 64 * K, 0, "e: reduce_scatter_block of 64 KiB blocks on the dup");
    expect_pools(HDR + 8 * MIB, 1, g, "e: the dup's calls in the shared area");
    MPI_Comm_free(&dup);
    expect_pools(HDR + 8 * MIB, 1, g, "e: the dup freed (the world keeps the pool)");
    TST_CHECK(fake_cuda_ipc_mapped == 2 * (tst_size - 1), "e: %d peer allocations mapped after the dup's free, "
              "expected %d", fake_cuda_ipc_mapped, 2 * (tst_size - 1));
    MPI_Comm_split(MPI_COMM_WORLD, tst_rank < 2, tst_rank, &half);
    call(half, 0, 64 * K, 0, "e: allreduce of 64 KiB on a split");
    if (tst_rank < 2) {
        expect_pools(2 * HDR + 9 * MIB, 2, ++g, "e: the two-rank side of a split");
    } else {
        expect_pools(HDR + 8 * MIB, 1, g, "e: the one-rank side of a split (self tier)");
    }
    MPI_Comm_free(&half);
    expect_pools(HDR + 8 * MIB, 1, g, "e: the split freed");

    /* f: a non-blocking call grows it at its start; a persistent request at its init */
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    call(dup, 2, 64 * K, 1, "f: ireduce_scatter_block of 64 KiB blocks on a dup");
    expect_pools(2 * HDR + 9 * MIB, 2, ++g, "f: ireduce_scatter_block of 64 KiB blocks (wants 384 KiB: 1 MiB)");
    MPI_Comm_free(&dup);
#if MPI_VERSION >= 4
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    call(dup, 0, 8, 0, "f: allreduce of 8 doubles on a dup");
    call(dup, 0, 1024 * K, 2, "f: persistent allreduce of 1 MiB on the dup");
    expect_pools(2 * HDR + 10 * MIB, 2, ++g, "f: persistent allreduce of 1 MiB (wants 2 MiB)");
    MPI_Comm_free(&dup);
#endif
    expect_pools(HDR + 8 * MIB, 1, g, "f: the dups freed");

    /* g: the world's first non-blocking call while a dup shares its pool */
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    call(dup, 0, 8, 0, "g: allreduce of 8 doubles on a dup");
    expect_pools(HDR + 8 * MIB, 1, g, "g: the dup shares the world's pool");
    call(MPI_COMM_WORLD, 0, 64 * K, 1, "g: iallreduce of 64 KiB on the world");
    expect_pools(2 * HDR + 9 * MIB, 2, ++g, "g: the world's own pool (1 MiB) beside the shared one (the dup's now)");
    call(dup, 0, 100 * K, 0, "g: allreduce of 100 KiB on the dup");
    call(MPI_COMM_WORLD, 0, 64 * K, 0, "g: allreduce of 64 KiB on the world, its own pool");
    MPI_Comm_free(&dup);
    expect_pools(HDR + MIB, 1, g, "g: the dup freed with the old pool");
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    call(dup, 0, 8, 0, "g: allreduce of 8 doubles on a new dup");
    expect_pools(2 * HDR + MIB, 2, g, "g: a new dup makes a pool (the world's is its own)");
    MPI_Comm_free(&dup);
    expect_pools(HDR + MIB, 1, g, "g: freed");
    return tst_finish();
}
