// node_kernels.cuh: how cuda/node.cu (the launchers) finds the node algorithms' kernels, one
// lookup per algorithm file (cuda/node_*.cu), and the dtype x op table the reduction files
// instantiate.
#ifndef TLMPI_CUDA_NODE_KERNELS_CUH
#define TLMPI_CUDA_NODE_KERNELS_CUH

#include "node.cuh"

namespace tlmpi {
namespace node {

// CTAs per SM the registers must allow (__launch_bounds__): 2 x 512 threads.
constexpr int kMinBlocks = 2;

// Kernel variants of the pool algorithms: over the IPC transport with one column per CTA; over the
// NVLS transport (transport_nvls.cuh) where one exists for the pair (nvls_has; allgather: push; else
// the IPC kernel); over the IPC transport with several columns per CTA (node.cuh: node_columns).
enum Variant { kIpc = 0, kNvls = 1, kIpcCols = 2, kLayout = 3 };  // kLayout: the LL kinds with a sibling's layout
const void *allgather_fn(int kind, int v);                  // node_allgather.cu: push, pull
const void *reduce_scatter_fn(int dtype, int op, int v);    // node_reduce_scatter.cu
const void *allreduce_oneshot_fn(int dtype, int op, int v); // node_allreduce_oneshot.cu
const void *allreduce_twoshot_fn(int dtype, int op, int v); // node_allreduce_twoshot.cu
const void *ll_fn(int kind, int dtype, int op, bool layout = false); // node_ll.cu: the three LL kinds (layout: the siblings' variant)
const void *barrier_fn();                                       // node.cu
const void *direct_fn(int kind, int dtype, int op);             // node_direct.cu: the zero-copy kinds
const void *exchange_fn(int kind, int v);                       // node_exchange.cu: the siblings' copies

template <typename Op> constexpr int op_id();
template <> constexpr int op_id<Sum>() { return TLMPI_OP_SUM; }
template <> constexpr int op_id<Prod>() { return TLMPI_OP_PROD; }
template <> constexpr int op_id<Min>() { return TLMPI_OP_MIN; }
template <> constexpr int op_id<Max>() { return TLMPI_OP_MAX; }

// Kernel lookup over every dtype x op: K<DT, Op>::fn(v) gives the kernel of variant v.
template <template <int, typename> class K> const void *lookup_dt_op(int dt, int op, int v)
{
#define TLMPI_NODE_OPS(DT)                                                                       \
    switch (op) {                                                                                \
    case TLMPI_OP_SUM: return K<DT, Sum>::fn(v);                                                 \
    case TLMPI_OP_PROD: return K<DT, Prod>::fn(v);                                               \
    case TLMPI_OP_MIN: return K<DT, Min>::fn(v);                                                 \
    case TLMPI_OP_MAX: return K<DT, Max>::fn(v);                                                 \
    }                                                                                            \
    return nullptr;
    switch (dt) {
    case TLMPI_DT_I8: { TLMPI_NODE_OPS(TLMPI_DT_I8) }
    case TLMPI_DT_U8: { TLMPI_NODE_OPS(TLMPI_DT_U8) }
    case TLMPI_DT_I16: { TLMPI_NODE_OPS(TLMPI_DT_I16) }
    case TLMPI_DT_U16: { TLMPI_NODE_OPS(TLMPI_DT_U16) }
    case TLMPI_DT_I32: { TLMPI_NODE_OPS(TLMPI_DT_I32) }
    case TLMPI_DT_U32: { TLMPI_NODE_OPS(TLMPI_DT_U32) }
    case TLMPI_DT_I64: { TLMPI_NODE_OPS(TLMPI_DT_I64) }
    case TLMPI_DT_U64: { TLMPI_NODE_OPS(TLMPI_DT_U64) }
    case TLMPI_DT_F16: { TLMPI_NODE_OPS(TLMPI_DT_F16) }
    case TLMPI_DT_BF16: { TLMPI_NODE_OPS(TLMPI_DT_BF16) }
    case TLMPI_DT_F32: { TLMPI_NODE_OPS(TLMPI_DT_F32) }
    case TLMPI_DT_F64: { TLMPI_NODE_OPS(TLMPI_DT_F64) }
    }
#undef TLMPI_NODE_OPS
    return nullptr;
}

// Reduce one piece [lo, hi) (relative offsets; the message's tail, whole elements, element-wise):
// out[i] = reduce over ranks of (pool offset poff + i on each rank; this rank: in[i]); then
// store(i, v) also gets each result vector (twoshot: into the peers' pools).
template <int DT, typename Op, class X, class Extra>
__device__ __forceinline__ void reduce_piece(const X &t, const char *in, char *out, size_t poff, size_t lo, size_t hi,
                                             const Extra &extra)
{
    using T = typename Dt<DT>::T;
    constexpr int E = (int)sizeof(T);
    using Acc = AccumFor<DT, Op, 16>;
    using AccE = AccumFor<DT, Op, E>;
    const int ua_i = ua_of(in), ua_o = ua_of(out);
    const size_t nvec = (hi - lo) / 16;
    const size_t bd = blockDim.x;
    size_t i = threadIdx.x;
    // one vector per thread and pass, load-reduced over the ranks in groups of loads in flight
    // together (transport); more vectors per pass spill registers under the 64-register bound
    for (; i < nvec; i += bd) {
        const size_t b = lo + i * 16;
        const uint4 v = t.template mc_load_reduce<Acc>(poff + b, ld_user(in + b, ua_i));
        st_user(out + b, v, ua_o);
        extra.vec(poff + b, v);
    }
    const size_t t0 = lo + nvec * 16;
    if (threadIdx.x * E < hi - t0) {
        const size_t b = t0 + threadIdx.x * E;
        const Vec<E> v = t.template mc_load_reduce_e<AccE, E>(poff + b, ld_user_e<E>(in + b, ua_i));
        st_user_e<E>(out + b, v, ua_o);
        extra.template elem<E>(poff + b, v);
    }
}

// The launch's columns (kernels.h: tlmpi_node_args_t.cols; 0: one per CTA) into its parameters; false
// when they are not 1..TLMPI_NODE_MAX_CTAS and at least a->ctas, or differ from it where the kind
// needs one column per CTA (`one_per_cta`: the LL kinds map lines to the grid's threads).
inline bool cols_in(const tlmpi_node_args_t *a, Params *p, bool one_per_cta)
{
    const int c = a->cols ? a->cols : a->ctas;
    if (c < a->ctas || c > kMaxCtas || (one_per_cta && c != a->ctas)) return false;
    p->cols = (unsigned)c;
    return true;
}

// The launch's completion word (kernels.h: tlmpi_node_args_t.done_word) into its parameters: the
// kinds whose kernels end in node_exit take it (`takes`), the others clear a->done_word. After a
// successful launch that takes it, done_commit advances the communicator's running CTA total.
inline void done_in(tlmpi_node_args_t *a, Params *p, bool takes)
{
    if (!takes) a->done_word = nullptr;
    p->done_word = static_cast<unsigned *>(a->done_word);
    p->done_value = a->done_value;
    p->done_target = a->done_ctas + (unsigned long long)a->ctas;
}
inline void done_commit(tlmpi_node_args_t *a, const Params &p)
{
    if (a->done_word) a->done_ctas = p.done_target;
}

struct NoExtra {
    __device__ __forceinline__ void vec(size_t, uint4) const {}
    template <int E> __device__ __forceinline__ void elem(size_t, Vec<E>) const {}
};

}  // namespace node
}  // namespace tlmpi

#endif
