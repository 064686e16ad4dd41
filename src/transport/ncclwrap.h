/*
 * ncclwrap: libnccl loaded with dlopen at run time (TLMPI_NCCL_LIBRARY), so that tlmpi starts on
 * machines without NCCL and keeps the 200+ MB library out of CPU-only runs. Every NCCL host
 * function tlmpi uses is listed once in TLMPI_NCCL_FUNCS and reached as tlmpi_nccl.<name>.
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

typedef struct {
#define TLMPI_NCCL_FIELD_(_name, _ret, _args) _ret(*_name) _args;
    TLMPI_NCCL_FUNCS(TLMPI_NCCL_FIELD_)
#undef TLMPI_NCCL_FIELD_
} tlmpi_nccl_fns_t;

extern tlmpi_nccl_fns_t tlmpi_nccl;
#endif

/* Load the library once. Returns 1 if usable; *why_p says why not. Thread-safe. */
int tlmpi_nccl_load(const char **why_p);
/* NCCL_VERSION_CODE of the loaded library, 0 if none. */
int tlmpi_nccl_runtime_version(void);

#endif
