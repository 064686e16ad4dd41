// local.cu: element-wise copy and reduction kernels on the current device's memory, the building
// blocks of the intra-node tiers (reduce-scatter pulls, one-shot / two-shot allreduce, staging).
//
// Algorithm. The range is split, by address, into a head (up to the first VB-byte boundary of
// dst), a body of whole VB-byte vectors and a tail. VB = 16 (one ld.global.v4 / st.global.v4)
// when dst and every source are congruent modulo 16, else the widest of 8/4/2/1 bytes (never
// narrower than an element) in which they are: the same head/body/tail split with narrower
// vectors, so differently aligned buffers stay correct and vectorised as far as they can be. The
// body is walked grid-stride, each thread holding UNROLL vectors in flight (copy: 8, reduce:
// 4 per source of 16/8-byte vectors, 8 of narrower ones: copy_unroll/reduce_unroll);
// reduce loads source 0 into accumulators, adds sources 1..nsrc-1 in that order (f16 and
// bf16 in float lanes, rounded once at the store) and stores. The head and tail (< VB bytes
// each) are done element by element by the first threads of the last CTA.
//
// Launch shape. kThreads = 256 threads per CTA, __launch_bounds__(256, 4): at most 64 registers,
// so four CTAs (1024 threads) stay resident per SM. The CTA count is the caller's (kernels.h:
// tlmpi_cuda_ctas_for picks 1 for small sizes up to 4 per SM), lowered to the number of
// kThreads * UNROLL-vector chunks the body has. No shared memory. One cudaLaunchKernel per call,
// no device query, no synchronisation.
//
// Sync protocol: none. CTAs share no data and never wait for each other; the kernel is ordered
// with other work only by its stream.
//
// Memory ordering. Plain weak loads and stores. Inputs must be complete before the kernel starts
// (stream order, or an event the caller waited on); the results are visible to later work in
// the stream, and to other streams/devices only after the usual stream/event synchronisation.
// When dst is one of the sources each element is read and then written by the same thread, in
// program order, so the in-place case needs no ordering beyond that.
#include "common.cuh"
#include "kernels.h"

#include <atomic>

using namespace tlmpi;

namespace {

constexpr int kMaxSrc = TLMPI_CUDA_REDUCE_MAX_SRC;

// Vectors in flight per thread and step. Copy: 8 (128 B of 16-byte vectors: with 4, i.e. 64 B,
// the copy reached only 0.89 of cudaMemcpyAsync on the H200). Reduce: 4 per source of 16 or 8
// bytes, 8 of narrower ones (dst = dst op src reached 0.96 of cudaMemcpyAsync with 4 x 16 B).
// More spills registers (64-bit addresses per slot) under the 64-register bound.
constexpr int copy_unroll(int) { return 8; }
constexpr int reduce_unroll(int vb) { return vb >= 8 ? 4 : 8; }

// CTAs per SM the registers must allow (__launch_bounds__): 4 (<= 64 registers), except float
// accumulation (f16/bf16) with a run-time source count, which needs up to 80 registers for its
// 4 x 8 float lanes plus the vectors being loaded: 3 there, rather than spilling.
template <int DT, int NSRC> constexpr int min_ctas_per_sm()
{
    return std::is_same<typename Dt<DT>::Acc, typename Dt<DT>::T>::value || NSRC ? kMinCtasPerSm : 3;
}

struct CopyArgs {
    char *dst;
    const char *src;
    size_t nvec;
    uint32_t head, tail;  // bytes
};

struct ReduceArgs {
    char *dst;
    const char *src[kMaxSrc];
    size_t nvec;
    uint32_t head, tail;  // elements
    int nsrc;
};

template <int VB, int UNROLL>
__global__ void __launch_bounds__(kThreads, kMinCtasPerSm) copy_kernel(const CopyArgs a)
{
    if (blockIdx.x == gridDim.x - 1 && threadIdx.x < a.head + a.tail) {
        size_t b = threadIdx.x < a.head ? threadIdx.x : a.head + a.nvec * VB + (threadIdx.x - a.head);
        a.dst[b] = a.src[b];
    }
    char *const d = a.dst + a.head;
    const char *const s = a.src + a.head;
    const size_t n = a.nvec;
    grid_stride<UNROLL>(n, [&](size_t i, size_t st, auto full) {
        Vec<VB> v[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; u++)
            if (decltype(full)::value || i + u * st < n) v[u] = load<VB>(s + (i + u * st) * VB);
#pragma unroll
        for (int u = 0; u < UNROLL; u++)
            if (decltype(full)::value || i + u * st < n) store<VB>(d + (i + u * st) * VB, v[u]);
    });
}

// NSRC: the source count when known at compile time (2: dst = dst op src), 0 = a.nsrc.
template <int DT, typename Op, int VB, int NSRC, int UNROLL>
__global__ void __launch_bounds__(kThreads, (min_ctas_per_sm<DT, NSRC>())) reduce_kernel(const __grid_constant__ ReduceArgs a)
{
    constexpr int E = sizeof(typename Dt<DT>::T);
    constexpr int KUNROLL = NSRC ? NSRC : 1;  // a run-time count: one source at a time, no spills
    const int nsrc = NSRC ? NSRC : a.nsrc;

    if (blockIdx.x == gridDim.x - 1 && threadIdx.x < a.head + a.tail) {
        size_t e = threadIdx.x < a.head ? threadIdx.x : a.head + a.nvec * (VB / E) + (threadIdx.x - a.head);
        AccumFor<DT, Op, E> acc;
        acc.init(load<E>(a.src[0] + e * E));
#pragma unroll KUNROLL
        for (int k = 1; k < nsrc; k++) {
            acc.add(load<E>(a.src[k] + e * E));
        }
        store<E>(a.dst + e * E, acc.get());
    }
    const size_t off = (size_t)a.head * E;
    const size_t n = a.nvec;
    grid_stride<UNROLL>(n, [&](size_t i, size_t st, auto full) {
        AccumFor<DT, Op, VB> acc[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; u++)
            if (decltype(full)::value || i + u * st < n) acc[u].init(load<VB>(a.src[0] + off + (i + u * st) * VB));
#pragma unroll KUNROLL
        for (int k = 1; k < nsrc; k++) {  // a.src[k]: __grid_constant__, read in place
            Vec<VB> v[UNROLL];
#pragma unroll
            for (int u = 0; u < UNROLL; u++)
                if (decltype(full)::value || i + u * st < n) v[u] = load<VB>(a.src[k] + off + (i + u * st) * VB);
#pragma unroll
            for (int u = 0; u < UNROLL; u++)
                if (decltype(full)::value || i + u * st < n) acc[u].add(v[u]);
        }
#pragma unroll
        for (int u = 0; u < UNROLL; u++)
            if (decltype(full)::value || i + u * st < n) store<VB>(a.dst + off + (i + u * st) * VB, acc[u].get());
    });
}

template <int VB> const void *copy_fn() { return (const void *)copy_kernel<VB, copy_unroll(VB)>; }

template <int DT, typename Op, int VB> const void *reduce_fn(bool two)
{
    constexpr int E = sizeof(typename Dt<DT>::T);
    if constexpr (VB < E) {
        return nullptr;
    } else if constexpr (VB == 16) {
        return two ? (const void *)reduce_kernel<DT, Op, VB, 2, reduce_unroll(VB)>
                   : (const void *)reduce_kernel<DT, Op, VB, 0, reduce_unroll(VB)>;
    } else {
        (void)two;
        return (const void *)reduce_kernel<DT, Op, VB, 0, reduce_unroll(VB)>;
    }
}

template <int DT, typename Op> const void *reduce_fn_vb(int vb, bool two)
{
    switch (vb) {
    case 16: return reduce_fn<DT, Op, 16>(two);
    case 8: return reduce_fn<DT, Op, 8>(two);
    case 4: return reduce_fn<DT, Op, 4>(two);
    case 2: return reduce_fn<DT, Op, 2>(two);
    default: return reduce_fn<DT, Op, 1>(two);
    }
}

template <int DT> const void *reduce_fn_op(int op, int vb, bool two)
{
    switch (op) {
    case TLMPI_OP_SUM: return reduce_fn_vb<DT, Sum>(vb, two);
    case TLMPI_OP_PROD: return reduce_fn_vb<DT, Prod>(vb, two);
    case TLMPI_OP_MIN: return reduce_fn_vb<DT, Min>(vb, two);
    case TLMPI_OP_MAX: return reduce_fn_vb<DT, Max>(vb, two);
    }
    return nullptr;
}

const void *reduce_fn_dt(int dt, int op, int vb, bool two)
{
    switch (dt) {
    case TLMPI_DT_I8: return reduce_fn_op<TLMPI_DT_I8>(op, vb, two);
    case TLMPI_DT_U8: return reduce_fn_op<TLMPI_DT_U8>(op, vb, two);
    case TLMPI_DT_I16: return reduce_fn_op<TLMPI_DT_I16>(op, vb, two);
    case TLMPI_DT_U16: return reduce_fn_op<TLMPI_DT_U16>(op, vb, two);
    case TLMPI_DT_I32: return reduce_fn_op<TLMPI_DT_I32>(op, vb, two);
    case TLMPI_DT_U32: return reduce_fn_op<TLMPI_DT_U32>(op, vb, two);
    case TLMPI_DT_I64: return reduce_fn_op<TLMPI_DT_I64>(op, vb, two);
    case TLMPI_DT_U64: return reduce_fn_op<TLMPI_DT_U64>(op, vb, two);
    case TLMPI_DT_F16: return reduce_fn_op<TLMPI_DT_F16>(op, vb, two);
    case TLMPI_DT_BF16: return reduce_fn_op<TLMPI_DT_BF16>(op, vb, two);
    case TLMPI_DT_F32: return reduce_fn_op<TLMPI_DT_F32>(op, vb, two);
    case TLMPI_DT_F64: return reduce_fn_op<TLMPI_DT_F64>(op, vb, two);
    }
    return nullptr;
}

// CTAs actually launched: the caller's count, no more than the body has chunks (kThreads x
// unroll vectors), at least 1.
inline unsigned grid_for(int ctas, size_t nvec, int unroll)
{
    size_t chunk = (size_t)kThreads * (size_t)unroll;
    size_t chunks = (nvec + chunk - 1) / chunk;
    if (chunks < 1) chunks = 1;
    return (unsigned)((size_t)ctas < chunks ? (size_t)ctas : chunks);
}

inline int launch(const void *fn, unsigned grid, void *arg, void *stream)
{
    void *args[1] = { arg };
    return (int)cudaLaunchKernel(fn, dim3(grid), dim3(kThreads), args, 0, static_cast<cudaStream_t>(stream));
}

constexpr int kSmCacheDevs = 64;
std::atomic<int> g_sm_count[kSmCacheDevs];  // 0: not queried yet

}  // namespace

namespace tlmpi {
int local_kernels(const void **fns, int max)
{
    int n = 0;
    const void *copies[] = { copy_fn<16>(), copy_fn<8>(), copy_fn<4>(), copy_fn<2>(), copy_fn<1>() };
    for (const void *f : copies)
        if (n < max) fns[n++] = f;
    for (int dt = 0; dt < TLMPI_DT_NUM_ARITH; dt++)
        for (int op = 0; op < TLMPI_OP_NUM_ARITH; op++)
            for (int vb = 16; vb >= 1; vb /= 2)
                for (int two = 0; two < 2; two++) {
                    const void *f = reduce_fn_dt(dt, op, vb, two != 0);
                    if (f && n < max) fns[n++] = f;
                }
    return n;
}
}  // namespace tlmpi

extern "C" int tlmpi_cuda_reduce_supported(int dtype, int op)
{
    return dtype >= 0 && dtype < TLMPI_DT_NUM_ARITH && op >= 0 && op < TLMPI_OP_NUM_ARITH;
}

extern "C" int tlmpi_cuda_copy(void *dst, const void *src, size_t bytes, int ctas, void *stream)
{
    if (bytes == 0) return 0;
    if (!dst || !src || ctas < 1) return (int)cudaErrorInvalidValue;
    const uintptr_t d = (uintptr_t)dst;
    const int vb = common_vec_bytes(d ^ (uintptr_t)src);
    const Split sp = split_range(d, bytes, 1, vb);
    CopyArgs a = { static_cast<char *>(dst), static_cast<const char *>(src), sp.nvec, sp.head, sp.tail };
    const void *fn;
    switch (vb) {
    case 16: fn = copy_fn<16>(); break;
    case 8: fn = copy_fn<8>(); break;
    case 4: fn = copy_fn<4>(); break;
    case 2: fn = copy_fn<2>(); break;
    default: fn = copy_fn<1>(); break;
    }
    return launch(fn, grid_for(ctas, sp.nvec, copy_unroll(vb)), &a, stream);
}

extern "C" int tlmpi_cuda_reduce(void *dst, const void *const *srcs, int nsrc, size_t count, int dtype, int op,
                                 int ctas, void *stream)
{
    if (!tlmpi_cuda_reduce_supported(dtype, op) || nsrc < 1 || nsrc > kMaxSrc || ctas < 1) return (int)cudaErrorInvalidValue;
    if (count == 0) return 0;
    if (!dst || !srcs) return (int)cudaErrorInvalidValue;
    const size_t esz = TLMPI_DT_ELEM_SIZE(dtype);
    if (nsrc == 1) {
        // one source: the result is the source itself (f16/bf16 -> float -> f16/bf16 is exact)
        if (((uintptr_t)dst | (uintptr_t)srcs[0]) & (esz - 1)) return (int)cudaErrorInvalidValue;
        return tlmpi_cuda_copy(dst, srcs[0], count * esz, ctas, stream);
    }
    ReduceArgs a;
    const uintptr_t d = (uintptr_t)dst;
    uintptr_t any = d, diff = 0;
    a.dst = static_cast<char *>(dst);
    for (int k = 0; k < nsrc; k++) {
        const uintptr_t s = (uintptr_t)srcs[k];
        if (!s) return (int)cudaErrorInvalidValue;
        a.src[k] = static_cast<const char *>(srcs[k]);
        any |= s;
        diff |= s ^ d;
    }
    for (int k = nsrc; k < kMaxSrc; k++) a.src[k] = nullptr;
    if (any & (esz - 1)) return (int)cudaErrorInvalidValue;
    const int vb = common_vec_bytes(diff);
    const Split sp = split_range(d, count, (int)esz, vb);
    a.nvec = sp.nvec;
    a.head = sp.head;
    a.tail = sp.tail;
    a.nsrc = nsrc;
    const void *fn = reduce_fn_dt(dtype, op, vb, nsrc == 2);
    if (!fn) return (int)cudaErrorInvalidValue;
    return launch(fn, grid_for(ctas, sp.nvec, reduce_unroll(vb)), &a, stream);
}

extern "C" int tlmpi_cuda_sm_count(int dev)
{
    if (dev >= 0 && dev < kSmCacheDevs) {
        int n = g_sm_count[dev].load(std::memory_order_relaxed);
        if (n > 0) return n;
    }
    int n = 0;
    if (cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || n < 0) {
        cudaGetLastError();  // the failed query's error is reported by the return value
        return 0;
    }
    if (dev >= 0 && dev < kSmCacheDevs) g_sm_count[dev].store(n, std::memory_order_relaxed);
    return n;
}

extern "C" int tlmpi_cuda_ctas_for(size_t bytes, int sm_count)
{
    const size_t per_cta = 16384;  // one reduce step of one CTA: 256 threads x 4 x 16 B
    size_t max = (size_t)(sm_count > 0 ? sm_count : 1) * kMinCtasPerSm;
    size_t n = bytes / per_cta + (bytes % per_cta != 0);  // no overflow near SIZE_MAX
    if (n < 1) n = 1;
    return (int)(n < max ? n : max);
}
