#include "config.h"
#include "tlmpi.h"
#include "tlmpi_version.h"

/* public API (tlmpi.h): exported despite -fvisibility=hidden */
#define TLMPI_PUBLIC_ __attribute__((visibility("default")))

TLMPI_PUBLIC_ const char *tlmpi_status_string(tlmpi_status_t status)
{
    switch (status) {
#define TLMPI_STATUS_CASE_(_n, _v, _s) case TLMPI_ERR_##_n: return _s;
    TLMPI_STATUS_MAP(TLMPI_STATUS_CASE_)
#undef TLMPI_STATUS_CASE_
    default: return "unknown status";
    }
}

TLMPI_PUBLIC_ const char *tlmpi_version(void)
{
    return TLMPI_VERSION_STRING;
}

static const char *const coll_names[TLMPI_COLL_COUNT] = { "allgather", "reduce_scatter_block", "allreduce",
                                                          "allgatherv", "reduce_scatter", "bcast", "reduce",
                                                          "alltoall" };
static const char *const path_names[TLMPI_PATH_COUNT] = { "passthrough", "hostop", "staging", "nccl", "self",
                                                          "node", "hier" };

TLMPI_PUBLIC_ const char *tlmpi_coll_name(tlmpi_coll_t coll)
{
    return (unsigned)coll < TLMPI_COLL_COUNT ? coll_names[coll] : NULL;
}

TLMPI_PUBLIC_ const char *tlmpi_path_name(tlmpi_path_t path)
{
    return (unsigned)path < TLMPI_PATH_COUNT ? path_names[path] : NULL;
}
