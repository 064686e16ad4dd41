/*
 * mpi_host_cache: the host-mapping cache (src/mem/hostmap.c) never serves a stale answer. One
 * address range goes through every change a real program can make to it, and after each change an
 * 8-byte-per-element MPI_Allreduce on it must take the right path: host memory is handed to PMPI_*
 * (and, once classified, with no CUDA query), device memory never is:
 *   mmap'd host -> munmap -> device memory at the same address (cudaMalloc) -> cudaFree -> host
 *   again -> cudaHostRegister / Unregister (host) -> mremap away, device at the old address ->
 *   device freed and re-allocated at the same address -> managed memory at the address ->
 *   VMM: a reservation there, cuMemMap (device inside an existing mapping), cuMemUnmap, free ->
 *   host again.
 * Runs on any machine with the fake CUDA runtime (tests/fakes/fakecudart.c: its fake_cuda_malloc_at,
 * cudaMallocManaged and fake_cuMem* place "device" memory at a chosen address). A cache that
 * skipped the invalidation on munmap or mremap passes device memory through (the mutant runs of
 * docs/DESIGN.md fail here). Before that walk, the pair of buffers of one call: a host mapping
 * beside device memory, in either role and in place, never passes through (an entry fast path that
 * tested one buffer alone fails here), two host mappings do, and a float16 reduction on host
 * buffers right after double calls takes tlmpi's op. Device buffers go to the staging tier
 * (TLMPI_TIER=staging).
 */
#define _GNU_SOURCE /* mremap */
#include "config.h"
#include "tlmpi.h"
#include "harness.h"

#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fakes/fakecudart.h"

#define SZ ((size_t)1 << 20)
#define N 16

/* One N-double allreduce of buf into buf + N; checks the sum. *pass: 1 if it went to PMPI_*
 * unchanged (pass-through), *q: the CUDA pointer queries it made. */
static void allreduce_on(const char *what, double *buf, int *pass, long *q)
{
    unsigned long q0;
    uint64_t before;
    tlmpi_stat_t st;
    int i, rc;

    for (i = 0; i < N; i++) {
        buf[i] = tst_rank * 100 + i;
        buf[N + i] = -1;
    }
    tlmpi_get_stats(TLMPI_COLL_ALLREDUCE, TLMPI_PATH_PASSTHROUGH, &st);
    before = st.calls;
    q0 = fake_cuda_ptr_queries;
    rc = MPI_Allreduce(buf, buf + N, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    *q = (long)(fake_cuda_ptr_queries - q0);
    tlmpi_get_stats(TLMPI_COLL_ALLREDUCE, TLMPI_PATH_PASSTHROUGH, &st);
    *pass = st.calls == before + 1;
    TST_CHECK(rc == MPI_SUCCESS, "%s: rc %d", what, rc);
    for (i = 0; i < N; i++) {
        double want = 100.0 * tst_size * (tst_size - 1) / 2 + (double)i * tst_size;
        TST_CHECK(buf[N + i] == want, "%s: element %d = %g, expected %g", what, i, buf[N + i], want);
    }
}

/* host memory: passed through, and the second call needs no CUDA query (cached) */
static void expect_host(const char *what, double *buf)
{
    int pass;
    long q;

    allreduce_on(what, buf, &pass, &q);
    TST_CHECK(pass, "%s: host memory not passed through", what);
    allreduce_on(what, buf, &pass, &q);
    TST_CHECK(pass, "%s: host memory not passed through (second call)", what);
    TST_CHECK(q == 0, "%s: second call made %ld CUDA queries, expected 0", what, q);
}

/* device memory: never passed through */
static void expect_device(const char *what, double *buf)
{
    int pass;
    long q;

    allreduce_on(what, buf, &pass, &q);
    TST_CHECK(!pass, "%s: DEVICE MEMORY PASSED THROUGH (stale host answer)", what);
}

/* One N-double allreduce of s into r (s == NULL: in place on r); checks the sum. *pass and *q as
 * allreduce_on. */
static void allreduce_pair(const char *what, double *s, double *r, int *pass, long *q)
{
    unsigned long q0;
    uint64_t before;
    tlmpi_stat_t st;
    int i, rc;

    for (i = 0; i < N; i++) {
        if (s) {
            s[i] = tst_rank * 100 + i;
        }
        r[i] = s ? -1 : tst_rank * 100 + i;
    }
    tlmpi_get_stats(TLMPI_COLL_ALLREDUCE, TLMPI_PATH_PASSTHROUGH, &st);
    before = st.calls;
    q0 = fake_cuda_ptr_queries;
    rc = MPI_Allreduce(s ? (void *)s : MPI_IN_PLACE, r, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    *q = (long)(fake_cuda_ptr_queries - q0);
    tlmpi_get_stats(TLMPI_COLL_ALLREDUCE, TLMPI_PATH_PASSTHROUGH, &st);
    *pass = st.calls == before + 1;
    TST_CHECK(rc == MPI_SUCCESS, "%s: rc %d", what, rc);
    for (i = 0; i < N; i++) {
        double want = 100.0 * tst_size * (tst_size - 1) / 2 + (double)i * tst_size;
        TST_CHECK(r[i] == want, "%s: element %d = %g, expected %g", what, i, r[i], want);
    }
}

/* both buffers host (or in place on host): passed through, the second call with no CUDA query */
static void expect_pair_host(const char *what, double *s, double *r)
{
    int pass;
    long q;

    allreduce_pair(what, s, r, &pass, &q);
    TST_CHECK(pass, "%s: host memory not passed through", what);
    allreduce_pair(what, s, r, &pass, &q);
    TST_CHECK(pass, "%s: host memory not passed through (second call)", what);
    TST_CHECK(q == 0, "%s: second call made %ld CUDA queries, expected 0", what, q);
}

/* one buffer device memory (or in place on it): never passed through, the first call nor the next */
static void expect_pair_device(const char *what, double *s, double *r)
{
    int pass, k;
    long q;

    for (k = 0; k < 2; k++) {
        allreduce_pair(what, s, r, &pass, &q);
        TST_CHECK(!pass, "%s: DEVICE MEMORY PASSED THROUGH (call %d)", what, k + 1);
    }
}

/* A half-type reduction on host buffers takes tlmpi's own op (the hostop path), never the
 * pass-through, also right after pass-through calls of another datatype on the same buffers and a
 * float16 allgather (the entry points' per-thread fast datatype). */
static void expect_half_hostop(const char *what, void *buf)
{
    uint16_t *h = buf;
    tlmpi_stat_t pt0, pt1, ho0, ho1;
    int i, rc;

    /* a float16 allgather first: its pass-through counts the type (call_bytes), which must not
     * make it the fast datatype of the reductions */
    for (i = 0; i < N; i++) {
        h[i] = 0x3c00;
    }
    rc = MPI_Allgather(h, N, TLMPI_FLOAT16, h + 4 * N, N, TLMPI_FLOAT16, MPI_COMM_WORLD);
    TST_CHECK(rc == MPI_SUCCESS, "%s: float16 allgather: rc %d", what, rc);
    for (i = 0; i < 2 * N; i++) {
        h[i] = 0x3c00; /* 1.0 */
    }
    tlmpi_get_stats(TLMPI_COLL_ALLREDUCE, TLMPI_PATH_PASSTHROUGH, &pt0);
    tlmpi_get_stats(TLMPI_COLL_ALLREDUCE, TLMPI_PATH_HOSTOP, &ho0);
    rc = MPI_Allreduce(h, h + N, N, TLMPI_FLOAT16, MPI_SUM, MPI_COMM_WORLD);
    tlmpi_get_stats(TLMPI_COLL_ALLREDUCE, TLMPI_PATH_PASSTHROUGH, &pt1);
    tlmpi_get_stats(TLMPI_COLL_ALLREDUCE, TLMPI_PATH_HOSTOP, &ho1);
    TST_CHECK(rc == MPI_SUCCESS, "%s: rc %d", what, rc);
    TST_CHECK(pt1.calls == pt0.calls && ho1.calls == ho0.calls + 1,
              "%s: float16 allreduce: pass-through %+lld, hostop %+lld calls (expected 0, 1)", what,
              (long long)(pt1.calls - pt0.calls), (long long)(ho1.calls - ho0.calls));
    if (tst_size == 2) {
        TST_CHECK(h[N] == 0x4000 && h[2 * N - 1] == 0x4000, "%s: float16 sums %#x %#x, expected 0x4000", what,
                  h[N], h[2 * N - 1]); /* 1 + 1 = 2.0 */
    }
}

static double *host_at(void *want)
{
    void *p = mmap(want, SZ, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | (want ? MAP_FIXED_NOREPLACE : 0), -1, 0);

    TST_CHECK(p != MAP_FAILED && (!want || p == want), "mmap at %p: %p", want, p);
    return p == MAP_FAILED ? NULL : p;
}

static double *device_at(void *want)
{
    void *p = NULL;

    TST_CHECK(fake_cuda_malloc_at(&p, SZ, want) == cudaSuccess && p == want, "cudaMalloc at %p: %p", want, p);
    return p;
}

int main(int argc, char **argv)
{
    double *h, *d, *m, *v, *moved;
    void *far;
    void *a, *p;
    int provided;

    tst_name = "mpi_host_cache";
    setenv("TLMPI_TIER", "staging", 0);
    MPI_Init_thread(&argc, &argv, MPI_THREAD_SINGLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &tst_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &tst_size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    h = host_at(NULL);
    if (!h) {
        return tst_finish();
    }
    a = h; /* the address every step reuses */
    expect_host("mmap'd host", h);

    /* the two buffers of one call are classified together (the entry points test both inline in
     * the newest confirmed host mapping, then any confirmed mapping): a host buffer of a confirmed
     * mapping beside device memory never passes, in either role; two host mappings and in place
     * on host memory pass with no CUDA query */
    {
        double *h2 = host_at(NULL), *dd = NULL;

        TST_CHECK(cudaMalloc((void **)&dd, SZ) == cudaSuccess && dd, "cudaMalloc");
        if (h2 && dd) {
            expect_host("a second mmap'd mapping", h2); /* now the newest confirmed mapping */
            expect_pair_host("send and receive in two host mappings", h, h2);
            expect_pair_host("send and receive in two host mappings, swapped", h2, h);
            expect_pair_host("in place on host (newest mapping)", NULL, h2);
            expect_pair_host("in place on host (older mapping)", NULL, h);
            expect_pair_device("host send (newest mapping), device receive", h2, dd);
            expect_pair_device("device send, host receive (newest mapping)", dd, h2);
            expect_pair_device("host send (older mapping), device receive", h, dd);
            expect_pair_device("device send, host receive (older mapping)", dd, h);
            expect_pair_device("in place on device", NULL, dd);
            expect_pair_host("host again after the device calls", h2, h2 + N);
            expect_half_hostop("float16 on host after double calls", h2);
            expect_pair_host("double again after float16", h2, h2 + N);
        }
        cudaFree(dd);
        if (h2) {
            munmap(h2, SZ);
        }
    }

    /* device memory where a host mapping was: the cache must forget the host range at munmap */
    munmap(h, SZ);
    d = device_at(a);
    expect_device("cudaMalloc at a freed host address", d);
    cudaFree(d);
    h = host_at(a);
    expect_host("host again after cudaFree", h);

    /* pinned host memory is host memory for MPI: registered and unregistered */
    TST_CHECK(cudaHostRegister(h, SZ, 0) == cudaSuccess, "cudaHostRegister");
    expect_host("cudaHostRegister'ed", h);
    TST_CHECK(cudaHostUnregister(h) == cudaSuccess, "cudaHostUnregister");
    expect_host("cudaHostUnregister'ed", h);

    /* mremap moves the host mapping away (it cannot grow in place: the next pages are taken);
     * device memory at the old address */
    far = mmap((char *)h + SZ, SZ, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    moved = mremap(h, SZ, 2 * SZ, MREMAP_MAYMOVE);
    TST_CHECK(moved != MAP_FAILED && moved != h, "mremap: %p (from %p)", (void *)moved, (void *)h);
    if (far != MAP_FAILED) {
        munmap(far, SZ);
    }
    if (moved == MAP_FAILED || moved == h) {
        return tst_finish();
    }
    d = device_at(a);
    expect_device("cudaMalloc where a mapping was mremap'ed from", d);
    {
        int pass;
        long q;

        allreduce_on("the mremap'ed mapping", moved, &pass, &q); /* host, not cached: not made by mmap */
        TST_CHECK(pass, "the mremap'ed mapping: host memory not passed through");
    }

    /* device memory freed and re-allocated at the same address */
    cudaFree(d);
    d = device_at(a);
    expect_device("cudaMalloc again at the same address", d);
    cudaFree(d);

    /* managed memory at the address (classified as device-accessible, never host) */
    fake_cuda_next_addr = a;
    m = NULL;
    TST_CHECK(cudaMallocManaged((void **)&m, SZ, cudaMemAttachGlobal) == cudaSuccess && (void *)m == a,
              "cudaMallocManaged at %p: %p", a, (void *)m);
    if (m) {
        expect_device("cudaMallocManaged at a freed address", m);
        cudaFree(m);
    }

    /* VMM: a reservation over the address, device memory mapped into it without a new mapping */
    p = NULL;
    TST_CHECK(fake_cuMemAddressReserve(&p, SZ, a) == 0 && p == a, "cuMemAddressReserve at %p: %p", a, p);
    if (p == a) {
        v = p;
        TST_CHECK(fake_cuMemMap(v, SZ) == 0, "cuMemMap");
        expect_device("cuMemMap'ed", v);
        TST_CHECK(fake_cuMemUnmap(v, SZ) == 0, "cuMemUnmap");
        TST_CHECK(fake_cuMemMap(v, SZ) == 0, "cuMemMap again");
        expect_device("cuMemMap'ed again", v);
        TST_CHECK(fake_cuMemUnmap(v, SZ) == 0 && fake_cuMemAddressFree(v, SZ) == 0, "cuMemUnmap, cuMemAddressFree");
    }
    h = host_at(a);
    expect_host("host after the VMM range was freed", h);
    munmap(h, SZ);
    munmap(moved, 2 * SZ);
    return tst_finish();
}
