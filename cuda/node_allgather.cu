// node_allgather.cu: MPI_Allgather among the ranks of a node, two algorithms over a device
// transport (cuda/node.cuh; instantiated for the CUDA-IPC transport).
//
// Algorithm. A rank's block is B bytes; out holds n blocks, block q at q*B. The block runs in steps
// of `chunk` bytes (the host picks it so a step's slots fit one data half of the pool); step s
// covers [s*chunk, s*chunk + L) of every block.
//   push (multicast-store shape): read the own block's piece once, store it into out's own slot and
//     into slot `rank` of every other rank's pool (NVLS: one multimem.st; IPC: one store per peer);
//     barrier; copy the n-1 pool slots that the peers stored into this rank's pool out to out.
//     HBM bytes per rank and block: read B, write B + (n-1)B; read (n-1)B, write (n-1)B.
//   pull: read the own piece, store it into out's own slot and into the own pool; barrier; load
//     every peer's piece from its pool straight into out. Per rank: read B, write 2B; read (n-1)B,
//     write (n-1)B (less HBM traffic than push when the ranks share one GPU; push moves the bytes
//     to the peers with stores, which is what NVLink favours).
// In place (MPI_IN_PLACE): in is the own slot of out, which is then not copied.
//
// Launch shape. One kernel per call, `cols` columns (the same on every rank) on `ctas` CTAs of 512
// threads (all resident: the host caps them with the occupancy API and the number of ranks sharing
// the GPU; a rank's own count, cols unless a blocking call's kernel may run beside another: node.cuh,
// "Columns and CTAs"); each column owns the same 16-byte-aligned piece of every step on every rank
// (node::col_piece), 4 vectors in flight per thread; tails (< 16 bytes, at the block's end) byte by byte.
//
// Sync protocol. One barrier per step (target epoch + s + 1, per column). The pool data
// written before barrier e lives in data half e % 2 and is read only between barriers e and
// e + 1 (node.cuh), which makes back-to-back calls race-free without any host synchronisation.
// A timed-out wait fills the error record and ends the CTA.
#include "node_kernels.cuh"
#include "transport_nvls.cuh"

using namespace tlmpi;
using namespace tlmpi::node;

namespace {

template <class X> __device__ __forceinline__ bool ag_push(const Params &p, const X &t)
{
    const int n = t.nranks(), r = t.rank();
    const size_t B = p.bytes, S = p.chunk;
    const bool in_place = p.in == p.out + (size_t)r * B;
    for (unsigned s = 0; s < p.nsteps; s++) {
        const int k = (int)s + 1;
        const size_t h = half_off(p.x, t.epoch + k);
        const size_t off = (size_t)s * S, L = B - off < S ? B - off : S;
        size_t lo, hi;
        t.piece(p.nsteps == 1 ? L : S, L, &lo, &hi);
        const char *src = p.in + off;
        char *own = p.out + (size_t)r * B + off;
        const int ua_s = ua_of(src), ua_o = ua_of(own);
        const size_t slot = h + (size_t)r * S;
        walk_piece(
            lo, hi, [&](size_t b) { return ld_user(src + b, ua_s); },
            [&](size_t b, uint4 v) {
                if (!in_place) st_user(own + b, v, ua_o);
                t.mc_store_others(slot + b, v);
            },
            [&](size_t b) {
                const char v = src[b];
                if (!in_place) own[b] = v;
                t.template mc_store_others_e<1>(slot + b, (uint8_t)v);
            });
        if (!t.barrier(k)) return false;
        for (int j = 1; j < n; j++) {
            int q = r + j;
            if (q >= n) q -= n;
            char *dst = p.out + (size_t)q * B + off;
            copy_piece<true>(dst, ua_of(dst), t.data(r) + h + (size_t)q * S, 16, lo, hi);
        }
    }
    return true;
}

template <class X> __device__ __forceinline__ bool ag_pull(const Params &p, const X &t)
{
    const int n = t.nranks(), r = t.rank();
    const size_t B = p.bytes, S = p.chunk;
    const bool in_place = p.in == p.out + (size_t)r * B;
    for (unsigned s = 0; s < p.nsteps; s++) {
        const int k = (int)s + 1;
        const size_t h = half_off(p.x, t.epoch + k);
        const size_t off = (size_t)s * S, L = B - off < S ? B - off : S;
        size_t lo, hi;
        t.piece(p.nsteps == 1 ? L : S, L, &lo, &hi);
        const char *src = p.in + off;
        char *own = p.out + (size_t)r * B + off;
        char *pool = t.data(r) + h;
        const int ua_s = ua_of(src), ua_o = ua_of(own);
        walk_piece(
            lo, hi, [&](size_t b) { return ld_user(src + b, ua_s); },
            [&](size_t b, uint4 v) {
                if (!in_place) st_user(own + b, v, ua_o);
                store<16>(pool + b, v);
            },
            [&](size_t b) {
                const char v = src[b];
                if (!in_place) own[b] = v;
                pool[b] = v;
            });
        if (!t.barrier(k)) return false;
        for (int j = 1; j < n; j++) {
            int q = r + j;
            if (q >= n) q -= n;
            char *dst = p.out + (size_t)q * B + off;
            copy_piece<true>(dst, ua_of(dst), t.data(q) + h, 16, lo, hi);
        }
    }
    return true;
}

template <bool kMulti>
__global__ void __launch_bounds__(kNodeThreads, kMinBlocks) ag_push_ipc(const __grid_constant__ Params p)
{
    TLMPI_NODE_ENTER_COLS(p, ep, kMulti);
    node_columns<kMulti>(p, [&](Column c) { return ag_push(p, IpcTransport{ p.x, ep, p.kind, c }); });
    node_exit(p);
}

__global__ void __launch_bounds__(kNodeThreads, kMinBlocks) ag_push_nvls(const __grid_constant__ Params p)
{
    TLMPI_NODE_ENTER(p, ep);
    node_columns<false>(p, [&](Column c) { return ag_push(p, NvlsTransport<TLMPI_DT_U8, Sum>{ { p.x, ep, p.kind, c } }); });
    node_exit(p);
}

template <bool kMulti>
__global__ void __launch_bounds__(kNodeThreads, kMinBlocks) ag_pull_ipc(const __grid_constant__ Params p)
{
    TLMPI_NODE_ENTER_COLS(p, ep, kMulti);
    node_columns<kMulti>(p, [&](Column c) { return ag_pull(p, IpcTransport{ p.x, ep, p.kind, c }); });
    node_exit(p);
}

}  // namespace

namespace tlmpi {
namespace node {

const void *allgather_fn(int kind, int v)
{
    const bool multi = v == kIpcCols;
    if (kind == TLMPI_NODE_AG_PUSH)
        return v == kNvls ? (const void *)ag_push_nvls : multi ? (const void *)ag_push_ipc<true> : (const void *)ag_push_ipc<false>;
    if (kind == TLMPI_NODE_AG_PULL) return multi ? (const void *)ag_pull_ipc<true> : (const void *)ag_pull_ipc<false>;
    return nullptr;
}

}  // namespace node
}  // namespace tlmpi
