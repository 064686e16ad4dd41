// node_allreduce_twoshot.cu: MPI_Allreduce among the ranks of a node for large messages,
// reduce-scatter then allgather in one kernel, over a device transport (cuda/node.cuh;
// instantiated for the CUDA-IPC transport), every dtype x op of tlmpi_cuda_node_supported.
//
// Algorithm. In steps of `chunk` bytes, each step's piece split into n slices of equal 16-byte
// multiples (slice j is reduced by rank j):
//   1. copy the n-1 slices the peers reduce into the own pool (data half A);
//   2. barrier; load-reduce the own slice over every rank's half A (multicast load-reduce shape:
//      rank order 0..n-1, the own term from the input), store the result into out and into every
//      peer's pool (multicast store shape; data half B);
//   3. barrier; copy the n-1 slices the peers reduced from the own pool's half B into out.
// HBM bytes per rank: read and write (n-1)M/n (stage); read M, write M (reduce, store to every
// rank); read and write (n-1)M/n (copy out): about 6M, against (n+3)M for one-shot. f16/bf16
// accumulate in float. In place: every slice is staged before it is overwritten.
//
// Launch shape. One kernel per call, `cols` columns (the same on every rank) on `ctas` CTAs of 512
// threads (all resident; a rank's own count, cols unless a blocking call's kernel may run beside
// another: node.cuh, "Columns and CTAs"); column b owns the same 16-byte-aligned piece of every
// slice on every rank; the odd tail (in the last slice) element by element.
//
// Sync protocol. Two barriers per step (targets epoch + 2s + 1 and + 2s + 2, per column); half A
// is the parity of the first, half B of the second (node.cuh's rule). A timed-out wait fills the
// error record and ends the CTA.
#include "node_kernels.cuh"
#include "transport_nvls.cuh"

using namespace tlmpi;
using namespace tlmpi::node;

namespace {

// Each reduced vector also goes into every peer's pool, at the same slice offset in half B
// (d = half B - half A).
template <class X> struct StoreOthers {
    const X &t;
    size_t d;
    __device__ __forceinline__ void vec(size_t o, uint4 v) const { t.mc_store_others(o + d, v); }
    template <int E> __device__ __forceinline__ void elem(size_t o, Vec<E> v) const { t.template mc_store_others_e<E>(o + d, v); }
};

template <int DT, typename Op, class X> __device__ __forceinline__ bool ar2(const Params &p, const X &t)
{
    const int n = t.nranks(), r = t.rank();
    const size_t M = p.bytes, S = p.chunk;
    for (unsigned s = 0; s < p.nsteps; s++) {
        const int k1 = 2 * (int)s + 1, k2 = k1 + 1;
        const size_t ha = half_off(p.x, t.epoch + k1), hb = half_off(p.x, t.epoch + k2);
        const size_t off = (size_t)s * S, L = M - off < S ? M - off : S;
        // slices from the chunk size, the same in every step (the last step's short piece leaves
        // the last slices short or empty); a one-step call splits its own length
        size_t ls = ((p.nsteps == 1 ? L : S) + n - 1) / n;
        ls = (ls + 15) & ~(size_t)15;
        const char *src = p.in + off;
        char *dst = p.out + off;
        for (int j = X::kStageOwn ? 0 : 1; j < n; j++) {
            int q = r + j;
            if (q >= n) q -= n;
            const size_t so = (size_t)q * ls;
            if (so >= L) continue;
            const size_t len = L - so < ls ? L - so : ls;
            size_t lo, hi;
            t.piece(ls, len, &lo, &hi);
            copy_piece(t.data(r) + ha + so, 16, src + so, ua_of(src + so), lo, hi);
        }
        if (!t.barrier(k1)) return false;
        {
            const size_t so = (size_t)r * ls;
            if (so < L) {
                const size_t len = L - so < ls ? L - so : ls;
                size_t lo, hi;
                t.piece(ls, len, &lo, &hi);
                const StoreOthers<X> st{ t, hb - ha };
                reduce_piece<DT, Op>(t, src + so, dst + so, ha + so, lo, hi, st);
            }
        }
        if (!t.barrier(k2)) return false;
        for (int j = 1; j < n; j++) {
            int q = r + j;
            if (q >= n) q -= n;
            const size_t so = (size_t)q * ls;
            if (so >= L) continue;
            const size_t len = L - so < ls ? L - so : ls;
            size_t lo, hi;
            t.piece(ls, len, &lo, &hi);
            copy_piece<true>(dst + so, ua_of(dst + so), t.data(r) + hb + so, 16, lo, hi);
        }
    }
    return true;
}

template <int DT, typename Op, bool kMulti>
__global__ void __launch_bounds__(kNodeThreads, kMinBlocks) ar2_ipc(const __grid_constant__ Params p)
{
    TLMPI_NODE_ENTER_COLS(p, ep, kMulti);
    node_columns<kMulti>(p, [&](Column c) { return ar2<DT, Op>(p, IpcTransport{ p.x, ep, p.kind, c }); });
    node_exit(p);
}

template <int DT, typename Op>
__global__ void __launch_bounds__(kNodeThreads, kMinBlocks) ar2_nvls(const __grid_constant__ Params p)
{
    TLMPI_NODE_ENTER(p, ep);
    node_columns<false>(p, [&](Column c) { return ar2<DT, Op>(p, NvlsTransport<DT, Op>{ { p.x, ep, p.kind, c } }); });
    node_exit(p);
}

template <int DT, typename Op> struct Ar2K {
    static const void *fn(int v)
    {
        if constexpr (nvls_has(DT, op_id<Op>())) {
            if (v == kNvls) return (const void *)ar2_nvls<DT, Op>;
        }
        return v == kIpcCols ? (const void *)ar2_ipc<DT, Op, true> : (const void *)ar2_ipc<DT, Op, false>;
    }
};

}  // namespace

namespace tlmpi {
namespace node {

const void *allreduce_twoshot_fn(int dtype, int op, int v)
{
    return lookup_dt_op<Ar2K>(dtype, op, v);
}

}  // namespace node
}  // namespace tlmpi
