/*
 * stats: the counters behind TLMPI_STATS=1 and tlmpi_get_stats() (see stats.h).
 */
#include "config.h"
#include "stats.h"

#include <string.h>

tlmpi_stat_t tlmpi_stats[TLMPI_COLL_COUNT][TLMPI_PATH_COUNT];

void tlmpi_core_print_stats(FILE *f)
{
    int c, p;

    fprintf(f, "tlmpi stats rank %d:\n", tlmpi_g.world_rank);
    for (c = 0; c < TLMPI_COLL_COUNT; c++) {
        for (p = 0; p < TLMPI_PATH_COUNT; p++) {
            tlmpi_stat_t s = tlmpi_stats[c][p];

            if (s.calls) {
                fprintf(f, "  %-22s %-12s calls %10llu  bytes %14llu\n", tlmpi_coll_name(c),
                        tlmpi_path_name(p), (unsigned long long)s.calls, (unsigned long long)s.bytes);
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
    stat_p->calls = __atomic_load_n(&tlmpi_stats[coll][path].calls, __ATOMIC_RELAXED);
    stat_p->bytes = __atomic_load_n(&tlmpi_stats[coll][path].bytes, __ATOMIC_RELAXED);
    return TLMPI_OK;
}

TLMPI_EXPORT void tlmpi_reset_stats(void)
{
    memset(tlmpi_stats, 0, sizeof(tlmpi_stats));
}
