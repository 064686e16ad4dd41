/*
 * compiler: branch hints, symbol visibility and attributes. No state, no MPI.
 */
#ifndef TLMPI_COMPILER_H
#define TLMPI_COMPILER_H

#define TLMPI_LIKELY(_x) __builtin_expect(!!(_x), 1)
#define TLMPI_UNLIKELY(_x) __builtin_expect(!!(_x), 0)
#define TLMPI_EXPORT __attribute__((visibility("default")))

#endif
