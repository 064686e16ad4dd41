/*
 * kernel_bench: tlmpi's copy and reduce kernels (cuda/kernels.h) against cudaMemcpyAsync on one GPU.
 *
 *  - Bandwidth at 256 MiB (median of REPS cudaEvent-timed repetitions each, after warm-up):
 *    cudaMemcpyAsync device to device (the baseline), tlmpi_cuda_copy, and tlmpi_cuda_reduce
 *    dst = dst op src for every element type x {sum, prod, min, max}, plus a few variants
 *    (misaligned copies, 4 sources). GB/s counts the bytes read plus written (copy: 2 x size,
 *    dst op src: 3 x size, k sources into another buffer: (k + 1) x size); the ratio is to the
 *    baseline's GB/s. Target: >= 0.90.
 *  - Latency at 8 B: host time of one launch + cudaStreamSynchronize for the copy kernel and the
 *    reduce kernel against cudaMemcpyAsync + cudaStreamSynchronize, interleaved (the order rotates
 *    every repetition), median of LAT_REPS and the median of the paired differences. Target: the
 *    kernels add <= 1 us.
 * Prints a Markdown table (GPU, driver, CUDA runtime, date); --csv FILE also writes CSV rows.
 * Exit 77 without a CUDA device. CTA counts come from tlmpi_cuda_ctas_for(size, SM count).
 */
#include "bench_stats.h"
#include "kernels.h"
#include "types.h"

#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SIZE ((size_t)256 << 20)
#define REPS 25
#define WARMUP 3
#define LAT_REPS 2000

static const char *const dt_names[TLMPI_DT_NUM_ARITH] = { "i8",  "u8",  "i16", "u16", "i32",  "u32",
                                                          "i64", "u64", "f16", "bf16", "f32", "f64" };
static const char *const op_names[TLMPI_OP_NUM_ARITH] = { "sum", "prod", "min", "max" };
static const size_t elem_size[TLMPI_DT_NUM_ARITH] = TLMPI_DT_ELEM_SIZES;

#define CK(_call)                                                                            \
    do {                                                                                     \
        cudaError_t _e = (cudaError_t)(_call);                                               \
        if (_e != cudaSuccess) {                                                             \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #_call, cudaGetErrorString(_e)); \
            exit(1);                                                                         \
        }                                                                                    \
    } while (0)

enum { K_MEMCPY, K_COPY, K_REDUCE };

typedef struct {
    int kind, dt, op, nsrc, ctas;
    void *dst;
    const void *srcs[TLMPI_CUDA_REDUCE_MAX_SRC];
    size_t bytes; /* copy: bytes; reduce: count * elem size */
} job_t;

static cudaStream_t stream;
static FILE *csv;
static double base_gbs;

static void run_job(const job_t *j)
{
    switch (j->kind) {
    case K_MEMCPY: CK(cudaMemcpyAsync(j->dst, j->srcs[0], j->bytes, cudaMemcpyDeviceToDevice, stream)); break;
    case K_COPY: CK(tlmpi_cuda_copy(j->dst, j->srcs[0], j->bytes, j->ctas, stream)); break;
    default:
        CK(tlmpi_cuda_reduce(j->dst, j->srcs, j->nsrc, j->bytes / elem_size[j->dt], j->dt, j->op, j->ctas, stream));
        break;
    }
}

/* median GB/s of REPS event-timed runs; traffic = bytes read + written */
static double time_gbs(const job_t *j, double traffic)
{
    double t[REPS];
    cudaEvent_t a, b;
    int r;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    for (r = 0; r < WARMUP; r++) run_job(j);
    for (r = 0; r < REPS; r++) {
        float ms;
        CK(cudaEventRecord(a, stream));
        run_job(j);
        CK(cudaEventRecord(b, stream));
        CK(cudaEventSynchronize(b));
        CK(cudaEventElapsedTime(&ms, a, b));
        t[r] = traffic / (ms * 1e-3) / 1e9;
    }
    CK(cudaEventDestroy(a));
    CK(cudaEventDestroy(b));
    qsort(t, REPS, sizeof t[0], bench_cmp_double);
    return t[REPS / 2];
}

static void row_bw(const char *what, const char *detail, double gbs, int ctas)
{
    double ratio = gbs / base_gbs;
    printf("| %s | %s | %d | %.0f | %.3f | %s |\n", what, detail, ctas, gbs, ratio,
           ctas == 0 ? "baseline" : ratio >= 0.90 ? "ok" : "MISS");
    if (csv) fprintf(csv, "bandwidth,%s,%s,%zu,%d,%.1f,%.4f\n", what, detail, SIZE, ctas, gbs, ratio);
}

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof v[0], bench_cmp_double);
    return v[n / 2];
}

int main(int argc, char **argv)
{
    int ndev = 0, dev, sms, drv = 0, rtv = 0, ctas, dt, op, i, r;
    struct cudaDeviceProp prop;
    char date[64];
    time_t tnow = time(NULL);
    char *a, *b, *c[4];
    job_t j;

    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--csv") && i + 1 < argc) {
            csv = fopen(argv[++i], "w");
            if (!csv) {
                perror(argv[i]);
                return 1;
            }
        } else {
            fprintf(stderr, "usage: %s [--csv FILE]\n", argv[0]);
            return 2;
        }
    }
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        printf("SKIP: no CUDA device\n");
        return 77;
    }
    CK(cudaGetDevice(&dev));
    CK(cudaGetDeviceProperties(&prop, dev));
    CK(cudaDriverGetVersion(&drv));
    CK(cudaRuntimeGetVersion(&rtv));
    strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", gmtime(&tnow));
    sms = tlmpi_cuda_sm_count(dev);
    ctas = tlmpi_cuda_ctas_for(SIZE, sms);
    CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    CK(cudaMalloc((void **)&a, SIZE + 64));
    CK(cudaMalloc((void **)&b, SIZE + 64));
    CK(cudaMemset(a, 0x3c, SIZE + 64)); /* 0x3c3c: finite f16/bf16; no NaN/denormal slow paths */
    CK(cudaMemset(b, 0x3c, SIZE + 64));
    for (i = 0; i < 4; i++) {
        CK(cudaMalloc((void **)&c[i], SIZE + 64));
        CK(cudaMemset(c[i], 0x3c, SIZE + 64));
    }
    if (csv) fprintf(csv, "kind,what,detail,bytes,ctas,value,ratio\n");

    printf("# tlmpi kernel_bench\n\n%s (%d SMs), driver %d.%d, CUDA runtime %d.%d, %s\n\n", prop.name, sms, drv / 1000,
           drv % 1000 / 10, rtv / 1000, rtv % 1000 / 10, date);
    if (csv) fprintf(csv, "info,%s,driver %d runtime %d,0,%d,0,0\n", prop.name, drv, rtv, sms);

    /* ---- bandwidth at 256 MiB ---- */
    printf("## 256 MiB: GB/s (bytes read + written), median of %d, ratio to cudaMemcpyAsync D2D\n\n", REPS);
    printf("| kernel | case | CTAs | GB/s | ratio | >= 0.90 |\n| --- | --- | ---: | ---: | ---: | --- |\n");
    memset(&j, 0, sizeof j);
    j.kind = K_MEMCPY;
    j.dst = b;
    j.srcs[0] = a;
    j.bytes = SIZE;
    base_gbs = time_gbs(&j, 2.0 * SIZE);
    row_bw("cudaMemcpyAsync", "D2D", base_gbs, 0);

    j.kind = K_COPY;
    j.ctas = ctas;
    row_bw("tlmpi_cuda_copy", "aligned", time_gbs(&j, 2.0 * SIZE), ctas);
    j.dst = b + 3;
    j.srcs[0] = a + 3;
    row_bw("tlmpi_cuda_copy", "dst, src both +3 B (head/tail)", time_gbs(&j, 2.0 * SIZE), ctas);
    j.dst = b;
    j.srcs[0] = a + 8;
    row_bw("tlmpi_cuda_copy", "src +8 B (8-byte vectors)", time_gbs(&j, 2.0 * SIZE), ctas);
    j.srcs[0] = a + 4;
    row_bw("tlmpi_cuda_copy", "src +4 B (4-byte vectors)", time_gbs(&j, 2.0 * SIZE), ctas);

    for (dt = 0; dt < TLMPI_DT_NUM_ARITH; dt++) {
        for (op = 0; op < TLMPI_OP_NUM_ARITH; op++) {
            char what[64];
            memset(&j, 0, sizeof j);
            j.kind = K_REDUCE;
            j.dt = dt;
            j.op = op;
            j.nsrc = 2;
            j.ctas = ctas;
            j.dst = a;
            j.srcs[0] = a;
            j.srcs[1] = b;
            j.bytes = SIZE;
            snprintf(what, sizeof what, "reduce %s %s", dt_names[dt], op_names[op]);
            row_bw(what, "dst = dst op src", time_gbs(&j, 3.0 * SIZE), ctas);
        }
    }
    {
        static const int dts[] = { TLMPI_DT_BF16, TLMPI_DT_F32 };
        for (i = 0; i < 2; i++) {
            char what[64];
            memset(&j, 0, sizeof j);
            j.kind = K_REDUCE;
            j.dt = dts[i];
            j.op = TLMPI_OP_SUM;
            j.nsrc = 4;
            j.ctas = ctas;
            j.dst = b;
            for (r = 0; r < 4; r++) j.srcs[r] = c[r];
            j.bytes = SIZE;
            snprintf(what, sizeof what, "reduce %s sum", dt_names[dts[i]]);
            row_bw(what, "4 sources -> other buffer", time_gbs(&j, 5.0 * SIZE), ctas);
            /* dst and sources at +e or +e+4 bytes (e = element size): congruent modulo 4 only */
            j.dst = b + elem_size[dts[i]];
            for (r = 0; r < 4; r++) j.srcs[r] = c[r] + elem_size[dts[i]] + (r & 1 ? 4 : 0);
            row_bw(what, "4 sources, misaligned differently (4-byte vectors)", time_gbs(&j, 5.0 * SIZE), ctas);
        }
    }

    /* ---- latency at 8 B: launch + cudaStreamSynchronize, interleaved ---- */
    {
        static double t[3][LAT_REPS], d[2][LAT_REPS];
        const void *srcs[2] = { a, a + 64 };
        double med[3], dmed[2];
        static const char *const names[3] = { "cudaMemcpyAsync D2D 8 B", "tlmpi_cuda_copy 8 B (1 CTA)",
                                              "tlmpi_cuda_reduce f32 sum 2 elements, dst = dst + src (1 CTA)" };
        int one = tlmpi_cuda_ctas_for(8, sms);
        for (r = -100; r < LAT_REPS; r++) { /* 100 warm-up rounds */
            for (int s = 0; s < 3; s++) {
                int k = (r + s + 300) % 3;
                double t0 = now_us(), t1;
                if (k == 0) CK(cudaMemcpyAsync(b, a, 8, cudaMemcpyDeviceToDevice, stream));
                else if (k == 1) CK(tlmpi_cuda_copy(b, a, 8, one, stream));
                else CK(tlmpi_cuda_reduce(a, srcs, 2, 2, TLMPI_DT_F32, TLMPI_OP_SUM, one, stream));
                CK(cudaStreamSynchronize(stream));
                t1 = now_us();
                if (r >= 0) t[k][r] = t1 - t0;
            }
        }
        for (r = 0; r < LAT_REPS; r++) {
            d[0][r] = t[1][r] - t[0][r];
            d[1][r] = t[2][r] - t[0][r];
        }
        for (i = 0; i < 3; i++) med[i] = median(t[i], LAT_REPS);
        for (i = 0; i < 2; i++) dmed[i] = median(d[i], LAT_REPS);
        printf("\n## 8 B: host latency of launch + cudaStreamSynchronize (us), median of %d, interleaved\n\n", LAT_REPS);
        printf("| operation | median us | paired difference to cudaMemcpyAsync, median us | <= 1 us |\n| --- | ---: | ---: | --- |\n");
        printf("| %s | %.2f | | baseline |\n", names[0], med[0]);
        for (i = 1; i < 3; i++) printf("| %s | %.2f | %+.2f | %s |\n", names[i], med[i], dmed[i - 1], dmed[i - 1] <= 1.0 ? "ok" : "MISS");
        if (csv) {
            fprintf(csv, "latency,%s,,8,1,%.3f,0\n", names[0], med[0]);
            for (i = 1; i < 3; i++) fprintf(csv, "latency,%s,paired diff %.3f,8,1,%.3f,0\n", names[i], dmed[i - 1], med[i]);
        }
    }

    CK(cudaStreamSynchronize(stream));
    CK(cudaGetLastError());
    if (csv) fclose(csv);
    cudaFree(a);
    cudaFree(b);
    for (i = 0; i < 4; i++) cudaFree(c[i]);
    cudaStreamDestroy(stream);
    return 0;
}
