/*
 * stack_app: the program of tests/interpose/stack.sh, run with tlmpi and the PMPI counting tool
 * (pmpi_counter.c) in both orders. It calls MPI_Allreduce (in place and not), MPI_Allgather,
 * MPI_Reduce_scatter_block and MPI_Iallreduce completed by MPI_Wait and by an MPI_Test loop, once on
 * host buffers and once on "device" buffers (cudaMalloc of the fake CUDA runtime, tests/fakes, which
 * tlmpi classifies as device memory), plus a host MPI_Iallreduce completed by MPI_Wait and one by
 * MPI_Test while a device MPI_Iallreduce is still outstanding (the request calls then pass through
 * tlmpi's request scan). Every result is checked. It prints what it called, in pmpi_counter's
 * format, in two lines (host buffers and the MPI's requests; device buffers and their requests),
 * and what tlmpi served (tlmpi_get_stats, found with dlsym: the program links no tlmpi):
 *   stack_app: rank R: host: allreduce N allgather N reduce_scatter_block N iallreduce N wait N test N
 *   stack_app: rank R: device: allreduce N allgather N reduce_scatter_block N iallreduce N wait N test N
 *   stack_app: rank R: tlmpi served allreduce N allgather N reduce_scatter_block N
 * "served" counts every call tlmpi ran on a path other than passthrough (staging here).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <tlmpi.h>

/* the fake CUDA runtime's allocator (the program is linked with it or runs with it preloaded) */
int cudaMalloc(void **p, size_t n);
int cudaFree(void *p);

#define N 16
enum { C_ALLREDUCE, C_ALLGATHER, C_RSB, C_IALLREDUCE, C_WAIT, C_TEST, C_COUNT };
static unsigned long made[2][C_COUNT]; /* [0] host, [1] device */
static int rank, size, errs;

static void check(int ok, const char *what)
{
    if (!ok) {
        printf("stack_app: rank %d: wrong result of %s\n", rank, what);
        errs++;
    }
}

/* value of element i on rank r */
static double val(int r, int i)
{
    return (double)(r + 1) * 100 + i;
}

static double sum_of(int i)
{
    double s = 0;
    int r;

    for (r = 0; r < size; r++) {
        s += val(r, i);
    }
    return s;
}

static void fill(double *b, int n)
{
    int i;

    for (i = 0; i < n; i++) {
        b[i] = val(rank, i);
    }
}

static void wait_req(int dev, MPI_Request *r)
{
    MPI_Wait(r, MPI_STATUS_IGNORE);
    made[dev][C_WAIT]++;
}

static void test_req(int dev, MPI_Request *r)
{
    int flag = 0;

    while (!flag) {
        MPI_Test(r, &flag, MPI_STATUS_IGNORE);
        made[dev][C_TEST]++;
    }
}

/* the calls on one kind of buffer: s, r of size * N doubles */
static void calls(int dev, double *s, double *r)
{
    MPI_Request q;
    int i;

    fill(s, N);
    MPI_Allreduce(s, r, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    made[dev][C_ALLREDUCE]++;
    for (i = 0; i < N; i++) {
        check(r[i] == sum_of(i), "MPI_Allreduce");
    }
    fill(r, N);
    MPI_Allreduce(MPI_IN_PLACE, r, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    made[dev][C_ALLREDUCE]++;
    for (i = 0; i < N; i++) {
        check(r[i] == sum_of(i), "MPI_Allreduce in place");
    }
    fill(s, N);
    MPI_Allgather(s, N, MPI_DOUBLE, r, N, MPI_DOUBLE, MPI_COMM_WORLD);
    made[dev][C_ALLGATHER]++;
    for (i = 0; i < size * N; i++) {
        check(r[i] == val(i / N, i % N), "MPI_Allgather");
    }
    for (i = 0; i < size * N; i++) {
        s[i] = val(rank, i);
    }
    MPI_Reduce_scatter_block(s, r, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    made[dev][C_RSB]++;
    for (i = 0; i < N; i++) {
        check(r[i] == sum_of(rank * N + i), "MPI_Reduce_scatter_block");
    }
    fill(s, N);
    MPI_Iallreduce(s, r, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &q);
    made[dev][C_IALLREDUCE]++;
    wait_req(dev, &q);
    for (i = 0; i < N; i++) {
        check(r[i] == sum_of(i), "MPI_Iallreduce + MPI_Wait");
    }
    fill(s, N);
    MPI_Iallreduce(s, r, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &q);
    made[dev][C_IALLREDUCE]++;
    test_req(dev, &q);
    for (i = 0; i < N; i++) {
        check(r[i] == sum_of(i), "MPI_Iallreduce + MPI_Test");
    }
}

/* a host MPI_Iallreduce completed by MPI_Wait and one by MPI_Test while a device one is outstanding */
static void mixed(double *hs, double *hr, double *ds, double *dr)
{
    MPI_Request dq, hq;
    int i;

    fill(ds, N);
    MPI_Iallreduce(ds, dr, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &dq);
    made[1][C_IALLREDUCE]++;
    fill(hs, N);
    MPI_Iallreduce(hs, hr, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &hq);
    made[0][C_IALLREDUCE]++;
    wait_req(0, &hq);
    for (i = 0; i < N; i++) {
        check(hr[i] == sum_of(i), "host MPI_Iallreduce + MPI_Wait beside a device one");
    }
    MPI_Iallreduce(hs, hr, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &hq);
    made[0][C_IALLREDUCE]++;
    test_req(0, &hq);
    for (i = 0; i < N; i++) {
        check(hr[i] == sum_of(i), "host MPI_Iallreduce + MPI_Test beside a device one");
    }
    wait_req(1, &dq);
    for (i = 0; i < N; i++) {
        check(dr[i] == sum_of(i), "device MPI_Iallreduce beside host ones");
    }
}

static void print_made(const char *kind, const unsigned long *m)
{
    printf("stack_app: rank %d: %s: allreduce %lu allgather %lu reduce_scatter_block %lu iallreduce %lu wait %lu "
           "test %lu\n", rank, kind, m[C_ALLREDUCE], m[C_ALLGATHER], m[C_RSB], m[C_IALLREDUCE], m[C_WAIT], m[C_TEST]);
}

/* the calls of coll tlmpi ran on a path other than passthrough */
static unsigned long served(tlmpi_status_t (*get)(tlmpi_coll_t, tlmpi_path_t, tlmpi_stat_t *), tlmpi_coll_t coll)
{
    unsigned long n = 0;
    int p;

    for (p = 0; p < TLMPI_PATH_COUNT; p++) {
        tlmpi_stat_t st = { 0, 0 };

        if (p != TLMPI_PATH_PASSTHROUGH && get(coll, (tlmpi_path_t)p, &st) == TLMPI_OK) {
            n += (unsigned long)st.calls;
        }
    }
    return n;
}

int main(int argc, char **argv)
{
    tlmpi_status_t (*get)(tlmpi_coll_t, tlmpi_path_t, tlmpi_stat_t *);
    double *hs, *hr, *ds, *dr;
    size_t bytes;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    bytes = (size_t)size * N * sizeof(double);
    hs = malloc(bytes);
    hr = malloc(bytes);
    if (!hs || !hr || cudaMalloc((void **)&ds, bytes) != 0 || cudaMalloc((void **)&dr, bytes) != 0) {
        printf("stack_app: rank %d: cannot allocate\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    calls(0, hs, hr);
    calls(1, ds, dr);
    mixed(hs, hr, ds, dr);
    print_made("host", made[0]);
    print_made("device", made[1]);
    *(void **)&get = dlsym(RTLD_DEFAULT, "tlmpi_get_stats");
    if (get) {
        printf("stack_app: rank %d: tlmpi served allreduce %lu allgather %lu reduce_scatter_block %lu\n", rank,
               served(get, TLMPI_COLL_ALLREDUCE), served(get, TLMPI_COLL_ALLGATHER),
               served(get, TLMPI_COLL_REDUCE_SCATTER_BLOCK));
    } else {
        printf("stack_app: rank %d: tlmpi is not loaded\n", rank);
        errs++;
    }
    printf("stack_app: %s rank %d (%d errors)\n", errs ? "FAIL" : "OK", rank, errs);
    fflush(stdout);
    cudaFree(ds);
    cudaFree(dr);
    free(hs);
    free(hr);
    MPI_Finalize();
    return errs != 0;
}
