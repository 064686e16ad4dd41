/*
 * fault: TLMPI_FAULT parsing and the site check (see fault.h).
 */
#include "config.h"
#include "fault.h"
#include "log.h"

#include <stdio.h>

#include <stdlib.h>
#include <string.h>

unsigned tlmpi_fault_mask;

static const char *const tlmpi_fault_names[TLMPI_FAULT_COUNT] = {
    "nccl_init", "pool_alloc", "stream_create", "wait_stuck", "ipc_open", "node_pool", "node_pool_grow", "devcomm_init",
    "barrier_stuck", "rail_stuck", "gin_init", "turn_stuck",
    "node_late", "gin_wait_full", "gin_wait_short", "fdx_silent", "fdx_nocred",
};

const char *tlmpi_fault_name(tlmpi_fault_site_t site)
{
    return (unsigned)site < TLMPI_FAULT_COUNT ? tlmpi_fault_names[site] : "?";
}

unsigned tlmpi_fault_configure(const char *spec, int world_rank)
{
    char buf[256], *save = NULL, *tok;
    unsigned mask = 0;
    int i;

    tlmpi_fault_mask = 0;
    if (!spec || !*spec) {
        return 0;
    }
    snprintf(buf, sizeof(buf), "%s", spec);
    for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *colon = strchr(tok, ':'), *end = NULL;
        long rank = -1;

        if (colon) {
            *colon = '\0';
            rank = strtol(colon + 1, &end, 10);
            if (end == colon + 1 || *end || rank < 0) {
                tlmpi_warn(ENV, "TLMPI_FAULT: bad rank in '%s:%s' (ignored)", tok, colon + 1);
                continue;
            }
        }
        for (i = 0; i < TLMPI_FAULT_COUNT && strcmp(tok, tlmpi_fault_names[i]); i++) {
        }
        if (i == TLMPI_FAULT_COUNT) {
            tlmpi_warn(ENV, "TLMPI_FAULT: unknown site '%s' (ignored)", tok);
            continue;
        }
        if (rank < 0 || rank == world_rank) {
            mask |= 1u << i;
        }
    }
    tlmpi_fault_mask = mask;
    return mask;
}

int tlmpi_fault_fire_(tlmpi_fault_site_t site)
{
    static unsigned logged;

    if (!(tlmpi_fault_mask & (1u << site))) {
        return 0;
    }
    if (!(__atomic_fetch_or(&logged, 1u << site, __ATOMIC_RELAXED) & (1u << site))) {
        tlmpi_info(INIT, "TLMPI_FAULT: site %s fires on this rank", tlmpi_fault_names[site]);
    }
    return 1;
}
