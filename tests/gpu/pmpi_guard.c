/*
 * libtlmpi_guard: an LD_PRELOAD library for the GPU tests that aborts when a device (or managed)
 * pointer reaches PMPI_Allreduce / PMPI_Allgather / PMPI_Reduce_scatter_block (and their _c and
 * PMPI_Bcast forms) with a non-zero count. Preloaded, its definitions come first in symbol lookup,
 * so tlmpi's calls to PMPI_* land here; each checks both buffers with cudaPointerGetAttributes and
 * forwards to the MPI library's definition through dlsym(RTLD_NEXT). MPI-internal calls do not go
 * through these symbols. A zero count is allowed: nothing is dereferenced.
 * Proven active by gpu_coll --guard-selftest (which must abort) and by tlmpi_guard_checked > 0.
 */
#define _GNU_SOURCE
#include "config.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

__attribute__((visibility("default"))) unsigned long tlmpi_guard_checked;

static int is_device(const void *p)
{
    struct cudaPointerAttributes a;

    if (p == NULL || p == MPI_IN_PLACE) {
        return 0;
    }
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
}

static void check(const char *fn, const void *s, const void *r, MPI_Count n)
{
    __atomic_fetch_add(&tlmpi_guard_checked, 1, __ATOMIC_RELAXED);
    if (n > 0 && (is_device(s) || is_device(r))) {
        fprintf(stderr, "TLMPI_GUARD: device pointer passed to %s (sbuf %p rbuf %p count %lld): aborting\n", fn,
                s, r, (long long)n);
        fflush(stderr);
        abort();
    }
}

#define REAL(_name)                                                                          \
    static __typeof__(&_name) real_;                                                         \
    if (!real_) {                                                                            \
        real_ = (__typeof__(&_name))dlsym(RTLD_NEXT, #_name);                                \
        if (!real_) {                                                                        \
            fprintf(stderr, "TLMPI_GUARD: cannot find the next %s\n", #_name);               \
            abort();                                                                         \
        }                                                                                    \
    }

#define EXPORT __attribute__((visibility("default")))

EXPORT int PMPI_Allreduce(const void *s, void *r, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c)
{
    REAL(PMPI_Allreduce);
    check("PMPI_Allreduce", s, r, n);
    return real_(s, r, n, t, op, c);
}

EXPORT int PMPI_Reduce_scatter_block(const void *s, void *r, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c)
{
    REAL(PMPI_Reduce_scatter_block);
    check("PMPI_Reduce_scatter_block", s, r, n);
    return real_(s, r, n, t, op, c);
}

EXPORT int PMPI_Allgather(const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt, MPI_Comm c)
{
    REAL(PMPI_Allgather);
    check("PMPI_Allgather", s, r, sn > rn ? sn : rn);
    return real_(s, sn, st, r, rn, rt, c);
}

EXPORT int PMPI_Bcast(void *b, int n, MPI_Datatype t, int root, MPI_Comm c)
{
    REAL(PMPI_Bcast);
    check("PMPI_Bcast", b, NULL, n);
    return real_(b, n, t, root, c);
}

#ifdef HAVE_PMPI_ALLREDUCE_C
EXPORT int PMPI_Allreduce_c(const void *s, void *r, MPI_Count n, MPI_Datatype t, MPI_Op op, MPI_Comm c)
{
    REAL(PMPI_Allreduce_c);
    check("PMPI_Allreduce_c", s, r, n);
    return real_(s, r, n, t, op, c);
}
#endif

#ifdef HAVE_PMPI_REDUCE_SCATTER_BLOCK_C
EXPORT int PMPI_Reduce_scatter_block_c(const void *s, void *r, MPI_Count n, MPI_Datatype t, MPI_Op op, MPI_Comm c)
{
    REAL(PMPI_Reduce_scatter_block_c);
    check("PMPI_Reduce_scatter_block_c", s, r, n);
    return real_(s, r, n, t, op, c);
}
#endif

#ifdef HAVE_PMPI_ALLGATHER_C
EXPORT int PMPI_Allgather_c(const void *s, MPI_Count sn, MPI_Datatype st, void *r, MPI_Count rn, MPI_Datatype rt,
                            MPI_Comm c)
{
    REAL(PMPI_Allgather_c);
    check("PMPI_Allgather_c", s, r, sn > rn ? sn : rn);
    return real_(s, sn, st, r, rn, rt, c);
}
#endif
