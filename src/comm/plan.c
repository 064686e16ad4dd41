#include "config.h"
#include "plan.h"

int tlmpi_select_nccl_supports(tlmpi_coll_t coll, tlmpi_dtype_t dt, int contiguous, tlmpi_op_t op)
{
    if (coll == TLMPI_COLL_ALLGATHER) {
        return contiguous; /* moved as bytes */
    }
    if (op >= TLMPI_OP_NUM_ARITH || dt >= TLMPI_DT_NUM_ARITH) {
        return 0;
    }
    return dt != TLMPI_DT_I16 && dt != TLMPI_DT_U16; /* NCCL has no 16-bit integers */
}

int tlmpi_select_needs_own_op(tlmpi_coll_t coll, tlmpi_dtype_t dt, tlmpi_op_t op)
{
    return coll != TLMPI_COLL_ALLGATHER && (dt == TLMPI_DT_F16 || dt == TLMPI_DT_BF16) &&
           op < TLMPI_OP_NUM_ARITH;
}

tlmpi_path_t tlmpi_select_path(const tlmpi_select_in_t *in)
{
    int own_op = tlmpi_select_needs_own_op(in->coll, in->dtype, in->op);
    int nccl_ok = (in->caps & TLMPI_CAP_NCCL) &&
                  tlmpi_select_nccl_supports(in->coll, in->dtype, in->contiguous, in->op);
    /* a device pointer may reach PMPI only if the MPI is CUDA-aware and can reduce the type */
    int mpi_ok = (in->caps & TLMPI_CAP_MPI_CUDA_AWARE) && !own_op;

    if (!in->device) {
        return own_op ? TLMPI_PATH_HOSTOP : TLMPI_PATH_PASSTHROUGH;
    }
    if (in->bytes == 0) {
        return TLMPI_PATH_PASSTHROUGH; /* nothing is dereferenced */
    }
    switch (in->tier) {
    case TLMPI_TIER_NCCL:
        if (nccl_ok) {
            return TLMPI_PATH_NCCL;
        }
        break;
    case TLMPI_TIER_MPI:
        if (mpi_ok) {
            return TLMPI_PATH_PASSTHROUGH;
        }
        break;
    case TLMPI_TIER_STAGING:
        break;
    case TLMPI_TIER_AUTO:
        /* one rank: every collective is a copy of the input (any op: nothing is combined), done on
         * the device without NCCL's enqueue; mixed host/device pairs decline to staging */
        if ((in->caps & TLMPI_CAP_SELF) && in->contiguous) {
            return TLMPI_PATH_SELF;
        }
        /* several ranks on one GPU: NCCL runs over loopback sockets there (~4.5 ms per call,
         * measured), far slower than staging through the MPI's shared memory */
        if (nccl_ok && !(in->caps & TLMPI_CAP_SHARED_GPU)) {
            return TLMPI_PATH_NCCL;
        }
        if (mpi_ok) {
            return TLMPI_PATH_PASSTHROUGH;
        }
        break;
    }
    return (in->caps & TLMPI_CAP_STAGING) || !mpi_ok ? TLMPI_PATH_STAGING : TLMPI_PATH_PASSTHROUGH;
}
