/*
 * global: the process-wide state of tlmpi (tlmpi_g) that every module may read. It is written by
 * core/init.c alone: lazy init on the first intercepted call (MPI_Init is never intercepted:
 * mpi_f08 bypasses it), teardown from an MPI_COMM_SELF attribute delete callback (runs first inside
 * MPI_Finalize, whatever language finalised). Only init.c knows every module.
 */
#ifndef TLMPI_GLOBAL_H
#define TLMPI_GLOBAL_H

#include "compiler.h"
#include "tlmpi.h"
#include <mpi.h>
#include <stdio.h>


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
    unsigned config_gen;         /* bumped by tlmpi_config_set: plans refill their tables */
    void (*abort_report)(void);  /* before tlmpi aborts the job: what this process's communicators
                                    were doing (comm.c's tlmpi_comm_report_busy; set by init.c) */
    int nccl_nvls_off;           /* NCCL_NVLS_ENABLE=0 in the environment at init (the user's: tlmpi
                                    sets it only later, for TLMPI_NVLS=0) */
} tlmpi_global_t;

extern tlmpi_global_t tlmpi_g;

/* Slow path of init; returns the resulting state. Thread-safe. */
int tlmpi_core_init_slow(void);

/* The init state, read with acquire: READY seen here makes every setting the init wrote before its
 * release store visible to this thread too (a plain load would let another thread read the settings
 * before the init's writes of them). A plain load on x86: no cost on the pass-through path. */
static inline int tlmpi_core_state(void)
{
    return __atomic_load_n(&tlmpi_g.state, __ATOMIC_ACQUIRE);
}

static inline int tlmpi_core_ready(void)
{
    int s = tlmpi_core_state();
    return TLMPI_LIKELY(s == TLMPI_STATE_READY) ? 1 : (s == TLMPI_STATE_UNINIT ? tlmpi_core_init_slow() == TLMPI_STATE_READY : 0);
}

/* Turn a tlmpi status into an MPI return code, invoking comm's error handler for errors. */
int tlmpi_core_error(MPI_Comm comm, tlmpi_status_t status, const char *what);

#endif
