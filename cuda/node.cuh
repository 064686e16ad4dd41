// node.cuh: what every node algorithm (cuda/node_*.cu) is written against: the launch parameters,
// the step / CTA partition of a message, user-buffer vector access at any alignment, and the
// device transport concept. The transports (cuda/transport_*.cuh) implement the concept; each
// algorithm is a template over it and is written once.
//
// Transport concept (X):
//   X::nranks(), X::rank()                       the node's ranks, and this one
//   char *X::data(int q)                         rank q's pool data area (symmetric: the same offset
//                                                means the same slot on every rank)
//   bool X::barrier(int k)                       barrier number k (1-based) of the call among the
//                                                node's ranks, for this column; false if a wait
//                                                timed out (the CTA must return)
//   void X::piece(full, len, &lo, &hi)           this column's piece of a slice (col_piece)
//   uint4 X::mc_load_reduce<Acc>(off, ...)       "multicast" load-reduce of one 16-byte vector at
//   void X::mc_store(off, v)                     pool offset off over every rank, and a store into
//                                                every rank's pool: NVLS multimem where the
//                                                transport has it, else a loop over the ranks in a
//                                                fixed order (0..n-1: every rank reduces in the
//                                                same order, so results are the same everywhere)
//
// Slots and parity (the race-freedom rule of every node algorithm): data written into a pool
// before barrier e (e = epoch + k) lives in data half (e % 2) and is read only between barrier e and
// barrier e + 1. A half is next written before barrier e + 2, i.e. after this rank passed barrier
// e + 1, which no peer reaches before it finished its reads of barrier e's data. Kernel boundaries
// carry the rule across calls of any size, kind and CTA count (a rank's previous kernels are
// complete before its next one arrives at any barrier). Within a call every rank uses the same
// partition into columns (Params.cols), so what column b of one rank writes before a barrier is
// exactly what column b of the readers reads after it: the barriers are per column.
//
// Columns and CTAs. A call's partition has `cols` columns, the same on every rank; each rank runs
// them on its own number of CTAs (gridDim.x <= cols, the host's choice per rank and call: all of
// them where nothing else of the process may be in flight on the GPU, fewer where another kernel
// may be: src/tier/node.c). CTA b takes columns b, b + grid, b + 2 grid, ... one after the other,
// each through the whole algorithm (node_columns). Every CTA of every rank is resident (the host
// sizes grids so), and every CTA takes its columns in increasing order, so the lowest column not yet
// done is always being worked on by every rank: no wait is for a column nobody will reach. With one
// column per CTA (cols == grid, every launch but the node tier's where ranks share a GPU) this is
// the plain one-piece-per-CTA kernel.
#ifndef TLMPI_CUDA_NODE_CUH
#define TLMPI_CUDA_NODE_CUH

#include "common.cuh"
#include "kernels.h"

namespace tlmpi {
namespace node {

constexpr int kNodeThreads = TLMPI_NODE_THREADS;
constexpr int kMaxRanks = TLMPI_NODE_MAX_RANKS;
constexpr int kMaxCtas = TLMPI_NODE_MAX_CTAS;
// pool header: flags[kMaxCtas][kMaxRanks] (u64), then the timed-out claim word, the device-resident
// epoch and its arrival counter (node_enter), the completion word's CTA counter (node_exit), the gate
// word (a gated pair's token: node_enter, node_direct.cu), the count of gated pairs that ran zero-copy,
// and from kMemoOff each column's memo word of a gated zero-copy launch (node_direct.cu)
constexpr size_t kFlagsBytes = sizeof(unsigned long long) * kMaxCtas * kMaxRanks;
constexpr size_t kClaimOff = kFlagsBytes;
constexpr size_t kEpochOff = kClaimOff + 8;
constexpr size_t kArriveOff = kClaimOff + 16;
constexpr size_t kDoneOff = kClaimOff + 24;  // CTAs of the launches with a completion word (node_exit)
constexpr size_t kGateOff = kClaimOff + 32;  // the token of the last gated pair that ran zero-copy
constexpr size_t kGateRanOff = kClaimOff + 40;  // gated pairs that ran zero-copy (a count, read by the host)
constexpr size_t kMemoOff = kClaimOff + 1024;   // u64 per column: the memo a gated zero-copy launch offers
static_assert(kClaimOff + 64 <= TLMPI_NODE_HDR_BYTES, "pool header");
static_assert(kMemoOff + sizeof(unsigned long long) * kMaxCtas <= 16384, "memo words before the rail signals");
static_assert(kGateRanOff == TLMPI_NODE_GATE_RAN_OFF, "kernels.h names the gated count's offset");
static_assert(kEpochOff == TLMPI_NODE_EPOCH_OFF, "kernels.h names the epoch word's offset");
static_assert(kClaimOff == TLMPI_NODE_CLAIM_OFF, "kernels.h names the claim word's offset");

// A column of a call's partition (see "Columns and CTAs" above) and their number.
struct Column {
    unsigned i, n;  // this column, of n (Params.cols; the fused kernels: blockIdx.x of gridDim.x)
};
__device__ __forceinline__ Column grid_column() { return Column{ blockIdx.x, gridDim.x }; }

// Launch parameters (one struct, passed by value).
struct Params {
    tlmpi_node_xport_t x;
    const char *in;
    char *out;
    size_t bytes;          // message bytes: allreduce all of it; allgather / RSB one block
    size_t chunk;          // bytes of the message per step (a multiple of 16)
    unsigned nsteps;
    unsigned long long epoch;  // barrier epoch before the call (x.dev_epoch: unused, node_enter reads it)
    unsigned barriers;         // epoch steps the call takes (x.dev_epoch: node_enter advances by them)
    int kind;
    unsigned cols;             // columns of the partition, the same on every rank (>= gridDim.x)
    unsigned *done_word;       // host-mapped completion word (NULL: none; node_exit)
    unsigned done_value;
    unsigned long long done_target;  // the own header's CTA counter once every CTA of this launch counted
    unsigned long long gate;   // a gated pair's pool kernel: skip the call when the own gate word holds
                               // this token (node_enter; 0: not gated)
    int vset;                  // the siblings: the blocks' layout in v (kernels.h: tlmpi_node_layout_t)
    tlmpi_node_layout_t v;
};

// The part of a step [off, off + L) of a block of `len` bytes that the piece [lo, hi) covers: its end
// (hi clipped to the block), no more than lo where the block has nothing there.
__device__ __forceinline__ size_t block_hi(size_t len, size_t off, size_t lo, size_t hi)
{
    const size_t e = len > off ? len - off : 0;
    return e < hi ? (e > lo ? e : lo) : hi;
}

// ---------------------------------------------------------------------------------------------
// Memory-model primitives. System scope: ranks are processes, possibly on other GPUs. GPU scope
// where every rank of the node runs on this GPU (x.gpu_scope, kernels.h): their kernels meet in the
// one L2, and a system-scope release waits for more than they need (below, flag_barrier).
// ---------------------------------------------------------------------------------------------
__device__ __forceinline__ unsigned long long ld_acquire(const unsigned long long *p, bool gpu_scope = false)
{
    unsigned long long v;
    if (gpu_scope)
        asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    else
        asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ void st_release(unsigned long long *p, unsigned long long v, bool gpu_scope = false)
{
    if (gpu_scope)
        asm volatile("st.release.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
    else
        asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ unsigned long long globaltimer()
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

// The first CTA (of this rank) whose wait timed out fills the host-mapped error record; the claim
// word in the own pool header makes it the only writer (no atomics on host memory).
// rail != 0: a rail signal wait (cuda/rail.cuh): peer is the sending node, k the rail step, and
// slot / group name the signal.
// cta: the barrier slot (the column; rail and LL waits: the CTA index).
__device__ __forceinline__ void report_timeout(const tlmpi_node_xport_t &x, char *own_base, int kind, int cta, int k,
                                               int peer, unsigned long long expected, unsigned long long seen,
                                               int rail = 0, int slot = 0, int group = 0)
{
    unsigned *claim = reinterpret_cast<unsigned *>(own_base + kClaimOff);
    if (atomicCAS(claim, 0u, 1u) != 0u || !x.err) return;
    volatile tlmpi_node_err_t *e = static_cast<volatile tlmpi_node_err_t *>(x.err);
    e->rank = x.rank;
    e->kind = kind;
    e->cta = cta;
    e->peer = peer;
    e->barrier = k;
    e->rail = rail;
    e->slot = slot;
    e->group = group;
    e->expected = expected;
    e->seen = seen;
    __threadfence_system();
    e->set = 1u;
    __threadfence_system();
}

// Spin until ld() >= target (every device wait of the kernels: node barriers, rail signals): false
// once timeout_ns (0: none) passed with *seen the last value; the clock is read every 64 polls and
// polls back off (64 ns sleeps) after 4096.
template <class Load>
__device__ __forceinline__ bool poll_until(Load &&ld, unsigned long long target, unsigned long long timeout_ns,
                                           unsigned long long *seen)
{
    unsigned long long v = ld();
    if (v < target) {
        const unsigned long long t0 = globaltimer();
        unsigned spins = 0;
        while ((v = ld()) < target) {
            if ((++spins & 63u) == 0) {
                if (timeout_ns && globaltimer() - t0 > timeout_ns) {
                    *seen = v;
                    return false;
                }
                if (spins > 4096) __nanosleep(64);
            }
        }
    }
    *seen = v;
    return true;
}

// Barrier among the node's ranks for column b, over flag words in the pools' headers
// (flags(q)[b][r]: written by rank r into rank q's header). Thread t < n stores the target into
// rank t's flag for this rank (release), then waits for its own flag from rank t (acquire);
// __syncthreads before (what the CTA wrote is ordered before the release: bar.sync + cumulative
// release, no fence besides, as NCCL's LSA barrier: nccl_device/impl/lsa_barrier__funcs.h, arrive)
// and after (the acquire orders the CTA's later reads). A fence.sc.sys before each release cost
// most large calls 0.2-3.6% on an H100 and the stream-ordered ones more (the rank's next kernels
// queued behind it): docs/PERFORMANCE.md, "Back-to-back calls and the barrier's scope".
__device__ __forceinline__ bool flag_barrier(const tlmpi_node_xport_t &x, unsigned b, unsigned long long target, int kind,
                                             int k)
{
    const int n = x.nranks, t = (int)threadIdx.x;
    const size_t slot = ((size_t)b * kMaxRanks) * sizeof(unsigned long long);
    int ok = 1;
    __syncthreads();
    if (t < n) {
        if (!x.stuck) {
            unsigned long long *f = reinterpret_cast<unsigned long long *>(static_cast<char *>(x.base[t]) + slot) + x.rank;
            st_release(f, target, x.gpu_scope);
        }
        const unsigned long long *mine = reinterpret_cast<const unsigned long long *>(static_cast<char *>(x.base[x.rank]) + slot) + t;
        unsigned long long v;
        if (!poll_until([&] { return ld_acquire(mine, x.gpu_scope); }, target, x.timeout_ns, &v)) {
            report_timeout(x, static_cast<char *>(x.base[x.rank]), kind, (int)b, k, t, target, v);
            ok = 0;
        }
    }
    if (x.late_ns && k >= 1 && t == 0) {
        // fault injection (node_late): after every barrier of the call this rank goes on late
        const unsigned long long t1 = globaltimer();
        while (globaltimer() - t1 < x.late_ns) __nanosleep(1000);
    }
    return __syncthreads_and(ok) != 0;
}

// ---------------------------------------------------------------------------------------------
// Device-resident epoch (x.dev_epoch; kernels.h). Replay-safe: nothing a kernel depends on from one
// call to the next is in its arguments, so the same launch captured in a CUDA graph performs a fresh
// collective every replay. Every CTA's thread 0 reads the epoch word of the own pool header, then
// bumps the arrival counter beside it; the CTA whose bump completes the grid (it knows every CTA has
// read the old value: each read it before its bump, and the fences order the two) resets the counter
// and stores the epoch after the call. The rank's next kernel of the comm starts after this one
// completed (call order on the communicator: src/gpu/stream.c), so it reads the new value. No CTA
// waits for another here, and a CTA that returns early (a wait timed out) has already arrived.
//
// Wrap (the LL lines carry the epoch's low 32 bits, node_ll.cu): when the call's epochs would cross
// a multiple M of 2^32, every column first clears its share of the own LL region, then one barrier
// (target e + 1), and the call runs from epoch M: no line older than 2^32 epochs survives, no flag of
// the new era is zero. The share is the LL kernel's own mapping of line index w to CTAs (thread
// w % (grid * block); an LL launch has one column per CTA), so an LL call that wraps writes a peer's
// lines only after that peer's CTA of the same index cleared them (its barrier); later calls of any
// CTA count run after this kernel, whose every column cleared its share before its barrier.
// Every rank decides alike (the same epochs everywhere). Returns the call's epoch; false in *ok when
// the wrap barrier timed out (the CTA must return).
// ---------------------------------------------------------------------------------------------
// kMulti: the kernel variant with several columns per CTA (node_columns); the other one's clearing
// is written for one column per CTA (a loop over the columns there cost the two-shot kernels
// registers, nvcc 13.0: spills where they had none).
// What node_enter returns (with false in *ok) for a gated pair's pool kernel that has nothing to do.
constexpr unsigned long long kSkipped = ~0ull;
template <bool kMulti = false> __device__ __forceinline__ unsigned long long node_enter(const Params &p, bool *ok)
{
    *ok = true;
    if (!p.x.dev_epoch) return p.epoch;
    __shared__ unsigned long long s_e;
    char *own = static_cast<char *>(p.x.base[p.x.rank]);
    if (p.gate && *reinterpret_cast<const volatile unsigned long long *>(own + kGateOff) == p.gate) {
        // a gated pair whose zero-copy kernel ran the call (the previous kernel of this rank, on the
        // same stream: its store is visible), which also wrote the completion word: nothing to do but
        // count this CTA toward the word's target (node_exit); the epoch stays
        *ok = false;
        return kSkipped;
    }
    unsigned long long *ew = reinterpret_cast<unsigned long long *>(own + kEpochOff);
    if (threadIdx.x == 0) {
        const unsigned long long e = *reinterpret_cast<volatile unsigned long long *>(ew);
        const bool wrap = ((e + p.barriers) >> 32) != (e >> 32);
        const unsigned long long next = wrap ? (((e >> 32) + 1ull) << 32) + p.barriers : e + p.barriers;
        unsigned *arrive = reinterpret_cast<unsigned *>(own + kArriveOff);
        __threadfence();
        if (atomicAdd(arrive, 1u) == gridDim.x - 1) {
            __threadfence();
            *reinterpret_cast<volatile unsigned *>(arrive) = 0u;
            *reinterpret_cast<volatile unsigned long long *>(ew) = next;
        }
        s_e = e;
    }
    __syncthreads();
    const unsigned long long e = s_e;
    if (((e + p.barriers) >> 32) != (e >> 32)) {
        constexpr size_t kLines = TLMPI_NODE_LL_SLOT / 16;  // lines per (half, sender)
        uint4 *ll = reinterpret_cast<uint4 *>(own + TLMPI_NODE_LL_OFF);
        if constexpr (!kMulti) {
            const size_t stride = (size_t)gridDim.x * blockDim.x;
            for (size_t w = (size_t)blockIdx.x * blockDim.x + threadIdx.x; w < kLines; w += stride)
                for (int hs = 0; hs < 2 * kMaxRanks; hs++) ll[(size_t)hs * kLines + w] = make_uint4(0u, 0u, 0u, 0u);
            if (!flag_barrier(p.x, blockIdx.x, e + 1, p.kind, 0)) *ok = false;
        } else {
            const size_t stride = (size_t)p.cols * blockDim.x;
            for (unsigned c = blockIdx.x; c < p.cols; c += gridDim.x) {
                for (size_t w = (size_t)c * blockDim.x + threadIdx.x; w < kLines; w += stride)
                    for (int hs = 0; hs < 2 * kMaxRanks; hs++) ll[(size_t)hs * kLines + w] = make_uint4(0u, 0u, 0u, 0u);
                if (!flag_barrier(p.x, c, e + 1, p.kind, 0)) {
                    *ok = false;
                    break;
                }
            }
        }
        return ((e >> 32) + 1ull) << 32;
    }
    return e;
}

// This CTA's columns (see "Columns and CTAs" above): body(Column) runs the algorithm on one column and
// returns false when a wait timed out, which ends the CTA's loop (the peers' waits on its later
// columns time out too, and report). kMulti: the kernel variant for launches with more columns than
// CTAs (its loop costs registers: nvcc 13.0 spills in some of the reductions with it); without, the
// one column blockIdx.x of gridDim.x (the launcher picks: node.cu).
template <bool kMulti, class Body> __device__ __forceinline__ void node_columns(const Params &p, Body &&body)
{
    if constexpr (!kMulti) {
        (void)body(grid_column());
    } else {
        for (unsigned c = blockIdx.x; c < p.cols; c += gridDim.x)
            if (!body(Column{ c, p.cols })) return;
    }
}

// The first statement of every node kernel: the call's epoch into `e` (returns from the kernel when the
// wrap's barrier timed out).
#define TLMPI_NODE_ENTER(p, e) TLMPI_NODE_ENTER_COLS(p, e, false)
// the same in a kernel templated on kMulti (node_columns)
#define TLMPI_NODE_ENTER_COLS(p, e, multi)                                                       \
    bool e##_ok;                                                                                 \
    const unsigned long long e = ::tlmpi::node::node_enter<multi>(p, &e##_ok);                   \
    if (!e##_ok) {                                                                               \
        if (e == ::tlmpi::node::kSkipped) ::tlmpi::node::node_exit(p, false); /* counted, no word */ \
        return;                                                                                  \
    }

// ---------------------------------------------------------------------------------------------
// Completion word (kernels.h: tlmpi_node_args_t.done_word): the last statement of every node kernel
// but the LL and barrier ones (whose threads may return on their own; the launcher offers them no
// word). Every thread of the CTA is past its last store (bar.sync); thread 0 makes them visible at
// system scope (fence.sc.sys is cumulative over what the bar.sync ordered before it), then counts the
// CTA in the own header; the CTA whose count reaches the launch's target knows every CTA's stores are
// visible (each fenced before its count), fences again and stores the word for the host, unless a
// wait of this rank timed out (the record's set flag is written before that CTA counted). A CTA that
// returned early from its algorithm (a wait timed out) counts too; one that left at node_enter on a
// timed-out wrap barrier does not, and no later target is reached (the host then goes by the event:
// kernels.h). write false: the CTA counts and the word is left alone (a gated pair's launch that did
// not run the call: the other one writes it; node_direct.cu). The host reads the word with no CUDA
// call: MPI_Wait on a finished start costs a load, not an event query.
// ---------------------------------------------------------------------------------------------
__device__ __forceinline__ void node_exit(const Params &p, bool write = true)
{
    if (!p.done_word) return;
    __syncthreads();
    if (threadIdx.x != 0) return;
    unsigned long long *cnt = reinterpret_cast<unsigned long long *>(static_cast<char *>(p.x.base[p.x.rank]) + kDoneOff);
    __threadfence_system();
    if (atomicAdd(cnt, 1ull) + 1ull != p.done_target || !write) return;
    __threadfence_system();
    if (p.x.err && reinterpret_cast<const volatile tlmpi_node_err_t *>(p.x.err)->set) return;
    asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(p.done_word), "r"(p.done_value) : "memory");
}

// ---------------------------------------------------------------------------------------------
// Partition: the step's range of a slot (`full` bytes, the same in every step of the call) split
// among the columns in 16-byte-aligned pieces (a call of one step: its length), then clipped to the
// step's actual length `len` (shorter in the last step). Every rank computes the same pieces, and
// column b covers the same slot offsets in every step: the per-column barriers order exactly the
// accesses that touch the same bytes (a piece computed from `len` would move in the last step, and
// its writes would meet other columns' reads of two steps before, which no barrier of this column
// orders). The transports' piece() is this for their column.
// ---------------------------------------------------------------------------------------------
__device__ __forceinline__ void col_piece(Column c, size_t full, size_t len, size_t *lo, size_t *hi)
{
    const size_t g = c.n;
    size_t per = (full + g - 1) / g;
    per = (per + 15) & ~(size_t)15;
    size_t a = per * c.i;
    if (a > len) a = len;
    size_t b = a + per;
    if (b > len) b = len;
    *lo = a;
    *hi = b;
}

// Alignment (16, 8, 4, 2 or 1) of an address; every vector of a piece starts at such an address
// plus a multiple of 16, so one value serves the whole piece.
__device__ __forceinline__ int ua_of(const void *p)
{
    return common_vec_bytes((uintptr_t)p);
}

// Pool offset of data half h (0 or 1) for barrier epoch e.
__device__ __forceinline__ size_t half_off(const tlmpi_node_xport_t &x, unsigned long long e)
{
    return (e & 1ull) ? x.data_bytes / 2 : 0;
}

// ---------------------------------------------------------------------------------------------
// User-buffer access at run-time alignment ua (the pool side is always 16-byte aligned)
// ---------------------------------------------------------------------------------------------
__device__ __forceinline__ uint4 ld_user(const char *p, int ua)
{
    uint4 v;
    if (ua >= 16) {
        v = *reinterpret_cast<const uint4 *>(p);
    } else if (ua == 8) {
        const uint2 a = reinterpret_cast<const uint2 *>(p)[0], b = reinterpret_cast<const uint2 *>(p)[1];
        v = make_uint4(a.x, a.y, b.x, b.y);
    } else if (ua == 4) {
        const unsigned *q = reinterpret_cast<const unsigned *>(p);
        v = make_uint4(q[0], q[1], q[2], q[3]);
    } else {
        unsigned char *d = reinterpret_cast<unsigned char *>(&v);
#pragma unroll
        for (int i = 0; i < 16; i++) d[i] = reinterpret_cast<const unsigned char *>(p)[i];
    }
    return v;
}
__device__ __forceinline__ void st_user(char *p, uint4 v, int ua)
{
    if (ua >= 16) {
        *reinterpret_cast<uint4 *>(p) = v;
    } else if (ua == 8) {
        reinterpret_cast<uint2 *>(p)[0] = make_uint2(v.x, v.y);
        reinterpret_cast<uint2 *>(p)[1] = make_uint2(v.z, v.w);
    } else if (ua == 4) {
        unsigned *q = reinterpret_cast<unsigned *>(p);
        q[0] = v.x; q[1] = v.y; q[2] = v.z; q[3] = v.w;
    } else {
        const unsigned char *s = reinterpret_cast<const unsigned char *>(&v);
#pragma unroll
        for (int i = 0; i < 16; i++) reinterpret_cast<unsigned char *>(p)[i] = s[i];
    }
}
// one element of E bytes (E <= 8) through the user side at alignment ua
template <int E> __device__ __forceinline__ Vec<E> ld_user_e(const char *p, int ua)
{
    if (ua >= E) return *reinterpret_cast<const Vec<E> *>(p);
    Vec<E> v;
    unsigned char *d = reinterpret_cast<unsigned char *>(&v);
#pragma unroll
    for (int i = 0; i < E; i++) d[i] = reinterpret_cast<const unsigned char *>(p)[i];
    return v;
}
template <int E> __device__ __forceinline__ void st_user_e(char *p, Vec<E> v, int ua)
{
    if (ua >= E) {
        *reinterpret_cast<Vec<E> *>(p) = v;
        return;
    }
    const unsigned char *s = reinterpret_cast<const unsigned char *>(&v);
#pragma unroll
    for (int i = 0; i < E; i++) reinterpret_cast<unsigned char *>(p)[i] = s[i];
}

// Loads of pool memory (any rank's) bypass L1 (ld.global.cg): the same pool addresses carry new data
// every other step, written by other SMs or GPUs, and L1 is not coherent with them.
template <int VB> __device__ __forceinline__ Vec<VB> load_pool(const char *p)
{
    if constexpr (VB == 16) return __ldcg(reinterpret_cast<const uint4 *>(p));
    else if constexpr (VB == 8) return __ldcg(reinterpret_cast<const uint2 *>(p));
    else if constexpr (VB == 4) return __ldcg(reinterpret_cast<const unsigned *>(p));
    else if constexpr (VB == 2) return __ldcg(reinterpret_cast<const unsigned short *>(p));
    else return __ldcg(reinterpret_cast<const unsigned char *>(p));
}

// The walk of a piece [lo, hi) that every copy loop of the node and fused kernels shares: rounds of
// 4 vectors per thread, in flight together (ld(b) for every vector of a round before any st(b, v):
// the stores may alias nothing a round reads), the last round as many of them as the piece has left
// (guarded loads and stores, still in flight together: a piece that is not a whole number of rounds,
// e.g. 66 columns of a 16 MiB step, lost its last partial round to one-by-one copies); the tail (< 16
// bytes, only at the message's end) byte by byte through tail(b). b is the byte offset in the piece's
// buffers.
template <class Ld, class St, class Tail>
__device__ __forceinline__ void walk_piece(size_t lo, size_t hi, Ld ld, St st, Tail tail)
{
    constexpr int U = 4;
    const size_t nvec = (hi - lo) / 16;
    const size_t bd = blockDim.x;
    size_t i = threadIdx.x;
    for (; i < nvec; i += U * bd) {
        uint4 v[U];
#pragma unroll
        for (int u = 0; u < U; u++)
            if (i + u * bd < nvec) v[u] = ld(lo + (i + u * bd) * 16);
#pragma unroll
        for (int u = 0; u < U; u++)
            if (i + u * bd < nvec) st(lo + (i + u * bd) * 16, v[u]);
    }
    const size_t t0 = lo + nvec * 16;
    if (threadIdx.x < hi - t0) tail(t0 + threadIdx.x);
}

// Copy [lo, hi) of a piece: src at alignment ua_s to dst at ua_d (a pool: 16; src a pool when
// FROM_POOL).
template <bool FROM_POOL = false>
__device__ __forceinline__ void copy_piece(char *dst, int ua_d, const char *src, int ua_s, size_t lo, size_t hi)
{
    walk_piece(
        lo, hi, [&](size_t b) -> uint4 { return FROM_POOL ? load_pool<16>(src + b) : ld_user(src + b, ua_s); },
        [&](size_t b, uint4 v) { st_user(dst + b, v, ua_d); },
        [&](size_t b) { dst[b] = FROM_POOL ? (char)load_pool<1>(src + b) : src[b]; });
}

}  // namespace node
}  // namespace tlmpi

#endif
