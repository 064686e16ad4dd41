#include "config.h"
#include "ncclwrap.h"
#include "env.h"
#include "log.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>

#ifdef HAVE_NCCL
tlmpi_nccl_fns_t tlmpi_nccl;
#endif

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static int load_ok;
static const char *load_why = "not loaded";

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
