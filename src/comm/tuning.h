/*
 * tuning: the tuning file that tools/tlmpi_tune writes and a communicator's plan reads at build
 * (TLMPI_TUNING_FILE). Text, line by line:
 *
 *   tlmpi-tuning 1
 *   generation <the library generation it was measured with: tlmpi_tuning_generation()>
 *   layout nodes=<N> ranks_per_node=<L> gpu=<device name, spaces as '_'>
 *   allreduce <threshold table, as TLMPI_ALLREDUCE_TIERS>
 *   allgather <table>
 *   reduce_scatter_block <table>
 *   layout ...                              (more sections; '#' starts a comment line)
 *
 * A collective's table applies where its TLMPI_<COLL>_TIERS is not set. A file of another
 * generation is ignored with one warning; a layout the file does not have, with one info line.
 */
#ifndef TLMPI_TUNING_H
#define TLMPI_TUNING_H

#include "tlmpi.h"
#include <stddef.h>

#define TLMPI_TUNING_SPEC_LEN 256

typedef struct {
    const char *generation;
    int nodes, ranks_per_node;
    const char *gpu;             /* device name, spaces as '_' ("" none) */
} tlmpi_tuning_key_t;

/* The generation a tuning file must carry to be used here: version and build of the library. */
const char *tlmpi_tuning_generation(void);
/* A device name as a tuning file writes it (spaces as '_'), into buf. */
void tlmpi_tuning_gpu_token(const char *name, char *buf, size_t len);
/* Look key up in the file at path. 1: a section matched, specs[c] its tables ("" where it names no
 * table for c); 0: no section for this layout; -1: unreadable, malformed or of another generation.
 * why says which (for 0 and -1). Pure: file input only. */
int tlmpi_tuning_lookup(const char *path, const tlmpi_tuning_key_t *key,
                        char specs[TLMPI_COLL_COUNT][TLMPI_TUNING_SPEC_LEN], char *why, size_t len);

#endif
