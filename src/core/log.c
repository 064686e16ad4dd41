#include "config.h"
#include "log.h"
#include "env.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int tlmpi_log_level = TLMPI_LOG_WARN;
unsigned tlmpi_log_mask = ~0u;

static FILE *log_stream;
static int log_rank = -1;
static char log_host[64];
static char last_error[256];
static const char *const level_names[] = { "ERROR", "WARN", "INFO", "DEBUG", "TRACE" };
static const char *const subsys_names[] = {
#define TLMPI_LOG_SUBSYS_NAME_(_n) #_n,
    TLMPI_LOG_SUBSYS_MAP(TLMPI_LOG_SUBSYS_NAME_)
#undef TLMPI_LOG_SUBSYS_NAME_
};

static void expand_pattern(const char *pat, char *out, size_t n)
{
    size_t k = 0;

    for (; *pat && k + 1 < n; pat++) {
        if (*pat == '%' && pat[1]) {
            int w = 0;

            pat++;
            if (*pat == 'h') {
                w = snprintf(out + k, n - k, "%s", log_host);
            } else if (*pat == 'p') {
                w = snprintf(out + k, n - k, "%d", (int)getpid());
            } else if (*pat == 'r') {
                w = snprintf(out + k, n - k, "%d", log_rank);
            } else {
                out[k++] = *pat;
            }
            k += w > 0 ? (size_t)w : 0;
            if (k >= n) {
                k = n - 1;
            }
        } else {
            out[k++] = *pat;
        }
    }
    out[k] = '\0';
}

void tlmpi_log_configure(int level, const char *subsys_list, const char *file_pattern)
{
    unsigned mask = 0;
    int i;

    gethostname(log_host, sizeof(log_host) - 1);
    tlmpi_log_level = level;
    for (i = 0; i < TLMPI_SUBSYS_COUNT; i++) {
        if (tlmpi_env_list_has(subsys_list, subsys_names[i])) {
            mask |= 1u << i;
        }
    }
    tlmpi_log_mask = mask;
    if (file_pattern && *file_pattern && !log_stream) {
        char path[512];

        expand_pattern(file_pattern, path, sizeof(path));
        log_stream = fopen(path, "a");
    }
}

void tlmpi_log_set_rank(int rank)
{
    log_rank = rank;
}

void tlmpi_log_close(void)
{
    if (log_stream) {
        fclose(log_stream);
        log_stream = NULL;
    }
}

const char *tlmpi_log_last_error(void)
{
    return last_error;
}

void tlmpi_log_printf(int level, const char *file, int line, const char *fmt, ...)
{
    FILE *f = log_stream ? log_stream : stderr;
    const char *base = strrchr(file, '/');
    char msg[1024];
    va_list ap;

    if (!log_host[0]) {
        gethostname(log_host, sizeof(log_host) - 1);
    }
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (level <= TLMPI_LOG_WARN) {
        snprintf(last_error, sizeof(last_error), "%.255s", msg);
    }
    /* one fprintf per line so that lines from threads and ranks do not interleave */
    fprintf(f, "%s:%d r%d TLMPI %s %s:%d %s\n", log_host, (int)getpid(), log_rank,
            level_names[level < 0 ? 0 : level > 4 ? 4 : level], base ? base + 1 : file, line, msg);
    fflush(f);
}
