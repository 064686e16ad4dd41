/*
 * hier_fused: the hier tier's fused algorithm, host side (hier_fused.h). The GIN probe lives in
 * hier_gin.c; this file chooses the rail, builds the emulated rail's descriptor, launches and waits.
 */
#include "config.h"
#include "hier_fused.h"
#include "env.h"
#include "fault.h"
#include "global.h"
#include "log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { F_AUTO = 0, F_OFF, F_EMULATED, F_GIN }; /* TLMPI_HIER_FUSED's values */

#ifdef HAVE_CUDA
#include "cudawrap.h"
#include "stream.h"
#include "checks.h"
#include "ipc.h"
#include "devcomm.h"
#include "kernels.h"
#include <cuda_runtime_api.h>

#define FUSED_GRACE_S 10 /* the host wait's bound beyond TLMPI_TIMEOUT (the device's) */

#ifdef HAVE_NCCL
tlmpi_devcomm_t *tlmpi_hier_gin_create(tlmpi_tier_comm_t *tc, int asked, char *why, size_t len); /* hier_gin.c */
#else
static tlmpi_devcomm_t *tlmpi_hier_gin_create(tlmpi_tier_comm_t *tc, int asked, char *why, size_t len)
{
    (void)tc, (void)asked;
    snprintf(why, len, "built without NCCL headers");
    return NULL;
}
#endif

struct tlmpi_hier_fused {
    tlmpi_ipc_t *ipc;                   /* every rank's pool, mapped (emulated rail), or */
    tlmpi_devcomm_t *dc;                /* the GIN rail's devcomm (its window's LSA addresses) */
    tlmpi_xport_t *xp;                  /* &ipc->t or &dc->t */
    tlmpi_rail_xport_t x;
    unsigned long long epoch, step;     /* node barriers and rail steps launched (the same everywhere) */
    unsigned long long sig[TLMPI_RAIL_SLOTS][TLMPI_RAIL_MAX_GROUPS];
    int groups;
    int ran;                            /* a kernel was launched */
    void *scratch;                      /* on the comm's device, for buffers on another one */
    size_t scratch_bytes;
    char gin_why[128];                  /* why the rail is not GIN */
};

tlmpi_hier_fused_t *tlmpi_hier_fused_create(tlmpi_tier_comm_t *tc, char *why, size_t len)
{
    const long mode = (long)TLMPI_ENV_I(HIER_FUSED);
    const int L = tc->local_size, N = tc->nodes, nd = tc->node_index, l = tc->local_rank;
    size_t data = tlmpi_ipc_data_bytes((long long)TLMPI_ENV_I(NODE_POOL));
    tlmpi_hier_fused_t *hf = NULL;
    char gwhy[128];
    int ok, all = 0, j, n, g;

    if (mode == F_OFF) {
        snprintf(why, len, "TLMPI_HIER_FUSED=off");
        return NULL;
    }
    /* GIN first (collective over the comm; agreed either way) */
    if (mode != F_EMULATED) {
        tlmpi_devcomm_t *dc = tlmpi_hier_gin_create(tc, mode == F_GIN, gwhy, sizeof(gwhy));

        if (dc && !(hf = calloc(1, sizeof(*hf)))) {
            /* this rank alone cannot keep it; the plan's agreement on setup failures (out of memory)
             * would desynchronise the kernels: abort rather than run half a collective */
            tlmpi_error(COMM, "communicator #%u: out of host memory after the GIN devcomm was created", tc->id);
            tlmpi_gpu_abort(tc->comm);
        }
        if (dc) {
            hf->dc = dc;
            hf->xp = &dc->t;
            hf->x.node = dc->t.x; /* LSA addresses of the node's ranks; rank / nranks: the node's */
            hf->x.node.mc_base = NULL;
            hf->x.gin_devcomm = dc->devcomm;
            hf->x.gin_win = dc->win;
            hf->x.gin_contexts = dc->gin_contexts;
            hf->x.gin_world = dc->gin_world;
            snprintf(hf->gin_why, sizeof(hf->gin_why), "%s", gwhy);
            goto common;
        }
    } else {
        snprintf(gwhy, sizeof(gwhy), "not asked for (TLMPI_HIER_FUSED=emulated)");
    }
    if (mode == F_GIN) {
        snprintf(why, len, "TLMPI_HIER_FUSED=gin: GIN unavailable: %s", gwhy);
        return NULL;
    }
    if (!tc->one_host) {
        snprintf(why, len, "the nodes are on several hosts (no emulated rail) and GIN is unavailable: %s", gwhy);
        return NULL;
    }
    if (tc->size > TLMPI_NODE_MAX_RANKS || N > TLMPI_RAIL_MAX_NODES || L > TLMPI_NODE_MAX_RANKS) {
        snprintf(why, len, "the emulated rail maps every rank's pool: %d ranks, at most %d", tc->size, TLMPI_NODE_MAX_RANKS);
        return NULL;
    }
    if (tlmpi_cuda_rail_chunk(data, N, L) < 16) {
        snprintf(why, len, "TLMPI_NODE_POOL (%zu bytes) is too small for %d x %d ranks", data, N, L);
        return NULL;
    }
    hf = calloc(1, sizeof(*hf));
    /* collective: every rank takes part whatever happened here */
    {
        tlmpi_ipc_t *ipc = tlmpi_ipc_create(tc->comm, tc->rank, tc->size, tc->dev, tc->gpu_sharers, tc->shared_gpu,
                                            data, 0, tc->ctx ? tc->ctx->stream : NULL, why, len);

        ok = hf && ipc;
        if (PMPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, tc->comm) != MPI_SUCCESS || !all) {
            if (ipc || !hf) {
                snprintf(why, len, "%s", hf ? "another rank could not set up the emulated rail" : "out of host memory");
            }
            tlmpi_ipc_destroy(ipc); /* no kernel ran: nobody uses the pools */
            free(hf);
            return NULL;
        }
        hf->ipc = ipc;
        hf->xp = &ipc->t;
    }
    snprintf(hf->gin_why, sizeof(hf->gin_why), "%s", gwhy);
    hf->x.node = hf->ipc->t.x;
    memset(hf->x.node.base, 0, sizeof(hf->x.node.base));
    for (j = 0; j < L; j++) {
        hf->x.node.base[j] = hf->ipc->t.x.base[nd * L + j];
    }
    hf->x.node.rank = l;
    hf->x.node.nranks = L;
    hf->x.node.mc_base = NULL;
    for (n = 0; n < N; n++) {
        hf->x.rail[n] = hf->ipc->t.x.base[n * L + l];
    }
common:
    tlmpi_node_xport_data_after_header(&hf->x.node); /* the node's pools: header, then data */
    hf->x.node_index = nd;
    hf->x.nnodes = N;
    /* fault sites: this rank never arrives at node barriers / never signals its rail peers */
    hf->x.node.stuck = tlmpi_fault_hit(BARRIER_STUCK);
    hf->x.rail_stuck = tlmpi_fault_hit(RAIL_STUCK);
    /* mutants of the GIN rail's per-context wait target (the emulated rail has no contexts and
     * ignores them); 0, the normal path, unless TLMPI_FAULT names them */
    hf->x.gin_wait = tlmpi_fault_hit(GIN_WAIT_FULL) ? 1 : tlmpi_fault_hit(GIN_WAIT_SHORT) ? 2 : 0;
    /* auto (0): one group on the emulated rail, whose synchronous copies leave a group nothing to
     * hide behind (measured: docs/PERFORMANCE.md, rail groups); one on a GIN rail of NCCL's proxy type,
     * where each group adds a put and a signal per rail peer through the CPU proxy (measured through
     * the loopback plugin: 1 group 1.4-8x faster than 2 or 4 at every size, docs/PERFORMANCE.md, "The
     * GIN rail"); two on a device-initiated (GDAKI) GIN rail, whose asynchronous puts a group can
     * hide behind (the model's choice: not measured, no such NIC here). The rail and the GIN type
     * are agreed, so g is the same everywhere. */
    g = (int)TLMPI_ENV_I(HIER_GROUPS);
    if (g <= 0) {
        g = hf->dc && !hf->dc->gin_proxy ? 2 : 1;
    }
    hf->groups = g > TLMPI_RAIL_MAX_GROUPS ? TLMPI_RAIL_MAX_GROUPS : g;
    return hf;
}

void tlmpi_hier_fused_describe(const tlmpi_hier_fused_t *hf, char *buf, size_t len)
{
    size_t data = hf->xp->x.data_bytes;
    char rail[224];

    if (hf->dc) {
        snprintf(rail, sizeof(rail), "GIN rail (%s)", hf->gin_why);
    } else {
        snprintf(rail, sizeof(rail), "emulated rail (CUDA IPC copies + signal atomics; GIN: %s)", hf->gin_why);
    }
    snprintf(buf, len, "fused: %s, %d rail groups, pool %zu MiB, %zu KiB per block and step, %d CTAs max%s%s%s", rail,
             hf->groups, data >> 20, tlmpi_cuda_rail_chunk(data, hf->x.nnodes, hf->x.node.nranks) >> 10, hf->xp->max_ctas,
             hf->x.gin_wait ? "; testing: TLMPI_FAULT=" : "",
             hf->x.gin_wait == 1 ? "gin_wait_full" : hf->x.gin_wait == 2 ? "gin_wait_short" : "",
             !hf->x.gin_wait ? "" : hf->dc ? " (this rank's GIN waits use the mutant target)" : " (ignored: the emulated rail)");
}

/* A device wait of the kernel gave up (TLMPI_TIMEOUT): one line saying who waited for what, then
 * MPI_Abort. */
static __attribute__((noreturn, noinline)) void fused_timed_out(const tlmpi_tier_comm_t *tc, const tlmpi_call_t *c,
                                                                const tlmpi_hier_fused_t *hf, volatile tlmpi_node_err_t *r)
{
    char what[224], ctx[48] = "";

    if (r->rail) {
        if (hf->dc && hf->x.gin_contexts > 0) {
            snprintf(ctx, sizeof(ctx), " (GIN context %d of %d)", r->cta % hf->x.gin_contexts, hf->x.gin_contexts);
        }
        snprintf(what, sizeof(what), "rail step %d of the call, signal slot %d group %d, CTA %d%s, waiting for the rail "
                 "peer on node %d (world rank %d)", r->barrier, r->slot, r->group, r->cta, ctx, r->peer,
                 r->peer * hf->x.node.nranks + hf->x.node.rank);
    } else {
        snprintf(what, sizeof(what), "node barrier %d of the call, CTA slot %d, waiting for local rank %d (world rank %d)",
                 r->barrier, r->cta, r->peer, hf->x.node_index * hf->x.node.nranks + r->peer);
    }
    tlmpi_error(COLL, "TLMPI_TIMEOUT: rank %d (world rank %d, node %d, local rank %d) of communicator #%u (%d ranks) in "
                "%s on tier hier (algorithm fused, %s rail, %zu bytes): a device wait gave up after %ld s (TLMPI_TIMEOUT) at "
                "%s: expected %llu, seen %llu; calling MPI_Abort",
                tc->rank, tlmpi_g.world_rank, hf->x.node_index, hf->x.node.rank, tc->id, tc->size,
                tlmpi_coll_name(c->coll), hf->dc ? "GIN" : "emulated", c->msg_bytes, (long)TLMPI_ENV_I(TIMEOUT), what,
                (unsigned long long)r->expected, (unsigned long long)r->seen);
    tlmpi_gpu_abort(tc->comm);
}

/* tlmpi_hier_fused_run's launch (tlmpi_tier_kernel_t): one fused kernel, the comm's epoch, rail step
 * and signal totals advanced */
struct fused_launch {
    tlmpi_hier_fused_t *hf;
    tlmpi_rail_args_t *a;
};
static int fused_launch(void *arg, const void *in, void *out, void *stream, tlmpi_gpu_done_t *done)
{
    struct fused_launch *l = arg;
    int e;

    (void)done; /* the fused kernels write no completion word: the event or the stream write tells */
    l->a->in = in;
    l->a->out = out;
    e = tlmpi_cuda_rail_run(&l->hf->x, l->a, stream);
    if (e == 0) {
        l->hf->epoch = l->a->epoch;
        l->hf->step = l->a->step;
        memcpy(l->hf->sig, l->a->sig, sizeof(l->a->sig));
        l->hf->ran = 1;
    }
    return e;
}

tlmpi_status_t tlmpi_hier_fused_run(tlmpi_tier_comm_t *tc, tlmpi_hier_fused_t *hf, const tlmpi_call_t *c, int ctas_knob)
{
    static int launch_warned;
    const int W = tc->size, max = hf->xp->max_ctas;
    tlmpi_status_t st;
    tlmpi_rail_args_t a;
    int ctas, nk;

    memset(&a, 0, sizeof(a));
    a.kind = c->coll == TLMPI_COLL_ALLGATHER ? TLMPI_RAIL_AG
             : c->coll == TLMPI_COLL_REDUCE_SCATTER_BLOCK ? TLMPI_RAIL_RSB : TLMPI_RAIL_AR;
    nk = a.kind == TLMPI_RAIL_AG ? TLMPI_NODE_AG_PULL : a.kind == TLMPI_RAIL_RSB ? TLMPI_NODE_RSB_PULL : TLMPI_NODE_AR_TWOSHOT;
    a.dtype = (int)c->dt;
    a.op = (int)c->opc;
    a.count = c->coll == TLMPI_COLL_ALLGATHER ? c->msg_bytes : (size_t)c->count;
    ctas = ctas_knob > 0 ? (ctas_knob < max ? ctas_knob : max) : tlmpi_cuda_node_ctas_for(nk, c->msg_bytes, W, max);
    a.ctas = ctas < 1 ? 1 : ctas > TLMPI_NODE_MAX_CTAS ? TLMPI_NODE_MAX_CTAS : ctas;
    a.groups = hf->groups;
    a.epoch = hf->epoch;
    a.step = hf->step;
    memcpy(a.sig, hf->sig, sizeof(a.sig));
    {
        struct fused_launch l = { hf, &a };
        const tlmpi_tier_kernel_t k = { "hier", "fused", "fused 2D kernels", "the fused 2D kernel", FUSED_GRACE_S,
                                        &hf->scratch, &hf->scratch_bytes, &launch_warned, fused_launch, &l,
                                        0, NULL, 0 }; /* always launched here (l points into this frame) */

        st = tlmpi_tier_kernel_call(tc, c, &k);
    }
    if (TLMPI_UNLIKELY(hf->xp->err->set)) {
        fused_timed_out(tc, c, hf, hf->xp->err);
    }
    return st;
}

void tlmpi_hier_fused_complete(tlmpi_tier_comm_t *tc, tlmpi_hier_fused_t *hf, const tlmpi_call_t *c)
{
    if (hf && TLMPI_UNLIKELY(hf->xp->err->set)) {
        fused_timed_out(tc, c, hf, hf->xp->err);
    }
}

void tlmpi_hier_fused_destroy(tlmpi_tier_comm_t *tc, tlmpi_hier_fused_t *hf)
{
    int saved = -1;

    if (!hf) {
        return;
    }
    /* once kernels ran: this rank's drained, then every rank's (the barrier), before any pool goes */
    if (hf->ran) {
        tlmpi_wait_who_t who = { MPI_COMM_NULL, tc->id, TLMPI_COLL_ALLREDUCE, "hier (teardown)" };

        if (tc->ctx && tlmpi_gpu_enter_device(tc->dev, &saved) == 0) {
            (void)tlmpi_gpu_sync(tc->ctx->stream, &who, "the fused 2D kernels to finish");
            tlmpi_gpu_restore_device(saved);
        }
        PMPI_Barrier(tc->comm);
    }
    if (hf->scratch && tlmpi_gpu_enter_device(tc->dev, &saved) == 0) {
        cudaFree(hf->scratch);
        (void)cudaGetLastError();
        tlmpi_gpu_restore_device(saved);
    }
    tlmpi_ipc_destroy(hf->ipc);
    tlmpi_devcomm_destroy(hf->dc);
    free(hf);
}

#else /* !HAVE_CUDA */

tlmpi_hier_fused_t *tlmpi_hier_fused_create(tlmpi_tier_comm_t *tc, char *why, size_t len)
{
    (void)tc;
    snprintf(why, len, "built without CUDA");
    return NULL;
}
tlmpi_status_t tlmpi_hier_fused_run(tlmpi_tier_comm_t *tc, tlmpi_hier_fused_t *hf, const tlmpi_call_t *c, int ctas_knob)
{
    (void)tc, (void)hf, (void)c, (void)ctas_knob;
    return TLMPI_ERR_UNSUPPORTED;
}
void tlmpi_hier_fused_destroy(tlmpi_tier_comm_t *tc, tlmpi_hier_fused_t *hf)
{
    (void)tc, (void)hf;
}
void tlmpi_hier_fused_complete(tlmpi_tier_comm_t *tc, tlmpi_hier_fused_t *hf, const tlmpi_call_t *c)
{
    (void)tc, (void)hf, (void)c;
}
void tlmpi_hier_fused_describe(const tlmpi_hier_fused_t *hf, char *buf, size_t len)
{
    (void)hf;
    snprintf(buf, len, "none");
}
#endif
