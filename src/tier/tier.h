/*
 * tier: where a device-buffer call runs, behind one interface. Vocabulary:
 *   tier       where a call runs (self, node: tlmpi's own kernels, nccl, staging, mpi)
 *   algorithm  how a tier runs it (each tier lists its algorithms; the plan picks one)
 *   transport  what the kernels talk through (src/transport/ipc.c + cuda/transport_ipc.cuh: CUDA
 *              IPC; src/transport/devcomm.c + cuda/devcomm.cu: the NCCL Device API)
 *
 * Each tier is one table entry (tlmpi_tiers[], tier.c), implemented in its own file:
 *   local_caps  this rank's capability bits for the tier on a comm (before the ranks agree)
 *   setup       collective setup at plan build, once the capabilities are agreed (NCCL
 *               communicator, ...); never inside run. Local success or failure; the plan builder
 *               agrees on the outcome with one PMPI_Allreduce and warns once per rank
 *   supports    THE predicate "this tier can serve this call": a pure function of the call's
 *               classification and the comm's agreed capabilities (unit-tested table by table)
 *   run         run the call; UNSUPPORTED only before any data moved (then staging takes it)
 *   start       the non-blocking forms (req/request.c): start the call and return; NULL: run with
 *               c->pend set, whose final wait on the comm's stream (tlmpi_tier_wait*) then records a
 *               mark instead of waiting (tlmpi_pending_t)
 *   complete    after a started call's device work completed: the checks its run makes after its
 *               wait (the kernels' error record); NULL: none
 *   enqueue     the stream-ordered form (entry/enqueue.c): enqueue the call on the caller's stream and
 *               return, no host wait, no allocation (but the node tier's rare collective steps: a
 *               registration cache miss, its pools' data area growing), nothing on the legacy stream or the comm's own
 *               streams, and nothing per call baked into a launch that replays depend on (the stream
 *               may be capturing into a CUDA graph); the caller orders it (gpu/order.c). NULL: the
 *               tier cannot run stream-ordered. UNSUPPORTED: not this call (nothing enqueued)
 *   persist     the persistent forms (req/request.c), at *_init: collective (every rank calls it for the
 *               same call, on the tier the plan chose), what every start of the call can reuse, prepared
 *               once (node: the user's buffers registered for its zero-copy kernels), or NULL (nothing:
 *               the starts run as the non-blocking form does); the same outcome on every rank. The
 *               tier's run finds it in c->preg. NULL hook: nothing to prepare
 *   unpersist   release what persist returned (MPI_Request_free, the comm's teardown, finalize; local,
 *               after the request's last start completed)
 *   cleanup     per-comm teardown (MPI_Comm_free, finalize); finalize: process teardown
 * The plan (comm/plan.c) chooses a tier per call; nothing outside a tier's file switches on tiers.
 */
#ifndef TLMPI_TIER_H
#define TLMPI_TIER_H

#include "call.h"
#include "stream.h"
#include "tlmpi.h"
#include <mpi.h>
#include <stddef.h>

/* TLMPI_TIER's values (env.def's enum order {auto,nccl,staging,mpi,self,node,hier}) that code outside
 * plan.c names */
enum { TLMPI_TIER_ENV_AUTO = 0, TLMPI_TIER_ENV_NCCL = 1, TLMPI_TIER_ENV_STAGING = 2, TLMPI_TIER_ENV_NODE = 5 };

/* The `algo` argument of a tier's run: the algorithm's index in bits 0-7, the plan entry's CTA knob
 * in bits 8-15 (0: the tier's own choice). */
#define TLMPI_ALGO_WORD(_algo, _ctas) ((int)(_algo) | (int)(_ctas) << 8)
#define TLMPI_ALGO_INDEX(_w) ((_w) & 0xff)
#define TLMPI_ALGO_CTAS(_w) (((_w) >> 8) & 0xff)

/* Internal tier ids: the order is the auto preference order (best first). Public stats labels
 * (tlmpi_path_t) are separate: each tier names its label. */
typedef enum {
    TLMPI_TIER_SELF = 0,
    TLMPI_TIER_NODE,
    TLMPI_TIER_NCCL,
    TLMPI_TIER_HIER,
    TLMPI_TIER_MPI,
    TLMPI_TIER_STAGING,
    TLMPI_TIER_COUNT,
    TLMPI_TIER_AUTO = 15        /* in a plan entry: the best tier that supports the call */
} tlmpi_tier_id_t;

/* Capabilities of a communicator, agreed by all its ranks at plan build (AND over ranks, except
 * SHARED_GPU and NODE_SLOW: OR). */
enum {
    TLMPI_CAP_GPU = 1u << 0,            /* every rank has a GPU (tlmpi's device paths can run) */
    TLMPI_CAP_STREAM = 1u << 1,         /* the comm's own streams exist on every rank */
    TLMPI_CAP_STAGING_POOL = 1u << 2,   /* the pinned staging pool exists on every rank */
    TLMPI_CAP_NCCL = 1u << 3,           /* the flat NCCL communicator exists */
    TLMPI_CAP_MPI_CUDA_AWARE = 1u << 4, /* the MPI accepts device pointers */
    TLMPI_CAP_SELF = 1u << 5,           /* one-rank communicator */
    TLMPI_CAP_SHARED_GPU = 1u << 6,     /* (OR) two ranks of a node share one GPU */
    TLMPI_CAP_NODE = 1u << 7,           /* the node tier's transport exists on every rank */
    TLMPI_CAP_NODE_SLOW = 1u << 8,      /* (OR, agreed by the node tier's setup) its barriers cost
                                           milliseconds: ranks time-slice a GPU without MPS */
    TLMPI_CAP_HIER = 1u << 9,           /* the comm spans 2+ nodes of 2+ ranks each, ranks numbered node
                                           by node (rank = node * ranks per node + local rank) */
    TLMPI_CAP_TURNS = 1u << 10          /* (OR) some rank asks for the GPU turn (comm/turn.h): calls on
                                           tiers with device_waits take it first */
};

/* What a tier sees of a communicator (embedded in comm.c's state). */
typedef struct tlmpi_tier_comm {
    MPI_Comm comm;              /* the application's handle */
    unsigned id;                /* tlmpi's number for the comm, as its rank 0 counts (diagnostics) */
    uint64_t uid;               /* unique over the job, the same on every rank: rank 0's world rank
                                   and id (the GPU turn's priority) */
    int rank, size;
    int dev;                    /* this rank's CUDA device (-1: none) */
    int shared_gpu;             /* this rank shares its GPU with another rank of its node */
    int gpu_sharers;            /* ranks of this node on this rank's GPU, itself included (0: unknown) */
    int nodes;                  /* nodes the comm spans (fake nodes of TLMPI_TOPO_RANKS_PER_NODE count) */
    int local_rank, local_size; /* within this rank's node; node_index: the node's place among them */
    int node_index;
    int regular;                /* the same number of ranks on every node */
    int one_host;               /* all its ranks on one real node (fake nodes or not) */
    MPI_Comm node_comm, rail_comm; /* the topology's (owned by it; MPI_COMM_NULL: none) */
    int sub;                    /* a node or rail communicator of a hier comm (its plan ignores
                                   TLMPI_TIER and the tables: hier chose its tiers) */
    unsigned caps;              /* TLMPI_CAP_*, agreed */
    tlmpi_gpu_ctx_t *ctx;       /* the comm's own streams/events (NULL: none; then legacy stream) */
    int enq_flags;              /* stream-ordered calls: TLMPI_ENQUEUE_* of tlmpi_enqueue_prepare */
    int enq_ready;              /* prepared: plan, pools and order event exist (capture may use it) */
    void *state[TLMPI_TIER_COUNT]; /* each tier's per-comm state */
    /* diagnostics (written by the calling thread, read only when tlmpi aborts the job): device-buffer
     * calls started, the one in progress (busy: 1 + tlmpi_coll_t, 0: none) and the last call whose
     * device work a tier had enqueued (node, nccl) */
    unsigned long calls, enqueued;
    volatile int busy;
} tlmpi_tier_comm_t;

/* What completes a started (non-blocking) call, filled by its tier (see start above): first the mark
 * of the device work on the comm's stream (marked), then an MPI request the tier posted (mreq), then
 * the tier's finish. Owned by the request (req/request.h). */
typedef struct tlmpi_pending {
    struct tlmpi_tier_comm *tc;  /* the comm whose final wait is deferred (the call's own) */
    int marked;
    tlmpi_gpu_mark_t mark;
    const char *what;            /* for the bounded wait's diagnostic */
    long grace_s;
    MPI_Request mreq;            /* MPI_REQUEST_NULL: none */
    /* the tier's last steps once the above completed (ok = 1; staging: the result to the device), or
     * its cleanup after a failure (ok = 0); NULL: none. state: the tier's. */
    tlmpi_status_t (*finish)(struct tlmpi_pending *p, int ok);
    void *state;
} tlmpi_pending_t;

typedef struct tlmpi_tier {
    const char *name;           /* as in TLMPI_TIER and the *_TIERS tables */
    tlmpi_path_t label;         /* public stats label */
    const char *const *algos;   /* algorithm names (index 0 is the default) */
    int n_algos;
    unsigned cap;               /* the capability the tier needs on a comm (its setup keeps it) */
    unsigned auto_unless;       /* agreed capabilities that take the tier out of the auto order */
    unsigned setup_caps;        /* capabilities its setup may add to the comm's (agreed by the setup) */
    int device_waits;           /* its GPU kernels wait for the peers' kernels (node, nccl, hier): its
                                   calls take the GPU turn where the comm has TLMPI_CAP_TURNS */
    /* this rank's capability bits; *want_p gets the bits it tried to have (a want without the
     * have, on any rank, is warned about once per rank), why the reason */
    unsigned (*local_caps)(tlmpi_tier_comm_t *tc, unsigned *want_p, char *why, size_t len);
    tlmpi_status_t (*setup)(tlmpi_tier_comm_t *tc, char *why, size_t len); /* NULL: none */
    int (*supports)(const tlmpi_call_t *c, unsigned caps);
    /* *mpi_rc_p: set when the failure is an MPI call's (its error handler already ran; the
     * dispatcher returns that code unchanged) */
    tlmpi_status_t (*run)(tlmpi_tier_comm_t *tc, const tlmpi_call_t *c, int algo, int *mpi_rc_p);
    tlmpi_status_t (*start)(tlmpi_tier_comm_t *tc, const tlmpi_call_t *c, int algo, tlmpi_pending_t *p,
                            int *mpi_rc_p);                                   /* NULL: run, deferred */
    void (*complete)(tlmpi_tier_comm_t *tc, const tlmpi_call_t *c, int algo); /* NULL: none */
    tlmpi_status_t (*enqueue)(tlmpi_tier_comm_t *tc, const tlmpi_call_t *c, int algo, void *stream); /* NULL: none */
    void *(*persist)(tlmpi_tier_comm_t *tc, const tlmpi_call_t *c, int algo); /* NULL: none */
    void (*unpersist)(void *preg);
    void (*cleanup)(tlmpi_tier_comm_t *tc);                                /* NULL: none */
    void (*finalize)(void);                                                /* NULL: none */
    /* pure: what algorithm `algo` is for coll in words, e.g. "auto(oneshot<=262144,twoshot)" for a
     * tier that resolves it per call (NULL: its name) */
    void (*describe_algo)(tlmpi_coll_t coll, int algo, char *buf, size_t len);
    /* what the tier uses on a comm it was set up on, in words ("" when nothing; NULL: none) */
    void (*describe)(const tlmpi_tier_comm_t *tc, char *buf, size_t len);
} tlmpi_tier_t;

extern const tlmpi_tier_t tlmpi_tier_self, tlmpi_tier_node, tlmpi_tier_nccl, tlmpi_tier_hier, tlmpi_tier_mpi,
    tlmpi_tier_staging;
extern const tlmpi_tier_t *const tlmpi_tiers[TLMPI_TIER_COUNT];

/* staging.c: the MPI's own argument check of a persistent call on device buffers that a tier of
 * tlmpi serves: the MPI's *_init with host stand-ins of the device spans (overlap kept, nothing
 * copied), its request freed at once. Returns the MPI's code (its error handler already ran). With
 * keep (the call's tier is staging): the MPI's request and its host copies are kept in *keep instead,
 * the persistent request's c->preg for staging's starts (each copies the input in and calls
 * MPI_Start; unpersist frees it); NULL where the check failed. */
int tlmpi_staging_check_init(tlmpi_tier_comm_t *tc, const tlmpi_call_t *c, void **keep);
/* staging.c: the MPI's verdict on the arguments of a call on device buffers that tlmpi does not run
 * (a stream-ordered call refused): the MPI's non-blocking form with host stand-ins of the device spans
 * (nothing copied) under MPI_ERRORS_RETURN, then its wait (collective: every rank of the comm makes
 * it where every rank refuses the call). Returns the MPI's code; the comm's error handler is not called. */
int tlmpi_staging_check_args(const tlmpi_call_t *c);


/* Tier id of a name ("auto" -> TLMPI_TIER_AUTO), -1 if unknown; algorithm index in a tier, -1. */
int tlmpi_tier_by_name(const char *name, size_t len);
/* 1 if TLMPI_TIER is env_index (TLMPI_TIER_ENV_*) or one of the *_TIERS tables names the tier (an entry
 * "name", "name/...", "name:..."): a tier that auto would not use on a comm may still be asked for. */
int tlmpi_tier_named(const char *name, int env_index);
int tlmpi_tier_algo_by_name(int tier, const char *name, size_t len);

/* Who waits, for the bounded waits' diagnostics. */
static inline tlmpi_wait_who_t tlmpi_tier_who(const tlmpi_tier_comm_t *tc, const tlmpi_call_t *c,
                                              const char *tier)
{
    tlmpi_wait_who_t w = { tc ? tc->comm : c->comm, tc ? tc->id : 0, c->coll, tier };
    return w;
}

/* Wait (bounded) for the work a tier enqueued on the comm's stream; a failure is logged once, here,
 * and returned as TLMPI_ERR_CUDA. what names the work for the diagnostics ("the NCCL collective").
 * For a started call (c->pend on this comm) it records the mark instead and returns at once. */
tlmpi_status_t tlmpi_tier_wait(tlmpi_tier_comm_t *tc, const tlmpi_call_t *c, const char *tier, const char *what);
/* The same, bounded by TLMPI_TIMEOUT + grace_s (work whose own device waits are bounded by
 * TLMPI_TIMEOUT and report first). */
tlmpi_status_t tlmpi_tier_wait_grace(tlmpi_tier_comm_t *tc, const tlmpi_call_t *c, const char *tier, const char *what,
                                     long grace_s);

/* One call on a tier of tlmpi's own kernels (kernel_call.c; CUDA builds): the device, the stream,
 * buffers on another device than the comm's through the tier's scratch, the tier's launch, the
 * output copied back, the bounded wait. TLMPI_ERR_UNSUPPORTED where nothing moved (launch failure:
 * one warning per tier), else the wait's status. The tier reads its kernels' error record after it. */
typedef struct {
    const char *tier, *algo;    /* names for the diagnostics: "node", "push" */
    const char *where;          /* "node tier": what runs on the comm's device (another-device warning) */
    const char *what;           /* the work waited for: "the node kernel" */
    long grace_s;               /* the wait's bound beyond TLMPI_TIMEOUT */
    void **scratch_p;           /* the tier's scratch on the comm's device, grown as needed */
    size_t *scratch_bytes_p;
    int *warned_p;              /* the tier's once-flag of the launch-failure warning */
    /* enqueue the kernel on stream for these buffers: 0 (and the tier's bookkeeping done) or a
     * cudaError_t (nothing enqueued). done: a completion word offered by the launch thread (NULL:
     * none); a launch whose kernels write it sets done->taken (gpu/stream.h) */
    int (*launch)(void *arg, const void *in, void *out, void *stream, tlmpi_gpu_done_t *done);
    void *arg;
    /* the launch thread (gpu/launcher.h) may make a started call's launch: arg is self-contained
     * (no pointer into the caller's frame), arg_bytes of it are copied; 0: always on this thread.
     * Only once a launch of the same kind succeeded on this thread: bit ok_bit of *ok_p */
    size_t arg_bytes;
    unsigned *ok_p, ok_bit;
} tlmpi_tier_kernel_t;
tlmpi_status_t tlmpi_tier_kernel_call(tlmpi_tier_comm_t *tc, const tlmpi_call_t *c, const tlmpi_tier_kernel_t *k);

/* Per-comm teardown of every tier (comm.c) and process teardown (init.c). */
void tlmpi_tier_comm_cleanup(tlmpi_tier_comm_t *tc);
void tlmpi_tier_finalize(void);

#endif
