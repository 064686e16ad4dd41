/*
 * checks: call-check macros (named like NCCL's checks.h; <check.h> is the Check unit-test library) for the three foreign error spaces tlmpi calls into (CUDA runtime, NCCL,
 * MPI), in NCCL's two forms:
 *   TLMPI_CUDA_CHECK(call)                 on failure: log, clear the error, return the status
 *   TLMPI_CUDA_CHECK_GOTO(call, st, label) on failure: log, clear the error, set st, goto label
 * and the same for NCCL and MPI. Each failure is logged once, here, where it is detected, with the
 * call's text and the foreign error string; callers propagate the status without logging again
 * (TLMPI_CHECK / TLMPI_CHECK_GOTO for tlmpi_status_t). CUDA failures clear the runtime's last
 * error (cudaGetLastError) so that a recoverable error does not poison the next call; sticky
 * errors (a faulted context) stay, and the next CUDA call reports them again.
 *
 * Setup code (plan build) reports failures through the plan's one agreed warning instead: it uses
 * the _WHY forms, which write the reason into a caller's buffer and log it at info level only.
 */
#ifndef TLMPI_CHECKS_H
#define TLMPI_CHECKS_H

#include "fault.h"
#include "log.h"
#include "tlmpi.h"

#include <stdio.h>

/* tlmpi_status_t propagation: no logging (the failure was logged where it was detected) */
#define TLMPI_CHECK(_call)                                                                   \
    do {                                                                                     \
        tlmpi_status_t _st = (_call);                                                        \
        if (TLMPI_UNLIKELY(_st != TLMPI_OK)) {                                               \
            return _st;                                                                      \
        }                                                                                    \
    } while (0)
#define TLMPI_CHECK_GOTO(_call, _st, _label)                                                 \
    do {                                                                                     \
        (_st) = (_call);                                                                     \
        if (TLMPI_UNLIKELY((_st) != TLMPI_OK)) {                                             \
            goto _label;                                                                     \
        }                                                                                    \
    } while (0)

#ifdef HAVE_CUDA
#include <cuda_runtime_api.h>
#define TLMPI_CUDA_FAILED_(_e, _text)                                                        \
    do {                                                                                     \
        tlmpi_error(CUDA, "%s failed: %s", _text, cudaGetErrorString(_e));                   \
        (void)cudaGetLastError();                                                            \
    } while (0)
#define TLMPI_CUDA_CHECK(_call)                                                              \
    do {                                                                                     \
        cudaError_t _e = (_call);                                                            \
        if (TLMPI_UNLIKELY(_e != cudaSuccess)) {                                             \
            TLMPI_CUDA_FAILED_(_e, #_call);                                                  \
            return TLMPI_ERR_CUDA;                                                           \
        }                                                                                    \
    } while (0)
#define TLMPI_CUDA_CHECK_GOTO(_call, _st, _label)                                            \
    do {                                                                                     \
        cudaError_t _e = (_call);                                                            \
        if (TLMPI_UNLIKELY(_e != cudaSuccess)) {                                             \
            TLMPI_CUDA_FAILED_(_e, #_call);                                                  \
            (_st) = TLMPI_ERR_CUDA;                                                          \
            goto _label;                                                                     \
        }                                                                                    \
    } while (0)
/* setup form: the reason goes to why[0..len) (and the info log), the caller warns once */
#define TLMPI_CUDA_CHECK_WHY(_call, _why, _len, _label)                                      \
    do {                                                                                     \
        cudaError_t _e = (_call);                                                            \
        if (TLMPI_UNLIKELY(_e != cudaSuccess)) {                                             \
            snprintf((_why), (_len), "%s: %s", #_call, cudaGetErrorString(_e));              \
            (void)cudaGetLastError();                                                        \
            tlmpi_info(CUDA, "%s", (_why));                                                  \
            goto _label;                                                                     \
        }                                                                                    \
    } while (0)
#endif

#define TLMPI_MPI_CHECK(_call)                                                               \
    do {                                                                                     \
        int _rc = (_call);                                                                   \
        if (TLMPI_UNLIKELY(_rc != MPI_SUCCESS)) {                                            \
            tlmpi_error(COLL, "%s failed (MPI error %d)", #_call, _rc);                      \
            return TLMPI_ERR_MPI;                                                            \
        }                                                                                    \
    } while (0)
#define TLMPI_MPI_CHECK_GOTO(_call, _st, _label)                                             \
    do {                                                                                     \
        int _rc = (_call);                                                                   \
        if (TLMPI_UNLIKELY(_rc != MPI_SUCCESS)) {                                            \
            tlmpi_error(COLL, "%s failed (MPI error %d)", #_call, _rc);                      \
            (_st) = TLMPI_ERR_MPI;                                                           \
            goto _label;                                                                     \
        }                                                                                    \
    } while (0)

/* NCCL (through the dlopen'ed table of ncclwrap.h; include it before using these) */
#define TLMPI_NCCL_FAILED_(_r, _text)                                                        \
    tlmpi_error(NCCL, "%s failed: %s (%s)", _text, tlmpi_nccl.ncclGetErrorString(_r),        \
                tlmpi_nccl.ncclGetLastError(NULL))
#define TLMPI_NCCL_CHECK(_call)                                                              \
    do {                                                                                     \
        ncclResult_t _r = (_call);                                                           \
        if (TLMPI_UNLIKELY(_r != ncclSuccess)) {                                             \
            TLMPI_NCCL_FAILED_(_r, #_call);                                                  \
            return TLMPI_ERR_NCCL;                                                           \
        }                                                                                    \
    } while (0)
#define TLMPI_NCCL_CHECK_GOTO(_call, _st, _label)                                            \
    do {                                                                                     \
        ncclResult_t _r = (_call);                                                           \
        if (TLMPI_UNLIKELY(_r != ncclSuccess)) {                                             \
            TLMPI_NCCL_FAILED_(_r, #_call);                                                  \
            (_st) = TLMPI_ERR_NCCL;                                                          \
            goto _label;                                                                     \
        }                                                                                    \
    } while (0)

#endif
