/*
 * plan: per communicator, which tier (and algorithm) serves each call. Built once, collectively,
 * when a communicator first carries device buffers (tlmpi_plan_build), and refreshed collectively
 * after tlmpi_config_set changed a setting (tlmpi_plan_refresh): every tier's local capabilities
 * are agreed with one PMPI_Allreduce (which also compares the plan's settings across ranks), then
 * each tier the plan can pick is set up (NCCL communicator, ...) and the outcome agreed again.
 * Every failure on any rank ends with every rank on the same slower tier and one warning per rank.
 *
 * Per collective the plan holds an ordered threshold table (max_bytes -> tier, algorithm) from
 * TLMPI_<COLL>_TIERS, else from TLMPI_TIER; message sizes as in call.h. Selection is a pure lookup
 * (tlmpi_plan_select) that every rank evaluates with the same inputs; unit-tested.
 */
#ifndef TLMPI_PLAN_H
#define TLMPI_PLAN_H

#include "call.h"
#include "tier.h"
#include <stddef.h>
#include <stdint.h>

#define TLMPI_PLAN_MAX_ENTRIES 8

typedef struct {
    size_t max_bytes;           /* entry applies to msg_bytes <= max_bytes (SIZE_MAX: no limit) */
    uint8_t tier;               /* tlmpi_tier_id_t, or TLMPI_TIER_AUTO */
    uint8_t algo;               /* index in the tier's algorithm list */
    uint8_t ctas;               /* knob: CTAs per kernel (tiers with kernels; 0: the tier's choice) */
} tlmpi_plan_entry_t;

typedef struct {
    int n;
    tlmpi_plan_entry_t e[TLMPI_PLAN_MAX_ENTRIES];
} tlmpi_plan_table_t;

typedef struct tlmpi_plan {
    unsigned caps;              /* TLMPI_CAP_*, agreed (setup failures cleared) */
    tlmpi_plan_table_t table[TLMPI_COLL_COUNT];
    uint8_t auto_order[TLMPI_TIER_COUNT]; /* tiers an AUTO entry tries, best first */
    int n_auto;
    unsigned setup_done;        /* bit per tier: setup ran, successfully or not (never retried) */
    unsigned gen;               /* settings generation the tables were filled from */
    unsigned tuned;             /* bit per collective whose table came from TLMPI_TUNING_FILE */
} tlmpi_plan_t;

/* ---- pure parts (no MPI, no CUDA; unit-tested) ---- */

/* Parse a threshold table "tier[/algo][@ctas][:max_bytes],...,tier". 0 on success; -1 with a
 * message in err. Sizes take k/m/g suffixes; each entry but the last needs a limit, limits
 * increase, the last entry has none; @ctas (1..255, a named tier only) is the CTA-count knob. */
int tlmpi_plan_parse_table(const char *spec, tlmpi_plan_table_t *t, char *err, size_t len);
/* Fill the tables and the auto order from caps, TLMPI_TIER (tier_env: its enum index) and the
 * three table strings (NULL or "" = none). Returns a bit per collective whose table was invalid
 * (then TLMPI_TIER decides for it); errs[coll] gets each message. */
unsigned tlmpi_plan_fill(tlmpi_plan_t *p, unsigned caps, long tier_env, const char *const specs[TLMPI_COLL_COUNT],
                         char errs[TLMPI_COLL_COUNT][160]);
/* The tier for a call (and, in *algo_p, the algorithm word its run gets: TLMPI_ALGO_WORD): the table entry for its size; an AUTO entry
 * takes the first tier of the auto order that supports the call; a named tier that cannot serve
 * the call falls back to staging (or to the CUDA-aware MPI when staging cannot serve it). */
int tlmpi_plan_select(const tlmpi_plan_t *p, const tlmpi_call_t *c, int *algo_p);
/* Bit per tier that the plan can select (those that need setup). */
unsigned tlmpi_plan_tiers_used(const tlmpi_plan_t *p);
/* Hash of the tables and capabilities (TLMPI_VERIFY_UNIFORM compares it across ranks). */
uint64_t tlmpi_plan_hash(const tlmpi_plan_t *p);
/* Hash of the settings a plan is filled from (compared across ranks at every fill). */
uint64_t tlmpi_plan_settings_hash(long tier_env, const char *const specs[TLMPI_COLL_COUNT]);
/* The agreement rule on a hash h reduced with MPI_BOR as {h, ~h}: uniform iff no bit is set in both. */
static inline int tlmpi_plan_hashes_agree(uint64_t or_h, uint64_t or_not_h)
{
    return (or_h & or_not_h) == 0;
}
/* The plan in words, the collectives separated by "; ": each table entry as tier[/algorithm] with
 * its limit, an auto entry as the tiers it tries, best first (auto{node/auto(...)>nccl>staging});
 * then the agreed capabilities (tlmpi_info, info log). */
void tlmpi_plan_describe(const tlmpi_plan_t *p, char *buf, size_t len);
/* The same, followed by what each set-up tier uses on the comm ("; node: transport ipc, ..."). */
void tlmpi_plan_describe_comm(const tlmpi_tier_comm_t *tc, const tlmpi_plan_t *p, char *buf, size_t len);

/* ---- collective parts ---- */

/* Build the plan of tc (collective over tc->comm): creates tc->ctx, agrees capabilities, fills the
 * tables, sets up the tiers it can pick. Never fails: what fails falls back, agreed. */
void tlmpi_plan_build(tlmpi_tier_comm_t *tc, tlmpi_plan_t *p);
/* Collective: refill the tables after a settings change (p->gen != the current generation) and
 * set up newly needed tiers. */
void tlmpi_plan_refresh(tlmpi_tier_comm_t *tc, tlmpi_plan_t *p);

#endif
