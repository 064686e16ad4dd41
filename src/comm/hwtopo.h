/*
 * hwtopo: GPU/NIC locality on this machine from hwloc, with no MPI and no CUDA dependency.
 * Owns one hwloc topology per process, loaded lazily on the first query and cached (honours
 * HWLOC_XMLFILE, which is how the unit tests load the XML files of tests/fixtures). Called by
 * topo.c at comm setup and by the unit tests. Thread-safe. Without hwloc (HAVE_HWLOC undefined) or with
 * TLMPI_HWLOC=0 every query returns TLMPI_ERR_NOT_FOUND.
 *
 * GPUs are PCI devices of vendor 0x10de, class 0x0300 (VGA) or 0x0302 (3D): Debian's hwloc has
 * no cuda plugin, so cudaN OSDevs are optional extras. NICs are OpenFabrics OSDevs (mlx5_N) with
 * a PCI parent, numbered 0..n-1 in PCI bus id order: that index is the rail id.
 */
#ifndef TLMPI_HWTOPO_H
#define TLMPI_HWTOPO_H

#include "tlmpi.h"
#include <stddef.h>

#define TLMPI_HWTOPO_NAME_LEN 32

/* PCIe distance between a GPU and a NIC, closest first (NCCL's path types). */
typedef enum {
    TLMPI_HWTOPO_PIX = 0,   /* under one PCIe switch: at most one bridge below it on each side */
    TLMPI_HWTOPO_PXB,       /* under one switch tree, crossing several bridges, no host bridge */
    TLMPI_HWTOPO_PHB,       /* through the PCIe host bridge (same root complex) */
    TLMPI_HWTOPO_NODE,      /* across host bridges within one NUMA node */
    TLMPI_HWTOPO_SYS,       /* across NUMA nodes (inter-socket link), or NUMA node unknown */
    TLMPI_HWTOPO_NONE       /* no NIC */
} tlmpi_hwtopo_dist_t;

typedef struct {
    char gpu_busid[TLMPI_HWTOPO_NAME_LEN]; /* normalised "dddd:bb:dd.f" (lower case) */
    char gpu_osdev[TLMPI_HWTOPO_NAME_LEN]; /* "cudaN" when hwloc has the cuda plugin, else "" */
    int numa_node;                  /* OS index of the GPU's NUMA node, -1 if not exactly one */
    char nic[TLMPI_HWTOPO_NAME_LEN];   /* nearest NIC ("mlx5_3"), "" when the machine has none */
    char nic_busid[TLMPI_HWTOPO_NAME_LEN];
    int rail_id;                    /* index of that NIC in PCI bus id order; -1 when no NIC */
    int nic_count;                  /* RDMA NICs of the machine */
    tlmpi_hwtopo_dist_t dist;       /* GPU -> nic distance class; NONE when no NIC */
    int hops;                       /* edges from the GPU's PCI device to the NIC's OSDev; -1 */
} tlmpi_hwtopo_info_t;

/*
 * Locality of the GPU with PCI bus id gpu_busid ("0000:1b:00.0"; any case, 4 or 8 domain digits,
 * as cudaDeviceGetPCIBusId gives it). The nearest NIC is the one with the smallest distance
 * class, then the fewest hops, then the lowest rail id.
 * \return TLMPI_OK; TLMPI_ERR_NOT_FOUND if hwloc is unavailable/disabled or has no such GPU;
 *         TLMPI_ERR_INVALID_ARG for a NULL or unparsable argument.
 */
tlmpi_status_t tlmpi_hwtopo_gpu_locality(const char *gpu_busid, tlmpi_hwtopo_info_t *info_p);

/* GPUs of the machine in PCI bus id order: count (0 without hwloc), and the bus id of one. */
int tlmpi_hwtopo_gpu_count(void);
tlmpi_status_t tlmpi_hwtopo_gpu_busid(int index, char *buf, size_t len);
/* RDMA NICs of the machine (their index is the rail id). */
int tlmpi_hwtopo_nic_count(void);
tlmpi_status_t tlmpi_hwtopo_nic_name(int index, char *buf, size_t len);

/* "PIX", "PXB", "PHB", "NODE", "SYS", "NONE"; NULL when out of range. */
const char *tlmpi_hwtopo_dist_name(tlmpi_hwtopo_dist_t dist);

/* Drop the cached topology; the next query loads it again (tests switching HWLOC_XMLFILE). */
void tlmpi_hwtopo_reset(void);

#endif
