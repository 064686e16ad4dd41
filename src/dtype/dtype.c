#include "config.h"
#include "dtype.h"
#include "global.h"

#include <string.h>

typedef struct {
    MPI_Datatype dt;
    tlmpi_dtype_t t;
} dt_entry_t;

#define DT_MAX 64
static dt_entry_t dt_table[DT_MAX];
static int dt_n;
static int dt_ready;

static const size_t elem_sizes[TLMPI_DT_NUM_ARITH] = { 1, 1, 2, 2, 4, 4, 8, 8, 2, 2, 4, 8 };
static const char *const dt_names[TLMPI_DT_COUNT] = {
    "i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64", "f16", "bf16", "f32", "f64", "bytes", "derived"
};
static const char *const op_names[TLMPI_OP_COUNT] = { "sum", "prod", "min", "max", "other", "user" };

static void add(MPI_Datatype dt, tlmpi_dtype_t t)
{
    if (dt != MPI_DATATYPE_NULL && dt_n < DT_MAX) {
        dt_table[dt_n].dt = dt;
        dt_table[dt_n].t = t;
        dt_n++;
    }
}

/* C integer types whose width depends on the ABI: classify by size and signedness. */
static void add_int(MPI_Datatype dt, size_t size, int is_signed)
{
    tlmpi_dtype_t t;

    switch (size) {
    case 1: t = is_signed ? TLMPI_DT_I8 : TLMPI_DT_U8; break;
    case 2: t = is_signed ? TLMPI_DT_I16 : TLMPI_DT_U16; break;
    case 4: t = is_signed ? TLMPI_DT_I32 : TLMPI_DT_U32; break;
    case 8: t = is_signed ? TLMPI_DT_I64 : TLMPI_DT_U64; break;
    default: return;
    }
    add(dt, t);
}

/* Fortran types may be MPI_DATATYPE_NULL or unusable when the MPI was built without Fortran. */
static void add_fortran(MPI_Datatype dt, int is_float)
{
    int size = 0;

    if (dt == MPI_DATATYPE_NULL || PMPI_Type_size(dt, &size) != MPI_SUCCESS) {
        return;
    }
    if (is_float) {
        if (size == 4) {
            add(dt, TLMPI_DT_F32);
        } else if (size == 8) {
            add(dt, TLMPI_DT_F64);
        }
    } else {
        add_int(dt, (size_t)size, 1);
    }
}

void tlmpi_dtype_init(void)
{
    if (dt_ready) {
        return;
    }
    /* most frequent first: the lookup is a linear scan */
    add(MPI_FLOAT, TLMPI_DT_F32);
    add(MPI_DOUBLE, TLMPI_DT_F64);
    add_int(MPI_INT, sizeof(int), 1);
    add(MPI_CHAR, TLMPI_DT_I8); /* OSU's default; char is signed on the supported ABIs */
    add_int(MPI_LONG, sizeof(long), 1);
    add_int(MPI_LONG_LONG, sizeof(long long), 1);
    add_int(MPI_UNSIGNED, sizeof(unsigned), 0);
    add_int(MPI_UNSIGNED_LONG, sizeof(unsigned long), 0);
    add_int(MPI_UNSIGNED_LONG_LONG, sizeof(unsigned long long), 0);
    add(MPI_SIGNED_CHAR, TLMPI_DT_I8);
    add(MPI_UNSIGNED_CHAR, TLMPI_DT_U8);
    add_int(MPI_SHORT, sizeof(short), 1);
    add_int(MPI_UNSIGNED_SHORT, sizeof(unsigned short), 0);
    add(MPI_INT8_T, TLMPI_DT_I8);
    add(MPI_UINT8_T, TLMPI_DT_U8);
    add(MPI_INT16_T, TLMPI_DT_I16);
    add(MPI_UINT16_T, TLMPI_DT_U16);
    add(MPI_INT32_T, TLMPI_DT_I32);
    add(MPI_UINT32_T, TLMPI_DT_U32);
    add(MPI_INT64_T, TLMPI_DT_I64);
    add(MPI_UINT64_T, TLMPI_DT_U64);
    add(MPI_AINT, TLMPI_DT_I64);
    add(MPI_OFFSET, TLMPI_DT_I64);
#ifdef MPIX_C_FLOAT16
    add(MPIX_C_FLOAT16, TLMPI_DT_F16);
#endif
#ifdef MPIX_BFLOAT16
    add(MPIX_BFLOAT16, TLMPI_DT_BF16);
#endif
    add_fortran(MPI_REAL, 1);
    add_fortran(MPI_DOUBLE_PRECISION, 1);
    add_fortran(MPI_INTEGER, 0);
    dt_ready = 1;
}

tlmpi_dtype_t tlmpi_dtype_classify(MPI_Datatype dt, int *size_p)
{
    int i, ni, na, nd, combiner;

    *size_p = 0;
    for (i = 0; i < dt_n; i++) {
        if (dt_table[i].dt == dt) {
            *size_p = (int)elem_sizes[dt_table[i].t];
            return dt_table[i].t;
        }
    }
    if (dt == MPI_DATATYPE_NULL) {
        return TLMPI_DT_DERIVED;
    }
    if (tlmpi_g.type_f16 != MPI_DATATYPE_NULL && dt == tlmpi_g.type_f16) {
        *size_p = 2;
        return TLMPI_DT_F16;
    }
    if (tlmpi_g.type_bf16 != MPI_DATATYPE_NULL && dt == tlmpi_g.type_bf16) {
        *size_p = 2;
        return TLMPI_DT_BF16;
    }
    if (PMPI_Type_get_envelope(dt, &ni, &na, &nd, &combiner) != MPI_SUCCESS) {
        return TLMPI_DT_DERIVED;
    }
    if (PMPI_Type_size(dt, size_p) != MPI_SUCCESS) {
        *size_p = 0;
    }
    return combiner == MPI_COMBINER_NAMED ? TLMPI_DT_BYTES : TLMPI_DT_DERIVED;
}

tlmpi_op_t tlmpi_op_classify(MPI_Op op)
{
    if (op == MPI_SUM) {
        return TLMPI_OP_SUM;
    }
    if (op == MPI_MAX) {
        return TLMPI_OP_MAX;
    }
    if (op == MPI_MIN) {
        return TLMPI_OP_MIN;
    }
    if (op == MPI_PROD) {
        return TLMPI_OP_PROD;
    }
    if (op == MPI_LAND || op == MPI_LOR || op == MPI_LXOR || op == MPI_BAND || op == MPI_BOR ||
        op == MPI_BXOR || op == MPI_MAXLOC || op == MPI_MINLOC || op == MPI_REPLACE ||
        op == MPI_NO_OP || op == MPI_OP_NULL) {
        return TLMPI_OP_OTHER;
    }
    return TLMPI_OP_USER;
}

size_t tlmpi_dtype_elem_size(tlmpi_dtype_t t)
{
    return (unsigned)t < TLMPI_DT_NUM_ARITH ? elem_sizes[t] : 0;
}

const char *tlmpi_dtype_name(tlmpi_dtype_t t)
{
    return (unsigned)t < TLMPI_DT_COUNT ? dt_names[t] : "?";
}

const char *tlmpi_op_name(tlmpi_op_t op)
{
    return (unsigned)op < TLMPI_OP_COUNT ? op_names[op] : "?";
}

int tlmpi_dtype_needs_own_op(tlmpi_dtype_t dt, tlmpi_op_t op)
{
    return (dt == TLMPI_DT_F16 || dt == TLMPI_DT_BF16) && op < TLMPI_OP_NUM_ARITH;
}
