// transport_nvls.cuh: the NVLink-multicast (NVLS) device transport of the node kernels (concept:
// cuda/node.cuh), for pools that are one NCCL window with a multicast mapping over the node
// (devcomm transport with lsaMultimem; src/transport/devcomm.c requests that only when multicast
// is allowed: NCCL_NVLS_ENABLE not 0, TLMPI_NVLS not 0, the device supports it).
//
// Unicast access and barriers are the IPC transport's (the window's LSA pointers are in x.base[]).
// mc_load_reduce is one multimem.ld_reduce of a 16-byte vector over every rank's pool (the switch
// reduces; f16/bf16 accumulate in f32: .acc::f32), mc_store one multimem.st into every rank's pool
// (this rank's included). Only the (dtype, op) pairs multimem has are instantiated with this
// transport (nvls_has); the others run the IPC-shaped kernels on the same pools. Because the switch
// reads this rank's pool too, the algorithms stage the own part as well (kStageOwn).
#ifndef TLMPI_CUDA_TRANSPORT_NVLS_CUH
#define TLMPI_CUDA_TRANSPORT_NVLS_CUH

#include "transport_ipc.cuh"

namespace tlmpi {
namespace node {

// (dtype, op) pairs with a 16-byte multimem.ld_reduce
constexpr bool nvls_has(int dt, int op)
{
    return (dt == TLMPI_DT_F32 && op == TLMPI_OP_SUM) ||
           ((dt == TLMPI_DT_F16 || dt == TLMPI_DT_BF16) && (op == TLMPI_OP_SUM || op == TLMPI_OP_MIN || op == TLMPI_OP_MAX));
}

template <int DT, typename Op> struct MultimemLdReduce;
#define TLMPI_MM_LDRED(DT, OPT, OPSTR, TYPE)                                                     \
    template <> struct MultimemLdReduce<DT, OPT> {                                               \
        __device__ static __forceinline__ uint4 apply(const char *mc)                           \
        {                                                                                        \
            uint4 v;                                                                             \
            asm volatile("multimem.ld_reduce.relaxed.sys.global." OPSTR "." TYPE " {%0,%1,%2,%3}, [%4];" \
                         : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(mc) : "memory");   \
            return v;                                                                            \
        }                                                                                        \
    };
TLMPI_MM_LDRED(TLMPI_DT_F32, Sum, "add", "v4.f32")
TLMPI_MM_LDRED(TLMPI_DT_F16, Sum, "add.acc::f32", "v4.f16x2")
TLMPI_MM_LDRED(TLMPI_DT_F16, Min, "min", "v4.f16x2")
TLMPI_MM_LDRED(TLMPI_DT_F16, Max, "max", "v4.f16x2")
TLMPI_MM_LDRED(TLMPI_DT_BF16, Sum, "add.acc::f32", "v4.bf16x2")
TLMPI_MM_LDRED(TLMPI_DT_BF16, Min, "min", "v4.bf16x2")
TLMPI_MM_LDRED(TLMPI_DT_BF16, Max, "max", "v4.bf16x2")
#undef TLMPI_MM_LDRED

__device__ __forceinline__ void multimem_st16(char *mc, uint4 v)
{
    asm volatile("multimem.st.relaxed.sys.global.v4.f32 [%0], {%1,%2,%3,%4};" ::"l"(mc), "r"(v.x), "r"(v.y), "r"(v.z),
                 "r"(v.w)
                 : "memory");
}

// DT/Op: the reduction the kernel instantiates (allgather: any; only mc_store is used)
template <int DT, typename Op> struct NvlsTransport : IpcTransport {
    static constexpr bool kStageOwn = true;
    __device__ __forceinline__ char *mc(size_t off) const
    {
        return static_cast<char *>(x.mc_base) + TLMPI_NODE_HDR_BYTES + off;
    }
    template <typename Acc> __device__ __forceinline__ uint4 mc_load_reduce(size_t off, uint4) const
    {
        return MultimemLdReduce<DT, Op>::apply(mc(off));
    }
    // elements of the tail: unicast loads (multimem has no sub-16-byte vectors for every type)
    __device__ __forceinline__ void mc_store_others(size_t off, uint4 v) const { multimem_st16(mc(off), v); }
};

}  // namespace node
}  // namespace tlmpi

#endif
