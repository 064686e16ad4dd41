/*
 * order: the call order of one communicator's device work across streams, and what graph capture
 * needs of it (stream.h, "call order across streams").
 *
 * tlmpi's kernels assume that a rank runs one kernel of a communicator at a time, in the order of
 * the calls (the pools' halves, the LL regions, the device-resident epochs). The blocking and
 * non-blocking forms run on the comm's own stream, where that holds by stream order; stream-ordered
 * calls run on the caller's streams. So, once a comm has had a stream-ordered call (order_on), it
 * has one order event: recorded after each call whose device work may still be pending (a
 * stream-ordered call, a non-blocking start), waited for by the next call on another stream. A
 * blocking call leaves nothing pending (the host waited), so it records nothing.
 *
 * Capture. A captured call in mixing mode (the default, NCCL's graphUsageMode 2) gets an external
 * event wait node before it (only the first captured call of the comm in one capture: the graph's
 * own order follows), and the capture gets one event record node of the comm, a leaf with an edge
 * from the comm's latest captured call (order_after), so each replay waits for the comm's eager work
 * launched before it and the eager work launched after the replay waits for the replay's last call
 * of the comm: a graph launch counts as the record for later host-side waits. The host does not see
 * replays, so a comm with such graphs makes every eager call wait on the event (order_graphs; a completed event
 * costs the wait little). No-mixing mode: nothing around captured calls (the application promises
 * that replays never overlap the comm's uncaptured work).
 *
 * Lifetime. A graph with event nodes must not outlive the event: each capture that added a node
 * retains a CUDA user object holding a reference to the comm's order record; its destructor runs on
 * a CUDA thread, where no CUDA call is allowed, so the last reference dropped there queues the
 * event, and tlmpi destroys queued events on its next prepare or at finalize (tlmpi_gpu_order_reap).
 */
#include "config.h"
#include "stream.h"
#include "cudawrap.h"
#include "launcher.h"
#include "log.h"

#include <stdlib.h>

#ifdef HAVE_CUDA
#include <cuda_runtime_api.h>

struct tlmpi_gpu_order {
    cudaEvent_t ev;
    int dev;
    int refs;                       /* the comm's + one per graph that holds an event node */
    struct tlmpi_gpu_order *next;   /* the reap list */
};

static struct tlmpi_gpu_order *reap_head;

static void order_destroy(struct tlmpi_gpu_order *o)
{
    int saved = -1;

    if (tlmpi_gpu_enter_device(o->dev, &saved) == 0) {
        cudaEventDestroy(o->ev);
        (void)cudaGetLastError();
        tlmpi_gpu_restore_device(saved);
    }
    free(o);
}

/* Drop one reference; on_cuda_thread: from a user object's destructor (queue, do not destroy). */
static void order_unref(struct tlmpi_gpu_order *o, int on_cuda_thread)
{
    if (__atomic_sub_fetch(&o->refs, 1, __ATOMIC_ACQ_REL) != 0) {
        return;
    }
    if (!on_cuda_thread) {
        order_destroy(o);
        return;
    }
    o->next = __atomic_load_n(&reap_head, __ATOMIC_ACQUIRE);
    while (!__atomic_compare_exchange_n(&reap_head, &o->next, o, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
    }
}

static void CUDART_CB graph_released(void *p)
{
    order_unref(p, 1);
}

void tlmpi_gpu_order_reap(void)
{
    struct tlmpi_gpu_order *o = __atomic_exchange_n(&reap_head, NULL, __ATOMIC_ACQ_REL);

    while (o) {
        struct tlmpi_gpu_order *next = o->next;

        order_destroy(o);
        o = next;
    }
}

/* cudaStreamGetCaptureInfo in the runtime's signature (CUDA 13 dropped the _v2 name and added the
 * edge data); deps / n may be NULL. */
static cudaError_t capture_info(void *stream, enum cudaStreamCaptureStatus *st, unsigned long long *id, cudaGraph_t *g,
                                const cudaGraphNode_t **deps, size_t *n)
{
#if CUDART_VERSION >= 13000
    return cudaStreamGetCaptureInfo((cudaStream_t)stream, st, id, g, deps, NULL, n);
#else
    return cudaStreamGetCaptureInfo_v2((cudaStream_t)stream, st, id, g, deps, n);
#endif
}

int tlmpi_gpu_capture_status(void *stream, tlmpi_gpu_capture_t *cap)
{
    enum cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
    unsigned long long id = 0;
    cudaGraph_t g = NULL;
    cudaError_t e;

    e = capture_info(stream, &st, &id, &g, NULL, NULL);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return (int)e;
    }
    if (st == cudaStreamCaptureStatusInvalidated) {
        return (int)cudaErrorStreamCaptureInvalidated;
    }
    cap->active = st == cudaStreamCaptureStatusActive;
    cap->id = cap->active ? id : 0;
    cap->graph = cap->active ? (void *)g : NULL;
    return 0;
}

int tlmpi_gpu_order_create(tlmpi_gpu_ctx_t *ctx)
{
    struct tlmpi_gpu_order *o;
    int saved = -1;
    cudaError_t e;

    tlmpi_gpu_order_reap();
    if (ctx->order) {
        return 0;
    }
    if (!(o = calloc(1, sizeof(*o)))) {
        return (int)cudaErrorMemoryAllocation;
    }
    if (tlmpi_gpu_enter_device(ctx->dev, &saved) != 0) {
        free(o);
        return (int)cudaErrorInvalidDevice;
    }
    e = cudaEventCreateWithFlags(&o->ev, cudaEventDisableTiming);
    tlmpi_gpu_restore_device(saved);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        free(o);
        return (int)e;
    }
    o->dev = ctx->dev;
    o->refs = 1;
    ctx->order = o;
    return 0;
}

int tlmpi_gpu_order_enable(tlmpi_gpu_ctx_t *ctx)
{
    if (!ctx->order) {
        return (int)cudaErrorNotReady; /* its creation failed at the comm's setup */
    }
    if (!ctx->order_on) {
        ctx->order_stream = NULL;
        ctx->order_graphs = 0;
        ctx->order_capture = 0;
        ctx->order_rec = NULL;
        ctx->order_rec_from = NULL;
        ctx->order_rec_stream = NULL;
        ctx->order_on = 1;
    }
    return 0;
}

int tlmpi_gpu_order_before(tlmpi_gpu_ctx_t *ctx, void *stream, const tlmpi_gpu_capture_t *cap)
{
    struct tlmpi_gpu_order *o = ctx->order;
    cudaUserObject_t uo;
    cudaError_t e;

    tlmpi_launcher_drain("call order across streams"); /* the comm's queued launches first */
    if (!cap || !cap->active) {
        if ((ctx->order_stream && ctx->order_stream != stream) || ctx->order_graphs) {
            return (int)cudaStreamWaitEvent((cudaStream_t)stream, o->ev, 0);
        }
        return 0;
    }
    if (!cap->mixing || ctx->order_capture == cap->id) {
        return 0;
    }
    if ((e = cudaStreamWaitEvent((cudaStream_t)stream, o->ev, cudaEventWaitExternal)) != cudaSuccess) {
        return (int)e;
    }
    /* the graph keeps the event alive (its reference moves into the graph) */
    __atomic_add_fetch(&o->refs, 1, __ATOMIC_ACQ_REL);
    if ((e = cudaUserObjectCreate(&uo, o, graph_released, 1, cudaUserObjectNoDestructorSync)) != cudaSuccess) {
        __atomic_sub_fetch(&o->refs, 1, __ATOMIC_ACQ_REL);
        return (int)e;
    }
    if ((e = cudaGraphRetainUserObject((cudaGraph_t)cap->graph, uo, 1, cudaGraphUserObjectMove)) != cudaSuccess) {
        cudaUserObjectRelease(uo, 1); /* the destructor drops the reference */
        return (int)e;
    }
    ctx->order_capture = cap->id;
    ctx->order_rec = NULL; /* this capture's record node: made by order_after */
    return 0;
}

/* The tail of the capture sequence on stream: the nodes the next captured work would depend on. */
static cudaError_t capture_tail(void *stream, cudaGraph_t *g, const cudaGraphNode_t **deps, size_t *n)
{
    enum cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
    unsigned long long id = 0;

    *deps = NULL;
    *n = 0;
    return capture_info(stream, &st, &id, g, deps, n);
}

static cudaError_t add_edge(cudaGraph_t g, const cudaGraphNode_t *from, cudaGraphNode_t to)
{
#if CUDART_VERSION >= 13000
    return cudaGraphAddDependencies(g, from, &to, NULL, 1);
#else
    return cudaGraphAddDependencies(g, from, &to, 1);
#endif
}

static cudaError_t remove_edge(cudaGraph_t g, cudaGraphNode_t from, cudaGraphNode_t to)
{
#if CUDART_VERSION >= 13000
    return cudaGraphRemoveDependencies(g, &from, &to, NULL, 1);
#else
    return cudaGraphRemoveDependencies(g, &from, &to, 1);
#endif
}

int tlmpi_gpu_order_after(tlmpi_gpu_ctx_t *ctx, void *stream, const tlmpi_gpu_capture_t *cap)
{
    const cudaGraphNode_t *deps;
    cudaGraphNode_t rec;
    cudaGraph_t g = NULL;
    size_t n, i;
    cudaError_t e;

    tlmpi_launcher_drain("call order across streams"); /* the comm's queued launches first */
    if (!cap || !cap->active) {
        e = cudaEventRecord(ctx->order->ev, (cudaStream_t)stream);
        if (e == cudaSuccess) {
            ctx->order_stream = stream;
        }
        return (int)e;
    }
    if (!cap->mixing) {
        return 0;
    }
    /* One record node per capture, a leaf beside the captured stream (its successors do not wait for
     * it), with an edge from the comm's latest captured call: a later host-side wait on the event
     * waits for the comm's last captured call, and the stream carries no event node between the
     * calls. Each captured call adds its edge; the previous call's edge goes when the new call was
     * captured on the same stream (it follows the previous one there), so that only the last call
     * has a second successor. (A record node after every call orders as well: CUDA's wait after the
     * launch waits for the last of them, bench/probes/graph_record.cu on the H200; but each is a node
     * on the stream's critical path, docs/PERFORMANCE.md.) Adding and removing edges of a graph being
     * captured is allowed (destroying and removing nodes is not), and a node that is not joined to the
     * stream does not make the capture unjoined (cudaStreamGetCaptureInfo). */
    if ((e = capture_tail(stream, &g, &deps, &n)) != cudaSuccess) {
        return (int)e;
    }
    if (!ctx->order_rec) { /* the capture's first call of the comm (order_before cleared it) */
        if ((e = cudaGraphAddEventRecordNode(&rec, g, deps, n, ctx->order->ev)) != cudaSuccess) {
            return (int)e;
        }
        ctx->order_rec = rec;
        ctx->order_rec_from = n == 1 ? (const void *)deps[0] : NULL;
        ctx->order_rec_stream = stream;
        ctx->order_graphs = 1;
        return 0;
    }
    rec = (cudaGraphNode_t)ctx->order_rec;
    if (n == 1 && (const void *)deps[0] == ctx->order_rec_from) {
        return 0; /* nothing captured since the last edge (a call that launched nothing) */
    }
    for (i = 0; i < n; i++) {
        if ((e = add_edge(g, &deps[i], rec)) != cudaSuccess) {
            return (int)e;
        }
    }
    if (ctx->order_rec_from && ctx->order_rec_stream == stream && n) {
        if ((e = remove_edge(g, (cudaGraphNode_t)ctx->order_rec_from, rec)) != cudaSuccess) {
            return (int)e;
        }
    }
    ctx->order_rec_from = n == 1 ? (const void *)deps[0] : NULL;
    ctx->order_rec_stream = stream;
    return 0;
}

void tlmpi_gpu_order_release(tlmpi_gpu_ctx_t *ctx)
{
    if (ctx->order) {
        order_unref(ctx->order, 0);
        ctx->order = NULL;
    }
    ctx->order_on = 0;
    tlmpi_gpu_order_reap();
}

#else /* !HAVE_CUDA */

int tlmpi_gpu_capture_status(void *stream, tlmpi_gpu_capture_t *cap)
{
    (void)stream;
    cap->active = 0;
    return 1;
}
int tlmpi_gpu_order_create(tlmpi_gpu_ctx_t *ctx)
{
    (void)ctx;
    return 1;
}
int tlmpi_gpu_order_enable(tlmpi_gpu_ctx_t *ctx)
{
    (void)ctx;
    return 1;
}
int tlmpi_gpu_order_before(tlmpi_gpu_ctx_t *ctx, void *stream, const tlmpi_gpu_capture_t *cap)
{
    (void)ctx, (void)stream, (void)cap;
    return 1;
}
int tlmpi_gpu_order_after(tlmpi_gpu_ctx_t *ctx, void *stream, const tlmpi_gpu_capture_t *cap)
{
    (void)ctx, (void)stream, (void)cap;
    return 1;
}
void tlmpi_gpu_order_release(tlmpi_gpu_ctx_t *ctx)
{
    (void)ctx;
}
void tlmpi_gpu_order_reap(void)
{
}
#endif
