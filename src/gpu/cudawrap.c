/*
 * cudawrap: the CUDA runtime probe, versions, device switching, and the driver entry points tlmpi
 * needs, reached through cudaGetDriverEntryPointByVersion (libcuda is never linked).
 */
#include "config.h"
#include "cudawrap.h"
#include "log.h"

#include <stdio.h>

#ifdef HAVE_CUDA
#include <cuda.h>
#include <cuda_runtime_api.h>
#endif

static int gpu_count = -1;
static const char *gpu_why = "not probed";

#ifdef HAVE_CUDA
tlmpi_cu_t tlmpi_cu;

void *tlmpi_gpu_driver_entry(const char *sym)
{
    enum cudaDriverEntryPointQueryResult q;
    void *fn = NULL;

    if (cudaGetDriverEntryPointByVersion(sym, &fn, 12000, cudaEnableDefault, &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess) {
        fn = NULL;
    }
    (void)cudaGetLastError();
    return fn;
}

static void load_driver_entry_points(void)
{
    tlmpi_cu.get_range = (tlmpi_cu_get_range_fn_t)tlmpi_gpu_driver_entry("cuMemGetAddressRange");
    tlmpi_cu.get_attr = (tlmpi_cu_get_attr_fn_t)tlmpi_gpu_driver_entry("cuPointerGetAttribute");
    tlmpi_cu.write_value32 = (tlmpi_cu_write_value_fn_t)tlmpi_gpu_driver_entry("cuStreamWriteValue32");
    tlmpi_cu.device_get = (tlmpi_cu_device_get_fn_t)tlmpi_gpu_driver_entry("cuDeviceGet");
    tlmpi_cu.device_attr = (tlmpi_cu_device_attr_fn_t)tlmpi_gpu_driver_entry("cuDeviceGetAttribute");
    (void)cudaGetLastError();
    if (!tlmpi_cu.get_range || !tlmpi_cu.get_attr) {
        tlmpi_cu.get_range = NULL;
        tlmpi_cu.get_attr = NULL;
        tlmpi_info(CUDA, "driver entry points unavailable: pointer classification is not cached");
    }
}
#endif

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
        if (n > 0) {
            load_driver_entry_points();
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

int tlmpi_gpu_enter_device(int dev, int *saved_p)
{
    *saved_p = -1;
#ifdef HAVE_CUDA
    {
        int cur = -1;

        if (cudaGetDevice(&cur) != cudaSuccess) {
            (void)cudaGetLastError();
            return -1;
        }
        if (dev < 0 || cur == dev) {
            return 0;
        }
        if (cudaSetDevice(dev) != cudaSuccess) {
            (void)cudaGetLastError();
            return -1;
        }
        *saved_p = cur;
        return 0;
    }
#else
    (void)dev;
    return -1;
#endif
}

/* CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED is 132 in every cuda.h that has it (12.1+) */
#if defined(HAVE_CUDA) && CUDA_VERSION >= 12010
#define TLMPI_CU_ATTR_MULTICAST CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED
#else
#define TLMPI_CU_ATTR_MULTICAST 132
#endif

int tlmpi_gpu_multicast_supported(int dev)
{
#ifdef HAVE_CUDA
    CUdevice d;
    int v = 0;

    if (dev < 0 || tlmpi_gpu_probe(NULL) <= dev || !tlmpi_cu.device_get || !tlmpi_cu.device_attr ||
        tlmpi_cu.device_get(&d, dev) != CUDA_SUCCESS ||
        tlmpi_cu.device_attr(&v, (CUdevice_attribute)TLMPI_CU_ATTR_MULTICAST, d) != CUDA_SUCCESS) {
        return 0;
    }
    return v != 0;
#else
    (void)dev;
    return 0;
#endif
}

void tlmpi_gpu_name(int dev, char *buf, size_t len)
{
    if (!len) {
        return;
    }
    buf[0] = '\0';
#ifdef HAVE_CUDA
    {
        struct cudaDeviceProp pr;

        if (dev >= 0 && cudaGetDeviceProperties(&pr, dev) == cudaSuccess) {
            snprintf(buf, len, "%s", pr.name);
        }
        (void)cudaGetLastError();
    }
#else
    (void)dev;
#endif
}

void tlmpi_gpu_restore_device(int saved)
{
#ifdef HAVE_CUDA
    if (saved >= 0 && cudaSetDevice(saved) != cudaSuccess) {
        (void)cudaGetLastError();
    }
#else
    (void)saved;
#endif
}

int tlmpi_gpu_scratch_reserve(void **buf_p, size_t *bytes_p, size_t need)
{
#ifdef HAVE_CUDA
    cudaError_t e;

    if (need <= *bytes_p && *buf_p) {
        return 0;
    }
    if (*buf_p) {
        (void)cudaFree(*buf_p);
    }
    *buf_p = NULL;
    *bytes_p = 0;
    e = cudaMalloc(buf_p, need);
    if (e != cudaSuccess) {
        *buf_p = NULL;
        return (int)e;
    }
    *bytes_p = need;
    return 0;
#else
    (void)buf_p;
    (void)bytes_p;
    (void)need;
    return -1;
#endif
}
