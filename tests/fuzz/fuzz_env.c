/*
 * fuzz_env: libFuzzer harness of the TLMPI_* value parsers (src/core/env.c): sizes, integers,
 * booleans, tri-states, enums and lists, directly and through tlmpi_env_load, as a user's
 * environment reaches them. Input: byte 0 picks the variable of env.def, the rest is its value.
 * Properties checked besides the sanitizers':
 *  - a size is >= 0 and reads back the same from its decimal form; a bool is 0/1, a tri 0/1/2; an
 *    enum is an index into the {...} list of the variable's help;
 *  - tlmpi_env_load with the value takes it exactly when its type's parser does, and otherwise
 *    keeps the default and warns once, the warning naming the variable (TLMPI_<NAME>);
 *  - an unknown TLMPI_* name in the environment gives one warning naming it.
 */
#include "config.h"
#include "env.h"
#include "fuzz_common.h"

#include <inttypes.h>

static const char *cur_name;
static const char *cur_value;

static const char *lookup(const char *name)
{
    return cur_name && !strcmp(name, cur_name) ? cur_value : NULL;
}

static int enum_count(const char *help)
{
    const char *p = strchr(help, '{');
    const char *end = p ? strchr(p, '}') : NULL;
    int n = 1;

    if (!p || !end) {
        return 0;
    }
    for (; p < end; p++) {
        n += *p == ',';
    }
    return n;
}

static int parses(const tlmpi_env_desc_t *d, const char *s)
{
    int64_t v;

    switch (d->type) {
    case TLMPI_ENV_T_BOOL: return tlmpi_env_parse_bool(s, &v) == 0;
    case TLMPI_ENV_T_INT:  return tlmpi_env_parse_int(s, &v) == 0;
    case TLMPI_ENV_T_SIZE: return tlmpi_env_parse_size(s, &v) == 0;
    case TLMPI_ENV_T_ENUM: return tlmpi_env_parse_enum(d->help, s, &v) == 0;
    case TLMPI_ENV_T_TRI:  return tlmpi_env_parse_tri(s, &v) == 0;
    default:               return 1;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const tlmpi_env_desc_t *d;
    char full[128], unknown[160], *s, *environ_[3] = { NULL, NULL, NULL };
    int64_t v;
    int idx, bad, ok;
    size_t k;

    if (size < 1) {
        return 0;
    }
    fuzz_quiet_log();
    idx = data[0] % TLMPI_ENV_COUNT;
    d = &tlmpi_env_desc[idx];
    s = fuzz_cstr(data + 1, size - 1);

    /* the typed parsers on their own */
    if (tlmpi_env_parse_size(s, &v) == 0) {
        char again[32];
        int64_t w;

        FUZZ_CHECK(v >= 0, "size '%s' -> %" PRId64, s, v);
        snprintf(again, sizeof(again), "%" PRId64, v);
        FUZZ_CHECK(tlmpi_env_parse_size(again, &w) == 0 && w == v, "size '%s' -> %" PRId64 " does not read back", s, v);
    }
    if (tlmpi_env_parse_bool(s, &v) == 0) {
        FUZZ_CHECK(v == 0 || v == 1, "bool '%s' -> %" PRId64, s, v);
    }
    if (tlmpi_env_parse_tri(s, &v) == 0) {
        FUZZ_CHECK(v >= 0 && v <= 2, "tri '%s' -> %" PRId64, s, v);
    }
    (void)tlmpi_env_parse_int(s, &v);
    for (k = 0; k < TLMPI_ENV_COUNT; k++) {
        if (tlmpi_env_desc[k].type == TLMPI_ENV_T_ENUM && tlmpi_env_parse_enum(tlmpi_env_desc[k].help, s, &v) == 0) {
            FUZZ_CHECK(v >= 0 && v < enum_count(tlmpi_env_desc[k].help), "enum TLMPI_%s '%s' -> %" PRId64,
                       tlmpi_env_desc[k].name, s, v);
        }
    }
    (void)tlmpi_env_list_has(s, "node");
    (void)tlmpi_env_list_has("allreduce,allgather", s);

    /* the value through the loader, as the environment gives it */
    snprintf(full, sizeof(full), "TLMPI_%s", d->name);
    cur_name = full;
    cur_value = s;
    ok = parses(d, s);
    bad = tlmpi_env_load(lookup, NULL);
    if (ok) {
        FUZZ_CHECK(bad == 0 && tlmpi_env_val[idx].is_set && tlmpi_env_val[idx].s == s, "%s='%s' not taken", full, s);
    } else {
        FUZZ_CHECK(bad == 1 && !tlmpi_env_val[idx].is_set && !strcmp(tlmpi_env_val[idx].s, d->deflt),
                   "%s='%s' rejected: %d warnings, is_set %d", full, s, bad, tlmpi_env_val[idx].is_set);
        FUZZ_CHECK(strstr(tlmpi_log_last_error(), full) != NULL, "%s='%s': the warning does not name it: '%s'", full,
                   s, tlmpi_log_last_error());
    }
    (void)tlmpi_env_hash_all_eq();

    /* an unknown name made of the input (as far as a name goes: up to '=') */
    k = strcspn(s, "=");
    snprintf(unknown, sizeof(unknown), "TLMPI_X%.*s=1", (int)(k < 100 ? k : 100), s);
    environ_[0] = unknown;
    cur_name = NULL;
    bad = tlmpi_env_load(lookup, environ_);
    if (strncmp(unknown, "TLMPI_TEST_", 11) && strncmp(unknown, "TLMPI_BENCH_", 12)) {
        size_t nl = strcspn(unknown, "=");
        int known = 0;

        for (k = 0; k < TLMPI_ENV_COUNT; k++) {
            known |= strlen(tlmpi_env_desc[k].name) == nl - 6 && !strncmp(unknown + 6, tlmpi_env_desc[k].name, nl - 6);
        }
        FUZZ_CHECK(bad == !known, "unknown name '%s': %d warnings", unknown, bad);
    }
    /* back to the defaults: nothing may keep pointing into s */
    tlmpi_env_load(lookup, NULL);
    free(s);
    return 0;
}
