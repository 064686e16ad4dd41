#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dl_iterate_phdr, pthread_getattr_np */
#endif
#include "config.h"
#include "gpu.h"
#include "env.h"
#include "log.h"
#include "core.h"

#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#ifdef HAVE_CUDA
#include <cuda.h> /* types and enums only: the driver is reached through the runtime, never linked */
#include <cuda_runtime_api.h>
#endif

static int gpu_count = -1;
static const char *gpu_why = "not probed";

#ifdef HAVE_CUDA
typedef CUresult (*get_range_fn_t)(CUdeviceptr *base, size_t *size, CUdeviceptr p);
typedef CUresult (*get_attr_fn_t)(void *data, CUpointer_attribute attr, CUdeviceptr p);
typedef CUresult (*write_value_fn_t)(CUstream s, CUdeviceptr addr, cuuint32_t value, unsigned flags);
static get_range_fn_t drv_get_range;
static get_attr_fn_t drv_get_attr;
static write_value_fn_t drv_write_value32;

/* Host addresses that can never be device memory: the brk heap below the current break. (No
 * linker symbols such as `end`: libtlmpi may be LD_PRELOADed into a binary that does not export them.) */
static uintptr_t brk_lo;

/* More host addresses that cannot be device memory while the call runs, so that host-buffer calls
 * on a GPU node skip the CUDA query (about 190 ns):
 *  - the main program's loaded segments (globals, Fortran COMMON blocks, constants): mapped for the
 *    whole life of the process (a shared library's could be unmapped by dlclose, so those are not
 *    used);
 *  - the calling thread's live stack: from tlmpi's own frame up to the top of the thread's stack.
 *    Only when tlmpi's frame is inside the thread's stack as pthread reports it: on a coroutine or
 *    fiber stack, that range would span unrelated mappings, and the fast path is not taken. */
#define EXE_SEGS 8
static struct {
    uintptr_t lo, hi;
} exe_seg[EXE_SEGS];
static int exe_nseg;
static uintptr_t exe_lo, exe_hi; /* span of all of them: one comparison rejects other addresses */
static __thread uintptr_t tls_stack_lo __attribute__((tls_model("initial-exec")));
static __thread uintptr_t tls_stack_hi __attribute__((tls_model("initial-exec"))); /* 0 unknown, 1 none */

static int exe_phdr_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    int i;

    (void)size;
    (void)data;
    for (i = 0; i < info->dlpi_phnum && exe_nseg < EXE_SEGS; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

        if (ph->p_type == PT_LOAD && ph->p_memsz > 0) {
            exe_seg[exe_nseg].lo = (uintptr_t)(info->dlpi_addr + ph->p_vaddr);
            exe_seg[exe_nseg].hi = exe_seg[exe_nseg].lo + (uintptr_t)ph->p_memsz;
            if (!exe_nseg || exe_seg[exe_nseg].lo < exe_lo) {
                exe_lo = exe_seg[exe_nseg].lo;
            }
            if (exe_seg[exe_nseg].hi > exe_hi) {
                exe_hi = exe_seg[exe_nseg].hi;
            }
            exe_nseg++;
        }
    }
    return 1; /* the first object is the main program: stop */
}

static void stack_bounds_init(void)
{
    pthread_attr_t at;
    void *addr = NULL;
    size_t size = 0;

    tls_stack_hi = 1; /* unknown for good unless pthread answers */
    if (pthread_getattr_np(pthread_self(), &at) != 0) {
        return;
    }
    if (pthread_attr_getstack(&at, &addr, &size) == 0 && addr && size) {
        tls_stack_lo = (uintptr_t)addr;
        tls_stack_hi = (uintptr_t)addr + size;
    }
    pthread_attr_destroy(&at);
}

/* 1 if a is certainly host memory now (see above); never 1 for an address CUDA could map. */
static inline int host_certain(uintptr_t a)
{
    uintptr_t fp = (uintptr_t)__builtin_frame_address(0);
    int i;

    if (TLMPI_UNLIKELY(tls_stack_hi == 0)) {
        stack_bounds_init();
    }
    if (a >= fp && a < tls_stack_hi && fp >= tls_stack_lo) {
        return 1;
    }
    if (a < exe_lo || a >= exe_hi) {
        return 0;
    }
    for (i = 0; i < exe_nseg; i++) {
        if (a >= exe_seg[i].lo && a < exe_seg[i].hi) {
            return 1;
        }
    }
    return 0;
}

#define RANGE_SLOTS 32
typedef struct {
    uintptr_t base, end;
    unsigned long long id;      /* CU_POINTER_ATTRIBUTE_BUFFER_ID */
    int dev;
    tlmpi_mem_type_t type;
} range_t;
static range_t ranges[RANGE_SLOTS];
static unsigned range_next;
/* Writers (insert, drop, flush) hold range_lock and bump range_seq to odd before and to even after
 * changing entries; readers take no lock (a seqlock): they scan, then retry if range_seq moved. The
 * hit path of a device-buffer call thus costs a scan plus the one validating driver call. */
static pthread_mutex_t range_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned range_seq;

#define MAX_DEVS 64
static tlmpi_gpu_ctx_t *dev_ctx[MAX_DEVS];
static tlmpi_gpu_ctx_t dev_ctx_store[MAX_DEVS];
static pthread_mutex_t ctx_lock = PTHREAD_MUTEX_INITIALIZER;

static void load_driver_entry_points(void)
{
    enum cudaDriverEntryPointQueryResult q;
    void *fn = NULL;

    if (cudaGetDriverEntryPointByVersion("cuMemGetAddressRange", &fn, 12000, cudaEnableDefault, &q) ==
            cudaSuccess && q == cudaDriverEntryPointSuccess) {
        drv_get_range = (get_range_fn_t)fn;
    }
    fn = NULL;
    if (cudaGetDriverEntryPointByVersion("cuPointerGetAttribute", &fn, 12000, cudaEnableDefault, &q) ==
            cudaSuccess && q == cudaDriverEntryPointSuccess) {
        drv_get_attr = (get_attr_fn_t)fn;
    }
    fn = NULL;
    if (cudaGetDriverEntryPointByVersion("cuStreamWriteValue32", &fn, 12000, cudaEnableDefault, &q) ==
            cudaSuccess && q == cudaDriverEntryPointSuccess) {
        drv_write_value32 = (write_value_fn_t)fn;
    }
    (void)cudaGetLastError();
    if (!drv_get_range || !drv_get_attr) {
        drv_get_range = NULL;
        drv_get_attr = NULL;
        tlmpi_info(CUDA, "driver entry points unavailable: pointer classification is not cached");
    }
}
#endif

int tlmpi_gpu_probe(const char **why_p)
{
    if (gpu_count < 0) {
#ifdef HAVE_CUDA
        int n = 0;
        cudaError_t e = cudaGetDeviceCount(&n);

        if (e != cudaSuccess) {
            (void)cudaGetLastError();
            gpu_why = e == cudaErrorInsufficientDriver ? "no CUDA driver" :
                      e == cudaErrorNoDevice ? "no CUDA device" : cudaGetErrorString(e);
            n = 0;
        } else {
            gpu_why = n ? "ok" : "no CUDA device";
        }
        if (n > 0) {
            brk_lo = (uintptr_t)sbrk(0);
            dl_iterate_phdr(exe_phdr_cb, NULL);
            load_driver_entry_points();
        }
        gpu_count = n;
#else
        gpu_count = 0;
        gpu_why = "built without CUDA";
#endif
    }
    if (why_p) {
        *why_p = gpu_why;
    }
    return gpu_count;
}

void tlmpi_gpu_versions(int *runtime_p, int *driver_p)
{
    *runtime_p = *driver_p = 0;
#ifdef HAVE_CUDA
    if (cudaRuntimeGetVersion(runtime_p) != cudaSuccess) {
        *runtime_p = 0;
    }
    if (cudaDriverGetVersion(driver_p) != cudaSuccess) {
        *driver_p = 0;
    }
    (void)cudaGetLastError();
#endif
}

int tlmpi_gpu_current_device(void)
{
#ifdef HAVE_CUDA
    int d;

    if (tlmpi_gpu_probe(NULL) > 0 && cudaGetDevice(&d) == cudaSuccess) {
        return d;
    }
    (void)cudaGetLastError();
#endif
    return -1;
}

int tlmpi_gpu_pci_bus_id(int dev, char *buf, int len)
{
#ifdef HAVE_CUDA
    if (dev >= 0 && cudaDeviceGetPCIBusId(buf, len, dev) == cudaSuccess) {
        return 0;
    }
    (void)cudaGetLastError();
#endif
    if (len > 0) {
        buf[0] = '\0';
    }
    return -1;
}

#ifdef HAVE_CUDA
static void range_write_begin(void)
{
    __atomic_store_n(&range_seq, range_seq + 1, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
}

static void range_write_end(void)
{
    __atomic_store_n(&range_seq, range_seq + 1, __ATOMIC_RELEASE);
}

static void range_store(unsigned i, const range_t *r)
{
    __atomic_store_n(&ranges[i].base, r->base, __ATOMIC_RELAXED);
    __atomic_store_n(&ranges[i].end, r->end, __ATOMIC_RELAXED);
    __atomic_store_n(&ranges[i].id, r->id, __ATOMIC_RELAXED);
    __atomic_store_n(&ranges[i].dev, r->dev, __ATOMIC_RELAXED);
    __atomic_store_n(&ranges[i].type, r->type, __ATOMIC_RELAXED);
}

/* Lock-free scan for the cached range containing a; the slot index or -1. */
static int range_find(uintptr_t a, range_t *r_p)
{
    for (;;) {
        unsigned seq = __atomic_load_n(&range_seq, __ATOMIC_ACQUIRE), i;
        int found = -1;

        if (seq & 1) {
            continue;
        }
        for (i = 0; i < RANGE_SLOTS; i++) {
            uintptr_t b = __atomic_load_n(&ranges[i].base, __ATOMIC_RELAXED);
            uintptr_t e = __atomic_load_n(&ranges[i].end, __ATOMIC_RELAXED);

            if (a >= b && a < e) {
                r_p->base = b;
                r_p->end = e;
                r_p->id = __atomic_load_n(&ranges[i].id, __ATOMIC_RELAXED);
                r_p->dev = __atomic_load_n(&ranges[i].dev, __ATOMIC_RELAXED);
                r_p->type = __atomic_load_n(&ranges[i].type, __ATOMIC_RELAXED);
                found = (int)i;
                break;
            }
        }
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        if (__atomic_load_n(&range_seq, __ATOMIC_RELAXED) == seq) {
            return found;
        }
    }
}

/* Cached device range containing p, validated by its buffer id; 1 on a valid hit (then *r_p is the
 * range). */
static int range_lookup(uintptr_t a, range_t *r_p)
{
    int found;
    range_t r;
    unsigned long long id = 0;

    found = range_find(a, &r);
    if (found < 0) {
        return 0;
    }
    /* TLMPI_PTR_CACHE=trust (enum index 1): the application promises that a freed device range is
     * not reused by another GPU's allocation, so the range alone answers */
    if (TLMPI_ENV_I(PTR_CACHE) == 1 ||
        (drv_get_attr(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID, (CUdeviceptr)a) == CUDA_SUCCESS && id == r.id)) {
        *r_p = r;
        return 1;
    }
    /* freed or reused: drop the entry */
    pthread_mutex_lock(&range_lock);
    if (ranges[found].base == r.base && ranges[found].id == r.id) {
        static const range_t empty;

        range_write_begin();
        range_store((unsigned)found, &empty);
        range_write_end();
    }
    pthread_mutex_unlock(&range_lock);
    return 0;
}

/* Cache the allocation containing a; 1 (and *r_p) if it could be cached. */
static int range_insert(uintptr_t a, tlmpi_mem_type_t type, int dev, range_t *r_p)
{
    CUdeviceptr base = 0;
    size_t size = 0;
    unsigned long long id = 0;
    range_t r;

    if (drv_get_range((CUdeviceptr *)&base, &size, (CUdeviceptr)a) != CUDA_SUCCESS || size == 0 ||
        drv_get_attr(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID, (CUdeviceptr)a) != CUDA_SUCCESS) {
        return 0;
    }
    r = (range_t){ .base = (uintptr_t)base, .end = (uintptr_t)base + size, .id = id, .dev = dev, .type = type };
    *r_p = r;
    pthread_mutex_lock(&range_lock);
    range_write_begin();
    range_store(range_next % RANGE_SLOTS, &r);
    range_write_end();
    range_next++;
    pthread_mutex_unlock(&range_lock);
    return 1;
}
#endif

tlmpi_mem_type_t tlmpi_gpu_mem_type(const void *p, int *dev_p)
{
    tlmpi_gpu_seen_t seen = { 0, 0, TLMPI_MEM_HOST, -1 };

    return tlmpi_gpu_mem_type_in_call(p, dev_p, &seen);
}

tlmpi_mem_type_t tlmpi_gpu_mem_type_in_call(const void *p, int *dev_p, tlmpi_gpu_seen_t *seen)
{
    *dev_p = -1;
#ifdef HAVE_CUDA
    struct cudaPointerAttributes a;
    uintptr_t addr = (uintptr_t)p;
    tlmpi_mem_type_t t;
    range_t r;

    if (p == NULL || gpu_count <= 0) {
        return TLMPI_MEM_HOST;
    }
    if (addr >= seen->base && addr < seen->end) {
        *dev_p = seen->dev;
        return seen->type;
    }
    if ((addr >= brk_lo && addr < (uintptr_t)sbrk(0)) || host_certain(addr)) {
        return TLMPI_MEM_HOST;
    }
    if (drv_get_attr && range_lookup(addr, &r)) {
        *seen = (tlmpi_gpu_seen_t){ r.base, r.end, r.type, r.dev };
        *dev_p = r.dev;
        return r.type;
    }
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
        (void)cudaGetLastError();
        return TLMPI_MEM_HOST;
    }
    switch (a.type) {
    case cudaMemoryTypeDevice:  t = TLMPI_MEM_DEVICE; break;
    case cudaMemoryTypeManaged: t = TLMPI_MEM_MANAGED; break;
    case cudaMemoryTypeHost:    return TLMPI_MEM_PINNED;
    default:                    return TLMPI_MEM_HOST;
    }
    *dev_p = a.device;
    if (drv_get_range && range_insert(addr, t, a.device, &r)) {
        *seen = (tlmpi_gpu_seen_t){ r.base, r.end, r.type, r.dev };
    }
    (void)cudaGetLastError();
    return t;
#else
    (void)p;
    (void)seen;
    return TLMPI_MEM_HOST;
#endif
}

void tlmpi_gpu_cache_flush(void)
{
#ifdef HAVE_CUDA
    static const range_t empty;
    unsigned i;

    pthread_mutex_lock(&range_lock);
    range_write_begin();
    for (i = 0; i < RANGE_SLOTS; i++) {
        range_store(i, &empty);
    }
    range_write_end();
    pthread_mutex_unlock(&range_lock);
#endif
}

int tlmpi_gpu_enter_device(int dev, int *saved_p)
{
    *saved_p = -1;
#ifdef HAVE_CUDA
    {
        int cur = -1;

        if (cudaGetDevice(&cur) != cudaSuccess) {
            (void)cudaGetLastError();
            return -1;
        }
        if (dev < 0 || cur == dev) {
            return 0;
        }
        if (cudaSetDevice(dev) != cudaSuccess) {
            (void)cudaGetLastError();
            return -1;
        }
        *saved_p = cur;
        return 0;
    }
#else
    (void)dev;
    return -1;
#endif
}

void tlmpi_gpu_restore_device(int saved)
{
#ifdef HAVE_CUDA
    if (saved >= 0 && cudaSetDevice(saved) != cudaSuccess) {
        (void)cudaGetLastError();
    }
#else
    (void)saved;
#endif
}

#ifdef HAVE_CUDA
/* Decide how this device's stream is waited for (TLMPI_WAIT), with dev current. Spin needs the
 * driver's stream memory operations on a mapped host word; checked here once with a real write. */
static void ctx_setup_spin(tlmpi_gpu_ctx_t *ctx, int dev)
{
    long mode = TLMPI_ENV_I(WAIT); /* 0 auto, 1 sync, 2 spin */
    unsigned flags = 0;
    void *w = NULL, *dw = NULL;
    const char *why = NULL;

    ctx->spin = 0;
    ctx->done_word = NULL;
    if (mode == 1) {
        return;
    }
    if (tlmpi_g.thread_level == MPI_THREAD_MULTIPLE) {
        why = "MPI_THREAD_MULTIPLE";
    } else if (mode == 0 && cudaGetDeviceFlags(&flags) == cudaSuccess && (flags & cudaDeviceScheduleBlockingSync)) {
        why = "the device is set to blocking sync";
    } else if (!drv_write_value32) {
        why = "no cuStreamWriteValue32";
    } else if (cudaHostAlloc(&w, 64, cudaHostAllocMapped | cudaHostAllocPortable) != cudaSuccess) {
        why = "cannot allocate a mapped host word";
        w = NULL;
    } else if (cudaHostGetDevicePointer(&dw, w, 0) != cudaSuccess) {
        why = "no device address for the mapped host word";
    } else {
        *(volatile unsigned *)w = 0;
        if (drv_write_value32((CUstream)ctx->stream, (CUdeviceptr)(uintptr_t)dw, 1, 0) != CUDA_SUCCESS ||
            cudaStreamSynchronize((cudaStream_t)ctx->stream) != cudaSuccess || *(volatile unsigned *)w != 1) {
            why = "stream memory operations are not usable";
        }
    }
    (void)cudaGetLastError();
    if (why) {
        if (w) {
            cudaFreeHost(w);
        }
        if (mode == 2) {
            tlmpi_warn(CUDA, "TLMPI_WAIT=spin: not possible on device %d (%s); using cudaStreamSynchronize", dev, why);
        } else {
            tlmpi_debug(CUDA, "device %d: waiting with cudaStreamSynchronize (%s)", dev, why);
        }
        return;
    }
    ctx->done_word = w;
    ctx->done_word_dev = dw;
    ctx->done_seq = 1;
    ctx->spin = 1;
}
#endif

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

int tlmpi_gpu_stream_wait(tlmpi_gpu_ctx_t *ctx)
{
#ifdef HAVE_CUDA
    cudaStream_t s = (cudaStream_t)ctx->stream;
    unsigned target, spins = 0, rounds = 0;
    cudaError_t e;

    if (!ctx->spin) {
        return (int)cudaStreamSynchronize(s);
    }
    target = ctx->done_seq + 1;
    if (drv_write_value32((CUstream)s, (CUdeviceptr)(uintptr_t)ctx->done_word_dev, target, 0) != CUDA_SUCCESS) {
        (void)cudaGetLastError();
        return (int)cudaStreamSynchronize(s);
    }
    ctx->done_seq = target;
    for (;;) {
        if ((int)(*ctx->done_word - target) >= 0) {
            __atomic_thread_fence(__ATOMIC_ACQUIRE);
            return 0;
        }
        if (++spins < 512) {
            cpu_relax();
            continue;
        }
        /* every few microseconds: has the stream failed (or finished)? */
        spins = 0;
        e = cudaStreamQuery(s);
        if (e == cudaSuccess) {
            return 0;
        }
        if (e != cudaErrorNotReady) {
            return (int)e;
        }
        (void)cudaGetLastError();
        if (++rounds > 64) {
            sched_yield(); /* a long wait: leave the core to others */
        }
    }
#else
    (void)ctx;
    return 1;
#endif
}

tlmpi_gpu_ctx_t *tlmpi_gpu_ctx(int dev)
{
#ifdef HAVE_CUDA
    tlmpi_gpu_ctx_t *ctx;
    int saved, i;

    if (dev < 0 || dev >= MAX_DEVS) {
        return NULL;
    }
    ctx = __atomic_load_n(&dev_ctx[dev], __ATOMIC_ACQUIRE);
    if (__builtin_expect(ctx != NULL, 1)) {
        return ctx;
    }
    pthread_mutex_lock(&ctx_lock);
    ctx = dev_ctx[dev];
    if (ctx || tlmpi_gpu_enter_device(dev, &saved) != 0) {
        pthread_mutex_unlock(&ctx_lock);
        return ctx;
    }
    ctx = &dev_ctx_store[dev];
    /* a blocking stream: it also orders after work the caller left on the legacy default stream */
    if (cudaStreamCreate((cudaStream_t *)&ctx->stream) != cudaSuccess ||
        cudaStreamCreate((cudaStream_t *)&ctx->stream2) != cudaSuccess) {
        goto err;
    }
    for (i = 0; i < TLMPI_GPU_MAX_EVENTS; i++) {
        if (cudaEventCreateWithFlags((cudaEvent_t *)&ctx->events[i], cudaEventDisableTiming) != cudaSuccess) {
            goto err;
        }
    }
    ctx_setup_spin(ctx, dev);
    tlmpi_gpu_restore_device(saved);
    __atomic_store_n(&dev_ctx[dev], ctx, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&ctx_lock);
    return ctx;
err:
    tlmpi_warn(CUDA, "cannot create tlmpi's stream/events on device %d: %s", dev,
               cudaGetErrorString(cudaGetLastError()));
    for (i = 0; i < TLMPI_GPU_MAX_EVENTS; i++) {
        if (ctx->events[i]) {
            cudaEventDestroy((cudaEvent_t)ctx->events[i]);
        }
    }
    if (ctx->stream) {
        cudaStreamDestroy((cudaStream_t)ctx->stream);
    }
    if (ctx->stream2) {
        cudaStreamDestroy((cudaStream_t)ctx->stream2);
    }
    memset(ctx, 0, sizeof(*ctx));
    tlmpi_gpu_restore_device(saved);
    pthread_mutex_unlock(&ctx_lock);
    return NULL;
#else
    (void)dev;
    return NULL;
#endif
}

void tlmpi_gpu_finalize(void)
{
#ifdef HAVE_CUDA
    int d, i, saved;

    for (d = 0; d < MAX_DEVS; d++) {
        tlmpi_gpu_ctx_t *ctx = dev_ctx[d];

        if (!ctx || tlmpi_gpu_enter_device(d, &saved) != 0) {
            continue;
        }
        cudaStreamSynchronize((cudaStream_t)ctx->stream);
        cudaStreamSynchronize((cudaStream_t)ctx->stream2);
        for (i = 0; i < TLMPI_GPU_MAX_EVENTS; i++) {
            cudaEventDestroy((cudaEvent_t)ctx->events[i]);
        }
        cudaStreamDestroy((cudaStream_t)ctx->stream);
        cudaStreamDestroy((cudaStream_t)ctx->stream2);
        if (ctx->done_word) {
            cudaFreeHost((void *)ctx->done_word);
        }
        memset(ctx, 0, sizeof(*ctx));
        dev_ctx[d] = NULL;
        tlmpi_gpu_restore_device(saved);
    }
    (void)cudaGetLastError();
    tlmpi_gpu_cache_flush();
#endif
}
