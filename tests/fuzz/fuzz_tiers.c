/*
 * fuzz_tiers: libFuzzer harness of the threshold-table parser behind TLMPI_<COLL>_TIERS and the
 * tuning file's tables (tlmpi_plan_parse_table, src/comm/plan.c), and of the plan filled from
 * three of them (tlmpi_plan_fill, tlmpi_plan_describe, tlmpi_plan_hash). Input: up to three
 * tables separated by newlines (allgather, reduce_scatter_block, allreduce); the first byte's low
 * bits also pick TLMPI_TIER's value and the capabilities. Properties checked besides the
 * sanitizers':
 *  - a table that parses has 1..TLMPI_PLAN_MAX_ENTRIES entries, strictly increasing limits, the
 *    last without limit, known tiers, each named tier's algorithm among its own, CTAs 0..255;
 *  - a rejected table has a message; tlmpi_plan_fill marks exactly the rejected tables' bits;
 *  - the plan's description is a terminated string within its buffer.
 */
#include "config.h"
#include "plan.h"
#include "tier.h"
#include "fuzz_common.h"

static void check_table(const char *spec, const tlmpi_plan_table_t *t)
{
    int i;

    FUZZ_CHECK(t->n >= 1 && t->n <= TLMPI_PLAN_MAX_ENTRIES, "'%s': %d entries", spec, t->n);
    for (i = 0; i < t->n; i++) {
        const tlmpi_plan_entry_t *e = &t->e[i];

        FUZZ_CHECK(e->tier < TLMPI_TIER_COUNT || e->tier == TLMPI_TIER_AUTO, "'%s': entry %d tier %d", spec, i, e->tier);
        if (e->tier != TLMPI_TIER_AUTO) {
            FUZZ_CHECK(e->algo < tlmpi_tiers[e->tier]->n_algos, "'%s': entry %d algo %d of %s", spec, i, e->algo,
                       tlmpi_tiers[e->tier]->name);
        }
        FUZZ_CHECK(e->tier != TLMPI_TIER_AUTO || e->ctas == 0, "'%s': CTAs on auto", spec);
        if (i > 0) {
            FUZZ_CHECK(e->max_bytes > t->e[i - 1].max_bytes, "'%s': limits not increasing at %d", spec, i);
        }
    }
    FUZZ_CHECK(t->e[t->n - 1].max_bytes == SIZE_MAX, "'%s': the last entry has a limit", spec);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf, *specs[TLMPI_COLL_COUNT] = { NULL, NULL, NULL }, errs[TLMPI_COLL_COUNT][160], desc[2048];
    const char *cspecs[TLMPI_COLL_COUNT];
    unsigned want = 0, bad, caps;
    tlmpi_plan_t plan;
    long tier_env;
    int c;

    if (size < 1) {
        return 0;
    }
    fuzz_quiet_log();
    tier_env = data[0] % 7;           /* TLMPI_TIER: {auto,nccl,staging,mpi,self,node,hier} */
    caps = (unsigned)data[0] >> 3;
    buf = fuzz_cstr(data + 1, size - 1);
    specs[0] = buf;
    for (c = 1; c < TLMPI_COLL_COUNT; c++) {
        char *nl = specs[c - 1] ? strchr(specs[c - 1], '\n') : NULL;

        if (nl) {
            *nl = '\0';
            specs[c] = nl + 1;
        }
    }
    for (c = 0; c < TLMPI_COLL_COUNT; c++) {
        tlmpi_plan_table_t t;
        char err[160] = "";

        cspecs[c] = specs[c];
        if (!specs[c] || !*specs[c]) {
            continue;
        }
        if (tlmpi_plan_parse_table(specs[c], &t, err, sizeof(err)) == 0) {
            check_table(specs[c], &t);
        } else {
            FUZZ_CHECK(err[0] != '\0', "'%s' rejected without a message", specs[c]);
            want |= 1u << c;
        }
    }
    memset(&plan, 0, sizeof(plan));
    bad = tlmpi_plan_fill(&plan, caps, tier_env, cspecs, errs);
    FUZZ_CHECK(bad == want, "tlmpi_plan_fill marks %#x, the parser rejects %#x", bad, want);
    for (c = 0; c < TLMPI_COLL_COUNT; c++) {
        FUZZ_CHECK(plan.table[c].n >= 1 && plan.table[c].n <= TLMPI_PLAN_MAX_ENTRIES, "plan table %d: %d entries", c,
                   plan.table[c].n);
    }
    memset(desc, 'x', sizeof(desc));
    tlmpi_plan_describe(&plan, desc, sizeof(desc));
    FUZZ_CHECK(memchr(desc, '\0', sizeof(desc)) != NULL, "description not terminated");
    (void)tlmpi_plan_hash(&plan);
    (void)tlmpi_plan_settings_hash(tier_env, cspecs);
    free(buf);
    return 0;
}
