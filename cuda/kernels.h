/*
 * kernels.h: the only header shared by tlmpi's C host code and its CUDA C++ kernels.
 * Plain C types only. Every launcher is extern "C", asynchronous on the given stream (a
 * cudaStream_t passed as void *; NULL is the legacy default stream), and returns 0 or a
 * cudaError_t value (as int). Element types and ops are tlmpi_dtype_t / tlmpi_op_t values
 * (cuda/types.h) passed as int. Pointers are device (or managed) memory of the current device.
 *
 * Launch sizes come from the caller: `ctas` is the number of CTAs (thread blocks) to launch, at
 * least 1; a launcher uses fewer where the data has less work than that. Pick it once with
 * tlmpi_cuda_ctas_for(bytes, tlmpi_cuda_sm_count(dev)): the launchers themselves make no device
 * query, so a launch costs one cudaLaunchKernel.
 */
#ifndef TLMPI_CUDA_KERNELS_H
#define TLMPI_CUDA_KERNELS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The most sources tlmpi_cuda_reduce takes. */
#define TLMPI_CUDA_REDUCE_MAX_SRC 8

/* 1 if tlmpi_cuda_reduce handles (dtype, op): every arithmetic type x sum/prod/min/max. */
int tlmpi_cuda_reduce_supported(int dtype, int op);

/*
 * dst[0..bytes) = src[0..bytes). Any alignment (16-byte vectors where dst and src are congruent
 * modulo 16, narrower ones otherwise). The ranges must not overlap unless dst == src.
 */
int tlmpi_cuda_copy(void *dst, const void *src, size_t bytes, int ctas, void *stream);

/*
 * dst[i] = op over k = 0, 1, ..., nsrc-1 of srcs[k][i], for i < count elements of dtype and
 * 1 <= nsrc <= TLMPI_CUDA_REDUCE_MAX_SRC (srcs is a host array of device pointers; it is read
 * before the call returns). The order is fixed (((s0 op s1) op s2) ...), so results are bitwise
 * reproducible. dst may be one of the sources (dst = dst op src: srcs = {dst, src}); other
 * overlaps are not allowed. f16/bf16 accumulate all sources in float and round once; integers wrap
 * (two's complement); min/max of floating types are fminf/fmaxf (a NaN loses). Every pointer must
 * be aligned to the element size (cudaErrorInvalidValue otherwise); 16-byte vectors are used when
 * all pointers are congruent modulo 16, narrower ones otherwise.
 */
int tlmpi_cuda_reduce(void *dst, const void *const *srcs, int nsrc, size_t count, int dtype, int op,
                      int ctas, void *stream);

/*
 * Number of SMs of CUDA device dev (cudaDevAttrMultiProcessorCount), queried once per device and
 * cached (thread-safe); 0 if the query fails.
 */
int tlmpi_cuda_sm_count(int dev);

/*
 * The CTA count for a copy/reduce writing `bytes` bytes on a device with sm_count SMs: 1 for small
 * sizes, one CTA per 16 KiB up to 4 per SM (the kernels' full occupancy) for large ones.
 */
int tlmpi_cuda_ctas_for(size_t bytes, int sm_count);

/* =============================================================================================
 * Node kernels: tlmpi's own Allgather / Reduce_scatter_block / Allreduce among the ranks of one
 * node, over a device transport (cuda/transport_*.cuh). One launcher runs every algorithm: the
 * host side (src/transport/ipc.c, src/tier/node.c) fills a transport descriptor once per
 * communicator and an argument record per call.
 *
 * Symmetric pool. Every node rank owns one pool of TLMPI_NODE_HDR_BYTES + data_bytes bytes of
 * device memory, mapped by every other node rank (CUDA IPC). The header holds the barrier flags
 * (zeroed by the host before the pools are exchanged); the data area is used in two halves that
 * alternate by step parity, so that back-to-back calls never overwrite a slot a peer still reads.
 * Messages larger than what one step holds run as several steps in the same kernel.
 *
 * LL (low latency) exchange. Messages of at most TLMPI_NODE_LL_MAX_BYTES per (sender, receiver)
 * pair can run without a barrier: the sender stores 16-byte lines of {4 data bytes, flag, 4 data
 * bytes, flag} into the receiver's LL region (in the header, used by nothing else), the flag being
 * the low 32 bits of the call's epoch, and the receiver polls its own region for lines carrying it
 * (cuda/node_ll.cu). An LL call counts as one barrier of the epoch; every 2^32 epochs the launcher
 * clears the region (one extra barrier) so that no line left from 2^32 epochs ago can pass.
 *
 * Barriers. Per column b of the call's partition (tlmpi_node_args_t.cols: one per CTA unless the
 * caller says otherwise), a flag per peer in each rank's header; barrier number k of a call
 * stores epoch+k into every peer's flag[b][rank] (release; system scope, or GPU scope where the
 * descriptor's gpu_scope says every rank is on this GPU) and waits (acquire, the same scope) until
 * its own flag[b][p] >= epoch+k for every p. The epoch is a per-communicator running total: with
 * dev_epoch in the descriptor, a word of each rank's own pool header that the kernels read and
 * advance (nothing per call in the launch arguments: graph replays stay correct); without, kept by
 * the caller in tlmpi_node_args_t.epoch and advanced by the launcher by the barriers it launched.
 * Every rank of the node must launch the same kinds, sizes and column counts in the same order.
 *
 * Bounded waits. Each device wait gives up after timeout_ns (%globaltimer): the first CTA to give
 * up fills the host-mapped error record (tlmpi_node_err_t: who waited for what, expected / seen)
 * and every CTA of the kernel returns early; the host reads the record after the stream wait.
 * =========================================================================================== */
#define TLMPI_NODE_MAX_RANKS 8          /* ranks of a node the node kernels serve */
#define TLMPI_NODE_MAX_CTAS 128         /* CTAs of one node kernel (barrier slots per rank) */
#define TLMPI_NODE_LL_OFF 65536         /* the LL region inside the pool header (cuda/node_ll.cu) */
#define TLMPI_NODE_LL_SLOT 16384        /* LL lines one sender owns in one half of a receiver's region */
#define TLMPI_NODE_LL_MAX_BYTES (TLMPI_NODE_LL_SLOT / 2) /* LL payload per (sender, receiver) pair */
#define TLMPI_NODE_LL_BYTES (2 * TLMPI_NODE_MAX_RANKS * TLMPI_NODE_LL_SLOT) /* the LL region: 2 halves */
#define TLMPI_NODE_HDR_BYTES (TLMPI_NODE_LL_OFF + TLMPI_NODE_LL_BYTES) /* pool header (barrier flags, rail
                                           signals, LL region), ahead of the data area: 320 KiB */
#define TLMPI_NODE_THREADS 512          /* threads per CTA of every node kernel */
#define TLMPI_NODE_CLAIM_OFF 8192       /* the timed-out claim word (u64) in the pool header: the first wait
                                           of a rank to time out takes it and fills the error record (node.cuh) */
#define TLMPI_NODE_EPOCH_OFF 8200       /* the device-resident epoch (u64) in the pool header (node.cuh) */
#define TLMPI_NODE_GATE_RAN_OFF 8232    /* gated pairs whose zero-copy kernel ran the call (u64 count in the
                                           pool header: tlmpi_cuda_node_run_direct's gate; node.cuh) */

/* The per-communicator transport descriptor (plain data; copied into every launch). */
typedef struct {
    void *base[TLMPI_NODE_MAX_RANKS];   /* pool header of every node rank, as mapped in this process */
    void *data[TLMPI_NODE_MAX_RANKS];   /* data area of every node rank, as mapped in this process: right
                                           after the header (tlmpi_node_xport_data_after_header) or an
                                           allocation of its own that grows on demand (src/transport/ipc.c);
                                           NULL while data_bytes is 0 */
    int rank, nranks;                   /* this rank among the node's ranks, and their number */
    size_t data_bytes;                  /* data area of each pool (a multiple of 512; 0: none yet, only the
                                           LL kinds and the zero-copy kernels run) */
    size_t step_bytes;                  /* the zero-copy allgather's step bound (node_direct.cu): half of
                                           the largest data area the pools may have (TLMPI_NODE_POOL),
                                           whatever they have now, so that its steps never depend on growth */
    unsigned long long timeout_ns;      /* bound of each device wait; 0: none */
    void *err;                          /* device address of a host-mapped tlmpi_node_err_t */
    int stuck;                          /* fault injection: this rank never arrives at barriers */
    unsigned late_ns;                   /* fault injection: this rank's CTAs pause this long after each
                                           of the call's barriers (0: no pause) */
    void *mc_base;                      /* multicast address of the pools (NVLS), NULL: none (the
                                           multicast operations are emulated over base[]) */
    int dev_epoch;                      /* 1: the barrier epoch lives in the own pool header (a u64 at
                                           TLMPI_NODE_EPOCH_OFF, zero with the header), read and advanced
                                           by the kernels themselves: launches are replay-safe in CUDA
                                           graphs and tlmpi_node_args_t.epoch is unused. 0: the caller
                                           keeps it in tlmpi_node_args_t.epoch */
    int gpu_scope;                      /* 1: every rank of the node runs on this rank's GPU (the same PCI
                                           bus id: src/transport/ipc.c): the barriers release and acquire
                                           at GPU scope. 0: system scope (a peer may be on another GPU) */
} tlmpi_node_xport_t;

/* data[q] = base[q] + TLMPI_NODE_HDR_BYTES for q < nranks (pools of one allocation each: header then
 * data area), and step_bytes from data_bytes. */
static inline void tlmpi_node_xport_data_after_header(tlmpi_node_xport_t *x)
{
    int q;

    for (q = 0; q < TLMPI_NODE_MAX_RANKS; q++) {
        x->data[q] = q < x->nranks && x->base[q] ? (void *)((char *)x->base[q] + TLMPI_NODE_HDR_BYTES) : (void *)0;
    }
    x->step_bytes = x->data_bytes;
}

/* What a timed-out device wait leaves for the host (first writer wins: set goes 0 -> 1 last). */
typedef struct {
    unsigned int set;                   /* 1 once the record is filled */
    int rank;                           /* the waiting node rank */
    int kind;                           /* TLMPI_NODE_* */
    int cta;                            /* barrier slot (CTA index) */
    int peer;                           /* node rank whose arrival was missing */
    int barrier;                        /* barrier number within the call (1-based) */
    unsigned long long expected, seen;  /* flag value waited for, and the last value seen */
    int rail;                           /* 0: a node barrier; 1: a rail signal wait (cuda/rail.cuh):
                                           peer is then the sending node, barrier the rail step of
                                           the call (1-based), and slot / group name the signal */
    int slot, group;
    unsigned long long gated_direct;    /* not an error: gated pairs (tlmpi_cuda_node_run_direct) of this
                                           communicator that ran zero-copy, as counted in the own pool
                                           header; written by the kernels, never read by them */
} tlmpi_node_err_t;

/* Algorithms (kind of a launch). */
typedef enum {
    TLMPI_NODE_AG_PUSH = 0,   /* allgather: store own block into every rank's pool (multicast store shape), copy out */
    TLMPI_NODE_AG_PULL,       /* allgather: own block into own pool, every rank loads the others' blocks */
    TLMPI_NODE_RSB_PULL,      /* reduce_scatter_block: input into own pool, load-reduce own block from all (multicast ld_reduce shape) */
    TLMPI_NODE_AR_ONESHOT,    /* allreduce: input into own pool, every rank load-reduces all of it */
    TLMPI_NODE_AR_TWOSHOT,    /* allreduce: load-reduce own slice, store it into every pool, copy out */
    TLMPI_NODE_AG_LL,         /* allgather: own block as flagged lines into every rank's LL region, no barrier */
    TLMPI_NODE_RSB_LL,        /* reduce_scatter_block: block q as flagged lines into rank q's LL region, reduce */
    TLMPI_NODE_AR_LL,         /* allreduce: the input as flagged lines into every rank's LL region, reduce;
                                 also MPI_Bcast (bytes summed, every rank but the root contributing zeros:
                                 in NULL) and MPI_Reduce (out NULL off the root) */
    TLMPI_NODE_BARRIER,       /* one barrier, no data (the floor of any one-shot collective; bench) */
    /* zero-copy kinds (tlmpi_cuda_node_run_direct only): straight between registered user buffers */
    TLMPI_NODE_AG_DIRECT,     /* allgather: every rank copies each peer's block from the peer's send buffer */
    TLMPI_NODE_RSB_DIRECT,    /* reduce_scatter_block: load-reduce the own block from every send buffer */
    TLMPI_NODE_AR_DIRECT,     /* allreduce: load-reduce the own slice from every send buffer, store it into
                                 every receive buffer */
    /* the siblings' pool kinds (tlmpi_cuda_node_run, with a layout: tlmpi_node_layout_t) */
    TLMPI_NODE_XCHG,          /* allgatherv, bcast: the own block into slot 0 of the own pool, every rank copies
                                 the blocks it needs out of the peers' pools (cuda/node_exchange.cu) */
    TLMPI_NODE_XCHG_ALL,      /* alltoall: block q into slot q of the own pool, every rank copies slot `rank`
                                 out of every pool */
    /* the siblings' zero-copy kinds (tlmpi_cuda_node_run_direct, with a layout: tlmpi_node_layout_t) */
    TLMPI_NODE_XCHG_DIRECT,   /* allgatherv, bcast, alltoall: every rank copies out_len[q] bytes of rank q's
                                 input at in_off[q] into out + out_off[q] */
    TLMPI_NODE_RED_DIRECT,    /* reduce_scatter, reduce: block q (in_len[q] bytes at in_off[q] of every
                                 input, the blocks end to end) reduced into rank q's output; every rank
                                 reduces an equal share of all blocks, whoever keeps them */
    TLMPI_NODE_KIND_COUNT
} tlmpi_node_kind_t;

/* The block layout of a sibling's call (MPI_Allgatherv, MPI_Reduce_scatter, MPI_Bcast, MPI_Reduce,
 * MPI_Alltoall), in bytes, for node rank q (every rank computes it from the same rank-uniform
 * arguments: each rank's lengths agree with its peers'; the zero-copy kinds read it as their entries
 * in tlmpi_node_kind_t say):
 *   in_len[q], in_off[q]    block q of this rank's input (at in + in_off[q]): staged into slot q of the own
 *                           pool (TLMPI_NODE_XCHG: slot 0 only; TLMPI_NODE_RSB_PULL: the block rank q
 *                           keeps, load-reduced by rank q over every pool's slot q)
 *   out_len[q], out_off[q]  TLMPI_NODE_XCHG / _ALL: the bytes this rank copies out of rank q's pool, slot 0
 *                           (XCHG) or slot `rank` (XCHG_ALL), to out + out_off[q] (0: none)
 * Lengths may be 0 and differ per block; a call runs in steps of the pool's slot size over the longest
 * block (tlmpi_node_args_t.count: its bytes for the XCHG kinds, its elements for RSB_PULL). */
typedef struct {
    size_t in_len[TLMPI_NODE_MAX_RANKS], in_off[TLMPI_NODE_MAX_RANKS];
    size_t out_len[TLMPI_NODE_MAX_RANKS], out_off[TLMPI_NODE_MAX_RANKS];
} tlmpi_node_layout_t;

/* One call. in == out is allowed (MPI_IN_PLACE resolved by the caller: for allgather in points at
 * the own block inside out). */
typedef struct {
    int kind;                           /* tlmpi_node_kind_t */
    int dtype, op;                      /* reductions: tlmpi_dtype_t / tlmpi_op_t (allgather: ignored) */
    const void *in;
    void *out;
    size_t count;                       /* elements of the message: allreduce: all of it; allgather /
                                           reduce_scatter_block: one rank's block. allgather: bytes */
    int ctas;                           /* CTAs this rank launches, 1..cols */
    int cols;                           /* columns of the call's partition, ctas..TLMPI_NODE_MAX_CTAS,
                                           the same on every rank (0: ctas, which must then be the same
                                           on every rank); each CTA takes columns b, b + ctas, ... in
                                           turn (cuda/node.cuh: "Columns and CTAs"), so ranks may run
                                           one call on different CTA counts. The LL kinds: cols == ctas */
    unsigned long long epoch;           /* in/out: barrier epoch (running total of this communicator);
                                           unused where the descriptor has dev_epoch */
    /* Completion word (the non-blocking forms' MPI_Wait / MPI_Test: src/gpu/stream.c marks). With
     * done_word set, the launch's last CTA to finish, after every CTA's stores (user buffers, peers'
     * pools) are visible at system scope, stores done_value into that host-mapped 32-bit word, unless
     * this rank's error record is set (a wait timed out: the host learns it from the stream). CTAs
     * count themselves in a u64 of the own pool header; done_ctas is that counter's running total
     * over this communicator's launches that carried a word (in/out; the launcher adds a->ctas), so a
     * CTA that never counts (the wrap barrier timed out) leaves every later target unreached: the
     * word falls silent and the event decides. Launches of one communicator never overlap (call
     * order), and launches without a word leave the counter alone. On return 0, done_word is NULL
     * when the launch does not write it (LL and barrier kinds, count 0: nothing launched). */
    void *done_word;
    unsigned done_value;
    unsigned long long done_ctas;
    /* A gated pair (a call whose zero-copy use is agreed on the device: tlmpi_cuda_node_run_direct
     * below): the same nonzero token in both launches of the pair, unique among this rank's pairs on
     * the communicator; 0: not gated. memo: the zero-copy launch's offer (0: none). */
    unsigned long long gate;
    unsigned long long memo;
    /* The siblings' blocks (the XCHG kinds require one; RSB_PULL, AG_LL and RSB_LL take one, the LL kinds
     * reading in_len[q] / in_off[q] as what this rank owes peer q: node_ll.cu; NULL: none), read by the
     * launcher before it returns */
    const tlmpi_node_layout_t *layout;
    /* TLMPI_NODE_AR_LL for a sibling (node.c): this rank contributes zeros (a broadcast's non-root: in
     * is set NULL at launch), this rank keeps no result (a reduce's non-root: out set NULL) */
    int ll_zero_in, ll_no_out;
} tlmpi_node_args_t;

/* 1 if the node kernels reduce (dtype, op) (same set as tlmpi_cuda_reduce). */
int tlmpi_cuda_node_supported(int dtype, int op);

/* Launch one node collective on stream (see above); 0 or a cudaError_t. a->epoch is advanced by
 * the number of barriers the launch performs. Pointers must be aligned to the element size. */
int tlmpi_cuda_node_run(const tlmpi_node_xport_t *x, tlmpi_node_args_t *a, void *stream);

/* Zero-copy node collectives (cuda/node_direct.cu) for persistent requests, whose buffers every node
 * rank registered once (src/transport/ipcreg.c): in[q] / out[q] are node rank q's input and output as
 * mapped in this process (this rank's own: its own pointers; MPI_IN_PLACE resolved as in
 * tlmpi_node_args_t). Every pointer 16-byte aligned. */
typedef struct {
    const void *in[TLMPI_NODE_MAX_RANKS];
    void *out[TLMPI_NODE_MAX_RANKS];
} tlmpi_node_direct_t;

/* Launch the zero-copy collective a->kind (TLMPI_NODE_*_DIRECT) on d's buffers (a->in / a->out are not
 * used) with a->ctas CTAs: two node barriers (every rank arrived; every rank done with every buffer),
 * allgather one more per step (a data half of the pool, at most 16 MiB) beyond its first; no pool data.
 * A reduce_scatter_block's input must not be its output (in place is not zero-copy). The siblings'
 * kinds (TLMPI_NODE_XCHG_DIRECT, TLMPI_NODE_RED_DIRECT) take a->layout, two barriers and no gate; a
 * reduction's output must not overlap any rank's input bytes that another rank reads (in place only
 * where each byte is read and written by the one rank that reduces it: MPI_Reduce's root), an
 * exchange's output no peer's input. x->dev_epoch is required. 0 or a cudaError_t. */
int tlmpi_cuda_node_run_direct(const tlmpi_node_xport_t *x, tlmpi_node_args_t *a, const tlmpi_node_direct_t *d,
                               void *stream);
/* Gated (a->gate != 0): the zero-copy launch of a pair whose other launch, right after it on the same
 * stream, is the call's pool kernel (tlmpi_cuda_node_run with the same a->gate). Before its first
 * barrier every column offers a->memo (the agreed registration the host found this rank's buffers
 * in, 0: none; d then only needs to be this rank's pointers or NULL) in the own pool header; after it
 * every column reads every rank's offer: all the same and nonzero, the call runs zero-copy on d, the
 * gate word of the own header takes the token and the pool kernel finds it and only counts its CTAs;
 * otherwise the zero-copy kernel returns (one barrier taken) and the pool kernel runs the call. Every
 * column of every rank reads the same offers: the same choice everywhere. Both launches of the pair
 * are offered the completion word: the one that runs the call writes it, and both count their CTAs,
 * so the pool launch's a->done_ctas is the zero-copy launch's after this call. Columns: one per CTA
 * (a->cols 0), the same count on every rank. */

/* Loads every kernel of the library into device dev's context (cuda/preload.cu: CUDA's lazy loading
 * may make a kernel's first launch wait for kernels in flight, and tlmpi's kernels wait for each
 * other). Call it before the first launch of any launcher here on that device, with nothing of them
 * in flight; once per process and device, later calls return at once. 0 or a cudaError_t (some
 * kernel failed to load: it loads at its first launch as before). */
int tlmpi_cuda_preload(int dev);
/* What tlmpi_cuda_preload did on the device it loaded last: kernel lookups loaded, microseconds it
 * took (-1: not run). */
void tlmpi_cuda_preload_stats(int *count, long long *us);

/* The most CTAs a node kernel may use on device dev when ranks_on_gpu ranks share it, so that all
 * their CTAs are resident at once (occupancy API x SMs / ranks, capped at TLMPI_NODE_MAX_CTAS);
 * 0 if the query fails. */
int tlmpi_cuda_node_max_ctas(int dev, int ranks_on_gpu);

/* The data area (bytes of each pool) with which a pool kind's call of `bytes` (allreduce: all of it;
 * allgather, reduce-scatter: one block) runs in one step (the launcher's step rule); (size_t)-1 where
 * that overflows. */
size_t tlmpi_cuda_node_area_for(int kind, size_t bytes, int nranks);

/* The CTA count for a node collective whose per-rank message is `bytes`, at most max_ctas. */
int tlmpi_cuda_node_ctas_for(int kind, size_t bytes, int nranks, int max_ctas);

/* =============================================================================================
 * Fused 2D kernels (cuda/hier_fused*.cu): Allgather / Reduce_scatter_block / Allreduce of a
 * communicator of N nodes x L ranks (rank = node * L + local index) in one kernel per call, the
 * intra-node phases over the node's pools (peer loads and stores, node barriers: as above) and the
 * inter-node phases as rail operations between the ranks of the same local index (cuda/rail.cuh):
 * put a byte range of the own pool into a rail peer's pool, then add 1 to the peer's signal; wait
 * until an own signal reaches a target. Emulated rail (this header's transport): the rail peers'
 * pools are CUDA-IPC mappings on one host, a put is a copy plus a release fence and a system-scope
 * atomic add. Signals: per receiving pool, signal[slot][sender node][group], 64-bit cumulative
 * counters that every CTA of the sender bumps once per rail step and group; the host keeps the
 * running totals (tlmpi_rail_args_t.sig) and the kernel derives every wait's target from them.
 * Rail step t uses slot t % 3 (inbox and signals), which is what makes back-to-back calls race free
 * (cuda/rail.cuh). Every rank of the communicator must launch the same kinds, sizes, CTA and group
 * counts in the same order.
 * =========================================================================================== */
#define TLMPI_RAIL_MAX_NODES 8
#define TLMPI_RAIL_MAX_GROUPS 4
#define TLMPI_RAIL_SLOTS 3

typedef struct {
    tlmpi_node_xport_t node;            /* this node's L ranks (base[j]: local index j's pool; rank:
                                           this rank's local index; nranks: L); its timeout, error
                                           record and barrier fault apply to the rail waits too */
    void *rail[TLMPI_RAIL_MAX_NODES];   /* pool of the rank with this local index on node n (own node:
                                           node.base[node.rank]) */
    int node_index, nnodes;             /* this rank's node, and N */
    int rail_stuck;                     /* fault injection: this rank never signals its rail peers */
    /* GIN rail (cuda/rail_gin.cuh) instead of the emulated one where gin_devcomm is not NULL: the host
     * copy of the ncclDevComm (created with GIN signals), the pool's window (an ncclWindow_t) and the
     * granted context count; node.base[] are then the window's LSA addresses and rail[] unused */
    const void *gin_devcomm;
    void *gin_win;
    int gin_contexts;
    int gin_world;                      /* 1: NCCL's LSA team is this rank alone (each rank its own NCCL
                                           host: fake nodes sharing a GPU), node.base[] are the node's
                                           pools mapped through src/transport/cumemshare.c, and the rail
                                           peer of node n is world rank n * L + node.rank; 0: NCCL's rail
                                           team, index n */
    int gin_wait;                       /* testing (TLMPI_FAULT, GIN rail only; 0 on the normal path): a
                                           mutant of the per-context wait target, 1 (gin_wait_full): the
                                           grid-wide target on each context, 2 (gin_wait_short):
                                           target / (2 x contexts) */
} tlmpi_rail_xport_t;

typedef enum { TLMPI_RAIL_AG = 0, TLMPI_RAIL_RSB, TLMPI_RAIL_AR, TLMPI_RAIL_KIND_COUNT } tlmpi_rail_kind_t;

typedef struct {
    int kind;                           /* tlmpi_rail_kind_t */
    int dtype, op;                      /* reductions (allgather: ignored) */
    const void *in;                     /* allgather: the own block (may be inside out); RSB: N*L blocks
                                           (may be out); allreduce: the vector (may be out) */
    void *out;
    size_t count;                       /* allgather: bytes of one block; RSB: elements of one block;
                                           allreduce: elements of the vector */
    int ctas;                           /* 1..TLMPI_NODE_MAX_CTAS, the same on every rank */
    int groups;                         /* rail groups 1..TLMPI_RAIL_MAX_GROUPS */
    unsigned long long epoch;           /* in/out: node barrier epoch of the communicator */
    unsigned long long step;            /* in/out: rail steps of the communicator so far */
    unsigned long long sig[TLMPI_RAIL_SLOTS][TLMPI_RAIL_MAX_GROUPS]; /* in/out: running total of each
                                           signal (every sender node's is the same) */
} tlmpi_rail_args_t;

/* Launch one fused 2D collective on stream; 0 or a cudaError_t (cudaErrorNotSupported: a GIN rail
 * but the kernels were built without GIN). epoch, step and sig are advanced. On a GIN rail the CTA
 * count is rounded down to a multiple of gin_contexts (at least gin_contexts). */
int tlmpi_cuda_rail_run(const tlmpi_rail_xport_t *x, tlmpi_rail_args_t *a, void *stream);
/* Bytes of each rail step's block chunk for a pool of data_bytes and N x L ranks (0: too small). */
size_t tlmpi_cuda_rail_chunk(size_t data_bytes, int nnodes, int local_size);

/* ---- devcomm transport (NCCL Device API): the device-side half (cuda/devcomm.cu) ----
 * NCCL_VERSION_CODE of the NCCL headers the kernels were compiled against (the runtime library must
 * be that version: the Device API's structures change in every release), 0 if built without the
 * NCCL Device API. */
int tlmpi_cuda_devcomm_version(void);
/* sizeof(ncclDevComm) (return) and sizeof(ncclDevCommRequirements) of those headers, 0 without. */
size_t tlmpi_cuda_devcomm_sizes(size_t *reqs_size);
/* Fill reqs (sizeof(ncclDevCommRequirements) bytes) for the node kernels: no GIN, no NCCL barriers,
 * lsaMultimem = want_mc (request it only when multicast is allowed). */
void tlmpi_cuda_devcomm_requirements(void *reqs, int want_mc);
/* 1 if the NCCL headers the kernels were compiled against have GIN in the Device API (2.28.9+): the
 * fused kernels then have a GIN rail (cuda/rail_gin.cuh). */
int tlmpi_cuda_devcomm_gin_built(void);
/* Fill reqs for the fused kernels' GIN rail: `signals` GIN signals (top-level ginSignalCount), 4
 * contexts asked for, nothing else. A devcomm with GIN needs an RDMA NIC with NCCL's GIN support. */
void tlmpi_cuda_devcomm_gin_requirements(void *reqs, int signals);
/* The GIN contexts NCCL granted a devcomm (its ginContextCount; 0: no GIN). */
int tlmpi_cuda_devcomm_gin_contexts(const void *devcomm);
/* 1 if every granted GIN context of a devcomm is of NCCL's proxy type (NCCL_NET_DEVICE_GIN_PROXY:
 * the device API's puts go through a CPU proxy thread), 0 if any is device-initiated (GDAKI), -1
 * without GIN. Read from the devcomm's ginTypes, which the device API dispatches on. */
int tlmpi_cuda_devcomm_gin_proxy(const void *devcomm);
/* lsaRank / lsaSize of a devcomm (host copy of the ncclDevComm ncclDevCommCreate filled). */
void tlmpi_cuda_devcomm_lsa(const void *devcomm, int *rank_p, int *size_p);
/* x->base[0..lsa_size) = the LSA addresses of window win (an ncclWindow_t) at offset 0, and
 * x->mc_base = its multicast address if want_mc (the devcomm must have lsaMultimem), else NULL.
 * Runs one one-thread kernel on the legacy stream and waits for it. 0 or a cudaError_t. */
int tlmpi_cuda_devcomm_pointers(const void *devcomm, void *win, int lsa_size, int want_mc, tlmpi_node_xport_t *x);

#ifdef __cplusplus
}
#endif
#endif
