/*
 * gpu: everything tlmpi asks the CUDA runtime on the host side: device count, driver version,
 * pointer classification, and tlmpi's own per-device stream and events. Compiled with and without
 * CUDA (without: no GPU, every pointer is host). Never links libcuda: driver entry points are
 * reached through cudaGetDriverEntryPointByVersion.
 *
 * Classification cache (tlmpi_gpu_mem_type). The rule, chosen so that no verdict can go stale:
 *  - Device/managed verdicts are cached per allocation range (cuMemGetAddressRange) together with
 *    the allocation's CU_POINTER_ATTRIBUTE_BUFFER_ID. A hit is re-validated with one
 *    cuPointerGetAttribute(BUFFER_ID) call: a range that was freed (and possibly reused by a new
 *    allocation or host mapping) has another id or none, so the entry is dropped and the pointer is
 *    classified afresh. TLMPI_PTR_CACHE=trust skips that call: then a range freed and reused by an
 *    allocation on another GPU of the same process would keep its old device (the only case it
 *    gets wrong; a host mapping cannot land in the driver's reserved device address ranges).
 *  - Host verdicts are never cached per pointer: an address that is host memory now may be mapped
 *    as device memory after a free. Only addresses that cannot be device memory during the call
 *    skip CUDA: the brk heap below the current break ([break at init, sbrk(0))), the main program's
 *    loaded segments (globals), and the calling thread's live stack (from tlmpi's frame to the top
 *    of the thread's stack, when tlmpi runs on that stack and not on a coroutine's).
 *  - Everything else costs one cudaPointerGetAttributes, which neither changes the current device
 *    nor leaves a sticky error (any error is cleared).
 */
#ifndef TLMPI_GPU_H
#define TLMPI_GPU_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
    TLMPI_MEM_HOST = 0,     /* pageable host memory (or unknown to CUDA) */
    TLMPI_MEM_PINNED,       /* page-locked host memory registered with CUDA */
    TLMPI_MEM_DEVICE,       /* device memory (cudaMalloc, VMM, ...) */
    TLMPI_MEM_MANAGED       /* managed memory: both sides may touch it; treated as device */
} tlmpi_mem_type_t;

/* Probe the runtime once: number of devices (0 when no GPU or no driver) and why. */
int tlmpi_gpu_probe(const char **why_p);
/* Runtime, driver versions (0 if unknown). */
void tlmpi_gpu_versions(int *runtime_p, int *driver_p);
/* Current device of the calling thread (-1 if none); PCI bus id string of a device. */
int tlmpi_gpu_current_device(void);
int tlmpi_gpu_pci_bus_id(int dev, char *buf, int len);

/* Memory type of p; *dev_p gets the device ordinal for DEVICE/MANAGED (else -1). */
tlmpi_mem_type_t tlmpi_gpu_mem_type(const void *p, int *dev_p);

/* A device allocation validated during the current call (zero-initialise before the first use).
 * tlmpi_gpu_mem_type_in_call classifies like tlmpi_gpu_mem_type, but a pointer inside an allocation
 * already validated for this call is answered without a second driver call (an allocation that
 * is live now keeps its extent), and a pointer it validates becomes the new `seen`. Only for the
 * buffers of one call: the allocation may be freed once the call returns. */
typedef struct {
    uintptr_t base, end;
    tlmpi_mem_type_t type;
    int dev;
} tlmpi_gpu_seen_t;
tlmpi_mem_type_t tlmpi_gpu_mem_type_in_call(const void *p, int *dev_p, tlmpi_gpu_seen_t *seen);
/* Drop every cached device range (tests, finalize). */
void tlmpi_gpu_cache_flush(void);

static inline int tlmpi_mem_is_device(tlmpi_mem_type_t t)
{
    return t == TLMPI_MEM_DEVICE || t == TLMPI_MEM_MANAGED;
}

/*
 * tlmpi's own streams and events on one device, created on first use (the caller's current device
 * is switched for the creation and restored). stream/stream2 are cudaStream_t (two, so that copies
 * in the two directions can run on both copy engines at once), events cudaEvent_t (with timing
 * disabled). NULL if the device cannot be used.
 */
#define TLMPI_GPU_MAX_EVENTS 8
typedef struct {
    void *stream;
    void *stream2;
    void *events[TLMPI_GPU_MAX_EVENTS];
    volatile unsigned *done_word;   /* pinned, mapped host word the GPU writes (NULL: no spin wait) */
    void *done_word_dev;            /* its device address */
    unsigned done_seq;              /* last value enqueued for done_word */
    int spin;                       /* tlmpi_gpu_stream_wait polls done_word */
} tlmpi_gpu_ctx_t;
tlmpi_gpu_ctx_t *tlmpi_gpu_ctx(int dev);

/* Wait until everything enqueued so far on ctx->stream has completed (blocking MPI semantics);
 * returns a cudaError_t (0 = success). With ctx->spin the GPU writes a new value into done_word
 * after the work and the host polls it, calling cudaStreamQuery every few microseconds so that a
 * failed kernel is reported rather than waited for forever; else cudaStreamSynchronize. Only one
 * thread at a time may use ctx->stream (spin is off under MPI_THREAD_MULTIPLE). */
int tlmpi_gpu_stream_wait(tlmpi_gpu_ctx_t *ctx);

/* Make dev current for the calling thread; *saved_p gets the previous device, or -1 if dev was
 * already current. tlmpi_gpu_restore_device(saved) undoes it (no-op for -1). Return 0 or -1. */
int tlmpi_gpu_enter_device(int dev, int *saved_p);
void tlmpi_gpu_restore_device(int saved);

/* Destroy streams/events and flush the cache (finalize). */
void tlmpi_gpu_finalize(void);

#endif
