/*
 * next: where tlmpi sends the calls it passes through (the host-buffer collectives it does not serve,
 * the Wait/Test family on requests that are not its own): the next definition of MPI_* in the load
 * order after libtlmpi when that is a PMPI tool's (a profiler or I/O tool loaded after tlmpi:
 * Darshan, mpiP, Score-P, ...), so that the tool sees them; else the MPI's PMPI_*, as ever.
 * libtlmpi's constructor fills tlmpi_next (dlsym(RTLD_NEXT)); until then, and for every name whose
 * next definition is the MPI's own (the object defines PMPI_<name> too: the usual case), is missing
 * (a static executable) or lies in libtlmpi's own object, it holds PMPI_*, so a call through it
 * never comes back into tlmpi and takes the route a PMPI_* call takes (through any layer on PMPI_*,
 * such as tests/gpu/pmpi_guard.c). Everything tlmpi does itself (its collectives' own traffic, the
 * calls it serves) calls PMPI_* directly or through tlmpi_pmpi. Include config.h first (the forms
 * depend on the MPI).
 */
#ifndef TLMPI_NEXT_H
#define TLMPI_NEXT_H

#include <mpi.h>

typedef struct {
#define TLMPI_NEXT_FN(field, Name) __typeof__(PMPI_##Name) *field;
#include "next.def"
#undef TLMPI_NEXT_FN
} tlmpi_mpi_fns_t;

/* the calls tlmpi passes through (written by libtlmpi's constructor, read only afterwards) */
extern tlmpi_mpi_fns_t tlmpi_next __attribute__((visibility("hidden")));
/* the MPI's PMPI_* */
extern const tlmpi_mpi_fns_t tlmpi_pmpi __attribute__((visibility("hidden")));

/* 1 if the loaded object named fname (dladdr's dli_fname), based at fbase, defines name itself: an
 * MPI library defines PMPI_<name> beside MPI_<name>, a PMPI tool only MPI_<name>. 0 for the
 * executable (no name) or an object dlopen cannot find again. */
int tlmpi_object_defines(const char *fname, const void *fbase, const char *name);

#endif
