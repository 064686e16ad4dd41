/*
 * fakecudart.h: the test hooks of the fake CUDA runtime (tests/fakes/fakecudart.c) that CPU tests call
 * beside the CUDA API it stands in for: addresses chosen for cudaMalloc, the VMM calls on plain
 * mappings, the count of pointer queries, a captured graph's record nodes and edges.
 */
#ifndef TLMPI_TESTS_FAKECUDART_H
#define TLMPI_TESTS_FAKECUDART_H

#include <cuda_runtime_api.h>
#include <stddef.h>

extern unsigned long fake_cuda_ptr_queries; /* cudaPointerGetAttributes calls so far */
extern void *fake_cuda_next_addr;           /* the next cudaMalloc's address (NULL: any) */

/* cudaMalloc at a chosen address (fails if anything is mapped there) */
cudaError_t fake_cuda_malloc_at(void **p, size_t n, void *want);
/* the VMM calls (cuMemAddressReserve / cuMemMap / cuMemUnmap / cuMemAddressFree) on plain mappings:
 * CUDA_SUCCESS or an error code */
int fake_cuMemAddressReserve(void **p, size_t size, void *hint);
int fake_cuMemMap(void *p, size_t size);
int fake_cuMemUnmap(void *p, size_t size);
int fake_cuMemAddressFree(void *p, size_t size);
/* record nodes and edges a capture made in graph g */
void fake_graph_counts(cudaGraph_t g, int *records, int *edges);

#endif
