/*
 * tier: the table of tiers (see tier.h) and what is done over all of them: names, per-comm
 * cleanup, process teardown. The order of tlmpi_tiers is TLMPI_TIER_* (the auto preference).
 */
#include "config.h"
#include "tier.h"
#include "compiler.h"

#include "env.h"
#include "log.h"

#include <string.h>
#ifdef HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

const tlmpi_tier_t *const tlmpi_tiers[TLMPI_TIER_COUNT] = {
    [TLMPI_TIER_SELF] = &tlmpi_tier_self,
    [TLMPI_TIER_NODE] = &tlmpi_tier_node,
    [TLMPI_TIER_NCCL] = &tlmpi_tier_nccl,
    [TLMPI_TIER_HIER] = &tlmpi_tier_hier,
    [TLMPI_TIER_MPI] = &tlmpi_tier_mpi,
    [TLMPI_TIER_STAGING] = &tlmpi_tier_staging,
};


int tlmpi_tier_by_name(const char *name, size_t len)
{
    int t;

    if (len == 4 && !strncmp(name, "auto", 4)) {
        return TLMPI_TIER_AUTO;
    }
    for (t = 0; t < TLMPI_TIER_COUNT; t++) {
        if (strlen(tlmpi_tiers[t]->name) == len && !strncmp(tlmpi_tiers[t]->name, name, len)) {
            return t;
        }
    }
    return -1;
}

int tlmpi_tier_named(const char *name, int env_index)
{
    const char *specs[] = { TLMPI_ENV_S(ALLGATHER_TIERS), TLMPI_ENV_S(REDUCE_SCATTER_BLOCK_TIERS),
                            TLMPI_ENV_S(ALLREDUCE_TIERS), TLMPI_ENV_S(ALLGATHERV_TIERS),
                            TLMPI_ENV_S(REDUCE_SCATTER_TIERS), TLMPI_ENV_S(BCAST_TIERS), TLMPI_ENV_S(REDUCE_TIERS),
                            TLMPI_ENV_S(ALLTOALL_TIERS) };
    const size_t len = strlen(name);
    int i;

    if (TLMPI_ENV_I(TIER) == env_index) {
        return 1;
    }
    for (i = 0; i < (int)(sizeof(specs) / sizeof(specs[0])); i++) {
        const char *p = specs[i];

        while (p && *p) {
            size_t n = strcspn(p, ",/:");

            if (n == len && !strncmp(p, name, len)) {
                return 1;
            }
            p = strchr(p, ',');
            p = p ? p + 1 : NULL;
        }
    }
    return 0;
}

int tlmpi_tier_algo_by_name(int tier, const char *name, size_t len)
{
    int a;

    if (tier < 0 || tier >= TLMPI_TIER_COUNT) {
        return -1;
    }
    for (a = 0; a < tlmpi_tiers[tier]->n_algos; a++) {
        const char *an = tlmpi_tiers[tier]->algos[a];

        if (strlen(an) == len && !strncmp(an, name, len)) {
            return a;
        }
    }
    return -1;
}

tlmpi_status_t tlmpi_tier_wait(tlmpi_tier_comm_t *tc, const tlmpi_call_t *c, const char *tier, const char *what)
{
    return tlmpi_tier_wait_grace(tc, c, tier, what, 0);
}

tlmpi_status_t tlmpi_tier_wait_grace(tlmpi_tier_comm_t *tc, const tlmpi_call_t *c, const char *tier, const char *what,
                                     long grace_s)
{
    tlmpi_wait_who_t who = tlmpi_tier_who(tc, c, tier);
    int e;

    if (c->pend && c->pend->tc == tc && !c->pend->marked) {
        /* a started call: the request waits, later (req/request.c); where no mark can be had, now */
        if (tlmpi_gpu_mark(tc->ctx, &c->pend->mark) == 0) {
            c->pend->marked = 1;
            c->pend->what = what;
            c->pend->grace_s = grace_s;
            return TLMPI_OK;
        }
#ifdef HAVE_CUDA
        (void)cudaGetLastError();
#endif
    }
    e = tlmpi_gpu_stream_wait_grace(tc->ctx, &who, what, grace_s);

    if (TLMPI_UNLIKELY(e != 0)) {
#ifdef HAVE_CUDA
        tlmpi_error(CUDA, "%s on tier %s: waiting for %s failed: %s", tlmpi_coll_name(c->coll), tier, what,
                    cudaGetErrorString((cudaError_t)e));
        (void)cudaGetLastError();
#endif
        return TLMPI_ERR_CUDA;
    }
    return TLMPI_OK;
}

void tlmpi_tier_comm_cleanup(tlmpi_tier_comm_t *tc)
{
    int t;

    for (t = TLMPI_TIER_COUNT - 1; t >= 0; t--) {
        if (tlmpi_tiers[t]->cleanup) {
            tlmpi_tiers[t]->cleanup(tc);
        }
    }
    tlmpi_gpu_ctx_destroy(tc->ctx);
    tc->ctx = NULL;
}

void tlmpi_tier_finalize(void)
{
    int t;

    for (t = TLMPI_TIER_COUNT - 1; t >= 0; t--) {
        if (tlmpi_tiers[t]->finalize) {
            tlmpi_tiers[t]->finalize();
        }
    }
}
