/* For tests/interpose/f_nbc.f90: "device" memory for a Fortran program, from the CUDA runtime the
 * program is linked with (the fake of tests/fakes under make check: host memory that tlmpi's
 * classification sees as device memory). */
#include <stddef.h>
int cudaMalloc(void **p, size_t n);
int cudaFree(void *p);
void *f_dev_alloc(long n)
{
    void *p = NULL;

    return cudaMalloc(&p, (size_t)n) == 0 ? p : NULL;
}
void f_dev_free(void *p)
{
    cudaFree(p);
}
