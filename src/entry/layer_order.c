/*
 * layer_order: at load, whether the program's MPI_* calls reach tlmpi. tlmpi takes its calls by
 * being the first definition of their MPI_* names in the load order; another PMPI layer loaded
 * before it (a profiler or I/O tool: LD_PRELOAD'ed ahead of libtlmpi, or linked before -ltlmpi)
 * gets them first and hands them to PMPI_*, so they skip tlmpi and device buffers go to the MPI
 * unserved. That order is not served: rank 0 (from the launcher's environment, or the process when
 * none says) prints one warning naming both libraries and the order that works (tlmpi first: it
 * passes what it does not serve to the next layer's MPI_*, core/next.h).
 *
 * For each name tlmpi defines (core/next.def), the definition the program binds (RTLD_DEFAULT) is
 * looked up; the first one outside libtlmpi's object that is not the MPI's own (the MPI defines
 * PMPI_<name> beside it, tlmpi_object_defines; where the MPI itself comes first, as when libtlmpi is
 * dlopen'ed for its tlmpi_* API alone, tlmpi interposes nothing and says nothing) names the layer
 * ahead of it.
 */
#define _GNU_SOURCE /* RTLD_DEFAULT, dladdr */
#include "config.h"
#include "log.h"
#include "next.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The launcher's rank of this process (hydra, Open MPI, PMIx, Slurm, PALS, MVAPICH), -1 if none. */
static int env_rank(void)
{
    static const char *const vars[] = { "PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "SLURM_PROCID",
                                        "PALS_RANKID", "MV2_COMM_WORLD_RANK" };
    size_t i;

    for (i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
        const char *v = getenv(vars[i]);

        if (v && *v) {
            return atoi(v);
        }
    }
    return -1;
}

/* An object's file name (the executable's is empty in dladdr's answer) */
static const char *object_name(const char *fname, char *buf, size_t n)
{
    ssize_t len;

    if (fname && *fname) {
        return fname;
    }
    len = readlink("/proc/self/exe", buf, n - 1);
    if (len <= 0) {
        return "the executable";
    }
    buf[len] = '\0';
    return buf;
}

static const char *base_name(const char *path)
{
    const char *b = strrchr(path, '/');

    return b ? b + 1 : path;
}

__attribute__((constructor)) static void layer_order_check(void)
{
    Dl_info self, at;
    const char *first = NULL, *layer = NULL, *ours;
    const void *layer_base = NULL;
    char layer_buf[512], self_buf[512];
    void *f;
    int more = 0, rank;

    if (!dladdr((const void *)layer_order_check, &self)) {
        return;
    }
#define TLMPI_NEXT_FN(field, Name)                                                                  \
    f = dlsym(RTLD_DEFAULT, "MPI_" #Name);                                                         \
    if (f && dladdr(f, &at) && at.dli_fbase != self.dli_fbase &&                                  \
        !tlmpi_object_defines(at.dli_fname, at.dli_fbase, "PMPI_" #Name)) {                        \
        if (!first) {                                                                              \
            first = "MPI_" #Name;                                                                  \
            layer_base = at.dli_fbase;                                                             \
            layer = object_name(at.dli_fname, layer_buf, sizeof(layer_buf));                       \
        } else if (at.dli_fbase == layer_base) {                                                   \
            more++;                                                                                \
        }                                                                                          \
    }
#include "next.def"
#undef TLMPI_NEXT_FN
    rank = env_rank();
    if (!first || rank > 0) {
        return;
    }
    ours = object_name(self.dli_fname, self_buf, sizeof(self_buf));
    tlmpi_log_set_rank(rank);
    if (more) {
        tlmpi_warn(INIT, "%s and %d more of the MPI_* calls tlmpi takes resolve to %s, a PMPI layer loaded before "
                   "%s: those calls reach the MPI through PMPI_* and skip tlmpi (device buffers go to the MPI "
                   "unserved); load tlmpi first: LD_PRELOAD=%s:%s, or -ltlmpi before %s on the link line (tlmpi "
                   "passes the calls it does not serve on to it)", first, more, layer, ours, ours, layer,
                   base_name(layer));
    } else {
        tlmpi_warn(INIT, "%s resolves to %s, a PMPI layer loaded before %s: that call reaches the MPI through "
                   "PMPI_* and skips tlmpi (device buffers go to the MPI unserved); load tlmpi first: "
                   "LD_PRELOAD=%s:%s, or -ltlmpi before %s on the link line (tlmpi passes the calls it does "
                   "not serve on to it)", first, layer, ours, ours, layer, base_name(layer));
    }
}
