/*
 * plan: threshold tables, the pure selection, and the collective build with its agreement (see
 * plan.h). The build's agreement is one PMPI_Allreduce(MPI_BOR) over
 *   { ~have, want, settings hash, ~settings hash, shared GPU }
 * so that AND(have) = ~OR(~have), OR(want) tells which capability some rank tried and lost, and
 * OR(h) & OR(~h) != 0 exactly when the settings differ somewhere. A second one agrees on tier
 * setup failures. Every rank then holds the same plan, and prints the same warnings.
 */
#include "config.h"
#include "plan.h"
#include "tuning.h"
#include "env.h"
#include "global.h"
#include "log.h"
#include "turn.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- pure ---- */

int tlmpi_plan_parse_table(const char *spec, tlmpi_plan_table_t *t, char *err, size_t len)
{
    const char *p = spec;

    memset(t, 0, sizeof(*t));
    if (!spec || !*spec) {
        snprintf(err, len, "empty table");
        return -1;
    }
    while (*p) {
        const char *end = strchr(p, ','), *colon, *slash, *at;
        size_t n = end ? (size_t)(end - p) : strlen(p), name_len;
        tlmpi_plan_entry_t *e;
        int tier, algo = 0;
        char num[32];
        int64_t v;

        if (t->n == TLMPI_PLAN_MAX_ENTRIES) {
            snprintf(err, len, "more than %d entries", TLMPI_PLAN_MAX_ENTRIES);
            return -1;
        }
        e = &t->e[t->n];
        colon = memchr(p, ':', n);
        at = memchr(p, '@', colon ? (size_t)(colon - p) : n);
        slash = memchr(p, '/', at ? (size_t)(at - p) : colon ? (size_t)(colon - p) : n);
        name_len = (size_t)((slash ? slash : at ? at : colon ? colon : p + n) - p);
        tier = tlmpi_tier_by_name(p, name_len);
        if (tier < 0) {
            snprintf(err, len, "unknown tier '%.*s' (auto, self, node, nccl, staging, mpi)", (int)name_len, p);
            return -1;
        }
        if (slash) {
            size_t alen = (size_t)((at ? at : colon ? colon : p + n) - slash - 1);

            algo = tier == TLMPI_TIER_AUTO ? -1 : tlmpi_tier_algo_by_name(tier, slash + 1, alen);
            if (algo < 0) {
                snprintf(err, len, "unknown algorithm '%.*s' of tier '%.*s'", (int)alen, slash + 1, (int)name_len, p);
                return -1;
            }
        }
        e->tier = (uint8_t)tier;
        e->algo = (uint8_t)algo;
        e->ctas = 0;
        e->max_bytes = SIZE_MAX;
        if (at) {
            size_t nl = (size_t)((colon ? colon : p + n) - at - 1);
            char *stop;
            long k;

            if (nl == 0 || nl >= sizeof(num) || tier == TLMPI_TIER_AUTO) {
                snprintf(err, len, "bad CTA knob in '%.*s' (tier[/algo]@ctas, a named tier)", (int)n, p);
                return -1;
            }
            memcpy(num, at + 1, nl);
            num[nl] = '\0';
            k = strtol(num, &stop, 10);
            if (*stop || k < 1 || k > 255) {
                snprintf(err, len, "bad CTA count '%s' (1..255)", num);
                return -1;
            }
            e->ctas = (uint8_t)k;
        }
        if (colon) {
            size_t nl = (size_t)(p + n - colon - 1);

            if (nl == 0 || nl >= sizeof(num)) {
                snprintf(err, len, "bad size in '%.*s'", (int)n, p);
                return -1;
            }
            memcpy(num, colon + 1, nl);
            num[nl] = '\0';
            if (tlmpi_env_parse_size(num, &v) != 0 || v < 0) {
                snprintf(err, len, "bad size '%s'", num);
                return -1;
            }
            e->max_bytes = (size_t)v;
            if (t->n > 0 && e->max_bytes <= t->e[t->n - 1].max_bytes) {
                snprintf(err, len, "limits must increase ('%s' after %zu)", num, t->e[t->n - 1].max_bytes);
                return -1;
            }
        }
        t->n++;
        if (!end) {
            break;
        }
        p = end + 1;
        if (!*p) {
            snprintf(err, len, "trailing ','");
            return -1;
        }
        if (!colon) {
            snprintf(err, len, "only the last entry may have no limit");
            return -1;
        }
    }
    if (t->e[t->n - 1].max_bytes != SIZE_MAX) {
        snprintf(err, len, "the last entry must have no limit (it takes every larger message)");
        return -1;
    }
    return 0;
}

/* TLMPI_TIER's enum (env.def: {auto,nccl,staging,mpi,self,node,hier}) -> tier id */
static int tier_of_env(long tier_env)
{
    static const int map[] = { TLMPI_TIER_AUTO, TLMPI_TIER_NCCL, TLMPI_TIER_STAGING, TLMPI_TIER_MPI,
                               TLMPI_TIER_SELF, TLMPI_TIER_NODE, TLMPI_TIER_HIER };

    return tier_env >= 0 && tier_env < (long)(sizeof(map) / sizeof(map[0])) ? map[tier_env] : TLMPI_TIER_AUTO;
}

/* auto: best first, without the tiers whose auto_unless capabilities the comm has: NCCL where
 * ranks share a GPU (it runs over loopback sockets there, ~4.5 ms per call measured, far slower than
 * staging through the MPI's shared memory), the node tier where its barriers were timed slow */
static void fill_auto_order(tlmpi_plan_t *p)
{
    int t;

    p->n_auto = 0;
    for (t = 0; t < TLMPI_TIER_COUNT; t++) {
        if (p->caps & tlmpi_tiers[t]->auto_unless) {
            continue;
        }
        p->auto_order[p->n_auto++] = (uint8_t)t;
    }
}

unsigned tlmpi_plan_fill(tlmpi_plan_t *p, unsigned caps, long tier_env, const char *const specs[TLMPI_COLL_COUNT],
                         char errs[TLMPI_COLL_COUNT][160])
{
    unsigned bad = 0;
    int c;

    p->caps = caps;
    for (c = 0; c < TLMPI_COLL_COUNT; c++) {
        tlmpi_plan_table_t *tab = &p->table[c];

        errs[c][0] = '\0';
        if (specs && specs[c] && specs[c][0]) {
            if (tlmpi_plan_parse_table(specs[c], tab, errs[c], sizeof(errs[c])) == 0) {
                continue;
            }
            bad |= 1u << c;
        }
        tab->n = 1;
        tab->e[0] = (tlmpi_plan_entry_t){ SIZE_MAX, (uint8_t)tier_of_env(tier_env), 0, 0 };
    }
    fill_auto_order(p);
    return bad;
}

int tlmpi_plan_select(const tlmpi_plan_t *p, const tlmpi_call_t *c, int *algo_p)
{
    const tlmpi_plan_table_t *tab = &p->table[c->coll];
    const tlmpi_plan_entry_t *e;
    int i = 0;

    while (i < tab->n - 1 && c->msg_bytes > tab->e[i].max_bytes) {
        i++;
    }
    e = &tab->e[i];
    *algo_p = TLMPI_ALGO_WORD(e->algo, e->ctas);
    if (e->tier == TLMPI_TIER_AUTO) {
        for (i = 0; i < p->n_auto; i++) {
            if (tlmpi_tiers[p->auto_order[i]]->supports(c, p->caps)) {
                *algo_p = 0;
                return p->auto_order[i];
            }
        }
    } else if (tlmpi_tiers[e->tier]->supports(c, p->caps)) {
        return e->tier;
    }
    *algo_p = 0;
    if (!tlmpi_tier_staging.supports(c, p->caps) && tlmpi_tier_mpi.supports(c, p->caps)) {
        return TLMPI_TIER_MPI;
    }
    return TLMPI_TIER_STAGING; /* the correctness fallback (runs on any comm, even without caps) */
}

unsigned tlmpi_plan_tiers_used(const tlmpi_plan_t *p)
{
    unsigned used = 0;
    int c, i;

    for (c = 0; c < TLMPI_COLL_COUNT; c++) {
        for (i = 0; i < p->table[c].n; i++) {
            if (p->table[c].e[i].tier == TLMPI_TIER_AUTO) {
                int k;

                for (k = 0; k < p->n_auto; k++) {
                    used |= 1u << p->auto_order[k];
                }
            } else {
                used |= 1u << p->table[c].e[i].tier;
            }
        }
    }
    return used | 1u << TLMPI_TIER_STAGING;
}

static uint64_t fnv(uint64_t h, const void *data, size_t n)
{
    const unsigned char *b = data;

    while (n--) {
        h = (h ^ *b++) * 0x100000001b3ULL;
    }
    return h;
}

uint64_t tlmpi_plan_hash(const tlmpi_plan_t *p)
{
    uint64_t h = fnv(0xcbf29ce484222325ULL, &p->caps, sizeof(p->caps));
    int c, i;

    for (c = 0; c < TLMPI_COLL_COUNT; c++) {
        for (i = 0; i < p->table[c].n; i++) {
            const tlmpi_plan_entry_t *e = &p->table[c].e[i];
            uint64_t m = e->max_bytes;

            h = fnv(h, &m, sizeof(m));
            h = fnv(h, &e->tier, 1);
            h = fnv(h, &e->algo, 1);
        }
    }
    return fnv(h, p->auto_order, (size_t)p->n_auto);
}

uint64_t tlmpi_plan_settings_hash(long tier_env, const char *const specs[TLMPI_COLL_COUNT])
{
    uint64_t h = fnv(0xcbf29ce484222325ULL, &tier_env, sizeof(tier_env));
    int c;

    for (c = 0; c < TLMPI_COLL_COUNT; c++) {
        const char *s = specs && specs[c] ? specs[c] : "";

        h = fnv(h, s, strlen(s) + 1);
    }
    return h;
}

/* one tier with one of its algorithms, as the plan names it: "nccl", "node/auto(oneshot<=262144,twoshot)" */
static size_t describe_tier(int t, tlmpi_coll_t coll, int algo, char *buf, size_t len)
{
    const tlmpi_tier_t *tier = tlmpi_tiers[t];
    char a[160];

    if (tier->describe_algo) {
        tier->describe_algo(coll, algo, a, sizeof(a));
        return (size_t)snprintf(buf, len, "%s/%s", tier->name, a);
    }
    if (tier->n_algos > 1 || algo != 0) {
        return (size_t)snprintf(buf, len, "%s/%s", tier->name, algo < tier->n_algos ? tier->algos[algo] : "?");
    }
    return (size_t)snprintf(buf, len, "%s", tier->name);
}

void tlmpi_plan_describe(const tlmpi_plan_t *p, char *buf, size_t len)
{
    size_t o = 0;
    int c, i, k;

    buf[0] = '\0';
    for (c = 0; c < TLMPI_COLL_COUNT && o < len; c++) {
        o += (size_t)snprintf(buf + o, len - o, "%s%s%s:", c ? "; " : "", tlmpi_coll_name(c),
                              p->tuned & (1u << c) ? " (tuned)" : "");
        for (i = 0; i < p->table[c].n && o < len; i++) {
            const tlmpi_plan_entry_t *e = &p->table[c].e[i];

            o += (size_t)snprintf(buf + o, len - o, " ");
            if (e->tier == TLMPI_TIER_AUTO) {
                /* the tiers auto tries, best first, where the comm has what they need */
                o += (size_t)snprintf(buf + o, len - o, "auto{");
                for (k = 0; k < p->n_auto && o < len; k++) {
                    int t = p->auto_order[k];

                    if ((p->caps & tlmpi_tiers[t]->cap) != tlmpi_tiers[t]->cap) {
                        continue;
                    }
                    o += describe_tier(t, (tlmpi_coll_t)c, 0, buf + o, len - o);
                    o += o < len ? (size_t)snprintf(buf + o, len - o, ">") : 0;
                }
                if (o < len && buf[o - 1] == '>') {
                    o--;
                }
                o += o < len ? (size_t)snprintf(buf + o, len - o, "}") : 0;
            } else {
                o += describe_tier(e->tier, (tlmpi_coll_t)c, e->algo, buf + o, len - o);
                if (e->ctas && o < len) {
                    o += (size_t)snprintf(buf + o, len - o, "@%u", e->ctas);
                }
            }
            if (o < len && e->max_bytes != SIZE_MAX) {
                o += (size_t)snprintf(buf + o, len - o, "<=%zu", e->max_bytes);
            }
        }
    }
    if (o < len) {
        snprintf(buf + o, len - o, " (caps 0x%x)", p->caps);
    }
}

void tlmpi_plan_describe_comm(const tlmpi_tier_comm_t *tc, const tlmpi_plan_t *p, char *buf, size_t len)
{
    size_t o;
    int t;

    tlmpi_plan_describe(p, buf, len);
    o = strlen(buf);
    for (t = 0; t < TLMPI_TIER_COUNT && o + 1 < len; t++) {
        char d[1200]; /* hier's names its sub comms' plans */

        if (!tlmpi_tiers[t]->describe || !(p->setup_done & (1u << t)) ||
            (p->caps & tlmpi_tiers[t]->cap) != tlmpi_tiers[t]->cap) {
            continue;
        }
        d[0] = '\0';
        tlmpi_tiers[t]->describe(tc, d, sizeof(d));
        if (d[0]) {
            o += (size_t)snprintf(buf + o, len - o, "; %s: %s", tlmpi_tiers[t]->name, d);
        }
    }
}

/* ---- collective ---- */

static const char *const coll_env_name[TLMPI_COLL_COUNT] = {
    "TLMPI_ALLGATHER_TIERS", "TLMPI_REDUCE_SCATTER_BLOCK_TIERS", "TLMPI_ALLREDUCE_TIERS", "TLMPI_ALLGATHERV_TIERS",
    "TLMPI_REDUCE_SCATTER_TIERS", "TLMPI_BCAST_TIERS", "TLMPI_REDUCE_TIERS", "TLMPI_ALLTOALL_TIERS",
};

/* What each lost capability means, for the one warning per rank, and whose reason explains it
 * here (a tier's local_caps reason; -1: the comm's streams). */
static const struct {
    unsigned cap;
    int tier;
    const char *what, *then;
} cap_text[] = {
    { TLMPI_CAP_STREAM, -1, "the communicator's streams", "every call on it is staged through the host on the legacy stream" },
    { TLMPI_CAP_STAGING_POOL, TLMPI_TIER_STAGING, "the pinned staging pool", "staging uses pageable memory on every rank of it" },
    { TLMPI_CAP_NCCL, TLMPI_TIER_NCCL, "the flat NCCL tier", "its calls go to the next tier (host staging)" },
    { TLMPI_CAP_NODE, TLMPI_TIER_NODE, "the node tier (tlmpi's intra-node kernels)", "its calls go to the next tier" },
};

/* The tables a plan is filled from: TLMPI_<COLL>_TIERS, else the tuning file's for this comm's
 * layout (TLMPI_TUNING_FILE; not for a hier comm's sub comms, whose tiers hier chose). Hashed and
 * agreed like any setting, so a file that differs between ranks gives every rank the automatic plan. */
typedef struct {
    const char *specs[TLMPI_COLL_COUNT];
    char tuned[TLMPI_COLL_COUNT][TLMPI_TUNING_SPEC_LEN];
    unsigned tuned_mask;        /* bit per collective whose table came from the file */
} specs_t;

static void current_specs(const tlmpi_tier_comm_t *tc, specs_t *s)
{
    const char *file = TLMPI_ENV_S(TUNING_FILE);
    int c;

    s->specs[TLMPI_COLL_ALLGATHER] = TLMPI_ENV_S(ALLGATHER_TIERS);
    s->specs[TLMPI_COLL_REDUCE_SCATTER_BLOCK] = TLMPI_ENV_S(REDUCE_SCATTER_BLOCK_TIERS);
    s->specs[TLMPI_COLL_ALLREDUCE] = TLMPI_ENV_S(ALLREDUCE_TIERS);
    s->specs[TLMPI_COLL_ALLGATHERV] = TLMPI_ENV_S(ALLGATHERV_TIERS);
    s->specs[TLMPI_COLL_REDUCE_SCATTER] = TLMPI_ENV_S(REDUCE_SCATTER_TIERS);
    s->specs[TLMPI_COLL_BCAST] = TLMPI_ENV_S(BCAST_TIERS);
    s->specs[TLMPI_COLL_REDUCE] = TLMPI_ENV_S(REDUCE_TIERS);
    s->specs[TLMPI_COLL_ALLTOALL] = TLMPI_ENV_S(ALLTOALL_TIERS);
    s->tuned_mask = 0;
    if (file && *file && !tc->sub) {
        static int told_missing;
        char gpu[128], why[512];
        tlmpi_tuning_key_t key;
        int r;

        tlmpi_tuning_gpu(tc->dev, gpu, sizeof(gpu));
        key.generation = tlmpi_tuning_generation();
        key.nodes = tc->nodes;
        key.ranks_per_node = tc->local_size;
        key.gpu = gpu;
        r = tlmpi_tuning_lookup(file, &key, s->tuned, why, sizeof(why));
        if (r < 0) {
            tlmpi_warn_once(ENV, "TLMPI_TUNING_FILE: %s; not used", why);
        } else if (r == 0) {
            if (!__atomic_exchange_n(&told_missing, 1, __ATOMIC_RELAXED)) {
                tlmpi_info(ENV, "TLMPI_TUNING_FILE: %s; the defaults decide", why);
            }
        } else {
            for (c = 0; c < TLMPI_COLL_COUNT; c++) {
                if ((!s->specs[c] || !*s->specs[c]) && s->tuned[c][0]) {
                    s->specs[c] = s->tuned[c];
                    s->tuned_mask |= 1u << c;
                }
            }
        }
    }
}

/* Fill the tables from the settings sp (current_specs, as hashed and agreed); uniform is the
 * agreement on their hash. */
static void fill_agreed(tlmpi_tier_comm_t *tc, tlmpi_plan_t *p, const specs_t *sp, int uniform)
{
    const char *const *specs = sp->specs;
    char errs[TLMPI_COLL_COUNT][160];
    unsigned bad;
    int c;

    p->tuned = 0;
    if (tc->sub) {
        /* a hier comm's node or rail comm: the tier hier chose for it, no tables */
        bad = tlmpi_plan_fill(p, p->caps, (long)(tc->sub - 1), NULL, errs);
    } else if (!uniform) {
        tlmpi_warn(COMM, "communicator #%u: TLMPI_TIER or TLMPI_*_TIERS differ between its ranks; every rank "
                   "uses the automatic plan for it", tc->id);
        bad = tlmpi_plan_fill(p, p->caps, 0, NULL, errs);
    } else {
        bad = tlmpi_plan_fill(p, p->caps, (long)TLMPI_ENV_I(TIER), specs, errs);
        p->tuned = sp->tuned_mask & ~bad;
    }
    for (c = 0; c < TLMPI_COLL_COUNT; c++) {
        if (bad & (1u << c)) {
            /* the same text on every rank: the settings were agreed uniform */
            tlmpi_warn_once(ENV, "%s='%s'%s is invalid (%s); TLMPI_TIER decides for %s", coll_env_name[c], specs[c],
                            sp->tuned_mask & (1u << c) ? " (from TLMPI_TUNING_FILE)" : "", errs[c],
                            tlmpi_coll_name(c));
        }
    }
    p->gen = __atomic_load_n(&tlmpi_g.config_gen, __ATOMIC_RELAXED);
}

/* Set up every tier the plan can now pick that has not been set up; agree on failures. */
static void setup_tiers(tlmpi_tier_comm_t *tc, tlmpi_plan_t *p)
{
    unsigned need = tlmpi_plan_tiers_used(p) & ~p->setup_done, failed = 0, all_failed = 0, found;
    char why[TLMPI_TIER_COUNT][320]; /* a devcomm failure with its hint: ~280 */
    int t, any = 0, turn = 0;

    for (t = 0; t < TLMPI_TIER_COUNT; t++) {
        why[t][0] = '\0';
        if (!(need & (1u << t)) || !tlmpi_tiers[t]->setup) {
            continue;
        }
        p->setup_done |= 1u << t;
        if ((p->caps & tlmpi_tiers[t]->cap) != tlmpi_tiers[t]->cap) {
            continue; /* unusable on this comm anyway (agreed caps) */
        }
        if (!any && (p->caps & TLMPI_CAP_TURNS)) {
            /* setups launch kernels that wait for peers (the node tier's timed barriers) and make
             * CUDA calls that can queue behind another thread's: hold the GPU turn (turn.h) */
            tlmpi_wait_who_t who = { tc->comm, tc->id, TLMPI_COLL_ALLREDUCE, "plan build" };

            if (tlmpi_turn_take(tc->comm, tc->uid, &who) == MPI_SUCCESS) {
                turn = 1;
            }
        }
        any = 1;
        if (tlmpi_tiers[t]->setup(tc, why[t], sizeof(why[t])) != TLMPI_OK) {
            failed |= 1u << t;
        }
    }
    if (!any) {
        return;
    }
    found = tc->caps; /* with what the setups added */
    if (PMPI_Allreduce(&failed, &all_failed, 1, MPI_UNSIGNED, MPI_BOR, tc->comm) != MPI_SUCCESS) {
        all_failed = ~0u & need;
    }
    if (turn) {
        tlmpi_turn_release();
    }
    for (t = 0; t < TLMPI_TIER_COUNT; t++) {
        if (!(all_failed & (1u << t))) {
            /* what a successful setup found (agreed by the setup itself: the same on every rank) */
            if ((need & (1u << t)) && tlmpi_tiers[t]->setup_caps) {
                p->caps |= found & tlmpi_tiers[t]->setup_caps;
            }
            continue;
        }
        if (!(failed & (1u << t)) && tlmpi_tiers[t]->cleanup) {
            tlmpi_tiers[t]->cleanup(tc); /* it worked here: undo it */
        }
        /* the tier's own capability only: the comm's GPU and streams stay for the other tiers */
        p->caps &= ~(tlmpi_tiers[t]->cap & ~(TLMPI_CAP_GPU | TLMPI_CAP_STREAM));
        tc->caps = p->caps;
        tlmpi_warn(COMM, "communicator #%u: setting up tier %s failed on some rank (here: %s); every rank uses "
                   "the next tier for its calls", tc->id, tlmpi_tiers[t]->name, why[t][0] ? why[t] : "it succeeded");
    }
    tc->caps = p->caps;
    fill_auto_order(p);
}

void tlmpi_plan_build(tlmpi_tier_comm_t *tc, tlmpi_plan_t *p)
{
    specs_t sp;
    unsigned have = 0, want = 0, agreed, lost;
    uint64_t w[5], h;
    char why_stream[160] = "", why[TLMPI_TIER_COUNT][160];
    int t, i, uniform;

    memset(p, 0, sizeof(*p));
    if (tlmpi_g.gpu_count > 0 && tc->dev >= 0) {
        have |= TLMPI_CAP_GPU;
        want |= TLMPI_CAP_STREAM;
        tc->ctx = tlmpi_gpu_ctx_create(tc->dev, tc->gpu_sharers, why_stream, sizeof(why_stream));
        if (tc->ctx) {
            have |= TLMPI_CAP_STREAM;
        }
    }
    for (t = 0; t < TLMPI_TIER_COUNT; t++) {
        unsigned tw = 0;

        why[t][0] = '\0';
        have |= tlmpi_tiers[t]->local_caps(tc, &tw, why[t], sizeof(why[t]));
        want |= tw;
    }
    current_specs(tc, &sp);
    h = tlmpi_plan_settings_hash((long)TLMPI_ENV_I(TIER), sp.specs);
    w[0] = ~(uint64_t)have;
    w[1] = want;
    w[2] = h;
    w[3] = ~h;
    w[4] = tc->shared_gpu ? TLMPI_CAP_SHARED_GPU : 0;
    if (tlmpi_turn_wanted()) {
        w[4] |= TLMPI_CAP_TURNS; /* agreed by OR: all ranks take the GPU turn, or none */
    }
    if (PMPI_Allreduce(MPI_IN_PLACE, w, 5, MPI_UINT64_T, MPI_BOR, tc->comm) != MPI_SUCCESS) {
        w[0] = ~(uint64_t)0; /* no capability: staging, which needs none of them */
        w[1] = 0;
        w[2] = w[3] = 0;
    }
    agreed = (unsigned)~w[0];
    uniform = tlmpi_plan_hashes_agree(w[2], w[3]);
    p->caps = agreed | (unsigned)w[4];
    tc->caps = p->caps;
    lost = (unsigned)w[1] & ~agreed;
    for (i = 0; i < (int)(sizeof(cap_text) / sizeof(cap_text[0])); i++) {
        const char *here = cap_text[i].tier < 0 ? why_stream : why[cap_text[i].tier];

        if (!(lost & cap_text[i].cap)) {
            continue;
        }
        tlmpi_warn(COMM, "communicator #%u: missing on some rank: %s (here: %s); %s", tc->id, cap_text[i].what,
                   *here ? here : "available", cap_text[i].then);
    }
    if (!(p->caps & TLMPI_CAP_STREAM) && tc->ctx) {
        tlmpi_gpu_ctx_destroy(tc->ctx); /* not used by anyone: another rank has none */
        tc->ctx = NULL;
    }
    fill_agreed(tc, p, &sp, uniform);
    setup_tiers(tc, p);
    if (TLMPI_ENV_I(LOG_LEVEL) >= TLMPI_LOG_INFO) {
        char d[1024];

        tlmpi_plan_describe_comm(tc, p, d, sizeof(d));
        tlmpi_info(COMM, "communicator #%u plan: %s", tc->id, d);
    }
}

void tlmpi_plan_refresh(tlmpi_tier_comm_t *tc, tlmpi_plan_t *p)
{
    specs_t sp;
    uint64_t w[2], h;

    current_specs(tc, &sp);
    h = tlmpi_plan_settings_hash((long)TLMPI_ENV_I(TIER), sp.specs);
    w[0] = h;
    w[1] = ~h;
    if (PMPI_Allreduce(MPI_IN_PLACE, w, 2, MPI_UINT64_T, MPI_BOR, tc->comm) != MPI_SUCCESS) {
        w[0] = w[1] = ~(uint64_t)0;
    }
    fill_agreed(tc, p, &sp, tlmpi_plan_hashes_agree(w[0], w[1]));
    setup_tiers(tc, p);
}
