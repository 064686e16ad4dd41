/*
 * Unit tests (Check, fork mode, no MPI run, no GPU): GPU -> NIC locality from the hwloc XML
 * fixtures of tests/fixtures (loaded through HWLOC_XMLFILE; each test runs in its own forked
 * process and also resets the cached topology, so CK_FORK=no works too), and the fake-node color.
 * The expected answers are written out here, independently of tests/fixtures/gen_topo.py.
 */
#include "config.h"
#include "hwtopo.h"
#include "env.h"
#include "topo.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef TLMPI_FIXTURE_DIR
#define TLMPI_FIXTURE_DIR "tests/fixtures"
#endif

#ifdef HAVE_HWLOC
static void use_fixture(const char *name)
{
    char path[4096];
    const char *dir = getenv("TLMPI_TEST_FIXTURE_DIR");

    snprintf(path, sizeof(path), "%s/%s", dir ? dir : TLMPI_FIXTURE_DIR, name);
    ck_assert_msg(access(path, R_OK) == 0, "fixture %s missing", path);
    setenv("HWLOC_XMLFILE", path, 1);
    tlmpi_hwtopo_reset();
}

typedef struct {
    const char *busid;
    const char *nic;      /* "" = none */
    int rail_id;
    const char *dist;
    int hops;
    int numa;
} gpu_expect_t;

typedef struct {
    const char *file;
    int ngpu, nnic;
    int cuda_osdevs;      /* 1 if GPUs carry cudaN OSDevs */
    gpu_expect_t gpu[8];
} fixture_expect_t;

/* Hops: edges from the GPU's PCI device up to the common ancestor and down to the NIC's OSDev. */
static const fixture_expect_t fixtures[] = {
    { "dgx8-cuda.xml", 8, 8, 1, {
        { "0000:1b:00.0", "mlx5_0", 0, "PIX", 5, 0 }, { "0000:2b:00.0", "mlx5_1", 1, "PIX", 5, 0 },
        { "0000:3b:00.0", "mlx5_2", 2, "PIX", 5, 0 }, { "0000:4b:00.0", "mlx5_3", 3, "PIX", 5, 0 },
        { "0000:93:00.0", "mlx5_4", 4, "PIX", 5, 1 }, { "0000:a3:00.0", "mlx5_5", 5, "PIX", 5, 1 },
        { "0000:bb:00.0", "mlx5_6", 6, "PIX", 5, 1 }, { "0000:cb:00.0", "mlx5_7", 7, "PIX", 5, 1 } } },
    { "dgx8-debian.xml", 8, 8, 0, {
        { "0000:1b:00.0", "mlx5_0", 0, "PIX", 5, 0 }, { "0000:2b:00.0", "mlx5_1", 1, "PIX", 5, 0 },
        { "0000:3b:00.0", "mlx5_2", 2, "PIX", 5, 0 }, { "0000:4b:00.0", "mlx5_3", 3, "PIX", 5, 0 },
        { "0000:93:00.0", "mlx5_4", 4, "PIX", 5, 1 }, { "0000:a3:00.0", "mlx5_5", 5, "PIX", 5, 1 },
        { "0000:bb:00.0", "mlx5_6", 6, "PIX", 5, 1 }, { "0000:cb:00.0", "mlx5_7", 7, "PIX", 5, 1 } } },
    { "gpu4-nic2.xml", 4, 2, 0, {
        { "0000:12:00.0", "mlx5_0", 0, "PIX", 5, 0 },   /* same switch */
        { "0000:1a:00.0", "mlx5_0", 0, "PHB", 7, 0 },   /* other switch, same host bridge */
        { "0000:52:00.0", "mlx5_1", 1, "NODE", 8, 0 },  /* other host bridge; mlx5_1 is closer */
        { "0000:92:00.0", "mlx5_1", 1, "SYS", 10, 1 } } }, /* other socket */
    { "gpu2-pxb.xml", 2, 1, 0, {
        { "0000:13:00.0", "mlx5_0", 0, "PIX", 5, 0 },
        { "0000:16:00.0", "mlx5_0", 0, "PXB", 7, 0 } } },  /* behind a second switch */
    { "gpu4-nonic.xml", 4, 0, 0, {
        { "0000:11:00.0", "", -1, "NONE", -1, 0 }, { "0000:12:00.0", "", -1, "NONE", -1, 0 },
        { "0000:81:00.0", "", -1, "NONE", -1, 1 }, { "0000:82:00.0", "", -1, "NONE", -1, 1 } } },
};
#define NFIXTURES ((int)(sizeof(fixtures) / sizeof(fixtures[0])))

START_TEST(test_fixture_gpus)
{
    const fixture_expect_t *fx = &fixtures[_i];
    int g;

    use_fixture(fx->file);
    ck_assert_msg(tlmpi_hwtopo_gpu_count() == fx->ngpu, "%s: %d GPUs, want %d", fx->file,
                  tlmpi_hwtopo_gpu_count(), fx->ngpu);
    ck_assert_msg(tlmpi_hwtopo_nic_count() == fx->nnic, "%s: %d NICs, want %d", fx->file,
                  tlmpi_hwtopo_nic_count(), fx->nnic);
    for (g = 0; g < fx->ngpu; g++) {
        const gpu_expect_t *e = &fx->gpu[g];
        tlmpi_hwtopo_info_t info;
        char busid[64];

        ck_assert_int_eq(tlmpi_hwtopo_gpu_busid(g, busid, sizeof(busid)), TLMPI_OK);
        ck_assert_msg(!strcmp(busid, e->busid), "%s: GPU %d is %s, want %s", fx->file, g, busid, e->busid);
        memset(&info, 0x5a, sizeof(info)); /* poison */
        ck_assert_int_eq(tlmpi_hwtopo_gpu_locality(busid, &info), TLMPI_OK);
        ck_assert_str_eq(info.gpu_busid, e->busid);
        ck_assert_msg(!strcmp(info.nic, e->nic), "%s: GPU %d -> NIC '%s', want '%s'", fx->file, g,
                      info.nic, e->nic);
        ck_assert_msg(info.rail_id == e->rail_id, "%s: GPU %d rail %d, want %d", fx->file, g,
                      info.rail_id, e->rail_id);
        ck_assert_msg(!strcmp(tlmpi_hwtopo_dist_name(info.dist), e->dist), "%s: GPU %d %s, want %s",
                      fx->file, g, tlmpi_hwtopo_dist_name(info.dist), e->dist);
        ck_assert_msg(info.hops == e->hops, "%s: GPU %d %d hops, want %d", fx->file, g, info.hops, e->hops);
        ck_assert_msg(info.numa_node == e->numa, "%s: GPU %d numa %d, want %d", fx->file, g,
                      info.numa_node, e->numa);
        ck_assert_int_eq(info.nic_count, fx->nnic);
        if (fx->cuda_osdevs) {
            char want[16];

            snprintf(want, sizeof(want), "cuda%d", g);
            ck_assert_str_eq(info.gpu_osdev, want);
        } else {
            ck_assert_str_eq(info.gpu_osdev, "");
        }
        if (e->rail_id >= 0) {
            char name[64];

            ck_assert_int_eq(tlmpi_hwtopo_nic_name(e->rail_id, name, sizeof(name)), TLMPI_OK);
            ck_assert_str_eq(name, e->nic);
        }
    }
    /* past the end */
    ck_assert_int_eq(tlmpi_hwtopo_gpu_busid(fx->ngpu, (char[64]){ 0 }, 64), TLMPI_ERR_NOT_FOUND);
    ck_assert_int_eq(tlmpi_hwtopo_nic_name(fx->nnic, (char[64]){ 0 }, 64), TLMPI_ERR_NOT_FOUND);
    ck_assert_int_eq(tlmpi_hwtopo_gpu_busid(-1, (char[64]){ 0 }, 64), TLMPI_ERR_NOT_FOUND);
}
END_TEST

/* Bus ids as the CUDA runtime prints them: 8-digit domain, upper case; also without a domain. */
START_TEST(test_busid_forms)
{
    tlmpi_hwtopo_info_t info;

    use_fixture("dgx8-debian.xml");
    ck_assert_int_eq(tlmpi_hwtopo_gpu_locality("00000000:CB:00.0", &info), TLMPI_OK);
    ck_assert_str_eq(info.gpu_busid, "0000:cb:00.0");
    ck_assert_str_eq(info.nic, "mlx5_7");
    ck_assert_int_eq(tlmpi_hwtopo_gpu_locality("0000:2B:00.0", &info), TLMPI_OK);
    ck_assert_int_eq(info.rail_id, 1);
    ck_assert_int_eq(tlmpi_hwtopo_gpu_locality("3b:00.0", &info), TLMPI_OK);
    ck_assert_int_eq(info.rail_id, 2);
    /* not a device of this machine */
    ck_assert_int_eq(tlmpi_hwtopo_gpu_locality("0000:ee:00.0", &info), TLMPI_ERR_NOT_FOUND);
    ck_assert_int_eq(tlmpi_hwtopo_gpu_locality("0001:1b:00.0", &info), TLMPI_ERR_NOT_FOUND);
    /* malformed */
    ck_assert_int_eq(tlmpi_hwtopo_gpu_locality("", &info), TLMPI_ERR_INVALID_ARG);
    ck_assert_int_eq(tlmpi_hwtopo_gpu_locality("gpu0", &info), TLMPI_ERR_INVALID_ARG);
    ck_assert_int_eq(tlmpi_hwtopo_gpu_locality("0000:1b:00.0x", &info), TLMPI_ERR_INVALID_ARG);
    ck_assert_int_eq(tlmpi_hwtopo_gpu_locality(NULL, &info), TLMPI_ERR_INVALID_ARG);
    ck_assert_int_eq(tlmpi_hwtopo_gpu_locality("0000:1b:00.0", NULL), TLMPI_ERR_INVALID_ARG);
}
END_TEST

/* The cache is per process; reset makes a new HWLOC_XMLFILE take effect. */
START_TEST(test_reset_switches_fixture)
{
    tlmpi_hwtopo_info_t info;

    use_fixture("gpu4-nic2.xml");
    ck_assert_int_eq(tlmpi_hwtopo_gpu_count(), 4);
    setenv("HWLOC_XMLFILE", "/nonexistent/topology.xml", 1);
    ck_assert_int_eq(tlmpi_hwtopo_gpu_count(), 4); /* still cached */
    use_fixture("dgx8-cuda.xml");
    ck_assert_int_eq(tlmpi_hwtopo_gpu_count(), 8);
    ck_assert_int_eq(tlmpi_hwtopo_gpu_locality("0000:93:00.0", &info), TLMPI_OK);
    ck_assert_str_eq(info.nic, "mlx5_4");
}
END_TEST

START_TEST(test_hwloc_disabled)
{
    tlmpi_hwtopo_info_t info;

    use_fixture("dgx8-cuda.xml");
    ck_assert_int_eq(tlmpi_env_set("HWLOC", "0"), 0);
    ck_assert_int_eq(tlmpi_hwtopo_gpu_count(), 0);
    ck_assert_int_eq(tlmpi_hwtopo_nic_count(), 0);
    ck_assert_int_eq(tlmpi_hwtopo_gpu_locality("0000:1b:00.0", &info), TLMPI_ERR_NOT_FOUND);
    ck_assert_int_eq(tlmpi_env_set("HWLOC", "1"), 0);
    ck_assert_int_eq(tlmpi_hwtopo_gpu_locality("0000:1b:00.0", &info), TLMPI_OK);
    ck_assert_str_eq(info.nic, "mlx5_0");
}
END_TEST

#else
START_TEST(test_no_hwloc)
{
    tlmpi_hwtopo_info_t info;

    ck_assert_int_eq(tlmpi_hwtopo_gpu_count(), 0);
    ck_assert_int_eq(tlmpi_hwtopo_gpu_locality("0000:1b:00.0", &info), TLMPI_ERR_NOT_FOUND);
}
END_TEST
#endif

START_TEST(test_dist_names)
{
    ck_assert_str_eq(tlmpi_hwtopo_dist_name(TLMPI_HWTOPO_PIX), "PIX");
    ck_assert_str_eq(tlmpi_hwtopo_dist_name(TLMPI_HWTOPO_PXB), "PXB");
    ck_assert_str_eq(tlmpi_hwtopo_dist_name(TLMPI_HWTOPO_PHB), "PHB");
    ck_assert_str_eq(tlmpi_hwtopo_dist_name(TLMPI_HWTOPO_NODE), "NODE");
    ck_assert_str_eq(tlmpi_hwtopo_dist_name(TLMPI_HWTOPO_SYS), "SYS");
    ck_assert_str_eq(tlmpi_hwtopo_dist_name(TLMPI_HWTOPO_NONE), "NONE");
    ck_assert_ptr_null(tlmpi_hwtopo_dist_name((tlmpi_hwtopo_dist_t)(TLMPI_HWTOPO_NONE + 1)));
    ck_assert(TLMPI_HWTOPO_PIX < TLMPI_HWTOPO_PXB && TLMPI_HWTOPO_PXB < TLMPI_HWTOPO_PHB &&
              TLMPI_HWTOPO_PHB < TLMPI_HWTOPO_NODE && TLMPI_HWTOPO_NODE < TLMPI_HWTOPO_SYS);
}
END_TEST

START_TEST(test_fake_node_color)
{
    static const int cases[][3] = { /* node_rank, rpn, color */
        { 0, 2, 0 }, { 1, 2, 0 }, { 2, 2, 1 }, { 3, 2, 1 }, { 4, 2, 2 },
        { 0, 3, 0 }, { 2, 3, 0 }, { 3, 3, 1 }, { 7, 3, 2 },
        { 0, 1, 0 }, { 9, 1, 9 }, { 5, 8, 0 }, { 8, 8, 1 },
        { 0, 0, 0 }, { 5, 0, 0 }, { 5, -1, 0 }, { 100, -4, 0 },
    };
    size_t k;

    for (k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        ck_assert_msg(tlmpi_topo_fake_node_color(cases[k][0], cases[k][1]) == cases[k][2],
                      "color(%d, %d) = %d, want %d", cases[k][0], cases[k][1],
                      tlmpi_topo_fake_node_color(cases[k][0], cases[k][1]), cases[k][2]);
    }
}
END_TEST

/* The node kernels' columns and CTAs (topo.h: tlmpi_topo_grid_cols / _ctas), where ranks share a GPU:
 * 8 ranks (16 / 32 CTAs), 2 ranks (66 / 128), then every combination against the rules. */
START_TEST(test_grid)
{
    static const int cols_cases[][4] = { /* n, split, alone, cols */
        { 5, 16, 32, 5 }, { 16, 16, 32, 16 }, { 17, 16, 32, 32 }, { 20, 16, 32, 32 }, { 32, 16, 32, 32 },
        { 100, 66, 128, 128 }, { 66, 66, 128, 66 }, { 67, 66, 128, 128 }, { 30, 16, 16, 30 }, { 9, 0, 32, 9 },
    };
    static const int ctas_cases[][4] = { /* cols, split, alone_now, ctas */
        { 32, 16, 0, 16 }, { 32, 16, 1, 32 }, { 20, 16, 0, 10 }, { 16, 16, 0, 16 }, { 5, 16, 0, 5 },
        { 128, 66, 0, 64 }, { 128, 66, 1, 128 }, { 33, 16, 0, 11 },
    };
    size_t k;
    int n, split, alone, now;

    for (k = 0; k < sizeof(cols_cases) / sizeof(cols_cases[0]); k++) {
        const int *c = cols_cases[k];
        ck_assert_msg(tlmpi_topo_grid_cols(c[0], c[1], c[2]) == c[3], "grid_cols(%d, %d, %d) = %d, want %d", c[0], c[1],
                      c[2], tlmpi_topo_grid_cols(c[0], c[1], c[2]), c[3]);
    }
    for (k = 0; k < sizeof(ctas_cases) / sizeof(ctas_cases[0]); k++) {
        const int *c = ctas_cases[k];
        ck_assert_msg(tlmpi_topo_grid_ctas(c[0], c[1], c[2]) == c[3], "grid_ctas(%d, %d, %d) = %d, want %d", c[0], c[1],
                      c[2], tlmpi_topo_grid_ctas(c[0], c[1], c[2]), c[3]);
    }
    for (split = 1; split <= 128; split++) {
        for (alone = split; alone <= 128; alone += split > 64 ? 128 : split) {
            for (n = 1; n <= alone; n++) {
                const int cols = tlmpi_topo_grid_cols(n, split, alone);

                ck_assert_msg(cols >= n && cols <= alone, "grid_cols(%d, %d, %d) = %d", n, split, alone, cols);
                ck_assert_msg(n <= split ? cols == n : cols % split == 0 || cols == alone,
                              "grid_cols(%d, %d, %d) = %d: not whole rounds of %d", n, split, alone, cols, split);
                for (now = 0; now <= 1; now++) {
                    const int g = tlmpi_topo_grid_ctas(cols, split, now);

                    /* alone: every column its own CTA; else at most split CTAs (resident beside another
                     * kernel), in as many rounds as split CTAs would take */
                    ck_assert_msg(now ? g == cols
                                      : g >= 1 && g <= split && g <= cols &&
                                            (cols + g - 1) / g == (cols + split - 1) / split,
                                  "grid_ctas(%d, %d, %d) = %d", cols, split, now, g);
                }
            }
        }
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("topo");
    TCase *th = tcase_create("hwtopo");
    TCase *tf = tcase_create("fake_nodes");
    SRunner *sr;
    int failed;

#ifdef HAVE_HWLOC
    tcase_add_loop_test(th, test_fixture_gpus, 0, NFIXTURES);
    tcase_add_test(th, test_busid_forms);
    tcase_add_test(th, test_reset_switches_fixture);
    tcase_add_test(th, test_hwloc_disabled);
#else
    tcase_add_test(th, test_no_hwloc);
#endif
    tcase_add_test(th, test_dist_names);
    tcase_add_test(tf, test_fake_node_color);
    tcase_add_test(tf, test_grid);
    suite_add_tcase(s, th);
    suite_add_tcase(s, tf);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
