// node_direct.cu: the zero-copy node kernels of the persistent forms: MPI_Allgather,
// MPI_Reduce_scatter_block and MPI_Allreduce among the ranks of a node straight between their
// registered user buffers, with no pool data area (tlmpi_cuda_node_run_direct; kernels.h).
//
// Algorithm. in[q] / out[q] are node rank q's send and receive buffers as mapped in this process (the
// registration at *_init: src/transport/ipcreg.c); n ranks, this one r.
//   allgather (B bytes a block): copy block q from in[q] into the own out at q*B, for every q (in place:
//     not the own block, which is already there). Per rank: read nB, write nB; the pool kernels move 2B
//     more (the own block into the pool).
//   reduce_scatter_block (B bytes a block): the own out = reduce over q (order 0..n-1) of in[q] at r*B.
//     Per rank: read nB, write B; the pull kernel first copies all nB into the pool (read and write nB).
//   allreduce (M bytes, n slices of equal 16-byte multiples): slice r reduced over every in[q] (order
//     0..n-1) and stored into every out[q]. Per rank: read M, write M; two-shot through the pools
//     moves about 6M (node_allreduce_twoshot.cu), one-shot (n+3)M.
//   the siblings (a layout: kernels.h tlmpi_node_layout_t):
//   exchange (TLMPI_NODE_XCHG_DIRECT: MPI_Allgatherv, MPI_Bcast, MPI_Alltoall): out_len[q] bytes of
//     in[q] at in_off[q] into the own out at out_off[q], for every q (the own block too unless in place;
//     a broadcast's non-root copies the root's, the root nothing). Per rank: read and write what it
//     receives; the pool kernels stage every block first (read and write it once more).
//   balanced reduction (TLMPI_NODE_RED_DIRECT: MPI_Reduce_scatter, MPI_Reduce): the blocks lie end to
//     end in every input (block q: in_len[q] bytes at in_off[q], kept by rank q: MPI_Reduce has one,
//     the root's), T bytes in all; rank r reduces slice r of [0, T) (n slices of equal 16-byte
//     multiples, whatever blocks they cross) over every in[q] (order 0..n-1) and stores each block's
//     part into its keeper's out. Per rank: read T, write T/n, however uneven the blocks: one rank
//     holding 8x the others' block, or the root of a reduce, no longer does 8x or n times the others'
//     work (the pool kernel has the keeper of a block reduce all of it).
// Every result element is reduced once, by one rank, and stored everywhere: bitwise the same on every
// rank, and the same bits as the pool kernels (the same accumulators, the same order).
// In place: allreduce (slice r of every buffer is read and then written by rank r alone) and allgather
// (block q of out[q] is read by everyone and written by nobody); reduce_scatter_block in place is not
// zero-copy (rank r's result lands in its block 0, which rank 0 reads): the host never registers it.
// The siblings: an exchange in place only where no rank writes what another reads (allgatherv: block
// q of out[q]; a broadcast's buffer, written by the non-roots, read only at the root); a reduction in
// place only at MPI_Reduce's root (each byte of its buffer read and then written by the one rank whose
// slice holds it); reduce_scatter and alltoall in place are not zero-copy (src/tier/node.c).
//
// Launch shape. One kernel per call, `ctas` CTAs of 512 threads (the same on every rank, all resident:
// the node tier's CTA limit; one column per CTA: the persistent forms only); CTA b owns the same
// 16-byte-aligned piece of the work on every rank (node::col_piece; allgather walks it in 64 KiB
// sub-pieces, every block's before the next); peers' memory is loaded with ld.global.cg (the buffers
// change between starts and L1 is not coherent with other GPUs' or processes' stores); tails element
// by element.
//
// Sync protocol. Two node barriers per call (targets epoch + 1 and epoch + 2, per CTA index, the
// device-resident epoch of the pools' headers: node.cuh); allgather one more per step beyond its first
// (steps of a data half of the pool, at most 16 MiB, as the pull kernel), which only keep the ranks
// together. The first: every rank has started the
// call, so its buffers hold its input and may be written (MPI_Start's contract). The second: CTA b of
// every rank has finished reading and writing its piece of every buffer; since every CTA index
// passes it before this rank's kernel completes, no peer touches this rank's buffers once the
// request completes (MPI's completion contract). No pool data is used, so node.cuh's parity rule holds
// across mixed pool and zero-copy calls. A timed-out wait fills the error record and ends the CTA.
//
// Gated launches (the non-blocking starts: kernels.h, tlmpi_cuda_node_run_direct; the siblings' exchange and
// balanced reduction take the same first barrier, SParams carrying the memo). Before the first
// barrier every column stores the rank's offer (a memo id of the registration cache, 0: none) into its
// column's memo word of the own pool header; the barrier's release carries it; after the barrier
// thread t reads rank t's word (after its acquire of rank t's flag). All the same and nonzero: the call
// runs as above, column 0 stores the pair's token into the own gate word (the pool kernel launched
// right after on the same stream finds it and only counts its CTAs: node.cuh, node_enter) and counts
// the run, and this launch writes the completion word (the host sees the call done without waiting for
// the pool kernel's turn on the GPU); otherwise every CTA returns after the first barrier, counting its
// CTA without writing the word, and the pool kernel runs the call and writes it. Both launches count
// their CTAs toward the word's target either way (node.cuh, node_exit), so the pool kernel's target is
// the zero-copy launch's plus its own CTAs. A peer's offer is not overwritten before every rank read
// it: its next launch on the comm starts after this call's second barrier (run) or after the pool
// kernel's barriers (no run), which need this rank's arrival, made after its reads.
#include "node_kernels.cuh"
#include "transport_ipc.cuh"

#include <string.h>

using namespace tlmpi;
using namespace tlmpi::node;

namespace {

struct DParams {
    Params p;                   // p.bytes: allreduce M, allgather / reduce_scatter_block B; p.gate: the
                                // gated pair's token (0: not gated), p.done_word NULL when gated
    tlmpi_node_direct_t d;
    unsigned long long memo;    // gated: this rank's offer (0: none)
};

// The call's first barrier. Gated (q.p.gate): every column first offers the memo in the own header's
// memo word of its column, then after the barrier reads every rank's (thread t: rank t's, after its
// acquire of rank t's flag); *run says whether all are the same and nonzero (the same answer in every
// column of every rank). Column 0 of a run then stores the token into the own gate word, which the
// pair's pool kernel reads (node.cuh: node_enter), and counts the run. False: a wait timed out.
// (The siblings' kernels take the same first barrier: SParams carries the memo too.)
__device__ __forceinline__ bool first_barrier(const Params &p, unsigned long long memo, const IpcTransport &t,
                                              bool *run)
{
    *run = true;
    if (!p.gate) return t.barrier(1);
    char *own = static_cast<char *>(p.x.base[p.x.rank]);
    const size_t mo = kMemoOff + sizeof(unsigned long long) * t.col.i;
    if (threadIdx.x == 0) *reinterpret_cast<volatile unsigned long long *>(own + mo) = memo;
    if (!t.barrier(1)) return false;
    bool same = true;
    if ((int)threadIdx.x < p.x.nranks) {
        const unsigned long long v =
            *reinterpret_cast<const volatile unsigned long long *>(static_cast<const char *>(p.x.base[threadIdx.x]) + mo);
        same = memo != 0 && v == memo;
    }
    *run = __syncthreads_and(same) != 0;
    if (*run && threadIdx.x == 0 && t.col.i == 0) {
        *reinterpret_cast<volatile unsigned long long *>(own + kGateOff) = p.gate;
        const unsigned long long k = atomicAdd(reinterpret_cast<unsigned long long *>(own + kGateRanOff), 1ull) + 1ull;
        if (p.x.err) static_cast<volatile tlmpi_node_err_t *>(p.x.err)->gated_direct = k;  // posted, not read
    }
    return true;
}
__device__ __forceinline__ bool first_barrier(const DParams &q, const IpcTransport &t, bool *run)
{
    return first_barrier(q.p, q.memo, t, run);
}

// 16 bytes of a peer's buffer at alignment ua (>= the element size), bypassing L1
__device__ __forceinline__ uint4 ld_peer(const char *p, int ua)
{
    if (ua >= 16) return load_pool<16>(p);
    uint4 v;
    if (ua == 8) {
        const uint2 a = load_pool<8>(p), b = load_pool<8>(p + 8);
        v = make_uint4(a.x, a.y, b.x, b.y);
    } else if (ua == 4) {
        v = make_uint4(load_pool<4>(p), load_pool<4>(p + 4), load_pool<4>(p + 8), load_pool<4>(p + 12));
    } else {
        unsigned char *d = reinterpret_cast<unsigned char *>(&v);
#pragma unroll
        for (int i = 0; i < 16; i++) d[i] = load_pool<1>(p + i);
    }
    return v;
}

// Store v into every rank's out at byte offset b, starting after this rank (the ranks' stores do not
// all hit rank 0's memory first)
__device__ __forceinline__ void store_all(const DParams &q, int n, int r, size_t b, uint4 v)
{
    for (int s = 0; s < n; s++) {
        int k = r + s;
        if (k >= n) k -= n;
        store<16>(static_cast<char *>(q.d.out[k]) + b, v);
    }
}
template <int E> __device__ __forceinline__ void store_all_e(const DParams &q, int n, int r, size_t b, Vec<E> v)
{
    for (int s = 0; s < n; s++) {
        int k = r + s;
        if (k >= n) k -= n;
        store<E>(static_cast<char *>(q.d.out[k]) + b, v);
    }
}

template <int DT, typename Op>
__device__ __forceinline__ bool ar_direct(const DParams &q, const IpcTransport &t, bool *ran)
{
    using T = typename Dt<DT>::T;
    constexpr int E = (int)sizeof(T);
    using Acc = AccumFor<DT, Op, 16>;
    using AccE = AccumFor<DT, Op, E>;
    const int n = t.nranks(), r = t.rank();
    const size_t M = q.p.bytes;
    size_t ls = (M + n - 1) / n;
    ls = (ls + 15) & ~(size_t)15;
    bool run;
    if (!first_barrier(q, t, &run)) return false;
    *ran = run;
    if (!run) return true;  // gated, not agreed: the pair's pool kernel runs the call
    const size_t so = (size_t)r * ls;
    if (so < M) {
        const size_t len = M - so < ls ? M - so : ls;
        size_t lo, hi;
        t.piece(ls, len, &lo, &hi);
        const size_t nvec = (hi - lo) / 16;
        for (size_t i = threadIdx.x; i < nvec; i += blockDim.x) {
            const size_t b = so + lo + i * 16;
            const uint4 self = load_pool<16>(static_cast<const char *>(q.d.in[r]) + b);
            const uint4 v = t.template load_reduce_groups<uint4, Acc>(
                self, [&](int k) { return load_pool<16>(static_cast<const char *>(q.d.in[k]) + b); });
            store_all(q, n, r, b, v);
        }
        const size_t t0 = lo + nvec * 16;
        if (threadIdx.x * E < hi - t0) {
            const size_t b = so + t0 + threadIdx.x * E;
            const Vec<E> self = load_pool<E>(static_cast<const char *>(q.d.in[r]) + b);
            const Vec<E> v = t.template load_reduce_groups<Vec<E>, AccE>(
                self, [&](int k) { return load_pool<E>(static_cast<const char *>(q.d.in[k]) + b); });
            store_all_e<E>(q, n, r, b, v);
        }
    }
    return t.barrier(2);
}

template <int DT, typename Op>
__device__ __forceinline__ bool rsb_direct(const DParams &q, const IpcTransport &t, bool *ran)
{
    using T = typename Dt<DT>::T;
    constexpr int E = (int)sizeof(T);
    using Acc = AccumFor<DT, Op, 16>;
    using AccE = AccumFor<DT, Op, E>;
    const int r = t.rank();
    const size_t B = q.p.bytes, so = (size_t)r * B;
    char *out = static_cast<char *>(q.d.out[r]);
    bool run;
    if (!first_barrier(q, t, &run)) return false;
    *ran = run;
    if (!run) return true;  // gated, not agreed: the pair's pool kernel runs the call
    size_t lo, hi;
    t.piece(B, B, &lo, &hi);
    const int ua = ua_of(static_cast<const char *>(q.d.in[0]) + so); // the same for every rank's buffer
    const size_t nvec = (hi - lo) / 16;
    for (size_t i = threadIdx.x; i < nvec; i += blockDim.x) {
        const size_t b = lo + i * 16;
        const uint4 self = ld_peer(static_cast<const char *>(q.d.in[r]) + so + b, ua);
        const uint4 v = t.template load_reduce_groups<uint4, Acc>(
            self, [&](int k) { return ld_peer(static_cast<const char *>(q.d.in[k]) + so + b, ua); });
        store<16>(out + b, v);
    }
    const size_t t0 = lo + nvec * 16;
    if (threadIdx.x * E < hi - t0) {
        const size_t b = t0 + threadIdx.x * E;
        const Vec<E> self = load_pool<E>(static_cast<const char *>(q.d.in[r]) + so + b);
        const Vec<E> v = t.template load_reduce_groups<Vec<E>, AccE>(
            self, [&](int k) { return load_pool<E>(static_cast<const char *>(q.d.in[k]) + so + b); });
        store<E>(out + b, v);
    }
    return t.barrier(2);
}

// dst[lo, hi) = src[lo, hi) of a peer's buffer (src at alignment ua_s, dst at ua_d), 4 vectors in
// flight per thread; the tail (< 16 bytes, at the block's end) byte by byte
__device__ __forceinline__ void copy_peer(char *dst, int ua_d, const char *src, int ua_s, size_t lo, size_t hi)
{
    walk_piece(
        lo, hi, [&](size_t b) { return ld_peer(src + b, ua_s); }, [&](size_t b, uint4 v) { st_user(dst + b, v, ua_d); },
        [&](size_t b) { dst[b] = (char)load_pool<1>(src + b); });
}

__device__ __forceinline__ bool ag_direct(const DParams &q, const IpcTransport &t, bool *ran)
{
    const int n = t.nranks(), r = t.rank();
    const size_t B = q.p.bytes, S = q.p.chunk;
    char *out = static_cast<char *>(q.d.out[r]);
    const bool in_place = q.d.in[r] == out + (size_t)r * B;
    bool run;
    if (!first_barrier(q, t, &run)) return false;
    *ran = run;
    if (!run) return true;  // gated, not agreed: the pair's pool kernel runs the call
    for (unsigned st = 0; st < q.p.nsteps; st++) {
        const size_t off = (size_t)st * S, L = B - off < S ? B - off : S;
        size_t lo, hi;
        t.piece(q.p.nsteps == 1 ? L : S, L, &lo, &hi);
        lo += off;
        hi += off;
        // the piece in sub-pieces of kSub bytes, each copied from every block before the next: the
        // ranks then read the same bytes of each block at about the same time (every block is read by
        // all n), and where they share a GPU those reads meet in its L2 (n x ctas x kSub bytes in
        // flight: 8 MiB at 8 ranks and 16 CTAs) instead of each rank streaming whole blocks through HBM
        // in its own order; the barrier after each step keeps the ranks within one step of each other
        constexpr size_t kSub = 64u << 10;
        for (size_t c0 = lo; c0 < hi; c0 += kSub) {
            const size_t c1 = hi - c0 < kSub ? hi : c0 + kSub;
            for (int s = 0; s < n; s++) {
                int k = r + s;
                if (k >= n) k -= n;
                if (k == r && in_place) continue;
                char *dst = out + (size_t)k * B;
                const char *src = static_cast<const char *>(q.d.in[k]);
                copy_peer(dst, ua_of(dst), src, ua_of(src), c0, c1);
            }
        }
        if (!t.barrier(2 + (int)st)) return false;
    }
    return true;
}

template <int DT, typename Op>
__global__ void __launch_bounds__(kNodeThreads, kMinBlocks) ar_direct_ipc(const __grid_constant__ DParams q)
{
    TLMPI_NODE_ENTER(q.p, ep);
    bool ran = true;
    node_columns<false>(q.p,
                        [&](Column c) { return ar_direct<DT, Op>(q, IpcTransport{ q.p.x, ep, q.p.kind, c }, &ran); });
    node_exit(q.p, ran);
}

template <int DT, typename Op>
__global__ void __launch_bounds__(kNodeThreads, kMinBlocks) rsb_direct_ipc(const __grid_constant__ DParams q)
{
    TLMPI_NODE_ENTER(q.p, ep);
    bool ran = true;
    node_columns<false>(q.p,
                        [&](Column c) { return rsb_direct<DT, Op>(q, IpcTransport{ q.p.x, ep, q.p.kind, c }, &ran); });
    node_exit(q.p, ran);
}

// ---- the siblings (TLMPI_NODE_XCHG_DIRECT, TLMPI_NODE_RED_DIRECT) ----
struct SParams {
    Params p;                   // p.bytes: the exchange's longest block here, the reduction's T (every block);
                                // p.chunk, p.nsteps: the exchange's steps (of the longest block anywhere);
                                // p.gate: a gated pair's token (0: not gated)
    tlmpi_node_direct_t d;
    tlmpi_node_layout_t L;
    unsigned long long memo;    // gated: this rank's offer (0: none)
};

// Every block this rank receives, in steps of p.chunk bytes of each block (the exchange's longest block
// sets their number; a barrier after each, as ag_direct's), each block's part of the step split evenly
// among the columns (column b: the same share of every block, so every column copies the same bytes in
// every step however uneven the blocks; no pool slot is reused between steps, so a column's range need
// not stay put as the pool kernels' must), walked in sub-pieces of kSub bytes, each copied from every
// block before the next (ag_direct: ranks sharing a GPU then read the same bytes at about the same
// time, and meet in its L2), from the next rank on
__device__ __forceinline__ bool xchg_direct(const SParams &q, const IpcTransport &t, bool *ran)
{
    constexpr size_t kSub = 64u << 10;
    const int n = t.nranks(), r = t.rank();
    const size_t S = q.p.chunk;
    char *out = static_cast<char *>(q.d.out[r]);
    // this column's piece of block k's step at offset off (false: the block ended before it)
    auto piece = [&](int k, size_t off, size_t *lo, size_t *hi) {
        const size_t len = q.L.out_len[k];
        if (len <= off) return false;
        const size_t L = len - off < S ? len - off : S;
        t.piece(L, L, lo, hi);
        return true;
    };
    bool run;
    if (!first_barrier(q.p, q.memo, t, &run)) return false;
    *ran = run;
    if (!run) return true;  // gated, not agreed: the pair's pool kernel runs the call
    for (unsigned st = 0; st < q.p.nsteps; st++) {
        const size_t off = (size_t)st * S;
        size_t most = 0;  // this column's longest piece of the step, over the blocks
        for (int k = 0; k < n; k++) {
            size_t lo, hi;
            if (piece(k, off, &lo, &hi)) most = hi - lo > most ? hi - lo : most;
        }
        for (size_t c0 = 0; c0 < most; c0 += kSub) {
            for (int s = 0; s < n; s++) {
                int k = r + s;
                if (k >= n) k -= n;
                size_t lo, hi;
                if (!piece(k, off, &lo, &hi)) continue;
                const size_t a = lo + c0, e = hi - lo > c0 + kSub ? lo + c0 + kSub : hi;
                if (a >= e) continue;
                char *dst = out + q.L.out_off[k] + off;
                const char *src = static_cast<const char *>(q.d.in[k]) + q.L.in_off[k] + off;
                copy_peer(dst, ua_of(dst), src, ua_of(src), a, e);
            }
        }
        if (!t.barrier(2 + (int)st)) return false;
    }
    return true;
}

// [a, e) of every input (whole elements; a starts a vector of the slice) reduced into dst (block-local)
template <int DT, typename Op>
__device__ __forceinline__ void reduce_span(const SParams &q, const IpcTransport &t, size_t a, size_t e, char *dst)
{
    using T = typename Dt<DT>::T;
    constexpr int E = (int)sizeof(T);
    using Acc = AccumFor<DT, Op, 16>;
    using AccE = AccumFor<DT, Op, E>;
    const int r = t.rank();
    const int ua_s = ua_of(static_cast<const char *>(q.d.in[r]) + a); // the same for every rank's buffer
    const int ua_d = ua_of(dst);
    const size_t nvec = (e - a) / 16;
    for (size_t i = threadIdx.x; i < nvec; i += blockDim.x) {
        const size_t b = a + i * 16;
        const uint4 self = ld_peer(static_cast<const char *>(q.d.in[r]) + b, ua_s);
        const uint4 v = t.template load_reduce_groups<uint4, Acc>(
            self, [&](int k) { return ld_peer(static_cast<const char *>(q.d.in[k]) + b, ua_s); });
        st_user(dst + (b - a), v, ua_d);
    }
    const size_t t0 = a + nvec * 16;
    if (threadIdx.x * E < e - t0) {
        const size_t b = t0 + threadIdx.x * E;
        const Vec<E> self = load_pool<E>(static_cast<const char *>(q.d.in[r]) + b);
        const Vec<E> v = t.template load_reduce_groups<Vec<E>, AccE>(
            self, [&](int k) { return load_pool<E>(static_cast<const char *>(q.d.in[k]) + b); });
        st_user_e<E>(dst + (b - a), v, ua_d);
    }
}

template <int DT, typename Op>
__device__ __forceinline__ bool red_direct(const SParams &q, const IpcTransport &t, bool *ran)
{
    const int n = t.nranks(), r = t.rank();
    const size_t T = q.p.bytes;
    size_t ls = (T + n - 1) / n;
    ls = (ls + 15) & ~(size_t)15;
    bool run;
    if (!first_barrier(q.p, q.memo, t, &run)) return false;
    *ran = run;
    if (!run) return true;  // gated, not agreed: the pair's pool kernel runs the call
    const size_t s0 = (size_t)r * ls;
    if (s0 < T) {
        size_t lo, hi;
        t.piece(ls, T - s0 < ls ? T - s0 : ls, &lo, &hi);
        lo += s0;
        hi += s0;
        for (int k = 0; k < n && lo < hi; k++) {
            const size_t bo = q.L.in_off[k], be = bo + q.L.in_len[k];
            const size_t a = lo > bo ? lo : bo, e = hi < be ? hi : be;
            if (a < e) reduce_span<DT, Op>(q, t, a, e, static_cast<char *>(q.d.out[k]) + (a - bo));
        }
    }
    return t.barrier(2);
}

__global__ void __launch_bounds__(kNodeThreads, kMinBlocks) xchg_direct_ipc(const __grid_constant__ SParams q)
{
    TLMPI_NODE_ENTER(q.p, ep);
    bool ran = true;
    node_columns<false>(q.p, [&](Column c) { return xchg_direct(q, IpcTransport{ q.p.x, ep, q.p.kind, c }, &ran); });
    node_exit(q.p, ran);
}

template <int DT, typename Op>
__global__ void __launch_bounds__(kNodeThreads, kMinBlocks) red_direct_ipc(const __grid_constant__ SParams q)
{
    TLMPI_NODE_ENTER(q.p, ep);
    bool ran = true;
    node_columns<false>(q.p,
                        [&](Column c) { return red_direct<DT, Op>(q, IpcTransport{ q.p.x, ep, q.p.kind, c }, &ran); });
    node_exit(q.p, ran);
}

__global__ void __launch_bounds__(kNodeThreads, kMinBlocks) ag_direct_ipc(const __grid_constant__ DParams q)
{
    TLMPI_NODE_ENTER(q.p, ep);
    bool ran = true;
    node_columns<false>(q.p, [&](Column c) { return ag_direct(q, IpcTransport{ q.p.x, ep, q.p.kind, c }, &ran); });
    node_exit(q.p, ran);
}

template <int DT, typename Op> struct ArDirectK {
    static const void *fn(int) { return (const void *)ar_direct_ipc<DT, Op>; }
};
template <int DT, typename Op> struct RsbDirectK {
    static const void *fn(int) { return (const void *)rsb_direct_ipc<DT, Op>; }
};
template <int DT, typename Op> struct RedDirectK {
    static const void *fn(int) { return (const void *)red_direct_ipc<DT, Op>; }
};

bool aligned16(const void *p) { return ((uintptr_t)p & 15u) == 0; }

constexpr size_t kDirectStepMax = 16u << 20;

// The copies' steps (the allgather's, the siblings' exchange) for `bytes` of the longest block: of the
// pull kernel's size (half of the largest data area a pool may have: x->step_bytes, whatever the pools
// hold now; at most 16 MiB: node.cu), a barrier after each: at 4 and 8 ranks on one GPU, 64 MiB blocks
// without them ran 1.06-1.16x the blocking call's time (the ranks drift apart and stop sharing L2),
// 16 MiB ones 0.69-0.71x. False where the pools give no step.
bool copy_steps(const tlmpi_node_xport_t *x, size_t bytes, Params *p)
{
    size_t c = x->step_bytes / 2;
    if (c > kDirectStepMax) c = kDirectStepMax;
    c &= ~(size_t)15;
    if (c < 16) return false;
    const size_t steps = (bytes + c - 1) / c;
    if (steps > (1u << 30)) return false;
    p->chunk = c;
    p->nsteps = (unsigned)steps;
    return true;
}

// tlmpi_cuda_node_run_direct for the siblings' kinds (x and a checked there): the layout's blocks checked
// (a reduction's end to end, whole elements); the exchange in copy_steps' steps, the reduction in one;
// gated as the three's (a->gate; d NULL where this rank has no memo to offer: its kernel touches no
// buffer, the steps and barriers still come from the layout, the same on every rank)
int run_sib_direct(const tlmpi_node_xport_t *x, tlmpi_node_args_t *a, const tlmpi_node_direct_t *d, void *stream)
{
    const bool red = a->kind == TLMPI_NODE_RED_DIRECT;
    const bool offer_none = a->gate && !a->memo;
    if ((!d && !offer_none) || !a->layout || (red && !tlmpi_cuda_node_supported(a->dtype, a->op)))
        return (int)cudaErrorInvalidValue;
    if (a->count == 0) {
        a->done_word = nullptr;
        return 0;
    }
    const size_t elem = red ? TLMPI_DT_ELEM_SIZE(a->dtype) : 1;
    size_t T = 0, big = 0;
    for (int k = 0; k < x->nranks; k++) {
        const size_t il = a->layout->in_len[k], ol = a->layout->out_len[k];
        if ((!offer_none && (!d->in[k] || !d->out[k] || (red && !aligned16(d->in[k])))) ||
            (red && il && (a->layout->in_off[k] != T || il % elem)))
            return (int)cudaErrorInvalidValue;
        T += red ? il : 0;
        big = ol > big ? ol : big;
    }
    SParams q;
    memset(&q, 0, sizeof(q));
    if (offer_none) {
        for (int r = 0; r < x->nranks; r++) q.d.in[r] = q.d.out[r] = x->base[x->rank];
    } else {
        q.d = *d;
    }
    q.L = *a->layout;
    q.p.x = *x;
    q.p.in = static_cast<const char *>(q.d.in[x->rank]);
    q.p.out = static_cast<char *>(q.d.out[x->rank]);
    q.p.bytes = red ? T : big;
    q.p.chunk = q.p.bytes;
    q.p.nsteps = 1;
    // a->count: the longest block of any rank, the same everywhere
    if (!red && !copy_steps(x, a->count, &q.p)) return (int)cudaErrorInvalidValue;
    q.p.epoch = a->epoch;
    q.p.barriers = 1 + q.p.nsteps;
    q.p.kind = a->kind;
    if (!cols_in(a, &q.p, true)) return (int)cudaErrorInvalidValue;
    q.p.gate = a->gate;
    q.memo = a->memo;
    const void *fn = direct_fn(a->kind, a->dtype, a->op);
    if (!fn) return (int)cudaErrorInvalidValue;
    done_in(a, &q.p, true);  // gated: written only where this launch ran the call (node_exit)
    void *args[1] = { &q };
    const cudaError_t e = cudaLaunchKernel(fn, dim3((unsigned)a->ctas), dim3(kNodeThreads), args, 0,
                                           static_cast<cudaStream_t>(stream));
    if (e != cudaSuccess) return (int)e;
    done_commit(a, q.p);
    return 0;
}

}  // namespace

namespace tlmpi {
namespace node {
const void *direct_fn(int kind, int dtype, int op)
{
    switch (kind) {
    case TLMPI_NODE_AG_DIRECT: return (const void *)ag_direct_ipc;
    case TLMPI_NODE_RSB_DIRECT: return lookup_dt_op<RsbDirectK>(dtype, op, false);
    case TLMPI_NODE_AR_DIRECT: return lookup_dt_op<ArDirectK>(dtype, op, false);
    case TLMPI_NODE_XCHG_DIRECT: return (const void *)xchg_direct_ipc;
    case TLMPI_NODE_RED_DIRECT: return lookup_dt_op<RedDirectK>(dtype, op, false);
    }
    return nullptr;
}
}  // namespace node
}  // namespace tlmpi

extern "C" int tlmpi_cuda_node_run_direct(const tlmpi_node_xport_t *x, tlmpi_node_args_t *a,
                                          const tlmpi_node_direct_t *d, void *stream)
{
    if (!x || !a || !x->dev_epoch || a->ctas < 1 || a->ctas > kMaxCtas || x->nranks < 1 || x->nranks > kMaxRanks ||
        x->rank < 0 || x->rank >= x->nranks)
        return (int)cudaErrorInvalidValue;
    if (a->kind == TLMPI_NODE_XCHG_DIRECT || a->kind == TLMPI_NODE_RED_DIRECT) return run_sib_direct(x, a, d, stream);
    if ((!d && !(a->gate && !a->memo)) ||
        (a->kind != TLMPI_NODE_AG_DIRECT && a->kind != TLMPI_NODE_RSB_DIRECT && a->kind != TLMPI_NODE_AR_DIRECT))
        return (int)cudaErrorInvalidValue;
    const bool ag = a->kind == TLMPI_NODE_AG_DIRECT;
    size_t elem = 1;
    if (!ag) {
        if (!tlmpi_cuda_node_supported(a->dtype, a->op)) return (int)cudaErrorInvalidValue;
        elem = TLMPI_DT_ELEM_SIZE(a->dtype);
    }
    if (a->count == 0) {
        a->done_word = nullptr;
        return 0;
    }
    if (a->count > ((size_t)-1) / elem / (size_t)x->nranks) return (int)cudaErrorInvalidValue;
    DParams q;
    memset(&q, 0, sizeof(q));
    if (a->gate && !a->memo) {
        // gated with nothing to offer: the kernel takes its first barrier, reads the offers and returns
        // (no rank's offer is accepted when this one is 0); no buffer is touched
        for (int r = 0; r < x->nranks; r++) q.d.in[r] = q.d.out[r] = x->base[x->rank];
    } else {
        for (int r = 0; r < x->nranks; r++)
            if (!d->in[r] || !d->out[r] || !aligned16(d->out[r]) || (!ag && !aligned16(d->in[r])))
                return (int)cudaErrorInvalidValue;
        q.d = *d;
    }
    q.p.x = *x;
    q.p.in = static_cast<const char *>(q.d.in[x->rank]);
    q.p.out = static_cast<char *>(q.d.out[x->rank]);
    q.p.bytes = a->count * elem;
    q.p.chunk = q.p.bytes;
    q.p.nsteps = 1;
    if (ag && !copy_steps(x, q.p.bytes, &q.p)) return (int)cudaErrorInvalidValue;
    q.p.epoch = a->epoch;
    q.p.barriers = 1 + q.p.nsteps;
    q.p.kind = a->kind;
    if (!cols_in(a, &q.p, true)) return (int)cudaErrorInvalidValue;
    q.p.gate = a->gate;
    q.memo = a->memo;
    const void *fn = direct_fn(a->kind, a->dtype, a->op);
    if (!fn) return (int)cudaErrorInvalidValue;
    done_in(a, &q.p, true);  // gated: written only where this launch ran the call (node_exit)
    void *args[1] = { &q };
    const cudaError_t e = cudaLaunchKernel(fn, dim3((unsigned)a->ctas), dim3(kNodeThreads), args, 0,
                                           static_cast<cudaStream_t>(stream));
    if (e != cudaSuccess) return (int)e;
    done_commit(a, q.p);
    return 0;
}
