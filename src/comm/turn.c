/*
 * turn: the GPU turn of a process under MPI_THREAD_MULTIPLE (see turn.h for why and the protocol).
 */
#include "config.h"
#include "turn.h"
#include "env.h"
#include "fault.h"
#include "global.h"
#include "log.h"
#include "tier.h"

#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

static pthread_mutex_t turn_mu = PTHREAD_MUTEX_INITIALIZER;
static __thread int turn_depth;  /* this thread's takes (nested ones only count) */
static unsigned turn_holder_id;  /* the communicator holding the turn, for the diagnostic */
static int turn_holder_coll = -1;
static unsigned long turn_lost;  /* rounds lost to collisions */
static unsigned long turn_taken; /* turns taken (outermost takes) */

/* The communicators of this process waiting for the turn (arrived, not yet holding it), by
 * priority: a process offers the turn only to its highest waiting one. A waiter's priority is its
 * age (rounds lost, in eighths, at most 255) above its comm's uid: the same on every rank of the comm
 * (the rounds are collective), so the highest waiting communicator of all is offered the turn by
 * every one of its processes and wins its next round (collisions end without relying on chance),
 * and a comm that keeps losing to busier ones ages past them (no starvation). */
#define TURN_MAX_WAITERS 64
static pthread_mutex_t wait_mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t waiters[TURN_MAX_WAITERS]; /* 0: a free slot */

static uint64_t turn_prio(uint64_t uid, unsigned round)
{
    uint64_t age = round / 8 < 255 ? round / 8 : 255;

    return age << 56 | (uid & ((1ull << 56) - 1)); /* never 0: a uid's id is at least 1 */
}

/* Set this waiter's priority (*slot: its table slot, found on the first call; -1 when the table is
 * full: it is then offered the turn like the first) and say whether no waiting communicator of this
 * process has a higher one. */
static int waiter_offer(int *slot, uint64_t prio)
{
    int i, first = 1;

    pthread_mutex_lock(&wait_mu);
    if (*slot < 0) {
        for (i = 0; i < TURN_MAX_WAITERS && waiters[i]; i++) {
        }
        *slot = i < TURN_MAX_WAITERS ? i : -1;
    }
    if (*slot >= 0) {
        waiters[*slot] = prio;
    }
    for (i = 0; i < TURN_MAX_WAITERS; i++) {
        if (waiters[i] > prio) {
            first = 0;
            break;
        }
    }
    pthread_mutex_unlock(&wait_mu);
    return first;
}

static void waiter_remove(int slot)
{
    if (slot >= 0) {
        pthread_mutex_lock(&wait_mu);
        waiters[slot] = 0;
        pthread_mutex_unlock(&wait_mu);
    }
}

int tlmpi_turn_wanted(void)
{
    int64_t v = TLMPI_ENV_I(GPU_TURNS);

    return v == TLMPI_TRI_YES || (v == TLMPI_TRI_AUTO && tlmpi_g.thread_level == MPI_THREAD_MULTIPLE);
}

void tlmpi_turn_counts(unsigned long *taken, unsigned long *lost)
{
    *taken = __atomic_load_n(&turn_taken, __ATOMIC_RELAXED);
    *lost = __atomic_load_n(&turn_lost, __ATOMIC_RELAXED);
}

static double now_s(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* xorshift64*, per thread, seeded from the clock, the thread and the world rank */
static unsigned next_random(void)
{
    static __thread uint64_t s;

    if (!s) {
        s = (uint64_t)(now_s() * 1e9) ^ ((uint64_t)(uintptr_t)&s << 16) ^ ((uint64_t)(unsigned)tlmpi_g.world_rank << 48);
        s |= 1;
    }
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    return (unsigned)((s * 2685821657736338717ull) >> 33);
}

static __attribute__((noreturn, noinline)) void turn_timeout(MPI_Comm comm, const tlmpi_wait_who_t *who, double waited,
                                                              long limit, unsigned rounds)
{
    int rank = -1, size = 0;
    unsigned holder = __atomic_load_n(&turn_holder_id, __ATOMIC_RELAXED);
    int hcoll = __atomic_load_n(&turn_holder_coll, __ATOMIC_RELAXED);
    char held[96] = "free";

    PMPI_Comm_rank(comm, &rank);
    PMPI_Comm_size(comm, &size);
    if (hcoll >= 0) {
        snprintf(held, sizeof(held), "held by communicator #%u in %s", holder, tlmpi_coll_name((tlmpi_coll_t)hcoll));
    }
    tlmpi_error(COLL, "TLMPI_TIMEOUT: rank %d (world rank %d) of communicator #%u (%d ranks) waited %.1f s in %s on "
                "tier %s for the GPU turn (TLMPI_GPU_TURNS): %u rounds, in none of which every rank got its "
                "process's turn (this process's turn: %s); the limit is %ld s (TLMPI_TIMEOUT); calling MPI_Abort",
                rank, tlmpi_g.world_rank, who ? who->comm_id : 0, size, waited,
                who ? tlmpi_coll_name(who->coll) : "?", who && who->tier ? who->tier : "?", rounds, held, limit);
    tlmpi_gpu_abort(comm);
}

int tlmpi_turn_take(MPI_Comm comm, uint64_t uid, const tlmpi_wait_who_t *who)
{
    const long limit = (long)TLMPI_ENV_I(TIMEOUT);
    const int stuck = tlmpi_fault_hit(TURN_STUCK);
    const double t0 = now_s();
    unsigned round;
    int rc, slot = -1;

    if (turn_depth > 0) {
        turn_depth++;
        return MPI_SUCCESS;
    }
    /* 1. every rank has arrived: from here on each round below only waits for ranks that are in it */
    rc = PMPI_Barrier(comm);
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    for (round = 0;; round++) {
        const uint64_t prio = turn_prio(uid, round);
        /* {got (MIN: all got it), random back-off (MIN: the same for all)} */
        int v[2], got;

        got = waiter_offer(&slot, prio) && !stuck && pthread_mutex_trylock(&turn_mu) == 0;

        v[0] = got;
        v[1] = (int)(next_random() & 0x7fffffff);
        rc = PMPI_Allreduce(MPI_IN_PLACE, v, 2, MPI_INT, MPI_MIN, comm);
        if (rc != MPI_SUCCESS || v[0]) {
            waiter_remove(slot);
            if (rc != MPI_SUCCESS) {
                if (got) {
                    pthread_mutex_unlock(&turn_mu);
                }
                return rc;
            }
            turn_depth = 1;
            __atomic_add_fetch(&turn_taken, 1, __ATOMIC_RELAXED);
            __atomic_store_n(&turn_holder_id, who ? who->comm_id : 0, __ATOMIC_RELAXED);
            __atomic_store_n(&turn_holder_coll, who ? (int)who->coll : 0, __ATOMIC_RELAXED);
            return MPI_SUCCESS;
        }
        if (got) {
            pthread_mutex_unlock(&turn_mu);
        }
        __atomic_add_fetch(&turn_lost, 1, __ATOMIC_RELAXED);
        if (limit > 0 && now_s() - t0 > (double)limit) {
            turn_timeout(comm, who, now_s() - t0, limit, round + 1);
        }
        /* the same sleep on every rank of comm: up to 2^round microseconds (at most 256), so that
         * the rounds of communicators colliding in a process fall at different times */
        {
            unsigned cap = round < 8 ? 1u << round : 256u;
            unsigned us = (unsigned)v[1] % (cap + 1);
            struct timespec ts = { 0, (long)us * 1000L };

            if (us == 0) {
                sched_yield();
            } else {
                nanosleep(&ts, NULL);
            }
        }
    }
}

void tlmpi_turn_release(void)
{
    if (turn_depth <= 0) {
        return;
    }
    if (--turn_depth == 0) {
        __atomic_store_n(&turn_holder_coll, -1, __ATOMIC_RELAXED);
        pthread_mutex_unlock(&turn_mu);
    }
}
