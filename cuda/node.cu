// node.cu: the launchers of the node kernels (kernels.h: tlmpi_cuda_node_*): step sizes, kernel
// lookup, one cudaLaunchKernel per call, the barrier-only kernel (the floor of any one-shot node
// collective), and the CTA limits that keep every rank's CTAs resident.
//
// Algorithm (barrier kernel): one node barrier per CTA, no data.
// Launch shape: `ctas` CTAs of 512 threads for every node kernel (kernels.h), chosen by the host;
// the pool kinds' IPC kernels take `cols` columns (the same on every rank) on a CTA count of the
// rank's own, in a variant of their own (kIpcCols) when there are more columns than CTAs; every
// other launch has one column per CTA and the same CTA count on every rank. Steps: a message
// larger than one data half of the pool runs as several steps inside the same kernel; the per-step
// chunk is a data half (pull allgather, both allreduces, the exchange of allgatherv and bcast; the pull
// kinds at most 16 MiB) or a data half divided by the number of ranks (push allgather,
// reduce-scatter, alltoall's exchange: n slots per step).
// Sync protocol: see node.cuh (barriers per column). Epochs: where the transport has dev_epoch
// (tlmpi's tiers) each kernel reads and advances the epoch word in its own pool header (node.cuh:
// node_enter), so launches are replay-safe in CUDA graphs; otherwise (the kernel tests) they are
// advanced here in the caller's args. An LL call counts as one, and the LL region is cleared once per
// 2^32 epochs (node_ll.cu).
#include "node_kernels.cuh"
#include "transport_ipc.cuh"

#include <string.h>

using namespace tlmpi;
using namespace tlmpi::node;

namespace {

__global__ void __launch_bounds__(kNodeThreads, kMinBlocks) barrier_ipc(const __grid_constant__ Params p)
{
    TLMPI_NODE_ENTER(p, ep);
    node_columns<false>(p, [&](Column c) { return IpcTransport{ p.x, ep, p.kind, c }.barrier(1); });
}

bool is_allgather(int kind) { return kind == TLMPI_NODE_AG_PUSH || kind == TLMPI_NODE_AG_PULL || kind == TLMPI_NODE_AG_LL; }
bool is_ll(int kind) { return kind == TLMPI_NODE_AG_LL || kind == TLMPI_NODE_RSB_LL || kind == TLMPI_NODE_AR_LL; }
bool is_xchg(int kind) { return kind == TLMPI_NODE_XCHG || kind == TLMPI_NODE_XCHG_ALL; }
// kinds whose steps hold n slots (one per rank)
bool n_slots(int kind)
{
    return kind == TLMPI_NODE_AG_PUSH || kind == TLMPI_NODE_RSB_PULL || kind == TLMPI_NODE_XCHG_ALL;
}

// Pull allgather steps are capped at 16 MiB: its peers re-read each step's blocks, and steps that
// stay in L2 (50 MiB on an H200) made it 0.93-0.95 of the copy rate at 4 and 8 ranks where 64 MiB
// steps gave 0.69-0.77 (bench/node_bench, 2026-12-01); the other kernels gained from larger steps
// (fewer barriers).
constexpr size_t kPullChunkMax = 16u << 20;

size_t chunk_for(int kind, const tlmpi_node_xport_t &x)
{
    const size_t h = x.data_bytes / 2;
    size_t c = n_slots(kind) ? h / (size_t)x.nranks : h;
    if ((kind == TLMPI_NODE_AG_PULL || kind == TLMPI_NODE_XCHG) && c > kPullChunkMax) c = kPullChunkMax;
    return c & ~(size_t)15;
}

const void *kernel_for(int kind, int dtype, int op, int v)
{
    switch (kind) {
    case TLMPI_NODE_AG_PUSH:
    case TLMPI_NODE_AG_PULL: return allgather_fn(kind, v);
    case TLMPI_NODE_RSB_PULL: return reduce_scatter_fn(dtype, op, v);
    case TLMPI_NODE_AR_ONESHOT: return allreduce_oneshot_fn(dtype, op, v);
    case TLMPI_NODE_AR_TWOSHOT: return allreduce_twoshot_fn(dtype, op, v);
    case TLMPI_NODE_AG_LL:
    case TLMPI_NODE_RSB_LL:
    case TLMPI_NODE_AR_LL: return ll_fn(kind, dtype, op, v == kLayout);
    case TLMPI_NODE_BARRIER: return barrier_fn();
    case TLMPI_NODE_XCHG:
    case TLMPI_NODE_XCHG_ALL: return exchange_fn(kind, v);
    }
    return nullptr;
}

// The LL region's clearing at an epoch wrap (see tlmpi_cuda_node_run): memset, then one barrier
// (1 CTA, target epoch + 1).
int clear_ll(const tlmpi_node_xport_t *x, unsigned long long epoch, cudaStream_t stream)
{
    cudaError_t e = cudaMemsetAsync(static_cast<char *>(x->base[x->rank]) + TLMPI_NODE_LL_OFF, 0, TLMPI_NODE_LL_BYTES, stream);
    if (e != cudaSuccess) return (int)e;
    Params b;
    memset(&b, 0, sizeof(b));
    b.x = *x;
    b.nsteps = 1;
    b.epoch = epoch;
    b.barriers = 1;
    b.kind = TLMPI_NODE_BARRIER;
    b.cols = 1;
    void *args[1] = { &b };
    return (int)cudaLaunchKernel(barrier_fn(), dim3(1), dim3(kNodeThreads), args, 0, stream);
}

}  // namespace

namespace tlmpi {
namespace node {
const void *barrier_fn() { return (const void *)barrier_ipc; }
}  // namespace node
}  // namespace tlmpi

extern "C" int tlmpi_cuda_node_supported(int dtype, int op)
{
    return tlmpi_cuda_reduce_supported(dtype, op);
}

extern "C" int tlmpi_cuda_node_run(const tlmpi_node_xport_t *x, tlmpi_node_args_t *a, void *stream)
{
    if (!x || !a || a->ctas < 1 || a->ctas > kMaxCtas || x->nranks < 1 || x->nranks > kMaxRanks || x->rank < 0 ||
        x->rank >= x->nranks || a->kind < 0 || (a->kind > TLMPI_NODE_BARRIER && !is_xchg(a->kind)) ||
        (is_xchg(a->kind) && !a->layout) ||
        (a->layout && !is_xchg(a->kind) && a->kind != TLMPI_NODE_RSB_PULL && a->kind != TLMPI_NODE_AG_LL &&
         a->kind != TLMPI_NODE_RSB_LL))
        return (int)cudaErrorInvalidValue; /* the zero-copy kinds: run_direct; layouts: the siblings' kinds */
    
    Params p;
    p.x = *x;
    p.in = static_cast<const char *>(a->in);
    p.out = static_cast<char *>(a->out);
    p.kind = a->kind;
    p.epoch = a->epoch;
    p.gate = is_ll(a->kind) || a->kind == TLMPI_NODE_BARRIER ? 0ull : a->gate;  // node_enter (kernels.h)
    p.vset = a->layout != nullptr;
    if (p.vset) p.v = *a->layout;
    // several columns per CTA: the pool kinds' IPC kernels only (kernels.h: cols)
    if (!cols_in(a, &p, is_ll(a->kind) || a->kind == TLMPI_NODE_BARRIER || x->mc_base != nullptr))
        return (int)cudaErrorInvalidValue;
    unsigned barriers = 1;
    if (a->kind == TLMPI_NODE_BARRIER) {
        p.bytes = 0;
        p.chunk = 0;
        p.nsteps = 1;
    } else {
        size_t elem = 1;
        if (!is_allgather(a->kind) && !is_xchg(a->kind)) {
            if (!tlmpi_cuda_node_supported(a->dtype, a->op)) return (int)cudaErrorInvalidValue;
            elem = TLMPI_DT_ELEM_SIZE(a->dtype);
        }
        if (a->count == 0) {
            a->done_word = nullptr; /* nothing launched: nothing writes it */
            return 0;
        }
        // a layout may leave out NULL where it writes nothing there (MPI_Reduce off the root); the LL
        // allreduce takes in NULL as zeros and out NULL as no result (MPI_Bcast, MPI_Reduce: node_ll.cu)
        const bool ar_ll = a->kind == TLMPI_NODE_AR_LL;
        if ((!a->in && !ar_ll) || (!a->out && !a->layout && !ar_ll) ||
            a->count > ((size_t)-1) / elem / (size_t)x->nranks)
            return (int)cudaErrorInvalidValue;
        p.bytes = a->count * elem;
        if (is_ll(a->kind)) {
            if (p.bytes > TLMPI_NODE_LL_MAX_BYTES) return (int)cudaErrorInvalidValue;
            p.chunk = p.bytes;
            p.nsteps = 1;
        } else {
            p.chunk = chunk_for(a->kind, *x);
            if (p.chunk < 16) return (int)cudaErrorInvalidValue;
            const size_t steps = (p.bytes + p.chunk - 1) / p.chunk;
            if (steps > (1u << 30)) return (int)cudaErrorInvalidValue;
            p.nsteps = (unsigned)steps;
        }
        barriers = p.nsteps * (a->kind == TLMPI_NODE_AR_TWOSHOT ? 2u : 1u);
    }
    p.barriers = barriers;
    // LL lines carry the epoch's low 32 bits (node_ll.cu): before this call's epochs reach the next
    // multiple of 2^32, clear the own LL region, then one barrier (no peer writes into it before
    // this rank cleared it; this rank read everything written into it before, in its earlier
    // kernels), then jump the epoch to that multiple, so that every line is at most 2^32 - 1
    // epochs old or zero, and no flag of the new era is zero. Once per 2^32 barriers, on every
    // rank alike (the epochs are the same everywhere). With the device-resident epoch the kernel
    // does it itself (node.cuh: node_enter) and a->epoch is not used.
    if (!x->dev_epoch && ((a->epoch + barriers) >> 32) != (a->epoch >> 32)) {
        const int e = clear_ll(x, a->epoch, static_cast<cudaStream_t>(stream));
        if (e != 0) return e;
        a->epoch = ((a->epoch >> 32) + 1ull) << 32;
        p.epoch = a->epoch;
    }
    const void *fn = kernel_for(a->kind, a->dtype, a->op,
                                is_ll(a->kind) && p.vset ? kLayout
                                : x->mc_base        ? kNvls
                                : p.cols > (unsigned)a->ctas ? kIpcCols
                                                             : kIpc);
    if (!fn) return (int)cudaErrorInvalidValue;
    done_in(a, &p, !is_ll(a->kind) && a->kind != TLMPI_NODE_BARRIER); // LL threads return on their own
    void *args[1] = { &p };
    const cudaError_t e = cudaLaunchKernel(fn, dim3((unsigned)a->ctas), dim3(kNodeThreads), args, 0,
                                           static_cast<cudaStream_t>(stream));
    if (e != cudaSuccess) return (int)e;
    if (!x->dev_epoch) a->epoch += barriers;
    done_commit(a, p);
    return 0;
}

extern "C" int tlmpi_cuda_node_max_ctas(int dev, int ranks_on_gpu)
{
    const int sms = tlmpi_cuda_sm_count(dev);
    if (sms <= 0) return 0;
    // the heaviest kernels (float accumulation of f16, 64-bit products) bound the occupancy
    const void *fns[] = { allgather_fn(TLMPI_NODE_AG_PUSH, kIpc), allgather_fn(TLMPI_NODE_AG_PULL, kIpc),
                          reduce_scatter_fn(TLMPI_DT_F16, TLMPI_OP_SUM, kIpc), allreduce_oneshot_fn(TLMPI_DT_F16, TLMPI_OP_SUM, kIpc),
                          allreduce_twoshot_fn(TLMPI_DT_F16, TLMPI_OP_SUM, kIpc),
                          allreduce_twoshot_fn(TLMPI_DT_F64, TLMPI_OP_PROD, kIpc), allreduce_twoshot_fn(TLMPI_DT_F16, TLMPI_OP_SUM, kNvls),
                          allreduce_twoshot_fn(TLMPI_DT_F16, TLMPI_OP_SUM, kIpcCols),
                          allreduce_twoshot_fn(TLMPI_DT_F64, TLMPI_OP_PROD, kIpcCols),
                          reduce_scatter_fn(TLMPI_DT_F16, TLMPI_OP_SUM, kIpcCols),
                          ll_fn(TLMPI_NODE_AR_LL, TLMPI_DT_F16, TLMPI_OP_SUM), ll_fn(TLMPI_NODE_RSB_LL, TLMPI_DT_F64, TLMPI_OP_PROD),
                          direct_fn(TLMPI_NODE_AG_DIRECT, 0, 0), direct_fn(TLMPI_NODE_AR_DIRECT, TLMPI_DT_F16, TLMPI_OP_SUM),
                          direct_fn(TLMPI_NODE_RSB_DIRECT, TLMPI_DT_F64, TLMPI_OP_PROD),
                          direct_fn(TLMPI_NODE_AR_DIRECT, TLMPI_DT_F64, TLMPI_OP_PROD), barrier_fn(),
                          exchange_fn(TLMPI_NODE_XCHG, kIpc), exchange_fn(TLMPI_NODE_XCHG_ALL, kIpcCols) };
    int per_sm = 1 << 30;
    int saved = -1;
    if (cudaGetDevice(&saved) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    if (saved != dev && cudaSetDevice(dev) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    for (const void *f : fns) {
        int n = 0;
        if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, f, kNodeThreads, 0) != cudaSuccess) {
            cudaGetLastError();
            n = 0;
        }
        if (n < per_sm) per_sm = n;
    }
    if (saved != dev) cudaSetDevice(saved);
    if (per_sm <= 0) return 0;
    long m = (long)per_sm * sms / (ranks_on_gpu > 0 ? ranks_on_gpu : 1);
    if (m < 1) m = 1;
    return (int)(m > kMaxCtas ? kMaxCtas : m);
}

extern "C" size_t tlmpi_cuda_node_area_for(int kind, size_t bytes, int nranks)
{
    const size_t b = (bytes + 15) & ~(size_t)15;
    if (b < bytes) return (size_t)-1;
    // chunk_for's inverse: a data half holds one step's slots (n of them for push and reduce-scatter)
    const size_t c = (kind == TLMPI_NODE_AG_PULL || kind == TLMPI_NODE_XCHG) && b > kPullChunkMax ? kPullChunkMax : b;
    const size_t n = n_slots(kind) ? (size_t)(nranks > 0 ? nranks : 1) : 1;
    if (c > ((size_t)-1) / 2 / n) return (size_t)-1;
    return 2 * n * c;
}

extern "C" int tlmpi_cuda_node_ctas_for(int kind, size_t bytes, int nranks, int max_ctas)
{
    if (max_ctas < 1) max_ctas = 1;
    if (is_ll(kind)) { // one thread per 8-byte word: 1 CTA up to 4 KiB, 2 up to 8 KiB
        const size_t n = (bytes + 8 * kNodeThreads - 1) / (8 * kNodeThreads);
        return (int)(n < 1 ? 1 : n < (size_t)max_ctas ? n : (size_t)max_ctas);
    }
    // bytes a rank moves per call, roughly: allgather / reduce-scatter touch n blocks
    const size_t work = (is_allgather(kind) || is_xchg(kind) || kind == TLMPI_NODE_RSB_PULL)
                            ? bytes * (size_t)(nranks > 0 ? nranks : 1) : bytes;
    const size_t per_cta = 65536;
    size_t n = work / per_cta + 1;
    return (int)(n < (size_t)max_ctas ? n : (size_t)max_ctas);
}
