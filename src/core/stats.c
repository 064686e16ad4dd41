/*
 * stats: the counters behind TLMPI_STATS=1 and tlmpi_get_stats() (see stats.h).
 */
#include "config.h"
#include "stats.h"

#include <string.h>

tlmpi_stat_t tlmpi_stats[TLMPI_COLL_COUNT][TLMPI_PATH_COUNT];
tlmpi_stat_t tlmpi_algo_stats[TLMPI_COLL_COUNT][TLMPI_PATH_COUNT][TLMPI_STATS_MAX_ALGOS];
tlmpi_stat_t tlmpi_form_stats[TLMPI_COLL_COUNT][TLMPI_PATH_COUNT][TLMPI_FORM_COUNT];
unsigned long tlmpi_stat_grid[2];
unsigned tlmpi_stat_shape[TLMPI_FORM_COUNT];
static const char *const *algo_names[TLMPI_PATH_COUNT];
static int n_algo_names[TLMPI_PATH_COUNT];

void tlmpi_stats_name_algos(tlmpi_path_t path, const char *const *names, int n)
{
    if ((unsigned)path < TLMPI_PATH_COUNT) {
        algo_names[path] = names;
        n_algo_names[path] = n < TLMPI_STATS_MAX_ALGOS ? n : TLMPI_STATS_MAX_ALGOS;
    }
}

static int algo_index(tlmpi_path_t path, const char *algo)
{
    int a;

    for (a = 0; a < n_algo_names[path]; a++) {
        if (!strcmp(algo_names[path][a], algo)) {
            return a;
        }
    }
    return -1;
}

/* Every form's calls of one (collective, path). */
static tlmpi_stat_t stat_total(int c, int p)
{
    tlmpi_stat_t s;
    int f;

    s.calls = __atomic_load_n(&tlmpi_stats[c][p].calls, __ATOMIC_RELAXED);
    s.bytes = __atomic_load_n(&tlmpi_stats[c][p].bytes, __ATOMIC_RELAXED);
    for (f = 1; f < TLMPI_FORM_COUNT; f++) {
        s.calls += __atomic_load_n(&tlmpi_form_stats[c][p][f].calls, __ATOMIC_RELAXED);
        s.bytes += __atomic_load_n(&tlmpi_form_stats[c][p][f].bytes, __ATOMIC_RELAXED);
    }
    return s;
}

void tlmpi_core_print_stats(FILE *f)
{
    int c, p;

    fprintf(f, "tlmpi stats rank %d:\n", tlmpi_g.world_rank);
    for (c = 0; c < TLMPI_COLL_COUNT; c++) {
        for (p = 0; p < TLMPI_PATH_COUNT; p++) {
            tlmpi_stat_t s = stat_total(c, p);

            if (s.calls) {
                int a;

                fprintf(f, "  %-22s %-12s calls %10llu  bytes %14llu\n", tlmpi_coll_name(c),
                        tlmpi_path_name(p), (unsigned long long)s.calls, (unsigned long long)s.bytes);
                /* per form, where some calls were not blocking, e.g. "allreduce node:nonblocking" */
                for (a = 1; a < TLMPI_FORM_COUNT; a++) {
                    tlmpi_stat_t sf = tlmpi_form_stats[c][p][a];
                    char name[64];

                    if (sf.calls) {
                        snprintf(name, sizeof(name), "%s:%s", tlmpi_path_name(p), tlmpi_form_name(a));
                        fprintf(f, "  %-22s %-12s calls %10llu  bytes %14llu\n", tlmpi_coll_name(c), name,
                                (unsigned long long)sf.calls, (unsigned long long)sf.bytes);
                    }
                }
                /* per algorithm (tiers that choose one per call), e.g. "allreduce node/oneshot" */
                for (a = 0; a < n_algo_names[p]; a++) {
                    tlmpi_stat_t sa = tlmpi_algo_stats[c][p][a];
                    char name[64];

                    if (sa.calls) {
                        snprintf(name, sizeof(name), "%s/%s", tlmpi_path_name(p), algo_names[p][a]);
                        fprintf(f, "  %-22s %-12s calls %10llu  bytes %14llu\n", tlmpi_coll_name(c), name,
                                (unsigned long long)sa.calls, (unsigned long long)sa.bytes);
                    }
                }
            }
        }
    }
    fflush(f);
}

TLMPI_EXPORT tlmpi_status_t tlmpi_get_stats(tlmpi_coll_t coll, tlmpi_path_t path, tlmpi_stat_t *stat_p)
{
    if ((unsigned)coll >= TLMPI_COLL_COUNT || (unsigned)path >= TLMPI_PATH_COUNT || !stat_p) {
        return TLMPI_ERR_INVALID_ARG;
    }
    *stat_p = stat_total(coll, path);
    return TLMPI_OK;
}

TLMPI_EXPORT tlmpi_status_t tlmpi_get_algo_stats(tlmpi_coll_t coll, tlmpi_path_t path, const char *algo,
                                                tlmpi_stat_t *stat_p)
{
    int a;

    if ((unsigned)coll >= TLMPI_COLL_COUNT || (unsigned)path >= TLMPI_PATH_COUNT || !algo || !stat_p) {
        return TLMPI_ERR_INVALID_ARG;
    }
    a = algo_index(path, algo);
    if (a < 0) {
        stat_p->calls = stat_p->bytes = 0;
        return TLMPI_OK;
    }
    stat_p->calls = __atomic_load_n(&tlmpi_algo_stats[coll][path][a].calls, __ATOMIC_RELAXED);
    stat_p->bytes = __atomic_load_n(&tlmpi_algo_stats[coll][path][a].bytes, __ATOMIC_RELAXED);
    return TLMPI_OK;
}

TLMPI_EXPORT const char *tlmpi_form_name(tlmpi_form_t form)
{
    static const char *const names[TLMPI_FORM_COUNT] = { "blocking", "nonblocking", "persistent", "enqueue", "capture" };

    return (unsigned)form < TLMPI_FORM_COUNT ? names[form] : NULL;
}

TLMPI_EXPORT tlmpi_status_t tlmpi_get_form_stats(tlmpi_coll_t coll, tlmpi_path_t path, tlmpi_form_t form,
                                                tlmpi_stat_t *stat_p)
{
    const tlmpi_stat_t *s;

    if ((unsigned)coll >= TLMPI_COLL_COUNT || (unsigned)path >= TLMPI_PATH_COUNT || (unsigned)form >= TLMPI_FORM_COUNT ||
        !stat_p) {
        return TLMPI_ERR_INVALID_ARG;
    }
    s = form == TLMPI_FORM_BLOCKING ? &tlmpi_stats[coll][path] : &tlmpi_form_stats[coll][path][form];
    stat_p->calls = __atomic_load_n(&s->calls, __ATOMIC_RELAXED);
    stat_p->bytes = __atomic_load_n(&s->bytes, __ATOMIC_RELAXED);
    return TLMPI_OK;
}

TLMPI_EXPORT tlmpi_status_t tlmpi_get_node_shape(tlmpi_form_t form, int *cols_p, int *ctas_p)
{
    unsigned v;

    if ((unsigned)form >= TLMPI_FORM_COUNT || !cols_p || !ctas_p) {
        return TLMPI_ERR_INVALID_ARG;
    }
    v = __atomic_load_n(&tlmpi_stat_shape[form == TLMPI_FORM_CAPTURE ? TLMPI_FORM_ENQUEUE : form], __ATOMIC_RELAXED);
    *cols_p = (int)(v >> 16);
    *ctas_p = (int)(v & 0xffffu);
    return TLMPI_OK;
}

TLMPI_EXPORT void tlmpi_reset_stats(void)
{
    memset(tlmpi_form_stats, 0, sizeof(tlmpi_form_stats));
    memset(tlmpi_stats, 0, sizeof(tlmpi_stats));
    memset(tlmpi_algo_stats, 0, sizeof(tlmpi_algo_stats));
}
