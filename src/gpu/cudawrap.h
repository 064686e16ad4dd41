/*
 * cudawrap: what tlmpi asks the CUDA runtime outside of streams and memory classification: device
 * count, versions, PCI bus ids, switching the current device, and the driver entry points it needs
 * (reached through cudaGetDriverEntryPointByVersion: libcuda is never linked). Compiled with and
 * without CUDA.
 */
#ifndef TLMPI_CUDAWRAP_H
#define TLMPI_CUDAWRAP_H

#include <stddef.h>

/* Probe the runtime once: number of devices (0 when no GPU or no driver) and why. */
int tlmpi_gpu_probe(const char **why_p);
/* Runtime, driver versions (0 if unknown). */
void tlmpi_gpu_versions(int *runtime_p, int *driver_p);
/* Current device of the calling thread (-1 if none); PCI bus id string of a device. */
int tlmpi_gpu_current_device(void);
int tlmpi_gpu_pci_bus_id(int dev, char *buf, int len);
/* The device's name ("NVIDIA H200"), "" if unknown. */
void tlmpi_gpu_name(int dev, char *buf, size_t len);

/* Make dev current for the calling thread; *saved_p gets the previous device, or -1 if dev was
 * already current. tlmpi_gpu_restore_device(saved) undoes it (no-op for -1). Return 0 or -1. */
int tlmpi_gpu_enter_device(int dev, int *saved_p);
void tlmpi_gpu_restore_device(int saved);

/* Make *buf_p (device memory of the current device, *bytes_p bytes, NULL/0 at first) at least need
 * bytes: freed and reallocated when smaller (the caller's earlier uses of it are complete). 0 or a
 * cudaError_t value (then *buf_p is NULL and *bytes_p 0). */
int tlmpi_gpu_scratch_reserve(void **buf_p, size_t *bytes_p, size_t need);

/* 1 if device dev can hold multicast objects (the driver's CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED,
 * which not every runtime names as a cudaDevAttr), 0 if not or unknown (no driver entry point, the
 * query failed, built without CUDA). */
int tlmpi_gpu_multicast_supported(int dev);

#ifdef HAVE_CUDA
#include <cuda.h>
typedef CUresult (*tlmpi_cu_get_range_fn_t)(CUdeviceptr *base, size_t *size, CUdeviceptr p);
typedef CUresult (*tlmpi_cu_get_attr_fn_t)(void *data, CUpointer_attribute attr, CUdeviceptr p);
typedef CUresult (*tlmpi_cu_write_value_fn_t)(CUstream s, CUdeviceptr addr, cuuint32_t value, unsigned flags);
typedef CUresult (*tlmpi_cu_device_get_fn_t)(CUdevice *d, int ordinal);
typedef CUresult (*tlmpi_cu_device_attr_fn_t)(int *v, CUdevice_attribute attr, CUdevice d);
/* Driver entry points, filled by tlmpi_gpu_probe; NULL where the driver lacks them. */
typedef struct {
    tlmpi_cu_get_range_fn_t get_range;     /* cuMemGetAddressRange */
    tlmpi_cu_get_attr_fn_t get_attr;       /* cuPointerGetAttribute */
    tlmpi_cu_write_value_fn_t write_value32; /* cuStreamWriteValue32 */
    tlmpi_cu_device_get_fn_t device_get;   /* cuDeviceGet */
    tlmpi_cu_device_attr_fn_t device_attr; /* cuDeviceGetAttribute */
} tlmpi_cu_t;
extern tlmpi_cu_t tlmpi_cu;
/* A driver entry point by name (cudaGetDriverEntryPointByVersion, CUDA 12.0 ABI); NULL where the driver
 * lacks it. */
void *tlmpi_gpu_driver_entry(const char *sym);
#endif

#endif
