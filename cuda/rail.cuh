// rail.cuh: the rail operations of the fused 2D kernels (cuda/hier_fused_*.cu), and the emulated rail
// that implements them over CUDA-IPC mappings of the rail peers' pools (fake nodes on one host).
//
// Rail transport concept (R), beside the node operations of node.cuh (R::node: barrier, data(j)):
//   char *R::own()                         this rank's pool data area (the source of every put)
//   char *R::inbox_remote(int n)           the data area of the rail peer on node n (destination)
//   void R::put(n, off_src, off_dst, lo, hi)  bytes [lo, hi) of own()+off_src into node n's pool at
//                                          off_dst (the CTA's threads together)
//   void R::signal(n, slot, g)             after this CTA's puts of (slot, g) to node n: add 1 to
//                                          node n's signal[slot][this node][g], ordered after them
//   bool R::wait(slot, g, target, step)    until signal[slot][m][g] >= target for every other node
//                                          m (bounded; false: timed out, the CTA must return)
//   void R::flush()                        this CTA's put sources may be rewritten (end of a step)
// GIN (NCCL Device API; cuda/rail_gin.cuh) implements the same with ncclGin put + SignalInc and
// readSignal; a GIN wait on context c sees only the puts issued through c, so it waits for
// target / contexts there.
//
// Signal bookkeeping (../shared/reference/algorithms.md §2; every rule here is one of its bugs):
// - Counters are cumulative and never reset; the host keeps each signal's running total and
//   passes it in (tlmpi_rail_args_t.sig), the kernel adds ctas per rail step of this call that
//   used the slot: target(t) = sig[t % 3][g] + ctas * ((t - step0) / 3 + 1).
// - One signal per sender node (one writer per counter: with a shared counter a fast sender's
//   next-call arrivals could stand in for a slow sender's missing ones, with 3 or more nodes).
// - Rail step t uses slot t % 3 of the inbox and of the signals, and the halves of a composed
//   collective (allreduce: RS then AG) are consecutive rail steps, so they never share a slot.
//   Why three: a sender's put of step t+3 into this rank's slot t % 3 comes after its wait of
//   step t+2, which needs every CTA of this rank to have put step t+2; each of those comes after
//   a node barrier this rank passed only when its node peers were done reading step t (all
//   kernels: a step's puts follow a node barrier of the step before, or its own first one), and
//   after this rank's own reads of step t. The same chain keeps step t+3's signal increments
//   from arriving before step t's wait is over, so a count at the target means step t's data.
// - Every CTA signals every group of every step, empty pieces included, so the counts per step
//   are exactly ctas on every counter.
#ifndef TLMPI_CUDA_RAIL_CUH
#define TLMPI_CUDA_RAIL_CUH

#include "transport_ipc.cuh"

namespace tlmpi {
namespace rail {

using node::ld_acquire;

constexpr int kSlots = TLMPI_RAIL_SLOTS;
constexpr int kMaxNodes = TLMPI_RAIL_MAX_NODES;
constexpr int kMaxGroups = TLMPI_RAIL_MAX_GROUPS;
// pool header: the node barrier flags and claim word (node.cuh), then the rail signals
constexpr size_t kSigOff = 16384;
static_assert(node::kClaimOff + 64 <= kSigOff, "rail signals after the node header");
static_assert(kSigOff + sizeof(unsigned long long) * kSlots * kMaxNodes * kMaxGroups <= TLMPI_NODE_LL_OFF,
              "rail signals inside the pool header, before the LL region");

__device__ __forceinline__ unsigned long long *signal_at(void *base, int slot, int sender, int g)
{
    return reinterpret_cast<unsigned long long *>(static_cast<char *>(base) + kSigOff) +
           ((size_t)slot * kMaxNodes + (size_t)sender) * kMaxGroups + (size_t)g;
}

// The emulated rail: the rail peers' pools are mapped (CUDA IPC on one host).
struct EmulatedRail {
    const tlmpi_rail_xport_t &x;
    node::IpcTransport node;  // the node's ranks: barriers (epoch of the call), data(j)

    __device__ __forceinline__ int nnodes() const { return x.nnodes; }
    __device__ __forceinline__ int node_index() const { return x.node_index; }
    __device__ __forceinline__ char *own() const { return node.data(x.node.rank); }
    __device__ __forceinline__ char *inbox_remote(int n) const { return static_cast<char *>(x.rail[n]) + TLMPI_NODE_HDR_BYTES; }

    // a copy from the own pool into the peer's (16-byte vectors: both sides are pool offsets, 16-aligned
    // except the message's odd tail)
    __device__ __forceinline__ void put(int n, size_t off_src, size_t off_dst, size_t lo, size_t hi) const
    {
        node::copy_piece<true>(inbox_remote(n) + off_dst, 16, own() + off_src, 16, lo, hi);
    }
    // release: the CTA's puts (bar.sync, then a system-scope fence, cumulative) before the add
    __device__ __forceinline__ void signal(int n, int slot, int g) const
    {
        __syncthreads();
        if (threadIdx.x == 0 && !x.rail_stuck) {
            __threadfence_system();
            atomicAdd_system(signal_at(x.rail[n], slot, x.node_index, g), 1ull);
        }
    }
    // the copies are complete when put returns
    __device__ __forceinline__ void flush() const {}
    // thread m (< N, != own node) polls signal[slot][m][g] of the own pool (acquire); all threads
    // then see what the senders put before their adds (bar.sync after the acquire)
    __device__ __forceinline__ bool wait(int slot, int g, unsigned long long target, int step) const
    {
        const int m = (int)threadIdx.x;
        int ok = 1;
        if (m < x.nnodes && m != x.node_index) {
            const unsigned long long *s = signal_at(x.rail[x.node_index], slot, m, g);
            unsigned long long v;
            if (!node::poll_until([&] { return ld_acquire(s); }, target, x.node.timeout_ns, &v)) {
                node::report_timeout(x.node, static_cast<char *>(x.node.base[x.node.rank]), -1, (int)blockIdx.x, step, m, target, v, 1,
                                     slot, g);
                ok = 0;
            }
        }
        return __syncthreads_and(ok) != 0;
    }
};

}  // namespace rail
}  // namespace tlmpi

#endif
