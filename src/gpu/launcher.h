/*
 * launcher: the launch thread. A non-blocking or persistent start on a tier of tlmpi's own kernels
 * returns once its kernel launch is queued for this process-wide thread, which makes the launch (a
 * kernel launch costs the host 3.7 us, 4.9 us under MPS: H200, bench/probes/cost.cu) while the
 * application computes. What the queue keeps:
 *   - order: jobs run one at a time in the order they were posted (all producers: one FIFO), and a
 *     thread that puts device work of its own on a communicator's stream first waits until every job
 *     posted before has run (tlmpi_launcher_drain: in tlmpi_gpu_ctx_begin, the order events and the
 *     stream waits), so the stream sees the calls in call order, as the pools and epochs assume;
 *   - the result: each job writes its outcome into its state word (release): 1 done, a negated error
 *     code when its run failed; the request tests that word before its event (stream.c: marks);
 *   - progress without the thread: a thread that waits for a job (MPI_Wait on a start, a drain, a post
 *     that needs room) runs the queued jobs itself, in order, once it has waited ~10 us and the thread
 *     is not running one (launcher.c: the consumer role), so a launch thread that is not scheduled
 *     delays a start only until its wait;
 *   - the handoff: a start posted to an empty queue waits up to TLMPI_LAUNCH_HANDOFF ns (2 us) for the
 *     awake thread to take its job (a spinning thread takes it in a few hundred ns) and otherwise runs
 *     it itself: the thread is then off its core (more busy threads than cores: 8 ranks' compute, waits
 *     and launch threads on 16 cores), and a start it launched a scheduler slice later would lose the
 *     whole overlap with the application's compute;
 *   - idleness: after its last job the thread spins TLMPI_LAUNCH_SPIN us (yielding the core to any
 *     runnable thread after the first 200 us), then sleeps. A start that
 *     finds it asleep launches on its own thread, as without the launcher (the queue is empty then),
 *     and wakes it for the next ones: waking a thread costs the host more than a launch.
 * Bounded like every wait: a drain or a state wait longer than TLMPI_TIMEOUT prints who waited for
 * what and ends the job. The mechanics are CUDA-free (tests/unit/check_launcher.c); the jobs' runs
 * (tier/kernel_call.c) make the launches.
 */
#ifndef TLMPI_LAUNCHER_H
#define TLMPI_LAUNCHER_H

#include "compiler.h"
#include <stddef.h>

#define TLMPI_LAUNCH_ARG_MAX 512 /* bytes of a job's argument, copied into the queue */
#define TLMPI_LAUNCH_QUEUE 256   /* jobs queued at once (a post beyond waits for room) */

/* A job's run: 0 done, else an error code (a cudaError_t); it runs on the launch thread, or on a thread
 * that waits for it (leaving that thread's current device as it found it). */
typedef int (*tlmpi_launch_fn_t)(void *arg);

extern unsigned long tlmpi_launcher_posted_; /* jobs posted (written under the post lock) */
extern unsigned long tlmpi_launcher_words_;  /* starts that complete through the launch word
                                                (gpu/stream.c, TLMPI_LAUNCH_WORD) */
extern unsigned long tlmpi_launcher_kwords_; /* of those, words their own kernel writes */
extern unsigned long tlmpi_launcher_done_;   /* jobs run (written by whoever runs them: the thread or a
                                                waiter, one at a time; release) */

/* 1 when starts may post: TLMPI_LAUNCH_THREAD, and the thread runs (started here at the first ask)
 * and is awake; 0: launch on the calling thread (after tlmpi_launcher_kick). */
int tlmpi_launcher_ready(void);
/* Post fn(arg) with bytes of arg copied; *state is set to 0 here and written by the job. 0, or -1
 * when the thread is gone (nothing posted: run it yourself). */
int tlmpi_launcher_post(tlmpi_launch_fn_t fn, const void *arg, size_t bytes, int *state);
/* 1 on the launch thread itself. */
int tlmpi_launcher_is_thread(void);
/* Wake a sleeping thread (after a start launched on its own thread because it slept). */
void tlmpi_launcher_kick(void);
/* Wait (bounded) until every job posted so far has run. Cheap when none is pending. */
void tlmpi_launcher_drain_slow(const char *why);
static inline void tlmpi_launcher_drain(const char *why)
{
    if (TLMPI_UNLIKELY(__atomic_load_n(&tlmpi_launcher_done_, __ATOMIC_ACQUIRE) !=
                       __atomic_load_n(&tlmpi_launcher_posted_, __ATOMIC_RELAXED))) {
        tlmpi_launcher_drain_slow(why);
    }
}
/* Wait (bounded) until the job of *state has run: its outcome (1, or the negated error). */
int tlmpi_launcher_state_wait(const int *state, const char *what);
/* Without waiting: when no one runs jobs now, run the queued ones up to the job of *state here (an
 * MPI_Test that finds its start still queued). Returns *state after (0: not run). */
int tlmpi_launcher_help(const int *state);
/* Drain and stop the thread (MPI_Finalize; a later ready() starts none). */
void tlmpi_launcher_finalize(void);
/* Counters for the stats: jobs posted, starts that launched inline because it slept, its sleeps, jobs
 * a waiting thread ran because the launch thread had not, and jobs their poster ran because the awake
 * thread did not take them within TLMPI_LAUNCH_HANDOFF (any may be NULL). */
void tlmpi_launcher_counts(unsigned long *posted, unsigned long *inline_starts, unsigned long *sleeps,
                           unsigned long *helped, unsigned long *handed);
/* Test hooks (check_launcher): spin window and timeout in us / s, overriding the environment; 0 reset.
 * hold: the thread stops taking jobs (the waiters must run them). */
void tlmpi_launcher_test_config(long spin_us, long timeout_s, int enabled);
/* Test hook: the handoff bound in ns, overriding TLMPI_LAUNCH_HANDOFF (0: no handoff; -1: reset). */
void tlmpi_launcher_test_handoff(long ns);
void tlmpi_launcher_test_hold(int hold);

#endif
