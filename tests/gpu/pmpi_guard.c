/*
 * libtlmpi_guard: an LD_PRELOAD library for the GPU tests that aborts when a device (or managed)
 * pointer reaches PMPI_Allreduce / PMPI_Allgather / PMPI_Reduce_scatter_block (and their _c and
 * PMPI_Bcast forms, the non-blocking PMPI_I* forms and, where the MPI has them, the MPI-4 persistent
 * PMPI_*_init forms) or the siblings PMPI_Allgatherv / PMPI_Reduce_scatter / PMPI_Ibcast / PMPI_Reduce
 * / PMPI_Alltoall and their PMPI_I* forms with a non-zero count. Preloaded, its definitions come first in symbol lookup,
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

/* the non-blocking forms (tlmpi's MPI_I* on device buffers must never hand them to the MPI) */
EXPORT int PMPI_Iallreduce(const void *s, void *r, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c, MPI_Request *q)
{
    REAL(PMPI_Iallreduce);
    check("PMPI_Iallreduce", s, r, n);
    return real_(s, r, n, t, op, c, q);
}

EXPORT int PMPI_Ireduce_scatter_block(const void *s, void *r, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c,
                                      MPI_Request *q)
{
    REAL(PMPI_Ireduce_scatter_block);
    check("PMPI_Ireduce_scatter_block", s, r, n);
    return real_(s, r, n, t, op, c, q);
}

EXPORT int PMPI_Iallgather(const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt, MPI_Comm c,
                           MPI_Request *q)
{
    REAL(PMPI_Iallgather);
    check("PMPI_Iallgather", s, r, sn > rn ? sn : rn);
    return real_(s, sn, st, r, rn, rt, c, q);
}

#ifdef HAVE_PMPI_IALLREDUCE_C
EXPORT int PMPI_Iallreduce_c(const void *s, void *r, MPI_Count n, MPI_Datatype t, MPI_Op op, MPI_Comm c, MPI_Request *q)
{
    REAL(PMPI_Iallreduce_c);
    check("PMPI_Iallreduce_c", s, r, n);
    return real_(s, r, n, t, op, c, q);
}
#endif

#ifdef HAVE_PMPI_IREDUCE_SCATTER_BLOCK_C
EXPORT int PMPI_Ireduce_scatter_block_c(const void *s, void *r, MPI_Count n, MPI_Datatype t, MPI_Op op, MPI_Comm c,
                                        MPI_Request *q)
{
    REAL(PMPI_Ireduce_scatter_block_c);
    check("PMPI_Ireduce_scatter_block_c", s, r, n);
    return real_(s, r, n, t, op, c, q);
}
#endif

#ifdef HAVE_PMPI_IALLGATHER_C
EXPORT int PMPI_Iallgather_c(const void *s, MPI_Count sn, MPI_Datatype st, void *r, MPI_Count rn, MPI_Datatype rt,
                             MPI_Comm c, MPI_Request *q)
{
    REAL(PMPI_Iallgather_c);
    check("PMPI_Iallgather_c", s, r, sn > rn ? sn : rn);
    return real_(s, sn, st, r, rn, rt, c, q);
}
#endif

/* the persistent forms (MPI-4): the buffers are bound at init */
#ifdef HAVE_PMPI_ALLREDUCE_INIT
EXPORT int PMPI_Allreduce_init(const void *s, void *r, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c, MPI_Info i,
                               MPI_Request *q)
{
    REAL(PMPI_Allreduce_init);
    check("PMPI_Allreduce_init", s, r, n);
    return real_(s, r, n, t, op, c, i, q);
}
#endif

#ifdef HAVE_PMPI_REDUCE_SCATTER_BLOCK_INIT
EXPORT int PMPI_Reduce_scatter_block_init(const void *s, void *r, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c,
                                          MPI_Info i, MPI_Request *q)
{
    REAL(PMPI_Reduce_scatter_block_init);
    check("PMPI_Reduce_scatter_block_init", s, r, n);
    return real_(s, r, n, t, op, c, i, q);
}
#endif

#ifdef HAVE_PMPI_ALLGATHER_INIT
EXPORT int PMPI_Allgather_init(const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt, MPI_Comm c,
                               MPI_Info i, MPI_Request *q)
{
    REAL(PMPI_Allgather_init);
    check("PMPI_Allgather_init", s, r, sn > rn ? sn : rn);
    return real_(s, sn, st, r, rn, rt, c, i, q);
}
#endif

#ifdef HAVE_PMPI_ALLREDUCE_INIT_C
EXPORT int PMPI_Allreduce_init_c(const void *s, void *r, MPI_Count n, MPI_Datatype t, MPI_Op op, MPI_Comm c,
                                 MPI_Info i, MPI_Request *q)
{
    REAL(PMPI_Allreduce_init_c);
    check("PMPI_Allreduce_init_c", s, r, n);
    return real_(s, r, n, t, op, c, i, q);
}
#endif

#ifdef HAVE_PMPI_REDUCE_SCATTER_BLOCK_INIT_C
EXPORT int PMPI_Reduce_scatter_block_init_c(const void *s, void *r, MPI_Count n, MPI_Datatype t, MPI_Op op, MPI_Comm c,
                                            MPI_Info i, MPI_Request *q)
{
    REAL(PMPI_Reduce_scatter_block_init_c);
    check("PMPI_Reduce_scatter_block_init_c", s, r, n);
    return real_(s, r, n, t, op, c, i, q);
}
#endif

#ifdef HAVE_PMPI_ALLGATHER_INIT_C
EXPORT int PMPI_Allgather_init_c(const void *s, MPI_Count sn, MPI_Datatype st, void *r, MPI_Count rn,
                                 MPI_Datatype rt, MPI_Comm c, MPI_Info i, MPI_Request *q)
{
    REAL(PMPI_Allgather_init_c);
    check("PMPI_Allgather_init_c", s, r, sn > rn ? sn : rn);
    return real_(s, sn, st, r, rn, rt, c, i, q);
}
#endif

/* the siblings: MPI_Allgatherv, MPI_Reduce_scatter, MPI_Bcast (above), MPI_Reduce, MPI_Alltoall, blocking
 * and non-blocking (tlmpi's staging calls; its *_init of them only ever gets host stand-ins). A v-form
 * moves the sum of its counts (none where one is negative: the MPI rejects it before reading) */
static MPI_Count v_moved(const void *counts, int large, MPI_Comm c, int remote)
{
    int n = 0, inter = 0, i;
    MPI_Count m = 0;

    if (!counts) {
        return 0;
    }
    if (remote && PMPI_Comm_test_inter(c, &inter) == MPI_SUCCESS && inter) {
        PMPI_Comm_remote_size(c, &n);
    } else {
        PMPI_Comm_size(c, &n);
    }
    for (i = 0; i < n; i++) {
        MPI_Count v = large ? ((const MPI_Count *)counts)[i] : ((const int *)counts)[i];

        if (v < 0) {
            return 0;
        }
        m += v;
    }
    return m;
}

EXPORT int PMPI_Allgatherv(const void *s, int sn, MPI_Datatype st, void *r, const int rc[], const int d[],
                           MPI_Datatype rt, MPI_Comm c)
{
    REAL(PMPI_Allgatherv);
    check("PMPI_Allgatherv", s, r, v_moved(rc, 0, c, 1));
    return real_(s, sn, st, r, rc, d, rt, c);
}

EXPORT int PMPI_Iallgatherv(const void *s, int sn, MPI_Datatype st, void *r, const int rc[], const int d[],
                            MPI_Datatype rt, MPI_Comm c, MPI_Request *q)
{
    REAL(PMPI_Iallgatherv);
    check("PMPI_Iallgatherv", s, r, v_moved(rc, 0, c, 1));
    return real_(s, sn, st, r, rc, d, rt, c, q);
}

EXPORT int PMPI_Reduce_scatter(const void *s, void *r, const int rc[], MPI_Datatype t, MPI_Op op, MPI_Comm c)
{
    REAL(PMPI_Reduce_scatter);
    check("PMPI_Reduce_scatter", s, r, v_moved(rc, 0, c, 0));
    return real_(s, r, rc, t, op, c);
}

EXPORT int PMPI_Ireduce_scatter(const void *s, void *r, const int rc[], MPI_Datatype t, MPI_Op op, MPI_Comm c,
                                MPI_Request *q)
{
    REAL(PMPI_Ireduce_scatter);
    check("PMPI_Ireduce_scatter", s, r, v_moved(rc, 0, c, 0));
    return real_(s, r, rc, t, op, c, q);
}

EXPORT int PMPI_Ibcast(void *b, int n, MPI_Datatype t, int root, MPI_Comm c, MPI_Request *q)
{
    REAL(PMPI_Ibcast);
    check("PMPI_Ibcast", b, NULL, root == MPI_PROC_NULL ? 0 : n);
    return real_(b, n, t, root, c, q);
}

EXPORT int PMPI_Reduce(const void *s, void *r, int n, MPI_Datatype t, MPI_Op op, int root, MPI_Comm c)
{
    REAL(PMPI_Reduce);
    check("PMPI_Reduce", s, r, root == MPI_PROC_NULL ? 0 : n);
    return real_(s, r, n, t, op, root, c);
}

EXPORT int PMPI_Ireduce(const void *s, void *r, int n, MPI_Datatype t, MPI_Op op, int root, MPI_Comm c,
                        MPI_Request *q)
{
    REAL(PMPI_Ireduce);
    check("PMPI_Ireduce", s, r, root == MPI_PROC_NULL ? 0 : n);
    return real_(s, r, n, t, op, root, c, q);
}

EXPORT int PMPI_Alltoall(const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt, MPI_Comm c)
{
    REAL(PMPI_Alltoall);
    check("PMPI_Alltoall", s, r, sn > rn ? sn : rn);
    return real_(s, sn, st, r, rn, rt, c);
}

EXPORT int PMPI_Ialltoall(const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt, MPI_Comm c,
                          MPI_Request *q)
{
    REAL(PMPI_Ialltoall);
    check("PMPI_Ialltoall", s, r, sn > rn ? sn : rn);
    return real_(s, sn, st, r, rn, rt, c, q);
}
