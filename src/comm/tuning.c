/*
 * tuning: reading the tuning file (format in tuning.h).
 */
#include "config.h"
#include "tuning.h"
#include "compiler.h"
#include "cudawrap.h"
#include "tlmpi_version.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *tlmpi_tuning_generation(void)
{
    return "tlmpi-" TLMPI_VERSION_STRING " " TLMPI_BUILD_CONFIG;
}

TLMPI_EXPORT const char *tlmpi_generation(void)
{
    return tlmpi_tuning_generation();
}

void tlmpi_tuning_gpu_token(const char *name, char *buf, size_t len)
{
    size_t i;

    for (i = 0; name && name[i] && i + 1 < len; i++) {
        buf[i] = name[i] == ' ' || name[i] == '\t' ? '_' : name[i];
    }
    if (len) {
        buf[i < len ? i : len - 1] = '\0';
    }
}

TLMPI_EXPORT void tlmpi_tuning_gpu(int dev, char *buf, size_t len)
{
    char name[128] = "";

    tlmpi_gpu_name(dev, name, sizeof(name));
    tlmpi_tuning_gpu_token(name[0] ? name : "none", buf, len);
}

static void chomp(char *s)
{
    size_t n = strlen(s);

    while (n && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' ' || s[n - 1] == '\t')) {
        s[--n] = '\0';
    }
}

int tlmpi_tuning_lookup(const char *path, const tlmpi_tuning_key_t *key,
                        char specs[TLMPI_COLL_COUNT][TLMPI_TUNING_SPEC_LEN], char *why, size_t len)
{
    FILE *f = fopen(path, "r");
    char line[1024], layouts[256] = "";
    int lineno = 0, in_match = 0, matched = 0, have_gen = 0, have_magic = 0, c;

    for (c = 0; c < TLMPI_COLL_COUNT; c++) {
        specs[c][0] = '\0';
    }
    if (!f) {
        snprintf(why, len, "cannot open %s", path);
        return -1;
    }
    while (fgets(line, sizeof(line), f)) {
        char *p = line;

        lineno++;
        chomp(line);
        while (*p == ' ' || *p == '\t') {
            p++;
        }
        if (!*p || *p == '#') {
            continue;
        }
        if (!have_magic) {
            /* the first line that is not a comment */
            if (strcmp(p, "tlmpi-tuning 1") != 0) {
                snprintf(why, len, "%s: line %d is not 'tlmpi-tuning 1'", path, lineno);
                fclose(f);
                return -1;
            }
            have_magic = 1;
            continue;
        }
        if (!strncmp(p, "generation ", 11)) {
            if (strcmp(p + 11, key->generation) != 0) {
                snprintf(why, len, "%s was measured with '%s', this library is '%s'", path, p + 11, key->generation);
                fclose(f);
                return -1;
            }
            have_gen = 1;
            continue;
        }
        if (!have_gen) {
            snprintf(why, len, "%s: line %d comes before the generation line", path, lineno);
            fclose(f);
            return -1;
        }
        if (!strncmp(p, "layout ", 7)) {
            int n = 0, l = 0;
            char gpu[128] = "";

            if (sscanf(p + 7, "nodes=%d ranks_per_node=%d gpu=%127s", &n, &l, gpu) != 3) {
                snprintf(why, len, "%s: line %d: bad layout line", path, lineno);
                fclose(f);
                return -1;
            }
            if (matched) {
                break; /* the first matching section wins */
            }
            in_match = n == key->nodes && l == key->ranks_per_node && !strcmp(gpu, key->gpu);
            matched = in_match;
            if (strlen(layouts) + strlen(p + 7) + 4 < sizeof(layouts)) {
                strcat(layouts, layouts[0] ? "; " : "");
                strcat(layouts, p + 7);
            }
            continue;
        }
        for (c = 0; c < TLMPI_COLL_COUNT; c++) {
            const char *name = tlmpi_coll_name((tlmpi_coll_t)c);
            size_t nl = strlen(name);

            if (!strncmp(p, name, nl) && p[nl] == ' ') {
                break;
            }
        }
        if (c == TLMPI_COLL_COUNT) {
            snprintf(why, len, "%s: line %d: '%.40s' is neither a layout nor a collective", path, lineno, p);
            fclose(f);
            return -1;
        }
        if (in_match) {
            const char *t = p + strlen(tlmpi_coll_name((tlmpi_coll_t)c)) + 1;

            while (*t == ' ') {
                t++;
            }
            if (strlen(t) >= TLMPI_TUNING_SPEC_LEN) {
                snprintf(why, len, "%s: line %d: table too long", path, lineno);
                fclose(f);
                return -1;
            }
            snprintf(specs[c], TLMPI_TUNING_SPEC_LEN, "%s", t);
        }
    }
    fclose(f);
    if (!have_gen) {
        snprintf(why, len, "%s has no generation line", path);
        return -1;
    }
    if (!matched) {
        snprintf(why, len, "%s has no section for nodes=%d ranks_per_node=%d gpu=%s (it has: %s)", path, key->nodes,
                 key->ranks_per_node, key->gpu, layouts[0] ? layouts : "none");
        return 0;
    }
    return 1;
}
