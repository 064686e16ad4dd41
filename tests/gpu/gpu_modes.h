/*
 * gpu_modes.h: the helpers the GPU tests of tlmpi's collectives through MPI share
 * (tests/gpu/gpu_node.c, gpu_nbc.c, gpu_persist.c, gpu_graph.c): the three collectives (C_AR,
 * C_RSB, C_AG) with their names, tlmpi ids and TLMPI_<COLL>_TIERS variables; the test mode
 * (tmode_t: TLMPI_TIER and the three tables, set on every rank with tlmpi_config_set by set_mode;
 * each test keeps its own tables of modes) and the algorithm a mode forces; tlmpi's path labels
 * found by name (find_paths, pname); the registry of element types (add_type, type_by_name);
 * now(). Header only, every function static inline (a test need not use all of them).
 * Include it after harness.h and gpu_values.h, with GPU_TEST_NAME (the program's name, for its
 * messages) defined before; GPU_MODES_SET_HINT, where defined, is added to set_mode's failure.
 */
#ifndef TLMPI_TESTS_GPU_MODES_H
#define TLMPI_TESTS_GPU_MODES_H

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "tlmpi.h"

#ifndef GPU_TEST_NAME
#error "define GPU_TEST_NAME (the program's name) before including gpu_modes.h"
#endif
#ifndef GPU_MODES_SET_HINT
#define GPU_MODES_SET_HINT ""
#endif

enum { C_AR, C_RSB, C_AG, C_N };
static const char *const coll_names[C_N] = { "allreduce", "reduce_scatter_block", "allgather" };
static const tlmpi_coll_t coll_ids[C_N] = { TLMPI_COLL_ALLREDUCE, TLMPI_COLL_REDUCE_SCATTER_BLOCK,
                                            TLMPI_COLL_ALLGATHER };
static const char *const table_vars[C_N] = { "ALLREDUCE_TIERS", "REDUCE_SCATTER_BLOCK_TIERS", "ALLGATHER_TIERS" };

/* ---------------------------------------------------------------- modes */

typedef struct {
    const char *name;
    const char *tier;        /* TLMPI_TIER */
    const char *tables[C_N]; /* TLMPI_<COLL>_TIERS, "" = none */
    unsigned colls;          /* collectives the mode is for (bit per C_*) */
    int staging;             /* device calls expected on staging (else node; 0 where a test does not use it) */
} tmode_t;

#define B(c) (1u << (c))

static const tmode_t *g_cur; /* mode set now */

/* Set a mode's settings (only when it changes: every change makes the plans refill). 0 if tlmpi
 * refused a value (then the mode is skipped, with one failure). */
static inline int set_mode(const tmode_t *m)
{
    int c;
    tlmpi_status_t s;

    if (g_cur == m) return 1;
    g_cur = NULL;
    s = tlmpi_config_set("TIER", m->tier);
    for (c = 0; s == TLMPI_OK && c < C_N; c++) s = tlmpi_config_set(table_vars[c], m->tables[c]);
    if (s != TLMPI_OK) {
        TST_FAIL("mode %s: tlmpi_config_set refused its settings (%s)%s", m->name, tlmpi_status_string(s),
                 GPU_MODES_SET_HINT);
        return 0;
    }
    g_cur = m;
    return 1;
}

/* the algorithm a mode forces for coll ("node/NAME" alone in its table), else NULL */
static inline const char *forced_algo(const tmode_t *m, int coll)
{
    const char *t = m ? m->tables[coll] : "";
    return strncmp(t, "node/", 5) || strchr(t, ',') || strchr(t, ':') ? NULL : t + 5;
}

/* elements in and out of one rank for count elements per block on p ranks */
static inline void sizes_of(int coll, size_t count, int p, size_t *in_n, size_t *out_n)
{
    *in_n = coll == C_RSB ? count * (size_t)p : count;
    *out_n = coll == C_AG ? count * (size_t)p : count;
}

/* ---------------------------------------------------------------- paths */

#define MAXP 32 /* path labels looked up by name (beyond this header's TLMPI_PATH_COUNT too) */
static int g_npaths, P_NODE = -1, P_STAGING = -1, P_PASS = -1, P_SELF = -1;

static inline void find_paths(void)
{
    int k;
    for (k = 0; k < MAXP; k++) {
        const char *n = tlmpi_path_name((tlmpi_path_t)k);
        if (!n) break;
        if (!strcmp(n, "node")) P_NODE = k;
        else if (!strcmp(n, "staging")) P_STAGING = k;
        else if (!strcmp(n, "passthrough")) P_PASS = k;
        else if (!strcmp(n, "self")) P_SELF = k;
    }
    g_npaths = k;
}

/* a path's label; -2: "several", -1: "none" (a path search's answers), anything else unknown: "?" */
static inline const char *pname(int k)
{
    const char *n = k >= 0 && k < g_npaths ? tlmpi_path_name((tlmpi_path_t)k) : NULL;
    return n ? n : k == -2 ? "several" : k == -1 ? "none" : "?";
}

/* ---------------------------------------------------------------- types, time */

static dtinfo_t g_types[16];
static int g_ntypes;

static inline void add_type(const char *name, MPI_Datatype dt, int kind, int size)
{
    g_types[g_ntypes++] = (dtinfo_t){ name, dt, kind, size, 1 };
}

static inline const dtinfo_t *type_by_name(const char *n)
{
    int i;
    for (i = 0; i < g_ntypes; i++) if (!strcmp(g_types[i].name, n)) return &g_types[i];
    fprintf(stderr, GPU_TEST_NAME ": no type %s\n", n);
    MPI_Abort(MPI_COMM_WORLD, 4);
    return NULL;
}

/* CLOCK_MONOTONIC, in seconds */
static inline double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

#endif
