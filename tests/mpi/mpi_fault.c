/*
 * mpi_fault: the device-buffer collectives under injected faults (tests/mpi/fault.sh runs it with
 * TLMPI_FAULT=site:rank, see src/core/fault.c). Linked with the fake CUDA runtime of tests/fakes
 * (device memory is host memory) and pointed at the fake NCCL (tests/fakes/fakenccl.c, dlopen'ed by
 * tlmpi from this program's .libs unless TLMPI_NCCL_LIBRARY says otherwise), on a dup of
 * MPI_COMM_WORLD it runs a few rounds of
 *   MPI_Allreduce (MPI_INT + MPI_SUM, MPI_DOUBLE + MPI_MAX), MPI_Allgather (MPI_INT, MPI_DOUBLE) and
 *   MPI_Reduce_scatter_block (MPI_INT + MPI_SUM, MPI_DOUBLE + MPI_MAX), in place and not,
 * on cudaMalloc'd buffers, with fresh random small integers (a function of the run's seed, the rank
 * and the index: every rank computes every rank's input) and poisoned outputs (a guard after each
 * output must keep its poison), checked exactly against a host reference.
 * Then the paths (tlmpi_get_stats, counted from before the first call): every call of a collective
 * must have taken one path, the same for the three collectives, the same on every rank (per-rank
 * paths gathered with PMPI_Allgather), and the one FAULT_EXPECT_PATH names (nccl|staging|self|node)
 * when that is set. Each rank prints "mpi_fault: rank R path P", then "mpi_fault: rank R multicast
 * requests N" (what the fake CUDA runtime and the fake NCCL counted as requests for multicast
 * objects; fault.sh checks it), "mpi_fault: rank R nccl inits N devcomm creates M" (the fake NCCL's
 * calls of ncclCommInitRank and ncclDevCommCreate), then the plan of the dup in words
 * (tlmpi_comm_describe) as "mpi_fault: rank R plan ..."; rank 0 the harness's verdict.
 * TLMPI_TEST_ROUNDS (default 3) rounds. Each rank uses device rank % (number of devices):
 * FAKE_CUDA_DEVICES=4 gives every rank its own fake GPU (then no two ranks share one).
 */
#include "config.h"
#include "tlmpi.h"

#include <cuda_runtime_api.h>
#include "harness.h"

#include <dlfcn.h>
#include <libgen.h>
#include <unistd.h>

#define MAXC 2048 /* elements per rank block, at most */
#define GUARD 16
#define NCOLL 3

static const tlmpi_coll_t coll_id[NCOLL] = { TLMPI_COLL_ALLREDUCE, TLMPI_COLL_ALLGATHER,
                                             TLMPI_COLL_REDUCE_SCATTER_BLOCK };
static const char *const coll_name[NCOLL] = { "allreduce", "allgather", "reduce_scatter_block" };

static uint64_t g_seed;
static long g_calls[NCOLL];
static MPI_Comm g_comm;

/* input of rank r, element i, of call `call`: an integer in [-4, 4] (exact in double) */
static int val(long call, int r, long i)
{
    uint64_t x = g_seed ^ ((uint64_t)(r + 1) << 44) ^ ((uint64_t)call << 24) ^ (uint64_t)i * 0x9E3779B97F4A7C15ULL;

    x ^= x >> 31;
    x *= 0xBF58476D1CE4E5B9ULL;
    x ^= x >> 29;
    x ^= x >> 32;
    return (int)(x % 9) - 4;
}

/* the poison: outside [-4 * ranks, 4 * ranks] */
#define POISON_I (-123456789)
#define POISON_D (-1e300)

static void put(int dbl, void *b, long i, double v)
{
    if (dbl) ((double *)b)[i] = v;
    else ((int *)b)[i] = (int)v;
}

static double get(int dbl, const void *b, long i)
{
    return dbl ? ((const double *)b)[i] : (double)((const int *)b)[i];
}

static void poison(int dbl, void *b, long n)
{
    for (long i = 0; i < n; i++) put(dbl, b, i, dbl ? POISON_D : POISON_I);
}

/* reduction over ranks of element i of call `call`: sum for int, max for double */
static double reduced(int dbl, long call, long i)
{
    double v = val(call, 0, i);

    for (int r = 1; r < tst_size; r++) {
        double x = val(call, r, i);
        v = dbl ? (x > v ? x : v) : v + x;
    }
    return v;
}

/* one call: collective c, int/double, in place or not, count elements per rank block */
static void one_call(int c, int dbl, int inplace, long count, long call, void *ds, void *dr, void *hs, void *hr)
{
    size_t es = dbl ? sizeof(double) : sizeof(int);
    MPI_Datatype dt = dbl ? MPI_DOUBLE : MPI_INT;
    MPI_Op op = dbl ? MPI_MAX : MPI_SUM;
    long nin, nout, total = (long)(tst_size + 1) * MAXC + GUARD, i;
    const char *ip = inplace ? "in place" : "not in place";
    char err[MPI_MAX_ERROR_STRING + 32];
    int rc = MPI_SUCCESS;

    nin = c == 2 ? count * tst_size : count;  /* input elements of this rank */
    nout = c == 0 ? count : c == 1 ? count * tst_size : count; /* output elements */
    poison(dbl, hs, total);
    poison(dbl, hr, total);
    for (i = 0; i < nin; i++) put(dbl, hs, i, val(call, tst_rank, i));
    if (inplace) {
        if (c == 1) {
            for (i = 0; i < count; i++) put(dbl, hr, (long)tst_rank * count + i, val(call, tst_rank, i));
        } else {
            for (i = 0; i < nin; i++) put(dbl, hr, i, val(call, tst_rank, i));
        }
    }
    TST_CUDA(cudaMemcpy(ds, hs, total * es, cudaMemcpyHostToDevice));
    TST_CUDA(cudaMemcpy(dr, hr, total * es, cudaMemcpyHostToDevice));
    switch (c) {
    case 0:
        rc = MPI_Allreduce(inplace ? MPI_IN_PLACE : ds, dr, (int)count, dt, op, g_comm);
        break;
    case 1:
        rc = MPI_Allgather(inplace ? MPI_IN_PLACE : ds, (int)count, dt, dr, (int)count, dt, g_comm);
        break;
    case 2:
        rc = MPI_Reduce_scatter_block(inplace ? MPI_IN_PLACE : ds, dr, (int)count, dt, op, g_comm);
        break;
    }
    g_calls[c]++;
    TST_CHECK(rc == MPI_SUCCESS, "%s %s (%s, count %ld): %s", coll_name[c], dbl ? "double" : "int", ip, count,
              tst_err_string(rc, err));
    TST_CUDA(cudaMemcpy(hr, dr, total * es, cudaMemcpyDeviceToHost));
    for (i = 0; i < nout; i++) {
        double want, got = get(dbl, hr, i);

        if (c == 0) want = reduced(dbl, call, i);
        else if (c == 1) want = val(call, (int)(i / count), i % count);
        else want = reduced(dbl, call, (long)tst_rank * count + i);
        if (got != want) {
            TST_FAIL("%s %s (%s, count %ld, call %ld): element %ld = %g, expected %g", coll_name[c],
                     dbl ? "double" : "int", ip, count, call, i, got, want);
            break;
        }
    }
    /* past the output: poison kept (in place reduce_scatter_block keeps its input after the block) */
    if (!(inplace && c == 2)) {
        for (i = nout; i < nout + GUARD; i++) {
            if (get(dbl, hr, i) != (dbl ? POISON_D : POISON_I)) {
                TST_FAIL("%s %s (%s, count %ld): wrote past its output (element %ld)", coll_name[c],
                         dbl ? "double" : "int", ip, count, i);
                break;
            }
        }
    }
}

static const struct {
    tlmpi_path_t path;
    const char *name;
} paths[] = {
    { TLMPI_PATH_NCCL, "nccl" }, { TLMPI_PATH_STAGING, "staging" }, { TLMPI_PATH_SELF, "self" },
    { TLMPI_PATH_PASSTHROUGH, "passthrough" }, { TLMPI_PATH_HOSTOP, "hostop" }, { TLMPI_PATH_NODE, "node" },
};
#define NPATHS ((int)(sizeof(paths) / sizeof(paths[0])))

/* the fakes' counters of multicast requests (tests/fakes): the CUDA runtime is linked in; the NCCL,
 * if tlmpi loaded it, is found through the same dlopen name */
extern unsigned long fake_cuda_multicast_requests;

/* a counter of the fake NCCL (0 where tlmpi did not load it) */
static unsigned long fake_nccl_count(const char *name)
{
    const char *lib = getenv("TLMPI_NCCL_LIBRARY");
    void *h = lib ? dlopen(lib, RTLD_NOW | RTLD_NOLOAD) : NULL;
    unsigned long n = 0;

    if (h) {
        unsigned long *c = (unsigned long *)dlsym(h, name);

        if (c) n = __atomic_load_n(c, __ATOMIC_RELAXED);
        dlclose(h);
    }
    return n;
}

static unsigned long multicast_requests(void)
{
    return __atomic_load_n(&fake_cuda_multicast_requests, __ATOMIC_RELAXED) +
           fake_nccl_count("fake_nccl_multicast_requests");
}

static uint64_t calls_on(tlmpi_coll_t c, tlmpi_path_t p)
{
    tlmpi_stat_t st = { 0, 0 };

    tlmpi_get_stats(c, p, &st);
    return st.calls;
}

int main(int argc, char **argv)
{
    uint64_t before[NCOLL][NPATHS];
    int mine[NCOLL], *all, rounds, k, c, j, r, p, rpath;
    const char *expect = getenv("FAULT_EXPECT_PATH"), *rounds_env = getenv("TLMPI_TEST_ROUNDS");
    void *ds, *dr, *hs, *hr;
    char exe[4096], lib[4200];
    ssize_t len;
    size_t cap;
    long call = 0;

    /* the fake NCCL next to this program (libtool puts the module in .libs) */
    if (!getenv("TLMPI_NCCL_LIBRARY") && (len = readlink("/proc/self/exe", exe, sizeof(exe) - 1)) > 0) {
        exe[len] = '\0';
        snprintf(lib, sizeof(lib), "%s/.libs/libfakenccl.so", dirname(exe));
        setenv("TLMPI_NCCL_LIBRARY", lib, 1);
    }
    tst_init("mpi_fault", &argc, &argv);
    if (tst_size > 16) {
        return tst_skip("written for at most 16 ranks");
    }
    rounds = rounds_env && *rounds_env ? atoi(rounds_env) : 3;
    {
        int ndev = 1;

        TST_CUDA(cudaGetDeviceCount(&ndev));
        TST_CUDA(cudaSetDevice(tst_rank % (ndev > 0 ? ndev : 1)));
    }
    cap = ((size_t)(tst_size + 1) * MAXC + GUARD) * sizeof(double);
    TST_CUDA(cudaMalloc(&ds, cap));
    TST_CUDA(cudaMalloc(&dr, cap));
    hs = tst_malloc(cap);
    hr = tst_malloc(cap);
    MPI_Comm_dup(MPI_COMM_WORLD, &g_comm);
    MPI_Comm_set_errhandler(g_comm, MPI_ERRORS_RETURN);
    tst_rng_sync(); /* counts, types and the data seed: the same on every rank */
    g_seed = tst_rand();
    for (c = 0; c < NCOLL; c++) {
        for (j = 0; j < NPATHS; j++) before[c][j] = calls_on(coll_id[c], paths[j].path);
    }

    for (k = 0; k < rounds; k++) {
        for (int inplace = 0; inplace < 2; inplace++) {
            for (int dbl = 0; dbl < 2; dbl++) {
                for (c = 0; c < NCOLL; c++) {
                    long count = (long)tst_rand_range(1, MAXC);

                    one_call(c, dbl, inplace, count, call++, ds, dr, hs, hr);
                }
            }
        }
    }

    /* one path per collective on this rank (-1: several or none), then the same everywhere */
    for (c = 0; c < NCOLL; c++) {
        mine[c] = -1;
        for (j = 0; j < NPATHS; j++) {
            uint64_t n = calls_on(coll_id[c], paths[j].path) - before[c][j];

            if (n == (uint64_t)g_calls[c] && mine[c] == -1) {
                mine[c] = j;
            } else if (n != 0) {
                TST_FAIL("%s: %llu of %ld calls on path %s", coll_name[c], (unsigned long long)n, g_calls[c],
                         paths[j].name);
                mine[c] = -2;
            }
        }
        TST_CHECK(mine[c] >= 0, "%s: not every call on one path", coll_name[c]);
    }
    rpath = mine[0];
    for (c = 1; c < NCOLL; c++) {
        TST_CHECK(mine[c] == rpath, "%s on path %s but allreduce on %s", coll_name[c],
                  mine[c] >= 0 ? paths[mine[c]].name : "(mixed)", rpath >= 0 ? paths[rpath].name : "(mixed)");
        if (mine[c] != rpath) rpath = -1;
    }
    printf("mpi_fault: rank %d path %s\n", tst_rank, rpath >= 0 ? paths[rpath].name : "mixed");
    {
        char plan[2048];

        printf("mpi_fault: rank %d multicast requests %lu\n", tst_rank, multicast_requests());
        printf("mpi_fault: rank %d nccl inits %lu devcomm creates %lu\n", tst_rank,
               fake_nccl_count("fake_nccl_comm_inits"), fake_nccl_count("fake_nccl_devcomm_creates"));
        if (tlmpi_comm_describe(g_comm, plan, sizeof(plan)) == TLMPI_OK) {
            printf("mpi_fault: rank %d plan %s\n", tst_rank, plan);
        }
    }
    fflush(stdout);
    all = tst_malloc(sizeof(int) * NCOLL * (size_t)tst_size);
    PMPI_Allgather(mine, NCOLL, MPI_INT, all, NCOLL, MPI_INT, MPI_COMM_WORLD);
    if (tst_rank == 0) {
        for (r = 0; r < tst_size; r++) {
            for (c = 0; c < NCOLL; c++) {
                p = all[r * NCOLL + c];
                TST_CHECK(p == all[c], "%s: rank %d on path %s, rank 0 on %s", coll_name[c], r,
                          p >= 0 ? paths[p].name : "(mixed)", all[c] >= 0 ? paths[all[c]].name : "(mixed)");
                if (expect && *expect) {
                    TST_CHECK(p >= 0 && !strcmp(paths[p].name, expect), "%s: rank %d on path %s, expected %s",
                              coll_name[c], r, p >= 0 ? paths[p].name : "(mixed)", expect);
                }
            }
        }
    }
    free(all);
    MPI_Comm_free(&g_comm);
    cudaFree(ds);
    cudaFree(dr);
    free(hs);
    free(hr);
    return tst_finish();
}
