/*
 * node: the node tier, tlmpi's own kernels (cuda/node*.cu) for a communicator whose 2..8 ranks are
 * all on one node (1 rank too where the devcomm transport is asked for and TLMPI_TIER or a table
 * names the node tier: a one-rank devcomm is all NCCL 2.28.7+ allows on a single-GPU host, and
 * before 2.28.7 not even that (tlmpi_devcomm_nccl_rule); auto keeps self for one rank). Algorithms
 * (the plan's names; "auto" picks by message size, per call, from rank-uniform settings):
 *   allgather             push (own block into every peer's pool; auto up to TLMPI_NODE_AG_PUSH_MAX)
 *                         or pull (every rank loads the others' blocks from their pools)
 *   reduce_scatter_block  pull (load-reduce the own block from every pool), whatever is asked
 *   allreduce             oneshot (auto up to TLMPI_NODE_ONESHOT_MAX) or twoshot
 * An algorithm that does not apply to the collective means auto.
 *
 * Transport, created at plan build (tier setup) and agreed by all ranks (TLMPI_NODE_TRANSPORT):
 * devcomm (src/transport/devcomm.c: the NCCL Device API on an NCCL communicator of its own; NVLS
 * multicast where allowed) where every rank can use it, else ipc (src/transport/ipc.c: CUDA IPC,
 * multicast emulated). auto: devcomm where available (silently ipc where it is not; one warning
 * per rank where it was attempted and failed), =devcomm: devcomm only (unavailable or failed: the
 * tier is off, one warning per rank), =ipc: ipc (its pools' data area grows on demand, collectively, at the
 * first call of a pool kind that needs more: node_pool_ready). Where ranks share a GPU, setup times 10 node barriers
 * (after one warm-up, the kernels' smoke test: a failure anywhere fails the setup everywhere; each waited
 * for; only the warm-up where every rank's process timed its GPU for an earlier communicator, whose
 * agreed median then counts): the MPS detection: a median above TLMPI_NODE_SLOW_US on any rank means a
 * time-sliced GPU, and TLMPI_CAP_NODE_SLOW (agreed) takes the tier out of the auto order.
 *
 * Zero-copy (cuda/node_direct.cu: straight between the application's buffers, no pool data), not for
 * reduce_scatter_block in place (the result overwrites input that a peer reads):
 *  - blocking and stream-ordered calls (eager or captured) of at least TLMPI_NODE_REG_MIN (above the
 *    LL limit; any size with the algorithm direct) look their buffers up in the communicator's
 *    registration cache (src/transport/regcache.c: one PMPI_Allgather of every rank's allocations; a
 *    first use maps them, agreed by all; a captured call's allocations stay mapped until teardown),
 *    created at setup and let go at teardown; where some rank's buffers cannot be registered the call
 *    runs through the pools on every rank; non-blocking calls use the pools (the lookup is a host
 *    collective);
 *  - persistent requests (persist, at *_init) of at least TLMPI_NODE_DIRECT_MIN whose algorithm is auto
 *    or direct register their buffers once (the same exchange, both collectives), and every start runs
 *    the zero-copy kernels; unpersist releases the registration when the request is freed.
 *
 * run: one kernel launch on the comm's stream (the per-comm barrier epoch lives in each rank's pool
 * header, read and advanced by the kernels: launches are replay-safe, kernels.h's dev_epoch),
 * a bounded wait (TLMPI_TIMEOUT + 10 s: the kernels' own device waits give up after TLMPI_TIMEOUT
 * and report first through the host-mapped error record, which run turns into one diagnostic line
 * and MPI_Abort). A launch error happens before any data moved: TLMPI_ERR_UNSUPPORTED (staging then
 * serves the call). Buffers on another device than the comm's go through scratch memory on the
 * comm's device (this rank cannot decline: its peers already launched). Teardown: one last node
 * barrier, so that no peer still reads or writes this rank's pool when it is freed.
 */
#include "config.h"
#include "tier.h"
#include "global.h"
#include "env.h"
#include "stats.h"
#include "cudawrap.h"
#include "stream.h"
#include "log.h"
#include "checks.h"
#include "ipc.h"
#include "topo.h"
#include "devcomm.h"
#include "regcache.h"
#include "launcher.h"
#include "kernels.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* direct: the zero-copy kernels of a persistent request whose buffers were registered at init (never a
 * blocking or non-blocking call's: there it means auto) */
enum { A_AUTO = 0, A_PUSH, A_PULL, A_ONESHOT, A_TWOSHOT, A_LL, A_DIRECT, A_COUNT };
static const char *const node_algos[A_COUNT] = { "auto", "push", "pull", "oneshot", "twoshot", "ll", "direct" };

#define NODE_CAPS (TLMPI_CAP_NODE | TLMPI_CAP_STREAM | TLMPI_CAP_GPU)
#define NODE_GRACE_S 10         /* the host wait's bound beyond TLMPI_TIMEOUT (the device's) */
#define NODE_TIMED_BARRIERS 10
enum { NODE_XPORT_AUTO = 0, NODE_XPORT_IPC, NODE_XPORT_DEVCOMM }; /* TLMPI_NODE_TRANSPORT's values */

/* auto's ll limit: TLMPI_NODE_LL_MAX, at most what the LL region holds */
static size_t node_ll_max(void)
{
    const size_t m = (size_t)TLMPI_ENV_I(NODE_LL_MAX);
    return m < TLMPI_NODE_LL_MAX_BYTES ? m : TLMPI_NODE_LL_MAX_BYTES;
}

/* The siblings' ll forms (up to auto's ll limit, or where a table forces ll up to the LL region's):
 * MPI_Bcast and MPI_Reduce run the LL allreduce (node_ll.cu; 1.7-2.6 us over the floor from 8 B to 4 KiB
 * at 4 and 8 ranks on one H100, where pull took 3.0-3.8: docs/PERFORMANCE.md, "The siblings on the node
 * tier"), the others the LL allgather (MPI_Allgatherv, MPI_Alltoall) and reduce-scatter
 * (MPI_Reduce_scatter) with their layout (node_layout_ll). */
static int node_sibling_ar_ll(tlmpi_coll_t coll)
{
    return coll == TLMPI_COLL_BCAST || coll == TLMPI_COLL_REDUCE;
}

/* Does a forced algorithm apply to coll (ll: at any size; the caller checks its limit)? The siblings
 * have pull (node_exchange.cu, and the reduce-scatter kernel with a layout), bcast and reduce ll too. */
static int node_applies(tlmpi_coll_t coll, int algo)
{
    if (tlmpi_coll_sibling(coll)) {
        return algo == A_PULL || algo == A_LL;
    }
    switch (coll) {
    case TLMPI_COLL_ALLGATHER:
        return algo == A_LL || algo == A_PUSH || algo == A_PULL;
    case TLMPI_COLL_REDUCE_SCATTER_BLOCK:
        return algo == A_LL || algo == A_PULL;
    default:
        return algo == A_LL || algo == A_ONESHOT || algo == A_TWOSHOT;
    }
}

/* The algorithm a call runs (never A_AUTO), from rank-uniform inputs only. */
static int node_algo(tlmpi_coll_t coll, int algo, size_t bytes)
{
    if (tlmpi_coll_sibling(coll)) {
        if (algo != A_LL && algo != A_AUTO) {
            return A_PULL;
        }
        return bytes <= (algo == A_LL ? (size_t)TLMPI_NODE_LL_MAX_BYTES : node_ll_max()) ? A_LL : A_PULL;
    }
    if (node_applies(coll, algo) && (algo != A_LL || bytes <= TLMPI_NODE_LL_MAX_BYTES)) {
        return algo;
    }
    if (bytes <= node_ll_max()) {
        return A_LL;
    }
    switch (coll) {
    case TLMPI_COLL_ALLGATHER:
        return bytes <= (size_t)TLMPI_ENV_I(NODE_AG_PUSH_MAX) ? A_PUSH : A_PULL;
    case TLMPI_COLL_REDUCE_SCATTER_BLOCK:
        return A_PULL;
    default:
        return bytes <= (size_t)TLMPI_ENV_I(NODE_ONESHOT_MAX) ? A_ONESHOT : A_TWOSHOT;
    }
}

static void node_describe_algo(tlmpi_coll_t coll, int algo, char *buf, size_t len)
{
    const int forced_ll = algo == A_LL;
    const size_t ll = forced_ll ? (size_t)TLMPI_NODE_LL_MAX_BYTES : node_ll_max();
    int o;

    if (tlmpi_coll_sibling(coll) &&
        (!TLMPI_ENV_I(NODE_SIBLINGS) || (algo != A_LL && algo != A_AUTO))) {
        snprintf(buf, len, "%s", TLMPI_ENV_I(NODE_SIBLINGS) ? node_algos[A_PULL] : "off(TLMPI_NODE_SIBLINGS=0)");
        return;
    }
    if (node_applies(coll, algo) && !forced_ll) {
        snprintf(buf, len, "%s", node_algos[algo]);
        return;
    }
    /* forced ll: ll up to the region's limit, auto (without ll) above it */
    o = ll > 0 ? snprintf(buf, len, forced_ll ? "ll<=%zu then auto(" : "auto(ll<=%zu,", ll) : snprintf(buf, len, "auto(");
    if (o < 0 || (size_t)o >= len) {
        return;
    }
    if (coll == TLMPI_COLL_REDUCE_SCATTER_BLOCK || tlmpi_coll_sibling(coll)) {
        snprintf(buf + o, len - o, "pull)");
    } else if (coll == TLMPI_COLL_ALLGATHER) {
        snprintf(buf + o, len - o, "push<=%lld,pull)", (long long)TLMPI_ENV_I(NODE_AG_PUSH_MAX));
    } else {
        snprintf(buf + o, len - o, "oneshot<=%lld,twoshot)", (long long)TLMPI_ENV_I(NODE_ONESHOT_MAX));
    }
}

/* The siblings (TLMPI_NODE_SIBLINGS): intracommunicators, an in-place MPI_Reduce_scatter only where no
 * block is longer than the first; MPI_Reduce by its input alone (the root's receive buffer is not
 * known to the other ranks: where it is not device memory of the comm's GPU the result goes through
 * the tier's scratch, kernel_call.c), the others with every buffer on the device. */
static int node_supports_sibling(const tlmpi_call_t *c)
{
    if (!TLMPI_ENV_I(NODE_SIBLINGS) || c->inter || c->vtotal < 0) {
        return 0;
    }
    if (c->coll == TLMPI_COLL_REDUCE_SCATTER && c->in_place) {
        /* in place, rank q's result lands at the start of its buffer; where it is longer than block 0 it
         * covers input of later blocks that the kernel's other columns may not have staged yet (their
         * barriers are per column): not on the node tier (MPI_IN_PLACE and the counts are rank-uniform) */
        const MPI_Count first = tlmpi_call_vcount(c, 0);
        int q;

        for (q = 1; q < c->vn; q++) {
            if (tlmpi_call_vcount(c, q) > first) {
                return 0;
            }
        }
    }
    if (c->coll == TLMPI_COLL_REDUCE) {
        return tlmpi_mem_is_device(c->in_place ? c->rmem : c->smem);
    }
    return tlmpi_call_all_device(c);
}

static int node_supports(const tlmpi_call_t *c, unsigned caps)
{
    if ((caps & NODE_CAPS) != NODE_CAPS || !c->contiguous ||
        !(tlmpi_coll_sibling(c->coll) ? node_supports_sibling(c) : tlmpi_call_all_device(c))) {
        return 0;
    }
#ifdef HAVE_CUDA
    if (c->coll == TLMPI_COLL_ALLGATHER || c->coll == TLMPI_COLL_ALLGATHERV || c->coll == TLMPI_COLL_BCAST ||
        c->coll == TLMPI_COLL_ALLTOALL) {
        return 1; /* any contiguous datatype moves as bytes */
    }
    return tlmpi_cuda_node_supported((int)c->dt, (int)c->opc);
#else
    return 0;
#endif
}

#ifdef HAVE_CUDA
#include <cuda_runtime_api.h>

struct tlmpi_node_comm {
    tlmpi_xport_t *xp;          /* the transport's shared state: &ipc->t or &dc->t */
    tlmpi_ipc_t *ipc;           /* one of these two */
    tlmpi_devcomm_t *dc;
    /* (the barrier epoch lives in each pool's header, read and advanced by the kernels: dev_epoch) */
    double barrier_us;          /* agreed median of the timed barriers (< 0: not timed) */
    int barrier_known;          /* barrier_us is an earlier comm's (every rank's process timed its GPU) */
    int slow;                   /* the timed barriers say: time-sliced GPU */
    char mc_why[96];            /* why multicast is emulated */
    void *scratch;              /* on the comm's device, for buffers on another one */
    size_t scratch_bytes;
    unsigned launch_ok;         /* bit per kernel kind: launched on the calling thread once (the launch
                                   thread makes later starts' launches: kernel_call.c) */
    int ran;                    /* a collective kernel was launched (then on every rank: its barriers
                                   completed only because every peer launched its own) */
    unsigned long long done_ctas; /* CTAs of the launches that wrote a completion word (kernels.h:
                                   tlmpi_node_args_t.done_ctas; written only by the launch queue's jobs,
                                   one at a time: gpu/launcher.c) */
    int outsiders;              /* this rank's GPU also runs ranks outside the comm (the launcher's
                                   local size per GPU is larger than xp->ranks_on_gpu): its blocking
                                   kernels never take the alone share (node_args) */
    int streamed;               /* a stream-ordered call of the comm reached node_enqueue (every rank
                                   at the same call: the comm's calls are collective): its blocking
                                   calls take the forms' columns from then on (node_args) */
    tlmpi_regcache_t *reg;      /* the registration cache of the blocking and stream-ordered calls
                                   (node_zero_copy) */
    int area_captured;          /* a kernel captured into a graph on this rank used the current data
                                   area (ipc, growing: node_pool_ready keeps it when it grows) */
    int grow_failed;            /* a growth failed (agreed): the area stays as it is, one warning */
    struct node_share *sh;      /* the pools this comm shares with others of the same processes (blocking
                                   calls only: node_share_attach), NULL: its own */
    unsigned long long gate_seq; /* the last gated pair's token (kernels.h: gate; this rank's own) */
    unsigned long long gated, gated_offered; /* gated starts, and those where this rank offered a memo */
};

static unsigned node_local_caps(tlmpi_tier_comm_t *tc, unsigned *want_p, char *why, size_t len)
{
    /* one rank: only on the devcomm transport, asked for by name (auto keeps self there) */
    int least = TLMPI_ENV_I(NODE_TRANSPORT) == NODE_XPORT_DEVCOMM && tlmpi_tier_named("node", TLMPI_TIER_ENV_NODE) ? 1 : 2;

    (void)why, (void)len;
    /* a hier comm's rail comm may ask for it across fake nodes of one host: the emulated rail
     * (TLMPI_HIER_RAIL=ipc; its sub value is 1 + TLMPI_TIER's index of node) */
    int rail_ipc = tc->sub == 1 + TLMPI_TIER_ENV_NODE && tc->one_host;

    if (tlmpi_g.gpu_count <= 0 || tc->dev < 0 || !TLMPI_ENV_I(NODE) || tc->size < least ||
        tc->size > TLMPI_NODE_MAX_RANKS || (tc->nodes != 1 && !rail_ipc)) {
        return 0;
    }
    *want_p = TLMPI_CAP_NODE;
    return TLMPI_CAP_NODE;
}

/* Why the node kernels emulate multicast (NULL: they use NVLS). */
static void multicast_why(const struct tlmpi_node_comm *nc, int dev, char *buf, size_t len)
{
    if (nc->dc) {
        snprintf(buf, len, "%s", nc->dc->t.x.mc_base ? "" : nc->dc->mc_why);
    } else if (tlmpi_xport_multicast_allowed(dev, buf, len)) {
        snprintf(buf, len, "the ipc transport creates no multicast object");
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

static double now_us(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + 1e-3 * (double)t.tv_nsec;
}

/* One barrier kernel on the comm's stream, waited for; 0 or -1 with the reason. The comm's device
 * is current. */
static int node_barrier(tlmpi_tier_comm_t *tc, struct tlmpi_node_comm *nc, const tlmpi_node_xport_t *x,
                        const char *what, char *why, size_t len)
{
    tlmpi_wait_who_t who = { MPI_COMM_NULL, tc->id, TLMPI_COLL_ALLREDUCE, "node" };
    tlmpi_node_args_t a;
    int e;

    memset(&a, 0, sizeof(a));
    a.kind = TLMPI_NODE_BARRIER;
    a.ctas = 1;
    e = tlmpi_gpu_ctx_begin(tc->ctx); /* after the comm's stream-ordered work (teardown) */
    if (e == 0) {
        e = tlmpi_cuda_node_run(x, &a, tc->ctx->stream);
    }
    if (e != 0) {
        snprintf(why, len, "%s: the node barrier kernel cannot be launched: %s", what, cudaGetErrorString((cudaError_t)e));
        (void)cudaGetLastError();
        return -1;
    }
    e = tlmpi_gpu_stream_wait_grace(tc->ctx, &who, what, NODE_GRACE_S);
    if (e != 0) {
        snprintf(why, len, "%s: the node barrier kernel failed: %s", what, cudaGetErrorString((cudaError_t)e));
        (void)cudaGetLastError();
        return -1;
    }
    if (nc->xp->err->set) {
        volatile tlmpi_node_err_t *r = nc->xp->err;

        snprintf(why, len, "%s: the node barrier timed out waiting for node rank %d (expected %llu, seen %llu)", what,
                 r->peer, (unsigned long long)r->expected, (unsigned long long)r->seen);
        return -1;
    }
    return 0;
}

/* The agreed median of the timed barriers of an earlier communicator of this process on device d, plus
 * one (0: none yet): a GPU's sharing (MPS or time-sliced) does not change while the process runs, so a
 * later communicator whose ranks all know it skips the timing (node_setup). */
#define NODE_TIMED_DEVS 64
static double g_timed_us1[NODE_TIMED_DEVS];

/* The smoke test (one node barrier) and, where timed, the timed barriers (ranks share a GPU): the median
 * in microseconds (0 untimed), or -1 with the reason. */
static double time_barriers(tlmpi_tier_comm_t *tc, struct tlmpi_node_comm *nc, int timed, char *why, size_t len)
{
    double t[NODE_TIMED_BARRIERS];
    int i;

    if (node_barrier(tc, nc, &nc->xp->x, "the node tier's smoke test", why, len) != 0) {
        return -1;
    }
    if (!timed) {
        return 0;
    }
    for (i = 0; i < NODE_TIMED_BARRIERS; i++) {
        double t0 = now_us();

        if (node_barrier(tc, nc, &nc->xp->x, "the node tier's timed barriers", why, len) != 0) {
            return -1;
        }
        t[i] = now_us() - t0;
    }
    qsort(t, NODE_TIMED_BARRIERS, sizeof(t[0]), cmp_double);
    return 0.5 * (t[NODE_TIMED_BARRIERS / 2 - 1] + t[NODE_TIMED_BARRIERS / 2]);
}

/* ---- pools shared between communicators of the same processes ----
 *
 * Communicators whose ranks are the same processes in the same order, on the same devices (dups, and
 * MPI_Comm_create_group / split results of the same members), share one set of pools (header and
 * data area) as long as they carry only blocking calls (TLMPI_NODE_SHARE): their blocking collectives
 * run one at a time in each process (not under MPI_THREAD_MULTIPLE, where the sharing is off) and in
 * the same order in every process (MPI's rule for collectives of the same processes: a program that
 * orders them differently may deadlock), so the calls of all of them are one sequence of collectives
 * over one set of pools, as the calls of one communicator are: one device epoch, node.cuh's parity
 * rule across them, one data area grown for the largest. A new communicator whose every rank finds
 * such pools (the processes' pids, the device and the pool cap agreed: one PMPI_Allgather and one
 * PMPI_Allreduce) takes them with no allocation, mapping or timed barrier. A communicator's first
 * non-blocking, stream-ordered or persistent call (collective: every rank at the same call) gives it
 * pools of its own first (the last holder keeps the shared ones), since those calls run beside others. */
struct node_share {
    struct node_share *next;
    int dev, n, refs, ran;
    size_t cap;
    int pids[TLMPI_NODE_MAX_RANKS];
    tlmpi_ipc_t *ipc;
    double barrier_us;
    int barrier_known, slow;
};
static struct node_share *g_shares;
static pthread_mutex_t g_share_lock = PTHREAD_MUTEX_INITIALIZER;

/* Whether a new comm may share pools (rank-uniform inputs): ipc transport (named, or auto where ranks
 * share a GPU: NCCL's device transport refuses that), growing pools, not a hier sub-communicator, not
 * MPI_THREAD_MULTIPLE. */
static int node_share_wanted(const tlmpi_tier_comm_t *tc)
{
    long t = (long)TLMPI_ENV_I(NODE_TRANSPORT);

    return TLMPI_ENV_I(NODE_SHARE) && TLMPI_ENV_I(NODE_POOL_GROW) && tc->sub == 0 && tc->size >= 2 &&
           tc->size <= TLMPI_NODE_MAX_RANKS && tlmpi_g.thread_level < MPI_THREAD_MULTIPLE &&
           !TLMPI_ENV_I(NODE_EPOCH0) &&
           (t == NODE_XPORT_IPC || (t == NODE_XPORT_AUTO && (tc->caps & TLMPI_CAP_SHARED_GPU)));
}

/* Collective over tc->comm where node_share_wanted: the comm's processes (pids into pids); 1 when every
 * rank found pools shared by earlier comms of them (nc then holds them), else 0 (every rank alike). */
static int node_share_attach(tlmpi_tier_comm_t *tc, struct tlmpi_node_comm *nc, size_t cap, int *pids)
{
    struct node_share *sh = NULL;
    int me = (int)getpid(), found;

    if (PMPI_Allgather(&me, 1, MPI_INT, pids, 1, MPI_INT, tc->comm) != MPI_SUCCESS) {
        pids[0] = -1; /* found below stays 0 here; MPI errors are fatal by default */
    }
    pthread_mutex_lock(&g_share_lock);
    for (sh = g_shares; sh && pids[0] >= 0; sh = sh->next) {
        if (sh->dev == tc->dev && sh->n == tc->size && sh->cap == cap &&
            memcmp(sh->pids, pids, sizeof(int) * (size_t)tc->size) == 0) {
            break;
        }
    }
    found = sh != NULL;
    pthread_mutex_unlock(&g_share_lock);
    if (PMPI_Allreduce(MPI_IN_PLACE, &found, 1, MPI_INT, MPI_MIN, tc->comm) != MPI_SUCCESS || !found) {
        return 0;
    }
    pthread_mutex_lock(&g_share_lock);
    sh->refs++;
    pthread_mutex_unlock(&g_share_lock);
    nc->sh = sh;
    nc->ipc = sh->ipc;
    nc->xp = &sh->ipc->t;
    nc->barrier_us = sh->barrier_us;
    nc->barrier_known = sh->barrier_known;
    nc->slow = sh->slow;
    if (nc->slow) {
        tc->caps |= TLMPI_CAP_NODE_SLOW; /* the same on every rank, as when the pools were made */
    }
    return 1;
}

/* After a setup that made pools of its own (ipc): offer them to later comms of the same processes. */
static void node_share_offer(const tlmpi_tier_comm_t *tc, struct tlmpi_node_comm *nc, size_t cap, const int *pids)
{
    struct node_share *sh;

    if (!nc->ipc || !(sh = calloc(1, sizeof(*sh)))) {
        return; /* the comm keeps them to itself (no later comm finds them, on this rank: agreed there) */
    }
    sh->dev = tc->dev;
    sh->n = tc->size;
    sh->cap = cap;
    memcpy(sh->pids, pids, sizeof(int) * (size_t)tc->size);
    sh->ipc = nc->ipc;
    sh->refs = 1;
    sh->barrier_us = nc->barrier_us;
    sh->barrier_known = nc->barrier_known;
    sh->slow = nc->slow;
    pthread_mutex_lock(&g_share_lock);
    sh->next = g_shares;
    g_shares = sh;
    pthread_mutex_unlock(&g_share_lock);
    nc->sh = sh;
}

/* nc lets go of the shared pools; 1 when it was their last holder (nc->ipc is then its own to free;
 * *ran: whether collective kernels ran on them for any holder). */
static int node_share_leave(struct tlmpi_node_comm *nc, int *ran)
{
    struct node_share *sh = nc->sh, **pp;
    int last;

    pthread_mutex_lock(&g_share_lock);
    sh->ran |= nc->ran;
    *ran = sh->ran;
    last = --sh->refs == 0;
    if (last) {
        for (pp = &g_shares; *pp && *pp != sh; pp = &(*pp)->next) {
        }
        if (*pp) {
            *pp = sh->next;
        }
    }
    pthread_mutex_unlock(&g_share_lock);
    if (last) {
        free(sh);
    }
    nc->sh = NULL;
    return last;
}

/* Whether kernels of any holder ran on nc's shared pools (the teardown barrier; the same on every rank) */
static int node_share_ran(const struct tlmpi_node_comm *nc)
{
    int ran;

    if (!nc->sh) {
        return 0;
    }
    pthread_mutex_lock(&g_share_lock);
    ran = nc->sh->ran;
    pthread_mutex_unlock(&g_share_lock);
    return ran;
}

static void node_free(struct tlmpi_node_comm *nc, int dev, int heap)
{
    int saved = -1, ran = 0;

    tlmpi_regcache_destroy(nc->reg); /* after the last barrier: no peer reads through its mappings */
    if (!nc->sh || node_share_leave(nc, &ran)) {
        tlmpi_ipc_destroy(nc->ipc);
    }
    tlmpi_devcomm_destroy(nc->dc);
    if (nc->scratch && tlmpi_gpu_enter_device(dev, &saved) == 0) {
        cudaFree(nc->scratch);
        (void)cudaGetLastError();
        tlmpi_gpu_restore_device(saved);
    }
    if (heap) {
        free(nc);
    }
}

/* The transport (collective over tc->comm, every rank alike): devcomm or ipc as TLMPI_NODE_TRANSPORT
 * says; 0, or -1 with the reason when there is none. */
static int node_transport(tlmpi_tier_comm_t *tc, struct tlmpi_node_comm *nc, size_t data, char *why, size_t len)
{
    long transport = (long)TLMPI_ENV_I(NODE_TRANSPORT);

    if (transport != NODE_XPORT_IPC) {
        /* NCCL refuses two ranks on one GPU: the comm's agreed SHARED_GPU (node-wide, so it may be
         * more careful than needed; a one-rank comm shares nothing) */
        int shared = tc->size > 1 && (tc->caps & TLMPI_CAP_SHARED_GPU), attempted = 0;
        char dwhy[320];

        nc->dc = tlmpi_devcomm_create(tc->comm, tc->rank, tc->size, tc->dev, shared, data, tc->ctx->stream, NULL,
                                      &attempted, dwhy, sizeof(dwhy));
        if (nc->dc) {
            nc->xp = &nc->dc->t;
            return 0;
        }
        if (transport == NODE_XPORT_DEVCOMM || tc->size < 2) {
            snprintf(why, len, "devcomm transport %s: %s", attempted ? "failed" : "unavailable", dwhy);
            return -1;
        }
        if (attempted) {
            /* a capability every rank could have had and lost: one warning per rank */
            tlmpi_warn(COMM, "communicator #%u: the node tier's devcomm transport (NCCL Device API) failed on some "
                       "rank (here: %s); every rank uses the ipc transport", tc->id, dwhy);
        }
    }
    nc->ipc = tlmpi_ipc_create(tc->comm, tc->rank, tc->size, tc->dev, tc->gpu_sharers, tc->shared_gpu, data,
                               TLMPI_ENV_I(NODE_POOL_GROW) != 0, tc->ctx->stream, why, len);
    if (!nc->ipc) {
        return -1;
    }
    nc->xp = &nc->ipc->t;
    return 0;
}

/* The kernels' device-resident epoch (kernels.h: dev_epoch): zero with the pool header, or
 * TLMPI_NODE_EPOCH0 (tests of the LL wrap), the same on every rank. 0, or -1 with the reason. */
static int node_epoch_init(tlmpi_tier_comm_t *tc, struct tlmpi_node_comm *nc, char *why, size_t len)
{
    unsigned long long e0 = (unsigned long long)TLMPI_ENV_I(NODE_EPOCH0);
    int saved = -1, rc = 0;

    nc->xp->x.dev_epoch = 1;
    if (e0 == 0) {
        return 0;
    }
    if (tlmpi_gpu_enter_device(tc->dev, &saved) != 0) {
        snprintf(why, len, "cannot make device %d current", tc->dev);
        return -1;
    }
    if (cudaMemcpy((char *)nc->xp->x.base[nc->xp->x.rank] + TLMPI_NODE_EPOCH_OFF, &e0, sizeof(e0),
                   cudaMemcpyHostToDevice) != cudaSuccess) {
        snprintf(why, len, "cannot set the node tier's epoch (TLMPI_NODE_EPOCH0)");
        (void)cudaGetLastError();
        rc = -1;
    }
    tlmpi_gpu_restore_device(saved);
    return rc;
}

/* Tier setup (collective over tc->comm): the transport, then where ranks share a GPU the smoke test
 * and the MPS detection. Every rank reaches the same outcome. */
static tlmpi_status_t node_setup(tlmpi_tier_comm_t *tc, char *why, size_t len)
{
    struct tlmpi_node_comm *nc = calloc(1, sizeof(*nc)), spare;
    size_t data = tlmpi_ipc_data_bytes((long long)TLMPI_ENV_I(NODE_POOL));
    int saved = -1, have_nc = nc != NULL;

    int pids[TLMPI_NODE_MAX_RANKS], share = node_share_wanted(tc);

    if (!have_nc) {
        /* every collective below must still run here: fail at the end, agreed by the plan */
        memset(&spare, 0, sizeof(spare));
        nc = &spare;
    }
    if (share && node_share_attach(tc, nc, data, pids)) {
        if (!have_nc || !(nc->reg = tlmpi_regcache_create(tc->rank, tc->size, tc->dev,
                                                           (size_t)TLMPI_ENV_I(NODE_REG_MAX)))) {
            /* this rank alone: the plan's agreement on setup failures takes the tier away everywhere */
            snprintf(why, len, "out of host memory");
            node_free(nc, tc->dev, have_nc);
            return TLMPI_ERR_NO_MEMORY;
        }
        goto ready;
    }
    if (node_transport(tc, nc, data, why, len) != 0) {
        if (have_nc) {
            free(nc);
        }
        return TLMPI_ERR_CUDA; /* on every rank alike */
    }
    if (node_epoch_init(tc, nc, why, len) != 0) {
        /* nothing ran on the pools: free them; agreed by the plan like any setup failure */
        node_free(nc, tc->dev, have_nc);
        return TLMPI_ERR_CUDA;
    }
    nc->barrier_us = -1;
    if (nc->xp->shared) {
        const int di = tc->dev >= 0 && tc->dev < NODE_TIMED_DEVS ? tc->dev : -1;
        double v[2] = { 0, 0 }, med, known[2] = { 0, 1 };
        char lwhy[160] = "";

        /* time the barriers unless every rank's process timed them on its GPU for an earlier comm (agreed:
         * the most any rank knows, and whether some rank knows nothing) */
        if (di >= 0 && g_timed_us1[di] > 0) {
            known[0] = g_timed_us1[di] - 1;
            known[1] = 0;
        }
        if (PMPI_Allreduce(MPI_IN_PLACE, known, 2, MPI_DOUBLE, MPI_MAX, tc->comm) != MPI_SUCCESS) {
            known[1] = 1; /* MPI errors are fatal by default: not reached with a divergent outcome */
        }
        if (!have_nc) {
            snprintf(lwhy, sizeof(lwhy), "out of host memory");
            med = -1;
        } else if (tlmpi_gpu_enter_device(tc->dev, &saved) != 0) {
            snprintf(lwhy, sizeof(lwhy), "cannot make device %d current", tc->dev);
            med = -1;
        } else {
            med = time_barriers(tc, nc, known[1] != 0, lwhy, sizeof(lwhy));
            tlmpi_gpu_restore_device(saved);
        }
        v[0] = med >= 0 ? med : 0;
        v[1] = med < 0;
        if (PMPI_Allreduce(MPI_IN_PLACE, v, 2, MPI_DOUBLE, MPI_MAX, tc->comm) != MPI_SUCCESS || v[1] != 0) {
            snprintf(why, len, "%s", med < 0 ? lwhy : "the node tier's smoke test (a node barrier) failed on another rank");
            node_free(nc, tc->dev, have_nc); /* no collective kernel ran: nobody uses the pools */
            return TLMPI_ERR_CUDA;
        }
        if (known[1] == 0) {
            v[0] = known[0]; /* the earlier timing: the same everywhere */
            nc->barrier_known = 1;
        } else if (di >= 0) {
            g_timed_us1[di] = v[0] + 1;
        }
        nc->barrier_us = v[0];
        nc->slow = TLMPI_ENV_I(NODE_SLOW_US) > 0 && v[0] > (double)TLMPI_ENV_I(NODE_SLOW_US);
        if (nc->slow) {
            tc->caps |= TLMPI_CAP_NODE_SLOW; /* agreed: the same v[0] everywhere */
        }
    }
    if (have_nc && !(nc->reg = tlmpi_regcache_create(tc->rank, tc->size, tc->dev, (size_t)TLMPI_ENV_I(NODE_REG_MAX)))) {
        have_nc = 0; /* the transport is freed below, from the copy */
        spare = *nc;
        free(nc);
        nc = &spare;
    }
    if (!have_nc) {
        /* this rank alone: the plan's agreement on setup failures takes the tier away everywhere */
        snprintf(why, len, "out of host memory");
        node_free(nc, tc->dev, 0);
        return TLMPI_ERR_NO_MEMORY;
    }
    if (share) {
        node_share_offer(tc, nc, data, pids);
    }
ready:
    multicast_why(nc, tc->dev, nc->mc_why, sizeof(nc->mc_why));
    nc->outsiders = tlmpi_topo_gpu_local_ranks() > nc->xp->ranks_on_gpu;
    /* fault site: this rank's collective kernels never arrive (not the setup's or teardown's) */
    nc->xp->x.stuck = tlmpi_fault_hit(BARRIER_STUCK);
    nc->xp->x.late_ns = tlmpi_fault_hit(NODE_LATE) ? 2000000u : 0u;
    tc->state[TLMPI_TIER_NODE] = nc;
    if (TLMPI_ENV_I(LOG_LEVEL) >= TLMPI_LOG_INFO) {
        char d[256];

        tlmpi_tier_node.describe(tc, d, sizeof(d));
        tlmpi_info(COMM, "communicator #%u node: %s", tc->id, d);
    }
    return TLMPI_OK;
}

static void node_describe(const tlmpi_tier_comm_t *tc, char *buf, size_t len)
{
    const struct tlmpi_node_comm *nc = tc->state[TLMPI_TIER_NODE];
    size_t data, o;

    buf[0] = '\0';
    if (!nc) {
        return;
    }
    data = nc->xp->x.data_bytes;
    if (nc->dc) {
        char v[16];

        tlmpi_devcomm_version_string(nc->dc->version, v, sizeof(v));
        o = (size_t)snprintf(buf, len, "transport devcomm (NCCL %s)", v);
    } else {
        o = (size_t)snprintf(buf, len, "transport ipc");
    }
    if (o < len) {
        char pool[128];

        if (nc->ipc && nc->ipc->grows) {
            int refs = 0;

            if (nc->sh) {
                pthread_mutex_lock(&g_share_lock);
                refs = nc->sh->refs;
                pthread_mutex_unlock(&g_share_lock);
            }
            snprintf(pool, sizeof(pool), "320 KiB header + data area of %zu KiB (grows on demand up to %zu KiB)%s",
                     data >> 10, nc->ipc->cap >> 10, refs > 1 ? ", shared" : "");
            if (refs > 1) {
                snprintf(pool + strlen(pool), sizeof(pool) - strlen(pool), " by %d communicators", refs);
            }
        } else {
            snprintf(pool, sizeof(pool), "%zu KiB", data >> 10);
        }
        o += (size_t)snprintf(buf + o, len - o, ", %d ranks, pool %s, %d CTAs max (blocking calls alone on the GPU: "
                              "%d), multicast %s%s%s%s",
                              nc->xp->x.nranks, pool, nc->xp->max_ctas, nc->xp->max_ctas_alone,
                              nc->xp->x.mc_base ? "nvls" : "emulated", nc->xp->x.mc_base ? "" : " (",
                              nc->xp->x.mc_base ? "" : nc->mc_why, nc->xp->x.mc_base ? "" : ")");
    }
    if (o < len && nc->barrier_us >= 0) {
        o += (size_t)snprintf(buf + o, len - o, ", %d ranks on this GPU, barrier %.0f us%s (%s)", nc->xp->ranks_on_gpu,
                              nc->barrier_us, nc->barrier_known ? " (timed for an earlier communicator)" : "",
                              nc->slow ? "time-sliced: auto leaves the node tier out" : "MPS or fast enough");
    }
    if (o < len && nc->xp->x.gpu_scope) {
        o += (size_t)snprintf(buf + o, len - o, ", barriers at GPU scope (every rank on this GPU)");
    }
    if (o < len && nc->outsiders) {
        o += (size_t)snprintf(buf + o, len - o, ", ranks of other communicators on this GPU (blocking calls never "
                              "alone)");
    }
    if (o < len && nc->reg && TLMPI_ENV_I(NODE_REG)) {
        tlmpi_regcache_counts_t k;
        const char *last;

        tlmpi_regcache_counts(nc->reg, &k, &last);
        snprintf(buf + o, len - o, ", blocking and stream-ordered calls from %lld bytes zero-copy through the "
                 "registration cache (%d allocations, %llu MiB of peers' mapped; calls: %llu hit, %llu first, %llu "
                 "pool%s%s)", (long long)TLMPI_ENV_I(NODE_REG_MIN), k.entries, k.mapped_bytes >> 20,
                 k.calls[TLMPI_REG_HIT], k.calls[TLMPI_REG_FIRST], k.calls[TLMPI_REG_POOL], last[0] ? ", last: " : "",
                 last);
        o += strlen(buf + o);
        if (o < len && nc->gated) {
            snprintf(buf + o, len - o, "; non-blocking calls gated on the device: %llu (memo offered here: %llu, "
                     "zero-copy: %llu)", nc->gated, nc->gated_offered, nc->xp->err->gated_direct);
        }
    }
}

static tlmpi_node_kind_t node_kind(tlmpi_coll_t coll, int a)
{
    switch (coll) {
    case TLMPI_COLL_BCAST:
        return a == A_LL ? TLMPI_NODE_AR_LL : TLMPI_NODE_XCHG;
    case TLMPI_COLL_ALLGATHERV:
        return a == A_LL ? TLMPI_NODE_AG_LL : TLMPI_NODE_XCHG;
    case TLMPI_COLL_ALLTOALL:
        return a == A_LL ? TLMPI_NODE_AG_LL : TLMPI_NODE_XCHG_ALL;
    case TLMPI_COLL_REDUCE:
        return a == A_LL ? TLMPI_NODE_AR_LL : TLMPI_NODE_RSB_PULL;
    case TLMPI_COLL_REDUCE_SCATTER:
        return a == A_LL ? TLMPI_NODE_RSB_LL : TLMPI_NODE_RSB_PULL; /* with a layout (node_layout) */
    case TLMPI_COLL_ALLGATHER:
        return a == A_LL ? TLMPI_NODE_AG_LL : a == A_PUSH ? TLMPI_NODE_AG_PUSH : TLMPI_NODE_AG_PULL;
    case TLMPI_COLL_REDUCE_SCATTER_BLOCK:
        return a == A_LL ? TLMPI_NODE_RSB_LL : TLMPI_NODE_RSB_PULL;
    default:
        return a == A_LL ? TLMPI_NODE_AR_LL : a == A_ONESHOT ? TLMPI_NODE_AR_ONESHOT : TLMPI_NODE_AR_TWOSHOT;
    }
}

/* The zero-copy kernels' kinds (registered persistent requests, the registration cache's calls). */
static int direct_kind(tlmpi_coll_t coll)
{
    switch (coll) {
    case TLMPI_COLL_ALLGATHER: return TLMPI_NODE_AG_DIRECT;
    case TLMPI_COLL_REDUCE_SCATTER_BLOCK: return TLMPI_NODE_RSB_DIRECT;
    case TLMPI_COLL_ALLGATHERV:
    case TLMPI_COLL_BCAST:
    case TLMPI_COLL_ALLTOALL: return TLMPI_NODE_XCHG_DIRECT;
    case TLMPI_COLL_REDUCE_SCATTER:
    case TLMPI_COLL_REDUCE: return TLMPI_NODE_RED_DIRECT;
    default: return TLMPI_NODE_AR_DIRECT;
    }
}

/* The kernel kinds' names (kernels.h tlmpi_node_kind_t), for the timeout diagnostics: the error
 * record names the kernel that gave up, which may be an earlier stream-ordered or replayed one than
 * the call whose wait saw it. */
static const char *node_kind_name(int kind)
{
    static const char *const names[TLMPI_NODE_KIND_COUNT] = { "allgather push", "allgather pull",
                                                              "reduce_scatter_block pull", "allreduce oneshot",
                                                              "allreduce twoshot", "allgather ll",
                                                              "reduce_scatter_block ll", "allreduce ll", "barrier",
                                                              "allgather direct", "reduce_scatter_block direct",
                                                              "allreduce direct", "exchange", "exchange (all to all)",
                                                              "exchange direct", "reduction direct (balanced)" };
    return kind >= 0 && kind < TLMPI_NODE_KIND_COUNT ? names[kind] : "?";
}

/* A device wait of the kernel gave up (TLMPI_TIMEOUT): one line saying who waited for what, then
 * MPI_Abort, as a host wait's timeout does. */
static __attribute__((noreturn, noinline)) void node_timed_out(const tlmpi_tier_comm_t *tc, const tlmpi_call_t *c,
                                                               int a, volatile tlmpi_node_err_t *r)
{
    const struct tlmpi_node_comm *nc = tc->state[TLMPI_TIER_NODE];
    char where[48];

    /* ll has no barrier: its wait is for a peer's lines, whose flag is the epoch's low 32 bits */
    snprintf(where, sizeof(where), a == A_LL ? "in its LL exchange (barrier %d)" : "at barrier %d", r->barrier);
    tlmpi_error(COLL, "TLMPI_TIMEOUT: rank %d (world rank %d) of communicator #%u (%d ranks) in %s on tier node "
                "(algorithm %s, %zu bytes): a device wait gave up after %ld s (TLMPI_TIMEOUT) %s of the "
                "call, CTA slot %d, waiting for node rank %d: expected %s%llu, seen %llu (the kernel that gave "
                "up: %s%s; %d CTAs max per kernel, %d for a blocking call alone on the GPU, sized for %d communicators "
                "with kernels in flight at once: more would not all be resident, raise TLMPI_CONCURRENT_COLLS); "
                "calling MPI_Abort",
                tc->rank, tlmpi_g.world_rank, tc->id, tc->size, tlmpi_coll_name(c->coll), node_algos[a], c->msg_bytes,
                (long)TLMPI_ENV_I(TIMEOUT), where, r->cta, r->peer, a == A_LL ? "line flag " : "",
                (unsigned long long)r->expected, (unsigned long long)r->seen, node_kind_name(r->kind),
                r->kind == (a == A_DIRECT ? direct_kind(c->coll) : (int)node_kind(c->coll, a))
                    ? "" : ", not this call's: an earlier stream-ordered or replayed one",
                nc ? nc->xp->max_ctas : 0, nc ? nc->xp->max_ctas_alone : 0, tlmpi_topo_concurrent_colls());
    tlmpi_gpu_abort(tc->comm);
}

/* A device wait of an earlier call gave up: a stream-ordered call's (nobody waited for it on the host)
 * or a graph replay's. Reported on the comm's next call (c) or at teardown (c NULL), then MPI_Abort. */
static __attribute__((noreturn, noinline)) void node_earlier_timed_out(const tlmpi_tier_comm_t *tc,
                                                                       const tlmpi_call_t *c,
                                                                       volatile tlmpi_node_err_t *r)
{
    tlmpi_error(COLL, "TLMPI_TIMEOUT: rank %d (world rank %d) of communicator #%u (%d ranks): a device wait of an "
                "earlier stream-ordered or graph-replayed node kernel (%s) gave up after %ld s (TLMPI_TIMEOUT) "
                "at barrier %d, CTA slot %d, waiting for node rank %d: expected %llu, seen %llu; reported %s; "
                "calling MPI_Abort", tc->rank, tlmpi_g.world_rank, tc->id, tc->size, node_kind_name(r->kind),
                (long)TLMPI_ENV_I(TIMEOUT), r->barrier, r->cta, r->peer, (unsigned long long)r->expected,
                (unsigned long long)r->seen, c ? "at the next call on the communicator" : "at its teardown");
    tlmpi_gpu_abort(tc->comm);
}

/* A completion word offered to a launch (the launch thread's starts: kernel_call.c) into its arguments:
 * the kernel's last CTA writes it (kernels.h: done_word), counted on from the comm's running total. */
static void node_done_offer(const struct tlmpi_node_comm *nc, tlmpi_node_args_t *a, const tlmpi_gpu_done_t *done)
{
    a->done_word = done ? done->word_dev : NULL;
    a->done_value = done ? done->value : 0;
    a->done_ctas = nc->done_ctas;
}
/* After the launch: whether its kernel writes the word (the LL kinds do not), and the new total. */
static void node_done_taken(struct tlmpi_node_comm *nc, const tlmpi_node_args_t *a, tlmpi_gpu_done_t *done)
{
    if (done && a->done_word) {
        nc->done_ctas = a->done_ctas;
        done->taken = 1;
    }
}

/* node_run's launch (tlmpi_tier_kernel_t): one node kernel, the comm's barrier epoch advanced. Self-
 * contained (the launch thread runs a copy: kernel_call.c) */
struct node_launch {
    struct tlmpi_node_comm *nc;
    tlmpi_node_args_t args;
};
static int node_launch_args(struct tlmpi_node_comm *nc, tlmpi_node_args_t *a, const void *in, void *out, void *stream,
                            tlmpi_gpu_done_t *done)
{
    int e;

    a->in = a->ll_zero_in ? NULL : in;
    a->out = a->ll_no_out ? NULL : out;
    node_done_offer(nc, a, done);
    e = tlmpi_cuda_node_run(&nc->xp->x, a, stream);
    if (e == 0) {
        nc->ran = 1;
        node_done_taken(nc, a, done);
    }
    return e;
}
static int node_launch(void *arg, const void *in, void *out, void *stream, tlmpi_gpu_done_t *done)
{
    struct node_launch *l = arg;

    return node_launch_args(l->nc, &l->args, in, out, stream, done);
}

/* node_run's launch of a sibling: the pool kernel with the call's layout (kept here: the launch thread
 * runs a copy, whose own layout the arguments then point at) */
struct node_launch_sib {
    struct tlmpi_node_comm *nc;
    tlmpi_node_args_t args;
    tlmpi_node_layout_t layout;
};
static int node_launch_sib(void *arg, const void *in, void *out, void *stream, tlmpi_gpu_done_t *done)
{
    struct node_launch_sib *l = arg;

    l->args.layout = &l->layout;
    return node_launch_args(l->nc, &l->args, in, out, stream, done);
}

/* The blocks of a sibling's call (kernels.h: tlmpi_node_layout_t) in bytes, from its rank-uniform
 * arguments (the counts arrays every rank has, the root) and this rank's own choices (in place). The
 * input and output are the call's (c->in, c->rbuf: kernel_call hands them or their scratch copies). */
static void node_layout(const tlmpi_call_t *c, tlmpi_node_layout_t *L)
{
    const size_t e = (size_t)c->dt_size, m = c->msg_bytes;
    const int n = c->size < TLMPI_NODE_MAX_RANKS ? c->size : TLMPI_NODE_MAX_RANKS, r = c->rank;
    size_t off = 0;
    int q;

    memset(L, 0, sizeof(*L));
    switch (c->coll) {
    case TLMPI_COLL_ALLGATHERV: /* the own block (in: sendbuf, or its place in recvbuf) into slot 0 */
        L->in_len[0] = (size_t)tlmpi_call_vcount(c, r) * e;
        for (q = 0; q < n; q++) {
            L->out_len[q] = q == r && c->in_place ? 0 : (size_t)tlmpi_call_vcount(c, q) * e;
            L->out_off[q] = (size_t)tlmpi_call_vdispl(c, q) * e;
        }
        break;
    case TLMPI_COLL_BCAST: /* the root's vector into its slot 0, every other rank copies it */
        if (r == c->root) {
            L->in_len[0] = m;
        } else if (c->root >= 0 && c->root < n) {
            L->out_len[c->root] = m;
        }
        break;
    case TLMPI_COLL_ALLTOALL: /* block q into slot q; slot r of every pool into block q of out */
        for (q = 0; q < n; q++) {
            L->in_len[q] = L->out_len[q] = m;
            L->in_off[q] = L->out_off[q] = (size_t)q * m;
        }
        break;
    case TLMPI_COLL_REDUCE_SCATTER: /* block q (recvcounts[q]) for rank q to reduce */
        for (q = 0; q < n; q++) {
            L->in_len[q] = (size_t)tlmpi_call_vcount(c, q) * e;
            L->in_off[q] = off;
            off += L->in_len[q];
        }
        break;
    case TLMPI_COLL_REDUCE: /* one block, the whole vector, reduced by the root */
        if (c->root >= 0 && c->root < n) {
            L->in_len[c->root] = m;
        }
        break;
    default:
        break;
    }
}

/* The blocks of a sibling's call on the LL allgather or reduce-scatter (node_ll.cu: what this rank owes
 * peer q is in_len[q] bytes at in_off[q]): node_layout's, where allgatherv owes every peer its one block. */
static void node_layout_ll(const tlmpi_call_t *c, tlmpi_node_layout_t *L)
{
    int q;

    node_layout(c, L);
    for (q = 1; c->coll == TLMPI_COLL_ALLGATHERV && q < TLMPI_NODE_MAX_RANKS; q++) {
        L->in_len[q] = L->in_len[0];
    }
}

/* The blocks of a sibling's zero-copy call (kernels.h: TLMPI_NODE_XCHG_DIRECT, TLMPI_NODE_RED_DIRECT):
 * node_layout's, where an exchange reads peer q's input at in_off[q] (alltoall: the block for this rank;
 * allgatherv and bcast: from its start) and a reduction's blocks lie end to end (reduce_scatter), or
 * are one (reduce: the root's). */
static void node_layout_direct(const tlmpi_call_t *c, tlmpi_node_layout_t *L)
{
    int q;

    node_layout(c, L); /* allgatherv's and bcast's in_off are 0 there */
    for (q = 0; c->coll == TLMPI_COLL_ALLTOALL && q < TLMPI_NODE_MAX_RANKS; q++) {
        L->in_off[q] = (size_t)c->rank * c->msg_bytes;
    }
}

/* The layout a sibling's launch takes (none for the LL allreduce's bcast and reduce: NULL). */
static const tlmpi_node_layout_t *node_layout_for(const tlmpi_call_t *c, int a, int direct, tlmpi_node_layout_t *L)
{
    if (!tlmpi_coll_sibling(c->coll) || (a == A_LL && node_sibling_ar_ll(c->coll))) {
        return NULL;
    }
    if (direct) {
        node_layout_direct(c, L);
    } else if (a == A_LL) {
        node_layout_ll(c, L);
    } else {
        node_layout(c, L);
    }
    return L;
}

/* node_run's launch for registered buffers: the zero-copy kernel on them (the call's own, on the comm's
 * device: kernel_call hands them unchanged) */
struct node_launch_direct {
    struct tlmpi_node_comm *nc;
    tlmpi_node_args_t args;
    const tlmpi_node_direct_t *d; /* a persistent request's registration (it outlives the launch: its release
                                     drains the launch thread), or a blocking call's lookup or memo (never
                                     deferred); NULL: a gated launch with no memo to offer (kernels.h) */
    tlmpi_node_layout_t layout;   /* a sibling's blocks (node_layout_direct; the launch's copy points at its own) */
};
static int node_launch_direct(void *arg, const void *in, void *out, void *stream, tlmpi_gpu_done_t *done)
{
    struct node_launch_direct *l = arg;
    int e;

    (void)in, (void)out;
    if (l->args.layout) {
        l->args.layout = &l->layout;
    }
    node_done_offer(l->nc, &l->args, done);
    e = tlmpi_cuda_node_run_direct(&l->nc->xp->x, &l->args, l->d, stream);
    if (e == 0) {
        l->nc->ran = 1;
        node_done_taken(l->nc, &l->args, done);
    }
    return e;
}

/* node_run's launch for a gated start (kernels.h): the zero-copy kernel offering this rank's memo,
 * then the pool kernel, which runs the call unless the first did; the completion word is written by
 * the one that ran it. Self-contained (the memo's pointers copied: its mappings outlive the launch,
 * regcache.h). */
struct node_launch_gated {
    struct tlmpi_node_comm *nc;
    tlmpi_node_args_t args;     /* the pool kernel's */
    tlmpi_node_args_t dargs;    /* the zero-copy kernel's (one column per CTA, memo and token set) */
    tlmpi_node_direct_t d;
    tlmpi_node_layout_t layout, dlayout; /* a sibling's blocks for each launch (the copy points at its own) */
};
static int node_launch_gated(void *arg, const void *in, void *out, void *stream, tlmpi_gpu_done_t *done)
{
    struct node_launch_gated *l = arg;
    int e;

    if (l->args.layout) {
        l->args.layout = &l->layout;
        l->dargs.layout = &l->dlayout;
    }

    /* both launches are offered the word: the one that runs the call writes it, both count their CTAs
     * (kernels.h), the pool launch's target after the zero-copy launch's */
    node_done_offer(l->nc, &l->dargs, done);
    e = tlmpi_cuda_node_run_direct(&l->nc->xp->x, &l->dargs, l->dargs.memo ? &l->d : NULL, stream);
    if (e != 0) {
        return e; /* nothing enqueued */
    }
    l->args.in = in;
    l->args.out = out;
    node_done_offer(l->nc, &l->args, done);
    if (l->dargs.done_word) {
        l->args.done_ctas = l->dargs.done_ctas; /* the zero-copy launch's target (done_commit) */
    }
    e = tlmpi_cuda_node_run(&l->nc->xp->x, &l->args, stream);
    if (e != 0) {
        /* the zero-copy kernel is queued and waits for its peers' offers at its first barrier: with no
         * pool kernel after it the call cannot complete on every rank (report as a failed launch after
         * work started: the caller's wait bounds it) */
        return e;
    }
    l->nc->ran = 1;
    node_done_taken(l->nc, &l->args, done);
    return 0;
}

/* The launch arguments of call c (algorithm word algo); the algorithm it runs in *a_p. Columns (the
 * partition, the same on every rank: kernels.h, cols): the plan entry's knob (tables, tuning file),
 * else TLMPI_NODE_CTAS, else by size; at most the agreed limit that keeps every rank's CTAs resident:
 * max_ctas, or for the pool kinds max_ctas_alone (where ranks share a GPU, twice as many or more)
 * for the blocking form, and for any form whose knob asks for more columns than max_ctas (the shape
 * is the tuner's to pick: docs/PERFORMANCE.md, "The 8-rank allgather gap located"); without a knob
 * the pull allgather's limit is at least TLMPI_NODE_PULL_COLS in every form, by default the blocking
 * call's ("The pull allgather on the blocking call's columns": its stream forms then run the
 * blocking call's partition, the fastest at 2, 4 and 8 ranks on one GPU). CTAs: the columns, or
 * where another kernel of this process may be in flight beside the call's (always, but for a
 * blocking call's kernel alone), at most max_ctas of them taking the columns in turn (topo.h:
 * tlmpi_topo_grid_ctas); never alone where the GPU also runs ranks of other communicators
 * (nc->outsiders): a peer may be waiting for a kernel of theirs that tlmpi does not size (the hier
 * tier's rail step on NCCL), which needs room on the GPU while this kernel waits. Once the comm has
 * carried a stream-ordered call (nc->streamed) its blocking calls take the forms' columns: every rank
 * of it then has made one (tlmpi_gpu_alone is false for good), so its blocking kernels run on at most
 * max_ctas CTAs, where the alone limit's columns taken in turn cost the allreduce and the
 * reduce-scatter 0.2-2.4% at 64 and 256 MiB against one column per CTA (H100, 2-8 ranks:
 * docs/PERFORMANCE.md, "Blocking calls beside stream-ordered ones"; the pull allgather's columns
 * are the same either way, TLMPI_NODE_PULL_COLS). The form, the knob and whether the comm has
 * carried a stream-ordered call, not what is in flight, decide the columns: they are the same on
 * every rank (MPI matches blocking calls only with blocking ones; a stream-ordered call that falls
 * back to a synchronous run keeps its form; every rank's stream-ordered call reaches node_enqueue,
 * the plan's agreed choice). */
static void node_args(const tlmpi_tier_comm_t *tc, const struct tlmpi_node_comm *nc, const tlmpi_call_t *c, int algo,
                      int direct, tlmpi_node_args_t *args, int *a_p)
{
    long forced = TLMPI_ALGO_CTAS(algo) ? TLMPI_ALGO_CTAS(algo) : (long)TLMPI_ENV_I(NODE_CTAS);
    int a = node_algo(c->coll, TLMPI_ALGO_INDEX(algo), c->msg_bytes), cols, lim, split = nc->xp->max_ctas;
    int turns, blocking;

    args->kind = (int)node_kind(c->coll, a);
    args->dtype = (int)c->dt;
    args->op = (int)c->opc;
    /* bytes of a block for the copies (allgather, the exchange kinds: the longest block), else elements
     * (the siblings' reductions: of the longest block) */
    args->count = c->coll == TLMPI_COLL_ALLGATHER || args->kind == TLMPI_NODE_XCHG || args->kind == TLMPI_NODE_XCHG_ALL ||
                          args->kind == TLMPI_NODE_AG_LL
                      ? c->msg_bytes
                  : tlmpi_coll_sibling(c->coll) ? c->msg_bytes / (size_t)(c->dt_size > 0 ? c->dt_size : 1)
                                                : (size_t)c->count;
    /* columns may be taken in turn: the pool kinds (not LL, not the zero-copy kernels of registered
     * buffers), where max_ctas_alone exceeds max_ctas (it does not under multicast or
     * MPI_THREAD_MULTIPLE: xport.h) */
    turns = a != A_LL && !direct && nc->xp->max_ctas_alone > split;
    blocking = turns && c->form == TLMPI_FORM_BLOCKING && !c->pend && !nc->streamed;
    lim = blocking || (turns && forced > 0) ? nc->xp->max_ctas_alone : split;
    if (turns && forced <= 0 && args->kind == TLMPI_NODE_AG_PULL) {
        /* the pull allgather's least columns (TLMPI_NODE_PULL_COLS), taken in turn below */
        long p = (long)TLMPI_ENV_I(NODE_PULL_COLS);

        lim = p > lim ? (int)(p < nc->xp->max_ctas_alone ? p : nc->xp->max_ctas_alone) : lim;
    }
    cols = forced > 0 ? (int)(forced < lim ? forced : lim) : tlmpi_cuda_node_ctas_for(args->kind, c->msg_bytes, tc->size, lim);
    cols = cols < 1 ? 1 : cols > TLMPI_NODE_MAX_CTAS ? TLMPI_NODE_MAX_CTAS : cols;
    if (blocking || (turns && cols > split)) {
        cols = tlmpi_topo_grid_cols(cols, split, lim);
        args->cols = cols;
        args->ctas = tlmpi_topo_grid_ctas(cols, split, blocking && !nc->outsiders && tlmpi_gpu_alone());
        if (blocking && cols > split) {
            tlmpi_stat_grid_add(args->ctas < cols);
        }
    } else {
        args->cols = 0; /* one column per CTA */
        args->ctas = cols;
    }
    tlmpi_stat_shape_set(c->form, args->cols ? args->cols : args->ctas, args->ctas);
    args->epoch = 0; /* dev_epoch: the kernels keep it */
    args->done_word = NULL; /* the launch thread's launches may offer one (node_done_offer) */
    args->done_value = 0;
    args->done_ctas = 0;
    args->gate = 0; /* not gated (node_run sets a gated launch's token and offer) */
    args->memo = 0;
    args->layout = NULL; /* the siblings' launches point it at their layout */
    args->ll_zero_in = args->ll_no_out = 0;
    if (args->kind == TLMPI_NODE_AR_LL && c->coll == TLMPI_COLL_BCAST) {
        /* the root's bytes summed with the others' zeros (node_ll.cu): exact */
        args->dtype = TLMPI_DT_U8;
        args->op = TLMPI_OP_SUM;
        args->count = c->msg_bytes;
        args->ll_zero_in = c->rank != c->root;
    } else if (args->kind == TLMPI_NODE_AR_LL && c->coll == TLMPI_COLL_REDUCE) {
        args->ll_no_out = !c->root_here;
    }
    args->in = args->ll_zero_in ? NULL : c->in;
    args->out = args->ll_no_out ? NULL : c->rbuf;
    *a_p = a;
}

/* Whether a call tries the registration cache, from rank-uniform inputs only (the agreed plan and
 * settings, the form, the message size, MPI_IN_PLACE, which the standard makes uniform): blocking and
 * stream-ordered calls (captured or not), not the non-blocking ones (the lookup is a host collective,
 * which MPI_I* must not wait in) nor persistent requests (registered at init, or through the pools). */
static int node_reg_size(const tlmpi_tier_comm_t *tc, const struct tlmpi_node_comm *nc, const tlmpi_call_t *c,
                         int algo)
{
    int ai = TLMPI_ALGO_INDEX(algo);

    if (!TLMPI_ENV_I(NODE_REG) || (ai != A_AUTO && ai != A_DIRECT) || nc->xp->x.nranks != tc->size ||
        /* in place, a rank's result would land where another reads (node_direct.cu); the standard makes
         * MPI_IN_PLACE uniform for these three */
        (c->in_place && (c->coll == TLMPI_COLL_REDUCE_SCATTER_BLOCK || c->coll == TLMPI_COLL_REDUCE_SCATTER ||
                         c->coll == TLMPI_COLL_ALLTOALL)) ||
        node_algo(c->coll, A_AUTO, c->msg_bytes) == A_LL) {
        return 0;
    }
    return ai == A_DIRECT || c->msg_bytes >= (size_t)TLMPI_ENV_I(NODE_REG_MIN);
}
static int node_reg_wanted(const tlmpi_tier_comm_t *tc, const struct tlmpi_node_comm *nc, const tlmpi_call_t *c,
                           int algo)
{
    return !c->preg && !c->pend && (c->form == TLMPI_FORM_BLOCKING || c->form == TLMPI_FORM_ENQUEUE) &&
           node_reg_size(tc, nc, c, algo);
}

/* Whether a non-blocking start is gated (kernels.h: its zero-copy use agreed on the device, no host
 * collective): node_reg_wanted's conditions but the form, and the view holds memos (regcache.h; the
 * same on every rank: memos change only at lookups, which every rank makes at the same call). */
/* Whether gated launches may run on nc: on, the ipc transport, the device epoch, memos in the view (the
 * same on every rank). */
static int node_gate_ready(const struct tlmpi_node_comm *nc)
{
    return TLMPI_ENV_I(NODE_GATE) && nc->ipc && nc->xp->x.dev_epoch && tlmpi_regcache_memos(nc->reg) > 0;
}
/* Whether call c may be gated: the three, and the siblings where TLMPI_NODE_GATE_SIBLINGS says so. */
static int node_gate_coll(const tlmpi_call_t *c)
{
    return !tlmpi_coll_sibling(c->coll) || TLMPI_ENV_I(NODE_GATE_SIBLINGS);
}
static int node_gate_wanted(const tlmpi_tier_comm_t *tc, const struct tlmpi_node_comm *nc, const tlmpi_call_t *c,
                            int algo)
{
    return c->form == TLMPI_FORM_NONBLOCKING && !c->preg && node_gate_coll(c) && node_gate_ready(nc) &&
           node_reg_size(tc, nc, c, algo);
}

/* The allocations of in and out (a call's input and output) as the classification cache knows them
 * (bytes 0: unknown), with no driver call. */
static void node_known_ranges(const void *in, const void *out, tlmpi_reg_range_t known[2])
{
    const void *p[2] = { in, out };
    int i;

    for (i = 0; i < 2; i++) {
        uintptr_t b = 0;
        size_t sz = 0;
        unsigned long long id = 0;

        known[i].bytes = tlmpi_mem_range(p[i], &b, &sz, &id) ? (unsigned long long)sz : 0;
        known[i].base = (unsigned long long)b;
        known[i].id = id;
    }
}

/* A reduce's non-root has no output: the buffers it registers are its input alone (node_reg_out). */
static int node_no_out(const tlmpi_call_t *c)
{
    return c->coll == TLMPI_COLL_REDUCE && !c->root_here;
}
/* The output a call registers: its receive buffer, or where it has none its input (registered, never
 * written). */
static void *node_reg_out(const tlmpi_call_t *c)
{
    return node_no_out(c) ? (void *)c->in : c->rbuf;
}
/* Whether the buffers a call registers are device memory of the comm's GPU. */
static int node_reg_local(const tlmpi_tier_comm_t *tc, const tlmpi_call_t *c)
{
    return (node_no_out(c) || (c->rmem == TLMPI_MEM_DEVICE && c->rdev == tc->dev)) &&
           (c->in_place || (c->smem == TLMPI_MEM_DEVICE && c->sdev == tc->dev));
}

/* Why the buffers a call would register cannot be (the reason lines of the registration), NULL where
 * they are device memory of the comm's GPU. */
static const char *node_reg_why_local(const tlmpi_tier_comm_t *tc, const tlmpi_call_t *c)
{
    return node_reg_local(tc, c) ? NULL : "has buffers that are not device memory of the communicator's GPU";
}

/* This rank's offer for a gated call (local, no driver call): the memo holding exactly its buffers,
 * every rank's pointers in *d; 0: none (buffers not device memory of the comm's GPU, or not in a memo). */
static unsigned long long node_memo(const tlmpi_tier_comm_t *tc, const struct tlmpi_node_comm *nc,
                                    const tlmpi_call_t *c, tlmpi_node_direct_t *d)
{
    void *out = node_reg_out(c);
    tlmpi_reg_range_t known[2];

    if (!node_reg_local(tc, c)) {
        return 0;
    }
    node_known_ranges(c->in, out, known);
    return tlmpi_regcache_memo(nc->reg, c->in, out, known, d);
}

/* The registration cache's drain (regcache.h): every kernel of the comm queued so far completed, the
 * stream-ordered ones included (the comm's stream after its order event, as teardown's barrier), in a
 * bounded wait; a failure reports and aborts (the ranks' views would part). */
static int node_drain(void *arg)
{
    tlmpi_tier_comm_t *tc = arg;
    tlmpi_wait_who_t who = { MPI_COMM_NULL, tc->id, TLMPI_COLL_ALLREDUCE, "node" };
    int e, saved = -1;

    /* a gated start's launch may still be queued on the launch thread (its memo's mappings in its copy) */
    tlmpi_launcher_drain("the registration cache letting go of a buffer");
    if (tlmpi_gpu_enter_device(tc->dev, &saved) != 0) {
        e = (int)cudaErrorInvalidDevice;
    } else {
        e = tlmpi_gpu_ctx_begin(tc->ctx);
        if (e == 0) {
            e = tlmpi_gpu_stream_wait_grace(tc->ctx, &who, "the registration cache's drain", NODE_GRACE_S);
        }
        tlmpi_gpu_restore_device(saved);
    }
    if (e != 0) {
        tlmpi_error(COLL, "communicator #%u: waiting for its queued kernels before letting go of a registered buffer "
                    "failed: %s; calling MPI_Abort", tc->id, cudaGetErrorString((cudaError_t)e));
        tlmpi_gpu_abort(tc->comm);
    }
    return 0;
}

/* Whether stream is capturing into a graph (unknown: yes, the careful answer). */
static int node_capturing(void *stream)
{
    enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;

    if (cudaStreamIsCapturing((cudaStream_t)stream, &cs) != cudaSuccess) {
        (void)cudaGetLastError();
        return 1;
    }
    return cs != cudaStreamCaptureStatusNone;
}

/* Pools of its own for a comm that shared them (node_share_attach), before its first non-blocking,
 * stream-ordered or persistent call (collective: every rank at the same call, and the shared state is
 * the same on every rank). Its last holder keeps them; otherwise a new transport as setup makes one
 * (no timed barriers: the shared pools' timing holds), agreed. 0, or -1 on every rank (the call goes
 * to staging; one warning) with the pools still shared. */
static int node_own_pools(tlmpi_tier_comm_t *tc, struct tlmpi_node_comm *nc)
{
    struct tlmpi_node_comm mine;
    enum cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    char why[224] = "";
    int ok, refs, ran = 0;

    if (!nc->sh) {
        return 0;
    }
    pthread_mutex_lock(&g_share_lock);
    refs = nc->sh->refs;
    pthread_mutex_unlock(&g_share_lock);
    if (refs == 1) {
        /* the last holder: the pools become its own (nc->ipc already points at them) */
        (void)node_share_leave(nc, &ran);
        nc->ran |= ran;
        return 0;
    }
    memset(&mine, 0, sizeof(mine));
    (void)cudaThreadExchangeStreamCaptureMode(&mode);
    tlmpi_launcher_drain("the node tier making a communicator's own pools");
    ok = node_transport(tc, &mine, tlmpi_ipc_data_bytes((long long)TLMPI_ENV_I(NODE_POOL)), why, sizeof(why)) == 0;
    if (ok && node_epoch_init(tc, &mine, why, sizeof(why)) != 0) {
        ok = 0;
    }
    (void)cudaThreadExchangeStreamCaptureMode(&mode);
    if (PMPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, tc->comm) != MPI_SUCCESS) {
        ok = 0;
    }
    if (!ok) {
        if (mine.xp) {
            tlmpi_ipc_destroy(mine.ipc);
            tlmpi_devcomm_destroy(mine.dc);
        }
        tlmpi_warn_once(COMM, "communicator #%u: the node tier could not give it pools of its own for a "
                        "non-blocking, stream-ordered or persistent call (%s); such calls go through staging",
                        tc->id, why[0] ? why : "failed on another rank");
        return -1;
    }
    mine.xp->x.stuck = nc->xp->x.stuck;
    mine.xp->x.late_ns = nc->xp->x.late_ns;
    (void)node_share_leave(nc, &ran); /* not the last holder: the shared pools stay */
    nc->ipc = mine.ipc;
    nc->dc = mine.dc;
    nc->xp = mine.xp;
    nc->ran = 0; /* no kernel of this comm ran on its own pools yet */
    nc->area_captured = 0;
    nc->grow_failed = 0;
    tlmpi_debug(COMM, "communicator #%u: the node tier's pools are its own now (they were shared)", tc->id);
    return 0;
}

/* The pools' data area ready for a pool kernel of kind (node_pool_kind; -1: none) on call c (the ipc transport's growing area;
 * every rank alike: kind, size and form are rank-uniform). Where it holds less than the call needs to
 * run in one step (tlmpi_cuda_node_area_for) and less than TLMPI_NODE_POOL, it grows, collectively, to
 * the power of two that fits the call (at least 1 MiB and twice what it had, at most the cap): the
 * launch thread drained and the comm's queued kernels waited for first (tlmpi_ipc_grow frees the old
 * area unless a captured kernel used it), under relaxed stream-capture mode (a captured call may be the
 * one that grows it). A persistent start never grows it (MPI_Start is local: its init did,
 * node_persist); may_grow says whether this call may. 0, or -1 where there is no data area at all (a
 * growth failed on some rank, agreed: the call goes to staging); a failed growth with an area left
 * runs the call in more steps. After a failure (one warning) the comm's area is never grown again. */
/* The pool kernel kind call c runs with algorithm word algo, or -1 for the LL kinds (the header's LL
 * region: no data area). */
static int node_pool_kind(const tlmpi_call_t *c, int algo)
{
    const int a = node_algo(c->coll, TLMPI_ALGO_INDEX(algo), c->msg_bytes);

    return a == A_LL ? -1 : (int)node_kind(c->coll, a);
}

static int node_pool_ready(tlmpi_tier_comm_t *tc, struct tlmpi_node_comm *nc, const tlmpi_call_t *c, int kind,
                           int may_grow)
{
    tlmpi_ipc_t *ipc = nc->ipc;
    size_t want, have, p = (size_t)1 << 20;
    enum cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    char why[224];
    int rc;

    if (!ipc || !ipc->grows || kind < 0) {
        return 0;
    }
    have = ipc->t.x.data_bytes;
    want = tlmpi_cuda_node_area_for(kind, c->msg_bytes, tc->size);
    if (have >= want || have >= ipc->cap) {
        return 0;
    }
    if (!may_grow || nc->grow_failed) {
        return have ? 0 : -1; /* a start, or a comm whose growth failed once (agreed): not tried again */
    }
    while (p < want && p < ipc->cap) {
        p <<= 1;
    }
    want = p;
    if (want < 2 * have) {
        want = 2 * have;
    }
    if (want > ipc->cap) {
        want = ipc->cap;
    }
    (void)cudaThreadExchangeStreamCaptureMode(&mode);
    tlmpi_launcher_drain("the node pools' data area growing");
    node_drain(tc);
    rc = tlmpi_ipc_grow(ipc, tc->comm, want, nc->area_captured, why, sizeof(why));
    (void)cudaThreadExchangeStreamCaptureMode(&mode);
    if (rc == 0) {
        nc->area_captured = 0;
        tlmpi_debug(COMM, "communicator #%u: the node pools' data area grew from %zu to %zu bytes (%s of %zu bytes)",
                    tc->id, have, want, tlmpi_coll_name(c->coll), c->msg_bytes);
        return 0;
    }
    nc->grow_failed = 1;
    tlmpi_warn(COMM, "communicator #%u: the node pools' data area could not grow from %zu to %zu bytes (%s); %s",
               tc->id, have, want, why, have ? "larger calls run in more steps" : "calls that need it go through staging");
    return have ? 0 : -1;
}

/* The call's buffers through the registration cache (collective: node_reg_wanted said yes on every
 * rank), used as `use` says: 1 with every rank's buffers in *d, or 0 (the pools serve the call, on
 * every rank). */
static int node_zero_copy(tlmpi_tier_comm_t *tc, struct tlmpi_node_comm *nc, const tlmpi_call_t *c,
                          tlmpi_reg_use_t use, tlmpi_node_direct_t *d)
{
    void *out = node_reg_out(c);
    const char *why_local = node_reg_why_local(tc, c);
    const int local_ok = why_local == NULL;
    tlmpi_reg_state_t st;
    tlmpi_reg_range_t known[2];
    char why[192];

    if (local_ok) {
        node_known_ranges(c->in, out, known); /* the classification of this call validated them: no driver call */
    }
    st = tlmpi_regcache_lookup(nc->reg, tc->comm, local_ok, why_local, c->in, out, local_ok ? known : NULL, use,
                               node_drain, tc, d, why, sizeof(why));
    if (st == TLMPI_REG_POOL) {
        tlmpi_debug(COLL, "communicator #%u: %s of %zu bytes through the pools (buffers not registered: %s)", tc->id,
                    tlmpi_coll_name(c->coll), c->msg_bytes, why);
        return 0;
    }
    return 1;
}

/* The pool launch of a gated pair where this rank offers a memo: at most TLMPI_NODE_GATE_POOL_CTAS CTAs,
 * its columns taken in turn (the pool kinds' IPC kernels: kernels.h, cols; ranks may differ). */
static void node_gate_pool_ctas(const struct tlmpi_node_comm *nc, tlmpi_node_args_t *args, unsigned long long memo)
{
    long n = (long)TLMPI_ENV_I(NODE_GATE_POOL_CTAS);

    if (n <= 0 || !memo || nc->xp->x.mc_base || n >= args->ctas) {
        return;
    }
    if (!args->cols) {
        args->cols = args->ctas;
    }
    args->ctas = (int)n;
}

/* The gated zero-copy launch of call c (kernels.h): its arguments (one column per CTA), this rank's offer
 * with every rank's pointers in *d, and a new token. */
static void node_gate_args(const tlmpi_tier_comm_t *tc, struct tlmpi_node_comm *nc, const tlmpi_call_t *c, int algo,
                           tlmpi_node_args_t *da, tlmpi_node_direct_t *d)
{
    int a;

    node_args(tc, nc, c, algo, 1, da, &a);
    da->kind = direct_kind(c->coll);
    da->memo = node_memo(tc, nc, c, d);
    da->gate = ++nc->gate_seq;
}

/* A blocking call that node_reg_wanted sends to the registration cache, on a comm whose view has memos
 * (the same on every rank): first the zero-copy kernel alone, gated (kernels.h: every rank offers the
 * memo of its buffers), waited for. 1 when it ran the call (every rank offered the same memo: the
 * kernels' count moved, which every rank sees alike after its wait) or failed after work started, with
 * its status in *st; 0 when it did not run it (no agreement: one barrier taken, nothing moved; or the
 * launch failed): the caller then looks the buffers up as without memos. A hit costs no host
 * collective. */
static int node_memo_blocking(tlmpi_tier_comm_t *tc, struct tlmpi_node_comm *nc, const tlmpi_call_t *c, int algo,
                              tlmpi_status_t *st)
{
    static int launch_warned;
    struct node_launch_direct l;
    tlmpi_node_direct_t d;
    unsigned long long before;

    if (!node_gate_ready(nc) || !node_gate_coll(c)) {
        return 0; /* the siblings' zero-copy kernels gated only with TLMPI_NODE_GATE_SIBLINGS: else they look up */
    }
    memset(&l, 0, sizeof(l));
    l.nc = nc;
    node_gate_args(tc, nc, c, algo, &l.args, &d);
    l.args.layout = node_layout_for(c, A_DIRECT, 1, &l.layout); /* a sibling's (node_launch_direct repoints it) */
    l.d = l.args.memo ? &d : NULL;
    before = nc->xp->err->gated_direct;
    {
        const tlmpi_tier_kernel_t k = { "node", node_algos[A_DIRECT], "node tier", "the node kernel (zero-copy, gated)",
                                        NODE_GRACE_S, &nc->scratch, &nc->scratch_bytes, &launch_warned,
                                        node_launch_direct, &l, sizeof(l), &nc->launch_ok,
                                        1u << direct_kind(c->coll) };

        *st = tlmpi_tier_kernel_call(tc, c, &k);
    }
    if (TLMPI_UNLIKELY(nc->xp->err->set)) {
        node_timed_out(tc, c, A_DIRECT, nc->xp->err);
    }
    if (*st == TLMPI_ERR_UNSUPPORTED) {
        return 0; /* not launched: nothing moved */
    }
    if (*st != TLMPI_OK) {
        return 1;
    }
    nc->gated++;
    nc->gated_offered += l.args.memo != 0;
    if (nc->xp->err->gated_direct == before) {
        return 0;
    }
    tlmpi_regcache_memo_hit(nc->reg, l.args.memo);
    tlmpi_stat_algo_add(c->coll, TLMPI_PATH_NODE, A_DIRECT, c->msg_bytes);
    return 1;
}

static tlmpi_status_t node_run(tlmpi_tier_comm_t *tc, const tlmpi_call_t *c, int algo, int *mpi_rc_p)
{
    static int launch_warned;
    struct tlmpi_node_comm *nc = tc->state[TLMPI_TIER_NODE];
    tlmpi_status_t st;
    tlmpi_node_args_t args;
    tlmpi_node_direct_t zd;
    const tlmpi_node_direct_t *d = NULL;
    int a, gated = 0;

    (void)mpi_rc_p;
    if (!nc) {
        return TLMPI_ERR_UNSUPPORTED; /* not set up (cannot happen when supports() said yes) */
    }
    if (TLMPI_UNLIKELY(nc->sh != NULL) && c->form != TLMPI_FORM_BLOCKING && node_own_pools(tc, nc) != 0) {
        return TLMPI_ERR_UNSUPPORTED; /* on every rank: staging serves it */
    }
    if (TLMPI_UNLIKELY(nc->xp->err->set)) {
        node_earlier_timed_out(tc, c, nc->xp->err); /* a stream-ordered call's, not yet reported */
    }
    if (c->preg) {
        d = &((const tlmpi_ipc_reg_t *)c->preg)->d; /* a registered persistent request (node_persist) */
    } else if (node_reg_wanted(tc, nc, c, algo) && node_memo_blocking(tc, nc, c, algo, &st)) {
        return st; /* zero-copy on a memo every rank offered (or its error) */
    } else if (node_reg_wanted(tc, nc, c, algo) && node_zero_copy(tc, nc, c, TLMPI_REG_USE_HOST, &zd)) {
        d = &zd;
    } else if (node_gate_wanted(tc, nc, c, algo)) {
        gated = 1;
    }
    if (!d && node_pool_ready(tc, nc, c, node_pool_kind(c, algo), c->form != TLMPI_FORM_PERSISTENT) != 0) {
        return TLMPI_ERR_UNSUPPORTED; /* on every rank: staging serves it */
    }
    node_args(tc, nc, c, algo, d != NULL, &args, &a);
    if (gated) {
        /* the pool kernel's arguments in args, the zero-copy kernel's (one column per CTA) beside them */
        struct node_launch_gated l;

        memset(&l, 0, sizeof(l));
        l.nc = nc;
        l.args = args;
        node_gate_args(tc, nc, c, algo, &l.dargs, &l.d);
        l.args.gate = l.dargs.gate;
        node_gate_pool_ctas(nc, &l.args, l.dargs.memo);
        l.args.layout = node_layout_for(c, a, 0, &l.layout); /* a sibling's: both, or neither */
        l.dargs.layout = node_layout_for(c, A_DIRECT, 1, &l.dlayout);
        {
            const tlmpi_tier_kernel_t k = { "node", node_algos[a], "node tier", "the node kernels (gated zero-copy)",
                                            NODE_GRACE_S, &nc->scratch, &nc->scratch_bytes, &launch_warned,
                                            node_launch_gated, &l, sizeof(l), &nc->launch_ok,
                                            1u << direct_kind(c->coll) };

            nc->gated++;
            nc->gated_offered += l.dargs.memo != 0;
            st = tlmpi_tier_kernel_call(tc, c, &k);
        }
    } else if (!d && tlmpi_coll_sibling(c->coll) && !(a == A_LL && node_sibling_ar_ll(c->coll))) {
        struct node_launch_sib l;
        const tlmpi_tier_kernel_t k = { "node", node_algos[a], "node tier", "the node kernel", NODE_GRACE_S,
                                        &nc->scratch, &nc->scratch_bytes, &launch_warned, node_launch_sib, &l,
                                        sizeof(l), &nc->launch_ok, 1u << args.kind };

        l.nc = nc;
        l.args = args;
        (void)node_layout_for(c, a, 0, &l.layout);
        st = tlmpi_tier_kernel_call(tc, c, &k);
    } else if (d) {
        /* zero-copy, the pool kind's CTA count */
        struct node_launch_direct l = { .nc = nc, .args = args, .d = d };
        const tlmpi_tier_kernel_t k = { "node", node_algos[A_DIRECT], "node tier", "the node kernel (zero-copy)",
                                        NODE_GRACE_S, &nc->scratch, &nc->scratch_bytes, &launch_warned,
                                        node_launch_direct, &l, sizeof(l), &nc->launch_ok,
                                        1u << direct_kind(c->coll) };

        a = A_DIRECT;
        l.args.kind = direct_kind(c->coll);
        /* node_launch_direct points its copy at the copy's own */
        l.args.layout = node_layout_for(c, a, 1, &l.layout);
        st = tlmpi_tier_kernel_call(tc, c, &k);
    } else {
        struct node_launch l = { nc, args };
        const tlmpi_tier_kernel_t k = { "node", node_algos[a], "node tier", "the node kernel", NODE_GRACE_S,
                                        &nc->scratch, &nc->scratch_bytes, &launch_warned, node_launch, &l,
                                        sizeof(l), &nc->launch_ok, 1u << args.kind };

        st = tlmpi_tier_kernel_call(tc, c, &k);
    }
    if (TLMPI_UNLIKELY(nc->xp->err->set)) {
        node_timed_out(tc, c, a, nc->xp->err);
    }
    if (st == TLMPI_OK) {
        tlmpi_stat_algo_add(c->coll, TLMPI_PATH_NODE, a, c->msg_bytes);
    }
    return st;
}

/* The stream-ordered form: one kernel launch on the caller's stream and nothing else (the epoch is
 * the kernels' own, so the launch is replay-safe in a graph). Buffers on another device than the
 * comm's, and a host output (tlmpi_call_off_device), are not stream-ordered (UNSUPPORTED). A device
 * wait of an earlier call that gave up is reported first. */
static tlmpi_status_t node_enqueue(tlmpi_tier_comm_t *tc, const tlmpi_call_t *c, int algo, void *stream)
{
    struct tlmpi_node_comm *nc = tc->state[TLMPI_TIER_NODE];
    tlmpi_node_args_t args;
    tlmpi_node_layout_t layout;
    tlmpi_node_direct_t zd;
    int a, e, saved = -1, direct = 0, captured = -1;

    if (!nc) {
        return TLMPI_ERR_UNSUPPORTED;
    }
    if (TLMPI_UNLIKELY(nc->sh != NULL) && node_own_pools(tc, nc) != 0) {
        return TLMPI_ERR_UNSUPPORTED; /* every rank alike */
    }
    nc->streamed = 1; /* before the per-rank check below: the same on every rank */
    if (node_reg_wanted(tc, nc, c, algo)) {
        /* before the per-rank check too (collective); a rank whose buffers are on another device says so in
         * its record, and every rank then uses the pools */
        captured = node_capturing(stream);
        direct = node_zero_copy(tc, nc, c, captured ? TLMPI_REG_USE_GRAPH : TLMPI_REG_USE_STREAM, &zd);
    }
    if (!direct) {
        /* the pools' data area (collective where it grows: before the per-rank check too); a captured
         * kernel's area is kept when it grows again */
        const int pk = node_pool_kind(c, algo);

        if (node_pool_ready(tc, nc, c, pk, 1) != 0) {
            return TLMPI_ERR_UNSUPPORTED;
        }
        if (pk >= 0 && nc->ipc && nc->ipc->grows && nc->ipc->t.x.data_bytes && !nc->area_captured) {
            nc->area_captured = captured >= 0 ? captured : node_capturing(stream);
        }
    }
    if (tlmpi_call_off_device(c, tc->dev)) {
        return TLMPI_ERR_UNSUPPORTED;
    }
    if (TLMPI_UNLIKELY(nc->xp->err->set)) {
        node_earlier_timed_out(tc, c, nc->xp->err);
    }
    node_args(tc, nc, c, algo, direct, &args, &a);
    args.layout = node_layout_for(c, a, direct, &layout);
    if (tlmpi_gpu_enter_device(tc->dev, &saved) != 0) {
        return TLMPI_ERR_UNSUPPORTED;
    }
    if (direct) {
        a = A_DIRECT;
        args.kind = direct_kind(c->coll);
        e = tlmpi_cuda_node_run_direct(&nc->xp->x, &args, &zd, stream);
    } else {
        e = tlmpi_cuda_node_run(&nc->xp->x, &args, stream);
    }
    tlmpi_gpu_restore_device(saved);
    if (e != 0) {
        (void)cudaGetLastError();
        tlmpi_warn_once(COLL, "%s on tier node (algorithm %s): the stream-ordered kernel launch failed (%s)",
                        tlmpi_coll_name(c->coll), node_algos[a], cudaGetErrorString((cudaError_t)e));
        return TLMPI_ERR_CUDA;
    }
    nc->ran = 1;
    tlmpi_stat_algo_add(c->coll, TLMPI_PATH_NODE, a, c->msg_bytes);
    return TLMPI_OK;
}

/* A started call's kernel completed: its device waits may have given up meanwhile (run's check
 * after its wait, for the non-blocking forms). */
static void node_complete(tlmpi_tier_comm_t *tc, const tlmpi_call_t *c, int algo)
{
    struct tlmpi_node_comm *nc = tc->state[TLMPI_TIER_NODE];

    if (nc && TLMPI_UNLIKELY(nc->xp->err->set)) {
        node_timed_out(tc, c, c->preg ? A_DIRECT : node_algo(c->coll, TLMPI_ALGO_INDEX(algo), c->msg_bytes),
                       nc->xp->err);
    }
}

/* node_persist's registration: the buffers registered for the zero-copy kernels where
 * the call runs them (the siblings too: the kernels of their blocking calls, node_direct.cu, with the
 * layout of every start; an MPI_Reduce's non-root registers its input alone, as node_zero_copy).
 * Whether to try is decided from rank-uniform inputs only (the agreed plan and settings, the message
 * size, MPI_IN_PLACE where the standard makes it uniform: node_reg_size's exclusions); what this rank's
 * buffers allow is agreed inside tlmpi_ipc_reg_create. */
static void *node_persist_reg(tlmpi_tier_comm_t *tc, struct tlmpi_node_comm *nc, const tlmpi_call_t *c, int algo)
{
    const char *why_local = node_reg_why_local(tc, c);
    const int ai = TLMPI_ALGO_INDEX(algo), local_ok = why_local == NULL;
    void *out = node_reg_out(c);
    tlmpi_ipc_reg_t *reg;
    char why[192];

    if (!TLMPI_ENV_I(NODE_DIRECT) || (ai != A_AUTO && ai != A_DIRECT) || nc->xp->x.nranks != tc->size ||
        c->msg_bytes < (size_t)TLMPI_ENV_I(NODE_DIRECT_MIN) || node_algo(c->coll, A_AUTO, c->msg_bytes) == A_LL ||
        (c->in_place && (c->coll == TLMPI_COLL_REDUCE_SCATTER_BLOCK || c->coll == TLMPI_COLL_REDUCE_SCATTER ||
                         c->coll == TLMPI_COLL_ALLTOALL))) {
        return NULL;
    }
    reg = tlmpi_ipc_reg_create(tc->comm, tc->rank, tc->size, tc->dev, local_ok, why_local, c->in, c->in_bytes, out,
                               node_no_out(c) ? c->in_bytes : c->out_bytes, why, sizeof(why));
    if (TLMPI_ENV_I(LOG_LEVEL) >= TLMPI_LOG_INFO) {
        if (reg) {
            tlmpi_info(COLL, "communicator #%u: persistent %s of %zu bytes: zero-copy (the buffers of its %d ranks "
                       "registered)", tc->id, tlmpi_coll_name(c->coll), c->msg_bytes, tc->size);
        } else {
            tlmpi_info(COLL, "communicator #%u: persistent %s of %zu bytes: through the pools (buffers not "
                       "registered: %s)", tc->id, tlmpi_coll_name(c->coll), c->msg_bytes, why);
        }
    }
    return reg;
}

/* The persistent forms at *_init (collective): registered for the zero-copy kernels (node_persist_reg),
 * else the pools' data area grown to what the starts need (they never grow it: MPI_Start is local). */
static void *node_persist(tlmpi_tier_comm_t *tc, const tlmpi_call_t *c, int algo)
{
    struct tlmpi_node_comm *nc = tc->state[TLMPI_TIER_NODE];
    void *reg;

    if (!nc || (nc->sh && node_own_pools(tc, nc) != 0)) {
        return NULL;
    }
    reg = node_persist_reg(tc, nc, c, algo);
    if (!reg) {
        (void)node_pool_ready(tc, nc, c, node_pool_kind(c, algo), 1);
    }
    return reg;
}

static void node_unpersist(void *preg)
{
    tlmpi_ipc_reg_destroy(preg);
}

static void node_cleanup(tlmpi_tier_comm_t *tc)
{
    struct tlmpi_node_comm *nc = tc->state[TLMPI_TIER_NODE];
    int saved = -1;

    if (!nc) {
        return;
    }
    tc->state[TLMPI_TIER_NODE] = NULL;
    if (TLMPI_UNLIKELY(nc->xp->err->set)) {
        node_earlier_timed_out(tc, NULL, nc->xp->err); /* never silently dropped */
    }
    /* Every rank of the comm is here (MPI_Comm_free or MPI_Finalize): once collective kernels ran,
     * one last barrier, after this rank's earlier kernels in stream order, so that no peer still
     * reads or writes this rank's pool when it is freed. Not for the fault site, and bounded like
     * every node wait. (Whether kernels ran is the same on every rank; a setup undone by the plan
     * ran none.) */
    if (tc->ctx && (nc->ran || node_share_ran(nc)) && tlmpi_gpu_enter_device(tc->dev, &saved) == 0) {
        tlmpi_node_xport_t x = nc->xp->x;
        char why[160];

        x.stuck = 0;
        x.late_ns = 0;
        if (node_barrier(tc, nc, &x, "the node tier's last barrier (teardown)", why, sizeof(why)) != 0) {
            tlmpi_debug(COMM, "communicator #%u: %s", tc->id, why);
        }
        tlmpi_gpu_restore_device(saved);
    }
    node_free(nc, tc->dev, 1);
}

#else /* !HAVE_CUDA: the tier does not exist */

#define node_enqueue NULL
#define node_persist NULL
#define node_unpersist NULL

static unsigned node_local_caps(tlmpi_tier_comm_t *tc, unsigned *want_p, char *why, size_t len)
{
    (void)tc, (void)want_p, (void)why, (void)len;
    return 0;
}

static tlmpi_status_t node_setup(tlmpi_tier_comm_t *tc, char *why, size_t len)
{
    (void)tc;
    snprintf(why, len, "built without CUDA");
    return TLMPI_ERR_NOT_FOUND;
}

static tlmpi_status_t node_run(tlmpi_tier_comm_t *tc, const tlmpi_call_t *c, int algo, int *mpi_rc_p)
{
    (void)tc, (void)c, (void)algo, (void)mpi_rc_p;
    return TLMPI_ERR_UNSUPPORTED;
}

static void node_complete(tlmpi_tier_comm_t *tc, const tlmpi_call_t *c, int algo)
{
    (void)tc, (void)c, (void)algo;
}

static void node_cleanup(tlmpi_tier_comm_t *tc)
{
    (void)tc;
}

static void node_describe(const tlmpi_tier_comm_t *tc, char *buf, size_t len)
{
    (void)tc;
    if (len) {
        buf[0] = '\0';
    }
}
#endif

const tlmpi_tier_t tlmpi_tier_node = {
    .name = "node",
    .label = TLMPI_PATH_NODE,
    .device_waits = 1,
    .algos = node_algos,
    .n_algos = A_COUNT,
    .cap = NODE_CAPS,
    .auto_unless = TLMPI_CAP_NODE_SLOW,
    .setup_caps = TLMPI_CAP_NODE_SLOW,
    .local_caps = node_local_caps,
    .setup = node_setup,
    .supports = node_supports,
    .run = node_run,
    .enqueue = node_enqueue,
    .complete = node_complete,
    .persist = node_persist,
    .unpersist = node_unpersist,
    .cleanup = node_cleanup,
    .describe_algo = node_describe_algo,
    .describe = node_describe,
};
