/*
 * select: the tier choice for one call, a pure function of rank-uniform inputs. Every rank
 * evaluates it with the same inputs (count, datatype, op, comm topology and capabilities agreed at
 * comm setup, ALL_EQ env) and so takes the same path. No MPI or CUDA calls here: unit-tested.
 */
#ifndef TLMPI_SELECT_H
#define TLMPI_SELECT_H

#include "tlmpi.h"
#include "dtype.h"
#include <stddef.h>

/* Capabilities of a communicator, agreed by all its ranks at setup (bitwise AND over ranks). */
enum {
    TLMPI_CAP_NCCL = 1u << 0,           /* flat NCCL communicator usable */
    TLMPI_CAP_STAGING = 1u << 1,        /* pinned staging pool usable */
    TLMPI_CAP_MPI_CUDA_AWARE = 1u << 2, /* the MPI accepts device pointers */
    TLMPI_CAP_SHARED_GPU = 1u << 3,     /* (OR over ranks) two ranks of a node share one GPU */
    TLMPI_CAP_IPC = 1u << 4,            /* reserved: CUDA-IPC intra-node kernels */
    TLMPI_CAP_DEVAPI = 1u << 5,         /* reserved: NCCL Device API kernels */
    TLMPI_CAP_SELF = 1u << 6            /* one-rank communicator with a GPU: a collective is a copy */
};

/* TLMPI_TIER values, in the order of the enum in env.def */
typedef enum { TLMPI_TIER_AUTO = 0, TLMPI_TIER_NCCL, TLMPI_TIER_STAGING, TLMPI_TIER_MPI } tlmpi_tier_t;

typedef struct {
    tlmpi_coll_t coll;
    size_t bytes;           /* full vector size (allgather: sendcount*size*n) */
    tlmpi_dtype_t dtype;
    int contiguous;         /* datatype has no holes (size == extent, lb == 0) */
    tlmpi_op_t op;          /* ignored for allgather */
    int device;             /* 1 if either buffer is device/managed memory */
    unsigned caps;          /* TLMPI_CAP_* */
    tlmpi_tier_t tier;      /* TLMPI_TIER */
} tlmpi_select_in_t;

/* 1 if NCCL can run this (collective, dtype, op) itself. */
int tlmpi_select_nccl_supports(tlmpi_coll_t coll, tlmpi_dtype_t dt, int contiguous, tlmpi_op_t op);
/* 1 if tlmpi must substitute its own MPI_Op (half types with an arithmetic op). */
int tlmpi_select_needs_own_op(tlmpi_coll_t coll, tlmpi_dtype_t dt, tlmpi_op_t op);
tlmpi_path_t tlmpi_select_path(const tlmpi_select_in_t *in);

#endif
