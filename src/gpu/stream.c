/*
 * stream: per-communicator streams and events, and the bounded waits (see stream.h).
 *
 * A wait polls: the GPU-written host word when the context spins (a stream query every 512
 * pauses so a failed kernel is seen), else a stream or event query between short pauses. Every
 * 64 queries it reads the clock; past TLMPI_TIMEOUT seconds it prints the diagnostic and calls
 * MPI_Abort. Long waits yield the core (sched_yield, or short sleeps when the application asked for
 * blocking sync).
 */
#include "config.h"
#include "stream.h"
#include "checks.h"
#include "cudawrap.h"
#include "env.h"
#include "global.h"
#include "launcher.h"
#include "log.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void tlmpi_gpu_abort(MPI_Comm comm)
{
    static int aborting;

    if (comm == MPI_COMM_NULL) {
        comm = MPI_COMM_WORLD;
    }
    /* One thread aborts. Under MPI_THREAD_MULTIPLE several threads' waits can time out together, and
     * Open MPI 4.1.6 was seen to crash in its show_help code when threads called MPI_Abort at once
     * (H200, issue 7's thread matrix): the others wait here for the process to end (the alarm
     * below ends it if the abort does not). */
    if (__atomic_exchange_n(&aborting, 1, __ATOMIC_ACQ_REL)) {
        for (;;) {
            pause();
        }
    }
    /* MPICH 4.0.2 (ch4:ucx) was seen to hang inside MPI_Abort on a dup'ed communicator while the
     * other ranks waited elsewhere: if the abort has not ended this process in 10 s, SIGALRM does
     * (the launcher then ends the job) */
    signal(SIGALRM, SIG_DFL);
    alarm(10);
    if (tlmpi_g.abort_report) {
        tlmpi_g.abort_report();
    }
    PMPI_Abort(comm, 1);
    abort(); /* PMPI_Abort does not return; be sure */
}

#ifdef HAVE_CUDA
#include <cuda.h>
#include <cuda_runtime_api.h>

#include "kernels.h"

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static double now_s(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static __attribute__((noreturn, noinline)) void wait_timeout(const tlmpi_wait_who_t *who, const char *what,
                                                              double waited, long limit, long grace_s)
{
    int rank = -1, size = 0;
    MPI_Comm comm = who && who->comm != MPI_COMM_NULL ? who->comm : MPI_COMM_WORLD;
    char name[MPI_MAX_OBJECT_NAME] = "";
    int len = 0;

    PMPI_Comm_rank(comm, &rank);
    PMPI_Comm_size(comm, &size);
    PMPI_Comm_get_name(comm, name, &len);
    tlmpi_error(COLL, "TLMPI_TIMEOUT: rank %d (world rank %d) of communicator #%u%s%s (%d ranks) waited %.1f s "
                "in %s on tier %s for %s; the limit is %ld s (TLMPI_TIMEOUT%s); calling MPI_Abort",
                rank, tlmpi_g.world_rank, who ? who->comm_id : 0, len ? " " : "", name, size, waited,
                who ? tlmpi_coll_name(who->coll) : "?", who && who->tier ? who->tier : "?", what, limit,
                grace_s > 0 ? " + a grace for the device's own report" : "");
    tlmpi_gpu_abort(comm);
}

/* Whether a GPU-written host word reached target (values wrap at 2^32; a later value of the same word
 * passes every earlier target). */
static inline int word_reached(const volatile unsigned *word, unsigned target)
{
    return (int)(*word - target) >= 0;
}

typedef cudaError_t (*query_fn_t)(void *arg);
static cudaError_t query_stream(void *s) { return cudaStreamQuery((cudaStream_t)s); }
static cudaError_t query_event(void *e) { return cudaEventQuery((cudaEvent_t)e); }

/* The one wait loop. word/target: the GPU-written host word (NULL: query only). */
static int wait_loop(volatile unsigned *word, unsigned target, query_fn_t query, void *arg,
                     const tlmpi_wait_who_t *who, const char *what, long grace_s)
{
    /* the fault site stands for a collective's GPU work that never completes: not for tlmpi's own
     * setup and teardown waits (no communicator) */
    int stuck = who && who->comm != MPI_COMM_NULL && tlmpi_fault_hit(WAIT_STUCK);
    long limit = (long)TLMPI_ENV_I(TIMEOUT);

    if (limit > 0 && grace_s > 0) {
        limit += grace_s;
    }
    unsigned spins = 0, rounds = 0, flags = 0;
    double t0 = 0;
    int gentle = -1, long_wait = 0;
    cudaError_t e;
    /* past this the wait leaves the core to others between polls: a time, not a count of rounds (a round
     * is a query, 3-7 us under MPS, or 512 spins on the word and a query, about 20 us) */
    const double kYieldAfter = 300e-6;

    for (;;) {
        if (word) {
            if (!stuck && word_reached(word, target)) {
                __atomic_thread_fence(__ATOMIC_ACQUIRE);
                return 0;
            }
            if (++spins < 512) {
                cpu_relax();
                continue;
            }
            spins = 0;
        }
        e = query(arg);
        if (e == cudaSuccess && !stuck) {
            return 0;
        }
        if (e != cudaSuccess && e != cudaErrorNotReady) {
            return (int)e;
        }
        (void)cudaGetLastError();
        rounds++;
        if ((rounds & (long_wait ? 63u : 7u)) == 1) { /* the clock: every 8 rounds, once yielding every 64 */
            double t = now_s();

            if (rounds == 1) {
                t0 = t;
            } else if (limit > 0 && t - t0 > (double)limit) {
                wait_timeout(who, what, t - t0, limit, grace_s);
            }
            long_wait = long_wait || t - t0 > kYieldAfter;
        }
        if (long_wait) {
            if (gentle < 0) {
                gentle = cudaGetDeviceFlags(&flags) == cudaSuccess && (flags & cudaDeviceScheduleBlockingSync);
            }
            if (gentle) {
                struct timespec ts = { 0, 20000 };

                nanosleep(&ts, NULL);
            } else {
                sched_yield(); /* a long wait: leave the core to others */
            }
        } else if (!word) {
            int i;

            for (i = 0; i < 32; i++) {
                cpu_relax();
            }
        }
    }
}

int tlmpi_gpu_sync(void *stream, const tlmpi_wait_who_t *who, const char *what)
{
    return wait_loop(NULL, 0, query_stream, stream, who, what, 0);
}

int tlmpi_gpu_event_wait(void *event, const tlmpi_wait_who_t *who, const char *what)
{
    return wait_loop(NULL, 0, query_event, event, who, what, 0);
}

int tlmpi_gpu_stream_wait(tlmpi_gpu_ctx_t *ctx, const tlmpi_wait_who_t *who, const char *what)
{
    return tlmpi_gpu_stream_wait_grace(ctx, who, what, 0);
}

static int stream_wait(tlmpi_gpu_ctx_t *ctx, const tlmpi_wait_who_t *who, const char *what, long grace_s)
{
    cudaStream_t s = (cudaStream_t)ctx->stream;
    unsigned target;

    tlmpi_launcher_drain("a wait for a communicator's stream"); /* every launch queued before is made */
    if (!ctx->spin) {
        return wait_loop(NULL, 0, query_stream, s, who, what, grace_s);
    }
    target = ctx->done_seq + 1;
    if (tlmpi_cu.write_value32((CUstream)s, (CUdeviceptr)(uintptr_t)ctx->done_word_dev, target, 0) != CUDA_SUCCESS) {
        (void)cudaGetLastError();
        return wait_loop(NULL, 0, query_stream, s, who, what, grace_s);
    }
    ctx->done_seq = target;
    return wait_loop(ctx->done_word, target, query_stream, s, who, what, grace_s);
}

int tlmpi_gpu_stream_wait_grace(tlmpi_gpu_ctx_t *ctx, const tlmpi_wait_who_t *who, const char *what, long grace_s)
{
    int e = stream_wait(ctx, who, what, grace_s);

    if (TLMPI_UNLIKELY(ctx->order_on) && e == 0 && ctx->order_stream == ctx->stream) {
        ctx->order_stream = NULL; /* what was pending on the comm's stream has completed */
    }
    return e;
}

/* The marks' events: a stack of idle ones per device (events belong to the device they were made
 * on), so that a start neither creates an event nor allocates; one beyond the stack is destroyed. */
#define MARK_DEVS 64
#define MARK_IDLE 256
static pthread_mutex_t mark_lock = PTHREAD_MUTEX_INITIALIZER;
static void *mark_idle[MARK_DEVS][MARK_IDLE];
static int mark_nidle[MARK_DEVS];

static cudaEvent_t mark_event_take(int dev)
{
    cudaEvent_t e = NULL;
    int saved = -1;

    if (dev >= 0 && dev < MARK_DEVS) {
        pthread_mutex_lock(&mark_lock);
        if (mark_nidle[dev] > 0) {
            e = (cudaEvent_t)mark_idle[dev][--mark_nidle[dev]];
        }
        pthread_mutex_unlock(&mark_lock);
        if (e) {
            return e;
        }
    }
    if (tlmpi_gpu_enter_device(dev, &saved) != 0) {
        return NULL;
    }
    if (cudaEventCreateWithFlags(&e, cudaEventDisableTiming) != cudaSuccess) {
        (void)cudaGetLastError();
        e = NULL;
    }
    tlmpi_gpu_restore_device(saved);
    return e;
}

/* Marks holding an event (taken, not yet released): started calls whose device work may still be in
 * flight (tlmpi_gpu_alone). */
static int marks_held;
/* A stream-ordered or captured call has been made in this process (tlmpi_gpu_alone). */
static int streams_seen;

static cudaEvent_t mark_event_get(int dev)
{
    cudaEvent_t e = mark_event_take(dev);

    if (e) {
        __atomic_add_fetch(&marks_held, 1, __ATOMIC_RELAXED);
    }
    return e;
}

static void mark_event_put(int dev, cudaEvent_t e)
{
    int kept = 0;

    __atomic_sub_fetch(&marks_held, 1, __ATOMIC_RELAXED);
    if (dev >= 0 && dev < MARK_DEVS) {
        pthread_mutex_lock(&mark_lock);
        if (mark_nidle[dev] < MARK_IDLE) {
            mark_idle[dev][mark_nidle[dev]++] = e;
            kept = 1;
        }
        pthread_mutex_unlock(&mark_lock);
    }
    if (!kept) {
        cudaEventDestroy(e);
    }
}

void tlmpi_gpu_marks_finalize(void)
{
    int d;

    pthread_mutex_lock(&mark_lock);
    for (d = 0; d < MARK_DEVS; d++) {
        while (mark_nidle[d] > 0) {
            cudaEventDestroy((cudaEvent_t)mark_idle[d][--mark_nidle[d]]);
        }
    }
    pthread_mutex_unlock(&mark_lock);
    (void)cudaGetLastError();
}

void tlmpi_gpu_note_stream_ordered(void)
{
    if (!__atomic_load_n(&streams_seen, __ATOMIC_RELAXED)) {
        __atomic_store_n(&streams_seen, 1, __ATOMIC_RELAXED);
    }
}

int tlmpi_gpu_alone(void)
{
    return tlmpi_g.thread_level != MPI_THREAD_MULTIPLE && __atomic_load_n(&marks_held, __ATOMIC_RELAXED) == 0 &&
           !__atomic_load_n(&streams_seen, __ATOMIC_RELAXED);
}

int tlmpi_gpu_mark(tlmpi_gpu_ctx_t *ctx, tlmpi_gpu_mark_t *m)
{
    cudaError_t e;

    /* always an event: after a kernel launch under MPS, recording one costs the host 0.3 us, a
     * GPU-written word (the blocking waits' spin) 0.8 us (H200, 2026-12-02: bench/probes/cost.cu) */
    m->ctx = ctx;
    m->event = mark_event_get(ctx->dev);
    if (!m->event) {
        return (int)cudaErrorMemoryAllocation;
    }
    e = cudaEventRecord((cudaEvent_t)m->event, (cudaStream_t)ctx->stream);
    if (e == cudaSuccess && TLMPI_UNLIKELY(ctx->order_on)) {
        /* the started call's work is pending on the comm's stream: later calls on other streams wait */
        e = (cudaError_t)tlmpi_gpu_order_after(ctx, ctx->stream, NULL);
    }
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        mark_event_put(ctx->dev, (cudaEvent_t)m->event);
        m->event = NULL;
        return (int)e;
    }
    return 0;
}

int tlmpi_gpu_mark_deferred(tlmpi_gpu_ctx_t *ctx, tlmpi_gpu_mark_t *m)
{
    m->ctx = ctx;
    m->deferred = 1;
    m->lstate = 0;
    m->word = NULL;
    m->target = 0;
    m->posted_at = now_s();
    m->event = mark_event_get(ctx->dev);
    return m->event ? 0 : (int)cudaErrorMemoryAllocation;
}

int tlmpi_gpu_mark_word_offer(const tlmpi_gpu_mark_t *m, tlmpi_gpu_done_t *d)
{
    const tlmpi_gpu_ctx_t *ctx = m->ctx;

    if (!ctx->launch_word) {
        return 0;
    }
    d->word_dev = ctx->launch_word_dev;
    d->value = ctx->launch_seq + 1;
    d->taken = 0;
    return 1;
}

void tlmpi_gpu_mark_word(tlmpi_gpu_mark_t *m, const tlmpi_gpu_done_t *d)
{
    tlmpi_gpu_ctx_t *ctx = m->ctx;
    unsigned target = ctx->launch_seq + 1;

    if (!ctx->launch_word) {
        return;
    }
    if (d && d->taken && d->value == target) {
        __atomic_add_fetch(&tlmpi_launcher_kwords_, 1, __ATOMIC_RELAXED); /* the kernel writes it */
    } else if (!ctx->launch_memop ||
               tlmpi_cu.write_value32((CUstream)ctx->stream, (CUdeviceptr)(uintptr_t)ctx->launch_word_dev, target, 0) !=
                   CUDA_SUCCESS) {
        (void)cudaGetLastError();
        return; /* the event alone */
    }
    ctx->launch_seq = target;
    __atomic_add_fetch(&tlmpi_launcher_words_, 1, __ATOMIC_RELAXED);
    m->target = target;
    m->word = ctx->launch_word; /* published with the job's state word (release) */
}

int tlmpi_gpu_mark_test(tlmpi_gpu_mark_t *m)
{
    cudaError_t e;

    if (m->deferred) {
        int s = __atomic_load_n(&m->lstate, __ATOMIC_ACQUIRE);

        if (s == 0 && now_s() - m->posted_at > TLMPI_MARK_HELP_S) {
            /* still queued: the launch thread is not running (MPI_Test makes progress: launcher.h) */
            s = tlmpi_launcher_help(&m->lstate);
        }
        if (s <= 0) {
            return s; /* 0: not launched yet; < 0: the launch failed (negated) */
        }
        if (m->word && word_reached(m->word, m->target)) {
            __atomic_thread_fence(__ATOMIC_ACQUIRE);
            return 1; /* the GPU wrote the word after the work: no CUDA call */
        }
    }
    e = cudaEventQuery((cudaEvent_t)m->event);

    if (e == cudaSuccess) {
        return 1;
    }
    if (e == cudaErrorNotReady) {
        (void)cudaGetLastError();
        return 0;
    }
    return -(int)e;
}

int tlmpi_gpu_mark_wait(tlmpi_gpu_mark_t *m, const tlmpi_wait_who_t *who, const char *what, long grace_s)
{
    if (m->deferred) {
        int s = tlmpi_launcher_state_wait(&m->lstate, what);

        if (s < 0) {
            return -s;
        }
        if (m->word) {
            /* spins on the word; the event is queried every few microseconds, so errors are seen */
            return wait_loop(m->word, m->target, query_event, m->event, who, what, grace_s);
        }
    }
    return wait_loop(NULL, 0, query_event, m->event, who, what, grace_s);
}

void tlmpi_gpu_mark_release(tlmpi_gpu_mark_t *m)
{
    if (m->deferred) {
        (void)tlmpi_launcher_state_wait(&m->lstate, "a launch whose mark is released"); /* the job writes no more */
        m->deferred = 0;
    }
    if (m->event) {
        mark_event_put(m->ctx->dev, (cudaEvent_t)m->event);
        m->event = NULL;
    }
}

int tlmpi_gpu_ctx_begin(tlmpi_gpu_ctx_t *ctx)
{
    tlmpi_launcher_drain("a call's device work on the communicator's stream"); /* call order on the stream */
    return tlmpi_gpu_ctx_begin_deferred(ctx);
}

int tlmpi_gpu_ctx_begin_deferred(tlmpi_gpu_ctx_t *ctx)
{
    cudaError_t e = cudaSuccess;

    if (ctx->nonblocking) {
        e = cudaEventRecord((cudaEvent_t)ctx->legacy_ev, cudaStreamLegacy);
        if (e == cudaSuccess) {
            e = cudaStreamWaitEvent((cudaStream_t)ctx->stream, (cudaEvent_t)ctx->legacy_ev, 0);
        }
    }
    if (TLMPI_UNLIKELY(ctx->order_on) && e == cudaSuccess) {
        e = (cudaError_t)tlmpi_gpu_order_before(ctx, ctx->stream, NULL);
    }
    return (int)e;
}

/* A pinned, mapped host word (0) that the GPU can write on ctx->stream with the driver's stream memory
 * operations, with the context's device current: checked once with a real write (self_test names the
 * wait). NULL with *w_p / *dw_p set, or why not (nothing left allocated). */
static const char *mapped_word_create(tlmpi_gpu_ctx_t *ctx, const char *self_test, void **w_p, void **dw_p)
{
    void *w = NULL, *dw = NULL;
    const char *why = NULL;
    tlmpi_wait_who_t who = { MPI_COMM_NULL, 0, TLMPI_COLL_ALLREDUCE, "setup" };

    if (!tlmpi_cu.write_value32) {
        why = "no cuStreamWriteValue32";
    } else if (cudaHostAlloc(&w, 64, cudaHostAllocMapped | cudaHostAllocPortable) != cudaSuccess) {
        why = "cannot allocate a mapped host word";
        w = NULL;
    } else if (cudaHostGetDevicePointer(&dw, w, 0) != cudaSuccess) {
        why = "no device address for the mapped host word";
    } else {
        *(volatile unsigned *)w = 0;
        if (tlmpi_cu.write_value32((CUstream)ctx->stream, (CUdeviceptr)(uintptr_t)dw, 1, 0) != CUDA_SUCCESS ||
            tlmpi_gpu_sync(ctx->stream, &who, self_test) != cudaSuccess || *(volatile unsigned *)w != 1) {
            why = "stream memory operations are not usable";
        }
    }
    (void)cudaGetLastError();
    if (why) {
        if (w) {
            cudaFreeHost(w);
        }
        return why;
    }
    *w_p = w;
    *dw_p = dw;
    return NULL;
}

/* Decide how this context's stream is waited for (TLMPI_WAIT), with its device current. Spin needs
 * the driver's stream memory operations on a mapped host word (mapped_word_create). */
static void ctx_setup_spin(tlmpi_gpu_ctx_t *ctx, int gpu_sharers)
{
    long mode = TLMPI_ENV_I(WAIT); /* 0 auto, 1 sync, 2 spin */
    unsigned flags = 0;
    void *w = NULL, *dw = NULL;
    const char *why = NULL;

    ctx->spin = 0;
    ctx->done_word = NULL;
    /* auto polls the stream where 3 or more ranks share the GPU: there (under MPS) the extra stream
     * operation of the spin word cost 8-byte node collectives more than polling (H200,
     * bench/node_bench, 2026-12-01, over the barrier floor: 4 ranks spin +4.6..+5.3 us, poll
     * +2.3..+3.0; 8 ranks spin +7.4..+9.5, poll +3.2..+5.1), while with 2 ranks spinning was about
     * 1 us faster (+1.0..+1.3 against +2.1..+2.2) */
    if (mode == 1 || (mode == 0 && gpu_sharers >= 3)) {
        return;
    }
    if (mode == 0 && cudaGetDeviceFlags(&flags) == cudaSuccess && (flags & cudaDeviceScheduleBlockingSync)) {
        why = "the device is set to blocking sync";
        (void)cudaGetLastError();
    } else {
        why = mapped_word_create(ctx, "the spin-wait self-test", &w, &dw);
    }
    if (why) {
        if (mode == 2) {
            tlmpi_warn_once(CUDA, "TLMPI_WAIT=spin: not possible on device %d (%s); polling the stream", ctx->dev, why);
        } else {
            tlmpi_debug(CUDA, "device %d: waiting by polling the stream (%s)", ctx->dev, why);
        }
        return;
    }
    ctx->done_word = w;
    ctx->done_word_dev = dw;
    ctx->done_seq = 1;
    ctx->spin = 1;
}

/* The launch thread's completion word (TLMPI_LAUNCH_WORD), with the context's device current: a mapped
 * host word the GPU writes after the starts the thread launches, checked once with a real write. Not
 * tied to TLMPI_WAIT: the write costs the launch thread, not the caller. */
static void ctx_setup_launch_word(tlmpi_gpu_ctx_t *ctx, int gpu_sharers)
{
    long mode = TLMPI_ENV_I(LAUNCH_WORD); /* 0 auto, 1 on, 2 off */
    void *w = NULL, *dw = NULL;
    const char *why;

    ctx->launch_word = NULL;
    ctx->launch_memop = 0;
    if (!TLMPI_ENV_I(LAUNCH_THREAD) || mode == 2) {
        return;
    }
    /* The node kernels write the word themselves (their last CTA: cuda/node.cuh node_exit), at no cost
     * the start's completion notices. Other starts get the stream write, but under auto not where 3 or
     * more ranks share the GPU: there (under MPS) that extra stream operation delayed the start's
     * completion by more than the word saved (H200, bench/node_bench -S form, 2026-12-04: 1 MiB pure
     * I-call + wait 31.3 -> 36.3 us at 4 ranks, 45.4 -> 52.0 at 8; 2 ranks 26.9 -> 24.3). */
    ctx->launch_memop = mode == 1 || gpu_sharers < 3;
    if ((why = mapped_word_create(ctx, "the launch word's self-test", &w, &dw)) != NULL) {
        tlmpi_debug(CUDA, "device %d: the launch thread's starts complete through their events alone (%s)", ctx->dev,
                    why);
        return;
    }
    ctx->launch_word = w;
    ctx->launch_word_dev = dw;
    ctx->launch_seq = 1;
}

static void ctx_free(tlmpi_gpu_ctx_t *ctx)
{
    int i;

    for (i = 0; i < TLMPI_GPU_MAX_EVENTS; i++) {
        if (ctx->events[i]) {
            cudaEventDestroy((cudaEvent_t)ctx->events[i]);
        }
    }
    if (ctx->legacy_ev) {
        cudaEventDestroy((cudaEvent_t)ctx->legacy_ev);
    }
    if (ctx->stream) {
        cudaStreamDestroy((cudaStream_t)ctx->stream);
    }
    if (ctx->stream2) {
        cudaStreamDestroy((cudaStream_t)ctx->stream2);
    }
    if (ctx->done_word) {
        cudaFreeHost((void *)ctx->done_word);
    }
    if (ctx->launch_word) {
        cudaFreeHost((void *)ctx->launch_word);
    }
    tlmpi_gpu_order_release(ctx);
    (void)cudaGetLastError();
    free(ctx);
}

tlmpi_gpu_ctx_t *tlmpi_gpu_ctx_create(int dev, int gpu_sharers, char *why, size_t len)
{
    tlmpi_gpu_ctx_t *ctx;
    unsigned flags;
    int saved = -1, i;

    if (tlmpi_fault_hit(STREAM_CREATE)) {
        snprintf(why, len, "stream creation failed (injected: TLMPI_FAULT=stream_create)");
        return NULL;
    }
    if (dev < 0 || !(ctx = calloc(1, sizeof(*ctx)))) {
        snprintf(why, len, dev < 0 ? "no device" : "out of memory");
        return NULL;
    }
    ctx->dev = dev;
    if (tlmpi_gpu_enter_device(dev, &saved) != 0) {
        snprintf(why, len, "cannot make device %d current", dev);
        free(ctx);
        return NULL;
    }
    /* every kernel of tlmpi loaded before its first launch on this device (cuda/preload.cu): a lazy load
     * at a later first launch could wait for a kernel of this process that waits for a peer */
    if (tlmpi_cuda_preload(dev) != 0) {
        (void)cudaGetLastError();
    }
    ctx->nonblocking = tlmpi_g.thread_level == MPI_THREAD_MULTIPLE;
    flags = ctx->nonblocking ? cudaStreamNonBlocking : cudaStreamDefault;
    TLMPI_CUDA_CHECK_WHY(cudaStreamCreateWithFlags((cudaStream_t *)&ctx->stream, flags), why, len, err);
    TLMPI_CUDA_CHECK_WHY(cudaStreamCreateWithFlags((cudaStream_t *)&ctx->stream2, flags), why, len, err);
    for (i = 0; i < TLMPI_GPU_MAX_EVENTS; i++) {
        TLMPI_CUDA_CHECK_WHY(cudaEventCreateWithFlags((cudaEvent_t *)&ctx->events[i], cudaEventDisableTiming),
                             why, len, err);
    }
    if (ctx->nonblocking) {
        TLMPI_CUDA_CHECK_WHY(cudaEventCreateWithFlags((cudaEvent_t *)&ctx->legacy_ev, cudaEventDisableTiming),
                             why, len, err);
    }
    ctx_setup_spin(ctx, gpu_sharers);
    ctx_setup_launch_word(ctx, gpu_sharers);
    /* the order event of stream-ordered calls (order.c), made now so that a comm prepared by any call
     * outside capture needs nothing created during one; without it such calls are refused */
    if (tlmpi_gpu_order_create(ctx) != 0) {
        (void)cudaGetLastError();
    }
    tlmpi_gpu_restore_device(saved);
    return ctx;
err:
    ctx_free(ctx);
    tlmpi_gpu_restore_device(saved);
    return NULL;
}

void tlmpi_gpu_ctx_destroy(tlmpi_gpu_ctx_t *ctx)
{
    tlmpi_wait_who_t who = { MPI_COMM_NULL, 0, TLMPI_COLL_ALLREDUCE, "teardown" };
    int saved = -1;

    if (!ctx) {
        return;
    }
    tlmpi_launcher_drain("a communicator's teardown"); /* no queued launch still names its stream */
    if (tlmpi_gpu_enter_device(ctx->dev, &saved) == 0) {
        tlmpi_gpu_sync(ctx->stream, &who, "the communicator's stream before destroying it");
        tlmpi_gpu_sync(ctx->stream2, &who, "the communicator's second stream before destroying it");
    }
    ctx_free(ctx);
    tlmpi_gpu_restore_device(saved);
}

#else /* !HAVE_CUDA */
void tlmpi_gpu_note_stream_ordered(void)
{
}
int tlmpi_gpu_alone(void)
{
    return 0;
}

tlmpi_gpu_ctx_t *tlmpi_gpu_ctx_create(int dev, int gpu_sharers, char *why, size_t len)
{
    (void)dev;
    (void)gpu_sharers;
    snprintf(why, len, "built without CUDA");
    return NULL;
}
void tlmpi_gpu_ctx_destroy(tlmpi_gpu_ctx_t *ctx)
{
    (void)ctx;
}
int tlmpi_gpu_ctx_begin(tlmpi_gpu_ctx_t *ctx)
{
    (void)ctx;
    return 1;
}
int tlmpi_gpu_ctx_begin_deferred(tlmpi_gpu_ctx_t *ctx)
{
    (void)ctx;
    return 1;
}
int tlmpi_gpu_mark_deferred(tlmpi_gpu_ctx_t *ctx, tlmpi_gpu_mark_t *m)
{
    (void)ctx, (void)m;
    return 1;
}
int tlmpi_gpu_stream_wait(tlmpi_gpu_ctx_t *ctx, const tlmpi_wait_who_t *who, const char *what)
{
    (void)ctx, (void)who, (void)what;
    return 1;
}
int tlmpi_gpu_stream_wait_grace(tlmpi_gpu_ctx_t *ctx, const tlmpi_wait_who_t *who, const char *what, long grace_s)
{
    (void)ctx, (void)who, (void)what, (void)grace_s;
    return 1;
}
int tlmpi_gpu_sync(void *stream, const tlmpi_wait_who_t *who, const char *what)
{
    (void)stream, (void)who, (void)what;
    return 1;
}
int tlmpi_gpu_event_wait(void *event, const tlmpi_wait_who_t *who, const char *what)
{
    (void)event, (void)who, (void)what;
    return 1;
}
int tlmpi_gpu_mark(tlmpi_gpu_ctx_t *ctx, tlmpi_gpu_mark_t *m)
{
    (void)ctx, (void)m;
    return 1;
}
int tlmpi_gpu_mark_test(tlmpi_gpu_mark_t *m)
{
    (void)m;
    return -1;
}
int tlmpi_gpu_mark_wait(tlmpi_gpu_mark_t *m, const tlmpi_wait_who_t *who, const char *what, long grace_s)
{
    (void)m, (void)who, (void)what, (void)grace_s;
    return 1;
}
void tlmpi_gpu_mark_release(tlmpi_gpu_mark_t *m)
{
    (void)m;
}
void tlmpi_gpu_marks_finalize(void)
{
}
#endif
