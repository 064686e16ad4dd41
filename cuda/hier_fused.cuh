// hier_fused.cuh: what the fused 2D collectives share (launcher: cuda/hier_fused.cu, kernels.h:
// tlmpi_cuda_rail_run; one file per collective: cuda/hier_fused_{allgather,reduce_scatter,allreduce}.cu):
// MPI_Allgather,
// MPI_Reduce_scatter_block and MPI_Allreduce of N nodes x L ranks in one kernel per call, written
// once against the rail transport concept (cuda/rail.cuh) and the node transport (node.cuh);
// instantiated for the emulated rail (CUDA-IPC mappings of every rank's pool on one host).
// The GIN rail (cuda/rail_gin.cuh) instantiates the same algorithms where the headers have it.
// Notation: rank (n, j) = n * L + j; the rail peers of (nd, l) are (n, l), n != nd; block / slice g
// of a message is global rank g's.
//
// Algorithm, per step (a message larger than a chunk c per block runs as several steps inside the
// kernel; each step's pieces are split into `groups` rail groups, every rail group its own signal):
//   allgather     copy the own block into the own inbox slot (and the output); for each group, put
//                 it into every rail peer's inbox (slot of this node) and signal; node barrier; pull
//                 the node peers' own blocks; per group: wait for the rail peers' signals, copy the
//                 arrived blocks out, node barrier, pull the node peers' arrived blocks (published
//                 per group as each group's signal arrives)
//   reduce-scatter  stage the blocks the node peers reduce; node barrier; per group, for every
//                 other node n: load-reduce block (n, l) over the node's ranks into a partial, put it
//                 into (n, l)'s inbox, signal; the own node's partial last, into the own inbox; per
//                 group: wait, sum the N partials in node order (f32 for f16/bf16) into the output
//   allreduce     the reduce-scatter above over the step's N*L slices (rail step t), then per group
//                 as soon as it is summed: the reduced slice into the own inbox of rail step t+1,
//                 put to the rail peers, signal; node barrier; pull the node peers' reduced slices;
//                 per group: wait, copy out, node barrier, pull the node peers' arrived slices
// HBM bytes per rank and block b (allgather): write the own block twice, rail puts (N-1)b, copy-out
// and pulls N*L*b read and written. The rail carries (N-1)/N of each rank's data, as flat rings do,
// but only between ranks of the same local index (one NIC each, no fan-out).
//
// Pool data area (every kind the same layout, so calls of different kinds reuse no byte another
// kind may still read): stage[2][N*L][c] | partial[N][c] | inbox[3][N][c]. Stage halves by node
// barrier parity (node.cuh's rule); inbox slots by rail step mod 3 (rail.cuh's rule).
//
// Launch shape. One kernel per call, `ctas` CTAs of 512 threads, the same on every rank, all of
// every rank's CTAs resident at once (the host sizes the grid with the occupancy API and the ranks
// sharing the GPU): a rail wait depends on every CTA of every rail peer. CTA b owns the same
// 16-byte-aligned piece of every block and slice in every step; the odd tail element by element.
//
// Sync protocol. Node barriers per CTA index (allgather 1 + groups per step, reduce-scatter 1,
// allreduce 2 + groups); rail signals cumulative, targets from the host's totals (rail.cuh). Every
// wait is bounded by the descriptor's timeout and fills the error record (a rail wait: the rail
// step, slot, group and sending node, expected and seen).
#ifndef TLMPI_CUDA_HIER_FUSED_CUH
#define TLMPI_CUDA_HIER_FUSED_CUH

#include "node_kernels.cuh"
#include "rail.cuh"
#include "rail_gin.cuh"

namespace tlmpi {
namespace hier {

using namespace tlmpi::node;

struct RailParams {
    tlmpi_rail_xport_t x;
    const char *in;
    char *out;
    size_t bytes;           // allgather / RSB: one block; allreduce: the vector
    size_t chunk;           // c: bytes of a block (slice) per step, a multiple of 16
    unsigned nsteps;
    int groups, kind;
    unsigned long long epoch, step0;
    unsigned long long sig[TLMPI_RAIL_SLOTS][TLMPI_RAIL_MAX_GROUPS];
};

struct Layout {
    size_t c;
    int W, N;
    __device__ __forceinline__ size_t stage(int h, int blk) const { return ((size_t)h * W + (size_t)blk) * c; }
    __device__ __forceinline__ size_t partial(int n) const { return ((size_t)2 * W + (size_t)n) * c; }
    __device__ __forceinline__ size_t inbox(int slot, int n) const
    {
        return ((size_t)2 * W + (size_t)N + (size_t)slot * N + (size_t)n) * c;
    }
};

// group g's part of a CTA piece [lo, hi) (16-byte multiples; the tail in the last non-empty part)
__device__ __forceinline__ void gpart(size_t lo, size_t hi, int g, int G, size_t *glo, size_t *ghi)
{
    size_t per = (hi - lo + (size_t)G - 1) / (size_t)G;
    per = (per + 15) & ~(size_t)15;
    size_t a = lo + per * (size_t)g;
    if (a > hi) a = hi;
    size_t b = a + per;
    if (b > hi) b = hi;
    *glo = a;
    *ghi = b;
}

__device__ __forceinline__ unsigned long long target(const RailParams &p, unsigned long long t, int g)
{
    return p.sig[t % 3][g] + (unsigned long long)gridDim.x * ((t - p.step0) / 3 + 1);
}

struct Src {
    const char *p;
    int ua;
    bool pool;
};

// dst[lo, hi) = op over k = 0..n-1 of src(k)[lo, hi), in that order (f16/bf16 in float, rounded once)
template <int DT, typename Op, class SrcF>
__device__ __forceinline__ void reduce_range(char *dst, int ua_d, int n, SrcF &&src, size_t lo, size_t hi)
{
    using T = typename Dt<DT>::T;
    constexpr int E = (int)sizeof(T);
    using Acc = AccumFor<DT, Op, 16>;
    using AccE = AccumFor<DT, Op, E>;
    const size_t nvec = (hi - lo) / 16;
    for (size_t i = threadIdx.x; i < nvec; i += blockDim.x) {
        const size_t b = lo + i * 16;
        Acc a;
        for (int k = 0; k < n; k++) {
            const Src s = src(k);
            const uint4 v = s.pool ? load_pool<16>(s.p + b) : ld_user(s.p + b, s.ua);
            if (k == 0) a.init(v);
            else a.add(v);
        }
        st_user(dst + b, a.get(), ua_d);
    }
    for (size_t b = lo + nvec * 16 + (size_t)threadIdx.x * E; b < hi; b += (size_t)blockDim.x * E) {
        AccE a;
        for (int k = 0; k < n; k++) {
            const Src s = src(k);
            const Vec<E> v = s.pool ? load_pool<E>(s.p + b) : ld_user_e<E>(s.p + b, s.ua);
            if (k == 0) a.init(v);
            else a.add(v);
        }
        st_user_e<E>(dst + b, a.get(), ua_d);
    }
}

template <class R>
__device__ __forceinline__ void pull_out(const R &t, const RailParams &p, const Layout &ly, int slot, int n, int q,
                                         size_t dst_off, size_t lo, size_t hi)
{
    char *d = p.out + dst_off;
    copy_piece<true>(d, ua_of(d), t.node.data(q) + ly.inbox(slot, n), 16, lo, hi);
}

// The reduce-scatter rail step shared by reduce_scatter_block and allreduce: blocks (slices) of
// `len_of(blk)` bytes at in + in_off(blk), staged in half h (after barrier kb, already passed by
// the caller); partials put into the rail peers' inbox slot, the own partial into the own inbox.
template <int DT, typename Op, class R, class LenF, class OffF>
__device__ __forceinline__ void rs_puts(const RailParams &p, const R &t, const Layout &ly, int h, int slot, size_t full,
                                        LenF &&len_of, OffF &&in_off)
{
    const int L = t.node.nranks(), l = t.node.rank(), N = t.nnodes(), nd = t.node_index(), G = p.groups;
    for (int g = 0; g < G; g++) {
        for (int j = 1; j <= N; j++) {
            const int n = (nd + j) % N;  // the other nodes first, the own node last
            const int blk = n * L + l;
            size_t lo, hi, glo, ghi;
            t.node.piece(full, len_of(blk), &lo, &hi);
            gpart(lo, hi, g, G, &glo, &ghi);
            const char *own_in = p.in + in_off(blk);
            const int ua = ua_of(own_in);
            const size_t dst = n == nd ? ly.inbox(slot, nd) : ly.partial(n);
            reduce_range<DT, Op>(t.own() + dst, 16, L,
                                 [&](int q) {
                                     return q == l ? Src{ own_in, ua, false } : Src{ t.node.data(q) + ly.stage(h, blk), 16, true };
                                 },
                                 glo, ghi);
            if (n != nd) {
                __syncthreads();
                t.put(n, ly.partial(n), ly.inbox(slot, nd), glo, ghi);
                t.signal(n, slot, g);
            }
        }
    }
}

#ifdef TLMPI_RAIL_GIN
// the GIN rail: the devcomm and the window ride along with the emulated rail's parameters
struct GinParams {
    RailParams p;
    ncclDevComm dc;
    ncclWindow_t win;
    int contexts;
};
#endif

// The kernels, one lookup per collective file; gin: over the GIN rail (nullptr where it is not
// built), else the emulated rail.
const void *allgather_fn(bool gin);                              // hier_fused_allgather.cu
const void *reduce_scatter_fn(int dtype, int op, bool gin);      // hier_fused_reduce_scatter.cu
const void *allreduce_fn(int dtype, int op, bool gin);           // hier_fused_allreduce.cu

}  // namespace hier
}  // namespace tlmpi

#endif
