/*
 * env: parse the TLMPI_* table once; warn about unknown names (catches typos such as
 * TLMPI_TEIR); produce the tlmpi_info listing and the Markdown for docs/ENV.md.
 */
#include "config.h"
#include "env.h"
#include "log.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

const tlmpi_env_desc_t tlmpi_env_desc[TLMPI_ENV_COUNT] = {
#define TLMPI_ENV(_name, _type, _def, _scope, _help) \
    { #_name, TLMPI_ENV_T_##_type, _def, TLMPI_ENV_S_##_scope, _help },
#include "env.def"
#undef TLMPI_ENV
};

tlmpi_env_val_t tlmpi_env_val[TLMPI_ENV_COUNT];

static const char *const type_names[] = { "bool", "int", "size", "enum", "tri", "string", "list" };

int tlmpi_env_parse_bool(const char *s, int64_t *v_p)
{
    if (!strcasecmp(s, "1") || !strcasecmp(s, "yes") || !strcasecmp(s, "y") ||
        !strcasecmp(s, "on") || !strcasecmp(s, "true")) {
        *v_p = 1;
        return 0;
    }
    if (!strcasecmp(s, "0") || !strcasecmp(s, "no") || !strcasecmp(s, "n") ||
        !strcasecmp(s, "off") || !strcasecmp(s, "false")) {
        *v_p = 0;
        return 0;
    }
    return -1;
}

int tlmpi_env_parse_int(const char *s, int64_t *v_p)
{
    char *end;
    long long v;

    errno = 0;
    v = strtoll(s, &end, 0);
    if (errno || end == s || *end != '\0') {
        return -1;
    }
    *v_p = v;
    return 0;
}

int tlmpi_env_parse_size(const char *s, int64_t *v_p)
{
    char *end;
    unsigned long long v;
    int shift = 0;

    if (*s == '-') {
        return -1;
    }
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno || end == s) {
        return -1;
    }
    switch (tolower((unsigned char)*end)) {
    case '\0': break;
    case 'k': shift = 10; end++; break;
    case 'm': shift = 20; end++; break;
    case 'g': shift = 30; end++; break;
    default: return -1;
    }
    if (*end == 'b' || *end == 'B') {
        end++;
    }
    if (*end != '\0' || (shift && v > (UINT64_MAX >> shift)) || (v << shift) > INT64_MAX) {
        return -1;
    }
    *v_p = (int64_t)(v << shift);
    return 0;
}

int tlmpi_env_parse_tri(const char *s, int64_t *v_p)
{
    if (!strcasecmp(s, "auto")) {
        *v_p = TLMPI_TRI_AUTO;
        return 0;
    }
    return tlmpi_env_parse_bool(s, v_p);
}

/* ENUM values are listed in the help text between '{' and '}', comma separated. */
int tlmpi_env_parse_enum(const char *help, const char *s, int64_t *v_p)
{
    const char *p = strchr(help, '{');
    const char *end = p ? strchr(p, '}') : NULL;
    int64_t idx = 0;

    if (!p || !end) {
        return -1;
    }
    for (p++; p < end; idx++) {
        const char *q = p;
        size_t n;

        while (q < end && *q != ',') {
            q++;
        }
        n = (size_t)(q - p);
        if (strlen(s) == n && !strncasecmp(s, p, n)) {
            *v_p = idx;
            return 0;
        }
        p = q + 1;
    }
    return -1;
}

int tlmpi_env_list_has(const char *list, const char *item)
{
    size_t n = strlen(item);
    const char *p = list;

    if (!strcasecmp(list, "all")) {
        return 1;
    }
    while (*p) {
        const char *q = strchr(p, ',');
        size_t len = q ? (size_t)(q - p) : strlen(p);

        if (len == n && !strncasecmp(p, item, n)) {
            return 1;
        }
        if (!q) {
            break;
        }
        p = q + 1;
    }
    return 0;
}

static int parse_value(const tlmpi_env_desc_t *d, const char *s, int64_t *v_p)
{
    switch (d->type) {
    case TLMPI_ENV_T_BOOL:   return tlmpi_env_parse_bool(s, v_p);
    case TLMPI_ENV_T_INT:    return tlmpi_env_parse_int(s, v_p);
    case TLMPI_ENV_T_SIZE:   return tlmpi_env_parse_size(s, v_p);
    case TLMPI_ENV_T_ENUM:   return tlmpi_env_parse_enum(d->help, s, v_p);
    case TLMPI_ENV_T_TRI:    return tlmpi_env_parse_tri(s, v_p);
    case TLMPI_ENV_T_STRING:
    case TLMPI_ENV_T_LIST:   *v_p = 0; return 0;
    }
    return -1;
}

/* A rejected value as a warning shows it: at most len - 4 bytes of it, "..." where it was cut, '?' for
 * each byte that is not printable ASCII (a value may hold anything the environment can). The
 * variable's name comes first in the warning, so that no value pushes it out of the line. */
static void show_value(const char *s, char *buf, size_t len)
{
    size_t i;

    for (i = 0; s[i] && i + 4 < len; i++) {
        buf[i] = s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '?';
    }
    snprintf(buf + i, len - i, "%s", s[i] ? "..." : "");
}

static const char *default_lookup(const char *name)
{
    return getenv(name);
}

int tlmpi_env_load(tlmpi_env_lookup_fn lookup, char **environ_p)
{
    char full[128];
    int bad = 0;
    int i;

    if (!lookup) {
        lookup = default_lookup;
    }
    for (i = 0; i < TLMPI_ENV_COUNT; i++) {
        const tlmpi_env_desc_t *d = &tlmpi_env_desc[i];
        const char *s;
        int64_t v = 0;

        snprintf(full, sizeof(full), "TLMPI_%s", d->name);
        s = lookup(full);
        (void)parse_value(d, d->deflt, &v); /* defaults are valid (unit-tested) */
        tlmpi_env_val[i].i = v;
        tlmpi_env_val[i].s = d->deflt;
        tlmpi_env_val[i].is_set = 0;
        if (s == NULL) {
            continue;
        }
        if (parse_value(d, s, &v) != 0) {
            char shown[68];

            show_value(s, shown, sizeof(shown));
            tlmpi_warn(ENV, "%s: invalid value '%s' (%s); using default '%s'", full, shown, type_names[d->type],
                       d->deflt);
            bad++;
            continue;
        }
        tlmpi_env_val[i].i = v;
        tlmpi_env_val[i].s = s;
        tlmpi_env_val[i].is_set = 1;
        tlmpi_info(ENV, "%s=%s", full, s);
    }
    /* unknown TLMPI_* names: typos would otherwise be silently ignored */
    for (; environ_p && *environ_p; environ_p++) {
        const char *e = *environ_p;
        const char *eq = strchr(e, '=');
        size_t n;
        int known = 0;

        if (strncmp(e, "TLMPI_", 6) || !eq) {
            continue;
        }
        n = (size_t)(eq - e) - 6;
        for (i = 0; i < TLMPI_ENV_COUNT && !known; i++) {
            known = strlen(tlmpi_env_desc[i].name) == n && !strncmp(e + 6, tlmpi_env_desc[i].name, n);
        }
        /* the test suite's and the benchmarks' own variables are not ours to judge */
        if (!known && strncmp(e, "TLMPI_TEST_", 11) && strncmp(e, "TLMPI_BENCH_", 12)) {
            tlmpi_warn(ENV, "unknown variable %.*s%s (see tlmpi_info for the list)", (int)(eq - e > 96 ? 96 : eq - e), e,
                       eq - e > 96 ? "..." : "");
            bad++;
        }
    }
    return bad;
}

/* The values tlmpi_env_set was given: one copy per distinct string, kept for the life of the
 * process and reachable from here. A plan being built on another thread may still read the value a
 * set replaced, so no copy is ever freed; reusing an equal copy bounds the memory by the distinct
 * values, not by the calls (tlmpi_tune and the benchmarks set the same few values again and again). */
typedef struct env_copy {
    struct env_copy *next;
    char s[];
} env_copy_t;
static env_copy_t *env_copies;
static pthread_mutex_t env_copies_lock = PTHREAD_MUTEX_INITIALIZER;

static const char *env_copy(const char *value)
{
    env_copy_t *c;
    size_t n = strlen(value) + 1;

    pthread_mutex_lock(&env_copies_lock);
    for (c = env_copies; c && strcmp(c->s, value); c = c->next) {
    }
    if (!c && (c = malloc(sizeof(*c) + n)) != NULL) {
        memcpy(c->s, value, n);
        c->next = env_copies;
        env_copies = c;
    }
    pthread_mutex_unlock(&env_copies_lock);
    return c ? c->s : NULL;
}

int tlmpi_env_set(const char *name, const char *value)
{
    int i;

    for (i = 0; i < TLMPI_ENV_COUNT; i++) {
        int64_t v;
        const char *copy;

        if (strcmp(tlmpi_env_desc[i].name, name)) {
            continue;
        }
        if (!value || parse_value(&tlmpi_env_desc[i], value, &v) != 0 || !(copy = env_copy(value))) {
            return -2;
        }
        tlmpi_env_val[i].i = v;
        tlmpi_env_val[i].s = copy;
        tlmpi_env_val[i].is_set = 1;
        return 0;
    }
    return -1;
}

uint64_t tlmpi_env_hash_all_eq(void)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    int i;

    for (i = 0; i < TLMPI_ENV_COUNT; i++) {
        const unsigned char *p;
        int64_t v = tlmpi_env_val[i].i;
        size_t k;

        if (tlmpi_env_desc[i].scope != TLMPI_ENV_S_ALL_EQ) {
            continue;
        }
        for (k = 0; k < sizeof(v); k++) {
            h = (h ^ ((uint64_t)v >> (8 * k) & 0xff)) * 1099511628211ull;
        }
        for (p = (const unsigned char *)tlmpi_env_val[i].s; p && *p; p++) {
            h = (h ^ *p) * 1099511628211ull;
        }
    }
    return h;
}

void tlmpi_env_dump(FILE *f)
{
    int i;

    for (i = 0; i < TLMPI_ENV_COUNT; i++) {
        const tlmpi_env_desc_t *d = &tlmpi_env_desc[i];

        fprintf(f, "TLMPI_%s=%s%s\n    [%s, %s, default '%s'] %s\n", d->name, tlmpi_env_val[i].s,
                tlmpi_env_val[i].is_set ? " (set)" : "", type_names[d->type],
                d->scope == TLMPI_ENV_S_ALL_EQ ? "same on all ranks" : "per rank", d->deflt, d->help);
    }
}

void tlmpi_env_markdown(FILE *f)
{
    int i;

    fprintf(f, "# tlmpi environment variables\n\n"
               "Generated by `tools/tlmpi_info --env-markdown` from `src/core/env.def`; do not edit by hand "
               "(`make check` fails when this file is stale).\n\n"
               "Scope *all ranks* means every rank of a job must see the same value; a difference can "
               "deadlock (`TLMPI_VERIFY_UNIFORM=1` checks it).\n\n"
               "| variable | type | default | scope | meaning |\n"
               "| --- | --- | --- | --- | --- |\n");
    for (i = 0; i < TLMPI_ENV_COUNT; i++) {
        const tlmpi_env_desc_t *d = &tlmpi_env_desc[i];

        fprintf(f, "| `TLMPI_%s` | %s | `%s` | %s | %s |\n", d->name, type_names[d->type], d->deflt,
                d->scope == TLMPI_ENV_S_ALL_EQ ? "all ranks" : "per rank", d->help);
    }
}
