/* gin_probe.cu: the loopback plugin (ginlb_plugin.c) under NCCL's real GIN proxy, without tlmpi
 * (GPU host; built and run by tests/gpu/gin-loopback.sh, not by make: it links the NCCL whose
 * headers it is compiled against, 2.28.9, and runs only with that library).
 *   gin_probe RANK NRANKS IDFILE [ROUNDS] [BYTES]
 * NRANKS processes on one GPU, each its own fake host (NCCL_HOSTID), NCCL_NET_PLUGIN = the plugin:
 * NCCL sees NRANKS nodes of one rank, so ncclDevCommCreate turns GIN on and takes it from the plugin
 * (proxy type: src/gin/gin_host_proxy.cc turns the kernel's puts into the plugin's iput/iputSignal).
 * Contract checked: one window per rank ([0,B) source, two destination slots of B bytes), a devcomm
 * with 2 GIN signals; one kernel per rank runs ROUNDS rounds with its partner (rank ^ 1): write
 * round r's pattern into the source, put B bytes into the partner's slot r % 2 with SignalInc(0),
 * wait (bounded: clock64) until its own signal 0 reaches r + 1, check every word of its slot r % 2
 * on the device (the data must be there once the signal is: the ordering the plugin promises),
 * flush, then acknowledge with a data-less signal (SignalInc(1)) so that the partner may rewrite
 * that slot two rounds later. Prints the granted GIN context count and PASS, or FAIL with the
 * mismatch count / the stuck signal. The ids travel through IDFILE (rank 0 writes it). */
#include <cuda_runtime.h>
#include <nccl.h>
#include <nccl_device.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CK(x)                                                                                    \
    do {                                                                                         \
        cudaError_t e_ = (x);                                                                    \
        if (e_ != cudaSuccess) {                                                                 \
            fprintf(stderr, "FAIL rank %d: %s: %s\n", g_rank, #x, cudaGetErrorString(e_));       \
            exit(1);                                                                             \
        }                                                                                        \
    } while (0)
#define NK(x)                                                                                    \
    do {                                                                                         \
        ncclResult_t r_ = (x);                                                                   \
        if (r_ != ncclSuccess) {                                                                 \
            fprintf(stderr, "FAIL rank %d: %s: %s\n", g_rank, #x, ncclGetErrorString(r_));       \
            exit(1);                                                                             \
        }                                                                                        \
    } while (0)
static int g_rank;

__device__ __forceinline__ uint64_t pat(uint64_t rank, uint64_t round, uint64_t i) {
    return ((rank + 1) << 56) ^ ((round + 1) * 0x9E3779B97F4A7C15ull) ^ (i * 0xD6E8FEB86659FD93ull);
}

/* out[0] mismatching words, out[1] 1 = a wait timed out, out[2] the round, out[3] signal seen */
__global__ void probe(ncclDevComm dc, ncclWindow_t win, size_t B, int rounds, int peer,
                      unsigned long long budget, unsigned long long *out) {
    ncclGin gin{dc, 0};
    uint64_t *base = (uint64_t *)ncclGetLocalPointer(win, 0);
    uint64_t *src = base;
    size_t nw = B / 8;
    __shared__ int stop;
    if (threadIdx.x == 0) stop = 0;
    __syncthreads();
    for (int r = 0; r < rounds && !stop; r++) {
        /* the partner acknowledged round r - 2 (it checked that slot): the slot may be rewritten */
        if (r >= 2 && threadIdx.x == 0) {
            long long t0 = clock64();
            while (gin.readSignal(1) < (uint64_t)(r - 1)) {
                if ((unsigned long long)(clock64() - t0) > budget) {
                    out[1] = 1, out[2] = r, out[3] = gin.readSignal(1), stop = 1;
                    break;
                }
            }
        }
        __syncthreads();
        if (stop) break;
        for (size_t i = threadIdx.x; i < nw; i += blockDim.x) src[i] = pat(dc.rank, r, i);
        __syncthreads();
        if (threadIdx.x == 0) {
            __threadfence_system();
            gin.put(ncclTeamWorld(dc), peer, win, B * (1 + r % 2), win, 0, B, ncclGin_SignalInc{0});
            long long t0 = clock64();
            while (gin.readSignal(0) < (uint64_t)(r + 1)) {
                if ((unsigned long long)(clock64() - t0) > budget) {
                    out[1] = 1, out[2] = r, out[3] = gin.readSignal(0), stop = 1;
                    break;
                }
            }
        }
        __syncthreads();
        if (stop) break;
        const uint64_t *slot = base + nw * (1 + r % 2);
        unsigned long long bad = 0;
        for (size_t i = threadIdx.x; i < nw; i += blockDim.x)
            if (((volatile const uint64_t *)slot)[i] != pat(peer, r, i)) bad++;
        if (bad) {
            atomicAdd(&out[0], bad);
            atomicCAS(&out[2], 0ull, (unsigned long long)r + 1);
        }
        gin.flush(ncclCoopCta()); /* our source is rewritten next round */
        __syncthreads();
        if (threadIdx.x == 0) gin.signal(ncclTeamWorld(dc), peer, ncclGin_SignalInc{1});
    }
    gin.flush(ncclCoopCta());
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s RANK NRANKS IDFILE [ROUNDS] [BYTES]\n", argv[0]);
        return 2;
    }
    g_rank = atoi(argv[1]);
    int n = atoi(argv[2]);
    const char *idfile = argv[3];
    int rounds = argc > 4 ? atoi(argv[4]) : 20;
    size_t B = argc > 5 ? strtoull(argv[5], NULL, 0) : (16u << 20);
    int ver = 0;
    NK(ncclGetVersion(&ver));
    if (ver != NCCL_VERSION_CODE) {
        fprintf(stderr, "FAIL rank %d: NCCL %d loaded, compiled against %d (Device API layouts differ)\n", g_rank, ver,
                NCCL_VERSION_CODE);
        return 1;
    }
    CK(cudaSetDevice(0));
    ncclUniqueId id;
    if (g_rank == 0) {
        NK(ncclGetUniqueId(&id));
        char tmp[4096];
        snprintf(tmp, sizeof tmp, "%s.tmp", idfile);
        FILE *f = fopen(tmp, "wb");
        if (!f || fwrite(&id, sizeof id, 1, f) != 1 || fclose(f) || rename(tmp, idfile)) {
            fprintf(stderr, "FAIL rank 0: cannot write %s\n", idfile);
            return 1;
        }
    } else {
        FILE *f = NULL;
        for (int t = 0; t < 600 && !(f = fopen(idfile, "rb")); t++) usleep(100000);
        if (!f || fread(&id, sizeof id, 1, f) != 1) {
            fprintf(stderr, "FAIL rank %d: no id in %s\n", g_rank, idfile);
            return 1;
        }
        fclose(f);
    }
    ncclComm_t comm;
    NK(ncclCommInitRank(&comm, n, id, g_rank));
    size_t total = 3 * B;
    void *buf = NULL;
    ncclWindow_t win;
    NK(ncclMemAlloc(&buf, total));
    CK(cudaMemset(buf, 0, total));
    NK(ncclCommWindowRegister(comm, buf, total, &win, 0));
    ncclDevCommRequirements reqs;
    memset(&reqs, 0, sizeof reqs);
    reqs.ginSignalCount = 2;
    ncclDevComm dc;
    NK(ncclDevCommCreate(comm, &reqs, &dc));
    printf("rank %d: ncclDevCommCreate with GIN: %d contexts granted, nRanks %d, lsaSize %d\n", g_rank,
           (int)dc.ginContextCount, dc.nRanks, dc.lsaSize);
    if (dc.ginContextCount == 0) {
        fprintf(stderr, "FAIL rank %d: no GIN context\n", g_rank);
        return 1;
    }
    unsigned long long *out;
    CK(cudaMallocManaged(&out, 4 * sizeof *out));
    memset(out, 0, 4 * sizeof *out);
    int clk = 0;
    CK(cudaDeviceGetAttribute(&clk, cudaDevAttrClockRate, 0)); /* kHz */
    unsigned long long budget = (unsigned long long)clk * 1000ull * 30; /* 30 s per wait */
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    probe<<<1, 512, 0, s>>>(dc, win, B, rounds, g_rank ^ 1, budget, out);
    CK(cudaStreamSynchronize(s));
    int ok = out[0] == 0 && out[1] == 0;
    if (ok)
        printf("rank %d: PASS %d rounds of a %zu-byte put + SignalInc with rank %d, every word checked on the device\n",
               g_rank, rounds, B, g_rank ^ 1);
    else
        fprintf(stderr, "FAIL rank %d: %llu mismatching words (first bad round %llu), wait timed out %llu (round %llu, signal %llu)\n",
                g_rank, out[0], out[2], out[1], out[2], out[3]);
    NK(ncclDevCommDestroy(comm, &dc));
    NK(ncclCommWindowDeregister(comm, win));
    NK(ncclMemFree(buf));
    NK(ncclCommDestroy(comm));
    return ok ? 0 : 1;
}
