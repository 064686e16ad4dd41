/*
 * The interposed request calls: the Wait and Test families, MPI_Request_get_status,
 * MPI_Request_free, MPI_Cancel, MPI_Start and MPI_Startall. tlmpi's requests of the non-blocking and
 * persistent collectives (req/request.h) are real MPI handles that only tlmpi can complete, so every
 * call that may complete, start or free one passes here first.
 *
 * Fast path: while the process holds no tlmpi request (tlmpi_req_live == 0, the common case of every
 * program that never starts a non-blocking collective on device buffers), each entry is one relaxed
 * load, one branch and a tail call of the next layer's MPI_* (tlmpi_next, core/next.h: a PMPI tool
 * loaded after tlmpi, else the MPI; bench/callgrind.sh counts it). Otherwise the array is scanned for
 * tlmpi handles (request.c): a call that holds none goes to the next layer as well, one that holds
 * some is tlmpi's (it completes them, the MPI's entries through PMPI_*).
 */
#include "config.h"
#include "global.h"
#include "next.h"
#include "request.h"

TLMPI_EXPORT int MPI_Wait(MPI_Request *request, MPI_Status *status)
{
    if (TLMPI_LIKELY(!tlmpi_req_any())) {
        return tlmpi_next.wait(request, status);
    }
    return tlmpi_req_wait(request, status);
}

TLMPI_EXPORT int MPI_Test(MPI_Request *request, int *flag, MPI_Status *status)
{
    if (TLMPI_LIKELY(!tlmpi_req_any())) {
        return tlmpi_next.test(request, flag, status);
    }
    return tlmpi_req_test(request, flag, status);
}

TLMPI_EXPORT int MPI_Waitall(int count, MPI_Request requests[], MPI_Status statuses[])
{
    if (TLMPI_LIKELY(!tlmpi_req_any())) {
        return tlmpi_next.waitall(count, requests, statuses);
    }
    return tlmpi_req_waitall(count, requests, statuses);
}

TLMPI_EXPORT int MPI_Testall(int count, MPI_Request requests[], int *flag, MPI_Status statuses[])
{
    if (TLMPI_LIKELY(!tlmpi_req_any())) {
        return tlmpi_next.testall(count, requests, flag, statuses);
    }
    return tlmpi_req_testall(count, requests, flag, statuses);
}

TLMPI_EXPORT int MPI_Waitany(int count, MPI_Request requests[], int *index, MPI_Status *status)
{
    if (TLMPI_LIKELY(!tlmpi_req_any())) {
        return tlmpi_next.waitany(count, requests, index, status);
    }
    return tlmpi_req_waitany(count, requests, index, status);
}

TLMPI_EXPORT int MPI_Testany(int count, MPI_Request requests[], int *index, int *flag, MPI_Status *status)
{
    if (TLMPI_LIKELY(!tlmpi_req_any())) {
        return tlmpi_next.testany(count, requests, index, flag, status);
    }
    return tlmpi_req_testany(count, requests, index, flag, status);
}

TLMPI_EXPORT int MPI_Waitsome(int incount, MPI_Request requests[], int *outcount, int indices[],
                              MPI_Status statuses[])
{
    if (TLMPI_LIKELY(!tlmpi_req_any())) {
        return tlmpi_next.waitsome(incount, requests, outcount, indices, statuses);
    }
    return tlmpi_req_waitsome(incount, requests, outcount, indices, statuses);
}

TLMPI_EXPORT int MPI_Testsome(int incount, MPI_Request requests[], int *outcount, int indices[],
                              MPI_Status statuses[])
{
    if (TLMPI_LIKELY(!tlmpi_req_any())) {
        return tlmpi_next.testsome(incount, requests, outcount, indices, statuses);
    }
    return tlmpi_req_testsome(incount, requests, outcount, indices, statuses);
}

TLMPI_EXPORT int MPI_Request_get_status(MPI_Request request, int *flag, MPI_Status *status)
{
    if (TLMPI_LIKELY(!tlmpi_req_any())) {
        return tlmpi_next.request_get_status(request, flag, status);
    }
    return tlmpi_req_get_status(request, flag, status);
}

TLMPI_EXPORT int MPI_Request_free(MPI_Request *request)
{
    if (TLMPI_LIKELY(!tlmpi_req_any())) {
        return tlmpi_next.request_free(request);
    }
    return tlmpi_req_free(request);
}

TLMPI_EXPORT int MPI_Cancel(MPI_Request *request)
{
    if (TLMPI_LIKELY(!tlmpi_req_any())) {
        return tlmpi_next.cancel(request);
    }
    return tlmpi_req_cancel(request);
}

TLMPI_EXPORT int MPI_Start(MPI_Request *request)
{
    if (TLMPI_LIKELY(!tlmpi_req_any())) {
        return tlmpi_next.start(request);
    }
    return tlmpi_req_start(request);
}

TLMPI_EXPORT int MPI_Startall(int count, MPI_Request requests[])
{
    if (TLMPI_LIKELY(!tlmpi_req_any())) {
        return tlmpi_next.startall(count, requests);
    }
    return tlmpi_req_startall(count, requests);
}
