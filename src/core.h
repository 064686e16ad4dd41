/*
 * core: process-wide state of tlmpi. Lazy init on the first intercepted call (MPI_Init is never
 * intercepted: mpi_f08 bypasses it), teardown from an MPI_COMM_SELF attribute delete callback
 * (runs first inside MPI_Finalize, whatever language finalised). Owns the statistics counters.
 */
#ifndef TLMPI_CORE_H
#define TLMPI_CORE_H

#include "tlmpi.h"
#include <mpi.h>
#include <stdio.h>

#define TLMPI_LIKELY(_x) __builtin_expect(!!(_x), 1)
#define TLMPI_UNLIKELY(_x) __builtin_expect(!!(_x), 0)
#define TLMPI_EXPORT __attribute__((visibility("default")))

typedef enum { TLMPI_STATE_UNINIT = 0, TLMPI_STATE_READY, TLMPI_STATE_DISABLED,
               TLMPI_STATE_FINALIZED } tlmpi_state_t;

typedef struct {
    volatile int state;          /* tlmpi_state_t; READY is the only state that accelerates */
    int enabled;                 /* TLMPI_ENABLE */
    unsigned coll_mask;          /* bit per tlmpi_coll_t from TLMPI_COLLS */
    int world_rank, world_size;
    int thread_level;
    int gpu_count;               /* CUDA devices visible to this process; 0 = no GPU/driver */
    int mpi_cuda_aware;          /* the MPI accepts device pointers (MPIX_Query_cuda_support) */
    MPI_Datatype type_f16;       /* tlmpi's TLMPI_FLOAT16 */
    MPI_Datatype type_bf16;      /* tlmpi's TLMPI_BFLOAT16 */
    int comm_keyval;             /* per-communicator state attribute */
    int self_keyval;             /* MPI_COMM_SELF attribute whose delete callback tears down */
    int err_class, err_code;     /* tlmpi's MPI error class/code for errors after work started */
} tlmpi_global_t;

extern tlmpi_global_t tlmpi_g;

/* Slow path of init; returns the resulting state. Thread-safe. */
int tlmpi_core_init_slow(void);

static inline int tlmpi_core_ready(void)
{
    int s = tlmpi_g.state;
    return TLMPI_LIKELY(s == TLMPI_STATE_READY) ? 1 : (s == TLMPI_STATE_UNINIT ? tlmpi_core_init_slow() == TLMPI_STATE_READY : 0);
}

/* Counters, always on (the public API and tests read them). Below MPI_THREAD_MULTIPLE the MPI
 * standard lets only one thread at a time be inside MPI, so a relaxed load + store cannot lose an
 * update and costs far less than the locked read-modify-write that MPI_THREAD_MULTIPLE needs
 * (two lock adds were about a third of the pass-through overhead). Readers use relaxed loads. */
extern tlmpi_stat_t tlmpi_stats[TLMPI_COLL_COUNT][TLMPI_PATH_COUNT];
static inline void tlmpi_stat_add(tlmpi_coll_t coll, tlmpi_path_t path, uint64_t bytes)
{
    tlmpi_stat_t *s = &tlmpi_stats[coll][path];

    if (TLMPI_LIKELY(tlmpi_g.thread_level != MPI_THREAD_MULTIPLE)) {
        __atomic_store_n(&s->calls, __atomic_load_n(&s->calls, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
        __atomic_store_n(&s->bytes, __atomic_load_n(&s->bytes, __ATOMIC_RELAXED) + bytes, __ATOMIC_RELAXED);
    } else {
        __atomic_fetch_add(&s->calls, 1, __ATOMIC_RELAXED);
        __atomic_fetch_add(&s->bytes, bytes, __ATOMIC_RELAXED);
    }
}

/* Print the statistics table (TLMPI_STATS=1 at finalize; tlmpi_info). */
void tlmpi_core_print_stats(FILE *f);

/* Turn a tlmpi status into an MPI return code, invoking comm's error handler for errors. */
int tlmpi_core_error(MPI_Comm comm, tlmpi_status_t status, const char *what);

#endif
