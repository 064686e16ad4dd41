/*
 * hostmap: host memory classified without a CUDA call, beyond the brk heap, the program's segments
 * and the caller's stack (classify.c): private anonymous readable mappings that were created through
 * the public mmap symbol, which libtlmpi defines (with munmap, mremap, mprotect and shmat) so that it
 * sees every such mapping made and every change that can end one. The rules and why they are safe:
 * docs/DESIGN.md, "Host memory classification without a CUDA call".
 *
 *  - record: tlmpi's mmap notes each new MAP_PRIVATE|MAP_ANONYMOUS mapping with PROT_READ
 *    ("recorded": not yet known to be host; ld.so's and glibc's internal mappings, and the driver's
 *    PROT_NONE reservations, are never recorded);
 *  - confirm: classify.c takes a ticket for the record holding an address before it asks CUDA;
 *    when CUDA answers host (unregistered or pinned), the record becomes "host" if it is still the
 *    same record (same ticket) and enters a small hot array that the per-call lookup scans;
 *  - drop: munmap, mremap, mprotect and mmap(MAP_FIXED) over a range drop every record and hot
 *    entry that overlaps it before the kernel changes the mapping; shmat(SHM_REMAP) drops all.
 *  - UCX: where UCX's memory hooks (libucm) take these calls over (they rewrite the first function
 *    found, tlmpi's), UCM's mapped/unmapped events record and drop instead; such a record's
 *    mapping must also read private, anonymous and readable in /proc/self/maps when it is
 *    confirmed (an event carries no protection or flags).
 *
 * The hot array is read without a lock under a sequence counter; records change under a mutex that
 * the hooks only try (a hook that cannot take it, e.g. from a signal handler, turns the cache off for
 * good instead of waiting).
 */
#ifndef TLMPI_HOSTMAP_H
#define TLMPI_HOSTMAP_H

#include <stddef.h>
#include <stdint.h>

#define TLMPI_HOSTMAP_HOT 4
#define TLMPI_HOSTMAP_HIDDEN __attribute__((visibility("hidden"))) /* direct RIP-relative loads, no GOT */

typedef struct {
    uintptr_t lo, len; /* [lo, lo + len); a cleared entry is 0, 0 */
} tlmpi_hostmap_range_t;

extern tlmpi_hostmap_range_t tlmpi_hostmap_hot[TLMPI_HOSTMAP_HOT] TLMPI_HOSTMAP_HIDDEN;
extern unsigned tlmpi_hostmap_seq TLMPI_HOSTMAP_HIDDEN; /* odd while the hot array changes */
/* tlmpi's munmap hook (hostmap.c; exported as munmap) and its first 8 code bytes as they were when
 * the cache was turned on: a library that rewrites the hooks (a jump at their entry) makes every
 * lookup miss from then on. The lookup reads the code bytes at the hook's own address. */
int tlmpi_hostmap_munmap(void *addr, size_t len) TLMPI_HOSTMAP_HIDDEN;
extern uint64_t tlmpi_hostmap_code_sig TLMPI_HOSTMAP_HIDDEN;

/* Turn the cache on (called by tlmpi_mem_init with a GPU present) when tlmpi's hooks are the
 * mapping functions the process uses; 1 if on. */
int tlmpi_hostmap_init(void);

/* The checks after a hot entry matched: no writer was active (the sequence s read before the scan
 * was even and is unchanged) and the munmap hook's code is as it was. */
static inline __attribute__((always_inline)) int tlmpi_hostmap_valid(unsigned s)
{
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    /* s even and unchanged, in one comparison (an odd s never equals s & ~1) */
    return __atomic_load_n(&tlmpi_hostmap_seq, __ATOMIC_RELAXED) == (s & ~1u) &&
           *(const volatile uint64_t *)(const void *)tlmpi_hostmap_munmap == tlmpi_hostmap_code_sig;
}

/* 1 if a lies in a confirmed host mapping now (no lock, no call): a scan of the hot array (one
 * unsigned comparison per entry; a cleared entry matches nothing) between two reads of the
 * sequence counter, then the hooks' code check. */
static inline __attribute__((always_inline)) int tlmpi_hostmap_hit(uintptr_t a)
{
    unsigned s = __atomic_load_n(&tlmpi_hostmap_seq, __ATOMIC_ACQUIRE);
    int i;

    for (i = 0; i < TLMPI_HOSTMAP_HOT; i++) {
        uintptr_t lo = __atomic_load_n(&tlmpi_hostmap_hot[i].lo, __ATOMIC_RELAXED);

        if (a - lo < __atomic_load_n(&tlmpi_hostmap_hot[i].len, __ATOMIC_RELAXED)) {
            return tlmpi_hostmap_valid(s);
        }
    }
    return 0;
}

/* 1 if a and b both lie in confirmed host mappings now: tlmpi_hostmap_hit for a pair, with one
 * sequence and code check when both are in one mapping (a send and a receive buffer). */
static inline __attribute__((always_inline)) int tlmpi_hostmap_hit2(uintptr_t a, uintptr_t b)
{
    unsigned s = __atomic_load_n(&tlmpi_hostmap_seq, __ATOMIC_ACQUIRE);
    int i;

    for (i = 0; i < TLMPI_HOSTMAP_HOT; i++) { /* both in one mapping: the common case */
        uintptr_t lo = __atomic_load_n(&tlmpi_hostmap_hot[i].lo, __ATOMIC_RELAXED);
        uintptr_t n = __atomic_load_n(&tlmpi_hostmap_hot[i].len, __ATOMIC_RELAXED);

        if ((a - lo < n) & (b - lo < n)) {
            return tlmpi_hostmap_valid(s);
        }
    }
    return tlmpi_hostmap_hit(a) && tlmpi_hostmap_hit(b);
}

/* 1 if a and b both lie in the first hot entry (the newest confirmed host mapping) now; 0 means
 * "ask tlmpi_hostmap_hit2" (another entry, two mappings), not "not host". For an entry point's
 * inline test: no loop, no call. */
static inline __attribute__((always_inline)) int tlmpi_hostmap_hit2_first(uintptr_t a, uintptr_t b)
{
    /* each bound read where it is used (memory operands, which the seqlock validates like one read):
     * fewer scratch registers beside the sequence while the entry point's six arguments stay live,
     * so the entry point saves three callee-saved registers, not four (gcc 12, -O2: 54 extra
     * instructions per call on heap buffers, 62 with the bounds loaded into registers) */
    unsigned s = __atomic_load_n(&tlmpi_hostmap_seq, __ATOMIC_ACQUIRE);

    return a - __atomic_load_n(&tlmpi_hostmap_hot[0].lo, __ATOMIC_RELAXED) <
               __atomic_load_n(&tlmpi_hostmap_hot[0].len, __ATOMIC_RELAXED) &&
           b - __atomic_load_n(&tlmpi_hostmap_hot[0].lo, __ATOMIC_RELAXED) <
               __atomic_load_n(&tlmpi_hostmap_hot[0].len, __ATOMIC_RELAXED) &&
           tlmpi_hostmap_valid(s);
}

/* The ticket of the record holding a (0: none, or the cache is off); take it before asking CUDA. */
unsigned long long tlmpi_hostmap_ticket(uintptr_t a);
/* CUDA said a is host memory, asked after tlmpi_hostmap_ticket(a) gave ticket: confirm the record
 * as host (if it is still the same record) and make it hot. */
void tlmpi_hostmap_confirm(uintptr_t a, unsigned long long ticket);
/* Forget every record (tests). */
void tlmpi_hostmap_flush(void);

#endif
