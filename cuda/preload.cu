// preload.cu: every kernel of libtlmpi loaded into a device's context before tlmpi launches its
// first kernel there (tlmpi_cuda_preload, called when a communicator's GPU context is made:
// src/gpu/stream.c).
//
// Why. CUDA loads kernels lazily by default (CUDA_MODULE_LOADING=LAZY, the Linux default since CUDA
// 12.2): a kernel's code is loaded at its first launch, and loading may have to wait for the
// context's work in flight (CUDA Programming Guide, "Lazy Loading", its hazards: a kernel that
// spins until another kernel runs deadlocks when that other kernel's first launch comes after it).
// Every node and rail kernel of tlmpi waits for its peers' kernels. A first launch of one kernel
// while another kernel of the same process waits for a peer therefore stalls until that wait's
// TLMPI_TIMEOUT: seen on the H200 on 2026-12-05 in tests/gpu/gpu_node_kernels (n "ranks" in one
// process: one rank's first launch of a column variant came after the other rank's kernel, which
// waited for it), and possible in an application (a non-blocking call's kernel in flight on one
// communicator, a blocking call's first kernel of another kind on a second one, the peers in the
// other order). cudaFuncGetAttributes loads a kernel; done once per device, before any kernel of
// tlmpi runs there, so nothing of tlmpi is in flight for the loads to wait for, and nothing is
// loaded later. The NVLS and GIN variants are loaded too where they are built (loading runs no code).
//
// Cost: one cudaFuncGetAttributes per lookup (about 1,100, every element type x op x variant; a
// kernel that several lookups return loads once), once per process and device; TLMPI_STATS
// reports the time (1064 lookups in 109-114 ms on an H100, 2026-12-05: docs/GPU-TESTS.md).
#include "hier_fused.cuh"
#include "node_kernels.cuh"

#include <atomic>
#include <chrono>
#include <mutex>

using namespace tlmpi;

namespace {

constexpr int kDevs = 64;
std::once_flag g_once[kDevs];  // a second thread waits in call_once until the first one's loads end
std::atomic<int> g_err[kDevs];  // the first load error on the device (0: none)
std::atomic<long long> g_load_us{ -1 };
std::atomic<int> g_load_count{ 0 };

// every kernel of the node tier's files, the hier tier's fused kernels, devcomm.cu's and local.cu's;
// f(fn) each (a kernel some lookups share, e.g. an NVLS lookup that falls back to IPC, comes again)
template <class F> void each_kernel(F &&f)
{
    const int variants[] = { node::kIpc, node::kNvls, node::kIpcCols };
    for (int v : variants) {
        f(node::allgather_fn(TLMPI_NODE_AG_PUSH, v));
        f(node::allgather_fn(TLMPI_NODE_AG_PULL, v));
        f(node::exchange_fn(TLMPI_NODE_XCHG, v));
        f(node::exchange_fn(TLMPI_NODE_XCHG_ALL, v));
    }
    f(node::barrier_fn());
    f(node::ll_fn(TLMPI_NODE_AG_LL, 0, 0));          // the allgathers have no element type
    f(node::ll_fn(TLMPI_NODE_AG_LL, 0, 0, true));
    f(node::direct_fn(TLMPI_NODE_AG_DIRECT, 0, 0));
    f(node::direct_fn(TLMPI_NODE_XCHG_DIRECT, 0, 0));
    f(hier::allgather_fn(false));
    f(hier::allgather_fn(true));
    for (int dt = 0; dt < TLMPI_DT_NUM_ARITH; dt++)
        for (int op = 0; op < TLMPI_OP_NUM_ARITH; op++) {
            for (int v : variants) {
                f(node::reduce_scatter_fn(dt, op, v));
                f(node::allreduce_oneshot_fn(dt, op, v));
                f(node::allreduce_twoshot_fn(dt, op, v));
            }
            f(node::ll_fn(TLMPI_NODE_RSB_LL, dt, op));
            f(node::ll_fn(TLMPI_NODE_RSB_LL, dt, op, true));
            f(node::ll_fn(TLMPI_NODE_AR_LL, dt, op));
            f(node::direct_fn(TLMPI_NODE_RSB_DIRECT, dt, op));
            f(node::direct_fn(TLMPI_NODE_AR_DIRECT, dt, op));
            f(node::direct_fn(TLMPI_NODE_RED_DIRECT, dt, op));
            for (int gin = 0; gin < 2; gin++) {
                f(hier::reduce_scatter_fn(dt, op, gin != 0));
                f(hier::allreduce_fn(dt, op, gin != 0));
            }
        }
    f(devcomm_kernel());
    const void *local[512];
    const int n = local_kernels(local, 512);
    for (int i = 0; i < n; i++) f(local[i]);
}

void load_all(int dev)
{
    const auto t0 = std::chrono::steady_clock::now();
    int count = 0, err = 0;
    each_kernel([&](const void *fn) {
        if (!fn) return;  // a variant not built (NVLS for a type, GIN without the NCCL device API)
        cudaFuncAttributes a;
        const cudaError_t e = cudaFuncGetAttributes(&a, fn);
        if (e == cudaSuccess) {
            count++;
        } else {
            cudaGetLastError();
            if (!err) err = (int)e;
        }
    });
    g_load_us.store(
        (long long)std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0).count());
    g_load_count.store(count);
    g_err[dev].store(err);
}

}  // namespace

extern "C" int tlmpi_cuda_preload(int dev)
{
    if (dev < 0 || dev >= kDevs) return 0;
    std::call_once(g_once[dev], load_all, dev);
    return g_err[dev].load();
}

extern "C" void tlmpi_cuda_preload_stats(int *count, long long *us)
{
    *count = g_load_count.load();
    *us = g_load_us.load();
}
