/*
 * devcomm: the NCCL Device API transport's host side (see devcomm.h): availability, the agreed
 * creation of its own NCCL communicator, pool, window and devcomm, the LSA (and multicast)
 * addresses, teardown in NCCL's order.
 */
#include "config.h"
#include "devcomm.h"
#include "checks.h"
#include "cudawrap.h"
#include "env.h"
#include "fault.h"
#include "log.h"
#include "ncclwrap.h"
#include "stream.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void tlmpi_devcomm_version_string(int code, char *buf, size_t len)
{
    /* NCCL_VERSION(X,Y,Z): X*10000 + Y*100 + Z from 2.9 on, X*1000 + Y*100 + Z before */
    if (code >= 10000) {
        snprintf(buf, len, "%d.%d.%d", code / 10000, code % 10000 / 100, code % 100);
    } else {
        snprintf(buf, len, "%d.%d.%d", code / 1000, code % 1000 / 100, code % 100);
    }
}

/* NCCL_VERSION(2,28,0): the first Device API; NCCL_VERSION(2,28,7): symmetric memory without the
 * one-node, two-rank condition */
#define NCCL_2_28_0 22800
#define NCCL_2_28_7 22807

/* devcomm.h. Before 2.28.7: comm->symmetricSupport = isAllDirectP2p && nNodes == 1 && ... (v2.28.3-1
 * src/init.cc:1331), and ncclTransportCheckP2pType sets isAllDirectP2p false where localRanks == 1
 * (src/transport.cc:77); from 2.28.7 on: isAllCudaP2p && ... (v2.28.7-1 src/init.cc:1376), true
 * with one local rank. Older versions have no Device API (refused elsewhere). */
int tlmpi_devcomm_nccl_rule(int version, int node_ranks, char *why, size_t len)
{
    char v[16];

    if (version < NCCL_2_28_0 || version >= NCCL_2_28_7 || node_ranks >= 2) {
        return 1;
    }
    tlmpi_devcomm_version_string(version, v, sizeof(v));
    snprintf(why, len, "NCCL %s gives the Device API (symmetric memory) only to one node of 2+ ranks; NCCL 2.28.7+ "
             "also to 1-rank communicators", v);
    return 0;
}

#if defined(HAVE_CUDA) && defined(HAVE_NCCL)
#include <cuda_runtime_api.h>

/* Step 1, local (devcomm.h). The first reason is logged once per process (info), and NCCL's
 * version rule once more where it is not that first one (it depends on the comm's size). */
int tlmpi_devcomm_can(int shared_gpu, int node_ranks, char *why, size_t len)
{
    static int said, said_rule;
    int built = tlmpi_cuda_devcomm_version(), runtime = 0, rule = 0, first;
    const char *v, *missing = "";
    char b[16], r[16];

    why[0] = '\0';
    if (!built) {
        snprintf(why, len, "the kernels were built without the NCCL Device API (no nccl_device.h)");
    } else if (shared_gpu) {
        snprintf(why, len, "ranks of the communicator share a GPU (NCCL refuses duplicate GPUs)");
    } else if (!tlmpi_nccl_load(&missing)) {
        snprintf(why, len, "NCCL unavailable: %s", missing);
    } else if (node_ranks > 0 && (runtime = tlmpi_nccl_runtime_version()) &&
               !tlmpi_devcomm_nccl_rule(runtime, node_ranks, why, len)) {
        /* before the version match: kernels built for this NCCL would not help this comm either */
        rule = 1;
    } else if ((runtime = tlmpi_nccl_runtime_version()) != built) {
        tlmpi_devcomm_version_string(built, b, sizeof(b));
        tlmpi_devcomm_version_string(runtime, r, sizeof(r));
        snprintf(why, len, "kernels built against NCCL %s, runtime NCCL %s", b, r);
    } else if (!tlmpi_nccl_have_devcomm_api(&missing)) {
        snprintf(why, len, "libnccl lacks %s", missing);
    } else if ((v = getenv("NCCL_CUMEM_ENABLE")) && !strcmp(v, "0")) {
        snprintf(why, len, "NCCL_CUMEM_ENABLE=0 (windows need cuMem memory)");
    } else if ((v = getenv("NCCL_WIN_ENABLE")) && !strcmp(v, "0")) {
        snprintf(why, len, "NCCL_WIN_ENABLE=0");
    } else if (!tlmpi_nccl_env_ready()) {
        snprintf(why, len, "TLMPI_NVLS=0 conflicts with NCCL_NVLS_ENABLE=%s", getenv("NCCL_NVLS_ENABLE"));
    } else {
        return 1;
    }
    first = !__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED);
    if (rule && !__atomic_exchange_n(&said_rule, 1, __ATOMIC_RELAXED)) {
        first = 1;
    }
    if (first) {
        tlmpi_info(NCCL, "devcomm transport unavailable: %s", why);
    }
    return 0;
}

static const char *nccl_err(ncclResult_t r)
{
    return tlmpi_nccl.ncclGetErrorString(r);
}

static void devcomm_free(tlmpi_devcomm_t *dc)
{
    ncclResult_t r;

    tlmpi_cumem_unshare(dc->maps, TLMPI_NODE_MAX_RANKS); /* the peers' pools, before NCCL's teardown */
    if (dc->created && (r = tlmpi_nccl.ncclDevCommDestroy((ncclComm_t)dc->nccl, dc->devcomm)) != ncclSuccess) {
        tlmpi_info(NCCL, "devcomm transport: ncclDevCommDestroy: %s", nccl_err(r));
    }
    dc->created = 0;
    if (dc->win && (r = tlmpi_nccl.ncclCommWindowDeregister((ncclComm_t)dc->nccl, dc->win)) != ncclSuccess) {
        tlmpi_info(NCCL, "devcomm transport: ncclCommWindowDeregister: %s", nccl_err(r));
    }
    dc->win = NULL;
    if (dc->pool && (r = tlmpi_nccl.ncclMemFree(dc->pool)) != ncclSuccess) {
        tlmpi_info(NCCL, "devcomm transport: ncclMemFree: %s", nccl_err(r));
    }
    dc->pool = NULL;
    if (dc->nccl && (r = tlmpi_nccl.ncclCommDestroy((ncclComm_t)dc->nccl)) != ncclSuccess) {
        tlmpi_info(NCCL, "devcomm transport: ncclCommDestroy: %s", nccl_err(r));
    }
    dc->nccl = NULL;
    tlmpi_xport_err_destroy(&dc->t);
    (void)cudaGetLastError();
    free(dc->devcomm);
    free(dc);
}

/* After "Communicator does not support symmetric memory!" from ncclDevCommCreate: what NCCL
 * `version` still requires once tlmpi_devcomm_nccl_rule passed (v2.28.3-1 src/init.cc:1331,
 * v2.28.7-1 src/init.cc:1376; windows are on: tlmpi_devcomm_can). cuMem: NCCL_CUMEM_ENABLE's auto
 * default turns it off where the device reports no GPUDirect RDMA with VMM (some VMs, hosts
 * without an RDMA NIC), so =1 is advice only where the variable is unset. */
static void symmetric_hint(int version, char *buf, size_t len)
{
    char v[16];

    tlmpi_devcomm_version_string(version, v, sizeof(v));
    snprintf(buf, len, "; NCCL %s needs %s, cuMem on%s", v,
             version < NCCL_2_28_7 ? "2+ ranks on one node, direct P2P between their GPUs"
                                   : "CUDA P2P between the GPUs on a node",
             getenv("NCCL_CUMEM_ENABLE") ? "" : " (NCCL_CUMEM_ENABLE=1 if its default left it off)");
}

/* Step 2, local part: the pool (zeroed, waited for) and the error record; 0 or -1 with why. */
static int devcomm_pool(tlmpi_devcomm_t *dc, size_t total, void *stream, char *why, size_t len)
{
    tlmpi_wait_who_t who = { MPI_COMM_NULL, 0, TLMPI_COLL_ALLREDUCE, "node (setup)" };
    ncclResult_t r;
    cudaError_t e;

    if ((r = tlmpi_nccl.ncclMemAlloc(&dc->pool, total)) != ncclSuccess) {
        dc->pool = NULL;
        snprintf(why, len, "ncclMemAlloc of the %zu-byte pool: %s", total, nccl_err(r));
        return -1;
    }
    /* the barrier flags start at 0, before any peer can store into them */
    if ((e = cudaMemsetAsync(dc->pool, 0, total, (cudaStream_t)stream)) != cudaSuccess ||
        (e = (cudaError_t)tlmpi_gpu_sync(stream, &who, "the devcomm pool to clear")) != cudaSuccess) {
        snprintf(why, len, "cannot clear the devcomm pool: %s", cudaGetErrorString(e));
        (void)cudaGetLastError();
        return -1;
    }
    return tlmpi_xport_err_create(&dc->t, why, len);
}

/* Step 4, local part after ncclDevCommCreate: the window's addresses, multicast, the CTA limit. */
static int devcomm_pointers(tlmpi_devcomm_t *dc, int rank, int size, int want_mc, char *why, size_t len)
{
    int lsa_rank = -1, lsa_size = 0, e;

    tlmpi_cuda_devcomm_lsa(dc->devcomm, &lsa_rank, &lsa_size);
    if (lsa_size != size || lsa_rank != rank) {
        snprintf(why, len, "the devcomm's LSA team is rank %d of %d, not rank %d of the communicator's %d (not all "
                 "ranks reach each other's memory)", lsa_rank, lsa_size, rank, size);
        return -1;
    }
    if ((e = tlmpi_cuda_devcomm_pointers(dc->devcomm, dc->win, lsa_size, want_mc, &dc->t.x)) != 0) {
        snprintf(why, len, "the window's LSA addresses: %s", cudaGetErrorString((cudaError_t)e));
        (void)cudaGetLastError();
        return -1;
    }
    if (want_mc && !dc->t.x.mc_base) {
        snprintf(dc->mc_why, sizeof(dc->mc_why), "the devcomm has no multicast address");
    }
    if ((dc->t.max_ctas = tlmpi_xport_max_ctas(dc->t.dev, dc->t.ranks_on_gpu)) <= 0) {
        snprintf(why, len, "no node kernel can run on device %d (occupancy query failed)", dc->t.dev);
        return -1;
    }
    return 0;
}

/* A world GIN devcomm (devcomm.h: gin->world), collective over comm after ncclDevCommCreate succeeded
 * everywhere: the node's pools mapped into each other (its ranks: one PMPI_Comm_split), base[] by local
 * index, the own one the window's address devcomm_pointers gave. 0, or -1 on every rank with why. */
static int devcomm_node_share(tlmpi_devcomm_t *dc, MPI_Comm comm, int rank, const tlmpi_devcomm_gin_t *gin, char *why,
                              size_t len)
{
    void *base[TLMPI_NODE_MAX_RANKS], *own = dc->t.x.base[0];
    MPI_Comm node = MPI_COMM_NULL;
    int j, e;

    if (PMPI_Comm_split(comm, rank / gin->local_size, gin->local_rank, &node) != MPI_SUCCESS) {
        snprintf(why, len, "PMPI_Comm_split into the fake nodes failed");
        return -1; /* the same on every rank (MPI errors are fatal by default) */
    }
    e = tlmpi_cumem_share(node, gin->local_rank, gin->local_size, dc->pool, dc->t.dev, base, dc->maps, why, len);
    PMPI_Comm_free(&node);
    if (e != 0) {
        return -1;
    }
    for (j = 0; j < gin->local_size; j++) {
        dc->t.x.base[j] = j == gin->local_rank ? own : base[j];
    }
    dc->gin_world = 1;
    return 0;
}

tlmpi_devcomm_t *tlmpi_devcomm_create(MPI_Comm comm, int rank, int size, int dev, int shared_gpu, size_t data_bytes,
                                      void *stream, const tlmpi_devcomm_gin_t *gin, int *attempted_p, char *why, size_t len)
{
    struct {
        ncclUniqueId id;
        int ok;
    } boot;
    tlmpi_devcomm_t *dc = NULL;
    size_t total = TLMPI_NODE_HDR_BYTES + data_bytes, dc_size, reqs_size = 0;
    void *reqs = NULL;
    ncclComm_t nccl = NULL;
    ncclResult_t r;
    char mc_why[96] = "", hint[192] = "";
    const char *last = "";
    int v[2], ok, saved = -1, entered = 0, want_mc;
    /* the LSA team the kernels need: the whole comm (node transport) or this rank's node (GIN); a
     * world GIN devcomm's is the rank alone (its node's pools come from cumemshare) */
    const int lsa_rank = gin ? gin->local_rank : rank, lsa_size = gin ? gin->local_size : size;
    const int world = gin && gin->world, nccl_lsa_rank = world ? 0 : lsa_rank, nccl_lsa_size = world ? 1 : lsa_size;
    const int most = gin ? TLMPI_NODE_MAX_RANKS * TLMPI_RAIL_MAX_NODES : TLMPI_NODE_MAX_RANKS;

    *attempted_p = 0;
    if (size < 1 || size > most || rank < 0 || rank >= size || lsa_size < 1 || lsa_size > TLMPI_NODE_MAX_RANKS) {
        snprintf(why, len, "%d ranks (%d per node; the kernels serve 1..%d, at most %d per node)", size, lsa_size, most,
                 TLMPI_NODE_MAX_RANKS);
        return NULL; /* the same on every rank: no collective was entered */
    }
    /* 1: can every rank attempt it (here also: its memory and its device current), and may it ask
     * for multicast (never with GIN: the fused kernels have no NVLS form)? */
    ok = tlmpi_devcomm_can(shared_gpu && !world, gin ? 0 : size, why, len);
    if (ok && gin) {
        const char *ge = getenv("NCCL_GIN_ENABLE");
        char b[16];

        if (!tlmpi_cuda_devcomm_gin_built()) {
            /* the headers' version is the runtime's (tlmpi_devcomm_can), so this also covers NCCL's
             * rule (tlmpi_devcomm_nccl_rule: before 2.28.7 no devcomm spans several nodes at all) */
            tlmpi_devcomm_version_string(tlmpi_cuda_devcomm_version(), b, sizeof(b));
            snprintf(why, len, "the kernels were built against NCCL %s headers, without GIN (2.28.9+)", b);
            ok = 0;
        } else if (ge && !strcmp(ge, "0")) {
            snprintf(why, len, "NCCL_GIN_ENABLE=0");
            ok = 0;
        }
    }
    want_mc = !gin && size >= 2 && tlmpi_xport_multicast_allowed(dev, mc_why, sizeof(mc_why));
    if (gin) {
        snprintf(mc_why, sizeof(mc_why), "the fused 2D kernels emulate multicast");
    } else if (size < 2) {
        snprintf(mc_why, sizeof(mc_why), "one rank: NVLS needs two GPUs");
    }
    if (ok) {
        dc_size = tlmpi_cuda_devcomm_sizes(&reqs_size);
        dc = calloc(1, sizeof(*dc));
        reqs = calloc(1, reqs_size ? reqs_size : 1);
        if (!dc || !reqs || !(dc->devcomm = calloc(1, dc_size ? dc_size : 1))) {
            ok = 0;
            snprintf(why, len, "out of host memory");
        } else if (tlmpi_gpu_enter_device(dev, &saved) != 0) {
            ok = 0;
            snprintf(why, len, "cannot make device %d current", dev);
        } else {
            entered = 1;
            dc->t.dev = dev;
            dc->t.ranks_on_gpu = world && gin->gpu_sharers > 1 ? gin->gpu_sharers : 1;
        }
    }
    v[0] = ok;
    v[1] = ok && want_mc;
    if (PMPI_Allreduce(MPI_IN_PLACE, v, 2, MPI_INT, MPI_MIN, comm) != MPI_SUCCESS) {
        snprintf(why, len, "PMPI_Allreduce of the devcomm transport's availability failed");
        goto fail;
    }
    if (!v[0]) {
        if (ok) {
            snprintf(why, len, "the devcomm transport is unavailable on another rank");
        }
        goto fail;
    }
    if (want_mc && !v[1]) {
        snprintf(mc_why, sizeof(mc_why), "another rank cannot use multicast");
    }
    want_mc = v[1]; /* the same requirements on every rank */
    snprintf(dc->mc_why, sizeof(dc->mc_why), "%s", mc_why);
    *attempted_p = 1;

    /* 2: its own NCCL communicator (ranks as in comm; the id's validity is the same on every rank
     * through the broadcast), the pool, the error record */
    memset(&boot, 0, sizeof(boot));
    if (rank == 0) {
        boot.ok = (r = tlmpi_nccl.ncclGetUniqueId(&boot.id)) == ncclSuccess;
    }
    if (PMPI_Bcast(&boot, (int)sizeof(boot), MPI_BYTE, 0, comm) != MPI_SUCCESS || !boot.ok) {
        snprintf(why, len, "%s", boot.ok ? "PMPI_Bcast of the NCCL unique id failed" : "ncclGetUniqueId failed on rank 0");
        goto fail;
    }
    if ((r = tlmpi_nccl.ncclCommInitRank(&nccl, size, boot.id, rank)) != ncclSuccess) {
        ok = 0;
        snprintf(why, len, "ncclCommInitRank: %s (%s)", nccl_err(r), tlmpi_nccl.ncclGetLastError(NULL));
    } else {
        dc->nccl = nccl;
        dc->version = tlmpi_nccl_runtime_version();
        ok = devcomm_pool(dc, total, stream, why, len) == 0;
    }
    if (tlmpi_xport_agree_step(comm, ok, "the devcomm transport's NCCL communicator or pool", why, len) != 0) {
        goto fail;
    }
    /* 3: the window (collective) */
    r = tlmpi_nccl.ncclCommWindowRegister(nccl, dc->pool, total, &dc->win, 0 /* NCCL_WIN_DEFAULT */);
    ok = r == ncclSuccess && dc->win;
    if (!ok) {
        snprintf(why, len, "ncclCommWindowRegister of the %zu-byte pool: %s (%s)", total, nccl_err(r),
                 tlmpi_nccl.ncclGetLastError(nccl));
        dc->win = NULL;
    }
    if (tlmpi_xport_agree_step(comm, ok, "the devcomm pool's window registration", why, len) != 0) {
        goto fail;
    }
    /* 4: the devcomm (collective; multicast only where allowed), then its addresses */
    if (gin) {
        tlmpi_cuda_devcomm_gin_requirements(reqs, gin->signals);
    } else {
        tlmpi_cuda_devcomm_requirements(reqs, want_mc);
    }
    r = tlmpi_nccl.ncclDevCommCreate(nccl, reqs, dc->devcomm);
    dc->created = r == ncclSuccess;
    ok = 0;
    if (!dc->created) {
        last = tlmpi_nccl.ncclGetLastError(nccl);
        last = last ? last : "";
        if (strstr(last, "symmetric memory")) {
            symmetric_hint(dc->version, hint, sizeof(hint));
        }
    }
    if (gin ? tlmpi_fault_hit(GIN_INIT) : tlmpi_fault_hit(DEVCOMM_INIT)) {
        /* after the call, whatever it returned: the peers' collective steps inside NCCL stay matched */
        snprintf(why, len, "ncclDevCommCreate%s failed (injected: TLMPI_FAULT=%s)",
                 gin ? " with GIN" : want_mc ? " (lsaMultimem)" : "", gin ? "gin_init" : "devcomm_init");
    } else if (!dc->created && gin) {
        snprintf(why, len, "ncclDevCommCreate with %d GIN signals: %s (%s)%s", gin->signals, nccl_err(r), last, hint);
    } else if (!dc->created) {
        snprintf(why, len, "ncclDevCommCreate%s: %s (%s)%s", want_mc ? " (lsaMultimem)" : "", nccl_err(r), last, hint);
    } else if (gin && (dc->gin_contexts = tlmpi_cuda_devcomm_gin_contexts(dc->devcomm)) <= 0) {
        snprintf(why, len, "ncclDevCommCreate granted no GIN context");
    } else {
        ok = devcomm_pointers(dc, nccl_lsa_rank, nccl_lsa_size, want_mc, why, len) == 0;
    }
    (void)cudaGetLastError();
    if (world) {
        /* the node's pools through cuMem descriptors (collective: agreed first) */
        if (tlmpi_xport_agree_step(comm, ok, "the GIN devcomm", why, len) != 0) {
            goto fail;
        }
        ok = devcomm_node_share(dc, comm, rank, gin, why, len) == 0;
    }
    if (tlmpi_xport_agree(comm, rank, size, ok, data_bytes, &dc->t, "could not create the devcomm", why, len) != 0) {
        goto fail;
    }
    if (gin) {
        /* the kernels see the node's ranks (the LSA team), and every rank the same context count;
         * the GIN type only picks a default (rail groups), so the ranks take the minimum */
        int c[3] = { dc->gin_contexts, -dc->gin_contexts, tlmpi_cuda_devcomm_gin_proxy(dc->devcomm) > 0 };

        dc->t.x.rank = lsa_rank;
        dc->t.x.nranks = lsa_size;
        if (PMPI_Allreduce(MPI_IN_PLACE, c, 3, MPI_INT, MPI_MIN, comm) != MPI_SUCCESS || c[0] != -c[1]) {
            snprintf(why, len, "the ranks were granted different GIN context counts (%d..%d)", c[0], -c[1]);
            goto fail;
        }
        dc->gin_proxy = c[2];
    }
    tlmpi_node_xport_data_after_header(&dc->t.x); /* every pool one window allocation: header, then data */
    free(reqs);
    tlmpi_gpu_restore_device(saved);
    {
        char vs[16];

        tlmpi_devcomm_version_string(dc->version, vs, sizeof(vs));
        tlmpi_info(NCCL, "devcomm transport: %d ranks on NCCL %s, pool %zu bytes, multicast %s%s%s%s", size, vs, total,
                   dc->t.x.mc_base ? "nvls" : "emulated", dc->t.x.mc_base ? "" : " (",
                   dc->t.x.mc_base ? "" : dc->mc_why, dc->t.x.mc_base ? "" : ")");
    }
    return dc;
fail:
    if (*attempted_p) {
        tlmpi_info(NCCL, "devcomm transport not created: %s", why);
    }
    free(reqs);
    if (dc) {
        if (entered) {
            devcomm_free(dc); /* NCCL's teardown order, on every rank alike (all local calls) */
        } else {
            free(dc->devcomm);
            free(dc);
        }
    }
    if (entered) {
        tlmpi_gpu_restore_device(saved);
    }
    return NULL;
}

void tlmpi_devcomm_destroy(tlmpi_devcomm_t *dc)
{
    int saved = -1;

    if (!dc) {
        return;
    }
    if (tlmpi_gpu_enter_device(dc->t.dev, &saved) != 0) {
        saved = -1;
    }
    devcomm_free(dc);
    tlmpi_gpu_restore_device(saved);
}

#else /* no CUDA or no NCCL headers */

tlmpi_devcomm_t *tlmpi_devcomm_create(MPI_Comm comm, int rank, int size, int dev, int shared_gpu, size_t data_bytes,
                                      void *stream, const tlmpi_devcomm_gin_t *gin, int *attempted_p, char *why, size_t len)
{
    (void)comm, (void)rank, (void)size, (void)dev, (void)shared_gpu, (void)data_bytes, (void)stream, (void)gin;
    *attempted_p = 0;
    snprintf(why, len, "built without CUDA or NCCL headers");
    return NULL;
}

void tlmpi_devcomm_destroy(tlmpi_devcomm_t *dc)
{
    (void)dc;
}
#endif
