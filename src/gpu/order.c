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
 * own order follows) and an external event record node after it, so each replay waits for the comm's
 * eager work launched before it and the eager work launched after the replay waits for the replay:
 * a graph launch counts as the record for later host-side waits. The host does not see replays, so a
 * comm with such graphs makes every eager call wait on the event (order_graphs; a completed event
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

int tlmpi_gpu_capture_status(void *stream, tlmpi_gpu_capture_t *cap)
{
    enum cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
    unsigned long long id = 0;
    cudaGraph_t g = NULL;
    cudaError_t e;

#if CUDART_VERSION >= 13000
    e = cudaStreamGetCaptureInfo((cudaStream_t)stream, &st, &id, &g, NULL, NULL, NULL);
#else
    e = cudaStreamGetCaptureInfo_v2((cudaStream_t)stream, &st, &id, &g, NULL, NULL);
#endif
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
        ctx->order_on = 1;
    }
    return 0;
}

int tlmpi_gpu_order_before(tlmpi_gpu_ctx_t *ctx, void *stream, const tlmpi_gpu_capture_t *cap)
{
    struct tlmpi_gpu_order *o = ctx->order;
    cudaUserObject_t uo;
    cudaError_t e;

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
    return 0;
}

int tlmpi_gpu_order_after(tlmpi_gpu_ctx_t *ctx, void *stream, const tlmpi_gpu_capture_t *cap)
{
    cudaError_t e;

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
    e = cudaEventRecordWithFlags(ctx->order->ev, (cudaStream_t)stream, cudaEventRecordExternal);
    if (e == cudaSuccess) {
        ctx->order_graphs = 1;
    }
    return (int)e;
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
