// devcomm.cu: what the devcomm transport (NCCL Device API; host side src/transport/devcomm.c) needs
// from device code: the layouts of the NCCL Device API structures of the headers the kernels were
// compiled against, and the window's LSA (and multicast) addresses, which only device code can read
// (ncclGetLsaPointer / ncclGetLsaMultimemPointer). The node kernels then run on those addresses
// exactly as on CUDA-IPC mappings (transport_ipc.cuh), or with multimem (transport_nvls.cuh) when
// the devcomm has a multicast mapping.
//
// Algorithm / launch shape / sync: one single-thread kernel at setup, waited for; nothing per call.
//
// Built without nccl_device.h (no NCCL Device API in the headers): tlmpi_cuda_devcomm_version()
// returns 0 and the transport is unavailable.
#include "kernels.h"

#include <cuda_runtime.h>
#include <string.h>

#if __has_include(<nccl_device.h>)
#include <nccl.h>
// NCCL's device headers have unused parameters (host compiler -Wextra)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include <nccl_device.h>
#pragma GCC diagnostic pop
#define TLMPI_HAVE_NCCL_DEVICE 1
// GIN in the Device API's structures (ginSignalCount, ginContextCount): checked with 2.28.9's headers;
// 2.28.3's have none
#if defined(NCCL_VERSION_CODE) && NCCL_VERSION_CODE >= NCCL_VERSION(2, 28, 9)
#define TLMPI_HAVE_NCCL_GIN 1
#endif
#endif

#ifdef TLMPI_HAVE_NCCL_DEVICE
namespace {

// the headers' defaults (2.29+: an initializer with size/magic/version), else all zero
ncclDevCommRequirements reqs_init()
{
#ifdef NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER
    ncclDevCommRequirements r = NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER;
#else
    ncclDevCommRequirements r;
    memset(&r, 0, sizeof(r));
#endif
    return r;
}

__global__ void lsa_pointers(const ncclDevComm dc, ncclWindow_t win, int n, int want_mc, void **out)
{
    for (int q = 0; q < n; q++) out[q] = ncclGetLsaPointer(win, 0, q);
    out[n] = want_mc ? ncclGetLsaMultimemPointer(win, 0, dc) : nullptr;
}

}  // namespace
#endif

namespace tlmpi {
// this file's kernel, for preload.cu (nullptr where the NCCL Device API is not built)
const void *devcomm_kernel()
{
#ifdef TLMPI_HAVE_NCCL_DEVICE
    return (const void *)lsa_pointers;
#else
    return nullptr;
#endif
}
}  // namespace tlmpi

extern "C" int tlmpi_cuda_devcomm_gin_built(void)
{
#ifdef TLMPI_HAVE_NCCL_GIN
    return 1;
#else
    return 0;
#endif
}

extern "C" int tlmpi_cuda_devcomm_version(void)
{
#ifdef TLMPI_HAVE_NCCL_DEVICE
    return NCCL_VERSION_CODE;
#else
    return 0;
#endif
}

extern "C" size_t tlmpi_cuda_devcomm_sizes(size_t *reqs_size)
{
#ifdef TLMPI_HAVE_NCCL_DEVICE
    if (reqs_size) *reqs_size = sizeof(ncclDevCommRequirements);
    return sizeof(ncclDevComm);
#else
    if (reqs_size) *reqs_size = 0;
    return 0;
#endif
}

extern "C" void tlmpi_cuda_devcomm_requirements(void *reqs, int want_mc)
{
#ifdef TLMPI_HAVE_NCCL_DEVICE
    // no GIN (ginForceEnable, signals and counters stay 0: GIN would need an RDMA NIC), no NCCL
    // barriers (tlmpi's own bounded flag barriers live in the pool's header)
    ncclDevCommRequirements r = reqs_init();
    r.lsaMultimem = want_mc != 0;
    memcpy(reqs, &r, sizeof(r));
#else
    (void)reqs;
    (void)want_mc;
#endif
}

extern "C" void tlmpi_cuda_devcomm_gin_requirements(void *reqs, int signals)
{
#ifdef TLMPI_HAVE_NCCL_GIN
    // GIN signals through the top-level count (the resource-list route drops them up to 2.30.7),
    // no counters, no NCCL barriers, no multicast; ginContextCount is a hint (ignored by 2.28.9):
    // the granted count is read back from the devcomm
    ncclDevCommRequirements r = reqs_init();
    r.ginContextCount = 4;
    r.ginSignalCount = signals;
    memcpy(reqs, &r, sizeof(r));
#else
    (void)reqs;
    (void)signals;
#endif
}

extern "C" int tlmpi_cuda_devcomm_gin_contexts(const void *devcomm)
{
#ifdef TLMPI_HAVE_NCCL_GIN
    return (int)static_cast<const ncclDevComm *>(devcomm)->ginContextCount;
#else
    (void)devcomm;
    return 0;
#endif
}

extern "C" int tlmpi_cuda_devcomm_gin_proxy(const void *devcomm)
{
#ifdef TLMPI_HAVE_NCCL_GIN
    const ncclDevComm *d = static_cast<const ncclDevComm *>(devcomm);
    const int cap = (int)(sizeof(d->ginTypes) / sizeof(d->ginTypes[0]));
    const int n = d->ginContextCount < cap ? d->ginContextCount : cap;
    if (n <= 0) return -1;
    for (int i = 0; i < n; i++)
        if (d->ginTypes[i] != NCCL_NET_DEVICE_GIN_PROXY) return 0;
    return 1;
#else
    (void)devcomm;
    return -1;
#endif
}

extern "C" void tlmpi_cuda_devcomm_lsa(const void *devcomm, int *rank_p, int *size_p)
{
#ifdef TLMPI_HAVE_NCCL_DEVICE
    const ncclDevComm *dc = static_cast<const ncclDevComm *>(devcomm);
    *rank_p = dc->lsaRank;
    *size_p = dc->lsaSize;
#else
    (void)devcomm;
    *rank_p = -1;
    *size_p = 0;
#endif
}

extern "C" int tlmpi_cuda_devcomm_pointers(const void *devcomm, void *win, int lsa_size, int want_mc, tlmpi_node_xport_t *x)
{
#ifdef TLMPI_HAVE_NCCL_DEVICE
    if (!devcomm || !win || !x || lsa_size < 1 || lsa_size > TLMPI_NODE_MAX_RANKS) return (int)cudaErrorInvalidValue;
    void **d = nullptr;
    void *h[TLMPI_NODE_MAX_RANKS + 1];
    cudaError_t e = cudaMalloc(&d, sizeof(h));
    if (e != cudaSuccess) return (int)e;
    ncclDevComm dc;
    memcpy(&dc, devcomm, sizeof(dc));
    lsa_pointers<<<1, 1>>>(dc, static_cast<ncclWindow_t>(win), lsa_size, want_mc, d);
    e = cudaGetLastError();
    if (e == cudaSuccess) e = cudaMemcpy(h, d, sizeof(void *) * (size_t)(lsa_size + 1), cudaMemcpyDeviceToHost);
    cudaFree(d);
    if (e != cudaSuccess) return (int)e;
    for (int q = 0; q < lsa_size; q++) x->base[q] = h[q];
    x->mc_base = h[lsa_size];
    return 0;
#else
    (void)devcomm;
    (void)win;
    (void)lsa_size;
    (void)want_mc;
    (void)x;
    return (int)cudaErrorNotSupported;
#endif
}
