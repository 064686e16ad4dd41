/*
 * fuzz_common.h: what the libFuzzer harnesses of tests/fuzz share: the input as a C string (as
 * getenv or fgets would give it: up to the first NUL), tlmpi's log sent to /dev/null (a warning per
 * rejected input would flood the run; tlmpi_log_last_error() still holds the last one), and
 * FUZZ_CHECK, which aborts with the broken property (libFuzzer then saves the input as a crash).
 */
#ifndef TLMPI_FUZZ_COMMON_H
#define TLMPI_FUZZ_COMMON_H

#include "log.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_CHECK(_cond, ...)                                                                       \
    do {                                                                                             \
        if (!(_cond)) {                                                                              \
            fprintf(stderr, "FUZZ_CHECK failed at %s:%d: %s: ", __FILE__, __LINE__, #_cond);         \
            fprintf(stderr, __VA_ARGS__);                                                            \
            fputc('\n', stderr);                                                                     \
            abort();                                                                                 \
        }                                                                                            \
    } while (0)

/* data[0..size) up to its first NUL, as a new string (free it) */
static inline char *fuzz_cstr(const uint8_t *data, size_t size)
{
    const uint8_t *nul = memchr(data, 0, size);
    size_t n = nul ? (size_t)(nul - data) : size;
    char *s = malloc(n + 1);

    if (!s) {
        abort();
    }
    memcpy(s, data, n);
    s[n] = '\0';
    return s;
}

static inline void fuzz_quiet_log(void)
{
    static int done;

    if (!done) {
        done = 1;
        tlmpi_log_configure(TLMPI_LOG_WARN, "", "/dev/null");
    }
}

#endif
