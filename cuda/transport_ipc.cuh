// transport_ipc.cuh: the CUDA-IPC device transport of the node kernels (concept: cuda/node.cuh).
//
// Every node rank's pool is mapped into this process (cudaIpcOpenMemHandle, by the host side in
// src/transport/ipc.c); data(q) is rank q's data area (x.data[q]: after its header, or an allocation of
// its own that the host grows on demand). Barriers are flag words in the pools'
// headers (node::flag_barrier: release stores into the peers' headers, acquire polls of the own,
// system scope, bounded by the descriptor's timeout). There is no multicast object: the multicast
// operations are emulated with the same 16-byte vectors an NVLS multimem.ld_reduce.v4 /
// multimem.st.v4 would use, by looping over the ranks: load-reduce in rank order 0..n-1 (so every
// rank that reduces the same vector gets the same bits), store in rotated order starting after
// this rank (so the ranks' stores do not all hit rank 0's memory first). Works for ranks on one
// GPU (MPS or time-sliced) and on GPUs with peer access.
#ifndef TLMPI_CUDA_TRANSPORT_IPC_CUH
#define TLMPI_CUDA_TRANSPORT_IPC_CUH

#include "node.cuh"

namespace tlmpi {
namespace node {

struct IpcTransport {
    static constexpr bool kStageOwn = false;  // the own term is read from the user's buffer
    const tlmpi_node_xport_t &x;
    unsigned long long epoch;
    int kind;
    Column col;  // the column of the call this CTA works on (node.cuh: node_columns)

    __device__ __forceinline__ int nranks() const { return x.nranks; }
    __device__ __forceinline__ int rank() const { return x.rank; }
    __device__ __forceinline__ char *data(int q) const { return static_cast<char *>(x.data[q]); }
    __device__ __forceinline__ bool barrier(int k) const
    {
        return flag_barrier(x, col.i, epoch + (unsigned long long)k, kind, k);
    }
    __device__ __forceinline__ void piece(size_t full, size_t len, size_t *lo, size_t *hi) const
    {
        col_piece(col, full, len, lo, hi);
    }

    // Acc over every rank's vector at pool offset off, in rank order; this rank contributes self_v
    // (its own input, read from the user buffer) instead of its pool. The loads are issued in groups
    // of kGroup ranks, each group's loads together before its adds: a loop of dependent load-add
    // pairs costs one remote-load latency per rank (microseconds at 8 ranks for an 8-byte
    // allreduce), all 8 at once cost registers that the 64-register bound of the kernels lacks.
    static constexpr int kGroup = 4;
    template <typename V, typename Acc, typename Load>
    __device__ __forceinline__ V load_reduce_groups(V self_v, Load &&ld) const
    {
        const int n = x.nranks, r = x.rank;
        Acc a;
#pragma unroll 1
        for (int q0 = 0; q0 < n; q0 += kGroup) {
            V v[kGroup];
#pragma unroll
            for (int j = 0; j < kGroup; j++)
                if (q0 + j < n) v[j] = q0 + j == r ? self_v : ld(q0 + j);
#pragma unroll
            for (int j = 0; j < kGroup; j++) {
                if (q0 + j >= n) break;
                if (q0 + j == 0) a.init(v[j]);
                else a.add(v[j]);
            }
        }
        return a.get();
    }
    template <typename Acc>
    __device__ __forceinline__ uint4 mc_load_reduce(size_t off, uint4 self_v) const
    {
        return load_reduce_groups<uint4, Acc>(self_v, [&](int q) { return load_pool<16>(data(q) + off); });
    }
    // the same for one element of E bytes (tails)
    template <typename Acc, int E>
    __device__ __forceinline__ Vec<E> mc_load_reduce_e(size_t off, Vec<E> self_v) const
    {
        return load_reduce_groups<Vec<E>, Acc>(self_v, [&](int q) { return load_pool<E>(data(q) + off); });
    }
    // v into every rank's pool at off except this rank's (the caller writes its own copy where it
    // wants it: usually straight into the user's buffer)
    __device__ __forceinline__ void mc_store_others(size_t off, uint4 v) const
    {
        const int n = x.nranks, r = x.rank;
        for (int s = 1; s < n; s++) {
            int q = r + s;
            if (q >= n) q -= n;
            store<16>(data(q) + off, v);
        }
    }
    template <int E> __device__ __forceinline__ void mc_store_others_e(size_t off, Vec<E> v) const
    {
        const int n = x.nranks, r = x.rank;
        for (int s = 1; s < n; s++) {
            int q = r + s;
            if (q >= n) q -= n;
            store<E>(data(q) + off, v);
        }
    }
};

}  // namespace node
}  // namespace tlmpi

#endif
