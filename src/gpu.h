/*
 * gpu: everything tlmpi asks the CUDA runtime on the host side: device count, driver version,
 * pointer classification. Compiled with and without CUDA (without: no GPU, every pointer is host).
 * Never links libcuda: driver entry points are reached through cudaGetDriverEntryPointByVersion.
 */
#ifndef TLMPI_GPU_H
#define TLMPI_GPU_H

#include <stddef.h>

typedef enum {
    TLMPI_MEM_HOST = 0,     /* pageable host memory (or unknown to CUDA) */
    TLMPI_MEM_PINNED,       /* page-locked host memory registered with CUDA */
    TLMPI_MEM_DEVICE,       /* device memory (cudaMalloc, VMM, ...) */
    TLMPI_MEM_MANAGED       /* managed memory: both sides may touch it; treated as device */
} tlmpi_mem_type_t;

/* Probe the runtime once: number of devices (0 when no GPU or no driver) and why. */
int tlmpi_gpu_probe(const char **why_p);
/* Runtime, driver versions (0 if unknown). */
void tlmpi_gpu_versions(int *runtime_p, int *driver_p);
/* Current device of the calling thread (-1 if none); PCI bus id string of a device. */
int tlmpi_gpu_current_device(void);
int tlmpi_gpu_pci_bus_id(int dev, char *buf, int len);

/* Memory type of p; *dev_p gets the device ordinal for DEVICE/MANAGED (else -1). */
tlmpi_mem_type_t tlmpi_gpu_mem_type(const void *p, int *dev_p);

static inline int tlmpi_mem_is_device(tlmpi_mem_type_t t)
{
    return t == TLMPI_MEM_DEVICE || t == TLMPI_MEM_MANAGED;
}

#endif
