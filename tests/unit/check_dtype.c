/*
 * Unit tests (Check, fork mode, no MPI run): element sizes and names (src/dtype.c) and the host
 * half-precision conversions (src/half.h). References: the compiler's _Float16 (soft-float or
 * F16C, round to nearest even) where available, and an exact double-precision rounding for bf16.
 */
#include "config.h"
#include "dtype.h"
#include "half.h"

#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint32_t f2u(float f)
{
    uint32_t u;

    memcpy(&u, &f, 4);
    return u;
}

static float u2f(uint32_t u)
{
    float f;

    memcpy(&f, &u, 4);
    return f;
}

START_TEST(test_elem_sizes_names)
{
    static const size_t want[TLMPI_DT_NUM_ARITH] = { 1, 1, 2, 2, 4, 4, 8, 8, 2, 2, 4, 8 };
    int i, j;

    for (i = 0; i < TLMPI_DT_NUM_ARITH; i++) {
        ck_assert_msg(tlmpi_dtype_elem_size((tlmpi_dtype_t)i) == want[i], "size of %s",
                      tlmpi_dtype_name((tlmpi_dtype_t)i));
    }
    ck_assert_int_eq(tlmpi_dtype_elem_size(TLMPI_DT_BYTES), 0);
    ck_assert_int_eq(tlmpi_dtype_elem_size(TLMPI_DT_DERIVED), 0);
    ck_assert_int_eq(tlmpi_dtype_elem_size(TLMPI_DT_COUNT), 0);
    ck_assert_int_eq(tlmpi_dtype_elem_size((tlmpi_dtype_t)-1), 0);
    for (i = 0; i < TLMPI_DT_COUNT; i++) {
        const char *n = tlmpi_dtype_name((tlmpi_dtype_t)i);

        ck_assert_ptr_nonnull(n);
        ck_assert_str_ne(n, "?");
        for (j = 0; j < i; j++) {
            ck_assert_str_ne(n, tlmpi_dtype_name((tlmpi_dtype_t)j));
        }
    }
    ck_assert_str_eq(tlmpi_dtype_name(TLMPI_DT_F16), "f16");
    ck_assert_str_eq(tlmpi_dtype_name(TLMPI_DT_BF16), "bf16");
    ck_assert_str_eq(tlmpi_dtype_name(TLMPI_DT_I16), "i16");
    ck_assert_str_eq(tlmpi_dtype_name(TLMPI_DT_COUNT), "?");
    for (i = 0; i < TLMPI_OP_COUNT; i++) {
        ck_assert_ptr_nonnull(tlmpi_op_name((tlmpi_op_t)i));
        ck_assert_str_ne(tlmpi_op_name((tlmpi_op_t)i), "?");
        for (j = 0; j < i; j++) {
            ck_assert_str_ne(tlmpi_op_name((tlmpi_op_t)i), tlmpi_op_name((tlmpi_op_t)j));
        }
    }
    ck_assert_str_eq(tlmpi_op_name(TLMPI_OP_SUM), "sum");
    ck_assert_str_eq(tlmpi_op_name(TLMPI_OP_COUNT), "?");
}
END_TEST

/* ---- f16 ------------------------------------------------------------------------------------ */

static int f16_is_nan(uint16_t h)
{
    return (h & 0x7c00) == 0x7c00 && (h & 0x3ff);
}

START_TEST(test_f16_roundtrip_all)
{
    uint32_t h;

    for (h = 0; h < 65536; h++) {
        float f = tlmpi_f16_to_float((uint16_t)h);
        uint16_t back = tlmpi_float_to_f16(f);

        if (f16_is_nan((uint16_t)h)) {
            ck_assert_msg(isnan(f), "f16 %04x is NaN but converts to %g", h, f);
            ck_assert_msg(f16_is_nan(back) && (back & 0x8000) == (h & 0x8000),
                          "f16 NaN %04x came back as %04x", h, back);
            continue;
        }
        ck_assert_msg(back == h, "f16 %04x -> %a -> %04x", h, f, back);
#ifdef __FLT16_MAX__
        {
            uint16_t hh = (uint16_t)h;
            _Float16 ref;

            memcpy(&ref, &hh, 2);
            ck_assert_msg(f2u((float)ref) == f2u(f), "f16 %04x: %a, compiler says %a", h, f, (float)ref);
        }
#endif
    }
    /* a few known values */
    ck_assert(tlmpi_f16_to_float(0x3c00) == 1.0f);
    ck_assert(tlmpi_f16_to_float(0xc000) == -2.0f);
    ck_assert(tlmpi_f16_to_float(0x7bff) == 65504.0f);
    ck_assert(tlmpi_f16_to_float(0x0001) == ldexpf(1.0f, -24));
    ck_assert(tlmpi_f16_to_float(0x0400) == ldexpf(1.0f, -14));
    ck_assert(isinf(tlmpi_f16_to_float(0x7c00)) && tlmpi_f16_to_float(0x7c00) > 0);
    ck_assert(f2u(tlmpi_f16_to_float(0x8000)) == 0x80000000u);
}
END_TEST

START_TEST(test_f16_rne)
{
    static const struct { float f; uint16_t h; } cases[] = {
        { 1.0f, 0x3c00 },
        { 1.0f + 0x1p-11f, 0x3c00 },                 /* tie, even stays */
        { 1.0f + 3 * 0x1p-11f, 0x3c02 },             /* tie, odd rounds up to even */
        { 1.0f + 0x1p-11f + 0x1p-20f, 0x3c01 },      /* just above the tie */
        { 1.0f + 0x1p-11f - 0x1p-22f, 0x3c00 },      /* just below the tie */
        { -1.0f - 0x1p-11f, 0xbc00 },
        { 65504.0f, 0x7bff },
        { 65519.0f, 0x7bff },                        /* below the overflow tie */
        { 65520.0f, 0x7c00 },                        /* tie at max: rounds to even = inf */
        { 1e6f, 0x7c00 },
        { -1e6f, 0xfc00 },
        { 0x1p-24f, 0x0001 },                        /* smallest subnormal */
        { 0x1p-25f, 0x0000 },                        /* tie between 0 and 1: even */
        { 0x1p-25f * 1.0001f, 0x0001 },
        { 3 * 0x1p-25f, 0x0002 },                    /* tie between 1 and 2: even */
        { 5 * 0x1p-25f, 0x0002 },                    /* tie between 2 and 3: even */
        { 0x1p-26f, 0x0000 },
        { -0x1p-26f, 0x8000 },
        { 0x1p-14f - 0x1p-25f, 0x0400 },             /* largest subnormal + half ulp: carries */
        { 0x1p-14f - 0x1p-24f, 0x03ff },
        { 0x1p-30f, 0x0000 },
        { 0.0f, 0x0000 },
        { -0.0f, 0x8000 },
        { 2049.0f, 0x6800 },                         /* 2048 + 1: tie, even */
        { 2051.0f, 0x6802 },
    };
    size_t k;

    for (k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        uint16_t h = tlmpi_float_to_f16(cases[k].f);

        ck_assert_msg(h == cases[k].h, "float %a -> f16 %04x, want %04x", cases[k].f, h, cases[k].h);
    }
    ck_assert(f16_is_nan(tlmpi_float_to_f16(NAN)));
    ck_assert(tlmpi_float_to_f16(INFINITY) == 0x7c00);
    ck_assert(tlmpi_float_to_f16(-INFINITY) == 0xfc00);
}
END_TEST

#ifdef __FLT16_MAX__
/* float -> f16 against the compiler on a stride through every float bit pattern */
START_TEST(test_f16_vs_compiler)
{
    uint64_t u;
    unsigned long checked = 0;

    for (u = 0; u < (1ULL << 32); u += 2039) {
        float f = u2f((uint32_t)u);
        _Float16 ref;
        uint16_t want, got;

        if (isnan(f)) {
            continue;
        }
        ref = (_Float16)f;
        memcpy(&want, &ref, 2);
        got = tlmpi_float_to_f16(f);
        ck_assert_msg(got == want, "float %a (%08x) -> f16 %04x, compiler %04x", f, (uint32_t)u, got, want);
        checked++;
    }
    ck_assert(checked > 2000000);
}
END_TEST
#endif

/* ---- bf16 ----------------------------------------------------------------------------------- */

START_TEST(test_bf16_roundtrip_all)
{
    uint32_t h;

    for (h = 0; h < 65536; h++) {
        float f = tlmpi_bf16_to_float((uint16_t)h);
        uint16_t back = tlmpi_float_to_bf16(f);

        ck_assert_msg(f2u(f) == h << 16, "bf16 %04x -> %08x", h, f2u(f));
        if ((h & 0x7f80) == 0x7f80 && (h & 0x7f)) {
            ck_assert_msg(isnan(tlmpi_bf16_to_float(back)) && (back & 0x8000) == (h & 0x8000),
                          "bf16 NaN %04x came back as %04x", h, back);
            continue;
        }
        ck_assert_msg(back == h, "bf16 %04x -> %a -> %04x", h, f, back);
    }
}
END_TEST

/* exact reference: the two neighbours in double, nearest wins, ties to the even pattern */
static uint16_t bf16_ref(float f)
{
    uint32_t x = f2u(f);
    uint16_t lo = (uint16_t)(x >> 16), hi = (uint16_t)(lo + 1);
    double dl, dh, d = f;

    if ((x & 0xffff) == 0) {
        return lo;
    }
    dl = (double)u2f((uint32_t)lo << 16);
    if ((hi & 0x7f80) == 0x7f80 && (lo & 0x7f80) != 0x7f80) {
        /* rounding up overflows to infinity: compare with the value 2^128 would have */
        dh = copysign(ldexp(1.0, 128), d);
    } else {
        dh = (double)u2f((uint32_t)hi << 16);
    }
    if (fabs(d - dl) < fabs(dh - d)) {
        return lo;
    }
    if (fabs(d - dl) > fabs(dh - d)) {
        return hi;
    }
    return (lo & 1) ? hi : lo;
}

START_TEST(test_bf16_rne)
{
    static const struct { float f; uint16_t h; } cases[] = {
        { 1.0f, 0x3f80 },
        { 1.0f + 0x1p-8f, 0x3f80 },                  /* tie, even stays */
        { 1.0f + 3 * 0x1p-8f, 0x3f82 },              /* tie, odd rounds up */
        { 1.0f + 0x1p-8f + 0x1p-20f, 0x3f81 },
        { -1.0f - 0x1p-8f - 0x1p-20f, 0xbf81 },
        { 0x1.fffffep127f, 0x7f80 },                 /* FLT_MAX rounds to inf */
        { 0x1.fep127f, 0x7f7f },                     /* largest finite bf16 */
        { 0x1p-149f, 0x0000 },                       /* float subnormal below half a bf16 ulp */
        { 0x1p-133f, 0x0001 },                       /* smallest bf16 subnormal */
        { 0.0f, 0x0000 },
        { -0.0f, 0x8000 },
    };
    uint64_t u;
    size_t k;

    for (k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        uint16_t h = tlmpi_float_to_bf16(cases[k].f);

        ck_assert_msg(h == cases[k].h, "float %a -> bf16 %04x, want %04x", cases[k].f, h, cases[k].h);
    }
    ck_assert(tlmpi_float_to_bf16(INFINITY) == 0x7f80);
    ck_assert(tlmpi_float_to_bf16(-INFINITY) == 0xff80);
    ck_assert(isnan(tlmpi_bf16_to_float(tlmpi_float_to_bf16(NAN))));
    /* a NaN whose payload sits only in the low 16 bits must stay NaN, not become inf */
    ck_assert(isnan(tlmpi_bf16_to_float(tlmpi_float_to_bf16(u2f(0x7f800001u)))));
    for (u = 0; u < (1ULL << 32); u += 2039) {
        float f = u2f((uint32_t)u);

        if (isnan(f)) {
            continue;
        }
        ck_assert_msg(tlmpi_float_to_bf16(f) == bf16_ref(f), "float %a (%08x) -> bf16 %04x, want %04x",
                      f, (uint32_t)u, tlmpi_float_to_bf16(f), bf16_ref(f));
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("dtype");
    TCase *td = tcase_create("dtype");
    TCase *th = tcase_create("half");
    SRunner *sr;
    int failed;

    tcase_add_test(td, test_elem_sizes_names);
    tcase_add_test(th, test_f16_roundtrip_all);
    tcase_add_test(th, test_f16_rne);
#ifdef __FLT16_MAX__
    tcase_add_test(th, test_f16_vs_compiler);
#endif
    tcase_add_test(th, test_bf16_roundtrip_all);
    tcase_add_test(th, test_bf16_rne);
    tcase_set_timeout(th, 60);
    suite_add_tcase(s, td);
    suite_add_tcase(s, th);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
