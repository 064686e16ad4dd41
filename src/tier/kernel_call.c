/*
 * kernel_call: the frame of one call on a tier of tlmpi's own kernels (node, hier/fused), around the
 * tier's launch: the comm's device made current and its stream begun; buffers on another device
 * than the comm's copied through the tier's scratch on the comm's device (this rank cannot decline
 * once its peers launch, so failures after that are errors); the launch, whose failure before any
 * data moved makes the call TLMPI_ERR_UNSUPPORTED (the dispatcher stages it) with one warning per
 * tier; the output copied back; the bounded wait (TLMPI_TIMEOUT + the tier's grace: the kernels'
 * own device waits give up first and fill the tier's error record, which the tier reads after this
 * returns). A started call (non-blocking, persistent) whose kernel kind already launched once on
 * this thread hands its launch to the launch thread (gpu/launcher.h) when that is awake: the
 * legacy-stream capture (ctx_begin) stays here, the job makes the launch and records the call's
 * mark, and the call returns without the launch's 4-5 us. The job offers the launch the context's
 * launch word (gpu/stream.h: tlmpi_gpu_done_t): the node kernels write it themselves when done, and
 * MPI_Wait / MPI_Test read it instead of querying the event.
 */
#include "config.h"
#include "tier.h"

#ifdef HAVE_CUDA
#include "checks.h"
#include "cudawrap.h"
#include "env.h"
#include "launcher.h"
#include "log.h"
#include "stream.h"
#include "turn.h"
#include <string.h>
#include <cuda_runtime_api.h>

/* A launch the launch thread makes: the tier's launch on a copy of its argument, then the mark. */
struct deferred_launch {
    int dev;
    void *stream, *event;
    tlmpi_gpu_mark_t *mark;     /* the GPU writes its context's launch word after the work (NULL: the
                                   event alone); lives until the job's state is set */
    int (*launch)(void *arg, const void *in, void *out, void *stream, tlmpi_gpu_done_t *done);
    const void *in;
    void *out;
    _Alignas(16) unsigned char arg[TLMPI_LAUNCH_ARG_MAX - 64];
};

static int deferred_run(void *p)
{
    struct deferred_launch *d = p;
    tlmpi_gpu_done_t done;
    int cur = -1, e, offered, restore = -1;

    if (cudaGetDevice(&cur) != cudaSuccess || cur != d->dev) {
        (void)cudaGetLastError();
        if ((e = (int)cudaSetDevice(d->dev)) != cudaSuccess) {
            (void)cudaGetLastError();
            return e;
        }
        if (!tlmpi_launcher_is_thread()) {
            restore = cur; /* a waiting application thread runs this job (launcher.h): its device stays */
        }
    }
    offered = d->mark && tlmpi_gpu_mark_word_offer(d->mark, &done);
    e = d->launch(d->arg, d->in, d->out, d->stream, offered ? &done : NULL);
    if (e == 0) {
        e = (int)cudaEventRecord((cudaEvent_t)d->event, (cudaStream_t)d->stream);
    }
    if (d->mark && (e == 0 || (offered && done.taken))) {
        /* a kernel that took the word writes its value even when the record failed: never offered again */
        tlmpi_gpu_mark_word(d->mark, offered ? &done : NULL);
    }
    if (e != 0) {
        (void)cudaGetLastError();
    }
    if (restore >= 0) {
        (void)cudaSetDevice(restore);
    }
    return e;
}

/* Whether c's launch may go to the launch thread (then it has been posted: TLMPI_OK). 0: launch here. */
static int kernel_call_deferred(tlmpi_tier_comm_t *tc, const tlmpi_call_t *c, const tlmpi_tier_kernel_t *k)
{
    struct deferred_launch d;
    tlmpi_pending_t *pd = c->pend;
    int saved = -1, began;

    if (!pd || pd->tc != tc || pd->marked || !k->arg_bytes || k->arg_bytes > sizeof(d.arg) || !k->ok_p ||
        !(__atomic_load_n(k->ok_p, __ATOMIC_RELAXED) & k->ok_bit) || tc->ctx->order_on || tlmpi_turn_wanted() ||
        tlmpi_call_off_device(c, tc->dev) || !tlmpi_launcher_ready()) {
        return 0;
    }
    if (tlmpi_gpu_enter_device(tc->dev, &saved) != 0) {
        return 0;
    }
    if (tlmpi_gpu_mark_deferred(tc->ctx, &pd->mark) != 0) {
        (void)cudaGetLastError();
        tlmpi_gpu_restore_device(saved);
        return 0;
    }
    began = tlmpi_gpu_ctx_begin_deferred(tc->ctx);
    tlmpi_gpu_restore_device(saved);
    if (began != cudaSuccess) {
        (void)cudaGetLastError();
        pd->mark.deferred = 0;
        tlmpi_gpu_mark_release(&pd->mark);
        return 0; /* launched here then, after the drain of ctx_begin */
    }
    d.dev = tc->dev;
    d.stream = tc->ctx->stream;
    d.event = pd->mark.event;
    d.mark = tc->ctx->launch_word && c->msg_bytes >= (size_t)TLMPI_ENV_I(LAUNCH_WORD_MIN) ? &pd->mark : NULL;
    d.launch = k->launch;
    d.in = c->in;
    d.out = c->rbuf;
    memcpy(d.arg, k->arg, k->arg_bytes);
    if (tlmpi_launcher_post(deferred_run, &d, offsetof(struct deferred_launch, arg) + k->arg_bytes,
                            &pd->mark.lstate) != 0) {
        pd->mark.deferred = 0;
        tlmpi_gpu_mark_release(&pd->mark);
        return 0;
    }
    pd->marked = 1;
    pd->what = k->what;
    pd->grace_s = k->grace_s;
    tc->enqueued = tc->calls;
    return 1;
}

/* Buffers on another device than the comm's (tc->dev), or an output that is not device memory (the
 * root's of an MPI_Reduce whose inputs are: node.c): 0 when they are not; else one warning, the
 * input copied (queued) into the scratch, *in_p / *out_p there, and 1; -1 when the scratch could not
 * be had (nothing queued) or -2 when the copy failed (drain the stream), with *st_p set. */
static int other_device(tlmpi_tier_comm_t *tc, const tlmpi_call_t *c, const tlmpi_tier_kernel_t *k, char **in_p,
                        char **out_p, tlmpi_status_t *st_p)
{
    tlmpi_status_t st = TLMPI_OK;
    size_t in_al, need;

    if (!tlmpi_call_off_device(c, tc->dev)) {
        return 0;
    }
    in_al = (c->in_bytes + 255) & ~(size_t)255;
    need = in_al + c->out_bytes;
    if (!tlmpi_call_host_out(c)) {
        tlmpi_warn_once(COLL, "%s: buffers on device %d/%d, but this communicator's %s runs on device %d: copying "
                        "through device %d (slower; keep a communicator's buffers on one GPU)", tlmpi_coll_name(c->coll),
                        c->in_place ? c->rdev : c->sdev, c->rdev, k->where, tc->dev, tc->dev);
    }
    TLMPI_CUDA_CHECK_GOTO((cudaError_t)tlmpi_gpu_scratch_reserve(k->scratch_p, k->scratch_bytes_p, need), st, reserve);
    *in_p = *k->scratch_p;
    *out_p = *in_p + in_al;
    TLMPI_CUDA_CHECK_GOTO(cudaMemcpyAsync(*in_p, c->in, c->in_bytes, cudaMemcpyDefault, (cudaStream_t)tc->ctx->stream),
                          st, copy);
    return 1;
reserve:
    *st_p = st;
    return -1;
copy:
    *st_p = st;
    return -2;
}

tlmpi_status_t tlmpi_tier_kernel_call(tlmpi_tier_comm_t *tc, const tlmpi_call_t *c, const tlmpi_tier_kernel_t *k)
{
    cudaStream_t s = (cudaStream_t)tc->ctx->stream;
    tlmpi_status_t st = TLMPI_OK;
    const void *in = c->in;
    void *out = c->rbuf;
    char *tin = NULL, *tout = NULL;
    int e, saved = -1, other;

    if (c->pend && kernel_call_deferred(tc, c, k)) {
        return TLMPI_OK; /* the launch thread makes the launch and records the mark */
    }
    if (tlmpi_gpu_enter_device(tc->dev, &saved) != 0) {
        return TLMPI_ERR_UNSUPPORTED; /* nothing moved */
    }
    if (TLMPI_UNLIKELY(tlmpi_gpu_ctx_begin(tc->ctx) != cudaSuccess)) {
        (void)cudaGetLastError();
        tlmpi_gpu_restore_device(saved);
        return TLMPI_ERR_UNSUPPORTED;
    }
    other = other_device(tc, c, k, &tin, &tout, &st);
    if (TLMPI_UNLIKELY(other < 0)) {
        if (other == -1) {
            goto out;
        }
        goto wait;
    }
    if (TLMPI_UNLIKELY(other)) {
        in = tin;
        out = tout;
    }
    e = k->launch(k->arg, in, out, s, NULL);
    if (TLMPI_UNLIKELY(e != 0)) {
        (void)cudaGetLastError();
        if (!__atomic_exchange_n(k->warned_p, 1, __ATOMIC_RELAXED)) {
            tlmpi_warn(COLL, "%s on tier %s (algorithm %s): the kernel launch failed (%s); this call and any other "
                       "whose launch fails are staged through the host", tlmpi_coll_name(c->coll), k->tier, k->algo,
                       cudaGetErrorString((cudaError_t)e));
        }
        if (!other) {
            tlmpi_gpu_restore_device(saved);
            return TLMPI_ERR_UNSUPPORTED; /* before any data moved */
        }
        st = TLMPI_ERR_CUDA; /* the input copy is queued: drain it below */
        goto wait;
    }
    tc->enqueued = tc->calls;
    if (k->ok_p && !other) {
        __atomic_fetch_or(k->ok_p, k->ok_bit, __ATOMIC_RELAXED); /* later starts of this kind may defer */
    }
    if (c->pend) {
        tlmpi_launcher_kick(); /* it slept: awake for the next starts */
    }
    if (TLMPI_UNLIKELY(other)) {
        TLMPI_CUDA_CHECK_GOTO(cudaMemcpyAsync(c->rbuf, tout, c->out_bytes, cudaMemcpyDefault, s), st, wait);
    }
wait:
    {
        tlmpi_status_t ws = tlmpi_tier_wait_grace(tc, c, k->tier, k->what, k->grace_s);

        st = st != TLMPI_OK ? st : ws;
    }
out:
    tlmpi_gpu_restore_device(saved);
    return st;
}
#endif
