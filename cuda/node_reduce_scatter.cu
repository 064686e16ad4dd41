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
// Launch shape. One kernel per call, `cols` columns (the same on every rank) on `ctas` CTAs of 512
// threads (all resident; a rank's own count, cols unless a blocking call's kernel may run beside
// another: node.cuh, "Columns and CTAs"); column b owns the same 16-byte-aligned piece of every
// block on every rank; two vectors in flight per thread and rank; the message's odd tail element by
// element.
//
// The siblings (a layout: kernels.h, tlmpi_node_layout_t): block q has its own length and place in
// the input (MPI_Reduce_scatter's counts; MPI_Reduce: one block, the root's, the whole vector, the
// other ranks' empty), the steps run over the longest block, and each block's pieces are clipped to
// its length (a rank whose block is empty only stages and takes the barriers).
//
// Sync protocol. One barrier per step (per column, target epoch + s + 1), data halves by
// barrier parity (node.cuh). A timed-out wait fills the error record and ends the CTA.
#include "node_kernels.cuh"
#include "transport_nvls.cuh"

using namespace tlmpi;
using namespace tlmpi::node;

namespace {

template <int DT, typename Op, class X> __device__ __forceinline__ bool rsb(const Params &p, const X &t)
{
    const int n = t.nranks(), r = t.rank();
    const size_t B = p.bytes, S = p.chunk;
    for (unsigned s = 0; s < p.nsteps; s++) {
        const int k = (int)s + 1;
        const size_t h = half_off(p.x, t.epoch + k);
        const size_t off = (size_t)s * S, L = B - off < S ? B - off : S;
        size_t lo, hi;
        t.piece(p.nsteps == 1 ? L : S, L, &lo, &hi);
        for (int j = X::kStageOwn ? 0 : 1; j < n; j++) {
            int q = r + j;
            if (q >= n) q -= n;
            if (!p.vset) {
                const char *src = p.in + (size_t)q * B + off;
                copy_piece(t.data(r) + h + (size_t)q * S, 16, src, ua_of(src), lo, hi);
            } else {
                // a sibling's layout: block q's own length and place in the input
                const size_t qh = block_hi(p.v.in_len[q], off, lo, hi);
                const char *src = p.in + p.v.in_off[q] + off;
                if (qh > lo) copy_piece(t.data(r) + h + (size_t)q * S, 16, src, ua_of(src), lo, qh);
            }
        }
        if (!t.barrier(k)) return false;
        if (!p.vset) {
            reduce_piece<DT, Op>(t, p.in + (size_t)r * B + off, p.out + off, h + (size_t)r * S, lo, hi, NoExtra());
        } else {
            const size_t rh = block_hi(p.v.in_len[r], off, lo, hi);
            if (rh > lo)
                reduce_piece<DT, Op>(t, p.in + p.v.in_off[r] + off, p.out + off, h + (size_t)r * S, lo, rh, NoExtra());
        }
    }
    return true;
}

template <int DT, typename Op, bool kMulti>
__global__ void __launch_bounds__(kNodeThreads, kMinBlocks) rsb_ipc(const __grid_constant__ Params p)
{
    TLMPI_NODE_ENTER_COLS(p, ep, kMulti);
    node_columns<kMulti>(p, [&](Column c) { return rsb<DT, Op>(p, IpcTransport{ p.x, ep, p.kind, c }); });
    node_exit(p);
}

template <int DT, typename Op>
__global__ void __launch_bounds__(kNodeThreads, kMinBlocks) rsb_nvls(const __grid_constant__ Params p)
{
    TLMPI_NODE_ENTER(p, ep);
    node_columns<false>(p, [&](Column c) { return rsb<DT, Op>(p, NvlsTransport<DT, Op>{ { p.x, ep, p.kind, c } }); });
    node_exit(p);
}

template <int DT, typename Op> struct RsbK {
    static const void *fn(int v)
    {
        if constexpr (nvls_has(DT, op_id<Op>())) {
            if (v == kNvls) return (const void *)rsb_nvls<DT, Op>;
        }
        return v == kIpcCols ? (const void *)rsb_ipc<DT, Op, true> : (const void *)rsb_ipc<DT, Op, false>;
    }
};

}  // namespace

namespace tlmpi {
namespace node {

const void *reduce_scatter_fn(int dtype, int op, int v)
{
    return lookup_dt_op<RsbK>(dtype, op, v);
}

}  // namespace node
}  // namespace tlmpi
