/*
 * gpu_node_kernels: the node kernels (cuda/node_*.cu through kernels.h's tlmpi_cuda_node_run) with
 * n "ranks" in one process: n pools in this process's device memory, n descriptors that all map
 * them, one stream per rank, each call launched on all n streams at once (so all the ranks' CTAs run
 * concurrently, as with n processes under MPS; the CTA counts come from tlmpi_cuda_node_max_ctas
 * for n ranks on the GPU). No MPI: this tests the kernels' data movement, step and slot
 * arithmetic, barriers and parity halves; the MPI tests (gpu_coll, gpu_node) test the tier.
 *
 *  - every algorithm (allgather push/pull/ll, reduce_scatter_block pull/ll, allreduce one-shot/
 *    two-shot/ll; ll up to its limit of TLMPI_NODE_LL_MAX_BYTES, sizes clipped to it) x
 *    every element type x {sum, prod, min, max}, n = 2, 3, 4, 8, sizes 1, 7, 4097 elements and
 *    sizes of several pool steps (data area 64 KiB and 1 MiB), in place and not, user pointers
 *    offset by 0..15 bytes (any alignment), 1..max columns, and in half of the pool-kind calls each
 *    rank on a CTA count of its own (1..columns: each CTA takes several columns in turn, as the node
 *    tier's blocking calls do where another kernel may be in flight; kernels.h: cols);
 *  - a burst of 300 back-to-back calls of alternating kinds and sizes with no host
 *    synchronisation between them, then every result checked (cross-call slot races);
 *  - the same sweep and burst at n = 4 with the device-resident epoch (dev_epoch: what tlmpi's
 *    tiers use; the kernels read and advance it, the host passes none);
 *  - the barriers at system scope (the 64 KiB sweeps and bursts) and at GPU scope (gpu_scope: the
 *    1 MiB sweeps and the device-epoch part; what tlmpi uses where every rank is on one GPU, as
 *    the "ranks" here are);
 *  - the LL flags' wrap: epochs from 2^32 - 2, LL regions pre-filled with lines that carry the
 *    first flags after the wrap (lines "left 2^32 epochs ago"): the clearing at the wrap (the
 *    launcher's with a host epoch, the kernels' own with the device-resident one) must keep every LL
 *    call from taking them, and every rank must end at the same epoch past 2^32;
 *  - a stuck rank (descriptor stuck = 1): every rank's wait times out within the bound and its
 *    error record names the stuck rank and the expected epoch;
 *  - the completion word (done_word: what MPI_Wait reads for a start): 4 ranks, the device epoch,
 *    every kind that writes it (pool kinds and the zero-copy allreduce, several steps, every CTA the
 *    GPU allows) into outputs in mapped host memory: the host spins on each rank's word and, the
 *    moment it holds the launch's value, checks the whole output with no synchronisation (a word
 *    written before some CTA's stores were visible shows poison); the CTA counter's running total;
 *    the LL kinds decline the word (done_word NULL, word unchanged); a set error record keeps that
 *    rank's word unwritten;
 *  - results bitwise against the host reference (elemref.h), outputs poisoned first, the poison
 *    around every output intact afterwards.
 * Default (make check): data areas of 64 KiB for every n, 1 MiB for n = 4, bursts of 100 calls;
 * --full: 1 MiB for every n, bursts of 300 (about 3 minutes on an H200); --wrap-only: the LL wrap
 * case alone; --done-only: the completion word alone; --done-early: the same with every word due at
 * its launch's first CTA (what a kernel without the CTA counter would do): must FAIL; --cols-only:
 * the pool kinds with every rank on a CTA count of its own; --cols-mutant: the same launched without
 * the columns (every rank partitioning by its own CTA count): must FAIL.
 * Fresh random data each run (seed printed; TLMPI_TEST_SEED=N repeats). Exit 77 without a GPU.
 */
#include "config.h"
#include "kernels.h"
#include "elemref.h"

#include <time.h>
#include <unistd.h>

#define MAXR TLMPI_NODE_MAX_RANKS
#define GUARD 64
#define POISON 0xA5

static int failures, cases;
static int nr;                          /* ranks of the current run */
static void *pool[MAXR];
static tlmpi_node_xport_t xp[MAXR];
static tlmpi_node_err_t *err_h[MAXR];
static cudaStream_t st[MAXR];
static unsigned long long epoch[MAXR];
static int max_ctas;
static int dev_ep; /* setup: the descriptors' dev_epoch (the kernels keep the epoch in the pool header) */
static int gpu_sc; /* setup: the descriptors' gpu_scope (barriers at GPU scope: every "rank" is on this GPU) */
/* --cols-only: every pool-kind call on a CTA count of each rank's own; --cols-mutant: the same launched
 * without the columns (each rank partitioning by its own CTA count, what a launcher that drops
 * tlmpi_node_args_t.cols would do): must FAIL */
static int cols_mode;
static int trace; /* TLMPI_TEST_TRACE=1: every case on stdout before its launch, with each rank's CTAs */

static const char *kind_names[TLMPI_NODE_KIND_COUNT] = {
    [TLMPI_NODE_AG_PUSH] = "ag_push", [TLMPI_NODE_AG_PULL] = "ag_pull",     [TLMPI_NODE_RSB_PULL] = "rsb",
    [TLMPI_NODE_AR_ONESHOT] = "ar_oneshot", [TLMPI_NODE_AR_TWOSHOT] = "ar_twoshot", [TLMPI_NODE_AG_LL] = "ag_ll",
    [TLMPI_NODE_RSB_LL] = "rsb_ll",   [TLMPI_NODE_AR_LL] = "ar_ll",         [TLMPI_NODE_BARRIER] = "barrier",
    [TLMPI_NODE_AG_DIRECT] = "ag_direct", [TLMPI_NODE_RSB_DIRECT] = "rsb_direct", [TLMPI_NODE_AR_DIRECT] = "ar_direct",
};

static void setup(int n, size_t data_bytes, double timeout_s)
{
    int i, j;
    nr = n;
    for (i = 0; i < n; i++) {
        CK(cudaMalloc(&pool[i], TLMPI_NODE_HDR_BYTES + data_bytes));
        CK(cudaMemset(pool[i], 0, TLMPI_NODE_HDR_BYTES + data_bytes));
        CK(cudaHostAlloc((void **)&err_h[i], sizeof(tlmpi_node_err_t), cudaHostAllocMapped));
        memset(err_h[i], 0, sizeof(tlmpi_node_err_t));
        CK(cudaStreamCreateWithFlags(&st[i], cudaStreamNonBlocking));
        epoch[i] = 0;
    }
    for (i = 0; i < n; i++) {
        memset(&xp[i], 0, sizeof(xp[i]));
        for (j = 0; j < n; j++) xp[i].base[j] = pool[j];
        xp[i].rank = i;
        xp[i].nranks = n;
        xp[i].data_bytes = data_bytes;
        xp[i].timeout_ns = (unsigned long long)(timeout_s * 1e9);
        xp[i].dev_epoch = dev_ep;
        xp[i].gpu_scope = gpu_sc;
        tlmpi_node_xport_data_after_header(&xp[i]);
        CK(cudaHostGetDevicePointer(&xp[i].err, err_h[i], 0));
    }
    /* every kernel loaded before the first launch (cuda/preload.cu): a lazy load at a "rank"'s first
     * launch of a kernel waits for the other ranks' kernels in flight, which wait for it */
    CK((cudaError_t)tlmpi_cuda_preload(0));
    {
        static int said;
        int loaded;
        long long us;
        tlmpi_cuda_preload_stats(&loaded, &us);
        if (!said++) printf("kernels loaded before the first launch: %d lookups in %.1f ms\n", loaded, us / 1000.0);
    }
    max_ctas = tlmpi_cuda_node_max_ctas(0, n);
    if (max_ctas < 1) {
        printf("FAIL: tlmpi_cuda_node_max_ctas(0, %d) = %d\n", n, max_ctas);
        exit(1);
    }
}

static void teardown(void)
{
    int i;
    CK(cudaDeviceSynchronize());
    for (i = 0; i < nr; i++) {
        CK(cudaFree(pool[i]));
        CK(cudaFreeHost(err_h[i]));
        CK(cudaStreamDestroy(st[i]));
    }
}

/* one call's buffers: per rank a host input, a device in/out with guards, the offset */
typedef struct {
    int kind, dt, op, in_place, ctas;   /* ctas: the call's columns (kernels.h: cols) */
    int grid[MAXR];                     /* CTAs each rank launches (call_prepare): the columns, or for
                                           half of the pool-kind calls a count of its own, 1..ctas */
    size_t count, esz, in_bytes, out_bytes;
    size_t off_in[MAXR], off_out[MAXR];
    char *d_in[MAXR], *d_out[MAXR];     /* allocations (guards included) */
    char *h_in[MAXR];
} call_t;

static int is_ag(int k) { return k == TLMPI_NODE_AG_PUSH || k == TLMPI_NODE_AG_PULL || k == TLMPI_NODE_AG_LL; }
static int is_rsb(int k) { return k == TLMPI_NODE_RSB_PULL || k == TLMPI_NODE_RSB_LL; }
static int is_ll(int k) { return k == TLMPI_NODE_AG_LL || k == TLMPI_NODE_RSB_LL || k == TLMPI_NODE_AR_LL; }
/* an LL kind's count at most its limit (another kind's as it is); count 0 stays 0 */
static size_t fit(int kind, int dt, size_t count)
{
    size_t esz = is_ag(kind) ? 1 : elem_size[dt], max = TLMPI_NODE_LL_MAX_BYTES / esz;
    return is_ll(kind) && count > max ? 1 + (count - 1) % max : count;
}

static void call_prepare(call_t *c)
{
    int r;
    size_t i, n_in;
    c->esz = is_ag(c->kind) ? 1 : elem_size[c->dt];
    {
        const int own = !is_ll(c->kind) && (cols_mode || rnd(2)); /* the LL kinds: one column per CTA */
        for (r = 0; r < nr; r++) c->grid[r] = own ? 1 + (int)rnd((unsigned)c->ctas) : c->ctas;
    }
    c->in_bytes = c->count * c->esz * (is_rsb(c->kind) ? (size_t)nr : 1);
    c->out_bytes = c->count * c->esz * (is_ag(c->kind) ? (size_t)nr : 1);
    n_in = c->in_bytes / c->esz;
    for (r = 0; r < nr; r++) {
        size_t obytes = c->in_place ? (c->out_bytes > c->in_bytes ? c->out_bytes : c->in_bytes) : c->out_bytes;
        c->off_in[r] = is_ag(c->kind) || rnd(3) ? rnd(16) : rnd(16) / c->esz * c->esz;
        c->off_out[r] = c->in_place ? c->off_in[r] : rnd(16);
        c->h_in[r] = malloc(c->in_bytes + 1);
        for (i = 0; i < n_in; i++) put_bits(is_ag(c->kind) ? TLMPI_DT_U8 : c->dt, c->h_in[r], i,
                                            is_ag(c->kind) ? rnd64() : random_elem(c->dt, c->op));
        CK(cudaMalloc((void **)&c->d_out[r], obytes + 2 * GUARD + 16));
        CK(cudaMemset(c->d_out[r], POISON, obytes + 2 * GUARD + 16));
        if (c->in_place) {
            /* allgather: own block at rank's slot of out; reductions: the whole input in out */
            size_t at = is_ag(c->kind) ? (size_t)r * c->count : 0;
            c->d_in[r] = NULL;
            CK(cudaMemcpy(c->d_out[r] + GUARD + c->off_out[r] + at, c->h_in[r], c->in_bytes, cudaMemcpyHostToDevice));
        } else {
            CK(cudaMalloc((void **)&c->d_in[r], c->in_bytes + 2 * GUARD + 16));
            CK(cudaMemcpy(c->d_in[r] + GUARD + c->off_in[r], c->h_in[r], c->in_bytes, cudaMemcpyHostToDevice));
        }
    }
}

static void call_launch(call_t *c)
{
    int r;
    for (r = 0; r < nr; r++) {
        tlmpi_node_args_t a;
        char *out = c->d_out[r] + GUARD + c->off_out[r];
        memset(&a, 0, sizeof(a));
        a.kind = c->kind;
        a.dtype = c->dt;
        a.op = c->op;
        a.out = out;
        a.in = c->in_place ? (is_ag(c->kind) ? out + (size_t)r * c->count : out) : c->d_in[r] + GUARD + c->off_in[r];
        a.count = c->count;
        a.cols = cols_mode == 2 ? 0 : c->ctas;
        a.ctas = c->grid[r];
        a.epoch = epoch[r];
        int e = tlmpi_cuda_node_run(&xp[r], &a, st[r]);
        if (e) {
            printf("FAIL: launch %s: %s\n", kind_names[c->kind], cudaGetErrorString((cudaError_t)e));
            exit(1);
        }
        epoch[r] = a.epoch;
    }
}

/* check rank r's output of call c (after synchronisation) against the reference */
static int call_check(call_t *c, const char *what)
{
    int r, bad = 0;
    size_t i;
    for (r = 0; r < nr && !bad; r++) {
        size_t win = (c->in_place && c->in_bytes > c->out_bytes ? c->in_bytes : c->out_bytes) + 2 * GUARD + 16;
        char *h = malloc(win);
        const char *o = h + GUARD + c->off_out[r];
        CK(cudaMemcpy(h, c->d_out[r], win, cudaMemcpyDeviceToHost));
        for (i = 0; i < GUARD + c->off_out[r] && !bad; i++) bad = (unsigned char)h[i] != POISON;
        if (bad) printf("FAIL: %s: rank %d: poison before the output overwritten\n", what, r);
        if (!bad && !c->in_place) {
            for (i = GUARD + c->off_out[r] + c->out_bytes; i < win && !bad; i++) bad = (unsigned char)h[i] != POISON;
            if (bad) printf("FAIL: %s: rank %d: poison after the output overwritten\n", what, r);
        }
        if (!bad && is_ag(c->kind)) {
            int q;
            for (q = 0; q < nr && !bad; q++) {
                if (memcmp(o + (size_t)q * c->count, c->h_in[q], c->count)) {
                    for (i = 0; i < c->count && o[q * c->count + i] == c->h_in[q][i]; i++) {
                    }
                    printf("FAIL: %s: rank %d: block %d differs at byte %zu\n", what, r, q, i);
                    bad = 1;
                }
            }
        } else if (!bad) {
            size_t base = is_rsb(c->kind) ? (size_t)r * c->count : 0;
            void *srcs[MAXR];
            int q;
            for (q = 0; q < nr; q++) srcs[q] = c->h_in[q] + base * c->esz;
            for (i = 0; i < c->count && !bad; i++) {
                uint64_t want = ref_elem(c->dt, c->op, srcs, nr, i), got = get_bits(c->dt, o, i);
                if (!same_value(c->dt, c->op, got, want)) {
                    printf("FAIL: %s: rank %d: element %zu of %zu: got 0x%llx want 0x%llx\n", what, r, i, c->count,
                           (unsigned long long)got, (unsigned long long)want);
                    bad = 1;
                }
            }
        }
        free(h);
    }
    return bad;
}

static void call_free(call_t *c)
{
    int r;
    for (r = 0; r < nr; r++) {
        free(c->h_in[r]);
        CK(cudaFree(c->d_out[r]));
        if (c->d_in[r]) CK(cudaFree(c->d_in[r]));
    }
}

static int sync_all(const char *what)
{
    int r, bad = 0;
    for (r = 0; r < nr; r++) {
        cudaError_t e = cudaStreamSynchronize(st[r]);
        if (e != cudaSuccess) {
            printf("FAIL: %s: rank %d: %s\n", what, r, cudaGetErrorString(e));
            exit(1);
        }
        if (err_h[r]->set) {
            printf("FAIL: %s: rank %d: device wait timed out (barrier %d, CTA %d, peer %d, expected %llu, seen %llu)\n", what, r,
                   err_h[r]->barrier, err_h[r]->cta, err_h[r]->peer, err_h[r]->expected, err_h[r]->seen);
            bad = 1;
            /* the record and the claim word start clean for the next case (a later failure reports its own wait) */
            memset(err_h[r], 0, sizeof(*err_h[r]));
            CK(cudaMemset((char *)pool[r] + TLMPI_NODE_CLAIM_OFF, 0, 8));
        }
    }
    return bad;
}

static void one_case(int kind, int dt, int op, size_t count, int in_place, int ctas)
{
    call_t c;
    char what[160];
    memset(&c, 0, sizeof(c));
    c.kind = kind;
    c.dt = dt;
    c.op = op;
    c.count = count;
    c.in_place = in_place;
    c.ctas = ctas;
    snprintf(what, sizeof(what), "n=%d %s %s %s count=%zu%s ctas=%d", nr, kind_names[kind], is_ag(kind) ? "bytes" : dt_names[dt],
             is_ag(kind) ? "" : op_names[op], count, in_place ? " in-place" : "", ctas);
    call_prepare(&c);
    if (trace) {
        int r;
        printf("case %d: %s grids", cases, what);
        for (r = 0; r < nr; r++) printf(" %d", c.grid[r]);
        printf(" epoch %llu\n", epoch[0]);
        fflush(stdout);
    }
    /* the inputs and poison were written on the legacy stream (cudaMemset, pageable cudaMemcpy, which
     * may return before its DMA lands); the ranks' streams are non-blocking and not ordered after it */
    CK(cudaDeviceSynchronize());
    call_launch(&c);
    cases++;
    if (sync_all(what) || call_check(&c, what)) failures++;
    call_free(&c);
}

static int pick_ctas(void) { return 1 + (int)rnd((unsigned)max_ctas); }

static void sweep(size_t data_bytes)
{
    int kind, dt, op;
    const size_t small[] = { 1, 7, 4097 };
    for (kind = 0; kind < TLMPI_NODE_BARRIER; kind++) {
        for (dt = 0; dt < TLMPI_DT_NUM_ARITH; dt++) {
            for (op = 0; op < TLMPI_OP_NUM_ARITH; op++) {
                size_t k;
                if (is_ag(kind) && (dt > 0 || op > 0)) continue;
                for (k = 0; k < 3; k++) one_case(kind, dt, op, fit(kind, dt, small[k]), (int)rnd(2), pick_ctas());
                /* several steps: 2.5 .. 4.5 data halves of elements */
                one_case(kind, dt, op,
                         fit(kind, dt, (data_bytes / 2 * 5 / 2 + rnd((unsigned)data_bytes)) / (is_ag(kind) ? 1 : elem_size[dt]) + rnd(5)),
                         (int)rnd(2), pick_ctas());
            }
        }
    }
}

static void burst(int ncalls)
{
    call_t *c = calloc((size_t)ncalls, sizeof(call_t));
    int i, bad = 0;
    for (i = 0; i < ncalls; i++) {
        c[i].kind = (int)rnd(TLMPI_NODE_BARRIER);
        c[i].dt = (int)rnd(TLMPI_DT_NUM_ARITH);
        c[i].op = (int)rnd(TLMPI_OP_NUM_ARITH);
        c[i].count = fit(c[i].kind, c[i].dt, rnd(3) ? 1 + rnd(3000) : 20000 + rnd(60000));
        c[i].in_place = (int)rnd(2);
        c[i].ctas = pick_ctas();
        call_prepare(&c[i]);
    }
    CK(cudaDeviceSynchronize());
    for (i = 0; i < ncalls; i++) call_launch(&c[i]);
    cases++;
    if (sync_all("burst")) bad = 1;
    for (i = 0; i < ncalls && !bad; i++) {
        char what[64];
        snprintf(what, sizeof(what), "burst call %d (%s, count %zu)", i, kind_names[c[i].kind], c[i].count);
        bad = call_check(&c[i], what);
    }
    for (i = 0; i < ncalls; i++) call_free(&c[i]);
    free(c);
    failures += bad;
}

/* With dev_ep: every rank's epoch as its kernels left it in its pool header (after a sync). */
static void read_dev_epochs(void)
{
    int r;
    for (r = 0; r < nr; r++)
        CK(cudaMemcpy(&epoch[r], (char *)pool[r] + TLMPI_NODE_EPOCH_OFF, sizeof(epoch[r]), cudaMemcpyDeviceToHost));
}

/* The LL flags' wrap (kernels.h): 4 ranks from epoch 2^32 - 2; dev: with the device-resident epoch
 * (the kernels clear the LL region themselves, node.cuh's node_enter), else the launcher's. Every line of every LL region is
 * first filled with {junk, F, junk, F}, F = 1 in half 1 and 2 in half 0: what lines written 2^32
 * epochs ago would hold right after the wrap. A one-word LL call (e = 2^32 - 1: half 1, flag
 * 0xffffffff) goes before the wrap; after it the calls of 100 words and more find the junk lines
 * in both halves with their flags (2^32 + 1 -> 1, 2^32 + 2 -> 2) unless the launcher cleared the
 * region at the wrap. Then a burst of mixed kinds across it, every result checked. */
static void ll_wrap(int dev)
{
    const unsigned long long start = (1ull << 32) - 2;
    const size_t half = (size_t)TLMPI_NODE_LL_BYTES / 2;
    unsigned *junk = malloc(TLMPI_NODE_LL_BYTES);
    call_t c[12];
    int r, i, bad = 0;
    size_t w;

    dev_ep = dev;
    setup(4, 65536, 10.0);
    dev_ep = 0;
    for (w = 0; w < TLMPI_NODE_LL_BYTES / 4; w += 4) {
        unsigned f = w * 4 < half ? 2u : 1u;
        junk[w] = 0xdeadbeefu;
        junk[w + 1] = f;
        junk[w + 2] = 0x7f7f7f7fu;
        junk[w + 3] = f;
    }
    for (r = 0; r < nr; r++) {
        CK(cudaMemcpy((char *)pool[r] + TLMPI_NODE_LL_OFF, junk, TLMPI_NODE_LL_BYTES, cudaMemcpyHostToDevice));
        epoch[r] = start;
        if (dev) CK(cudaMemcpy((char *)pool[r] + TLMPI_NODE_EPOCH_OFF, &epoch[r], sizeof(epoch[r]), cudaMemcpyHostToDevice));
    }
    free(junk);
    memset(c, 0, sizeof(c));
    for (i = 0; i < 12; i++) {
        static const int kinds[12] = { TLMPI_NODE_AR_LL, TLMPI_NODE_AR_LL, TLMPI_NODE_AG_LL, TLMPI_NODE_RSB_LL,
                                       TLMPI_NODE_AR_ONESHOT, TLMPI_NODE_AR_LL, TLMPI_NODE_AG_PUSH, TLMPI_NODE_AG_LL,
                                       TLMPI_NODE_AR_TWOSHOT, TLMPI_NODE_RSB_LL, TLMPI_NODE_RSB_PULL, TLMPI_NODE_AR_LL };
        c[i].kind = kinds[i];
        c[i].dt = TLMPI_DT_I32;
        c[i].op = TLMPI_OP_SUM;
        c[i].count = i == 0 ? 2 : fit(kinds[i], TLMPI_DT_I32, 100 + rnd(4000));
        c[i].ctas = pick_ctas();
        call_prepare(&c[i]);
    }
    CK(cudaDeviceSynchronize());
    for (i = 0; i < 12; i++) call_launch(&c[i]);
    cases++;
    if (sync_all("LL wrap")) bad = 1;
    if (dev) read_dev_epochs();
    for (i = 0; i < 12 && !bad; i++) {
        char what[64];
        snprintf(what, sizeof(what), "LL wrap call %d (%s, count %zu)", i, kind_names[c[i].kind], c[i].count);
        bad = call_check(&c[i], what);
    }
    for (r = 0; r < nr && !bad; r++) {
        if (epoch[r] != epoch[0] || epoch[r] <= (1ull << 32)) {
            printf("FAIL: LL wrap: rank %d ended at epoch %llu (rank 0: %llu)\n", r, epoch[r], epoch[0]);
            bad = 1;
        }
    }
    printf("LL wrap (%s epoch): 12 calls from epoch 2^32 - 2 to %llu over junk-filled LL regions: %s\n",
           dev ? "device" : "host", epoch[0], bad ? "FAIL" : "ok");
    for (i = 0; i < 12; i++) call_free(&c[i]);
    failures += bad;
    teardown();
}

static void stuck_rank(void)
{
    int r, bad = 0;
    struct timespec a, b;
    double s;
    /* 2 s: long enough for every other rank's kernel to have started even when other processes
     * time-slice the GPU (make -j check), so the first wait to expire is the one for rank 1 */
    setup(4, 65536, 2.0);
    xp[1].stuck = 1;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (r = 0; r < nr; r++) {
        tlmpi_node_args_t g;
        memset(&g, 0, sizeof(g));
        g.kind = TLMPI_NODE_BARRIER;
        g.ctas = 2;
        g.epoch = epoch[r];
        CK((cudaError_t)tlmpi_cuda_node_run(&xp[r], &g, st[r]));
    }
    for (r = 0; r < nr; r++) CK(cudaStreamSynchronize(st[r]));
    clock_gettime(CLOCK_MONOTONIC, &b);
    s = (double)(b.tv_sec - a.tv_sec) + 1e-9 * (double)(b.tv_nsec - a.tv_nsec);
    for (r = 0; r < nr; r++) {
        /* every rank waits for rank 1, which never arrives (not even at its own flag) */
        if (!err_h[r]->set || err_h[r]->peer != 1 || err_h[r]->expected != 1 || err_h[r]->rank != r ||
            err_h[r]->kind != TLMPI_NODE_BARRIER || err_h[r]->barrier != 1) {
            printf("FAIL: stuck rank 1: rank %d record set=%u peer=%d expected=%llu seen=%llu rank=%d\n", r, err_h[r]->set,
                   err_h[r]->peer, err_h[r]->expected, err_h[r]->seen, err_h[r]->rank);
            bad = 1;
        }
    }
    if (s > 15.0) {
        printf("FAIL: stuck rank: the waits took %.2f s for a 2 s bound\n", s);
        bad = 1;
    }
    printf("stuck rank 1 of 4: the other ranks' waits ended after %.2f s (bound 2 s) with their records set\n", s);
    cases++;
    failures += bad;
    teardown();
}

/* The completion word (kernels.h done_word), 4 ranks, device epoch: see the header. I32 sums (exact). */
/* A launch of an I32 sum (allgather: count bytes) with a completion word. */
static tlmpi_node_args_t done_args(int kind, void *in, void *out, size_t count, int ctas, void *word, unsigned value,
                                   unsigned long long total)
{
    tlmpi_node_args_t a;
    memset(&a, 0, sizeof(a));
    a.kind = kind;
    a.dtype = TLMPI_DT_I32;
    a.op = TLMPI_OP_SUM;
    a.in = in;
    a.out = out;
    a.count = count;
    a.ctas = ctas;
    a.done_word = word;
    a.done_value = value;
    a.done_ctas = total;
    return a;
}

static int done_early; /* --done-early: every launch's target is its first CTA's count (the word written as
                          soon as one CTA finished, as a kernel without the counter would): must FAIL */
static void done_words(int rounds)
{
    const int kinds[] = { TLMPI_NODE_AR_ONESHOT, TLMPI_NODE_AR_TWOSHOT, TLMPI_NODE_RSB_PULL, TLMPI_NODE_AG_PUSH,
                          TLMPI_NODE_AG_PULL,    TLMPI_NODE_AR_DIRECT,  TLMPI_NODE_AR_LL };
    const size_t data = 1 << 20, count = (5u << 20) / 4 / 4; /* 1.25 MiB a block: several data halves */
    unsigned *w_h[MAXR];
    void *w_d[MAXR];
    int32_t *in_h[MAXR], *out_h[MAXR], *ref = malloc(4 * count * 4);
    void *in_d[MAXR], *out_d[MAXR];
    unsigned long long tot[MAXR], hdr;
    unsigned value = 0;
    int r, q, k, v, bad = 0;
    size_t i;

    dev_ep = 1;
    setup(4, data, 10.0);
    for (r = 0; r < nr; r++) {
        CK(cudaHostAlloc((void **)&w_h[r], 64, cudaHostAllocMapped));
        *(volatile unsigned *)w_h[r] = 0;
        CK(cudaHostGetDevicePointer(&w_d[r], w_h[r], 0));
        in_h[r] = malloc(4 * count * 4);
        CK(cudaMalloc(&in_d[r], 4 * count * 4));
        CK(cudaHostAlloc((void **)&out_h[r], 4 * count * 4, cudaHostAllocMapped));
        CK(cudaHostGetDevicePointer(&out_d[r], out_h[r], 0));
        tot[r] = 0;
    }
    for (k = 0; k < (int)(sizeof(kinds) / sizeof(kinds[0])); k++) {
        const int kind = kinds[k], ag = is_ag(kind), rsb = is_rsb(kind), ll = is_ll(kind);
        const size_t n = ll ? TLMPI_NODE_LL_MAX_BYTES / 4 : count; /* elements: a block (ag: bytes / 4) */
        const size_t in_n = rsb ? 4 * n : n, out_n = ag ? 4 * n : n;
        for (v = 0; v < rounds && !bad; v++) {
            const unsigned val = ++value;
            for (r = 0; r < nr; r++) {
                for (i = 0; i < in_n; i++) in_h[r][i] = (int32_t)(rnd64() >> 40);
                CK(cudaMemcpy(in_d[r], in_h[r], in_n * 4, cudaMemcpyHostToDevice));
                memset(out_h[r], POISON, out_n * 4);
            }
            CK(cudaDeviceSynchronize());
            for (r = 0; r < nr; r++) {
                const int ctas = ll ? 1 : max_ctas;
                tlmpi_node_args_t a = done_args(kind, in_d[r], out_d[r], ag ? n * 4 : n, ctas, w_d[r], val,
                                                tot[r] - (done_early && !ll ? (unsigned long long)(ctas - 1) : 0));
                int e;
                if (kind == TLMPI_NODE_AR_DIRECT) {
                    tlmpi_node_direct_t d;
                    for (q = 0; q < nr; q++) {
                        d.in[q] = in_d[q];
                        d.out[q] = out_d[q];
                    }
                    e = tlmpi_cuda_node_run_direct(&xp[r], &a, &d, st[r]);
                } else {
                    e = tlmpi_cuda_node_run(&xp[r], &a, st[r]);
                }
                if (e) {
                    printf("FAIL: done word: launch %s: %s\n", kind_names[kind],
                           cudaGetErrorString((cudaError_t)e));
                    exit(1);
                }
                if (done_early && !ll) a.done_ctas = tot[r] + (unsigned long long)a.ctas; /* what the counter holds */
                if ((a.done_word == NULL) != ll || a.done_ctas != tot[r] + (ll ? 0 : (unsigned long long)a.ctas)) {
                    printf("FAIL: done word: %s: the launcher %s the word (CTA total %llu -> %llu)\n",
                           kind_names[kind], a.done_word ? "took" : "declined", tot[r],
                           a.done_ctas);
                    bad = 1;
                }
                tot[r] = a.done_ctas;
            }
            for (r = 0; r < nr && !bad && !ll; r++) {
                struct timespec t0, t1;
                clock_gettime(CLOCK_MONOTONIC, &t0);
                while (*(volatile unsigned *)w_h[r] != val) {
                    clock_gettime(CLOCK_MONOTONIC, &t1);
                    if ((double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec) > 10.0) {
                        printf("FAIL: done word: %s round %d: rank %d's word is %u after 10 s, want %u\n",
                               kind_names[kind], v, r, *(volatile unsigned *)w_h[r], val);
                        bad = 1;
                        break;
                    }
                }
                if (bad) break;
                __atomic_thread_fence(__ATOMIC_ACQUIRE);
                /* the word holds the value: the whole output must be there now, with no synchronisation;
                 * from the end, where the last step's pieces (written last) lie */
                for (i = out_n; i-- > 0 && !bad;) {
                    int32_t want = 0;
                    if (ag) {
                        want = in_h[i / n][i % n];
                    } else {
                        for (q = 0; q < nr; q++) want += in_h[q][(rsb ? (size_t)r * n : 0) + i];
                    }
                    if (((volatile int32_t *)out_h[r])[i] != want) {
                        printf("FAIL: done word: %s round %d: rank %d's word was written before its output: element %zu "
                               "of %zu is 0x%x, want 0x%x\n", kind_names[kind], v, r, i,
                               out_n, (unsigned)((volatile int32_t *)out_h[r])[i], (unsigned)want);
                        bad = 1;
                    }
                }
            }
            if (sync_all("done word")) bad = 1;
            for (r = 0; r < nr && ll && !bad; r++) {
                if (*(volatile unsigned *)w_h[r] == val) {
                    printf("FAIL: done word: an LL kernel wrote the word it declined (rank %d)\n", r);
                    bad = 1;
                }
            }
            cases++;
        }
    }
    for (r = 0; r < nr && !bad; r++) { /* the header's counter is the running total */
        CK(cudaMemcpy(&hdr, (char *)pool[r] + TLMPI_NODE_EPOCH_OFF + 16, sizeof(hdr), cudaMemcpyDeviceToHost));
        if (hdr != tot[r]) {
            printf("FAIL: done word: rank %d's CTA counter %llu, want %llu\n", r, hdr, tot[r]);
            bad = 1;
        }
    }
    if (!bad) { /* a set error record (a wait of this rank timed out): that rank's word is not written */
        const unsigned val = ++value;
        err_h[1]->set = 1;
        for (r = 0; r < nr; r++) {
            tlmpi_node_args_t a = done_args(TLMPI_NODE_AR_ONESHOT, in_d[r], out_d[r], 4096, 2, w_d[r], val, tot[r]);
            CK((cudaError_t)tlmpi_cuda_node_run(&xp[r], &a, st[r]));
            tot[r] = a.done_ctas;
        }
        for (r = 0; r < nr; r++) CK(cudaStreamSynchronize(st[r]));
        for (r = 0; r < nr; r++) {
            if ((*(volatile unsigned *)w_h[r] == val) != (r != 1)) {
                printf("FAIL: done word: rank %d's word %s with %s error record\n", r,
                       r == 1 ? "written" : "not written", r == 1 ? "a set" : "no");
                bad = 1;
            }
        }
        err_h[1]->set = 0;
        cases++;
    }
    for (r = 0; r < nr; r++) {
        CK(cudaFreeHost(w_h[r]));
        CK(cudaFreeHost(out_h[r]));
        CK(cudaFree(in_d[r]));
        free(in_h[r]);
    }
    free(ref);
    teardown();
    dev_ep = 0;
    failures += bad;
    printf("done word: %d kinds x %d rounds, %s\n", (int)(sizeof(kinds) / sizeof(kinds[0])), rounds, bad ? "FAIL" : "ok");
}

/* The columns alone (--cols-only / --cols-mutant): 4 ranks, the device epoch, 1 MiB data areas, the
 * pool kinds at sizes of one to several steps, every rank on its own CTA count for the call's columns
 * (the most the GPU allows 4 ranks). Stops at the first failure (the mutant's waits time out). */
static void cols_only(int rounds)
{
    static const int kinds[] = { TLMPI_NODE_AG_PUSH, TLMPI_NODE_AG_PULL, TLMPI_NODE_RSB_PULL, TLMPI_NODE_AR_ONESHOT,
                                 TLMPI_NODE_AR_TWOSHOT };
    int i, k;
    dev_ep = 1;
    setup(4, 1 << 20, cols_mode == 2 ? 2.0 : 10.0);
    for (i = 0; i < rounds && !failures; i++)
        for (k = 0; k < 5 && !failures; k++) {
            const int dt = is_ag(kinds[k]) ? 0 : (int)rnd(TLMPI_DT_NUM_ARITH);
            one_case(kinds[k], dt, is_ag(kinds[k]) ? 0 : (int)rnd(TLMPI_OP_NUM_ARITH),
                     (1 + rnd(3u << 20)) / (is_ag(kinds[k]) ? 1 : elem_size[dt]), (int)rnd(2), max_ctas);
        }
    teardown();
    dev_ep = 0;
}

int main(int argc, char **argv)
{
    int n, dev_count = 0, ns[] = { 2, 3, 4, 8 }, i, quick = !(argc > 1 && !strcmp(argv[1], "--full"));
    const int wrap_only = argc > 1 && !strcmp(argv[1], "--wrap-only"); /* the LL wrap case alone (mutant checks) */
    const int done_only = argc > 1 && (!strcmp(argv[1], "--done-only") || !strcmp(argv[1], "--done-early"));
    done_early = argc > 1 && !strcmp(argv[1], "--done-early");
    const char *seed_env = getenv("TLMPI_TEST_SEED");
    trace = getenv("TLMPI_TEST_TRACE") && atoi(getenv("TLMPI_TEST_TRACE")) > 0;
    unsigned long long seed = seed_env ? strtoull(seed_env, NULL, 10) : (unsigned long long)time(NULL) ^ ((unsigned long long)getpid() << 20);
    if (cudaGetDeviceCount(&dev_count) != cudaSuccess || dev_count < 1) {
        printf("gpu_node_kernels: SKIP (no CUDA device)\n");
        return 77;
    }
    rng_state = seed ? seed : 1;
    printf("gpu_node_kernels: seed %llu (TLMPI_TEST_SEED)\n", seed);
    if (argc > 1 && (!strcmp(argv[1], "--cols-only") || !strcmp(argv[1], "--cols-mutant"))) {
        cols_mode = !strcmp(argv[1], "--cols-only") ? 1 : 2;
        cols_only(cols_mode == 2 ? 1 : 20);
        printf("gpu_node_kernels: %s (%d cases, %d failures)\n", failures ? "FAIL" : "PASS", cases, failures);
        return failures ? 1 : 0;
    }
    if (done_only) {
        done_words(40);
        printf("gpu_node_kernels: %s (%d cases, %d failures)\n", failures ? "FAIL" : "PASS", cases, failures);
        return failures ? 1 : 0;
    }
    for (i = 0; i < 4 && !wrap_only; i++) {
        n = ns[i];
        setup(n, 65536, 10.0);
        printf("n=%d: max CTAs %d, data area 64 KiB\n", n, max_ctas);
        sweep(65536);
        burst(quick ? 100 : 300);
        teardown();
        if (!quick || n == 4) {
            gpu_sc = 1; /* the barriers' GPU scope (tlmpi's where every rank is on one GPU), as the
                           device-epoch part below; the 64 KiB parts keep system scope */
            setup(n, 1 << 20, 10.0);
            sweep(1 << 20);
            teardown();
            gpu_sc = 0;
        }
        printf("n=%d: %d cases so far, %d failures\n", n, cases, failures);
    }
    if (!wrap_only) { /* the device-resident epoch (what tlmpi's tiers use), 4 ranks */
        dev_ep = 1;
        gpu_sc = 1;
        setup(4, 65536, 10.0);
        sweep(65536);
        burst(quick ? 100 : 300);
        teardown();
        dev_ep = 0;
        gpu_sc = 0;
        printf("n=4 device epoch, barriers at GPU scope: %d cases so far, %d failures\n", cases, failures);
    }
    ll_wrap(0);
    ll_wrap(1);
    if (!wrap_only) done_words(quick ? 10 : 40);
    if (!wrap_only) stuck_rank();
    printf("gpu_node_kernels: %s (%d cases, %d failures)\n", failures ? "FAIL" : "PASS", cases, failures);
    return failures ? 1 : 0;
}
