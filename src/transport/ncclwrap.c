/*
 * ncclwrap: the dlopen of libnccl, its entry points, and the NCCL environment tlmpi sets once per
 * process (see ncclwrap.h).
 */
#include "config.h"
#include "ncclwrap.h"
#include "env.h"
#include "global.h"
#include "log.h"
#include "topo.h"

#ifdef HAVE_CUDA
#include <cuda_runtime_api.h>
#include "kernels.h"
#endif

#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef HAVE_NCCL
tlmpi_nccl_fns_t tlmpi_nccl;
#endif

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static int load_ok;
static const char *load_why = "not loaded";
static const char *devcomm_missing = "libnccl not loaded";

static void do_load(void)
{
#ifdef HAVE_NCCL
    const char *lib = TLMPI_ENV_S(NCCL_LIBRARY);
    void *h = dlopen(lib && *lib ? lib : "libnccl.so.2", RTLD_NOW | RTLD_LOCAL);

    if (!h) {
        load_why = "libnccl not found";
        tlmpi_info(NCCL, "cannot load %s: %s", lib, dlerror());
        return;
    }
#define TLMPI_NCCL_SYM_(_name, _ret, _args)                                                  \
    tlmpi_nccl._name = (_ret(*) _args)dlsym(h, #_name);                                      \
    if (!tlmpi_nccl._name) {                                                                 \
        load_why = "libnccl lacks " #_name;                                                  \
        return;                                                                              \
    }
    TLMPI_NCCL_FUNCS(TLMPI_NCCL_SYM_)
#undef TLMPI_NCCL_SYM_
    devcomm_missing = NULL;
#define TLMPI_NCCL_OPT_SYM_(_name, _ret, _args)                                              \
    tlmpi_nccl._name = (_ret(*) _args)dlsym(h, #_name);                                      \
    if (!tlmpi_nccl._name && !devcomm_missing) {                                             \
        devcomm_missing = #_name;                                                            \
    }
    TLMPI_NCCL_OPT_FUNCS(TLMPI_NCCL_OPT_SYM_)
#undef TLMPI_NCCL_OPT_SYM_
    load_ok = 1;
    load_why = "ok";
#else
    load_why = "built without NCCL";
#endif
}

int tlmpi_nccl_load(const char **why_p)
{
    pthread_once(&load_once, do_load);
    if (why_p) {
        *why_p = load_why;
    }
    return load_ok;
}

int tlmpi_nccl_runtime_version(void)
{
#ifdef HAVE_NCCL
    int v = 0;

    if (tlmpi_nccl_load(NULL) && tlmpi_nccl.ncclGetVersion(&v) == ncclSuccess) {
        return v;
    }
#endif
    return 0;
}

int tlmpi_nccl_have_devcomm_api(const char **missing_p)
{
    if (!tlmpi_nccl_load(NULL)) {
        devcomm_missing = devcomm_missing ? devcomm_missing : "libnccl not loaded";
    }
    if (missing_p) {
        *missing_p = devcomm_missing;
    }
    return tlmpi_nccl_load(NULL) && !devcomm_missing;
}

/*
 * TLMPI_NVLS=0 promises that tlmpi creates no NVLink multicast, and NCCL would create some for its
 * own communicators on NVLS-capable nodes. NCCL has no per-communicator switch for it in 2.28, only
 * NCCL_NVLS_ENABLE (read once per process): set it to 0 if unset; if the user set it to anything
 * else, the two settings conflict and no NCCL communicator of tlmpi is created on this rank (each
 * tier agrees on that over the comm like any capability).
 */
static int env_ok = 1;
static pthread_once_t env_once = PTHREAD_ONCE_INIT;

/* Under MPI_THREAD_MULTIPLE, NCCL kernels of several communicators (threads) and of the ranks
 * sharing this GPU spin at once waiting for their peers; if they cannot all be resident, the GPU
 * deadlocks (the peer kernel that would release a resident one never starts). Give each at most
 * its share of the SMs (NCCL's kernels run one CTA per SM), unless the user set NCCL_MAX_CTAS. */
static void cap_ctas(void)
{
#ifdef HAVE_CUDA
    int dev = -1, sms, share, n;
    char v[16];

    if (getenv("NCCL_MAX_CTAS") || cudaGetDevice(&dev) != cudaSuccess || (sms = tlmpi_cuda_sm_count(dev)) <= 0) {
        (void)cudaGetLastError();
        return;
    }
    share = tlmpi_topo_gpu_kernel_sharers(1);
    n = sms / share;
    n = n < 1 ? 1 : n;
    if (n < 32) { /* NCCL's own default is at most 32 channels */
        snprintf(v, sizeof(v), "%d", n);
        setenv("NCCL_MAX_CTAS", v, 0);
        tlmpi_info(NCCL, "MPI_THREAD_MULTIPLE: NCCL_MAX_CTAS=%d (%d SMs shared by %d kernels that may wait at once: "
                   "ranks on this GPU x TLMPI_CONCURRENT_COLLS)", n, sms, share);
    }
#endif
}

/* NCCL reads its environment once per process, from whichever thread creates its first
 * communicator: set tlmpi's choices once, before any of tlmpi's NCCL communicators exists, and
 * never concurrently with another thread of tlmpi reading the environment. */
static void env_prepare(void)
{
    const char *v;

    if (TLMPI_ENV_I(NVLS) == TLMPI_TRI_NO) {
        v = getenv("NCCL_NVLS_ENABLE");
        if (!v) {
            setenv("NCCL_NVLS_ENABLE", "0", 0);
        } else if (strcmp(v, "0") != 0) {
            tlmpi_warn(NCCL, "TLMPI_NVLS=0 but NCCL_NVLS_ENABLE=%s: tlmpi creates no NCCL communicator (the flat "
                       "NCCL tier and the node tier's devcomm transport stay off) so that no NVLink multicast is "
                       "created", v);
            env_ok = 0;
        }
    }
    if (tlmpi_g.thread_level == MPI_THREAD_MULTIPLE) {
        /* Several threads may run collectives on several NCCL communicators at once. NCCL (2.22+)
         * connects peers lazily inside the first collectives by default, with blocking bootstrap
         * exchanges and CUDA calls while other communicators' kernels spin waiting for their peers;
         * NCCL documents that concurrent communicators can deadlock then. Connect at
         * ncclCommInitRank instead, unless the user chose. */
        setenv("NCCL_RUNTIME_CONNECT", "0", 0);
        cap_ctas();
    }
}

int tlmpi_nccl_env_ready(void)
{
    pthread_once(&env_once, env_prepare);
    return env_ok;
}
