/*
 * fuzz_tuning: libFuzzer harness of the tuning-file reader (tlmpi_tuning_lookup, src/comm/tuning.c)
 * and of the tables it hands to the plan (tlmpi_plan_parse_table), as TLMPI_TUNING_FILE reaches
 * them. Input: the file's bytes, written to a memfd that the reader opens by its /proc path. The key
 * is fixed: generation "tlmpi-fuzz", nodes=2, ranks_per_node=4, gpu=NVIDIA_H100 (the seed corpus
 * carries both matching and other sections). Properties checked besides the sanitizers':
 *  - 1 (a section matched): every table is a terminated string shorter than
 *    TLMPI_TUNING_SPEC_LEN, and parses or is rejected with a message;
 *  - 0 or -1: the reason is a terminated string that names the file;
 *  - the device-name token never holds a space or a tab.
 */
#define _GNU_SOURCE
#include "config.h"
#include "tuning.h"
#include "plan.h"
#include "fuzz_common.h"

#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int fd = -1;
    static char path[64];
    char specs[TLMPI_COLL_COUNT][TLMPI_TUNING_SPEC_LEN], why[512], tok[64], *name;
    tlmpi_tuning_key_t key = { "tlmpi-fuzz", 2, 4, "NVIDIA_H100" };
    int r, c;
    size_t i;

    fuzz_quiet_log();
    if (fd < 0) {
        fd = memfd_create("fuzz_tuning", 0);
        FUZZ_CHECK(fd >= 0, "memfd_create failed");
        snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    }
    FUZZ_CHECK(ftruncate(fd, 0) == 0 && pwrite(fd, data, size, 0) == (ssize_t)size, "writing the memfd failed");
    memset(specs, 'x', sizeof(specs));
    memset(why, 'x', sizeof(why));
    r = tlmpi_tuning_lookup(path, &key, specs, why, sizeof(why));
    FUZZ_CHECK(r >= -1 && r <= 1, "lookup returned %d", r);
    if (r == 1) {
        for (c = 0; c < TLMPI_COLL_COUNT; c++) {
            tlmpi_plan_table_t t;
            char err[160] = "";

            FUZZ_CHECK(memchr(specs[c], '\0', TLMPI_TUNING_SPEC_LEN) != NULL, "table %d not terminated", c);
            if (specs[c][0] && tlmpi_plan_parse_table(specs[c], &t, err, sizeof(err)) != 0) {
                FUZZ_CHECK(err[0] != '\0', "table '%s' rejected without a message", specs[c]);
            }
        }
    } else {
        FUZZ_CHECK(memchr(why, '\0', sizeof(why)) != NULL, "reason not terminated");
        FUZZ_CHECK(strstr(why, path) != NULL, "the reason does not name the file: '%s'", why);
    }
    name = fuzz_cstr(data, size < 200 ? size : 200);
    memset(tok, 'x', sizeof(tok));
    tlmpi_tuning_gpu_token(name, tok, sizeof(tok));
    FUZZ_CHECK(memchr(tok, '\0', sizeof(tok)) != NULL, "token not terminated");
    for (i = 0; tok[i]; i++) {
        FUZZ_CHECK(tok[i] != ' ' && tok[i] != '\t', "token '%s' has a blank", tok);
    }
    free(name);
    return 0;
}
