/*
 * dtype: map MPI datatypes and ops to tlmpi's element types and reduction ops. Handles are
 * compared with == only (never switch on them, never assume their C type: Open MPI's are pointers).
 * The table is built once at init (Fortran and optional types are looked up by size then).
 */
#ifndef TLMPI_DTYPE_H
#define TLMPI_DTYPE_H

#include <mpi.h>
#include <stddef.h>

#include "types.h" /* tlmpi_dtype_t, tlmpi_op_t (cuda/types.h: shared with the CUDA kernels) */

/* Build the handle table (needs MPI initialised). Idempotent. */
void tlmpi_dtype_init(void);
/* Classify a datatype. *size_p gets MPI_Type_size (bytes per element). Cheap for predefined. */
tlmpi_dtype_t tlmpi_dtype_classify(MPI_Datatype dt, int *size_p);
tlmpi_op_t tlmpi_op_classify(MPI_Op op);
/* Size in bytes of an arithmetic element type, 0 otherwise. */
size_t tlmpi_dtype_elem_size(tlmpi_dtype_t t);
const char *tlmpi_dtype_name(tlmpi_dtype_t t);
const char *tlmpi_op_name(tlmpi_op_t op);
/* 1 if a reduction of dt with op needs tlmpi's own MPI_Op (half types: no MPI here reduces them). */
int tlmpi_dtype_needs_own_op(tlmpi_dtype_t dt, tlmpi_op_t op);

/* half.c: tlmpi's MPI_Ops for f16/bf16 (MPI_OP_NULL if none); created at init, freed at finalize. */
MPI_Op tlmpi_half_op(tlmpi_dtype_t dt, tlmpi_op_t op);
int tlmpi_half_init(void);
void tlmpi_half_finalize(void);

#endif
