/*
 * next: the pass-through calls' target (see next.h), looked up once when libtlmpi is loaded.
 */
#define _GNU_SOURCE /* RTLD_NEXT, RTLD_NOLOAD, dladdr */
#include "config.h"
#include "next.h"

#include <dlfcn.h>

tlmpi_mpi_fns_t tlmpi_next = {
#define TLMPI_NEXT_FN(field, Name) .field = PMPI_##Name,
#include "next.def"
#undef TLMPI_NEXT_FN
};

const tlmpi_mpi_fns_t tlmpi_pmpi = {
#define TLMPI_NEXT_FN(field, Name) .field = PMPI_##Name,
#include "next.def"
#undef TLMPI_NEXT_FN
};

int tlmpi_object_defines(const char *fname, const void *fbase, const char *name)
{
    Dl_info at;
    void *h, *p;
    int yes;

    if (!fname || !*fname || !(h = dlopen(fname, RTLD_LAZY | RTLD_NOLOAD))) {
        return 0;
    }
    p = dlsym(h, name); /* the object first, then its dependencies */
    yes = p && dladdr(p, &at) && at.dli_fbase == fbase;
    dlclose(h);
    return yes;
}

/* At load, before main (every library of the program is loaded by then): each name's next
 * definition after this object, taken where it is a PMPI tool's: not in this object, and in an
 * object that does not define PMPI_<name> itself (the MPI). */
__attribute__((constructor)) static void next_load(void)
{
    Dl_info self, at;
    void *f;

    if (!dladdr((const void *)&tlmpi_next, &self)) {
        return;
    }
#define TLMPI_NEXT_FN(field, Name)                                                                  \
    f = dlsym(RTLD_NEXT, "MPI_" #Name);                                                            \
    if (f && dladdr(f, &at) && at.dli_fbase != self.dli_fbase &&                                   \
        !tlmpi_object_defines(at.dli_fname, at.dli_fbase, "PMPI_" #Name)) {                        \
        tlmpi_next.field = (__typeof__(tlmpi_next.field))f;                                        \
    }
#include "next.def"
#undef TLMPI_NEXT_FN
}
