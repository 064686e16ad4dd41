/*
 * turn: the GPU turn. Under MPI_THREAD_MULTIPLE, a process runs the device work of at most one
 * communicator at a time on the tiers whose GPU kernels wait for their peers (node, nccl, hier),
 * and only once every rank of that communicator holds its own process's turn for it.
 *
 * Why. A kernel that spins until its peers' kernels arrive holds its hardware work queue. Two such
 * collectives of one process on different communicators (threads), or one of them and the
 * application's own legacy-stream work, can then wait for each other across ranks: rank A's kernel
 * of comm X sits behind its kernel of comm Y while rank B's sits the other way round (seen on one
 * H200, 2 and 4 ranks x 4 threads, within the first calls; NCCL documents the same limit for its
 * communicators). The turn removes the cycle: every spinning collective that runs has all its ranks'
 * turns, so nothing else of those processes spins, and it finishes; work queued behind it then
 * runs too.
 *
 * Protocol (collective over the communicator, all ranks inside the same call):
 *   1. PMPI_Barrier: every rank has arrived (no turn is held while waiting for a rank that has not);
 *   2. rounds: each rank tries the process's turn without blocking (trylock), where no communicator
 *      of higher priority waits for it in this process (priority: rounds lost, then the uid; the
 *      same on every rank of a communicator), and one
 *      PMPI_Allreduce(MIN) tells all whether all got it. All got it: go. Else those that got it give
 *      it back, and all sleep the same agreed random time (growing with the rounds) and try again.
 * A rank never blocks while holding the turn except in a round among ranks that all arrived (which
 * completes) or in the collective itself (whose peers all hold their turns), so there is no
 * deadlock; the highest waiting communicator of all is offered the turn by all its processes and
 * wins its next round, so collisions end (no livelock), and a communicator that keeps losing ages
 * past the others (no starvation); the back-off spreads the rounds. The
 * whole take is bounded by TLMPI_TIMEOUT (diagnostic, then MPI_Abort), like every wait of tlmpi.
 * Nested takes by the thread holding the turn (a hier call's steps, a plan built inside a plan)
 * only count. Not used below MPI_THREAD_MULTIPLE, nor with TLMPI_GPU_TURNS=0 (for applications
 * that never run device collectives from two threads at once).
 */
#ifndef TLMPI_TURN_H
#define TLMPI_TURN_H

#include "stream.h"
#include <mpi.h>
#include <stdint.h>

/* Whether this rank asks for turns (agreed by OR at plan build: TLMPI_CAP_TURNS). */
int tlmpi_turn_wanted(void);
/* Take the turn for a call of communicator comm (collective over comm); uid is the same on every
 * rank of comm and differs from every other communicator's. Returns MPI_SUCCESS or the
 * MPI error of the barrier / allreduce (the turn is then not held); aborts past TLMPI_TIMEOUT. */
int tlmpi_turn_take(MPI_Comm comm, uint64_t prio, const tlmpi_wait_who_t *who);
/* Give it back (after the call's device work completed). */
void tlmpi_turn_release(void);
/* Turns this process took, and rounds it lost to collisions (logged at finalize, info level). */
void tlmpi_turn_counts(unsigned long *taken, unsigned long *lost);

#endif
