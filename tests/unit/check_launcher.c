/*
 * Unit tests (Check, fork mode: every test in a process of its own, so each starts a launch thread
 * of its own; no MPI run, no GPU) of the launch thread's queue (src/gpu/launcher.c) with jobs that
 * are plain functions: FIFO order from one producer and per producer from several, every job run
 * exactly once, the state words (1 / the negated error), drain, a full queue, sleep after the spin
 * window (ready() then says no and counts the start), a post or a kick waking it, finalize; a thread
 * that waits for a job the launch thread does not take (held) runs the jobs up to it itself, in order,
 * and a post that waits for room does the same; a start posted to an empty queue that the awake thread
 * does not take within the handoff bound runs its job itself, one that the thread takes does not.
 */
#include "config.h"
#include "env.h"
#include "launcher.h"

#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NPROD 3
#define PER 20000

static int log_prod[NPROD * PER + 8], log_seq[NPROD * PER + 8], log_here[NPROD * PER + 8];
static int n_log; /* written by the job's runner (one at a time: the consumer role) */
static pthread_t main_thread;
static int slow_us;

typedef struct {
    int prod, seq, ret;
} jarg_t;

static int job(void *p)
{
    const jarg_t *a = p;

    if (slow_us) {
        usleep((useconds_t)slow_us);
    }
    log_prod[n_log] = a->prod;
    log_seq[n_log] = a->seq;
    log_here[n_log] = pthread_equal(pthread_self(), main_thread);
    n_log++;
    return a->ret;
}

static void setup(long spin_us)
{
    ck_assert_int_eq(tlmpi_env_load(NULL, NULL), 0);
    tlmpi_launcher_test_config(spin_us, 20, 1);
    tlmpi_launcher_test_handoff(-1);
    n_log = 0;
    slow_us = 0;
    main_thread = pthread_self();
}

/* ready() until it says yes (the thread started and awake), at most ~1 s; a no is followed by a
 * kick, as a start that launched on its own thread does */
static void until_ready(void)
{
    int i;

    for (i = 0; i < 100000 && !tlmpi_launcher_ready(); i++) {
        tlmpi_launcher_kick();
        usleep(10);
    }
    ck_assert_msg(tlmpi_launcher_ready(), "the launch thread never became ready");
}

START_TEST(fifo_one_producer)
{
    static int st[PER];
    int i;

    setup(100000);
    until_ready();
    for (i = 0; i < PER; i++) {
        jarg_t a = { 0, i, i % 7 == 3 ? 11 : 0 };

        ck_assert_int_eq(tlmpi_launcher_post(job, &a, sizeof a, &st[i]), 0);
    }
    tlmpi_launcher_drain("test");
    ck_assert_int_eq(n_log, PER);
    for (i = 0; i < PER; i++) {
        ck_assert_int_eq(log_seq[i], i);
        ck_assert_int_eq(st[i], i % 7 == 3 ? -11 : 1);
    }
    tlmpi_launcher_finalize();
    ck_assert_int_eq(tlmpi_launcher_ready(), 0); /* stopped: no new thread */
}
END_TEST

static int pst[NPROD][PER];
static void *producer(void *p)
{
    int id = (int)(long)p, i;

    for (i = 0; i < PER; i++) {
        jarg_t a = { id, i, 0 };

        if (tlmpi_launcher_post(job, &a, sizeof a, &pst[id][i]) != 0) {
            return (void *)1;
        }
    }
    return NULL;
}

START_TEST(fifo_per_producer)
{
    pthread_t t[NPROD];
    int next[NPROD] = { 0 }, i, k;
    void *r;

    setup(100000);
    until_ready();
    for (k = 0; k < NPROD; k++) {
        ck_assert_int_eq(pthread_create(&t[k], NULL, producer, (void *)(long)k), 0);
    }
    for (k = 0; k < NPROD; k++) {
        pthread_join(t[k], &r);
        ck_assert_ptr_null(r);
    }
    tlmpi_launcher_drain("test");
    ck_assert_int_eq(n_log, NPROD * PER); /* every job once: none lost, none twice */
    for (i = 0; i < n_log; i++) {
        ck_assert_int_eq(log_seq[i], next[log_prod[i]]); /* each producer's jobs in its order */
        next[log_prod[i]]++;
    }
    for (k = 0; k < NPROD; k++) {
        for (i = 0; i < PER; i++) {
            ck_assert_int_eq(pst[k][i], 1);
        }
    }
    tlmpi_launcher_finalize();
}
END_TEST

START_TEST(full_queue_and_state_wait)
{
    static int st[3 * TLMPI_LAUNCH_QUEUE];
    int i, n = 3 * TLMPI_LAUNCH_QUEUE;

    setup(100000);
    until_ready();
    slow_us = 20; /* the thread lags: posts beyond the queue wait for room */
    for (i = 0; i < n; i++) {
        jarg_t a = { 0, i, 0 };

        ck_assert_int_eq(tlmpi_launcher_post(job, &a, sizeof a, &st[i]), 0);
    }
    ck_assert_int_eq(tlmpi_launcher_state_wait(&st[n - 1], "test"), 1);
    ck_assert_int_eq(n_log, n); /* FIFO: the last one ran last */
    for (i = 0; i < n; i++) {
        ck_assert_int_eq(log_seq[i], i);
    }
    tlmpi_launcher_finalize();
}
END_TEST

START_TEST(sleep_and_wake)
{
    unsigned long posted, inl, inl0, sleeps;
    int st = 0, i;
    jarg_t a = { 0, 0, 0 };

    setup(2000); /* 2 ms spin window */
    until_ready();
    usleep(50000); /* past the window: asleep */
    tlmpi_launcher_counts(NULL, &inl0, &sleeps, NULL, NULL);
    ck_assert_uint_ge(sleeps, 1);
    ck_assert_int_eq(tlmpi_launcher_ready(), 0); /* a start launches itself ... */
    tlmpi_launcher_counts(NULL, &inl, NULL, NULL, NULL);
    ck_assert_uint_eq(inl, inl0 + 1);            /* ... and is counted */
    tlmpi_launcher_kick();                       /* ... then wakes it */
    until_ready();
    usleep(50000); /* asleep again: a post wakes it too */
    ck_assert_int_eq(tlmpi_launcher_post(job, &a, sizeof a, &st), 0);
    ck_assert_int_eq(tlmpi_launcher_state_wait(&st, "test"), 1);
    ck_assert_int_eq(n_log, 1);
    for (i = 0; i < 100 && !tlmpi_launcher_ready(); i++) {
        usleep(100);
    }
    tlmpi_launcher_counts(&posted, NULL, NULL, NULL, NULL);
    ck_assert_uint_eq(posted, 1);
    tlmpi_launcher_finalize();
}
END_TEST

START_TEST(waiter_runs_jobs)
{
    static int st[TLMPI_LAUNCH_QUEUE + 20];
    unsigned long h0 = 0, h1 = 0;
    int i, n = TLMPI_LAUNCH_QUEUE + 20;

    setup(100000);
    tlmpi_launcher_test_config(100000, 5, 1); /* a wait nobody serves ends the test in 5 s */
    tlmpi_launcher_test_handoff(0);           /* the posts return at once: the waiters run the jobs */
    until_ready();
    tlmpi_launcher_test_hold(1); /* the thread is there and awake, but takes no job */
    usleep(2000);
    tlmpi_launcher_counts(NULL, NULL, NULL, &h0, NULL);
    for (i = 0; i < 3; i++) {
        jarg_t a = { 0, i, i == 1 ? 5 : 0 };

        ck_assert_int_eq(tlmpi_launcher_post(job, &a, sizeof a, &st[i]), 0);
    }
    ck_assert_int_eq(tlmpi_launcher_state_wait(&st[1], "test"), -5); /* job 1's outcome ... */
    ck_assert_int_eq(n_log, 2);                                       /* ... after job 0, both run here */
    ck_assert_int_eq(log_seq[0], 0);
    ck_assert_int_eq(log_seq[1], 1);
    ck_assert_int_eq(log_here[0] && log_here[1], 1);
    ck_assert_int_eq(st[0], 1);
    ck_assert_int_eq(st[2], 0); /* the waiter stops at its own job */
    tlmpi_launcher_counts(NULL, NULL, NULL, &h1, NULL);
    ck_assert_uint_eq(h1, h0 + 2);
    tlmpi_launcher_drain("test"); /* job 2, here too */
    ck_assert_int_eq(n_log, 3);
    ck_assert_int_eq(st[2], 1);
    /* more posts than the queue holds: a post that waits for room runs jobs itself */
    for (i = 0; i < n; i++) {
        jarg_t a = { 0, 3 + i, 0 };

        ck_assert_int_eq(tlmpi_launcher_post(job, &a, sizeof a, &st[i]), 0);
    }
    tlmpi_launcher_drain("test");
    ck_assert_int_eq(n_log, 3 + n);
    for (i = 0; i < 3 + n; i++) {
        ck_assert_int_eq(log_seq[i], i);
        ck_assert_int_eq(log_here[i], 1);
    }
    { /* help (MPI_Test's): runs the queue up to the job, without waiting */
        jarg_t a = { 0, 3 + n, 0 };
        int s1 = 0;

        ck_assert_int_eq(tlmpi_launcher_post(job, &a, sizeof a, &s1), 0);
        ck_assert_int_eq(tlmpi_launcher_help(&s1), 1);
        ck_assert_int_eq(n_log, 4 + n);
        ck_assert_int_eq(log_here[3 + n], 1);
        ck_assert_int_eq(tlmpi_launcher_help(&s1), 1); /* done: nothing more */
    }
    tlmpi_launcher_test_hold(0); /* the thread takes jobs again */
    {
        jarg_t a = { 0, 4 + n, 0 }, b = { 0, 5 + n, 0 };
        int s1 = 0, s2 = 0;
        struct timespec t0, t1;

        slow_us = 100000; /* the thread holds the role for 100 ms per job */
        ck_assert_int_eq(tlmpi_launcher_post(job, &a, sizeof a, &s1), 0);
        usleep(20000);
        ck_assert_int_eq(tlmpi_launcher_post(job, &b, sizeof b, &s2), 0);
        clock_gettime(CLOCK_MONOTONIC, &t0);
        ck_assert_int_eq(tlmpi_launcher_help(&s2), 0); /* someone runs jobs: help returns at once */
        clock_gettime(CLOCK_MONOTONIC, &t1);
        ck_assert((double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec) < 0.05);
        ck_assert_int_eq(tlmpi_launcher_state_wait(&s2, "test"), 1);
        ck_assert_int_eq(log_here[4 + n], 0); /* the thread ran it */
        slow_us = 0;
    }
    tlmpi_launcher_finalize();
}
END_TEST

START_TEST(handoff_runs_untaken_job)
{
    unsigned long o0 = 0, o1 = 0;
    int st[4] = { 0 }, i;

    setup(100000);
    tlmpi_launcher_test_handoff(2000);
    until_ready();
    tlmpi_launcher_test_hold(1); /* awake, but it takes no job: as a thread off its core */
    usleep(2000);
    tlmpi_launcher_counts(NULL, NULL, NULL, NULL, &o0);
    for (i = 0; i < 3; i++) {
        jarg_t a = { 0, i, i == 1 ? 9 : 0 };

        ck_assert_int_eq(tlmpi_launcher_post(job, &a, sizeof a, &st[i]), 0);
        ck_assert_int_eq(st[i], i == 1 ? -9 : 1); /* run before the post returned ... */
        ck_assert_int_eq(n_log, i + 1);
        ck_assert_int_eq(log_here[i], 1); /* ... by the poster */
    }
    tlmpi_launcher_counts(NULL, NULL, NULL, NULL, &o1);
    ck_assert_uint_eq(o1, o0 + 3);
    tlmpi_launcher_test_hold(0);
    tlmpi_launcher_test_handoff(1000000000L); /* 1 s: the awake thread takes it long before */
    {
        jarg_t a = { 0, 3, 0 };

        ck_assert_int_eq(tlmpi_launcher_post(job, &a, sizeof a, &st[3]), 0);
        ck_assert_int_eq(tlmpi_launcher_state_wait(&st[3], "test"), 1);
        ck_assert_int_eq(log_here[3], 0); /* the thread ran it */
    }
    tlmpi_launcher_counts(NULL, NULL, NULL, NULL, &o1);
    ck_assert_uint_eq(o1, o0 + 3);
    tlmpi_launcher_finalize();
}
END_TEST

START_TEST(disabled)
{
    int st = 7;
    jarg_t a = { 0, 0, 0 };

    setup(100000);
    tlmpi_launcher_test_config(100000, 20, 0);
    ck_assert_int_eq(tlmpi_launcher_ready(), 0);
    ck_assert_int_eq(tlmpi_launcher_post(job, &a, sizeof a, &st), -1); /* no thread: not posted */
    ck_assert_int_eq(st, 7);
    tlmpi_launcher_drain("test"); /* nothing pending: returns */
    tlmpi_launcher_finalize();
}
END_TEST

int main(void)
{
    Suite *s = suite_create("launcher");
    TCase *tc = tcase_create("queue");
    SRunner *sr;
    int failed;

    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, fifo_one_producer);
    tcase_add_test(tc, fifo_per_producer);
    tcase_add_test(tc, full_queue_and_state_wait);
    tcase_add_test(tc, sleep_and_wake);
    tcase_add_test(tc, waiter_runs_jobs);
    tcase_add_test(tc, handoff_runs_untaken_job);
    tcase_add_test(tc, disabled);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
