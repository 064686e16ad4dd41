/*
 * stream: tlmpi's streams, events and the wait for GPU work (see stream.h).
 */
#include "config.h"
#include "stream.h"
#include "cudawrap.h"
#include "env.h"
#include "global.h"
#include "log.h"

#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <string.h>

#ifdef HAVE_CUDA
#include <cuda.h>
#include <cuda_runtime_api.h>

#define MAX_DEVS 64
static tlmpi_gpu_ctx_t *dev_ctx[MAX_DEVS];
static tlmpi_gpu_ctx_t dev_ctx_store[MAX_DEVS];
static pthread_mutex_t ctx_lock = PTHREAD_MUTEX_INITIALIZER;
#endif

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
    } else if (!tlmpi_cu.write_value32) {
        why = "no cuStreamWriteValue32";
    } else if (cudaHostAlloc(&w, 64, cudaHostAllocMapped | cudaHostAllocPortable) != cudaSuccess) {
        why = "cannot allocate a mapped host word";
        w = NULL;
    } else if (cudaHostGetDevicePointer(&dw, w, 0) != cudaSuccess) {
        why = "no device address for the mapped host word";
    } else {
        *(volatile unsigned *)w = 0;
        if (tlmpi_cu.write_value32((CUstream)ctx->stream, (CUdeviceptr)(uintptr_t)dw, 1, 0) != CUDA_SUCCESS ||
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
    if (tlmpi_cu.write_value32((CUstream)s, (CUdeviceptr)(uintptr_t)ctx->done_word_dev, target, 0) != CUDA_SUCCESS) {
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
#endif
}
