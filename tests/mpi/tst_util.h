/*
 * tst_util: the small harness shared by the MPI tests in tests/mpi (plain C, no Check, so that
 * they also run on hosts without Check). Each test:
 *  - seeds a per-rank generator from TLMPI_TEST_SEED or the clock (printed, to reproduce a run),
 *  - reports failures with TST_FAIL (the first TST_MAX_PRINT per rank are printed),
 *  - ends with tst_finish(), which sums the failures over MPI_COMM_WORLD with PMPI_Allreduce so
 *    every rank exits alike (0 = pass, 1 = fail).
 * Only PMPI_* is used for the harness's own communication, so it never touches tlmpi's counters.
 */
#ifndef TLMPI_TST_UTIL_H
#define TLMPI_TST_UTIL_H

#include <mpi.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TST_MAX_PRINT 12

static int tst_rank, tst_size;
static long tst_failures, tst_checks;
static uint64_t tst_rng_state;
static const char *tst_name = "test";

static void tst_fail_(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void tst_fail_(const char *file, int line, const char *fmt, ...)
{
    va_list ap;

    if (tst_failures++ < TST_MAX_PRINT) {
        fprintf(stderr, "[%s r%d] FAIL %s:%d: ", tst_name, tst_rank, file, line);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
    }
}
#define TST_FAIL(...) tst_fail_(__FILE__, __LINE__, __VA_ARGS__)
#define TST_CHECK(_cond, ...)                                                                \
    do {                                                                                     \
        tst_checks++;                                                                        \
        if (!(_cond)) {                                                                      \
            TST_FAIL(__VA_ARGS__);                                                           \
        }                                                                                    \
    } while (0)

/* xorshift64*: fast, reproducible, good enough for test data */
static inline uint64_t tst_rand(void)
{
    uint64_t x = tst_rng_state;

    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    tst_rng_state = x;
    return x * 0x2545F4914F6CDD1DULL;
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

/* MPI_Init, error handler, seed. MPI_ERRORS_RETURN so that a failing call is reported by the
 * test rather than aborting the job. */
static inline void tst_init(const char *name, int *argc, char ***argv)
{
    const char *s = getenv("TLMPI_TEST_SEED");
    uint64_t seed;

    tst_name = name;
    MPI_Init(argc, argv);
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

/* Same random stream on every rank from here on (for rank-uniform choices such as counts). */
static inline void tst_rng_sync(void)
{
    PMPI_Bcast(&tst_rng_state, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
}

/* Combine the verdict over all ranks; finalize; return the exit code. */
static inline int tst_finish(void)
{
    long v[2] = { tst_failures, tst_checks }, all[2] = { 0, 0 };

    PMPI_Allreduce(v, all, 2, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
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

#endif
