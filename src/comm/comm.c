#include "config.h"
#include "comm.h"
#include "request.h"
#include "global.h"
#include "env.h"
#include "log.h"
#include "plan.h"
#include "tier.h"
#include "stats.h"
#include "turn.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static pthread_mutex_t comm_lock = PTHREAD_MUTEX_INITIALIZER;
static tlmpi_comm_t *live_head;

/* One-entry per-thread cache of the last state looked up, so that repeated calls on one comm skip
 * PMPI_Comm_get_attr (116 instructions under MPICH). A handle can be reused after MPI_Comm_free
 * (MPICH reuses its integers), so every state destruction bumps comm_gen and a cached entry is used
 * only while the generation it was taken in is still current. */
static unsigned comm_gen;
static unsigned comm_count; /* tlmpi's numbers for communicators (diagnostics) */
static __thread MPI_Comm tls_comm __attribute__((tls_model("initial-exec")));
static __thread tlmpi_comm_t *tls_tc __attribute__((tls_model("initial-exec")));
static __thread unsigned tls_gen __attribute__((tls_model("initial-exec")));
static __thread int tls_sub; /* > 0 while a hier comm builds a sub comm's state: 1 + its TLMPI_TIER value */

static void comm_destroy(tlmpi_comm_t *tc)
{
    tlmpi_req_comm_gone(tc); /* its outstanding requests complete first (their tiers' state goes now) */
    __atomic_add_fetch(&comm_gen, 1, __ATOMIC_RELEASE); /* invalidates every thread's cached entry */
    pthread_mutex_lock(&comm_lock);
    if (tc->prev) {
        tc->prev->next = tc->next;
    } else if (live_head == tc) {
        live_head = tc->next;
    }
    if (tc->next) {
        tc->next->prev = tc->prev;
    }
    pthread_mutex_unlock(&comm_lock);
    tlmpi_tier_comm_cleanup(&tc->tier);
    tlmpi_topo_destroy(&tc->topo);
    free(tc);
}

/* Runs inside the collective MPI_Comm_free (or at finalize) on every rank of the comm. */
static int comm_attr_delete(MPI_Comm comm, int keyval, void *attr, void *extra)
{
    comm_destroy(attr);
    return MPI_SUCCESS;
}

/* Before tlmpi aborts the job (a wait hit TLMPI_TIMEOUT): one line per live communicator of this
 * process, saying what its thread was doing, so that a hang across communicators (threads under
 * MPI_THREAD_MULTIPLE) shows which call of which communicator never started its device work.
 * Reads the other threads' diagnostics without their cooperation (they may be stuck). */
static void report_busy(void)
{
    tlmpi_comm_t *tc;
    int n = 0;

    if (pthread_mutex_trylock(&comm_lock) != 0) {
        return;
    }
    for (tc = live_head; tc && n < 64; tc = tc->next, n++) {
        int b = tc->tier.busy;

        if (!tc->eligible || !tc->tier.calls) {
            continue;
        }
        tlmpi_error(COMM, "at abort: communicator #%u (%d ranks): %lu device-buffer calls; %s%s%s, device work "
                    "of call %lu enqueued", tc->tier.id, tc->tier.size, tc->tier.calls, b ? "in call " : "idle (in the application)",
                    b ? tlmpi_coll_name((tlmpi_coll_t)(b - 1)) : "", b ? " now" : "", tc->tier.enqueued);
    }
    pthread_mutex_unlock(&comm_lock);
}

int tlmpi_comm_module_init(void)
{
    tlmpi_g.abort_report = report_busy;
    return PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, comm_attr_delete, &tlmpi_g.comm_keyval, NULL);
}

/* TLMPI_VERIFY_UNIFORM: every TLMPI_* setting of scope "all ranks" must be the same on every rank
 * of the comm (a difference can deadlock later); checked once per comm, when its state is built. */
static void verify_env_uniform(MPI_Comm comm)
{
    uint64_t h = tlmpi_env_hash_all_eq();
    uint64_t mm[2] = { h, ~h };

    PMPI_Allreduce(MPI_IN_PLACE, mm, 2, MPI_UINT64_T, MPI_MAX, comm);
    if (mm[0] != h || mm[1] != ~h) {
        tlmpi_error(COMM, "TLMPI_VERIFY_UNIFORM: ranks have different values of TLMPI_* settings that must be "
                    "the same on all ranks (see tlmpi_info); aborting");
        PMPI_Abort(comm, 1);
    }
}

/* TLMPI_VERIFY_UNIFORM: the plan itself must be the same on every rank. */
static void verify_plan_uniform(tlmpi_comm_t *tc)
{
    uint64_t h = tlmpi_plan_hash(&tc->plan);
    uint64_t mm[2] = { h, ~h };

    PMPI_Allreduce(MPI_IN_PLACE, mm, 2, MPI_UINT64_T, MPI_MAX, tc->comm);
    if (mm[0] != h || mm[1] != ~h) {
        tlmpi_error(COMM, "TLMPI_VERIFY_UNIFORM: ranks built different plans for communicator #%u; aborting",
                    tc->tier.id);
        PMPI_Abort(tc->comm, 1);
    }
}

static __attribute__((noinline)) tlmpi_comm_t *comm_build(MPI_Comm comm)
{
    tlmpi_comm_t *tc = calloc(1, sizeof(*tc));
    int inter = 0, local_ok, all_ok;

    if (!tc) {
        return NULL;
    }
    tc->comm = comm;
    tc->reason = "";
    tc->topo.node_comm = tc->topo.rail_comm = MPI_COMM_NULL;
    tc->tier.comm = comm;
    tc->tier.id = __atomic_add_fetch(&comm_count, 1, __ATOMIC_RELAXED);
    tc->tier.dev = -1;
    PMPI_Comm_rank(comm, &tc->tier.rank);
    PMPI_Comm_size(comm, &tc->tier.size);
    if (PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter) {
        /* the blocks of an intercommunicator's allgather output and reduce_scatter_block input are
         * one per rank of the remote group (the layout's size) */
        if (inter) {
            PMPI_Comm_remote_size(comm, &tc->tier.size);
        }
        tc->reason = "intercommunicator";
        goto out;
    }
    /* the number rank 0 gave it, so that every rank's diagnostics name the comm alike (threads
     * build comms in different orders on different ranks) */
    {
        unsigned v[2] = { tc->tier.id, (unsigned)tlmpi_g.world_rank };

        PMPI_Bcast(v, 2, MPI_UNSIGNED, 0, comm);
        tc->tier.id = v[0];
        tc->tier.uid = (uint64_t)v[1] << 32 | v[0];
    }
    if (TLMPI_ENV_I(VERIFY_UNIFORM)) {
        verify_env_uniform(comm);
    }
    /* size 1 stays eligible: a device-buffer call on MPI_COMM_SELF is one device copy (tier self) */
    local_ok = tlmpi_topo_build(comm, (int)TLMPI_ENV_I(TOPO_RANKS_PER_NODE), &tc->topo) == TLMPI_OK;
    /* agree: if the build failed anywhere the comm is passed through everywhere */
    if (PMPI_Allreduce(&local_ok, &all_ok, 1, MPI_INT, MPI_MIN, comm) != MPI_SUCCESS || !all_ok) {
        tc->reason = "topology build failed";
        goto out;
    }
    if (!tc->topo.regular) {
        tc->reason = "irregular layout (unequal ranks per node)";
        goto out;
    }
    tc->eligible = 1;
    tc->tier.dev = tc->topo.gpu_device;
    tc->tier.shared_gpu = tc->topo.shared_gpu;
    tc->tier.gpu_sharers = tc->topo.gpu_sharers;
    tc->tier.nodes = tc->topo.node_count;
    tc->tier.local_rank = tc->topo.local_rank;
    tc->tier.local_size = tc->topo.local_size;
    tc->tier.node_index = tc->topo.node_index;
    tc->tier.regular = tc->topo.regular;
    tc->tier.one_host = tc->topo.one_host;
    tc->tier.node_comm = tc->topo.node_comm;
    tc->tier.rail_comm = tc->topo.rail_comm;
    tc->tier.sub = tls_sub;
    tlmpi_plan_build(&tc->tier, &tc->plan);
    if (TLMPI_ENV_I(VERIFY_UNIFORM)) {
        verify_plan_uniform(tc);
    }
out:
    if (!tc->eligible) {
        char errs[TLMPI_COLL_COUNT][160];

        /* no streams, no setup: whole spans staged on the legacy stream, or a CUDA-aware MPI */
        tc->tier.caps = tlmpi_g.mpi_cuda_aware ? TLMPI_CAP_MPI_CUDA_AWARE : 0;
        tlmpi_plan_fill(&tc->plan, tc->tier.caps, 0, NULL, errs);
        tc->plan.gen = ~0u; /* never refreshed: settings cannot make it faster */
        tlmpi_debug(COMM, "comm not accelerated: %s", tc->reason);
    }
    pthread_mutex_lock(&comm_lock);
    tc->next = live_head;
    if (live_head) {
        live_head->prev = tc;
    }
    live_head = tc;
    pthread_mutex_unlock(&comm_lock);
    PMPI_Comm_set_attr(comm, tlmpi_g.comm_keyval, tc);
    return tc;
}

void tlmpi_comm_refresh(tlmpi_comm_t *tc)
{
    if (tc->eligible) {
        tlmpi_plan_refresh(&tc->tier, &tc->plan);
    }
}

/* The lookup through the MPI attribute (and the build on a comm's first use); refills the cache. */
static __attribute__((noinline)) tlmpi_comm_t *comm_get_slow(MPI_Comm comm, unsigned gen)
{
    tlmpi_comm_t *tc;
    void *attr;
    int flag = 0;

    if (PMPI_Comm_get_attr(comm, tlmpi_g.comm_keyval, &attr, &flag) != MPI_SUCCESS) {
        return NULL;
    }
    tc = flag ? attr : comm_build(comm);
    if (tc) {
        tls_comm = comm;
        tls_tc = tc;
        tls_gen = gen;
    }
    return tc;
}

tlmpi_status_t tlmpi_comm_run(tlmpi_comm_t *tc, const tlmpi_call_t *c, int t, int algo, int top,
                              const tlmpi_tier_t **tier_p, int *mpi_rc_p)
{
    const tlmpi_tier_t *tier = tlmpi_tiers[t];
    /* the GPU turn (turn.h): t and the caps are the same on every rank, so all take it or none */
    int turn = top && TLMPI_UNLIKELY(tc->tier.caps & TLMPI_CAP_TURNS) && tier->device_waits;
    tlmpi_status_t st;

    if (TLMPI_UNLIKELY(turn) && c->pend) {
        /* a started call cannot hold the turn until the application completes it (another thread may
         * need it first, and the turn's barrier would order the starts of different communicators):
         * it is staged, whose host steps spin on no GPU (docs/DESIGN.md, non-blocking forms) */
        tier = &tlmpi_tier_staging;
        t = TLMPI_TIER_STAGING;
        turn = 0;
    }

    tc->tier.calls++;
    tc->tier.busy = 1 + (int)c->coll;
    if (TLMPI_UNLIKELY(turn)) {
        tlmpi_wait_who_t who = tlmpi_tier_who(&tc->tier, c, tier->name);
        int rc = tlmpi_turn_take(tc->tier.comm, tc->tier.uid, &who);

        if (rc != MPI_SUCCESS) {
            tc->tier.busy = 0;
            *mpi_rc_p = rc;
            *tier_p = tier;
            return TLMPI_ERR_MPI;
        }
    }
    st = c->pend && tier->start ? tier->start(&tc->tier, c, algo, c->pend, mpi_rc_p)
                                : tier->run(&tc->tier, c, algo, mpi_rc_p);
    if (TLMPI_UNLIKELY(st == TLMPI_ERR_UNSUPPORTED) && t != TLMPI_TIER_STAGING) {
        /* the tier declined before any data moved (on every rank alike): the fallback */
        tier = &tlmpi_tier_staging;
        st = c->pend ? tier->start(&tc->tier, c, 0, c->pend, mpi_rc_p) : tier->run(&tc->tier, c, 0, mpi_rc_p);
    }
    if (TLMPI_UNLIKELY(turn)) {
        tlmpi_turn_release(); /* the call's device work is complete: tiers return after their bounded wait */
    }
    tc->tier.busy = 0;
    *tier_p = tier;
    return st;
}

static tlmpi_status_t run_sub(tlmpi_comm_t *sub, tlmpi_call_t *c, tlmpi_coll_t coll, const void *sbuf, void *rbuf,
                              MPI_Count count, int *mpi_rc_p);

tlmpi_status_t tlmpi_coll_run_sub(tlmpi_comm_t *sub, const tlmpi_call_t *parent, tlmpi_coll_t coll, const void *sbuf,
                                  void *rbuf, MPI_Count count, int *mpi_rc_p)
{
    tlmpi_call_t c = *parent;

    c.rcounts = c.displs = NULL;
    c.vn = 0;
    c.vtotal = 0;
    return run_sub(sub, &c, coll, sbuf, rbuf, count, mpi_rc_p);
}

tlmpi_status_t tlmpi_coll_run_sub_v(tlmpi_comm_t *sub, const tlmpi_call_t *parent, tlmpi_coll_t coll, const void *sbuf,
                                    void *rbuf, MPI_Count count, const void *rcounts, const void *displs,
                                    int *mpi_rc_p)
{
    tlmpi_call_t c = *parent;
    MPI_Count vmax = 0;

    c.rcounts = rcounts;
    c.displs = coll == TLMPI_COLL_ALLGATHERV ? displs : NULL;
    c.vn = sub->tier.size;
    c.vtotal = tlmpi_call_vsum(&c, c.vn, &vmax);
    c.root_here = 0;
    c.inter = 0;
    /* the message size as classify_sibling has it: the largest block (run_sub keeps it) */
    c.msg_bytes = (size_t)vmax * (size_t)c.dt_size;
    return run_sub(sub, &c, coll, sbuf, rbuf, count, mpi_rc_p);
}

/* One step on sub: *c, the caller's copy of the parent's call record, made the step's and run. */
static tlmpi_status_t run_sub(tlmpi_comm_t *sub, tlmpi_call_t *c, tlmpi_coll_t coll, const void *sbuf, void *rbuf,
                              MPI_Count count, int *mpi_rc_p)
{
    const tlmpi_tier_t *tier;
    tlmpi_status_t st;
    int t, algo = 0;
    const int sib = tlmpi_coll_sibling(coll);

    c->coll = coll;
    c->sbuf = sbuf;
    c->rbuf = rbuf;
    c->count = c->rcount = count;
    c->rtype = c->dtype;
    c->comm = sub->comm;
    c->smem = c->rmem; /* hier's buffers: the caller's receive buffer's kind, or scratch on its device */
    c->sdev = c->rdev;
    c->preg = NULL; /* a step is never zero-copy */
    c->pend = NULL; /* a step completes inside its parent's call (a started hier call: at its start) */
    c->in_place = sbuf == MPI_IN_PLACE; /* as tlmpi_call_classify sets them */
    if (!sib) {
        c->msg_bytes = (size_t)count * (size_t)c->dt_size;
    }
    if (coll == TLMPI_COLL_ALLGATHER || coll == TLMPI_COLL_ALLGATHERV) {
        c->opc = TLMPI_OP_SUM;
    }
    tlmpi_call_layout(c, sub->tier.rank, sub->tier.size);
    c->local_size = sub->tier.local_size;
    t = tlmpi_plan_select(&sub->plan, c, &algo);
    /* a step runs inside its parent's call, which holds the GPU turn where one is taken */
    st = tlmpi_comm_run(sub, c, t, algo, 0, &tier, mpi_rc_p);
    if (st == TLMPI_OK) {
        tlmpi_stat_add(coll, tier->label, c->msg_bytes); /* the step, under its own tier */
    }
    return st;
}

tlmpi_comm_t *tlmpi_comm_get_sub(MPI_Comm comm, int tier_env)
{
    tlmpi_comm_t *tc;

    /* read only where the state is built (a sub comm is the topology's own, never the application's) */
    tls_sub = 1 + tier_env;
    tc = tlmpi_comm_get(comm);
    tls_sub = 0;
    return tc;
}

void tlmpi_comm_release_sub(MPI_Comm comm)
{
    void *attr = NULL;
    int found = 0;

    if (comm != MPI_COMM_NULL && PMPI_Comm_get_attr(comm, tlmpi_g.comm_keyval, &attr, &found) == MPI_SUCCESS &&
        found) {
        PMPI_Comm_delete_attr(comm, tlmpi_g.comm_keyval);
    }
}

tlmpi_comm_t *tlmpi_comm_find(MPI_Comm comm)
{
    unsigned gen = __atomic_load_n(&comm_gen, __ATOMIC_ACQUIRE);
    void *attr = NULL;
    int flag = 0;

    if (TLMPI_LIKELY(tls_tc != NULL) && tls_comm == comm && tls_gen == gen) {
        return tls_tc;
    }
    if (PMPI_Comm_get_attr(comm, tlmpi_g.comm_keyval, &attr, &flag) != MPI_SUCCESS || !flag) {
        return NULL;
    }
    return attr;
}

tlmpi_comm_t *tlmpi_comm_get(MPI_Comm comm)
{
    unsigned gen = __atomic_load_n(&comm_gen, __ATOMIC_ACQUIRE);

    if (TLMPI_LIKELY(tls_tc != NULL) && tls_comm == comm && tls_gen == gen) {
        return tls_tc;
    }
    return comm_get_slow(comm, gen);
}

void tlmpi_comm_module_finalize(void)
{
    /* newest first by the numbers rank 0 gave (the same order on every rank, also where threads
     * built comms in different orders: a tier's teardown may wait for the comm's peers); deleting
     * the attribute runs comm_attr_delete, which unlinks the state */
    while (live_head) {
        tlmpi_comm_t *tc = NULL, *o;

        /* a hier comm's node and rail comms go with it (its cleanup, in one order on every rank):
         * their numbers come from other ranks 0, so they have no place in this order */
        for (o = live_head; o; o = o->next) {
            if (!o->tier.sub && (!tc || o->tier.id > tc->tier.id)) {
                tc = o;
            }
        }
        if (!tc) {
            tc = live_head; /* only orphaned sub comms are left */
        }

        if (PMPI_Comm_delete_attr(tc->comm, tlmpi_g.comm_keyval) != MPI_SUCCESS) {
            comm_destroy(tc); /* the comm is gone; free our state anyway */
        }
    }
    if (tlmpi_g.comm_keyval != MPI_KEYVAL_INVALID) {
        PMPI_Comm_free_keyval(&tlmpi_g.comm_keyval);
    }
}

TLMPI_EXPORT tlmpi_status_t tlmpi_comm_query(MPI_Comm comm, tlmpi_comm_info_t *info_p)
{
    tlmpi_comm_t *tc;

    if (!info_p) {
        return TLMPI_ERR_INVALID_ARG;
    }
    if (!tlmpi_core_ready()) {
        return TLMPI_ERR_NOT_FOUND;
    }
    tc = tlmpi_comm_get(comm);
    if (!tc) {
        return TLMPI_ERR_MPI;
    }
    info_p->eligible = tc->eligible;
    info_p->reason = tc->reason;
    PMPI_Comm_size(comm, &info_p->size);
    PMPI_Comm_rank(comm, &info_p->rank);
    info_p->node_count = tc->topo.node_count;
    info_p->node_index = tc->topo.node_index;
    info_p->local_rank = tc->topo.local_rank;
    info_p->local_size = tc->topo.local_size;
    info_p->rail_rank = tc->topo.rail_rank;
    info_p->rail_size = tc->topo.rail_size;
    info_p->regular = tc->topo.regular;
    info_p->gpu_device = tc->topo.gpu_device;
    info_p->rail_id = tc->topo.rail_id;
    return TLMPI_OK;
}

TLMPI_EXPORT tlmpi_status_t tlmpi_comm_describe(MPI_Comm comm, char *buf, size_t len)
{
    tlmpi_comm_t *tc;

    if (!buf || !len) {
        return TLMPI_ERR_INVALID_ARG;
    }
    buf[0] = '\0';
    if (!tlmpi_core_ready()) {
        return TLMPI_ERR_NOT_FOUND;
    }
    tc = tlmpi_comm_get(comm);
    if (!tc) {
        return TLMPI_ERR_MPI;
    }
    if (!tc->eligible) {
        snprintf(buf, len, "not accelerated (%s)", tc->reason);
        return TLMPI_OK;
    }
    tlmpi_plan_describe_comm(&tc->tier, &tc->plan, buf, len);
    return TLMPI_OK;
}
