/*
 * types.h: tlmpi's element types and reduction ops, shared by the C host code (src/dtype/dtype.h
 * includes it) and the CUDA kernels (cuda/common.cuh). No MPI, no CUDA: plain C, includable from
 * C and C++. The values are the indices the dispatch tables on both sides use, so they must not
 * change order; both sides check their own view against TLMPI_DT_ARITH_TABLE at compile time
 * (the C side here, the CUDA side in cuda/common.cuh).
 */
#ifndef TLMPI_CUDA_TYPES_H
#define TLMPI_CUDA_TYPES_H

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

/*
 * The arithmetic element types in enum order: X(enum value, bytes, a host C type of that size
 * and representation). f16/bf16 have no C type; their 16-bit patterns are held in uint16_t.
 */
#define TLMPI_DT_ARITH_TABLE(X)                                                                  \
    X(TLMPI_DT_I8, 1, int8_t) X(TLMPI_DT_U8, 1, uint8_t) X(TLMPI_DT_I16, 2, int16_t)             \
    X(TLMPI_DT_U16, 2, uint16_t) X(TLMPI_DT_I32, 4, int32_t) X(TLMPI_DT_U32, 4, uint32_t)        \
    X(TLMPI_DT_I64, 8, int64_t) X(TLMPI_DT_U64, 8, uint64_t) X(TLMPI_DT_F16, 2, uint16_t)        \
    X(TLMPI_DT_BF16, 2, uint16_t) X(TLMPI_DT_F32, 4, float) X(TLMPI_DT_F64, 8, double)

/* Bytes per element of an arithmetic type, 0 for any other value (an integer constant expression). */
#define TLMPI_DT_ELEM_SIZE(t)                                                                    \
    ((t) == TLMPI_DT_I8 || (t) == TLMPI_DT_U8 ? 1                                                \
     : (t) == TLMPI_DT_I16 || (t) == TLMPI_DT_U16 || (t) == TLMPI_DT_F16 || (t) == TLMPI_DT_BF16 ? 2 \
     : (t) == TLMPI_DT_I32 || (t) == TLMPI_DT_U32 || (t) == TLMPI_DT_F32 ? 4                     \
     : (t) == TLMPI_DT_I64 || (t) == TLMPI_DT_U64 || (t) == TLMPI_DT_F64 ? 8 : 0)

/* Initialiser of a size_t/int table indexed by the arithmetic types: { 1, 1, 2, ... }. */
#define TLMPI_DT__SIZE_ENTRY(e, bytes, ctype) bytes,
#define TLMPI_DT_ELEM_SIZES { TLMPI_DT_ARITH_TABLE(TLMPI_DT__SIZE_ENTRY) }

#ifndef __cplusplus
/* C side: the table agrees with the enum (order, count) and with the C types' sizes. */
#include <stdint.h>
#define TLMPI_DT__ONE(e, bytes, ctype) +1
#define TLMPI_DT__CHECK(e, bytes, ctype)                                                         \
    _Static_assert(sizeof(ctype) == (bytes) && TLMPI_DT_ELEM_SIZE(e) == (bytes), #e ": size");
_Static_assert((0 TLMPI_DT_ARITH_TABLE(TLMPI_DT__ONE)) == TLMPI_DT_NUM_ARITH, "TLMPI_DT_ARITH_TABLE lists every arithmetic type");
_Static_assert(sizeof((char[])TLMPI_DT_ELEM_SIZES) == TLMPI_DT_NUM_ARITH, "TLMPI_DT_ELEM_SIZES has one entry per type");
_Static_assert(TLMPI_DT_F64 == TLMPI_DT_NUM_ARITH - 1 && TLMPI_DT_ELEM_SIZE(TLMPI_DT_BYTES) == 0, "arithmetic types end at f64");
_Static_assert(TLMPI_OP_MAX == TLMPI_OP_NUM_ARITH - 1 && TLMPI_OP_COUNT == 6, "ops");
TLMPI_DT_ARITH_TABLE(TLMPI_DT__CHECK)
#undef TLMPI_DT__CHECK
#undef TLMPI_DT__ONE
#endif

#endif
