// node_ll.cu: MPI_Allgather, MPI_Reduce_scatter_block and MPI_Allreduce among the ranks of a node
// for the smallest messages, in one exchange of flagged lines and no barrier (LL: low latency),
// over the pools' LL regions (kernels.h; the IPC transport's peer pointers, x.base[]), every dtype x
// op of tlmpi_cuda_node_supported.
//
// Algorithm. The payload a rank owes peer q (allgather and allreduce: its whole input; reduce-
// scatter: block q of its input; at most TLMPI_NODE_LL_MAX_BYTES) is cut into 8-byte words; word w
// travels as one 16-byte line {bytes 0-3, flag, bytes 4-7, flag} stored with one st.volatile.v4
// into q's LL region at slot (this rank, w), flag = the low 32 bits of the call's epoch. The
// receiver polls its own region until every peer's line w carries the flag in both halves (so a
// line is trusted only if each 8-byte half {data, flag} arrived: the same rule as NCCL's LL), then
// copies (allgather) or reduces the n words in rank order 0..n-1 with its own term read from its
// input (every rank reduces in the same order: identical bits everywhere; f16/bf16 accumulate in
// float). The floor of a node collective is one barrier (a flag store into every peer, polls of
// the own flags); this is the same traffic with the data in the flags, so the copy into the own
// pool before a barrier and the reads from the peers' pools after it are gone. Lines are twice the
// payload, so it is for small messages only (TLMPI_NODE_LL_MAX in src/tier/node.c). HBM bytes per
// rank: (n-1) lines of 2P written, (n-1) read, P read, P (allgather nP) written. In place: each
// word's inputs are read by the thread that writes its output, before it writes.
// The allreduce also serves the small MPI_Bcast and MPI_Reduce (src/tier/node.c): a NULL input is a
// term of zeros (a broadcast's non-roots, whose bytes are summed as u8 with the root's: exact), a
// NULL output is no result (a reduce's non-roots); the lines travel as for the allreduce.
// The allgather and the reduce-scatter also serve MPI_Allgatherv, MPI_Alltoall and MPI_Reduce_scatter
// (their kernels' layout variant, V: kernels.h tlmpi_node_layout_t, in bytes): what a rank owes peer q
// is in_len[q] bytes at in_off[q] of its input (allgatherv: its one block for every q; alltoall: block
// q; reduce-scatter: block q), sent as P words (P: the longest payload of any rank, the same
// everywhere: words past a rank's own length travel as zeros); the copy stores the words from rank q
// at out_off[q] (out_len[q] bytes; its own from its input), the reduction reduces this rank's block
// (in_len[rank] bytes) and stores it at out. In place: a word's inputs and outputs are still the one
// thread's (an in-place MPI_Reduce_scatter only where no block is longer than the first: node.c).
//
// Launch shape. `ctas` CTAs of 512 threads (the same on every rank, all resident: a thread polls
// lines of peers' threads); grid-stride over the payload's words: each thread first stores all its
// words' lines into every peer (rotated order, starting after this rank), then polls and finishes
// them, the n-1 peers' loads of a word in flight together.
//
// Sync protocol. The call is one epoch step e (launcher: a->epoch + 1). The region has two halves
// by the parity of e, each with a slot per sender. A sender writes half e % 2 again at e + 2 at
// the earliest, after it completed e + 1; every epoch step involves every rank (an LL call or a
// barrier), and this rank takes part in e + 1 only after its reads of e are done (its next kernel
// starts after this one), so no line is overwritten before it was read. Flags are 32-bit: a line
// written 2^32 epochs ago could carry the current flag, so the region is cleared with an extra
// barrier whenever the epoch crosses a multiple of 2^32 (on the device: node.cuh's node_enter, with
// the device-resident epoch; by the launcher otherwise: cuda/node.cu); no line is older.
// Every poll is bounded (TLMPI_TIMEOUT): the error record names the peer, expected and seen flag.
//
// Code size. An 8-byte call runs one thread of one CTA on whichever SM the launch lands on, where
// ranks share a GPU usually one whose instruction cache holds none of this process's copy of the
// kernel, so the call pays a fetch for every stretch of code it executes, not only for what it
// computes. The allgather's output loop is unrolled over the ranks (the received lines stay in
// registers), and with the word store's alignment and tail cases inlined into each of its 8 copies
// its kernel was 42 KiB of sm_90 code, twice the allreduce's (nvcc 13.0), and 1.0 us slower than it
// at 8 ranks (kernel alone, H200 under MPS) where its traffic is the same as the reduce-scatter's.
// The rare cases (unaligned or short words, a timed-out poll) are out of line (__noinline__): the
// hot path of each word is one load or store, and the three kernels are 16-19 KiB. (With the rare
// cases out of line, the 8-rank LL allgather kernel alone costs 19.30 us against the allreduce's
// 19.07, +0.23 us, on an H100, 2026-12-05, 8e7fb56: docs/GPU-TESTS.md.)
#include "node_kernels.cuh"

using namespace tlmpi;
using namespace tlmpi::node;

namespace {

enum { kAg = 0, kRsb = 1, kAr = 2 };
constexpr size_t kLlHalf = (size_t)kMaxRanks * TLMPI_NODE_LL_SLOT;
static_assert(kClaimOff + 64 <= TLMPI_NODE_LL_OFF, "the LL region after the barrier flags (rail.cuh: and signals)");
static_assert(TLMPI_NODE_LL_OFF + 2 * kLlHalf <= TLMPI_NODE_HDR_BYTES, "the LL region inside the pool header");

__device__ __forceinline__ void st_line(char *p, uint2 v, unsigned f)
{
    asm volatile("st.volatile.global.v4.u32 [%0], {%1,%2,%3,%4};" ::"l"(p), "r"(v.x), "r"(f), "r"(v.y), "r"(f)
                 : "memory");
}
__device__ __forceinline__ uint4 ld_line(const char *p)
{
    uint4 v;
    asm volatile("ld.volatile.global.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p)
                 : "memory");
    return v;
}

// One word (8 bytes, fewer at the payload's end: `avail`) of a user buffer at alignment ua.
// Loads and stores of a word at any alignment or length are out of line: the hot path (an aligned
// whole word) is one instruction in the caller, so that each of the allgather's n output words costs
// a few instructions of its unrolled loop, not a copy of the byte loops (see "Code size" above).
__device__ __noinline__ uint2 ld_word_any(const char *p, size_t avail)
{
    if (avail >= 8 && ua_of(p) >= 4)
        return make_uint2(reinterpret_cast<const unsigned *>(p)[0], reinterpret_cast<const unsigned *>(p)[1]);
    uint2 v = make_uint2(0u, 0u);
    unsigned char *d = reinterpret_cast<unsigned char *>(&v);
    for (size_t i = 0; i < 8 && i < avail; i++) d[i] = reinterpret_cast<const unsigned char *>(p)[i];
    return v;
}
__device__ __forceinline__ uint2 ld_word(const char *p, size_t avail)
{
    if (avail >= 8 && (reinterpret_cast<uintptr_t>(p) & 7u) == 0) return *reinterpret_cast<const uint2 *>(p);
    return ld_word_any(p, avail);
}
__device__ __noinline__ void st_word_any(char *p, uint2 v, size_t avail)
{
    const int ua = ua_of(p);
    if (avail >= 8 && ua >= 4) {
        reinterpret_cast<unsigned *>(p)[0] = v.x;
        reinterpret_cast<unsigned *>(p)[1] = v.y;
        return;
    }
    const unsigned char *s = reinterpret_cast<const unsigned char *>(&v);
    for (size_t i = 0; i < 8 && i < avail; i++) reinterpret_cast<unsigned char *>(p)[i] = s[i];
}
// A poll gave up: the error record (out of line, as the byte loops above)
__device__ __noinline__ void ll_timed_out(const tlmpi_node_xport_t &x, int kind, int peer, unsigned f, unsigned seen)
{
    report_timeout(x, static_cast<char *>(x.base[x.rank]), kind, (int)blockIdx.x, 1, peer, f, seen);
}
// `whole`: avail >= 8 and p 8-byte aligned (the caller decides once for all its words)
__device__ __forceinline__ void st_word(char *p, uint2 v, size_t avail, bool whole)
{
    if (whole) *reinterpret_cast<uint2 *>(p) = v;
    else st_word_any(p, v, avail);
}
__device__ __forceinline__ bool whole_word(const char *p, size_t avail, size_t stride = 0)
{
    return avail >= 8 && ((reinterpret_cast<uintptr_t>(p) | stride) & 7u) == 0;
}

template <int COLL, int DT, typename Op, bool V>
__device__ __forceinline__ void ll(const Params &p, unsigned long long epoch)
{
    const tlmpi_node_xport_t &x = p.x;
    const int n = x.nranks, r = x.rank;
    const unsigned long long e = epoch + 1;
    const unsigned f = (unsigned)e;
    const size_t P = p.bytes, words = (P + 7) / 8;
    const size_t half = TLMPI_NODE_LL_OFF + (size_t)(e & 1ull) * kLlHalf;
    // line w of sender s in rank q's region
    auto line = [&](int q, int s, size_t w) {
        return static_cast<char *>(x.base[q]) + half + (size_t)s * TLMPI_NODE_LL_SLOT + w * 16;
    };
    // input block sent to q (reduce-scatter: block q; else the whole input; V: the layout's) and its
    // bytes left from word w on (V: 0 past its end, where the word travels as zeros)
    auto in_for = [&](int q) { return V ? p.in + p.v.in_off[q] : COLL == kRsb ? p.in + (size_t)q * P : p.in; };
    auto left = [&](int q, size_t w) -> size_t {
        if (!V) return P - w * 8;
        return p.v.in_len[q] > w * 8 ? p.v.in_len[q] - w * 8 : 0;
    };
    auto word_for = [&](int q, size_t w) {
        const size_t a = left(q, w);
        return a ? ld_word(in_for(q) + w * 8, a) : make_uint2(0u, 0u);
    };
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    const size_t first = (size_t)blockIdx.x * blockDim.x + threadIdx.x;

    if (!x.stuck) {
        for (size_t w = first; w < words; w += stride) {
            const size_t avail = P - w * 8;
            if constexpr (V) {
                for (int s = 1; s < n; s++) {
                    const int q = r + s < n ? r + s : r + s - n;
                    st_line(line(q, r, w), word_for(q, w), f);
                }
            } else if constexpr (COLL == kRsb) {
                for (int s = 1; s < n; s++) {
                    const int q = r + s < n ? r + s : r + s - n;
                    const char *src = in_for(q) + w * 8;
                    st_line(line(q, r, w), ld_word(src, avail), f);
                }
            } else {
                const uint2 v = p.in ? ld_word(p.in + w * 8, avail) : make_uint2(0u, 0u);
                for (int s = 1; s < n; s++) {
                    const int q = r + s < n ? r + s : r + s - n;
                    st_line(line(q, r, w), v, f);
                }
            }
        }
    }
    for (size_t w = first; w < words; w += stride) {
        const size_t avail = P - w * 8;
        uint4 l[kMaxRanks];
#pragma unroll
        for (int q = 0; q < kMaxRanks; q++)
            if (q < n && q != r) l[q] = ld_line(line(r, q, w));
        unsigned long long t0 = 0;
        unsigned spins = 0;
        for (;;) {
            unsigned miss = 0;
#pragma unroll
            for (int q = 0; q < kMaxRanks; q++)
                if (q < n && q != r && (l[q].y != f || l[q].w != f)) miss |= 1u << q;
            if (!miss) break;
            if (spins == 0) t0 = globaltimer();
            if ((++spins & 63u) == 0) {
                if (x.timeout_ns && globaltimer() - t0 > x.timeout_ns) {
                    const int q = __ffs(miss) - 1;
                    unsigned seen = 0;
#pragma unroll
                    for (int j = 0; j < kMaxRanks; j++) // (no indexing of l by a run-time value: registers)
                        if (j == q) seen = l[j].y != f ? l[j].y : l[j].w;
                    ll_timed_out(x, p.kind, q, f, seen);
                    return;
                }
                if (spins > 4096) __nanosleep(64);
            }
#pragma unroll
            for (int q = 0; q < kMaxRanks; q++)
                if (miss & (1u << q)) l[q] = ld_line(line(r, q, w));
        }
        const uint2 mine = V ? word_for(r, w) : COLL == kRsb || p.in ? ld_word(in_for(r) + w * 8, avail) : make_uint2(0u, 0u);
        if constexpr (V && COLL == kAg) {
            for (int q = 0; q < kMaxRanks; q++) {
                if (q >= n) break;
                const size_t len = p.v.out_len[q];
                if (len <= w * 8) continue;
                char *const dst = p.out + p.v.out_off[q] + w * 8;
                uint2 v = mine;
#pragma unroll
                for (int j = 0; j < kMaxRanks; j++) // (no indexing of l by a run-time value: registers)
                    if (j == q && j != r) v = make_uint2(l[j].x, l[j].z);
                st_word(dst, v, len - w * 8, whole_word(dst, len - w * 8));
            }
        } else if constexpr (COLL == kAg) {
            char *const dst = p.out + w * 8;
            const bool whole = whole_word(dst, avail, P);  // every block's word alike
#pragma unroll
            for (int q = 0; q < kMaxRanks; q++) {
                if (q >= n) break;
                st_word(dst + (size_t)q * P, q == r ? mine : make_uint2(l[q].x, l[q].z), avail, whole);
            }
        } else {
            AccumFor<DT, Op, 8> a;
#pragma unroll
            for (int q = 0; q < kMaxRanks; q++) {
                if (q >= n) break;
                const uint2 v = q == r ? mine : make_uint2(l[q].x, l[q].z);
                if (q == 0) a.init(v);
                else a.add(v);
            }
            char *dst = p.out + w * 8;
            if constexpr (V) {
                if (left(r, w)) st_word(dst, a.get(), left(r, w), whole_word(dst, left(r, w)));
            } else if (COLL == kRsb || p.out) {
                st_word(dst, a.get(), avail, whole_word(dst, avail));
            }
        }
    }
}

template <int COLL, int DT, typename Op, bool V = false>
__global__ void __launch_bounds__(kNodeThreads, kMinBlocks) ll_ipc(const __grid_constant__ Params p)
{
    TLMPI_NODE_ENTER(p, ep);
    ll<COLL, DT, Op, V>(p, ep);
}

template <int DT, typename Op> struct RsbLlK {
    static const void *fn(int) { return (const void *)ll_ipc<kRsb, DT, Op>; }
};
template <int DT, typename Op> struct RsbLlVK {
    static const void *fn(int) { return (const void *)ll_ipc<kRsb, DT, Op, true>; }
};
template <int DT, typename Op> struct ArLlK {
    static const void *fn(int) { return (const void *)ll_ipc<kAr, DT, Op>; }
};

}  // namespace

namespace tlmpi {
namespace node {

const void *ll_fn(int kind, int dtype, int op, bool layout)
{
    if (layout) {
        switch (kind) {
        case TLMPI_NODE_AG_LL: return (const void *)ll_ipc<kAg, TLMPI_DT_U8, Sum, true>;
        case TLMPI_NODE_RSB_LL: return lookup_dt_op<RsbLlVK>(dtype, op, false);
        }
        return nullptr;
    }
    switch (kind) {
    case TLMPI_NODE_AG_LL: return (const void *)ll_ipc<kAg, TLMPI_DT_U8, Sum>;
    case TLMPI_NODE_RSB_LL: return lookup_dt_op<RsbLlK>(dtype, op, false);
    case TLMPI_NODE_AR_LL: return lookup_dt_op<ArLlK>(dtype, op, false);
    }
    return nullptr;
}

}  // namespace node
}  // namespace tlmpi
