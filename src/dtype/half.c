#include "config.h"
#include "half.h"
#include "global.h"
#include "dtype.h"
#include "log.h"

#include <math.h>
#include <string.h>

float tlmpi_f16_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f;
    uint32_t man = h & 0x3ff;
    uint32_t bits;
    float f;

    if (exp == 0) {
        if (man == 0) {
            bits = sign;
        } else { /* subnormal: renormalise */
            exp = 127 - 15 + 1;
            while (!(man & 0x400)) {
                man <<= 1;
                exp--;
            }
            bits = sign | (exp << 23) | ((man & 0x3ff) << 13);
        }
    } else if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (man << 13);
    } else {
        bits = sign | ((exp + 127 - 15) << 23) | (man << 13);
    }
    memcpy(&f, &bits, 4);
    return f;
}

uint16_t tlmpi_float_to_f16(float f)
{
    uint32_t x;
    uint32_t sign, man;
    int exp;

    memcpy(&x, &f, 4);
    sign = (x >> 16) & 0x8000;
    exp = (int)((x >> 23) & 0xff) - 127 + 15;
    man = x & 0x7fffff;
    if (((x >> 23) & 0xff) == 0xff) { /* inf / nan */
        return (uint16_t)(sign | 0x7c00 | (man ? 0x200 : 0));
    }
    if (exp >= 0x1f) {
        return (uint16_t)(sign | 0x7c00);
    }
    if (exp <= 0) { /* subnormal or zero */
        uint32_t m, shift, r, half;

        if (exp < -10) {
            return (uint16_t)sign;
        }
        m = man | 0x800000;
        shift = (uint32_t)(14 - exp);
        r = m >> shift;
        half = 1u << (shift - 1);
        if ((m & ((1u << shift) - 1)) > half || ((m & ((1u << shift) - 1)) == half && (r & 1))) {
            r++;
        }
        return (uint16_t)(sign | r);
    }
    {
        uint32_t r = ((uint32_t)exp << 10) | (man >> 13);
        uint32_t rem = man & 0x1fff;

        if (rem > 0x1000 || (rem == 0x1000 && (r & 1))) {
            r++; /* may carry into the exponent, giving inf correctly */
        }
        return (uint16_t)(sign | r);
    }
}

float tlmpi_bf16_to_float(uint16_t h)
{
    uint32_t bits = (uint32_t)h << 16;
    float f;

    memcpy(&f, &bits, 4);
    return f;
}

uint16_t tlmpi_float_to_bf16(float f)
{
    uint32_t x;

    memcpy(&x, &f, 4);
    if ((x & 0x7f800000u) == 0x7f800000u && (x & 0x7fffff)) {
        return (uint16_t)((x >> 16) | 0x40); /* quiet nan */
    }
    x += 0x7fff + ((x >> 16) & 1);
    return (uint16_t)(x >> 16);
}

#define HALF_OP(_name, _to, _from, _expr)                                                     \
    static void _name(void *in, void *inout, int *len, MPI_Datatype *dt)                    \
    {                                                                                        \
        const uint16_t *a = in;                                                              \
        uint16_t *b = inout;                                                                 \
        int i;                                                                               \
        for (i = 0; i < *len; i++) {                                                         \
            float x = _to(a[i]), y = _to(b[i]);                                              \
            b[i] = _from(_expr);                                                             \
        }                                                                                    \
    }
HALF_OP(f16_sum, tlmpi_f16_to_float, tlmpi_float_to_f16, x + y)
HALF_OP(f16_prod, tlmpi_f16_to_float, tlmpi_float_to_f16, x * y)
HALF_OP(f16_min, tlmpi_f16_to_float, tlmpi_float_to_f16, fminf(x, y))
HALF_OP(f16_max, tlmpi_f16_to_float, tlmpi_float_to_f16, fmaxf(x, y))
HALF_OP(bf16_sum, tlmpi_bf16_to_float, tlmpi_float_to_bf16, x + y)
HALF_OP(bf16_prod, tlmpi_bf16_to_float, tlmpi_float_to_bf16, x * y)
HALF_OP(bf16_min, tlmpi_bf16_to_float, tlmpi_float_to_bf16, fminf(x, y))
HALF_OP(bf16_max, tlmpi_bf16_to_float, tlmpi_float_to_bf16, fmaxf(x, y))

static MPI_User_function *const half_fns[2][TLMPI_OP_NUM_ARITH] = {
    { f16_sum, f16_prod, f16_min, f16_max },
    { bf16_sum, bf16_prod, bf16_min, bf16_max },
};
static MPI_Op half_ops[2][TLMPI_OP_NUM_ARITH];

static MPI_Datatype make_type(const char *name)
{
    MPI_Datatype t = MPI_DATATYPE_NULL;

    if (PMPI_Type_contiguous(2, MPI_BYTE, &t) != MPI_SUCCESS || PMPI_Type_commit(&t) != MPI_SUCCESS) {
        return MPI_DATATYPE_NULL;
    }
    PMPI_Type_set_name(t, (char *)name);
    return t;
}

int tlmpi_half_init(void)
{
    int k, o;

    tlmpi_g.type_f16 = make_type("tlmpi_float16");
    tlmpi_g.type_bf16 = make_type("tlmpi_bfloat16");
    for (k = 0; k < 2; k++) {
        for (o = 0; o < TLMPI_OP_NUM_ARITH; o++) {
            if (PMPI_Op_create(half_fns[k][o], 1, &half_ops[k][o]) != MPI_SUCCESS) {
                half_ops[k][o] = MPI_OP_NULL;
            }
        }
    }
    return 0;
}

void tlmpi_half_finalize(void)
{
    int k, o;

    for (k = 0; k < 2; k++) {
        for (o = 0; o < TLMPI_OP_NUM_ARITH; o++) {
            if (half_ops[k][o] != MPI_OP_NULL) {
                PMPI_Op_free(&half_ops[k][o]);
            }
        }
    }
    if (tlmpi_g.type_f16 != MPI_DATATYPE_NULL) {
        PMPI_Type_free(&tlmpi_g.type_f16);
    }
    if (tlmpi_g.type_bf16 != MPI_DATATYPE_NULL) {
        PMPI_Type_free(&tlmpi_g.type_bf16);
    }
}

MPI_Op tlmpi_half_op(tlmpi_dtype_t dt, tlmpi_op_t op)
{
    if ((dt != TLMPI_DT_F16 && dt != TLMPI_DT_BF16) || op >= TLMPI_OP_NUM_ARITH) {
        return MPI_OP_NULL;
    }
    return half_ops[dt == TLMPI_DT_BF16][op];
}

TLMPI_EXPORT MPI_Datatype tlmpi_type_float16(void)
{
    return tlmpi_core_ready() ? tlmpi_g.type_f16 : MPI_DATATYPE_NULL;
}

TLMPI_EXPORT MPI_Datatype tlmpi_type_bfloat16(void)
{
    return tlmpi_core_ready() ? tlmpi_g.type_bf16 : MPI_DATATYPE_NULL;
}
