// hier_fused.cu: the fused 2D collectives (kernels.h: tlmpi_cuda_rail_run): MPI_Allgather,
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
#include "node_kernels.cuh"
#include "rail.cuh"
#include "rail_gin.cuh"

#include <cstring>

using namespace tlmpi;
using namespace tlmpi::node;

namespace {

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
        cta_piece(p.nsteps == 1 ? len : c, len, &lo, &hi);
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
            cta_piece(full, len_of(blk), &lo, &hi);
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
        cta_piece(full, len, &lo, &hi);
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
                cta_piece(cs, slen(blk), &lo, &hi);
                const char *src = p.in + sin(blk);
                copy_piece(t.own() + ly.stage(h, blk), 16, src, ua_of(src), lo, hi);
            }
        if (!t.node.barrier(++kb)) return;
        // 2: partials to the rail peers
        rs_puts<DT, Op>(p, t, ly, h, srs, cs, slen, sin);
        // 3: per group, as soon as it is summed: the reduced own slice to the rail peers
        const int me = nd * L + l;
        size_t lo, hi;
        cta_piece(cs, slen(me), &lo, &hi);
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
            cta_piece(cs, slen(blk), &qlo, &qhi);
            pull_out(t, p, ly, sag, nd, q, sin(blk), qlo, qhi);
        }
        // 5: per group, the other nodes' slices: own rail's, then the node peers'
        for (int g = 0; g < G; g++) {
            if (!t.wait(sag, g, target(p, tag, g), (int)(2 * s) + 2)) return;
            for (int j = 1; j < N; j++) {
                const int n = (nd + j) % N, blk = n * L + l;
                size_t a, b, glo, ghi;
                cta_piece(cs, slen(blk), &a, &b);
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
                    cta_piece(cs, slen(blk), &a, &b);
                    gpart(a, b, g, G, &glo, &ghi);
                    pull_out(t, p, ly, sag, n, q, sin(blk), glo, ghi);
                }
            }
        }
        t.flush();
    }
}

// ---------------------------------------------------------------------------------------------
__global__ void __launch_bounds__(kNodeThreads, kMinBlocks) ag_emu(const __grid_constant__ RailParams p)
{
    rail::EmulatedRail t{ p.x, { p.x.node, p.epoch, TLMPI_NODE_AG_PULL } };
    ag(p, t);
}

template <int DT, typename Op>
__global__ void __launch_bounds__(kNodeThreads, kMinBlocks) rsb_emu(const __grid_constant__ RailParams p)
{
    rail::EmulatedRail t{ p.x, { p.x.node, p.epoch, TLMPI_NODE_RSB_PULL } };
    rsb<DT, Op>(p, t);
}

template <int DT, typename Op>
__global__ void __launch_bounds__(kNodeThreads, kMinBlocks) ar_emu(const __grid_constant__ RailParams p)
{
    rail::EmulatedRail t{ p.x, { p.x.node, p.epoch, TLMPI_NODE_AR_TWOSHOT } };
    ar<DT, Op>(p, t);
}

#ifdef TLMPI_RAIL_GIN
// the GIN rail: the devcomm and the window ride along with the emulated rail's parameters
struct GinParams {
    RailParams p;
    ncclDevComm dc;
    ncclWindow_t win;
    int contexts;
};

__global__ void __launch_bounds__(kNodeThreads, kMinBlocks) ag_gin(const __grid_constant__ GinParams g)
{
    rail::GinRail t{ g.p.x, { g.p.x.node, g.p.epoch, TLMPI_NODE_AG_PULL }, g.dc, g.win, g.contexts };
    ag(g.p, t);
}

template <int DT, typename Op>
__global__ void __launch_bounds__(kNodeThreads, kMinBlocks) rsb_gin(const __grid_constant__ GinParams g)
{
    rail::GinRail t{ g.p.x, { g.p.x.node, g.p.epoch, TLMPI_NODE_RSB_PULL }, g.dc, g.win, g.contexts };
    rsb<DT, Op>(g.p, t);
}

template <int DT, typename Op>
__global__ void __launch_bounds__(kNodeThreads, kMinBlocks) ar_gin(const __grid_constant__ GinParams g)
{
    rail::GinRail t{ g.p.x, { g.p.x.node, g.p.epoch, TLMPI_NODE_AR_TWOSHOT }, g.dc, g.win, g.contexts };
    ar<DT, Op>(g.p, t);
}
#endif

// fn(gin): the kernel over the GIN rail (nullptr where it is not built) or the emulated one
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

const void *ag_fn(bool gin)
{
#ifdef TLMPI_RAIL_GIN
    if (gin) return (const void *)ag_gin;
#else
    if (gin) return nullptr;
#endif
    return (const void *)ag_emu;
}

}  // namespace

extern "C" size_t tlmpi_cuda_rail_chunk(size_t data_bytes, int nnodes, int local_size)
{
    if (nnodes < 1 || local_size < 1) return 0;
    const size_t units = 2 * (size_t)nnodes * (size_t)local_size + 4 * (size_t)nnodes;
    return (data_bytes / units) & ~(size_t)15;
}

extern "C" int tlmpi_cuda_rail_run(const tlmpi_rail_xport_t *x, tlmpi_rail_args_t *a, void *stream)
{
    if (!x || !a || a->ctas < 1 || a->ctas > TLMPI_NODE_MAX_CTAS || a->groups < 1 || a->groups > TLMPI_RAIL_MAX_GROUPS ||
        x->nnodes < 2 || x->nnodes > TLMPI_RAIL_MAX_NODES || x->node_index < 0 || x->node_index >= x->nnodes ||
        x->node.nranks < 1 || x->node.nranks > TLMPI_NODE_MAX_RANKS || x->node.rank < 0 || x->node.rank >= x->node.nranks ||
        a->kind < 0 || a->kind >= TLMPI_RAIL_KIND_COUNT)
        return (int)cudaErrorInvalidValue;
    RailParams p;
    p.x = *x;
    p.in = static_cast<const char *>(a->in);
    p.out = static_cast<char *>(a->out);
    p.kind = a->kind;
    p.groups = a->groups;
    p.epoch = a->epoch;
    p.step0 = a->step;
    memcpy(p.sig, a->sig, sizeof(p.sig));
    size_t elem = 1;
    if (a->kind != TLMPI_RAIL_AG) {
        if (!tlmpi_cuda_node_supported(a->dtype, a->op)) return (int)cudaErrorInvalidValue;
        elem = TLMPI_DT_ELEM_SIZE(a->dtype);
    }
    if (a->count == 0) return 0;
    const int W = x->nnodes * x->node.nranks;
    if (!a->in || !a->out || a->count > ((size_t)-1) / elem / (size_t)W) return (int)cudaErrorInvalidValue;
    p.bytes = a->count * elem;
    p.chunk = tlmpi_cuda_rail_chunk(x->node.data_bytes, x->nnodes, x->node.nranks);
    if (p.chunk < 16) return (int)cudaErrorInvalidValue;
    const size_t per_step = a->kind == TLMPI_RAIL_AR ? (size_t)W * p.chunk : p.chunk;
    const size_t steps = (p.bytes + per_step - 1) / per_step;
    if (steps > (1u << 28)) return (int)cudaErrorInvalidValue;
    p.nsteps = (unsigned)steps;
    const bool gin = x->gin_devcomm != nullptr;
    if (gin) {
        // every context gets the same share of each step's increments (rail_gin.cuh)
        if (x->gin_contexts < 1 || x->gin_contexts > TLMPI_NODE_MAX_CTAS) return (int)cudaErrorInvalidValue;
        a->ctas -= a->ctas % x->gin_contexts;
        if (a->ctas < x->gin_contexts) a->ctas = x->gin_contexts;
    }
    const void *fn = a->kind == TLMPI_RAIL_AG    ? ag_fn(gin)
                     : a->kind == TLMPI_RAIL_RSB ? lookup_dt_op<RsbK>(a->dtype, a->op, gin)
                                                 : lookup_dt_op<ArK>(a->dtype, a->op, gin);
    if (!fn) return (int)(gin ? cudaErrorNotSupported : cudaErrorInvalidValue);
    cudaError_t e;
#ifdef TLMPI_RAIL_GIN
    if (gin) {
        GinParams g;
        g.p = p;
        memcpy(&g.dc, x->gin_devcomm, sizeof(g.dc));
        g.win = static_cast<ncclWindow_t>(x->gin_win);
        g.contexts = x->gin_contexts;
        void *args[1] = { &g };
        e = cudaLaunchKernel(fn, dim3((unsigned)a->ctas), dim3(kNodeThreads), args, 0, static_cast<cudaStream_t>(stream));
    } else
#endif
    {
        void *args[1] = { &p };
        e = cudaLaunchKernel(fn, dim3((unsigned)a->ctas), dim3(kNodeThreads), args, 0, static_cast<cudaStream_t>(stream));
    }
    if (e != cudaSuccess) return (int)e;
    const unsigned long long rail_steps = a->kind == TLMPI_RAIL_AR ? 2ull * p.nsteps : p.nsteps;
    const unsigned long long per = a->kind == TLMPI_RAIL_AG ? 1ull + (unsigned)a->groups
                                   : a->kind == TLMPI_RAIL_RSB ? 1ull : 2ull + (unsigned)a->groups;
    for (unsigned long long t = a->step; t < a->step + rail_steps && t < a->step + 3; t++) {
        // steps t, t + 3, ... share slot t % 3
        const unsigned long long uses = (a->step + rail_steps - t + 2) / 3;
        for (int g = 0; g < a->groups; g++) a->sig[t % 3][g] += uses * (unsigned long long)a->ctas;
    }
    a->step += rail_steps;
    a->epoch += per * p.nsteps;
    return 0;
}
