/*
 * passthrough: what an interposer adds to small host-buffer collectives, measured in ONE run.
 *
 * An ordinary MPI program: it neither includes tlmpi.h nor links libtlmpi. Run it with the
 * interposer preloaded (mpiexec -genv LD_PRELOAD=/abs/libtlmpi.so ...). Every MPI_X call then goes
 * through the interposer, while PMPI_X calls go straight to the MPI library, so both are timed in
 * the same processes, on the same buffers, at the same moment:
 *
 *   for each collective (8-byte Allreduce, Allgather, Reduce_scatter_block):
 *     reps times: barrier, time a block of N MPI_X calls; barrier, time a block of N PMPI_X calls
 *                 (the order alternates every rep so that drift and cache effects cancel)
 *     per rep:    per-call time of each block (max over ranks) and their difference
 *     report:     median per-call of each; median, p10, p90 of the per-rep differences
 *
 * Without a preloaded interposer both columns are the same MPI and the overhead is ~0 ± noise,
 * which is the control experiment. The run also says whether tlmpi is in the process.
 *
 * --callgrind=mpi|pmpi: no timing; N calls of MPI_Allreduce (or PMPI_Allreduce) inside a function
 * of that name (cg_phase_mpi / cg_phase_pmpi) after warm-up, for bench/callgrind.sh. --cg-op picks
 * what the N calls are (the other calls of an iteration are PMPI_* in both phases):
 *   allreduce   MPI_Allreduce (default)
 *   iallreduce  MPI_Iallreduce, then PMPI_Wait
 *   wait        PMPI_Iallreduce, then MPI_Wait on the MPI's own request
 *   test        PMPI_Iallreduce, PMPI_Wait, then MPI_Test on the (now null) handle: the interposer's
 *               cost on a request that is not its own (tlmpi's fast path never looks at the handle)
 *
 * --buf=KIND: where the host buffers live (on a GPU node each kind takes its own way through tlmpi's
 * host classification, src/mem/classify.c):
 *   heap     calloc after MPI_Init (default; the brk heap)
 *   preinit  calloc before MPI_Init (the brk heap, allocated before tlmpi's lazy init)
 *   mmap     one anonymous private mmap made before MPI_Init
 */
#define _GNU_SOURCE
#include <mpi.h>

#include <dlfcn.h>
#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <sys/mman.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_stats.h"

enum { COLL_ALLREDUCE, COLL_ALLGATHER, COLL_RSB, COLL_N };
static const char *const coll_names[COLL_N] = { "MPI_Allreduce", "MPI_Allgather",
                                                "MPI_Reduce_scatter_block" };

typedef struct {
    int reps, calls, warmup;
    double target_ns;
    int strict;
    unsigned colls;       /* bit per COLL_* */
    const char *callgrind; /* NULL, "mpi" or "pmpi" */
} opts_t;

static int rank, size;
static double *sbuf, *rbuf;
static unsigned long long mpi_calls[COLL_N]; /* MPI_X calls made (what tlmpi should count) */

static double now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* One block of n calls; use_pmpi picks the plain MPI. Buffers: 8 bytes per rank. */
static void run_block(int coll, int use_pmpi, int n)
{
    int i;

    switch (coll) {
    case COLL_ALLREDUCE:
        if (use_pmpi) {
            for (i = 0; i < n; i++) {
                PMPI_Allreduce(sbuf, rbuf, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            }
        } else {
            for (i = 0; i < n; i++) {
                MPI_Allreduce(sbuf, rbuf, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            }
        }
        break;
    case COLL_ALLGATHER:
        if (use_pmpi) {
            for (i = 0; i < n; i++) {
                PMPI_Allgather(sbuf, 1, MPI_DOUBLE, rbuf, 1, MPI_DOUBLE, MPI_COMM_WORLD);
            }
        } else {
            for (i = 0; i < n; i++) {
                MPI_Allgather(sbuf, 1, MPI_DOUBLE, rbuf, 1, MPI_DOUBLE, MPI_COMM_WORLD);
            }
        }
        break;
    default:
        if (use_pmpi) {
            for (i = 0; i < n; i++) {
                PMPI_Reduce_scatter_block(sbuf, rbuf, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            }
        } else {
            for (i = 0; i < n; i++) {
                MPI_Reduce_scatter_block(sbuf, rbuf, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            }
        }
        break;
    }
    if (!use_pmpi) {
        mpi_calls[coll] += (unsigned long long)n;
    }
}

/* Poison the receive buffer, run one call, check the result against the exact expected values. */
static int check_once(int coll, int use_pmpi)
{
    int i, bad = 0;
    double expect_sum = 0;

    for (i = 0; i < size; i++) {
        rbuf[i] = -12345.5;
        expect_sum += (double)(i + 1);
    }
    for (i = 0; i < size; i++) {
        sbuf[i] = (double)(rank + 1) * (coll == COLL_RSB ? (double)(i + 1) : 1.0);
    }
    run_block(coll, use_pmpi, 1);
    switch (coll) {
    case COLL_ALLREDUCE:
        bad = rbuf[0] != expect_sum;
        break;
    case COLL_ALLGATHER:
        for (i = 0; i < size; i++) {
            bad |= rbuf[i] != (double)(i + 1);
        }
        break;
    default:
        bad = rbuf[0] != expect_sum * (double)(rank + 1);
        break;
    }
    if (bad) {
        fprintf(stderr, "rank %d: wrong result of %s%s\n", rank, use_pmpi ? "P" : "", coll_names[coll]);
    }
    return bad;
}

/* Percentile (nearest rank, 0..100) of v[0..n-1]; sorts v. */
static double pct(double *v, int n, double p)
{
    int k;

    qsort(v, (size_t)n, sizeof(*v), bench_cmp_double);
    k = (int)(p / 100.0 * (double)(n - 1) + 0.5);
    return v[k < 0 ? 0 : (k >= n ? n - 1 : k)];
}

typedef struct {
    double mpi_med, pmpi_med, d_med, d_p10, d_p90, d_lo, d_hi;
} result_t;


static result_t measure(int coll, const opts_t *o)
{
    double *t_mpi = calloc((size_t)o->reps, sizeof(double));
    double *t_pmpi = calloc((size_t)o->reps, sizeof(double));
    double *d = calloc((size_t)o->reps, sizeof(double));
    result_t r;
    int rep, k;

    run_block(coll, 0, o->warmup);
    run_block(coll, 1, o->warmup);
    for (rep = 0; rep < o->reps; rep++) {
        for (k = 0; k < 2; k++) {
            int use_pmpi = (rep + k) & 1; /* even reps: MPI first; odd reps: PMPI first */
            double t0;

            PMPI_Barrier(MPI_COMM_WORLD);
            t0 = now_ns();
            run_block(coll, use_pmpi, o->calls);
            (use_pmpi ? t_pmpi : t_mpi)[rep] = (now_ns() - t0) / (double)o->calls;
        }
    }
    /* a block took as long as its slowest rank */
    PMPI_Allreduce(MPI_IN_PLACE, t_mpi, o->reps, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    PMPI_Allreduce(MPI_IN_PLACE, t_pmpi, o->reps, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    for (rep = 0; rep < o->reps; rep++) {
        d[rep] = t_mpi[rep] - t_pmpi[rep];
    }
    r.mpi_med = pct(t_mpi, o->reps, 50);
    r.pmpi_med = pct(t_pmpi, o->reps, 50);
    r.d_med = pct(d, o->reps, 50);
    r.d_p10 = pct(d, o->reps, 10);
    r.d_p90 = pct(d, o->reps, 90);
    bench_median_ci(d, o->reps, &r.d_lo, &r.d_hi);
    free(t_mpi);
    free(t_pmpi);
    free(d);
    return r;
}

/* For callgrind: one function per phase, never inlined, so --toggle-collect can name it. */
enum { CG_ALLREDUCE, CG_IALLREDUCE, CG_WAIT, CG_TEST };
static int cg_op;
static inline __attribute__((always_inline)) void cg_run(int use_pmpi, int n)
{
    MPI_Request r;
    int i, flag;

    if (cg_op == CG_ALLREDUCE) {
        run_block(COLL_ALLREDUCE, use_pmpi, n);
        return;
    }
    for (i = 0; i < n; i++) {
        switch (cg_op) {
        case CG_IALLREDUCE:
            if (use_pmpi) {
                PMPI_Iallreduce(sbuf, rbuf, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &r);
            } else {
                MPI_Iallreduce(sbuf, rbuf, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &r);
            }
            PMPI_Wait(&r, MPI_STATUS_IGNORE);
            break;
        case CG_WAIT:
            PMPI_Iallreduce(sbuf, rbuf, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &r);
            if (use_pmpi) {
                PMPI_Wait(&r, MPI_STATUS_IGNORE);
            } else {
                MPI_Wait(&r, MPI_STATUS_IGNORE);
            }
            break;
        default:
            PMPI_Iallreduce(sbuf, rbuf, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &r);
            PMPI_Wait(&r, MPI_STATUS_IGNORE);
            if (use_pmpi) {
                PMPI_Test(&r, &flag, MPI_STATUS_IGNORE);
            } else {
                MPI_Test(&r, &flag, MPI_STATUS_IGNORE);
            }
            break;
        }
    }
}
__attribute__((noinline)) void cg_phase_mpi(int n);
__attribute__((noinline)) void cg_phase_pmpi(int n);
__attribute__((noinline)) void cg_phase_mpi(int n)
{
    cg_run(0, n);
}
__attribute__((noinline)) void cg_phase_pmpi(int n)
{
    cg_run(1, n);
}

static void usage(const char *argv0)
{
    fprintf(stderr,
            "usage: %s [options]\n"
            "  -r, --reps N        alternating MPI/PMPI block pairs per collective (default 1000)\n"
            "  -n, --calls N       calls per block (default 100)\n"
            "  -w, --warmup N      untimed calls of each kind first (default 1000)\n"
            "  -c, --colls LIST    comma list of allreduce,allgather,rsb (default all)\n"
            "  -t, --target NS     overhead target for the 8-byte Allreduce median (default 50)\n"
            "  -s, --strict        exit 2 when the target is missed\n"
            "      --callgrind=mpi|pmpi  no timing: warm up, then N (-n) Allreduce calls inside\n"
            "                      cg_phase_mpi() / cg_phase_pmpi() (see bench/callgrind.sh)\n"
            "      --cg-op=OP      what the callgrind calls are: allreduce (default), iallreduce, wait, test\n"
            "      --buf=KIND      host buffers: heap (calloc after MPI_Init, default), preinit (calloc\n"
            "                      before MPI_Init), mmap (an anonymous mmap made before MPI_Init)\n",
            argv0);
}

static int parse(int argc, char **argv, opts_t *o)
{
    static const struct option lo[] = {
        { "reps", required_argument, NULL, 'r' },   { "calls", required_argument, NULL, 'n' },
        { "warmup", required_argument, NULL, 'w' }, { "colls", required_argument, NULL, 'c' },
        { "target", required_argument, NULL, 't' }, { "strict", no_argument, NULL, 's' },
        { "callgrind", required_argument, NULL, 'G' }, { "help", no_argument, NULL, 'h' },
        { "cg-op", required_argument, NULL, 'O' }, { "buf", required_argument, NULL, 'B' },
        { NULL, 0, NULL, 0 }
    };
    int ch;

    o->reps = 1000;
    o->calls = 100;
    o->warmup = 1000;
    o->target_ns = 50;
    o->strict = 0;
    o->colls = (1u << COLL_N) - 1;
    o->callgrind = NULL;
    while ((ch = getopt_long(argc, argv, "r:n:w:c:t:sh", lo, NULL)) != -1) {
        switch (ch) {
        case 'r': o->reps = atoi(optarg); break;
        case 'n': o->calls = atoi(optarg); break;
        case 'w': o->warmup = atoi(optarg); break;
        case 't': o->target_ns = atof(optarg); break;
        case 's': o->strict = 1; break;
        case 'G': o->callgrind = optarg; break;
        case 'B': break; /* read before MPI_Init (buf_kind) */
        case 'O':
            if (!strcmp(optarg, "allreduce")) cg_op = CG_ALLREDUCE;
            else if (!strcmp(optarg, "iallreduce")) cg_op = CG_IALLREDUCE;
            else if (!strcmp(optarg, "wait")) cg_op = CG_WAIT;
            else if (!strcmp(optarg, "test")) cg_op = CG_TEST;
            else return -1;
            break;
        case 'c': {
            char *s = strdup(optarg), *tok, *save = NULL;

            o->colls = 0;
            for (tok = strtok_r(s, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                if (!strcmp(tok, "allreduce")) o->colls |= 1u << COLL_ALLREDUCE;
                else if (!strcmp(tok, "allgather")) o->colls |= 1u << COLL_ALLGATHER;
                else if (!strcmp(tok, "rsb") || !strcmp(tok, "reduce_scatter_block")) o->colls |= 1u << COLL_RSB;
                else { free(s); return -1; }
            }
            free(s);
            break;
        }
        default: return -1;
        }
    }
    if (o->reps < 1 || o->calls < 1 || o->warmup < 0 || !o->colls ||
        (o->callgrind && strcmp(o->callgrind, "mpi") && strcmp(o->callgrind, "pmpi"))) {
        return -1;
    }
    return 0;
}

/* Is an interposer in this process? Which library does MPI_Allreduce resolve to? */
static void describe_interposer(void)
{
    const char *(*ver)(void) = (const char *(*)(void))dlsym(RTLD_DEFAULT, "tlmpi_version");
    void *mpi_sym = dlsym(RTLD_DEFAULT, "MPI_Allreduce");
    void *pmpi_sym = dlsym(RTLD_DEFAULT, "PMPI_Allreduce");
    Dl_info a, b;
    char mpiver[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    char *nl;

    PMPI_Get_library_version(mpiver, &len);
    if ((nl = strchr(mpiver, '\n'))) {
        *nl = '\0';
    }
    printf("MPI library      : %s\n", mpiver);
    printf("ranks            : %d\n", size);
    if (ver) {
        printf("tlmpi            : detected in the process (tlmpi_version() = %s)\n", ver());
    } else {
        printf("tlmpi            : NOT detected (no tlmpi_version symbol): both columns are plain MPI\n");
    }
    if (mpi_sym && pmpi_sym && dladdr(mpi_sym, &a) && dladdr(pmpi_sym, &b)) {
        printf("MPI_Allreduce    : resolves to %s\n", a.dli_fname);
        printf("PMPI_Allreduce   : resolves to %s\n", b.dli_fname);
    }
}

/* --buf: allocated before MPI_Init for preinit and mmap (for up to BUF_MAX_RANKS ranks) */
#define BUF_MAX_RANKS 4096
static const char *buf_kind = "heap";
static double *pre_buf;

static void buf_early(int argc, char **argv)
{
    int i;

    for (i = 1; i < argc; i++) {
        if (!strncmp(argv[i], "--buf=", 6)) {
            buf_kind = argv[i] + 6;
        }
    }
    if (!strcmp(buf_kind, "preinit")) {
        pre_buf = calloc(2 * BUF_MAX_RANKS, sizeof(double));
    } else if (!strcmp(buf_kind, "mmap")) {
        pre_buf = mmap(NULL, 2 * BUF_MAX_RANKS * sizeof(double), PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (pre_buf == MAP_FAILED) {
            pre_buf = NULL;
        }
    }
}

int main(int argc, char **argv)
{
    opts_t o;
    result_t res[COLL_N];
    int c, bad = 0, miss = 0;

    buf_early(argc, argv);
    MPI_Init(&argc, &argv);
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &size);
    if (strcmp(buf_kind, "heap") && (!pre_buf || size > BUF_MAX_RANKS)) {
        if (rank == 0) {
            fprintf(stderr, "passthrough: --buf=%s: unknown kind, allocation failed or over %d ranks\n",
                    buf_kind, BUF_MAX_RANKS);
        }
        MPI_Finalize();
        return 1;
    }
    if (parse(argc, argv, &o) != 0) {
        if (rank == 0) {
            usage(argv[0]);
        }
        MPI_Finalize();
        return 1;
    }
    if (pre_buf) {
        sbuf = pre_buf;
        rbuf = pre_buf + BUF_MAX_RANKS;
    } else {
        sbuf = calloc((size_t)size, sizeof(double));
        rbuf = calloc((size_t)size, sizeof(double));
    }

    if (o.callgrind) {
        int use_pmpi = !strcmp(o.callgrind, "pmpi");

        bad |= check_once(COLL_ALLREDUCE, 0) | check_once(COLL_ALLREDUCE, 1);
        cg_run(use_pmpi, o.warmup); /* lazy init and first-call binding */
        PMPI_Barrier(MPI_COMM_WORLD);
        if (use_pmpi) {
            cg_phase_pmpi(o.calls);
        } else {
            cg_phase_mpi(o.calls);
        }
        PMPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) {
            static const char *const what[] = { "MPI_Allreduce", "MPI_Iallreduce (+ PMPI_Wait)",
                                                "MPI_Wait (after PMPI_Iallreduce)", "MPI_Test (null handle)" };

            printf("callgrind phase %s: %d %s%s calls of 8 bytes on %d ranks, %s buffers\n", o.callgrind, o.calls,
                   use_pmpi ? "P" : "", what[cg_op], size, buf_kind);
        }
        PMPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        MPI_Finalize();
        return bad ? 1 : 0;
    }

    if (rank == 0) {
        describe_interposer();
        printf("method           : %d reps x (block of %d MPI_X calls, block of %d PMPI_X calls), "
               "order alternating, barrier before each block, 8 bytes per rank, host buffers (%s)\n\n",
               o.reps, o.calls, o.calls, buf_kind);
    }
    for (c = 0; c < COLL_N; c++) {
        if (o.colls & (1u << c)) {
            bad |= check_once(c, 0) | check_once(c, 1);
            res[c] = measure(c, &o);
            bad |= check_once(c, 0) | check_once(c, 1);
        }
    }
    PMPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("%-26s %10s %10s %14s %17s %8s %8s\n", "8-byte collective", "MPI_X ns", "PMPI_X ns",
               "overhead ns", "95% CI of median", "p10", "p90");
        printf("%-26s %10s %10s %14s %17s %8s %8s\n", "(ns per call)", "median", "median", "median diff",
               "", "diff", "diff");
        for (c = 0; c < COLL_N; c++) {
            if (o.colls & (1u << c)) {
                char ci[40];

                snprintf(ci, sizeof(ci), "[%.1f, %.1f]", res[c].d_lo, res[c].d_hi);
                printf("%-26s %10.1f %10.1f %14.1f %17s %8.1f %8.1f\n", coll_names[c], res[c].mpi_med,
                       res[c].pmpi_med, res[c].d_med, ci, res[c].d_p10, res[c].d_p90);
            }
        }
        printf("\n");
        if (o.colls & (1u << COLL_ALLREDUCE)) {
            miss = res[COLL_ALLREDUCE].d_med > o.target_ns;
            printf("target: 8-byte MPI_Allreduce pass-through overhead <= %.0f ns per call (median): %s "
                   "(%.1f ns)\n", o.target_ns, miss ? "MISSED" : "met", res[COLL_ALLREDUCE].d_med);
        }
        printf("results checked before and after timing: %s\n", bad ? "WRONG" : "correct");
        printf("MPI_X calls made per rank (compare with the interposer's counters):");
        for (c = 0; c < COLL_N; c++) {
            if (mpi_calls[c]) {
                printf(" %s %llu x 8 B;", coll_names[c] + 4, mpi_calls[c]);
            }
        }
        printf("\n");
        fflush(stdout);
    }
    if (!pre_buf) {
        free(sbuf);
        free(rbuf);
    }
    MPI_Finalize();
    return bad ? 1 : (o.strict && miss ? 2 : 0);
}
