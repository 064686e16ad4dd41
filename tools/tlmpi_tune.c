/*
 * tlmpi_tune: measure, for the communicator layout it runs on (MPI_COMM_WORLD: nodes, ranks per
 * node, GPU model), which (tier, algorithm, CTA knob) tuple serves each collective best in each size
 * class, and write a tuning file that a plan reads at build (TLMPI_TUNING_FILE; format in
 * src/comm/tuning.h).
 *
 *   mpiexec -n N tlmpi_tune [-o FILE] [-s SIZES] [-C COLLS] [-p PASSES] [-t SECONDS] [-k CTAS] [-F FORM]
 *   mpiexec -n N tlmpi_tune -c FILE      print the world's plan as FILE gives it to this layout
 *                                        (no GPU needed: without one it also lists the file's sections)
 *
 * The method, the same on every rank (every rank builds the same candidate list in the same order
 * and every decision is agreed with one PMPI_Allreduce, so the ranks stay in lockstep):
 *   - candidates per collective: the node tier's algorithms with each CTA knob of -k (0: the tier's
 *     own choice), nccl, hier, staging. They are whole tuples, not knobs tuned one at a time,
 *     because knob optima do not combine. The baseline is the current default: no table, auto.
 *     Above the LL kernels' size limit the ll tuples are left out (forced there, ll runs auto): the
 *     table's last column counts the candidates of each size;
 *   - each candidate is verified once per size: exact results on fresh integer inputs, and the
 *     stats must show the intended tier served it. A tuple that fails on any rank, or that its
 *     tier cannot serve there (it fell back), is skipped by every rank alike;
 *   - timing: PASSES passes; in each, the candidates in turn (reversed on odd passes), and each
 *     candidate timed between two timings of the baseline. A timing is the slowest rank's mean over
 *     enough calls to fill -t seconds. Each keeps its best pass; the baseline keeps its best over all
 *     its timings;
 *   - the best candidate wins its size class only when it beats the baseline by 5% or more (-T; under
 *     that spread it is a tie and the default stays). Consecutive classes with the same winner merge
 *     into one table entry.
 *   - the form timed (-F): blocking calls (MPI_Allreduce, ...), or the stream-ordered entry points
 *     (tlmpi_*_enqueue on one stream, one stream sync after the timed calls; the candidates then only
 *     the tiers that run stream-ordered, node and nccl, and the baseline with the synchronous fallback
 *     allowed where auto picks another). The file's table serves every form; its comment line names
 *     the form it was measured with.
 * Output: the file (rank 0) and a table on stdout (baseline, best, winner, gain per size).
 * Exit 0; 1 when the file cannot be written (or, with -c, read); 77 when measuring finds no CUDA device.
 */
#include "config.h"
#include "tlmpi.h"
#include "kernels.h" /* TLMPI_NODE_LL_MAX_BYTES */

#include <cuda_runtime_api.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_SIZES 24
#define MAX_CANDS 48
static double g_tie = 0.05; /* -T: the least gain (fraction) for a candidate to replace the default */

enum { C_AR, C_AG, C_RSB, NCOLL };
static const char *const coll_name[NCOLL] = { "allreduce", "allgather", "reduce_scatter_block" };
static const char *const coll_env[NCOLL] = { "ALLREDUCE_TIERS", "ALLGATHER_TIERS", "REDUCE_SCATTER_BLOCK_TIERS" };
static const tlmpi_coll_t coll_id[NCOLL] = { TLMPI_COLL_ALLREDUCE, TLMPI_COLL_ALLGATHER, TLMPI_COLL_REDUCE_SCATTER_BLOCK };

typedef struct {
    char spec[48];      /* the table entry ("node/twoshot@32"); "" = the baseline (defaults) */
    tlmpi_path_t path;  /* the path it must be served by */
} cand_t;

static int g_rank, g_size;
static int *d_s, *d_r, *h_buf;
static int g_enqueue;          /* -F enqueue: time and verify the stream-ordered entry points */
static cudaStream_t g_stream;  /* their stream */
static size_t g_cap; /* ints per buffer */

static size_t parse_size(const char *s)
{
    char *e;
    double v = strtod(s, &e);

    if (*e == 'k' || *e == 'K') v *= 1024;
    else if (*e == 'm' || *e == 'M') v *= 1024 * 1024;
    else if (*e == 'g' || *e == 'G') v *= 1024.0 * 1024 * 1024;
    return (size_t)v;
}

static long long path_calls(int coll, tlmpi_path_t p)
{
    tlmpi_stat_t st;

    return tlmpi_get_stats(coll_id[coll], p, &st) == TLMPI_OK ? (long long)st.calls : 0;
}

static int set_cand(int coll, const cand_t *c)
{
    return tlmpi_config_set(coll_env[coll], c->spec) == TLMPI_OK;
}

/* One call of coll with count ints per rank block (allreduce: count ints in all); -F enqueue: ordered
 * on g_stream (the caller syncs it). */
static int call(int coll, size_t count)
{
    if (g_enqueue) {
        switch (coll) {
        case C_AR: return tlmpi_allreduce_enqueue(d_s, d_r, (int)count, MPI_INT, MPI_SUM, MPI_COMM_WORLD, g_stream);
        case C_AG:
            return tlmpi_allgather_enqueue(d_s, (int)count, MPI_INT, d_r, (int)count, MPI_INT, MPI_COMM_WORLD, g_stream);
        default:
            return tlmpi_reduce_scatter_block_enqueue(d_s, d_r, (int)count, MPI_INT, MPI_SUM, MPI_COMM_WORLD, g_stream);
        }
    }
    switch (coll) {
    case C_AR: return MPI_Allreduce(d_s, d_r, (int)count, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    case C_AG: return MPI_Allgather(d_s, (int)count, MPI_INT, d_r, (int)count, MPI_INT, MPI_COMM_WORLD);
    default: return MPI_Reduce_scatter_block(d_s, d_r, (int)count, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    }
}

static int val(int r, size_t i, unsigned salt) { return (int)((r + 1) * ((i + salt) % 7 + 1)) - 3 * r; }

/* 1 if the candidate gives exact results here and its intended path served it (local answer). */
static int verify(int coll, const cand_t *c, size_t count, unsigned salt)
{
    size_t in_n = coll == C_RSB ? count * (size_t)g_size : count, out_n = coll == C_AG ? count * (size_t)g_size : count;
    long long before = path_calls(coll, c->path);
    size_t i;
    int ok = 1;

    for (i = 0; i < in_n; i++) h_buf[i] = val(g_rank, i, salt);
    if (cudaMemcpy(d_s, h_buf, in_n * sizeof(int), cudaMemcpyHostToDevice) != cudaSuccess ||
        cudaMemset(d_r, 0xA5, out_n * sizeof(int)) != cudaSuccess || cudaDeviceSynchronize() != cudaSuccess ||
        !set_cand(coll, c) || call(coll, count) != MPI_SUCCESS ||
        (g_enqueue && cudaStreamSynchronize(g_stream) != cudaSuccess) ||
        cudaMemcpy(h_buf, d_r, out_n * sizeof(int), cudaMemcpyDeviceToHost) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    for (i = 0; i < out_n && ok; i++) {
        long long want = 0;

        if (coll == C_AG) {
            want = val((int)(i / count), i % count, salt);
        } else {
            size_t gi = coll == C_RSB ? (size_t)g_rank * count + i : i;

            for (int r = 0; r < g_size; r++) want += val(r, gi, salt);
        }
        ok = h_buf[i] == (int)want;
    }
    return ok && (c->spec[0] == '\0' || path_calls(coll, c->path) > before);
}

/* The slowest rank's mean time per call over n calls (seconds). */
static double timed(int coll, const cand_t *c, size_t count, long n)
{
    double t0, t, tmax = 0;

    set_cand(coll, c);
    call(coll, count); /* the plan refill (collective) and a warm-up */
    call(coll, count);
    if (g_enqueue) cudaStreamSynchronize(g_stream);
    PMPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    for (long k = 0; k < n; k++) call(coll, count);
    if (g_enqueue) cudaStreamSynchronize(g_stream);
    t = (MPI_Wtime() - t0) / (double)n;
    PMPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return tmax;
}

int main(int argc, char **argv)
{
    const char *out = "tlmpi-tuning.txt", *sizes_s = "8,1k,16k,64k,256k,1m,4m,16m,64m", *colls_s = "allreduce,allgather,reduce_scatter_block";
    const char *ctas_s = "0,16,64", *check = NULL, *form = "blocking";
    int passes = 3, ch, ndev = 0, ns = 0, nk = 0, knobs[8];
    double target = 0.02;
    size_t sizes[MAX_SIZES];
    tlmpi_comm_info_t info;
    char gpu[128] = "none", *tok, buf[256];
    FILE *f = NULL;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    while ((ch = getopt(argc, argv, "o:s:C:p:t:k:c:F:T:h")) != -1) {
        if (ch == 'F' && strcmp(optarg, "blocking") && strcmp(optarg, "enqueue")) ch = '?';
        if (ch == 'T' && !(atof(optarg) >= 0 && atof(optarg) <= 100 && strspn(optarg, "0123456789.") == strlen(optarg))) ch = '?';
        switch (ch) {
        case 'F': form = optarg; break;
        case 'c': check = optarg; break;
        case 'o': out = optarg; break;
        case 's': sizes_s = optarg; break;
        case 'C': colls_s = optarg; break;
        case 'p': passes = atoi(optarg) > 0 ? atoi(optarg) : 1; break;
        case 't': target = atof(optarg) > 0 ? atof(optarg) : 0.02; break;
        case 'k': ctas_s = optarg; break;
        case 'T': g_tie = atof(optarg) / 100; break;
        default:
            if (g_rank == 0) {
                fprintf(ch == 'h' ? stdout : stderr,
                        "usage: mpiexec -n N tlmpi_tune [-o FILE] [-s SIZES] [-C COLLS] [-p PASSES] [-t SECONDS] [-k CTAS] [-F FORM] [-T PCT]\n"
                        "       mpiexec -n N tlmpi_tune -c FILE\n"
                        "Measure which tier/algorithm/CTA count serves each collective best per size class on\n"
                        "this layout (needs a CUDA device) and write a tuning file for TLMPI_TUNING_FILE.\n"
                        "  -o FILE     tuning file to write (default tlmpi-tuning.txt)\n"
                        "  -s SIZES    message sizes, comma-separated, k/m suffixes (default 8,1k,16k,64k,256k,1m,4m,16m,64m)\n"
                        "  -C COLLS    collectives (default allreduce,allgather,reduce_scatter_block)\n"
                        "  -p PASSES   timing passes (default 3)\n"
                        "  -t SECONDS  time per timing (default 0.02)\n"
                        "  -k CTAS     node-tier CTA counts (columns) to try, 0 = the tier's own (default 0,16,64)\n"
                        "  -F FORM     the form to time: blocking (default) or enqueue (tlmpi_*_enqueue on a stream)\n"
                        "  -T PCT      the least gain, in percent of the default's time, for a candidate to replace\n"
                        "              the default (default 5; under it a tie: the default stays; 100: never)\n"
                        "  -c FILE     print the plan FILE gives MPI_COMM_WORLD's layout and measure nothing\n"
                        "              (works without a GPU: it then also lists the file's sections)\n"
                        "  -h          this help\n");
            }
            MPI_Finalize();
            return ch == 'h' ? 0 : 2;
        }
    }
    snprintf(buf, sizeof(buf), "%s", sizes_s);
    for (tok = strtok(buf, ","); tok && ns < MAX_SIZES; tok = strtok(NULL, ",")) sizes[ns++] = parse_size(tok);
    snprintf(buf, sizeof(buf), "%s", ctas_s);
    for (tok = strtok(buf, ","); tok && nk < 8; tok = strtok(NULL, ",")) knobs[nk++] = atoi(tok);
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < 1) {
        (void)cudaGetLastError();
        ndev = 0;
        if (!check) { /* measuring needs a device; reading a file (-c) does not */
            if (g_rank == 0) fprintf(stderr, "tlmpi_tune: no CUDA device\n");
            MPI_Finalize();
            return 77;
        }
    }
    if (ndev > 0) {
        cudaSetDevice(g_rank % ndev);
        tlmpi_tuning_gpu(g_rank % ndev, gpu, sizeof(gpu)); /* as the plan keys the file */
    }
    if (check) {
        char plan[4096];
        int unreadable = !(f = fopen(check, "r")), any = 0;

        if (f) fclose(f);
        f = NULL;
        PMPI_Allreduce(&unreadable, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        if (any) {
            if (g_rank == 0) fprintf(stderr, "tlmpi_tune: cannot read %s (on some rank)\n", check);
            MPI_Finalize();
            return 1;
        }
        tlmpi_config_set("TUNING_FILE", check);
        if (tlmpi_comm_describe(MPI_COMM_WORLD, plan, sizeof(plan)) != TLMPI_OK) snprintf(plan, sizeof(plan), "(none)");
        if (g_rank == 0) printf("tlmpi_tune: plan with %s: %s\n", check, plan);
        if (g_rank == 0 && ndev == 0 && (f = fopen(check, "r"))) {
            /* no GPU here, so no device tier and no GPU model to key the file: show what it holds */
            printf("tlmpi_tune: no CUDA device here (device buffers would be passed through); %s holds:\n", check);
            while (fgets(buf, sizeof(buf), f)) {
                if (buf[0] != '#' && buf[0] != '\n') printf("  %s", buf);
            }
            fclose(f);
        }
        MPI_Finalize();
        return 0;
    }
    tlmpi_config_set("TUNING_FILE", ""); /* measure against the defaults, not an older file */
    g_enqueue = !strcmp(form, "enqueue");
    if (g_enqueue && (cudaStreamCreateWithFlags(&g_stream, cudaStreamNonBlocking) != cudaSuccess ||
                      tlmpi_enqueue_prepare(MPI_COMM_WORLD, TLMPI_ENQUEUE_SYNC_FALLBACK) != MPI_SUCCESS)) {
        if (g_rank == 0) fprintf(stderr, "tlmpi_tune: -F enqueue: no stream or tlmpi_enqueue_prepare failed: %s\n",
                                 tlmpi_enqueue_error());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (tlmpi_comm_query(MPI_COMM_WORLD, &info) != TLMPI_OK) {
        if (g_rank == 0) fprintf(stderr, "tlmpi_tune: tlmpi is not active (link it or LD_PRELOAD it)\n");
        MPI_Finalize();
        return 2;
    }
    g_cap = ((sizes[ns - 1] + 3) / 4 + 64 + (size_t)(info.local_size > 0 ? info.local_size : 1)) * (size_t)g_size;
    if (cudaMalloc((void **)&d_s, g_cap * sizeof(int)) != cudaSuccess ||
        cudaMalloc((void **)&d_r, g_cap * sizeof(int)) != cudaSuccess || !(h_buf = malloc(g_cap * sizeof(int)))) {
        if (g_rank == 0) fprintf(stderr, "tlmpi_tune: cannot allocate %zu bytes per buffer\n", g_cap * sizeof(int));
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (g_rank == 0) {
        f = fopen(out, "w");
        if (f) {
            fprintf(f, "tlmpi-tuning 1\n# written by tlmpi_tune: %d ranks, passes %d, target %.3f s per timing, tie under %g%%, "
                    "form %s\n", g_size, passes, target, g_tie * 100, form);
            fprintf(f, "generation %s\n", tlmpi_generation());
            fprintf(f, "layout nodes=%d ranks_per_node=%d gpu=%s\n", info.node_count, info.local_size, gpu);
        }
        printf("tlmpi_tune: %d ranks, %d nodes x %d, gpu %s, generation '%s', form %s\n", g_size, info.node_count,
               info.local_size, gpu, tlmpi_generation(), form);
        printf("| collective | bytes | baseline us | best us | winner | gain | candidates valid |\n| --- | --- | --- | --- | --- | --- | --- |\n");
    }
    for (int coll = 0; coll < NCOLL; coll++) {
        cand_t cands[MAX_CANDS];
        int nc = 0;
        char table[512] = "", prev[48] = "\x01";
        size_t prev_limit = 0;
        int any = 0;

        if (!strstr(colls_s, coll_name[coll])) continue;
        /* the candidate list: the same on every rank, in the same order */
        memset(cands, 0, sizeof(cands));
        cands[nc++].path = TLMPI_PATH_COUNT; /* [0]: the baseline */
        {
            /* ll first: a forced ll above its size limit runs auto, so it is a candidate of small sizes only
             * (left out per size below) */
            static const char *const node_algos[NCOLL][3] = { { "ll", "oneshot", "twoshot" }, { "ll", "push", "pull" },
                                                              { "ll", "pull", NULL } };

            for (int a = 0; a < 3; a++) {
                if (!node_algos[coll][a]) continue;
                for (int k = 0; k < nk; k++) {
                    if (knobs[k] > 0) snprintf(cands[nc].spec, sizeof(cands[nc].spec), "node/%s@%d", node_algos[coll][a], knobs[k]);
                    else snprintf(cands[nc].spec, sizeof(cands[nc].spec), "node/%s", node_algos[coll][a]);
                    cands[nc++].path = TLMPI_PATH_NODE;
                }
            }
        }
        snprintf(cands[nc].spec, sizeof(cands[nc].spec), "nccl");
        cands[nc++].path = TLMPI_PATH_NCCL;
        if (g_enqueue) {
            /* hier and staging do not run stream-ordered (their calls would be synchronous fallbacks) */
        } else if (coll == C_AR) {
            snprintf(cands[nc].spec, sizeof(cands[nc].spec), "hier/oneshot");
            cands[nc++].path = TLMPI_PATH_HIER;
            snprintf(cands[nc].spec, sizeof(cands[nc].spec), "hier/2d");
            cands[nc++].path = TLMPI_PATH_HIER;
        } else {
            snprintf(cands[nc].spec, sizeof(cands[nc].spec), "hier");
            cands[nc++].path = TLMPI_PATH_HIER;
        }
        if (!g_enqueue) {
            snprintf(cands[nc].spec, sizeof(cands[nc].spec), "staging");
            cands[nc++].path = TLMPI_PATH_STAGING;
        }
        for (int si = 0; si < ns; si++) {
            /* count: ints per rank block (allreduce: the whole vector); hier's allreduce needs a
             * multiple of the ranks per node, so round to it */
            size_t count = sizes[si] / 4 ? sizes[si] / 4 : 1, step = info.local_size > 0 ? (size_t)info.local_size : 1;
            int valid[MAX_CANDS], agreed[MAX_CANDS], nvalid = 0, napply, best = 0, ref;
            double tbest[MAX_CANDS], tbase = 1e30;
            long n = 1;
            const char *win;

            count = (count + step - 1) / step * step;
            /* a forced ll above its size limit runs auto: not a candidate of this size (neither run nor
             * counted) */
            napply = 0;
            for (int k = 0; k < nc; k++) {
                const int skip = k > 0 && !strncmp(cands[k].spec, "node/ll", 7) && count * 4 > TLMPI_NODE_LL_MAX_BYTES;

                valid[k] = skip ? 0 : verify(coll, &cands[k], count, (unsigned)(si * 31 + k));
                napply += k > 0 && !skip;
            }
            PMPI_Allreduce(valid, agreed, nc, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
            /* the reference for the calls per timing: the baseline, or where it failed its check (-F
             * enqueue: a stream-ordered call that returned an error) the first valid candidate */
            for (ref = 0; ref < nc && !agreed[ref]; ref++) {
            }
            ref = ref < nc ? ref : 0;
            /* calls per timing: from one reference call, the same on every rank */
            {
                double t = timed(coll, &cands[ref], count, 1);
                n = t > 0 ? (long)(target / t) : 1000;
                n = n < 1 ? 1 : n > 100000 ? 100000 : n;
            }
            for (int k = 0; k < nc; k++) {
                tbest[k] = 1e30;
                nvalid += agreed[k];
            }
            for (int p = 0; p < passes; p++) {
                for (int j = 0; j < nc; j++) {
                    int k = p % 2 ? nc - 1 - j : j;
                    double b1, tk, b2;

                    if (k == 0 || !agreed[k]) continue;
                    b1 = agreed[0] ? timed(coll, &cands[0], count, n) : 1e30;
                    tk = timed(coll, &cands[k], count, n);
                    b2 = agreed[0] ? timed(coll, &cands[0], count, n) : 1e30;
                    if (tk < tbest[k]) tbest[k] = tk;
                    if (b1 < tbase) tbase = b1;
                    if (b2 < tbase) tbase = b2;
                }
            }
            if (tbase >= 1e30 && agreed[0]) tbase = timed(coll, &cands[0], count, n);
            for (int k = 1; k < nc; k++) {
                if (agreed[k] && (best == 0 || tbest[k] < tbest[best])) best = k;
            }
            /* the best valid candidate replaces the default where the default failed its check, else only
             * by -T or more */
            win = best > 0 && (!agreed[0] || (g_tie < 1 && tbest[best] <= tbase * (1.0 - g_tie))) ? cands[best].spec : "auto";
            if (g_rank == 0) {
                char tie_why[48], bs[32] = "-", gs[32] = "-";
                const char *why;

                snprintf(tie_why, sizeof(tie_why), " (tie: under %g%%)", g_tie * 100);
                why = best == 0 ? " (no other candidate valid)"
                      : !agreed[0] ? " (the default failed its check)"
                      : strcmp(win, "auto") ? ""
                      : tbest[best] < tbase ? tie_why : " (the default was fastest)";
                if (agreed[0]) {
                    snprintf(bs, sizeof(bs), "%.2f", tbase * 1e6);
                    snprintf(gs, sizeof(gs), "%.2fx", best > 0 ? tbase / tbest[best] : 1.0);
                }
                printf("| %s | %zu | %s | %.2f | %s%s%s%s | %s | %d/%d |\n", coll_name[coll], count * 4, bs,
                       best > 0 ? tbest[best] * 1e6 : tbase * 1e6, win, why, best > 0 && !strcmp(win, "auto") ? "; best " : "",
                       best > 0 && !strcmp(win, "auto") ? cands[best].spec : "", gs, nvalid - agreed[0], napply);
            }
            /* the table: a new entry where the winner changes; the last size class takes all larger */
            if (strcmp(win, prev) != 0) {
                if (prev[0] != '\x01') {
                    size_t o = strlen(table);
                    snprintf(table + o, sizeof(table) - o, "%s%s:%zu", o ? "," : "", prev, prev_limit);
                }
                snprintf(prev, sizeof(prev), "%s", win);
            }
            prev_limit = count * 4;
            any |= strcmp(win, "auto") != 0;
        }
        if (g_rank == 0 && f && any) {
            size_t o = strlen(table);
            snprintf(table + o, sizeof(table) - o, "%s%s", o ? "," : "", prev);
            fprintf(f, "%s %s\n", coll_name[coll], table);
        }
        {
            cand_t none;

            memset(&none, 0, sizeof(none));
            set_cand(coll, &none); /* back to the default for the next collective */
        }
    }
    if (g_rank == 0) {
        if (f) {
            fclose(f);
            printf("tlmpi_tune: wrote %s\n", out);
        } else {
            fprintf(stderr, "tlmpi_tune: cannot write %s\n", out);
        }
    }
    {
        int bad = g_rank == 0 && !f, all = 0;

        PMPI_Allreduce(&bad, &all, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        if (g_enqueue) cudaStreamDestroy(g_stream);
        cudaFree(d_s);
        cudaFree(d_r);
        free(h_buf);
        MPI_Finalize();
        return all ? 1 : 0;
    }
}
