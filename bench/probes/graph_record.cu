// bench/probes/graph_record.cu: what a host-side cudaStreamWaitEvent issued after cudaGraphLaunch
// waits for when the graph records that event more than once (external event record nodes, as a
// stream capture with cudaEventRecordExternal after every captured call makes them), against one
// leaf record node that every captured call adds an edge into (cudaGraphAddDependencies while the
// capture is in progress: src/gpu/order.c). One process, one GPU; not part of the build:
//   nvcc -O2 bench/probes/graph_record.cu -o graph_record && ./graph_record
// The graph: kernel A (spins ~20 ms, then sets a), [record E], kernel B (spins ~200 ms, then sets b),
// [record E]; launched on s1, then s2 waits for E and runs kernel C, which reads a and b. If C sees
// a == 1 and b == 0, the wait was satisfied by the first record node, not the last. Prints one line
// per variant and exits 1 if a leaf variant ever lets C run before B finished. On the H200 (CUDA
// 13.0, driver 580.159.04, 2026-12-02) neither variant did: the wait is for the last record node.
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#define CK(x)                                                                                     \
    do {                                                                                          \
        cudaError_t e_ = (x);                                                                     \
        if (e_ != cudaSuccess) {                                                                  \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));    \
            exit(2);                                                                              \
        }                                                                                         \
    } while (0)

__global__ void k_spin_set(volatile int *flag, long long ns)
{
    long long t0;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    for (;;) {
        long long t;
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
        if (t - t0 > ns) break;
    }
    __threadfence_system();
    *flag = 1;
    __threadfence_system();
}
__global__ void k_read(volatile int *a, volatile int *b, volatile int *out)
{
    out[0] = *a;
    out[1] = *b;
    __threadfence_system();
    out[2] = 1;
}
__global__ void k_clear(int *a, int *b)
{
    *a = 0;
    *b = 0;
}

// variant 0: record E (external) after A and after B; 1: one leaf record node, edges from A and B;
// 2: the same leaf, its edge moved from A to B (src/gpu/order.c)
static cudaGraphExec_t build(int variant, cudaStream_t s1, cudaEvent_t ev, int *a, int *b)
{
    cudaGraph_t g;
    cudaGraphExec_t x;
    cudaGraphNode_t rec = NULL, first = NULL;
    cudaStreamCaptureStatus st;
    unsigned long long id;
    cudaGraph_t cg;
    const cudaGraphNode_t *deps;
    size_t n;

    CK(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
    k_clear<<<1, 1, 0, s1>>>(a, b);
    for (int k = 0; k < 2; k++) {
        k_spin_set<<<1, 1, 0, s1>>>(k ? b : a, k ? 200000000LL : 20000000LL);
        if (variant == 0) {
            CK(cudaEventRecordWithFlags(ev, s1, cudaEventRecordExternal));
            continue;
        }
#if CUDART_VERSION >= 13000
        CK(cudaStreamGetCaptureInfo(s1, &st, &id, &cg, &deps, NULL, &n));
#else
        CK(cudaStreamGetCaptureInfo_v2(s1, &st, &id, &cg, &deps, &n));
#endif
        if (!rec) {
            CK(cudaGraphAddEventRecordNode(&rec, cg, deps, n, ev));
        } else {
            for (size_t i = 0; i < n; i++)
#if CUDART_VERSION >= 13000
                CK(cudaGraphAddDependencies(cg, &deps[i], &rec, NULL, 1));
#else
                CK(cudaGraphAddDependencies(cg, &deps[i], &rec, 1));
#endif
            if (variant == 2)
#if CUDART_VERSION >= 13000
                CK(cudaGraphRemoveDependencies(cg, &first, &rec, NULL, 1));
#else
                CK(cudaGraphRemoveDependencies(cg, &first, &rec, 1));
#endif
        }
        if (k == 0 && variant) first = deps[0];
    }
    CK(cudaStreamEndCapture(s1, &g));
    CK(cudaGraphInstantiate(&x, g, 0));
    CK(cudaGraphDestroy(g));
    return x;
}

int main(void)
{
    cudaStream_t s1, s2;
    cudaEvent_t ev;
    int *a, *b, *out, bad_leaf = 0;

    CK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    CK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    CK(cudaMalloc(&a, 64));
    CK(cudaMalloc(&b, 64));
    CK(cudaHostAlloc((void **)&out, 64, cudaHostAllocMapped));
    static const char *const names[3] = { "a record node after each call", "one leaf record node",
                                          "one leaf record node, edge moved" };
    for (int variant = 0; variant < 3; variant++) {
        cudaGraphExec_t x = build(variant, s1, ev, a, b);
        int early = 0, reps = 3;
        for (int r = 0; r < reps; r++) {
            out[0] = out[1] = -1;
            out[2] = 0;
            CK(cudaGraphLaunch(x, s1));
            CK(cudaStreamWaitEvent(s2, ev, 0));
            k_read<<<1, 1, 0, s2>>>(a, b, out);
            CK(cudaStreamSynchronize(s2));
            CK(cudaStreamSynchronize(s1));
            if (out[1] != 1) early++;
            printf("graph_record: %s replay %d: after the wait a=%d b=%d\n", names[variant], r, out[0], out[1]);
        }
        printf("graph_record: %s: the wait returned before the last call %d of %d times\n", names[variant], early, reps);
        if (variant && early) bad_leaf = 1;
        CK(cudaGraphExecDestroy(x));
    }
    return bad_leaf;
}
