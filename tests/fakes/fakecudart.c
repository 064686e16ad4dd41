/* CPU stand-ins for the CUDA runtime calls tlmpi makes, for counting tlmpi's own host work
 * (bench/devpath-callgrind.sh) and for tests that need "a GPU" on a machine without one
 * (tests/mpi/mpi_host_classify, mpi_fake_device, mpi_threads, mpi_fault). "Device" memory = anything
 * allocated with cudaMalloc here (host memory, so plain loads and stores work); copies are memmove
 * and happen inside the call, so every stream is always idle. No kernels: cudaLaunchKernel returns
 * cudaErrorNotSupported (the occupancy queries answer, so launchers get as far as the launch), or
 * with FAKE_CUDA_LAUNCH_NOOP=1 (read at each launch) cudaSuccess having run nothing (a test that needs
 * a setup past a kernel whose effect it does not read: mpi_enqueue's barrier scope on a shared GPU).
 *
 * Every allocation is a mapping of its own (never the brk heap, as real device memory). CUDA IPC
 * works between processes: allocations of 64 KiB and more live in a memfd mapped
 * MAP_SHARED (the fd stays open while the allocation lives); a handle carries the owner's pid, that
 * fd and the size, and cudaIpcOpenMemHandle maps /proc/<pid>/fd/<fd> (same user, so allowed), which
 * registers as device memory of the opener's current device until cudaIpcCloseMemHandle.
 * Multicast: fake_cuda_multicast_requests counts every lookup of a cuMulticast* driver entry point
 * (how the runtime API reaches multicast objects); FAKE_CUDA_MULTICAST=1 makes devices report
 * multicast support (attribute 132, CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED, through the runtime
 * and through the driver entry points cuDeviceGet / cuDeviceGetAttribute), default 0.
 *
 * Thread-safe: the current device and the last error are per thread (as in CUDA); the allocation
 * registry is changed under a mutex and read under a sequence counter (a seqlock: lookups, which
 * tlmpi makes on every device-buffer call, take no lock, so the instruction counts of
 * devpath-callgrind.sh stay close to what they were). */
#define _GNU_SOURCE
#include <cuda.h>
#include <cuda_runtime_api.h>
#include "fakecudart.h"
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define FK_MAX_ALLOCS 8192
#define FK_SHARE_MIN ((size_t)64 << 10) /* from this size on, allocations can be shared (IPC) */
enum { FK_ANON = 0, FK_MEMFD, FK_IPC }; /* how an allocation's memory was made */
static struct { uintptr_t b, e; unsigned long long id; int dev; int kind, fd; size_t maplen; } R[FK_MAX_ALLOCS];
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
/* peer allocations mapped now (cudaIpcOpenMemHandle minus cudaIpcCloseMemHandle; tests/mpi/mpi_persist_reg) */
int fake_cuda_ipc_mapped;
/* how many multicast objects someone asked for (tests/mpi/mpi_fault reads it) */
unsigned long fake_cuda_multicast_requests;

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
cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *p, int d)
{
    if (!p || d < 0 || d >= ndev()) return last_err = cudaErrorInvalidDevice;
    memset(p, 0, sizeof(*p));
    snprintf(p->name, sizeof(p->name), "Fake CUDA GPU");
    p->multiProcessorCount = 4;
    p->major = 9;
    return cudaSuccess;
}
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
    case 132: /* CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED */
        *v = getenv("FAKE_CUDA_MULTICAST") && atoi(getenv("FAKE_CUDA_MULTICAST")) == 1;
        break;
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
/* fake_cuda_events_pending (tests/unit/check_mark): while set, every event reads as not yet reached,
 * so that a caller's completion must come from elsewhere (the launch word) */
int fake_cuda_events_pending;
cudaError_t cudaEventQuery(cudaEvent_t e) {
    (void)e;
    if (__atomic_load_n(&fake_cuda_events_pending, __ATOMIC_RELAXED) && !FK_STREAM_ERR()) return cudaErrorNotReady;
    return FK_STREAM_ERR(); }
cudaError_t cudaEventSynchronize(cudaEvent_t e) { (void)e; return cudaSuccess; }
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned f) { (void)s; (void)e; (void)f; return cudaSuccess; }
/* Kernels loaded: CUDA loads a kernel lazily at its first launch, or earlier where cudaFuncGetAttributes
 * or an occupancy query names it, and a load at a launch may wait for the kernels in flight (tlmpi's
 * wait for their peers: cuda/preload.cu loads every kernel before tlmpi's first launch). Here a
 * launch of a kernel never named before is a test failure: a line on stderr and abort(), unless
 * FAKE_CUDA_LAZY_OK=1 (a test that launches on purpose without loading first). */
#define FK_MAX_FUNCS 8192
static const void *fk_funcs[FK_MAX_FUNCS];
static int fk_nfuncs;
static pthread_mutex_t fk_funcs_lock = PTHREAD_MUTEX_INITIALIZER;
static int fk_func_find(const void *f, int add)
{
    int i, found = 0;
    pthread_mutex_lock(&fk_funcs_lock);
    for (i = 0; i < fk_nfuncs && !found; i++) found = fk_funcs[i] == f;
    if (!found && add && fk_nfuncs < FK_MAX_FUNCS) fk_funcs[fk_nfuncs++] = f;
    pthread_mutex_unlock(&fk_funcs_lock);
    return found;
}
/* no kernels on the CPU */
cudaError_t cudaLaunchKernel(const void *fn, dim3 g, dim3 b, void **args, size_t sh, cudaStream_t s)
{
    (void)g; (void)b; (void)args; (void)sh; (void)s;
    if (fn && !fk_func_find(fn, 0) && !getenv("FAKE_CUDA_LAZY_OK")) {
        fprintf(stderr, "fakecudart: kernel %p launched before it was loaded (cudaFuncGetAttributes): CUDA would "
                "load it now, and the load may wait for kernels in flight (cuda/preload.cu)\n", fn);
        abort();
    }
    if (getenv("FAKE_CUDA_LAUNCH_NOOP") && atoi(getenv("FAKE_CUDA_LAUNCH_NOOP")) == 1) return cudaSuccess;
    return last_err = cudaErrorNotSupported;
}
/* a registry entry for [p, p + n) (under reg_begin); -1 when the registry is full */
static int reg_add(void *p, size_t n, int kind, int fd, size_t maplen)
{
    int i;

    for (i = 0; i < nr && R[i].e; i++) {
    }
    if (i == FK_MAX_ALLOCS) {
        fprintf(stderr, "fakecudart: more than %d live cudaMalloc allocations\n", FK_MAX_ALLOCS);
        return -1;
    }
    R[i].kind = kind;
    R[i].fd = fd;
    R[i].maplen = maplen;
    __atomic_store_n(&R[i].b, (uintptr_t)p, __ATOMIC_RELAXED);
    __atomic_store_n(&R[i].e, (uintptr_t)p + (n ? n : 1), __ATOMIC_RELAXED);
    __atomic_store_n(&R[i].id, nid++, __ATOMIC_RELAXED);
    __atomic_store_n(&R[i].dev, cur_dev, __ATOMIC_RELAXED);
    if (i == nr) __atomic_store_n(&nr, nr + 1, __ATOMIC_RELAXED);
    return i;
}
static void reg_clear(int i)
{
    __atomic_store_n(&R[i].b, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&R[i].e, 0, __ATOMIC_RELAXED);
}
static size_t page_round(size_t n) { size_t pg = (size_t)sysconf(_SC_PAGESIZE); return (n + pg - 1) / pg * pg; }

cudaError_t cudaMalloc(void **p, size_t n)
{
    int fd = -1, kind = FK_ANON;
    size_t maplen = 0;

    if (n >= FK_SHARE_MIN) {
        maplen = page_round(n);
        fd = memfd_create("fakecudart", MFD_CLOEXEC);
        if (fd < 0 || ftruncate(fd, (off_t)maplen) != 0 ||
            (*p = mmap(NULL, maplen, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
            if (fd >= 0) close(fd);
            *p = NULL;
            return last_err = cudaErrorMemoryAllocation;
        }
        kind = FK_MEMFD;
    } else {
        /* an anonymous mapping of its own, never the brk heap (real device memory is never there,
         * and tlmpi takes the brk heap for host memory without asking CUDA) */
        maplen = page_round(n ? n : 1);
        *p = mmap(NULL, maplen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (*p == MAP_FAILED) { *p = NULL; return last_err = cudaErrorMemoryAllocation; }
    }
    reg_begin();
    if (reg_add(*p, n, kind, fd, maplen) < 0) {
        reg_end();
        munmap(*p, maplen);
        if (kind == FK_MEMFD) close(fd);
        *p = NULL;
        return last_err = cudaErrorMemoryAllocation;
    }
    reg_end();
    return cudaSuccess;
}
cudaError_t cudaFree(void *p)
{
    fk_alloc_t a;
    int i, kind = -1, fd = -1;
    size_t maplen = 0;

    if (!p) return cudaSuccess;
    reg_begin();
    i = scan((uintptr_t)p, &a); /* under the lock: no concurrent change */
    if (i >= 0) {
        kind = R[i].kind;
        if (kind == FK_IPC) { reg_end(); return last_err = cudaErrorInvalidValue; } /* cudaIpcCloseMemHandle's */
        fd = R[i].fd;
        maplen = R[i].maplen;
        reg_clear(i);
    }
    reg_end();
    if (kind < 0) {
        return last_err = cudaErrorInvalidValue; /* not an allocation of cudaMalloc */
    }
    munmap(p, maplen);
    if (kind == FK_MEMFD) {
        close(fd);
    }
    return cudaSuccess;
}
/* this process's own allocations (cudaMalloc, managed) against a fixed 80 GiB "device": what one process
 * sees of its GPU (tests/gpu/gpu_soak's memory checkpoints against the fakes) */
cudaError_t cudaMemGetInfo(size_t *fr, size_t *tot)
{
    size_t used = 0, total = (size_t)80 << 30;
    int i;

    pthread_mutex_lock(&reg_lock);
    for (i = 0; i < nr; i++) {
        if (R[i].e > R[i].b && R[i].kind != FK_IPC) used += R[i].maplen ? R[i].maplen : R[i].e - R[i].b;
    }
    pthread_mutex_unlock(&reg_lock);
    *tot = total;
    *fr = used < total ? total - used : 0;
    return cudaSuccess;
}
/* IPC: the handle names the owner's memfd (see the top of the file) */
typedef struct { uint32_t magic; int32_t pid, fd; uint64_t size, maplen; } fk_ipc_t;
#define FK_IPC_MAGIC 0x66697063u
cudaError_t cudaIpcGetMemHandle(cudaIpcMemHandle_t *h, void *p)
{
    fk_alloc_t a;
    fk_ipc_t k;
    int i;

    _Static_assert(sizeof(fk_ipc_t) <= sizeof(h->reserved), "handle size");
    if (getenv("FAKE_CUDA_IPC_REFUSE")) {
        return last_err = cudaErrorInvalidValue; /* tests: memory CUDA IPC does not export (managed, pools) */
    }
    reg_begin();
    i = scan((uintptr_t)p, &a);
    if (i < 0 || R[i].kind != FK_MEMFD || a.b != (uintptr_t)p) {
        reg_end();
        return last_err = cudaErrorInvalidValue; /* not the base of a shareable allocation */
    }
    k.magic = FK_IPC_MAGIC;
    k.pid = (int32_t)getpid();
    k.fd = R[i].fd;
    k.size = a.e - a.b;
    k.maplen = R[i].maplen;
    reg_end();
    memset(h, 0, sizeof(*h));
    memcpy(h->reserved, &k, sizeof(k));
    return cudaSuccess;
}
cudaError_t cudaIpcOpenMemHandle(void **p, cudaIpcMemHandle_t h, unsigned flags)
{
    fk_ipc_t k;
    char path[64];
    int fd;

    (void)flags;
    memcpy(&k, h.reserved, sizeof(k));
    if (getenv("FAKE_CUDA_IPC_OPEN_REFUSE")) {
        return last_err = cudaErrorMapBufferObjectFailed; /* tests: this process cannot map a peer's memory */
    }
    if (k.magic != FK_IPC_MAGIC || k.pid == (int32_t)getpid()) {
        return last_err = cudaErrorInvalidResourceHandle; /* as CUDA: not in the exporting process */
    }
    snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)k.pid, (int)k.fd);
    fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        fprintf(stderr, "fakecudart: cudaIpcOpenMemHandle: %s: %m\n", path);
        return last_err = cudaErrorMapBufferObjectFailed;
    }
    *p = mmap(NULL, (size_t)k.maplen, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (*p == MAP_FAILED) {
        *p = NULL;
        return last_err = cudaErrorMapBufferObjectFailed;
    }
    reg_begin();
    if (reg_add(*p, (size_t)k.size, FK_IPC, -1, (size_t)k.maplen) < 0) {
        reg_end();
        munmap(*p, (size_t)k.maplen);
        *p = NULL;
        return last_err = cudaErrorMemoryAllocation;
    }
    reg_end();
    __atomic_add_fetch(&fake_cuda_ipc_mapped, 1, __ATOMIC_RELAXED);
    return cudaSuccess;
}
cudaError_t cudaIpcCloseMemHandle(void *p)
{
    fk_alloc_t a;
    size_t maplen;
    int i;

    reg_begin();
    i = scan((uintptr_t)p, &a);
    if (i < 0 || R[i].kind != FK_IPC || a.b != (uintptr_t)p) {
        reg_end();
        return last_err = cudaErrorInvalidValue;
    }
    maplen = R[i].maplen;
    reg_clear(i);
    reg_end();
    munmap(p, maplen);
    __atomic_sub_fetch(&fake_cuda_ipc_mapped, 1, __ATOMIC_RELAXED);
    return cudaSuccess;
}
/* occupancy: FAKE_CUDA_BLOCKS_PER_SM (default 2) CTAs of any kernel per SM */
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int *n, const void *f, int bs, size_t sm, unsigned fl)
{
    const char *e = getenv("FAKE_CUDA_BLOCKS_PER_SM");

    (void)sm; (void)fl;
    if (!n || bs <= 0 || bs > 1024) return last_err = cudaErrorInvalidValue;
    if (f) fk_func_find(f, 1);
    *n = e ? atoi(e) : 2;
    return cudaSuccess;
}
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int *n, const void *f, int bs, size_t sm)
{
    return cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(n, f, bs, sm, 0);
}
cudaError_t cudaFuncGetAttributes(struct cudaFuncAttributes *a, const void *f)
{
    if (f) fk_func_find(f, 1);
    memset(a, 0, sizeof(*a));
    a->maxThreadsPerBlock = 1024;
    a->numRegs = 32;
    return cudaSuccess;
}
cudaError_t cudaFuncSetAttribute(const void *f, enum cudaFuncAttribute at, int v) { (void)f; (void)at; (void)v; return cudaSuccess; }
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
static CUresult fk_dev_get(CUdevice *d, int ordinal) { if (ordinal < 0 || ordinal >= ndev()) return CUDA_ERROR_INVALID_DEVICE; *d = ordinal; return CUDA_SUCCESS; }
static CUresult fk_dev_attr(int *v, CUdevice_attribute at, CUdevice d) { return cudaDeviceGetAttribute(v, (enum cudaDeviceAttr)at, (int)d) == cudaSuccess ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE; }
/* cuMem shareable handles (src/transport/cumemshare.c): a handle is a descriptor of the allocation's memfd
 * (cudaMalloc's of FK_SHARE_MIN bytes or more stand for cuMem allocations made POSIX-shareable); a
 * mapping is the memfd mapped MAP_SHARED at the reserved address and registered as device memory. */
#define FK_CUMEM 4
static CUresult fk_retain(CUmemGenericAllocationHandle *h, void *p)
{
    fk_alloc_t a;
    int i, fd = -1;

    reg_begin();
    i = scan((uintptr_t)p, &a);
    if (i >= 0 && R[i].kind == FK_MEMFD && a.b == (uintptr_t)p) fd = dup(R[i].fd);
    reg_end();
    if (fd < 0) return CUDA_ERROR_INVALID_VALUE;
    *h = (CUmemGenericAllocationHandle)fd;
    return CUDA_SUCCESS;
}
static CUresult fk_export(void *sh, CUmemGenericAllocationHandle h, CUmemAllocationHandleType t, unsigned long long f)
{
    (void)f;
    if (t != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR || getenv("FAKE_CUDA_CUMEM_EXPORT_REFUSE")) return CUDA_ERROR_NOT_SUPPORTED;
    *(int *)sh = dup((int)h);
    return *(int *)sh >= 0 ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
static CUresult fk_import(CUmemGenericAllocationHandle *h, void *os, CUmemAllocationHandleType t)
{
    int fd;
    if (t != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR || getenv("FAKE_CUDA_CUMEM_IMPORT_REFUSE")) return CUDA_ERROR_NOT_SUPPORTED;
    if ((fd = dup((int)(intptr_t)os)) < 0) return CUDA_ERROR_INVALID_VALUE;
    *h = (CUmemGenericAllocationHandle)fd;
    return CUDA_SUCCESS;
}
static CUresult fk_props(CUmemAllocationProp *p, CUmemGenericAllocationHandle h)
{
    (void)h;
    memset(p, 0, sizeof(*p));
    p->type = CU_MEM_ALLOCATION_TYPE_PINNED;
    p->location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    p->requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    return CUDA_SUCCESS;
}
static CUresult fk_gran(size_t *g, const CUmemAllocationProp *p, CUmemAllocationGranularity_flags o) { (void)p; (void)o; *g = (size_t)sysconf(_SC_PAGESIZE); return CUDA_SUCCESS; }
static CUresult fk_reserve(CUdeviceptr *p, size_t n, size_t al, CUdeviceptr at, unsigned long long f) { (void)al; (void)f; return (CUresult)fake_cuMemAddressReserve((void **)p, n, (void *)at); }
static CUresult fk_map(CUdeviceptr p, size_t n, size_t off, CUmemGenericAllocationHandle h, unsigned long long f)
{
    int i;
    (void)f;
    if (mmap((void *)p, n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, (int)h, (off_t)off) == MAP_FAILED) return CUDA_ERROR_INVALID_VALUE;
    reg_begin();
    i = reg_add((void *)p, n, FK_CUMEM, -1, 0);
    reg_end();
    return i < 0 ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_SUCCESS;
}
static CUresult fk_access(CUdeviceptr p, size_t n, const CUmemAccessDesc *d, size_t c) { (void)p; (void)n; (void)d; (void)c; return CUDA_SUCCESS; }
static CUresult fk_unmap(CUdeviceptr p, size_t n)
{
    fk_alloc_t a;
    int i;
    reg_begin();
    i = scan((uintptr_t)p, &a);
    if (i >= 0 && R[i].kind == FK_CUMEM) reg_clear(i);
    reg_end();
    if (i < 0) return CUDA_ERROR_INVALID_VALUE;
    return mmap((void *)p, n, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0) == MAP_FAILED ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}
static CUresult fk_addr_free(CUdeviceptr p, size_t n) { return (CUresult)fake_cuMemAddressFree((void *)p, n); }
static CUresult fk_release(CUmemGenericAllocationHandle h) { return close((int)h) == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE; }
static const struct { const char *name; void *fn; } fk_syms[] = {
    { "cuMemGetAddressRange", (void *)fk_range }, { "cuPointerGetAttribute", (void *)fk_attr },
    { "cuStreamWriteValue32", (void *)fk_write }, { "cuDeviceGet", (void *)fk_dev_get },
    { "cuDeviceGetAttribute", (void *)fk_dev_attr }, { "cuMemRetainAllocationHandle", (void *)fk_retain },
    { "cuMemExportToShareableHandle", (void *)fk_export }, { "cuMemImportFromShareableHandle", (void *)fk_import },
    { "cuMemGetAllocationPropertiesFromHandle", (void *)fk_props }, { "cuMemGetAllocationGranularity", (void *)fk_gran },
    { "cuMemAddressReserve", (void *)fk_reserve }, { "cuMemMap", (void *)fk_map }, { "cuMemSetAccess", (void *)fk_access },
    { "cuMemUnmap", (void *)fk_unmap }, { "cuMemAddressFree", (void *)fk_addr_free }, { "cuMemRelease", (void *)fk_release },
};
cudaError_t cudaGetDriverEntryPointByVersion(const char *sym, void **fn, unsigned v, unsigned long long f, enum cudaDriverEntryPointQueryResult *q) {
    (void)v; (void)f;
    if (!strncmp(sym, "cuMulticast", 11)) __atomic_fetch_add(&fake_cuda_multicast_requests, 1, __ATOMIC_RELAXED);
    *fn = NULL;
    for (size_t i = 0; i < sizeof(fk_syms) / sizeof(fk_syms[0]); i++) {
        if (!strcmp(sym, fk_syms[i].name)) *fn = fk_syms[i].fn;
    }
    if (q) *q = *fn ? cudaDriverEntryPointSuccess : cudaDriverEntryPointSymbolNotFound;
    return cudaSuccess; }
/* --- additions for tests/mpi/mpi_host_cache (host classification after each change of a range) ---
 * fake_cuda_malloc_at: cudaMalloc at a chosen address (MAP_FIXED_NOREPLACE: fails if anything is
 * mapped there), so that "device memory at an address a host mapping had" can be made at will.
 * cudaMallocManaged: a device allocation (the registry has no kinds: managed memory reads as device,
 * which tlmpi serves the same way); fake_cuda_next_addr != NULL places it there (then it is reset).
 * fake_cuMem{AddressReserve,Map,Unmap,AddressFree}: VMM as the driver does it: the reservation is a
 * PROT_NONE mapping, cuMemMap makes a part of it device memory with no new mapping (here: readable,
 * registered), cuMemUnmap makes it inaccessible again, the address range stays reserved until freed. */
#define FK_VMM 3
void *fake_cuda_next_addr;
cudaError_t fake_cuda_malloc_at(void **p, size_t n, void *want)
{
    size_t maplen = page_round(n ? n : 1);

    *p = mmap(want, maplen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | (want ? MAP_FIXED_NOREPLACE : 0), -1, 0);
    if (*p == MAP_FAILED || (want && *p != want)) {
        if (*p != MAP_FAILED) munmap(*p, maplen);
        *p = NULL;
        return last_err = cudaErrorMemoryAllocation;
    }
    reg_begin();
    if (reg_add(*p, n, FK_ANON, -1, maplen) < 0) { reg_end(); munmap(*p, maplen); *p = NULL; return last_err = cudaErrorMemoryAllocation; }
    reg_end();
    return cudaSuccess;
}
cudaError_t cudaMallocManaged(void **p, size_t n, unsigned flags)
{
    void *want = fake_cuda_next_addr;

    (void)flags;
    fake_cuda_next_addr = NULL;
    return fake_cuda_malloc_at(p, n, want);
}
int fake_cuMemAddressReserve(void **p, size_t size, void *hint)
{
    *p = mmap(hint, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | (hint ? MAP_FIXED_NOREPLACE : 0), -1, 0);
    if (*p == MAP_FAILED) { *p = NULL; return CUDA_ERROR_OUT_OF_MEMORY; }
    return CUDA_SUCCESS;
}
int fake_cuMemMap(void *p, size_t size)
{
    int i;

    if (mprotect(p, size, PROT_READ | PROT_WRITE) != 0) return CUDA_ERROR_INVALID_VALUE;
    reg_begin();
    i = reg_add(p, size, FK_VMM, -1, 0);
    reg_end();
    return i < 0 ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_SUCCESS;
}
int fake_cuMemUnmap(void *p, size_t size)
{
    fk_alloc_t a;
    int i;

    reg_begin();
    i = scan((uintptr_t)p, &a);
    if (i >= 0 && R[i].kind == FK_VMM) reg_clear(i);
    reg_end();
    if (i < 0) return CUDA_ERROR_INVALID_VALUE;
    madvise(p, size, MADV_DONTNEED);
    return mprotect(p, size, PROT_NONE) == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
int fake_cuMemAddressFree(void *p, size_t size) { return munmap(p, size) == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE; }

/* ---- stream capture and graphs (the stream-ordered entry points, src/gpu/order.c) ----
 * A capture is a flag per stream (up to 16 streams capture at once) and a fake graph that holds the
 * user objects retained on it; instantiating and launching a fake graph runs nothing (no kernels on
 * the CPU), destroying it runs the user objects' destructors, as CUDA does. Enough for the entry
 * points' capture checks and the order event's lifetime. */
typedef struct fk_graph {
    int nobj, nrec, nedge;
    struct { void *ptr; cudaHostFn_t fn; } obj[64];
} fk_graph_t;
typedef struct { void *ptr; cudaHostFn_t fn; int refs; } fk_uobj_t;
static struct { cudaStream_t s; fk_graph_t *g; unsigned long long id, tick; cudaGraphNode_t tail; } fk_cap[16];
static unsigned long long fk_cap_ids;
static int fk_cap_find(cudaStream_t s)
{
    int i;
    for (i = 0; i < 16; i++) if (fk_cap[i].g && fk_cap[i].s == s) return i;
    return -1;
}
cudaError_t cudaStreamBeginCapture(cudaStream_t s, enum cudaStreamCaptureMode m)
{
    int i;
    (void)m;
    if (fk_cap_find(s) >= 0) return last_err = cudaErrorIllegalState;
    for (i = 0; i < 16; i++) {
        if (!fk_cap[i].g) {
            fk_cap[i].g = calloc(1, sizeof(fk_graph_t));
            fk_cap[i].s = s;
            fk_cap[i].id = ++fk_cap_ids;
            return fk_cap[i].g ? cudaSuccess : (last_err = cudaErrorMemoryAllocation);
        }
    }
    return last_err = cudaErrorMemoryAllocation;
}
cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *g)
{
    int i = fk_cap_find(s);
    if (i < 0) return last_err = cudaErrorIllegalState;
    *g = (cudaGraph_t)fk_cap[i].g;
    fk_cap[i].g = NULL;
    return cudaSuccess;
}
cudaError_t cudaStreamIsCapturing(cudaStream_t s, enum cudaStreamCaptureStatus *st)
{
    *st = fk_cap_find(s) >= 0 ? cudaStreamCaptureStatusActive : cudaStreamCaptureStatusNone;
    return cudaSuccess;
}
cudaError_t cudaStreamGetCaptureInfo(cudaStream_t s, enum cudaStreamCaptureStatus *st, unsigned long long *id,
                                     cudaGraph_t *g, const cudaGraphNode_t **deps, const cudaGraphEdgeData **edges,
                                     size_t *ndeps)
{
    int i = fk_cap_find(s);
    *st = i >= 0 ? cudaStreamCaptureStatusActive : cudaStreamCaptureStatusNone;
    if (id) *id = i >= 0 ? fk_cap[i].id : 0;
    if (g) *g = i >= 0 ? (cudaGraph_t)fk_cap[i].g : NULL;
    if (edges) *edges = NULL;
    if (deps && ndeps && i >= 0) {
        /* one tail node, new at every query (as if something was captured since the last one) */
        fk_cap[i].tail = (cudaGraphNode_t)(uintptr_t)(0x100000 + ++fk_cap[i].tick);
        *deps = &fk_cap[i].tail;
        *ndeps = 1;
        return cudaSuccess;
    }
    if (deps) *deps = NULL;
    if (ndeps) *ndeps = 0;
    return cudaSuccess;
}
cudaError_t cudaThreadExchangeStreamCaptureMode(enum cudaStreamCaptureMode *m) { (void)m; return cudaSuccess; }
cudaError_t cudaUserObjectCreate(cudaUserObject_t *o, void *ptr, cudaHostFn_t fn, unsigned refs, unsigned flags)
{
    fk_uobj_t *u = calloc(1, sizeof(*u));
    (void)flags;
    if (!u) return last_err = cudaErrorMemoryAllocation;
    u->ptr = ptr;
    u->fn = fn;
    u->refs = (int)refs;
    *o = (cudaUserObject_t)u;
    return cudaSuccess;
}
cudaError_t cudaUserObjectRelease(cudaUserObject_t o, unsigned n)
{
    fk_uobj_t *u = (fk_uobj_t *)o;
    if ((u->refs -= (int)n) <= 0) {
        u->fn(u->ptr);
        free(u);
    }
    return cudaSuccess;
}
cudaError_t cudaGraphRetainUserObject(cudaGraph_t g, cudaUserObject_t o, unsigned n, unsigned flags)
{
    fk_graph_t *fg = (fk_graph_t *)g;
    fk_uobj_t *u = (fk_uobj_t *)o;
    if (!fg || fg->nobj >= 64) return last_err = cudaErrorInvalidValue;
    fg->obj[fg->nobj].ptr = u;
    fg->obj[fg->nobj++].fn = NULL;
    if (!(flags & cudaGraphUserObjectMove)) u->refs += (int)n;
    return cudaSuccess;
}
cudaError_t cudaGraphDestroy(cudaGraph_t g)
{
    fk_graph_t *fg = (fk_graph_t *)g;
    int i;
    if (!fg) return cudaSuccess;
    for (i = 0; i < fg->nobj; i++) cudaUserObjectRelease((cudaUserObject_t)fg->obj[i].ptr, 1);
    free(fg);
    return cudaSuccess;
}
/* event record nodes and the edges into them in a graph being captured (order.c's one record node
 * per capture, its one edge moved to each later call): counted, so a CPU test can see how many a capture made (fake_graph_counts) */
cudaError_t cudaGraphAddEventRecordNode(cudaGraphNode_t *node, cudaGraph_t g, const cudaGraphNode_t *deps, size_t n,
                                        cudaEvent_t ev)
{
    fk_graph_t *fg = (fk_graph_t *)g;
    (void)deps, (void)ev;
    if (!fg) return last_err = cudaErrorInvalidValue;
    fg->nrec++;
    fg->nedge += (int)n;
    *node = (cudaGraphNode_t)(uintptr_t)(0x1000 + fg->nrec);
    return cudaSuccess;
}
cudaError_t cudaGraphAddDependencies(cudaGraph_t g, const cudaGraphNode_t *from, const cudaGraphNode_t *to,
                                     const cudaGraphEdgeData *edges, size_t n)
{
    fk_graph_t *fg = (fk_graph_t *)g;
    (void)from, (void)to, (void)edges;
    if (!fg) return last_err = cudaErrorInvalidValue;
    fg->nedge += (int)n;
    return cudaSuccess;
}
cudaError_t cudaGraphRemoveDependencies(cudaGraph_t g, const cudaGraphNode_t *from, const cudaGraphNode_t *to,
                                        const cudaGraphEdgeData *edges, size_t n)
{
    fk_graph_t *fg = (fk_graph_t *)g;
    (void)from, (void)to, (void)edges;
    if (!fg || fg->nedge < (int)n) return last_err = cudaErrorInvalidValue;
    fg->nedge -= (int)n;
    return cudaSuccess;
}
void fake_graph_counts(cudaGraph_t g, int *records, int *edges)
{
    fk_graph_t *fg = (fk_graph_t *)g;
    *records = fg ? fg->nrec : 0;
    *edges = fg ? fg->nedge : 0;
}
cudaError_t cudaGraphInstantiate(cudaGraphExec_t *e, cudaGraph_t g, unsigned long long flags)
{
    (void)flags;
    *e = (cudaGraphExec_t)g;
    return cudaSuccess;
}
cudaError_t cudaGraphLaunch(cudaGraphExec_t e, cudaStream_t s) { (void)e; (void)s; return cudaSuccess; }
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t e) { (void)e; return cudaSuccess; }
