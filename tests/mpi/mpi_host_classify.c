/*
 * mpi_host_classify: on a node with a GPU, host buffers on the caller's stack, in the program's
 * globals or in the brk heap (allocated before MPI_Init or after) are recognised as host memory
 * without a CUDA query; other host memory (here an mmap'd
 * region, and a stack that is not the thread's own, as coroutines use) gets one the first time
 * (mmap'd regions are then known host: src/mem/hostmap.c; tests/mpi/mpi_host_cache checks its
 * invalidation). Runs on any
 * machine: it is linked with tests/fakes/fakecudart.c, a CPU stand-in for the CUDA runtime that
 * reports one GPU and counts cudaPointerGetAttributes calls (fake_cuda_ptr_queries). Every call
 * is also checked for the right result and for taking tlmpi's pass-through path.
 */
#include "config.h"
#include "tlmpi.h"
#include "harness.h"

#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>
#include <ucontext.h>

extern unsigned long fake_cuda_ptr_queries;

static double g_send[16], g_recv[16];

/* One 16-double allreduce of s into r; checks the sum and returns the CUDA queries it made. */
static long allreduce_queries(const char *what, double *s, double *r)
{
    unsigned long q0;
    uint64_t before, after;
    tlmpi_stat_t st;
    int i, rc;

    for (i = 0; i < 16; i++) {
        s[i] = tst_rank * 100 + i;
        r[i] = -1;
    }
    tlmpi_get_stats(TLMPI_COLL_ALLREDUCE, TLMPI_PATH_PASSTHROUGH, &st);
    before = st.calls;
    q0 = fake_cuda_ptr_queries;
    rc = MPI_Allreduce(s, r, 16, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    q0 = fake_cuda_ptr_queries - q0;
    tlmpi_get_stats(TLMPI_COLL_ALLREDUCE, TLMPI_PATH_PASSTHROUGH, &st);
    after = st.calls;
    TST_CHECK(rc == MPI_SUCCESS, "%s: rc %d", what, rc);
    TST_CHECK(after == before + 1, "%s: not counted as pass-through", what);
    for (i = 0; i < 16; i++) {
        double want = 100.0 * tst_size * (tst_size - 1) / 2 + (double)i * tst_size;
        TST_CHECK(r[i] == want, "%s: element %d = %g, expected %g", what, i, r[i], want);
    }
    return (long)q0;
}

static void *thread_main(void *arg)
{
    double s[16], r[16];
    long *q = arg;

    *q = allreduce_queries("other thread's stack", s, r);
    return NULL;
}

static ucontext_t main_ctx, fiber_ctx;
static long fiber_q = -1;

static void fiber_main(void)
{
    double s[16], r[16];

    fiber_q = allreduce_queries("coroutine stack", s, r);
}

int main(int argc, char **argv)
{
    double s[16], r[16], *m, *early, *late;
    int provided = 0;
    long q;
    pthread_t th;
    void *fstack;
    const size_t fsize = 1 << 20;

    tst_name = "mpi_host_classify";
    /* brk-heap memory allocated before MPI_Init (before tlmpi's init): small mallocs, brk heap */
    early = malloc(32 * sizeof(double));
    MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &tst_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &tst_size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    (void)allreduce_queries("warm-up", s, r);

    q = allreduce_queries("caller's stack", s, r);
    TST_CHECK(q == 0, "caller's stack: %ld CUDA queries, expected 0", q);
    q = allreduce_queries("program globals", g_send, g_recv);
    TST_CHECK(q == 0, "program globals: %ld CUDA queries, expected 0", q);

    /* the brk heap, allocated before and after tlmpi's init (a program's heap buffers of any age) */
    late = malloc(32 * sizeof(double));
    if (early && late && (uintptr_t)early < (uintptr_t)sbrk(0) && (uintptr_t)late < (uintptr_t)sbrk(0)) {
        q = allreduce_queries("brk heap, allocated before MPI_Init", early, early + 16);
        TST_CHECK(q == 0, "brk heap allocated before MPI_Init: %ld CUDA queries, expected 0", q);
        q = allreduce_queries("brk heap, allocated after MPI_Init", late, late + 16);
        TST_CHECK(q == 0, "brk heap allocated after MPI_Init: %ld CUDA queries, expected 0", q);
    } else if (tst_rank == 0) {
        printf("mpi_host_classify: malloc did not return brk-heap memory; heap case skipped\n");
    }
    free(early);
    free(late);

    /* positive control (also proves that tlmpi sees the fake GPU): an mmap'd host region, whose
     * addresses could have been device memory's, costs one CUDA query the first time (the other
     * buffer lies in the mapping then known to be host: src/mem/hostmap.c) and none after */
    m = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    TST_CHECK(m != MAP_FAILED, "mmap");
    if (m != MAP_FAILED) {
        q = allreduce_queries("mmap'd region", m, m + 4096);
        TST_CHECK(q == 1, "mmap'd region: %ld CUDA queries, expected 1", q);
        q = allreduce_queries("mmap'd region, again", m, m + 4096);
        TST_CHECK(q == 0, "mmap'd region, again: %ld CUDA queries, expected 0", q);
        munmap(m, 1 << 20);
    }

    if (provided >= MPI_THREAD_SERIALIZED) {
        q = -1;
        pthread_create(&th, NULL, thread_main, &q);
        pthread_join(th, NULL);
        TST_CHECK(q == 0, "other thread's stack: %ld CUDA queries, expected 0", q);
    } else if (tst_rank == 0) {
        printf("mpi_host_classify: MPI_THREAD_SERIALIZED not provided; thread case skipped\n");
    }

    /* a coroutine on an mmap'd stack: not the thread's stack, so the fast path must not apply */
    fstack = mmap(NULL, fsize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    TST_CHECK(fstack != MAP_FAILED, "mmap (coroutine stack)");
    if (fstack != MAP_FAILED) {
        getcontext(&fiber_ctx);
        fiber_ctx.uc_stack.ss_sp = fstack;
        fiber_ctx.uc_stack.ss_size = fsize;
        fiber_ctx.uc_link = &main_ctx;
        makecontext(&fiber_ctx, fiber_main, 0);
        swapcontext(&main_ctx, &fiber_ctx);
        /* one query: the stack rule does not apply (the mapping is then known host) */
        TST_CHECK(fiber_q == 1, "coroutine stack: %ld CUDA queries, expected 1", fiber_q);
        munmap(fstack, fsize);
    }
    return tst_finish();
}
