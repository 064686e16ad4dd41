/*
 * devcomm: the host side of the node kernels' NCCL Device API transport (device half:
 * cuda/devcomm.cu), one per communicator whose ranks are all on one node and on distinct GPUs.
 * The kernels run on it exactly as on the ipc transport: base[] are the node ranks' symmetric pools
 * (TLMPI_NODE_HDR_BYTES of barrier flags + the data area), here the LSA addresses of one NCCL
 * window, and mc_base its NVLS multicast address where multicast is allowed and NCCL made one.
 *
 * Setup, collective over the comm (every rank calls tlmpi_devcomm_create; all end alike):
 *   1. whether every rank can attempt it (one PMPI_Allreduce, MIN of {can, multicast allowed}): the
 *      kernels were built with the Device API, the runtime libnccl gives this layout symmetric
 *      memory at all (before 2.28.7 not to one rank: tlmpi_devcomm_nccl_rule) and is exactly the
 *      kernels' version (its structures change in every release), has the entry points, no two ranks
 *      of the comm share a GPU (NCCL refuses duplicate GPUs), NCCL's cuMem and windows are not
 *      switched off, tlmpi's NCCL environment is consistent (TLMPI_NVLS=0), its host memory is
 *      there and its device current. Nobody enters a collective NCCL call unless everyone does;
 *   2. a new NCCL communicator of its own (never the flat tier's: ncclDevCommCreate crashes on a
 *      communicator that already ran a collective), ranks as in the MPI comm, unique id from rank 0
 *      by PMPI_Bcast; the pool from ncclMemAlloc (cuMem: windows cannot be cudaMalloc memory),
 *      zeroed (bounded wait); the host-mapped error record (xport.h); agreed (PMPI_Allreduce);
 *   3. ncclCommWindowRegister(NCCL_WIN_DEFAULT: NCCL_WIN_COLL_SYMMETRIC would make NCCL build its
 *      own devcomm, with multicast where NCCL supports it); agreed;
 *   4. ncclDevCommCreate with no GIN (a devcomm over several nodes needs GIN, which fails without an
 *      RDMA NIC: the node tier serves one node only) and lsaMultimem only where multicast is
 *      allowed (TLMPI_NVLS not 0, NCCL_NVLS_ENABLE not 0, the device reports multicast support,
 *      at least 2 ranks): otherwise no multicast object is ever requested; the window's LSA
 *      addresses; the CTA limit; agreed with the outcome (xport.h).
 * A failure anywhere after step 1 tears down whatever was created (ncclDevCommDestroy, window
 * deregistration, ncclMemFree, ncclCommDestroy, in that order) on every rank. Fault site:
 * devcomm_init (this rank's ncclDevCommCreate fails; the call itself is still made, so that a real
 * NCCL's collective steps stay matched, and what it created is destroyed).
 */
#ifndef TLMPI_DEVCOMM_H
#define TLMPI_DEVCOMM_H

#include "cumemshare.h"
#include "xport.h"
#include <mpi.h>
#include <stddef.h>

typedef struct tlmpi_devcomm {
    tlmpi_xport_t t;                    /* what the node tier reads (first: a tlmpi_devcomm_t * is one) */
    void *nccl;                         /* its own NCCL communicator (an ncclComm_t) */
    void *pool;                         /* ncclMemAlloc: TLMPI_NODE_HDR_BYTES + data bytes */
    void *win;                          /* the pool's window (an ncclWindow_t) */
    void *devcomm;                      /* host copy of the ncclDevComm (tlmpi_cuda_devcomm_sizes bytes) */
    int created;                        /* ncclDevCommCreate filled devcomm */
    int version;                        /* NCCL_VERSION_CODE (runtime = kernels' headers) */
    int gin_contexts;                   /* GIN contexts granted (a GIN devcomm; else 0) */
    int gin_proxy;                      /* agreed: 1 if every rank's GIN contexts are NCCL's CPU
                                           proxy type, 0 if any is device-initiated (GDAKI) */
    int gin_world;                      /* a GIN devcomm whose LSA team is this rank alone: the node's
                                           pools mapped through cumemshare (maps), GIN peers in the
                                           world team (kernels.h: tlmpi_rail_xport_t.gin_world) */
    tlmpi_cumem_map_t maps[TLMPI_NODE_MAX_RANKS]; /* the node peers' pools (gin_world) */
    char mc_why[96];                    /* multicast: "" when NVLS, else why it is emulated */
} tlmpi_devcomm_t;

/* Local, step 1: 1 if this rank can attempt an NCCL devcomm (kernels built with the Device API, the
 * runtime NCCL gives this layout symmetric memory (tlmpi_devcomm_nccl_rule), is the kernels' version
 * and has the entry points, no shared GPU, cuMem and windows on, a consistent NCCL environment),
 * else 0 and why. node_ranks: the comm's size, all on one node (the node transport), or 0 for a GIN
 * devcomm over several nodes (GIN's own requirement, 2.28.9+, then covers the rule). */
int tlmpi_devcomm_can(int shared_gpu, int node_ranks, char *why, size_t len);

/* NCCL's rule for the symmetric memory that ncclDevCommCreate needs, by runtime version (an
 * NCCL_VERSION_CODE): 2.28.0..2.28.6 give it only to a communicator of one node with at least 2
 * ranks on it (v2.28.3-1 src/init.cc:1331 nNodes == 1, src/transport.cc:77 localRanks == 1 -> no
 * direct P2P), 2.28.7+ to any (v2.28.7-1 src/init.cc:1376). 1 where a communicator of `node_ranks`
 * ranks, all on one node, may have it, else 0 and why. Several nodes need GIN, 2.28.9+, so never
 * meet the rule's versions (tlmpi_devcomm_can's caller). Other conditions (P2P between the GPUs,
 * cuMem, windows on) are not judged here. */
int tlmpi_devcomm_nccl_rule(int version, int node_ranks, char *why, size_t len);

/* "2.28.9" from an NCCL_VERSION_CODE (either of NCCL's encodings) */
void tlmpi_devcomm_version_string(int code, char *buf, size_t len);

/* A devcomm for the fused 2D kernels' GIN rail (cuda/rail_gin.cuh) instead of the node transport:
 * the comm spans several nodes, the LSA team is this rank's node (local_rank of local_size), the
 * requirements ask for `signals` GIN signals and no multicast, the fault site is gin_init, and the
 * devcomm must grant the same context count above 0 on every rank. world (the same on every rank):
 * each rank is an NCCL host of its own (NCCL_HOSTID differs on every rank: fake nodes whose ranks
 * share a GPU, which NCCL refuses within one host, v2.28.9-1 src/init.cc:903), so the GPU may be
 * shared, NCCL's LSA team must be the rank alone, and the node's pools (ranks rank / local_size *
 * local_size ..) are mapped through cumemshare.h after ncclDevCommCreate; gpu_sharers: ranks of the
 * comm on this rank's GPU (the CTA limit). */
typedef struct {
    int signals;
    int local_rank, local_size;
    int world;
    int gpu_sharers;
} tlmpi_devcomm_gin_t;

/* Collective over comm (gin NULL: size <= TLMPI_NODE_MAX_RANKS ranks on one node; else see above;
 * every rank calls it). dev is
 * this rank's device, shared_gpu whether some rank of the comm may share a GPU with another (the
 * same on every rank), stream the comm's stream (the pool is cleared on it). Returns the transport,
 * or NULL on every rank alike with this rank's reason in why; *attempted_p is 1 when every rank
 * could attempt it (step 1) and it failed later (a lost capability: the caller warns), 0 when it
 * was unavailable somewhere (nothing NCCL was called). The caller's device is restored. */
tlmpi_devcomm_t *tlmpi_devcomm_create(MPI_Comm comm, int rank, int size, int dev, int shared_gpu, size_t data_bytes,
                                      void *stream, const tlmpi_devcomm_gin_t *gin, int *attempted_p, char *why, size_t len);
/* Tear down in NCCL's order. Not collective: the caller makes sure that no peer still reads or
 * writes this rank's pool (node.c: a last device barrier). */
void tlmpi_devcomm_destroy(tlmpi_devcomm_t *dc);

#endif
