/* CPU stand-ins for the CUDA runtime calls tlmpi makes, for counting tlmpi's own host work
 * (bench/devpath-callgrind.sh) and for tests that need "a GPU" on a machine without one
 * (tests/mpi/mpi_host_classify, mpi_fake_device, mpi_threads). "Device" memory = anything allocated
 * with cudaMalloc here (host memory, so plain loads and stores work); copies are memmove and happen
 * inside the call, so every stream is always idle. No kernels: cudaLaunchKernel returns
 * cudaErrorNotSupported.
 *
 * Thread-safe: the current device and the last error are per thread (as in CUDA); the allocation
 * registry is changed under a mutex and read under a sequence counter (a seqlock: lookups, which
 * tlmpi makes on every device-buffer call, take no lock, so the instruction counts of
 * devpath-callgrind.sh stay close to what they were). */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FK_MAX_ALLOCS 8192
static struct { uintptr_t b, e; unsigned long long id; int dev; } R[FK_MAX_ALLOCS];
static int nr;                          /* high-water mark of R */
static unsigned long long nid = 1;
static unsigned reg_seq;                /* odd while the registry changes */
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
/* FAKE_CUDA_DEVICES=N (default 1) devices; cudaMalloc allocates on the calling thread's current one */
#define FK_TLS __thread __attribute__((tls_model("initial-exec"))) /* linked or preloaded, never dlopen'ed */
static FK_TLS int cur_dev;
static FK_TLS cudaError_t last_err;
static int ndev(void) { const char *e = getenv("FAKE_CUDA_DEVICES"); int n = e ? atoi(e) : 1; return n > 0 ? n : 1; }
/* error injection for tests: while set, stream work "fails" (stream and event queries and stream
 * synchronizes report a launch failure, and GPU-side writes of host words never happen) */
int fake_stream_error;
#define FK_STREAM_ERR() (__atomic_load_n(&fake_stream_error, __ATOMIC_RELAXED) ? cudaErrorLaunchFailure : cudaSuccess)
/* how many pointer queries tlmpi made (tests/mpi/mpi_host_classify reads it) */
unsigned long fake_cuda_ptr_queries;

/* registry entry holding address a (-1: not device memory), under a consistent view */
typedef struct { uintptr_t b, e; unsigned long long id; int dev; } fk_alloc_t;
static inline __attribute__((always_inline)) int scan(uintptr_t a, fk_alloc_t *out)
{
    int i, n = __atomic_load_n(&nr, __ATOMIC_RELAXED);

    for (i = 0; i < n; i++) {
        uintptr_t b = __atomic_load_n(&R[i].b, __ATOMIC_RELAXED), e = __atomic_load_n(&R[i].e, __ATOMIC_RELAXED);
        if (a >= b && a < e) {
            out->b = b;
            out->e = e;
            out->id = __atomic_load_n(&R[i].id, __ATOMIC_RELAXED);
            out->dev = __atomic_load_n(&R[i].dev, __ATOMIC_RELAXED);
            return i;
        }
    }
    return -1;
}
/* lock-free lookup: retried if cudaMalloc/cudaFree changed the registry meanwhile */
static inline __attribute__((always_inline)) int find(const void *p, fk_alloc_t *out)
{
    unsigned s;
    int hit;

    for (;;) {
        s = __atomic_load_n(&reg_seq, __ATOMIC_ACQUIRE);
        if (s & 1u) continue;
        hit = scan((uintptr_t)p, out);
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        if (__atomic_load_n(&reg_seq, __ATOMIC_RELAXED) == s) return hit;
    }
}
static void reg_begin(void) { pthread_mutex_lock(&reg_lock); __atomic_store_n(&reg_seq, reg_seq + 1, __ATOMIC_RELAXED); __atomic_thread_fence(__ATOMIC_RELEASE); }
static void reg_end(void) { __atomic_store_n(&reg_seq, reg_seq + 1, __ATOMIC_RELEASE); pthread_mutex_unlock(&reg_lock); }

cudaError_t cudaGetDeviceCount(int *n) { *n = ndev(); return cudaSuccess; }
cudaError_t cudaGetDevice(int *d) { *d = cur_dev; return cudaSuccess; }
cudaError_t cudaSetDevice(int d) { if (d < 0 || d >= ndev()) return last_err = cudaErrorInvalidDevice; cur_dev = d; return cudaSuccess; }
cudaError_t cudaDeviceGetPCIBusId(char *b, int l, int d) { snprintf(b, l, "0000:00:0%d.0", d); return cudaSuccess; }
cudaError_t cudaDeviceGetAttribute(int *v, enum cudaDeviceAttr a, int d)
{
    if (!v || d < 0 || d >= ndev()) return last_err = cudaErrorInvalidValue;
    switch (a) {
    case cudaDevAttrMultiProcessorCount: *v = 4; break;
    case cudaDevAttrComputeCapabilityMajor: *v = 9; break;
    case cudaDevAttrComputeCapabilityMinor: *v = 0; break;
    case cudaDevAttrMaxThreadsPerBlock: *v = 1024; break;
    case cudaDevAttrWarpSize: *v = 32; break;
    case cudaDevAttrCanMapHostMemory: case cudaDevAttrUnifiedAddressing: *v = 1; break;
    default: *v = 0; break;
    }
    return cudaSuccess;
}
cudaError_t cudaDeviceSynchronize(void) { return FK_STREAM_ERR(); }
cudaError_t cudaRuntimeGetVersion(int *v) { *v = 13000; return cudaSuccess; }
cudaError_t cudaDriverGetVersion(int *v) { *v = 13000; return cudaSuccess; }
cudaError_t cudaGetLastError(void) { cudaError_t e = last_err; last_err = cudaSuccess; return e; }
cudaError_t cudaPeekAtLastError(void) { return last_err; }
const char *cudaGetErrorString(cudaError_t e) { (void)e; return "fake"; }
const char *cudaGetErrorName(cudaError_t e) { (void)e; return "fake"; }
/* streams: any handle works, including 0, cudaStreamLegacy and cudaStreamPerThread */
static int special_stream(cudaStream_t s) { return s == 0 || s == cudaStreamLegacy || s == cudaStreamPerThread; }
cudaError_t cudaStreamCreate(cudaStream_t *s) { *s = (cudaStream_t)malloc(8); return cudaSuccess; }
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned f) { (void)f; return cudaStreamCreate(s); }
cudaError_t cudaStreamCreateWithPriority(cudaStream_t *s, unsigned f, int p) { (void)f; (void)p; return cudaStreamCreate(s); }
cudaError_t cudaStreamDestroy(cudaStream_t s) { if (!special_stream(s)) free(s); return cudaSuccess; }
cudaError_t cudaStreamSynchronize(cudaStream_t s) { (void)s; return FK_STREAM_ERR(); }
cudaError_t cudaStreamQuery(cudaStream_t s) { (void)s; return FK_STREAM_ERR(); }
cudaError_t cudaGetDeviceFlags(unsigned *f) { *f = 0; return cudaSuccess; }
cudaError_t cudaHostAlloc(void **p, size_t n, unsigned f) { (void)f; *p = calloc(1, n); return *p ? cudaSuccess : cudaErrorMemoryAllocation; }
cudaError_t cudaHostGetDevicePointer(void **d, void *h, unsigned f) { (void)f; *d = h; return cudaSuccess; }
cudaError_t cudaHostRegister(void *p, size_t n, unsigned f) { (void)p; (void)n; (void)f; return cudaSuccess; }
cudaError_t cudaHostUnregister(void *p) { (void)p; return cudaSuccess; }
cudaError_t cudaEventCreate(cudaEvent_t *e) { *e = (cudaEvent_t)malloc(8); return cudaSuccess; }
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned f) { (void)f; return cudaEventCreate(e); }
cudaError_t cudaEventDestroy(cudaEvent_t e) { free(e); return cudaSuccess; }
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) { (void)e; (void)s; return cudaSuccess; }
cudaError_t cudaEventRecordWithFlags(cudaEvent_t e, cudaStream_t s, unsigned f) { (void)e; (void)s; (void)f; return cudaSuccess; }
cudaError_t cudaEventQuery(cudaEvent_t e) { (void)e; return FK_STREAM_ERR(); }
cudaError_t cudaEventSynchronize(cudaEvent_t e) { (void)e; return cudaSuccess; }
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned f) { (void)s; (void)e; (void)f; return cudaSuccess; }
/* no kernels on the CPU */
cudaError_t cudaLaunchKernel(const void *fn, dim3 g, dim3 b, void **args, size_t sh, cudaStream_t s)
{
    (void)fn; (void)g; (void)b; (void)args; (void)sh; (void)s;
    return last_err = cudaErrorNotSupported;
}
cudaError_t cudaMalloc(void **p, size_t n)
{
    int i;

    *p = malloc(n ? n : 1);
    if (!*p) return last_err = cudaErrorMemoryAllocation;
    reg_begin();
    for (i = 0; i < nr && R[i].e; i++) {
    }
    if (i == FK_MAX_ALLOCS) {
        reg_end();
        fprintf(stderr, "fakecudart: more than %d live cudaMalloc allocations\n", FK_MAX_ALLOCS);
        free(*p);
        *p = NULL;
        return last_err = cudaErrorMemoryAllocation;
    }
    __atomic_store_n(&R[i].b, (uintptr_t)*p, __ATOMIC_RELAXED);
    __atomic_store_n(&R[i].e, (uintptr_t)*p + (n ? n : 1), __ATOMIC_RELAXED);
    __atomic_store_n(&R[i].id, nid++, __ATOMIC_RELAXED);
    __atomic_store_n(&R[i].dev, cur_dev, __ATOMIC_RELAXED);
    if (i == nr) __atomic_store_n(&nr, nr + 1, __ATOMIC_RELAXED);
    reg_end();
    return cudaSuccess;
}
cudaError_t cudaFree(void *p)
{
    fk_alloc_t a;
    int i;

    if (!p) return cudaSuccess;
    reg_begin();
    i = scan((uintptr_t)p, &a); /* under the lock: no concurrent change */
    if (i >= 0) {
        __atomic_store_n(&R[i].b, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&R[i].e, 0, __ATOMIC_RELAXED);
    }
    reg_end();
    free(p);
    return cudaSuccess;
}
cudaError_t cudaMallocHost(void **p, size_t n) { *p = malloc(n); return cudaSuccess; }
cudaError_t cudaFreeHost(void *p) { free(p); return cudaSuccess; }
cudaError_t cudaMemcpyAsync(void *d, const void *s, size_t n, enum cudaMemcpyKind k, cudaStream_t st) { (void)k; (void)st; memmove(d, s, n); return cudaSuccess; }
cudaError_t cudaMemcpy(void *d, const void *s, size_t n, enum cudaMemcpyKind k) { (void)k; memmove(d, s, n); return cudaSuccess; }
cudaError_t cudaMemcpy2DAsync(void *d, size_t dp, const void *s, size_t sp, size_t w, size_t h, enum cudaMemcpyKind k, cudaStream_t st) {
    (void)k; (void)st; for (size_t r = 0; r < h; r++) memmove((char *)d + r * dp, (const char *)s + r * sp, w); return cudaSuccess; }
cudaError_t cudaMemset(void *d, int v, size_t n) { memset(d, v, n); return cudaSuccess; }
cudaError_t cudaMemsetAsync(void *d, int v, size_t n, cudaStream_t st) { (void)st; memset(d, v, n); return cudaSuccess; }
cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *a, const void *p) {
    fk_alloc_t r;
    int i;

    __atomic_fetch_add(&fake_cuda_ptr_queries, 1, __ATOMIC_RELAXED);
    i = find(p, &r);
    memset(a, 0, sizeof(*a)); a->type = i >= 0 ? cudaMemoryTypeDevice : cudaMemoryTypeUnregistered; a->device = i >= 0 ? r.dev : -1; return cudaSuccess; }
static CUresult fk_range(CUdeviceptr *b, size_t *s, CUdeviceptr p) { fk_alloc_t r; if (find((void *)p, &r) < 0) return CUDA_ERROR_INVALID_VALUE; *b = r.b; *s = r.e - r.b; return CUDA_SUCCESS; }
static CUresult fk_write(CUstream s, CUdeviceptr a, cuuint32_t v, unsigned f) { (void)s; (void)f; if (!FK_STREAM_ERR()) __atomic_store_n((cuuint32_t *)a, v, __ATOMIC_RELEASE); return CUDA_SUCCESS; }
static CUresult fk_attr(void *d, CUpointer_attribute at, CUdeviceptr p) { fk_alloc_t r; (void)at; if (find((void *)p, &r) < 0) return CUDA_ERROR_INVALID_VALUE; *(unsigned long long *)d = r.id; return CUDA_SUCCESS; }
cudaError_t cudaGetDriverEntryPointByVersion(const char *sym, void **fn, unsigned v, unsigned long long f, enum cudaDriverEntryPointQueryResult *q) {
    (void)v; (void)f; *fn = !strcmp(sym, "cuMemGetAddressRange") ? (void *)fk_range : !strcmp(sym, "cuPointerGetAttribute") ? (void *)fk_attr :
                           !strcmp(sym, "cuStreamWriteValue32") ? (void *)fk_write : NULL;
    if (q) *q = *fn ? cudaDriverEntryPointSuccess : cudaDriverEntryPointSymbolNotFound;
    return cudaSuccess; }
