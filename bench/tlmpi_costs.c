/*
 * tlmpi_costs: what the host-side steps of a device-buffer call cost on this machine, to find
 * where tlmpi's overhead over raw NCCL goes (1 rank). Links tlmpi's internals (libtlmpi_core).
 *   mpiexec -n 1 bench/tlmpi_costs
 * Prints ns per operation, medians of 5 runs of 20000 calls each. It links libtlmpi (whose
 * MPI_Allreduce is timed) and, for the internal functions, a second, static copy of tlmpi's core:
 * so the tier is chosen with TLMPI_TIER in the environment, not tlmpi_config_set.
 */
#include "config.h"
#include "tlmpi.h"
#include "classify.h"
#include "cudawrap.h"
#include "stream.h"
#include "dtype.h"
#include "ncclwrap.h"
#include "env.h"
#include "../cuda/kernels.h"

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include "bench_stats.h"

#define N 20000
#define RUNS 5


#define TIME(_name, _stmt)                                                                   \
    do {                                                                                     \
        double r[RUNS];                                                                      \
        for (int k = 0; k < RUNS; k++) {                                                     \
            double t0 = MPI_Wtime();                                                         \
            for (int i = 0; i < N; i++) {                                                    \
                _stmt;                                                                       \
            }                                                                                \
            r[k] = (MPI_Wtime() - t0) / N * 1e9;                                             \
        }                                                                                    \
        qsort(r, RUNS, sizeof(double), bench_cmp_double);                                    \
        printf("%-44s %9.1f ns\n", _name, r[RUNS / 2]);                                      \
    } while (0)

/* Paired comparison of two statements: PREPS repetitions, each timing a block of PBLOCK calls of
 * A and a block of PBLOCK calls of B (order alternating between repetitions). Prints both medians
 * and the median of the per-repetition differences B - A with a distribution-free 95% CI. Drift
 * (clocks, other tenants) hits both alike, so a few tens of ns are resolved on a 10 us call. */
#define PREPS 201
#define PBLOCK 200
static double pa[PREPS], pb[PREPS], pd[PREPS];
static void pair_report(const char *na, const char *nb)
{
    double ma, mb, md, lo, hi;

    for (int k = 0; k < PREPS; k++) pd[k] = pb[k] - pa[k];
    qsort(pa, PREPS, sizeof(double), bench_cmp_double);
    qsort(pb, PREPS, sizeof(double), bench_cmp_double);
    qsort(pd, PREPS, sizeof(double), bench_cmp_double);
    ma = pa[PREPS / 2]; mb = pb[PREPS / 2]; md = pd[PREPS / 2];
    bench_median_ci(pd, PREPS, &lo, &hi);
    printf("paired  A: %-52s %9.1f ns\n", na, ma);
    printf("        B: %-52s %9.1f ns\n", nb, mb);
    printf("        B - A: median %+.1f ns, 95%% CI [%+.1f, %+.1f] (%+.2f%% of A)\n", md, lo, hi, 100.0 * md / ma);
}
#define PAIR(_na, _sa, _nb, _sb)                                                             \
    do {                                                                                     \
        for (int i = 0; i < PBLOCK; i++) { _sa; _sb; } /* warm-up */                         \
        for (int k = 0; k < PREPS; k++) {                                                    \
            for (int w = 0; w < 2; w++) {                                                    \
                int b_ = (k + w) & 1;                                                        \
                double t0 = MPI_Wtime();                                                     \
                if (b_) { for (int i = 0; i < PBLOCK; i++) { _sb; } }                        \
                else { for (int i = 0; i < PBLOCK; i++) { _sa; } }                           \
                (b_ ? pb : pa)[k] = (MPI_Wtime() - t0) / PBLOCK * 1e9;                       \
            }                                                                                \
        }                                                                                    \
        pair_report(_na, _nb);                                                               \
    } while (0)

int main(int argc, char **argv)
{
    float *d, *h;
    struct cudaPointerAttributes a;
    cudaStream_t s, sb;
    int dev, flag;
    void *attr;
    MPI_Comm dup;

    setenv("TLMPI_TIER", "nccl", 1);
    MPI_Init(&argc, &argv);
    if (cudaMalloc((void **)&d, 1 << 20) != cudaSuccess) {
        printf("tlmpi_costs: no GPU\n");
        MPI_Finalize();
        return 0;
    }
    h = malloc(1 << 20);
    tlmpi_gpu_probe(NULL); /* the static copy of tlmpi's core classifies only after its own probe */
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    cudaStreamCreate(&sb);
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Allreduce(MPI_IN_PLACE, d, 2, MPI_FLOAT, MPI_SUM, dup); /* builds state, NCCL comm */
    TIME("cudaPointerGetAttributes(device ptr)", cudaPointerGetAttributes(&a, d));
    TIME("cudaPointerGetAttributes(malloc ptr)", cudaPointerGetAttributes(&a, h));
    TIME("tlmpi_mem_type(device ptr, cached)", tlmpi_mem_type(d, &dev));
    TIME("tlmpi_mem_type(malloc ptr)", tlmpi_mem_type(h, &dev));
    TIME("cudaGetDevice", cudaGetDevice(&dev));
    TIME("cudaGetLastError", cudaGetLastError());
    TIME("cudaStreamSynchronize(idle, non-blocking)", cudaStreamSynchronize(s));
    TIME("cudaStreamSynchronize(idle, blocking)", cudaStreamSynchronize(sb));
    TIME("cudaMemcpyAsync 8B D2D + sync (non-blocking)",
         (cudaMemcpyAsync(d + 8, d, 8, cudaMemcpyDeviceToDevice, s), cudaStreamSynchronize(s)));
    TIME("cudaMemcpyAsync 8B D2D + sync (blocking)",
         (cudaMemcpyAsync(d + 8, d, 8, cudaMemcpyDeviceToDevice, sb), cudaStreamSynchronize(sb)));
    TIME("PMPI_Comm_get_attr (miss keyval)", PMPI_Comm_get_attr(dup, MPI_TAG_UB, &attr, &flag));
    TIME("MPI_Allreduce 8B device in place, TIER=nccl",
         MPI_Allreduce(MPI_IN_PLACE, d, 2, MPI_FLOAT, MPI_SUM, dup));
    TIME("MPI_Allreduce 8B device in place, TIER=nccl (WORLD)",
         MPI_Allreduce(MPI_IN_PLACE, d, 2, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD));
#ifdef HAVE_NCCL
    {
        /* tlmpi's whole NCCL-tier call against the same NCCL call made directly, out of place */
        ncclComm_t nc;
        ncclUniqueId id;
        int sz;

        tlmpi_dtype_init();
        TIME("tlmpi_dtype_classify(MPI_FLOAT)", tlmpi_dtype_classify(MPI_FLOAT, &sz));
        if (tlmpi_nccl_load(NULL) && tlmpi_nccl.ncclGetUniqueId(&id) == ncclSuccess &&
            tlmpi_nccl.ncclCommInitRank(&nc, 1, id, 0) == ncclSuccess) {
            for (int k = 0; k < 2; k++) {
                TIME("raw ncclAllReduce 8B out of place + sync (blocking stream)",
                     (tlmpi_nccl.ncclAllReduce(d, d + 64, 2, ncclFloat32, ncclSum, nc, sb), cudaStreamSynchronize(sb)));
                TIME("raw ncclAllReduce 8B out of place + sync (non-blocking)",
                     (tlmpi_nccl.ncclAllReduce(d, d + 64, 2, ncclFloat32, ncclSum, nc, s), cudaStreamSynchronize(s)));
                TIME("MPI_Allreduce 8B out of place, TIER=nccl",
                     MPI_Allreduce(d, d + 64, 2, MPI_FLOAT, MPI_SUM, dup));
                TIME("raw ncclReduceScatter 8B + sync (blocking stream)",
                     (tlmpi_nccl.ncclReduceScatter(d, d + 64, 2, ncclFloat32, ncclSum, nc, sb), cudaStreamSynchronize(sb)));
                TIME("MPI_Reduce_scatter_block 8B, TIER=nccl",
                     MPI_Reduce_scatter_block(d, d + 64, 2, MPI_FLOAT, MPI_SUM, dup));
            }
            {
                /* the wait: cudaStreamSynchronize against tlmpi's spin on a GPU-written host word,
                 * both after the same raw NCCL call on tlmpi's own stream */
                char why[160];
                tlmpi_gpu_ctx_t *ctx = tlmpi_gpu_ctx_create(0, 0, why, sizeof(why));
                tlmpi_wait_who_t bench_who = { MPI_COMM_WORLD, 0, TLMPI_COLL_ALLREDUCE, "bench" };
                float *d2;

                cudaMalloc((void **)&d2, 1 << 20);
                printf("tlmpi stream wait: %s\n", ctx && ctx->spin ? "spin (GPU-written host word)" : "cudaStreamSynchronize");
                if (ctx) {
                    cudaStream_t ts = (cudaStream_t)ctx->stream;
                    PAIR("raw ncclAllReduce 8B + cudaStreamSynchronize",
                         (tlmpi_nccl.ncclAllReduce(d, d2, 2, ncclFloat32, ncclSum, nc, ts), cudaStreamSynchronize(ts)),
                         "raw ncclAllReduce 8B + tlmpi_gpu_stream_wait",
                         (tlmpi_nccl.ncclAllReduce(d, d2, 2, ncclFloat32, ncclSum, nc, ts), tlmpi_gpu_stream_wait(ctx, &bench_who, "bench")));
                    PAIR("raw ncclAllReduce 1MiB + cudaStreamSynchronize",
                         (tlmpi_nccl.ncclAllReduce(d, d2, 1 << 18, ncclFloat32, ncclSum, nc, ts), cudaStreamSynchronize(ts)),
                         "raw ncclAllReduce 1MiB + tlmpi_gpu_stream_wait",
                         (tlmpi_nccl.ncclAllReduce(d, d2, 1 << 18, ncclFloat32, ncclSum, nc, ts), tlmpi_gpu_stream_wait(ctx, &bench_who, "bench")));
                    /* a one-rank collective is a device copy: NCCL's enqueue against a plain copy
                     * (copy engine) and against tlmpi's copy kernel, all waited for by spinning */
                    const void *src1[1] = { d };
                    PAIR("raw ncclAllReduce 8B + spin wait",
                         (tlmpi_nccl.ncclAllReduce(d, d2, 2, ncclFloat32, ncclSum, nc, ts), tlmpi_gpu_stream_wait(ctx, &bench_who, "bench")),
                         "cudaMemcpyAsync 8B D2D + spin wait",
                         (cudaMemcpyAsync(d2, d, 8, cudaMemcpyDeviceToDevice, ts), tlmpi_gpu_stream_wait(ctx, &bench_who, "bench")));
                    PAIR("raw ncclAllGather 1MiB + spin wait",
                         (tlmpi_nccl.ncclAllGather(d, d2, 1 << 20, ncclInt8, nc, ts), tlmpi_gpu_stream_wait(ctx, &bench_who, "bench")),
                         "cudaMemcpyAsync 1MiB D2D + spin wait",
                         (cudaMemcpyAsync(d2, d, 1 << 20, cudaMemcpyDeviceToDevice, ts), tlmpi_gpu_stream_wait(ctx, &bench_who, "bench")));
                    PAIR("cudaMemcpyAsync 8B D2D + spin wait",
                         (cudaMemcpyAsync(d2, d, 8, cudaMemcpyDeviceToDevice, ts), tlmpi_gpu_stream_wait(ctx, &bench_who, "bench")),
                         "copy kernel (reduce, 1 source) 8B + spin wait",
                         (tlmpi_cuda_reduce(d2, src1, 1, 8, TLMPI_DT_U8, TLMPI_OP_SUM, 1, ts), tlmpi_gpu_stream_wait(ctx, &bench_who, "bench")));
                    PAIR("cudaMemcpyAsync 1MiB D2D + spin wait",
                         (cudaMemcpyAsync(d2, d, 1 << 20, cudaMemcpyDeviceToDevice, ts), tlmpi_gpu_stream_wait(ctx, &bench_who, "bench")),
                         "copy kernel (reduce, 1 source) 1MiB + spin wait",
                         (tlmpi_cuda_reduce(d2, src1, 1, 1 << 18, TLMPI_DT_U32, TLMPI_OP_SUM, tlmpi_cuda_ctas_for(1 << 20, tlmpi_cuda_sm_count(0)), ts), tlmpi_gpu_stream_wait(ctx, &bench_who, "bench")));
                }
                /* tlmpi's whole call against raw NCCL + cudaStreamSynchronize (two allocations, as OSU) */
                PAIR("raw ncclAllReduce 8B + sync (non-blocking stream)",
                     (tlmpi_nccl.ncclAllReduce(d, d2, 2, ncclFloat32, ncclSum, nc, s), cudaStreamSynchronize(s)),
                     "MPI_Allreduce 8B, TIER=nccl",
                     MPI_Allreduce(d, d2, 2, MPI_FLOAT, MPI_SUM, dup));
                PAIR("raw ncclAllReduce 8B + sync (blocking stream)",
                     (tlmpi_nccl.ncclAllReduce(d, d2, 2, ncclFloat32, ncclSum, nc, sb), cudaStreamSynchronize(sb)),
                     "raw ncclAllReduce 8B + sync (non-blocking stream)",
                     (tlmpi_nccl.ncclAllReduce(d, d2, 2, ncclFloat32, ncclSum, nc, s), cudaStreamSynchronize(s)));
                PAIR("raw ncclReduceScatter 8B + sync (non-blocking stream)",
                     (tlmpi_nccl.ncclReduceScatter(d, d2, 2, ncclFloat32, ncclSum, nc, s), cudaStreamSynchronize(s)),
                     "MPI_Reduce_scatter_block 8B, TIER=nccl",
                     MPI_Reduce_scatter_block(d, d2, 2, MPI_FLOAT, MPI_SUM, dup));
                PAIR("raw ncclAllGather 8B + sync (non-blocking stream)",
                     (tlmpi_nccl.ncclAllGather(d, d2, 8, ncclInt8, nc, s), cudaStreamSynchronize(s)),
                     "MPI_Allgather 8B, TIER=nccl",
                     MPI_Allgather(d, 2, MPI_FLOAT, d2, 2, MPI_FLOAT, dup));
                {
                    /* candidate driver queries for re-validating a cached allocation */
                    typedef CUresult (*attr_fn)(void *, CUpointer_attribute, CUdeviceptr);
                    typedef CUresult (*range_fn)(CUdeviceptr *, size_t *, CUdeviceptr);
                    typedef CUresult (*attrs_fn)(unsigned, CUpointer_attribute *, void **, CUdeviceptr);
                    enum cudaDriverEntryPointQueryResult q;
                    void *f1 = NULL, *f2 = NULL, *f3 = NULL;
                    unsigned long long id;
                    CUdeviceptr base;
                    size_t sz;
                    CUpointer_attribute at[1] = { CU_POINTER_ATTRIBUTE_BUFFER_ID };
                    void *av[1] = { &id };

                    cudaGetDriverEntryPointByVersion("cuPointerGetAttribute", &f1, 12000, cudaEnableDefault, &q);
                    cudaGetDriverEntryPointByVersion("cuMemGetAddressRange", &f2, 12000, cudaEnableDefault, &q);
                    cudaGetDriverEntryPointByVersion("cuPointerGetAttributes", &f3, 12000, cudaEnableDefault, &q);
                    if (f1 && f2 && f3) {
                        PAIR("cuPointerGetAttribute(BUFFER_ID)", ((attr_fn)f1)(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID, (CUdeviceptr)d2),
                             "cuMemGetAddressRange", ((range_fn)f2)(&base, &sz, (CUdeviceptr)d2));
                        PAIR("cuPointerGetAttribute(BUFFER_ID)", ((attr_fn)f1)(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID, (CUdeviceptr)d2),
                             "cuPointerGetAttributes(1: BUFFER_ID)", ((attrs_fn)f3)(1, at, av, (CUdeviceptr)d2));
                    }
                }
                PAIR("tlmpi_mem_type(device ptr, cached) x2 (two allocations)",
                     (tlmpi_mem_type(d, &dev), tlmpi_mem_type(d2, &dev)),
                     "tlmpi_mem_type x2, TLMPI_PTR_CACHE=trust",
                     (tlmpi_env_val[TLMPI_ENV_PTR_CACHE].i = 1, tlmpi_mem_type(d, &dev), tlmpi_mem_type(d2, &dev),
                      tlmpi_env_val[TLMPI_ENV_PTR_CACHE].i = 0));
                cudaFree(d2);
            }
            tlmpi_nccl.ncclCommDestroy(nc);
        }
    }
#endif
    MPI_Comm_free(&dup);
    cudaFree(d);
    free(h);
    MPI_Finalize();
    return 0;
}
