/*
 * gpu_regcache: the node tier's registration cache on a real GPU (src/transport/regcache.c): blocking
 * MPI_Allreduce / MPI_Allgather / MPI_Reduce_scatter_block zero-copy between the application's buffers,
 * 2..8 ranks on this host's GPU(s) (under MPS where they share one), TLMPI_TIER=node and
 * TLMPI_NODE_REG_MIN=64k (set unless given). Every call has fresh small integers (float, exact sums),
 * a poisoned output and a host reference:
 *  a  the same cudaMalloc buffers called again and again (first, then hits), every collective, in place;
 *  b  sub-views at odd 16-byte offsets of one large allocation;
 *  c  the receive buffer freed and allocated again with another size and other contents, 6 times (the
 *     driver often gives the same address back: counted and printed); a cache that served the old
 *     mapping would read and write the freed memory, and the results would be wrong;
 *  d  one rank's send buffer of another kind in one call (cudaMallocAsync, managed, cuMem/VMM with a POSIX
 *     fd handle as PyTorch's expandable segments): the call runs through the pools on every rank, right;
 *     the next call on cudaMalloc buffers is zero-copy again;
 *  e  a communicator made under TLMPI_NODE_REG_MAX of one buffer pair (every rank's allocations count),
 *     round robin over 3 pairs: every call registers, allocations are evicted, results right;
 *  f  stream-ordered calls (tlmpi_allreduce_enqueue) on a stream: first, hits, and on the bounded
 *     communicator of e alternating pairs (the entries a queued kernel used are let go after the drain);
 *  g  a captured tlmpi_allreduce_enqueue replayed 3 times with fresh inputs (its entries pinned), then
 *     blocking calls on other buffers under the bound of e (the pinned pair stays), and one more replay;
 *  h  non-blocking calls (MPI_I* + MPI_Wait / MPI_Waitall), gated on the device (kernels.h): on buffers a
 *     blocking call registered, every collective, zero-copy (the describe line's count moves by one per
 *     call); one rank on fresh buffers: the pools, right; one rank's receive buffer freed and allocated
 *     again (often at its old address): its memo no longer matches, the pools, right (a memo matched by
 *     address alone would have the peers write into the freed allocation: wrong results here); a blocking
 *     call registers it, zero-copy again; three calls in flight on three registered pairs, one Waitall.
 * Checks that zero-copy ran: the node tier's "direct" algorithm counters and tlmpi_get_reg_stats (hits,
 * first registrations, pool fallbacks, evictions; the same on every rank). Exit 77 without a GPU.
 */
#include "config.h"
#include "tlmpi.h"

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define MB ((size_t)1 << 20)
#define NMAX 8

static float *g_h, *g_ref;      /* host: input of every rank, and the reference */
static size_t g_cap;            /* floats in g_h */

static float val(uint64_t seed, int r, size_t i)
{
    uint64_t x = seed ^ ((uint64_t)(r + 1) << 40) ^ (uint64_t)i * 0x9E3779B97F4A7C15ULL;

    x ^= x >> 31;
    x *= 0xBF58476D1CE4E5B9ULL;
    x ^= x >> 29;
    return (float)((int)(x % 17) - 8);
}

static void host_room(size_t n)
{
    if (n > g_cap) {
        free(g_h);
        free(g_ref);
        g_h = malloc(n * sizeof(float));
        g_ref = malloc(n * sizeof(float));
        g_cap = n;
    }
}

static long compare(const float *dev, size_t n, const char *what)
{
    long bad = 0;
    size_t i;

    TST_CUDA(cudaMemcpy(g_h, dev, n * sizeof(float), cudaMemcpyDeviceToHost));
    for (i = 0; i < n; i++) {
        if (g_h[i] != g_ref[i]) {
            if (bad++ == 0) {
                fprintf(stderr, "[r%d] %s: [%zu] = %g, expected %g\n", tst_rank, what, i, g_h[i], g_ref[i]);
            }
        }
    }
    TST_CHECK(bad == 0, "%s: %ld wrong elements", what, bad);
    return bad;
}

/* fresh inputs of an allreduce of n floats in g_h (this rank's), its result in g_ref */
static void allreduce_data(MPI_Comm comm, size_t n)
{
    uint64_t seed;
    int size, r;
    size_t i;

    MPI_Comm_size(comm, &size);
    host_room(n);
    tst_rng_sync();
    seed = tst_rand();
    for (i = 0; i < n; i++) {
        g_h[i] = val(seed, tst_rank, i);
        g_ref[i] = 0;
        for (r = 0; r < size; r++) {
            g_ref[i] += val(seed, r, i);
        }
    }
}

/* g_nb: the t_* calls below use the non-blocking form and MPI_Wait (case h) */
static int g_nb;

static int wait_ok(MPI_Request *q)
{
    return MPI_Wait(q, MPI_STATUS_IGNORE) == MPI_SUCCESS;
}

/* allreduce of n floats: in (NULL: in place on out) */
static void t_allreduce(MPI_Comm comm, float *in, float *out, size_t n, const char *what)
{
    MPI_Request q;

    allreduce_data(comm, n);
    TST_CUDA(cudaMemcpy(in ? in : out, g_h, n * sizeof(float), cudaMemcpyHostToDevice));
    if (in) {
        TST_CUDA(cudaMemset(out, 0xff, n * sizeof(float)));
    }
    if (g_nb) {
        TST_CHECK(MPI_Iallreduce(in ? in : MPI_IN_PLACE, out, (int)n, MPI_FLOAT, MPI_SUM, comm, &q) == MPI_SUCCESS &&
                  wait_ok(&q), "%s: MPI_Iallreduce + MPI_Wait", what);
    } else {
        TST_CHECK(MPI_Allreduce(in ? in : MPI_IN_PLACE, out, (int)n, MPI_FLOAT, MPI_SUM, comm) == MPI_SUCCESS,
                  "%s: MPI_Allreduce", what);
    }
    compare(out, n, what);
}

/* allgather of blocks of n floats (in NULL: in place) */
static void t_allgather(MPI_Comm comm, float *in, float *out, size_t n, const char *what)
{
    uint64_t seed;
    int size, rank, r;
    size_t i;

    MPI_Comm_size(comm, &size);
    MPI_Comm_rank(comm, &rank);
    host_room(n * (size_t)size);
    tst_rng_sync();
    seed = tst_rand();
    for (r = 0; r < size; r++) {
        for (i = 0; i < n; i++) {
            g_ref[(size_t)r * n + i] = val(seed, r, i);
        }
    }
    TST_CUDA(cudaMemset(out, 0xff, n * (size_t)size * sizeof(float)));
    TST_CUDA(cudaMemcpy(in ? in : out + (size_t)rank * n, g_ref + (size_t)rank * n, n * sizeof(float),
                        cudaMemcpyHostToDevice));
    if (g_nb) {
        MPI_Request q;

        TST_CHECK(MPI_Iallgather(in ? in : MPI_IN_PLACE, (int)n, MPI_FLOAT, out, (int)n, MPI_FLOAT, comm, &q) ==
                      MPI_SUCCESS && wait_ok(&q), "%s: MPI_Iallgather + MPI_Wait", what);
    } else {
        TST_CHECK(MPI_Allgather(in ? in : MPI_IN_PLACE, (int)n, MPI_FLOAT, out, (int)n, MPI_FLOAT, comm) ==
                      MPI_SUCCESS, "%s: MPI_Allgather", what);
    }
    compare(out, n * (size_t)size, what);
}

/* reduce_scatter_block with result blocks of n floats */
static void t_rsb(MPI_Comm comm, float *in, float *out, size_t n, const char *what)
{
    uint64_t seed;
    int size, rank, r;
    size_t i;

    MPI_Comm_size(comm, &size);
    MPI_Comm_rank(comm, &rank);
    host_room(n * (size_t)size);
    tst_rng_sync();
    seed = tst_rand();
    for (i = 0; i < n * (size_t)size; i++) {
        g_h[i] = val(seed, rank, i);
    }
    TST_CUDA(cudaMemcpy(in, g_h, n * (size_t)size * sizeof(float), cudaMemcpyHostToDevice));
    for (i = 0; i < n; i++) {
        g_ref[i] = 0;
        for (r = 0; r < size; r++) {
            g_ref[i] += val(seed, r, (size_t)rank * n + i);
        }
    }
    TST_CUDA(cudaMemset(out, 0xff, n * sizeof(float)));
    if (g_nb) {
        MPI_Request q;

        TST_CHECK(MPI_Ireduce_scatter_block(in, out, (int)n, MPI_FLOAT, MPI_SUM, comm, &q) == MPI_SUCCESS &&
                      wait_ok(&q), "%s: MPI_Ireduce_scatter_block + MPI_Wait", what);
    } else {
        TST_CHECK(MPI_Reduce_scatter_block(in, out, (int)n, MPI_FLOAT, MPI_SUM, comm) == MPI_SUCCESS,
                  "%s: MPI_Reduce_scatter_block", what);
    }
    compare(out, n, what);
}

static tlmpi_reg_stats_t g_last;
static unsigned long long g_direct;

static unsigned long long direct_calls(void)
{
    unsigned long long s = 0;
    int c;

    for (c = 0; c < TLMPI_COLL_COUNT; c++) {
        tlmpi_stat_t st;

        if (tlmpi_get_algo_stats((tlmpi_coll_t)c, TLMPI_PATH_NODE, "direct", &st) == TLMPI_OK) {
            s += st.calls;
        }
    }
    return s;
}

/* the lookups and zero-copy calls since the last look; want < 0: not checked */
static void expect(long hit, long first, long pool, long direct, const char *what)
{
    tlmpi_reg_stats_t s;
    unsigned long long d = direct_calls();
    long got[4];

    tlmpi_get_reg_stats(&s);
    got[0] = (long)(s.hits - g_last.hits);
    got[1] = (long)(s.firsts - g_last.firsts);
    got[2] = (long)(s.pool - g_last.pool);
    got[3] = (long)(d - g_direct);
    TST_CHECK((hit < 0 || got[0] == hit) && (first < 0 || got[1] == first) && (pool < 0 || got[2] == pool) &&
              (direct < 0 || got[3] == direct), "%s: %ld hit, %ld first, %ld pool, %ld zero-copy; expected %ld, %ld, "
              "%ld, %ld (-1: any)", what, got[0], got[1], got[2], got[3], hit, first, pool, direct);
    if (tst_rank == 0) {
        printf("# %s: %ld hit, %ld first, %ld pool, %ld zero-copy, %llu evicted, %d peer allocations mapped (%llu MiB)\n",
               what, got[0], got[1], got[2], got[3], s.evicted - g_last.evicted, s.mapped, s.mapped_bytes >> 20);
    }
    g_last = s;
    g_direct = d;
}

typedef CUresult (*create_fn)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *, unsigned long long);
typedef CUresult (*reserve_fn)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long);
typedef CUresult (*map_fn)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long);
typedef CUresult (*access_fn)(CUdeviceptr, size_t, const CUmemAccessDesc *, size_t);
typedef CUresult (*unmap_fn)(CUdeviceptr, size_t);
typedef CUresult (*release_fn)(CUmemGenericAllocationHandle);
typedef CUresult (*afree_fn)(CUdeviceptr, size_t);

static void *sym(const char *name)
{
    void *f = NULL;
    enum cudaDriverEntryPointQueryResult q;

    if (cudaGetDriverEntryPointByVersion(name, &f, 12000, cudaEnableDefault, &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess) {
        return NULL;
    }
    return f;
}

/* a cuMem allocation of bytes (a multiple of 2 MiB) with a POSIX fd handle type, as PyTorch's expandable
 * segments; NULL where the driver has no VMM */
static void *vmm_alloc(size_t bytes, CUmemGenericAllocationHandle *h)
{
    create_fn create = (create_fn)sym("cuMemCreate");
    reserve_fn reserve = (reserve_fn)sym("cuMemAddressReserve");
    map_fn map = (map_fn)sym("cuMemMap");
    access_fn access = (access_fn)sym("cuMemSetAccess");
    CUmemAllocationProp prop;
    CUmemAccessDesc acc;
    CUdeviceptr v = 0;
    int dev;

    if (!create || !reserve || !map || !access) {
        return NULL;
    }
    cudaGetDevice(&dev);
    memset(&prop, 0, sizeof(prop));
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = dev;
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    if (create(h, bytes, &prop, 0) != CUDA_SUCCESS || reserve(&v, bytes, 0, 0, 0) != CUDA_SUCCESS ||
        map(v, bytes, 0, *h, 0) != CUDA_SUCCESS) {
        return NULL;
    }
    memset(&acc, 0, sizeof(acc));
    acc.location = prop.location;
    acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    if (access(v, bytes, &acc, 1) != CUDA_SUCCESS) {
        return NULL;
    }
    return (void *)(uintptr_t)v;
}

static void vmm_free(void *p, size_t bytes, CUmemGenericAllocationHandle h)
{
    unmap_fn unmap = (unmap_fn)sym("cuMemUnmap");
    release_fn release = (release_fn)sym("cuMemRelease");
    afree_fn afree = (afree_fn)sym("cuMemAddressFree");

    if (unmap && release && afree) {
        unmap((CUdeviceptr)(uintptr_t)p, bytes);
        release(h);
        afree((CUdeviceptr)(uintptr_t)p, bytes);
    }
}

/* f, g: stream-ordered and captured calls (input written on the stream, the result checked after a sync) */
static void t_enqueue(MPI_Comm comm, cudaStream_t st, cudaGraphExec_t ge, float *in, float *out, size_t n,
                      const char *what)
{
    allreduce_data(comm, n);
    TST_CUDA(cudaMemcpyAsync(in, g_h, n * sizeof(float), cudaMemcpyHostToDevice, st));
    TST_CUDA(cudaMemsetAsync(out, 0xff, n * sizeof(float), st));
    if (ge) {
        TST_CUDA(cudaGraphLaunch(ge, st));
    } else {
        TST_CHECK(tlmpi_allreduce_enqueue(in, out, (int)n, MPI_FLOAT, MPI_SUM, comm, st) == MPI_SUCCESS,
                  "%s: tlmpi_allreduce_enqueue: %s", what, tlmpi_enqueue_error());
    }
    TST_CUDA(cudaStreamSynchronize(st));
    compare(out, n, what);
}

static void case_streams(MPI_Comm bounded, float **x, float **y, size_t n)
{
    cudaStream_t st;
    cudaGraph_t g;
    cudaGraphExec_t ge;
    float *gs, *gr;
    int k;

    TST_CUDA(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    for (k = 0; k < 3; k++) {
        t_enqueue(MPI_COMM_WORLD, st, NULL, x[0], y[0], n, "f: stream-ordered");
    }
    expect(2, 1, 0, 3, "f: stream-ordered");
    for (k = 0; k < 6; k++) {
        t_enqueue(bounded, st, NULL, x[k % 2], y[k % 2], n, "f: stream-ordered, alternating under the bound");
    }
    expect(0, 6, 0, 6, "f: alternating under the bound");
    /* g: captured */
    TST_CUDA(cudaMalloc((void **)&gs, n * sizeof(float)));
    TST_CUDA(cudaMalloc((void **)&gr, n * sizeof(float)));
    TST_CUDA(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
    TST_CHECK(tlmpi_allreduce_enqueue(gs, gr, (int)n, MPI_FLOAT, MPI_SUM, bounded, st) == MPI_SUCCESS,
              "g: captured tlmpi_allreduce_enqueue: %s", tlmpi_enqueue_error());
    TST_CUDA(cudaStreamEndCapture(st, &g));
    TST_CUDA(cudaGraphInstantiate(&ge, g, 0));
    expect(0, 1, 0, 1, "g: captured");
    for (k = 0; k < 3; k++) {
        t_enqueue(bounded, st, ge, gs, gr, n, "g: replayed");
    }
    for (k = 0; k < 4; k++) {
        t_allreduce(bounded, x[k % 3], y[k % 3], n, "g: blocking calls on other buffers beside the graph");
    }
    t_enqueue(bounded, st, ge, gs, gr, n, "g: replayed after them");
    expect(-1, 4, 0, 4, "g: after the replays");
    TST_CUDA(cudaGraphExecDestroy(ge));
    TST_CUDA(cudaGraphDestroy(g));
    TST_CUDA(cudaStreamDestroy(st));
    cudaFree(gs);
    cudaFree(gr);
}

/* The describe line's count of gated non-blocking calls that ran zero-copy on comm (collective). */
static long gated_direct(MPI_Comm comm)
{
    static char buf[4096];
    const char *p;
    long v = -1;

    if (tlmpi_comm_describe(comm, buf, sizeof(buf)) == TLMPI_OK && (p = strstr(buf, "zero-copy: "))) {
        v = strtol(p + 11, NULL, 10);
    } else if (tlmpi_comm_describe(comm, buf, sizeof(buf)) == TLMPI_OK) {
        v = 0; /* no gated call yet */
    }
    return v;
}

/* h: non-blocking calls gated on the device (see the header) */
static void case_gated(float *s, float *r, size_t n)
{
    MPI_Comm c = MPI_COMM_WORLD;
    long z0, z;
    int k;
    float *fs, *fr, *ps[3], *pr[3];
    MPI_Request q[3];

    t_allreduce(c, s, r, n, "h: blocking, registers the pair");
    z0 = gated_direct(c);
    g_nb = 1;
    t_allreduce(c, s, r, n, "h: MPI_Iallreduce on registered buffers");
    t_allreduce(c, NULL, r, n, "h: MPI_Iallreduce in place (not registered as such: the pools)");
    z = gated_direct(c);
    TST_CHECK(z == z0 + 1, "h: gated zero-copy calls %ld -> %ld, expected one more", z0, z);
    /* the blocking calls on the same pair of pointers find the allreduce's memo: they run gated and
     * zero-copy too (no host collective); then the non-blocking ones: four in all (r after case c holds
     * 4.25 n floats: allgather blocks of n / 2 fit 8 ranks) */
    g_nb = 0;
    t_allgather(c, s, r, n / 2, "h: blocking allgather on the allreduce's pair (its memo)");
    t_rsb(c, s, r, n / 2, "h: blocking reduce_scatter_block on the allreduce's pair (its memo)");
    g_nb = 1;
    t_allgather(c, s, r, n / 2, "h: MPI_Iallgather on registered buffers");
    t_rsb(c, s, r, n / 2, "h: MPI_Ireduce_scatter_block on registered buffers");
    z0 = z;
    z = gated_direct(c);
    TST_CHECK(z == z0 + 4, "h: gated zero-copy calls %ld -> %ld, expected four more", z0, z);

    /* one rank on fresh buffers */
    TST_CUDA(cudaMalloc((void **)&fs, n * sizeof(float)));
    TST_CUDA(cudaMalloc((void **)&fr, n * sizeof(float)));
    t_allreduce(c, tst_rank == 0 ? fs : s, tst_rank == 0 ? fr : r, n, "h: rank 0 on fresh buffers");
    z0 = z;
    z = gated_direct(c);
    TST_CHECK(z == z0, "h: rank 0 on fresh buffers: gated zero-copy calls %ld -> %ld, expected none", z0, z);

    /* one rank's receive buffer freed and allocated again (the last rank's) */
    for (k = 0; k < 3; k++) {
        if (tst_rank == tst_size - 1) {
            TST_CUDA(cudaFree(r));
            TST_CUDA(cudaMalloc((void **)&r, 8 * n * sizeof(float)));
        }
        t_allreduce(c, s, r, n, "h: the last rank's receive buffer allocated again");
        z0 = z;
        z = gated_direct(c);
        TST_CHECK(z == z0, "h: re-allocated: gated zero-copy calls %ld -> %ld, expected none", z0, z);
    }
    g_nb = 0;
    t_allreduce(c, s, r, n, "h: blocking on it, registers");
    g_nb = 1;
    t_allreduce(c, s, r, n, "h: MPI_Iallreduce on it");
    z0 = z;
    z = gated_direct(c);
    TST_CHECK(z == z0 + 1, "h: registered again: gated zero-copy calls %ld -> %ld, expected one more", z0, z);

    /* three in flight, one Waitall */
    g_nb = 0;
    for (k = 0; k < 3; k++) {
        TST_CUDA(cudaMalloc((void **)&ps[k], n * sizeof(float)));
        TST_CUDA(cudaMalloc((void **)&pr[k], n * sizeof(float)));
        t_allreduce(c, ps[k], pr[k], n, "h: blocking, registers a pair");
    }
    allreduce_data(c, n);
    for (k = 0; k < 3; k++) {
        TST_CUDA(cudaMemcpy(ps[k], g_h, n * sizeof(float), cudaMemcpyHostToDevice));
        TST_CUDA(cudaMemset(pr[k], 0xff, n * sizeof(float)));
    }
    for (k = 0; k < 3; k++) {
        TST_CHECK(MPI_Iallreduce(ps[k], pr[k], (int)n, MPI_FLOAT, MPI_SUM, c, &q[k]) == MPI_SUCCESS,
                  "h: MPI_Iallreduce %d of 3", k);
    }
    TST_CHECK(MPI_Waitall(3, q, MPI_STATUSES_IGNORE) == MPI_SUCCESS, "h: MPI_Waitall");
    for (k = 0; k < 3; k++) {
        compare(pr[k], n, "h: three in flight");
    }
    z0 = z;
    z = gated_direct(c);
    TST_CHECK(z == z0 + 3, "h: three in flight: gated zero-copy calls %ld -> %ld, expected three more", z0, z);
    if (tst_rank == 0) {
        printf("# h: %ld gated non-blocking calls ran zero-copy in all\n", z);
    }
    for (k = 0; k < 3; k++) {
        cudaFree(ps[k]);
        cudaFree(pr[k]);
    }
    cudaFree(fs);
    cudaFree(fr);
    g_nb = 0;
    cudaFree(r);
}

int main(int argc, char **argv)
{
    int ndev = 0, k, same = 0, all_same = 0;
    const size_t n = 2 * MB / sizeof(float); /* 2 MiB messages (allgather / reduce-scatter: a block) */
    float *s, *r, *big, *x[3], *y[3];
    MPI_Comm dup;
    char bound[32];

    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < 1) {
        printf("SKIP: no CUDA device\n");
        return 77;
    }
    setenv("TLMPI_TIER", "node", 0);
    setenv("TLMPI_NODE_REG_MIN", "64k", 0);
    tst_init("gpu_regcache", &argc, &argv);
    if (tst_size < 2 || tst_size > NMAX) {
        return tst_skip("written for 2..8 ranks");
    }
    TST_CUDA(cudaSetDevice(tst_rank % ndev));
    tlmpi_get_reg_stats(&g_last);
    g_direct = direct_calls();

    /* a: the same buffers again and again */
    TST_CUDA(cudaMalloc((void **)&s, 8 * n * sizeof(float)));
    TST_CUDA(cudaMalloc((void **)&r, 8 * n * sizeof(float)));
    t_allreduce(MPI_COMM_WORLD, s, r, n, "a: allreduce 2 MiB, first");
    expect(0, 1, 0, 1, "a: first");
    for (k = 0; k < 3; k++) {
        t_allreduce(MPI_COMM_WORLD, s, r, n, "a: allreduce 2 MiB again");
    }
    t_allreduce(MPI_COMM_WORLD, s, r, 4 * n, "a: allreduce 8 MiB");
    t_allreduce(MPI_COMM_WORLD, NULL, r, n, "a: allreduce in place");
    t_allgather(MPI_COMM_WORLD, s, r, n, "a: allgather 2 MiB blocks");
    t_allgather(MPI_COMM_WORLD, NULL, r, n, "a: allgather in place");
    t_rsb(MPI_COMM_WORLD, s, r, n, "a: reduce_scatter_block 2 MiB blocks");
    expect(8, 0, 0, 8, "a: hits");
    t_allreduce(MPI_COMM_WORLD, s, r, 1024, "a: allreduce 4 KiB (below the minimum)");
    expect(0, 0, 0, 0, "a: small");

    /* b: sub-views of one allocation at odd 16-byte offsets */
    TST_CUDA(cudaMalloc((void **)&big, 4 * n * sizeof(float)));
    for (k = 0; k < 4; k++) {
        size_t o = 4 * (size_t)(2 * k + 1); /* floats: 16, 48, 80, 112 bytes */

        t_allreduce(MPI_COMM_WORLD, big + o, big + 2 * n + 3 * o, n, "b: sub-views of one allocation");
    }
    expect(3, 1, 0, 4, "b: sub-views");

    /* c: freed and allocated again, another size, other contents */
    for (k = 0; k < 6; k++) {
        uintptr_t old = (uintptr_t)r;
        size_t bytes = 8 * n * sizeof(float) / (k % 2 ? 2 : 1) + (k % 3) * MB;

        TST_CUDA(cudaFree(r));
        TST_CUDA(cudaMalloc((void **)&r, bytes));
        same += (uintptr_t)r == old;
        t_allreduce(MPI_COMM_WORLD, s, r, n, "c: a re-allocated receive buffer");
        t_allgather(MPI_COMM_WORLD, s, r, n / 2, "c: allgather into it");
    }
    MPI_Allreduce(&same, &all_same, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (tst_rank == 0) {
        printf("# c: the re-allocated receive buffer had its old address %d of 6 times on every rank\n", all_same);
    }
    expect(6, 6, 0, 12, "c: re-allocated");

    /* d: one rank's send buffer of another kind */
    {
        const char *kinds[3] = { "cudaMallocAsync", "managed", "cuMem (VMM)" };

        for (k = 0; k < 3; k++) {
            float *o = s;
            CUmemGenericAllocationHandle h = 0;
            int odd = tst_rank == k % tst_size, vmm_ok = 1, all_ok;
            char what[96];

            if (odd) {
                if (k == 0) {
                    TST_CUDA(cudaMallocAsync((void **)&o, 8 * MB, 0));
                    TST_CUDA(cudaStreamSynchronize(0));
                } else if (k == 1) {
                    TST_CUDA(cudaMallocManaged((void **)&o, 8 * MB, cudaMemAttachGlobal));
                } else if (!(o = vmm_alloc(8 * MB, &h))) {
                    o = s;
                    vmm_ok = 0;
                }
            }
            MPI_Allreduce(&vmm_ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
            snprintf(what, sizeof(what), "d: rank %d's send buffer %s", k % tst_size, kinds[k]);
            t_allreduce(MPI_COMM_WORLD, o, r, n, what);
            expect(all_ok ? 0 : -1, all_ok ? 0 : -1, all_ok ? 1 : -1, all_ok ? 0 : -1, what);
            t_allreduce(MPI_COMM_WORLD, s, r, n, "d: cudaMalloc again");
            expect(1, 0, 0, 1, "d: cudaMalloc again");
            if (odd && k == 0) {
                TST_CUDA(cudaFreeAsync(o, 0));
                TST_CUDA(cudaStreamSynchronize(0));
            } else if (odd && k == 1) {
                TST_CUDA(cudaFree(o));
            } else if (odd && vmm_ok) {
                vmm_free(o, 8 * MB, h);
            }
        }
    }

    /* e: eviction under a bound of one buffer pair */
    snprintf(bound, sizeof(bound), "%zu", (size_t)tst_size * 2 * n * sizeof(float));
    TST_CHECK(tlmpi_config_set("NODE_REG_MAX", bound) == TLMPI_OK, "e: tlmpi_config_set(NODE_REG_MAX)");
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    for (k = 0; k < 3; k++) {
        TST_CUDA(cudaMalloc((void **)&x[k], n * sizeof(float)));
        TST_CUDA(cudaMalloc((void **)&y[k], n * sizeof(float)));
    }
    t_allreduce(dup, x[0], y[0], 8, "e: the dup's setup");
    expect(-1, -1, -1, -1, "e: setup");
    for (k = 0; k < 9; k++) {
        t_allreduce(dup, x[k % 3], y[k % 3], n, "e: round robin over 3 pairs, room for 1");
    }
    expect(0, 9, 0, 9, "e: round robin");
    t_allreduce(dup, x[2], y[2], n, "e: the last pair again");
    expect(1, 0, 0, 1, "e: the last pair again");
    case_streams(dup, x, y, n);
    MPI_Comm_free(&dup);
    case_gated(s, r, n);
    r = NULL;
    for (k = 0; k < 3; k++) {
        cudaFree(x[k]);
        cudaFree(y[k]);
    }
    cudaFree(s);
    cudaFree(r);
    cudaFree(big);
    return tst_finish();
}
