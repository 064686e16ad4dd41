/*
 * stream: tlmpi's streams and events, and every host-side wait for GPU work.
 *
 * Contexts are per communicator (created at plan build): no in-order stream is ever shared by two
 * communicators' device work, so a rank can never serialise comm A's collective behind comm B's
 * while a peer does the opposite (threads under MPI_THREAD_MULTIPLE). Below MPI_THREAD_MULTIPLE
 * the streams are blocking streams, so they also order after work the caller left on the legacy
 * default stream. Under MPI_THREAD_MULTIPLE they are non-blocking (a blocking stream would be
 * implicitly ordered with every other thread's legacy-stream work, which can deadlock two ranks);
 * the caller's legacy-stream work is then captured with an event when each call starts
 * (tlmpi_gpu_ctx_begin).
 *
 * Every wait is bounded by TLMPI_TIMEOUT: on expiry it prints rank, communicator, collective, tier,
 * what it waited for and how long, then calls MPI_Abort on the communicator.
 */
#ifndef TLMPI_STREAM_H
#define TLMPI_STREAM_H

#include "tlmpi.h"
#include <mpi.h>
#include <stddef.h>

#define TLMPI_GPU_MAX_EVENTS 8
typedef struct tlmpi_gpu_ctx {
    int dev;
    void *stream;                   /* cudaStream_t */
    void *stream2;                  /* a second one, so that copies in both directions overlap */
    void *events[TLMPI_GPU_MAX_EVENTS]; /* cudaEvent_t, timing disabled */
    void *legacy_ev;                /* captures the legacy stream's work (non-blocking streams) */
    int nonblocking;
    volatile unsigned *done_word;   /* pinned, mapped host word the GPU writes (NULL: no spin wait) */
    void *done_word_dev;            /* its device address */
    unsigned done_seq;              /* last value enqueued for done_word */
    int spin;                       /* tlmpi_gpu_stream_wait polls done_word */
    volatile unsigned *launch_word; /* pinned, mapped host word the GPU writes after the launch thread's
                                       starts (TLMPI_LAUNCH_WORD; NULL: none), in stream order */
    void *launch_word_dev;          /* its device address */
    unsigned launch_seq;            /* last value enqueued for launch_word (written by whoever runs the
                                       launch queue's jobs, one at a time: gpu/launcher.c) */
    int launch_memop;               /* starts whose kernels do not write the word get a stream write */
    /* call order across streams (order.c), once the comm has had a stream-ordered call */
    int order_on;                   /* order_ev exists and orders every device call of the comm */
    struct tlmpi_gpu_order *order;  /* its event (shared with the graphs that wait on it) */
    void *order_stream;             /* where the order event was last recorded and may still be
                                       pending (NULL: nothing pending: the host waited since) */
    int order_graphs;               /* mixing graphs record the event: every eager call waits on it */
    unsigned long long order_capture; /* the capture (id) whose first call waited on the event */
    void *order_rec;                /* cudaGraphNode_t: that capture's one record node of the event
                                       (NULL until its first call's order_after) */
    const void *order_rec_from;     /* the one node with an edge into it (NULL: several) */
    void *order_rec_stream;         /* the stream that node was captured on */
} tlmpi_gpu_ctx_t;

/* Create a context on dev (the caller's current device is restored). NULL on failure, with the
 * reason in why (fault site stream_create). Not collective. gpu_sharers: ranks of the node on this
 * rank's GPU (3 or more: TLMPI_WAIT=auto polls the stream instead of spinning on a GPU-written word). */
tlmpi_gpu_ctx_t *tlmpi_gpu_ctx_create(int dev, int gpu_sharers, char *why, size_t len);
/* Wait for the context's work and destroy it. */
void tlmpi_gpu_ctx_destroy(tlmpi_gpu_ctx_t *ctx);
/* Order ctx->stream after the caller's legacy-stream work (a no-op for blocking streams) and, once
 * the comm has had stream-ordered calls, after its device work on other streams (order.c).
 * Returns a cudaError_t. */
int tlmpi_gpu_ctx_begin(tlmpi_gpu_ctx_t *ctx);
/* The same for a start whose launch the launch thread makes: no drain of its queue (the legacy
 * stream's work so far is captured now, on the calling thread; the launch follows in queue order). */
int tlmpi_gpu_ctx_begin_deferred(tlmpi_gpu_ctx_t *ctx);
/* Whether tlmpi_gpu_ctx_begin has anything to do (tiers may skip the call when it has not). */
static inline int tlmpi_gpu_ctx_needs_begin(const tlmpi_gpu_ctx_t *ctx)
{
    return ctx->nonblocking || ctx->order_on;
}

/* ---- call order across streams (order.c) ----
 * All device work of one communicator runs in the order of the calls, whatever stream it is on:
 * tlmpi's kernels assume it (the pools' halves, the LL regions and the device-resident epochs: one
 * kernel of a comm at a time per rank, in call order). Blocking and non-blocking calls run on the
 * comm's own stream, stream-ordered ones on the caller's; each comm has one order event, recorded
 * after every call whose work may still be pending, and waited for (cudaStreamWaitEvent) by the
 * next call on another stream. Graph capture (mixing mode): the first captured call of a capture
 * waits on the event through an external event node, and one event record node per capture, a leaf
 * off the captured stream, has an edge from the comm's latest captured call (a replay orders against
 * eager work both ways, and the record is unambiguous: after the comm's last captured call); once a
 * comm has such graphs, every eager call waits on the event (a replay is not seen by the host).
 * No-mixing mode: captured calls carry no event node. Zero cost for comms that never had a
 * stream-ordered call (order_on = 0). */
typedef struct {
    int active;                 /* the stream is being captured */
    unsigned long long id;      /* the capture's id */
    void *graph;                /* cudaGraph_t being built */
    int mixing;                 /* the comm's usage mode (TLMPI_GRAPH_MIXING / NO_MIXING flag) */
} tlmpi_gpu_capture_t;
/* The capture status of stream (NULL: the legacy stream): 0 or a cudaError_t (e.g. the legacy stream
 * while another stream captures in global mode). */
int tlmpi_gpu_capture_status(void *stream, tlmpi_gpu_capture_t *cap);
/* Create the comm's order event (with the context, outside any capture; ordering stays off), and turn
 * ordering on (the comm's first stream-ordered call; creates nothing). 0 or a cudaError_t. */
int tlmpi_gpu_order_create(tlmpi_gpu_ctx_t *ctx);
int tlmpi_gpu_order_enable(tlmpi_gpu_ctx_t *ctx);
/* Before / after the comm's device work on stream (cap: its capture status). cudaError_t. */
int tlmpi_gpu_order_before(tlmpi_gpu_ctx_t *ctx, void *stream, const tlmpi_gpu_capture_t *cap);
int tlmpi_gpu_order_after(tlmpi_gpu_ctx_t *ctx, void *stream, const tlmpi_gpu_capture_t *cap);
/* Release the comm's reference to its order event (ctx teardown; graphs may hold theirs). */
void tlmpi_gpu_order_release(tlmpi_gpu_ctx_t *ctx);
/* Destroy order events whose last graph was destroyed (any tlmpi thread, outside capture). */
void tlmpi_gpu_order_reap(void);

/* Who waits: for the timeout diagnostic. */
typedef struct {
    MPI_Comm comm;
    unsigned comm_id;
    tlmpi_coll_t coll;
    const char *tier;
} tlmpi_wait_who_t;

/* Wait until everything enqueued so far on ctx->stream has completed (blocking MPI semantics);
 * returns a cudaError_t (0 = success). With ctx->spin the GPU writes a new value into done_word
 * after the work and the host polls it, with a stream query every few microseconds so that a failed
 * kernel is reported rather than waited for; otherwise the stream is queried. Bounded. */
int tlmpi_gpu_stream_wait(tlmpi_gpu_ctx_t *ctx, const tlmpi_wait_who_t *who, const char *what);
/* The same, bounded by TLMPI_TIMEOUT + grace_s: for work whose own device waits are bounded by
 * TLMPI_TIMEOUT and report first (the node kernels). */
int tlmpi_gpu_stream_wait_grace(tlmpi_gpu_ctx_t *ctx, const tlmpi_wait_who_t *who, const char *what, long grace_s);
/* The same for any stream (NULL: the legacy default stream) and for one event. Bounded. */
int tlmpi_gpu_sync(void *stream, const tlmpi_wait_who_t *who, const char *what);
int tlmpi_gpu_event_wait(void *event, const tlmpi_wait_who_t *who, const char *what);

/* A mark: the completion of everything enqueued so far on ctx->stream, to be tested and waited for
 * later (the non-blocking forms: req/request.c): an event from a process-wide free list, recorded.
 * tlmpi_gpu_mark returns a cudaError_t (nothing recorded on failure); the device need not be
 * current. _test: 1 done, 0 not yet, else a cudaError_t negated. _wait: bounded by TLMPI_TIMEOUT +
 * grace_s, a cudaError_t. _release: give the event back (after done or after a failure). */
typedef struct {
    tlmpi_gpu_ctx_t *ctx;
    void *event;                /* cudaEvent_t */
    int deferred;               /* the event is recorded by a job of the launch thread (launcher.h) */
    int lstate;                 /* that job's state word: 0 queued, 1 launched and recorded, < 0 failed */
    volatile unsigned *word;    /* set by that job: ctx->launch_word reaches target when the work is
                                   done (NULL: the event alone); read once lstate is 1 */
    unsigned target;
    double posted_at;           /* when the job was posted (a test that finds it queued later than
                                   TLMPI_MARK_HELP_S after runs the queue itself) */
} tlmpi_gpu_mark_t;
#define TLMPI_MARK_HELP_S 20e-6
int tlmpi_gpu_mark(tlmpi_gpu_ctx_t *ctx, tlmpi_gpu_mark_t *m);
/* A mark whose event the launch thread records after the launch it makes (tier/kernel_call.c):
 * the event taken, nothing recorded; _test and _wait look at m->lstate first. 0 or a cudaError_t. */
int tlmpi_gpu_mark_deferred(tlmpi_gpu_ctx_t *ctx, tlmpi_gpu_mark_t *m);
/* The launch word offered to a start's launch (the launch thread's job, before the launch): the next
 * value of m->ctx's launch_word, which the launch's kernels write once done, setting taken (the node
 * tier's kernels: cuda/kernels.h done_word). 1 with *d filled, 0 when the context has no word. */
typedef struct {
    void *word_dev;             /* device address of the context's launch_word */
    unsigned value;             /* the value to write there */
    int taken;                  /* set by a launch whose kernels write it */
} tlmpi_gpu_done_t;
int tlmpi_gpu_mark_word_offer(const tlmpi_gpu_mark_t *m, tlmpi_gpu_done_t *d);
/* The job, after the launch and the event record of a deferred mark on m->ctx's stream: m->word /
 * m->target say which value of launch_word means the start is done: the one the kernels write (d->taken),
 * else one the stream writes after them (ctx->launch_memop), else nothing (the event alone). d: the
 * offer made to the launch, or NULL. */
void tlmpi_gpu_mark_word(tlmpi_gpu_mark_t *m, const tlmpi_gpu_done_t *d);
int tlmpi_gpu_mark_test(tlmpi_gpu_mark_t *m);
int tlmpi_gpu_mark_wait(tlmpi_gpu_mark_t *m, const tlmpi_wait_who_t *who, const char *what, long grace_s);
void tlmpi_gpu_mark_release(tlmpi_gpu_mark_t *m);
/* Destroy the free list's events (finalize). */
void tlmpi_gpu_marks_finalize(void);

/* Whether a kernel this thread launches now can have no other kernel of this process in flight on
 * the GPU beside it, so that it may use the CTAs of every kernel the process could otherwise have in
 * flight (src/tier/node.c: a blocking call's grid): below MPI_THREAD_MULTIPLE (no other thread
 * launches meanwhile), no mark holds an event (every started call's work was seen complete) and no
 * stream-ordered or captured call was ever made (their kernels run when the application's streams
 * and graphs say: tlmpi cannot see them finish). One load each; not collective (each rank sizes
 * its own grid: kernels.h, cols). */
int tlmpi_gpu_alone(void);
/* A stream-ordered or captured call is being made (src/entry/enqueue.c): tlmpi_gpu_alone is 0 from
 * now on in this process. */
void tlmpi_gpu_note_stream_ordered(void);

/* End the job after a diagnostic was printed, as a TLMPI_TIMEOUT does: MPI_Abort on comm (NULL or
 * MPI_COMM_NULL: MPI_COMM_WORLD); if the abort has not ended the process in 10 s, SIGALRM does. */
__attribute__((noreturn)) void tlmpi_gpu_abort(MPI_Comm comm);

#endif
