/*
 * request: tlmpi's own MPI requests, for the non-blocking (MPI_Iallreduce, ...) and persistent
 * (MPI_Allreduce_init + MPI_Start) forms of the collectives tlmpi runs on device buffers.
 *
 * The handle the application gets is a real MPI_Request of the MPI: a generalized request
 * (PMPI_Grequest_start) that tlmpi owns and completes itself, so that a tlmpi handle is a valid handle
 * to every call of the MPI (f2c/c2f, comparisons, an MPI_Request array of the MPI's own). The MPI
 * never progresses it: the completion calls are interposed (entry/mpi_req.c) and, when a request
 * array holds tlmpi handles, tlmpi completes those itself and hands the MPI a copy of the array with
 * them replaced by MPI_REQUEST_NULL. The choice and what others do: docs/DESIGN.md, "Non-blocking
 * and persistent forms".
 *
 * A request goes through: started (its tier launched the device work and recorded a mark, or posted
 * the MPI's own non-blocking collective: tier.h tlmpi_pending_t) -> done (tlmpi saw the mark, the MPI
 * request and the tier's finish complete) -> reported (a completion call returned it: a non-blocking
 * request is then released, a persistent one becomes inactive). The application freeing a request
 * that is not done detaches it: tlmpi completes it on its own at the next completion call, new
 * start, communicator teardown or finalize. Every wait is bounded by TLMPI_TIMEOUT (plus the tier's
 * grace), and the diagnostic names the request. Host-side cost on the MPI's own requests: one load
 * and one branch (tlmpi_req_live is 0 whenever the process holds no tlmpi request).
 */
#ifndef TLMPI_REQUEST_H
#define TLMPI_REQUEST_H

#include "call.h"
#include "tier.h"
#include "tlmpi.h"
#include <mpi.h>

struct tlmpi_comm;

/* tlmpi handles that exist (started, done, detached or persistent): 0 means no completion call
 * needs to look at its requests. */
extern int tlmpi_req_live;

static inline int tlmpi_req_any(void)
{
    return __atomic_load_n(&tlmpi_req_live, __ATOMIC_RELAXED) != 0;
}

/* Start the call c (classified, laid out, tier t / algo chosen on tc) as a non-blocking collective:
 * *c->ureq gets the handle. Returns an MPI error code (the errhandler ran) or MPI_SUCCESS. */
int tlmpi_req_istart(struct tlmpi_comm *tc, tlmpi_call_t *c, int t, int algo);
/* Make a persistent request for call c (as above, not started): *c->ureq gets the handle. kept: what
 * tier t prepared for it already (tlmpi_staging_check_init's kept request), else NULL (the tier's persist). */
int tlmpi_req_persistent(struct tlmpi_comm *tc, tlmpi_call_t *c, int t, int algo, void *kept);

/* The interposed completion and start calls, for arrays that hold tlmpi handles (the entry points
 * call them only when tlmpi_req_any()). Same arguments and return codes as the MPI calls. */
int tlmpi_req_wait(MPI_Request *r, MPI_Status *st);
int tlmpi_req_test(MPI_Request *r, int *flag, MPI_Status *st);
int tlmpi_req_waitall(int n, MPI_Request *rs, MPI_Status *sts);
int tlmpi_req_testall(int n, MPI_Request *rs, int *flag, MPI_Status *sts);
int tlmpi_req_waitany(int n, MPI_Request *rs, int *idx, MPI_Status *st);
int tlmpi_req_testany(int n, MPI_Request *rs, int *idx, int *flag, MPI_Status *st);
int tlmpi_req_waitsome(int n, MPI_Request *rs, int *outc, int *idx, MPI_Status *sts);
int tlmpi_req_testsome(int n, MPI_Request *rs, int *outc, int *idx, MPI_Status *sts);
int tlmpi_req_get_status(MPI_Request r, int *flag, MPI_Status *st);
int tlmpi_req_free(MPI_Request *r);
int tlmpi_req_cancel(MPI_Request *r);
int tlmpi_req_start(MPI_Request *r);
int tlmpi_req_startall(int n, MPI_Request *rs);

/* Requests the application freed while active (MPI_Request_free): on comm tc they complete before
 * the comm's next device-buffer call runs, so that a later call on the comm is ordered after them as
 * on the device (tlmpi_req_order: one load where none is detached). */
extern int tlmpi_req_detached;
void tlmpi_req_order_slow(struct tlmpi_comm *tc);
static inline void tlmpi_req_order(struct tlmpi_comm *tc)
{
    if (__builtin_expect(__atomic_load_n(&tlmpi_req_detached, __ATOMIC_RELAXED) != 0, 0)) {
        tlmpi_req_order_slow(tc);
    }
}

/* Complete every request of comm tc (its state is going away: MPI_Comm_free, finalize); they stay
 * valid handles, reported by the next completion call. */
void tlmpi_req_comm_gone(struct tlmpi_comm *tc);
/* Finalize: complete and release every request tlmpi still holds. */
void tlmpi_req_finalize(void);

#endif
