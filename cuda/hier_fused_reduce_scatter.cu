// hier_fused_reduce_scatter.cu: MPI_Reduce_scatter_block of N nodes x L ranks in one kernel per
// call, over a rail transport (emulated; GIN where the headers have it), every dtype x op of
// tlmpi_cuda_node_supported. Pool layout, notation and the rules: cuda/hier_fused.cuh.
//
// Algorithm, per step: stage the blocks the node peers reduce; node barrier; per rail group, for
// every other node n: load-reduce block (n, l) over the node's ranks into a partial, put it into
// (n, l)'s inbox, signal; the own node's partial last, into the own inbox; per group: wait, sum the
// N partials in node order (f32 for f16/bf16) into the output (rs_puts, hier_fused.cuh).
//
// Launch shape. One kernel per call, `ctas` CTAs of 512 threads, the same on every rank, all of every
// rank's CTAs resident at once; CTA b owns the same 16-byte-aligned piece of every block and slice in
// every step; the odd tail element by element.
//
// Sync protocol. One node barrier per step per CTA index; rail signals cumulative per slot and
// group, targets from the host's totals (rail.cuh); every wait bounded, reported on timeout.
#include "hier_fused.cuh"

using namespace tlmpi;
using namespace tlmpi::node;
using namespace tlmpi::hier;

namespace {

template <int DT, typename Op, class R> __device__ __forceinline__ void rsb(const RailParams &p, const R &t)
{
    const int L = t.node.nranks(), l = t.node.rank(), N = t.nnodes(), G = p.groups;
    const Layout ly{ p.chunk, N * L, N };
    const size_t B = p.bytes, c = p.chunk;
    const int ua_o = ua_of(p.out);
    int kb = 0;
    for (unsigned s = 0; s < p.nsteps; s++) {
        const unsigned long long tr = p.step0 + s;
        const int slot = (int)(tr % 3);
        const size_t off = (size_t)s * c, len = B - off < c ? B - off : c, full = p.nsteps == 1 ? len : c;
        const int h = (int)((p.epoch + (unsigned long long)kb + 1) & 1ull);
        size_t lo, hi;
        t.node.piece(full, len, &lo, &hi);
        for (int n = 0; n < N; n++)
            for (int j = 1; j < L; j++) {
                const int blk = n * L + (l + j) % L;
                const char *src = p.in + (size_t)blk * B + off;
                copy_piece(t.own() + ly.stage(h, blk), 16, src, ua_of(src), lo, hi);
            }
        if (!t.node.barrier(++kb)) return;
        rs_puts<DT, Op>(p, t, ly, h, slot, full, [&](int) { return len; },
                        [&](int blk) { return (size_t)blk * B + off; });
        for (int g = 0; g < G; g++) {
            size_t glo, ghi;
            gpart(lo, hi, g, G, &glo, &ghi);
            if (!t.wait(slot, g, target(p, tr, g), (int)s + 1)) return;
            reduce_range<DT, Op>(p.out + off, ua_o, N, [&](int m) { return Src{ t.own() + ly.inbox(slot, m), 16, true }; },
                                 glo, ghi);
        }
        t.flush();
    }
}

template <int DT, typename Op>
__global__ void __launch_bounds__(kNodeThreads, kMinBlocks) rsb_emu(const __grid_constant__ RailParams p)
{
    rail::EmulatedRail t{ p.x, { p.x.node, p.epoch, TLMPI_NODE_RSB_PULL, grid_column() } };
    rsb<DT, Op>(p, t);
}

#ifdef TLMPI_RAIL_GIN
template <int DT, typename Op>
__global__ void __launch_bounds__(kNodeThreads, kMinBlocks) rsb_gin(const __grid_constant__ GinParams g)
{
    rail::GinRail t{ g.p.x, { g.p.x.node, g.p.epoch, TLMPI_NODE_RSB_PULL, grid_column() }, g.dc, g.win, g.contexts };
    rsb<DT, Op>(g.p, t);
}
#endif

template <int DT, typename Op> struct RsbK {
    static const void *fn(bool gin)
    {
#ifdef TLMPI_RAIL_GIN
        if (gin) return (const void *)rsb_gin<DT, Op>;
#else
        if (gin) return nullptr;
#endif
        return (const void *)rsb_emu<DT, Op>;
    }
};

}  // namespace

namespace tlmpi {
namespace hier {

const void *reduce_scatter_fn(int dtype, int op, bool gin)
{
    return lookup_dt_op<RsbK>(dtype, op, gin);
}

}  // namespace hier
}  // namespace tlmpi
