// common.cuh: device building blocks of tlmpi's kernels (CUDA C++ only; C code sees kernels.h).
//
//  * Element traits Dt<TLMPI_DT_x>: the device storage type of every tlmpi element type (f16 and
//    bf16 are held as their 16-bit patterns) and its accumulator (float for f16/bf16), checked
//    against cuda/types.h at compile time.
//  * Reduction functors Sum/Prod/Min/Max. Integers wrap (they are computed in the unsigned type of
//    at least int width, i.e. modulo 2^bits, which is two's complement wrap for the signed types);
//    floating min/max are fminf/fmaxf/fmin/fmax (tlmpi's host half ops do the same).
//  * Vec<VB>: VB-byte vectors (16 = uint4 = one ld.global.v4 / st.global.v4), loads and stores of
//    them (plain or with cache hints), and Pack/Accum: one vector of elements reduced element-wise
//    (packed SIMD for 8/16-bit integer sum/min/max, float lanes for f16/bf16).
//  * Split: the head / vector body / tail split of a range whose pointers are congruent modulo
//    VB, and the grid-stride helper that walks the body UNROLL vectors per thread per step.
#ifndef TLMPI_CUDA_COMMON_CUH
#define TLMPI_CUDA_COMMON_CUH

#include "types.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>
#include <type_traits>
#include <utility>

namespace tlmpi {

// ---------------------------------------------------------------------------------------------
// Element traits
// ---------------------------------------------------------------------------------------------
struct F16 { uint16_t bits; };   // IEEE binary16 pattern
struct BF16 { uint16_t bits; };  // bfloat16 pattern

template <int DT> struct Dt { static constexpr bool defined = false; };
#define TLMPI_DT_TRAIT(e, ty, acc)                                                               \
    template <> struct Dt<e> {                                                                   \
        static constexpr bool defined = true;                                                    \
        using T = ty;                                                                            \
        using Acc = acc;                                                                         \
    };
TLMPI_DT_TRAIT(TLMPI_DT_I8, int8_t, int8_t)
TLMPI_DT_TRAIT(TLMPI_DT_U8, uint8_t, uint8_t)
TLMPI_DT_TRAIT(TLMPI_DT_I16, int16_t, int16_t)
TLMPI_DT_TRAIT(TLMPI_DT_U16, uint16_t, uint16_t)
TLMPI_DT_TRAIT(TLMPI_DT_I32, int32_t, int32_t)
TLMPI_DT_TRAIT(TLMPI_DT_U32, uint32_t, uint32_t)
TLMPI_DT_TRAIT(TLMPI_DT_I64, int64_t, int64_t)
TLMPI_DT_TRAIT(TLMPI_DT_U64, uint64_t, uint64_t)
TLMPI_DT_TRAIT(TLMPI_DT_F16, F16, float)
TLMPI_DT_TRAIT(TLMPI_DT_BF16, BF16, float)
TLMPI_DT_TRAIT(TLMPI_DT_F32, float, float)
TLMPI_DT_TRAIT(TLMPI_DT_F64, double, double)
#undef TLMPI_DT_TRAIT

// cuda/types.h and the traits agree: one trait per arithmetic type, none beyond, same sizes.
template <int... D> constexpr bool traits_match(std::integer_sequence<int, D...>)
{
    return ((Dt<D>::defined && sizeof(typename Dt<D>::T) == TLMPI_DT_ELEM_SIZE(D)) && ...);
}
static_assert(traits_match(std::make_integer_sequence<int, TLMPI_DT_NUM_ARITH>()),
              "Dt<> traits vs TLMPI_DT_ELEM_SIZE (cuda/types.h)");
static_assert(!Dt<TLMPI_DT_NUM_ARITH>::defined, "a trait beyond TLMPI_DT_NUM_ARITH");
#define TLMPI_DT__SIZE_CHECK(e, bytes, ctype) static_assert(sizeof(typename Dt<e>::T) == (bytes), #e);
TLMPI_DT_ARITH_TABLE(TLMPI_DT__SIZE_CHECK)
#undef TLMPI_DT__SIZE_CHECK
static_assert(TLMPI_OP_NUM_ARITH == 4, "Sum, Prod, Min, Max below");

// element <-> accumulator
template <typename T> __device__ __forceinline__ T to_acc(T v) { return v; }
__device__ __forceinline__ float to_acc(F16 v) { return __half2float(__ushort_as_half(v.bits)); }
__device__ __forceinline__ float to_acc(BF16 v) { return __bfloat162float(__ushort_as_bfloat16(v.bits)); }
template <typename T> __device__ __forceinline__ T from_acc(T v) { return v; }
template <typename T, typename A>
__device__ __forceinline__ std::enable_if_t<std::is_same<T, F16>::value, T> from_acc(A v)
{
    return F16{ __half_as_ushort(__float2half_rn(v)) };
}
template <typename T, typename A>
__device__ __forceinline__ std::enable_if_t<std::is_same<T, BF16>::value, T> from_acc(A v)
{
    return BF16{ __bfloat16_as_ushort(__float2bfloat16_rn(v)) };
}

// ---------------------------------------------------------------------------------------------
// Reduction functors (on accumulator values)
// ---------------------------------------------------------------------------------------------
// unsigned type of at least int width: no promotion to signed int, no signed overflow
template <typename A> using Wide = std::conditional_t<(sizeof(A) < sizeof(unsigned)), unsigned, std::make_unsigned_t<A>>;

struct Sum {
    template <typename A> __device__ static __forceinline__ std::enable_if_t<std::is_integral<A>::value, A> apply(A a, A b)
    {
        return (A)((Wide<A>)a + (Wide<A>)b);
    }
    __device__ static __forceinline__ float apply(float a, float b) { return __fadd_rn(a, b); }
    __device__ static __forceinline__ double apply(double a, double b) { return __dadd_rn(a, b); }
};
struct Prod {
    template <typename A> __device__ static __forceinline__ std::enable_if_t<std::is_integral<A>::value, A> apply(A a, A b)
    {
        return (A)((Wide<A>)a * (Wide<A>)b);
    }
    __device__ static __forceinline__ float apply(float a, float b) { return __fmul_rn(a, b); }
    __device__ static __forceinline__ double apply(double a, double b) { return __dmul_rn(a, b); }
};
struct Min {
    template <typename A> __device__ static __forceinline__ std::enable_if_t<std::is_integral<A>::value, A> apply(A a, A b)
    {
        return b < a ? b : a;
    }
    __device__ static __forceinline__ float apply(float a, float b) { return fminf(a, b); }
    __device__ static __forceinline__ double apply(double a, double b) { return fmin(a, b); }
};
struct Max {
    template <typename A> __device__ static __forceinline__ std::enable_if_t<std::is_integral<A>::value, A> apply(A a, A b)
    {
        return b > a ? b : a;
    }
    __device__ static __forceinline__ float apply(float a, float b) { return fmaxf(a, b); }
    __device__ static __forceinline__ double apply(double a, double b) { return fmax(a, b); }
};

// ---------------------------------------------------------------------------------------------
// Vectors: VB bytes, loaded and stored as one access (VB = 16: ld.global.v4.u32 / st.global.v4)
// ---------------------------------------------------------------------------------------------
template <int VB> struct VecT;
template <> struct VecT<16> { using type = uint4; };
template <> struct VecT<8> { using type = uint2; };
template <> struct VecT<4> { using type = uint32_t; };
template <> struct VecT<2> { using type = uint16_t; };
template <> struct VecT<1> { using type = uint8_t; };
template <int VB> using Vec = typename VecT<VB>::type;

// Plain loads/stores are what the kernels use: the compiler sees them as memory accesses, so a
// load is never moved past a store to the same address (dst may alias a source).
template <int VB> __device__ __forceinline__ Vec<VB> load(const char *p) { return *reinterpret_cast<const Vec<VB> *>(p); }
template <int VB> __device__ __forceinline__ void store(char *p, Vec<VB> v) { *reinterpret_cast<Vec<VB> *>(p) = v; }

// Cache-hinted 16-byte accesses for callers that want them: .cs (evict first, data used once)
// and .L1::no_allocate loads. The "memory" clobber keeps them ordered with other accesses.
__device__ __forceinline__ uint4 load16_cs(const void *p)
{
    uint4 v;
    asm volatile("ld.global.cs.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ uint4 load16_noalloc(const void *p)
{
    uint4 v;
    asm volatile("ld.global.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ void store16_cs(void *p, uint4 v)
{
    asm volatile("st.global.cs.v4.u32 [%0], {%1,%2,%3,%4};" :: "l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
}

// One vector seen as elements (type punning through a union, as CUDA's own headers do).
template <typename T, int VB> union Pack {
    static_assert(VB % sizeof(T) == 0, "vector of whole elements");
    static constexpr int N = VB / (int)sizeof(T);
    Vec<VB> v;
    T e[N];
    uint32_t w[VB >= 4 ? VB / 4 : 1];
};

// Packed SIMD forms of 8/16-bit integer sum/min/max on 32-bit words (ok = false: element-wise).
template <typename T, typename Op> struct Simd { static constexpr bool ok = false; };
#define TLMPI_SIMD(T, Op, fn)                                                                    \
    template <> struct Simd<T, Op> {                                                             \
        static constexpr bool ok = true;                                                         \
        __device__ static __forceinline__ uint32_t apply(uint32_t a, uint32_t b) { return fn(a, b); } \
    };
TLMPI_SIMD(int8_t, Sum, __vadd4) TLMPI_SIMD(uint8_t, Sum, __vadd4)
TLMPI_SIMD(int8_t, Min, __vmins4) TLMPI_SIMD(uint8_t, Min, __vminu4)
TLMPI_SIMD(int8_t, Max, __vmaxs4) TLMPI_SIMD(uint8_t, Max, __vmaxu4)
TLMPI_SIMD(int16_t, Sum, __vadd2) TLMPI_SIMD(uint16_t, Sum, __vadd2)
TLMPI_SIMD(int16_t, Min, __vmins2) TLMPI_SIMD(uint16_t, Min, __vminu2)
TLMPI_SIMD(int16_t, Max, __vmaxs2) TLMPI_SIMD(uint16_t, Max, __vmaxu2)
#undef TLMPI_SIMD

// Accumulator of one vector: init(first source), add(next source) in source order, get().
// Types whose accumulator is the element type reduce in place in the packed vector; f16/bf16
// keep float lanes and round once in get().
template <typename T, typename Op, int VB> struct AccumSame {
    Pack<T, VB> p;
    __device__ __forceinline__ void init(Vec<VB> v) { p.v = v; }
    __device__ __forceinline__ void add(Vec<VB> v)
    {
        Pack<T, VB> q;
        q.v = v;
        if constexpr (Simd<T, Op>::ok && VB >= 4) {
#pragma unroll
            for (int i = 0; i < VB / 4; i++) p.w[i] = Simd<T, Op>::apply(p.w[i], q.w[i]);
        } else {
#pragma unroll
            for (int i = 0; i < Pack<T, VB>::N; i++) p.e[i] = Op::apply(p.e[i], q.e[i]);
        }
    }
    __device__ __forceinline__ Vec<VB> get() const { return p.v; }
};

template <typename T, typename Op, int VB> struct AccumFloat {
    static constexpr int N = Pack<T, VB>::N;
    float f[N];
    __device__ __forceinline__ void init(Vec<VB> v)
    {
        Pack<T, VB> q;
        q.v = v;
#pragma unroll
        for (int i = 0; i < N; i++) f[i] = to_acc(q.e[i]);
    }
    __device__ __forceinline__ void add(Vec<VB> v)
    {
        Pack<T, VB> q;
        q.v = v;
#pragma unroll
        for (int i = 0; i < N; i++) f[i] = Op::apply(f[i], to_acc(q.e[i]));
    }
    __device__ __forceinline__ Vec<VB> get() const
    {
        Pack<T, VB> q;
#pragma unroll
        for (int i = 0; i < N; i++) q.e[i] = from_acc<T>(f[i]);
        return q.v;
    }
};

template <int DT, typename Op, int VB>
using AccumFor = std::conditional_t<std::is_same<typename Dt<DT>::Acc, typename Dt<DT>::T>::value,
                                    AccumSame<typename Dt<DT>::T, Op, VB>, AccumFloat<typename Dt<DT>::T, Op, VB>>;

// ---------------------------------------------------------------------------------------------
// Alignment split and grid-stride walk
// ---------------------------------------------------------------------------------------------
// The widest vector (16, 8, 4, 2 or 1 bytes) in which every pointer whose address bits were
// XORed into `diff` is congruent to the others, i.e. the lowest set bit of diff (capped at 16).
__host__ __device__ inline int common_vec_bytes(uintptr_t diff)
{
    return (diff & 1) ? 1 : (diff & 2) ? 2 : (diff & 4) ? 4 : (diff & 8) ? 8 : 16;
}

// [0, n) units of `unit` bytes starting at address `base` (all pointers congruent modulo VB):
// head units up to the first VB boundary, nvec whole vectors, tail units after them.
struct Split {
    uint32_t head, tail;  // < VB / unit each
    size_t nvec;
};
__host__ __device__ inline Split split_range(uintptr_t base, size_t n, int unit, int vb)
{
    Split s;
    size_t per = (size_t)(vb / unit);
    size_t h = ((size_t)vb - (base & (size_t)(vb - 1))) & (size_t)(vb - 1);
    h /= (size_t)unit;
    if (h > n) h = n;
    s.head = (uint32_t)h;
    s.nvec = (n - h) / per;
    s.tail = (uint32_t)(n - h - s.nvec * per);
    return s;
}

// Grid-stride walk over nvec vectors, UNROLL per thread per step: step(i0, stride, full) gets
// the thread's first vector index i0 of the step and the distance between its UNROLL vectors
// (blockDim.x, so that a warp's accesses of one unrolled slot are contiguous); full, a
// std::true_type or std::false_type, says at compile time whether all UNROLL indices are < nvec
// (otherwise step checks i0 + u * stride < nvec itself).
template <int UNROLL, typename F> __device__ __forceinline__ void grid_stride(size_t nvec, F &&step)
{
    const size_t bd = blockDim.x;
    const size_t chunk = bd * UNROLL;
    const size_t gstride = chunk * gridDim.x;
    size_t i = (size_t)blockIdx.x * chunk + threadIdx.x;
    for (; i + (UNROLL - 1) * bd < nvec; i += gstride) step(i, bd, std::true_type());
    if (i < nvec) step(i, bd, std::false_type());
}

constexpr int kThreads = 256;      // threads per CTA of the copy/reduce kernels
constexpr int kMinCtasPerSm = 4;   // __launch_bounds__: <= 64 registers, 4 CTAs (1024 threads) per SM

// local.cu's kernels (copy, reduce) into fns, at most max; the count (preload.cu loads them)
int local_kernels(const void **fns, int max);
// devcomm.cu's kernel (the LSA pointers of a devcomm's window), nullptr where it is not built
const void *devcomm_kernel();

}  // namespace tlmpi

#endif
