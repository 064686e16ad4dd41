/*
 * log: levelled, subsystem-masked logging with a "host:pid rRANK TLMPI LEVEL file:line" prefix.
 * A disabled message costs one compare. Levels and mask come from TLMPI_LOG_LEVEL/_SUBSYS.
 * Does not include mpi.h.
 */
#ifndef TLMPI_LOG_H
#define TLMPI_LOG_H

#include <stdarg.h>

typedef enum { TLMPI_LOG_ERROR = 0, TLMPI_LOG_WARN, TLMPI_LOG_INFO, TLMPI_LOG_DEBUG,
               TLMPI_LOG_TRACE } tlmpi_log_level_t;

#define TLMPI_LOG_SUBSYS_MAP(_X) _X(INIT) _X(ENV) _X(TOPO) _X(COMM) _X(COLL) _X(CUDA) _X(NCCL) _X(MEM)
enum {
#define TLMPI_LOG_SUBSYS_BIT_(_n) TLMPI_SUBSYS_BIT_##_n,
    TLMPI_LOG_SUBSYS_MAP(TLMPI_LOG_SUBSYS_BIT_)
#undef TLMPI_LOG_SUBSYS_BIT_
    TLMPI_SUBSYS_COUNT
};
#define TLMPI_SUBSYS_(_n) (1u << TLMPI_SUBSYS_BIT_##_n)

extern int tlmpi_log_level;       /* messages above this level are dropped */
extern unsigned tlmpi_log_mask;   /* subsystems shown at INFO and below (errors/warnings always) */

/* Apply TLMPI_LOG_LEVEL/_SUBSYS/_FILE (after tlmpi_env_load). */
void tlmpi_log_configure(int level, const char *subsys_list, const char *file_pattern);
void tlmpi_log_set_rank(int rank);
void tlmpi_log_close(void);
void tlmpi_log_printf(int level, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Last error/warning text of this process ("" if none). */
const char *tlmpi_log_last_error(void);

#define tlmpi_log_(_lvl, _sub, ...)                                                          \
    do {                                                                                     \
        if ((_lvl) <= tlmpi_log_level &&                                                     \
            ((_lvl) <= TLMPI_LOG_WARN || (tlmpi_log_mask & TLMPI_SUBSYS_(_sub))))            \
            tlmpi_log_printf((_lvl), __FILE__, __LINE__, __VA_ARGS__);                       \
    } while (0)

#define tlmpi_error(_sub, ...) tlmpi_log_(TLMPI_LOG_ERROR, _sub, __VA_ARGS__)
#define tlmpi_warn(_sub, ...)  tlmpi_log_(TLMPI_LOG_WARN, _sub, __VA_ARGS__)
#define tlmpi_info(_sub, ...)  tlmpi_log_(TLMPI_LOG_INFO, _sub, __VA_ARGS__)
#define tlmpi_debug(_sub, ...) tlmpi_log_(TLMPI_LOG_DEBUG, _sub, __VA_ARGS__)
#ifdef TLMPI_ENABLE_TRACE
#define tlmpi_trace(_sub, ...) tlmpi_log_(TLMPI_LOG_TRACE, _sub, __VA_ARGS__)
#else
#define tlmpi_trace(_sub, ...) do { } while (0)
#endif

/* Warn once per call site (per-call fallback reasons would otherwise flood the log). */
#define tlmpi_warn_once(_sub, ...)                                                           \
    do {                                                                                     \
        static int tlmpi_warned_;                                                            \
        if (!__atomic_exchange_n(&tlmpi_warned_, 1, __ATOMIC_RELAXED))                       \
            tlmpi_warn(_sub, __VA_ARGS__);                                                   \
    } while (0)

#endif
