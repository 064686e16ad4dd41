/*
 * classify: is a buffer host, pinned, device or managed memory, and on which device (the rules and
 * the cache are described in classify.h). Driver entry points come from cudawrap.c.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dl_iterate_phdr, pthread_getattr_np */
#endif
#include "config.h"
#include "classify.h"
#include "hostmap.h"
#include "cudawrap.h"
#include "compiler.h"
#include "env.h"
#include "log.h"

#include <link.h>
#include <pthread.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#ifdef HAVE_CUDA
#include <cuda.h> /* types and enums only: the driver is reached through the runtime, never linked */
#include <cuda_runtime_api.h>

static int classify_on; /* tlmpi_mem_init ran with a GPU present */

/* Host addresses that can never be device memory: the brk heap from its start to the current break.
 * (No linker symbols such as `end`: libtlmpi may be LD_PRELOADed into a binary that does not export
 * them.) */
uintptr_t tlmpi_mem_brk_lo = UINTPTR_MAX; /* classify.h: none until tlmpi_mem_init ran with a GPU */
#define brk_lo tlmpi_mem_brk_lo
static void *const brk_none = NULL;
void *const *tlmpi_mem_brk_cur = &brk_none;
extern void *__curbrk __attribute__((weak)); /* glibc's record of the break (classify.h) */

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

/* Where the brk heap starts, so that heap memory allocated before tlmpi's (lazy) init is recognised
 * too: the kernel's start_brk (field 47 of /proc/self/stat, Linux 3.3+); else the start of the
 * [heap] line of /proc/self/maps (kernels and sandboxes that report 0 there); else the break when
 * libtlmpi's constructor ran (before main: every allocation main makes is above it); else the break
 * at init. Everything between it and the current break is the one contiguous brk mapping (the break
 * is read again at every call, so a heap that shrank is followed). */
static uintptr_t ctor_brk;

__attribute__((constructor)) static void classify_ctor(void)
{
    ctor_brk = (uintptr_t)sbrk(0);
}

static uintptr_t heap_start_stat(void)
{
    uintptr_t v = 0;
    char buf[1024], *p;
    FILE *f = fopen("/proc/self/stat", "r");
    size_t n;
    int field;

    if (!f) {
        return 0;
    }
    n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    p = strrchr(buf, ')'); /* the command name (field 2) may hold spaces */
    if (!p) {
        return 0;
    }
    for (field = 2; field < 47 && p; field++) {
        p = strchr(p + 1, ' ');
    }
    if (!p || sscanf(p + 1, "%" SCNuPTR, &v) != 1) {
        return 0;
    }
    return v;
}

static uintptr_t heap_start_maps(void)
{
    char line[512];
    uintptr_t lo = 0, hi;
    FILE *f = fopen("/proc/self/maps", "r");

    if (!f) {
        return 0;
    }
    while (fgets(line, sizeof(line), f)) {
        if (strstr(line, "[heap]") && sscanf(line, "%" SCNxPTR "-%" SCNxPTR, &lo, &hi) == 2) {
            break;
        }
        lo = 0;
    }
    fclose(f);
    return lo;
}

/* the heap start found and which way (for tlmpi_info and the tests) */
static const char *brk_how = "none";

static uintptr_t heap_start(void)
{
    uintptr_t now = (uintptr_t)sbrk(0), v;

    if ((v = heap_start_stat()) != 0 && v <= now) {
        brk_how = "start_brk";
        return v;
    }
    if ((v = heap_start_maps()) != 0 && v <= now) {
        brk_how = "maps";
        return v;
    }
    if (ctor_brk != 0 && ctor_brk != (uintptr_t)-1 && ctor_brk <= now) {
        brk_how = "constructor";
        return ctor_brk;
    }
    brk_how = "init";
    return now;
}

void tlmpi_mem_init(void)
{
    brk_lo = heap_start();
    if (&__curbrk != NULL && __curbrk != NULL) {
        tlmpi_mem_brk_cur = (void *const *)&__curbrk;
    }
    tlmpi_info(MEM, "brk heap from %#" PRIxPTR " (%s) to the break", brk_lo, brk_how);
    dl_iterate_phdr(exe_phdr_cb, NULL);
    (void)tlmpi_hostmap_init();
    classify_on = 1;
}

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
        (tlmpi_cu.get_attr(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID, (CUdeviceptr)a) == CUDA_SUCCESS && id == r.id)) {
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

    if (tlmpi_cu.get_range((CUdeviceptr *)&base, &size, (CUdeviceptr)a) != CUDA_SUCCESS || size == 0 ||
        tlmpi_cu.get_attr(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID, (CUdeviceptr)a) != CUDA_SUCCESS) {
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
#else
void tlmpi_mem_init(void)
{
}
#endif

tlmpi_mem_type_t tlmpi_mem_type(const void *p, int *dev_p)
{
    tlmpi_mem_seen_t seen = { 0, 0, TLMPI_MEM_HOST, -1 };

    return tlmpi_mem_type_in_call(p, dev_p, &seen);
}

tlmpi_mem_type_t tlmpi_mem_type_classify(const void *p, int *dev_p, tlmpi_mem_seen_t *seen)
{
    *dev_p = -1;
#ifdef HAVE_CUDA
    struct cudaPointerAttributes a;
    uintptr_t addr = (uintptr_t)p;
    tlmpi_mem_type_t t;
    range_t r;
    unsigned long long ticket;

    if (p == NULL || !classify_on) {
        return TLMPI_MEM_HOST;
    }
    if (addr >= seen->base && addr < seen->end) {
        *dev_p = seen->dev;
        return seen->type;
    }
    if ((addr >= brk_lo && addr < (uintptr_t)(*tlmpi_mem_brk_cur ? *tlmpi_mem_brk_cur : sbrk(0))) ||
        host_certain(addr)) {
        return TLMPI_MEM_HOST;
    }
    if (tlmpi_cu.get_attr && range_lookup(addr, &r)) {
        *seen = (tlmpi_mem_seen_t){ r.base, r.end, r.type, r.dev };
        *dev_p = r.dev;
        return r.type;
    }
    /* the record of a hooked mapping holding p, taken before CUDA answers: a host answer confirms
     * only that record, not one of a mapping made at the same address after a munmap meanwhile */
    ticket = tlmpi_hostmap_ticket(addr);
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
        (void)cudaGetLastError();
        return TLMPI_MEM_HOST; /* not confirmed: an error is no proof of host memory */
    }
    switch (a.type) {
    case cudaMemoryTypeDevice:  t = TLMPI_MEM_DEVICE; break;
    case cudaMemoryTypeManaged: t = TLMPI_MEM_MANAGED; break;
    case cudaMemoryTypeHost:    tlmpi_hostmap_confirm(addr, ticket); return TLMPI_MEM_PINNED;
    default:                    tlmpi_hostmap_confirm(addr, ticket); return TLMPI_MEM_HOST;
    }
    *dev_p = a.device;
    if (tlmpi_cu.get_range && range_insert(addr, t, a.device, &r)) {
        *seen = (tlmpi_mem_seen_t){ r.base, r.end, r.type, r.dev };
    }
    (void)cudaGetLastError();
    return t;
#else
    (void)p;
    (void)seen;
    return TLMPI_MEM_HOST;
#endif
}

int tlmpi_mem_range(const void *p, uintptr_t *base_p, size_t *size_p, unsigned long long *id_p)
{
#ifdef HAVE_CUDA
    range_t r;

    /* the cache's entry, validated by this call's classification (not under TLMPI_PTR_CACHE=trust,
     * whose entries may carry a freed allocation's id) */
    if (TLMPI_ENV_I(PTR_CACHE) != 1 && range_find((uintptr_t)p, &r) >= 0 && r.id != 0) {
        *base_p = r.base;
        *size_p = r.end - r.base;
        *id_p = r.id;
        return 1;
    }
#endif
    (void)p, (void)base_p, (void)size_p, (void)id_p;
    return 0;
}

void tlmpi_mem_cache_flush(void)
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
