// hier_fused.cu: the launcher of the fused 2D collectives (kernels.h: tlmpi_cuda_rail_run,
// tlmpi_cuda_rail_chunk): checks the descriptor and the call, sizes the steps from the pool, picks the
// kernel of cuda/hier_fused_{allgather,reduce_scatter,allreduce}.cu (emulated or GIN rail), launches
// it, and advances the host's totals of the rail signals and the node barrier epoch. The algorithms,
// the pool layout and the sync rules: cuda/hier_fused.cuh.
#include "hier_fused.cuh"

#include <cstring>

using namespace tlmpi;
using namespace tlmpi::node;
using namespace tlmpi::hier;

extern "C" size_t tlmpi_cuda_rail_chunk(size_t data_bytes, int nnodes, int local_size)
{
    if (nnodes < 1 || local_size < 1) return 0;
    const size_t units = 2 * (size_t)nnodes * (size_t)local_size + 4 * (size_t)nnodes;
    return (data_bytes / units) & ~(size_t)15;
}

extern "C" int tlmpi_cuda_rail_run(const tlmpi_rail_xport_t *x, tlmpi_rail_args_t *a, void *stream)
{
    if (!x || !a || a->ctas < 1 || a->ctas > TLMPI_NODE_MAX_CTAS || a->groups < 1 || a->groups > TLMPI_RAIL_MAX_GROUPS ||
        x->nnodes < 2 || x->nnodes > TLMPI_RAIL_MAX_NODES || x->node_index < 0 || x->node_index >= x->nnodes ||
        x->node.nranks < 1 || x->node.nranks > TLMPI_NODE_MAX_RANKS || x->node.rank < 0 || x->node.rank >= x->node.nranks ||
        a->kind < 0 || a->kind >= TLMPI_RAIL_KIND_COUNT)
        return (int)cudaErrorInvalidValue;
    RailParams p;
    p.x = *x;
    p.in = static_cast<const char *>(a->in);
    p.out = static_cast<char *>(a->out);
    p.kind = a->kind;
    p.groups = a->groups;
    p.epoch = a->epoch;
    p.step0 = a->step;
    memcpy(p.sig, a->sig, sizeof(p.sig));
    size_t elem = 1;
    if (a->kind != TLMPI_RAIL_AG) {
        if (!tlmpi_cuda_node_supported(a->dtype, a->op)) return (int)cudaErrorInvalidValue;
        elem = TLMPI_DT_ELEM_SIZE(a->dtype);
    }
    if (a->count == 0) return 0;
    const int W = x->nnodes * x->node.nranks;
    if (!a->in || !a->out || a->count > ((size_t)-1) / elem / (size_t)W) return (int)cudaErrorInvalidValue;
    p.bytes = a->count * elem;
    p.chunk = tlmpi_cuda_rail_chunk(x->node.data_bytes, x->nnodes, x->node.nranks);
    if (p.chunk < 16) return (int)cudaErrorInvalidValue;
    const size_t per_step = a->kind == TLMPI_RAIL_AR ? (size_t)W * p.chunk : p.chunk;
    const size_t steps = (p.bytes + per_step - 1) / per_step;
    if (steps > (1u << 28)) return (int)cudaErrorInvalidValue;
    p.nsteps = (unsigned)steps;
    const bool gin = x->gin_devcomm != nullptr;
    if (gin) {
        // every context gets the same share of each step's increments (rail_gin.cuh)
        if (x->gin_contexts < 1 || x->gin_contexts > TLMPI_NODE_MAX_CTAS) return (int)cudaErrorInvalidValue;
        a->ctas -= a->ctas % x->gin_contexts;
        if (a->ctas < x->gin_contexts) a->ctas = x->gin_contexts;
    }
    const void *fn = a->kind == TLMPI_RAIL_AG    ? hier::allgather_fn(gin)
                     : a->kind == TLMPI_RAIL_RSB ? hier::reduce_scatter_fn(a->dtype, a->op, gin)
                                                 : hier::allreduce_fn(a->dtype, a->op, gin);
    if (!fn) return (int)(gin ? cudaErrorNotSupported : cudaErrorInvalidValue);
    cudaError_t e;
#ifdef TLMPI_RAIL_GIN
    if (gin) {
        GinParams g;
        g.p = p;
        memcpy(&g.dc, x->gin_devcomm, sizeof(g.dc));
        g.win = static_cast<ncclWindow_t>(x->gin_win);
        g.contexts = x->gin_contexts;
        void *args[1] = { &g };
        e = cudaLaunchKernel(fn, dim3((unsigned)a->ctas), dim3(kNodeThreads), args, 0, static_cast<cudaStream_t>(stream));
    } else
#endif
    {
        void *args[1] = { &p };
        e = cudaLaunchKernel(fn, dim3((unsigned)a->ctas), dim3(kNodeThreads), args, 0, static_cast<cudaStream_t>(stream));
    }
    if (e != cudaSuccess) return (int)e;
    const unsigned long long rail_steps = a->kind == TLMPI_RAIL_AR ? 2ull * p.nsteps : p.nsteps;
    const unsigned long long per = a->kind == TLMPI_RAIL_AG ? 1ull + (unsigned)a->groups
                                   : a->kind == TLMPI_RAIL_RSB ? 1ull : 2ull + (unsigned)a->groups;
    for (unsigned long long t = a->step; t < a->step + rail_steps && t < a->step + 3; t++) {
        // steps t, t + 3, ... share slot t % 3
        const unsigned long long uses = (a->step + rail_steps - t + 2) / 3;
        for (int g = 0; g < a->groups; g++) a->sig[t % 3][g] += uses * (unsigned long long)a->ctas;
    }
    a->step += rail_steps;
    a->epoch += per * p.nsteps;
    return 0;
}
