/*
 * tlmpi_bench: OSU-style size sweep of MPI_Allreduce, MPI_Allgather and MPI_Reduce_scatter_block
 * on CUDA device buffers, through tlmpi (auto and each forced tier) and through NCCL called
 * directly, in one run. Also measures host<->device copy rates (-H) so that the staging tier can
 * be compared with what the PCIe/C2C link gives.
 *
 * Conventions (NCCL's, see docs/perf/gpu.md):
 *   bytes (S)  : allreduce the full vector; allgather sendcount*n*elem; reduce_scatter recvcount*n*elem
 *   algbw      : S / t                      (GB/s = 1e9 bytes/s)
 *   busbw      : algbw * 2(n-1)/n (allreduce), algbw * (n-1)/n (allgather, reduce_scatter); 0 at n=1
 *   latency    : per-call average over `iters` back-to-back blocking calls on each rank; avg is the
 *                mean over ranks, min/max the extremes over ranks; with -r R, medians over R
 *                round-robin repetitions (every mode once per repetition, so drift hits all alike;
 *                the order of the modes is reversed on odd repetitions, so no mode always runs first).
 *   d_raw      : paired overhead against raw NCCL: for each repetition, this mode's latency minus
 *                raw NCCL's latency in the same repetition; the median of those differences and a
 *                distribution-free 95% confidence interval of it (order statistics). With many short
 *                repetitions (-r 101 -t 0.01) this resolves a few tenths of a microsecond.
 *
 * Every CSV row carries a generation string: library version, mode, path that actually served
 * the row (from tlmpi's counters), algorithm, the behaviour-changing environment knobs and a hash
 * over all of that plus MPI/NCCL/CUDA versions, so rows of different configurations never share
 * a generation.
 *
 * The bench's own bookkeeping collectives use PMPI_* so they neither go through tlmpi nor show in
 * its counters.
 */
#include "config.h"

#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cuda_runtime_api.h>
#include <mpi.h>
#ifdef HAVE_NCCL
#include <nccl.h>
#endif

#include "tlmpi.h"
#include "bench_stats.h"

extern char **environ;

#define BENCH_MAX_SIZES 64
#define BENCH_MAX_MODES 15
#define BENCH_MAX_REPS 1024
#define BENCH_GEN_LEN 1024

/* ---------------------------------------------------------------- options and small types */

typedef enum { DT_FLOAT, DT_DOUBLE, DT_INT, DT_BF16, DT_F16, DT_CHAR, DT_COUNT } bench_dt_t;
static const char *const dt_names[DT_COUNT] = {"float", "double", "int", "bf16", "f16", "char"};
static const int dt_sizes[DT_COUNT] = {4, 8, 4, 2, 2, 1};

/* node and hier (forced tiers; hier: its auto algorithm, the fused kernels where their rail exists),
 * hier-steps (hier's host-ordered steps: the tables name hier/2d, allreduce hier/oneshot up to
 * 64 KiB), node-flat (the node tier on the same ranks as one node: a communicator of its own, built
 * with TLMPI_TOPO_RANKS_PER_NODE=0, so a run on fake nodes measures 2D and flat side by side),
 * hier-gin and hier-emulated (hier on a communicator of its own each, built with TLMPI_HIER_FUSED=gin
 * resp. emulated, so both rails of the fused kernels are measured in one run; a row's algorithm field
 * says which rail served, from the communicator's plan: fused-gin:ctx=C:groups=G with NCCL's granted
 * context count, fused-emulated:groups=G, or steps where the fused kernels are not set up),
 * hier-gin-g1, hier-gin-g2, hier-gin-g4 (hier-gin with TLMPI_HIER_GROUPS=1, 2, 4: the rail groups knob
 * in one run; the GIN context count is NCCL's, NCCL_GIN_NCONTEXTS, one per process) and
 * tuned (auto with the tuning file $TLMPI_BENCH_TUNING_FILE; every other mode runs without one) are
 * measured only when -M names them */
typedef enum { MODE_AUTO, MODE_NCCL, MODE_STAGING, MODE_MPI, MODE_RAW_NCCL, MODE_NODE, MODE_HIER, MODE_TUNED, MODE_HIER_STEPS, MODE_NODE_FLAT,
               MODE_HIER_GIN, MODE_HIER_EMULATED, MODE_HIER_GIN_G1, MODE_HIER_GIN_G2, MODE_HIER_GIN_G4, MODE_COUNT } bench_mode_t;
#define MODE_DEFAULT_COUNT (MODE_RAW_NCCL + 1)
static const char *const mode_names[MODE_COUNT] = {"auto", "nccl", "staging", "mpi", "raw-nccl", "node", "hier", "tuned", "hier-steps", "node-flat",
                                                    "hier-gin", "hier-emulated", "hier-gin-g1", "hier-gin-g2", "hier-gin-g4"};

static const tlmpi_coll_t coll_ids[3] = {TLMPI_COLL_ALLREDUCE, TLMPI_COLL_ALLGATHER,
                                         TLMPI_COLL_REDUCE_SCATTER_BLOCK};
static const char *const coll_names[3] = {"allreduce", "allgather", "reduce_scatter"};

typedef struct {
    size_t sizes[BENCH_MAX_SIZES];
    int nsizes;
    int colls[3];
    int ncolls;
    int modes[BENCH_MAX_MODES];
    int nmodes;
    bench_dt_t dt;
    int iters;          /* 0 = choose from the warm-up timing and target_s */
    int warmup;         /* -1 = 20 calls up to 1 MiB, 5 above */
    int reps;
    int validate;
    int copy_test;      /* -H: host<->device copy rates */
    int as_test;        /* --as-test: exit 77 when there is no GPU */
    double target_s;    /* auto iterations: aim at this much time per measurement */
    const char *csv;
} bench_opts_t;

/* ---------------------------------------------------------------- process-wide state */

static int g_rank, g_size;
static MPI_Comm g_comm;
static MPI_Comm g_flat = MPI_COMM_NULL; /* mode node-flat's communicator (built on first use) */
/* the communicators of modes hier-gin, hier-emulated, hier-gin-g1, -g2, -g4 (built on first use) */
static MPI_Comm g_hier_comms[MODE_COUNT]; /* MPI_COMM_NULL until built (main sets them) */
static MPI_Comm g_coll = MPI_COMM_NULL; /* the measured collectives' communicator: g_comm, or one above */
static bench_opts_t g_o;
static char g_host[MPI_MAX_PROCESSOR_NAME + 1];
static char g_gpu[256];
static int g_ngpus;          /* distinct GPUs used by the ranks */
static int g_any_fail;
static FILE *g_csv;
static cudaStream_t g_stream;

/* ---------------------------------------------------------------- helpers */

#define CUDA_OK(_call)                                                                           \
    do {                                                                                         \
        cudaError_t e_ = (_call);                                                                \
        if (e_ != cudaSuccess) {                                                                 \
            fprintf(stderr, "tlmpi_bench[%d]: %s failed: %s (%s:%d)\n", g_rank, #_call,          \
                    cudaGetErrorString(e_), __FILE__, __LINE__);                                 \
            PMPI_Abort(MPI_COMM_WORLD, 2);                                                       \
        }                                                                                        \
    } while (0)

#define MPI_OK(_call)                                                                            \
    do {                                                                                         \
        int r_ = (_call);                                                                        \
        if (r_ != MPI_SUCCESS) {                                                                 \
            char s_[MPI_MAX_ERROR_STRING];                                                       \
            int l_ = 0;                                                                          \
            PMPI_Error_string(r_, s_, &l_);                                                      \
            fprintf(stderr, "tlmpi_bench[%d]: %s failed: %s (%s:%d)\n", g_rank, #_call, s_,      \
                    __FILE__, __LINE__);                                                         \
            PMPI_Abort(MPI_COMM_WORLD, 3);                                                       \
        }                                                                                        \
    } while (0)

static void die0(const char *msg)
{
    if (g_rank == 0) {
        fprintf(stderr, "tlmpi_bench: %s\n", msg);
    }
    PMPI_Finalize();
    exit(1);
}

static uint64_t fnv1a(uint64_t h, const char *s)
{
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ull;
    }
    return h;
}

/* Element i of rank r's input for a given seed: a small integer in [-4, 4] (0..4 for char is not
 * needed: signed char holds the sums of up to 31 ranks). Small integers are exact in every type
 * and their sums do not depend on the reduction order, so the check is exact. */
static inline int gen_val(uint64_t seed, int r, size_t i)
{
    uint64_t x = seed ^ ((uint64_t)r * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)i * 0xD6E8FEB86659FD93ull);
    x ^= x >> 32;
    x *= 0xD6E8FEB86659FD93ull;
    x ^= x >> 32;
    return (int)(x % 9) - 4;
}

static uint16_t f32_to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return (uint16_t)(u >> 16); /* exact for the small integers used here */
}

static float bf16_to_f32(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* IEEE half for integers |v| < 2048 (exact). */
static uint16_t int_to_f16(int v)
{
    uint16_t sign = v < 0 ? 0x8000 : 0;
    unsigned a = (unsigned)(v < 0 ? -v : v);
    int e = 0;

    if (a == 0) {
        return sign;
    }
    while ((a >> e) > 1) {
        e++;
    }
    /* value = 1.m * 2^e; mantissa 10 bits */
    return (uint16_t)(sign | (uint16_t)((e + 15) << 10) | (uint16_t)(((a << 10) >> e) & 0x3FF));
}

static double f16_to_double(uint16_t h)
{
    int s = h >> 15, e = (h >> 10) & 0x1F, m = h & 0x3FF;
    double v;

    if (e == 0x1F) {
        return m ? NAN : (s ? -INFINITY : INFINITY);
    }
    v = e ? ldexp(1.0 + m / 1024.0, e - 15) : ldexp(m / 1024.0, -14);
    return s ? -v : v;
}

static void store_val(bench_dt_t dt, void *buf, size_t i, int v)
{
    switch (dt) {
    case DT_FLOAT: ((float *)buf)[i] = (float)v; break;
    case DT_DOUBLE: ((double *)buf)[i] = (double)v; break;
    case DT_INT: ((int *)buf)[i] = v; break;
    case DT_BF16: ((uint16_t *)buf)[i] = f32_to_bf16((float)v); break;
    case DT_F16: ((uint16_t *)buf)[i] = int_to_f16(v); break;
    case DT_CHAR: ((signed char *)buf)[i] = (signed char)v; break;
    default: break;
    }
}

/* Read back as double; NaN for poison that is not a number. */
static double load_val(bench_dt_t dt, const void *buf, size_t i)
{
    switch (dt) {
    case DT_FLOAT: return ((const float *)buf)[i];
    case DT_DOUBLE: return ((const double *)buf)[i];
    case DT_INT: return ((const int *)buf)[i];
    case DT_BF16: return bf16_to_f32(((const uint16_t *)buf)[i]);
    case DT_F16: return f16_to_double(((const uint16_t *)buf)[i]);
    case DT_CHAR: return ((const signed char *)buf)[i];
    default: return NAN;
    }
}

static MPI_Datatype mpi_type(bench_dt_t dt)
{
    switch (dt) {
    case DT_FLOAT: return MPI_FLOAT;
    case DT_DOUBLE: return MPI_DOUBLE;
    case DT_INT: return MPI_INT;
    case DT_BF16: return TLMPI_BFLOAT16;
    case DT_F16: return TLMPI_FLOAT16;
    case DT_CHAR: return MPI_CHAR; /* what OSU uses by default */
    default: return MPI_DATATYPE_NULL;
    }
}

static int parse_size(const char *s, size_t *out)
{
    char *end;
    double v;

    errno = 0;
    v = strtod(s, &end);
    if (errno || end == s || v < 0) {
        return -1;
    }
    switch (tolower((unsigned char)*end)) {
    case 'k': v *= 1024.0; end++; break;
    case 'm': v *= 1048576.0; end++; break;
    case 'g': v *= 1073741824.0; end++; break;
    default: break;
    }
    if (*end == 'i' || *end == 'I') {
        end++;
    }
    if (*end == 'b' || *end == 'B') {
        end++;
    }
    if (*end) {
        return -1;
    }
    *out = (size_t)v;
    return 0;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), bench_cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void now_iso(char *buf, size_t len)
{
    time_t t = time(NULL);
    struct tm tmv;
    gmtime_r(&t, &tmv);
    strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tmv);
}

/* ---------------------------------------------------------------- raw NCCL (dlopen) */

#ifdef HAVE_NCCL
static struct {
    int loaded;
    ncclComm_t comm;
    int version;
    ncclResult_t (*GetVersion)(int *);
    ncclResult_t (*GetUniqueId)(ncclUniqueId *);
    ncclResult_t (*CommInitRank)(ncclComm_t *, int, ncclUniqueId, int);
    ncclResult_t (*CommDestroy)(ncclComm_t);
    const char *(*GetErrorString)(ncclResult_t);
    ncclResult_t (*AllReduce)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                              cudaStream_t);
    ncclResult_t (*AllGather)(const void *, void *, size_t, ncclDataType_t, ncclComm_t, cudaStream_t);
    ncclResult_t (*ReduceScatter)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t,
                                  ncclComm_t, cudaStream_t);
} rn;

/* Same library tlmpi loads (TLMPI_NCCL_LIBRARY), so both measure one NCCL. */
static int raw_nccl_load(void)
{
    const char *lib = getenv("TLMPI_NCCL_LIBRARY");
    void *h = dlopen(lib && *lib ? lib : "libnccl.so.2", RTLD_NOW | RTLD_LOCAL);

    if (!h) {
        return 0;
    }
#define RN_SYM(_f, _n) if (!(*(void **)&rn._f = dlsym(h, _n))) return 0
    RN_SYM(GetVersion, "ncclGetVersion");
    RN_SYM(GetUniqueId, "ncclGetUniqueId");
    RN_SYM(CommInitRank, "ncclCommInitRank");
    RN_SYM(CommDestroy, "ncclCommDestroy");
    RN_SYM(GetErrorString, "ncclGetErrorString");
    RN_SYM(AllReduce, "ncclAllReduce");
    RN_SYM(AllGather, "ncclAllGather");
    RN_SYM(ReduceScatter, "ncclReduceScatter");
#undef RN_SYM
    if (rn.GetVersion(&rn.version) != ncclSuccess) {
        rn.version = 0;
    }
    rn.loaded = 1;
    return 1;
}

/* Collective over g_comm; returns 1 on every rank or 0 on every rank. */
static int raw_nccl_init(void)
{
    ncclUniqueId id;
    int ok = raw_nccl_load(), all_ok = 0;
    ncclResult_t r;

    MPI_OK(PMPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, g_comm));
    if (!all_ok) {
        if (g_rank == 0) {
            fprintf(stderr, "tlmpi_bench: raw-nccl: cannot load libnccl (TLMPI_NCCL_LIBRARY=%s); mode skipped\n",
                    getenv("TLMPI_NCCL_LIBRARY") ? getenv("TLMPI_NCCL_LIBRARY") : "libnccl.so.2");
        }
        return 0;
    }
    memset(&id, 0, sizeof(id));
    if (g_rank == 0 && rn.GetUniqueId(&id) != ncclSuccess) {
        memset(&id, 0, sizeof(id));
    }
    MPI_OK(PMPI_Bcast(&id, (int)sizeof(id), MPI_BYTE, 0, g_comm));
    r = rn.CommInitRank(&rn.comm, g_size, id, g_rank);
    ok = r == ncclSuccess;
    if (!ok) {
        fprintf(stderr, "tlmpi_bench[%d]: ncclCommInitRank: %s (note: with several ranks on one GPU, NCCL "
                        "needs a distinct NCCL_HOSTID per rank); raw-nccl skipped\n",
                g_rank, rn.GetErrorString(r));
    }
    MPI_OK(PMPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, g_comm));
    if (!all_ok && ok) {
        rn.CommDestroy(rn.comm);
    }
    return all_ok;
}

static ncclDataType_t nccl_type(bench_dt_t dt)
{
    switch (dt) {
    case DT_FLOAT: return ncclFloat32;
    case DT_DOUBLE: return ncclFloat64;
    case DT_INT: return ncclInt32;
    case DT_BF16: return ncclBfloat16;
    case DT_F16: return ncclFloat16;
    default: return ncclInt8;
    }
}
#endif

/* ---------------------------------------------------------------- one call of one collective */

typedef struct {
    int ci;             /* index into coll_ids */
    int mode;
    size_t bytes;       /* S, NCCL's definition */
    size_t count;       /* allreduce: count; allgather: sendcount; RS: recvcount (elements) */
    void *sbuf, *rbuf;  /* device */
} bench_call_t;

static void run_once(const bench_call_t *c)
{
    MPI_Datatype t = mpi_type(g_o.dt);

    if (c->mode == MODE_RAW_NCCL) {
#ifdef HAVE_NCCL
        ncclResult_t r = ncclSuccess;
        ncclDataType_t nt = nccl_type(g_o.dt);

        switch (coll_ids[c->ci]) {
        case TLMPI_COLL_ALLREDUCE:
            r = rn.AllReduce(c->sbuf, c->rbuf, c->count, nt, ncclSum, rn.comm, g_stream);
            break;
        case TLMPI_COLL_ALLGATHER:
            r = rn.AllGather(c->sbuf, c->rbuf, c->count, nt, rn.comm, g_stream);
            break;
        default:
            r = rn.ReduceScatter(c->sbuf, c->rbuf, c->count, nt, ncclSum, rn.comm, g_stream);
            break;
        }
        if (r != ncclSuccess) {
            fprintf(stderr, "tlmpi_bench[%d]: NCCL %s: %s\n", g_rank, coll_names[c->ci],
                    rn.GetErrorString(r));
            PMPI_Abort(MPI_COMM_WORLD, 4);
        }
        /* blocking semantics, like an MPI collective */
        CUDA_OK(cudaStreamSynchronize(g_stream));
#endif
        return;
    }
    switch (coll_ids[c->ci]) {
    case TLMPI_COLL_ALLREDUCE:
        MPI_OK(MPI_Allreduce(c->sbuf, c->rbuf, (int)c->count, t, MPI_SUM, g_coll));
        break;
    case TLMPI_COLL_ALLGATHER:
        MPI_OK(MPI_Allgather(c->sbuf, (int)c->count, t, c->rbuf, (int)c->count, t, g_coll));
        break;
    default:
        MPI_OK(MPI_Reduce_scatter_block(c->sbuf, c->rbuf, (int)c->count, t, MPI_SUM, g_coll));
        break;
    }
}

/* Elements of the send and receive vectors of one call. */
static void call_counts(const bench_call_t *c, size_t *scount, size_t *rcount)
{
    switch (coll_ids[c->ci]) {
    case TLMPI_COLL_ALLREDUCE: *scount = *rcount = c->count; break;
    case TLMPI_COLL_ALLGATHER: *scount = c->count; *rcount = c->count * (size_t)g_size; break;
    default: *scount = c->count * (size_t)g_size; *rcount = c->count; break;
    }
}

/* Fresh data for seed, poisoned output (0x7F bytes: NaN or a huge value in every type, never a
 * possible result). */
static void prepare(const bench_call_t *c, uint64_t seed, void *hbuf)
{
    size_t sc, rc, i;
    size_t es = (size_t)dt_sizes[g_o.dt];

    call_counts(c, &sc, &rc);
    for (i = 0; i < sc; i++) {
        store_val(g_o.dt, hbuf, i, gen_val(seed, g_rank, i));
    }
    CUDA_OK(cudaMemcpy(c->sbuf, hbuf, sc * es, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemset(c->rbuf, 0x7F, rc * es));
    CUDA_OK(cudaDeviceSynchronize());
}

/* Compare this rank's output with a host reference; returns the number of wrong elements
 * (summed over ranks, identical on every rank). */
static long long check(const bench_call_t *c, uint64_t seed, void *hbuf)
{
    size_t sc, rc, i;
    size_t es = (size_t)dt_sizes[g_o.dt];
    long long bad = 0, all_bad = 0;
    int r, first = 1;

    call_counts(c, &sc, &rc);
    CUDA_OK(cudaMemcpy(hbuf, c->rbuf, rc * es, cudaMemcpyDeviceToHost));
    for (i = 0; i < rc; i++) {
        double want = 0, got = load_val(g_o.dt, hbuf, i);

        switch (coll_ids[c->ci]) {
        case TLMPI_COLL_ALLREDUCE:
            for (r = 0; r < g_size; r++) {
                want += gen_val(seed, r, i);
            }
            break;
        case TLMPI_COLL_ALLGATHER:
            want = gen_val(seed, (int)(i / c->count), i % c->count);
            break;
        default:
            for (r = 0; r < g_size; r++) {
                want += gen_val(seed, r, (size_t)g_rank * c->count + i);
            }
            break;
        }
        if (!(got == want)) {
            if (first) {
                fprintf(stderr, "tlmpi_bench[%d]: %s %s %zu B: element %zu is %g, want %g\n", g_rank,
                        coll_names[c->ci], mode_names[c->mode], c->bytes, i, got, want);
                first = 0;
            }
            bad++;
        }
    }
    MPI_OK(PMPI_Allreduce(&bad, &all_bad, 1, MPI_LONG_LONG, MPI_SUM, g_comm));
    return all_bad;
}

/* ---------------------------------------------------------------- path served, generation */

/* tlmpi's counters for one collective, all paths. */
static void stats_snap(tlmpi_coll_t coll, uint64_t *calls)
{
    int p;
    tlmpi_stat_t s;

    for (p = 0; p < TLMPI_PATH_COUNT; p++) {
        calls[p] = tlmpi_get_stats(coll, (tlmpi_path_t)p, &s) == TLMPI_OK ? s.calls : 0;
    }
}

/* Which path(s) served the calls counted in calls[] (deltas of tlmpi's counters), agreed over
 * ranks: one name, "a+b" when several paths served, "ranks-differ:..." when ranks disagree. */
static void path_served(const uint64_t *calls, char *out, size_t len)
{
    unsigned mask = 0, m_or = 0, m_and = 0;
    int p;

    for (p = 0; p < TLMPI_PATH_COUNT; p++) {
        if (calls[p]) {
            mask |= 1u << p;
        }
    }
    MPI_OK(PMPI_Allreduce(&mask, &m_or, 1, MPI_UNSIGNED, MPI_BOR, g_comm));
    MPI_OK(PMPI_Allreduce(&mask, &m_and, 1, MPI_UNSIGNED, MPI_BAND, g_comm));
    out[0] = 0;
    if (!m_or) {
        snprintf(out, len, "none");
        return;
    }
    if (m_or != m_and) {
        snprintf(out, len, "ranks-differ:");
    }
    for (p = 0; p < TLMPI_PATH_COUNT; p++) {
        if (m_or & (1u << p)) {
            const char *n = tlmpi_path_name((tlmpi_path_t)p);
            size_t l = strlen(out);
            snprintf(out + l, len - l, "%s%s", (l && out[l - 1] != ':') ? "+" : "", n ? n : "?");
        }
    }
}

/* Environment variables that change behaviour (everything TLMPI_ and NCCL_ except logging,
 * statistics and per-rank identities; MPI and UCX tuning too), sorted, ';'-joined. */
static int knob_skip(const char *kv)
{
    /* logging, per-rank identities and the launcher's own bookkeeping (Open MPI exports ports,
     * job ids and directories as OMPI_MCA_*, which would make every run a new generation) */
    static const char *const skip[] = {"TLMPI_LOG_", "TLMPI_STATS=", "TLMPI_TIER=", "NCCL_DEBUG",
                                       "NCCL_HOSTID=", "NCCL_VERSION=", "TLMPI_BENCH_", "OMPI_MCA_orte_", "OMPI_MCA_ess",
                                       "OMPI_MCA_pmix", "OMPI_MCA_initial_wdir=",
                                       "OMPI_MCA_shmem_RUNTIME_QUERY_hint=",
                                       "MPIR_CVAR_CH3_INTERFACE_HOSTNAME=", NULL};
    int i;

    for (i = 0; skip[i]; i++) {
        if (!strncmp(kv, skip[i], strlen(skip[i]))) {
            return 1;
        }
    }
    return strncmp(kv, "TLMPI_", 6) && strncmp(kv, "NCCL_", 5) && strncmp(kv, "OMPI_MCA_", 9) &&
           strncmp(kv, "MPIR_CVAR_", 10) && strncmp(kv, "UCX_", 4);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static char g_knobs[BENCH_GEN_LEN];   /* readable knob list */
static char g_versions[BENCH_GEN_LEN]; /* mpi, nccl, cuda versions (readable part) */
static char g_hashbase[8 * BENCH_GEN_LEN];
static char g_hashtail[2 * BENCH_GEN_LEN];

static void build_environment_strings(void)
{
    char **e, *list[256];
    int n = 0, i, have_nvls = 0, rt = 0, drv = 0, len = 0, nccl_v = 0;
    char lib[MPI_MAX_LIBRARY_VERSION_STRING], mpi_short[64];
    size_t l = 0;

    for (e = environ; *e && n < 256; e++) {
        if (!knob_skip(*e)) {
            list[n++] = *e;
        }
        if (!strncmp(*e, "NCCL_NVLS_ENABLE=", 17)) {
            have_nvls = 1;
        }
    }
    qsort(list, (size_t)n, sizeof(*list), cmp_str);
    g_knobs[0] = 0;
    if (!have_nvls) {
        l += (size_t)snprintf(g_knobs + l, sizeof(g_knobs) - l, "NCCL_NVLS_ENABLE=unset");
    }
    for (i = 0; i < n && l < sizeof(g_knobs); i++) {
        l += (size_t)snprintf(g_knobs + l, sizeof(g_knobs) - l, "%s%s", l ? ";" : "", list[i]);
    }
    if (!l) {
        snprintf(g_knobs, sizeof(g_knobs), "no-knobs");
    }
    /* No commas or slashes inside a field of the generation string. */
    for (i = 0; g_knobs[i]; i++) {
        if (g_knobs[i] == ',' || g_knobs[i] == '/' || g_knobs[i] == '"') {
            g_knobs[i] = ':';
        }
    }

    PMPI_Get_library_version(lib, &len);
    if (!strncmp(lib, "Open MPI v", 10)) {
        snprintf(mpi_short, sizeof(mpi_short), "ompi-%.*s", (int)strcspn(lib + 10, ", \n"), lib + 10);
    } else if (!strncmp(lib, "MPICH Version:", 14)) {
        const char *v = lib + 14;
        v += strspn(v, " \t");
        snprintf(mpi_short, sizeof(mpi_short), "mpich-%.*s", (int)strcspn(v, " \t\n"), v);
    } else {
        snprintf(mpi_short, sizeof(mpi_short), "mpi-%.*s", (int)strcspn(lib, " ,\n"), lib);
    }
    cudaRuntimeGetVersion(&rt);
    cudaDriverGetVersion(&drv);
#ifdef HAVE_NCCL
    nccl_v = rn.loaded ? rn.version : 0;
    if (!rn.loaded && raw_nccl_load()) {
        nccl_v = rn.version;
    }
#endif
    snprintf(g_versions, sizeof(g_versions), "%s/nccl-%d.%d.%d/cuda-%d", mpi_short, nccl_v / 10000,
             (nccl_v / 100) % 100, nccl_v % 100, rt);
    /* Everything that is hashed besides the readable parts: full MPI string, driver, GPU model,
     * ranks per GPU. */
    snprintf(g_hashtail, sizeof(g_hashtail), "drv=%d|gpu=%.200s|gpus=%d|n=%d|%.1000s", drv, g_gpu, g_ngpus,
             g_size, g_versions);
    snprintf(g_hashbase, sizeof(g_hashbase), "%.2500s|%s", lib, g_hashtail);
}

static const char *algo_of(const char *path)
{
    static char buf[64];
    const char *a = getenv("NCCL_ALGO");

    if (!strcmp(path, "nccl") || !strcmp(path, "raw-nccl")) {
        snprintf(buf, sizeof(buf), "nccl-%s", a && *a ? a : "auto");
        for (char *p = buf; *p; p++) {
            if (*p == ',' || *p == '/') {
                *p = ':';
            }
        }
        return buf;
    }
    if (!strcmp(path, "cudaMemcpy")) {
        return "memcpy";
    }
    if (!strcmp(path, "staging")) {
        return "stage-pmpi";
    }
    if (!strcmp(path, "self")) {
        return "d2d-copy";
    }
    if (!strcmp(path, "passthrough") || !strcmp(path, "hostop")) {
        return "pmpi";
    }
    return "default";
}

/* tlmpi-<version>/<mode>/<path>/<algorithm>/<mpi>/<nccl>/<cuda>/gpus=G/<knobs>/#<hash>; algo (may be
 * NULL or empty): the algorithm as the communicator's plan says (hier: its rail), else from the path */
static void make_generation(const char *mode, const char *path, const char *algo, char *out, size_t len)
{
    char readable[3 * BENCH_GEN_LEN];
    uint64_t h;

    snprintf(readable, sizeof(readable), "tlmpi-%s/%s/%s/%s/%s/gpus=%d/%s", tlmpi_version(), mode, path,
             algo && *algo ? algo : algo_of(path), g_versions, g_ngpus, g_knobs);
    h = fnv1a(fnv1a(14695981039346656037ull, readable), g_hashbase);
    snprintf(out, len, "%s/#%08x", readable, (unsigned)(h ^ (h >> 32)));
}

/* ---------------------------------------------------------------- output */

static void csv_field(FILE *f, const char *s, int last)
{
    if (strpbrk(s, ",\"\n")) {
        fputc('"', f);
        for (; *s; s++) {
            if (*s == '"') {
                fputc('"', f);
            }
            fputc(*s, f);
        }
        fputc('"', f);
    } else {
        fputs(s, f);
    }
    fputc(last ? '\n' : ',', f);
}

typedef struct {
    const char *coll, *mode;
    char path[96];
    char algo[96];                  /* hier modes: the rail that served (rail_served), else "" */
    size_t bytes;
    int iters;
    double avg_us, min_us, max_us, algbw, busbw;
    const char *valid;
    const char *dtype;
    int have_d;                     /* d_raw_* set (a tlmpi mode measured beside raw NCCL) */
    double d_raw_us, d_raw_lo_us, d_raw_hi_us;
} bench_row_t;

static void emit_row(const bench_row_t *r)
{
    char gen[4 * BENCH_GEN_LEN], date[32], num[64];

    if (g_rank != 0) {
        return;
    }
    make_generation(r->mode, r->path, r->algo, gen, sizeof(gen));
    printf("%-15s %-9s %-12s %12zu %11.2f %11.2f %11.2f %7d %10.2f %10.2f  %-5s", r->coll, r->mode, r->path,
           r->bytes, r->avg_us, r->min_us, r->max_us, r->iters, r->algbw, r->busbw, r->valid);
    if (r->algo[0]) {
        printf("  %s", r->algo);
    }
    if (r->have_d) {
        printf("  %+.3f [%+.3f, %+.3f] us (%+.2f%%)", r->d_raw_us, r->d_raw_lo_us, r->d_raw_hi_us,
               r->avg_us > r->d_raw_us ? 100.0 * r->d_raw_us / (r->avg_us - r->d_raw_us) : 0.0);
    }
    printf("\n");
    fflush(stdout);
    if (!g_csv) {
        return;
    }
    now_iso(date, sizeof(date));
    csv_field(g_csv, gen, 0);
    csv_field(g_csv, date, 0);
    csv_field(g_csv, g_host, 0);
    csv_field(g_csv, g_gpu, 0);
    snprintf(num, sizeof(num), "%d", g_size);
    csv_field(g_csv, num, 0);
    csv_field(g_csv, r->coll, 0);
    csv_field(g_csv, r->dtype, 0);
    csv_field(g_csv, r->mode, 0);
    csv_field(g_csv, r->path, 0);
    snprintf(num, sizeof(num), "%zu", r->bytes);
    csv_field(g_csv, num, 0);
    snprintf(num, sizeof(num), "%d", r->iters);
    csv_field(g_csv, num, 0);
    snprintf(num, sizeof(num), "%.3f", r->avg_us);
    csv_field(g_csv, num, 0);
    snprintf(num, sizeof(num), "%.3f", r->min_us);
    csv_field(g_csv, num, 0);
    snprintf(num, sizeof(num), "%.3f", r->max_us);
    csv_field(g_csv, num, 0);
    snprintf(num, sizeof(num), "%.4f", r->algbw);
    csv_field(g_csv, num, 0);
    snprintf(num, sizeof(num), "%.4f", r->busbw);
    csv_field(g_csv, num, 0);
    csv_field(g_csv, r->valid, 0);
    for (int k = 0; k < 3; k++) {
        double v = k == 0 ? r->d_raw_us : k == 1 ? r->d_raw_lo_us : r->d_raw_hi_us;

        if (r->have_d) {
            snprintf(num, sizeof(num), "%.3f", v);
        } else {
            num[0] = '\0';
        }
        csv_field(g_csv, num, k == 2);
    }
    fflush(g_csv);
}

static void print_header(const char *what)
{
    if (g_rank == 0) {
        printf("\n# %s  dtype=%s  nranks=%d  gpus=%d  (%s on %s)\n", what, dt_names[g_o.dt], g_size, g_ngpus,
               g_gpu, g_host);
        printf("%-15s %-9s %-12s %12s %11s %11s %11s %7s %10s %10s  %-5s  %s\n", "# coll", "mode", "path", "bytes",
               "avg_us", "min_us", "max_us", "iters", "algbw_GB/s", "busbw_GB/s", "valid",
               "d_raw: median paired diff vs raw-nccl [95% CI]");
    }
}

/* ---------------------------------------------------------------- timing */

/* Per-call time on this rank of `iters` back-to-back calls after a barrier. */
static double time_calls(const bench_call_t *c, int iters)
{
    double t0;
    int i;

    MPI_OK(PMPI_Barrier(g_comm));
    t0 = MPI_Wtime();
    for (i = 0; i < iters; i++) {
        run_once(c);
    }
    return (MPI_Wtime() - t0) / iters;
}

/* Warm-up; returns the number of timed iterations to use (identical on every rank). */
static int warm_up(const bench_call_t *c, int have_iters)
{
    int n = g_o.warmup >= 0 ? g_o.warmup : (c->bytes <= (1u << 20) ? 20 : 5);
    double t = 0, tmax = 0;
    int iters;

    if (n < 1) {
        n = 1; /* one call at least: NCCL/tlmpi communicator setup must not be timed */
    }
    run_once(c);
    if (n > 1) {
        t = time_calls(c, n - 1);
    }
    if (have_iters > 0) {
        return have_iters;
    }
    if (g_o.iters > 0) {
        return g_o.iters;
    }
    if (n == 1) {
        t = time_calls(c, 1);
    }
    MPI_OK(PMPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, g_comm));
    iters = tmax > 0 ? (int)(g_o.target_s / tmax) : 1000;
    return iters < 5 ? 5 : iters > 1000 ? 1000 : iters;
}

static double busbw_factor(int ci)
{
    if (g_size <= 1) {
        return 0.0;
    }
    return coll_ids[ci] == TLMPI_COLL_ALLREDUCE ? 2.0 * (g_size - 1) / g_size : (double)(g_size - 1) / g_size;
}

/* Measurements of one (size, mode) over the repetitions. */
typedef struct {
    int active;         /* mode usable at this size */
    int iters;
    double avg[BENCH_MAX_REPS], mn[BENCH_MAX_REPS], mx[BENCH_MAX_REPS];
    uint64_t calls[TLMPI_PATH_COUNT]; /* tlmpi's counters: calls of this mode, per path */
    char rail[96];      /* hier modes: rail_served after the calls */
    long long bad;      /* -1 = not checked */
} bench_meas_t;

/* A mode's own communicator: a dup of the world whose tlmpi state is built (tlmpi_comm_describe, with
 * the current TLMPI_TIER) while the settings TLMPI_<var[i]> are val[i] (n of them); then each is set
 * back to its environment value (deflt[i] where unset). Mode node-flat: TOPO_RANKS_PER_NODE=0, so its
 * topology is the real one (one node here) whatever fake nodes the other modes' communicator has;
 * hier-gin / hier-emulated: HIER_FUSED=gin / emulated, hier-gin-gG also HIER_GROUPS=G (both read at
 * the hier tier's setup). Collective. */
static int mode_comm(MPI_Comm *c, int n, const char *const *var, const char *const *val, const char *const *deflt)
{
    char d[2048], was[2][64], name[64];
    const char *env;
    int i, ok = 1;

    if (*c != MPI_COMM_NULL) {
        return 1;
    }
    for (i = 0; i < n; i++) {
        snprintf(name, sizeof(name), "TLMPI_%s", var[i]);
        env = getenv(name);
        snprintf(was[i], sizeof(was[i]), "%s", env && *env ? env : deflt[i]);
        ok = ok && tlmpi_config_set(var[i], val[i]) == TLMPI_OK;
    }
    if (ok) {
        MPI_OK(PMPI_Comm_dup(MPI_COMM_WORLD, c));
        tlmpi_comm_describe(*c, d, sizeof(d));
    }
    for (i = 0; i < n; i++) {
        tlmpi_config_set(var[i], was[i]);
    }
    return ok;
}

/* Build (first use) mode's own communicator into *mc; 0 where it cannot be. */
static int own_comm(int mode, MPI_Comm *mc)
{
    static const char *const flat_var[1] = { "TOPO_RANKS_PER_NODE" }, *const flat_val[1] = { "0" };
    static const char *const hier_var[2] = { "HIER_FUSED", "HIER_GROUPS" }, *const hier_def[2] = { "auto", "0" };
    const char *hier_val[2] = { mode == MODE_HIER_EMULATED ? "emulated" : "gin",
                                mode == MODE_HIER_GIN_G1 ? "1" : mode == MODE_HIER_GIN_G2 ? "2"
                                                            : mode == MODE_HIER_GIN_G4 ? "4" : "0" };

    if (mode == MODE_NODE_FLAT) {
        return mode_comm(mc, 1, flat_var, flat_val, flat_val);
    }
    /* hier-gin and hier-emulated keep the environment's TLMPI_HIER_GROUPS (default auto) */
    return mode_comm(mc, mode == MODE_HIER_GIN || mode == MODE_HIER_EMULATED ? 1 : 2, hier_var, hier_val, hier_def);
}

/* Which rail served a hier mode's calls, from comm's plan (hier_describe's "fused: ..." part, the same
 * on every rank: the rail is agreed): fused-gin:ctx=C:groups=G (C: the GIN contexts NCCL granted),
 * fused-emulated:groups=G, steps (no fused kernels: hier's host-ordered steps), no-hier (the hier
 * tier is not set up on comm). */
static void rail_served(MPI_Comm comm, char *out, size_t len)
{
    static char d[4096];
    const char *f, *g, *x;
    int groups = 0, ctx = 0;

    d[0] = 0;
    tlmpi_comm_describe(comm, d, sizeof(d));
    f = strstr(d, "; hier: ") ? strstr(strstr(d, "; hier: "), "fused: ") : NULL;
    if (!f) {
        snprintf(out, len, "no-hier");
        return;
    }
    g = strstr(f, " rail groups");
    if (g) {
        for (x = g; x > f && isdigit((unsigned char)x[-1]); x--) {
        }
        groups = atoi(x);
    }
    if (!strncmp(f, "fused: GIN rail", 15)) {
        x = strstr(f, "contexts granted");
        if (x) {
            for (x--; x > f && x[-1] == ' '; x--) {
            }
            for (; x > f && isdigit((unsigned char)x[-1]); x--) {
            }
            ctx = atoi(x);
        }
        snprintf(out, len, "fused-gin:ctx=%d:groups=%d%s", ctx, groups, strstr(f, "testing: TLMPI_FAULT") ? ":FAULT" : "");
    } else if (!strncmp(f, "fused: emulated rail", 20)) {
        snprintf(out, len, "fused-emulated:groups=%d", groups);
    } else {
        snprintf(out, len, "steps");
    }
}

/* modes measured on a hier communicator of their own (own_comm) */
static int own_hier_comm(int mode)
{
    return mode == MODE_HIER_GIN || mode == MODE_HIER_EMULATED || mode == MODE_HIER_GIN_G1 || mode == MODE_HIER_GIN_G2 ||
           mode == MODE_HIER_GIN_G4;
}

static int set_tier(int mode)
{
    tlmpi_status_t s;

    g_coll = g_comm;
    if (mode == MODE_RAW_NCCL) {
        return 1;
    }
    if (mode == MODE_TUNED) {
        const char *f = getenv("TLMPI_BENCH_TUNING_FILE");

        if (!f || !*f || tlmpi_config_set("TUNING_FILE", f) != TLMPI_OK) {
            if (g_rank == 0) {
                fprintf(stderr, "tlmpi_bench: mode tuned needs TLMPI_BENCH_TUNING_FILE (a tlmpi_tune file); mode skipped\n");
            }
            return 0;
        }
        s = tlmpi_config_set("TIER", "auto");
    } else {
        /* the tuning file only in mode tuned: TLMPI_TUNING_FILE in the environment is set aside */
        s = tlmpi_config_set("TUNING_FILE", "");
        s = s == TLMPI_OK ? tlmpi_config_set("TIER", mode == MODE_HIER_STEPS || own_hier_comm(mode) ? "hier"
                                                     : mode == MODE_NODE_FLAT ? "node"
                                                                              : mode_names[mode])
                          : s;
        if (s == TLMPI_OK && (mode == MODE_NODE_FLAT || own_hier_comm(mode))) {
            MPI_Comm *mc = mode == MODE_NODE_FLAT ? &g_flat : &g_hier_comms[mode];

            if (!own_comm(mode, mc)) {
                s = TLMPI_ERR_INVALID_ARG;
            } else {
                g_coll = *mc;
            }
        }
    }
    /* mode hier-steps names hier's host-ordered algorithms in the tables; every other mode has the
     * tables of the environment (read once, before the first change) */
    {
        static const char *const names[3] = { "ALLREDUCE_TIERS", "ALLGATHER_TIERS", "REDUCE_SCATTER_BLOCK_TIERS" };
        static const char *const steps[3] = { "hier/oneshot:65536,hier/2d", "hier/2d", "hier/2d" };
        static const char *env[3];
        static int have_env;
        char var[64];
        int i;

        for (i = 0; !have_env && i < 3; i++) {
            snprintf(var, sizeof(var), "TLMPI_%s", names[i]);
            env[i] = getenv(var) ? getenv(var) : "";
        }
        have_env = 1;
        for (i = 0; i < 3 && s == TLMPI_OK; i++) {
            s = tlmpi_config_set(names[i], mode == MODE_HIER_STEPS ? steps[i] : env[i]);
        }
    }
    if (s != TLMPI_OK) {
        if (g_rank == 0) {
            fprintf(stderr, "tlmpi_bench: tlmpi_config_set(TIER, %s): %s; mode skipped\n", mode_names[mode],
                    tlmpi_status_string(s));
        }
        return 0;
    }
    return 1;
}

static void bench_coll(int ci, int have_raw, void *sbuf, void *rbuf, void *hbuf)
{
    int si, mi, rep;
    size_t es = (size_t)dt_sizes[g_o.dt];
    static bench_meas_t meas[BENCH_MAX_MODES];
    char what[64];

    snprintf(what, sizeof(what), "%s", coll_names[ci]);
    print_header(what);
    for (si = 0; si < g_o.nsizes; si++) {
        bench_call_t c;
        size_t div = coll_ids[ci] == TLMPI_COLL_ALLREDUCE ? es : es * (size_t)g_size;

        memset(&c, 0, sizeof(c));
        c.ci = ci;
        c.count = g_o.sizes[si] / div;
        c.bytes = c.count * div;
        c.sbuf = sbuf;
        c.rbuf = rbuf;
        if (c.count == 0 || c.count > (size_t)INT32_MAX) {
            if (g_rank == 0) {
                printf("# %zu B: not a whole, int-sized number of %s elements per rank; skipped\n",
                       g_o.sizes[si], dt_names[g_o.dt]);
            }
            continue;
        }
        memset(meas, 0, sizeof(meas));
        for (mi = 0; mi < g_o.nmodes; mi++) {
            meas[mi].bad = -1;
            meas[mi].active = g_o.modes[mi] != MODE_RAW_NCCL || have_raw;
        }
        /* Round robin: every mode once per repetition, so that clock or contention drift hits
         * all modes alike (algorithms.md 7.3). */
        for (rep = 0; rep < g_o.reps; rep++) {
            for (int kk = 0; kk < g_o.nmodes; kk++) {
                /* odd repetitions run the modes in reverse order */
                bench_meas_t *m;
                double t, sum = 0;
                uint64_t seed, before[TLMPI_PATH_COUNT], after[TLMPI_PATH_COUNT];
                int p;

                mi = rep & 1 ? g_o.nmodes - 1 - kk : kk;
                m = &meas[mi];
                if (!m->active) {
                    continue;
                }
                c.mode = g_o.modes[mi];
                if (!set_tier(c.mode)) {
                    m->active = 0;
                    continue;
                }
                stats_snap(coll_ids[ci], before);
                seed = ((uint64_t)ci << 56) ^ ((uint64_t)si << 40) ^ ((uint64_t)mi << 32) ^ (uint64_t)rep ^
                       (uint64_t)time(NULL) * 0x100000001ull;
                MPI_OK(PMPI_Bcast(&seed, 1, MPI_UINT64_T, 0, g_comm));
                if (g_o.validate && rep == 0) {
                    /* one checked call on fresh data, then the timed calls are checked as well */
                    long long b;

                    prepare(&c, seed, hbuf);
                    run_once(&c);
                    b = check(&c, seed, hbuf);
                    size_t sc, rc;
                    call_counts(&c, &sc, &rc);
                    CUDA_OK(cudaMemset(c.rbuf, 0x7F, rc * es));
                    CUDA_OK(cudaDeviceSynchronize());
                    m->bad = (m->bad < 0 ? 0 : m->bad) + b;
                } else if (rep == 0) {
                    prepare(&c, seed, hbuf); /* never time zeros; later reps reuse this data */
                }
                m->iters = warm_up(&c, m->iters);
                t = time_calls(&c, m->iters);
                if (g_o.validate && rep == 0) {
                    m->bad += check(&c, seed, hbuf);
                }
                MPI_OK(PMPI_Allreduce(&t, &m->mn[rep], 1, MPI_DOUBLE, MPI_MIN, g_comm));
                MPI_OK(PMPI_Allreduce(&t, &m->mx[rep], 1, MPI_DOUBLE, MPI_MAX, g_comm));
                MPI_OK(PMPI_Allreduce(&t, &sum, 1, MPI_DOUBLE, MPI_SUM, g_comm));
                m->avg[rep] = sum / g_size;
                stats_snap(coll_ids[ci], after);
                for (p = 0; p < TLMPI_PATH_COUNT; p++) {
                    m->calls[p] += after[p] - before[p];
                }
                if (c.mode == MODE_HIER || c.mode == MODE_HIER_STEPS || own_hier_comm(c.mode)) {
                    rail_served(g_coll, m->rail, sizeof(m->rail));
                }
            }
        }
        /* paired differences against raw NCCL, before median() reorders the per-rep arrays */
        static double dr[BENCH_MAX_MODES][3];
        static int have_dr[BENCH_MAX_MODES];
        int raw = -1;

        for (mi = 0; mi < g_o.nmodes; mi++) {
            have_dr[mi] = 0;
            if (g_o.modes[mi] == MODE_RAW_NCCL && meas[mi].active) {
                raw = mi;
            }
        }
        for (mi = 0; raw >= 0 && mi < g_o.nmodes; mi++) {
            double d[BENCH_MAX_REPS];

            if (mi == raw || !meas[mi].active) {
                continue;
            }
            for (rep = 0; rep < g_o.reps; rep++) {
                d[rep] = meas[mi].avg[rep] - meas[raw].avg[rep];
            }
            dr[mi][0] = median(d, g_o.reps) * 1e6;
            bench_median_ci(d, g_o.reps, &dr[mi][1], &dr[mi][2]);
            dr[mi][1] *= 1e6;
            dr[mi][2] *= 1e6;
            have_dr[mi] = 1;
        }
        for (mi = 0; mi < g_o.nmodes; mi++) {
            bench_meas_t *m = &meas[mi];
            bench_row_t row;

            if (!m->active) {
                continue;
            }
            memset(&row, 0, sizeof(row));
            row.have_d = have_dr[mi];
            row.d_raw_us = dr[mi][0];
            row.d_raw_lo_us = dr[mi][1];
            row.d_raw_hi_us = dr[mi][2];
            row.coll = coll_names[ci];
            row.mode = mode_names[g_o.modes[mi]];
            row.dtype = dt_names[g_o.dt];
            if (g_o.modes[mi] == MODE_RAW_NCCL) {
                snprintf(row.path, sizeof(row.path), "raw-nccl");
            } else {
                path_served(m->calls, row.path, sizeof(row.path));
                snprintf(row.algo, sizeof(row.algo), "%s", m->rail);
            }
            row.bytes = c.bytes;
            row.iters = m->iters;
            row.avg_us = median(m->avg, g_o.reps) * 1e6;
            row.min_us = median(m->mn, g_o.reps) * 1e6;
            row.max_us = median(m->mx, g_o.reps) * 1e6;
            row.algbw = (double)c.bytes / (row.avg_us * 1e-6) / 1e9;
            row.busbw = row.algbw * busbw_factor(ci);
            row.valid = m->bad < 0 ? "-" : m->bad == 0 ? "pass" : "FAIL";
            if (m->bad > 0) {
                g_any_fail = 1;
            }
            emit_row(&row);
        }
    }
    set_tier(MODE_AUTO);
}

/* ---------------------------------------------------------------- host <-> device copies */

typedef enum { CP_H2D, CP_D2H, CP_BIDIR } copy_kind_t;

static double time_copies(copy_kind_t k, int pinned, void *h, void *h2, void *d, void *d2, size_t bytes,
                          int iters, cudaStream_t s2)
{
    double t0;
    int i;

    MPI_OK(PMPI_Barrier(g_comm));
    t0 = MPI_Wtime();
    for (i = 0; i < iters; i++) {
        if (!pinned) {
            /* pageable: cudaMemcpy is what a simple staging copy would do */
            if (k == CP_H2D) {
                CUDA_OK(cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice));
            } else {
                CUDA_OK(cudaMemcpy(h, d, bytes, cudaMemcpyDeviceToHost));
            }
            continue;
        }
        if (k == CP_H2D || k == CP_BIDIR) {
            CUDA_OK(cudaMemcpyAsync(d, h, bytes, cudaMemcpyHostToDevice, g_stream));
        }
        if (k == CP_D2H) {
            CUDA_OK(cudaMemcpyAsync(h, d, bytes, cudaMemcpyDeviceToHost, g_stream));
        }
        if (k == CP_BIDIR) {
            CUDA_OK(cudaMemcpyAsync(h2, d2, bytes, cudaMemcpyDeviceToHost, s2));
            CUDA_OK(cudaStreamSynchronize(s2));
        }
        CUDA_OK(cudaStreamSynchronize(g_stream));
    }
    return (MPI_Wtime() - t0) / iters;
}

/* All ranks copy at once: with several ranks on one GPU that is the rate each one gets, the one
 * the staging tier competes for. bytes = one direction; bidir counts both directions. */
static void bench_copies(void *dsend, void *drecv, size_t dbytes)
{
    static const char *const kind_names[3] = {"copy_h2d", "copy_d2h", "copy_bidir"};
    void *hp = NULL, *hp2 = NULL, *hu = NULL;
    cudaStream_t s2;
    size_t maxb = 0;
    int si, k, pinned;

    for (si = 0; si < g_o.nsizes; si++) {
        if (g_o.sizes[si] > maxb && g_o.sizes[si] <= dbytes) {
            maxb = g_o.sizes[si];
        }
    }
    if (!maxb) {
        return;
    }
    CUDA_OK(cudaMallocHost(&hp, maxb));
    CUDA_OK(cudaMallocHost(&hp2, maxb));
    hu = malloc(maxb);
    if (!hu) {
        die0("out of host memory for the copy test");
    }
    memset(hu, 0x5A, maxb);
    memset(hp, 0x5A, maxb);
    memset(hp2, 0x5A, maxb);
    CUDA_OK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    print_header("host<->device copies (all ranks at once; bytes per direction, bidir algbw counts both)");
    for (pinned = 1; pinned >= 0; pinned--) {
        for (k = 0; k < 3; k++) {
            if (k == CP_BIDIR && !pinned) {
                continue;
            }
            for (si = 0; si < g_o.nsizes; si++) {
                size_t b = g_o.sizes[si];
                void *h = pinned ? hp : hu;
                int n = b <= (1u << 20) ? 20 : 3, iters;
                double t, tmax = 0, mn, mx, sum;
                double a[BENCH_MAX_REPS], lo[BENCH_MAX_REPS], hi[BENCH_MAX_REPS];
                int rep;
                bench_row_t row;

                if (b > maxb) {
                    continue;
                }
                t = time_copies((copy_kind_t)k, pinned, h, hp2, dsend, drecv, b, n, s2);
                MPI_OK(PMPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, g_comm));
                iters = g_o.iters > 0 ? g_o.iters : (int)(g_o.target_s / (tmax > 0 ? tmax : 1e-6));
                iters = iters < 5 ? 5 : iters > 1000 ? 1000 : iters;
                for (rep = 0; rep < g_o.reps; rep++) {
                    t = time_copies((copy_kind_t)k, pinned, h, hp2, dsend, drecv, b, iters, s2);
                    MPI_OK(PMPI_Allreduce(&t, &mn, 1, MPI_DOUBLE, MPI_MIN, g_comm));
                    MPI_OK(PMPI_Allreduce(&t, &mx, 1, MPI_DOUBLE, MPI_MAX, g_comm));
                    MPI_OK(PMPI_Allreduce(&t, &sum, 1, MPI_DOUBLE, MPI_SUM, g_comm));
                    a[rep] = sum / g_size;
                    lo[rep] = mn;
                    hi[rep] = mx;
                }
                memset(&row, 0, sizeof(row));
                row.coll = kind_names[k];
                row.mode = pinned ? "pinned" : "pageable";
                row.dtype = "byte";
                snprintf(row.path, sizeof(row.path), "cudaMemcpy");
                row.bytes = b;
                row.iters = iters;
                row.avg_us = median(a, g_o.reps) * 1e6;
                row.min_us = median(lo, g_o.reps) * 1e6;
                row.max_us = median(hi, g_o.reps) * 1e6;
                row.algbw = (double)b * (k == CP_BIDIR ? 2 : 1) / (row.avg_us * 1e-6) / 1e9;
                row.busbw = 0;
                row.valid = "-";
                emit_row(&row);
            }
        }
    }
    CUDA_OK(cudaStreamDestroy(s2));
    CUDA_OK(cudaFreeHost(hp));
    CUDA_OK(cudaFreeHost(hp2));
    free(hu);
}

/* ---------------------------------------------------------------- main */

static void usage(void)
{
    printf("usage: tlmpi_bench [options]\n"
           "  -C LIST    collectives: allreduce,allgather,reduce_scatter (default all), or none\n"
           "  -m MIN:MAX size sweep, powers of 2, bytes with k/m/g suffixes (default 8:1g)\n"
           "  -s LIST    explicit sizes, e.g. 8,64k,1m,64m,256m (overrides -m)\n"
           "             sizes are NCCL's S: the full vector (allreduce), sendcount*n*elem (allgather),\n"
           "             recvcount*n*elem (reduce_scatter); rounded down to whole elements per rank\n"
           "  -M LIST    modes, each measured in this run: auto,nccl,staging,mpi,raw-nccl (default), node, hier, hier-steps, node-flat,\n"
           "             hier-gin, hier-emulated, hier-gin-g1, hier-gin-g2, hier-gin-g4,\n"
           "             tuned (auto with the tuning file $TLMPI_BENCH_TUNING_FILE)\n"
           "  -T TYPE    float|double|int|bf16|f16|char (default float)\n"
           "  -i N       timed iterations per measurement (default 0 = enough for -w seconds, 5..1000)\n"
           "  -x N       warm-up calls (default 20 up to 1 MiB, 5 above)\n"
           "  -w SEC     target time per measurement when -i is 0 (default 0.2)\n"
           "  -r N       repetitions, round robin over modes; medians are reported (default 3)\n"
           "  -c         validate (first repetition): fresh random small integers per size and mode,\n"
           "             poisoned outputs, exact host reference on every rank, one checked call before\n"
           "             the warm-up and a check of the output the timed calls left\n"
           "  -H         also measure host<->device copy rates (pinned, pageable) at the same sizes\n"
           "  -o FILE    append CSV rows to FILE (header written when FILE is empty)\n"
           "  --as-test  exit 77 (skip) instead of 0 when there is no GPU\n"
           "  -h         this help\n");
}

static int parse_list(const char *arg, const char *const *names, int nnames, int *out, int max)
{
    char buf[512], *tok, *save = NULL;
    int n = 0, i;

    snprintf(buf, sizeof(buf), "%s", arg);
    for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        for (i = 0; i < nnames; i++) {
            if (!strcmp(tok, names[i]) || (names == coll_names && i == 2 && !strcmp(tok, "reduce_scatter_block"))) {
                break;
            }
        }
        if (i == nnames || n == max) {
            return -1;
        }
        out[n++] = i;
    }
    return n;
}

static int parse_opts(int argc, char **argv)
{
    static const struct option lopts[] = {{"as-test", no_argument, NULL, 'A'}, {"help", no_argument, NULL, 'h'},
                                          {NULL, 0, NULL, 0}};
    size_t lo = 8, hi = (size_t)1 << 30;
    const char *slist = NULL;
    int ch, i;

    memset(&g_o, 0, sizeof(g_o));
    g_o.dt = DT_FLOAT;
    g_o.warmup = -1;
    g_o.reps = 3;
    g_o.target_s = 0.2;
    g_o.ncolls = 3;
    for (i = 0; i < 3; i++) {
        g_o.colls[i] = i;
    }
    g_o.nmodes = MODE_DEFAULT_COUNT;
    for (i = 0; i < MODE_DEFAULT_COUNT; i++) {
        g_o.modes[i] = i;
    }
    while ((ch = getopt_long(argc, argv, "C:m:s:M:T:i:x:w:r:cHo:h", lopts, NULL)) != -1) {
        switch (ch) {
        case 'C':
            if (!strcmp(optarg, "none")) {
                g_o.ncolls = 0; /* e.g. -H alone */
            } else if ((g_o.ncolls = parse_list(optarg, coll_names, 3, g_o.colls, 3)) <= 0) {
                return -1;
            }
            break;
        case 'M':
            if ((g_o.nmodes = parse_list(optarg, mode_names, MODE_COUNT, g_o.modes, BENCH_MAX_MODES)) <= 0) return -1;
            break;
        case 'T': {
            int d;
            if (parse_list(optarg, dt_names, DT_COUNT, &d, 1) != 1) return -1;
            g_o.dt = (bench_dt_t)d;
            break;
        }
        case 'm': {
            char *colon = strchr(optarg, ':');
            if (colon) {
                *colon = 0;
                if (parse_size(optarg, &lo) || parse_size(colon + 1, &hi)) return -1;
            } else if (parse_size(optarg, &hi)) {
                return -1;
            }
            break;
        }
        case 's': slist = optarg; break;
        case 'i': g_o.iters = atoi(optarg); break;
        case 'x': g_o.warmup = atoi(optarg); break;
        case 'w': g_o.target_s = atof(optarg); break;
        case 'r': g_o.reps = atoi(optarg); break;
        case 'c': g_o.validate = 1; break;
        case 'H': g_o.copy_test = 1; break;
        case 'o': g_o.csv = optarg; break;
        case 'A': g_o.as_test = 1; break;
        case 'h': return 1;
        default: return -1;
        }
    }
    if (g_o.reps < 1 || g_o.reps > BENCH_MAX_REPS || g_o.target_s <= 0) {
        return -1;
    }
    if (slist) {
        char buf[1024], *tok, *save = NULL;
        snprintf(buf, sizeof(buf), "%s", slist);
        for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
            if (g_o.nsizes == BENCH_MAX_SIZES || parse_size(tok, &g_o.sizes[g_o.nsizes])) return -1;
            g_o.nsizes++;
        }
    } else {
        size_t s;
        if (lo < 1 || hi < lo) return -1;
        for (s = lo; s <= hi && g_o.nsizes < BENCH_MAX_SIZES; s *= 2) {
            g_o.sizes[g_o.nsizes++] = s;
        }
    }
    return g_o.nsizes > 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
    int rc, ndev = 0, local_rank = 0, min_dev = 0, have_raw = 0, i, len;
    const char *why = "";
    cudaError_t ce;
    MPI_Comm node;
    size_t maxs = 0, sbytes = 0, rbytes = 0;
    void *sbuf = NULL, *rbuf = NULL, *hbuf = NULL;
    char busid[64], (*busids)[64];
    struct cudaDeviceProp prop;

    MPI_Init(&argc, &argv);
    for (i = 0; i < MODE_COUNT; i++) {
        g_hier_comms[i] = MPI_COMM_NULL;
    }
    PMPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &g_size);
    rc = parse_opts(argc, argv);
    if (rc) {
        if (g_rank == 0) {
            if (rc < 0) {
                fprintf(stderr, "tlmpi_bench: bad arguments\n");
            }
            usage();
        }
        PMPI_Finalize();
        return rc < 0 ? 1 : 0;
    }
    MPI_OK(PMPI_Comm_dup(MPI_COMM_WORLD, &g_comm));
    g_coll = g_comm;
    len = 0;
    PMPI_Get_processor_name(g_host, &len);
    MPI_OK(PMPI_Bcast(g_host, (int)sizeof(g_host), MPI_CHAR, 0, g_comm));

    /* GPU: every rank must have one, else nobody measures anything. */
    ce = cudaGetDeviceCount(&ndev);
    if (ce != cudaSuccess) {
        why = cudaGetErrorString(ce);
        cudaGetLastError();
        ndev = 0;
    } else if (ndev == 0) {
        why = "no CUDA device";
    }
    MPI_OK(PMPI_Allreduce(&ndev, &min_dev, 1, MPI_INT, MPI_MIN, g_comm));
    if (min_dev == 0) {
        if (g_rank == 0) {
            printf("tlmpi_bench: no GPU on %s (%s): nothing to measure\n", g_host,
                   ndev ? "another rank has none" : why);
        }
        PMPI_Comm_free(&g_comm);
        MPI_Finalize();
        return g_o.as_test ? 77 : 0;
    }
    MPI_OK(PMPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
    PMPI_Comm_rank(node, &local_rank);
    PMPI_Comm_free(&node);
    CUDA_OK(cudaSetDevice(local_rank % ndev));
    CUDA_OK(cudaGetDeviceProperties(&prop, local_rank % ndev));
    CUDA_OK(cudaDeviceGetPCIBusId(busid, (int)sizeof(busid), local_rank % ndev));
    snprintf(g_gpu, sizeof(g_gpu), "%s", prop.name);
    for (i = 0; g_gpu[i]; i++) {
        if (g_gpu[i] == ',' || g_gpu[i] == '/') {
            g_gpu[i] = ' ';
        }
    }
    MPI_OK(PMPI_Bcast(g_gpu, (int)sizeof(g_gpu), MPI_CHAR, 0, g_comm));
    /* distinct GPUs (host + bus id) */
    {
        char key[64];
        int j, k;
        char myname[MPI_MAX_PROCESSOR_NAME + 1];

        PMPI_Get_processor_name(myname, &len);
        busids = calloc((size_t)g_size, sizeof(*busids));
        snprintf(key, sizeof(key), "%.20s@%.40s", busid, myname);
        MPI_OK(PMPI_Allgather(key, 64, MPI_CHAR, busids, 64, MPI_CHAR, g_comm));
        g_ngpus = 0;
        for (j = 0; j < g_size; j++) {
            for (k = 0; k < j && strcmp(busids[k], busids[j]); k++) {
            }
            g_ngpus += k == j;
        }
        free(busids);
    }
    CUDA_OK(cudaStreamCreateWithFlags(&g_stream, cudaStreamNonBlocking));

#ifdef HAVE_NCCL
    for (i = 0; i < g_o.nmodes; i++) {
        if (g_o.modes[i] == MODE_RAW_NCCL) {
            have_raw = raw_nccl_init();
        }
    }
#endif
    build_environment_strings();

    for (i = 0; i < g_o.nsizes; i++) {
        maxs = g_o.sizes[i] > maxs ? g_o.sizes[i] : maxs;
    }
    /* allreduce needs S + S; allgather S/n + S; reduce_scatter S + S/n */
    sbytes = rbytes = maxs + 64;
    if (cudaMalloc(&sbuf, sbytes) != cudaSuccess || cudaMalloc(&rbuf, rbytes) != cudaSuccess ||
        !(hbuf = malloc(maxs + 64))) {
        die0("cannot allocate the buffers for the largest size");
    }
    if (g_csv == NULL && g_o.csv && g_rank == 0) {
        g_csv = fopen(g_o.csv, "a");
        if (!g_csv) {
            fprintf(stderr, "tlmpi_bench: cannot open %s: %s\n", g_o.csv, strerror(errno));
        } else if (ftell(g_csv) == 0) {
            fprintf(g_csv, "generation,date,host,gpu,nranks,coll,dtype,mode,path_served,bytes,iters,avg_us,min_us,"
                           "max_us,algbw_GBps,busbw_GBps,valid,d_raw_us,d_raw_lo_us,d_raw_hi_us\n");
        }
    }
    if (g_rank == 0) {
        char gen[4 * BENCH_GEN_LEN];
        make_generation("<mode>", "<path>", NULL, gen, sizeof(gen));
        printf("# tlmpi_bench: tlmpi %s, %d rank(s) on %d GPU(s) (%s), %s\n", tlmpi_version(), g_size, g_ngpus,
               g_gpu, g_host);
        printf("# generation template: %s\n", gen);
        printf("# hashed as well: full MPI library version (%.*s ...) | %s\n", (int)strcspn(g_hashbase, "\n"),
               g_hashbase, g_hashtail);
        printf("# reps=%d (medians), iters=%s, validation=%s, raw-nccl=%s\n", g_o.reps,
               g_o.iters > 0 ? "fixed" : "auto", g_o.validate ? "on" : "off", have_raw ? "yes" : "no");
        fflush(stdout);
    }

    if (g_o.copy_test) {
        bench_copies(sbuf, rbuf, maxs);
    }
    for (i = 0; i < g_o.ncolls; i++) {
        bench_coll(g_o.colls[i], have_raw, sbuf, rbuf, hbuf);
    }

#ifdef HAVE_NCCL
    if (have_raw) {
        rn.CommDestroy(rn.comm);
    }
#endif
    CUDA_OK(cudaStreamDestroy(g_stream));
    cudaFree(sbuf);
    cudaFree(rbuf);
    free(hbuf);
    if (g_csv) {
        fclose(g_csv);
    }
    if (g_rank == 0 && g_any_fail) {
        fprintf(stderr, "tlmpi_bench: VALIDATION FAILED for at least one row\n");
    }
    for (i = 0; i < MODE_COUNT; i++) {
        if (g_hier_comms[i] != MPI_COMM_NULL) {
            PMPI_Comm_free(&g_hier_comms[i]);
        }
    }
    if (g_flat != MPI_COMM_NULL) {
        PMPI_Comm_free(&g_flat);
    }
    PMPI_Comm_free(&g_comm);
    MPI_Finalize();
    return g_any_fail ? 1 : 0;
}
