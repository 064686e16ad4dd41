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
// Launch shape. One kernel per call, `ctas` CTAs of 512 threads (the same on every rank, all
// resident); CTA b owns the same 16-byte-aligned piece on every rank; the odd tail element by
// element.
//
// Sync protocol. One barrier per step (per CTA index, target epoch + s + 1), data halves by
// barrier parity (node.cuh). A timed-out wait fills the error record and ends the CTA.
#include "node_kernels.cuh"
#include "transport_nvls.cuh"

using namespace tlmpi;
using namespace tlmpi::node;

namespace {

template <int DT, typename Op, class X> __device__ __forceinline__ void ar1(const Params &p, const X &t)
{
    const int r = t.rank();
    const size_t M = p.bytes, S = p.chunk;
    for (unsigned s = 0; s < p.nsteps; s++) {
        const int k = (int)s + 1;
        const size_t h = half_off(p.x, t.epoch + k);
        const size_t off = (size_t)s * S, L = M - off < S ? M - off : S;
        size_t lo, hi;
        cta_piece(p.nsteps == 1 ? L : S, L, &lo, &hi);
        const char *src = p.in + off;
        if (t.nranks() > 1) copy_piece(t.data(r) + h, 16, src, ua_of(src), lo, hi);
        if (!t.barrier(k)) return;
        reduce_piece<DT, Op>(t, src, p.out + off, h, lo, hi, NoExtra());
    }
}

template <int DT, typename Op>
__global__ void __launch_bounds__(kNodeThreads, kMinBlocks) ar1_ipc(const __grid_constant__ Params p)
{
    TLMPI_NODE_ENTER(p, ep);
    IpcTransport t{ p.x, ep, p.kind };
    ar1<DT, Op>(p, t);
    node_exit(p);
}

template <int DT, typename Op>
__global__ void __launch_bounds__(kNodeThreads, kMinBlocks) ar1_nvls(const __grid_constant__ Params p)
{
    TLMPI_NODE_ENTER(p, ep);
    NvlsTransport<DT, Op> t{ { p.x, ep, p.kind } };
    ar1<DT, Op>(p, t);
    node_exit(p);
}

template <int DT, typename Op> struct Ar1K {
    static const void *fn(bool nvls)
    {
        if constexpr (nvls_has(DT, op_id<Op>())) {
            if (nvls) return (const void *)ar1_nvls<DT, Op>;
        }
        return (const void *)ar1_ipc<DT, Op>;
    }
};

}  // namespace

namespace tlmpi {
namespace node {

const void *allreduce_oneshot_fn(int dtype, int op, bool nvls)
{
    return lookup_dt_op<Ar1K>(dtype, op, nvls);
}

}  // namespace node
}  // namespace tlmpi
