/*
 * Unit tests (Check, fork mode, no MPI run): the per-call path decision of src/select.c, as a
 * table of named cases plus invariants checked over every combination of inputs.
 */
#include "config.h"
#include "plan.h"

#include <check.h>
#include <stdlib.h>

#define AG TLMPI_COLL_ALLGATHER
#define RSB TLMPI_COLL_REDUCE_SCATTER_BLOCK
#define AR TLMPI_COLL_ALLREDUCE
#define NCCL TLMPI_CAP_NCCL
#define STG TLMPI_CAP_STAGING
#define AWARE TLMPI_CAP_MPI_CUDA_AWARE
#define SHARED TLMPI_CAP_SHARED_GPU
#define SELF TLMPI_CAP_SELF
#define P_PASS TLMPI_PATH_PASSTHROUGH
#define P_HOSTOP TLMPI_PATH_HOSTOP
#define P_STG TLMPI_PATH_STAGING
#define P_NCCL TLMPI_PATH_NCCL
#define P_SELF TLMPI_PATH_SELF

typedef struct {
    const char *name;
    tlmpi_select_in_t in;
    tlmpi_path_t want;
} select_case_t;

/*                                 coll  bytes  dtype            contig op              dev caps                 tier */
static const select_case_t cases[] = {
    { "host f32 sum",            { AR,  4096, TLMPI_DT_F32,  1, TLMPI_OP_SUM,   0, NCCL | STG | AWARE, TLMPI_TIER_AUTO }, P_PASS },
    { "host i32 allgather",      { AG,  4096, TLMPI_DT_I32,  1, TLMPI_OP_SUM,   0, NCCL | STG,         TLMPI_TIER_AUTO }, P_PASS },
    { "host derived",            { AR,  4096, TLMPI_DT_DERIVED, 0, TLMPI_OP_USER, 0, NCCL | STG,       TLMPI_TIER_AUTO }, P_PASS },
    { "host f32 forced nccl",    { AR,  4096, TLMPI_DT_F32,  1, TLMPI_OP_SUM,   0, NCCL | STG,         TLMPI_TIER_NCCL }, P_PASS },
    { "host f16 sum",            { AR,  4096, TLMPI_DT_F16,  1, TLMPI_OP_SUM,   0, 0,                  TLMPI_TIER_AUTO }, P_HOSTOP },
    { "host bf16 max rsb",       { RSB, 4096, TLMPI_DT_BF16, 1, TLMPI_OP_MAX,   0, NCCL | STG,         TLMPI_TIER_AUTO }, P_HOSTOP },
    { "host f16 prod 0 bytes",   { AR,  0,    TLMPI_DT_F16,  1, TLMPI_OP_PROD,  0, 0,                  TLMPI_TIER_AUTO }, P_HOSTOP },
    { "host f16 allgather",      { AG,  4096, TLMPI_DT_F16,  1, TLMPI_OP_SUM,   0, 0,                  TLMPI_TIER_AUTO }, P_PASS },
    { "host f16 user op",        { AR,  4096, TLMPI_DT_F16,  1, TLMPI_OP_USER,  0, 0,                  TLMPI_TIER_AUTO }, P_PASS },
    { "host f16 other op",       { AR,  4096, TLMPI_DT_F16,  1, TLMPI_OP_OTHER, 0, 0,                  TLMPI_TIER_AUTO }, P_PASS },
    { "dev f32 sum nccl",        { AR,  4096, TLMPI_DT_F32,  1, TLMPI_OP_SUM,   1, NCCL | STG,         TLMPI_TIER_AUTO }, P_NCCL },
    { "dev f64 min rsb nccl",    { RSB, 4096, TLMPI_DT_F64,  1, TLMPI_OP_MIN,   1, NCCL | STG | AWARE, TLMPI_TIER_AUTO }, P_NCCL },
    { "dev bf16 sum nccl",       { AR,  4096, TLMPI_DT_BF16, 1, TLMPI_OP_SUM,   1, NCCL | STG,         TLMPI_TIER_AUTO }, P_NCCL },
    { "dev allgather contig",    { AG,  4096, TLMPI_DT_BYTES, 1, TLMPI_OP_OTHER, 1, NCCL | STG,        TLMPI_TIER_AUTO }, P_NCCL },
    { "dev shared gpu auto",     { AR,  4096, TLMPI_DT_F32,  1, TLMPI_OP_SUM,   1, NCCL | STG | SHARED, TLMPI_TIER_AUTO }, P_STG },
    { "dev shared gpu aware",    { AR,  4096, TLMPI_DT_F32,  1, TLMPI_OP_SUM,   1, NCCL | AWARE | SHARED, TLMPI_TIER_AUTO }, P_PASS },
    { "dev shared gpu forced",   { AR,  4096, TLMPI_DT_F32,  1, TLMPI_OP_SUM,   1, NCCL | STG | SHARED, TLMPI_TIER_NCCL }, P_NCCL },
    { "dev forced staging",      { AR,  4096, TLMPI_DT_F32,  1, TLMPI_OP_SUM,   1, NCCL | STG | AWARE, TLMPI_TIER_STAGING }, P_STG },
    { "dev forced mpi aware",    { AR,  4096, TLMPI_DT_F32,  1, TLMPI_OP_SUM,   1, NCCL | STG | AWARE, TLMPI_TIER_MPI }, P_PASS },
    { "dev forced mpi unaware",  { AR,  4096, TLMPI_DT_F32,  1, TLMPI_OP_SUM,   1, NCCL | STG,         TLMPI_TIER_MPI }, P_STG },
    { "dev forced mpi f16",      { AR,  4096, TLMPI_DT_F16,  1, TLMPI_OP_SUM,   1, NCCL | STG | AWARE, TLMPI_TIER_MPI }, P_STG },
    { "dev forced nccl no cap",  { AR,  4096, TLMPI_DT_F32,  1, TLMPI_OP_SUM,   1, STG,                TLMPI_TIER_NCCL }, P_STG },
    { "dev forced nccl i16",     { AR,  4096, TLMPI_DT_I16,  1, TLMPI_OP_SUM,   1, NCCL | STG,         TLMPI_TIER_NCCL }, P_STG },
    { "dev no caps",             { AR,  4096, TLMPI_DT_F32,  1, TLMPI_OP_SUM,   1, 0,                  TLMPI_TIER_AUTO }, P_STG },
    { "dev aware only",          { AR,  4096, TLMPI_DT_F32,  1, TLMPI_OP_SUM,   1, AWARE,              TLMPI_TIER_AUTO }, P_PASS },
    { "dev nccl-less staging",   { AR,  4096, TLMPI_DT_F32,  1, TLMPI_OP_SUM,   1, STG,                TLMPI_TIER_AUTO }, P_STG },
    { "dev i16 sum",             { AR,  4096, TLMPI_DT_I16,  1, TLMPI_OP_SUM,   1, NCCL | STG,         TLMPI_TIER_AUTO }, P_STG },
    { "dev u16 max rsb",         { RSB, 4096, TLMPI_DT_U16,  1, TLMPI_OP_MAX,   1, NCCL | STG,         TLMPI_TIER_AUTO }, P_STG },
    { "dev i16 aware",           { AR,  4096, TLMPI_DT_I16,  1, TLMPI_OP_SUM,   1, NCCL | AWARE,       TLMPI_TIER_AUTO }, P_PASS },
    { "dev f16 no nccl aware",   { AR,  4096, TLMPI_DT_F16,  1, TLMPI_OP_SUM,   1, AWARE,              TLMPI_TIER_AUTO }, P_STG },
    { "dev allgather noncontig", { AG,  4096, TLMPI_DT_DERIVED, 0, TLMPI_OP_OTHER, 1, NCCL | STG,     TLMPI_TIER_AUTO }, P_STG },
    { "dev ag noncontig forced", { AG,  4096, TLMPI_DT_DERIVED, 0, TLMPI_OP_OTHER, 1, NCCL | STG,     TLMPI_TIER_NCCL }, P_STG },
    { "dev user op",             { AR,  4096, TLMPI_DT_F32,  1, TLMPI_OP_USER,  1, NCCL | STG,         TLMPI_TIER_AUTO }, P_STG },
    { "dev bxor op",             { AR,  4096, TLMPI_DT_I32,  1, TLMPI_OP_OTHER, 1, NCCL | STG,         TLMPI_TIER_AUTO }, P_STG },
    { "dev derived allreduce",   { AR,  4096, TLMPI_DT_DERIVED, 0, TLMPI_OP_SUM, 1, NCCL | STG,        TLMPI_TIER_AUTO }, P_STG },
    { "dev 0 bytes",             { AR,  0,    TLMPI_DT_F32,  1, TLMPI_OP_SUM,   1, NCCL | STG,         TLMPI_TIER_AUTO }, P_PASS },
    { "dev 0 bytes forced nccl", { AR,  0,    TLMPI_DT_F32,  1, TLMPI_OP_SUM,   1, NCCL | STG,         TLMPI_TIER_NCCL }, P_PASS },
    { "dev 0 bytes f16",         { RSB, 0,    TLMPI_DT_F16,  1, TLMPI_OP_SUM,   1, 0,                  TLMPI_TIER_STAGING }, P_PASS },
    { "dev one rank auto",       { AR,  4096, TLMPI_DT_F32,  1, TLMPI_OP_SUM,   1, NCCL | STG | SELF,  TLMPI_TIER_AUTO }, P_SELF },
    { "dev one rank i16 user op",{ AR,  4096, TLMPI_DT_I16,  1, TLMPI_OP_USER,  1, NCCL | STG | SELF,  TLMPI_TIER_AUTO }, P_SELF },
    { "dev one rank allgather",  { AG,  4096, TLMPI_DT_BYTES, 1, TLMPI_OP_OTHER, 1, STG | SELF,       TLMPI_TIER_AUTO }, P_SELF },
    { "dev one rank f16 rsb",    { RSB, 4096, TLMPI_DT_F16,  1, TLMPI_OP_MAX,   1, SELF,               TLMPI_TIER_AUTO }, P_SELF },
    { "dev one rank noncontig",  { AR,  4096, TLMPI_DT_DERIVED, 0, TLMPI_OP_SUM, 1, NCCL | STG | SELF, TLMPI_TIER_AUTO }, P_STG },
    { "dev one rank forced nccl",{ AR,  4096, TLMPI_DT_F32,  1, TLMPI_OP_SUM,   1, NCCL | STG | SELF,  TLMPI_TIER_NCCL }, P_NCCL },
    { "dev one rank forced stg", { AR,  4096, TLMPI_DT_F32,  1, TLMPI_OP_SUM,   1, NCCL | STG | SELF,  TLMPI_TIER_STAGING }, P_STG },
    { "dev one rank 0 bytes",    { AR,  0,    TLMPI_DT_F32,  1, TLMPI_OP_SUM,   1, NCCL | STG | SELF,  TLMPI_TIER_AUTO }, P_PASS },
    { "host one rank",           { AR,  4096, TLMPI_DT_F32,  1, TLMPI_OP_SUM,   0, NCCL | STG | SELF,  TLMPI_TIER_AUTO }, P_PASS },
    { "dev 0 bytes allgather",   { AG,  0,    TLMPI_DT_BYTES, 1, TLMPI_OP_OTHER, 1, 0,                 TLMPI_TIER_AUTO }, P_PASS },
};

START_TEST(test_select_table)
{
    const select_case_t *c = &cases[_i];
    tlmpi_path_t got = tlmpi_select_path(&c->in);

    ck_assert_msg(got == c->want, "case '%s': got %s, want %s", c->name, tlmpi_path_name(got),
                  tlmpi_path_name(c->want));
}
END_TEST

START_TEST(test_select_helpers)
{
    ck_assert_int_eq(tlmpi_select_nccl_supports(AR, TLMPI_DT_F32, 1, TLMPI_OP_SUM), 1);
    ck_assert_int_eq(tlmpi_select_nccl_supports(AR, TLMPI_DT_I16, 1, TLMPI_OP_SUM), 0);
    ck_assert_int_eq(tlmpi_select_nccl_supports(AR, TLMPI_DT_U16, 1, TLMPI_OP_SUM), 0);
    ck_assert_int_eq(tlmpi_select_nccl_supports(AR, TLMPI_DT_BYTES, 1, TLMPI_OP_SUM), 0);
    ck_assert_int_eq(tlmpi_select_nccl_supports(AR, TLMPI_DT_F32, 1, TLMPI_OP_OTHER), 0);
    ck_assert_int_eq(tlmpi_select_nccl_supports(AG, TLMPI_DT_DERIVED, 1, TLMPI_OP_OTHER), 1);
    ck_assert_int_eq(tlmpi_select_nccl_supports(AG, TLMPI_DT_F32, 0, TLMPI_OP_SUM), 0);
    ck_assert_int_eq(tlmpi_select_needs_own_op(AR, TLMPI_DT_F16, TLMPI_OP_MIN), 1);
    ck_assert_int_eq(tlmpi_select_needs_own_op(RSB, TLMPI_DT_BF16, TLMPI_OP_PROD), 1);
    ck_assert_int_eq(tlmpi_select_needs_own_op(AG, TLMPI_DT_F16, TLMPI_OP_SUM), 0);
    ck_assert_int_eq(tlmpi_select_needs_own_op(AR, TLMPI_DT_F32, TLMPI_OP_SUM), 0);
    ck_assert_int_eq(tlmpi_select_needs_own_op(AR, TLMPI_DT_F16, TLMPI_OP_USER), 0);
}
END_TEST

/* Invariants over every combination of collective, dtype, contiguity, op, caps and tier. Plain
 * checks in the loop: a passing ck_assert writes to Check's pipe, too slow for a million cases. */
#define INV(_cond)                                                                           \
    do {                                                                                     \
        if (!(_cond)) {                                                                      \
            ck_abort_msg("invariant '%s' broken: coll %d dt %d contig %d op %d dev %d caps %#x "  \
                         "tier %d bytes %zu -> %s", #_cond, coll, dt, contig, op, dev, caps,  \
                         tier, sizes[b], tlmpi_path_name(p));                                 \
        }                                                                                    \
    } while (0)

START_TEST(test_select_invariants)
{
    static const size_t sizes[] = { 0, 1, 4096, (size_t)1 << 31 };
    tlmpi_select_in_t in;
    unsigned long n = 0;
    int coll, dt, contig, op, dev, tier;
    unsigned caps;
    size_t b;

    for (coll = 0; coll < TLMPI_COLL_COUNT; coll++)
    for (dt = 0; dt < TLMPI_DT_COUNT; dt++)
    for (contig = 0; contig < 2; contig++)
    for (op = 0; op < TLMPI_OP_COUNT; op++)
    for (dev = 0; dev < 2; dev++)
    for (caps = 0; caps < 128; caps++)
    for (tier = TLMPI_TIER_AUTO; tier <= TLMPI_TIER_MPI; tier++)
    for (b = 0; b < sizeof(sizes) / sizeof(sizes[0]); b++) {
        tlmpi_path_t p;
        int own = tlmpi_select_needs_own_op(coll, dt, op);

        in.coll = coll;
        in.bytes = sizes[b];
        in.dtype = dt;
        in.contiguous = contig;
        in.op = op;
        in.device = dev;
        in.caps = caps;
        in.tier = tier;
        p = tlmpi_select_path(&in);
        n++;
        INV(p >= TLMPI_PATH_PASSTHROUGH && p < TLMPI_PATH_COUNT);
        if (!dev) {
            INV(p == (own ? P_HOSTOP : P_PASS));
            continue;
        }
        if (sizes[b] == 0) {
            INV(p == P_PASS);
            continue;
        }
        /* a device pointer reaches PMPI only when the MPI is CUDA-aware and can reduce the type */
        if (p == P_PASS) {
            INV((caps & AWARE) && !own);
        }
        INV(p != P_HOSTOP);
        if (p == P_NCCL) {
            INV(caps & NCCL);
            INV(tlmpi_select_nccl_supports(coll, dt, contig, op));
            INV(tier == TLMPI_TIER_NCCL || !(caps & SHARED));
            INV(coll == AG || (dt != TLMPI_DT_I16 && dt != TLMPI_DT_U16)); /* AG moves bytes */
            INV(coll != AG || contig);
        }
        if (tier == TLMPI_TIER_STAGING) {
            /* without a staging pool a CUDA-aware MPI is the only other way */
            INV(p == P_STG || (!(caps & STG) && p == P_PASS));
        }
        if (tier == TLMPI_TIER_NCCL && (caps & NCCL) && tlmpi_select_nccl_supports(coll, dt, contig, op)) {
            INV(p == P_NCCL);
        }
        if (p == P_SELF) {
            INV(tier == TLMPI_TIER_AUTO && (caps & SELF) && contig);
        }
        if (tier == TLMPI_TIER_AUTO && (caps & SELF) && contig) {
            INV(p == P_SELF);
        }
        if (tier == TLMPI_TIER_AUTO && (caps & NCCL) && !(caps & SHARED) && !((caps & SELF) && contig) &&
            tlmpi_select_nccl_supports(coll, dt, contig, op)) {
            INV(p == P_NCCL);
        }
    }
    ck_assert(n > 100000);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("select");
    TCase *tc = tcase_create("select");
    SRunner *sr;
    int failed;

    tcase_add_loop_test(tc, test_select_table, 0, (int)(sizeof(cases) / sizeof(cases[0])));
    tcase_add_test(tc, test_select_helpers);
    tcase_add_test(tc, test_select_invariants);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
