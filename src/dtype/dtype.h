/*
 * dtype: map MPI datatypes and ops to tlmpi's element types and reduction ops. Handles are
 * compared with == only (never switch on them, never assume their C type: Open MPI's are pointers).
 * The table is built once at init (Fortran and optional types are looked up by size then).
 */
#ifndef TLMPI_DTYPE_H
#define TLMPI_DTYPE_H

#include <mpi.h>
#include <stddef.h>

typedef enum {
    TLMPI_DT_I8 = 0, TLMPI_DT_U8, TLMPI_DT_I16, TLMPI_DT_U16, TLMPI_DT_I32, TLMPI_DT_U32,
    TLMPI_DT_I64, TLMPI_DT_U64, TLMPI_DT_F16, TLMPI_DT_BF16, TLMPI_DT_F32, TLMPI_DT_F64,
    TLMPI_DT_NUM_ARITH,          /* end of the element types tlmpi can reduce itself */
    TLMPI_DT_BYTES = TLMPI_DT_NUM_ARITH, /* other predefined type: movable, reduced only by MPI */
    TLMPI_DT_DERIVED,            /* derived/non-contiguous: only staging of the full span or PMPI */
    TLMPI_DT_COUNT
} tlmpi_dtype_t;

typedef enum {
    TLMPI_OP_SUM = 0, TLMPI_OP_PROD, TLMPI_OP_MIN, TLMPI_OP_MAX,
    TLMPI_OP_NUM_ARITH,
    TLMPI_OP_OTHER = TLMPI_OP_NUM_ARITH, /* predefined but not one of the above (LAND, BXOR, ...) */
    TLMPI_OP_USER,               /* user-defined (including tlmpi's own half ops) */
    TLMPI_OP_COUNT
} tlmpi_op_t;

/* Build the handle table (needs MPI initialised). Idempotent. */
void tlmpi_dtype_init(void);
/* Classify a datatype. *size_p gets MPI_Type_size (bytes per element). Cheap for predefined. */
tlmpi_dtype_t tlmpi_dtype_classify(MPI_Datatype dt, int *size_p);
tlmpi_op_t tlmpi_op_classify(MPI_Op op);
/* Size in bytes of an arithmetic element type, 0 otherwise. */
size_t tlmpi_dtype_elem_size(tlmpi_dtype_t t);
const char *tlmpi_dtype_name(tlmpi_dtype_t t);
const char *tlmpi_op_name(tlmpi_op_t op);

#endif
