// node_allreduce_oneshot.cu: MPI_Allreduce among the ranks of a node for small messages, one
// pass, over a device transport (cuda/node.cuh; instantiated for the CUDA-IPC transport), every
// dtype x op of tlmpi_cuda_node_supported.
//
// Algorithm (multicast load-reduce shape). In steps of `chunk` bytes: copy the input's piece into
// the own pool; barrier; every rank load-reduces the whole piece over every rank's pool (NVLS: one
// multimem.ld_reduce per vector; IPC: a load from each peer, in rank order 0..n-1, the own term
// read from the input) into out. Every rank reduces in the same order, so every rank gets the same
// bits. f16/bf16 accumulate in float. HBM bytes per rank: read M, write M; read nM, write M. One
// barrier per call for messages up to a data half (the small messages it is chosen for); in place
// is safe (each element is read, then written, by the same thread).
//
// Launch shape. One kernel per call, `cols` columns (the same on every rank) on `ctas` CTAs of 512
// threads (all resident; a rank's own count, cols unless a blocking call's kernel may run beside
// another: node.cuh, "Columns and CTAs"); column b owns the same 16-byte-aligned piece on every
// rank; the odd tail element by element.
//
// Sync protocol. One barrier per step (per column, target epoch + s + 1), data halves by
// barrier parity (node.cuh). A timed-out wait fills the error record and ends the CTA.
#include "node_kernels.cuh"
#include "transport_nvls.cuh"

using namespace tlmpi;
using namespace tlmpi::node;

namespace {

template <int DT, typename Op, class X> __device__ __forceinline__ bool ar1(const Params &p, const X &t)
{
    const int r = t.rank();
    const size_t M = p.bytes, S = p.chunk;
    for (unsigned s = 0; s < p.nsteps; s++) {
        const int k = (int)s + 1;
        const size_t h = half_off(p.x, t.epoch + k);
        const size_t off = (size_t)s * S, L = M - off < S ? M - off : S;
        size_t lo, hi;
        t.piece(p.nsteps == 1 ? L : S, L, &lo, &hi);
        const char *src = p.in + off;
        if (t.nranks() > 1) copy_piece(t.data(r) + h, 16, src, ua_of(src), lo, hi);
        if (!t.barrier(k)) return false;
        reduce_piece<DT, Op>(t, src, p.out + off, h, lo, hi, NoExtra());
    }
    return true;
}

template <int DT, typename Op, bool kMulti>
__global__ void __launch_bounds__(kNodeThreads, kMinBlocks) ar1_ipc(const __grid_constant__ Params p)
{
    TLMPI_NODE_ENTER_COLS(p, ep, kMulti);
    node_columns<kMulti>(p, [&](Column c) { return ar1<DT, Op>(p, IpcTransport{ p.x, ep, p.kind, c }); });
    node_exit(p);
}

template <int DT, typename Op>
__global__ void __launch_bounds__(kNodeThreads, kMinBlocks) ar1_nvls(const __grid_constant__ Params p)
{
    TLMPI_NODE_ENTER(p, ep);
    node_columns<false>(p, [&](Column c) { return ar1<DT, Op>(p, NvlsTransport<DT, Op>{ { p.x, ep, p.kind, c } }); });
    node_exit(p);
}

template <int DT, typename Op> struct Ar1K {
    static const void *fn(int v)
    {
        if constexpr (nvls_has(DT, op_id<Op>())) {
            if (v == kNvls) return (const void *)ar1_nvls<DT, Op>;
        }
        return v == kIpcCols ? (const void *)ar1_ipc<DT, Op, true> : (const void *)ar1_ipc<DT, Op, false>;
    }
};

}  // namespace

namespace tlmpi {
namespace node {

const void *allreduce_oneshot_fn(int dtype, int op, int v)
{
    return lookup_dt_op<Ar1K>(dtype, op, v);
}

}  // namespace node
}  // namespace tlmpi
