// hier_fused_allgather.cu: MPI_Allgather of N nodes x L ranks in one kernel per call, over a rail
// transport (emulated; GIN where the headers have it). Pool layout, notation and the rules:
// cuda/hier_fused.cuh.
//
// Algorithm, per step: copy the own block into the own inbox slot (and the output); for each rail
// group, put it into every rail peer's inbox (slot of this node) and signal; node barrier; pull the
// node peers' own blocks; per group: wait for the rail peers' signals, copy the arrived blocks out,
// node barrier, pull the node peers' arrived blocks. HBM bytes per rank and block b: the own block
// written twice, rail puts (N-1)b, copy-out and pulls N*L*b read and written.
//
// Launch shape. One kernel per call, `ctas` CTAs of 512 threads, the same on every rank, all of every
// rank's CTAs resident at once; CTA b owns the same 16-byte-aligned piece of every block in every step.
//
// Sync protocol. Node barriers per CTA index: 1 + groups per step; rail signals cumulative per slot
// and group, targets from the host's totals (rail.cuh); every wait bounded, reported on timeout.
#include "hier_fused.cuh"

using namespace tlmpi;
using namespace tlmpi::node;
using namespace tlmpi::hier;

namespace {

// ---------------------------------------------------------------------------------------------
template <class R> __device__ __forceinline__ void ag(const RailParams &p, const R &t)
{
    const int L = t.node.nranks(), l = t.node.rank(), N = t.nnodes(), nd = t.node_index(), G = p.groups;
    const Layout ly{ p.chunk, N * L, N };
    const size_t B = p.bytes, c = p.chunk;
    int kb = 0;
    for (unsigned s = 0; s < p.nsteps; s++) {
        const unsigned long long tr = p.step0 + s;
        const int slot = (int)(tr % 3);
        const size_t off = (size_t)s * c, len = B - off < c ? B - off : c;
        size_t lo, hi;
        t.node.piece(p.nsteps == 1 ? len : c, len, &lo, &hi);
        const size_t own_slot = ly.inbox(slot, nd);
        const char *src = p.in + off;
        copy_piece(t.own() + own_slot, 16, src, ua_of(src), lo, hi);
        char *mine = p.out + (size_t)(nd * L + l) * B + off;
        if (mine != src) copy_piece(mine, ua_of(mine), src, ua_of(src), lo, hi);
        __syncthreads();
        for (int g = 0; g < G; g++) {
            size_t glo, ghi;
            gpart(lo, hi, g, G, &glo, &ghi);
            for (int j = 1; j < N; j++) {
                const int n = (nd + j) % N;
                t.put(n, own_slot, own_slot, glo, ghi);
                t.signal(n, slot, g);
            }
        }
        if (!t.node.barrier(++kb)) return;
        for (int j = 1; j < L; j++) {
            const int q = (l + j) % L;
            pull_out(t, p, ly, slot, nd, q, (size_t)(nd * L + q) * B + off, lo, hi);
        }
        for (int g = 0; g < G; g++) {
            size_t glo, ghi;
            gpart(lo, hi, g, G, &glo, &ghi);
            if (!t.wait(slot, g, target(p, tr, g), (int)s + 1)) return;
            for (int j = 1; j < N; j++) {
                const int n = (nd + j) % N;
                char *d = p.out + (size_t)(n * L + l) * B + off;
                copy_piece<true>(d, ua_of(d), t.own() + ly.inbox(slot, n), 16, glo, ghi);
            }
            if (!t.node.barrier(++kb)) return;
            for (int j = 1; j < N; j++) {
                const int n = (nd + j) % N;
                for (int i = 1; i < L; i++) {
                    const int q = (l + i) % L;
                    pull_out(t, p, ly, slot, n, q, (size_t)(n * L + q) * B + off, glo, ghi);
                }
            }
        }
        t.flush();
    }
}

__global__ void __launch_bounds__(kNodeThreads, kMinBlocks) ag_emu(const __grid_constant__ RailParams p)
{
    rail::EmulatedRail t{ p.x, { p.x.node, p.epoch, TLMPI_NODE_AG_PULL, grid_column() } };
    ag(p, t);
}

#ifdef TLMPI_RAIL_GIN
__global__ void __launch_bounds__(kNodeThreads, kMinBlocks) ag_gin(const __grid_constant__ GinParams g)
{
    rail::GinRail t{ g.p.x, { g.p.x.node, g.p.epoch, TLMPI_NODE_AG_PULL, grid_column() }, g.dc, g.win, g.contexts };
    ag(g.p, t);
}
#endif

}  // namespace

namespace tlmpi {
namespace hier {

const void *allgather_fn(bool gin)
{
#ifdef TLMPI_RAIL_GIN
    if (gin) return (const void *)ag_gin;
#else
    if (gin) return nullptr;
#endif
    return (const void *)ag_emu;
}

}  // namespace hier
}  // namespace tlmpi
