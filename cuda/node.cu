// node.cu: launchers of the node kernels (kernels.h). Placeholder until the kernels land.
#include "common.cuh"
#include "kernels.h"

extern "C" int tlmpi_cuda_node_supported(int dtype, int op)
{
    return tlmpi_cuda_reduce_supported(dtype, op);
}

extern "C" int tlmpi_cuda_node_run(const tlmpi_node_xport_t *x, tlmpi_node_args_t *a, void *stream)
{
    (void)x; (void)a; (void)stream;
    return (int)cudaErrorNotSupported;
}

extern "C" int tlmpi_cuda_node_max_ctas(int dev, int ranks_on_gpu)
{
    int sms = tlmpi_cuda_sm_count(dev);
    int n = ranks_on_gpu > 0 ? sms / ranks_on_gpu : sms;
    return n < 1 ? (sms ? 1 : 0) : n > TLMPI_NODE_MAX_CTAS ? TLMPI_NODE_MAX_CTAS : n;
}

extern "C" int tlmpi_cuda_node_ctas_for(int kind, size_t bytes, int nranks, int max_ctas)
{
    (void)kind; (void)nranks;
    size_t n = bytes / 65536 + 1;
    return (int)(n > (size_t)max_ctas ? (size_t)max_ctas : n);
}
