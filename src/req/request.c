/*
 * request: tlmpi's requests of the non-blocking and persistent forms (see request.h): the registry
 * of handles, starting, progress (poll) and bounded waits, and the bodies of the interposed
 * completion calls for arrays that hold tlmpi handles.
 *
 * Array calls: tlmpi's entries are completed by tlmpi and the MPI gets a copy of the array in which
 * they are MPI_REQUEST_NULL (an inactive persistent request is a null request to the MPI standard
 * too); handles the MPI changed are copied back, and tlmpi writes its own entries' handles, indices
 * and statuses (empty statuses: MPI_ANY_SOURCE, MPI_ANY_TAG, 0 elements, not cancelled; in the
 * multi-completion calls MPI_ERROR as well). A Wait-family call whose tlmpi entries are not done
 * polls them and the MPI's entries (PMPI_Test*) in turn until it can return, each tlmpi entry bounded
 * by TLMPI_TIMEOUT. A call that holds no tlmpi handle is passed through unchanged to the next layer's
 * MPI_* (tlmpi_next, core/next.h); one that holds some is tlmpi's, and its PMPI_* calls are its own.
 */
#include "config.h"
#include "request.h"
#include "comm.h"
#include "env.h"
#include "global.h"
#include "log.h"
#include "next.h"
#include "stats.h"
#include "stream.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct tlmpi_req {
    MPI_Request handle;         /* the application's: a generalized request of the MPI */
    unsigned long id;           /* this process's n-th request (diagnostics) */
    int persistent;
    int active;                 /* started, not yet reported */
    int done;                   /* its work completed (tlmpi touches its buffers no more) */
    int freed;                  /* the application freed it before it was done */
    int in_poll;                /* req_poll runs on it (the MPI's poll callback stays out) */
    int mpi_completed;          /* PMPI_Grequest_complete was called on its handle */
    int releasing;              /* req_release frees its handle (gq_free leaves it alone) */
    int err;                    /* MPI error code of the work (MPI_SUCCESS) */
    tlmpi_call_t call;          /* the call (persistent: classified and laid out once, at init) */
    tlmpi_comm_t *tc;           /* NULL once the comm's state went (persistent: start fails) */
    int t, algo;                /* the tier and algorithm word the plan chose */
    const tlmpi_tier_t *ran;    /* the tier that started it (staging after a fallback) */
    tlmpi_pending_t pend;
    double t0;                  /* when it was started (the bound of polls) */
    char what[112];             /* "request #N (MPI_Iallreduce, 8 bytes): the node kernel" */
    struct tlmpi_req *hnext;    /* hash chain */
    struct tlmpi_req *prev, *next; /* every request */
} tlmpi_req_t;

int tlmpi_req_live;
int tlmpi_req_detached;         /* requests freed by the application before done */
static unsigned long req_ids;
static pthread_mutex_t req_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t detach_lock = PTHREAD_MUTEX_INITIALIZER;
#define REQ_BUCKETS 1024
static tlmpi_req_t *req_hash[REQ_BUCKETS];
static tlmpi_req_t *req_all;

/* ---- registry ------------------------------------------------------------------------------------ */

static inline uintptr_t req_key(MPI_Request h)
{
    uintptr_t k = 0;

    memcpy(&k, &h, sizeof(h) < sizeof(k) ? sizeof(h) : sizeof(k));
    return k;
}

static inline unsigned req_bucket(uintptr_t k)
{
    k ^= k >> 17;
    k *= (uintptr_t)0x9e3779b97f4a7c15ull;
    return (unsigned)(k >> 20) & (REQ_BUCKETS - 1);
}

static inline void reg_lock(void)
{
    if (tlmpi_g.thread_level == MPI_THREAD_MULTIPLE) {
        pthread_mutex_lock(&req_lock);
    }
}

static inline void reg_unlock(void)
{
    if (tlmpi_g.thread_level == MPI_THREAD_MULTIPLE) {
        pthread_mutex_unlock(&req_lock);
    }
}

static tlmpi_req_t *req_lookup(MPI_Request h)
{
    tlmpi_req_t *r;
    uintptr_t k;

    if (h == MPI_REQUEST_NULL) {
        return NULL;
    }
    k = req_key(h);
    reg_lock();
    for (r = req_hash[req_bucket(k)]; r && req_key(r->handle) != k; r = r->hnext) {
    }
    reg_unlock();
    return r;
}

static void reg_add(tlmpi_req_t *r)
{
    unsigned b = req_bucket(req_key(r->handle));

    reg_lock();
    r->hnext = req_hash[b];
    req_hash[b] = r;
    r->prev = NULL;
    r->next = req_all;
    if (req_all) {
        req_all->prev = r;
    }
    req_all = r;
    r->id = ++req_ids;
    __atomic_add_fetch(&tlmpi_req_live, 1, __ATOMIC_RELAXED);
    reg_unlock();
}

static void reg_remove(tlmpi_req_t *r)
{
    tlmpi_req_t **pp;

    reg_lock();
    for (pp = &req_hash[req_bucket(req_key(r->handle))]; *pp && *pp != r; pp = &(*pp)->hnext) {
    }
    if (*pp) {
        *pp = r->hnext;
    }
    if (r->prev) {
        r->prev->next = r->next;
    } else if (req_all == r) {
        req_all = r->next;
    }
    if (r->next) {
        r->next->prev = r->prev;
    }
    if (r->freed) {
        __atomic_sub_fetch(&tlmpi_req_detached, 1, __ATOMIC_RELAXED);
    }
    __atomic_sub_fetch(&tlmpi_req_live, 1, __ATOMIC_RELAXED);
    reg_unlock();
}

/* The generalized request's callbacks: the MPI calls them when tlmpi completes and frees the handle
 * (query, free), when it is cancelled through a path tlmpi does not see, and, with MPICH's extended
 * generalized requests, from its own completion calls (poll, wait): those reach tlmpi's requests even
 * where a call does not pass through tlmpi (MPICH's mpi_f08 Wait/Test bindings call PMPI_* directly).
 * extra_state is the request. */
static void status_empty(MPI_Status *st)
{
    if (st == MPI_STATUS_IGNORE) {
        return;
    }
    st->MPI_SOURCE = MPI_ANY_SOURCE;
    st->MPI_TAG = MPI_ANY_TAG;
    PMPI_Status_set_elements(st, MPI_BYTE, 0);
    PMPI_Status_set_cancelled(st, 0);
}
static int req_poll(struct tlmpi_req *r);

/* A wait loop's pause: spin a while, then leave the core to others. */
static void backoff(unsigned *spins)
{
    if (++*spins > 64) {
        sched_yield();
    }
}


static int gq_query(void *extra, MPI_Status *st)
{
    tlmpi_req_t *r = extra;

    status_empty(st);
    return r ? r->err : MPI_SUCCESS;
}
static int gq_free(void *extra)
{
    tlmpi_req_t *r = extra;

    if (!r || r->releasing) {
        return MPI_SUCCESS;
    }
    /* the MPI completed and freed the handle itself (a completion call tlmpi did not see) */
    reg_remove(r);
    if (r->pend.marked) {
        tlmpi_gpu_mark_release(&r->pend.mark);
    }
    free(r);
    return MPI_SUCCESS;
}
#ifdef HAVE_PMPIX_GREQUEST_START
static int gq_poll(void *extra, MPI_Status *st)
{
    tlmpi_req_t *r = extra;

    (void)st;
    /* a persistent request's handle lives until MPI_Request_free: only tlmpi's own calls report it */
    if (r->persistent || r->mpi_completed || r->releasing || r->in_poll) {
        return MPI_SUCCESS;
    }
    if (req_poll(r)) {
        r->mpi_completed = 1;
        PMPI_Grequest_complete(r->handle);
    }
    return MPI_SUCCESS;
}
static int gq_wait(int n, void **states, double timeout, MPI_Status *st)
{
    int i;

    (void)timeout;
    for (i = 0; i < n; i++) {
        tlmpi_req_t *r = states[i];
        unsigned spins = 0;

        while (!r->persistent && !r->mpi_completed && !r->releasing) {
            gq_poll(r, st);
            backoff(&spins);
        }
    }
    return MPI_SUCCESS;
}
#endif
static int gq_cancel(void *extra, int complete)
{
    (void)extra, (void)complete;
    return MPI_SUCCESS;
}

static tlmpi_req_t *req_new(tlmpi_comm_t *tc, const tlmpi_call_t *c, int t, int algo, int persistent)
{
    tlmpi_req_t *r = calloc(1, sizeof(*r));

    if (!r) {
        return NULL;
    }
#ifdef HAVE_PMPIX_GREQUEST_START
    if (PMPIX_Grequest_start(gq_query, gq_free, gq_cancel, gq_poll, gq_wait, r, &r->handle) != MPI_SUCCESS) {
#else
    if (PMPI_Grequest_start(gq_query, gq_free, gq_cancel, r, &r->handle) != MPI_SUCCESS) {
#endif
        free(r);
        return NULL;
    }
    r->persistent = persistent;
    r->call = *c;
    r->call.ureq = NULL;
    r->call.pend = NULL;
    r->tc = tc;
    r->t = t;
    r->algo = algo;
    r->err = MPI_SUCCESS;
    r->pend.mreq = MPI_REQUEST_NULL;
    reg_add(r);
    return r;
}

/* What a persistent request's tier prepared at init, released (its work is done). */
static void req_unpersist(tlmpi_req_t *r)
{
    if (r->call.preg) {
        tlmpi_tiers[r->t]->unpersist(r->call.preg);
        r->call.preg = NULL;
    }
}

/* The handle goes back to the MPI (completed, then freed: the MPI calls gq_free), r is freed. */
static void req_release(tlmpi_req_t *r)
{
    MPI_Request h = r->handle;

    req_unpersist(r);
    r->releasing = 1;
    reg_remove(r);
    if (!r->mpi_completed) {
        PMPI_Grequest_complete(h);
    }
    PMPI_Request_free(&h);
    free(r);
}

/* ---- progress ------------------------------------------------------------------------------------ */

static const char *req_what(tlmpi_req_t *r);

static double now_s(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static __attribute__((noreturn, noinline)) void req_timed_out(tlmpi_req_t *r, double waited, long limit)
{
    const tlmpi_tier_comm_t *t = r->tc ? &r->tc->tier : NULL;

    tlmpi_error(COLL, "TLMPI_TIMEOUT: rank %d (world rank %d) of communicator #%u (%d ranks): %s, tier %s, not "
                "complete after %.1f s; the limit is %ld s (TLMPI_TIMEOUT); calling MPI_Abort",
                t ? t->rank : -1, tlmpi_g.world_rank, t ? t->id : 0, t ? t->size : 0, req_what(r),
                r->ran ? r->ran->name : "?", waited, limit);
    tlmpi_gpu_abort(r->call.comm);
}

static long req_limit(const tlmpi_req_t *r)
{
    long limit = (long)TLMPI_ENV_I(TIMEOUT);

    if (limit > 0 && r->pend.grace_s > 0) {
        limit += r->pend.grace_s;
    }
    return limit;
}

static void req_check_age(tlmpi_req_t *r)
{
    long limit = req_limit(r);
    double waited;

    if (limit > 0 && (waited = now_s() - r->t0) > (double)limit) {
        req_timed_out(r, waited, limit);
    }
}

/* The work failed after it started: the comm's error handler, once; the request reports the code. */
static void req_fail(tlmpi_req_t *r, tlmpi_status_t st, int mpi_rc)
{
    if (r->pend.marked) {
        tlmpi_gpu_mark_release(&r->pend.mark);
        r->pend.marked = 0;
    }
    if (r->pend.finish) {
        r->pend.finish(&r->pend, 0);
        r->pend.finish = NULL;
    }
    r->err = mpi_rc != MPI_SUCCESS ? mpi_rc : tlmpi_core_error(r->call.comm, st, req_what(r));
    r->done = 1;
}

/* The mark and the MPI request completed: the tier's last steps and checks. */
static void req_finish(tlmpi_req_t *r)
{
    if (r->pend.finish) {
        tlmpi_status_t st = r->pend.finish(&r->pend, 1);

        r->pend.finish = NULL;
        if (st != TLMPI_OK) {
            req_fail(r, st, MPI_SUCCESS);
            return;
        }
    }
    if (r->ran && r->ran->complete && r->tc) {
        r->ran->complete(&r->tc->tier, &r->call, r->algo);
    }
    r->done = 1;
}

/* 1 when r's work is done (or r is inactive), 0 when not yet; never blocks. */
static int req_poll_body(tlmpi_req_t *r);
static int req_poll(tlmpi_req_t *r)
{
    int done;

    if (!r->active || r->done) {
        return 1;
    }
    r->in_poll = 1;
    done = req_poll_body(r);
    r->in_poll = 0;
    return done;
}

static int req_poll_body(tlmpi_req_t *r)
{
    if (r->pend.marked) {
        int t = tlmpi_gpu_mark_test(&r->pend.mark);

        if (t == 0) {
            req_check_age(r);
            return 0;
        }
        tlmpi_gpu_mark_release(&r->pend.mark);
        r->pend.marked = 0;
        if (t < 0) {
            tlmpi_error(CUDA, "%s: the device work failed (CUDA error %d)", req_what(r), -t);
            req_fail(r, TLMPI_ERR_CUDA, MPI_SUCCESS);
            return 1;
        }
    }
    if (r->pend.mreq != MPI_REQUEST_NULL) {
        int flag = 0, rc = PMPI_Test(&r->pend.mreq, &flag, MPI_STATUS_IGNORE);

        if (rc != MPI_SUCCESS) {
            req_fail(r, TLMPI_ERR_MPI, rc);
            return 1;
        }
        if (!flag) {
            req_check_age(r);
            return 0;
        }
    }
    req_finish(r);
    return 1;
}

/* Wait (bounded) until r's work is done. */
static void req_wait_done(tlmpi_req_t *r)
{
    unsigned spins = 0;

    if (!r->active || r->done) {
        return;
    }
    if (r->pend.marked) {
        const tlmpi_tier_comm_t *t = r->tc ? &r->tc->tier : NULL;
        tlmpi_wait_who_t who = { r->call.comm, t ? t->id : 0, r->call.coll, r->ran ? r->ran->name : "?" };
        int e = tlmpi_gpu_mark_wait(&r->pend.mark, &who, req_what(r), r->pend.grace_s);

        tlmpi_gpu_mark_release(&r->pend.mark);
        r->pend.marked = 0;
        if (e != 0) {
            tlmpi_error(CUDA, "%s: waiting for the device work failed (CUDA error %d)", req_what(r), e);
            req_fail(r, TLMPI_ERR_CUDA, MPI_SUCCESS);
            return;
        }
    }
    while (!req_poll(r)) {
        backoff(&spins);
    }
}

/* Requests the application freed before they were done: completed and released when done; those of
 * comm tc (NULL: none) are waited for. */
static void detached_progress_comm(const tlmpi_comm_t *tc)
{
    tlmpi_req_t *list[64], *r;
    int n = 0, i;

    if (TLMPI_LIKELY(__atomic_load_n(&tlmpi_req_detached, __ATOMIC_RELAXED) == 0)) {
        return;
    }
    if (tc) {
        pthread_mutex_lock(&detach_lock);
    } else if (pthread_mutex_trylock(&detach_lock) != 0) {
        return;
    }
    reg_lock();
    for (r = req_all; r && n < 64; r = r->next) {
        if (r->freed) {
            list[n++] = r;
        }
    }
    reg_unlock();
    for (i = 0; i < n; i++) {
        if (tc && list[i]->tc == tc) {
            req_wait_done(list[i]);
        }
        if (req_poll(list[i])) {
            req_release(list[i]);
        }
    }
    pthread_mutex_unlock(&detach_lock);
}

void tlmpi_req_order_slow(tlmpi_comm_t *tc)
{
    detached_progress_comm(tc);
}

/* ---- starting ------------------------------------------------------------------------------------ */

static const char *form_call_name(const tlmpi_req_t *r)
{
    static const char *const nb[TLMPI_COLL_COUNT] = { "MPI_Iallgather", "MPI_Ireduce_scatter_block",
                                                      "MPI_Iallreduce", "MPI_Iallgatherv",
                                                      "MPI_Ireduce_scatter", "MPI_Ibcast",
                                                      "MPI_Ireduce", "MPI_Ialltoall" };
    static const char *const ps[TLMPI_COLL_COUNT] = { "MPI_Allgather_init", "MPI_Reduce_scatter_block_init",
                                                      "MPI_Allreduce_init", "MPI_Allgatherv_init",
                                                      "MPI_Reduce_scatter_init", "MPI_Bcast_init",
                                                      "MPI_Reduce_init", "MPI_Alltoall_init" };

    return (r->persistent ? ps : nb)[r->call.coll];
}

/* "request #N (MPI_Iallreduce, 8 bytes): the node kernel", for diagnostics (written on first use). */
static const char *req_what(tlmpi_req_t *r)
{
    if (!r->what[0]) {
        snprintf(r->what, sizeof(r->what), "request #%lu (%s, %zu bytes)%s%s", r->id, form_call_name(r),
                 r->call.msg_bytes, r->pend.what ? ": " : "", r->pend.what ? r->pend.what : "");
    }
    return r->what;
}

/* Start r's call on its tier. MPI_SUCCESS, or the error code (nothing outstanding then). */
static int req_launch(tlmpi_req_t *r)
{
    const tlmpi_tier_t *tier = NULL;
    tlmpi_status_t st;
    int mpi_rc = MPI_SUCCESS;

    tlmpi_req_order(r->tc); /* the comm's freed requests first */
    memset(&r->pend, 0, sizeof(r->pend));
    r->pend.mreq = MPI_REQUEST_NULL;
    r->pend.tc = &r->tc->tier;
    r->call.pend = &r->pend;
    r->active = 1;
    r->done = 0;
    r->err = MPI_SUCCESS;
    r->ran = tlmpi_tiers[r->t];
    r->what[0] = '\0'; /* written when a diagnostic needs it (req_what) */
    r->t0 = now_s();
    st = tlmpi_comm_run(r->tc, &r->call, r->t, r->algo, 1, &tier, &mpi_rc);
    r->call.pend = NULL;
    r->ran = tier;
    if (TLMPI_LIKELY(st == TLMPI_OK)) {
        tlmpi_stat_form_add(r->call.coll, tier->label, r->persistent ? TLMPI_FORM_PERSISTENT : TLMPI_FORM_NONBLOCKING,
                            r->call.msg_bytes);
        if (!r->pend.marked && r->pend.mreq == MPI_REQUEST_NULL) {
            req_finish(r); /* nothing outstanding: it completed inside its start */
        }
        return MPI_SUCCESS;
    }
    /* failed: nothing may still run on the buffers */
    if (r->pend.marked) {
        tlmpi_wait_who_t who = { r->call.comm, r->tc->tier.id, r->call.coll, tier ? tier->name : "?" };

        tlmpi_gpu_mark_wait(&r->pend.mark, &who, req_what(r), r->pend.grace_s);
        tlmpi_gpu_mark_release(&r->pend.mark);
        r->pend.marked = 0;
    }
    if (r->pend.finish) {
        r->pend.finish(&r->pend, 0);
        r->pend.finish = NULL;
    }
    r->active = 0;
    if (st == TLMPI_ERR_MPI && mpi_rc != MPI_SUCCESS) {
        return mpi_rc; /* the MPI's own error (its handler already ran) */
    }
    return tlmpi_core_error(r->call.comm, st, form_call_name(r));
}

int tlmpi_req_istart(tlmpi_comm_t *tc, tlmpi_call_t *c, int t, int algo)
{
    MPI_Request *ureq = c->ureq;
    tlmpi_req_t *r = req_new(tc, c, t, algo, 0);
    int rc;

    if (!r) {
        return tlmpi_core_error(c->comm, TLMPI_ERR_NO_MEMORY, tlmpi_coll_name(c->coll));
    }
    rc = req_launch(r);
    if (rc != MPI_SUCCESS) {
        req_release(r);
        *ureq = MPI_REQUEST_NULL;
        return rc;
    }
    *ureq = r->handle;
    return MPI_SUCCESS;
}

int tlmpi_req_persistent(tlmpi_comm_t *tc, tlmpi_call_t *c, int t, int algo, void *kept)
{
    tlmpi_req_t *r = req_new(tc, c, t, algo, 1);
    const tlmpi_tier_t *tier = tlmpi_tiers[t];
    void *preg = kept;

    /* the tier's preparation is collective: every rank takes part, also one whose request failed */
    if (!preg && tier->persist) {
        preg = tier->persist(&tc->tier, c, algo);
    }
    if (!r) {
        if (preg) {
            tier->unpersist(preg);
        }
        return tlmpi_core_error(c->comm, TLMPI_ERR_NO_MEMORY, tlmpi_coll_name(c->coll));
    }
    r->call.preg = preg;
    r->call.preg_tier = t;
    *c->ureq = r->handle;
    return MPI_SUCCESS;
}

/* ---- reporting ----------------------------------------------------------------------------------- */

/* A completion call returns r (done or inactive): the status, then a non-blocking request is released
 * (*h = MPI_REQUEST_NULL) and a persistent one becomes inactive. multi: MPI_ERROR is set too. */
static int req_report(tlmpi_req_t *r, MPI_Request *h, MPI_Status *st, int multi)
{
    int err = r->active ? r->err : MPI_SUCCESS;

    status_empty(st);
    if (multi && st != MPI_STATUS_IGNORE) {
        st->MPI_ERROR = err;
    }
    if (r->persistent) {
        r->active = 0;
        r->done = 0;
    } else {
        req_release(r);
        *h = MPI_REQUEST_NULL;
    }
    return err;
}

/* An entry that counts as a null request: an inactive persistent one. */
static inline int req_inactive(const tlmpi_req_t *r)
{
    return r->persistent && !r->active;
}

/* ---- arrays ------------------------------------------------------------------------------------- */

#define ARR_STACK 32
typedef struct {
    tlmpi_req_t *sr[ARR_STACK], **r; /* tlmpi's entry at each index (NULL: the MPI's) */
    MPI_Request sc[ARR_STACK], *copy; /* the array the MPI sees */
    int ours;                          /* tlmpi entries */
} arr_t;

static void arr_done(arr_t *a)
{
    if (a->r != a->sr) {
        free(a->r);
        free(a->copy);
    }
}

/* tlmpi's entries of rs, and the copy the MPI gets; the count of tlmpi's entries (0 or -1: nothing
 * was kept, the caller calls the MPI with rs unchanged; else arr_done when finished). */
static int arr_scan(arr_t *a, int n, const MPI_Request *rs)
{
    int i;

    a->r = a->sr;
    a->copy = a->sc;
    a->ours = 0;
    if (n > ARR_STACK) {
        a->r = malloc((size_t)n * sizeof(*a->r));
        a->copy = malloc((size_t)n * sizeof(*a->copy));
        if (!a->r || !a->copy) {
            free(a->r);
            free(a->copy);
            a->r = NULL;
            a->copy = NULL;
            return -1;
        }
    }
    for (i = 0; i < n; i++) {
        a->r[i] = req_lookup(rs[i]);
        a->copy[i] = a->r[i] ? MPI_REQUEST_NULL : rs[i];
        a->ours += a->r[i] != NULL;
    }
    if (!a->ours) {
        arr_done(a); /* the caller hands the array to the MPI as it is */
    }
    return a->ours;
}

static void arr_copy_back(const arr_t *a, int n, MPI_Request *rs)
{
    int i;

    for (i = 0; i < n; i++) {
        if (!a->r[i]) {
            rs[i] = a->copy[i];
        }
    }
}

/* ---- the completion calls ------------------------------------------------------------------------ */

int tlmpi_req_wait(MPI_Request *h, MPI_Status *st)
{
    tlmpi_req_t *r = req_lookup(*h);

    detached_progress_comm(NULL);
    if (!r) {
        return tlmpi_next.wait(h, st);
    }
    req_wait_done(r);
    return req_report(r, h, st, 0);
}

int tlmpi_req_test(MPI_Request *h, int *flag, MPI_Status *st)
{
    tlmpi_req_t *r = req_lookup(*h);

    detached_progress_comm(NULL);
    if (!r) {
        return tlmpi_next.test(h, flag, st);
    }
    if (!req_poll(r)) {
        *flag = 0;
        return MPI_SUCCESS;
    }
    *flag = 1;
    return req_report(r, h, st, 0);
}

int tlmpi_req_get_status(MPI_Request h, int *flag, MPI_Status *st)
{
    tlmpi_req_t *r = req_lookup(h);

    if (!r) {
        return tlmpi_next.request_get_status(h, flag, st);
    }
    *flag = req_poll(r);
    if (*flag) {
        status_empty(st);
    }
    return MPI_SUCCESS;
}

/* MPI_ERROR of the multi-completion calls: every completed entry's status says how it ended (the
 * MPI's entries too, which MPICH leaves unset in Testall and Waitsome), and MPI_ERR_IN_STATUS is
 * returned when one of tlmpi's failed. n statuses; idx: their indices (Waitsome / Testsome) or NULL. */
static int multi_rc(int rc, int ours_err, int n, const arr_t *a, const int *idx, MPI_Status *sts)
{
    int i;

    if (rc != MPI_SUCCESS && rc != MPI_ERR_IN_STATUS) {
        return rc;
    }
    if (rc == MPI_SUCCESS && sts != MPI_STATUSES_IGNORE) {
        for (i = 0; i < n; i++) {
            int j = idx ? idx[i] : i;

            if (!a->r[j]) {
                sts[i].MPI_ERROR = MPI_SUCCESS;
            }
        }
    }
    return ours_err ? MPI_ERR_IN_STATUS : rc;
}

int tlmpi_req_waitall(int n, MPI_Request *rs, MPI_Status *sts)
{
    arr_t a;
    int i, rc, err = 0;

    detached_progress_comm(NULL);
    if (arr_scan(&a, n, rs) <= 0) {
        return tlmpi_next.waitall(n, rs, sts);
    }
    for (i = 0; i < n; i++) {
        if (a.r[i]) {
            req_wait_done(a.r[i]);
        }
    }
    rc = PMPI_Waitall(n, a.copy, sts);
    arr_copy_back(&a, n, rs);
    for (i = 0; i < n; i++) {
        if (a.r[i]) {
            err |= req_report(a.r[i], &rs[i], sts == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : &sts[i], 1) != MPI_SUCCESS;
        }
    }
    rc = multi_rc(rc, err, n, &a, NULL, sts);
    arr_done(&a);
    return rc;
}

int tlmpi_req_testall(int n, MPI_Request *rs, int *flag, MPI_Status *sts)
{
    arr_t a;
    int i, rc = MPI_SUCCESS, err = 0, all = 1;

    detached_progress_comm(NULL);
    if (arr_scan(&a, n, rs) <= 0) {
        return tlmpi_next.testall(n, rs, flag, sts);
    }
    for (i = 0; i < n; i++) {
        if (a.r[i] && !req_poll(a.r[i])) {
            all = 0;
        }
    }
    *flag = 0;
    if (all) {
        /* the MPI's entries are completed (and freed) only together with tlmpi's */
        rc = PMPI_Testall(n, a.copy, flag, sts);
        if (*flag) {
            arr_copy_back(&a, n, rs);
            for (i = 0; i < n; i++) {
                if (a.r[i]) {
                    err |= req_report(a.r[i], &rs[i], sts == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : &sts[i], 1) !=
                           MPI_SUCCESS;
                }
            }
            rc = multi_rc(rc, err, n, &a, NULL, sts);
        }
    }
    arr_done(&a);
    return rc;
}

/* Testany's body; *active_p: tlmpi entries still active (so an "all null" answer of the MPI is not
 * the call's). */
static int any_round(int n, MPI_Request *rs, arr_t *a, int *idx, int *flag, MPI_Status *st, int *active_p)
{
    int i, rc, active = 0;

    for (i = 0; i < n; i++) {
        tlmpi_req_t *r = a->r[i];

        if (!r || req_inactive(r)) {
            continue;
        }
        active++;
        if (req_poll(r)) {
            *idx = i;
            *flag = 1;
            *active_p = active;
            return req_report(r, &rs[i], st, 0);
        }
    }
    *active_p = active;
    rc = PMPI_Testany(n, a->copy, idx, flag, st);
    if (*flag && *idx != MPI_UNDEFINED) {
        rs[*idx] = a->copy[*idx];
    } else if (*flag && active) {
        *flag = 0; /* the MPI's entries are all null, tlmpi's are not done */
    }
    return rc;
}

int tlmpi_req_testany(int n, MPI_Request *rs, int *idx, int *flag, MPI_Status *st)
{
    arr_t a;
    int rc, active;

    detached_progress_comm(NULL);
    if (arr_scan(&a, n, rs) <= 0) {
        return tlmpi_next.testany(n, rs, idx, flag, st);
    }
    rc = any_round(n, rs, &a, idx, flag, st, &active);
    arr_done(&a);
    return rc;
}

int tlmpi_req_waitany(int n, MPI_Request *rs, int *idx, MPI_Status *st)
{
    arr_t a;
    int rc, active, flag = 0;
    unsigned spins = 0;

    detached_progress_comm(NULL);
    if (arr_scan(&a, n, rs) <= 0) {
        return tlmpi_next.waitany(n, rs, idx, st);
    }
    for (;;) {
        rc = any_round(n, rs, &a, idx, &flag, st, &active);
        if (rc != MPI_SUCCESS || flag) {
            break;
        }
        if (!active) {
            /* tlmpi's entries are all inactive: the MPI's own wait */
            rc = PMPI_Waitany(n, a.copy, idx, st);
            if (*idx != MPI_UNDEFINED) {
                rs[*idx] = a.copy[*idx];
            }
            break;
        }
        backoff(&spins);
    }
    arr_done(&a);
    return rc;
}

static int some(int n, MPI_Request *rs, int *outc, int *idx, MPI_Status *sts, int wait)
{
    arr_t a;
    int i, rc, oc, active, ready, err;
    unsigned spins = 0;

    detached_progress_comm(NULL);
    if (arr_scan(&a, n, rs) <= 0) {
        return wait ? tlmpi_next.waitsome(n, rs, outc, idx, sts) : tlmpi_next.testsome(n, rs, outc, idx, sts);
    }
    for (;;) {
        active = ready = err = 0;
        for (i = 0; i < n; i++) {
            if (a.r[i] && !req_inactive(a.r[i])) {
                active++;
                ready += req_poll(a.r[i]);
            }
        }
        oc = 0;
        if (wait && !active) {
            rc = PMPI_Waitsome(n, a.copy, &oc, idx, sts);
        } else {
            rc = PMPI_Testsome(n, a.copy, &oc, idx, sts);
        }
        if (oc == MPI_UNDEFINED) {
            oc = 0;
            if (!active) {
                *outc = MPI_UNDEFINED;
                break;
            }
        }
        for (i = 0; i < oc; i++) {
            rs[idx[i]] = a.copy[idx[i]];
        }
        if (ready) {
            for (i = 0; i < n; i++) {
                tlmpi_req_t *r = a.r[i];

                if (r && !req_inactive(r) && r->done) {
                    idx[oc] = i;
                    err |= req_report(r, &rs[i], sts == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : &sts[oc], 1) !=
                           MPI_SUCCESS;
                    oc++;
                }
            }
        }
        *outc = oc;
        if (oc > 0 || !wait || rc != MPI_SUCCESS) {
            rc = multi_rc(rc, err, oc, &a, idx, sts);
            break;
        }
        backoff(&spins);
    }
    arr_done(&a);
    return rc;
}

int tlmpi_req_waitsome(int n, MPI_Request *rs, int *outc, int *idx, MPI_Status *sts)
{
    return some(n, rs, outc, idx, sts, 1);
}

int tlmpi_req_testsome(int n, MPI_Request *rs, int *outc, int *idx, MPI_Status *sts)
{
    return some(n, rs, outc, idx, sts, 0);
}

int tlmpi_req_free(MPI_Request *h)
{
    tlmpi_req_t *r = req_lookup(*h);

    if (!r) {
        return tlmpi_next.request_free(h);
    }
    *h = MPI_REQUEST_NULL;
    if (!r->active || req_poll(r)) {
        req_release(r);
        return MPI_SUCCESS;
    }
    /* still running: tlmpi completes it on its own and then releases it */
    reg_lock();
    r->freed = 1;
    __atomic_add_fetch(&tlmpi_req_detached, 1, __ATOMIC_RELAXED);
    reg_unlock();
    return MPI_SUCCESS;
}

int tlmpi_req_cancel(MPI_Request *h)
{
    tlmpi_req_t *r = req_lookup(*h);

    if (!r) {
        return tlmpi_next.cancel(h);
    }
    /* the standard: cancelling a request of a collective is erroneous */
    tlmpi_error(COLL, "MPI_Cancel on %s: collective requests cannot be cancelled", req_what(r));
    return PMPI_Comm_call_errhandler(r->call.comm, MPI_ERR_REQUEST), MPI_ERR_REQUEST;
}

static int start_one(tlmpi_req_t *r)
{
    if (!r->persistent || r->active) {
        tlmpi_error(COLL, "MPI_Start on %s: %s", req_what(r), r->persistent ? "it is still active" : "not persistent");
        return PMPI_Comm_call_errhandler(r->call.comm, MPI_ERR_REQUEST), MPI_ERR_REQUEST;
    }
    if (!r->tc) {
        tlmpi_error(COLL, "MPI_Start on %s: its communicator was freed", req_what(r));
        return PMPI_Comm_call_errhandler(MPI_COMM_WORLD, MPI_ERR_COMM), MPI_ERR_COMM;
    }
    return req_launch(r);
}

int tlmpi_req_start(MPI_Request *h)
{
    tlmpi_req_t *r = req_lookup(*h);

    return r ? start_one(r) : tlmpi_next.start(h);
}

int tlmpi_req_startall(int n, MPI_Request *rs)
{
    arr_t a;
    int i, rc = MPI_SUCCESS;

    if (arr_scan(&a, n, rs) <= 0) {
        return tlmpi_next.startall(n, rs);
    }
    for (i = 0; i < n && rc == MPI_SUCCESS; i++) {
        rc = a.r[i] ? start_one(a.r[i]) : PMPI_Start(&rs[i]);
    }
    arr_done(&a);
    return rc;
}

/* ---- teardown ------------------------------------------------------------------------------------ */

/* Every request matching pred, collected (the registry lock is not held while they are waited for). */
static int collect(tlmpi_req_t ***out, const tlmpi_comm_t *tc)
{
    tlmpi_req_t *r, **v = NULL;
    int n = 0, cap = 0;

    reg_lock();
    for (r = req_all; r; r = r->next) {
        if (tc && r->tc != tc) {
            continue;
        }
        if (n == cap) {
            tlmpi_req_t **nv = realloc(v, (size_t)(cap = cap ? 2 * cap : 16) * sizeof(*v));

            if (!nv) {
                break;
            }
            v = nv;
        }
        v[n++] = r;
    }
    reg_unlock();
    *out = v;
    return n;
}

void tlmpi_req_comm_gone(tlmpi_comm_t *tc)
{
    tlmpi_req_t **v;
    int i, n;

    if (!tlmpi_req_any()) {
        return;
    }
    n = collect(&v, tc);
    for (i = 0; i < n; i++) {
        req_wait_done(v[i]);
        req_unpersist(v[i]); /* its starts fail from now on */
        v[i]->tc = NULL;
        if (v[i]->freed) {
            req_release(v[i]);
        }
    }
    free(v);
}

void tlmpi_req_finalize(void)
{
    tlmpi_req_t **v;
    int i, n;

    if (!tlmpi_req_any()) {
        return;
    }
    n = collect(&v, NULL);
    for (i = 0; i < n; i++) {
        req_wait_done(v[i]);
        req_release(v[i]);
    }
    free(v);
}
