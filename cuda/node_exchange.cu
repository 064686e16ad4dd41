// node_exchange.cu: the copy siblings among the ranks of a node over the CUDA-IPC transport
// (cuda/node.cuh): MPI_Allgatherv and MPI_Bcast (TLMPI_NODE_XCHG), MPI_Alltoall (TLMPI_NODE_XCHG_ALL).
//
// Algorithm (pull shape, as the pull allgather). The call's layout (kernels.h: tlmpi_node_layout_t)
// names, per node rank q, block q of the own input (in_len[q] bytes at in_off[q]) and what this rank
// copies out of rank q's pool (out_len[q] bytes, to out_off[q]). A pool step has `slots` slots of
// `chunk` bytes: XCHG one (allgatherv: the own block; bcast: the root's vector, the other ranks stage
// nothing), XCHG_ALL n (slot q: the block for rank q). The call runs in steps over its longest block;
// step s covers [s*chunk, s*chunk + L) of every block. Per step: stage the own blocks' pieces into the
// own pool's slots; barrier; copy every peer's piece (slot 0, or slot `rank` for alltoall) straight from
// its pool into out (the own one too: read back from the own pool). Every piece is clipped to its
// block's length, so uneven blocks (counts of 0 included) move only their bytes. HBM bytes per rank:
// read and write the staged blocks, read and write what it receives.
// In place (MPI_IN_PLACE): the host gives the own block no out_len (allgatherv: it is already in out).
//
// Launch shape. One kernel per call, `cols` columns (the same on every rank) on `ctas` CTAs of 512
// threads (all resident: the host caps them as for the pool kinds; node.cuh, "Columns and CTAs");
// each column owns the same 16-byte-aligned piece of every slot of every step on every rank
// (node::col_piece), 4 vectors in flight per thread; a block's tail (< 16 bytes) byte by byte.
//
// Sync protocol. One barrier per step (target epoch + s + 1, per column); pool data written before
// barrier e lives in data half e % 2 and is read only between barriers e and e + 1 (node.cuh), so
// back-to-back calls of any kind are race-free without host synchronisation. A timed-out wait fills
// the error record and ends the CTA.
#include "node_kernels.cuh"
#include "transport_ipc.cuh"

using namespace tlmpi;
using namespace tlmpi::node;

namespace {

template <class X> __device__ __forceinline__ bool xchg(const Params &p, const X &t, int slots)
{
    const int n = t.nranks(), r = t.rank();
    const size_t B = p.bytes, S = p.chunk;
    const size_t rslot = slots > 1 ? (size_t)r * S : 0;
    for (unsigned s = 0; s < p.nsteps; s++) {
        const int k = (int)s + 1;
        const size_t h = half_off(p.x, t.epoch + k);
        const size_t off = (size_t)s * S, L = B - off < S ? B - off : S;
        size_t lo, hi;
        t.piece(p.nsteps == 1 ? L : S, L, &lo, &hi);
        for (int q = 0; q < slots; q++) {
            const size_t qh = block_hi(p.v.in_len[q], off, lo, hi);
            if (qh <= lo) continue;
            const char *src = p.in + p.v.in_off[q] + off;
            copy_piece(t.data(r) + h + (size_t)q * S, 16, src, ua_of(src), lo, qh);
        }
        if (!t.barrier(k)) return false;
        for (int j = 0; j < n; j++) {
            int q = r + j;
            if (q >= n) q -= n;
            const size_t qh = block_hi(p.v.out_len[q], off, lo, hi);
            if (qh <= lo) continue;
            char *dst = p.out + p.v.out_off[q] + off;
            copy_piece<true>(dst, ua_of(dst), t.data(q) + h + rslot, 16, lo, qh);
        }
    }
    return true;
}

template <bool kAll, bool kMulti>
__global__ void __launch_bounds__(kNodeThreads, kMinBlocks) xchg_ipc(const __grid_constant__ Params p)
{
    TLMPI_NODE_ENTER_COLS(p, ep, kMulti);
    const int slots = kAll ? p.x.nranks : 1;
    node_columns<kMulti>(p, [&](Column c) { return xchg(p, IpcTransport{ p.x, ep, p.kind, c }, slots); });
    node_exit(p);
}

}  // namespace

namespace tlmpi {
namespace node {

// kNvls has no kernel of its own here (a copy needs no multicast): the IPC one
const void *exchange_fn(int kind, int v)
{
    const bool all = kind == TLMPI_NODE_XCHG_ALL;
    if (v == kIpcCols) return all ? (const void *)xchg_ipc<true, true> : (const void *)xchg_ipc<false, true>;
    return all ? (const void *)xchg_ipc<true, false> : (const void *)xchg_ipc<false, false>;
}

}  // namespace node
}  // namespace tlmpi
