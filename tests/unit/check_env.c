/*
 * Unit tests (Check, fork mode, no MPI run): the TLMPI_* table and its parsers (src/env.c), status
 * strings and the coll/path names (src/status.c), TLMPI_FAULT's sites (src/core/fault.c).
 */
#include "config.h"
#include "env.h"
#include "fault.h"
#include "tlmpi.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- env: defaults ------------------------------------------------------------------------ */

static int parse_typed(const tlmpi_env_desc_t *d, const char *s, int64_t *v)
{
    switch (d->type) {
    case TLMPI_ENV_T_BOOL:   return tlmpi_env_parse_bool(s, v);
    case TLMPI_ENV_T_INT:    return tlmpi_env_parse_int(s, v);
    case TLMPI_ENV_T_SIZE:   return tlmpi_env_parse_size(s, v);
    case TLMPI_ENV_T_ENUM:   return tlmpi_env_parse_enum(d->help, s, v);
    case TLMPI_ENV_T_TRI:    return tlmpi_env_parse_tri(s, v);
    case TLMPI_ENV_T_STRING:
    case TLMPI_ENV_T_LIST:   return s ? 0 : -1;
    }
    return -1;
}

static const char *lookup_none(const char *name)
{
    (void)name;
    return NULL;
}

START_TEST(test_defaults_parse)
{
    int i, j;

    for (i = 0; i < TLMPI_ENV_COUNT; i++) {
        const tlmpi_env_desc_t *d = &tlmpi_env_desc[i];
        int64_t v = -12345;

        ck_assert_ptr_nonnull(d->name);
        ck_assert_ptr_nonnull(d->help);
        ck_assert_msg(strlen(d->help) > 0, "TLMPI_%s has no help", d->name);
        ck_assert_msg(parse_typed(d, d->deflt, &v) == 0, "default '%s' of TLMPI_%s does not parse",
                      d->deflt, d->name);
        if (d->type == TLMPI_ENV_T_ENUM) {
            ck_assert_msg(strchr(d->help, '{') && strchr(d->help, '}'), "TLMPI_%s lists no values",
                          d->name);
        }
        for (j = 0; j < i; j++) {
            ck_assert_msg(strcmp(tlmpi_env_desc[j].name, d->name), "TLMPI_%s declared twice", d->name);
        }
    }
    /* nothing set: nothing bad, every value is its default */
    ck_assert_int_eq(tlmpi_env_load(lookup_none, NULL), 0);
    for (i = 0; i < TLMPI_ENV_COUNT; i++) {
        ck_assert_str_eq(tlmpi_env_val[i].s, tlmpi_env_desc[i].deflt);
        ck_assert_int_eq(tlmpi_env_val[i].is_set, 0);
    }
    ck_assert_int_eq(TLMPI_ENV_I(ENABLE), 1);
    ck_assert_int_eq(TLMPI_ENV_I(TIER), 0);          /* auto */
    ck_assert_int_eq(TLMPI_ENV_I(LOG_LEVEL), 1);     /* warn */
    ck_assert_int_eq(TLMPI_ENV_I(STAGING_CHUNK), 4 << 20);
    ck_assert_int_eq(TLMPI_ENV_I(NVLS), TLMPI_TRI_AUTO);
}
END_TEST

/* ---- env: parsers -------------------------------------------------------------------------- */

START_TEST(test_parse_bool)
{
    static const char *const ones[] = { "1", "yes", "YES", "y", "on", "On", "true", "TRUE" };
    static const char *const zeros[] = { "0", "no", "n", "off", "OFF", "false" };
    static const char *const bad[] = { "", "2", "-1", "yess", "maybe", " 1", "1 ", "enable" };
    size_t k;

    for (k = 0; k < sizeof(ones) / sizeof(ones[0]); k++) {
        int64_t v = -7;

        ck_assert_msg(tlmpi_env_parse_bool(ones[k], &v) == 0 && v == 1, "bool '%s'", ones[k]);
    }
    for (k = 0; k < sizeof(zeros) / sizeof(zeros[0]); k++) {
        int64_t v = -7;

        ck_assert_msg(tlmpi_env_parse_bool(zeros[k], &v) == 0 && v == 0, "bool '%s'", zeros[k]);
    }
    for (k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
        int64_t v = -7;

        ck_assert_msg(tlmpi_env_parse_bool(bad[k], &v) == -1 && v == -7, "bool '%s' accepted", bad[k]);
    }
}
END_TEST

START_TEST(test_parse_int)
{
    static const struct { const char *s; int64_t v; } good[] = {
        { "0", 0 }, { "42", 42 }, { "-3", -3 }, { "+5", 5 }, { "0x10", 16 },
        { "2147483648", 2147483648LL }, { "-9223372036854775807", -9223372036854775807LL },
    };
    static const char *const bad[] = { "", "4x", "1.5", "x", "99999999999999999999", "1e3", "--1" };
    size_t k;

    for (k = 0; k < sizeof(good) / sizeof(good[0]); k++) {
        int64_t v = -7;

        ck_assert_msg(tlmpi_env_parse_int(good[k].s, &v) == 0, "int '%s' rejected", good[k].s);
        ck_assert_msg(v == good[k].v, "int '%s' -> %lld", good[k].s, (long long)v);
    }
    for (k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
        int64_t v = -7;

        ck_assert_msg(tlmpi_env_parse_int(bad[k], &v) == -1 && v == -7, "int '%s' accepted", bad[k]);
    }
}
END_TEST

START_TEST(test_parse_size)
{
    static const struct { const char *s; int64_t v; } good[] = {
        { "0", 0 }, { "123", 123 }, { "1k", 1024 }, { "1K", 1024 }, { "1kb", 1024 },
        { "4m", 4 << 20 }, { "64M", 64 << 20 }, { "64MB", 64 << 20 }, { "2g", 2LL << 30 },
        { "8589934591g", (int64_t)((1ULL << 63) - (1ULL << 30)) },
    };
    static const char *const bad[] = { "", "-1", "k", "4t", "4mm", "4 m", "1.5m", "8589934592g",
                                       "99999999999999999999", "0x10", "4mb2" };
    size_t k;

    for (k = 0; k < sizeof(good) / sizeof(good[0]); k++) {
        int64_t v = -7;

        ck_assert_msg(tlmpi_env_parse_size(good[k].s, &v) == 0, "size '%s' rejected", good[k].s);
        ck_assert_msg(v == good[k].v, "size '%s' -> %lld", good[k].s, (long long)v);
    }
    for (k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
        int64_t v = -7;

        ck_assert_msg(tlmpi_env_parse_size(bad[k], &v) == -1 && v == -7, "size '%s' accepted", bad[k]);
    }
}
END_TEST

START_TEST(test_parse_tri_enum)
{
    const char *help = "pick one {auto,nccl,staging,mpi}; trailing text";
    int64_t v = -7;

    ck_assert(tlmpi_env_parse_tri("auto", &v) == 0 && v == TLMPI_TRI_AUTO);
    ck_assert(tlmpi_env_parse_tri("AUTO", &v) == 0 && v == TLMPI_TRI_AUTO);
    ck_assert(tlmpi_env_parse_tri("yes", &v) == 0 && v == TLMPI_TRI_YES);
    ck_assert(tlmpi_env_parse_tri("0", &v) == 0 && v == TLMPI_TRI_NO);
    v = -7;
    ck_assert(tlmpi_env_parse_tri("automatic", &v) == -1 && v == -7);
    ck_assert(tlmpi_env_parse_tri("", &v) == -1 && v == -7);

    ck_assert(tlmpi_env_parse_enum(help, "auto", &v) == 0 && v == 0);
    ck_assert(tlmpi_env_parse_enum(help, "nccl", &v) == 0 && v == 1);
    ck_assert(tlmpi_env_parse_enum(help, "STAGING", &v) == 0 && v == 2);
    ck_assert(tlmpi_env_parse_enum(help, "mpi", &v) == 0 && v == 3);
    v = -7;
    ck_assert(tlmpi_env_parse_enum(help, "nc", &v) == -1);
    ck_assert(tlmpi_env_parse_enum(help, "mpix", &v) == -1);
    ck_assert(tlmpi_env_parse_enum(help, "", &v) == -1);
    ck_assert(tlmpi_env_parse_enum(help, "auto,nccl", &v) == -1);
    ck_assert(tlmpi_env_parse_enum(help, "trailing", &v) == -1);
    ck_assert(tlmpi_env_parse_enum("no braces here", "auto", &v) == -1);
    ck_assert(tlmpi_env_parse_enum("unterminated {a,b", "a", &v) == -1);
    ck_assert_int_eq(v, -7);
}
END_TEST

/* ---- env: loading, unknown names ----------------------------------------------------------- */

static const char *lookup_some(const char *name)
{
    if (!strcmp(name, "TLMPI_TIER")) {
        return "staging";
    }
    if (!strcmp(name, "TLMPI_STAGING_CHUNK")) {
        return "1m";
    }
    if (!strcmp(name, "TLMPI_ENABLE")) {
        return "perhaps"; /* invalid: default kept, counted */
    }
    if (!strcmp(name, "TLMPI_COLLS")) {
        return "allreduce";
    }
    return NULL;
}

START_TEST(test_load_and_unknown)
{
    char *envv[] = {
        "TLMPI_TEIR=nccl",      /* typo: unknown */
        "TLMPI_ENABLEX=1",      /* prefix of a known name plus more: unknown */
        "TLMPI_TIER=staging",   /* known */
        "TLMPI_TEST_NP=4",      /* the test suite's own: ignored */
        "TLMPI_BENCH_TUNING_FILE=x", /* the benchmarks' own: ignored */
        "TLMPI_NOEQUALS",       /* no '=': not a variable assignment */
        "PATH=/usr/bin",
        "XTLMPI_TIER=1",
        "TLMPI_LOG_LEVEL=debug",
        "TLMPI_=1",             /* empty name: unknown */
        NULL
    };
    int bad;

    fprintf(stderr, "check_env: expected: the next TLMPI WARN lines (an invalid TLMPI_ENABLE value, unknown TLMPI_TEIR, "
                    "TLMPI_ENABLEX, TLMPI_) are provoked by this test\n");
    bad = tlmpi_env_load(lookup_some, envv);

    /* 3 unknown names + 1 invalid value */
    ck_assert_int_eq(bad, 4);
    ck_assert_int_eq(TLMPI_ENV_I(TIER), 2);
    ck_assert_int_eq(tlmpi_env_val[TLMPI_ENV_TIER].is_set, 1);
    ck_assert_str_eq(TLMPI_ENV_S(TIER), "staging");
    ck_assert_int_eq(TLMPI_ENV_I(STAGING_CHUNK), 1 << 20);
    ck_assert_int_eq(TLMPI_ENV_I(ENABLE), 1);
    ck_assert_int_eq(tlmpi_env_val[TLMPI_ENV_ENABLE].is_set, 0);
    ck_assert_str_eq(TLMPI_ENV_S(ENABLE), "1");
    ck_assert_str_eq(TLMPI_ENV_S(COLLS), "allreduce");

    /* reloading with nothing set resets to the defaults */
    ck_assert_int_eq(tlmpi_env_load(lookup_none, NULL), 0);
    ck_assert_int_eq(TLMPI_ENV_I(TIER), 0);
    ck_assert_str_eq(TLMPI_ENV_S(COLLS), "allgather,reduce_scatter_block,allreduce,allgatherv,reduce_scatter,bcast,reduce,alltoall");
}
END_TEST

START_TEST(test_list_has)
{
    ck_assert_int_eq(tlmpi_env_list_has("a,b,c", "b"), 1);
    ck_assert_int_eq(tlmpi_env_list_has("a,b,c", "a"), 1);
    ck_assert_int_eq(tlmpi_env_list_has("a,b,c", "c"), 1);
    ck_assert_int_eq(tlmpi_env_list_has("a,b,c", "B"), 1);
    ck_assert_int_eq(tlmpi_env_list_has("a,bc", "b"), 0);
    ck_assert_int_eq(tlmpi_env_list_has("ab,c", "b"), 0);
    ck_assert_int_eq(tlmpi_env_list_has("a,,b", "b"), 1);
    ck_assert_int_eq(tlmpi_env_list_has("", "x"), 0);
    ck_assert_int_eq(tlmpi_env_list_has("all", "anything"), 1);
    ck_assert_int_eq(tlmpi_env_list_has("ALL", "topo"), 1);
    ck_assert_int_eq(tlmpi_env_list_has("allgather", "all"), 0);
    ck_assert_int_eq(tlmpi_env_list_has("allgather,allreduce", "allreduce"), 1);
    ck_assert_int_eq(tlmpi_env_list_has("allgather,allreduce", "reduce_scatter_block"), 0);
    ck_assert_int_eq(tlmpi_env_list_has("allgather,reduce_scatter_block,allreduce", "reduce_scatter_block"), 1);
}
END_TEST

START_TEST(test_env_set)
{
    uint64_t h0, h1, h2;

    tlmpi_env_load(lookup_none, NULL);
    h0 = tlmpi_env_hash_all_eq();
    ck_assert_int_eq(tlmpi_env_set("TIER", "nccl"), 0);
    ck_assert_int_eq(TLMPI_ENV_I(TIER), 1);
    ck_assert_str_eq(TLMPI_ENV_S(TIER), "nccl");
    ck_assert_int_eq(tlmpi_env_val[TLMPI_ENV_TIER].is_set, 1);
    h1 = tlmpi_env_hash_all_eq();
    ck_assert(h1 != h0); /* TIER is all-ranks: part of the uniformity hash */

    ck_assert_int_eq(tlmpi_env_set("TIER", "bogus"), -2);
    ck_assert_int_eq(TLMPI_ENV_I(TIER), 1); /* unchanged */
    ck_assert_int_eq(tlmpi_env_set("TIER", NULL), -2);
    ck_assert_int_eq(tlmpi_env_set("NO_SUCH_VARIABLE", "1"), -1);
    ck_assert_int_eq(tlmpi_env_set("TLMPI_TIER", "nccl"), -1); /* names go without the prefix */
    ck_assert_int_eq(tlmpi_env_set("STAGING_POOL", "bad size"), -2);
    ck_assert_int_eq(tlmpi_env_set("STAGING_POOL", "128m"), 0);
    ck_assert_int_eq(TLMPI_ENV_I(STAGING_POOL), 128 << 20);
    /* STAGING_POOL is per rank: not in the hash */
    ck_assert(tlmpi_env_hash_all_eq() == h1);
    ck_assert_int_eq(tlmpi_env_set("TOPO_RANKS_PER_NODE", "2"), 0);
    ck_assert_int_eq(TLMPI_ENV_I(TOPO_RANKS_PER_NODE), 2);
    h2 = tlmpi_env_hash_all_eq();
    ck_assert(h2 != h1);
    ck_assert_int_eq(tlmpi_env_set("LOG_SUBSYS", "topo,comm"), 0);
    ck_assert_str_eq(TLMPI_ENV_S(LOG_SUBSYS), "topo,comm");
}
END_TEST

/* ---- status and names ---------------------------------------------------------------------- */

START_TEST(test_status_strings)
{
    static const tlmpi_status_t codes[] = {
#define CODE_(_n, _v, _s) TLMPI_ERR_##_n,
        TLMPI_STATUS_MAP(CODE_)
#undef CODE_
    };
    const size_t n = sizeof(codes) / sizeof(codes[0]);
    const char *unknown = tlmpi_status_string(TLMPI_STATUS_LAST);
    size_t i, j;

    ck_assert_int_eq(n, 9);
    ck_assert_ptr_nonnull(unknown);
    ck_assert_ptr_nonnull(tlmpi_status_string((tlmpi_status_t)12345));
    for (i = 0; i < n; i++) {
        const char *s = tlmpi_status_string(codes[i]);

        ck_assert_ptr_nonnull(s);
        ck_assert_msg(strlen(s) > 0, "status %d has an empty string", (int)codes[i]);
        ck_assert_msg(strcmp(s, unknown), "status %d reads as unknown", (int)codes[i]);
        for (j = 0; j < i; j++) {
            ck_assert_msg(strcmp(s, tlmpi_status_string(codes[j])), "status %d and %d share '%s'",
                          (int)codes[i], (int)codes[j], s);
        }
    }
    ck_assert_int_eq(TLMPI_OK, 0);
    ck_assert_str_eq(tlmpi_version(), TLMPI_VERSION_STRING);
}
END_TEST

START_TEST(test_coll_path_names)
{
    int i, j;

    for (i = 0; i < TLMPI_COLL_COUNT; i++) {
        ck_assert_ptr_nonnull(tlmpi_coll_name((tlmpi_coll_t)i));
        for (j = 0; j < i; j++) {
            ck_assert(strcmp(tlmpi_coll_name((tlmpi_coll_t)i), tlmpi_coll_name((tlmpi_coll_t)j)));
        }
    }
    ck_assert_str_eq(tlmpi_coll_name(TLMPI_COLL_ALLREDUCE), "allreduce");
    ck_assert_str_eq(tlmpi_coll_name(TLMPI_COLL_ALLGATHER), "allgather");
    ck_assert_str_eq(tlmpi_coll_name(TLMPI_COLL_REDUCE_SCATTER_BLOCK), "reduce_scatter_block");
    ck_assert_ptr_null(tlmpi_coll_name(TLMPI_COLL_COUNT));
    ck_assert_ptr_null(tlmpi_coll_name((tlmpi_coll_t)-1));
    for (i = 0; i < TLMPI_PATH_COUNT; i++) {
        ck_assert_ptr_nonnull(tlmpi_path_name((tlmpi_path_t)i));
        for (j = 0; j < i; j++) {
            ck_assert(strcmp(tlmpi_path_name((tlmpi_path_t)i), tlmpi_path_name((tlmpi_path_t)j)));
        }
    }
    ck_assert_str_eq(tlmpi_path_name(TLMPI_PATH_PASSTHROUGH), "passthrough");
    ck_assert_str_eq(tlmpi_path_name(TLMPI_PATH_NCCL), "nccl");
    ck_assert_str_eq(tlmpi_path_name(TLMPI_PATH_STAGING), "staging");
    ck_assert_ptr_null(tlmpi_path_name(TLMPI_PATH_COUNT));
    ck_assert_ptr_null(tlmpi_path_name((tlmpi_path_t)-1));
}
END_TEST

/* ---- TLMPI_FAULT: every site named in the variable's help, parsed per rank -------------------- */

START_TEST(test_fault_sites)
{
    const char *help = tlmpi_env_desc[TLMPI_ENV_FAULT].help;
    char want[64];
    int i;

    for (i = 0; i < TLMPI_FAULT_COUNT; i++) {
        snprintf(want, sizeof(want), " %s (", tlmpi_fault_name((tlmpi_fault_site_t)i));
        ck_assert_msg(strstr(help, want) != NULL, "TLMPI_FAULT's help (env.def) does not describe site %s",
                      tlmpi_fault_name((tlmpi_fault_site_t)i));
    }
    ck_assert_str_eq(tlmpi_fault_name(TLMPI_FAULT_COUNT), "?");
    /* the GIN wait mutants (hier_fused.c puts them in the fused kernels' descriptor): per rank */
    ck_assert_uint_eq(tlmpi_fault_configure("gin_wait_full:1,gin_wait_short", 1),
                      (1u << TLMPI_FAULT_GIN_WAIT_FULL) | (1u << TLMPI_FAULT_GIN_WAIT_SHORT));
    ck_assert(tlmpi_fault_hit(GIN_WAIT_FULL));
    ck_assert(tlmpi_fault_hit(GIN_WAIT_SHORT));
    ck_assert_uint_eq(tlmpi_fault_configure("gin_wait_full:1,gin_wait_short", 0), 1u << TLMPI_FAULT_GIN_WAIT_SHORT);
    ck_assert(!tlmpi_fault_hit(GIN_WAIT_FULL));
    ck_assert(tlmpi_fault_hit(GIN_WAIT_SHORT));
    /* unknown sites and bad ranks are ignored, the rest kept */
    ck_assert_uint_eq(tlmpi_fault_configure("gin_wait_fool,rail_stuck:x,gin_wait_full:2", 2), 1u << TLMPI_FAULT_GIN_WAIT_FULL);
    /* nothing set: nothing fires */
    ck_assert_uint_eq(tlmpi_fault_configure("", 0), 0);
    ck_assert(!tlmpi_fault_hit(GIN_WAIT_FULL));
    ck_assert(!tlmpi_fault_hit(RAIL_STUCK));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("env");
    TCase *tc = tcase_create("env");
    TCase *ts = tcase_create("status");
    SRunner *sr;
    int failed;

    tcase_add_test(tc, test_defaults_parse);
    tcase_add_test(tc, test_parse_bool);
    tcase_add_test(tc, test_parse_int);
    tcase_add_test(tc, test_parse_size);
    tcase_add_test(tc, test_parse_tri_enum);
    tcase_add_test(tc, test_load_and_unknown);
    tcase_add_test(tc, test_list_has);
    tcase_add_test(tc, test_env_set);
    tcase_add_test(ts, test_status_strings);
    tcase_add_test(ts, test_coll_path_names);
    tcase_add_test(ts, test_fault_sites);
    suite_add_tcase(s, tc);
    suite_add_tcase(s, ts);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
