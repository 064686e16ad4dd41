// hier_fused_allreduce.cu: MPI_Allreduce of N nodes x L ranks in one kernel per call, over a rail
// transport (emulated; GIN where the headers have it), every dtype x op of tlmpi_cuda_node_supported.
// Pool layout, notation and the rules: cuda/hier_fused.cuh.
//
// Algorithm, per step: the reduce-scatter of hier_fused_reduce_scatter.cu over the step's N*L
// slices (rail step t), then per rail group as soon as it is summed: the reduced slice into the own
// inbox of rail step t+1, put to the rail peers, signal; node barrier; pull the node peers' reduced
// slices; per group: wait, copy out, node barrier, pull the node peers' arrived slices.
//
// Launch shape. One kernel per call, `ctas` CTAs of 512 threads, the same on every rank, all of every
// rank's CTAs resident at once; CTA b owns the same 16-byte-aligned piece of every block and slice in
// every step; the odd tail element by element.
//
// Sync protocol. Node barriers per CTA index: 2 + groups per step; rail signals cumulative per slot
// and group (two rail steps per step), targets from the host's totals (rail.cuh); every wait
// bounded, reported on timeout.
#include "hier_fused.cuh"

using namespace tlmpi;
using namespace tlmpi::node;
using namespace tlmpi::hier;

namespace {

template <int DT, typename Op, class R> __device__ __forceinline__ void ar(const RailParams &p, const R &t)
{
    const int L = t.node.nranks(), l = t.node.rank(), N = t.nnodes(), nd = t.node_index(), G = p.groups, W = N * L;
    const Layout ly{ p.chunk, W, N };
    const size_t M = p.bytes, S = (size_t)W * p.chunk;
    int kb = 0;
    for (unsigned s = 0; s < p.nsteps; s++) {
        const size_t off = (size_t)s * S, Ls = M - off < S ? M - off : S;
        size_t cs = p.chunk;
        if (p.nsteps == 1) cs = (((Ls + (size_t)W - 1) / (size_t)W) + 15) & ~(size_t)15;
        auto slen = [&](int blk) -> size_t {
            const size_t so = (size_t)blk * cs;
            return so >= Ls ? 0 : (Ls - so < cs ? Ls - so : cs);
        };
        auto sin = [&](int blk) -> size_t { return off + (size_t)blk * cs; };
        const unsigned long long trs = p.step0 + 2ull * s, tag = trs + 1;
        const int srs = (int)(trs % 3), sag = (int)(tag % 3);
        const int h = (int)((p.epoch + (unsigned long long)kb + 1) & 1ull);
        // 1: stage the slices the node peers reduce
        for (int n = 0; n < N; n++)
            for (int j = 1; j < L; j++) {
                const int blk = n * L + (l + j) % L;
                size_t lo, hi;
                t.node.piece(cs, slen(blk), &lo, &hi);
                const char *src = p.in + sin(blk);
                copy_piece(t.own() + ly.stage(h, blk), 16, src, ua_of(src), lo, hi);
            }
        if (!t.node.barrier(++kb)) return;
        // 2: partials to the rail peers
        rs_puts<DT, Op>(p, t, ly, h, srs, cs, slen, sin);
        // 3: per group, as soon as it is summed: the reduced own slice to the rail peers
        const int me = nd * L + l;
        size_t lo, hi;
        t.node.piece(cs, slen(me), &lo, &hi);
        for (int g = 0; g < G; g++) {
            size_t glo, ghi;
            gpart(lo, hi, g, G, &glo, &ghi);
            if (!t.wait(srs, g, target(p, trs, g), (int)(2 * s) + 1)) return;
            reduce_range<DT, Op>(t.own() + ly.inbox(sag, nd), 16, N,
                                 [&](int m) { return Src{ t.own() + ly.inbox(srs, m), 16, true }; }, glo, ghi);
            __syncthreads();
            char *d = p.out + sin(me);
            copy_piece<true>(d, ua_of(d), t.own() + ly.inbox(sag, nd), 16, glo, ghi);
            for (int j = 1; j < N; j++) {
                const int n = (nd + j) % N;
                t.put(n, ly.inbox(sag, nd), ly.inbox(sag, nd), glo, ghi);
                t.signal(n, sag, g);
            }
        }
        // 4: the node peers' reduced slices
        if (!t.node.barrier(++kb)) return;
        for (int j = 1; j < L; j++) {
            const int q = (l + j) % L, blk = nd * L + q;
            size_t qlo, qhi;
            t.node.piece(cs, slen(blk), &qlo, &qhi);
            pull_out(t, p, ly, sag, nd, q, sin(blk), qlo, qhi);
        }
        // 5: per group, the other nodes' slices: own rail's, then the node peers'
        for (int g = 0; g < G; g++) {
            if (!t.wait(sag, g, target(p, tag, g), (int)(2 * s) + 2)) return;
            for (int j = 1; j < N; j++) {
                const int n = (nd + j) % N, blk = n * L + l;
                size_t a, b, glo, ghi;
                t.node.piece(cs, slen(blk), &a, &b);
                gpart(a, b, g, G, &glo, &ghi);
                char *d = p.out + sin(blk);
                copy_piece<true>(d, ua_of(d), t.own() + ly.inbox(sag, n), 16, glo, ghi);
            }
            if (!t.node.barrier(++kb)) return;
            for (int j = 1; j < N; j++) {
                const int n = (nd + j) % N;
                for (int i = 1; i < L; i++) {
                    const int q = (l + i) % L, blk = n * L + q;
                    size_t a, b, glo, ghi;
                    t.node.piece(cs, slen(blk), &a, &b);
                    gpart(a, b, g, G, &glo, &ghi);
                    pull_out(t, p, ly, sag, n, q, sin(blk), glo, ghi);
                }
            }
        }
        t.flush();
    }
}

template <int DT, typename Op>
__global__ void __launch_bounds__(kNodeThreads, kMinBlocks) ar_emu(const __grid_constant__ RailParams p)
{
    rail::EmulatedRail t{ p.x, { p.x.node, p.epoch, TLMPI_NODE_AR_TWOSHOT, grid_column() } };
    ar<DT, Op>(p, t);
}

#ifdef TLMPI_RAIL_GIN
template <int DT, typename Op>
__global__ void __launch_bounds__(kNodeThreads, kMinBlocks) ar_gin(const __grid_constant__ GinParams g)
{
    rail::GinRail t{ g.p.x, { g.p.x.node, g.p.epoch, TLMPI_NODE_AR_TWOSHOT, grid_column() }, g.dc, g.win, g.contexts };
    ar<DT, Op>(g.p, t);
}
#endif

template <int DT, typename Op> struct ArK {
    static const void *fn(bool gin)
    {
#ifdef TLMPI_RAIL_GIN
        if (gin) return (const void *)ar_gin<DT, Op>;
#else
        if (gin) return nullptr;
#endif
        return (const void *)ar_emu<DT, Op>;
    }
};

}  // namespace

namespace tlmpi {
namespace hier {

const void *allreduce_fn(int dtype, int op, bool gin)
{
    return lookup_dt_op<ArK>(dtype, op, gin);
}

}  // namespace hier
}  // namespace tlmpi
