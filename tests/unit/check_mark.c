/*
 * Unit tests (Check, fork mode, no MPI run, no GPU) of a start's mark with the launch word
 * (src/gpu/stream.c, TLMPI_LAUNCH_WORD): linked with the fake CUDA runtime (tests/fakes/fakecudart.c),
 * whose cuStreamWriteValue32 writes at once and whose events can be held "not reached"
 * (fake_cuda_events_pending). What must hold: a deferred mark whose job wrote the word is done through
 * the word alone (no event reached), and waits return on it; a word short of the mark's target leaves
 * the mark not done until the event says so (so a failed kernel, which never writes the word, is still
 * seen through its event); one word serves a context's starts in stream order (a later value completes
 * every earlier mark; the 32-bit values may wrap); a launch that took the offered word (the node
 * kernels write it themselves) completes through it at any number of ranks on the GPU, with no stream
 * write, and the value is never offered twice; TLMPI_LAUNCH_WORD picks when a context has a word and
 * when starts whose kernels do not write it get a stream write (auto: fewer than 3 ranks on the GPU;
 * on; off: no word; never without the launch thread); an MPI_Test that finds its start still queued
 * after TLMPI_MARK_HELP_S runs the launch itself when the launch thread is not running.
 */
#include "config.h"
#include "cudawrap.h"
#include "env.h"
#include "launcher.h"
#include "stream.h"
#include "tlmpi.h"

#include <check.h>
#include <stdlib.h>
#include <unistd.h>

extern int fake_cuda_events_pending; /* tests/fakes/fakecudart.c */

static tlmpi_gpu_ctx_t *ctx_with(const char *mode, int sharers)
{
    char why[160] = "";
    tlmpi_gpu_ctx_t *ctx;

    if (mode) {
        setenv("TLMPI_LAUNCH_WORD", mode, 1);
    } else {
        unsetenv("TLMPI_LAUNCH_WORD");
    }
    ck_assert_int_eq(tlmpi_env_load(NULL, NULL), 0);
    ck_assert_int_ge(tlmpi_gpu_probe(NULL), 1);
    ctx = tlmpi_gpu_ctx_create(0, sharers, why, sizeof(why));
    ck_assert_msg(ctx != NULL, "ctx_create: %s", why);
    return ctx;
}

enum { NO_WORD, STREAM_WORD, KERNEL_WORD };
/* A deferred mark as the launch thread leaves it after its job (kernel_call.c: deferred_run): event
 * recorded; NO_WORD: a start below TLMPI_LAUNCH_WORD_MIN (no offer); STREAM_WORD: the word offered to a
 * launch that did not take it; KERNEL_WORD: offered and taken (the kernel writes it when done: the
 * test writes it for the kernel). */
static void job_done(tlmpi_gpu_ctx_t *ctx, tlmpi_gpu_mark_t *m, int how)
{
    tlmpi_gpu_done_t d;

    ck_assert_int_eq(tlmpi_gpu_mark_deferred(ctx, m), 0);
    ck_assert_ptr_null((void *)m->word);
    if (how != NO_WORD) {
        ck_assert_int_eq(tlmpi_gpu_mark_word_offer(m, &d), ctx->launch_word != NULL);
        if (ctx->launch_word) {
            ck_assert_ptr_eq(d.word_dev, ctx->launch_word_dev);
            d.taken = how == KERNEL_WORD;
        }
        tlmpi_gpu_mark_word(m, ctx->launch_word ? &d : NULL);
    }
    __atomic_store_n(&m->lstate, 1, __ATOMIC_RELEASE);
}

START_TEST(word_modes)
{
    tlmpi_gpu_ctx_t *c;

    c = ctx_with(NULL, 1); /* auto, one rank on the GPU */
    ck_assert_ptr_nonnull((void *)c->launch_word);
    ck_assert_int_eq(c->launch_memop, 1);
    tlmpi_gpu_ctx_destroy(c);
    c = ctx_with("auto", 2);
    ck_assert_ptr_nonnull((void *)c->launch_word);
    ck_assert_int_eq(c->launch_memop, 1);
    tlmpi_gpu_ctx_destroy(c);
    c = ctx_with("auto", 3); /* 3 or more ranks share the GPU: the kernels' word, no stream write */
    ck_assert_ptr_nonnull((void *)c->launch_word);
    ck_assert_int_eq(c->launch_memop, 0);
    tlmpi_gpu_ctx_destroy(c);
    c = ctx_with("on", 8);
    ck_assert_ptr_nonnull((void *)c->launch_word);
    ck_assert_int_eq(c->launch_memop, 1);
    tlmpi_gpu_ctx_destroy(c);
    c = ctx_with("off", 1);
    ck_assert_ptr_null((void *)c->launch_word);
    tlmpi_gpu_ctx_destroy(c);
    setenv("TLMPI_LAUNCH_THREAD", "0", 1);
    c = ctx_with("on", 1); /* no launch thread: nothing writes the word */
    ck_assert_ptr_null((void *)c->launch_word);
    tlmpi_gpu_ctx_destroy(c);
    unsetenv("TLMPI_LAUNCH_THREAD");
}
END_TEST

START_TEST(done_through_the_word)
{
    tlmpi_gpu_ctx_t *c = ctx_with("on", 1);
    tlmpi_gpu_mark_t m;
    unsigned long long w0 = 0, w1 = 0, k0 = 0, k1 = 0;

    fake_cuda_events_pending = 1;
    ck_assert_int_eq(tlmpi_get_launch_word_stats(&w0, &k0), TLMPI_OK);
    job_done(c, &m, STREAM_WORD);
    ck_assert_int_eq(tlmpi_get_launch_word_stats(&w1, &k1), TLMPI_OK);
    ck_assert_uint_eq(w1, w0 + 1); /* what a benchmark's "word=stream" is read from */
    ck_assert_uint_eq(k1, k0);
    ck_assert_int_eq(tlmpi_get_launch_word_stats(NULL, &k1), TLMPI_ERR_INVALID_ARG);
    ck_assert_ptr_eq((void *)m.word, (void *)c->launch_word);
    ck_assert_uint_eq(m.target, c->launch_seq);
    ck_assert_int_eq(tlmpi_gpu_mark_test(&m), 1);     /* the word, no event */
    ck_assert_int_eq(tlmpi_gpu_mark_wait(&m, NULL, "check_mark", 0), 0);
    tlmpi_gpu_mark_release(&m);
    fake_cuda_events_pending = 0;
    tlmpi_gpu_ctx_destroy(c);
}
END_TEST

START_TEST(word_short_of_target)
{
    tlmpi_gpu_ctx_t *c = ctx_with("on", 1);
    tlmpi_gpu_mark_t m;

    fake_cuda_events_pending = 1;
    job_done(c, &m, STREAM_WORD);
    *c->launch_word = m.target - 1; /* the GPU has not got there yet (or the kernel failed) */
    ck_assert_int_eq(tlmpi_gpu_mark_test(&m), 0);
    ck_assert_int_eq(tlmpi_gpu_mark_test(&m), 0);
    fake_cuda_events_pending = 0; /* the event is reached: done through it */
    ck_assert_int_eq(tlmpi_gpu_mark_test(&m), 1);
    tlmpi_gpu_mark_release(&m);
    tlmpi_gpu_ctx_destroy(c);
}
END_TEST

START_TEST(no_word_event_alone)
{
    tlmpi_gpu_ctx_t *c = ctx_with("on", 1);
    tlmpi_gpu_mark_t m;

    fake_cuda_events_pending = 1;
    job_done(c, &m, NO_WORD); /* a start below TLMPI_LAUNCH_WORD_MIN */
    ck_assert_int_eq(tlmpi_gpu_mark_test(&m), 0); /* the word of other starts says nothing about it */
    fake_cuda_events_pending = 0;
    ck_assert_int_eq(tlmpi_gpu_mark_test(&m), 1);
    tlmpi_gpu_mark_release(&m);
    tlmpi_gpu_ctx_destroy(c);
}
END_TEST

START_TEST(stream_order_and_wrap)
{
    tlmpi_gpu_ctx_t *c = ctx_with("on", 1);
    tlmpi_gpu_mark_t m[3];
    int i;

    fake_cuda_events_pending = 1;
    c->launch_seq = 0xfffffffeu; /* the next values wrap: 0xffffffff, 0, 1 */
    for (i = 0; i < 3; i++) {
        job_done(c, &m[i], i == 1 ? KERNEL_WORD : STREAM_WORD); /* one word, whoever writes it */
    }
    ck_assert_uint_eq(m[2].target, 1u);
    *c->launch_word = m[0].target; /* only the first start reached */
    ck_assert_int_eq(tlmpi_gpu_mark_test(&m[0]), 1);
    ck_assert_int_eq(tlmpi_gpu_mark_test(&m[1]), 0);
    ck_assert_int_eq(tlmpi_gpu_mark_test(&m[2]), 0);
    *c->launch_word = m[2].target; /* the last one: every earlier start is done too */
    ck_assert_int_eq(tlmpi_gpu_mark_test(&m[1]), 1);
    ck_assert_int_eq(tlmpi_gpu_mark_test(&m[2]), 1);
    for (i = 0; i < 3; i++) {
        tlmpi_gpu_mark_release(&m[i]);
    }
    fake_cuda_events_pending = 0;
    tlmpi_gpu_ctx_destroy(c);
}
END_TEST

START_TEST(kernel_word_where_gpu_shared)
{
    tlmpi_gpu_ctx_t *c = ctx_with("auto", 8); /* no stream writes here: the kernels' own word only */
    tlmpi_gpu_mark_t m, n;
    unsigned long long w0 = 0, w1 = 0, k0 = 0, k1 = 0;
    unsigned seq;

    fake_cuda_events_pending = 1;
    ck_assert_int_eq(tlmpi_get_launch_word_stats(&w0, &k0), TLMPI_OK);
    job_done(c, &m, KERNEL_WORD);
    ck_assert_int_eq(tlmpi_get_launch_word_stats(&w1, &k1), TLMPI_OK);
    ck_assert_uint_eq(w1, w0 + 1);
    ck_assert_uint_eq(k1, k0 + 1); /* "word=kernel" */
    ck_assert_ptr_eq((void *)m.word, (void *)c->launch_word);
    ck_assert_uint_eq(m.target, c->launch_seq);
    ck_assert_int_eq(tlmpi_gpu_mark_test(&m), 0); /* the kernel has not written it yet */
    *c->launch_word = m.target;                   /* its last CTA did */
    ck_assert_int_eq(tlmpi_gpu_mark_test(&m), 1); /* the word, no event */
    ck_assert_int_eq(tlmpi_gpu_mark_wait(&m, NULL, "check_mark", 0), 0);
    /* a launch that did not take it (an LL kernel, another tier): no stream write here, the event alone,
     * and the value is not used up */
    seq = c->launch_seq;
    job_done(c, &n, STREAM_WORD);
    ck_assert_ptr_null((void *)n.word);
    ck_assert_uint_eq(c->launch_seq, seq);
    ck_assert_int_eq(tlmpi_gpu_mark_test(&n), 0);
    fake_cuda_events_pending = 0;
    ck_assert_int_eq(tlmpi_gpu_mark_test(&n), 1);
    tlmpi_gpu_mark_release(&m);
    tlmpi_gpu_mark_release(&n);
    tlmpi_gpu_ctx_destroy(c);
}
END_TEST

START_TEST(taken_value_never_offered_twice)
{
    tlmpi_gpu_ctx_t *c = ctx_with("off", 1);
    tlmpi_gpu_ctx_t *d = ctx_with("auto", 4);
    tlmpi_gpu_mark_t m, n;
    tlmpi_gpu_done_t o1, o2;

    (void)c;
    fake_cuda_events_pending = 1;
    /* off: nothing offered */
    ck_assert_int_eq(tlmpi_gpu_mark_deferred(c, &m), 0);
    ck_assert_int_eq(tlmpi_gpu_mark_word_offer(&m, &o1), 0);
    __atomic_store_n(&m.lstate, 1, __ATOMIC_RELEASE);
    tlmpi_gpu_mark_release(&m);
    /* the job's event record failed after a launch that took the word: the job still commits the value
     * (kernel_call.c), so the next start's offer is a new one */
    ck_assert_int_eq(tlmpi_gpu_mark_deferred(d, &m), 0);
    ck_assert_int_eq(tlmpi_gpu_mark_word_offer(&m, &o1), 1);
    o1.taken = 1;
    tlmpi_gpu_mark_word(&m, &o1);
    __atomic_store_n(&m.lstate, -1, __ATOMIC_RELEASE);
    ck_assert_int_eq(tlmpi_gpu_mark_deferred(d, &n), 0);
    ck_assert_int_eq(tlmpi_gpu_mark_word_offer(&n, &o2), 1);
    ck_assert_uint_ne(o2.value, o1.value);
    *d->launch_word = o1.value; /* the first kernel wrote its value: not the second start's */
    o2.taken = 1;
    tlmpi_gpu_mark_word(&n, &o2);
    __atomic_store_n(&n.lstate, 1, __ATOMIC_RELEASE);
    ck_assert_int_eq(tlmpi_gpu_mark_test(&n), 0);
    fake_cuda_events_pending = 0;
    tlmpi_gpu_mark_release(&m);
    tlmpi_gpu_mark_release(&n);
    tlmpi_gpu_ctx_destroy(c);
    tlmpi_gpu_ctx_destroy(d);
}
END_TEST

static int launched(void *unused)
{
    (void)unused;
    return 0;
}

START_TEST(test_runs_a_queued_launch)
{
    tlmpi_gpu_ctx_t *c = ctx_with("off", 1);
    tlmpi_gpu_mark_t m;
    int i;

    tlmpi_launcher_test_config(100000, 5, 1);
    tlmpi_launcher_test_handoff(0); /* the post returns at once: its launch stays queued */
    for (i = 0; i < 100000 && !tlmpi_launcher_ready(); i++) {
        tlmpi_launcher_kick();
        usleep(10);
    }
    ck_assert(tlmpi_launcher_ready());
    tlmpi_launcher_test_hold(1); /* the launch thread is not running */
    usleep(2000);
    ck_assert_int_eq(tlmpi_gpu_mark_deferred(c, &m), 0);
    ck_assert_int_eq(tlmpi_launcher_post(launched, &i, sizeof i, &m.lstate), 0);
    m.posted_at += 3600; /* just posted: a test leaves the launch to the thread */
    ck_assert_int_eq(tlmpi_gpu_mark_test(&m), 0);
    ck_assert_int_eq(m.lstate, 0);
    m.posted_at -= 3600 + 2 * TLMPI_MARK_HELP_S; /* queued for longer: the test launches it */
    ck_assert_int_eq(tlmpi_gpu_mark_test(&m), 1);
    ck_assert_int_eq(m.lstate, 1);
    tlmpi_gpu_mark_release(&m);
    tlmpi_launcher_test_hold(0);
    tlmpi_launcher_finalize();
    tlmpi_gpu_ctx_destroy(c);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("mark");
    TCase *tc = tcase_create("launch word");
    SRunner *sr;
    int failed;

    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, word_modes);
    tcase_add_test(tc, done_through_the_word);
    tcase_add_test(tc, word_short_of_target);
    tcase_add_test(tc, no_word_event_alone);
    tcase_add_test(tc, stream_order_and_wrap);
    tcase_add_test(tc, kernel_word_where_gpu_shared);
    tcase_add_test(tc, taken_value_never_offered_twice);
    tcase_add_test(tc, test_runs_a_queued_launch);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
