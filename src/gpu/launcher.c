/*
 * launcher: the launch thread (see launcher.h). One FIFO ring of jobs; producers reserve a slot and
 * publish it under the post lock (a start holds it for a copy of a few hundred bytes), the thread
 * consumes in order with no lock. Sleep and wake: the thread sets `sleeping` and re-checks the ring
 * under the sleep lock before it waits on the condition; a producer that publishes and then sees
 * `sleeping` (both sequentially consistent) signals under the same lock, so no wake is lost; a kick
 * (a wake without a job) bumps a counter the thread re-checks under that lock.
 *
 * The consumer role: whoever runs jobs holds it (an exchange; one store releases it), so jobs run one at
 * a time and in order whoever runs them. The thread takes it whenever jobs are queued; a thread that
 * waits for a job (a state wait, a drain, room for a post) takes it itself after ~10 us and runs the jobs
 * up to the one it waits for. A launch thread that is not running when its job comes (16 cores for 8
 * ranks' busy compute and launch threads: it waits out a scheduler time slice) then delays that start
 * until its MPI_Wait, not by milliseconds.
 */
#include "config.h"
#include "launcher.h"

#include "env.h"
#include "log.h"
#include "stream.h"

#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <time.h>

typedef struct {
    tlmpi_launch_fn_t fn;
    int *state;
    size_t bytes;
    _Alignas(16) unsigned char arg[TLMPI_LAUNCH_ARG_MAX];
} job_t;

unsigned long tlmpi_launcher_posted_;
unsigned long tlmpi_launcher_done_;

static job_t ring[TLMPI_LAUNCH_QUEUE];
static pthread_mutex_t post_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t sleep_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t sleep_cond = PTHREAD_COND_INITIALIZER;
static pthread_once_t start_once = PTHREAD_ONCE_INIT;
static pthread_t thread;
static int started;      /* the thread runs (1), could not be started (-1), not yet (0) */
static int sleeping;     /* the thread waits on sleep_cond */
static int stopping;     /* finalize: the thread leaves when the ring is empty */
static unsigned kicks;   /* wakes without a job (tlmpi_launcher_kick), under sleep_lock */
static int consumer;     /* the consumer role (1: a thread runs jobs) */
static unsigned long head; /* the next job to run: the role holder's */
static unsigned long taken; /* 1 + the job being run or last run (written before its run) */
static int t_hold;       /* tests: the thread leaves the jobs to the waiters */
static unsigned long n_inline, n_sleeps, n_helped, n_handoff;
static long t_spin_us = -1, t_timeout_s = -1, t_handoff_ns = -1;
static int t_enabled = -1;

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#endif
}

static double now_s(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static long spin_us(void)
{
    return t_spin_us >= 0 ? t_spin_us : (long)TLMPI_ENV_I(LAUNCH_SPIN);
}

static long handoff_ns(void)
{
    return t_handoff_ns >= 0 ? t_handoff_ns : (long)TLMPI_ENV_I(LAUNCH_HANDOFF);
}

static long timeout_s(void)
{
    return t_timeout_s >= 0 ? t_timeout_s : (long)TLMPI_ENV_I(TIMEOUT);
}

static int enabled(void)
{
    return t_enabled >= 0 ? t_enabled : (int)TLMPI_ENV_I(LAUNCH_THREAD);
}

static int take_role(void)
{
    return !__atomic_load_n(&consumer, __ATOMIC_RELAXED) && !__atomic_exchange_n(&consumer, 1, __ATOMIC_ACQUIRE);
}

static void drop_role(void)
{
    __atomic_store_n(&consumer, 0, __ATOMIC_RELEASE);
}

/* With the role: run the queued jobs in order, until cond(arg) holds (NULL: until none is queued).
 * Returns how many ran. */
static unsigned long run_jobs(int (*cond)(const void *), const void *arg)
{
    unsigned long n = 0;

    while (head != __atomic_load_n(&tlmpi_launcher_posted_, __ATOMIC_ACQUIRE) && !(cond && cond(arg))) {
        job_t *j = &ring[head % TLMPI_LAUNCH_QUEUE];
        int e;

        __atomic_store_n(&taken, head + 1, __ATOMIC_RELEASE);
        e = j->fn(j->arg);

        __atomic_store_n(j->state, e == 0 ? 1 : (e > 0 ? -e : e), __ATOMIC_RELEASE);
        head++;
        n++;
        __atomic_store_n(&tlmpi_launcher_done_, head, __ATOMIC_RELEASE);
    }
    return n;
}

/* When no one runs jobs now, run them here until cond(arg) holds or none is queued, and add them to
 * *count (a waiter's turn: n_helped; a start's handoff: n_handoff). Returns how many ran. */
static unsigned long run_here(int (*cond)(const void *), const void *arg, unsigned long *count)
{
    unsigned long n;

    if (!take_role()) {
        return 0;
    }
    n = run_jobs(cond, arg);
    drop_role();
    if (n) {
        __atomic_fetch_add(count, n, __ATOMIC_RELAXED);
    }
    return n;
}

static int drained(const void *target)
{
    return (long)(__atomic_load_n(&tlmpi_launcher_done_, __ATOMIC_ACQUIRE) - *(const unsigned long *)target) >= 0;
}

static unsigned long help(int (*cond)(const void *), const void *arg)
{
    return run_here(cond, arg, &n_helped);
}

static int idle(void)
{
    return __atomic_load_n(&tlmpi_launcher_done_, __ATOMIC_ACQUIRE) ==
           __atomic_load_n(&tlmpi_launcher_posted_, __ATOMIC_ACQUIRE);
}

static void *launcher_main(void *unused)
{
    (void)unused;
    for (;;) {
        double idle_since = now_s();
        unsigned spins = 0;

        /* spin for work, for the spin window */
        while (idle()) {
            if (__atomic_load_n(&stopping, __ATOMIC_ACQUIRE)) {
                return NULL;
            }
            cpu_relax();
            if ((++spins & 255u) == 0 && now_s() - idle_since > 200e-6) {
                sched_yield(); /* past the first 200 us: runnable threads of this core go first */
            }
            if ((spins & 255u) == 0 && now_s() - idle_since > 1e-6 * (double)spin_us()) {
                unsigned k0;

                pthread_mutex_lock(&sleep_lock);
                k0 = kicks;
                __atomic_store_n(&sleeping, 1, __ATOMIC_SEQ_CST);
                while (__atomic_load_n(&tlmpi_launcher_done_, __ATOMIC_SEQ_CST) ==
                           __atomic_load_n(&tlmpi_launcher_posted_, __ATOMIC_SEQ_CST) &&
                       !__atomic_load_n(&stopping, __ATOMIC_SEQ_CST) && kicks == k0) {
                    n_sleeps++;
                    pthread_cond_wait(&sleep_cond, &sleep_lock);
                }
                __atomic_store_n(&sleeping, 0, __ATOMIC_SEQ_CST);
                pthread_mutex_unlock(&sleep_lock);
                idle_since = now_s();
            }
        }
        if (!__atomic_load_n(&t_hold, __ATOMIC_RELAXED) && take_role()) {
            run_jobs(NULL, NULL);
            drop_role();
        } else {
            cpu_relax(); /* a waiter runs them */
        }
    }
}

static void launcher_start(void)
{
    pthread_attr_t a;

    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_JOINABLE);
    if (pthread_create(&thread, &a, launcher_main, NULL) == 0) {
        __atomic_store_n(&started, 1, __ATOMIC_RELEASE);
        tlmpi_debug(CUDA, "launch thread started (spin window %ld us)", spin_us());
    } else {
        __atomic_store_n(&started, -1, __ATOMIC_RELEASE);
        tlmpi_warn(CUDA, "the launch thread could not be started: non-blocking starts launch on the calling thread");
    }
    pthread_attr_destroy(&a);
}

int tlmpi_launcher_ready(void)
{
    int s = __atomic_load_n(&started, __ATOMIC_ACQUIRE);

    if (TLMPI_UNLIKELY(s == 0)) {
        if (!enabled() || __atomic_load_n(&stopping, __ATOMIC_ACQUIRE)) {
            return 0;
        }
        pthread_once(&start_once, launcher_start);
        s = __atomic_load_n(&started, __ATOMIC_ACQUIRE);
    }
    if (s != 1 || __atomic_load_n(&stopping, __ATOMIC_RELAXED)) {
        return 0;
    }
    if (__atomic_load_n(&sleeping, __ATOMIC_RELAXED)) {
        __atomic_fetch_add(&n_inline, 1, __ATOMIC_RELAXED);
        return 0;
    }
    return 1;
}

/* Timeouts of the two waits: one line, then the job ends (as every tlmpi wait). */
static __attribute__((noreturn, noinline)) void launcher_timed_out(const char *what, double waited)
{
    tlmpi_error(CUDA, "TLMPI_TIMEOUT: waiting for the launch thread (%s) gave up after %.0f s (TLMPI_TIMEOUT): "
                "%lu jobs posted, %lu run; calling MPI_Abort", what, waited,
                __atomic_load_n(&tlmpi_launcher_posted_, __ATOMIC_RELAXED),
                __atomic_load_n(&tlmpi_launcher_done_, __ATOMIC_RELAXED));
    tlmpi_gpu_abort(MPI_COMM_NULL);
}

/* Spin until cond(arg) holds, bounded by TLMPI_TIMEOUT; past ~10 us run the queued jobs here when no
 * one else does (the consumer role), then yield. */
static void bounded_wait(int (*cond)(const void *), const void *arg, const char *what)
{
    unsigned spins = 0;
    double t0 = 0;
    long limit = timeout_s();

    while (!cond(arg)) {
        if (++spins < 256) {
            cpu_relax();
            continue;
        }
        if (help(cond, arg)) {
            continue;
        }
        if (spins < 1024) {
            cpu_relax();
            continue;
        }
        if (t0 == 0) {
            t0 = now_s();
        } else if (limit > 0 && (spins & 1023u) == 0 && now_s() - t0 > (double)limit) {
            launcher_timed_out(what, now_s() - t0);
        }
        sched_yield();
    }
}

static int room(const void *unused)
{
    (void)unused;
    return __atomic_load_n(&tlmpi_launcher_posted_, __ATOMIC_RELAXED) -
           __atomic_load_n(&tlmpi_launcher_done_, __ATOMIC_ACQUIRE) < TLMPI_LAUNCH_QUEUE;
}

/* The handoff: job t was posted to an empty queue, so an awake thread spinning for work takes it within a
 * few hundred ns. When it has not within TLMPI_LAUNCH_HANDOFF ns, it is not on a core (its core went to
 * another thread: 8 ranks' compute, waits and launch threads on 16 cores), and would make this launch a
 * scheduler slice late, after the application's compute; run it here instead, as a sleeping thread's
 * start does. */
static void handoff(unsigned long t)
{
    double limit = 1e-9 * (double)handoff_ns(), t0;
    unsigned long after = t + 1; /* done: job t has run */
    unsigned spins = 0;

    if (limit <= 0) {
        return;
    }
    t0 = now_s();
    while ((long)(__atomic_load_n(&taken, __ATOMIC_ACQUIRE) - t) <= 0) {
        cpu_relax();
        if ((++spins & 15u) == 0 && now_s() - t0 > limit) {
            (void)run_here(drained, &after, &n_handoff); /* unless someone runs jobs now */
            return;
        }
    }
}

int tlmpi_launcher_post(tlmpi_launch_fn_t fn, const void *arg, size_t bytes, int *state)
{
    unsigned long t;
    int empty;
    job_t *j;

    if (__atomic_load_n(&started, __ATOMIC_ACQUIRE) != 1 || bytes > TLMPI_LAUNCH_ARG_MAX ||
        __atomic_load_n(&stopping, __ATOMIC_ACQUIRE)) {
        return -1;
    }
    *state = 0;
    pthread_mutex_lock(&post_lock);
    if (!room(NULL)) {
        bounded_wait(room, NULL, "room in its queue");
    }
    t = tlmpi_launcher_posted_;
    empty = __atomic_load_n(&tlmpi_launcher_done_, __ATOMIC_ACQUIRE) == t && !__atomic_load_n(&consumer, __ATOMIC_ACQUIRE);
    j = &ring[t % TLMPI_LAUNCH_QUEUE];
    j->fn = fn;
    j->state = state;
    j->bytes = bytes;
    memcpy(j->arg, arg, bytes);
    __atomic_store_n(&tlmpi_launcher_posted_, t + 1, __ATOMIC_SEQ_CST);
    pthread_mutex_unlock(&post_lock);
    if (TLMPI_UNLIKELY(__atomic_load_n(&sleeping, __ATOMIC_SEQ_CST))) {
        tlmpi_launcher_kick();
    } else if (empty) {
        handoff(t);
    }
    return 0;
}

int tlmpi_launcher_is_thread(void)
{
    return __atomic_load_n(&started, __ATOMIC_ACQUIRE) == 1 && pthread_equal(pthread_self(), thread);
}

void tlmpi_launcher_kick(void)
{
    if (__atomic_load_n(&sleeping, __ATOMIC_SEQ_CST)) {
        pthread_mutex_lock(&sleep_lock);
        kicks++; /* the thread re-checks this under the lock */
        pthread_cond_signal(&sleep_cond);
        pthread_mutex_unlock(&sleep_lock);
    }
}

void tlmpi_launcher_drain_slow(const char *why)
{
    unsigned long target = __atomic_load_n(&tlmpi_launcher_posted_, __ATOMIC_ACQUIRE);

    bounded_wait(drained, &target, why ? why : "its queue to drain");
}

static int state_set(const void *state)
{
    return __atomic_load_n((const int *)state, __ATOMIC_ACQUIRE) != 0;
}

int tlmpi_launcher_state_wait(const int *state, const char *what)
{
    bounded_wait(state_set, state, what ? what : "a launch");
    return __atomic_load_n(state, __ATOMIC_ACQUIRE);
}

int tlmpi_launcher_help(const int *state)
{
    if (!state_set(state)) {
        (void)help(state_set, state);
    }
    return __atomic_load_n(state, __ATOMIC_ACQUIRE);
}

void tlmpi_launcher_finalize(void)
{
    if (__atomic_load_n(&started, __ATOMIC_ACQUIRE) != 1) {
        __atomic_store_n(&stopping, 1, __ATOMIC_RELEASE);
        return;
    }
    tlmpi_launcher_drain("MPI_Finalize");
    pthread_mutex_lock(&sleep_lock);
    __atomic_store_n(&stopping, 1, __ATOMIC_SEQ_CST);
    pthread_cond_signal(&sleep_cond);
    pthread_mutex_unlock(&sleep_lock);
    pthread_join(thread, NULL);
    __atomic_store_n(&started, 0, __ATOMIC_RELEASE);
}

void tlmpi_launcher_counts(unsigned long *posted, unsigned long *inline_starts, unsigned long *sleeps,
                          unsigned long *helped, unsigned long *handed)
{
    if (handed) *handed = __atomic_load_n(&n_handoff, __ATOMIC_RELAXED);
    if (posted) *posted = __atomic_load_n(&tlmpi_launcher_posted_, __ATOMIC_RELAXED);
    if (inline_starts) *inline_starts = __atomic_load_n(&n_inline, __ATOMIC_RELAXED);
    if (sleeps) *sleeps = n_sleeps;
    if (helped) *helped = __atomic_load_n(&n_helped, __ATOMIC_RELAXED);
}

unsigned long tlmpi_launcher_words_, tlmpi_launcher_kwords_;

TLMPI_EXPORT tlmpi_status_t tlmpi_get_launch_word_stats(unsigned long long *words, unsigned long long *kernel_words)
{
    if (!words) {
        return TLMPI_ERR_INVALID_ARG;
    }
    *words = __atomic_load_n(&tlmpi_launcher_words_, __ATOMIC_RELAXED);
    if (kernel_words) {
        *kernel_words = __atomic_load_n(&tlmpi_launcher_kwords_, __ATOMIC_RELAXED);
    }
    return TLMPI_OK;
}

TLMPI_EXPORT tlmpi_status_t tlmpi_get_launch_stats(unsigned long long *thread_launches,
                                                  unsigned long long *inline_launches)
{
    if (!thread_launches || !inline_launches) {
        return TLMPI_ERR_INVALID_ARG;
    }
    *thread_launches = __atomic_load_n(&tlmpi_launcher_posted_, __ATOMIC_RELAXED);
    *inline_launches = __atomic_load_n(&n_inline, __ATOMIC_RELAXED);
    return TLMPI_OK;
}

void tlmpi_launcher_test_hold(int hold)
{
    __atomic_store_n(&t_hold, hold, __ATOMIC_RELAXED);
}

void tlmpi_launcher_test_handoff(long ns)
{
    t_handoff_ns = ns >= 0 ? ns : -1;
}

void tlmpi_launcher_test_config(long spin, long timeout, int on)
{
    t_spin_us = spin > 0 ? spin : -1;
    t_timeout_s = timeout > 0 ? timeout : -1;
    t_enabled = on;
}
