/*
 * mpi_fake_device: tlmpi's device-buffer control flow on a machine without a GPU. Linked with
 * tests/fakes/fakecudart.c (a CPU stand-in for the CUDA runtime: "GPUs" whose memory is host
 * memory, copies are memmove) and pointed at tests/fakes/fakenccl.c (a CPU stand-in for NCCL that
 * really runs the collective between the processes of one host, through shared memory), it checks,
 * on fresh random small integers with poisoned outputs:
 *  - the staging tier end to end on "device" buffers (allreduce, allgather, reduce_scatter_block,
 *    in place and not), against exact expected values;
 *  - the one-rank `self` path on MPI_COMM_SELF (a device copy), in place and not;
 *  - the forced NCCL tier on all ranks, the same three collectives in place and not against exact
 *    expected values, including tlmpi's spin wait on a host word;
 *  - buffers on another device than the one the communicator's NCCL tier was created on (a
 *    process driving two GPUs): the rank still takes part in NCCL, through scratch memory on the
 *    communicator's device, and the result lands in the caller's buffer (one-rank communicator, where
 *    NCCL copies input to output), for all three collectives, in place and not;
 *  - error handling: with the fake stream failing (no GPU write ever arrives, stream queries report
 *    a launch failure) an NCCL-tier call and a self-path call return an error through the
 *    communicator's error handler instead of hanging, and the next call after the failure clears
 *    succeeds.
 */
#include "config.h"
#include "tlmpi.h"
#include "harness.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <libgen.h>
#include <unistd.h>

extern int fake_stream_error;

#define N 4096

static long long path_calls(tlmpi_coll_t c, tlmpi_path_t p)
{
    tlmpi_stat_t st;

    tlmpi_get_stats(c, p, &st);
    return (long long)st.calls;
}

/* Fresh small integers (exact in double, so every summation order agrees), the same function of
 * (seed, rank, index) on every rank so each can compute the expected results. */
static uint64_t g_seed;

static double val(int r, long i)
{
    uint64_t x = g_seed ^ ((uint64_t)(r + 1) << 40) ^ (uint64_t)i * 0x9E3779B97F4A7C15ULL;

    x ^= x >> 31;
    x *= 0xBF58476D1CE4E5B9ULL;
    x ^= x >> 29;
    return (double)((int)(x % 9) - 4);
}

static double sum_over_ranks(long i)
{
    double v = 0;

    for (int r = 0; r < tst_size; r++) v += val(r, i);
    return v;
}

/* ncclCommInitRank calls the fake NCCL counted (0 while tlmpi has not loaded it) */
static unsigned long fake_nccl_inits(void)
{
    const char *lib = getenv("TLMPI_NCCL_LIBRARY");
    void *h = lib ? dlopen(lib, RTLD_NOW | RTLD_NOLOAD) : NULL;
    unsigned long n = 0;

    if (h) {
        unsigned long *c = (unsigned long *)dlsym(h, "fake_nccl_comm_inits");

        if (c) n = __atomic_load_n(c, __ATOMIC_RELAXED);
        dlclose(h);
    }
    return n;
}

static void set_tier(const char *t)
{
    TST_CHECK(tlmpi_config_set("TIER", t) == TLMPI_OK, "tlmpi_config_set(TIER, %s)", t);
}

/* allreduce, allgather and reduce_scatter_block on MPI_COMM_WORLD, not in place and in place, on the
 * "device" buffers ds/dr (N doubles per rank block), with inputs val(rank, base + ...): each call must
 * succeed, take path `path` and give the exact result; what is not output keeps its poison */
static void three_collectives(const char *tier, tlmpi_path_t path, double *ds, double *dr, long base)
{
    long long before;
    int i, k, rc;

    set_tier(tier);
    for (k = 0; k < 2; k++) { /* k = 1: in place */
        const char *ip = k ? "in place" : "not in place";

        /* allreduce */
        for (i = 0; i < N; i++) {
            ds[i] = val(tst_rank, base + i);
            dr[i] = -1e300; /* poison */
        }
        if (k) memcpy(dr, ds, N * sizeof(double));
        before = path_calls(TLMPI_COLL_ALLREDUCE, path);
        rc = MPI_Allreduce(k ? MPI_IN_PLACE : ds, dr, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        TST_CHECK(rc == MPI_SUCCESS, "%s allreduce (%s): rc %d", tier, ip, rc);
        TST_CHECK(path_calls(TLMPI_COLL_ALLREDUCE, path) == before + 1, "%s allreduce (%s) not on path %s", tier,
                  ip, tlmpi_path_name(path));
        for (i = 0; i < N; i++) {
            double want = sum_over_ranks(base + i);
            if (dr[i] != want) {
                TST_FAIL("%s allreduce (%s): element %d = %g, expected %g", tier, ip, i, dr[i], want);
                break;
            }
        }
        /* allgather (in place: this rank's block already in dr) */
        for (i = 0; i < (tst_size + 1) * N; i++) dr[i] = -1e300;
        for (i = 0; i < N; i++) {
            ds[i] = val(tst_rank, base + N + i);
            if (k) dr[(long)tst_rank * N + i] = ds[i];
        }
        before = path_calls(TLMPI_COLL_ALLGATHER, path);
        rc = MPI_Allgather(k ? MPI_IN_PLACE : ds, N, MPI_DOUBLE, dr, N, MPI_DOUBLE, MPI_COMM_WORLD);
        TST_CHECK(rc == MPI_SUCCESS, "%s allgather (%s): rc %d", tier, ip, rc);
        TST_CHECK(path_calls(TLMPI_COLL_ALLGATHER, path) == before + 1, "%s allgather (%s) not on path %s", tier,
                  ip, tlmpi_path_name(path));
        for (i = 0; i < tst_size * N; i++) {
            if (dr[i] != val(i / N, base + N + i % N)) {
                TST_FAIL("%s allgather (%s): element %d = %g", tier, ip, i, dr[i]);
                break;
            }
        }
        TST_CHECK(dr[tst_size * N] == -1e300, "%s allgather (%s): wrote past its output", tier, ip);
        /* reduce_scatter_block (in place: the whole input in dr, the result at its start) */
        for (i = 0; i < (tst_size + 1) * N; i++) dr[i] = -1e300;
        for (i = 0; i < tst_size * N; i++) {
            ds[i] = val(tst_rank, base + 2 * N + i);
            if (k) dr[i] = ds[i];
        }
        before = path_calls(TLMPI_COLL_REDUCE_SCATTER_BLOCK, path);
        rc = MPI_Reduce_scatter_block(k ? MPI_IN_PLACE : ds, dr, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        TST_CHECK(rc == MPI_SUCCESS, "%s reduce_scatter_block (%s): rc %d", tier, ip, rc);
        TST_CHECK(path_calls(TLMPI_COLL_REDUCE_SCATTER_BLOCK, path) == before + 1,
                  "%s reduce_scatter_block (%s) not on path %s", tier, ip, tlmpi_path_name(path));
        for (i = 0; i < N; i++) {
            double want = sum_over_ranks(base + 2 * N + (long)tst_rank * N + i);
            if (dr[i] != want) {
                TST_FAIL("%s reduce_scatter_block (%s): element %d = %g, expected %g", tier, ip, i, dr[i], want);
                break;
            }
        }
        if (!k) TST_CHECK(dr[N] == -1e300, "%s reduce_scatter_block: wrote past its output", tier);
    }
}

int main(int argc, char **argv)
{
    double *ds, *dr, *es, *er, *h;
    MPI_Comm one;
    long long before;
    unsigned long inits;
    char exe[4096], lib[4200];
    ssize_t len;
    int i, k, rc;

    /* the fake NCCL next to this program (libtool puts the module in .libs) */
    if (!getenv("TLMPI_NCCL_LIBRARY") && (len = readlink("/proc/self/exe", exe, sizeof(exe) - 1)) > 0) {
        exe[len] = '\0';
        snprintf(lib, sizeof(lib), "%s/.libs/libfakenccl.so", dirname(exe));
        setenv("TLMPI_NCCL_LIBRARY", lib, 1);
    }
    /* two fake GPUs; "device" buffers large enough to be mmap'd (not in the brk heap, which is host
     * for sure): ds/dr on device 0, es/er on device 1 */
    setenv("FAKE_CUDA_DEVICES", "2", 1);
    cudaSetDevice(1);
    cudaMalloc((void **)&es, 4 * N * sizeof(double));
    cudaMalloc((void **)&er, 4 * N * sizeof(double));
    cudaSetDevice(0);
    cudaMalloc((void **)&ds, 8 * N * sizeof(double)); /* (ranks + 1) blocks: up to 7 ranks */
    cudaMalloc((void **)&dr, 8 * N * sizeof(double));
    h = malloc(4 * N * sizeof(double));
    tst_init("mpi_fake_device", &argc, &argv);
    if (tst_size > 7) {
        return tst_skip("written for at most 7 ranks");
    }
    tst_rng_sync();
    g_seed = tst_rand();

    /* 1. staging tier, end to end */
    three_collectives("staging", TLMPI_PATH_STAGING, ds, dr, 0);

    /* 2. one rank: the self path copies on the "device", and auto builds no NCCL communicator for it */
    set_tier("auto");
    inits = fake_nccl_inits();
    for (k = 0; k < 2; k++) {
        for (i = 0; i < N; i++) {
            ds[i] = val(tst_rank, 4 * N + i);
            dr[i] = k ? ds[i] : -1e300; /* poison */
        }
        before = path_calls(TLMPI_COLL_ALLREDUCE, TLMPI_PATH_SELF);
        rc = MPI_Allreduce(k ? MPI_IN_PLACE : ds, dr, N, MPI_DOUBLE, MPI_MAX, MPI_COMM_SELF);
        TST_CHECK(rc == MPI_SUCCESS, "self allreduce (in place %d): rc %d", k, rc);
        TST_CHECK(path_calls(TLMPI_COLL_ALLREDUCE, TLMPI_PATH_SELF) == before + 1, "one-rank allreduce not on the self path");
        TST_CHECK(memcmp(dr, ds, N * sizeof(double)) == 0, "self allreduce (in place %d): output is not the input", k);
    }
    /* a host receive buffer with one rank: not the self path (staging serves mixed pairs) */
    before = path_calls(TLMPI_COLL_ALLGATHER, TLMPI_PATH_STAGING);
    rc = MPI_Allgather(ds, N, MPI_DOUBLE, h, N, MPI_DOUBLE, MPI_COMM_SELF);
    TST_CHECK(rc == MPI_SUCCESS && memcmp(h, ds, N * sizeof(double)) == 0, "one-rank mixed allgather");
    TST_CHECK(path_calls(TLMPI_COLL_ALLGATHER, TLMPI_PATH_STAGING) == before + 1, "mixed pair not staged");
    TST_CHECK(fake_nccl_inits() == inits, "one-rank communicator under auto: %lu NCCL communicators created (a "
              "one-rank NCCL communicator holds GPU memory for nothing)", fake_nccl_inits() - inits);

    /* 3. forced NCCL tier on all ranks (the fake NCCL communicates: results checked as for staging) */
    three_collectives("nccl", TLMPI_PATH_NCCL, ds, dr, 10 * N);

    /* 5. buffers on the other device than the communicator's NCCL tier (created on device 0 by the
     * first call); one rank, so the fake NCCL's copy makes every result checkable */
    tst_expect("a WARN per rank: buffers on device 1, the communicator's NCCL tier on device 0");
    MPI_Comm_dup(MPI_COMM_SELF, &one);
    MPI_Comm_set_errhandler(one, MPI_ERRORS_RETURN);
    for (i = 0; i < N; i++) {
        ds[i] = val(tst_rank, 5 * N + i);
        dr[i] = -1e300;
    }
    rc = MPI_Allreduce(ds, dr, N, MPI_DOUBLE, MPI_SUM, one);
    TST_CHECK(rc == MPI_SUCCESS && memcmp(dr, ds, N * sizeof(double)) == 0, "nccl allreduce on device 0");
    for (k = 0; k < 2; k++) {
        const char *ip = k ? "in place" : "not in place";

        for (i = 0; i < N; i++) {
            es[i] = val(tst_rank, 6 * N + i);
            er[i] = k ? es[i] : -1e300;
        }
        before = path_calls(TLMPI_COLL_ALLREDUCE, TLMPI_PATH_NCCL);
        rc = MPI_Allreduce(k ? MPI_IN_PLACE : es, er, N, MPI_DOUBLE, MPI_SUM, one);
        TST_CHECK(rc == MPI_SUCCESS, "other-device allreduce (%s): rc %d", ip, rc);
        TST_CHECK(path_calls(TLMPI_COLL_ALLREDUCE, TLMPI_PATH_NCCL) == before + 1, "other-device allreduce not on NCCL");
        TST_CHECK(memcmp(er, es, N * sizeof(double)) == 0, "other-device allreduce (%s): wrong result", ip);
        for (i = 0; i < N; i++) {
            es[i] = val(tst_rank, 7 * N + i);
            er[i] = k ? es[i] : -1e300;
        }
        rc = MPI_Allgather(k ? MPI_IN_PLACE : es, N, MPI_DOUBLE, er, N, MPI_DOUBLE, one);
        TST_CHECK(rc == MPI_SUCCESS && memcmp(er, es, N * sizeof(double)) == 0, "other-device allgather (%s)", ip);
        for (i = 0; i < N; i++) {
            es[i] = val(tst_rank, 8 * N + i);
            er[i] = k ? es[i] : -1e300;
        }
        rc = MPI_Reduce_scatter_block(k ? MPI_IN_PLACE : es, er, N, MPI_DOUBLE, MPI_SUM, one);
        TST_CHECK(rc == MPI_SUCCESS && memcmp(er, es, N * sizeof(double)) == 0, "other-device reduce_scatter_block (%s)", ip);
        /* mixed: send buffer on device 1, receive buffer on the comm's device 0 */
        for (i = 0; i < N; i++) {
            es[i] = val(tst_rank, 9 * N + i);
            dr[i] = -1e300;
        }
        rc = MPI_Allreduce(es, dr, N, MPI_DOUBLE, MPI_SUM, one);
        TST_CHECK(rc == MPI_SUCCESS && memcmp(dr, es, N * sizeof(double)) == 0, "send on device 1, receive on device 0");
    }
    MPI_Comm_free(&one);

    /* 4. a failing stream: errors, not hangs; then recovery */
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    tst_expect("ERROR lines ending in 'failed: fake': the fake CUDA stream is made to fail on every rank");
    fake_stream_error = 1;
    rc = MPI_Allreduce(ds, dr, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    TST_CHECK(rc != MPI_SUCCESS, "nccl allreduce on a failing stream returned success");
    set_tier("auto");
    rc = MPI_Allreduce(ds, dr, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_SELF);
    TST_CHECK(rc != MPI_SUCCESS, "self allreduce on a failing stream returned success");
    fake_stream_error = 0;
    set_tier("nccl");
    rc = MPI_Allreduce(ds, dr, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    TST_CHECK(rc == MPI_SUCCESS, "nccl allreduce after the failure cleared: rc %d", rc);
    set_tier("auto");
    rc = MPI_Allreduce(ds, dr, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_SELF);
    TST_CHECK(rc == MPI_SUCCESS && memcmp(dr, ds, N * sizeof(double)) == 0, "self allreduce after the failure cleared");

    rc = tst_finish();
    free(h);
    return rc;
}
