/*
 * gpu_reduce: the copy and reduction kernels of cuda/local.cu (cuda/kernels.h) against a host
 * reference, on fresh random data each run (the seed is printed; TLMPI_TEST_SEED=N repeats a run).
 *
 *  - tlmpi_cuda_reduce: every element type x {sum, prod, min, max} x 1..8 sources, with sizes
 *    beyond two full grid strides (ctas x 256 threads x 4 vectors x 16 bytes; copy: 8 vectors) and
 *    odd tails, at
 *    1..3 CTAs and at tlmpi_cuda_ctas_for's count; pointers offset by 0..15 elements, all with the
 *    same misalignment (16-byte vector path with scalar head/tail) or with different ones (the
 *    narrower-vector path), dst aliasing a source (dst = dst op src and others), tiny counts.
 *    Integers take full-range random bits (wrap-around is checked); f16/bf16 are checked against a
 *    host reference that accumulates all sources in float and rounds once.
 *  - tlmpi_cuda_copy: every pair of byte misalignments of dst and src, tiny and multi-stride sizes.
 *  - Results compared bitwise (min/max of floating types: +0 and -0 are the same value); every
 *    destination is poisoned first and the poison around it (64 bytes each side and the alignment
 *    offset) must be intact afterwards.
 *  - Argument errors, tlmpi_cuda_reduce_supported, tlmpi_cuda_sm_count, tlmpi_cuda_ctas_for.
 * No MPI. Exit 77 without a CUDA device.
 */
#include "config.h"
#include "half.h"
#include "kernels.h"
#include "types.h"

#include <cuda_runtime_api.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAXSRC TLMPI_CUDA_REDUCE_MAX_SRC
#define GUARD 64        /* poisoned bytes before each buffer's data (plus the offset) and after it */
#define POISON 0xA5
/* bytes one CTA covers per grid-stride step with 16-byte vectors (the most of any vector width):
 * 256 threads x 4 (reduce) or 8 (copy) vectors x 16 B; a grid stride is ctas times that */
#define STEP_BYTES 16384
#define COPY_STEP_BYTES 32768

#include "elemref.h"

/* ---- buffers: host copies and device buffers of CAP bytes each (poison around the data) ---- */
static size_t cap;
static char *h_buf[MAXSRC + 1], *h_out;
static char *d_buf[MAXSRC + 1];

/* out[0, win) holds a device buffer's first win bytes: all POISON outside the destination [lo, hi) */
static int check_guards(const char *what, const char *out, size_t lo, size_t hi, size_t win)
{
    size_t i;
    for (i = 0; i < win; i++) {
        if ((i < lo || i >= hi) && (unsigned char)out[i] != POISON) {
            printf("FAIL: %s: byte %zd outside the destination [%zu, %zu) overwritten\n", what, (ssize_t)i - (ssize_t)lo, lo, hi);
            return 1;
        }
    }
    return 0;
}

static int fails, cases;

/*
 * One reduce: n elements, sources in buffers 0..nsrc-1 at element offsets off[k], dst in buffer
 * MAXSRC at offset off[MAXSRC] or, if alias >= 0, the same location as source alias.
 */
static void run_reduce(int dt, int op, int nsrc, size_t n, const unsigned *off, int alias, int ctas)
{
    size_t esz = elem_size[dt], i, lo, win, span;
    void *h_src[MAXSRC], *d_src[MAXSRC], *d_dst;
    int k, rc, bad = 0, dbuf = alias >= 0 ? alias : MAXSRC;
    char what[200];

    snprintf(what, sizeof what, "reduce %s %s nsrc=%d n=%zu ctas=%d offsets dst=%u%s src=%u,%u,..", dt_names[dt], op_names[op], nsrc,
             n, ctas, alias >= 0 ? off[alias] : off[MAXSRC], alias >= 0 ? " (aliases a source)" : "", off[0], nsrc > 1 ? off[1] : off[0]);
    span = 2 * GUARD + 16 * 8 + n * esz; /* every byte this case can touch or check */
    if (span > cap) span = cap;
    for (k = 0; k <= MAXSRC; k++) CK(cudaMemset(d_buf[k], POISON, span));
    for (k = 0; k < nsrc; k++) {
        h_src[k] = h_buf[k] + GUARD + off[k] * esz;
        d_src[k] = d_buf[k] + GUARD + off[k] * esz;
        for (i = 0; i < n; i++) put_bits(dt, h_src[k], i, random_elem(dt, op));
        CK(cudaMemcpy(d_src[k], h_src[k], n * esz, cudaMemcpyHostToDevice));
    }
    lo = GUARD + (size_t)(alias >= 0 ? off[alias] : off[MAXSRC]) * esz;
    d_dst = d_buf[dbuf] + lo;
    rc = tlmpi_cuda_reduce(d_dst, (const void *const *)d_src, nsrc, n, dt, op, ctas, NULL);
    if (rc) {
        printf("FAIL: %s: returned %d (%s)\n", what, rc, cudaGetErrorString((cudaError_t)rc));
        fails++;
        cases++;
        return;
    }
    CK(cudaStreamSynchronize(NULL));
    CK(cudaGetLastError());
    win = lo + n * esz + GUARD < cap ? lo + n * esz + GUARD : cap;
    CK(cudaMemcpy(h_out, d_buf[dbuf], win, cudaMemcpyDeviceToHost));
    for (i = 0; i < n; i++) {
        uint64_t want = ref_elem(dt, op, h_src, nsrc, i), got = get_bits(dt, h_out + lo, i);
        if (!same_value(dt, op, got, want)) {
            if (!bad++) {
                printf("FAIL: %s: element %zu: 0x%llx, expected 0x%llx\n", what, i, (unsigned long long)got, (unsigned long long)want);
            }
        }
    }
    if (bad > 1) printf("      (%d elements wrong)\n", bad);
    bad += check_guards(what, h_out, lo, lo + n * esz, win);
    fails += bad != 0;
    cases++;
}

static void run_copy(size_t bytes, unsigned doff, unsigned soff, int in_place, int ctas)
{
    char *d_dst, *d_src, what[160];
    size_t i, win, lo = GUARD + (in_place ? soff : doff);
    int rc, bad = 0, dbuf = in_place ? 0 : 1;

    snprintf(what, sizeof what, "copy bytes=%zu dst+%u src+%u%s ctas=%d", bytes, in_place ? soff : doff, soff, in_place ? " (in place)" : "", ctas);
    win = 2 * GUARD + 16 + bytes < cap ? 2 * GUARD + 16 + bytes : cap;
    CK(cudaMemset(d_buf[0], POISON, win));
    CK(cudaMemset(d_buf[1], POISON, win));
    for (i = 0; i < bytes; i++) h_buf[0][GUARD + soff + i] = (char)rnd(256);
    d_src = d_buf[0] + GUARD + soff;
    d_dst = d_buf[dbuf] + lo;
    CK(cudaMemcpy(d_src, h_buf[0] + GUARD + soff, bytes, cudaMemcpyHostToDevice));
    rc = tlmpi_cuda_copy(d_dst, d_src, bytes, ctas, NULL);
    if (rc) {
        printf("FAIL: %s: returned %d (%s)\n", what, rc, cudaGetErrorString((cudaError_t)rc));
        fails++;
        cases++;
        return;
    }
    CK(cudaStreamSynchronize(NULL));
    CK(cudaGetLastError());
    win = lo + bytes + GUARD < cap ? lo + bytes + GUARD : cap;
    CK(cudaMemcpy(h_out, d_buf[dbuf], win, cudaMemcpyDeviceToHost));
    for (i = 0; i < bytes; i++) {
        if (h_out[lo + i] != h_buf[0][GUARD + soff + i] && !bad++) {
            printf("FAIL: %s: byte %zu: 0x%02x, expected 0x%02x\n", what, i, (unsigned char)h_out[lo + i], (unsigned char)h_buf[0][GUARD + soff + i]);
        }
    }
    bad += check_guards(what, h_out, lo, lo + bytes, win);
    fails += bad != 0;
    cases++;
}

/* elements that make a reduce over ctas CTAs take more than two full grid strides, odd tail */
static size_t multi_stride_count(int dt, int ctas)
{
    size_t stride = (size_t)ctas * STEP_BYTES / elem_size[dt];
    return 2 * stride + 1 + 2 * rnd((unsigned)stride / 2);
}

static void expect_error(const char *what, int rc)
{
    cases++;
    if (rc == 0) {
        printf("FAIL: %s: accepted\n", what);
        fails++;
    }
}

int main(void)
{
    int ndev = 0, dev = 0, sms, dt, op, c, k, big_ctas;
    unsigned off[MAXSRC + 1];
    const char *seed_env = getenv("TLMPI_TEST_SEED");
    uint64_t seed = seed_env ? strtoull(seed_env, NULL, 0) : (uint64_t)time(NULL) * 1000003u ^ (uint64_t)getpid();
    size_t big_bytes;

    setvbuf(stdout, NULL, _IOLBF, 0); /* the log survives a crash */
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        printf("SKIP: no CUDA device\n");
        return 77;
    }
    CK(cudaGetDevice(&dev));
    printf("gpu_reduce: seed %llu (TLMPI_TEST_SEED=%llu repeats this run)\n", (unsigned long long)seed, (unsigned long long)seed);
    rng_state = seed ? seed : 1;

    /* ---- helpers and argument checks ---- */
    sms = tlmpi_cuda_sm_count(dev);
    cases++;
    if (sms <= 0 || tlmpi_cuda_sm_count(dev) != sms) {
        printf("FAIL: tlmpi_cuda_sm_count(%d) = %d, then %d\n", dev, sms, tlmpi_cuda_sm_count(dev));
        fails++;
        sms = 1;
    }
    cases++;
    if (tlmpi_cuda_ctas_for(8, sms) != 1 || tlmpi_cuda_ctas_for((size_t)1 << 30, sms) < 2 * sms ||
        tlmpi_cuda_ctas_for((size_t)1 << 30, sms) > 4 * sms || tlmpi_cuda_ctas_for(0, sms) != 1) {
        printf("FAIL: tlmpi_cuda_ctas_for: 8 B -> %d, 1 GiB -> %d CTAs (%d SMs)\n", tlmpi_cuda_ctas_for(8, sms),
               tlmpi_cuda_ctas_for((size_t)1 << 30, sms), sms);
        fails++;
    }
    for (dt = 0; dt <= TLMPI_DT_COUNT; dt++) {
        for (op = 0; op <= TLMPI_OP_COUNT; op++) {
            int want = dt < TLMPI_DT_NUM_ARITH && op < TLMPI_OP_NUM_ARITH;
            cases++;
            if (!tlmpi_cuda_reduce_supported(dt, op) != !want) {
                printf("FAIL: tlmpi_cuda_reduce_supported(%d, %d) = %d\n", dt, op, tlmpi_cuda_reduce_supported(dt, op));
                fails++;
            }
        }
    }

    big_ctas = tlmpi_cuda_ctas_for((size_t)-1, sms);
    cases++;
    if (big_ctas != 4 * sms) {
        printf("FAIL: tlmpi_cuda_ctas_for(SIZE_MAX, %d) = %d\n", sms, big_ctas);
        fails++;
        big_ctas = 4 * sms;
    }
    big_bytes = 2 * (size_t)big_ctas * STEP_BYTES + 4096 + 7; /* > two reduce strides at the full grid */
    /* room for: the big cases (copy: > two copy strides), the multi-stride cases at up to 3 CTAs
     * (< 3 reduce strides, < 3 copy strides), offsets up to 15 elements of 8 bytes, the guards */
    cap = 2 * (size_t)big_ctas * COPY_STEP_BYTES + 4096 + 7;
    if (cap < 3 * 3 * (size_t)COPY_STEP_BYTES) cap = 3 * 3 * (size_t)COPY_STEP_BYTES;
    cap += 16 * 8 + 2 * GUARD;
    for (k = 0; k <= MAXSRC; k++) {
        h_buf[k] = malloc(cap);
        CK(cudaMalloc((void **)&d_buf[k], cap));
        if (!h_buf[k]) return 1;
    }
    h_out = malloc(cap);
    if (!h_out) return 1;

    {
        const void *srcs[MAXSRC + 1] = { 0 };
        void *d = d_buf[MAXSRC] + GUARD;
        for (k = 0; k <= MAXSRC; k++) srcs[k] = d_buf[k] + GUARD;
        expect_error("reduce with 0 sources", tlmpi_cuda_reduce(d, srcs, 0, 16, TLMPI_DT_F32, TLMPI_OP_SUM, 1, NULL));
        expect_error("reduce with 9 sources", tlmpi_cuda_reduce(d, srcs, MAXSRC + 1, 16, TLMPI_DT_F32, TLMPI_OP_SUM, 1, NULL));
        expect_error("reduce with 0 CTAs", tlmpi_cuda_reduce(d, srcs, 2, 16, TLMPI_DT_F32, TLMPI_OP_SUM, 0, NULL));
        expect_error("reduce of TLMPI_DT_BYTES", tlmpi_cuda_reduce(d, srcs, 2, 16, TLMPI_DT_BYTES, TLMPI_OP_SUM, 1, NULL));
        expect_error("reduce with TLMPI_OP_OTHER", tlmpi_cuda_reduce(d, srcs, 2, 16, TLMPI_DT_F32, TLMPI_OP_OTHER, 1, NULL));
        expect_error("reduce of f32 at an odd address", tlmpi_cuda_reduce((char *)d + 1, srcs, 2, 16, TLMPI_DT_F32, TLMPI_OP_SUM, 1, NULL));
        expect_error("copy with 0 CTAs", tlmpi_cuda_copy(d, srcs[0], 16, 0, NULL));
        CK(cudaMemset(d_buf[MAXSRC], POISON, cap));
        cases += 2;
        if (tlmpi_cuda_reduce(d, srcs, 2, 0, TLMPI_DT_F32, TLMPI_OP_SUM, 1, NULL) || tlmpi_cuda_copy(d, srcs[0], 0, 1, NULL)) {
            printf("FAIL: a reduce or copy of 0 elements failed\n");
            fails++;
        }
        CK(cudaDeviceSynchronize());
        CK(cudaMemcpy(h_out, d_buf[MAXSRC], 4 * GUARD, cudaMemcpyDeviceToHost));
        fails += check_guards("reduce/copy of 0 elements", h_out, GUARD, GUARD, 4 * GUARD);
    }

    /* ---- reduce: every type x op x 1..8 sources, alignment patterns, multi-stride sizes ---- */
    for (dt = 0; dt < TLMPI_DT_NUM_ARITH; dt++) {
        for (op = 0; op < TLMPI_OP_NUM_ARITH; op++) {
            for (c = 0; c < 2 * MAXSRC; c++) {
                int nsrc = c % MAXSRC + 1, ctas = 1 + (int)rnd(3), alias = -1;
                unsigned same = 1 + rnd(15);
                switch (c % 4) {
                case 0: /* all 16-byte aligned (first round) / all at one random misalignment */
                    for (k = 0; k <= MAXSRC; k++) off[k] = c < MAXSRC ? 0 : same;
                    break;
                case 1: /* same misalignment, dst = dst op src... (dst is source 0) */
                    for (k = 0; k <= MAXSRC; k++) off[k] = same;
                    alias = 0;
                    break;
                case 2: /* every pointer misaligned differently: dst differs from source 0 */
                    for (k = 0; k <= MAXSRC; k++) off[k] = rnd(16);
                    off[MAXSRC] = (off[0] + 1 + rnd(15)) % 16;
                    break;
                default: /* dst aliases the last source; the others at independent offsets */
                    for (k = 0; k <= MAXSRC; k++) off[k] = c < MAXSRC ? same : rnd(16);
                    alias = nsrc - 1;
                    break;
                }
                run_reduce(dt, op, nsrc, multi_stride_count(dt, ctas), off, alias, ctas);
            }
            /* tiny counts: head only, head + tail, at random offsets */
            for (c = 0; c < 4; c++) {
                int same = c & 1;
                unsigned o = rnd(16);
                for (k = 0; k <= MAXSRC; k++) off[k] = same ? o : rnd(16);
                run_reduce(dt, op, 1 + (int)rnd(MAXSRC), 1 + rnd(40), off, c == 3 ? 0 : -1, 1);
            }
        }
        /* the full grid of tlmpi_cuda_ctas_for, beyond two strides, one misalignment */
        for (k = 0; k <= MAXSRC; k++) off[k] = 3;
        run_reduce(dt, TLMPI_OP_SUM, 2, (big_bytes - 16 * 8) / elem_size[dt], off, 0, big_ctas);
        for (k = 0; k <= MAXSRC; k++) off[k] = (unsigned)k;
        run_reduce(dt, TLMPI_OP_MAX, 3, (big_bytes - 16 * 8) / elem_size[dt] - 1, off, -1, big_ctas);
    }

    /* ---- copy: every pair of byte misalignments, tiny and multi-stride sizes ---- */
    for (unsigned d = 0; d < 16; d++) {
        for (unsigned s = 0; s < 16; s++) {
            int ctas = 1 + (int)rnd(3);
            run_copy(1 + rnd(40), d, s, 0, 1);
            run_copy(2 * (size_t)ctas * COPY_STEP_BYTES + 1 + rnd(COPY_STEP_BYTES), d, s, 0, ctas);
        }
    }
    run_copy(cap - 16 * 8 - 2 * GUARD, 5, 5, 0, big_ctas);
    run_copy(cap - 16 * 8 - 2 * GUARD - 3, 0, 9, 0, big_ctas);
    run_copy(100003, 0, 7, 1, 2); /* dst == src */

    printf("RESULT gpu_reduce: %d cases (%d types x %d ops x 1..%d sources, copies, argument checks), %d failed, seed %llu\n",
           cases, TLMPI_DT_NUM_ARITH, TLMPI_OP_NUM_ARITH, MAXSRC, fails, (unsigned long long)seed);
    for (k = 0; k <= MAXSRC; k++) {
        free(h_buf[k]);
        CK(cudaFree(d_buf[k]));
    }
    free(h_out);
    return fails ? 1 : 0;
}
