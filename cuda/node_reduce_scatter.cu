// node_reduce_scatter.cu: MPI_Reduce_scatter_block among the ranks of a node over a device
// transport (cuda/node.cuh; instantiated for the CUDA-IPC transport), every dtype x op of
// tlmpi_cuda_node_supported.
//
// Algorithm (multicast load-reduce shape). The input holds n blocks of B bytes, block j is what rank
// j keeps. In steps of `chunk` bytes of every block: copy the pieces of the n-1 blocks the peers
// keep into slots 0..n-1 of the own pool (slot j = block j); barrier; load-reduce the own block's
// piece over every rank's slot `rank` (NVLS: one multimem.ld_reduce; IPC: a load from each peer's
// pool, in rank order 0..n-1, this rank's own term read from its input) into out. f16/bf16
// accumulate in float and round once. HBM bytes per rank: read (n-1)B, write (n-1)B; read nB,
// write B. In place: the input is out (n blocks), the result its first block; every block a step
// overwrites was staged before the barrier, so nothing is read after it was overwritten.
//
// Launch shape. One kernel per call, `ctas` CTAs of 512 threads (the same on every rank, all
// resident); CTA b owns the same 16-byte-aligned piece of every block on every rank; two vectors
// in flight per thread and rank; the message's odd tail element by element.
//
// Sync protocol. One barrier per step (per CTA index, target epoch + s + 1), data halves by
// barrier parity (node.cuh). A timed-out wait fills the error record and ends the CTA.
#include "node_kernels.cuh"
#include "transport_nvls.cuh"

using namespace tlmpi;
using namespace tlmpi::node;

namespace {

template <int DT, typename Op, class X> __device__ __forceinline__ void rsb(const Params &p, const X &t)
{
    const int n = t.nranks(), r = t.rank();
    const size_t B = p.bytes, S = p.chunk;
    for (unsigned s = 0; s < p.nsteps; s++) {
        const int k = (int)s + 1;
        const size_t h = half_off(p.x, t.epoch + k);
        const size_t off = (size_t)s * S, L = B - off < S ? B - off : S;
        size_t lo, hi;
        cta_piece(p.nsteps == 1 ? L : S, L, &lo, &hi);
        for (int j = X::kStageOwn ? 0 : 1; j < n; j++) {
            int q = r + j;
            if (q >= n) q -= n;
            const char *src = p.in + (size_t)q * B + off;
            copy_piece(t.data(r) + h + (size_t)q * S, 16, src, ua_of(src), lo, hi);
        }
        if (!t.barrier(k)) return;
        reduce_piece<DT, Op>(t, p.in + (size_t)r * B + off, p.out + off, h + (size_t)r * S, lo, hi, NoExtra());
    }
}

template <int DT, typename Op>
__global__ void __launch_bounds__(kNodeThreads, kMinBlocks) rsb_ipc(const __grid_constant__ Params p)
{
    TLMPI_NODE_ENTER(p, ep);
    IpcTransport t{ p.x, ep, p.kind };
    rsb<DT, Op>(p, t);
    node_exit(p);
}

template <int DT, typename Op>
__global__ void __launch_bounds__(kNodeThreads, kMinBlocks) rsb_nvls(const __grid_constant__ Params p)
{
    TLMPI_NODE_ENTER(p, ep);
    NvlsTransport<DT, Op> t{ { p.x, ep, p.kind } };
    rsb<DT, Op>(p, t);
    node_exit(p);
}

template <int DT, typename Op> struct RsbK {
    static const void *fn(bool nvls)
    {
        if constexpr (nvls_has(DT, op_id<Op>())) {
            if (nvls) return (const void *)rsb_nvls<DT, Op>;
        }
        return (const void *)rsb_ipc<DT, Op>;
    }
};

}  // namespace

namespace tlmpi {
namespace node {

const void *reduce_scatter_fn(int dtype, int op, bool nvls)
{
    return lookup_dt_op<RsbK>(dtype, op, nvls);
}

}  // namespace node
}  // namespace tlmpi
