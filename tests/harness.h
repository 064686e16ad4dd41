/*
 * harness.h: the one small harness of the MPI programs under tests/ (tests/mpi and
 * tests/gpu/gpu_coll.c; plain C, no Check, so that they also run on hosts without Check). Each test:
 *  - starts with tst_init (MPI_Init) or tst_init_thread (MPI_Init_thread; tst_skip when the MPI
 *    gives less than the test needs), which seeds a per-rank generator from TLMPI_TEST_SEED or the
 *    clock (printed, to reproduce a run),
 *  - reports failures with TST_FAIL / TST_CHECK (the first TST_MAX_PRINT per rank are printed);
 *    both may be used from several threads at once (the counters are atomic), and the generator of
 *    a thread of its own is a tst_rng_t (tst_rand_r),
 *  - ends with tst_finish(), which sums the failures over MPI_COMM_WORLD with PMPI_Allreduce so
 *    every rank exits alike (0 = pass, 1 = fail); tst_totals gives the sums to a test that prints
 *    its own summary before.
 * Included after cuda_runtime_api.h it also defines TST_CUDA(call): a failing CUDA call aborts the
 * job with the call, the error and the place.
 * Only PMPI_* is used for the harness's own communication, so it never touches tlmpi's counters.
 */
#ifndef TLMPI_TEST_HARNESS_H
#define TLMPI_TEST_HARNESS_H

#include <mpi.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <time.h>

#ifndef TST_MAX_PRINT
#define TST_MAX_PRINT 12
#endif

static int tst_rank, tst_size;
static long tst_failures, tst_checks;
static uint64_t tst_rng_state;
static const char *tst_name = "test";

static void tst_fail_(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void tst_fail_(const char *file, int line, const char *fmt, ...)
{
    va_list ap;

    if (__atomic_fetch_add(&tst_failures, 1, __ATOMIC_RELAXED) < TST_MAX_PRINT) {
        fprintf(stderr, "[%s r%d] FAIL %s:%d: ", tst_name, tst_rank, file, line);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
        fflush(stderr);
    }
}
#define TST_FAIL(...) tst_fail_(__FILE__, __LINE__, __VA_ARGS__)
#define TST_CHECK(_cond, ...)                                                                \
    do {                                                                                     \
        __atomic_fetch_add(&tst_checks, 1, __ATOMIC_RELAXED);                                \
        if (!(_cond)) {                                                                      \
            TST_FAIL(__VA_ARGS__);                                                           \
        }                                                                                    \
    } while (0)

/* xorshift64*: fast, reproducible, good enough for test data. tst_rand uses the process's
 * generator (one thread); a thread of its own keeps a tst_rng_t. */
typedef uint64_t tst_rng_t;

static inline void tst_rng_seed(tst_rng_t *g, uint64_t seed)
{
    *g = (seed + 1) * 0x9E3779B97F4A7C15ULL;
    if (!*g) {
        *g = 1;
    }
}

static inline uint64_t tst_rand_r(tst_rng_t *g)
{
    uint64_t x = *g;

    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *g = x;
    return x * 0x2545F4914F6CDD1DULL;
}

static inline uint64_t tst_rand(void)
{
    return tst_rand_r(&tst_rng_state);
}

/* uniform integer in [lo, hi] */
static inline int64_t tst_rand_range(int64_t lo, int64_t hi)
{
    return lo + (int64_t)(tst_rand() % (uint64_t)(hi - lo + 1));
}

static inline void tst_rand_bytes(void *buf, size_t n)
{
    unsigned char *p = buf;
    size_t i;

    for (i = 0; i < n; i++) {
        p[i] = (unsigned char)(tst_rand() >> 56);
    }
}

/* Fill with a poison byte that changes from call to call, so stale results never match. */
static inline unsigned char tst_poison(void *buf, size_t n)
{
    unsigned char v = (unsigned char)(0xA5 ^ (tst_rand() >> 60));

    memset(buf, v, n);
    return v;
}

static inline void *tst_malloc(size_t n)
{
    void *p = malloc(n ? n : 1);

    if (!p) {
        fprintf(stderr, "out of memory\n");
        PMPI_Abort(MPI_COMM_WORLD, 2);
    }
    return p;
}

/* After MPI_Init(_thread): error handler, seed. MPI_ERRORS_RETURN so that a failing call is
 * reported by the test rather than aborting the job. */
static inline void tst_setup_(const char *name)
{
    const char *s = getenv("TLMPI_TEST_SEED");
    uint64_t seed;

    tst_name = name;
    MPI_Comm_rank(MPI_COMM_WORLD, &tst_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &tst_size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    seed = s && *s ? strtoull(s, NULL, 0) : (uint64_t)time(NULL);
    PMPI_Bcast(&seed, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    if (tst_rank == 0) {
        printf("%s: %d ranks, seed %llu (set TLMPI_TEST_SEED to repeat)\n", name, tst_size,
               (unsigned long long)seed);
        fflush(stdout);
    }
    tst_rng_state = (seed + 1) * 0x9E3779B97F4A7C15ULL ^ ((uint64_t)tst_rank + 1) * 0xD1B54A32D192ED03ULL;
    if (!tst_rng_state) {
        tst_rng_state = 1;
    }
}

static inline void tst_init(const char *name, int *argc, char ***argv)
{
    MPI_Init(argc, argv);
    tst_setup_(name);
}

/* MPI_Init_thread; returns the thread level the MPI provides (see tst_skip) */
static inline int tst_init_thread(const char *name, int *argc, char ***argv, int required)
{
    int provided = MPI_THREAD_SINGLE;

    MPI_Init_thread(argc, argv, required, &provided);
    tst_setup_(name);
    return provided;
}

/* Before a step that provokes tlmpi's error or warning lines on purpose: rank 0 says so (on stderr,
 * where tlmpi's log goes, so that a reader of a passing test's log knows they are expected), then
 * every rank waits for it. Call it on all ranks of MPI_COMM_WORLD. */
static inline void tst_expect(const char *what)
{
    if (tst_rank == 0) {
        fflush(stdout);
        fprintf(stderr, "%s: expected: the next TLMPI ERROR/WARN lines are provoked by this test (%s)\n", tst_name, what);
        fflush(stderr);
    }
    PMPI_Barrier(MPI_COMM_WORLD);
}

/* Skip the test (automake's exit status 77) on every rank alike: call it on all ranks. */
static inline int tst_skip(const char *why)
{
    if (tst_rank == 0) {
        printf("%s: SKIP: %s\n", tst_name, why);
        fflush(stdout);
    }
    MPI_Finalize();
    return 77;
}

/* Same random stream on every rank from here on (for rank-uniform choices such as counts). */
static inline void tst_rng_sync(void)
{
    PMPI_Bcast(&tst_rng_state, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
}

/* Failures and checks summed over all ranks (collective over MPI_COMM_WORLD). */
static inline void tst_totals(long *failures, long *checks)
{
    long v[2], all[2] = { 0, 0 };

    v[0] = __atomic_load_n(&tst_failures, __ATOMIC_RELAXED);
    v[1] = __atomic_load_n(&tst_checks, __ATOMIC_RELAXED);
    PMPI_Allreduce(v, all, 2, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (failures) {
        *failures = all[0];
    }
    if (checks) {
        *checks = all[1];
    }
}

/* Combine the verdict over all ranks; finalize; return the exit code. */
/* Descriptors this process has open now (-1 if /proc/self/fd cannot be read): a leak check. */
static inline int tst_open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    int n = 0;

    if (!d) {
        return -1;
    }
    while ((e = readdir(d)) != NULL) {
        n += e->d_name[0] != '.';
    }
    closedir(d);
    return n;
}

static inline int tst_finish(void)
{
    long all[2] = { 0, 0 };

    tst_totals(&all[0], &all[1]);
    if (tst_rank == 0) {
        printf("%s: %s: %ld checks, %ld failures over %d ranks\n", tst_name, all[0] ? "FAIL" : "PASS",
               all[1], all[0], tst_size);
        fflush(stdout);
    }
    MPI_Finalize();
    return all[0] ? 1 : 0;
}

static inline const char *tst_err_string(int rc, char *buf)
{
    int len = 0, cls = 0;

    if (rc == MPI_SUCCESS) {
        strcpy(buf, "MPI_SUCCESS");
        return buf;
    }
    PMPI_Error_class(rc, &cls);
    if (PMPI_Error_string(rc, buf, &len) != MPI_SUCCESS) {
        snprintf(buf, MPI_MAX_ERROR_STRING, "error %d", rc);
    }
    snprintf(buf + strlen(buf), 32, " [class %d]", cls);
    return buf;
}

#ifdef __CUDA_RUNTIME_API_H__
#define TST_CUDA(_call)                                                                      \
    do {                                                                                     \
        cudaError_t _e = (_call);                                                            \
        if (_e != cudaSuccess) {                                                             \
            fprintf(stderr, "[%s r%d] %s failed: %s (%s:%d)\n", tst_name, tst_rank, #_call,  \
                    cudaGetErrorString(_e), __FILE__, __LINE__);                             \
            PMPI_Abort(MPI_COMM_WORLD, 3);                                                   \
        }                                                                                    \
    } while (0)
#endif

#endif
