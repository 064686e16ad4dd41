/*
 * regcache: the application's device buffers registered with CUDA IPC for the node tier's zero-copy
 * kernels (cuda/node_direct.cu; kernels.h tlmpi_node_direct_t). Two users:
 *
 *  - a communicator's registration cache (tlmpi_regcache_*), which serves its blocking calls: every
 *    call of at least TLMPI_NODE_REG_MIN exchanges one record per rank {pid, per buffer: allocation
 *    base, buffer id, size, offset, IPC handle} with ONE PMPI_Allgather; each rank looks the records
 *    up in the communicator's view of its ranks' allocations, and where every one is there (a hit)
 *    the kernels run on the mapped pointers with no further collective. A miss maps the new
 *    allocations and agrees on every rank's success with ONE PMPI_Allreduce. The view is the same
 *    on every rank (it changes only from the records, which every rank sees alike, and from the
 *    agreed outcome), so every rank takes the same branch without telling the others;
 *  - a persistent request (tlmpi_ipc_reg_*), registered once at its *_init with the same exchange
 *    (always both collectives) and released when the request is freed.
 *
 * Forms. Blocking calls use the pointers until they return; stream-ordered calls until their kernel ran
 * (an entry they used is let go only after the communicator's queued kernels completed: the caller's
 * drain); captured calls for as long as the graph may be replayed (their entries are pinned until the
 * communicator is freed). Every rank's record says how its call uses them and the most demanding use
 * counts on every rank, so the view stays the same everywhere.
 *
 * Staleness. An allocation is known by (owner pid, CU_POINTER_ATTRIBUTE_BUFFER_ID), which the driver
 * makes unique within a process for its lifetime: a range freed and allocated again, at the same
 * address or not, has a new id, so no record of the new allocation matches the old mapping. The
 * view drops an entry whose range in its owner's address space overlaps a newer allocation's (the
 * old one is certainly gone) and otherwise evicts the least recently used entries beyond
 * TLMPI_NODE_REG_MAX mapped bytes or TLMPI_REGCACHE_ENTRIES entries (a mapping of a freed
 * allocation keeps its memory until it is closed).
 *
 * Mappings are shared process-wide: a table of opened allocations (pid, buffer id) with reference
 * counts, because CUDA maps one allocation of another process at most once per process (a second
 * cudaIpcOpenMemHandle of the same handle fails), and several communicators and requests use the
 * same buffers. A mapping is closed when its last holder lets go. Letting go is local: the holder
 * makes sure its last zero-copy kernel on the mapping completed (every such kernel ends with a
 * barrier after which no rank touches another's buffers).
 *
 * What is not registered (the record says why; the call runs through the pools on every rank): memory
 * that is not plain device memory of the communicator's GPU (managed, host, another device), memory
 * CUDA IPC does not export (cuMem/VMM, cudaMallocAsync pools), buffers not 16-byte aligned.
 */
#ifndef TLMPI_REGCACHE_H
#define TLMPI_REGCACHE_H

#include "kernels.h"
#include <mpi.h>
#include <stddef.h>

#define TLMPI_IPCREG_MAX_MAPS (2 * TLMPI_NODE_MAX_RANKS)
#define TLMPI_REGCACHE_ENTRIES 128 /* allocations one communicator's view holds (every rank's) */
#define TLMPI_REGCACHE_MEMOS 16    /* memos one view holds (below) */

/* A persistent request's registration. */
typedef struct tlmpi_ipc_reg {
    tlmpi_node_direct_t d;      /* every node rank's input and output as mapped here */
    int dev;                    /* the device the mappings belong to */
    int nmaps;
    struct tlmpi_ipcreg_map *maps[TLMPI_IPCREG_MAX_MAPS]; /* the table's entries this registration holds */
} tlmpi_ipc_reg_t;

/* Collective over comm (its size <= TLMPI_NODE_MAX_RANKS ranks of one node; every rank calls it): register
 * in[0, in_bytes) and out[0, out_bytes) of device dev (local_ok = 0: this rank cannot, why_local says
 * why). Returns the registration, or NULL on every rank alike with this rank's reason in why (its own,
 * or which rank could not). The caller's device is restored. */
tlmpi_ipc_reg_t *tlmpi_ipc_reg_create(MPI_Comm comm, int rank, int size, int dev, int local_ok, const char *why_local,
                                      const void *in, size_t in_bytes, void *out, size_t out_bytes, char *why,
                                      size_t len);
/* Release a registration (NULL: nothing): its mappings' references dropped, the last one closed. Local. */
void tlmpi_ipc_reg_destroy(tlmpi_ipc_reg_t *reg);
/* Peer allocations mapped now (process-wide; tests). */
int tlmpi_ipc_reg_mapped(void);

/* ---- a communicator's registration cache ---- */
typedef struct tlmpi_regcache tlmpi_regcache_t;

/* How a call's lookup ended (the same on every rank). */
typedef enum {
    TLMPI_REG_HIT = 0,          /* every rank's buffers were in the view: one PMPI_Allgather, or none where
                                   a blocking call's gated kernel agreed on a memo (tlmpi_regcache_memo_hit) */
    TLMPI_REG_FIRST,            /* some were registered now: mapped, agreed (one more PMPI_Allreduce) */
    TLMPI_REG_POOL,             /* not zero-copy: some rank's buffers cannot be registered or mapped */
    TLMPI_REG_STATE_COUNT
} tlmpi_reg_state_t;

/* Per-communicator counters (tlmpi_comm_describe) and process-wide ones (tlmpi_get_reg_stats). */
typedef struct {
    unsigned long long calls[TLMPI_REG_STATE_COUNT];
    unsigned long long evicted;         /* entries evicted (LRU) or dropped (their range reused) */
    unsigned long long mapped_bytes;    /* bytes of peer allocations the view holds now */
    int entries;                        /* entries of the view now, every rank's */
} tlmpi_regcache_counts_t;

/* A view for a communicator of size ranks (this one rank) on device dev, at most max_bytes of peer
 * allocations mapped; NULL when out of host memory. Local. */
tlmpi_regcache_t *tlmpi_regcache_create(int rank, int size, int dev, size_t max_bytes);
/* Let go of every mapping the view holds (the caller made sure no kernel still uses them). Local. */
void tlmpi_regcache_destroy(tlmpi_regcache_t *rc);

/* An allocation as the caller already knows it (the classification cache: mem/classify.h). */
typedef struct {
    unsigned long long base, bytes, id; /* bytes 0: unknown, ask the driver */
} tlmpi_reg_range_t;

/* How the call uses the pointers a lookup gives (every rank says; the most demanding one counts). */
typedef enum {
    TLMPI_REG_USE_HOST = 0,     /* a blocking call: its kernel completed before the next lookup */
    TLMPI_REG_USE_STREAM,       /* a stream-ordered call: its kernel may still be queued at the next lookup;
                                   an entry it used is let go only after the view's drain */
    TLMPI_REG_USE_GRAPH         /* captured into a CUDA graph, which may be replayed at any time: its
                                   entries are pinned until the view is destroyed */
} tlmpi_reg_use_t;

/* Collective over comm (every rank of the view's communicator, in the same call order): the call's
 * input in and output out (MPI_IN_PLACE resolved: the same pointer, or for allgather the own block
 * inside out), which this rank can register where local_ok (else why_local says why not), used as
 * `use` says; known[0], known[1] (NULL: none) are the allocations of in and out where the caller knows
 * them (else the driver is asked). Fills *d with every rank's buffers as mapped here and returns TLMPI_REG_HIT or
 * TLMPI_REG_FIRST, or returns TLMPI_REG_POOL with the reason in why (this rank's own, or which rank
 * could not); the same result on every rank. Making room may let go of an entry that a stream-ordered
 * call used: drain(drain_arg) is called first (once; it waits until the communicator's queued kernels
 * completed, 0 on success); where some rank captures (use GRAPH) or drain is NULL such entries stay.
 * The caller's device is restored. */
tlmpi_reg_state_t tlmpi_regcache_lookup(tlmpi_regcache_t *rc, MPI_Comm comm, int local_ok, const char *why_local,
                                        const void *in, void *out, const tlmpi_reg_range_t *known, tlmpi_reg_use_t use,
                                        int (*drain)(void *), void *drain_arg, tlmpi_node_direct_t *d, char *why,
                                        size_t len);
/* Memos, for the non-blocking calls (MPI_I* may not wait in a host collective, so they never look up):
 * every lookup that gives zero-copy pointers keeps them as a memo (the last TLMPI_REGCACHE_MEMOS sets of
 * records; the same memos, with the same ids, on every rank). A later call asks locally which memo holds
 * exactly its own buffers, in allocations the classification still knows by the same buffer id (a freed
 * and re-allocated buffer never matches): the memo's id, or 0. Its kernels then agree on the device
 * (kernels.h: the gated pair): zero-copy on the memo's pointers where every rank offered the same id,
 * the pools otherwise. An entry a memo uses is let go only after the drain (as a stream-ordered call's),
 * and its memos go with it. */
int tlmpi_regcache_memos(const tlmpi_regcache_t *rc);
/* Local, no driver call: the id of the memo of this rank's in and out (MPI_IN_PLACE resolved as for the
 * lookup) whose own allocations are known[0], known[1] (bytes 0: unknown, no memo), with every rank's
 * pointers in *d; 0 where none. */
unsigned long long tlmpi_regcache_memo(const tlmpi_regcache_t *rc, const void *in, const void *out,
                                       const tlmpi_reg_range_t known[2], tlmpi_node_direct_t *d);

/* A blocking call that ran zero-copy on memo id, which every rank offered (the gated kernel's agreement,
 * known to every rank after its wait): a hit, as a lookup's (the memo's allocations most recently used). */
void tlmpi_regcache_memo_hit(tlmpi_regcache_t *rc, unsigned long long id);

/* The view's counters, and its last TLMPI_REG_POOL reason ("" before any). */
void tlmpi_regcache_counts(const tlmpi_regcache_t *rc, tlmpi_regcache_counts_t *out, const char **last_why);

/* Process-wide counters of every view (tlmpi_get_reg_stats): calls by state, evictions, and the peer
 * allocations mapped now by views and persistent requests together (count and bytes). */
void tlmpi_regcache_totals(unsigned long long calls[TLMPI_REG_STATE_COUNT], unsigned long long *evicted,
                           int *mapped, unsigned long long *mapped_bytes);

#endif
