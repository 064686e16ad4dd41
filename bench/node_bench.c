/*
 * node_bench: tlmpi's node tier (its own kernels among the ranks of one node) in one run per rank
 * count; bench/node-bench.sh runs it with 2, 4 and 8 ranks on one GPU under MPS.
 *
 *  1. Floor and 8-byte latency (section "lat"). Interleaved in every repetition (order reversed on
 *     odd ones), each item `iters` back-to-back blocking calls after a barrier, per-call mean:
 *       floor      the least any one-shot node collective can cost: one TLMPI_NODE_BARRIER kernel
 *                  (1 CTA) over the same transport (a cudaMalloc pool of TLMPI_NODE_HDR_BYTES + 64
 *                  KiB per rank, zeroed, shared with cudaIpcGetMemHandle / PMPI_Allgather /
 *                  cudaIpcOpenMemHandle), launched with tlmpi_cuda_node_run on a non-blocking stream
 *                  and waited for by polling cudaStreamQuery (tlmpi spins too);
 *       empty      the same kernel with a one-rank descriptor (its own pool): an empty kernel plus a
 *                  barrier with itself, i.e. launch + wait alone;
 *       nccl-1     raw NCCL (dlopen'ed like tlmpi does) on a one-rank communicator of its own per
 *                  rank (all ranks at once), ncclAllReduce of 8 bytes + the same polling wait;
 *       kernel     the node kernels of an 8-byte call (1 CTA, float sum, g_s -> g_r) launched on the
 *                  floor's transport the floor's way, without MPI, plan or tier: the barrier kinds
 *                  (allreduce one-shot, allgather push, reduce_scatter_block pull) and the LL kinds
 *                  (no barrier: the data travels with the flags; what tlmpi's auto runs at 8 bytes).
 *                  Their difference to the floor is the kernels' data phase, and node minus the
 *                  kernel tlmpi ran is tlmpi's host path;
 *       node/staging  MPI_Allreduce, MPI_Allgather, MPI_Reduce_scatter_block of an 8-byte message
 *                  (2 floats: allreduce count, allgather sendcount, reduce_scatter recvcount)
 *                  through tlmpi with TLMPI_TIER=node, and with TLMPI_TIER=staging.
 *     Reported: median over the repetitions of the mean over ranks (and of the slowest rank), and
 *     for every node row the median paired difference to the floor of the same repetition (95% CI).
 *  2. Sweep (section "sweep"): the three collectives at every size of -s (bytes = the per-rank
 *     message as above: OSU's and tlmpi's counters' convention), TLMPI_TIER=node (its own choice
 *     of algorithm) against TLMPI_TIER=staging, round robin per repetition; the path and node
 *     algorithm that served (tlmpi's counters); validated (fresh small integers, poisoned output,
 *     exact host reference) up to -V bytes.
 *  3. Large-message efficiency (section "eff"): at every size of -e, each node algorithm forced
 *     by a table (allgather push / pull, reduce_scatter_block, allreduce one-shot / two-shot). The
 *     HBM bytes each algorithm must move per rank (from the kernels' headers, cuda/node_*.cu; B =
 *     the per-rank message, n ranks, out of place):
 *        allgather push      read nB        write (2n-1)B   = (3n-1)B
 *        allgather pull      read nB        write (n+1)B    = (2n+1)B
 *        reduce_scatter      read (2n-1)B   write nB        = (3n-1)B   (B: the result block)
 *        allreduce one-shot  read (n+1)B    write 2B        = (n+3)B    (B: the whole vector)
 *        allreduce two-shot  read B+2(n-1)B/n write the same = 2B + 4(n-1)B/n
 *     times n (all ranks share the GPU's HBM), divided by the median time, as a fraction of the
 *     device-to-device cudaMemcpyAsync rate measured in the same run (bytes read + written), both
 *     with rank 0 copying alone and with every rank copying at once; the ratio uses the higher.
 *  4. Forms (section "form", only when -S names it): the non-blocking and persistent forms against
 *     the blocking call and the floors (see bench_form below for every definition).
 *  5. Stream-ordered calls and CUDA graphs (section "graph", only when -S names it): K enqueued
 *     calls on one stream and the same K calls captured into a graph and replayed, against the
 *     eager and graph floors of the same run and the blocking call (see bench_graph below).
 * Rank 0 prints Markdown tables; -o FILE appends CSV rows (header when the file is empty):
 *   section,nranks,coll,mode,algo,path,bytes,iters,reps,median_us,slowest_us,paired_us,paired_lo_us,
 *   paired_hi_us,hbm_bytes,gbps,ratio,valid,generation
 * generation: tlmpi-<version>/<form>/<mpi>/np=<n>/mps=<on|off>/pool=<TLMPI_NODE_POOL>/cc=<TLMPI_CONCURRENT_COLLS,
 * auto when unset or 0>/ctas=<a kernel's CTAs where another of the process may be in flight>:<a
 * blocking call's kernel alone on the GPU> (from the plan's line; absent where it names none)/barrier=<gpu|sys>
 * (the scope of the node kernels' barriers, from the plan's line; the floor and kernel-alone rows use the
 * same; absent without tlmpi_comm_describe), then in
 * sections graph and sweep (node rows) /shape=<columns>:<CTAs> of the node kernel the row ran (rank 0's,
 * tlmpi_get_node_shape; "mixed" if it changed between repetitions), the form being
 * blocking, nonblocking, persistent, or for the floors sync (a kernel + wait each) and eager (K
 * kernels back to back, one wait); section graph: <form>.<usage mode>.<what ran> (bench_graph).
 * Bookkeeping collectives use PMPI_*, so they neither go through tlmpi nor count in its counters.
 * Exit 77 (--as-test) or 0 without a GPU.
 */
#include "config.h"

#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime_api.h>
#include <mpi.h>
#ifdef HAVE_NCCL
#include <nccl.h>
#endif

#include "bench_stats.h"
#include "kernels.h"
#include "types.h"
#include "tlmpi.h"

#define MAX_SIZES 32
#define MAX_REPS 256

enum { C_AR, C_AG, C_RSB, C_N };
static const char *const coll_names[C_N] = { "allreduce", "allgather", "reduce_scatter_block" };
static const tlmpi_coll_t coll_ids[C_N] = { TLMPI_COLL_ALLREDUCE, TLMPI_COLL_ALLGATHER, TLMPI_COLL_REDUCE_SCATTER_BLOCK };
static const char *const table_vars[C_N] = { "ALLREDUCE_TIERS", "ALLGATHER_TIERS", "REDUCE_SCATTER_BLOCK_TIERS" };

static int g_rank, g_size;
static MPI_Comm g_comm;
static cudaStream_t g_stream;
static FILE *g_csv;
static char *g_s, *g_r; /* device send / receive buffers (max size x n each) */
static float *g_h;      /* host scratch */
static size_t g_maxb;

static struct {
    size_t sizes[MAX_SIZES], eff[MAX_SIZES];
    int nsizes, neff, lat_reps, lat_iters, stg_iters, reps, eff_reps, as_test, do_lat, do_sweep, do_eff, do_form, do_graph;
    int do_persist, do_reg, do_sib;
    double target_s;
    size_t validate_max, large;
    const char *csv;
} o;

typedef tlmpi_status_t (*algo_stats_fn)(tlmpi_coll_t, tlmpi_path_t, const char *, tlmpi_stat_t *);
typedef tlmpi_status_t (*describe_fn)(MPI_Comm, char *, size_t);
static algo_stats_fn g_algo_stats;
static describe_fn g_describe;
static int P_NODE = -1, g_npaths;
#define N_NODE_ALGOS 6
static const char *const node_algos[N_NODE_ALGOS] = { "push", "pull", "oneshot", "twoshot", "ll", "direct" }; /* src/tier/node.c's names */

#define CK(_call)                                                                                     \
    do {                                                                                              \
        cudaError_t e_ = (cudaError_t)(_call);                                                        \
        if (e_ != cudaSuccess) {                                                                      \
            fprintf(stderr, "node_bench[%d]: %s: %s (%s:%d)\n", g_rank, #_call, cudaGetErrorString(e_),  \
                    __FILE__, __LINE__);                                                              \
            PMPI_Abort(MPI_COMM_WORLD, 2);                                                            \
        }                                                                                             \
    } while (0)

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double median(const double *v, int n)
{
    double t[MAX_REPS];
    memcpy(t, v, (size_t)n * sizeof *t);
    qsort(t, (size_t)n, sizeof *t, bench_cmp_double);
    return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

/* median and 95% CI of v (n values) */
static void median_ci(const double *v, int n, double *med, double *lo, double *hi)
{
    double t[MAX_REPS];
    memcpy(t, v, (size_t)n * sizeof *t);
    qsort(t, (size_t)n, sizeof *t, bench_cmp_double);
    *med = n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
    bench_median_ci(t, n, lo, hi);
}

/* the device wait tlmpi uses in spirit: spin on the stream */
static void spin_wait(void)
{
    cudaError_t e;
    while ((e = cudaStreamQuery(g_stream)) == cudaErrorNotReady) {
    }
    CK(e);
}

static const char *g_row_form = "blocking"; /* the form named in the generation of the next csv_row */
static const char *g_row_shape = "";        /* the node kernel's columns:CTAs the row ran ("": not said) */
static tlmpi_status_t (*g_node_shape)(tlmpi_form_t, int *, int *); /* tlmpi_get_node_shape, where the library has it */
static char g_gen_base[256];                /* MPI, ranks, MPS, pool: the rest of the generation */
static int g_gpu_scope;                     /* the plan's node barriers at GPU scope: the floor's too */

/* generation: tlmpi-<version>/<form>/<mpi>/np=<n>/mps=<on|off>/pool=<TLMPI_NODE_POOL>/cc=<TLMPI_CONCURRENT_COLLS> */
static void gen_setup(void)
{
    char lib[MPI_MAX_LIBRARY_VERSION_STRING], mpi[64];
    int len = 0;
    const char *pool = getenv("TLMPI_NODE_POOL"), *cc = getenv("TLMPI_CONCURRENT_COLLS");
    PMPI_Get_library_version(lib, &len);
    if (!strncmp(lib, "Open MPI v", 10)) snprintf(mpi, sizeof mpi, "ompi-%.*s", (int)strcspn(lib + 10, ", \n"), lib + 10);
    else if (!strncmp(lib, "MPICH Version:", 14)) {
        const char *v = lib + 14 + strspn(lib + 14, " \t");
        snprintf(mpi, sizeof mpi, "mpich-%.*s", (int)strcspn(v, " \t\n"), v);
    } else snprintf(mpi, sizeof mpi, "mpi-%.*s", (int)strcspn(lib, " ,\n"), lib);
    snprintf(g_gen_base, sizeof g_gen_base, "%s/np=%d/mps=%s/pool=%s/cc=%s", mpi, g_size,
             getenv("CUDA_MPS_PIPE_DIRECTORY") ? "on" : "off", pool && *pool ? pool : "default",
             cc && *cc && strcmp(cc, "0") ? cc : "auto");
    {
        /* the blocking calls' registration cache: /zc=on:<TLMPI_NODE_REG_MIN> or off (the path column
         * names the algorithm that ran: direct where zero-copy) */
        const char *reg = getenv("TLMPI_NODE_REG"), *rmin = getenv("TLMPI_NODE_REG_MIN");
        size_t l = strlen(g_gen_base);
        if (dlsym(RTLD_DEFAULT, "tlmpi_get_reg_stats"))
            snprintf(g_gen_base + l, sizeof g_gen_base - l, "/zc=%s%s%s", reg && !strcmp(reg, "0") ? "off" : "on",
                     reg && !strcmp(reg, "0") ? "" : ":", reg && !strcmp(reg, "0") ? "" : rmin && *rmin ? rmin : "default");
    }
    for (len = 0; g_gen_base[len]; len++) if (g_gen_base[len] == ',') g_gen_base[len] = ':';
}

static void csv_row(const char *sec, const char *coll, const char *mode, const char *algo, const char *path,
                    size_t bytes, int iters, int reps, double med, double slow, int have_p, double p, double plo,
                    double phi, double hbm, double gbps, double ratio, const char *valid)
{
    if (!g_csv) return;
    fprintf(g_csv, "%s,%d,%s,%s,%s,%s,%zu,%d,%d,%.3f,%.3f,", sec, g_size, coll, mode, algo, path, bytes, iters, reps,
            med, slow);
    if (have_p) fprintf(g_csv, "%.3f,%.3f,%.3f,", p, plo, phi);
    else fprintf(g_csv, ",,,");
    if (hbm > 0) fprintf(g_csv, "%.0f,%.2f,%.4f,", hbm, gbps, ratio);
    else fprintf(g_csv, ",,,");
    fprintf(g_csv, "%s,tlmpi-%s/%s/%s%s%s\n", valid, tlmpi_version(), g_row_form, g_gen_base,
            *g_row_shape ? "/shape=" : "", g_row_shape);
    fflush(g_csv);
}

/* The node kernel shape (columns:CTAs, tlmpi_get_node_shape) of this rank's last call of form f into
 * dst: set on the first note, "mixed" when a later one differs (a blocking call's kernel alone on the
 * GPU in one repetition, sharing it in another); left empty where the library cannot say. */
static void shape_note(tlmpi_form_t f, char *dst, size_t len)
{
    char now_s[24];
    int cols = 0, ctas = 0;
    if (!g_node_shape || g_node_shape(f, &cols, &ctas) != TLMPI_OK || cols <= 0) return;
    snprintf(now_s, sizeof now_s, "%d:%d", cols, ctas);
    if (!dst[0]) snprintf(dst, len, "%s", now_s);
    else if (strcmp(dst, now_s)) snprintf(dst, len, "mixed");
}

/* ---------------------------------------------------------------- settings and counters */

static char g_cfg[4][128];

static int set1(int k, const char *name, const char *v)
{
    tlmpi_status_t s;
    if (!strcmp(g_cfg[k], v)) return 1;
    s = tlmpi_config_set(name, v);
    if (s != TLMPI_OK) {
        if (g_rank == 0) fprintf(stderr, "node_bench: tlmpi_config_set(%s, %s): %s\n", name, v, tlmpi_status_string(s));
        g_cfg[k][0] = 0;
        return 0;
    }
    snprintf(g_cfg[k], sizeof g_cfg[k], "%s", v);
    return 1;
}

/* TLMPI_TIER = tier; coll's table = table (others cleared) */
static int set_cfg(const char *tier, int coll, const char *table)
{
    int c, ok = set1(3, "TIER", tier);
    for (c = 0; c < C_N; c++) ok &= set1(c, table_vars[c], c == coll && table ? table : "");
    return ok;
}

static void snap(int coll, unsigned long long *calls)
{
    int k;
    for (k = 0; k < g_npaths; k++) {
        tlmpi_stat_t s;
        calls[k] = tlmpi_get_stats(coll_ids[coll], (tlmpi_path_t)k, &s) == TLMPI_OK ? s.calls : 0;
    }
}

static void snap_algos(int coll, unsigned long long *calls)
{
    int a;
    for (a = 0; a < (int)(sizeof node_algos / sizeof node_algos[0]); a++) {
        tlmpi_stat_t s;
        calls[a] = g_algo_stats && P_NODE >= 0 &&
                           g_algo_stats(coll_ids[coll], (tlmpi_path_t)P_NODE, node_algos[a], &s) == TLMPI_OK
                       ? s.calls
                       : 0;
    }
}

/* "path" or "path1+path2" of the counters that moved, agreed over ranks ("ranks-differ:..." if not) */
static void served(const unsigned long long *b, const unsigned long long *a, const unsigned long long *ab,
                   const unsigned long long *aa, char *out, size_t len)
{
    unsigned m = 0, mo = 0, ma = 0, am = 0, amo = 0;
    int k;
    out[0] = 0;
    for (k = 0; k < g_npaths; k++) if (a[k] != b[k]) m |= 1u << k;
    for (k = 0; k < (int)(sizeof node_algos / sizeof node_algos[0]); k++) if (aa[k] != ab[k]) am |= 1u << k;
    PMPI_Allreduce(&m, &mo, 1, MPI_UNSIGNED, MPI_BOR, g_comm);
    PMPI_Allreduce(&m, &ma, 1, MPI_UNSIGNED, MPI_BAND, g_comm);
    PMPI_Allreduce(&am, &amo, 1, MPI_UNSIGNED, MPI_BOR, g_comm);
    if (mo != ma) snprintf(out, len, "ranks-differ:");
    for (k = 0; k < g_npaths; k++) {
        if (mo & (1u << k)) {
            size_t l = strlen(out);
            snprintf(out + l, len - l, "%s%s", l && out[l - 1] != ':' ? "+" : "", tlmpi_path_name((tlmpi_path_t)k));
        }
    }
    for (k = 0; k < (int)(sizeof node_algos / sizeof node_algos[0]); k++) {
        if (amo & (1u << k)) {
            size_t l = strlen(out);
            snprintf(out + l, len - l, "/%s", node_algos[k]);
        }
    }
    if (!out[0]) snprintf(out, len, "none");
}

/* ---------------------------------------------------------------- one call */

static void mpi_call(int coll, size_t bytes)
{
    int n = (int)(bytes / 4), rc;
    switch (coll) {
    case C_AR: rc = MPI_Allreduce(g_s, g_r, n, MPI_FLOAT, MPI_SUM, g_comm); break;
    case C_AG: rc = MPI_Allgather(g_s, n, MPI_FLOAT, g_r, n, MPI_FLOAT, g_comm); break;
    default: rc = MPI_Reduce_scatter_block(g_s, g_r, n, MPI_FLOAT, MPI_SUM, g_comm); break;
    }
    if (rc != MPI_SUCCESS) {
        fprintf(stderr, "node_bench[%d]: %s of %zu bytes: rc %d\n", g_rank, coll_names[coll], bytes, rc);
        PMPI_Abort(MPI_COMM_WORLD, 3);
    }
}

static int gen_val(uint64_t seed, int r, size_t i)
{
    uint64_t x = seed ^ ((uint64_t)r * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)i * 0xD6E8FEB86659FD93ull);
    x ^= x >> 32;
    x *= 0xD6E8FEB86659FD93ull;
    x ^= x >> 32;
    return (int)(x % 9) - 4;
}

/* one checked call on fresh data: 1 = right on every rank */
static int validate(int coll, size_t bytes, uint64_t seed)
{
    size_t n = bytes / 4, in_n = coll == C_RSB ? n * (size_t)g_size : n, out_n = coll == C_AG ? n * (size_t)g_size : n, i;
    long long bad = 0, all = 0;
    int r;
    for (i = 0; i < in_n; i++) g_h[i] = (float)gen_val(seed, g_rank, i);
    CK(cudaMemcpy(g_s, g_h, in_n * 4, cudaMemcpyHostToDevice));
    CK(cudaMemset(g_r, 0x7f, out_n * 4));
    mpi_call(coll, bytes);
    CK(cudaMemcpy(g_h, g_r, out_n * 4, cudaMemcpyDeviceToHost));
    for (i = 0; i < out_n; i++) {
        float e = 0;
        if (coll == C_AG) e = (float)gen_val(seed, (int)(i / n), i % n);
        else for (r = 0; r < g_size; r++) e += (float)gen_val(seed, r, coll == C_RSB ? (size_t)g_rank * n + i : i);
        if (g_h[i] != e) bad++;
    }
    PMPI_Allreduce(&bad, &all, 1, MPI_LONG_LONG, MPI_SUM, g_comm);
    return all == 0;
}

/* per-call seconds on this rank of iters calls of coll after a barrier */
static double time_mpi(int coll, size_t bytes, int iters)
{
    double t0;
    int i;
    PMPI_Barrier(g_comm);
    t0 = now();
    for (i = 0; i < iters; i++) mpi_call(coll, bytes);
    return (now() - t0) / iters;
}

/* ---------------------------------------------------------------- the floor */

static tlmpi_node_xport_t g_x, g_x1;
static tlmpi_node_args_t g_a, g_a1;
static tlmpi_node_err_t *g_err;
static void *g_pool, *g_pool1;

static void floor_setup(void)
{
    const size_t data = 65536, bytes = TLMPI_NODE_HDR_BYTES + data;
    cudaIpcMemHandle_t h, *all = calloc((size_t)g_size, sizeof h);
    void *err_dev = NULL;
    int p;

    CK(cudaMalloc(&g_pool, bytes));
    CK(cudaMemset(g_pool, 0, bytes));
    CK(cudaMalloc(&g_pool1, bytes));
    CK(cudaMemset(g_pool1, 0, bytes));
    CK(cudaDeviceSynchronize());
    CK(cudaHostAlloc((void **)&g_err, sizeof *g_err, cudaHostAllocMapped));
    memset(g_err, 0, sizeof *g_err);
    CK(cudaHostGetDevicePointer(&err_dev, g_err, 0));
    CK(cudaIpcGetMemHandle(&h, g_pool));
    PMPI_Allgather(&h, (int)sizeof h, MPI_BYTE, all, (int)sizeof h, MPI_BYTE, g_comm);
    memset(&g_x, 0, sizeof g_x);
    for (p = 0; p < g_size; p++) {
        if (p == g_rank) g_x.base[p] = g_pool;
        else CK(cudaIpcOpenMemHandle(&g_x.base[p], all[p], cudaIpcMemLazyEnablePeerAccess));
    }
    g_x.rank = g_rank;
    g_x.nranks = g_size;
    g_x.data_bytes = data;
    g_x.timeout_ns = 30ull * 1000000000ull;
    g_x.err = err_dev;
    g_x.gpu_scope = g_gpu_scope;
    tlmpi_node_xport_data_after_header(&g_x);
    g_x1 = g_x;
    memset(g_x1.base, 0, sizeof g_x1.base);
    g_x1.base[0] = g_pool1;
    g_x1.rank = 0;
    g_x1.nranks = 1;
    tlmpi_node_xport_data_after_header(&g_x1);
    memset(&g_a, 0, sizeof g_a);
    g_a.kind = TLMPI_NODE_BARRIER;
    g_a.ctas = 1;
    g_a1 = g_a;
    free(all);
    PMPI_Barrier(g_comm); /* every pool zeroed before any kernel arrives at its flags */
}

static void floor_teardown(void)
{
    int p;
    PMPI_Barrier(g_comm); /* nobody's kernel touches a pool any more */
    for (p = 0; p < g_size; p++) if (p != g_rank) cudaIpcCloseMemHandle(g_x.base[p]);
    cudaFree(g_pool);
    cudaFree(g_pool1);
    cudaFreeHost(g_err);
}

static void barrier_once(tlmpi_node_xport_t *x, tlmpi_node_args_t *a)
{
    int e = tlmpi_cuda_node_run(x, a, g_stream);
    if (e) {
        fprintf(stderr, "node_bench[%d]: tlmpi_cuda_node_run(BARRIER): %s\n", g_rank, cudaGetErrorString((cudaError_t)e));
        PMPI_Abort(MPI_COMM_WORLD, 2);
    }
    spin_wait();
    if (__atomic_load_n(&g_err->set, __ATOMIC_ACQUIRE)) {
        fprintf(stderr, "node_bench[%d]: barrier wait timed out: rank %d cta %d peer %d barrier %d expected %llu seen %llu\n",
                g_rank, g_err->rank, g_err->cta, g_err->peer, g_err->barrier, g_err->expected, g_err->seen);
        PMPI_Abort(MPI_COMM_WORLD, 2);
    }
}

/* ---------------------------------------------------------------- raw NCCL, one rank */

#ifdef HAVE_NCCL
static struct {
    int ok;
    ncclComm_t comm;
    int version;
    ncclResult_t (*AllReduce)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t);
} g_nccl;

static void nccl_setup(void)
{
    const char *lib = getenv("TLMPI_NCCL_LIBRARY");
    void *h = dlopen(lib && *lib ? lib : "libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
    ncclResult_t (*GetUniqueId)(ncclUniqueId *);
    ncclResult_t (*CommInitRank)(ncclComm_t *, int, ncclUniqueId, int);
    ncclResult_t (*GetVersion)(int *);
    ncclUniqueId id;
    int ok = 0, all = 0;

    if (h) {
        *(void **)&GetUniqueId = dlsym(h, "ncclGetUniqueId");
        *(void **)&CommInitRank = dlsym(h, "ncclCommInitRank");
        *(void **)&GetVersion = dlsym(h, "ncclGetVersion");
        *(void **)&g_nccl.AllReduce = dlsym(h, "ncclAllReduce");
        if (GetUniqueId && CommInitRank && GetVersion && g_nccl.AllReduce && GetUniqueId(&id) == ncclSuccess &&
            CommInitRank(&g_nccl.comm, 1, id, 0) == ncclSuccess) {
            ok = 1;
            GetVersion(&g_nccl.version);
        }
    }
    PMPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, g_comm);
    g_nccl.ok = all;
    if (!all && g_rank == 0) fprintf(stderr, "node_bench: raw NCCL (1 rank) not available: row skipped\n");
}

static void nccl_once(void)
{
    if (g_nccl.AllReduce(g_s, g_r, 2, ncclFloat32, ncclSum, g_nccl.comm, g_stream) != ncclSuccess) {
        fprintf(stderr, "node_bench[%d]: ncclAllReduce failed\n", g_rank);
        PMPI_Abort(MPI_COMM_WORLD, 4);
    }
    spin_wait();
}
#endif

/* ---------------------------------------------------------------- 1. latency */

enum { L_FLOOR, L_EMPTY, L_NCCL, L_K_AR, L_K_AG, L_K_RSB, L_KL_AR, L_KL_AG, L_KL_RSB, L_NODE_AR, L_NODE_AG, L_NODE_RSB, L_STG_AR, L_STG_AG, L_STG_RSB, L_N };
static const char *const lat_names[L_N] = { "floor: node barrier kernel (1 CTA), n ranks", "empty kernel + self barrier (one-rank descriptor)",
                                            "raw NCCL allreduce 8 B, 1-rank communicator per rank",
                                            "kernel alone: allreduce one-shot 8 B (no MPI, plan or tier)",
                                            "kernel alone: allgather push 8 B (no MPI, plan or tier)",
                                            "kernel alone: reduce_scatter_block pull 8 B (no MPI, plan or tier)",
                                            "kernel alone: allreduce ll 8 B (no MPI, plan or tier)",
                                            "kernel alone: allgather ll 8 B (no MPI, plan or tier)",
                                            "kernel alone: reduce_scatter_block ll 8 B (no MPI, plan or tier)",
                                            "tlmpi node MPI_Allreduce 8 B",
                                            "tlmpi node MPI_Allgather 8 B", "tlmpi node MPI_Reduce_scatter_block 8 B",
                                            "tlmpi staging MPI_Allreduce 8 B", "tlmpi staging MPI_Allgather 8 B",
                                            "tlmpi staging MPI_Reduce_scatter_block 8 B" };

/* one node kernel of an 8-byte call on the floor's transport, the floor's way (its epoch is the
 * floor's: one pool, one running barrier count) */
static void kernel_once(int k)
{
    static const int kinds[6] = { TLMPI_NODE_AR_ONESHOT, TLMPI_NODE_AG_PUSH, TLMPI_NODE_RSB_PULL,
                                  TLMPI_NODE_AR_LL,      TLMPI_NODE_AG_LL,   TLMPI_NODE_RSB_LL };

    g_a.kind = kinds[k - L_K_AR];
    g_a.dtype = TLMPI_DT_F32;
    g_a.op = TLMPI_OP_SUM;
    g_a.in = g_s;
    g_a.out = g_r;
    g_a.count = k == L_K_AG || k == L_KL_AG ? 8 : 2; /* allgather: bytes; else floats */
    barrier_once(&g_x, &g_a);
    g_a.kind = TLMPI_NODE_BARRIER;
}

static double lat_item(int k, int iters)
{
    double t0;
    int i, c = (k - L_NODE_AR) % 3;

    if (k >= L_NODE_AR) {
        if (!set_cfg(k >= L_STG_AR ? "staging" : "node", -1, NULL)) return NAN;
        for (i = 0; i < 5; i++) mpi_call(c, 8);
        return time_mpi(c, 8, iters);
    }
    for (i = 0; i < 5; i++) { /* warm-up */
        if (k == L_FLOOR) barrier_once(&g_x, &g_a);
        else if (k == L_EMPTY) barrier_once(&g_x1, &g_a1);
        else if (k >= L_K_AR) kernel_once(k);
#ifdef HAVE_NCCL
        else nccl_once();
#endif
    }
    PMPI_Barrier(g_comm);
    t0 = now();
    for (i = 0; i < iters; i++) {
        if (k == L_FLOOR) barrier_once(&g_x, &g_a);
        else if (k == L_EMPTY) barrier_once(&g_x1, &g_a1);
        else if (k >= L_K_AR) kernel_once(k);
#ifdef HAVE_NCCL
        else nccl_once();
#endif
    }
    return (now() - t0) / iters;
}

static void bench_latency(void)
{
    static double avg[L_N][MAX_REPS], slow[L_N][MAX_REPS];
    int rep, kk, k, reps = o.lat_reps, have[L_N];
    char path[L_N][64];

    for (k = 0; k < L_N; k++) have[k] = 1;
#ifdef HAVE_NCCL
    nccl_setup();
    have[L_NCCL] = g_nccl.ok;
#else
    have[L_NCCL] = 0;
#endif
    floor_setup();
    for (rep = 0; rep < reps; rep++) {
        for (kk = 0; kk < L_N; kk++) {
            double t, sum = 0, mx = 0;
            unsigned long long b[32], a[32], ab[N_NODE_ALGOS], aa[N_NODE_ALGOS];
            k = rep & 1 ? L_N - 1 - kk : kk;
            if (!have[k]) continue;
            if (rep == 0 && k >= L_NODE_AR) {
                snap((k - L_NODE_AR) % 3, b);
                snap_algos((k - L_NODE_AR) % 3, ab);
            }
            t = lat_item(k, k >= L_STG_AR ? o.stg_iters : o.lat_iters);
            if (rep == 0 && k >= L_NODE_AR) {
                snap((k - L_NODE_AR) % 3, a);
                snap_algos((k - L_NODE_AR) % 3, aa);
                served(b, a, ab, aa, path[k], sizeof path[k]);
            }
            if (isnan(t)) { have[k] = 0; continue; }
            PMPI_Allreduce(&t, &sum, 1, MPI_DOUBLE, MPI_SUM, g_comm);
            PMPI_Allreduce(&t, &mx, 1, MPI_DOUBLE, MPI_MAX, g_comm);
            avg[k][rep] = sum / g_size * 1e6;
            slow[k][rep] = mx * 1e6;
        }
    }
    floor_teardown();
    if (g_rank == 0) {
        printf("\n## Floor and 8-byte latency, %d ranks (us per call: median of %d repetitions of the mean over ranks; "
               "%d calls each, staging %d)\n\n", g_size, reps, o.lat_iters, o.stg_iters);
        printf("| what | path | median us | slowest rank, median us | paired difference to the floor, median [95%% CI] us |\n");
        printf("| --- | --- | ---: | ---: | --- |\n");
    }
    for (k = 0; k < L_N; k++) {
        double med, sl, d[MAX_REPS], pm = 0, plo = 0, phi = 0;
        int hp = 0;
        const char *pth = k >= L_NODE_AR ? path[k] : k == L_NCCL ? "raw-nccl" : "kernel";
        if (!have[k]) {
            if (g_rank == 0) printf("| %s | - | n/a | n/a | |\n", lat_names[k]);
            continue;
        }
        med = median(avg[k], reps);
        sl = median(slow[k], reps);
        if (k != L_FLOOR && k != L_EMPTY && have[L_FLOOR]) {
            for (rep = 0; rep < reps; rep++) d[rep] = avg[k][rep] - avg[L_FLOOR][rep];
            median_ci(d, reps, &pm, &plo, &phi);
            hp = 1;
        } else if (k == L_EMPTY) {
            for (rep = 0; rep < reps; rep++) d[rep] = avg[k][rep] - avg[L_FLOOR][rep];
            median_ci(d, reps, &pm, &plo, &phi);
            hp = 1;
        }
        if (g_rank == 0) {
            printf("| %s | %s | %.2f | %.2f | ", lat_names[k], pth, med, sl);
            if (hp) printf("%+.2f [%+.2f, %+.2f]", pm, plo, phi);
            printf(" |\n");
        }
        static const char *const kernel_algos[6] = { "oneshot", "push", "pull", "ll", "ll", "ll" };
        g_row_form = k < L_NODE_AR ? "sync" : "blocking";
        csv_row("lat", k >= L_NODE_AR ? coll_names[(k - L_NODE_AR) % 3] : k >= L_K_AR ? coll_names[(k - L_K_AR) % 3]
                : k == L_NCCL ? "allreduce" : "barrier",
                k >= L_STG_AR ? "staging" : k >= L_NODE_AR ? "node" : k >= L_K_AR ? "kernel" : k == L_FLOOR ? "floor"
                : k == L_EMPTY ? "empty" : "raw-nccl-1",
                k >= L_K_AR && k < L_NODE_AR ? kernel_algos[k - L_K_AR] : "", pth, 8, k >= L_STG_AR ? o.stg_iters : o.lat_iters, reps, med, sl, hp, pm, plo, phi, 0, 0, 0, "-");
    }
#ifdef HAVE_NCCL
    if (g_rank == 0 && have[L_NCCL]) printf("\nraw NCCL runtime version %d\n", g_nccl.version);
#endif
}

/* ---------------------------------------------------------------- 2. sweep */

static int iters_for(int coll, size_t bytes)
{
    double t, tmax = 0;
    int i, n = bytes >= o.large ? 1 : bytes >= ((size_t)1 << 20) ? 3 : 10;
    for (i = 0; i < (bytes >= o.large ? 1 : 3); i++) mpi_call(coll, bytes); /* warm-up (plan refill, setup) */
    t = time_mpi(coll, bytes, n);
    PMPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, g_comm);
    n = (int)(o.target_s / (tmax > 0 ? tmax : 1e-6));
    return n < 1 ? 1 : n > 2000 ? 2000 : n;
}

static void bench_sweep(void)
{
    static const char *const tiers[2] = { "node", "staging" };
    int c, si, m, rep;

    if (g_rank == 0) {
        printf("\n## Sweep: TLMPI_TIER=node against TLMPI_TIER=staging, %d ranks (bytes: the per-rank message; "
               "us per call, median over repetitions of the mean over ranks)\n\n", g_size);
        printf("| collective | bytes | node us | node path/algorithm | staging us | staging / node | valid |\n");
        printf("| --- | ---: | ---: | --- | ---: | ---: | --- |\n");
    }
    for (c = 0; c < C_N; c++) {
        for (si = 0; si < o.nsizes; si++) {
            size_t b = o.sizes[si];
            double avg[2][MAX_REPS], slow[2][MAX_REPS], med[2], sl[2];
            int iters[2] = { 0, 0 }, ok[2] = { 1, 1 }, reps = b >= o.large ? 1 : o.reps, valid[2] = { -1, -1 };
            char path[2][64], shape[24] = "";
            if (b < 4 || b > g_maxb) continue;
            for (rep = 0; rep < reps; rep++) {
                for (int kk = 0; kk < 2; kk++) {
                    double t, sum = 0, mx = 0;
                    unsigned long long pb[32], pa[32], ab[N_NODE_ALGOS], aa[N_NODE_ALGOS];
                    m = rep & 1 ? 1 - kk : kk;
                    if (!ok[m]) continue;
                    if (!set_cfg(tiers[m], -1, NULL)) { ok[m] = 0; continue; }
                    if (rep == 0) {
                        snap(c, pb);
                        snap_algos(c, ab);
                        if (b <= o.validate_max) valid[m] = validate(c, b, (uint64_t)time(NULL) ^ ((uint64_t)si << 20) ^ (uint64_t)c);
                        iters[m] = iters_for(c, b);
                    }
                    t = time_mpi(c, b, iters[m]);
                    if (m == 0) shape_note(TLMPI_FORM_BLOCKING, shape, sizeof shape);
                    if (rep == 0) {
                        snap(c, pa);
                        snap_algos(c, aa);
                        served(pb, pa, ab, aa, path[m], sizeof path[m]);
                    }
                    PMPI_Allreduce(&t, &sum, 1, MPI_DOUBLE, MPI_SUM, g_comm);
                    PMPI_Allreduce(&t, &mx, 1, MPI_DOUBLE, MPI_MAX, g_comm);
                    avg[m][rep] = sum / g_size * 1e6;
                    slow[m][rep] = mx * 1e6;
                }
            }
            for (m = 0; m < 2; m++) {
                if (!ok[m]) continue;
                med[m] = median(avg[m], reps);
                sl[m] = median(slow[m], reps);
                g_row_shape = m == 0 && !strncmp(path[0], "node", 4) ? shape : ""; /* what ran: node kernels only */
                csv_row("sweep", coll_names[c], tiers[m], "", path[m], b, iters[m], reps, med[m], sl[m], 0, 0, 0, 0, 0,
                        0, 0, valid[m] < 0 ? "-" : valid[m] ? "pass" : "FAIL");
                g_row_shape = "";
            }
            if (g_rank == 0) {
                printf("| %s | %zu | %.2f | %s | %.2f | %.2f | %s |\n", coll_names[c], b, ok[0] ? med[0] : NAN,
                       ok[0] ? path[0] : "-", ok[1] ? med[1] : NAN, ok[0] && ok[1] ? med[1] / med[0] : NAN,
                       valid[0] < 0 && valid[1] < 0 ? "-" : (valid[0] != 0 && valid[1] != 0) ? "pass" : "FAIL");
                fflush(stdout);
            }
        }
    }
}

/* ---------------------------------------------------------------- 3. efficiency */

typedef struct {
    const char *name;
    int coll;
    const char *table;
} algo_t;
static const algo_t g_algos[] = {
    { "allgather push", C_AG, "node/push" },
    { "allgather pull", C_AG, "node/pull" },
    { "reduce_scatter_block", C_RSB, "node" },
    { "allreduce one-shot", C_AR, "node/oneshot" },
    { "allreduce two-shot", C_AR, "node/twoshot" },
};

/* HBM bytes per rank (read + written) of algorithm a for a per-rank message of B bytes */
static double traffic(int a, double B, int n)
{
    switch (a) {
    case 0: return (3.0 * n - 1) * B;           /* push: read nB, write (2n-1)B */
    case 1: return (2.0 * n + 1) * B;           /* pull: read nB, write (n+1)B */
    case 2: return (3.0 * n - 1) * B;           /* RSB: read (2n-1)B, write nB */
    case 3: return n > 1 ? (n + 3.0) * B : 2 * B; /* one-shot: read (n+1)B, write 2B */
    default: return n > 1 ? 2 * B + 4.0 * (n - 1) * B / n : 2 * B; /* two-shot */
    }
}

/* D2D copy rate (bytes read + written per second): rank 0 alone, and every rank at once */
static void copy_rates(size_t bytes, double *alone, double *together)
{
    cudaEvent_t e0, e1;
    double v[MAX_REPS], t0, t, tmax = 0;
    int r, reps = o.eff_reps < 3 ? 3 : o.eff_reps, i, it = 4;

    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    PMPI_Barrier(g_comm);
    if (g_rank == 0) {
        for (r = -1; r < reps; r++) {
            float ms;
            CK(cudaEventRecord(e0, g_stream));
            CK(cudaMemcpyAsync(g_r, g_s, bytes, cudaMemcpyDeviceToDevice, g_stream));
            CK(cudaEventRecord(e1, g_stream));
            CK(cudaEventSynchronize(e1));
            CK(cudaEventElapsedTime(&ms, e0, e1));
            if (r >= 0) v[r] = 2.0 * bytes / (ms * 1e-3);
        }
        *alone = median(v, reps);
    }
    PMPI_Bcast(alone, 1, MPI_DOUBLE, 0, g_comm);
    for (r = -1; r < reps; r++) {
        PMPI_Barrier(g_comm);
        t0 = now();
        for (i = 0; i < it; i++) CK(cudaMemcpyAsync(g_r, g_s, bytes, cudaMemcpyDeviceToDevice, g_stream));
        spin_wait();
        t = now() - t0;
        PMPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, g_comm);
        if (r >= 0) v[r] = 2.0 * bytes * it * g_size / tmax;
    }
    *together = median(v, reps);
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
}

static void bench_eff(void)
{
    int si, a, rep;

    for (si = 0; si < o.neff; si++) {
        size_t b = o.eff[si];
        double alone = 0, together = 0, base;
        if (b > g_maxb) continue;
        copy_rates(b, &alone, &together);
        base = alone > together ? alone : together;
        if (g_rank == 0) {
            printf("\n## Large-message efficiency, %d ranks, %zu MiB per rank: HBM bytes (read + written, all ranks) / "
                   "time, against cudaMemcpyAsync D2D (%.0f GB/s rank 0 alone, %.0f GB/s all ranks at once)\n\n",
                   g_size, b >> 20, alone / 1e9, together / 1e9);
            printf("| algorithm | path | us (median of %d) | HBM bytes per rank | GB/s | ratio to the copy rate | >= 0.80 |\n",
                   o.eff_reps);
            printf("| --- | --- | ---: | ---: | ---: | ---: | --- |\n");
        }
        csv_row("eff", "copy", "cudaMemcpyAsync", "alone", "d2d", b, 1, o.eff_reps, 0, 0, 0, 0, 0, 0, 2.0 * b,
                alone / 1e9, 1.0, "-");
        csv_row("eff", "copy", "cudaMemcpyAsync", "all-ranks", "d2d", b, 1, o.eff_reps, 0, 0, 0, 0, 0, 0,
                2.0 * b * g_size, together / 1e9, together / base, "-");
        for (a = 0; a < (int)(sizeof g_algos / sizeof g_algos[0]); a++) {
            const algo_t *al = &g_algos[a];
            double v[MAX_REPS], med, tr, gbps;
            unsigned long long pb[32], pa[32], ab[N_NODE_ALGOS], aa[N_NODE_ALGOS];
            char path[64];
            int iters;
            if (!set_cfg("staging", al->coll, al->table)) continue;
            snap(al->coll, pb);
            snap_algos(al->coll, ab);
            iters = iters_for(al->coll, b);
            if (iters > 20) iters = 20;
            for (rep = 0; rep < o.eff_reps; rep++) {
                double t = time_mpi(al->coll, b, iters), tmax = 0;
                PMPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, g_comm);
                v[rep] = tmax;
            }
            snap(al->coll, pa);
            snap_algos(al->coll, aa);
            served(pb, pa, ab, aa, path, sizeof path);
            med = median(v, o.eff_reps);
            tr = traffic(a, (double)b, g_size);
            gbps = tr * g_size / med;
            if (g_rank == 0) {
                printf("| %s | %s | %.1f | %.0f | %.0f | %.3f | %s |\n", al->name, path, med * 1e6, tr, gbps / 1e9,
                       gbps / base, gbps / base >= 0.80 ? "met" : "MISS");
                fflush(stdout);
            }
            csv_row("eff", coll_names[al->coll], "node", al->table, path, b, iters, o.eff_reps, med * 1e6, med * 1e6, 0, 0,
                    0, 0, tr * g_size, gbps / 1e9, gbps / base, "-");
        }
    }
}

/* ---------------------------------------------------------------- 4. forms */

/*
 * Section "form": the non-blocking and persistent forms against the blocking call and the floors,
 * all in one run (-S form):
 *  (a) return: MPI_Iallreduce / MPI_Iallgather / MPI_Ireduce_scatter_block at 8 B and 16 MiB on the
 *      node tier (TLMPI_TIER=node): the time the call takes to return, the time to its MPI_Wait's
 *      return (call + wait), and the blocking call of the same size (its time per call);
 *  (b) back to back: K (-K, default 100) 8-byte non-blocking calls of one collective, each into
 *      buffers of its own, then one MPI_Waitall, per call; against the eager floor of the same run
 *      (K one-barrier node kernels launched back to back on the floor's transport, one wait at the
 *      end: the least any stream-ordered collective can cost), the host-synchronous floor (one
 *      kernel + wait each, as the lat section's floor) and K blocking calls;
 *  (c) persistent: MPI_<coll>_init once, then Start + Wait per call, against the blocking call and
 *      the non-blocking call + wait, at every size of -F (default 8 B, 1, 16 and 64 MiB), all three
 *      collectives, one start validated per size (fresh data); where the MPI has no persistent
 *      collectives (older than MPI-4: Open MPI 4.1) the persistent rows are skipped with one line
 *      and the non-blocking rows are still measured;
 *  (d) overlap: OSU's overlap measure (host compute as long as the pure call + wait) at the sizes of
 *      -F from 1 MiB, with the time to return and the wait split out (form_overlap).
 * Every item: medians over -r repetitions of the mean over ranks (and of the slowest rank), the items
 * of a repetition round robin (order reversed on odd repetitions), ratios of medians in the same run.
 * CSV rows: section "form", mode = the form (blocking, nonblocking, persistent; eager and sync for
 * the floors), algo = what was timed (return, call+wait, call, b2bK, start+wait, floor), ratio = to
 * the row's baseline (said in the tables), generation names the form.
 */
#define FORM_MAXK 1024
static int g_form_k = 100;
static size_t g_form_sizes[MAX_SIZES] = { 8, (size_t)1 << 20, (size_t)16 << 20, (size_t)64 << 20 };
static int g_form_nsizes = 4;

typedef tlmpi_status_t (*form_stats_fn)(tlmpi_coll_t, tlmpi_path_t, tlmpi_form_t, tlmpi_stat_t *);
static form_stats_fn g_form_stats;

static void nb_call(int coll, size_t bytes, void *s, void *r, MPI_Request *q)
{
    int n = (int)(bytes / 4), rc;
    switch (coll) {
    case C_AR: rc = MPI_Iallreduce(s, r, n, MPI_FLOAT, MPI_SUM, g_comm, q); break;
    case C_AG: rc = MPI_Iallgather(s, n, MPI_FLOAT, r, n, MPI_FLOAT, g_comm, q); break;
    default: rc = MPI_Ireduce_scatter_block(s, r, n, MPI_FLOAT, MPI_SUM, g_comm, q); break;
    }
    if (rc != MPI_SUCCESS) {
        fprintf(stderr, "node_bench[%d]: non-blocking %s of %zu bytes: rc %d\n", g_rank, coll_names[coll], bytes, rc);
        PMPI_Abort(MPI_COMM_WORLD, 3);
    }
}

static void wait1(MPI_Request *q)
{
    if (MPI_Wait(q, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
        fprintf(stderr, "node_bench[%d]: MPI_Wait failed\n", g_rank);
        PMPI_Abort(MPI_COMM_WORLD, 3);
    }
}

#if MPI_VERSION >= 4
#define FORM_HAVE_PERSISTENT 1
static MPI_Request g_preq[C_N];
static size_t g_preq_bytes[C_N];

static void persist_make(int coll, size_t bytes)
{
    int n = (int)(bytes / 4), rc;
    if (g_preq_bytes[coll] == bytes && g_preq[coll] != MPI_REQUEST_NULL) return;
    if (g_preq[coll] != MPI_REQUEST_NULL) MPI_Request_free(&g_preq[coll]);
    switch (coll) {
    case C_AR: rc = MPI_Allreduce_init(g_s, g_r, n, MPI_FLOAT, MPI_SUM, g_comm, MPI_INFO_NULL, &g_preq[coll]); break;
    case C_AG: rc = MPI_Allgather_init(g_s, n, MPI_FLOAT, g_r, n, MPI_FLOAT, g_comm, MPI_INFO_NULL, &g_preq[coll]); break;
    default: rc = MPI_Reduce_scatter_block_init(g_s, g_r, n, MPI_FLOAT, MPI_SUM, g_comm, MPI_INFO_NULL, &g_preq[coll]); break;
    }
    if (rc != MPI_SUCCESS) {
        fprintf(stderr, "node_bench[%d]: persistent %s init of %zu bytes: rc %d\n", g_rank, coll_names[coll], bytes, rc);
        PMPI_Abort(MPI_COMM_WORLD, 3);
    }
    g_preq_bytes[coll] = bytes;
}

static void persist_once(int coll)
{
    if (MPI_Start(&g_preq[coll]) != MPI_SUCCESS) {
        fprintf(stderr, "node_bench[%d]: MPI_Start failed\n", g_rank);
        PMPI_Abort(MPI_COMM_WORLD, 3);
    }
    wait1(&g_preq[coll]);
}
#else
#define FORM_HAVE_PERSISTENT 0
#endif

enum { FM_BLOCKING, FM_NONBLOCKING, FM_PERSISTENT };
static const char *const fm_names[3] = { "blocking", "nonblocking", "persistent" };

/* one call of coll on g_s/g_r in form fm, completed */
static void form_call(int fm, int coll, size_t bytes)
{
    MPI_Request q;
    if (fm == FM_BLOCKING) {
        mpi_call(coll, bytes);
    } else if (fm == FM_NONBLOCKING) {
        nb_call(coll, bytes, g_s, g_r, &q);
        wait1(&q);
    } else {
#if FORM_HAVE_PERSISTENT
        persist_once(coll);
#endif
    }
}

/* validate one call of form fm on fresh data (validate()'s reference): 1 = right on every rank */
static int form_validate(int fm, int coll, size_t bytes, uint64_t seed)
{
    size_t n = bytes / 4, in_n = coll == C_RSB ? n * (size_t)g_size : n, out_n = coll == C_AG ? n * (size_t)g_size : n, i;
    long long bad = 0, all = 0;
    int r;
    if (bytes > o.validate_max) return -1;
    for (i = 0; i < in_n; i++) g_h[i] = (float)gen_val(seed, g_rank, i);
    CK(cudaMemcpy(g_s, g_h, in_n * 4, cudaMemcpyHostToDevice));
    CK(cudaMemset(g_r, 0x7f, out_n * 4));
    form_call(fm, coll, bytes);
    CK(cudaMemcpy(g_h, g_r, out_n * 4, cudaMemcpyDeviceToHost));
    for (i = 0; i < out_n; i++) {
        float e = 0;
        if (coll == C_AG) e = (float)gen_val(seed, (int)(i / n), i % n);
        else for (r = 0; r < g_size; r++) e += (float)gen_val(seed, r, coll == C_RSB ? (size_t)g_rank * n + i : i);
        if (g_h[i] != e) bad++;
    }
    PMPI_Allreduce(&bad, &all, 1, MPI_LONG_LONG, MPI_SUM, g_comm);
    return all == 0;
}

/* the forms whose counters moved, agreed over ranks, appended to path ("node/ll nonblocking") */
static void form_snap(int coll, unsigned long long *f)
{
    int k, m;
    for (m = 0; m < 3; m++) {
        f[m] = 0;
        for (k = 0; g_form_stats && k < g_npaths; k++) {
            tlmpi_stat_t s;
            if (g_form_stats(coll_ids[coll], (tlmpi_path_t)k, (tlmpi_form_t)m, &s) == TLMPI_OK) f[m] += s.calls;
        }
    }
}

static void form_served(const unsigned long long *b, const unsigned long long *a, char *path, size_t len)
{
    unsigned m = 0, mo = 0, ma = 0;
    int k;
    size_t l = strlen(path);
    if (!g_form_stats) {
        snprintf(path + l, len - l, " (no form counters)");
        return;
    }
    for (k = 0; k < 3; k++) if (a[k] != b[k]) m |= 1u << k;
    PMPI_Allreduce(&m, &mo, 1, MPI_UNSIGNED, MPI_BOR, g_comm);
    PMPI_Allreduce(&m, &ma, 1, MPI_UNSIGNED, MPI_BAND, g_comm);
    for (k = 0; k < 3; k++) {
        if (mo & (1u << k)) {
            l = strlen(path);
            snprintf(path + l, len - l, " %s%s", mo != ma ? "ranks-differ:" : "", fm_names[k]);
        }
    }
}

/* per-rank statistics of one item over the repetitions -> median of the mean, median of the max */
static void form_reduce(double t, double *avg, double *slow, int rep)
{
    double sum = 0, mx = 0;
    PMPI_Allreduce(&t, &sum, 1, MPI_DOUBLE, MPI_SUM, g_comm);
    PMPI_Allreduce(&t, &mx, 1, MPI_DOUBLE, MPI_MAX, g_comm);
    avg[rep] = sum / g_size * 1e6;
    slow[rep] = mx * 1e6;
}


/* (a) */
static void form_return(void)
{
    static const size_t sz[2] = { 8, (size_t)16 << 20 };
    int c, si, rep, i, reps = o.lat_reps;
    if (g_rank == 0) {
        printf("\n## Non-blocking calls on the node tier: time to return, %d ranks (us per call: median of %d "
               "repetitions of the mean over ranks)\n\n", g_size, reps);
        printf("| collective | bytes | path (form) | I-call returns | I-call + MPI_Wait | blocking call | return / "
               "blocking | (I-call + wait) / blocking |\n| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: |\n");
    }
    for (c = 0; c < C_N; c++) {
        for (si = 0; si < 2; si++) {
            size_t b = sz[si];
            int iters = b >= o.large ? 10 : o.lat_iters;
            double ret[MAX_REPS], retm[MAX_REPS], tot[MAX_REPS], totm[MAX_REPS], blk[MAX_REPS], blkm[MAX_REPS];
            double mr, mt, mb;
            char path[96] = "";
            unsigned long long pb[32], pa[32], ab[N_NODE_ALGOS], aa[N_NODE_ALGOS], fb[3], fa[3];
            if (b > g_maxb || !set_cfg("node", -1, NULL)) continue;
            for (i = 0; i < 3; i++) { form_call(FM_NONBLOCKING, c, b); mpi_call(c, b); }
            for (rep = 0; rep < reps; rep++) {
                int kk;
                for (kk = 0; kk < 2; kk++) {
                    int k = rep & 1 ? 1 - kk : kk;
                    double t0, tr = 0, tt = 0;
                    if (k == 0) {
                        MPI_Request q;
                        if (rep == 0) { snap(c, pb); snap_algos(c, ab); form_snap(c, fb); }
                        PMPI_Barrier(g_comm);
                        for (i = 0; i < iters; i++) {
                            double t1;
                            t0 = now();
                            nb_call(c, b, g_s, g_r, &q);
                            t1 = now();
                            wait1(&q);
                            tr += t1 - t0;
                            tt += now() - t0;
                        }
                        if (rep == 0) {
                            snap(c, pa); snap_algos(c, aa); form_snap(c, fa);
                            served(pb, pa, ab, aa, path, sizeof path);
                            form_served(fb, fa, path, sizeof path);
                        }
                        form_reduce(tr / iters, ret, retm, rep);
                        form_reduce(tt / iters, tot, totm, rep);
                    } else {
                        form_reduce(time_mpi(c, b, iters), blk, blkm, rep);
                    }
                }
            }
            mr = median(ret, reps);
            mt = median(tot, reps);
            mb = median(blk, reps);
            if (g_rank == 0) {
                printf("| %s | %zu | %s | %.2f | %.2f | %.2f | %.3f | %.3f |\n", coll_names[c], b, path, mr, mt, mb, mr / mb, mt / mb);
                fflush(stdout);
            }
            g_row_form = "nonblocking";
            csv_row("form", coll_names[c], "nonblocking", "return", path, b, iters, reps, mr, median(retm, reps), 0, 0, 0, 0,
                    0, 0, mr / mb, "-");
            csv_row("form", coll_names[c], "nonblocking", "call+wait", path, b, iters, reps, mt, median(totm, reps), 0, 0, 0,
                    0, 0, 0, mt / mb, "-");
            g_row_form = "blocking";
            csv_row("form", coll_names[c], "blocking", "call", "node", b, iters, reps, mb, median(blkm, reps), 0, 0, 0, 0, 0,
                    0, 1.0, "-");
        }
    }
}

/* (b) */
static void eager_floor(int k)
{
    int i, e;
    for (i = 0; i < k; i++) {
        e = tlmpi_cuda_node_run(&g_x, &g_a, g_stream);
        if (e) {
            fprintf(stderr, "node_bench[%d]: tlmpi_cuda_node_run(BARRIER): %s\n", g_rank, cudaGetErrorString((cudaError_t)e));
            PMPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    spin_wait();
    if (__atomic_load_n(&g_err->set, __ATOMIC_ACQUIRE)) {
        fprintf(stderr, "node_bench[%d]: eager floor: a barrier wait timed out\n", g_rank);
        PMPI_Abort(MPI_COMM_WORLD, 2);
    }
}

static MPI_Request g_b2b_req[FORM_MAXK];

/* K 8-byte non-blocking calls of coll back to back (buffers of their own), one MPI_Waitall */
static void nb_b2b(int coll, int k)
{
    int i;
    for (i = 0; i < k; i++) nb_call(coll, 8, g_s + (size_t)i * 256, g_r + (size_t)i * 256, &g_b2b_req[i]);
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push /* MPICH: MPI_STATUSES_IGNORE is the pointer 1, and gcc checks it against MPI_Waitall's access attribute */
#pragma GCC diagnostic ignored "-Wstringop-overflow"
#endif
    i = MPI_Waitall(k, g_b2b_req, MPI_STATUSES_IGNORE);
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
    if (i != MPI_SUCCESS) {
        fprintf(stderr, "node_bench[%d]: MPI_Waitall failed\n", g_rank);
        PMPI_Abort(MPI_COMM_WORLD, 3);
    }
}

/* validate the K back-to-back calls (fresh data in every slot): 1 = right on every rank */
static int b2b_validate(int coll, int k, uint64_t seed)
{
    size_t span = (size_t)k * 256, i;
    long long bad = 0, all = 0;
    int j, r;
    float *h = malloc(span);
    for (j = 0; j < k; j++)
        for (i = 0; i < 64; i++) h[(size_t)j * 64 + i] = (float)gen_val(seed + (uint64_t)j, g_rank, i);
    CK(cudaMemcpy(g_s, h, span, cudaMemcpyHostToDevice));
    CK(cudaMemset(g_r, 0x7f, span));
    nb_b2b(coll, k);
    CK(cudaMemcpy(h, g_r, span, cudaMemcpyDeviceToHost));
    for (j = 0; j < k; j++) {
        size_t out_n = coll == C_AG ? 2 * (size_t)g_size : 2;
        for (i = 0; i < out_n; i++) {
            float e = 0;
            if (coll == C_AG) e = (float)gen_val(seed + (uint64_t)j, (int)(i / 2), i % 2);
            else for (r = 0; r < g_size; r++) e += (float)gen_val(seed + (uint64_t)j, r, coll == C_RSB ? (size_t)g_rank * 2 + i : i);
            if (h[(size_t)j * 64 + i] != e) bad++;
        }
    }
    free(h);
    PMPI_Allreduce(&bad, &all, 1, MPI_LONG_LONG, MPI_SUM, g_comm);
    return all == 0;
}

static void form_b2b(void)
{
    enum { B_EAGER, B_SYNC, B_NB0, B_BLK0 = B_NB0 + C_N, B_N = B_BLK0 + C_N };
    static double avg[B_N][MAX_REPS], slow[B_N][MAX_REPS];
    int rep, kk, k, i, K = g_form_k, reps = o.lat_reps, valid[C_N];
    char path[C_N][96];

    floor_setup();
    if (!set_cfg("node", -1, NULL)) { floor_teardown(); return; }
    for (k = 0; k < C_N; k++) {
        unsigned long long pb[32], pa[32], ab[N_NODE_ALGOS], aa[N_NODE_ALGOS], fb[3], fa[3];
        path[k][0] = 0;
        snap(k, pb); snap_algos(k, ab); form_snap(k, fb);
        valid[k] = b2b_validate(k, K, (uint64_t)time(NULL) ^ ((uint64_t)k << 32));
        nb_b2b(k, K);
        snap(k, pa); snap_algos(k, aa); form_snap(k, fa);
        served(pb, pa, ab, aa, path[k], sizeof path[k]);
        form_served(fb, fa, path[k], sizeof path[k]);
        for (i = 0; i < K; i++) mpi_call(k, 8); /* warm-up of the blocking calls */
    }
    eager_floor(K);
    for (rep = 0; rep < reps; rep++) {
        for (kk = 0; kk < B_N; kk++) {
            double t0;
            k = rep & 1 ? B_N - 1 - kk : kk;
            PMPI_Barrier(g_comm);
            t0 = now();
            if (k == B_EAGER) eager_floor(K);
            else if (k == B_SYNC) for (i = 0; i < K; i++) barrier_once(&g_x, &g_a);
            else if (k < B_BLK0) nb_b2b(k - B_NB0, K);
            else for (i = 0; i < K; i++) mpi_call(k - B_BLK0, 8);
            form_reduce((now() - t0) / K, avg[k], slow[k], rep);
        }
    }
    floor_teardown();
    {
        double fe = median(avg[B_EAGER], reps), fs = median(avg[B_SYNC], reps);
        if (g_rank == 0) {
            printf("\n## %d back-to-back 8-byte calls, one MPI_Waitall, %d ranks (us per call: median of %d repetitions "
                   "of the mean over ranks)\n\n", K, g_size, reps);
            printf("- floor, eager: %d node barrier kernels launched back to back, one wait: %.2f us per kernel (slowest "
                   "rank %.2f)\n", K, fe, median(slow[B_EAGER], reps));
            printf("- floor, host-synchronous: one kernel + wait each: %.2f us per kernel (slowest rank %.2f)\n\n", fs,
                   median(slow[B_SYNC], reps));
            printf("| collective | path (form) | non-blocking, per call | slowest rank | / eager floor | blocking, per "
                   "call | blocking / non-blocking | valid |\n| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |\n");
        }
        g_row_form = "eager";
        csv_row("form", "barrier", "eager", "floor", "kernel", 8, K, reps, fe, median(slow[B_EAGER], reps), 0, 0, 0, 0, 0, 0,
                1.0, "-");
        g_row_form = "sync";
        csv_row("form", "barrier", "sync", "floor", "kernel", 8, K, reps, fs, median(slow[B_SYNC], reps), 0, 0, 0, 0, 0, 0,
                fs / fe, "-");
        for (k = 0; k < C_N; k++) {
            double nb = median(avg[B_NB0 + k], reps), bl = median(avg[B_BLK0 + k], reps);
            char alg[16];
            snprintf(alg, sizeof alg, "b2b%d", K);
            if (g_rank == 0) {
                printf("| %s | %s | %.2f | %.2f | %.2f | %.2f | %.2f | %s |\n", coll_names[k], path[k], nb,
                       median(slow[B_NB0 + k], reps), nb / fe, bl, bl / nb, valid[k] ? "pass" : "FAIL");
                fflush(stdout);
            }
            g_row_form = "nonblocking";
            csv_row("form", coll_names[k], "nonblocking", alg, path[k], 8, K, reps, nb, median(slow[B_NB0 + k], reps), 0, 0,
                    0, 0, 0, 0, nb / fe, valid[k] ? "pass" : "FAIL");
            g_row_form = "blocking";
            csv_row("form", coll_names[k], "blocking", alg, "node", 8, K, reps, bl, median(slow[B_BLK0 + k], reps), 0, 0, 0,
                    0, 0, 0, bl / fe, "-");
        }
    }
}

/* (c) */
/* Gated non-blocking calls that ran zero-copy on g_comm so far (the describe line's count: node tier,
 * kernels.h's gated pairs); -1 where this libtlmpi does not say. Collective. */
static long gated_zc(void)
{
    static char buf[8192];
    tlmpi_status_t (*fn)(MPI_Comm, char *, size_t);
    const char *p;
    *(void **)&fn = dlsym(RTLD_DEFAULT, "tlmpi_comm_describe");
    if (!fn || fn(g_comm, buf, sizeof buf) != TLMPI_OK) return -1;
    if ((p = strstr(buf, "zero-copy: "))) return strtol(p + 11, NULL, 10);
    return strstr(buf, "registration cache") ? 0 : -1;
}

static void form_persistent(void)
{
    int c, si, rep, kk, i, have_p = FORM_HAVE_PERSISTENT, v = 0, sv = 0, reps = o.reps < 5 ? 5 : o.reps;
    MPI_Get_version(&v, &sv);
    if (v < 4) have_p = 0;
    if (g_rank == 0) {
        printf("\n## Persistent and non-blocking against blocking, %d ranks, TLMPI_TIER=node (us per call: median of %d "
               "repetitions of the mean over ranks)\n\n", g_size, reps);
        if (!have_p)
            printf("persistent: skipped: MPI %d.%d (built against %d.%d) has no MPI_Allreduce_init (MPI-4)\n\n", v, sv,
                   MPI_VERSION, MPI_SUBVERSION);
        printf("| collective | bytes | blocking | non-blocking + wait | persistent start + wait | path (forms) | "
               "non-blocking / blocking | persistent / blocking | valid (blocking, non-blocking, persistent) |\n"
               "| --- | ---: | ---: | ---: | ---: | --- | ---: | ---: | --- |\n");
    }
    for (c = 0; c < C_N; c++) {
        for (si = 0; si < g_form_nsizes; si++) {
            size_t b = g_form_sizes[si];
            double avg[3][MAX_REPS], slow[3][MAX_REPS], med[3] = { NAN, NAN, NAN };
            int iters, nf = have_p ? 3 : 2, val[3] = { -1, -1, -1 }, f;
            char path[128] = "";
            unsigned long long pb[32], pa[32], ab[N_NODE_ALGOS], aa[N_NODE_ALGOS], fb[3], fa[3];
            if (b < 4 || b > g_maxb || !set_cfg("node", -1, NULL)) continue;
#if FORM_HAVE_PERSISTENT
            if (have_p) persist_make(c, b);
#endif
            snap(c, pb); snap_algos(c, ab); form_snap(c, fb);
            for (f = 0; f < nf; f++) val[f] = form_validate(f, c, b, (uint64_t)time(NULL) ^ ((uint64_t)si << 20) ^ (uint64_t)(c * 3 + f));
            iters = iters_for(c, b);
            if (iters > o.lat_iters) iters = o.lat_iters;
            for (f = 1; f < nf; f++) for (i = 0; i < 2; i++) form_call(f, c, b);
            snap(c, pa); snap_algos(c, aa); form_snap(c, fa);
            served(pb, pa, ab, aa, path, sizeof path);
            form_served(fb, fa, path, sizeof path);
            long zc0 = gated_zc(), zc1;
            /* rank 0's time of every timed call, per form (the spread: a few slow calls or all slower) */
            double *pc = malloc(sizeof(double) * 3 * (size_t)reps * (size_t)iters);
            int npc[3] = { 0, 0, 0 };
            if (!pc) {
                fprintf(stderr, "node_bench: out of host memory\n");
                PMPI_Abort(MPI_COMM_WORLD, 2);
            }
            for (rep = 0; rep < reps; rep++) {
                for (kk = 0; kk < nf; kk++) {
                    double t0, t1, t2;
                    f = rep & 1 ? nf - 1 - kk : kk;
                    PMPI_Barrier(g_comm);
                    t0 = t1 = now();
                    for (i = 0; i < iters; i++) {
                        form_call(f, c, b);
                        t2 = now();
                        pc[(size_t)f * reps * iters + (size_t)npc[f]++] = t2 - t1;
                        t1 = t2;
                    }
                    form_reduce((now() - t0) / iters, avg[f], slow[f], rep);
                }
            }
            /* how many of the timed non-blocking calls ran zero-copy (gated on the device) */
            zc1 = gated_zc();
            if (zc0 >= 0 && zc1 >= 0) {
                size_t l = strlen(path);
                snprintf(path + l, sizeof path - l, " nb-zc=%ld/%d", zc1 - zc0, reps * iters);
            }
            for (f = 0; f < nf; f++) med[f] = median(avg[f], reps);
            if (g_rank == 0) {
                printf("| %s | %zu | %.2f | %.2f | ", coll_names[c], b, med[0], med[1]);
                if (have_p) printf("%.2f", med[2]);
                else printf("n/a");
                printf(" | %s | %.3f | ", path, med[1] / med[0]);
                if (have_p) printf("%.3f", med[2] / med[0]);
                else printf("n/a");
                printf(" | %s, %s, %s |\n", val[0] < 0 ? "-" : val[0] ? "pass" : "FAIL", val[1] < 0 ? "-" : val[1] ? "pass" : "FAIL",
                       !have_p ? "n/a" : val[2] < 0 ? "-" : val[2] ? "pass" : "FAIL");
                fprintf(stderr, "node_bench: %s %zu B, rank 0's calls, us p10 / p50 / p90 / max:", coll_names[c], b);
                for (f = 0; f < nf; f++) {
                    double *v = pc + (size_t)f * reps * iters;
                    const int m = npc[f];
                    qsort(v, (size_t)m, sizeof *v, bench_cmp_double);
                    fprintf(stderr, " %s %.1f / %.1f / %.1f / %.1f;", fm_names[f], 1e6 * v[m / 10], 1e6 * v[m / 2],
                            1e6 * v[(m * 9) / 10], 1e6 * v[m - 1]);
                }
                fprintf(stderr, "\n");
                fflush(stdout);
            }
            free(pc);
            for (f = 0; f < nf; f++) {
                g_row_form = fm_names[f];
                csv_row("form", coll_names[c], fm_names[f], f == FM_BLOCKING ? "call" : f == FM_NONBLOCKING ? "call+wait" : "start+wait",
                        path, b, iters, reps, med[f], median(slow[f], reps), 0, 0, 0, 0, 0, 0, med[f] / med[0],
                        val[f] < 0 ? "-" : val[f] ? "pass" : "FAIL");
            }
        }
    }
#if FORM_HAVE_PERSISTENT
    for (c = 0; c < C_N; c++) if (g_preq[c] != MPI_REQUEST_NULL) MPI_Request_free(&g_preq[c]);
#endif
    g_row_form = "blocking";
}

/* (d) overlap, as OSU's osu_i* measure it (host-side compute): per size of -F from 1 MiB and per
 * collective, `pure` = median over repetitions of the mean I-call + MPI_Wait; then per iteration: the
 * I-call (init), the host spinning for `pure` (compute), MPI_Wait (wait); overlap = 100 - 100 x
 * (init + compute + wait - compute) / pure, OSU's formula. The path column says whether the launch
 * thread made the launches (launch=thread: libtlmpi's launcher counters moved by one per call),
 * so rows of TLMPI_LAUNCH_THREAD=0 runs never pool with those of =1. */
typedef tlmpi_status_t (*launch_counts_fn)(unsigned long long *, unsigned long long *);
static void spin_for(double s)
{
    double t0 = now();
    while (now() - t0 < s) {
    }
}
static void form_overlap(void)
{
    int c, si, rep, i, reps = o.lat_reps;
    launch_counts_fn lc;
    tlmpi_status_t (*lw)(unsigned long long *, unsigned long long *);
    *(void **)&lc = dlsym(RTLD_DEFAULT, "tlmpi_get_launch_stats");
    *(void **)&lw = dlsym(RTLD_DEFAULT, "tlmpi_get_launch_word_stats");
    if (g_rank == 0) {
        printf("\n## Overlap as OSU measures it (host compute = the pure time), %d ranks (us: median of %d repetitions "
               "of the mean over ranks)\n\n", g_size, reps);
        printf("| collective | bytes | path | pure I-call + wait | init | wait | overall - compute | overlap %% | wait after "
               "3 x compute | done at MPI_Test after 1 x (%%) |\n"
               "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
    }
    for (c = 0; c < C_N; c++) {
        for (si = 0; si < g_form_nsizes; si++) {
            size_t b = g_form_sizes[si];
            int iters = b >= o.large ? 10 : o.lat_iters;
            double pure[MAX_REPS], pm[MAX_REPS], ini[MAX_REPS], im[MAX_REPS], wt[MAX_REPS], wm[MAX_REPS], ov[MAX_REPS],
                om[MAX_REPS], w3[MAX_REPS], w3m[MAX_REPS], dn[MAX_REPS], dnm[MAX_REPS], mp, mi, mw, mo, ovl;
            unsigned long long l0 = 0, l1 = 0, li = 0, w0 = 0, w1 = 0, k0 = 0, k1 = 0;
            unsigned long long pb[32], pa[32], ab[N_NODE_ALGOS], aa[N_NODE_ALGOS];
            char path[128] = "";
            MPI_Request q;
            if (b < ((size_t)1 << 20) || b > g_maxb || !set_cfg("node", -1, NULL)) continue;
            for (i = 0; i < 3; i++) form_call(FM_NONBLOCKING, c, b);
            for (rep = 0; rep < reps; rep++) {
                double tp = 0, pmed;
                PMPI_Barrier(g_comm);
                for (i = 0; i < iters; i++) {
                    double t0 = now();
                    nb_call(c, b, g_s, g_r, &q);
                    wait1(&q);
                    tp += now() - t0;
                    PMPI_Barrier(g_comm);
                }
                form_reduce(tp / iters, pure, pm, rep);
                pmed = pure[rep] * 1e-6;
                if (rep == 0) {
                    snap(c, pb); snap_algos(c, ab);
                    if (lc) lc(&l0, &li);
                    if (lw) lw(&w0, &k0);
                }
                {
                    double ti = 0, tw = 0, tt = 0;
                    PMPI_Barrier(g_comm);
                    for (i = 0; i < iters; i++) {
                        double t0 = now(), t1, t2;
                        nb_call(c, b, g_s, g_r, &q);
                        t1 = now();
                        spin_for(pmed);
                        t2 = now();
                        wait1(&q);
                        ti += t1 - t0;
                        tw += now() - t2;
                        tt += now() - t0 - (t2 - t1);
                        PMPI_Barrier(g_comm);
                    }
                    form_reduce(ti / iters, ini, im, rep);
                    form_reduce(tw / iters, wt, wm, rep);
                    form_reduce(tt / iters, ov, om, rep);
                }
                {
                    /* the split of the wait: after a compute of 3 x pure (the kernel surely done:
                     * what completing a finished request costs), and how often an MPI_Test right
                     * after a compute of 1 x pure already finds the request done */
                    double tw3 = 0, ndone = 0;
                    PMPI_Barrier(g_comm);
                    for (i = 0; i < iters; i++) {
                        double t2;
                        int flag = 0;
                        nb_call(c, b, g_s, g_r, &q);
                        spin_for(3 * pmed);
                        t2 = now();
                        wait1(&q);
                        tw3 += now() - t2;
                        PMPI_Barrier(g_comm);
                        nb_call(c, b, g_s, g_r, &q);
                        spin_for(pmed);
                        if (MPI_Test(&q, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS) PMPI_Abort(MPI_COMM_WORLD, 3);
                        ndone += flag;
                        if (!flag) wait1(&q);
                        PMPI_Barrier(g_comm);
                    }
                    form_reduce(tw3 / iters, w3, w3m, rep);
                    form_reduce(ndone / iters * 1e-4, dn, dnm, rep); /* x 1e6 in form_reduce: percent */
                }
                if (rep == 0) {
                    unsigned ran = 0, all = 0, wr = 0, wall = 0, kw = 0, kall = 0;
                    snap(c, pa); snap_algos(c, aa);
                    served(pb, pa, ab, aa, path, sizeof path);
                    if (lc) lc(&l1, &li);
                    if (lw) lw(&w1, &k1);
                    ran = lc && l1 - l0 >= (unsigned long long)iters ? 1u : 0u;
                    wr = lw && w1 - w0 >= (unsigned long long)iters ? 1u : 0u; /* every start through the word */
                    kw = lw && k1 - k0 >= (unsigned long long)iters ? 1u : 0u; /* ... written by its kernel */
                    PMPI_Allreduce(&ran, &all, 1, MPI_UNSIGNED, MPI_BAND, g_comm);
                    PMPI_Allreduce(&wr, &wall, 1, MPI_UNSIGNED, MPI_BAND, g_comm);
                    PMPI_Allreduce(&kw, &kall, 1, MPI_UNSIGNED, MPI_BAND, g_comm);
                    snprintf(path + strlen(path), sizeof path - strlen(path), " launch=%s word=%s",
                             !lc ? "unknown" : all ? "thread" : "inline",
                             !lw ? "unknown" : kall ? "kernel" : wall ? "stream" : "off");
                }
            }
            mp = median(pure, reps);
            mi = median(ini, reps);
            mw = median(wt, reps);
            mo = median(ov, reps);
            ovl = 100.0 - 100.0 * mo / mp;
            if (ovl < 0) ovl = 0;
            if (g_rank == 0) {
                printf("| %s | %zu | %s | %.2f | %.2f | %.2f | %.2f | %.1f | %.2f | %.0f |\n", coll_names[c], b, path, mp, mi, mw,
                       mo, ovl, median(w3, reps), median(dn, reps));
                fflush(stdout);
            }
            g_row_form = "nonblocking";
            csv_row("form", coll_names[c], "nonblocking", "pure", path, b, iters, reps, mp, median(pm, reps), 0, 0, 0, 0, 0,
                    0, 1.0, "-");
            csv_row("form", coll_names[c], "nonblocking", "overlap-init", path, b, iters, reps, mi, median(im, reps), 0, 0,
                    0, 0, 0, 0, mi / mp, "-");
            csv_row("form", coll_names[c], "nonblocking", "overlap-wait", path, b, iters, reps, mw, median(wm, reps), 0, 0,
                    0, 0, 0, 0, mw / mp, "-");
            csv_row("form", coll_names[c], "nonblocking", "overlap-uncovered", path, b, iters, reps, mo, median(om, reps),
                    0, 0, 0, 0, 0, 0, mo / mp, "-");
        }
    }
}

/* What sections form and persist need first: no persistent request yet, the form counters' entry point. */
static void form_init(void)
{
#if FORM_HAVE_PERSISTENT
    int c;
    for (c = 0; c < C_N; c++) g_preq[c] = MPI_REQUEST_NULL;
#endif
    *(void **)&g_form_stats = dlsym(RTLD_DEFAULT, "tlmpi_get_form_stats");
    if (!g_form_stats && g_rank == 0) printf("\nnode_bench: this libtlmpi has no tlmpi_get_form_stats: forms not checked\n");
}

static void bench_form(void)
{
    form_init();
    form_return();
    form_overlap();
    form_b2b();
    form_persistent();
}

/* -S persist: form's table of blocking, non-blocking and persistent calls alone */
static void bench_persist(void)
{
    form_init();
    form_persistent();
}

/*
 * Section "reg" (-S reg): what a blocking call's first use of fresh buffers costs (the node tier's
 * registration cache: every rank exports its allocations and maps its peers'). Per repetition (-r,
 * at least 7) and size of -F from 1 MiB: fresh cudaMalloc send and receive buffers, then after a
 * barrier one MPI_Allreduce on them (first), after another one more (hit), then the buffers freed.
 * Reported: median over repetitions of the mean over ranks of each, and the median paired difference
 * (first - hit: the registration). What the lookups did (tlmpi_get_reg_stats: first registrations,
 * hits, pool fallbacks over the section) goes with the table; the generation carries /zc=.
 */
static void bench_reg(void)
{
    int si, rep, reps = o.lat_reps < 7 ? 7 : o.lat_reps > MAX_REPS ? MAX_REPS : o.lat_reps;
    tlmpi_status_t (*get)(tlmpi_reg_stats_t *) = NULL;
    tlmpi_reg_stats_t r0, r1;

    *(void **)&get = dlsym(RTLD_DEFAULT, "tlmpi_get_reg_stats");
    memset(&r0, 0, sizeof r0);
    memset(&r1, 0, sizeof r1);
    if (get) get(&r0);
    if (g_rank == 0) {
        printf("\n## A blocking MPI_Allreduce's first call on fresh buffers against its second, %d ranks, TLMPI_TIER=node "
               "(us: median of %d repetitions of the mean over ranks)\n\n| bytes | first | second | first - second "
               "(median paired) |\n| ---: | ---: | ---: | ---: |\n", g_size, reps);
    }
    if (!set_cfg("node", -1, NULL)) return;
    for (si = 0; si < g_form_nsizes; si++) {
        size_t b = g_form_sizes[si];
        double first[MAX_REPS], hit[MAX_REPS], d[MAX_REPS], sl[MAX_REPS], mf, mh, md;
        if (b < ((size_t)1 << 20)) continue;
        for (rep = 0; rep < reps; rep++) {
            float *s, *r;
            double t0, t[2];
            int k;
            CK(cudaMalloc((void **)&s, b));
            CK(cudaMalloc((void **)&r, b));
            CK(cudaMemset(s, 0, b));
            CK(cudaDeviceSynchronize());
            for (k = 0; k < 2; k++) {
                PMPI_Barrier(g_comm);
                t0 = now();
                MPI_Allreduce(s, r, (int)(b / sizeof(float)), MPI_FLOAT, MPI_SUM, g_comm);
                t[k] = now() - t0;
            }
            form_reduce(t[0], first, sl, rep);
            form_reduce(t[1], hit, sl, rep);
            d[rep] = first[rep] - hit[rep];
            PMPI_Barrier(g_comm);
            cudaFree(s);
            cudaFree(r);
        }
        mf = median(first, reps);
        mh = median(hit, reps);
        md = median(d, reps);
        if (g_rank == 0) {
            printf("| %zu | %.1f | %.1f | %.1f |\n", b, mf, mh, md);
            fflush(stdout);
        }
        g_row_form = "blocking";
        csv_row("reg", "allreduce", "first", "call", "node", b, 1, reps, mf, 0, 1, md, 0, 0, 0, 0, 0, "-");
        csv_row("reg", "allreduce", "second", "call", "node", b, 1, reps, mh, 0, 0, 0, 0, 0, 0, 0, 0, "-");
    }
    if (get) get(&r1);
    if (g_rank == 0) {
        printf("\nregistration cache over the section (rank 0): %llu first, %llu hit, %llu pool, %llu evicted; %d peer "
               "allocations mapped now\n", r1.firsts - r0.firsts, r1.hits - r0.hits, r1.pool - r0.pool,
               r1.evicted - r0.evicted, r1.mapped);
    }
}

/* ---------------------------------------------------------------- 5. stream-ordered calls and graphs */

/*
 * Section "graph" (-S graph): tlmpi's stream-ordered calls (tlmpi_*_enqueue) and CUDA graphs of
 * them against the floors of the same run, on the node tier (TLMPI_TIER=node). For every
 * collective and every size of -G (default 8 B, 64 KiB, 16, 64, 256 MiB; per-rank message bytes as
 * everywhere here), round robin per repetition (order reversed on odd ones), after a barrier each:
 *   floor-eager  K (-K, default 100) one-barrier node kernels (TLMPI_NODE_BARRIER, 1 CTA) launched
 *                back to back on the floor's transport (floor_setup), one wait at the end (sizes up
 *                to 64 KiB only);
 *   floor-graph  the same K kernels captured once into a CUDA graph, replayed, one wait. Where the
 *                kernels keep the epoch in device memory (cuda/kernels.h's dev_epoch) the floor's
 *                transport uses it (replays run real barriers); without it the flags of the own
 *                pool header are zeroed and every rank waits for every other (PMPI_Barrier) before
 *                each replay, outside the timing, so that the baked epochs wait again;
 *   enqueue      K tlmpi_<coll>_enqueue calls on one non-blocking stream (g_stream), one wait
 *                (stream polled as tlmpi would), on a communicator in the default usage mode;
 *   graph        the K calls captured once (cudaStreamBeginCapture, cudaStreamCaptureModeGlobal)
 *                into one graph, replayed, one wait; once on a communicator in the default mode
 *                (mixing: event nodes around each captured collective) and once on a dup prepared
 *                with TLMPI_ENQUEUE_NO_MIXING;
 *   blocking     K MPI_<coll> calls (the blocking path's time per call: the bandwidth baseline).
 * K is -k (default 4) from -L (16 MiB) on, where the repetitions are -E (5) instead of -r.
 * Per call = the item's time / K: median over the repetitions of the mean over ranks (and of the
 * slowest rank); paired: the median difference (95% CI) to the floor of the same repetition
 * (enqueue to floor-eager, graph to floor-graph). One validated call per form and size up to -V
 * (fresh data written before the launch: for the graphs a replay after the first, proving the
 * replay a fresh collective). Targets (issue 21): graph - floor-graph <= 1.5 us and enqueue -
 * floor-eager <= 2 us at 8 bytes; blocking / graph and blocking / enqueue >= 1 at 16 MiB and up.
 * Whether a graph ran is decided from what ran: every captured call returned MPI_SUCCESS,
 * cudaStreamEndCapture and cudaGraphInstantiate succeeded, tlmpi counted the K calls in
 * TLMPI_FORM_CAPTURE (on every rank) and the replays' cudaGraphLaunch succeeded (a failing launch
 * aborts); the eager rows need the K calls counted in TLMPI_FORM_ENQUEUE.
 * CSV rows: section "graph", mode = floor-eager, floor-graph, enqueue, graph-mixing,
 * graph-nomixing, blocking; algo b2bK; paired_* against the floor named above; ratio = blocking /
 * the row (>= 1: at least the blocking path's bandwidth); the generation's form field is
 * <form>.<usage mode>.<what ran>: enqueue.mixing.stream, graph.mixing.replayed,
 * graph.nomixing.replayed (.none where no graph ran: those rows are not timed), floor-eager.-.kernels,
 * floor-graph.-.replayed (floor-graph.-.replayed-zeroed without device epochs), blocking.-.call.
 * Without the enqueue API in the loaded libtlmpi (weak symbols) the section says so and is skipped.
 */
#pragma weak tlmpi_enqueue_prepare
#pragma weak tlmpi_allreduce_enqueue
#pragma weak tlmpi_allgather_enqueue
#pragma weak tlmpi_reduce_scatter_block_enqueue
#pragma weak tlmpi_enqueue_error
#define MiB_ ((size_t)1 << 20)
static size_t g_graph_sizes[MAX_SIZES] = { 8, 65536, 16 * MiB_, 64 * MiB_, 256 * MiB_ };
static int g_graph_nsizes = 5, g_graph_klarge = 4;
static MPI_Comm g_comm_nm; /* a dup of g_comm prepared with TLMPI_ENQUEUE_NO_MIXING */
static int g_floor_dev_epoch;

static int enq_call(int coll, size_t bytes, MPI_Comm comm)
{
    int n = (int)(bytes / 4);
    switch (coll) {
    case C_AR: return tlmpi_allreduce_enqueue(g_s, g_r, n, MPI_FLOAT, MPI_SUM, comm, (void *)g_stream);
    case C_AG: return tlmpi_allgather_enqueue(g_s, n, MPI_FLOAT, g_r, n, MPI_FLOAT, comm, (void *)g_stream);
    default: return tlmpi_reduce_scatter_block_enqueue(g_s, g_r, n, MPI_FLOAT, MPI_SUM, comm, (void *)g_stream);
    }
}

static void enq_k(int coll, size_t bytes, int k, MPI_Comm comm)
{
    int i, rc;
    for (i = 0; i < k; i++) {
        rc = enq_call(coll, bytes, comm);
        if (rc != MPI_SUCCESS) {
            fprintf(stderr, "node_bench[%d]: tlmpi_%s_enqueue of %zu bytes: rc %d (%s)\n", g_rank, coll_names[coll], bytes,
                    rc, tlmpi_enqueue_error());
            PMPI_Abort(MPI_COMM_WORLD, 3);
        }
    }
    spin_wait();
}

/* calls of coll counted in form f over every path */
static unsigned long long form_count(int coll, tlmpi_form_t f)
{
    unsigned long long n = 0;
    int k;
    for (k = 0; g_form_stats && k < g_npaths; k++) {
        tlmpi_stat_t s;
        if (g_form_stats(coll_ids[coll], (tlmpi_path_t)k, f, &s) == TLMPI_OK) n += s.calls;
    }
    return n;
}

/* capture k calls (coll >= 0) or k floor barrier kernels (coll < 0) on g_stream; 1 (on every rank) when the
 * graph is there and, for calls, tlmpi counted them as captured */
static int graph_make(int coll, size_t bytes, int k, MPI_Comm comm, cudaGraphExec_t *ge)
{
    cudaGraph_t g = NULL;
    cudaError_t e;
    unsigned long long c0 = coll >= 0 ? form_count(coll, TLMPI_FORM_CAPTURE) : 0;
    int i, ok = 1, rc;
    *ge = NULL;
    CK(cudaStreamBeginCapture(g_stream, coll >= 0 ? cudaStreamCaptureModeGlobal : cudaStreamCaptureModeThreadLocal));
    for (i = 0; i < k && ok; i++) {
        if (coll >= 0) {
            rc = enq_call(coll, bytes, comm);
            if (rc != MPI_SUCCESS) {
                if (ok) fprintf(stderr, "node_bench[%d]: captured tlmpi_%s_enqueue of %zu bytes: rc %d (%s)\n", g_rank,
                                coll_names[coll], bytes, rc, tlmpi_enqueue_error());
                ok = 0;
            }
        } else if ((rc = tlmpi_cuda_node_run(&g_x, &g_a, g_stream)) != 0) {
            fprintf(stderr, "node_bench[%d]: captured barrier kernel: %s\n", g_rank, cudaGetErrorString((cudaError_t)rc));
            ok = 0;
        }
    }
    e = cudaStreamEndCapture(g_stream, &g);
    if (e != cudaSuccess) {
        fprintf(stderr, "node_bench[%d]: cudaStreamEndCapture: %s\n", g_rank, cudaGetErrorString(e));
        cudaGetLastError();
        ok = 0;
    } else if (ok && (e = cudaGraphInstantiate(ge, g, 0)) != cudaSuccess) {
        fprintf(stderr, "node_bench[%d]: cudaGraphInstantiate: %s\n", g_rank, cudaGetErrorString(e));
        cudaGetLastError();
        *ge = NULL;
        ok = 0;
    }
    if (g) cudaGraphDestroy(g);
    if (coll >= 0 && form_count(coll, TLMPI_FORM_CAPTURE) - c0 != (unsigned long long)k) ok = 0;
    PMPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, g_comm);
    if (!ok && *ge) {
        cudaGraphExecDestroy(*ge);
        *ge = NULL;
    }
    return ok;
}

/* the floor graph's replays need re-armed flags where the epochs are baked into it */
static void floor_graph_prepare(void)
{
    if (g_floor_dev_epoch) return;
    CK(cudaMemset(g_pool, 0, TLMPI_NODE_HDR_BYTES));
    CK(cudaDeviceSynchronize());
    PMPI_Barrier(g_comm);
}

static void graph_run(cudaGraphExec_t ge)
{
    CK(cudaGraphLaunch(ge, g_stream));
    spin_wait();
}

/* fresh data, one enqueued call (how 0) or one replay of ge (K calls on the same buffers), checked */
static int graph_validate(int coll, size_t bytes, uint64_t seed, cudaGraphExec_t ge, MPI_Comm comm)
{
    size_t n = bytes / 4, in_n = coll == C_RSB ? n * (size_t)g_size : n, out_n = coll == C_AG ? n * (size_t)g_size : n, i;
    long long bad = 0, all = 0;
    int r;
    if (bytes > o.validate_max) return -1;
    for (i = 0; i < in_n; i++) g_h[i] = (float)gen_val(seed, g_rank, i);
    CK(cudaMemcpy(g_s, g_h, in_n * 4, cudaMemcpyHostToDevice));
    CK(cudaMemset(g_r, 0x7f, out_n * 4));
    CK(cudaDeviceSynchronize());
    if (ge) graph_run(ge);
    else enq_k(coll, bytes, 1, comm);
    CK(cudaMemcpy(g_h, g_r, out_n * 4, cudaMemcpyDeviceToHost));
    for (i = 0; i < out_n; i++) {
        float e = 0;
        if (coll == C_AG) e = (float)gen_val(seed, (int)(i / n), i % n);
        else for (r = 0; r < g_size; r++) e += (float)gen_val(seed, r, coll == C_RSB ? (size_t)g_rank * n + i : i);
        if (g_h[i] != e) bad++;
    }
    PMPI_Allreduce(&bad, &all, 1, MPI_LONG_LONG, MPI_SUM, g_comm);
    return all == 0;
}

static const char *vname(int v) { return v < 0 ? "-" : v ? "pass" : "FAIL"; }

static void bench_graph(void)
{
    enum { G_FE, G_FG, G_ENQ, G_GM, G_GN, G_BLK, G_N };
    static const char *const mode_names[G_N] = { "floor-eager", "floor-graph", "enqueue", "graph-mixing", "graph-nomixing", "blocking" };
    static double avg[G_N][MAX_REPS], slow[G_N][MAX_REPS];
    int c, si, rep, kk, k, i, rc;
    *(void **)&g_form_stats = dlsym(RTLD_DEFAULT, "tlmpi_get_form_stats");
    if (!tlmpi_allreduce_enqueue || !tlmpi_allgather_enqueue || !tlmpi_reduce_scatter_block_enqueue ||
        !tlmpi_enqueue_prepare || !tlmpi_enqueue_error || !g_form_stats) {
        if (g_rank == 0) printf("\nnode_bench: this libtlmpi has no stream-ordered entry points (tlmpi_*_enqueue): section graph skipped\n");
        return;
    }
    if (!set_cfg("node", -1, NULL)) return;
    PMPI_Comm_dup(g_comm, &g_comm_nm);
    rc = tlmpi_enqueue_prepare(g_comm, 0);
    if (rc == MPI_SUCCESS) rc = tlmpi_enqueue_prepare(g_comm_nm, TLMPI_ENQUEUE_NO_MIXING);
    if (rc != MPI_SUCCESS) {
        fprintf(stderr, "node_bench[%d]: tlmpi_enqueue_prepare: rc %d (%s)\n", g_rank, rc, tlmpi_enqueue_error());
        PMPI_Abort(MPI_COMM_WORLD, 3);
    }
    floor_setup();
#ifdef TLMPI_NODE_EPOCH_OFF
    g_x.dev_epoch = 1; /* a fresh pool: its header (and the epoch word) zeroed */
    g_floor_dev_epoch = 1;
#endif
    if (g_rank == 0) {
        printf("\n## Stream-ordered calls and CUDA graphs, %d ranks, TLMPI_TIER=node (us per call: median of the repetitions "
               "of the mean over ranks; K calls per item)\n\n", g_size);
        printf("- floors: K one-barrier node kernels (1 CTA) back to back, one wait (floor-eager), and captured once in "
               "a graph, replayed (floor-graph; epoch %s)\n", g_floor_dev_epoch ? "in device memory" : "baked, flags re-armed before each replay");
        printf("- targets (issue 21): graph - floor-graph <= 1.5 us, enqueue - floor-eager <= 2 us (8 B); blocking / "
               "row >= 1 (16 MiB and up)\n\n");
        printf("| collective | bytes | K | form (mode) | path (forms) | per call | slowest rank | - floor (paired) [95%% CI] | "
               "blocking / row | valid | graph ran | target |\n| --- | ---: | ---: | --- | --- | ---: | ---: | ---: | ---: | --- | --- | --- |\n");
    }
    for (si = 0; si < g_graph_nsizes; si++) {
        size_t b = g_graph_sizes[si];
        int large = b >= o.large, K = large ? g_graph_klarge : g_form_k, reps = large ? o.eff_reps : o.lat_reps;
        int floors = b <= 65536;
        if (b < 4 || b > g_maxb) continue;
        for (c = 0; c < C_N; c++) {
            cudaGraphExec_t gf = NULL, gm = NULL, gn = NULL;
            int okf = 0, okm, okn, val[G_N], have[G_N];
            char path[G_N][128], shape[G_N][24];
            unsigned long long pb[32], pa[32], ab[N_NODE_ALGOS], aa[N_NODE_ALGOS], e0, e1;
            for (k = 0; k < G_N; k++) { val[k] = -1; have[k] = 0; path[k][0] = 0; shape[k][0] = 0; }
            /* warm-up, paths and forms of the eager calls */
            for (i = 0; i < 2; i++) mpi_call(c, b);
            snap(c, pb); snap_algos(c, ab);
            e0 = form_count(c, TLMPI_FORM_ENQUEUE);
            enq_k(c, b, K, g_comm);
            e1 = form_count(c, TLMPI_FORM_ENQUEUE);
            snap(c, pa); snap_algos(c, aa);
            served(pb, pa, ab, aa, path[G_ENQ], sizeof path[G_ENQ]);
            {
                int cnt = e1 - e0 == (unsigned long long)K, all = 0;
                PMPI_Allreduce(&cnt, &all, 1, MPI_INT, MPI_MIN, g_comm);
                snprintf(path[G_ENQ] + strlen(path[G_ENQ]), sizeof path[G_ENQ] - strlen(path[G_ENQ]), " %s",
                         all ? "enqueue" : "enqueue-not-counted");
            }
            have[G_ENQ] = have[G_BLK] = 1;
            snprintf(path[G_BLK], sizeof path[G_BLK], "node blocking");
            /* the graphs (capture counted, warm replay) */
            okm = graph_make(c, b, K, g_comm, &gm);
            if (okm) shape_note(TLMPI_FORM_CAPTURE, shape[G_GM], sizeof shape[G_GM]);
            okn = graph_make(c, b, K, g_comm_nm, &gn);
            if (okn) shape_note(TLMPI_FORM_CAPTURE, shape[G_GN], sizeof shape[G_GN]);
            if (okm) graph_run(gm);
            if (okn) graph_run(gn);
            have[G_GM] = okm;
            have[G_GN] = okn;
            snprintf(path[G_GM], sizeof path[G_GM], "%s", okm ? "node capture" : "no graph");
            snprintf(path[G_GN], sizeof path[G_GN], "%s", okn ? "node capture" : "no graph");
            if (floors) {
                eager_floor(K);
                okf = graph_make(-1, 8, K, g_comm, &gf);
                if (okf) { floor_graph_prepare(); graph_run(gf); }
                have[G_FE] = 1;
                have[G_FG] = okf;
                snprintf(path[G_FE], sizeof path[G_FE], "kernel");
                snprintf(path[G_FG], sizeof path[G_FG], "%s", okf ? "kernel graph" : "no graph");
            }
            /* validation: fresh data before a launch (graphs: a replay after the first) */
            val[G_ENQ] = graph_validate(c, b, (uint64_t)time(NULL) ^ ((uint64_t)si << 24) ^ (uint64_t)c, NULL, g_comm);
            if (okm) val[G_GM] = graph_validate(c, b, (uint64_t)time(NULL) ^ ((uint64_t)si << 24) ^ ((uint64_t)c << 4) ^ 1, gm, g_comm);
            if (okn) val[G_GN] = graph_validate(c, b, (uint64_t)time(NULL) ^ ((uint64_t)si << 24) ^ ((uint64_t)c << 4) ^ 2, gn, g_comm);
            for (rep = 0; rep < reps; rep++) {
                for (kk = 0; kk < G_N; kk++) {
                    double t0;
                    k = rep & 1 ? G_N - 1 - kk : kk;
                    if (!have[k]) continue;
                    if (k == G_FG) floor_graph_prepare();
                    PMPI_Barrier(g_comm);
                    t0 = now();
                    switch (k) {
                    case G_FE: eager_floor(K); break;
                    case G_FG: graph_run(gf); break;
                    case G_ENQ: enq_k(c, b, K, g_comm); break;
                    case G_GM: graph_run(gm); break;
                    case G_GN: graph_run(gn); break;
                    default: for (i = 0; i < K; i++) mpi_call(c, b); break;
                    }
                    form_reduce((now() - t0) / K, avg[k], slow[k], rep);
                    if (k == G_ENQ || k == G_BLK)
                        shape_note(k == G_ENQ ? TLMPI_FORM_ENQUEUE : TLMPI_FORM_BLOCKING, shape[k], sizeof shape[k]);
                }
            }
            {
                double blk = median(avg[G_BLK], reps);
                for (k = 0; k < G_N; k++) {
                    double med, pd = 0, plo = 0, phi = 0, d[MAX_REPS], ratio;
                    int base = k == G_ENQ ? G_FE : (k == G_GM || k == G_GN) ? G_FG : -1, hp = 0;
                    const char *tgt = "-";
                    char form[64], alg[16];
                    if (k <= G_FG && !floors) continue;
                    snprintf(alg, sizeof alg, "b2b%d", K);
                    switch (k) {
                    case G_FE: snprintf(form, sizeof form, "floor-eager.-.kernels"); break;
                    case G_FG: snprintf(form, sizeof form, "floor-graph.-.%s", !okf ? "none" : g_floor_dev_epoch ? "replayed" : "replayed-zeroed"); break;
                    case G_ENQ: snprintf(form, sizeof form, "enqueue.mixing.stream"); break;
                    case G_GM: snprintf(form, sizeof form, "graph.mixing.%s", okm ? "replayed" : "none"); break;
                    case G_GN: snprintf(form, sizeof form, "graph.nomixing.%s", okn ? "replayed" : "none"); break;
                    default: snprintf(form, sizeof form, "blocking.-.call"); break;
                    }
                    g_row_form = form;
                    g_row_shape = !strncmp(path[k], "node", 4) ? shape[k] : ""; /* what ran: node kernels only */
                    if (!have[k]) {
                        if (g_rank == 0)
                            printf("| %s | %zu | %d | %s | %s | - | - | - | - | - | no | - |\n", coll_names[c], b, K,
                                   mode_names[k], path[k]);
                        csv_row("graph", coll_names[c], mode_names[k], alg, path[k], b, K, 0, NAN, NAN, 0, 0, 0, 0, 0, 0, 0,
                                "FAIL");
                        continue;
                    }
                    med = median(avg[k], reps);
                    ratio = blk / med;
                    if (base >= 0 && have[base] && floors) {
                        for (rep = 0; rep < reps; rep++) d[rep] = avg[k][rep] - avg[base][rep];
                        median_ci(d, reps, &pd, &plo, &phi);
                        hp = 1;
                    }
                    if (b == 8 && hp) tgt = pd <= (k == G_ENQ ? 2.0 : 1.5) ? "met" : "missed";
                    if (large && k >= G_ENQ && k != G_BLK) tgt = ratio >= 1.0 ? "met" : "missed";
                    if (g_rank == 0) {
                        printf("| %s | %zu | %d | %s | %s | %.2f | %.2f | ", coll_names[c], b, K, mode_names[k], path[k], med,
                               median(slow[k], reps));
                        if (hp) printf("%.2f [%.2f, %.2f] | ", pd, plo, phi);
                        else printf("- | ");
                        printf("%.3f | %s | %s | %s |\n", ratio, vname(val[k]),
                               k == G_GM || k == G_GN || k == G_FG ? "yes" : k == G_FE ? "-" : "no (eager)", tgt);
                        fflush(stdout);
                    }
                    csv_row("graph", coll_names[c], mode_names[k], alg, path[k], b, K, reps, med, median(slow[k], reps), hp, pd,
                            plo, phi, 0, 0, ratio, vname(val[k]));
                }
            }
            if (gm) cudaGraphExecDestroy(gm);
            if (gn) cudaGraphExecDestroy(gn);
            if (gf) cudaGraphExecDestroy(gf);
        }
    }
    floor_teardown();
    PMPI_Comm_free(&g_comm_nm);
    g_row_form = "blocking";
    g_row_shape = "";
}

/* ---------------------------------------------------------------- main */

/* ---------------------------------------------------------------- 6. the siblings */

/*
 * Section "sib" (-S sib): MPI_Allgatherv, MPI_Reduce_scatter, MPI_Bcast, MPI_Reduce and MPI_Alltoall
 * on the node tier (TLMPI_TIER=node, TLMPI_NODE_SIBLINGS=1) at every size of -J (B: the per-rank block
 * in bytes, float: allgather(v)'s own block, reduce_scatter(_block)'s result block, bcast's and
 * reduce's vector, alltoall's block per peer), round robin per repetition (order reversed on odd
 * ones), each item the mean of `iters` back-to-back blocking calls after a barrier; reported the
 * median over -R (at least 5) repetitions of the mean over ranks:
 *   v-forms against the fixed ones: MPI_Allgather against MPI_Allgatherv with equal counts (every
 *     rank B) and with one rank's count 8x the others' (node rank 0: 8c floats, the others c, with
 *     (n+7)c = nB/4: the same total bytes), MPI_Reduce_scatter_block against MPI_Reduce_scatter the
 *     same way (recvcounts); "equal / fixed" is the v-form's time over the fixed form's, "8x
 *     bandwidth" the equal-count time over the 8x time (bandwidth of the uneven call as a fraction of
 *     the equal call's at the same total bytes);
 *   node against staging (TLMPI_TIER=staging): the five siblings with equal counts; the speed-up
 *     is staging's time over node's;
 *   the floor (node_bench's floor: one barrier kernel + polling wait, -S lat) in the same
 *     repetitions: every node row minus it, which is what an 8-byte call adds to the host-synchronous floor.
 * Every item is validated once per size up to -V (fresh small integers, poisoned output, against
 * PMPI_* of the same call on host copies; the whole receive buffer compared). CSV: section sib, coll
 * the MPI call (allgatherv-8x, reduce_scatter-8x for the uneven ones), mode node or staging, algo the
 * call's counts (equal, 8x) or "floor", path the tier and algorithm that served (tlmpi's counters),
 * ratio: time over the floor.
 */
enum { SB_FLOOR, SB_AG, SB_AGV, SB_AGV8, SB_RSB, SB_RS, SB_RS8, SB_BC, SB_RED, SB_A2A,
       SB_AGV_S, SB_RS_S, SB_BC_S, SB_RED_S, SB_A2A_S, SB_N };
static const char *const sb_coll[SB_N] = { "barrier", "allgather", "allgatherv", "allgatherv-8x", "reduce_scatter_block",
                                           "reduce_scatter", "reduce_scatter-8x", "bcast", "reduce", "alltoall",
                                           "allgatherv", "reduce_scatter", "bcast", "reduce", "alltoall" };
static const tlmpi_coll_t sb_ids[SB_N] = { TLMPI_COLL_COUNT, TLMPI_COLL_ALLGATHER, TLMPI_COLL_ALLGATHERV,
                                           TLMPI_COLL_ALLGATHERV, TLMPI_COLL_REDUCE_SCATTER_BLOCK,
                                           TLMPI_COLL_REDUCE_SCATTER, TLMPI_COLL_REDUCE_SCATTER, TLMPI_COLL_BCAST,
                                           TLMPI_COLL_REDUCE, TLMPI_COLL_ALLTOALL, TLMPI_COLL_ALLGATHERV,
                                           TLMPI_COLL_REDUCE_SCATTER, TLMPI_COLL_BCAST, TLMPI_COLL_REDUCE,
                                           TLMPI_COLL_ALLTOALL };
static size_t g_sib_sizes[MAX_SIZES] = { 8, 65536, (size_t)1 << 20, (size_t)16 << 20, (size_t)64 << 20 };
static int g_sib_nsizes = 5;
static int *g_sb_counts, *g_sb_displs;

/* counts (floats) of item k at B bytes: equal B/4 each, or rank 0 8c and the others c, (n+7)c = nB/4 */
static void sib_counts(int k, size_t b)
{
    int q, n = g_size, c = (int)(b / 4), c8 = (int)((b / 4) * (size_t)n / (size_t)(n + 7));
    for (q = 0; q < n; q++) {
        g_sb_counts[q] = k == SB_AGV8 || k == SB_RS8 ? (q == 0 ? 8 * c8 : c8) : c;
        g_sb_displs[q] = q ? g_sb_displs[q - 1] + g_sb_counts[q - 1] : 0;
    }
}

/* one call of item k (counts set) on s -> r: the MPI's return code */
static int sib_call(int k, size_t b, const void *s, void *r, int pmpi)
{
    int c = (int)(b / 4);
    switch (k) {
    case SB_AG: return MPI_Allgather(s, c, MPI_FLOAT, r, c, MPI_FLOAT, g_comm);
    case SB_AGV: case SB_AGV8: case SB_AGV_S:
        return (pmpi ? PMPI_Allgatherv : MPI_Allgatherv)(s, g_sb_counts[g_rank], MPI_FLOAT, r, g_sb_counts, g_sb_displs,
                                                         MPI_FLOAT, g_comm);
    case SB_RSB: return MPI_Reduce_scatter_block(s, r, c, MPI_FLOAT, MPI_SUM, g_comm);
    case SB_RS: case SB_RS8: case SB_RS_S:
        return (pmpi ? PMPI_Reduce_scatter : MPI_Reduce_scatter)(s, r, g_sb_counts, MPI_FLOAT, MPI_SUM, g_comm);
    case SB_BC: case SB_BC_S: return (pmpi ? PMPI_Bcast : MPI_Bcast)(r, c, MPI_FLOAT, 0, g_comm);
    case SB_RED: case SB_RED_S: return (pmpi ? PMPI_Reduce : MPI_Reduce)(s, r, c, MPI_FLOAT, MPI_SUM, 0, g_comm);
    default: return (pmpi ? PMPI_Alltoall : MPI_Alltoall)(s, c, MPI_FLOAT, r, c, MPI_FLOAT, g_comm);
    }
}

/* elements of item k's input and output at B bytes (counts set) */
static void sib_elems(int k, size_t b, size_t *in_n, size_t *out_n)
{
    size_t c = b / 4, tot = 0;
    int q;
    for (q = 0; q < g_size; q++) tot += (size_t)g_sb_counts[q];
    switch (k) {
    case SB_AG: *in_n = c; *out_n = c * (size_t)g_size; break;
    case SB_AGV: case SB_AGV8: case SB_AGV_S: *in_n = (size_t)g_sb_counts[g_rank]; *out_n = tot; break;
    case SB_RSB: *in_n = c * (size_t)g_size; *out_n = c; break;
    case SB_RS: case SB_RS8: case SB_RS_S: *in_n = tot; *out_n = (size_t)g_sb_counts[g_rank]; break;
    case SB_BC: case SB_BC_S: *in_n = 0; *out_n = c; break;
    case SB_RED: case SB_RED_S: *in_n = c; *out_n = c; break;
    default: *in_n = *out_n = c * (size_t)g_size; break;
    }
}

static int sib_set(int k)
{
    return set_cfg(k >= SB_AGV_S ? "staging" : "node", -1, NULL);
}

/* per-call seconds of iters calls of item k after a barrier */
static double sib_time(int k, size_t b, int iters)
{
    double t0;
    int i;
    if (k == SB_FLOOR) {
        PMPI_Barrier(g_comm);
        t0 = now();
        for (i = 0; i < iters; i++) barrier_once(&g_x, &g_a);
        return (now() - t0) / iters;
    }
    sib_counts(k, b);
    PMPI_Barrier(g_comm);
    t0 = now();
    for (i = 0; i < iters; i++) {
        int rc = sib_call(k, b, g_s, g_r, 0);
        if (rc != MPI_SUCCESS) {
            fprintf(stderr, "node_bench[%d]: %s of %zu bytes: rc %d\n", g_rank, sb_coll[k], b, rc);
            PMPI_Abort(MPI_COMM_WORLD, 3);
        }
    }
    return (now() - t0) / iters;
}

/* item k once on fresh data against PMPI_* of the same call on host copies: 1 = right on every rank */
static int sib_validate(int k, size_t b, uint64_t seed)
{
    size_t in_n, out_n, i;
    float *hi, *hr, *hg;
    long long bad = 0, all = 0;
    int rc;
    sib_counts(k, b);
    sib_elems(k, b, &in_n, &out_n);
    hi = malloc(in_n * 4 + 4);
    hr = malloc(out_n * 4 + 4);
    hg = malloc(out_n * 4 + 4);
    for (i = 0; i < in_n; i++) hi[i] = (float)gen_val(seed, g_rank, i);
    for (i = 0; i < out_n; i++) hr[i] = k == SB_BC || k == SB_BC_S ? (g_rank == 0 ? (float)gen_val(seed, 99, i) : -7.f) : -7.f;
    CK(cudaMemcpy(g_s, hi, in_n * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(g_r, hr, out_n * 4, cudaMemcpyHostToDevice));
    rc = sib_call(k, b, g_s, g_r, 0);
    if (rc == MPI_SUCCESS) rc = sib_call(k, b, hi, hr, 1);
    CK(cudaMemcpy(hg, g_r, out_n * 4, cudaMemcpyDeviceToHost));
    if (rc != MPI_SUCCESS) bad = 1;
    else if ((k != SB_RED && k != SB_RED_S) || g_rank == 0) bad = memcmp(hg, hr, out_n * 4) != 0;
    free(hi);
    free(hr);
    free(hg);
    PMPI_Allreduce(&bad, &all, 1, MPI_LONG_LONG, MPI_SUM, g_comm);
    return all == 0;
}

static void bench_sib(void)
{
    static double avg[SB_N][MAX_REPS], slow[SB_N][MAX_REPS], M[MAX_SIZES][SB_N];
    static char P[MAX_SIZES][SB_N][64];
    static int V[MAX_SIZES][SB_N], done[MAX_SIZES];
    int si, k, kk, rep, reps = o.reps < 5 ? 5 : o.reps;

    g_sb_counts = calloc((size_t)g_size, sizeof(int));
    g_sb_displs = calloc((size_t)g_size, sizeof(int));
    if (tlmpi_config_set("NODE_SIBLINGS", "1") != TLMPI_OK && g_rank == 0)
        fprintf(stderr, "node_bench: tlmpi_config_set(NODE_SIBLINGS, 1) failed: the siblings' rows say what served\n");
    floor_setup();
    for (si = 0; si < g_sib_nsizes; si++) {
        size_t b = g_sib_sizes[si];
        double med[SB_N];
        int iters[SB_N], valid[SB_N];
        char path[SB_N][64];
        if (b < 4 || b > g_maxb) continue;
        for (k = 0; k < SB_N; k++) {
            unsigned long long pb[32], pa[32], ab[N_NODE_ALGOS], aa[N_NODE_ALGOS];
            double t, tmax = 0;
            int i, a;
            valid[k] = -1;
            snprintf(path[k], sizeof path[k], "floor");
            iters[k] = 1;
            if (k != SB_FLOOR && !sib_set(k)) { iters[k] = 0; continue; }
            if (k != SB_FLOOR) {
                for (i = 0; i < g_npaths; i++) {
                    tlmpi_stat_t st;
                    pb[i] = tlmpi_get_stats(sb_ids[k], (tlmpi_path_t)i, &st) == TLMPI_OK ? st.calls : 0;
                }
                for (a = 0; a < N_NODE_ALGOS; a++) {
                    tlmpi_stat_t st;
                    ab[a] = g_algo_stats && P_NODE >= 0 && g_algo_stats(sb_ids[k], (tlmpi_path_t)P_NODE, node_algos[a], &st) == TLMPI_OK ? st.calls : 0;
                }
                if (b <= o.validate_max) valid[k] = sib_validate(k, b, (uint64_t)time(NULL) ^ ((uint64_t)si << 20) ^ (uint64_t)k);
            }
            (void)sib_time(k, b, 2); /* warm-up */
            t = sib_time(k, b, b >= ((size_t)1 << 20) ? 3 : 10);
            PMPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, g_comm);
            iters[k] = (int)(o.target_s / (tmax > 0 ? tmax : 1e-6));
            iters[k] = iters[k] < 1 ? 1 : iters[k] > 2000 ? 2000 : iters[k];
            if (k != SB_FLOOR) {
                for (i = 0; i < g_npaths; i++) {
                    tlmpi_stat_t st;
                    pa[i] = tlmpi_get_stats(sb_ids[k], (tlmpi_path_t)i, &st) == TLMPI_OK ? st.calls : 0;
                }
                for (a = 0; a < N_NODE_ALGOS; a++) {
                    tlmpi_stat_t st;
                    aa[a] = g_algo_stats && P_NODE >= 0 && g_algo_stats(sb_ids[k], (tlmpi_path_t)P_NODE, node_algos[a], &st) == TLMPI_OK ? st.calls : 0;
                }
                served(pb, pa, ab, aa, path[k], sizeof path[k]);
            }
        }
        for (rep = 0; rep < reps; rep++) {
            for (kk = 0; kk < SB_N; kk++) {
                double t, sum = 0, mx = 0;
                k = rep & 1 ? SB_N - 1 - kk : kk;
                if (!iters[k]) continue;
                if (k != SB_FLOOR) sib_set(k);
                t = sib_time(k, b, iters[k]);
                PMPI_Allreduce(&t, &sum, 1, MPI_DOUBLE, MPI_SUM, g_comm);
                PMPI_Allreduce(&t, &mx, 1, MPI_DOUBLE, MPI_MAX, g_comm);
                avg[k][rep] = sum / g_size * 1e6;
                slow[k][rep] = mx * 1e6;
            }
        }
        for (k = 0; k < SB_N; k++) med[k] = iters[k] ? median(avg[k], reps) : NAN;
        g_row_form = "blocking";
        for (k = 0; k < SB_N; k++) {
            const char *v = valid[k] < 0 ? "-" : valid[k] ? "pass" : "FAIL";
            if (!iters[k]) continue;
            csv_row("sib", sb_coll[k], k == SB_FLOOR ? "floor" : k >= SB_AGV_S ? "staging" : "node",
                    k == SB_FLOOR ? "floor" : k == SB_AGV8 || k == SB_RS8 ? "8x" : "equal", path[k], b, iters[k], reps,
                    med[k], median(slow[k], reps), 0, 0, 0, 0, 0, 0, med[k] / med[SB_FLOOR], v);
        }
        memcpy(M[si], med, sizeof med);
        memcpy(V[si], valid, sizeof valid);
        memcpy(P[si], path, sizeof path);
        done[si] = 1;
    }
    if (g_rank == 0) {
        static const int pair[5][2] = { { SB_AGV, SB_AGV_S }, { SB_RS, SB_RS_S }, { SB_BC, SB_BC_S }, { SB_RED, SB_RED_S },
                                        { SB_A2A, SB_A2A_S } };
        printf("\n## The siblings, %d ranks, TLMPI_TIER=node with TLMPI_NODE_SIBLINGS=1 (us per call: median of %d "
               "repetitions of the mean over ranks; B = the per-rank block)\n\n", g_size, reps);
        printf("| B | floor | allgather | allgatherv equal | equal / fixed | allgatherv 8x | 8x bandwidth | "
               "reduce_scatter_block | reduce_scatter equal | equal / fixed | reduce_scatter 8x | 8x bandwidth |\n"
               "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
        for (si = 0; si < g_sib_nsizes; si++) {
            const double *m = M[si];
            if (!done[si]) continue;
            printf("| %zu | %.2f | %.2f | %.2f | %.3f | %.2f | %.3f | %.2f | %.2f | %.3f | %.2f | %.3f |\n", g_sib_sizes[si],
                   m[SB_FLOOR], m[SB_AG], m[SB_AGV], m[SB_AGV] / m[SB_AG], m[SB_AGV8], m[SB_AGV] / m[SB_AGV8], m[SB_RSB],
                   m[SB_RS], m[SB_RS] / m[SB_RSB], m[SB_RS8], m[SB_RS] / m[SB_RS8]);
        }
        printf("\n| B | call | node | staging | staging / node | node - floor | path (node; staging) | valid (node, staging) |\n"
               "| ---: | --- | ---: | ---: | ---: | ---: | --- | --- |\n");
        for (si = 0; si < g_sib_nsizes; si++) {
            const double *m = M[si];
            if (!done[si]) continue;
            for (k = 0; k < 5; k++) {
                int n = pair[k][0], st = pair[k][1];
                printf("| %zu | %s | %.2f | %.2f | %.2f | %.2f | %s; %s | %s, %s |\n", g_sib_sizes[si], sb_coll[n], m[n], m[st],
                       m[st] / m[n], m[n] - m[SB_FLOOR], P[si][n], P[si][st], vname(V[si][n]), vname(V[si][st]));
            }
        }
        printf("\nvalid / path of the fixed forms and the 8x calls:");
        for (si = 0; si < g_sib_nsizes; si++) {
            if (!done[si]) continue;
            printf(" %zu:", g_sib_sizes[si]);
            for (k = SB_AG; k <= SB_RS8; k++)
                if (k == SB_AG || k == SB_AGV8 || k == SB_RSB || k == SB_RS8)
                    printf(" %s %s %s;", sb_coll[k], vname(V[si][k]), P[si][k]);
        }
        printf("\n");
        fflush(stdout);
    }
    floor_teardown();
    free(g_sb_counts);
    free(g_sb_displs);
}

static int parse_size(const char *s, size_t *out)
{
    char *end;
    double v;
    errno = 0;
    v = strtod(s, &end);
    if (errno || end == s || v < 0) return -1;
    switch (tolower((unsigned char)*end)) {
    case 'k': v *= 1024.0; end++; break;
    case 'm': v *= 1048576.0; end++; break;
    case 'g': v *= 1073741824.0; end++; break;
    default: break;
    }
    if (*end) return -1;
    *out = (size_t)v;
    return 0;
}

static int parse_sizes(const char *arg, size_t *out, int *n)
{
    char buf[1024], *tok, *save = NULL;
    snprintf(buf, sizeof buf, "%s", arg);
    *n = 0;
    for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (*n == MAX_SIZES || parse_size(tok, &out[*n])) return -1;
        out[*n] = out[*n] / 4 * 4; /* whole floats */
        (*n)++;
    }
    return 0;
}

static void usage(void)
{
    printf("usage: node_bench [options]\n"
           "  -s LIST   sweep sizes, per-rank message bytes (default 8,64,512,4k,32k,256k,2m,16m,64m,256m)\n"
           "  -e LIST   efficiency sizes (default 64m,256m)\n"
           "  -S LIST   sections: lat,sweep,eff,form,persist,reg,graph,sib (default lat,sweep,eff; form: the\n"
           "            non-blocking and persistent forms against blocking and the floors; persist: only form's\n"
           "            table of blocking, non-blocking and persistent calls; reg: the first call on fresh\n"
           "            buffers of -F's sizes against the next; graph: tlmpi_*_enqueue on a stream and\n"
           "            replayed CUDA graphs against the eager and graph floors; sib: the five siblings on the\n"
           "            node tier against the floor, staging and the fixed-count forms, equal and 8x counts)\n"
           "  -J LIST   sib: per-rank block sizes (default 8,64k,1m,16m,64m)\n"
           "  -K N      form, graph: back-to-back calls (default 100)\n"
           "  -F LIST   form: persistent / non-blocking / blocking sizes (default 8,1m,16m,64m)\n"
           "  -G LIST   graph (-S graph: enqueued calls and CUDA graphs against the floors): sizes\n"
           "            (default 8,64k,16m,64m,256m); K of -K below -L, -k N from -L on (default 4)\n"
           "  -r N      latency repetitions (default 21)   -i N  latency calls per repetition (default 200)\n"
           "  -j N      staging latency calls (default 40)  -R N  sweep repetitions (default 3; 1 from -L)\n"
           "  -E N      efficiency repetitions (default 5)  -L SIZE  'large' from this size (default 16m)\n"
           "  -w SEC    target seconds per sweep measurement (default 0.05)\n"
           "  -V SIZE   validate sweep sizes up to SIZE (default 2m; 0: none)\n"
           "  -o FILE   append CSV rows    --as-test  exit 77 without a GPU\n");
}

int main(int argc, char **argv)
{
    int ndev = 0, i, min_dev = 0, local = 0, k;
    MPI_Comm node;
    size_t maxs = 0;
    struct cudaDeviceProp prop;
    char date[64];
    time_t tn = time(NULL);

    MPI_Init(&argc, &argv);
    PMPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &g_size);
    parse_sizes("8,64,512,4k,32k,256k,2m,16m,64m,256m", o.sizes, &o.nsizes);
    parse_sizes("64m,256m", o.eff, &o.neff);
    o.lat_reps = 21;
    o.lat_iters = 200;
    o.stg_iters = 40;
    o.reps = 3;
    o.eff_reps = 5;
    o.target_s = 0.05;
    o.validate_max = (size_t)2 << 20;
    o.large = (size_t)16 << 20;
    o.do_lat = o.do_sweep = o.do_eff = 1;
    for (i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int bad = 0;
        if (!strcmp(a, "--as-test")) { o.as_test = 1; continue; }
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            if (g_rank == 0) usage();
            PMPI_Finalize();
            return 0;
        }
        if (!v || a[0] != '-' || strlen(a) != 2) bad = 1;
        else {
            i++;
            switch (a[1]) {
            case 's': bad = parse_sizes(v, o.sizes, &o.nsizes); break;
            case 'e': bad = parse_sizes(v, o.eff, &o.neff); break;
            case 'S':
                o.do_lat = strstr(v, "lat") != NULL;
                o.do_sweep = strstr(v, "sweep") != NULL;
                o.do_eff = strstr(v, "eff") != NULL;
                o.do_form = strstr(v, "form") != NULL;
                o.do_graph = strstr(v, "graph") != NULL;
                o.do_persist = strstr(v, "persist") != NULL;
                o.do_reg = strstr(v, "reg") != NULL;
                o.do_sib = strstr(v, "sib") != NULL;
                break;
            case 'K': g_form_k = atoi(v); bad = g_form_k < 1 || g_form_k > FORM_MAXK; break;
            case 'F': bad = parse_sizes(v, g_form_sizes, &g_form_nsizes); break;
            case 'G': bad = parse_sizes(v, g_graph_sizes, &g_graph_nsizes); break;
            case 'J': bad = parse_sizes(v, g_sib_sizes, &g_sib_nsizes); break;
            case 'k': g_graph_klarge = atoi(v); bad = g_graph_klarge < 1 || g_graph_klarge > FORM_MAXK; break;
            case 'r': o.lat_reps = atoi(v); break;
            case 'i': o.lat_iters = atoi(v); break;
            case 'j': o.stg_iters = atoi(v); break;
            case 'R': o.reps = atoi(v); break;
            case 'E': o.eff_reps = atoi(v); break;
            case 'L': bad = parse_size(v, &o.large); break;
            case 'w': o.target_s = atof(v); break;
            case 'V': bad = parse_size(v, &o.validate_max); break;
            case 'o': o.csv = v; break;
            default: bad = 1;
            }
        }
        if (bad || o.lat_reps < 1 || o.lat_reps > MAX_REPS || o.reps < 1 || o.reps > MAX_REPS || o.eff_reps < 1 ||
            o.eff_reps > MAX_REPS || o.lat_iters < 1 || o.stg_iters < 1) {
            if (g_rank == 0) {
                fprintf(stderr, "node_bench: bad argument %s\n", a);
                usage();
            }
            PMPI_Finalize();
            return 2;
        }
    }
    PMPI_Comm_dup(MPI_COMM_WORLD, &g_comm);
    if (cudaGetDeviceCount(&ndev) != cudaSuccess) {
        cudaGetLastError();
        ndev = 0;
    }
    PMPI_Allreduce(&ndev, &min_dev, 1, MPI_INT, MPI_MIN, g_comm);
    if (min_dev == 0) {
        if (g_rank == 0) printf("node_bench: no GPU (on some rank): nothing to measure\n");
        PMPI_Comm_free(&g_comm);
        MPI_Finalize();
        return o.as_test ? 77 : 0;
    }
    PMPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    PMPI_Comm_rank(node, &local);
    PMPI_Comm_size(node, &k);
    PMPI_Comm_free(&node);
    if (k != g_size) {
        if (g_rank == 0) printf("node_bench: the ranks span several nodes; run it on one node\n");
        PMPI_Comm_free(&g_comm);
        MPI_Finalize();
        return 1;
    }
    CK(cudaSetDevice(local % ndev));
    if (cudaGetDeviceProperties(&prop, local % ndev) != cudaSuccess) { /* (not in the CPU fakes) */
        cudaGetLastError();
        memset(&prop, 0, sizeof prop);
        snprintf(prop.name, sizeof prop.name, "?");
        cudaDeviceGetAttribute(&prop.multiProcessorCount, cudaDevAttrMultiProcessorCount, local % ndev);
    }
    CK(cudaStreamCreateWithFlags(&g_stream, cudaStreamNonBlocking));
    for (k = 0; k < 32; k++) {
        const char *n = tlmpi_path_name((tlmpi_path_t)k);
        if (!n) break;
        if (!strcmp(n, "node")) P_NODE = k;
    }
    g_npaths = k;
    *(void **)&g_algo_stats = dlsym(RTLD_DEFAULT, "tlmpi_get_algo_stats");
    *(void **)&g_describe = dlsym(RTLD_DEFAULT, "tlmpi_comm_describe");
    *(void **)&g_node_shape = dlsym(RTLD_DEFAULT, "tlmpi_get_node_shape");
    for (i = 0; o.do_sweep && i < o.nsizes; i++) maxs = o.sizes[i] > maxs ? o.sizes[i] : maxs;
    for (i = 0; o.do_eff && i < o.neff; i++) maxs = o.eff[i] > maxs ? o.eff[i] : maxs;
    if (o.do_persist || o.do_reg) for (i = 0; i < g_form_nsizes; i++) maxs = g_form_sizes[i] > maxs ? g_form_sizes[i] : maxs;
    if (o.do_form) {
        for (i = 0; i < g_form_nsizes; i++) maxs = g_form_sizes[i] > maxs ? g_form_sizes[i] : maxs;
        if (maxs < ((size_t)16 << 20)) maxs = (size_t)16 << 20; /* (a): 16 MiB */
        if (maxs * (size_t)g_size < (size_t)g_form_k * 256) maxs = (size_t)g_form_k * 256; /* (b): K slots */
    }
    if (o.do_graph) for (i = 0; i < g_graph_nsizes; i++) maxs = g_graph_sizes[i] > maxs ? g_graph_sizes[i] : maxs;
    if (o.do_sib) for (i = 0; i < g_sib_nsizes; i++) maxs = g_sib_sizes[i] > maxs ? g_sib_sizes[i] : maxs;
    if (maxs < 64) maxs = 64;
    g_maxb = maxs;
    CK(cudaMalloc((void **)&g_s, maxs * (size_t)g_size + 256));
    CK(cudaMalloc((void **)&g_r, maxs * (size_t)g_size + 256));
    CK(cudaMemset(g_s, 0, maxs * (size_t)g_size + 256));
    g_h = malloc((o.validate_max > 64 ? o.validate_max : 64) * (size_t)g_size + 256 + (o.do_form ? (size_t)g_form_k * 256 : 0));
    gen_setup();
    if (o.csv && g_rank == 0) {
        g_csv = fopen(o.csv, "a");
        if (g_csv && ftell(g_csv) == 0)
            fprintf(g_csv, "section,nranks,coll,mode,algo,path,bytes,iters,reps,median_us,slowest_us,paired_us,"
                           "paired_lo_us,paired_hi_us,hbm_bytes,gbps,ratio,valid,generation\n");
    }
    strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", gmtime(&tn));
    if (g_rank == 0) {
        printf("# node_bench: tlmpi %s, %d ranks on %s (%d SMs), %s, MPS %s, node path label %s\n", tlmpi_version(),
               g_size, prop.name, prop.multiProcessorCount, date, getenv("CUDA_MPS_PIPE_DIRECTORY") ? "on" : "off",
               P_NODE >= 0 ? "found" : "MISSING (no node tier)");
        fflush(stdout);
    }
    if (g_describe) {
        char buf[4096];
        set_cfg("node", -1, NULL);
        mpi_call(C_AR, 8);
        if (g_describe(g_comm, buf, sizeof buf) == TLMPI_OK) {
            /* the node kernels' CTA sizing in the generation: CTAs of a kernel that may share the GPU
             * with another of the process, and of a blocking call's kernel alone (the columns) */
            static const char key[] = " CTAs max (blocking calls alone on the GPU: ";
            const char *m = strstr(buf, key);
            if (m) {
                const char *a = m;
                size_t len = strlen(g_gen_base);
                while (a > buf && a[-1] >= '0' && a[-1] <= '9') a--;
                snprintf(g_gen_base + len, sizeof g_gen_base - len, "/ctas=%d:%d", atoi(a), atoi(m + sizeof key - 1));
            }
            /* the barriers' scope (the plan line names GPU scope): the floor and kernel-alone rows
             * barrier at the same scope as tlmpi's kernels, and the generation says which */
            g_gpu_scope = strstr(buf, "barriers at GPU scope") != NULL;
            {
                size_t len = strlen(g_gen_base);
                snprintf(g_gen_base + len, sizeof g_gen_base - len, "/barrier=%s", g_gpu_scope ? "gpu" : "sys");
            }
            if (g_rank == 0) printf("\nplan (TLMPI_TIER=node):\n\n```\n%s\n```\n", buf);
        }
    }
    if (o.do_lat) bench_latency();
    if (o.do_sweep) bench_sweep();
    if (o.do_eff) bench_eff();
    if (o.do_form) bench_form();
    if (o.do_persist && !o.do_form) bench_persist();
    if (o.do_reg) bench_reg();
    if (o.do_graph) bench_graph();
    if (o.do_sib) bench_sib();
    set_cfg("auto", -1, NULL);
    if (g_csv) fclose(g_csv);
    CK(cudaStreamDestroy(g_stream));
    cudaFree(g_s);
    cudaFree(g_r);
    free(g_h);
    PMPI_Comm_free(&g_comm);
    MPI_Finalize();
    return 0;
}
