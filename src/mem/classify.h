/*
 * classify: the memory type of a buffer (host, pinned, device, managed) and its device, for the
 * dispatcher's per-call classification. MPI-free; compiled with and without CUDA (without: every
 * pointer is host).
 *
 * Classification cache (tlmpi_mem_type). The rule, chosen so that no verdict can go stale:
 *  - Device/managed verdicts are cached per allocation range (cuMemGetAddressRange) together with
 *    the allocation's CU_POINTER_ATTRIBUTE_BUFFER_ID. A hit is re-validated with one
 *    cuPointerGetAttribute(BUFFER_ID) call: a range that was freed (and possibly reused by a new
 *    allocation or host mapping) has another id or none, so the entry is dropped and the pointer is
 *    classified afresh. TLMPI_PTR_CACHE=trust skips that call: then a range freed and reused by an
 *    allocation on another GPU of the same process would keep its old device (the only case it
 *    gets wrong; a host mapping cannot land in the driver's reserved device address ranges).
 *  - Host verdicts are never cached per pointer: an address that is host memory now may be mapped
 *    as device memory after a free. Only addresses that cannot be device memory during the call
 *    skip CUDA: the brk heap ([start_brk of /proc/self/stat, sbrk(0)): heap memory allocated before
 *    tlmpi's init included), the main program's
 *    loaded segments (globals), and the calling thread's live stack (from tlmpi's frame to the top
 *    of the thread's stack, when tlmpi runs on that stack and not on a coroutine's).
 *  - Private anonymous mappings made through mmap, once CUDA said host for one address in them,
 *    until they are unmapped, moved or re-protected (hostmap.h, docs/DESIGN.md "Host memory
 *    classification without a CUDA call").
 *  - Everything else costs one cudaPointerGetAttributes, which neither changes the current device
 *    nor leaves a sticky error (any error is cleared).
 */
#ifndef TLMPI_CLASSIFY_H
#define TLMPI_CLASSIFY_H

#include <stddef.h>
#include <stdint.h>
#include <unistd.h> /* sbrk */

#include "hostmap.h"

typedef enum {
    TLMPI_MEM_HOST = 0,     /* pageable host memory (or unknown to CUDA) */
    TLMPI_MEM_PINNED,       /* page-locked host memory registered with CUDA */
    TLMPI_MEM_DEVICE,       /* device memory (cudaMalloc, VMM, ...) */
    TLMPI_MEM_MANAGED       /* managed memory: both sides may touch it; treated as device */
} tlmpi_mem_type_t;

/* Record the host ranges that can never be device memory (the brk heap, the main program's
 * segments); called once at init when a GPU is present. Before it, every pointer is host. */
void tlmpi_mem_init(void);

/* Memory type of p; *dev_p gets the device ordinal for DEVICE/MANAGED (else -1). */
tlmpi_mem_type_t tlmpi_mem_type(const void *p, int *dev_p);

/* A device allocation validated during the current call (zero-initialise before the first use).
 * tlmpi_mem_type_in_call classifies like tlmpi_mem_type, but a pointer inside an allocation
 * already validated for this call is answered without a second driver call (an allocation that
 * is live now keeps its extent), and a pointer it validates becomes the new `seen`. Only for the
 * buffers of one call: the allocation may be freed once the call returns. */
typedef struct {
    uintptr_t base, end;
    tlmpi_mem_type_t type;
    int dev;
} tlmpi_mem_seen_t;
tlmpi_mem_type_t tlmpi_mem_type_classify(const void *p, int *dev_p, tlmpi_mem_seen_t *seen);
static inline __attribute__((always_inline)) tlmpi_mem_type_t tlmpi_mem_type_in_call(const void *p, int *dev_p,
                                                                                    tlmpi_mem_seen_t *seen)
{
#ifdef HAVE_CUDA
    if (tlmpi_hostmap_hit((uintptr_t)p)) { /* a confirmed host mapping (hostmap.h): no call at all */
        *dev_p = -1;
        return TLMPI_MEM_HOST;
    }
#endif
    return tlmpi_mem_type_classify(p, dev_p, seen);
}
/* 1 if a and b are certainly host memory, decided inline without any call (both in confirmed host
 * mappings, hostmap.h); 0 means "ask tlmpi_mem_type_in_call", not "device". For an entry point's
 * pass-through test on a node with a GPU (tlmpi_mem_init must have run). */
static inline __attribute__((always_inline)) int tlmpi_mem_host_fast2(const void *a, const void *b)
{
#ifdef HAVE_CUDA
    return tlmpi_hostmap_hit2((uintptr_t)a, (uintptr_t)b);
#else
    (void)a;
    (void)b;
    return 1;
#endif
}

/* tlmpi_mem_host_fast2 for the newest confirmed host mapping only (both in it): fewer instructions,
 * for the entry points' inline test; 0: ask tlmpi_mem_host_fast2 or tlmpi_mem_type_in_call. */
static inline __attribute__((always_inline)) int tlmpi_mem_host_fast2_first(const void *a, const void *b)
{
#ifdef HAVE_CUDA
    return tlmpi_hostmap_hit2_first((uintptr_t)a, (uintptr_t)b);
#else
    (void)a;
    (void)b;
    return 1;
#endif
}
/* 1 if a and b both lie in the brk heap now: [its start (classify.c), the break), no call and no
 * CUDA query; 0 means "ask tlmpi_mem_type_in_call". Heap memory (malloc'ed small blocks, before
 * or after MPI_Init) is what most host buffers are: the entry points' pass-through test takes it
 * here, after the confirmed host mappings. */
extern uintptr_t tlmpi_mem_brk_lo __attribute__((visibility("hidden")));
/* Where the current break is read: glibc's own record of it (__curbrk, updated by every brk/sbrk
 * glibc makes, malloc's included), set by tlmpi_mem_init; until then, and without glibc, a zero
 * (with tlmpi_mem_brk_lo at its initial UINTPTR_MAX no address passes; the full classification reads sbrk(0)). Not sbrk(0) here: where UCX's memory
 * hooks are loaded (MPICH ch4:ucx, Open MPI's pml ucx) sbrk is theirs and makes a brk system call
 * every time (strace of bench/passthrough on heap buffers: one brk per MPI call, 100-300 ns). A
 * break moved by a raw brk system call outside glibc is not seen; malloc never does that. */
extern void *const *tlmpi_mem_brk_cur __attribute__((visibility("hidden")));
static inline __attribute__((always_inline)) int tlmpi_mem_host_brk2(const void *a, const void *b)
{
#ifdef HAVE_CUDA
    /* four compares and two loads in two scratch registers: the entry points' inline test stays
     * without a stack frame (a break below lo, a heap that shrank under a start found late, lets
     * no address pass) */
    return (uintptr_t)a >= tlmpi_mem_brk_lo && (uintptr_t)b >= tlmpi_mem_brk_lo &&
           (uintptr_t)a < (uintptr_t)*tlmpi_mem_brk_cur && (uintptr_t)b < (uintptr_t)*tlmpi_mem_brk_cur;
#else
    (void)a;
    (void)b;
    return 1;
#endif
}

/* The allocation holding device pointer p (its base, size and CU_POINTER_ATTRIBUTE_BUFFER_ID) from the
 * classification cache, for a pointer this call has classified (the classification validated the
 * entry's id); 1 on success, 0 when the cache cannot say (then ask the driver). */
int tlmpi_mem_range(const void *p, uintptr_t *base_p, size_t *size_p, unsigned long long *id_p);

/* Drop every cached device range (tests, finalize). */
void tlmpi_mem_cache_flush(void);

static inline int tlmpi_mem_is_device(tlmpi_mem_type_t t)
{
    return t == TLMPI_MEM_DEVICE || t == TLMPI_MEM_MANAGED;
}

#endif
