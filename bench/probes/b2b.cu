// bench/probes/b2b.cu: does a memory-bound kernel run slower while the next launch waits queued
// behind it on its stream? K copy kernels (G CTAs of 512 threads, four 16-byte vectors in flight
// per thread, B bytes src -> dst, a CTA's contiguous share of the bytes) per timing, in four forms:
//   sync    each launch followed by cudaStreamSynchronize (the blocking call's shape)
//   eager   K launches on one stream, one sync (the stream-ordered calls' shape)
//   eagerev the same with a cudaEventRecord after each launch (tlmpi's order event)
//   graph   the K launches captured once into a graph, replayed, one sync
// Each kernel notes its first CTA's start and last CTA's end (%globaltimer) in its own slot, so the
// kernel's body time is known apart from the gaps between kernels. Every rank of the job runs the
// same on the one GPU (under MPS for more than one: tests/gpu/mps.sh), an MPI_Barrier before each
// timing. Not part of the build:
//   nvcc -O3 -ccbin mpicxx bench/probes/b2b.cu -o b2b && mpiexec -n 4 ./b2b [G] [MiB] [K] [reps]
// Prints per form: wall us per call (median over reps of the max over ranks), and the kernel body
// in us (median over reps of rank 0's median over kernels 0..K-2, and of its kernel K-1).
#include <mpi.h>
#include <cuda_runtime.h>
#include <algorithm>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <vector>

#define CK(x)                                                                                     \
    do {                                                                                          \
        cudaError_t e_ = (x);                                                                     \
        if (e_ != cudaSuccess) {                                                                  \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));    \
            MPI_Abort(MPI_COMM_WORLD, 2);                                                         \
        }                                                                                         \
    } while (0)

struct Slot {
    unsigned long long start, end;
};

__device__ __forceinline__ unsigned long long gtime()
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__global__ void __launch_bounds__(512) k_copy(const uint4 *__restrict__ src, uint4 *__restrict__ dst, size_t nvec, Slot *slot)
{
    if (threadIdx.x == 0) atomicMin(&slot->start, gtime());
    const size_t per = (nvec + gridDim.x - 1) / gridDim.x;
    const size_t lo = per * blockIdx.x, hi = lo + per < nvec ? lo + per : nvec;
    for (size_t b = lo + threadIdx.x; b < hi; b += 4 * 512) {
        uint4 v[4];
#pragma unroll
        for (int u = 0; u < 4; u++)
            if (b + u * 512 < hi) v[u] = src[b + u * 512];
#pragma unroll
        for (int u = 0; u < 4; u++)
            if (b + u * 512 < hi) dst[b + u * 512] = v[u];
    }
    __syncthreads();
    if (threadIdx.x == 0) atomicMax(&slot->end, gtime());
}

static double now_us()
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec * 1e-3;
}

static double med(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int G = argc > 1 ? atoi(argv[1]) : 33;
    const size_t B = (size_t)(argc > 2 ? atoi(argv[2]) : 256) << 20;
    const int K = argc > 3 ? atoi(argv[3]) : 16, reps = argc > 4 ? atoi(argv[4]) : 7;
    const size_t nvec = B / 16;
    uint4 *src, *dst;
    Slot *slots, *h = (Slot *)malloc(sizeof(Slot) * K);
    CK(cudaMalloc(&src, B));
    CK(cudaMalloc(&dst, B));
    CK(cudaMemset(src, 1, B));
    CK(cudaMalloc(&slots, sizeof(Slot) * K));
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    cudaEvent_t ev;
    CK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    cudaGraph_t g;
    cudaGraphExec_t ge;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < K; i++) k_copy<<<G, 512, 0, s>>>(src, dst, nvec, slots + i);
    CK(cudaStreamEndCapture(s, &g));
    CK(cudaGraphInstantiate(&ge, g, 0));
    const char *names[4] = { "sync", "eager", "eagerev", "graph" };
    std::vector<double> wall[4], body[4], last[4];
    for (int rep = 0; rep < reps + 1; rep++) {
        for (int kk = 0; kk < 4; kk++) {
            const int f = rep & 1 ? 3 - kk : kk;
            std::vector<Slot> init(K, Slot{ ~0ull, 0ull });
            CK(cudaMemcpy(slots, init.data(), sizeof(Slot) * K, cudaMemcpyHostToDevice));
            CK(cudaDeviceSynchronize());
            MPI_Barrier(MPI_COMM_WORLD);
            const double t0 = now_us();
            switch (f) {
            case 0:
                for (int i = 0; i < K; i++) {
                    k_copy<<<G, 512, 0, s>>>(src, dst, nvec, slots + i);
                    CK(cudaStreamSynchronize(s));
                }
                break;
            case 1:
            case 2:
                for (int i = 0; i < K; i++) {
                    k_copy<<<G, 512, 0, s>>>(src, dst, nvec, slots + i);
                    if (f == 2) CK(cudaEventRecord(ev, s));
                }
                CK(cudaStreamSynchronize(s));
                break;
            default:
                CK(cudaGraphLaunch(ge, s));
                CK(cudaStreamSynchronize(s));
            }
            double w = (now_us() - t0) / K, wmax;
            MPI_Allreduce(&w, &wmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
            CK(cudaMemcpy(h, slots, sizeof(Slot) * K, cudaMemcpyDeviceToHost));
            std::vector<double> d;
            for (int i = 0; i + 1 < K; i++) d.push_back((h[i].end - h[i].start) * 1e-3);
            if (rep == 0) continue; // warm-up
            wall[f].push_back(wmax);
            body[f].push_back(med(d));
            last[f].push_back((h[K - 1].end - h[K - 1].start) * 1e-3);
        }
    }
    if (rank == 0) {
        printf("b2b: %d rank(s), G %d CTAs, %zu MiB copy, K %d, %d reps\n", size, G, B >> 20, K, reps);
        for (int f = 0; f < 4; f++)
            printf("  %-8s wall %9.1f us/call   body %9.1f us (kernels 0..K-2)   last %9.1f us\n", names[f], med(wall[f]),
                   med(body[f]), med(last[f]));
    }
    MPI_Finalize();
    return 0;
}
