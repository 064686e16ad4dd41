/* CPU stand-ins for the CUDA runtime calls tlmpi makes, for counting tlmpi's own host work
 * (bench/devpath-callgrind.sh) and for tests that need "a GPU" on a machine without one
 * (tests/mpi/mpi_host_classify). "Device" memory = anything allocated with cudaMalloc here. */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static struct { uintptr_t b, e; unsigned long long id; int dev; } R[64];
/* FAKE_CUDA_DEVICES=N (default 1) devices; cudaMalloc allocates on the current one */
static int cur_dev;
static int ndev(void) { const char *e = getenv("FAKE_CUDA_DEVICES"); int n = e ? atoi(e) : 1; return n > 0 ? n : 1; }
/* error injection for tests: while set, stream work "fails" (stream queries and synchronizes
 * report a launch failure, and GPU-side writes of host words never happen) */
int fake_stream_error;
static int nr;
static unsigned long long nid = 1;
static int find(const void *p) { uintptr_t a = (uintptr_t)p; for (int i = 0; i < nr; i++) if (a >= R[i].b && a < R[i].e) return i; return -1; }
cudaError_t cudaGetDeviceCount(int *n) { *n = ndev(); return cudaSuccess; }
cudaError_t cudaGetDevice(int *d) { *d = cur_dev; return cudaSuccess; }
cudaError_t cudaSetDevice(int d) { if (d < 0 || d >= ndev()) return cudaErrorInvalidDevice; cur_dev = d; return cudaSuccess; }
cudaError_t cudaDeviceGetPCIBusId(char *b, int l, int d) { snprintf(b, l, "0000:00:0%d.0", d); return cudaSuccess; }
cudaError_t cudaRuntimeGetVersion(int *v) { *v = 13000; return cudaSuccess; }
cudaError_t cudaDriverGetVersion(int *v) { *v = 13000; return cudaSuccess; }
cudaError_t cudaGetLastError(void) { return cudaSuccess; }
const char *cudaGetErrorString(cudaError_t e) { (void)e; return "fake"; }
cudaError_t cudaStreamCreate(cudaStream_t *s) { *s = (cudaStream_t)malloc(8); return cudaSuccess; }
cudaError_t cudaStreamDestroy(cudaStream_t s) { free(s); return cudaSuccess; }
cudaError_t cudaStreamSynchronize(cudaStream_t s) { (void)s; return fake_stream_error ? cudaErrorLaunchFailure : cudaSuccess; }
cudaError_t cudaStreamQuery(cudaStream_t s) { (void)s; return fake_stream_error ? cudaErrorLaunchFailure : cudaSuccess; }
cudaError_t cudaGetDeviceFlags(unsigned *f) { *f = 0; return cudaSuccess; }
cudaError_t cudaHostAlloc(void **p, size_t n, unsigned f) { (void)f; *p = calloc(1, n); return *p ? cudaSuccess : cudaErrorMemoryAllocation; }
cudaError_t cudaHostGetDevicePointer(void **d, void *h, unsigned f) { (void)f; *d = h; return cudaSuccess; }
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned f) { (void)f; *e = (cudaEvent_t)malloc(8); return cudaSuccess; }
cudaError_t cudaEventDestroy(cudaEvent_t e) { free(e); return cudaSuccess; }
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) { (void)e; (void)s; return cudaSuccess; }
cudaError_t cudaEventSynchronize(cudaEvent_t e) { (void)e; return cudaSuccess; }
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned f) { (void)s; (void)e; (void)f; return cudaSuccess; }
cudaError_t cudaMalloc(void **p, size_t n) { *p = malloc(n); R[nr].b = (uintptr_t)*p; R[nr].e = R[nr].b + n; R[nr].id = nid++; R[nr].dev = cur_dev; nr++; return cudaSuccess; }
cudaError_t cudaFree(void *p) { int i = find(p); if (i >= 0) R[i].b = R[i].e = 0; free(p); return cudaSuccess; }
cudaError_t cudaMallocHost(void **p, size_t n) { *p = malloc(n); return cudaSuccess; }
cudaError_t cudaFreeHost(void *p) { free(p); return cudaSuccess; }
cudaError_t cudaMemcpyAsync(void *d, const void *s, size_t n, enum cudaMemcpyKind k, cudaStream_t st) { (void)k; (void)st; memmove(d, s, n); return cudaSuccess; }
cudaError_t cudaMemcpy(void *d, const void *s, size_t n, enum cudaMemcpyKind k) { (void)k; memmove(d, s, n); return cudaSuccess; }
cudaError_t cudaMemcpy2DAsync(void *d, size_t dp, const void *s, size_t sp, size_t w, size_t h, enum cudaMemcpyKind k, cudaStream_t st) {
    (void)k; (void)st; for (size_t r = 0; r < h; r++) memmove((char *)d + r * dp, (const char *)s + r * sp, w); return cudaSuccess; }
/* how many pointer queries tlmpi made (tests/mpi/mpi_host_classify reads it) */
unsigned long fake_cuda_ptr_queries;
cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *a, const void *p) {
    fake_cuda_ptr_queries++;
    int i = find(p);
    memset(a, 0, sizeof(*a)); a->type = i >= 0 ? cudaMemoryTypeDevice : cudaMemoryTypeUnregistered; a->device = i >= 0 ? R[i].dev : -1; return cudaSuccess; }
static CUresult fk_range(CUdeviceptr *b, size_t *s, CUdeviceptr p) { int i = find((void *)p); if (i < 0) return CUDA_ERROR_INVALID_VALUE; *b = R[i].b; *s = R[i].e - R[i].b; return CUDA_SUCCESS; }
static CUresult fk_write(CUstream s, CUdeviceptr a, cuuint32_t v, unsigned f) { (void)s; (void)f; if (!fake_stream_error) *(volatile cuuint32_t *)a = v; return CUDA_SUCCESS; }
static CUresult fk_attr(void *d, CUpointer_attribute at, CUdeviceptr p) { int i = find((void *)p); (void)at; if (i < 0) return CUDA_ERROR_INVALID_VALUE; *(unsigned long long *)d = R[i].id; return CUDA_SUCCESS; }
cudaError_t cudaGetDriverEntryPointByVersion(const char *sym, void **fn, unsigned v, unsigned long long f, enum cudaDriverEntryPointQueryResult *q) {
    (void)v; (void)f; *fn = !strcmp(sym, "cuMemGetAddressRange") ? (void *)fk_range : !strcmp(sym, "cuPointerGetAttribute") ? (void *)fk_attr :
                           !strcmp(sym, "cuStreamWriteValue32") ? (void *)fk_write : NULL;
    if (q) *q = *fn ? cudaDriverEntryPointSuccess : cudaDriverEntryPointSymbolNotFound;
    return cudaSuccess; }
