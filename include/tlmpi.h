/**
 * \file tlmpi.h
 * \brief Public interface of libtlmpi, a PMPI interposer that accelerates MPI collectives on
 *        CUDA device buffers.
 *
 * Applications need nothing from this header to benefit from tlmpi: linking `-ltlmpi` before the
 * MPI library, or `LD_PRELOAD=libtlmpi.so`, is enough. This header adds:
 *  - the library version and status codes,
 *  - half-precision datatype handles (TLMPI_FLOAT16, TLMPI_BFLOAT16) usable on any MPI,
 *  - per-collective, per-path call and byte counters (the same ones TLMPI_STATS=1 prints),
 *  - a topology query for a communicator (used by tests and tools).
 *
 * All functions are thread-safe once MPI is initialised, unless noted.
 */
#ifndef TLMPI_H
#define TLMPI_H

#include <stddef.h>
#include <stdint.h>
#include <mpi.h>
#include "tlmpi_version.h"

#ifdef __cplusplus
extern "C" {
#endif

/** \brief Status codes: one table expands to the enum and to tlmpi_status_string(). */
#define TLMPI_STATUS_MAP(_X)                                                   \
    _X(OK,           0, "success")                                             \
    _X(UNSUPPORTED, -1, "call not eligible; passed to PMPI")                   \
    _X(NO_MEMORY,   -2, "out of host or device memory")                        \
    _X(CUDA,        -3, "CUDA error")                                          \
    _X(NCCL,        -4, "NCCL error")                                          \
    _X(MPI,         -5, "MPI error")                                           \
    _X(INVALID_ARG, -6, "invalid argument")                                    \
    _X(NOT_FOUND,   -7, "not found or not available")                          \
    _X(INTERNAL,    -8, "internal error")

typedef enum {
#define TLMPI_STATUS_ENUM_(_n, _v, _s) TLMPI_ERR_##_n = (_v),
    TLMPI_STATUS_MAP(TLMPI_STATUS_ENUM_)
#undef TLMPI_STATUS_ENUM_
    TLMPI_STATUS_LAST = -9
} tlmpi_status_t;
/** \brief Success; alias of TLMPI_ERR_OK. */
#define TLMPI_OK TLMPI_ERR_OK

/** \brief Human readable text of a status code; never NULL. */
const char *tlmpi_status_string(tlmpi_status_t status);

/** \brief Version of the library that is loaded (may differ from the header's). */
const char *tlmpi_version(void);

/** \brief The library generation a tuning file must name to be used (version and build features;
 * tlmpi_tune writes it, TLMPI_TUNING_FILE checks it). */
const char *tlmpi_generation(void);

/** \brief The GPU model of CUDA device dev as a tuning file names it (spaces as '_'; "none" without
 * a device), into buf (NUL-terminated, truncated to len). */
void tlmpi_tuning_gpu(int dev, char *buf, size_t len);

/** \brief The intercepted collectives. */
typedef enum {
    TLMPI_COLL_ALLGATHER = 0,
    TLMPI_COLL_REDUCE_SCATTER_BLOCK,
    TLMPI_COLL_ALLREDUCE,
    TLMPI_COLL_ALLGATHERV,       /**< MPI_Allgatherv */
    TLMPI_COLL_REDUCE_SCATTER,   /**< MPI_Reduce_scatter (per-rank counts) */
    TLMPI_COLL_BCAST,            /**< MPI_Bcast */
    TLMPI_COLL_REDUCE,           /**< MPI_Reduce */
    TLMPI_COLL_ALLTOALL,         /**< MPI_Alltoall */
    TLMPI_COLL_COUNT
} tlmpi_coll_t;

/**
 * \brief The path a call took: a stable public label for the statistics, independent of tlmpi's
 * internal tier numbering (each tier names its label). PASSTHROUGH means the arguments went
 * unchanged to the next MPI_* in the load order (a PMPI tool loaded after tlmpi, else the MPI's own)
 * (host buffers, ineligible calls, TLMPI_ENABLE=0, device buffers on a CUDA-aware MPI). Values are
 * never renumbered; new tiers get new labels at the end.
 */
typedef enum {
    TLMPI_PATH_PASSTHROUGH = 0, /**< arguments handed unchanged to the next MPI_* (a tool's, or the MPI's) */
    TLMPI_PATH_HOSTOP,          /**< host buffers, tlmpi's own op swapped in (f16/bf16) */
    TLMPI_PATH_STAGING,         /**< device data staged through pinned host memory + PMPI_* */
    TLMPI_PATH_NCCL,            /**< flat NCCL host collective */
    TLMPI_PATH_SELF,            /**< one-rank communicator: a device copy */
    TLMPI_PATH_NODE,            /**< tlmpi's own kernels among the ranks of one node */
    TLMPI_PATH_HIER,            /**< 2D: the node tier inside each node, a rail exchange between nodes */
    TLMPI_PATH_COUNT
} tlmpi_path_t;

/**
 * \brief Call and byte counters of one (collective, path) pair. Bytes are each call's message size
 * in NCCL's per-rank convention: count * type size for allreduce, the per-rank block (sendcount *
 * type size) for allgather and (recvcount * type size) for reduce_scatter_block.
 */
typedef struct {
    uint64_t calls;
    uint64_t bytes;
} tlmpi_stat_t;

/**
 * \brief Read the counters of this process for one collective and path.
 * \return TLMPI_OK, or TLMPI_ERR_INVALID_ARG for an out-of-range coll/path or NULL stat_p.
 */
tlmpi_status_t tlmpi_get_stats(tlmpi_coll_t coll, tlmpi_path_t path, tlmpi_stat_t *stat_p);

/**
 * \brief The counters of one algorithm of a path (e.g. TLMPI_PATH_NODE, "oneshot"): the calls that
 * path ran with that algorithm. Every call is also counted in its path's tlmpi_get_stats counters.
 * \return TLMPI_OK (zero counters for an algorithm the path never ran), or TLMPI_ERR_INVALID_ARG for
 * an out-of-range coll/path or a NULL argument.
 */
tlmpi_status_t tlmpi_get_algo_stats(tlmpi_coll_t coll, tlmpi_path_t path, const char *algo, tlmpi_stat_t *stat_p);

/**
 * \brief The form of a call: blocking (MPI_Allreduce), non-blocking (MPI_Iallreduce, completed by the
 * application's MPI_Wait/MPI_Test family) or persistent (MPI_Allreduce_init; counted per MPI_Start).
 * Values are never renumbered.
 */
typedef enum {
    TLMPI_FORM_BLOCKING = 0,
    TLMPI_FORM_NONBLOCKING,
    TLMPI_FORM_PERSISTENT,
    TLMPI_FORM_ENQUEUE,      /**< stream-ordered, eager (tlmpi_*_enqueue outside a graph capture) */
    TLMPI_FORM_CAPTURE,      /**< stream-ordered, recorded into a CUDA graph (counted once per capture,
                                  not per replay: a replay runs no host code) */
    TLMPI_FORM_COUNT
} tlmpi_form_t;

/**
 * \brief The counters of one form of the calls of a path: every call is counted in its path's
 * tlmpi_get_stats counters and in the counters of its form (a persistent request once per start).
 * \return TLMPI_OK, or TLMPI_ERR_INVALID_ARG for an out-of-range coll/path/form or NULL stat_p.
 */
tlmpi_status_t tlmpi_get_form_stats(tlmpi_coll_t coll, tlmpi_path_t path, tlmpi_form_t form, tlmpi_stat_t *stat_p);

/** \brief The form's short name ("blocking", "nonblocking", "persistent", "enqueue", "capture"); NULL
 * when out of range. */
const char *tlmpi_form_name(tlmpi_form_t form);

/** \brief Zero every counter of this process. */
void tlmpi_reset_stats(void);

/**
 * \brief The launch thread's counters (TLMPI_LAUNCH_THREAD, since MPI_Init): kernel launches it made
 * for non-blocking and persistent starts, and starts that made their launch on the calling thread
 * because it slept (past TLMPI_LAUNCH_SPIN). Not reset by tlmpi_reset_stats.
 * \return TLMPI_OK, or TLMPI_ERR_INVALID_ARG for a NULL pointer.
 */
tlmpi_status_t tlmpi_get_launch_stats(unsigned long long *thread_launches, unsigned long long *inline_launches);
/**
 * \brief Of the launch thread's launches, the starts whose completion the GPU reported by writing a
 * host word (TLMPI_LAUNCH_WORD), since MPI_Init: so that a benchmark can say which way its starts
 * completed. kernel_words (may be NULL): of those, the words the collective's own kernel wrote (the
 * node tier), the others being a stream write after the start. Not reset by tlmpi_reset_stats.
 * \return TLMPI_OK, or TLMPI_ERR_INVALID_ARG for a NULL words.
 */
tlmpi_status_t tlmpi_get_launch_word_stats(unsigned long long *words, unsigned long long *kernel_words);

/**
 * \brief The shape of the last node-tier kernel this process set up for a call of this entry form:
 * the columns of its partition and the CTAs that took them (as many, or fewer taking them in turn
 * where another kernel of the process may share the GPU); 0 and 0 before any. Stream-ordered calls,
 * eager or captured, count as TLMPI_FORM_ENQUEUE (TLMPI_FORM_CAPTURE gives the same). For benchmarks,
 * to say what a row ran: a partition changes a kernel's bandwidth by several percent where ranks
 * share a GPU. Not reset by tlmpi_reset_stats.
 * \return TLMPI_OK, or TLMPI_ERR_INVALID_ARG for an out-of-range form or a NULL pointer.
 */
tlmpi_status_t tlmpi_get_node_shape(tlmpi_form_t form, int *cols_p, int *ctas_p);

/**
 * \brief The node tier's registration cache, process-wide since MPI_Init (TLMPI_NODE_REG: blocking calls
 * zero-copy between the application's buffers): how its lookups ended, and the peers' allocations this
 * process maps now (the caches' and the persistent requests' together). A benchmark reads it before
 * and after a row to say whether the row ran zero-copy and from which cache state. Not reset by
 * tlmpi_reset_stats.
 */
typedef struct {
    unsigned long long hits;     /**< calls whose buffers every rank's cache held: one PMPI_Allgather, no mapping */
    unsigned long long firsts;   /**< calls that registered an allocation first (mapped by the peers, agreed) */
    unsigned long long pool;     /**< calls that looked and ran through the pools (some rank's buffers not registrable) */
    unsigned long long evicted;  /**< allocations let go: least recently used beyond the bound, or range reused */
    int mapped;                  /**< peer allocations mapped in this process now */
    unsigned long long mapped_bytes; /**< their bytes */
} tlmpi_reg_stats_t;
/** \return TLMPI_OK, or TLMPI_ERR_INVALID_ARG for a NULL stats_p. */
tlmpi_status_t tlmpi_get_reg_stats(tlmpi_reg_stats_t *stats_p);

/**
 * \brief The node tier's device pools in this process now (TLMPI_NODE_POOL_GROW: each a 320 KiB header,
 * and a data area grown on demand at the first call that needs more). For tests and benchmarks that
 * say what tlmpi holds per communicator. Not reset by tlmpi_reset_stats.
 */
typedef struct {
    unsigned long long bytes;    /**< device memory the pools hold: headers and data areas (areas that a
                                      captured graph may still use included) */
    int pools;                   /**< communicators holding one */
    unsigned long long grown;    /**< data areas grown since MPI_Init */
} tlmpi_pool_stats_t;
/** \return TLMPI_OK, or TLMPI_ERR_INVALID_ARG for a NULL stats_p. */
tlmpi_status_t tlmpi_get_pool_stats(tlmpi_pool_stats_t *stats_p);

/** \brief Short names ("allreduce", "staging", ...); NULL when out of range. */
const char *tlmpi_coll_name(tlmpi_coll_t coll);
const char *tlmpi_path_name(tlmpi_path_t path);

/** \brief What tlmpi knows about one communicator, as built on its first accelerated call. */
typedef struct {
    int eligible;       /**< 1 if tlmpi may accelerate this comm; 0 = negative-cached */
    const char *reason; /**< why not eligible (static string), or "" */
    int size, rank;
    int node_count;     /**< number of nodes (fake nodes under TLMPI_TOPO_RANKS_PER_NODE) */
    int node_index;     /**< this rank's node, 0..node_count-1, ordered by lowest world rank */
    int local_rank, local_size;
    int rail_rank, rail_size; /**< position in the rail comm (same local rank on every node) */
    int regular;        /**< 1 if every node has the same number of ranks */
    int gpu_device;     /**< CUDA device ordinal of this rank, -1 if none */
    int rail_id;        /**< NIC-derived rail id (hwloc), falls back to local_rank */
} tlmpi_comm_info_t;

/**
 * \brief Build (if needed) and describe tlmpi's state for comm. Collective over comm: every rank
 * must call it. Works on host-only machines (gpu_device = -1).
 */
tlmpi_status_t tlmpi_comm_query(MPI_Comm comm, tlmpi_comm_info_t *info_p);

/**
 * \brief The plan of comm in words (NUL-terminated, truncated to len): per collective the tiers
 * and algorithms its calls can take, and what each tier that was set up on it uses (the node
 * tier: transport, ranks, pool, CTAs, multicast). Collective over comm on its first use, as
 * tlmpi_comm_query. \return TLMPI_OK, TLMPI_ERR_INVALID_ARG (buf NULL or len 0),
 * TLMPI_ERR_NOT_FOUND (tlmpi not initialised), TLMPI_ERR_MPI.
 */
tlmpi_status_t tlmpi_comm_describe(MPI_Comm comm, char *buf, size_t len);

/**
 * \brief Change one TLMPI_* setting at run time, as if the variable had been set before the first
 * call (name without the TLMPI_ prefix, e.g. "TIER", "nccl"). For benchmarks and tests. Settings of
 * scope "all ranks" must be changed identically on every rank between collectives.
 * \return TLMPI_OK, TLMPI_ERR_NOT_FOUND for an unknown name, TLMPI_ERR_INVALID_ARG for a bad value.
 */
tlmpi_status_t tlmpi_config_set(const char *name, const char *value);

/**
 * \name Stream-ordered collectives and CUDA graph capture
 *
 * tlmpi_allreduce_enqueue and its siblings order one collective on a CUDA stream of the caller
 * (a cudaStream_t passed as void *; NULL is the legacy default stream, cudaStreamPerThread works
 * too): it runs after all work enqueued on `stream` before the call, work enqueued on `stream`
 * after the call sees its result, and the call returns without waiting for the device. Same
 * classification, plan and agreed tier as the blocking form; every rank of the communicator must
 * make the same enqueue calls in the same order (as for any collective). Device (or managed)
 * buffers only. Buffers must stay valid until the stream has passed the collective.
 *
 * Call order: all device work of one communicator, whatever form or stream it came from (blocking
 * calls on tlmpi's own streams, non-blocking ones, enqueued ones on any stream), runs in the order
 * the calls were made on this rank (cross-stream dependencies through events).
 *
 * CUDA graphs: a call made while `stream` is being captured is recorded, and every replay of the
 * graph performs a fresh collective (the kernels keep their epochs and flags in device memory).
 * Nothing is allocated, synchronised or enqueued on the legacy stream during capture, so a capture
 * in cudaStreamCaptureModeGlobal (PyTorch's default) stays valid. The communicator must be prepared
 * before its first captured call: tlmpi_enqueue_prepare, or any device-buffer call outside capture.
 * Replays of graphs that hold a communicator's calls are collective like the calls themselves (every
 * rank replays the same graphs in the same order, as for NCCL). Graphs may outlive the communicator
 * (replaying them after MPI_Comm_free is an error; destroying them is not).
 *
 * Usage modes (as NCCL's graphUsageMode): by default captured work may run concurrently with the
 * communicator's uncaptured work (mixing: each captured collective waits for and records the
 * communicator's order event through external event nodes, about a microsecond per replay). With
 * TLMPI_ENQUEUE_NO_MIXING (or TLMPI_GRAPH_MIXING=0) the application promises that graph replays
 * never overlap the communicator's uncaptured calls, and captured collectives carry no event nodes.
 *
 * Tiers: node (tlmpi's kernels), self and nccl run stream-ordered and capturable; staging, the MPI
 * and hier cannot. On those the call returns MPI_ERR_UNSUPPORTED_OPERATION, unless the communicator
 * allows the synchronous fallback (TLMPI_ENQUEUE_SYNC_FALLBACK, or TLMPI_ENQUEUE_FALLBACK=sync):
 * then the call waits for `stream`, runs the blocking form and returns once it completed (never
 * during capture: there it fails).
 *
 * Return values are MPI error classes (the communicator's error handler is not called):
 * MPI_SUCCESS; MPI_ERR_COMM, MPI_ERR_COUNT, MPI_ERR_TYPE, MPI_ERR_OP, MPI_ERR_BUFFER (a host buffer,
 * or NULL) for bad arguments, checked before anything is enqueued; for arguments the MPI judges (an
 * op invalid for the type, a built-in op on a derived type, sendbuf == recvbuf, MPI_DATATYPE_NULL in
 * a reduction) the class the MPI gives the blocking call on host buffers, outside capture (a call that
 * is valid yet has no stream-ordered tier still returns MPI_ERR_UNSUPPORTED_OPERATION without the
 * fallback); MPI_ERR_UNSUPPORTED_OPERATION
 * (no stream-ordered tier, or an unprepared communicator during capture); MPI_ERR_OTHER (tlmpi not
 * initialised, a CUDA failure). tlmpi_enqueue_error() says why in words. A device-side failure of an
 * enqueued collective (a wait that gave up after TLMPI_TIMEOUT) is reported on the next call on the
 * communicator or at MPI_Finalize, with the usual diagnostic, and ends the job.
 *
 * Porting from MPICH's MPIX_Allreduce_enqueue(sbuf, rbuf, count, type, op, stream_comm): the stream
 * is an argument here instead of a property of a stream communicator, so
 * tlmpi_allreduce_enqueue(sbuf, rbuf, count, type, op, comm, stream) on the ordinary communicator.
 * \{
 */
/** \brief Flags of tlmpi_enqueue_prepare. */
#define TLMPI_ENQUEUE_SYNC_FALLBACK 0x1 /**< tiers that cannot run stream-ordered run synchronously */
#define TLMPI_ENQUEUE_NO_MIXING 0x2     /**< captured work never overlaps uncaptured work (no event nodes) */

/**
 * \brief Prepare comm for stream-ordered calls and graph capture: builds its plan, pools and handles
 * now (collective over comm; not during capture) and sets its flags (TLMPI_ENQUEUE_*; the same on
 * every rank; a later call replaces them). \return an MPI error class (see above).
 */
int tlmpi_enqueue_prepare(MPI_Comm comm, int flags);

int tlmpi_allreduce_enqueue(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                            MPI_Comm comm, void *stream);
int tlmpi_allgather_enqueue(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                            int recvcount, MPI_Datatype recvtype, MPI_Comm comm, void *stream);
int tlmpi_reduce_scatter_block_enqueue(const void *sendbuf, void *recvbuf, int recvcount, MPI_Datatype datatype,
                                       MPI_Op op, MPI_Comm comm, void *stream);
/** \brief Large counts. */
int tlmpi_allreduce_enqueue_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype, MPI_Op op,
                              MPI_Comm comm, void *stream);
int tlmpi_allgather_enqueue_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                              MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm, void *stream);
int tlmpi_reduce_scatter_block_enqueue_c(const void *sendbuf, void *recvbuf, MPI_Count recvcount,
                                         MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, void *stream);

/**
 * \brief The siblings, with the arguments of their MPI calls (MPI_IN_PLACE as there; MPI_Reduce's
 * recvbuf is significant at the root only, MPI_Bcast's buffer everywhere): the same tiers, rules and
 * return values as above (the node tier's kernels on intracommunicators, TLMPI_NODE_SIBLINGS).
 */
int tlmpi_allgatherv_enqueue(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                             const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm,
                             void *stream);
int tlmpi_reduce_scatter_enqueue(const void *sendbuf, void *recvbuf, const int recvcounts[], MPI_Datatype datatype,
                                 MPI_Op op, MPI_Comm comm, void *stream);
int tlmpi_bcast_enqueue(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm, void *stream);
int tlmpi_reduce_enqueue(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root,
                         MPI_Comm comm, void *stream);
int tlmpi_alltoall_enqueue(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                           MPI_Datatype recvtype, MPI_Comm comm, void *stream);
/** \brief The siblings with large counts. */
int tlmpi_allgatherv_enqueue_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                               const MPI_Count recvcounts[], const MPI_Aint displs[], MPI_Datatype recvtype,
                               MPI_Comm comm, void *stream);
int tlmpi_reduce_scatter_enqueue_c(const void *sendbuf, void *recvbuf, const MPI_Count recvcounts[],
                                   MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, void *stream);
int tlmpi_bcast_enqueue_c(void *buffer, MPI_Count count, MPI_Datatype datatype, int root, MPI_Comm comm, void *stream);
int tlmpi_reduce_enqueue_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype, MPI_Op op,
                           int root, MPI_Comm comm, void *stream);
int tlmpi_alltoall_enqueue_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                             MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm, void *stream);

/**
 * \brief The same with Fortran handles (MPI_Fint: mpi4py's py2f(), any MPI), for callers without
 * mpi.h such as Python's ctypes (python/tlmpi_enqueue.py). sendbuf NULL means MPI_IN_PLACE.
 */
int tlmpi_enqueue_prepare_f(MPI_Fint comm, int flags);
int tlmpi_allreduce_enqueue_f(const void *sendbuf, void *recvbuf, int64_t count, MPI_Fint datatype, MPI_Fint op,
                              MPI_Fint comm, void *stream);
int tlmpi_allgather_enqueue_f(const void *sendbuf, void *recvbuf, int64_t count, MPI_Fint datatype, MPI_Fint comm,
                              void *stream);
int tlmpi_reduce_scatter_block_enqueue_f(const void *sendbuf, void *recvbuf, int64_t recvcount, MPI_Fint datatype,
                                         MPI_Fint op, MPI_Fint comm, void *stream);
/**
 * \brief The siblings with Fortran handles: one datatype for both sides (tlmpi_alltoall_enqueue_f's
 * count is per rank, as its recvcount), int64_t counts and displacements (in elements, one per rank of
 * the group they describe, as the _c forms' arrays; any communicator size), sendbuf NULL means
 * MPI_IN_PLACE (MPI_Allgatherv's sendcount is then ignored; MPI_Reduce: at the root only).
 */
int tlmpi_allgatherv_enqueue_f(const void *sendbuf, int64_t sendcount, void *recvbuf, const int64_t recvcounts[],
                               const int64_t displs[], MPI_Fint datatype, MPI_Fint comm, void *stream);
int tlmpi_reduce_scatter_enqueue_f(const void *sendbuf, void *recvbuf, const int64_t recvcounts[], MPI_Fint datatype,
                                   MPI_Fint op, MPI_Fint comm, void *stream);
int tlmpi_bcast_enqueue_f(void *buffer, int64_t count, MPI_Fint datatype, int root, MPI_Fint comm, void *stream);
int tlmpi_reduce_enqueue_f(const void *sendbuf, void *recvbuf, int64_t count, MPI_Fint datatype, MPI_Fint op, int root,
                           MPI_Fint comm, void *stream);
int tlmpi_alltoall_enqueue_f(const void *sendbuf, void *recvbuf, int64_t count, MPI_Fint datatype, MPI_Fint comm,
                             void *stream);

/** \brief Why the calling thread's last failed enqueue call failed, in words ("" if none failed). */
const char *tlmpi_enqueue_error(void);
/** \} */

/**
 * \brief Half-precision datatypes usable on every MPI. Each is a named 2-byte contiguous type
 * created on first use (MPI must be initialised). Reductions with MPI_SUM/PROD/MIN/MAX on them
 * work through tlmpi on host and device buffers (tlmpi substitutes its own MPI_Op). Where the MPI
 * has MPIX_C_FLOAT16 / MPIX_BFLOAT16, tlmpi recognises those as well.
 */
MPI_Datatype tlmpi_type_float16(void);
MPI_Datatype tlmpi_type_bfloat16(void);
#define TLMPI_FLOAT16 (tlmpi_type_float16())
#define TLMPI_BFLOAT16 (tlmpi_type_bfloat16())

#ifdef __cplusplus
}
#endif
#endif /* TLMPI_H */
