/*
 * Unit tests (Check, fork mode, no MPI run, no GPU): the per-communicator plan of src/comm/plan.c
 * and the tiers' supports() predicates.
 *  - supports: every tier for every (collective, dtype, op, contiguity, memory kind, capability set)
 *    against a reference model written here, plus a table of named cases;
 *  - threshold tables: parsing (valid and invalid strings), filling from TLMPI_TIER and the tables,
 *    lookups at the boundaries, the auto order and the fallbacks;
 *  - agreement: the settings hash and the rule that decides uniformity from the OR-reduced words.
 */
#include "config.h"
#include "plan.h"
#include "env.h"
#include "global.h"
#include "stats.h"
#include "tuning.h"

#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define AG TLMPI_COLL_ALLGATHER
#define RSB TLMPI_COLL_REDUCE_SCATTER_BLOCK
#define AR TLMPI_COLL_ALLREDUCE
#define GPU TLMPI_CAP_GPU
#define STREAM TLMPI_CAP_STREAM
#define NCCL TLMPI_CAP_NCCL
#define AWARE TLMPI_CAP_MPI_CUDA_AWARE
#define SELF TLMPI_CAP_SELF
#define SHARED TLMPI_CAP_SHARED_GPU
#define POOL TLMPI_CAP_STAGING_POOL
#define NODE TLMPI_CAP_NODE
#define SLOW TLMPI_CAP_NODE_SLOW
#define HIER TLMPI_CAP_HIER
#define DEV3 (GPU | STREAM | POOL)

/* memory kinds of a call: send / receive (in place: the receive buffer only) */
typedef enum { MK_DEV_DEV, MK_INPLACE_DEV, MK_MANAGED, MK_HOST_DEV, MK_DEV_HOST, MK_COUNT } mk_t;
static const char *const mk_name[MK_COUNT] = { "dev/dev", "in-place dev", "managed", "host/dev", "dev/host" };

static int dummy_s, dummy_r;

static tlmpi_call_t mkcall(tlmpi_coll_t coll, tlmpi_dtype_t dt, tlmpi_op_t op, int contig, mk_t mk, size_t bytes)
{
    tlmpi_call_t c;

    memset(&c, 0, sizeof(c));
    c.coll = coll;
    c.dt = dt;
    c.opc = tlmpi_coll_reduces(coll) ? op : TLMPI_OP_SUM;
    c.contiguous = contig;
    c.dt_size = dt < TLMPI_DT_NUM_ARITH ? (int)tlmpi_dtype_elem_size(dt) : 4;
    c.count = (MPI_Count)(bytes / (size_t)c.dt_size);
    c.msg_bytes = bytes;
    c.rbuf = &dummy_r;
    c.sbuf = &dummy_s;
    c.sdev = c.rdev = 0;
    c.smem = c.rmem = TLMPI_MEM_DEVICE;
    switch (mk) {
    case MK_INPLACE_DEV:
        c.sbuf = MPI_IN_PLACE;
        c.in_place = 1;
        c.smem = TLMPI_MEM_HOST;
        c.sdev = -1;
        break;
    case MK_MANAGED:
        c.smem = c.rmem = TLMPI_MEM_MANAGED;
        break;
    case MK_HOST_DEV:
        c.smem = TLMPI_MEM_HOST;
        c.sdev = -1;
        break;
    case MK_DEV_HOST:
        c.rmem = TLMPI_MEM_PINNED;
        c.rdev = -1;
        break;
    default:
        break;
    }
    return c;
}

/* ---- the reference model: what each tier must accept, written independently of the tiers ---- */

/* The NCCL tier exists only in builds with CUDA and NCCL headers (src/tier/nccl.c); elsewhere (e.g.
 * configure --with-cuda=no, as scripts/test.sh's distcheck) it supports nothing and the cases that
 * need it are skipped. */
#if defined(HAVE_CUDA) && defined(HAVE_NCCL)
#define REF_NCCL_TIER 1
#else
#define REF_NCCL_TIER 0
#endif

static int ref_all_device(mk_t mk)
{
    return mk == MK_DEV_DEV || mk == MK_INPLACE_DEV || mk == MK_MANAGED;
}

static int ref_nccl_type(tlmpi_dtype_t dt)
{
    switch (dt) {
    case TLMPI_DT_I8: case TLMPI_DT_U8: case TLMPI_DT_I32: case TLMPI_DT_U32: case TLMPI_DT_I64:
    case TLMPI_DT_U64: case TLMPI_DT_F16: case TLMPI_DT_BF16: case TLMPI_DT_F32: case TLMPI_DT_F64:
        return 1;
    default: /* no 16-bit integers in NCCL; BYTES and DERIVED are not reducible by it */
        return 0;
    }
}

static int ref_supports(int tier, tlmpi_coll_t coll, tlmpi_dtype_t dt, tlmpi_op_t op, int contig, mk_t mk,
                        unsigned caps)
{
    int arith_op = op < TLMPI_OP_NUM_ARITH;
    int half = dt == TLMPI_DT_F16 || dt == TLMPI_DT_BF16;
    /* the siblings (allgatherv, reduce_scatter, bcast, reduce, alltoall): staging, or a CUDA-aware MPI */
    int sibling = coll >= TLMPI_COLL_ALLGATHERV;
    int moves = coll == AG || coll == TLMPI_COLL_ALLGATHERV || coll == TLMPI_COLL_BCAST || coll == TLMPI_COLL_ALLTOALL;

    if (sibling && tier != TLMPI_TIER_MPI && tier != TLMPI_TIER_STAGING) {
        return 0;
    }
    switch (tier) {
    case TLMPI_TIER_SELF:
        return (caps & SELF) && (caps & STREAM) && (caps & GPU) && contig && ref_all_device(mk);
    case TLMPI_TIER_NCCL:
        if (!REF_NCCL_TIER || !(caps & NCCL) || !(caps & STREAM) || !(caps & GPU) || !ref_all_device(mk)) {
            return 0;
        }
        return coll == AG ? contig : ref_nccl_type(dt) && arith_op;
    case TLMPI_TIER_MPI:
        return (caps & AWARE) && (moves || !(half && arith_op));
    case TLMPI_TIER_STAGING:
        return 1;
    case TLMPI_TIER_HIER:
        /* steps on the sub comms' own plans: anything contiguous on device buffers */
        return (caps & HIER) && (caps & STREAM) && (caps & GPU) && contig && ref_all_device(mk);
    case TLMPI_TIER_NODE:
        /* tlmpi's kernels: any contiguous allgather; reductions of every arithmetic type with
         * sum/prod/min/max (16-bit integers too); no alignment condition; SLOW does not matter here
         * (it only takes the tier out of the auto order) */
#ifdef HAVE_CUDA
        if (!(caps & NODE) || !(caps & STREAM) || !(caps & GPU) || !contig || !ref_all_device(mk)) {
            return 0;
        }
        return coll == AG || (dt < TLMPI_DT_NUM_ARITH && arith_op);
#else
        return 0;
#endif
    }
    return -1;
}

static const unsigned cap_sets[] = {
    0, GPU, DEV3, DEV3 | NCCL, DEV3 | NCCL | AWARE, DEV3 | SELF, DEV3 | SELF | NCCL, GPU | NCCL | POOL,
    DEV3 | AWARE, AWARE, DEV3 | NCCL | SHARED, GPU | SELF | NCCL,
    DEV3 | NODE, DEV3 | NODE | NCCL, DEV3 | NODE | SHARED | SLOW, GPU | NODE | POOL, STREAM | NODE, GPU | NODE,
    DEV3 | NODE | NCCL | AWARE | SHARED, DEV3 | HIER, DEV3 | HIER | NCCL | NODE, GPU | HIER, STREAM | HIER,
};
#define N_CAPS ((int)(sizeof(cap_sets) / sizeof(cap_sets[0])))

START_TEST(test_supports_exhaustive)
{
    long checked = 0, bad = 0;
    int t, coll, dt, op, contig, mk, ci;

    for (t = 0; t < TLMPI_TIER_COUNT; t++)
        for (coll = 0; coll < TLMPI_COLL_COUNT; coll++)
            for (dt = 0; dt <= TLMPI_DT_DERIVED; dt++)
                for (op = 0; op <= TLMPI_OP_USER; op++)
                    for (contig = 0; contig <= 1; contig++)
                        for (mk = 0; mk < MK_COUNT; mk++)
                            for (ci = 0; ci < N_CAPS; ci++) {
                                tlmpi_call_t c;
                                int got, want;

                                if (dt < TLMPI_DT_BYTES && !contig) {
                                    continue; /* predefined arithmetic types are contiguous */
                                }
                                c = mkcall(coll, dt, op, contig, mk, 4096);
                                c.local_size = 2;
                                got = tlmpi_tiers[t]->supports(&c, cap_sets[ci]);
                                want = ref_supports(t, coll, dt, tlmpi_coll_reduces(coll) ? op : TLMPI_OP_SUM, contig, mk,
                                                    cap_sets[ci]);
                                checked++;
                                if (!!got != want && bad++ < 10) {
                                    fprintf(stderr, "tier %s coll %d dt %d op %d contig %d mem %s caps 0x%x: got %d want %d\n",
                                            tlmpi_tiers[t]->name, coll, dt, op, contig, mk_name[mk], cap_sets[ci], got, want);
                                }
                            }
    ck_assert_msg(bad == 0, "%ld of %ld supports() answers differ from the reference", bad, checked);
    ck_assert(checked > 10000);
    {
        /* hier: an allreduce count the ranks per node do not divide runs one-shot; one rank per node: no */
        tlmpi_call_t c = mkcall(TLMPI_COLL_ALLREDUCE, TLMPI_DT_F32, TLMPI_OP_SUM, 1, 0, 4 * 4097);

        c.local_size = 2;
        ck_assert_int_eq(tlmpi_tier_hier.supports(&c, DEV3 | HIER), 1);
        c = mkcall(TLMPI_COLL_ALLGATHER, TLMPI_DT_F32, TLMPI_OP_SUM, 1, 0, 4097);
        c.local_size = 2;
        ck_assert_int_eq(tlmpi_tier_hier.supports(&c, DEV3 | HIER), 1);
        c.local_size = 1;
        ck_assert_int_eq(tlmpi_tier_hier.supports(&c, DEV3 | HIER), 0);
    }
}
END_TEST

/* ---- named cases: tier choice for one call under one plan ---- */

typedef struct {
    const char *name;
    tlmpi_coll_t coll;
    tlmpi_dtype_t dt;
    tlmpi_op_t op;
    int contig;
    mk_t mk;
    unsigned caps;
    long tier_env; /* TLMPI_TIER enum index: 0 auto 1 nccl 2 staging 3 mpi 4 self 5 node */
    int want;
} select_case_t;

#define T_SELF TLMPI_TIER_SELF
#define T_NCCL TLMPI_TIER_NCCL
#define T_MPI TLMPI_TIER_MPI
#define T_STG TLMPI_TIER_STAGING
#define T_NODE TLMPI_TIER_NODE

static const select_case_t cases[] = {
    { "f32 sum -> nccl", AR, TLMPI_DT_F32, TLMPI_OP_SUM, 1, MK_DEV_DEV, DEV3 | NCCL, 0, T_NCCL },
    { "f64 min rsb in place -> nccl", RSB, TLMPI_DT_F64, TLMPI_OP_MIN, 1, MK_INPLACE_DEV, DEV3 | NCCL | AWARE, 0, T_NCCL },
    { "bf16 sum -> nccl", AR, TLMPI_DT_BF16, TLMPI_OP_SUM, 1, MK_DEV_DEV, DEV3 | NCCL, 0, T_NCCL },
    { "allgather bytes -> nccl", AG, TLMPI_DT_BYTES, TLMPI_OP_OTHER, 1, MK_DEV_DEV, DEV3 | NCCL, 0, T_NCCL },
    { "allgather derived -> staging", AG, TLMPI_DT_DERIVED, TLMPI_OP_OTHER, 0, MK_DEV_DEV, DEV3 | NCCL, 0, T_STG },
    { "shared gpu auto -> staging", AR, TLMPI_DT_F32, TLMPI_OP_SUM, 1, MK_DEV_DEV, DEV3 | NCCL | SHARED, 0, T_STG },
    { "shared gpu aware -> mpi", AR, TLMPI_DT_F32, TLMPI_OP_SUM, 1, MK_DEV_DEV, DEV3 | NCCL | AWARE | SHARED, 0, T_MPI },
    { "shared gpu forced nccl", AR, TLMPI_DT_F32, TLMPI_OP_SUM, 1, MK_DEV_DEV, DEV3 | NCCL | SHARED, 1, T_NCCL },
    { "forced staging", AR, TLMPI_DT_F32, TLMPI_OP_SUM, 1, MK_DEV_DEV, DEV3 | NCCL | AWARE, 2, T_STG },
    { "forced mpi aware", AR, TLMPI_DT_F32, TLMPI_OP_SUM, 1, MK_DEV_DEV, DEV3 | NCCL | AWARE, 3, T_MPI },
    { "forced mpi unaware -> staging", AR, TLMPI_DT_F32, TLMPI_OP_SUM, 1, MK_DEV_DEV, DEV3 | NCCL, 3, T_STG },
    { "forced mpi f16 -> staging", AR, TLMPI_DT_F16, TLMPI_OP_SUM, 1, MK_DEV_DEV, DEV3 | NCCL | AWARE, 3, T_STG },
    { "forced nccl without it", AR, TLMPI_DT_F32, TLMPI_OP_SUM, 1, MK_DEV_DEV, DEV3, 1, T_STG },
    { "forced nccl i16 -> staging", AR, TLMPI_DT_I16, TLMPI_OP_SUM, 1, MK_DEV_DEV, DEV3 | NCCL, 1, T_STG },
    { "forced nccl mixed -> staging", AR, TLMPI_DT_F32, TLMPI_OP_SUM, 1, MK_HOST_DEV, DEV3 | NCCL, 1, T_STG },
    { "no caps -> staging", AR, TLMPI_DT_F32, TLMPI_OP_SUM, 1, MK_DEV_DEV, 0, 0, T_STG },
    { "aware only -> mpi", AR, TLMPI_DT_F32, TLMPI_OP_SUM, 1, MK_DEV_DEV, AWARE, 0, T_MPI },
    { "u16 max rsb -> staging", RSB, TLMPI_DT_U16, TLMPI_OP_MAX, 1, MK_DEV_DEV, DEV3 | NCCL, 0, T_STG },
    { "user op -> staging", AR, TLMPI_DT_F32, TLMPI_OP_USER, 1, MK_DEV_DEV, DEV3 | NCCL, 0, T_STG },
    { "one rank -> self", AR, TLMPI_DT_F32, TLMPI_OP_SUM, 1, MK_DEV_DEV, DEV3 | NCCL | SELF, 0, T_SELF },
    { "one rank i16 user op -> self", AR, TLMPI_DT_I16, TLMPI_OP_USER, 1, MK_DEV_DEV, DEV3 | SELF, 0, T_SELF },
    { "one rank derived -> staging", AR, TLMPI_DT_DERIVED, TLMPI_OP_USER, 0, MK_DEV_DEV, DEV3 | SELF, 0, T_STG },
    { "one rank mixed -> staging", AG, TLMPI_DT_I32, TLMPI_OP_SUM, 1, MK_DEV_HOST, DEV3 | SELF | NCCL, 0, T_STG },
    { "one rank forced nccl", AR, TLMPI_DT_F32, TLMPI_OP_SUM, 1, MK_DEV_DEV, DEV3 | SELF | NCCL, 1, T_NCCL },
    { "one rank no stream -> staging", AR, TLMPI_DT_F32, TLMPI_OP_SUM, 1, MK_DEV_DEV, GPU | SELF | NCCL, 0, T_STG },
    { "no stream -> staging", AR, TLMPI_DT_F32, TLMPI_OP_SUM, 1, MK_DEV_DEV, GPU | NCCL | POOL, 1, T_STG },
    { "forced self on two ranks -> staging", AR, TLMPI_DT_F32, TLMPI_OP_SUM, 1, MK_DEV_DEV, DEV3 | NCCL, 4, T_STG },
#ifdef HAVE_CUDA
    /* the node tier: before nccl in the auto order, not where its barriers were timed slow */
    { "node f32 sum -> node", AR, TLMPI_DT_F32, TLMPI_OP_SUM, 1, MK_DEV_DEV, DEV3 | NODE | NCCL, 0, T_NODE },
    { "node i16 prod (not nccl) -> node", AR, TLMPI_DT_I16, TLMPI_OP_PROD, 1, MK_DEV_DEV, DEV3 | NODE | NCCL, 0, T_NODE },
    { "node u16 max rsb in place -> node", RSB, TLMPI_DT_U16, TLMPI_OP_MAX, 1, MK_INPLACE_DEV, DEV3 | NODE, 0, T_NODE },
    { "node allgather bytes -> node", AG, TLMPI_DT_BYTES, TLMPI_OP_OTHER, 1, MK_DEV_DEV, DEV3 | NODE | NCCL, 0, T_NODE },
    { "node shared gpu (MPS) -> node", AR, TLMPI_DT_BF16, TLMPI_OP_SUM, 1, MK_MANAGED, DEV3 | NODE | SHARED, 0, T_NODE },
    { "node slow auto -> staging", AR, TLMPI_DT_F32, TLMPI_OP_SUM, 1, MK_DEV_DEV, DEV3 | NODE | NCCL | SHARED | SLOW, 0, T_STG },
    { "node slow auto, separate gpus -> nccl", AR, TLMPI_DT_F32, TLMPI_OP_SUM, 1, MK_DEV_DEV, DEV3 | NODE | NCCL | SLOW, 0, T_NCCL },
    { "node slow forced -> node", AR, TLMPI_DT_F32, TLMPI_OP_SUM, 1, MK_DEV_DEV, DEV3 | NODE | SHARED | SLOW, 5, T_NODE },
    { "node user op -> staging", AR, TLMPI_DT_F32, TLMPI_OP_USER, 1, MK_DEV_DEV, DEV3 | NODE, 0, T_STG },
    { "node lor -> staging", AR, TLMPI_DT_I32, TLMPI_OP_OTHER, 1, MK_DEV_DEV, DEV3 | NODE, 5, T_STG },
    { "node derived allgather -> staging", AG, TLMPI_DT_DERIVED, TLMPI_OP_OTHER, 0, MK_DEV_DEV, DEV3 | NODE, 5, T_STG },
    { "node mixed -> staging", AR, TLMPI_DT_F32, TLMPI_OP_SUM, 1, MK_HOST_DEV, DEV3 | NODE | NCCL, 0, T_STG },
    { "forced node mixed -> staging", AG, TLMPI_DT_F32, TLMPI_OP_SUM, 1, MK_DEV_HOST, DEV3 | NODE | AWARE, 5, T_STG },
    { "node no stream -> staging", AR, TLMPI_DT_F32, TLMPI_OP_SUM, 1, MK_DEV_DEV, GPU | NODE | POOL, 5, T_STG },
    { "forced node without it -> staging", AR, TLMPI_DT_F32, TLMPI_OP_SUM, 1, MK_DEV_DEV, DEV3 | NCCL, 5, T_STG },
    { "one rank, node cap -> self", AR, TLMPI_DT_F32, TLMPI_OP_SUM, 1, MK_DEV_DEV, DEV3 | SELF | NODE, 0, T_SELF },
#endif
};
#define N_CASES ((int)(sizeof(cases) / sizeof(cases[0])))

START_TEST(test_select_cases)
{
    const select_case_t *k = &cases[_i];
    char errs[TLMPI_COLL_COUNT][160];
    tlmpi_plan_t p;
    tlmpi_call_t c = mkcall(k->coll, k->dt, k->op, k->contig, k->mk, 4096);
    int algo = -1, got;

    if (!REF_NCCL_TIER && k->want == T_NCCL) {
        return; /* no NCCL tier in this build */
    }
    memset(&p, 0, sizeof(p));
    ck_assert_uint_eq(tlmpi_plan_fill(&p, k->caps, k->tier_env, NULL, errs), 0);
    got = tlmpi_plan_select(&p, &c, &algo);
    ck_assert_msg(got == k->want, "%s: got tier %d, want %d", k->name, got, k->want);
    ck_assert_int_eq(algo, 0);
}
END_TEST

/* ---- threshold tables ---- */

typedef struct {
    const char *spec;
    int ok;
    int n;
    int tier0;
    size_t max0;
} parse_case_t;

static const parse_case_t parse_cases[] = {
    { "nccl", 1, 1, T_NCCL, SIZE_MAX },
    { "staging", 1, 1, T_STG, SIZE_MAX },
    { "auto", 1, 1, TLMPI_TIER_AUTO, SIZE_MAX },
    { "nccl:64k,staging", 1, 2, T_NCCL, 65536 },
    { "self:0,nccl:1m,mpi:2m,staging", 1, 4, T_SELF, 0 },
    { "nccl/nccl:4k,staging/pipeline", 1, 2, T_NCCL, 4096 },
    { "auto:1g,staging", 1, 2, TLMPI_TIER_AUTO, (size_t)1 << 30 },
    { "", 0, 0, 0, 0 },
    { "ncl", 0, 0, 0, 0 },                     /* unknown tier */
    { "nccl:64k", 0, 0, 0, 0 },                /* the last entry has a limit */
    { "nccl,staging", 0, 0, 0, 0 },            /* a non-last entry without a limit */
    { "nccl:64k,staging:32k,mpi", 0, 0, 0, 0 },/* limits do not increase */
    { "nccl:64k,staging:64k,mpi", 0, 0, 0, 0 },/* equal limits */
    { "nccl:lots,staging", 0, 0, 0, 0 },       /* bad size */
    { "nccl:,staging", 0, 0, 0, 0 },           /* empty size */
    { "nccl:64k,", 0, 0, 0, 0 },               /* trailing comma */
    { "nccl/ring:64k,staging", 0, 0, 0, 0 },   /* unknown algorithm */
    { "a:1,b:2,c:3,d:4,e:5,f:6,g:7,h:8,staging", 0, 0, 0, 0 },
    { "self:1,nccl:2,mpi:3,staging:4,self:5,nccl:6,mpi:7,staging:8,auto", 0, 0, 0, 0 }, /* 9 entries */
    { "node", 1, 1, T_NODE, SIZE_MAX },
    { "node/oneshot:64k,node/twoshot", 1, 2, T_NODE, 65536 },
    { "node/push:1m,node/pull:16m,staging", 1, 3, T_NODE, 1 << 20 },
    { "node/auto:4k,nccl", 1, 2, T_NODE, 4096 },
    { "node/ring:64k,staging", 0, 0, 0, 0 },   /* unknown algorithm of node */
    { "nccl/oneshot:64k,staging", 0, 0, 0, 0 },/* node's algorithm on another tier */
    { "node/oneshot@16:64k,node/twoshot@64", 1, 2, T_NODE, 65536 }, /* CTA knobs */
    { "node@8", 1, 1, T_NODE, SIZE_MAX },
    { "hier:1m,hier/2d@4", 1, 2, TLMPI_TIER_HIER, 1 << 20 },
    { "node@0", 0, 0, 0, 0 },                  /* CTA knob out of range */
    { "node@256", 0, 0, 0, 0 },
    { "node@x:4k,staging", 0, 0, 0, 0 },
    { "node@:4k,staging", 0, 0, 0, 0 },
    { "auto@8", 0, 0, 0, 0 },                  /* a knob needs a named tier */
};
#define N_PARSE ((int)(sizeof(parse_cases) / sizeof(parse_cases[0])))


/* the tuning file reader (src/comm/tuning.c) on files written here */
static int tuning_try(const char *text, const char *gpu, int nodes, int rpn, char specs[TLMPI_COLL_COUNT][TLMPI_TUNING_SPEC_LEN],
                      char *why, size_t len)
{
    char path[] = "/tmp/tlmpi-check-tuning-XXXXXX";
    int fd = mkstemp(path), r;
    tlmpi_tuning_key_t key = { "tlmpi-test gen", nodes, rpn, gpu };

    ck_assert(fd >= 0);
    ck_assert(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
    close(fd);
    r = tlmpi_tuning_lookup(path, &key, specs, why, len);
    unlink(path);
    return r;
}

START_TEST(test_tuning_file)
{
    char specs[TLMPI_COLL_COUNT][TLMPI_TUNING_SPEC_LEN], why[512];
    const char *two = "tlmpi-tuning 1\n# comment\ngeneration tlmpi-test gen\n"
                      "layout nodes=1 ranks_per_node=4 gpu=NVIDIA_H200\nallreduce node/oneshot@16:256k,node/twoshot\n"
                      "allgather nccl\n"
                      "layout nodes=2 ranks_per_node=4 gpu=NVIDIA_H200\nreduce_scatter_block hier\n"
                      "layout nodes=1 ranks_per_node=4 gpu=NVIDIA_H200\nallreduce staging\n";
    char gpu[64];

    ck_assert_int_eq(tuning_try(two, "NVIDIA_H200", 1, 4, specs, why, sizeof(why)), 1);
    ck_assert_str_eq(specs[TLMPI_COLL_ALLREDUCE], "node/oneshot@16:256k,node/twoshot"); /* the first section wins */
    ck_assert_str_eq(specs[TLMPI_COLL_ALLGATHER], "nccl");
    ck_assert_str_eq(specs[TLMPI_COLL_REDUCE_SCATTER_BLOCK], "");
    ck_assert_int_eq(tuning_try(two, "NVIDIA_H200", 2, 4, specs, why, sizeof(why)), 1);
    ck_assert_str_eq(specs[TLMPI_COLL_REDUCE_SCATTER_BLOCK], "hier");
    ck_assert_str_eq(specs[TLMPI_COLL_ALLREDUCE], "");
    /* another layout or GPU: 0, naming what the file has */
    ck_assert_int_eq(tuning_try(two, "NVIDIA_H100", 1, 4, specs, why, sizeof(why)), 0);
    ck_assert_msg(strstr(why, "no section") && strstr(why, "nodes=2 ranks_per_node=4"), "%s", why);
    ck_assert_int_eq(tuning_try(two, "NVIDIA_H200", 1, 8, specs, why, sizeof(why)), 0);
    /* another generation, a bad header, a line before the generation, an unknown line: -1 */
    ck_assert_int_eq(tuning_try("tlmpi-tuning 1\ngeneration other\nlayout nodes=1 ranks_per_node=4 gpu=x\n", "x", 1, 4,
                                specs, why, sizeof(why)), -1);
    ck_assert_msg(strstr(why, "measured with 'other'"), "%s", why);
    ck_assert_int_eq(tuning_try("tlmpi tuning\n", "x", 1, 4, specs, why, sizeof(why)), -1);
    ck_assert_int_eq(tuning_try("tlmpi-tuning 1\nallreduce nccl\ngeneration tlmpi-test gen\n", "x", 1, 4, specs, why,
                                sizeof(why)), -1);
    ck_assert_int_eq(tuning_try("tlmpi-tuning 1\ngeneration tlmpi-test gen\nlayout nodes=1 ranks_per_node=4 gpu=x\n"
                                "gather nccl\n", "x", 1, 4, specs, why, sizeof(why)), -1);
    ck_assert_int_eq(tuning_try("tlmpi-tuning 1\ngeneration tlmpi-test gen\nlayout nodes=one\n", "x", 1, 4, specs, why,
                                sizeof(why)), -1);
    ck_assert_int_eq(tuning_try("", "x", 1, 4, specs, why, sizeof(why)), -1); /* no generation */
    tlmpi_tuning_gpu_token("NVIDIA H200 NVL", gpu, sizeof(gpu));
    ck_assert_str_eq(gpu, "NVIDIA_H200_NVL");
    ck_assert_msg(strncmp(tlmpi_tuning_generation(), "tlmpi-", 6) == 0, "%s", tlmpi_tuning_generation());
}
END_TEST

/* TLMPI_CAP_TURNS (threads under MPI_THREAD_MULTIPLE) leaves the plan as it is: the turn, not the plan, keeps them safe */
START_TEST(test_concurrent_auto)
{
    char errs[TLMPI_COLL_COUNT][160];
    tlmpi_plan_t p;
    tlmpi_call_t c = mkcall(TLMPI_COLL_ALLREDUCE, TLMPI_DT_F32, TLMPI_OP_SUM, 1, MK_DEV_DEV, 4096);
    int algo, t;

    memset(&p, 0, sizeof(p));
    tlmpi_plan_fill(&p, DEV3 | NODE | NCCL, 0, NULL, errs);
    t = tlmpi_plan_select(&p, &c, &algo);
#ifdef HAVE_CUDA
    ck_assert_int_eq(t, T_NODE);
#else
    ck_assert_int_eq(t, REF_NCCL_TIER ? T_NCCL : T_STG);
#endif
    /* the GPU turn makes concurrent threads safe: it leaves auto's order as it is */
    tlmpi_plan_fill(&p, DEV3 | NODE | NCCL | TLMPI_CAP_TURNS, 0, NULL, errs);
#ifdef HAVE_CUDA
    ck_assert_int_eq(tlmpi_plan_select(&p, &c, &algo), T_NODE);
#else
    ck_assert_int_eq(tlmpi_plan_select(&p, &c, &algo), REF_NCCL_TIER ? T_NCCL : T_STG);
#endif
    tlmpi_plan_fill(&p, DEV3 | NODE | NCCL | TLMPI_CAP_TURNS, 1 /* TLMPI_TIER=nccl */, NULL, errs);
    ck_assert_int_eq(tlmpi_plan_select(&p, &c, &algo), REF_NCCL_TIER ? T_NCCL : T_STG);
}
END_TEST

START_TEST(test_parse)
{
    const parse_case_t *k = &parse_cases[_i];
    tlmpi_plan_table_t t;
    char err[160] = "";
    int rc = tlmpi_plan_parse_table(k->spec, &t, err, sizeof(err));

    ck_assert_msg((rc == 0) == k->ok, "'%s': rc %d (%s)", k->spec, rc, err);
    if (k->ok) {
        ck_assert_int_eq(t.n, k->n);
        ck_assert_int_eq(t.e[0].tier, k->tier0);
        ck_assert_msg(t.e[0].max_bytes == k->max0, "'%s': max0 %zu", k->spec, t.e[0].max_bytes);
        ck_assert_msg(t.e[t.n - 1].max_bytes == SIZE_MAX, "'%s': last entry limited", k->spec);
        if (strchr(k->spec, '@')) {
            /* the knob reaches the run's algorithm word */
            tlmpi_plan_t p;
            tlmpi_call_t c;
            int algo = -1, want = t.e[t.n - 1].ctas;

            memset(&p, 0, sizeof(p));
            p.caps = DEV3 | NODE | HIER;
            p.table[TLMPI_COLL_ALLREDUCE] = t;
            c = mkcall(TLMPI_COLL_ALLREDUCE, TLMPI_DT_F32, TLMPI_OP_SUM, 1, MK_DEV_DEV, (size_t)1 << 30);
            c.local_size = 2;
            if (tlmpi_plan_select(&p, &c, &algo) == t.e[t.n - 1].tier) { /* (node: CUDA builds only) */
                ck_assert_msg(want > 0 && TLMPI_ALGO_CTAS(algo) == want, "'%s': knob %d in word 0x%x", k->spec, want,
                              algo);
            }
        }
    } else {
        ck_assert_msg(err[0] != '\0', "'%s': no message", k->spec);
    }
}
END_TEST

START_TEST(test_thresholds)
{
    const char *specs[TLMPI_COLL_COUNT] = { "nccl:64k,staging", "nccl", "staging:4k,nccl:1m,staging", "staging",
                                            "staging", "staging", "staging", "staging" };
    char errs[TLMPI_COLL_COUNT][160];
    tlmpi_plan_t p;
    tlmpi_call_t c;
    int algo;
    static const struct { tlmpi_coll_t coll; size_t bytes; int want; } q[] = {
        { AG, 8, T_NCCL }, { AG, 65536, T_NCCL }, { AG, 65537, T_STG }, { AG, (size_t)1 << 30, T_STG },
        { AR, 8, T_STG }, { AR, 4096, T_STG }, { AR, 4097, T_NCCL }, { AR, 1 << 20, T_NCCL },
        { AR, (1 << 20) + 4, T_STG }, { RSB, 8, T_NCCL }, { RSB, (size_t)1 << 31, T_NCCL },
    };
    int i;

    if (!REF_NCCL_TIER) {
        return; /* its tables name nccl: no NCCL tier in this build */
    }
    memset(&p, 0, sizeof(p));
    ck_assert_uint_eq(tlmpi_plan_fill(&p, DEV3 | NCCL, 0, specs, errs), 0);
    for (i = 0; i < (int)(sizeof(q) / sizeof(q[0])); i++) {
        c = mkcall(q[i].coll, TLMPI_DT_F32, TLMPI_OP_SUM, 1, MK_DEV_DEV, q[i].bytes);
        ck_assert_msg(tlmpi_plan_select(&p, &c, &algo) == q[i].want, "coll %d %zu bytes", q[i].coll, q[i].bytes);
    }
    /* a tier in the table that cannot serve the call falls back to staging: i16 on nccl */
    c = mkcall(AG, TLMPI_DT_I16, TLMPI_OP_SUM, 1, MK_DEV_DEV, 8);
    ck_assert_int_eq(tlmpi_plan_select(&p, &c, &algo), T_NCCL); /* allgather moves bytes */
    c = mkcall(AR, TLMPI_DT_I16, TLMPI_OP_SUM, 1, MK_DEV_DEV, 8192);
    ck_assert_int_eq(tlmpi_plan_select(&p, &c, &algo), T_STG);
    /* tiers the plan can pick (for setup): nccl and staging here, never self or mpi */
    ck_assert_uint_eq(tlmpi_plan_tiers_used(&p), (1u << T_NCCL) | (1u << T_STG));
}
END_TEST

START_TEST(test_fill_invalid_and_forced)
{
    const char *specs[TLMPI_COLL_COUNT] = { "nccl:64k", "bogus", "staging" };
    char errs[TLMPI_COLL_COUNT][160];
    tlmpi_plan_t p;
    unsigned bad;

    memset(&p, 0, sizeof(p));
    /* invalid tables fall back to TLMPI_TIER (here nccl) with a message; the valid one is kept */
    bad = tlmpi_plan_fill(&p, DEV3 | NCCL, 1, specs, errs);
    ck_assert_uint_eq(bad, (1u << AG) | (1u << RSB));
    ck_assert(errs[AG][0] && errs[RSB][0] && !errs[AR][0]);
    ck_assert_int_eq(p.table[AG].n, 1);
    ck_assert_int_eq(p.table[AG].e[0].tier, T_NCCL);
    ck_assert_int_eq(p.table[RSB].e[0].tier, T_NCCL);
    ck_assert_int_eq(p.table[AR].e[0].tier, T_STG);
    /* TLMPI_TIER values map to tiers */
    bad = tlmpi_plan_fill(&p, DEV3, 2, NULL, errs);
    ck_assert_uint_eq(bad, 0);
    ck_assert_int_eq(p.table[AR].e[0].tier, T_STG);
    tlmpi_plan_fill(&p, DEV3, 4, NULL, errs);
    ck_assert_int_eq(p.table[AR].e[0].tier, T_SELF);
    tlmpi_plan_fill(&p, DEV3, 0, NULL, errs);
    ck_assert_int_eq(p.table[AR].e[0].tier, TLMPI_TIER_AUTO);
    /* auto order: best first; nccl left out where ranks share a GPU */
    ck_assert_int_eq(p.n_auto, TLMPI_TIER_COUNT);
    ck_assert_int_eq(p.auto_order[0], T_SELF);
    ck_assert_int_eq(p.auto_order[p.n_auto - 1], T_STG);
    tlmpi_plan_fill(&p, DEV3 | SHARED, 0, NULL, errs);
    ck_assert_int_eq(p.n_auto, TLMPI_TIER_COUNT - 1);
    for (int i = 0; i < p.n_auto; i++) {
        ck_assert_int_ne(p.auto_order[i], T_NCCL);
    }
    /* ... and the node tier where its barriers were timed slow (a time-sliced GPU) */
    tlmpi_plan_fill(&p, DEV3 | NODE | SLOW, 0, NULL, errs);
    ck_assert_int_eq(p.n_auto, TLMPI_TIER_COUNT - 1);
    for (int i = 0; i < p.n_auto; i++) {
        ck_assert_int_ne(p.auto_order[i], T_NODE);
    }
    tlmpi_plan_fill(&p, DEV3 | NODE | SLOW | SHARED, 0, NULL, errs);
    ck_assert_int_eq(p.n_auto, TLMPI_TIER_COUNT - 2);
    tlmpi_plan_fill(&p, DEV3 | NODE, 5, NULL, errs);
    ck_assert_int_eq(p.table[AR].e[0].tier, T_NODE);
    tlmpi_plan_fill(&p, DEV3 | NODE, 0, NULL, errs);
    ck_assert_int_eq(p.auto_order[1], T_NODE); /* right after self, before nccl */
}
END_TEST

/* node tables: the entry's algorithm reaches the tier (its run resolves auto by size) */
START_TEST(test_node_tables)
{
    const char *specs[TLMPI_COLL_COUNT] = { "node/pull:4k,node/push", "node/oneshot", "node/oneshot:64k,node/twoshot:1m,staging" };
    char errs[TLMPI_COLL_COUNT][160], d[1024];
    tlmpi_plan_t p;
    tlmpi_call_t c;
    int algo, i;
    static const struct { tlmpi_coll_t coll; size_t bytes; int want, algo; } q[] = {
        { AG, 8, T_NODE, 2 }, { AG, 4096, T_NODE, 2 }, { AG, 4097, T_NODE, 1 }, { RSB, 8, T_NODE, 3 },
        { AR, 8, T_NODE, 3 }, { AR, 65536, T_NODE, 3 }, { AR, 65540, T_NODE, 4 }, { AR, (1 << 20) + 4, T_STG, 0 },
    };

    memset(&p, 0, sizeof(p));
    ck_assert_uint_eq(tlmpi_plan_fill(&p, DEV3 | NODE | SHARED | SLOW, 0, specs, errs), 0);
    for (i = 0; i < (int)(sizeof(q) / sizeof(q[0])); i++) {
        int t;

        c = mkcall(q[i].coll, TLMPI_DT_F32, TLMPI_OP_SUM, 1, MK_DEV_DEV, q[i].bytes);
        algo = -1;
        t = tlmpi_plan_select(&p, &c, &algo);
#ifdef HAVE_CUDA
        ck_assert_msg(t == q[i].want && algo == q[i].algo, "coll %d %zu bytes: tier %d algo %d", q[i].coll,
                      q[i].bytes, t, algo);
#else
        ck_assert_int_eq(t, T_STG);
#endif
    }
    /* the node tier needs setup where a table names it, and (not slow) where auto can pick it */
    ck_assert(tlmpi_plan_tiers_used(&p) & (1u << T_NODE));
    tlmpi_plan_fill(&p, DEV3 | NODE, 0, NULL, errs);
    ck_assert(tlmpi_plan_tiers_used(&p) & (1u << T_NODE));
    /* the description names the algorithms and auto's tiers */
    tlmpi_plan_fill(&p, DEV3 | NODE | NCCL, 0, specs, errs);
    tlmpi_plan_describe(&p, d, sizeof(d));
    ck_assert_msg(strstr(d, "node/pull<=4096") && strstr(d, "node/oneshot<=65536") && strstr(d, "node/twoshot<=1048576"),
                  "%s", d);
    tlmpi_plan_fill(&p, DEV3 | NODE | NCCL, 0, NULL, errs);
    tlmpi_plan_describe(&p, d, sizeof(d));
    ck_assert_msg(strstr(d, "auto{node/auto(oneshot<=") && strstr(d, ">nccl>staging}") && !strstr(d, "self"), "%s", d);
    /* a short buffer is cut, never overrun */
    memset(d, 'x', sizeof(d));
    tlmpi_plan_describe(&p, d, 40);
    ck_assert_int_eq((int)strlen(d), 39);
}
END_TEST

static const char *no_env(const char *name)
{
    (void)name;
    return NULL;
}

/* the node tier's capability on a comm: 2..8 ranks of one node; one rank only on the devcomm
 * transport with the tier named (TLMPI_TIER=node or a table entry "node..."); auto keeps self */
START_TEST(test_node_one_rank)
{
    static const struct {
        int size;
        const char *transport, *tier, *ar_table;
        int want;
    } q[] = {
        { 2, "auto", "auto", "", 1 },         { 8, "ipc", "auto", "", 1 },          { 9, "auto", "node", "", 0 },
        { 1, "auto", "node", "", 0 },         { 1, "ipc", "node", "", 0 },          { 1, "devcomm", "auto", "", 0 },
        { 1, "devcomm", "node", "", 1 },      { 1, "devcomm", "staging", "node/oneshot", 1 },
        { 1, "devcomm", "auto", "nccl:4k,node", 1 }, { 1, "devcomm", "auto", "staging:4k,nodes", 0 },
        { 1, "devcomm", "auto", "staging", 0 }, { 1, "devcomm", "self", "", 0 },
    };
    tlmpi_tier_comm_t tc;
    int i, gpus = tlmpi_g.gpu_count;

    tlmpi_env_load(no_env, NULL);
    memset(&tc, 0, sizeof(tc));
    tc.nodes = 1;
    tlmpi_g.gpu_count = 1;
    for (i = 0; i < (int)(sizeof(q) / sizeof(q[0])); i++) {
        unsigned want = 0, have;
        char why[160] = "";

        tc.size = q[i].size;
        ck_assert_int_eq(tlmpi_env_set("NODE_TRANSPORT", q[i].transport), 0);
        ck_assert_int_eq(tlmpi_env_set("TIER", q[i].tier), 0);
        ck_assert_int_eq(tlmpi_env_set("ALLREDUCE_TIERS", q[i].ar_table), 0);
        have = tlmpi_tier_node.local_caps(&tc, &want, why, sizeof(why));
#ifdef HAVE_CUDA
        ck_assert_msg(!!(have & TLMPI_CAP_NODE) == q[i].want, "case %d: %d ranks, transport %s, tier %s, table '%s'",
                      i, q[i].size, q[i].transport, q[i].tier, q[i].ar_table);
#else
        ck_assert_uint_eq(have, 0);
#endif
    }
    tc.size = 2;
    tc.nodes = 2;
    ck_assert_uint_eq(tlmpi_tier_node.local_caps(&tc, &(unsigned){ 0 }, (char[8]){ 0 }, 8), 0);
    tlmpi_g.gpu_count = gpus;
    tlmpi_env_load(no_env, NULL);
}
END_TEST

/* per-algorithm counters: the node tier counts the algorithm it ran, by name */
START_TEST(test_algo_stats)
{
    tlmpi_stat_t st;
    char line[256];
    FILE *f = tmpfile();
    int found = 0;

    ck_assert_ptr_nonnull(f);
    tlmpi_reset_stats();
    tlmpi_stats_name_algos(TLMPI_PATH_NODE, tlmpi_tier_node.algos, tlmpi_tier_node.n_algos);
    tlmpi_stat_algo_add(AR, TLMPI_PATH_NODE, tlmpi_tier_algo_by_name(T_NODE, "oneshot", 7), 64);
    tlmpi_stat_algo_add(AR, TLMPI_PATH_NODE, tlmpi_tier_algo_by_name(T_NODE, "oneshot", 7), 64);
    tlmpi_stat_algo_add(AR, TLMPI_PATH_NODE, tlmpi_tier_algo_by_name(T_NODE, "twoshot", 7), 1 << 20);
    tlmpi_stat_add(AR, TLMPI_PATH_NODE, 64);
    tlmpi_stat_add(AR, TLMPI_PATH_NODE, 64);
    tlmpi_stat_add(AR, TLMPI_PATH_NODE, 1 << 20);
    ck_assert_int_eq(tlmpi_get_algo_stats(AR, TLMPI_PATH_NODE, "oneshot", &st), TLMPI_OK);
    ck_assert(st.calls == 2 && st.bytes == 128);
    ck_assert_int_eq(tlmpi_get_algo_stats(AR, TLMPI_PATH_NODE, "twoshot", &st), TLMPI_OK);
    ck_assert(st.calls == 1 && st.bytes == 1 << 20);
    ck_assert_int_eq(tlmpi_get_algo_stats(AG, TLMPI_PATH_NODE, "push", &st), TLMPI_OK);
    ck_assert(st.calls == 0);
    ck_assert_int_eq(tlmpi_get_algo_stats(AR, TLMPI_PATH_NODE, "ring", &st), TLMPI_OK);
    ck_assert(st.calls == 0);
    ck_assert_int_eq(tlmpi_get_algo_stats(AR, TLMPI_PATH_COUNT, "oneshot", &st), TLMPI_ERR_INVALID_ARG);
    ck_assert_int_eq(tlmpi_get_stats(AR, TLMPI_PATH_NODE, &st), TLMPI_OK);
    ck_assert(st.calls == 3);
    ck_assert_str_eq(tlmpi_path_name(TLMPI_PATH_NODE), "node");
    tlmpi_core_print_stats(f);
    rewind(f);
    while (fgets(line, sizeof(line), f)) {
        found |= (strstr(line, "allreduce") && strstr(line, " node ") && strstr(line, "calls          3")) ? 1 : 0;
        found |= (strstr(line, "allreduce") && strstr(line, "node/oneshot") && strstr(line, "calls          2")) ? 2 : 0;
        found |= (strstr(line, "allreduce") && strstr(line, "node/twoshot") && strstr(line, "calls          1")) ? 4 : 0;
    }
    fclose(f);
    ck_assert_int_eq(found, 7);
    tlmpi_reset_stats();
    ck_assert_int_eq(tlmpi_get_algo_stats(AR, TLMPI_PATH_NODE, "oneshot", &st), TLMPI_OK);
    ck_assert(st.calls == 0);
}
END_TEST

/* ---- agreement: ranks with different settings must all see the difference ---- */

START_TEST(test_agreement)
{
    const char *a[TLMPI_COLL_COUNT] = { "nccl:64k,staging", "", "" };
    const char *b[TLMPI_COLL_COUNT] = { "nccl:64k,staging", "", "nccl" };
    const char *none[TLMPI_COLL_COUNT] = { NULL, NULL, NULL };
    uint64_t ha = tlmpi_plan_settings_hash(0, a), hb = tlmpi_plan_settings_hash(0, b);
    uint64_t hn = tlmpi_plan_settings_hash(0, none), he = tlmpi_plan_settings_hash(0, (const char *[TLMPI_COLL_COUNT]){ "", "", "" });
    uint64_t ht = tlmpi_plan_settings_hash(1, a);
    char errs[TLMPI_COLL_COUNT][160];
    tlmpi_plan_t p, q;

    ck_assert(ha != hb);
    ck_assert(ha != ht);
    ck_assert(hn == he); /* unset and empty are the same setting */
    ck_assert(ha == tlmpi_plan_settings_hash(0, a));
    /* {h, ~h} OR-reduced over ranks: uniform exactly when every rank had the same h */
    ck_assert(tlmpi_plan_hashes_agree(ha | ha, ~ha | ~ha));
    ck_assert(!tlmpi_plan_hashes_agree(ha | hb, ~ha | ~hb));
    ck_assert(!tlmpi_plan_hashes_agree(ha | hb | ha, ~ha | ~hb | ~ha));
    ck_assert(!tlmpi_plan_hashes_agree(1 | 0, ~(uint64_t)1 | ~(uint64_t)0));
    /* the plan hash changes with the tables and the capabilities */
    memset(&p, 0, sizeof(p));
    memset(&q, 0, sizeof(q));
    tlmpi_plan_fill(&p, DEV3 | NCCL, 0, a, errs);
    tlmpi_plan_fill(&q, DEV3 | NCCL, 0, b, errs);
    ck_assert(tlmpi_plan_hash(&p) != tlmpi_plan_hash(&q));
    tlmpi_plan_fill(&q, DEV3, 0, a, errs);
    ck_assert(tlmpi_plan_hash(&p) != tlmpi_plan_hash(&q));
    tlmpi_plan_fill(&q, DEV3 | NCCL, 0, a, errs);
    ck_assert(tlmpi_plan_hash(&p) == tlmpi_plan_hash(&q));
}
END_TEST

START_TEST(test_names)
{
    ck_assert_int_eq(tlmpi_tier_by_name("nccl", 4), T_NCCL);
    ck_assert_int_eq(tlmpi_tier_by_name("ncclx", 5), -1);
    ck_assert_int_eq(tlmpi_tier_by_name("auto", 4), TLMPI_TIER_AUTO);
    ck_assert_int_eq(tlmpi_tier_algo_by_name(T_STG, "pipeline", 8), 0);
    ck_assert_int_eq(tlmpi_tier_algo_by_name(T_STG, "ring", 4), -1);
    ck_assert_int_eq(tlmpi_tier_by_name("node", 4), T_NODE);
    ck_assert_int_eq(tlmpi_tier_algo_by_name(T_NODE, "auto", 4), 0);
    ck_assert_int_eq(tlmpi_tier_algo_by_name(T_NODE, "oneshot", 7), 3);
    ck_assert_int_eq(tlmpi_tier_algo_by_name(T_NODE, "twoshot", 7), 4);
    ck_assert_int_eq(tlmpi_tier_algo_by_name(T_NODE, "push", 4), 1);
    ck_assert_int_eq(tlmpi_tier_algo_by_name(T_NODE, "pull", 4), 2);
    for (int t = 0; t < TLMPI_TIER_COUNT; t++) {
        ck_assert_int_eq(tlmpi_tier_by_name(tlmpi_tiers[t]->name, strlen(tlmpi_tiers[t]->name)), t);
        ck_assert(tlmpi_tiers[t]->n_algos >= 1 && tlmpi_tiers[t]->supports && tlmpi_tiers[t]->run);
        ck_assert(tlmpi_path_name(tlmpi_tiers[t]->label) != NULL);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("plan");
    TCase *tc = tcase_create("plan");
    SRunner *sr;
    int nf;

    tcase_add_test(tc, test_supports_exhaustive);
    tcase_add_loop_test(tc, test_select_cases, 0, N_CASES);
    tcase_add_loop_test(tc, test_parse, 0, N_PARSE);
    tcase_add_test(tc, test_thresholds);
    tcase_add_test(tc, test_fill_invalid_and_forced);
    tcase_add_test(tc, test_node_tables);
    tcase_add_test(tc, test_node_one_rank);
    tcase_add_test(tc, test_algo_stats);
    tcase_add_test(tc, test_agreement);
    tcase_add_test(tc, test_names);
    tcase_add_test(tc, test_tuning_file);
    tcase_add_test(tc, test_concurrent_auto);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    nf = srunner_ntests_failed(sr);
    srunner_free(sr);
    return nf ? EXIT_FAILURE : EXIT_SUCCESS;
}
