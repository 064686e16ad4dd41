// rail_gin.cuh: the GIN rail of the fused 2D kernels (cuda/rail.cuh's concept over the NCCL Device
// API's GPU-initiated networking), compiled where the NCCL headers have GIN (2.28.9+); the host
// side chooses it only when ncclDevCommCreate with GIN signals succeeded on every rank
// (src/transport/devcomm.c with a GIN request, src/tier/hier_gin.c).
//
// The pool is one NCCL window (ncclMemAlloc + ncclCommWindowRegister) of the whole communicator:
// the node's ranks reach each other's pools through the window's LSA addresses (node.base[], as on
// the ipc transport), the rail peers through GIN puts on the devcomm's rail team (peer = node index).
// Where each rank is its own NCCL host (x.gin_world: fake nodes whose ranks share a GPU, which NCCL
// refuses within one host), the LSA team is the rank alone: node.base[] are then the node's pools
// mapped through cuMem descriptors (src/transport/cumemshare.c) and the peers are addressed in the
// world team (node n's rank of this local index: n * L + local index).
//   put     ncclGin::put(rail team, node n, window, dst offset, window, src offset, bytes), issued by
//           the CTA (ncclCoopCta), on context blockIdx.x % contexts
//   signal  ncclGin::signal(rail team, n, SignalInc{id(slot, this node, g)}) on the same context:
//           after the puts before it on that context to that peer (NCCL: a signal is visible only
//           after the payloads of earlier puts on its context to the same peer settled). SignalInc
//           only: it may not be mixed with other signal operators
//   wait    readSignal (acquire) of id(slot, m, g) on the CTA's context, bounded by the descriptor's
//           timeout (2.28.9 has no device-side wait timeout; 2.31's would replace the loop). A
//           context sees only the increments sent through it, so it waits for target / contexts:
//           the host makes the CTA count a multiple of the granted context count, the same on all
//           ranks, so every context gets ctas / contexts increments per step (the testing mutants
//           of TLMPI_FAULT, gin_wait_full and gin_wait_short, wait for target and for
//           target / (2 x contexts) instead: tests/gpu/gin-loopback.sh's ctx step)
//   flush   ncclGin::flush(ncclCoopCta): the CTA's put sources may be rewritten (end of each step)
// Not run on any machine of this project yet (no RDMA NIC with NCCL's GIN support here).
#ifndef TLMPI_CUDA_RAIL_GIN_CUH
#define TLMPI_CUDA_RAIL_GIN_CUH

#include "rail.cuh"

#if __has_include(<nccl_device.h>)
#include <nccl.h>
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include <nccl_device.h>
#pragma GCC diagnostic pop
#if defined(NCCL_VERSION_CODE) && NCCL_VERSION_CODE >= NCCL_VERSION(2, 28, 9)
#define TLMPI_RAIL_GIN 1
#endif
#endif

#ifdef TLMPI_RAIL_GIN
namespace tlmpi {
namespace rail {

struct GinRail {
    const tlmpi_rail_xport_t &x;
    node::IpcTransport node;  // the node's ranks: the window's LSA addresses
    const ncclDevComm &dc;
    ncclWindow_t win;
    int contexts;

    __device__ __forceinline__ int nnodes() const { return x.nnodes; }
    __device__ __forceinline__ int node_index() const { return x.node_index; }
    __device__ __forceinline__ char *own() const { return node.data(x.node.rank); }
    __device__ __forceinline__ int ctx() const { return (int)(blockIdx.x % (unsigned)contexts); }
    __device__ static __forceinline__ ncclGinSignal_t id(int slot, int sender, int g)
    {
        return (ncclGinSignal_t)(((unsigned)slot * kMaxNodes + (unsigned)sender) * kMaxGroups + (unsigned)g);
    }

    // node n's rank of this local index: in NCCL's rail team (index n), or in the world team where
    // each rank is its own NCCL host (x.gin_world: the LSA team is one rank, the rail team everyone)
    __device__ __forceinline__ ncclTeam team() const { return x.gin_world ? ncclTeamWorld(dc) : ncclTeamRail(dc); }
    __device__ __forceinline__ int peer(int n) const { return x.gin_world ? n * x.node.nranks + x.node.rank : n; }

    __device__ __forceinline__ void put(int n, size_t off_src, size_t off_dst, size_t lo, size_t hi) const
    {
        if (hi <= lo) return;  // the same on every thread of the CTA
        ncclGin gin(dc, ctx());
        gin.put(team(), peer(n), win, TLMPI_NODE_HDR_BYTES + off_dst + lo, win, TLMPI_NODE_HDR_BYTES + off_src + lo,
                hi - lo, ncclGin_None{}, ncclGin_None{}, ncclCoopCta());
    }
    __device__ __forceinline__ void signal(int n, int slot, int g) const
    {
        __syncthreads();
        if (x.rail_stuck) return;
        ncclGin gin(dc, ctx());
        gin.signal(team(), peer(n), ncclGin_SignalInc{ id(slot, x.node_index, g) }, ncclCoopCta());
    }
    __device__ __forceinline__ bool wait(int slot, int g, unsigned long long target, int step) const
    {
        const int m = (int)threadIdx.x;
        // x.gin_wait: the fault sites gin_wait_full / gin_wait_short (0 but under TLMPI_FAULT)
        const unsigned long long want = __builtin_expect(x.gin_wait != 0, 0)
                                            ? (x.gin_wait == 1 ? target : target / (2ull * (unsigned long long)contexts))
                                            : target / (unsigned long long)contexts;
        int ok = 1;
        if (m < x.nnodes && m != x.node_index) {
            ncclGin gin(dc, ctx());
            unsigned long long v;
            if (!node::poll_until([&] { return (unsigned long long)gin.readSignal(id(slot, m, g)); }, want,
                                  x.node.timeout_ns, &v)) {
                node::report_timeout(x.node, static_cast<char *>(x.node.base[x.node.rank]), -1, (int)blockIdx.x, step, m, want, v, 1,
                                     slot, g);
                ok = 0;
            }
        }
        return __syncthreads_and(ok) != 0;
    }
    __device__ __forceinline__ void flush() const
    {
        ncclGin gin(dc, ctx());
        gin.flush(ncclCoopCta());
    }
};

}  // namespace rail
}  // namespace tlmpi
#endif

#endif
