// Element-wise reduction kernels for every tlmpi element type x {sum, prod, min, max}.
//
// These are the building blocks the later intra-node algorithms reuse (reduce-scatter pull,
// one-shot / two-shot allreduce). Launch: grid-stride loop, 256 threads per CTA, at most
// 4 CTAs per SM worth of blocks; no inter-CTA synchronisation. Half types reduce in float
// and round once (same as tlmpi's host ops), so device and host paths agree bitwise for one
// pairwise step.
#include "kernels.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

namespace {

// Must match tlmpi_dtype_t / tlmpi_op_t in src/dtype.h.
enum { DT_I8, DT_U8, DT_I16, DT_U16, DT_I32, DT_U32, DT_I64, DT_U64, DT_F16, DT_BF16, DT_F32, DT_F64, DT_NUM };
enum { OP_SUM, OP_PROD, OP_MIN, OP_MAX, OP_NUM };

template <typename T> struct Acc { using type = T; };
template <> struct Acc<__half> { using type = float; };
template <> struct Acc<__nv_bfloat16> { using type = float; };

template <typename T> __device__ __forceinline__ typename Acc<T>::type load(T v) { return v; }
template <> __device__ __forceinline__ float load<__half>(__half v) { return __half2float(v); }
template <> __device__ __forceinline__ float load<__nv_bfloat16>(__nv_bfloat16 v) { return __bfloat162float(v); }
template <typename T> __device__ __forceinline__ T store(typename Acc<T>::type v) { return (T)v; }
template <> __device__ __forceinline__ __half store<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 store<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

template <int OP> struct Fn;
template <> struct Fn<OP_SUM> { template <typename A> __device__ static A apply(A a, A b) { return a + b; } };
template <> struct Fn<OP_PROD> { template <typename A> __device__ static A apply(A a, A b) { return a * b; } };
template <> struct Fn<OP_MIN> {
    template <typename A> __device__ static A apply(A a, A b) { return b < a ? b : a; }
    __device__ static float apply(float a, float b) { return fminf(a, b); }
    __device__ static double apply(double a, double b) { return fmin(a, b); }
};
template <> struct Fn<OP_MAX> {
    template <typename A> __device__ static A apply(A a, A b) { return b > a ? b : a; }
    __device__ static float apply(float a, float b) { return fmaxf(a, b); }
    __device__ static double apply(double a, double b) { return fmax(a, b); }
};

constexpr int kMaxSrc = 16;
struct Srcs { const void *p[kMaxSrc]; };

template <typename T, int OP>
__global__ void __launch_bounds__(256) reduce_kernel(T *dst, Srcs srcs, int nsrc, int dst_is_src, size_t n)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        typename Acc<T>::type acc = dst_is_src ? load(dst[i]) : load(static_cast<const T *>(srcs.p[0])[i]);
        for (int k = dst_is_src ? 0 : 1; k < nsrc; k++) {
            acc = Fn<OP>::apply(acc, load(static_cast<const T *>(srcs.p[k])[i]));
        }
        dst[i] = store<T>(acc);
    }
}

template <typename T, int OP>
cudaError_t launch_t(void *dst, const Srcs &s, int nsrc, int dst_is_src, size_t n, cudaStream_t st)
{
    int dev = 0, sms = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    size_t blocks = (n + 255) / 256;
    size_t cap = (size_t)(sms > 0 ? sms : 1) * 4;
    if (blocks > cap) blocks = cap;
    if (blocks == 0) return cudaSuccess;
    reduce_kernel<T, OP><<<(unsigned)blocks, 256, 0, st>>>(static_cast<T *>(dst), s, nsrc, dst_is_src, n);
    return cudaGetLastError();
}

template <typename T>
cudaError_t launch_op(int op, void *dst, const Srcs &s, int nsrc, int dis, size_t n, cudaStream_t st)
{
    switch (op) {
    case OP_SUM: return launch_t<T, OP_SUM>(dst, s, nsrc, dis, n, st);
    case OP_PROD: return launch_t<T, OP_PROD>(dst, s, nsrc, dis, n, st);
    case OP_MIN: return launch_t<T, OP_MIN>(dst, s, nsrc, dis, n, st);
    case OP_MAX: return launch_t<T, OP_MAX>(dst, s, nsrc, dis, n, st);
    }
    return cudaErrorInvalidValue;
}

cudaError_t launch(int dt, int op, void *dst, const Srcs &s, int nsrc, int dis, size_t n, cudaStream_t st)
{
    switch (dt) {
    case DT_I8: return launch_op<int8_t>(op, dst, s, nsrc, dis, n, st);
    case DT_U8: return launch_op<uint8_t>(op, dst, s, nsrc, dis, n, st);
    case DT_I16: return launch_op<int16_t>(op, dst, s, nsrc, dis, n, st);
    case DT_U16: return launch_op<uint16_t>(op, dst, s, nsrc, dis, n, st);
    case DT_I32: return launch_op<int32_t>(op, dst, s, nsrc, dis, n, st);
    case DT_U32: return launch_op<uint32_t>(op, dst, s, nsrc, dis, n, st);
    case DT_I64: return launch_op<long long>(op, dst, s, nsrc, dis, n, st);
    case DT_U64: return launch_op<unsigned long long>(op, dst, s, nsrc, dis, n, st);
    case DT_F16: return launch_op<__half>(op, dst, s, nsrc, dis, n, st);
    case DT_BF16: return launch_op<__nv_bfloat16>(op, dst, s, nsrc, dis, n, st);
    case DT_F32: return launch_op<float>(op, dst, s, nsrc, dis, n, st);
    case DT_F64: return launch_op<double>(op, dst, s, nsrc, dis, n, st);
    }
    return cudaErrorInvalidValue;
}

}  // namespace

extern "C" int tlmpi_cuda_reduce_supported(int dtype, int op)
{
    return dtype >= 0 && dtype < DT_NUM && op >= 0 && op < OP_NUM;
}

extern "C" int tlmpi_cuda_reduce(void *dst, const void *src, size_t count, int dtype, int op, void *stream)
{
    Srcs s = {};
    s.p[0] = src;
    return (int)launch(dtype, op, dst, s, 1, 1, count, static_cast<cudaStream_t>(stream));
}

extern "C" int tlmpi_cuda_reduce_multi(void *dst, const void *const *srcs, int nsrc, size_t count, int dtype,
                                       int op, void *stream)
{
    Srcs s = {};
    if (nsrc < 1 || nsrc > kMaxSrc) return (int)cudaErrorInvalidValue;
    for (int k = 0; k < nsrc; k++) s.p[k] = srcs[k];
    return (int)launch(dtype, op, dst, s, nsrc, 0, count, static_cast<cudaStream_t>(stream));
}
