/*
 * bench_stats.h: the small statistics the benchmarks share (header only; each benchmark is its own
 * program). Medians, and a distribution-free 95% confidence interval of a median.
 */
#ifndef TLMPI_BENCH_STATS_H
#define TLMPI_BENCH_STATS_H

#include <math.h>
#include <stdlib.h>

/* qsort comparator for doubles, ascending */
static inline int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

/* Distribution-free 95% confidence interval of the median of n values already sorted (order
 * statistics, normal approximation of the binomial): v[n/2 - 0.98 sqrt(n)] .. v[n/2 + 0.98 sqrt(n)].
 * With fewer than 6 values it is simply the range. */
static inline void bench_median_ci(const double *sorted, int n, double *lo, double *hi)
{
    double h = 0.98 * sqrt((double)n);
    int a = (int)((double)n / 2.0 - h), b = (int)((double)n / 2.0 + h + 0.999);

    *lo = sorted[a < 0 ? 0 : a];
    *hi = sorted[b >= n ? n - 1 : b];
}

#endif
