/*
 * regcache: user buffers registered with CUDA IPC for the node tier's zero-copy kernels (see
 * regcache.h): the own exports, the process's table of peers' mappings, the one exchange, a
 * communicator's view of its ranks' allocations, and the persistent requests' registrations.
 */
#include "config.h"
#include "regcache.h"
#include "compiler.h"
#include "cudawrap.h"
#include "log.h"
#include "tlmpi.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef HAVE_CUDA
#include <cuda_runtime_api.h>

/* ---- the process's table of peer allocations mapped here ---- */

/* One peer allocation mapped in this process, shared by every view and registration that uses it. */
typedef struct tlmpi_ipcreg_map {
    struct tlmpi_ipcreg_map *next;
    int pid, dev;
    unsigned long long id, bytes; /* the owner's buffer id and allocation size */
    void *base;
    int refs;
} ipcreg_map_t;

static pthread_mutex_t map_lock = PTHREAD_MUTEX_INITIALIZER;
static ipcreg_map_t *maps;
static int n_mapped;
static unsigned long long mapped_bytes;
/* every view's calls by state and evictions (tlmpi_regcache_totals) */
static unsigned long long tot_calls[TLMPI_REG_STATE_COUNT], tot_evicted;

/* One allocation in a record. */
typedef struct {
    unsigned long long base, id, bytes; /* in its owner's address space; CU_POINTER_ATTRIBUTE_BUFFER_ID */
    cudaIpcMemHandle_t h;
} reg_alloc_t;

/* What every rank tells the others: its buffers as (allocation, offset) pairs. */
typedef struct {
    int ok, pid, nb, use;       /* nb: allocations (1: both buffers in one, as with MPI_IN_PLACE); use: the
                                   call's tlmpi_reg_use_t (the views only) */
    int which[2];               /* input, output: index into b */
    unsigned long long off[2];  /* their offsets in that allocation */
    reg_alloc_t b[2];
    char why[96];               /* ok = 0: why not */
} reg_rec_t;

/* A peer allocation's mapping, shared (refs + 1); NULL with the reason. map_lock is held. The key is
 * (pid, id): a freed and re-allocated range has a new id, so it is never served by the old mapping. */
static ipcreg_map_t *map_get(int pid, const reg_alloc_t *a, int dev, char *why, size_t len)
{
    ipcreg_map_t *m;
    cudaError_t e;

    for (m = maps; m; m = m->next) {
        if (m->pid == pid && m->id == a->id && m->dev == dev) {
            m->refs++;
            return m;
        }
    }
    if (!(m = calloc(1, sizeof(*m)))) {
        snprintf(why, len, "out of host memory");
        return NULL;
    }
    e = cudaIpcOpenMemHandle(&m->base, a->h, cudaIpcMemLazyEnablePeerAccess);
    if (e != cudaSuccess) {
        snprintf(why, len, "cudaIpcOpenMemHandle: %s", cudaGetErrorString(e));
        (void)cudaGetLastError();
        free(m);
        return NULL;
    }
    m->pid = pid;
    m->id = a->id;
    m->bytes = a->bytes;
    m->dev = dev;
    m->refs = 1;
    m->next = maps;
    maps = m;
    n_mapped++;
    mapped_bytes += a->bytes;
    return m;
}

/* Drop one reference; the last closes the mapping. map_lock is held, the mapping's device current. */
static void map_put(ipcreg_map_t *m)
{
    ipcreg_map_t **pp;

    if (--m->refs > 0) {
        return;
    }
    for (pp = &maps; *pp && *pp != m; pp = &(*pp)->next) {
    }
    if (*pp) {
        *pp = m->next;
    }
    if (cudaIpcCloseMemHandle(m->base) != cudaSuccess) {
        (void)cudaGetLastError();
    }
    n_mapped--;
    mapped_bytes -= m->bytes;
    free(m);
}

/* ---- this process's exports: (allocation base, buffer id) -> IPC handle ---- */

#define EXPORTS 32
static struct {
    unsigned long long base, id, used;
    cudaIpcMemHandle_t h;
} exports[EXPORTS];
static unsigned long long export_clock;
static pthread_mutex_t export_lock = PTHREAD_MUTEX_INITIALIZER;

/* The handle of the allocation at base with buffer id id: cached, or exported now. 0 or a cudaError_t. */
static cudaError_t export_get(unsigned long long base, unsigned long long id, cudaIpcMemHandle_t *h)
{
    int i, lru = 0;
    cudaError_t e;

    pthread_mutex_lock(&export_lock);
    export_clock++;
    for (i = 0; i < EXPORTS; i++) {
        if (exports[i].used && exports[i].base == base && exports[i].id == id) {
            exports[i].used = export_clock;
            *h = exports[i].h;
            pthread_mutex_unlock(&export_lock);
            return cudaSuccess;
        }
        if (exports[i].used < exports[lru].used) {
            lru = i;
        }
    }
    if ((e = cudaIpcGetMemHandle(h, (void *)(uintptr_t)base)) == cudaSuccess) {
        exports[lru].base = base;
        exports[lru].id = id;
        exports[lru].h = *h;
        exports[lru].used = export_clock;
    }
    pthread_mutex_unlock(&export_lock);
    return e;
}

/* This rank's record: the allocations of in and out found (known[i] where bytes is not 0, else the
 * driver's answer) and exported; rec->ok says whether it worked. The buffers' device is current. */
static void rec_local(reg_rec_t *rec, const void *in, const void *out, const tlmpi_reg_range_t *known)
{
    const void *p[2] = { in, out };
    int i;

    if (!tlmpi_cu.get_range || !tlmpi_cu.get_attr) {
        snprintf(rec->why, sizeof(rec->why), "the driver has no cuMemGetAddressRange / cuPointerGetAttribute");
        return;
    }
    for (i = 0; i < 2; i++) {
        CUdeviceptr base = 0;
        unsigned long long id = 0;
        size_t sz = 0;
        reg_alloc_t *a = &rec->b[rec->nb];
        cudaError_t e;

        if (((uintptr_t)p[i] & 15u) != 0) {
            snprintf(rec->why, sizeof(rec->why), "its %s buffer is not 16-byte aligned", i ? "receive" : "send");
            return;
        }
        if (known && known[i].bytes) {
            base = (CUdeviceptr)known[i].base;
            sz = (size_t)known[i].bytes;
            id = known[i].id;
        } else if (tlmpi_cu.get_range(&base, &sz, (CUdeviceptr)(uintptr_t)p[i]) != CUDA_SUCCESS ||
                   tlmpi_cu.get_attr(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID, (CUdeviceptr)(uintptr_t)p[i]) !=
                       CUDA_SUCCESS) {
            snprintf(rec->why, sizeof(rec->why), "the driver does not know its %s buffer's allocation",
                     i ? "receive" : "send");
            return;
        }
        rec->off[i] = (unsigned long long)((uintptr_t)p[i] - (uintptr_t)base);
        if (i == 1 && rec->nb == 1 && rec->b[0].base == (unsigned long long)base) {
            rec->which[1] = 0; /* one allocation (in place, or carved from one) */
            continue;
        }
        a->base = (unsigned long long)base;
        a->id = id;
        a->bytes = (unsigned long long)sz;
        if ((e = export_get(a->base, id, &a->h)) != cudaSuccess) {
            (void)cudaGetLastError();
            snprintf(rec->why, sizeof(rec->why), "CUDA IPC does not export its %s buffer (managed, cuMem or pool "
                     "memory?): %s", i ? "receive" : "send", cudaGetErrorString(e));
            return;
        }
        rec->which[i] = rec->nb++;
    }
    rec->ok = 1;
}

/* Every rank's record (PMPI_Allgather over comm of mine into recs); 0 when every rank's is ok, else -1
 * with the reason: this rank's own, or the first rank that could not. */
static int rec_exchange(MPI_Comm comm, int rank, int size, reg_rec_t *mine, reg_rec_t *recs, char *why, size_t len)
{
    int q;

    if (PMPI_Allgather(mine, (int)sizeof(*mine), MPI_BYTE, recs, (int)sizeof(*mine), MPI_BYTE, comm) != MPI_SUCCESS) {
        snprintf(why, len, "PMPI_Allgather of the IPC handles failed");
        return -1;
    }
    for (q = 0; q < size; q++) {
        if (!recs[q].ok) {
            /* every rank sees the same records: all give up here, without another collective */
            if (q == rank) {
                snprintf(why, len, "%s", mine->why);
            } else {
                snprintf(why, len, "node rank %d %s", q, recs[q].why);
            }
            return -1;
        }
    }
    return 0;
}

/* The agreement after mapping (MIN of ok over comm): 1 when every rank mapped its peers', else 0 with
 * why (this rank's own reason, or that another rank could not). */
static int agree(MPI_Comm comm, int ok, char *why, size_t len)
{
    if (PMPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, comm) != MPI_SUCCESS) {
        ok = 0;
        snprintf(why, len, "PMPI_Allreduce of the outcome failed");
    }
    if (!ok && !why[0]) {
        snprintf(why, len, "another node rank could not map its peers' buffers");
    }
    return ok;
}

/* ---- persistent requests ---- */

static void reg_release(tlmpi_ipc_reg_t *reg)
{
    int i;

    pthread_mutex_lock(&map_lock);
    for (i = 0; i < reg->nmaps; i++) {
        map_put(reg->maps[i]);
    }
    pthread_mutex_unlock(&map_lock);
    reg->nmaps = 0;
}

struct tlmpi_regcache;
static int view_find(const struct tlmpi_regcache *rc, int q, const reg_alloc_t *a);

/* Map the peers' allocations of recs into m[q][j] (map_get: shared with every other holder), but those
 * that the view `have` already holds (NULL: none); 0, or -1 with the reason (what was mapped stays in
 * m, for the caller to let go). map_lock is held. */
static int map_peers(const reg_rec_t *recs, int rank, int size, int dev, const struct tlmpi_regcache *have,
                     ipcreg_map_t *m[][2], char *why, size_t len)
{
    int q, j;

    for (q = 0; q < size; q++) {
        if (q == rank) {
            continue;
        }
        if (recs[q].pid == recs[rank].pid) {
            snprintf(why, len, "node rank %d is in this process", q);
            return -1;
        }
        for (j = 0; j < recs[q].nb; j++) {
            char mwhy[128];

            if (have && view_find(have, q, &recs[q].b[j]) >= 0) {
                continue;
            }
            if (!(m[q][j] = map_get(recs[q].pid, &recs[q].b[j], dev, mwhy, sizeof(mwhy)))) {
                snprintf(why, len, "node rank %d's buffers: %s", q, mwhy);
                return -1;
            }
        }
    }
    return 0;
}

/* Every rank's input and output into *d: the own ones as given, a peer's at its record's offsets from
 * where its allocations are reached here (base[q][j]). */
static void fill_direct(const reg_rec_t *recs, int rank, int size, char *base[][2], const void *in, void *out,
                        tlmpi_node_direct_t *d)
{
    int q;

    for (q = 0; q < size; q++) {
        if (q == rank) {
            d->in[q] = in;
            d->out[q] = out;
            continue;
        }
        d->in[q] = base[q][recs[q].which[0]] + recs[q].off[0];
        d->out[q] = base[q][recs[q].which[1]] + recs[q].off[1];
    }
}

/* Map every peer's allocations into reg->d; 0 or -1 with the reason (the mappings taken so far are in
 * reg->maps: reg_release lets go of them). */
static int reg_open(tlmpi_ipc_reg_t *reg, const reg_rec_t *recs, int rank, int size, const void *in, void *out,
                    char *why, size_t len)
{
    ipcreg_map_t *m[TLMPI_NODE_MAX_RANKS][2];
    char *b[TLMPI_NODE_MAX_RANKS][2];
    int q, j, rc;

    memset(m, 0, sizeof(m));
    memset(b, 0, sizeof(b));
    pthread_mutex_lock(&map_lock);
    rc = map_peers(recs, rank, size, reg->dev, NULL, m, why, len);
    for (q = 0; q < size; q++) {
        for (j = 0; j < 2; j++) {
            if (m[q][j]) {
                reg->maps[reg->nmaps++] = m[q][j];
                b[q][j] = m[q][j]->base;
            }
        }
    }
    pthread_mutex_unlock(&map_lock);
    if (rc == 0) {
        fill_direct(recs, rank, size, b, in, out, &reg->d);
    }
    return rc;
}

tlmpi_ipc_reg_t *tlmpi_ipc_reg_create(MPI_Comm comm, int rank, int size, int dev, int local_ok, const char *why_local,
                                      const void *in, size_t in_bytes, void *out, size_t out_bytes, char *why,
                                      size_t len)
{
    tlmpi_ipc_reg_t *reg = NULL;
    reg_rec_t mine, recs[TLMPI_NODE_MAX_RANKS];
    int saved = -1, entered = 0;

    (void)in_bytes, (void)out_bytes; /* inside their allocations by MPI's rules: nothing to check */
    if (size < 1 || size > TLMPI_NODE_MAX_RANKS || rank < 0 || rank >= size) {
        snprintf(why, len, "%d ranks (the node kernels serve 1..%d)", size, TLMPI_NODE_MAX_RANKS);
        return NULL; /* the same on every rank: no collective was entered */
    }
    memset(&mine, 0, sizeof(mine));
    memset(recs, 0, sizeof(recs));
    mine.pid = (int)getpid();
    if (!local_ok) {
        snprintf(mine.why, sizeof(mine.why), "%s", why_local ? why_local : "cannot register");
    } else if (!(reg = calloc(1, sizeof(*reg)))) {
        snprintf(mine.why, sizeof(mine.why), "out of host memory");
    } else if (tlmpi_gpu_enter_device(dev, &saved) != 0) {
        snprintf(mine.why, sizeof(mine.why), "cannot make device %d current", dev);
    } else {
        entered = 1;
        reg->dev = dev;
        rec_local(&mine, in, out, NULL);
    }
    /* 1: every rank's record, whatever happened here */
    if (rec_exchange(comm, rank, size, &mine, recs, why, len) != 0) {
        goto fail;
    }
    /* 2: map the peers' buffers, then agree on every rank's success */
    why[0] = '\0';
    if (!agree(comm, reg_open(reg, recs, rank, size, in, out, why, len) == 0, why, len)) {
        reg_release(reg);
        goto fail;
    }
    tlmpi_gpu_restore_device(saved);
    return reg;
fail:
    tlmpi_debug(CUDA, "user buffers not registered: %s", why);
    if (entered) {
        tlmpi_gpu_restore_device(saved);
    }
    free(reg);
    return NULL;
}

void tlmpi_ipc_reg_destroy(tlmpi_ipc_reg_t *reg)
{
    int saved = -1;

    if (!reg) {
        return;
    }
    if (tlmpi_gpu_enter_device(reg->dev, &saved) != 0) {
        saved = -1;
    }
    reg_release(reg);
    tlmpi_gpu_restore_device(saved);
    free(reg);
}

int tlmpi_ipc_reg_mapped(void)
{
    int n;

    pthread_mutex_lock(&map_lock);
    n = n_mapped;
    pthread_mutex_unlock(&map_lock);
    return n;
}

/* ---- a communicator's view ---- */

/* One allocation of one rank of the communicator, as every rank's view has it (the same fields on every
 * rank; ptr and map are this process's: map NULL for the own rank's, which is not mapped). */
typedef struct {
    unsigned long long base, id, bytes; /* in the owner's address space */
    unsigned long long used;            /* the view's clock at the last call that used it */
    int q;                              /* the owner's rank in the communicator */
    int use;                            /* the most demanding tlmpi_reg_use_t of the calls that used it */
    char *ptr;                          /* where it is reached here */
    ipcreg_map_t *map;
} view_ent_t;

/* A memo: the buffers of one zero-copy lookup, every rank's, for the gated calls (regcache.h). The same
 * memos on every rank (made, refreshed and dropped only from the records and the agreed view); d is
 * this process's view of them. */
typedef struct {
    unsigned long long id;              /* the view's clock when made (nonzero; the same on every rank) */
    unsigned long long used;            /* the view's clock at the last lookup of the same records */
    struct {
        unsigned long long base[2], id[2], off[2]; /* input, output: allocation (owner's) and offset */
    } r[TLMPI_NODE_MAX_RANKS];
    tlmpi_node_direct_t d;
} view_memo_t;

struct tlmpi_regcache {
    int rank, size, dev, n, nmemo;
    size_t max_bytes;
    unsigned long long clock;           /* calls that found every rank's records ok */
    unsigned long long bytes;           /* every entry's bytes (the same on every rank) */
    tlmpi_regcache_counts_t cnt;
    char last_why[128];
    view_ent_t e[TLMPI_REGCACHE_ENTRIES];
    view_memo_t memo[TLMPI_REGCACHE_MEMOS];
};

tlmpi_regcache_t *tlmpi_regcache_create(int rank, int size, int dev, size_t max_bytes)
{
    tlmpi_regcache_t *rc = calloc(1, sizeof(*rc));

    if (rc) {
        rc->rank = rank;
        rc->size = size;
        rc->dev = dev;
        rc->max_bytes = max_bytes;
    }
    return rc;
}

/* Drop the memos that use rank q's allocation (base, id) (the view lets go of it). */
static void memo_drop_alloc(tlmpi_regcache_t *rc, int q, unsigned long long base, unsigned long long id)
{
    int i, j;

    for (i = 0; i < rc->nmemo;) {
        const view_memo_t *m = &rc->memo[i];
        int uses = 0;

        for (j = 0; j < 2; j++) {
            uses |= m->r[q].base[j] == base && m->r[q].id[j] == id;
        }
        if (uses) {
            rc->memo[i] = rc->memo[--rc->nmemo];
        } else {
            i++;
        }
    }
}

/* Remove entry i (its mapping let go, and the memos that use it). map_lock is held, the view's device
 * current. */
static void view_drop(tlmpi_regcache_t *rc, int i)
{
    view_ent_t *v = &rc->e[i];

    memo_drop_alloc(rc, v->q, v->base, v->id);
    if (v->map) {
        map_put(v->map);
    }
    rc->bytes -= v->bytes;
    rc->e[i] = rc->e[--rc->n];
    rc->cnt.evicted++;
    __atomic_fetch_add(&tot_evicted, 1ull, __ATOMIC_RELAXED);
}

void tlmpi_regcache_destroy(tlmpi_regcache_t *rc)
{
    int saved = -1, i;

    if (!rc) {
        return;
    }
    if (tlmpi_gpu_enter_device(rc->dev, &saved) != 0) {
        saved = -1;
    }
    pthread_mutex_lock(&map_lock);
    for (i = 0; i < rc->n; i++) {
        if (rc->e[i].map) {
            map_put(rc->e[i].map);
        }
    }
    pthread_mutex_unlock(&map_lock);
    tlmpi_gpu_restore_device(saved);
    free(rc);
}

static int view_find(const struct tlmpi_regcache *rc, int q, const reg_alloc_t *a)
{
    int i;

    for (i = 0; i < rc->n; i++) {
        const view_ent_t *v = &rc->e[i];

        if (v->q == q && v->base == a->base && v->id == a->id) {
            return i;
        }
    }
    return -1;
}

/* Whether entry i may be let go now: not pinned by a capture; one a stream-ordered call used only once
 * the comm's queued kernels completed (drained: the lookup's drain ran). */
static int view_can_drop(const tlmpi_regcache_t *rc, int i, int drained)
{
    const view_ent_t *v = &rc->e[i];

    return v->use == TLMPI_REG_USE_HOST || (v->use == TLMPI_REG_USE_STREAM && drained);
}

/* Make room for the new allocation a of rank q: drop q's entries whose range overlaps a's (freed: a
 * live allocation cannot overlap another), then the least recently used entries not used by this call
 * while the view is full; entries view_can_drop keeps stay. Every step depends only on the records,
 * the agreed use and the view: the same on every rank (a drain that fails on one rank would part the
 * views: the caller's drain reports and aborts instead, as every failed bounded wait does). map_lock is
 * held. */
static void view_room(tlmpi_regcache_t *rc, int q, const reg_alloc_t *a, int drained)
{
    int i;

    for (i = 0; i < rc->n;) {
        const view_ent_t *v = &rc->e[i];

        if (v->q == q && v->base < a->base + a->bytes && a->base < v->base + v->bytes &&
            view_can_drop(rc, i, drained)) {
            view_drop(rc, i);
        } else {
            i++;
        }
    }
    while (rc->n > 0 && (rc->n >= TLMPI_REGCACHE_ENTRIES || rc->bytes + a->bytes > rc->max_bytes)) {
        int lru = -1;

        for (i = 0; i < rc->n; i++) {
            if (rc->e[i].used != rc->clock && view_can_drop(rc, i, drained) &&
                (lru < 0 || rc->e[i].used < rc->e[lru].used)) {
                lru = i;
            }
        }
        if (lru < 0) {
            break; /* every entry serves this call or stays: the bound gives way */
        }
        view_drop(rc, lru);
    }
}

/* Where every record's allocations are in the view (idx[q][j]; every one is there) and the call's
 * pointers from them into *d. */
static void view_index(const tlmpi_regcache_t *rc, const reg_rec_t *recs, int idx[][2])
{
    int q, j;

    for (q = 0; q < rc->size; q++) {
        for (j = 0; j < recs[q].nb; j++) {
            idx[q][j] = view_find(rc, q, &recs[q].b[j]);
        }
    }
}

static void view_fill(const tlmpi_regcache_t *rc, const reg_rec_t *recs, int idx[][2], const void *in, void *out,
                      tlmpi_node_direct_t *d)
{
    char *b[TLMPI_NODE_MAX_RANKS][2];
    int q, j;

    for (q = 0; q < rc->size; q++) {
        for (j = 0; j < recs[q].nb; j++) {
            b[q][j] = rc->e[idx[q][j]].ptr;
        }
    }
    fill_direct(recs, rc->rank, rc->size, b, in, out, d);
}

/* The memo of a zero-copy lookup's records (their pointers in d): refreshed where the same records made
 * one, else made, in the least recently used slot when all are taken. The entries it uses keep at
 * least the stream-ordered use (a gated call may still be queued when a later lookup makes room: they
 * go only after the drain). The same on every rank. */
static void memo_note(tlmpi_regcache_t *rc, const reg_rec_t *recs, int idx[][2], const tlmpi_node_direct_t *d)
{
    view_memo_t *m = NULL;
    int i, q, j;

    for (q = 0; q < rc->size; q++) {
        for (j = 0; j < recs[q].nb; j++) {
            view_ent_t *v = &rc->e[idx[q][j]];

            v->use = v->use > (int)TLMPI_REG_USE_STREAM ? v->use : (int)TLMPI_REG_USE_STREAM;
        }
    }
    for (i = 0; i < rc->nmemo && !m; i++) {
        int same = 1;

        for (q = 0; q < rc->size && same; q++) {
            for (j = 0; j < 2; j++) {
                const reg_alloc_t *a = &recs[q].b[recs[q].which[j]];

                same &= rc->memo[i].r[q].base[j] == a->base && rc->memo[i].r[q].id[j] == a->id &&
                        rc->memo[i].r[q].off[j] == recs[q].off[j];
            }
        }
        if (same) {
            m = &rc->memo[i];
        }
    }
    if (!m) {
        if (rc->nmemo < TLMPI_REGCACHE_MEMOS) {
            m = &rc->memo[rc->nmemo++];
        } else {
            m = &rc->memo[0];
            for (i = 1; i < rc->nmemo; i++) {
                m = rc->memo[i].used < m->used ? &rc->memo[i] : m;
            }
        }
        memset(m, 0, sizeof(*m));
        m->id = rc->clock;
        for (q = 0; q < rc->size; q++) {
            for (j = 0; j < 2; j++) {
                const reg_alloc_t *a = &recs[q].b[recs[q].which[j]];

                m->r[q].base[j] = a->base;
                m->r[q].id[j] = a->id;
                m->r[q].off[j] = recs[q].off[j];
            }
        }
    }
    m->used = rc->clock;
    m->d = *d;
}

int tlmpi_regcache_memos(const tlmpi_regcache_t *rc)
{
    return rc ? rc->nmemo : 0;
}

unsigned long long tlmpi_regcache_memo(const tlmpi_regcache_t *rc, const void *in, const void *out,
                                       const tlmpi_reg_range_t known[2], tlmpi_node_direct_t *d)
{
    const int r = rc->rank;
    const view_memo_t *best = NULL;
    int i;

    if (!known[0].bytes || !known[1].bytes) {
        return 0; /* the classification did not say: no driver call here */
    }
    /* of the memos holding this rank's buffers, the last used (memos differ in other ranks' buffers: a
     * peer whose buffers changed since an older memo matches only the newer one, and the uses are the
     * same clock on every rank) */
    for (i = 0; i < rc->nmemo; i++) {
        const view_memo_t *m = &rc->memo[i];

        if (m->d.in[r] == in && m->d.out[r] == out && m->r[r].base[0] == known[0].base &&
            m->r[r].id[0] == known[0].id && m->r[r].base[1] == known[1].base && m->r[r].id[1] == known[1].id &&
            (!best || m->used > best->used)) {
            best = m;
        }
    }
    if (!best) {
        return 0;
    }
    *d = best->d;
    return best->id;
}

static tlmpi_reg_state_t counted(tlmpi_regcache_t *rc, tlmpi_reg_state_t st, const char *why)
{
    rc->cnt.calls[st]++;
    __atomic_fetch_add(&tot_calls[st], 1ull, __ATOMIC_RELAXED);
    if (st == TLMPI_REG_POOL) {
        snprintf(rc->last_why, sizeof(rc->last_why), "%s", why);
    }
    return st;
}

void tlmpi_regcache_memo_hit(tlmpi_regcache_t *rc, unsigned long long id)
{
    int i, q, j, k;

    /* as a lookup's hit: the view's clock, the memo's and its entries' last use (every rank alike: every
     * rank's kernels agreed on this memo) */
    rc->clock++;
    for (i = 0; i < rc->nmemo; i++) {
        view_memo_t *m = &rc->memo[i];

        if (m->id != id) {
            continue;
        }
        m->used = rc->clock;
        for (q = 0; q < rc->size; q++) {
            for (j = 0; j < 2; j++) {
                for (k = 0; k < rc->n; k++) {
                    if (rc->e[k].q == q && rc->e[k].base == m->r[q].base[j] && rc->e[k].id == m->r[q].id[j]) {
                        rc->e[k].used = rc->clock;
                    }
                }
            }
        }
    }
    (void)counted(rc, TLMPI_REG_HIT, "");
}

tlmpi_reg_state_t tlmpi_regcache_lookup(tlmpi_regcache_t *rc, MPI_Comm comm, int local_ok, const char *why_local,
                                        const void *in, void *out, const tlmpi_reg_range_t *known, tlmpi_reg_use_t use,
                                        int (*drain)(void *), void *drain_arg, tlmpi_node_direct_t *d, char *why,
                                        size_t len)
{
    reg_rec_t mine, recs[TLMPI_NODE_MAX_RANKS];
    ipcreg_map_t *nm[TLMPI_NODE_MAX_RANKS][2];
    int idx[TLMPI_NODE_MAX_RANKS][2];
    int saved = -1, entered = 0, q, j, misses = 0, ok, drained = 0;
    tlmpi_reg_state_t st = TLMPI_REG_POOL;

    memset(&mine, 0, sizeof(mine));
    memset(nm, 0, sizeof(nm));
    mine.pid = (int)getpid();
    mine.use = (int)use;
    if (!local_ok) {
        snprintf(mine.why, sizeof(mine.why), "%s", why_local ? why_local : "cannot register");
    } else if (tlmpi_gpu_enter_device(rc->dev, &saved) != 0) {
        snprintf(mine.why, sizeof(mine.why), "cannot make device %d current", rc->dev);
    } else {
        entered = 1;
        rec_local(&mine, in, out, known);
    }
    /* 1: every rank's record; a rank that cannot register makes the call go through the pools everywhere */
    if (rec_exchange(comm, rc->rank, rc->size, &mine, recs, why, len) != 0) {
        goto out;
    }
    /* 2: the same lookups on every rank, under the most demanding use of any rank (mine.ok, so entered) */
    rc->clock++;
    for (q = 0; q < rc->size; q++) {
        use = recs[q].use > (int)use ? (tlmpi_reg_use_t)recs[q].use : use;
    }
    if (use == TLMPI_REG_USE_GRAPH) {
        drain = NULL; /* some rank captures: nothing of the comm's own streams may be touched */
    }
    view_index(rc, recs, idx);
    for (q = 0; q < rc->size; q++) {
        for (j = 0; j < recs[q].nb; j++) {
            view_ent_t *v = idx[q][j] >= 0 ? &rc->e[idx[q][j]] : NULL;

            if (v) {
                v->used = rc->clock;
                v->use = v->use > (int)use ? v->use : (int)use;
            } else {
                misses++;
            }
        }
    }
    if (misses == 0) {
        view_fill(rc, recs, idx, in, out, d);
        memo_note(rc, recs, idx, d);
        st = TLMPI_REG_HIT;
        goto out;
    }
    /* 3: map what this rank lacks, agree, then enter every new allocation (each rank's own too) */
    why[0] = '\0';
    pthread_mutex_lock(&map_lock);
    ok = map_peers(recs, rc->rank, rc->size, rc->dev, rc, nm, why, len) == 0;
    pthread_mutex_unlock(&map_lock);
    ok = agree(comm, ok, why, len);
    if (ok && drain) {
        /* entries that stream-ordered calls used may have to go to make room: once the comm's queued
         * kernels completed (the same decision on every rank: the view and the agreed use) */
        for (q = 0; q < rc->n; q++) {
            if (rc->e[q].use == TLMPI_REG_USE_STREAM && rc->e[q].used != rc->clock) {
                drained = drain(drain_arg) == 0;
                break;
            }
        }
    }
    pthread_mutex_lock(&map_lock);
    for (q = 0; q < rc->size; q++) {
        for (j = 0; j < recs[q].nb; j++) {
            view_ent_t *v;

            if (!ok) {
                if (nm[q][j]) {
                    map_put(nm[q][j]); /* the agreement says no: let go of what this rank mapped */
                }
                continue;
            }
            if (view_find(rc, q, &recs[q].b[j]) >= 0) {
                continue;
            }
            view_room(rc, q, &recs[q].b[j], drained);
            if (rc->n >= TLMPI_REGCACHE_ENTRIES) {
                ok = 0; /* pinned entries fill the view (the same on every rank): this call uses the pools */
                if (nm[q][j]) {
                    map_put(nm[q][j]);
                }
                snprintf(why, len, "the registration cache is full of allocations captured into graphs");
                continue;
            }
            v = &rc->e[rc->n++];
            v->base = recs[q].b[j].base;
            v->id = recs[q].b[j].id;
            v->bytes = recs[q].b[j].bytes;
            v->used = rc->clock;
            v->use = (int)use;
            v->q = q;
            v->map = nm[q][j];
            v->ptr = q == rc->rank ? (char *)(uintptr_t)v->base : (char *)nm[q][j]->base;
            rc->bytes += v->bytes;
        }
    }
    pthread_mutex_unlock(&map_lock);
    if (ok) {
        view_index(rc, recs, idx); /* entries moved as others went */
        view_fill(rc, recs, idx, in, out, d);
        memo_note(rc, recs, idx, d);
        st = TLMPI_REG_FIRST;
    }
out:
    if (entered) {
        tlmpi_gpu_restore_device(saved);
    }
    return counted(rc, st, why);
}

void tlmpi_regcache_counts(const tlmpi_regcache_t *rc, tlmpi_regcache_counts_t *out, const char **last_why)
{
    int i;

    *out = rc->cnt;
    out->entries = rc->n;
    out->mapped_bytes = 0;
    for (i = 0; i < rc->n; i++) {
        out->mapped_bytes += rc->e[i].map ? rc->e[i].bytes : 0;
    }
    *last_why = rc->last_why;
}

void tlmpi_regcache_totals(unsigned long long calls[TLMPI_REG_STATE_COUNT], unsigned long long *evicted,
                           int *mapped, unsigned long long *bytes)
{
    int i;

    for (i = 0; i < TLMPI_REG_STATE_COUNT; i++) {
        calls[i] = __atomic_load_n(&tot_calls[i], __ATOMIC_RELAXED);
    }
    *evicted = __atomic_load_n(&tot_evicted, __ATOMIC_RELAXED);
    pthread_mutex_lock(&map_lock);
    *mapped = n_mapped;
    *bytes = mapped_bytes;
    pthread_mutex_unlock(&map_lock);
}

#else /* !HAVE_CUDA */

tlmpi_ipc_reg_t *tlmpi_ipc_reg_create(MPI_Comm comm, int rank, int size, int dev, int local_ok, const char *why_local,
                                      const void *in, size_t in_bytes, void *out, size_t out_bytes, char *why,
                                      size_t len)
{
    (void)comm, (void)rank, (void)size, (void)dev, (void)local_ok, (void)why_local, (void)in, (void)in_bytes;
    (void)out, (void)out_bytes;
    snprintf(why, len, "built without CUDA");
    return NULL;
}

void tlmpi_ipc_reg_destroy(tlmpi_ipc_reg_t *reg)
{
    (void)reg;
}

int tlmpi_ipc_reg_mapped(void)
{
    return 0;
}

void tlmpi_regcache_totals(unsigned long long calls[TLMPI_REG_STATE_COUNT], unsigned long long *evicted,
                           int *mapped, unsigned long long *bytes)
{
    memset(calls, 0, sizeof(calls[0]) * TLMPI_REG_STATE_COUNT);
    *evicted = 0;
    *mapped = 0;
    *bytes = 0;
}
#endif

TLMPI_EXPORT tlmpi_status_t tlmpi_get_reg_stats(tlmpi_reg_stats_t *s)
{
    unsigned long long calls[TLMPI_REG_STATE_COUNT];

    if (!s) {
        return TLMPI_ERR_INVALID_ARG;
    }
    tlmpi_regcache_totals(calls, &s->evicted, &s->mapped, &s->mapped_bytes);
    s->hits = calls[TLMPI_REG_HIT];
    s->firsts = calls[TLMPI_REG_FIRST];
    s->pool = calls[TLMPI_REG_POOL];
    return TLMPI_OK;
}
