/*
 * hostmap: the registry of host mappings classified without a CUDA call, and what keeps it exact:
 * tlmpi's own mapping hooks (mmap, mmap64, munmap, mremap, mprotect, shmat: libtlmpi defines them;
 * each forwards to the next definition, normally glibc's) and, where UCX's memory hooks (UCM) have
 * taken those calls over, UCM's mapped / unmapped events. Rules in hostmap.h; why they are safe in
 * docs/DESIGN.md, "Host memory classification without a CUDA call".
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* RTLD_NEXT, RTLD_DEFAULT, mremap */
#endif
#include "config.h"
#include "hostmap.h"

#include <dlfcn.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifdef HAVE_CUDA /* without CUDA every pointer is host: no hooks */
tlmpi_hostmap_range_t tlmpi_hostmap_hot[TLMPI_HOSTMAP_HOT];
unsigned tlmpi_hostmap_seq;
uint64_t tlmpi_hostmap_code_sig;

#define HM_SLOTS 512
enum { HM_FREE = 0, HM_RECORDED, HM_HOST, HM_NOT_HOST };
static struct {
    uintptr_t lo, hi;
    unsigned long long ticket;
    int state;
    int check_maps; /* from a UCM event (no protection or flags known): /proc/self/maps decides */
} hm[HM_SLOTS]; /* changed and read under hm_lock */
static pthread_mutex_t hm_lock = PTHREAD_MUTEX_INITIALIZER;
static int hm_used; /* slots [0, hm_used) may be in use: the scans stop there */
static unsigned long long hm_next_ticket = 1;
static int hm_on;   /* tlmpi_hostmap_init found the mapping calls observed */
static int hm_dead; /* off for good (a hook inside a hook of one thread; hooks rewritten) */
static __thread int hm_held __attribute__((tls_model("initial-exec"))); /* this thread holds hm_lock */

typedef void *(*mmap_fn)(void *, size_t, int, int, int, off_t);
typedef int (*munmap_fn)(void *, size_t);
typedef void *(*mremap_fn)(void *, size_t, size_t, int, ...);
typedef int (*mprotect_fn)(void *, size_t, int);
typedef void *(*shmat_fn)(int, const void *, int);
static mmap_fn next_mmap;
static munmap_fn next_munmap;
static mremap_fn next_mremap;
static mprotect_fn next_mprotect;
static shmat_fn next_shmat;

#define HM_NHOOKS 5
static const void *hook_addr[HM_NHOOKS];
static uint64_t hook_sig[HM_NHOOKS]; /* first 8 code bytes of each hook when tlmpi's view was exact */

/* Take hm_lock; 0 (not taken) when this thread already holds it: a hook called from a signal handler
 * that interrupted a hook, which must not wait for itself. */
static int hm_take(void)
{
    if (hm_held) {
        return 0;
    }
    pthread_mutex_lock(&hm_lock);
    hm_held = 1;
    return 1;
}

static void hm_give(void)
{
    hm_held = 0;
    pthread_mutex_unlock(&hm_lock);
}

static uint64_t code8(const void *f)
{
    uint64_t v;

    memcpy(&v, f, sizeof(v));
    return v;
}

static void hot_write_begin(void)
{
    __atomic_store_n(&tlmpi_hostmap_seq, tlmpi_hostmap_seq + 1, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
}

static void hot_write_end(void)
{
    __atomic_store_n(&tlmpi_hostmap_seq, tlmpi_hostmap_seq + 1, __ATOMIC_RELEASE);
}

/* Off for good: nothing is answered from the cache again (no lock needed: len first, so a reader
 * never matches a half-cleared entry). */
static void hm_kill(void)
{
    int i;

    __atomic_store_n(&hm_dead, 1, __ATOMIC_RELEASE);
    for (i = 0; i < TLMPI_HOSTMAP_HOT; i++) {
        __atomic_store_n(&tlmpi_hostmap_hot[i].len, 0, __ATOMIC_RELEASE);
        __atomic_store_n(&tlmpi_hostmap_hot[i].lo, 0, __ATOMIC_RELEASE);
    }
}

/* Drop every record and hot entry overlapping [lo, hi) (lo == hi == 0: all). Called before the
 * mapping changes: a concurrent lookup then sees either the old mapping's verdict or none. */
static void hm_drop(uintptr_t lo, uintptr_t hi)
{
    int i, all = lo == 0 && hi == 0;

    if (!hm_take()) {
        hm_kill();
        return;
    }
    hot_write_begin();
    for (i = 0; i < TLMPI_HOSTMAP_HOT; i++) {
        if (all || (tlmpi_hostmap_hot[i].lo < hi && lo < tlmpi_hostmap_hot[i].lo + tlmpi_hostmap_hot[i].len)) {
            __atomic_store_n(&tlmpi_hostmap_hot[i].len, 0, __ATOMIC_RELAXED);
            __atomic_store_n(&tlmpi_hostmap_hot[i].lo, 0, __ATOMIC_RELAXED);
        }
    }
    hot_write_end();
    for (i = 0; i < hm_used; i++) {
        if (hm[i].state != HM_FREE && (all || (hm[i].lo < hi && lo < hm[i].hi))) {
            hm[i].state = HM_FREE;
        }
    }
    while (hm_used > 0 && hm[hm_used - 1].state == HM_FREE) {
        hm_used--;
    }
    hm_give();
}

static void hm_record(uintptr_t lo, uintptr_t hi, int check_maps)
{
    int i;

    if (!hm_take()) {
        return; /* not recorded: its addresses keep the CUDA query */
    }
    for (i = 0; i < HM_SLOTS; i++) {
        if (hm[i].state == HM_FREE) {
            hm[i].lo = lo;
            hm[i].hi = hi;
            hm[i].ticket = hm_next_ticket++;
            hm[i].state = HM_RECORDED;
            hm[i].check_maps = check_maps;
            if (i >= hm_used) {
                hm_used = i + 1;
            }
            break;
        }
    }
    hm_give();
}

static uintptr_t page_end(uintptr_t a, size_t len)
{
    uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);

    return (a + len + pg - 1) & ~(pg - 1);
}

/* ---- tlmpi's hooks ---------------------------------------------------------------------------- */

static void *hook_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    mmap_fn f = __atomic_load_n(&next_mmap, __ATOMIC_ACQUIRE);
    void *p;

    if ((flags & MAP_FIXED) && len) {
        hm_drop((uintptr_t)addr, page_end((uintptr_t)addr, len));
    }
    p = f ? f(addr, len, prot, flags, fd, off)
          : (void *)syscall(SYS_mmap, addr, len, (long)prot, (long)flags, (long)fd, (long)off);
    if (p != MAP_FAILED && len && (prot & PROT_READ) && (flags & MAP_ANONYMOUS) &&
        (flags & (MAP_SHARED | MAP_PRIVATE)) == MAP_PRIVATE) {
        hm_record((uintptr_t)p, page_end((uintptr_t)p, len), 0);
    }
    return p;
}

int tlmpi_hostmap_munmap(void *addr, size_t len)
{
    munmap_fn f = __atomic_load_n(&next_munmap, __ATOMIC_ACQUIRE);

    if (len) {
        hm_drop((uintptr_t)addr, page_end((uintptr_t)addr, len));
    }
    return f ? f(addr, len) : (int)syscall(SYS_munmap, addr, len);
}

static void *hook_mremap(void *old, size_t old_len, size_t new_len, int flags, ...)
{
    mremap_fn f = __atomic_load_n(&next_mremap, __ATOMIC_ACQUIRE);
    void *new_addr = NULL;
    va_list ap;

    if (flags & MREMAP_FIXED) {
        va_start(ap, flags);
        new_addr = va_arg(ap, void *);
        va_end(ap);
        hm_drop((uintptr_t)new_addr, page_end((uintptr_t)new_addr, new_len));
    }
    /* the old range (old_len 0 duplicates a shared mapping, never recorded: one page dropped) */
    hm_drop((uintptr_t)old, page_end((uintptr_t)old, old_len ? old_len : 1));
    if (f) {
        return f(old, old_len, new_len, flags, new_addr);
    }
    return (void *)syscall(SYS_mremap, old, old_len, new_len, (long)flags, new_addr);
}

static int hook_mprotect(void *addr, size_t len, int prot)
{
    mprotect_fn f = __atomic_load_n(&next_mprotect, __ATOMIC_ACQUIRE);

    if (len) {
        hm_drop((uintptr_t)addr, page_end((uintptr_t)addr, len));
    }
    return f ? f(addr, len, prot) : (int)syscall(SYS_mprotect, addr, len, (long)prot);
}

static void *hook_shmat(int id, const void *addr, int flg)
{
    shmat_fn f = __atomic_load_n(&next_shmat, __ATOMIC_ACQUIRE);

    if (flg & SHM_REMAP) {
        hm_drop(0, 0); /* replaces mappings of a size only shmctl knows: forget everything */
    }
    return f ? f(id, addr, flg) : (void *)syscall(SYS_shmat, (long)id, addr, (long)flg);
}

/* The exported names (version script src/libtlmpi.map): aliases of the hooks above, so that
 * tlmpi_hostmap_init can tell whether the process's symbol lookups reach them. */
#define HM_EXPORT __attribute__((visibility("default")))
HM_EXPORT void *mmap(void *, size_t, int, int, int, off_t) __attribute__((alias("hook_mmap")));
HM_EXPORT void *mmap64(void *, size_t, int, int, int, off_t) __attribute__((alias("hook_mmap")));
HM_EXPORT int munmap(void *, size_t) __attribute__((alias("tlmpi_hostmap_munmap")));
HM_EXPORT void *mremap(void *, size_t, size_t, int, ...) __attribute__((alias("hook_mremap")));
HM_EXPORT int mprotect(void *, size_t, int) __attribute__((alias("hook_mprotect")));
HM_EXPORT void *shmat(int, const void *, int) __attribute__((alias("hook_shmat")));

static int hm_ucm_attach(void);

/* At load: the next definitions (until then, for other libraries' constructors, and where one is
 * missing: the raw system call), the hooks' code as compiled; fork: the child gets the registry
 * with the lock free (prepare takes it in the forking thread). */
static void hm_atfork_prepare(void) { (void)hm_take(); }
static void hm_atfork_after(void) { hm_give(); }
__attribute__((constructor)) static void hm_load(void)
{
    int i;

    __atomic_store_n(&next_mmap, (mmap_fn)dlsym(RTLD_NEXT, "mmap"), __ATOMIC_RELEASE);
    __atomic_store_n(&next_munmap, (munmap_fn)dlsym(RTLD_NEXT, "munmap"), __ATOMIC_RELEASE);
    __atomic_store_n(&next_mremap, (mremap_fn)dlsym(RTLD_NEXT, "mremap"), __ATOMIC_RELEASE);
    __atomic_store_n(&next_mprotect, (mprotect_fn)dlsym(RTLD_NEXT, "mprotect"), __ATOMIC_RELEASE);
    __atomic_store_n(&next_shmat, (shmat_fn)dlsym(RTLD_NEXT, "shmat"), __ATOMIC_RELEASE);
    hook_addr[0] = (const void *)tlmpi_hostmap_munmap; /* [0]: the one the per-call lookup re-checks */
    hook_addr[1] = (const void *)hook_mremap;
    hook_addr[2] = (const void *)hook_mmap;
    hook_addr[3] = (const void *)hook_mprotect;
    hook_addr[4] = (const void *)hook_shmat;
    for (i = 0; i < HM_NHOOKS; i++) {
        hook_sig[i] = code8(hook_addr[i]);
    }
    tlmpi_hostmap_code_sig = hook_sig[0];
    pthread_atfork(hm_atfork_prepare, hm_atfork_after, hm_atfork_after);
    /* UCM already in the process (a dependency, e.g. of an MPI built on UCX): take its events from
     * the start, so mappings made before MPI_Init are seen whoever takes the calls */
    (void)hm_ucm_attach();
}

/* 1 if a hook's code is no longer what it was (another library patched it: its calls no longer run) */
static int hooks_rewritten(void)
{
    int i;

    for (i = 0; i < HM_NHOOKS; i++) {
        if (code8(hook_addr[i]) != hook_sig[i]) {
            return 1;
        }
    }
    return 0;
}

/* ---- UCX's memory hooks (UCM) ---------------------------------------------------------------- */
/* UCM (libucm, loaded with UCX-based MPIs) rewrites the mapping functions it finds (tlmpi's own,
 * when tlmpi is first in the lookup order: the first code bytes become a jump to UCM, which then
 * makes the system call itself) or every object's GOT entries for them ("reloc" mode): either way
 * tlmpi's hooks stop running, while UCM reports every call it takes as mapped/unmapped events. The
 * layout below is UCM's public ABI (ucm/api/ucm.h): event bits and the vm_mapped/vm_unmapped
 * member of its event union ({ address, size } at offset 0). */
#define HM_UCM_VM_MAPPED (1 << 16)
#define HM_UCM_VM_UNMAPPED (1 << 17)
#define HM_UCM_NO_INSTALL (1 << 24)
typedef struct {
    void *address;
    size_t size;
} hm_ucm_vm_t;
typedef void (*hm_ucm_cb_t)(int event_type, void *event, void *arg);
typedef int (*hm_ucm_set_t)(int events, int priority, hm_ucm_cb_t cb, void *arg);
static int hm_ucm_on;

static void hm_ucm_event(int type, void *event, void *arg)
{
    const hm_ucm_vm_t *e = event;
    uintptr_t lo = (uintptr_t)e->address;

    (void)arg;
    if (!e->size) {
        return;
    }
    if (type & HM_UCM_VM_UNMAPPED) {
        hm_drop(lo, page_end(lo, e->size));
    } else if (type & HM_UCM_VM_MAPPED) {
        hm_record(lo, page_end(lo, e->size), 1);
    }
}

/* Take UCM's events if UCM is in the process (again after a rewrite: records flushed again); 1 if
 * they are taken. Every record made before is forgotten: while UCM took calls past tlmpi's hooks,
 * an unmapping may have gone unseen (nothing was answered from them meanwhile: the per-call lookup
 * and tlmpi_hostmap_ticket see the rewritten code first). */
static int hm_ucm_attach(void)
{
    hm_ucm_set_t set;
    const char *mode;
    int i;

    if (!hm_ucm_on) {
        set = (hm_ucm_set_t)dlsym(RTLD_DEFAULT, "ucm_set_event_handler");
        mode = getenv("UCX_MEM_MMAP_HOOK_MODE");
        if (!set || (mode && strstr(mode, "reloc"))) {
            return 0; /* reloc: GOT entries rewritten before tlmpi took the events could hide calls */
        }
        hm_drop(0, 0);
        if (set(HM_UCM_VM_MAPPED | HM_UCM_VM_UNMAPPED | HM_UCM_NO_INSTALL, 0, hm_ucm_event, NULL) != 0) {
            return 0;
        }
        hm_ucm_on = 1;
    }
    hm_drop(0, 0);
    for (i = 0; i < HM_NHOOKS; i++) {
        hook_sig[i] = code8(hook_addr[i]); /* as UCM left them */
    }
    __atomic_store_n(&tlmpi_hostmap_code_sig, hook_sig[0], __ATOMIC_RELEASE);
    return 1;
}

/* 1 if [lo, hi) lies inside one readable, private, anonymous mapping now (/proc/self/maps): what a
 * UCM event does not say about the mapping it reports. */
static int maps_private_anon(uintptr_t lo, uintptr_t hi)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512], perms[8], dev[16];
    uintptr_t b, e;
    unsigned long long off, inode;
    int n, ok = 0;

    if (!f) {
        return 0;
    }
    while (fgets(line, sizeof(line), f)) {
        if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %7s %llx %15s %llu %n", &b, &e, perms, &off, dev, &inode, &n) < 6) {
            continue;
        }
        if (lo >= b && lo < e) {
            ok = hi <= e && perms[0] == 'r' && perms[3] == 'p' && inode == 0 &&
                 (line[n] == '\n' || line[n] == '\0');
            break;
        }
    }
    fclose(f);
    return ok;
}

/* ---- the classifier's side ------------------------------------------------------------------- */

int tlmpi_hostmap_init(void)
{
    /* tlmpi's hooks see the process's mapping calls only where its definitions win the symbol
     * lookup (linked before the C library, or LD_PRELOADed); not when libtlmpi is dlopen'ed */
    if (dlsym(RTLD_DEFAULT, "mmap") != (void *)hook_mmap || dlsym(RTLD_DEFAULT, "mmap64") != (void *)hook_mmap ||
        dlsym(RTLD_DEFAULT, "munmap") != (void *)tlmpi_hostmap_munmap || dlsym(RTLD_DEFAULT, "mremap") != (void *)hook_mremap ||
        dlsym(RTLD_DEFAULT, "mprotect") != (void *)hook_mprotect || dlsym(RTLD_DEFAULT, "shmat") != (void *)hook_shmat) {
        return 0;
    }
    if (hooks_rewritten() && !hm_ucm_attach()) {
        return 0; /* rewritten by a library other than UCM: the calls it takes are not seen */
    }
    if (!hm_ucm_on && dlsym(RTLD_DEFAULT, "ucm_set_event_handler") && !hm_ucm_attach()) {
        return 0; /* UCM loaded since tlmpi's load, in reloc mode */
    }
    __atomic_store_n(&hm_on, 1, __ATOMIC_RELEASE);
    return 1;
}

unsigned long long tlmpi_hostmap_ticket(uintptr_t a)
{
    unsigned long long t = 0;
    int i;

    if (!__atomic_load_n(&hm_on, __ATOMIC_ACQUIRE) || __atomic_load_n(&hm_dead, __ATOMIC_ACQUIRE)) {
        return 0;
    }
    if (hooks_rewritten()) {
        /* rewritten since: every lookup has missed from then on; UCM's events take over (after a
         * flush of every record), any other rewriter turns the cache off */
        if (!hm_ucm_attach()) {
            hm_kill();
            return 0;
        }
    }
    if (!hm_take()) {
        return 0;
    }
    for (i = 0; i < hm_used; i++) {
        if ((hm[i].state == HM_RECORDED || hm[i].state == HM_HOST) && a >= hm[i].lo && a < hm[i].hi) {
            t = hm[i].ticket;
            break;
        }
    }
    hm_give();
    return t;
}

void tlmpi_hostmap_confirm(uintptr_t a, unsigned long long ticket)
{
    uintptr_t lo = 0, hi = 0;
    int i, check = 0, anon = 1;

    if (!ticket || !hm_take()) {
        return;
    }
    for (i = 0; i < hm_used; i++) {
        if ((hm[i].state == HM_RECORDED || hm[i].state == HM_HOST) && hm[i].ticket == ticket) {
            lo = hm[i].lo;
            hi = hm[i].hi;
            check = hm[i].check_maps && hm[i].state == HM_RECORDED;
            break;
        }
    }
    hm_give();
    if (!lo) {
        return;
    }
    if (check) {
        anon = maps_private_anon(lo, hi); /* outside the lock: reading may map memory */
    }
    if (!hm_take()) {
        return;
    }
    for (i = 0; i < hm_used; i++) {
        if ((hm[i].state == HM_RECORDED || hm[i].state == HM_HOST) && hm[i].ticket == ticket && a >= hm[i].lo &&
            a < hm[i].hi) {
            unsigned h;

            if (!anon) {
                hm[i].state = HM_NOT_HOST; /* not a private anonymous mapping: never cached */
                break;
            }
            hm[i].state = HM_HOST;
            for (h = 0; h < TLMPI_HOSTMAP_HOT; h++) {
                if (tlmpi_hostmap_hot[h].lo == hm[i].lo && tlmpi_hostmap_hot[h].len == hm[i].hi - hm[i].lo) {
                    break; /* hot already */
                }
            }
            if (h == TLMPI_HOSTMAP_HOT && !__atomic_load_n(&hm_dead, __ATOMIC_ACQUIRE)) {
                /* newest first (entry 0 is the one the entries' inline test checks); the oldest
                 * entry leaves */
                hot_write_begin();
                for (h = TLMPI_HOSTMAP_HOT - 1; h > 0; h--) {
                    __atomic_store_n(&tlmpi_hostmap_hot[h].len, 0, __ATOMIC_RELAXED);
                    __atomic_store_n(&tlmpi_hostmap_hot[h].lo, tlmpi_hostmap_hot[h - 1].lo, __ATOMIC_RELAXED);
                    __atomic_store_n(&tlmpi_hostmap_hot[h].len, tlmpi_hostmap_hot[h - 1].len, __ATOMIC_RELAXED);
                }
                __atomic_store_n(&tlmpi_hostmap_hot[0].len, 0, __ATOMIC_RELAXED);
                __atomic_store_n(&tlmpi_hostmap_hot[0].lo, hm[i].lo, __ATOMIC_RELAXED);
                __atomic_store_n(&tlmpi_hostmap_hot[0].len, hm[i].hi - hm[i].lo, __ATOMIC_RELAXED);
                hot_write_end();
            }
            break;
        }
    }
    hm_give();
}

void tlmpi_hostmap_flush(void)
{
    hm_drop(0, 0);
}
#else
int tlmpi_hostmap_init(void)
{
    return 0;
}
#endif
