/*
 * gpu_host_cache: on a real GPU, host and device memory are classified right after every change
 * of an address range (the GPU-host twin of tests/mpi/mpi_host_cache, which uses the fake runtime).
 * One 2 MiB-aligned address A goes through:
 *   mmap'd host -> munmap -> a VMM reservation at A (cuMemAddressReserve with A as hint),
 *   cuMemCreate + cuMemMap + cuMemSetAccess (device memory inside the reservation) -> cuMemUnmap,
 *   then mapped again -> released and freed -> host at A again -> cudaHostRegister / Unregister ->
 *   munmap -> cudaMalloc, cudaFree, cudaMalloc (device freed and re-allocated, often at the same
 *   address) -> cudaMallocManaged -> cudaMallocHost (pinned: host) -> host at A again.
 * After each change an MPI_Allreduce on the range must pass host memory to PMPI_* unchanged and
 * never pass device or managed memory (tlmpi's counters say which path ran; the results are
 * checked; with the PMPI guard preloaded, a device pointer reaching PMPI_* aborts the run).
 * Device buffers go to the staging tier (TLMPI_TIER=staging, set unless given). The driver's VMM
 * entry points come through cudaGetDriverEntryPoint (no -lcuda). Exit 77 without a CUDA device.
 * Whether the driver honoured the address hints is printed (the classification is checked either way).
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
#include <sys/mman.h>

#include "harness.h"

#define SZ ((size_t)2 << 20)
#define N 16

typedef CUresult (*reserve_fn)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long);
typedef CUresult (*create_fn)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *, unsigned long long);
typedef CUresult (*map_fn)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long);
typedef CUresult (*access_fn)(CUdeviceptr, size_t, const CUmemAccessDesc *, size_t);
typedef CUresult (*unmap_fn)(CUdeviceptr, size_t);
typedef CUresult (*release_fn)(CUmemGenericAllocationHandle);
typedef CUresult (*afree_fn)(CUdeviceptr, size_t);
static struct {
    reserve_fn reserve;
    create_fn create;
    map_fn map;
    access_fn access;
    unmap_fn unmap;
    release_fn release;
    afree_fn afree;
} cu;

static void *sym(const char *name)
{
    void *f = NULL;
    enum cudaDriverEntryPointQueryResult q;

    if (cudaGetDriverEntryPointByVersion(name, &f, 12000, cudaEnableDefault, &q) != cudaSuccess || q != cudaDriverEntryPointSuccess) {
        f = NULL;
    }
    return f;
}

/* One N-double allreduce of buf into buf + N (host or device: filled and read with cudaMemcpy);
 * checks the sum; returns 1 if it was passed through to PMPI_*. */
static int allreduce_on(const char *what, double *buf)
{
    double in[N], out[N];
    uint64_t before;
    tlmpi_stat_t st;
    int i, rc;

    for (i = 0; i < N; i++) {
        in[i] = tst_rank * 100 + i;
        out[i] = -1;
    }
    TST_CUDA(cudaMemcpy(buf, in, sizeof(in), cudaMemcpyDefault));
    TST_CUDA(cudaMemcpy(buf + N, out, sizeof(out), cudaMemcpyDefault));
    tlmpi_get_stats(TLMPI_COLL_ALLREDUCE, TLMPI_PATH_PASSTHROUGH, &st);
    before = st.calls;
    rc = MPI_Allreduce(buf, buf + N, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    TST_CHECK(rc == MPI_SUCCESS, "%s: rc %d", what, rc);
    TST_CUDA(cudaMemcpy(out, buf + N, sizeof(out), cudaMemcpyDefault));
    for (i = 0; i < N; i++) {
        double want = 100.0 * tst_size * (tst_size - 1) / 2 + (double)i * tst_size;
        TST_CHECK(out[i] == want, "%s: element %d = %g, expected %g", what, i, out[i], want);
    }
    tlmpi_get_stats(TLMPI_COLL_ALLREDUCE, TLMPI_PATH_PASSTHROUGH, &st);
    return st.calls == before + 1;
}

static void expect_host(const char *what, double *buf)
{
    TST_CHECK(allreduce_on(what, buf), "%s: host memory not passed through", what);
    TST_CHECK(allreduce_on(what, buf), "%s: host memory not passed through (second call)", what);
}

static void expect_device(const char *what, double *buf)
{
    TST_CHECK(!allreduce_on(what, buf), "%s: DEVICE MEMORY PASSED THROUGH (stale host answer)", what);
}

/* 1 on every rank when ok is 1 on every rank: the ranks then take the same branches, so each makes
 * the same collectives (a rank-local failure must not leave its peers in a collective it skipped) */
static int all_ok(int ok)
{
    int all = 0;

    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    return all;
}

/* Host memory at want (NULL: anywhere), mapped on every rank or on none. Another mapping may have
 * taken want on some rank (the driver's own, after a VMM reservation that did not honour the hint):
 * then, where fallback is set, every rank maps anywhere instead and says so. */
static double *host_at(void *want, int fallback)
{
    void *p = mmap(want, SZ, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | (want ? MAP_FIXED_NOREPLACE : 0), -1, 0);
    int ok = p != MAP_FAILED && (!want || p == want);

    if (all_ok(ok)) {
        return p;
    }
    if (p != MAP_FAILED) {
        munmap(p, SZ);
    }
    if (tst_rank == 0) {
        printf("gpu_host_cache: note: %p was taken on some rank (rank 0's mmap: %s)%s\n", want, ok ? "ok" : "failed",
               fallback ? "; the case runs on host memory mapped elsewhere" : "; case skipped");
    }
    return fallback ? host_at(NULL, 0) : NULL;
}

int main(int argc, char **argv)
{
    int ndev = 0, provided, dev = 0, vmm;
    double *h, *d, *d2, *m, *pin;
    void *a;
    char *big;
    CUdeviceptr v = 0;
    CUmemGenericAllocationHandle hd;
    CUmemAllocationProp prop;
    CUmemAccessDesc acc;

    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < 1) {
        printf("SKIP: no CUDA device\n");
        return 77;
    }
    tst_name = "gpu_host_cache";
    setenv("TLMPI_TIER", "staging", 0);
    MPI_Init_thread(&argc, &argv, MPI_THREAD_SINGLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &tst_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &tst_size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    TST_CUDA(cudaSetDevice(tst_rank % ndev));
    TST_CUDA(cudaGetDevice(&dev));
    cu.reserve = (reserve_fn)sym("cuMemAddressReserve");
    cu.create = (create_fn)sym("cuMemCreate");
    cu.map = (map_fn)sym("cuMemMap");
    cu.access = (access_fn)sym("cuMemSetAccess");
    cu.unmap = (unmap_fn)sym("cuMemUnmap");
    cu.release = (release_fn)sym("cuMemRelease");
    cu.afree = (afree_fn)sym("cuMemAddressFree");

    /* a 2 MiB-aligned address A (the VMM granularity), host-mapped first */
    big = mmap(NULL, 2 * SZ, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    TST_CHECK(big != MAP_FAILED, "mmap");
    if (big == MAP_FAILED) {
        return tst_finish();
    }
    a = (void *)(((uintptr_t)big + SZ - 1) & ~(uintptr_t)(SZ - 1));
    munmap(big, 2 * SZ);
    h = host_at(a, 1);
    if (!h) {
        return tst_finish();
    }
    expect_host("mmap'd host", h);
    munmap(h, SZ);

    /* VMM at the freed host address: device memory appears inside a reservation with no new mapping */
    vmm = cu.reserve && cu.create && cu.map && cu.access && cu.unmap && cu.release && cu.afree &&
          cu.reserve(&v, SZ, SZ, (CUdeviceptr)(uintptr_t)a, 0) == CUDA_SUCCESS;
    if (!all_ok(vmm) && vmm) {
        TST_CHECK(cu.afree(v, SZ) == CUDA_SUCCESS, "cuMemAddressFree");
        vmm = 0;
    }
    if (vmm) {
        int i;

        if (tst_rank == 0) {
            printf("gpu_host_cache: cuMemAddressReserve at the freed host address: %s\n",
                   (void *)(uintptr_t)v == a ? "yes" : "no (hint not honoured)");
        }
        memset(&prop, 0, sizeof(prop));
        prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
        prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        prop.location.id = dev;
        memset(&acc, 0, sizeof(acc));
        acc.location = prop.location;
        acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
        for (i = 0; i < 2; i++) {
            TST_CHECK(cu.create(&hd, SZ, &prop, 0) == CUDA_SUCCESS, "cuMemCreate");
            TST_CHECK(cu.map(v, SZ, 0, hd, 0) == CUDA_SUCCESS, "cuMemMap");
            TST_CHECK(cu.access(v, SZ, &acc, 1) == CUDA_SUCCESS, "cuMemSetAccess");
            expect_device(i ? "cuMemMap'ed again after cuMemUnmap" : "cuMemMap'ed", (double *)(uintptr_t)v);
            TST_CHECK(cu.unmap(v, SZ) == CUDA_SUCCESS && cu.release(hd) == CUDA_SUCCESS, "cuMemUnmap, cuMemRelease");
        }
        TST_CHECK(cu.afree(v, SZ) == CUDA_SUCCESS, "cuMemAddressFree");
    } else if (tst_rank == 0) {
        printf("gpu_host_cache: no VMM (cuMem* entry points or a reservation on every rank): VMM case skipped\n");
    }

    /* host at A again (the reservation is gone), pinned by registration, unregistered */
    h = host_at(a, 1);
    if (!h) {
        return tst_finish();
    }
    expect_host("host after the VMM range was freed", h);
    TST_CUDA(cudaHostRegister(h, SZ, cudaHostRegisterDefault));
    expect_host("cudaHostRegister'ed", h);
    TST_CUDA(cudaHostUnregister(h));
    expect_host("cudaHostUnregister'ed", h);
    munmap(h, SZ);

    /* device memory freed and re-allocated (the driver usually hands out the same address) */
    TST_CUDA(cudaMalloc((void **)&d, SZ));
    expect_device("cudaMalloc", d);
    TST_CUDA(cudaFree(d));
    TST_CUDA(cudaMalloc((void **)&d2, SZ));
    if (tst_rank == 0) {
        printf("gpu_host_cache: cudaMalloc after cudaFree at the same address: %s\n", d2 == d ? "yes" : "no");
    }
    expect_device("cudaMalloc after cudaFree", d2);
    TST_CUDA(cudaFree(d2));

    /* managed memory: device-accessible, never passed through */
    TST_CUDA(cudaMallocManaged((void **)&m, SZ, cudaMemAttachGlobal));
    expect_device("cudaMallocManaged", m);
    TST_CUDA(cudaFree(m));

    /* pinned host memory from the driver: host memory for MPI */
    TST_CUDA(cudaMallocHost((void **)&pin, SZ));
    expect_host("cudaMallocHost", pin);
    TST_CUDA(cudaFreeHost(pin));

    h = host_at(a, 0);
    if (h) {
        expect_host("host at the address again", h);
        munmap(h, SZ);
    }
    return tst_finish();
}
