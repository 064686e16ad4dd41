/*
 * Unit tests (Check, fork mode, no MPI run, no GPU) of a start's mark with the launch word
 * (src/gpu/stream.c, TLMPI_LAUNCH_WORD): linked with the fake CUDA runtime (tests/fakes/fakecudart.c),
 * whose cuStreamWriteValue32 writes at once and whose events can be held "not reached"
 * (fake_cuda_events_pending). What must hold: a deferred mark whose job wrote the word is done through
 * the word alone (no event reached), and waits return on it; a word short of the mark's target leaves
 * the mark not done until the event says so (so a failed kernel, which never writes the word, is still
 * seen through its event); one word serves a context's starts in stream order (a later value completes
 * every earlier mark; the 32-bit values may wrap); TLMPI_LAUNCH_WORD picks when a context has a word
 * (auto: fewer than 3 ranks on the GPU; on; off; never without the launch thread).
 */
#include "config.h"
#include "cudawrap.h"
#include "env.h"
#include "stream.h"
#include "tlmpi.h"

#include <check.h>
#include <stdlib.h>

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

/* A deferred mark as the launch thread leaves it after its job: event recorded, word written (or not). */
static void job_done(tlmpi_gpu_ctx_t *ctx, tlmpi_gpu_mark_t *m, int with_word)
{
    ck_assert_int_eq(tlmpi_gpu_mark_deferred(ctx, m), 0);
    ck_assert_ptr_null((void *)m->word);
    if (with_word) {
        tlmpi_gpu_mark_word(m);
    }
    __atomic_store_n(&m->lstate, 1, __ATOMIC_RELEASE);
}

START_TEST(word_modes)
{
    tlmpi_gpu_ctx_t *c;

    c = ctx_with(NULL, 1); /* auto, one rank on the GPU */
    ck_assert_ptr_nonnull((void *)c->launch_word);
    tlmpi_gpu_ctx_destroy(c);
    c = ctx_with("auto", 2);
    ck_assert_ptr_nonnull((void *)c->launch_word);
    tlmpi_gpu_ctx_destroy(c);
    c = ctx_with("auto", 3); /* 3 or more ranks share the GPU: the event alone */
    ck_assert_ptr_null((void *)c->launch_word);
    tlmpi_gpu_ctx_destroy(c);
    c = ctx_with("on", 8);
    ck_assert_ptr_nonnull((void *)c->launch_word);
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
    unsigned long long w0 = 0, w1 = 0;

    fake_cuda_events_pending = 1;
    ck_assert_int_eq(tlmpi_get_launch_word_stats(&w0), TLMPI_OK);
    job_done(c, &m, 1);
    ck_assert_int_eq(tlmpi_get_launch_word_stats(&w1), TLMPI_OK);
    ck_assert_uint_eq(w1, w0 + 1); /* what a benchmark's "word=on" is read from */
    ck_assert_int_eq(tlmpi_get_launch_word_stats(NULL), TLMPI_ERR_INVALID_ARG);
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
    job_done(c, &m, 1);
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
    job_done(c, &m, 0); /* a start below TLMPI_LAUNCH_WORD_MIN */
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
        job_done(c, &m[i], 1);
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
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
