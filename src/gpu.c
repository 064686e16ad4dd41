#include "config.h"
#include "gpu.h"
#include "log.h"

#ifdef HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

static int gpu_count = -1;
static const char *gpu_why = "not probed";

int tlmpi_gpu_probe(const char **why_p)
{
    if (gpu_count < 0) {
#ifdef HAVE_CUDA
        int n = 0;
        cudaError_t e = cudaGetDeviceCount(&n);

        if (e != cudaSuccess) {
            (void)cudaGetLastError();
            gpu_why = e == cudaErrorInsufficientDriver ? "no CUDA driver" :
                      e == cudaErrorNoDevice ? "no CUDA device" : cudaGetErrorString(e);
            n = 0;
        } else {
            gpu_why = n ? "ok" : "no CUDA device";
        }
        gpu_count = n;
#else
        gpu_count = 0;
        gpu_why = "built without CUDA";
#endif
    }
    if (why_p) {
        *why_p = gpu_why;
    }
    return gpu_count;
}

void tlmpi_gpu_versions(int *runtime_p, int *driver_p)
{
    *runtime_p = *driver_p = 0;
#ifdef HAVE_CUDA
    if (cudaRuntimeGetVersion(runtime_p) != cudaSuccess) {
        *runtime_p = 0;
    }
    if (cudaDriverGetVersion(driver_p) != cudaSuccess) {
        *driver_p = 0;
    }
    (void)cudaGetLastError();
#endif
}

int tlmpi_gpu_current_device(void)
{
#ifdef HAVE_CUDA
    int d;

    if (tlmpi_gpu_probe(NULL) > 0 && cudaGetDevice(&d) == cudaSuccess) {
        return d;
    }
    (void)cudaGetLastError();
#endif
    return -1;
}

int tlmpi_gpu_pci_bus_id(int dev, char *buf, int len)
{
#ifdef HAVE_CUDA
    if (dev >= 0 && cudaDeviceGetPCIBusId(buf, len, dev) == cudaSuccess) {
        return 0;
    }
    (void)cudaGetLastError();
#endif
    if (len > 0) {
        buf[0] = '\0';
    }
    return -1;
}

tlmpi_mem_type_t tlmpi_gpu_mem_type(const void *p, int *dev_p)
{
    *dev_p = -1;
#ifdef HAVE_CUDA
    struct cudaPointerAttributes a;

    if (p == NULL || gpu_count <= 0) {
        return TLMPI_MEM_HOST;
    }
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
        (void)cudaGetLastError();
        return TLMPI_MEM_HOST;
    }
    switch (a.type) {
    case cudaMemoryTypeDevice:  *dev_p = a.device; return TLMPI_MEM_DEVICE;
    case cudaMemoryTypeManaged: *dev_p = a.device; return TLMPI_MEM_MANAGED;
    case cudaMemoryTypeHost:    return TLMPI_MEM_PINNED;
    default:                    return TLMPI_MEM_HOST;
    }
#else
    (void)p;
    return TLMPI_MEM_HOST;
#endif
}
