/*
 * gpu_comm_memory: what tlmpi's node tier holds on the GPU per communicator, and what a new
 * communicator costs, on the GPU host (ranks sharing one GPU under MPS; run by tests/gpu/comm-memory.sh).
 * Memory is tlmpi_get_pool_stats (the node pools this process holds: headers and data areas), beside
 * the device's used memory from cudaMemGetInfo over all ranks (every rank's allocations, divided by the
 * ranks: a cross-check that includes what tlmpi_get_pool_stats does not see). Four parts, printed as
 * "gpu_comm_memory: ..." lines:
 *  small   a job whose device calls are all 8 bytes (200 MPI_Allreduce of one double on the world):
 *          the pools' bytes per rank;
 *  comms   NCOMMS live communicators (dups of the world, splits into halves, MPI_Comm_create_group of all
 *          ranks but one, in turn), each carrying device MPI_Allreduce of 8 B, 64 KiB, 1 MiB, 16 MiB and
 *          64 MiB (the 16 and 64 MiB ones on the same buffers every time): the pools' bytes after the
 *          first and after the last, and the mean per further communicator;
 *  first   the first device call on a new dup (its plan and pools built: an 8-byte MPI_Allreduce),
 *          median and maximum over 20 dups (every rank's time, the slowest rank counted);
 *  cycles  CYCLES cycles of dup / 8-byte and 64 KiB MPI_Allreduce / free: the pools' bytes and the
 *          device's used memory, mean of the first and of the last 100 cycles, and their ratio.
 * Every call's result is checked (small integers, exact). Usage: gpu_comm_memory [NCOMMS [CYCLES]]
 * (defaults 64, 1000). Exit 0 when every result was right (the figures are reported, not judged), 1 on
 * a wrong result, 77 without a GPU.
 */
#include "config.h"
#include "tlmpi.h"

#include <cuda_runtime_api.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int g_rank, g_size, g_bad;
static double *g_d, *g_h; /* 64 MiB device buffer (in place), host copy */
#define BIG_COUNT ((64 << 20) / 8)

#define CK(x)                                                                                                      \
    do {                                                                                                           \
        cudaError_t e_ = (x);                                                                                      \
        if (e_ != cudaSuccess) {                                                                                   \
            fprintf(stderr, "gpu_comm_memory: rank %d: %s: %s\n", g_rank, #x, cudaGetErrorString(e_));            \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                                          \
        }                                                                                                          \
    } while (0)

static double now(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* an in-place MPI_Allreduce (sum) of count doubles on comm, each rank contributing rank+1: checked at
 * its first and last element */
static void allreduce(MPI_Comm comm, long count)
{
    int r, n;
    double want, got[2];

    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &n);
    want = (double)n * (n + 1) / 2;
    /* the first and last elements are set and checked; the others keep what earlier calls left */
    g_h[0] = r + 1;
    CK(cudaMemcpy(g_d, g_h, 8, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(g_d + count - 1, g_h, 8, cudaMemcpyHostToDevice));
    MPI_Allreduce(MPI_IN_PLACE, g_d, (int)count, MPI_DOUBLE, MPI_SUM, comm);
    CK(cudaMemcpy(&got[0], g_d, 8, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(&got[1], g_d + count - 1, 8, cudaMemcpyDeviceToHost));
    if (got[0] != want || got[1] != want) {
        if (g_bad++ < 5) {
            fprintf(stderr, "gpu_comm_memory: rank %d: allreduce of %ld doubles on %d ranks: %g, %g, expected %g\n",
                    g_rank, count, n, got[0], got[1], want);
        }
    }
}

static unsigned long long pool_bytes(void)
{
    tlmpi_pool_stats_t s;

    tlmpi_get_pool_stats(&s);
    return s.bytes;
}

/* the device's used memory (every rank's), after every rank's allocations */
static double used_mib(void)
{
    size_t fr = 0, tot = 0;

    MPI_Barrier(MPI_COMM_WORLD);
    CK(cudaMemGetInfo(&fr, &tot));
    MPI_Barrier(MPI_COMM_WORLD);
    return (double)(tot - fr) / 1048576.0;
}

static double max_over(double v)
{
    MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return v;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    int ncomms = argc > 1 ? atoi(argv[1]) : 64, cycles = argc > 2 ? atoi(argv[2]) : 1000, ndev = 0, i, k;
    MPI_Comm *comms;
    MPI_Group world_group;
    unsigned long long b0, b1, bn;
    double t[20], u0, un, p0 = 0, pn = 0, m0 = 0, mn = 0;
    const long sizes[5] = { 1, (64 << 10) / 8, (1 << 20) / 8, (16 << 20) / 8, BIG_COUNT };

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < 1) {
        if (g_rank == 0) {
            printf("gpu_comm_memory: SKIP: no GPU\n");
        }
        MPI_Finalize();
        return 77;
    }
    CK(cudaSetDevice(g_rank % ndev));
    CK(cudaMalloc((void **)&g_d, (size_t)BIG_COUNT * 8));
    g_h = calloc(1, 8);
    CK(cudaMemset(g_d, 0, (size_t)BIG_COUNT * 8));

    /* small: 8-byte calls only */
    u0 = used_mib();
    for (i = 0; i < 200; i++) {
        allreduce(MPI_COMM_WORLD, 1);
    }
    b0 = pool_bytes();
    un = used_mib();
    if (g_rank == 0) {
        printf("gpu_comm_memory: small: %d ranks, 200 8-byte allreduces on the world: pools %.2f MiB per rank; device "
               "used +%.2f MiB over all ranks (+%.2f per rank)\n", g_size, (double)b0 / 1048576.0, un - u0,
               (un - u0) / g_size);
    }

    /* comms: NCOMMS live communicators, each carrying 8 B .. 64 MiB */
    comms = calloc((size_t)ncomms, sizeof(*comms));
    MPI_Comm_group(MPI_COMM_WORLD, &world_group);
    u0 = used_mib();
    b1 = 0;
    for (i = 0; i < ncomms; i++) {
        int kind = i % 3;

        if (kind == 0) {
            MPI_Comm_dup(MPI_COMM_WORLD, &comms[i]);
        } else if (kind == 1) {
            MPI_Comm_split(MPI_COMM_WORLD, g_rank < g_size / 2, g_rank, &comms[i]);
        } else {
            int out = i % g_size;
            MPI_Group g;

            MPI_Group_excl(world_group, 1, &out, &g);
            MPI_Comm_create_group(MPI_COMM_WORLD, g, 7, &comms[i]);
            MPI_Group_free(&g);
        }
        if (comms[i] != MPI_COMM_NULL) {
            for (k = 0; k < 5; k++) {
                allreduce(comms[i], sizes[k]);
            }
        }
        if (i == 0) {
            b1 = pool_bytes();
        }
    }
    bn = pool_bytes();
    un = used_mib();
    {
        double v[3] = { (double)b1 / 1048576.0, (double)bn / 1048576.0,
                        ((double)bn - (double)b1) / 1048576.0 / (ncomms > 1 ? ncomms - 1 : 1) };
        MPI_Allreduce(MPI_IN_PLACE, v, 3, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        if (g_rank == 0) {
            printf("gpu_comm_memory: comms: %d ranks, %d communicators (dup / split / create_group), each with allreduces "
                   "of 8 B, 64 KiB, 1 MiB, 16 MiB, 64 MiB: pools after the first %.2f MiB per rank, after the last %.2f "
                   "MiB, %.3f MiB per further communicator (the most of any rank); device used +%.1f MiB over all "
                   "ranks (+%.1f per rank)\n", g_size, ncomms, v[0], v[1], v[2], un - u0, (un - u0) / g_size);
        }
    }
    for (i = 0; i < ncomms; i++) {
        if (comms[i] != MPI_COMM_NULL) {
            MPI_Comm_free(&comms[i]);
        }
    }
    MPI_Group_free(&world_group);
    free(comms);

    /* first: the first device call on a new dup */
    for (i = 0; i < 20; i++) {
        MPI_Comm c;
        double t0;

        MPI_Comm_dup(MPI_COMM_WORLD, &c);
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = now();
        allreduce(c, 1);
        t[i] = max_over(now() - t0);
        MPI_Comm_free(&c);
    }
    qsort(t, 20, sizeof(t[0]), cmp);
    if (g_rank == 0) {
        printf("gpu_comm_memory: first: %d ranks, the first 8-byte allreduce on a new dup (plan and pools built): "
               "median %.3f ms, max %.3f ms over 20 dups (slowest rank)\n", g_size, 1e3 * 0.5 * (t[9] + t[10]),
               1e3 * t[19]);
    }

    /* cycles: create / call / free */
    for (i = 0; i < cycles; i++) {
        MPI_Comm c;

        MPI_Comm_dup(MPI_COMM_WORLD, &c);
        allreduce(c, 1);
        allreduce(c, (64 << 10) / 8);
        if (i < 100 || i >= cycles - 100) {
            double p = (double)pool_bytes() / 1048576.0, m = used_mib();

            if (i < 100) {
                p0 += p / 100;
                m0 += m / 100;
            } else {
                pn += p / 100;
                mn += m / 100;
            }
        }
        MPI_Comm_free(&c);
    }
    if (g_rank == 0 && cycles >= 200) {
        printf("gpu_comm_memory: cycles: %d ranks, %d cycles of dup / allreduce 8 B and 64 KiB / free: pools %.3f MiB "
               "(first 100) -> %.3f MiB (last 100), ratio %.4f; device used %.1f -> %.1f MiB, ratio %.4f\n", g_size,
               cycles, p0, pn, p0 > 0 ? pn / p0 : 0, m0, mn, m0 > 0 ? mn / m0 : 0);
    }
    MPI_Allreduce(MPI_IN_PLACE, &g_bad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (g_rank == 0) {
        printf("gpu_comm_memory: %s (%d wrong results)\n", g_bad ? "FAIL" : "PASS", g_bad);
    }
    cudaFree(g_d);
    free(g_h);
    MPI_Finalize();
    return g_bad ? 1 : 0;
}
