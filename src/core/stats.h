/*
 * stats: per-collective, per-path call and byte counters (TLMPI_STATS=1, tlmpi_get_stats). Paths are
 * the public labels of include/tlmpi.h; each tier names its label in its table entry.
 */
#ifndef TLMPI_STATS_H
#define TLMPI_STATS_H

#include "global.h"
#include <stdio.h>

/* Counters, always on (the public API and tests read them). Below MPI_THREAD_MULTIPLE the MPI
 * standard lets only one thread at a time be inside MPI, so a relaxed load + store cannot lose an
 * update and costs far less than the locked read-modify-write that MPI_THREAD_MULTIPLE needs
 * (two lock adds were about a third of the pass-through overhead). Readers use relaxed loads. */
extern tlmpi_stat_t tlmpi_stats[TLMPI_COLL_COUNT][TLMPI_PATH_COUNT];
/* One call of `bytes` into a counter: plain increments unless threads may count at once. */
static inline void tlmpi_stat_bump(tlmpi_stat_t *s, uint64_t bytes)
{
    if (TLMPI_LIKELY(tlmpi_g.thread_level != MPI_THREAD_MULTIPLE)) {
        __atomic_store_n(&s->calls, __atomic_load_n(&s->calls, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
        __atomic_store_n(&s->bytes, __atomic_load_n(&s->bytes, __ATOMIC_RELAXED) + bytes, __ATOMIC_RELAXED);
    } else {
        __atomic_fetch_add(&s->calls, 1, __ATOMIC_RELAXED);
        __atomic_fetch_add(&s->bytes, bytes, __ATOMIC_RELAXED);
    }
}
static inline void tlmpi_stat_add(tlmpi_coll_t coll, tlmpi_path_t path, uint64_t bytes)
{
    tlmpi_stat_bump(&tlmpi_stats[coll][path], bytes);
}

/* Per-form counters of a path: tlmpi_stats above counts the blocking calls, these the non-blocking
 * and persistent ones (one counter pair per call whatever its form; tlmpi_get_stats sums them). */
extern tlmpi_stat_t tlmpi_form_stats[TLMPI_COLL_COUNT][TLMPI_PATH_COUNT][TLMPI_FORM_COUNT];
static inline void tlmpi_stat_form_add(tlmpi_coll_t coll, tlmpi_path_t path, tlmpi_form_t form, uint64_t bytes)
{
    tlmpi_stat_bump(&tlmpi_form_stats[coll][path][form], bytes);
}

/* Per-algorithm counters of a path: a tier that chooses among algorithms per call counts the one it
 * ran (index in its algorithm list, which init registers by path) besides its path's counters. */
#define TLMPI_STATS_MAX_ALGOS 8
extern tlmpi_stat_t tlmpi_algo_stats[TLMPI_COLL_COUNT][TLMPI_PATH_COUNT][TLMPI_STATS_MAX_ALGOS];
static inline void tlmpi_stat_algo_add(tlmpi_coll_t coll, tlmpi_path_t path, int algo, uint64_t bytes)
{
    if (TLMPI_UNLIKELY((unsigned)algo >= TLMPI_STATS_MAX_ALGOS)) {
        return;
    }
    tlmpi_stat_bump(&tlmpi_algo_stats[coll][path][algo], bytes);
}
/* The algorithm names of a path (a tier's list; the strings must live as long as the process). */
void tlmpi_stats_name_algos(tlmpi_path_t path, const char *const *names, int n);

/* Blocking node-tier kernels whose columns outnumber the CTAs of a kernel beside another
 * (src/tier/node.c, node_args): [0] launched on CTAs of their own (alone on the GPU), [1] on fewer,
 * taking the columns in turn (another kernel of the process may be in flight). Printed with
 * TLMPI_STATS. */
extern unsigned long tlmpi_stat_grid[2];
static inline void tlmpi_stat_grid_add(int shared)
{
    __atomic_fetch_add(&tlmpi_stat_grid[shared ? 1 : 0], 1ul, __ATOMIC_RELAXED);
}

/* The shape of the last node-tier kernel set up for a call of each entry form (src/tier/node.c,
 * node_args): columns << 16 | CTAs, 0 before any; the stream-ordered calls under TLMPI_FORM_ENQUEUE,
 * captured or not (tlmpi_get_node_shape: what a benchmark's row ran). Not reset by tlmpi_reset_stats. */
extern unsigned tlmpi_stat_shape[TLMPI_FORM_COUNT];
static inline void tlmpi_stat_shape_set(int form, int cols, int ctas)
{
    if (TLMPI_LIKELY((unsigned)form < TLMPI_FORM_COUNT)) {
        __atomic_store_n(&tlmpi_stat_shape[form], (unsigned)cols << 16 | (unsigned)ctas, __ATOMIC_RELAXED);
    }
}

/* Print the statistics table (TLMPI_STATS=1 at finalize; tlmpi_info). */
void tlmpi_core_print_stats(FILE *f);

#endif
