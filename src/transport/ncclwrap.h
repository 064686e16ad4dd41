/*
 * ncclwrap: libnccl loaded with dlopen at run time (TLMPI_NCCL_LIBRARY), so that tlmpi starts on
 * machines without NCCL and keeps the 200+ MB library out of CPU-only runs. Every NCCL host
 * function tlmpi uses is listed once in TLMPI_NCCL_FUNCS (required: the library is unusable
 * without one of them) or TLMPI_NCCL_OPT_FUNCS (optional: NULL where the library lacks them; the
 * memory, window and Device API entry points of the devcomm transport) and reached as
 * tlmpi_nccl.<name>. Also here: the process-wide NCCL environment tlmpi sets before its first
 * NCCL communicator (NCCL reads it once), shared by every tier that creates one.
 */
#ifndef TLMPI_NCCLWRAP_H
#define TLMPI_NCCLWRAP_H

#include "config.h"

#ifdef HAVE_NCCL
#include <nccl.h>

#define TLMPI_NCCL_FUNCS(_X)                                                                  \
    _X(ncclGetVersion, ncclResult_t, (int *version))                                         \
    _X(ncclGetErrorString, const char *, (ncclResult_t result))                              \
    _X(ncclGetLastError, const char *, (ncclComm_t comm))                                    \
    _X(ncclGetUniqueId, ncclResult_t, (ncclUniqueId *uniqueId))                              \
    _X(ncclCommInitRank, ncclResult_t, (ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank)) \
    _X(ncclCommDestroy, ncclResult_t, (ncclComm_t comm))                                     \
    _X(ncclCommAbort, ncclResult_t, (ncclComm_t comm))                                       \
    _X(ncclCommGetAsyncError, ncclResult_t, (ncclComm_t comm, ncclResult_t *asyncError))     \
    _X(ncclAllReduce, ncclResult_t, (const void *sendbuff, void *recvbuff, size_t count,     \
                                     ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, \
                                     cudaStream_t stream))                                   \
    _X(ncclAllGather, ncclResult_t, (const void *sendbuff, void *recvbuff, size_t sendcount, \
                                     ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream)) \
    _X(ncclReduceScatter, ncclResult_t, (const void *sendbuff, void *recvbuff, size_t recvcount, \
                                         ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, \
                                         cudaStream_t stream))

/* Optional. The C side never includes nccl_device.h (C++ only): a window (ncclWindow_t, a pointer)
 * is a void *, and the Device API's ncclDevCommRequirements / ncclDevComm are opaque bytes whose
 * sizes come from the kernels (tlmpi_cuda_devcomm_sizes, cuda/kernels.h). */
#define TLMPI_NCCL_OPT_FUNCS(_X)                                                              \
    _X(ncclMemAlloc, ncclResult_t, (void **ptr, size_t size))                                \
    _X(ncclMemFree, ncclResult_t, (void *ptr))                                               \
    _X(ncclCommWindowRegister, ncclResult_t, (ncclComm_t comm, void *buff, size_t size, void **win, \
                                              int winFlags))                                 \
    _X(ncclCommWindowDeregister, ncclResult_t, (ncclComm_t comm, void *win))                 \
    _X(ncclDevCommCreate, ncclResult_t, (ncclComm_t comm, const void *reqs, void *devcomm))  \
    _X(ncclDevCommDestroy, ncclResult_t, (ncclComm_t comm, const void *devcomm))

typedef struct {
#define TLMPI_NCCL_FIELD_(_name, _ret, _args) _ret(*_name) _args;
    TLMPI_NCCL_FUNCS(TLMPI_NCCL_FIELD_)
    TLMPI_NCCL_OPT_FUNCS(TLMPI_NCCL_FIELD_)
#undef TLMPI_NCCL_FIELD_
} tlmpi_nccl_fns_t;

extern tlmpi_nccl_fns_t tlmpi_nccl;
#endif

/* Load the library once. Returns 1 if usable; *why_p says why not. Thread-safe. */
int tlmpi_nccl_load(const char **why_p);
/* NCCL_VERSION_CODE of the loaded library, 0 if none. */
int tlmpi_nccl_runtime_version(void);
/* 1 if the loaded library has every TLMPI_NCCL_OPT_FUNCS entry point (the devcomm transport's);
 * else 0 and *missing_p names the first one it lacks. */
int tlmpi_nccl_have_devcomm_api(const char **missing_p);
/* Before tlmpi's first NCCL communicator of the process (once; thread-safe): TLMPI_NVLS=0 sets
 * NCCL_NVLS_ENABLE=0 where it is unset, and MPI_THREAD_MULTIPLE sets NCCL_RUNTIME_CONNECT=0 where
 * unset. Returns 0 when TLMPI_NVLS=0 conflicts with a user's NCCL_NVLS_ENABLE other than 0 (then no
 * NCCL communicator of tlmpi may be created: it could make NVLink multicast), else 1. */
int tlmpi_nccl_env_ready(void);

#endif
