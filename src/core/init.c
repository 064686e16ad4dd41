#include "config.h"
#include "global.h"
#include "launcher.h"
#include "request.h"
#include "stream.h"
#include "stats.h"
#include "comm.h"
#include "dtype.h"
#include "env.h"
#include "classify.h"
#include "cudawrap.h"
#include "log.h"
#include "turn.h"
#include "tier.h"
#include "fault.h"
#ifdef HAVE_CUDA
#include "kernels.h"
#endif

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(OPEN_MPI) && OPEN_MPI
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif
#endif

extern char **environ;

tlmpi_global_t tlmpi_g = {
    .state = TLMPI_STATE_UNINIT,
    .comm_keyval = MPI_KEYVAL_INVALID,
    .self_keyval = MPI_KEYVAL_INVALID,
};

static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;

/* Does the MPI accept device pointers? Neither Debian's MPICH nor Ubuntu's Open MPI does. */
static int query_mpi_cuda_aware(void)
{
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
    return MPIX_Query_cuda_support();
#elif defined(MPICH_NUMVERSION) && MPICH_NUMVERSION >= 40000000
    return MPIX_Query_cuda_support();
#else
    return 0;
#endif
}

/* First thing MPI_Finalize does: delete MPI_COMM_SELF's attributes. MPI is still fully usable. */
static int self_attr_delete(MPI_Comm comm, int keyval, void *attr, void *extra)
{
    unsigned long taken, lost;

    if (TLMPI_ENV_I(STATS)) {
        unsigned long lp, li, ls, lh, lo;

        tlmpi_core_print_stats(stderr);
        tlmpi_launcher_counts(&lp, &li, &ls, &lh, &lo);
        if (lp || li) {
            fprintf(stderr, "tlmpi: launch thread (TLMPI_LAUNCH_THREAD): %lu launches queued for started calls (%lu "
                    "of them made by a thread waiting for them, %lu by their own start because the thread was "
                    "off its core: TLMPI_LAUNCH_HANDOFF), %lu started calls launched on their own thread "
                    "while it slept, %lu sleeps; %lu starts completed through the launch word (TLMPI_LAUNCH_WORD), "
                    "%lu of them written by their own kernel\n", lp, lh, lo, li, ls,
                    __atomic_load_n(&tlmpi_launcher_words_, __ATOMIC_RELAXED),
                    __atomic_load_n(&tlmpi_launcher_kwords_, __ATOMIC_RELAXED));
        }
    }
    if (TLMPI_ENV_I(STATS) && (tlmpi_stat_grid[0] || tlmpi_stat_grid[1])) {
        fprintf(stderr, "tlmpi: node kernels of blocking calls sized past a shared kernel's CTAs: %lu on CTAs of their "
                "own (nothing else of the process in flight), %lu on fewer CTAs taking the columns in turn (a "
                "started, stream-ordered or captured call's kernel may be in flight)\n",
                __atomic_load_n(&tlmpi_stat_grid[0], __ATOMIC_RELAXED), __atomic_load_n(&tlmpi_stat_grid[1], __ATOMIC_RELAXED));
    }
#ifdef HAVE_CUDA
    if (TLMPI_ENV_I(STATS)) {
        int loaded;
        long long us;
        tlmpi_cuda_preload_stats(&loaded, &us);
        if (us >= 0) {
            fprintf(stderr, "tlmpi: kernels loaded before the first launch (cuda/preload.cu): %d lookups in %.1f ms\n",
                    loaded, us / 1000.0);
        }
    }
#endif
    tlmpi_turn_counts(&taken, &lost);
    if (taken) {
        tlmpi_info(COLL, "GPU turn (TLMPI_GPU_TURNS): taken %lu times, %lu rounds lost to other threads' "
                   "communicators", taken, lost);
    }
    tlmpi_req_finalize(); /* requests still held complete while every comm's state exists */
    tlmpi_launcher_finalize(); /* its last launches made, the thread joined */
    tlmpi_comm_module_finalize();
    tlmpi_tier_finalize();
    tlmpi_gpu_marks_finalize();
    tlmpi_mem_cache_flush();
    tlmpi_half_finalize();
    __atomic_store_n(&tlmpi_g.state, TLMPI_STATE_FINALIZED, __ATOMIC_RELEASE);
    tlmpi_log_close();
    return MPI_SUCCESS;
}

static void register_error_class(void)
{
    if (PMPI_Add_error_class(&tlmpi_g.err_class) != MPI_SUCCESS ||
        PMPI_Add_error_code(tlmpi_g.err_class, &tlmpi_g.err_code) != MPI_SUCCESS) {
        tlmpi_g.err_code = MPI_ERR_OTHER;
        return;
    }
    PMPI_Add_error_string(tlmpi_g.err_class, "tlmpi: error inside a GPU collective (see the TLMPI WARN/ERROR line)");
    PMPI_Add_error_string(tlmpi_g.err_code, "tlmpi: error inside a GPU collective (see the TLMPI WARN/ERROR line)");
}

int tlmpi_core_init_slow(void)
{
    int initialized = 0, finalized = 0;
    int c;
    const char *why;

    pthread_mutex_lock(&init_lock);
    if (tlmpi_g.state != TLMPI_STATE_UNINIT) {
        goto out;
    }
    PMPI_Initialized(&initialized);
    PMPI_Finalized(&finalized);
    if (!initialized || finalized) {
        goto out; /* called outside MPI: stay uninitialised; PMPI reports the error */
    }
    tlmpi_env_load(NULL, environ);
    PMPI_Comm_rank(MPI_COMM_WORLD, &tlmpi_g.world_rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &tlmpi_g.world_size);
    tlmpi_log_set_rank(tlmpi_g.world_rank); /* before the log file is opened: its name may hold %r */
    tlmpi_log_configure((int)TLMPI_ENV_I(LOG_LEVEL), TLMPI_ENV_S(LOG_SUBSYS), TLMPI_ENV_S(LOG_FILE));
    tlmpi_fault_configure(TLMPI_ENV_S(FAULT), tlmpi_g.world_rank);
    PMPI_Query_thread(&tlmpi_g.thread_level);
    tlmpi_g.enabled = (int)TLMPI_ENV_I(ENABLE);
    tlmpi_g.coll_mask = 0;
    for (c = 0; c < TLMPI_COLL_COUNT; c++) {
        if (tlmpi_env_list_has(TLMPI_ENV_S(COLLS), tlmpi_coll_name(c))) {
            tlmpi_g.coll_mask |= 1u << c;
        }
    }
    {
        /* read once here, before any thread of tlmpi may set NCCL variables (nccl.c) */
        const char *nv = getenv("NCCL_NVLS_ENABLE");

        tlmpi_g.nccl_nvls_off = nv && !strcmp(nv, "0");
    }
    for (c = 0; c < TLMPI_TIER_COUNT; c++) {
        tlmpi_stats_name_algos(tlmpi_tiers[c]->label, tlmpi_tiers[c]->algos, tlmpi_tiers[c]->n_algos);
    }
    tlmpi_g.gpu_count = tlmpi_gpu_probe(&why);
    if (tlmpi_g.gpu_count > 0) {
        tlmpi_mem_init();
    }
    tlmpi_g.mpi_cuda_aware = query_mpi_cuda_aware();
    tlmpi_dtype_init();
    tlmpi_half_init();
    register_error_class();
    if (tlmpi_comm_module_init() != MPI_SUCCESS ||
        PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, self_attr_delete, &tlmpi_g.self_keyval, NULL) != MPI_SUCCESS ||
        PMPI_Comm_set_attr(MPI_COMM_SELF, tlmpi_g.self_keyval, NULL) != MPI_SUCCESS) {
        tlmpi_warn(INIT, "cannot create MPI attributes; tlmpi passes every call through");
        __atomic_store_n(&tlmpi_g.state, TLMPI_STATE_DISABLED, __ATOMIC_RELEASE);
        goto out;
    }
    tlmpi_info(INIT, "tlmpi %s: enabled %d, %d GPU(s) (%s), MPI CUDA-aware %d, thread level %d",
               TLMPI_VERSION_STRING, tlmpi_g.enabled, tlmpi_g.gpu_count, why, tlmpi_g.mpi_cuda_aware,
               tlmpi_g.thread_level);
    __atomic_store_n(&tlmpi_g.state, TLMPI_STATE_READY, __ATOMIC_RELEASE);
out:
    pthread_mutex_unlock(&init_lock);
    return tlmpi_g.state;
}

int tlmpi_core_error(MPI_Comm comm, tlmpi_status_t status, const char *what)
{
    if (status == TLMPI_OK) {
        return MPI_SUCCESS;
    }
    tlmpi_error(COLL, "%s failed: %s (%s)", what, tlmpi_status_string(status), tlmpi_log_last_error());
    return PMPI_Comm_call_errhandler(comm, tlmpi_g.err_code) == MPI_SUCCESS ? tlmpi_g.err_code : tlmpi_g.err_code;
}

TLMPI_EXPORT tlmpi_status_t tlmpi_config_set(const char *name, const char *value)
{
    int rc, c;

    if (!name || !tlmpi_core_ready()) {
        return name ? TLMPI_ERR_NOT_FOUND : TLMPI_ERR_INVALID_ARG;
    }
    rc = tlmpi_env_set(name, value);
    if (rc) {
        return rc == -1 ? TLMPI_ERR_NOT_FOUND : TLMPI_ERR_INVALID_ARG;
    }
    __atomic_add_fetch(&tlmpi_g.config_gen, 1, __ATOMIC_RELEASE); /* plans refill at their next call */
    tlmpi_fault_configure(TLMPI_ENV_S(FAULT), tlmpi_g.world_rank);
    /* settings cached outside the table */
    tlmpi_g.enabled = (int)TLMPI_ENV_I(ENABLE);
    tlmpi_g.coll_mask = 0;
    for (c = 0; c < TLMPI_COLL_COUNT; c++) {
        if (tlmpi_env_list_has(TLMPI_ENV_S(COLLS), tlmpi_coll_name(c))) {
            tlmpi_g.coll_mask |= 1u << c;
        }
    }
    return TLMPI_OK;
}
