// bench/probes/cost.cu: the host-side cost per call of the pieces of a non-blocking start (kernel launch,
// event record, GPU-written word, event and stream queries, device switch, generalized requests,
// pointer queries, snprintf), on one rank. Build and run on a GPU host (not part of the build):
//   nvcc -O2 -ccbin mpicxx bench/probes/cost.cu -o cost && mpiexec -n 1 ./cost   (under MPS: tests/gpu/mps.sh)
#include <mpi.h>
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <time.h>
__global__ void k_empty(int *p) { if (p && threadIdx.x == 0 && blockIdx.x == 0) p[0]++; }
static double now() { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e6 + t.tv_nsec * 1e-3; }
static int qf(void *e, MPI_Status *s) { MPI_Status_set_elements(s, MPI_BYTE, 0); MPI_Status_set_cancelled(s, 0); return 0; }
static int ff(void *e) { return 0; }
static int cf(void *e, int c) { return 0; }
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    cudaStream_t s; cudaStreamCreate(&s); int *d; cudaMalloc(&d, 64);
    unsigned *w, *wd; cudaHostAlloc((void **)&w, 64, cudaHostAllocMapped); cudaHostGetDevicePointer((void **)&wd, w, 0);
    cudaEvent_t ev[256]; for (int i = 0; i < 256; i++) cudaEventCreateWithFlags(&ev[i], cudaEventDisableTiming);
    typedef CUresult (*wv_t)(CUstream, CUdeviceptr, cuuint32_t, unsigned int); wv_t wv; cudaDriverEntryPointQueryResult q; cudaGetDriverEntryPoint("cuStreamWriteValue32", (void **)&wv, cudaEnableDefault, &q);
    const int N = 200; double t0, t1;
    for (int rep = 0; rep < 3; rep++) {
        cudaStreamSynchronize(s); t0 = now(); for (int i = 0; i < N; i++) k_empty<<<1, 32, 0, s>>>(d); t1 = now(); cudaStreamSynchronize(s);
        printf("launch empty kernel: %.2f us\n", (t1 - t0) / N);
        t0 = now(); for (int i = 0; i < N; i++) cudaEventRecord(ev[i & 255], s); t1 = now(); cudaStreamSynchronize(s);
        printf("cudaEventRecord: %.2f us\n", (t1 - t0) / N);
        t0 = now(); for (int i = 0; i < N; i++) wv((CUstream)s, (CUdeviceptr)wd, i, 0); t1 = now(); cudaStreamSynchronize(s);
        printf("cuStreamWriteValue32: %.2f us\n", (t1 - t0) / N);
        t0 = now(); for (int i = 0; i < N; i++) { k_empty<<<1, 32, 0, s>>>(d); cudaEventRecord(ev[i & 255], s); } t1 = now(); cudaStreamSynchronize(s);
        printf("launch + event record: %.2f us\n", (t1 - t0) / N);
        t0 = now(); for (int i = 0; i < N; i++) { k_empty<<<1, 32, 0, s>>>(d); wv((CUstream)s, (CUdeviceptr)wd, i, 0); } t1 = now(); cudaStreamSynchronize(s);
        printf("launch + write value: %.2f us\n", (t1 - t0) / N);
        t0 = now(); for (int i = 0; i < N; i++) cudaEventQuery(ev[i & 255]); t1 = now();
        printf("cudaEventQuery (done): %.2f us\n", (t1 - t0) / N);
        t0 = now(); for (int i = 0; i < N; i++) cudaStreamQuery(s); t1 = now();
        printf("cudaStreamQuery (idle): %.2f us\n", (t1 - t0) / N);
        int dev; t0 = now(); for (int i = 0; i < N; i++) { cudaGetDevice(&dev); cudaSetDevice(dev); } t1 = now();
        printf("cudaGetDevice+cudaSetDevice: %.2f us\n", (t1 - t0) / N);
        MPI_Request r[256]; t0 = now(); for (int i = 0; i < N; i++) MPI_Grequest_start(qf, ff, cf, NULL, &r[i & 255]); t1 = now();
        printf("MPI_Grequest_start: %.2f us\n", (t1 - t0) / N);
        t0 = now(); for (int i = 0; i < N; i++) { MPI_Grequest_complete(r[i & 255]); MPI_Request_free(&r[i & 255]); } t1 = now();
        printf("MPI_Grequest_complete + MPI_Request_free: %.2f us\n", (t1 - t0) / N);
        cudaPointerAttributes pa; t0 = now(); for (int i = 0; i < N; i++) cudaPointerGetAttributes(&pa, d); t1 = now();
        printf("cudaPointerGetAttributes (device): %.2f us\n", (t1 - t0) / N);
        char buf[256]; static char hb[64]; t0 = now(); for (int i = 0; i < N; i++) cudaPointerGetAttributes(&pa, hb + (i & 7)); t1 = now();
        printf("cudaPointerGetAttributes (host global): %.2f us\n", (t1 - t0) / N);
        t0 = now(); for (int i = 0; i < N; i++) snprintf(buf, sizeof buf, "request #%lu (%s, %zu bytes): %s", (unsigned long)i, "MPI_Iallreduce", (size_t)8, "the node kernel"); t1 = now();
        printf("snprintf: %.2f us\n", (t1 - t0) / N);
    }
    MPI_Finalize(); return 0;
}
