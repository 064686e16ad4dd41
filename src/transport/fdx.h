/*
 * fdx: file descriptors passed between the processes of one host, for memory that CUDA shares only
 * through a descriptor (a cuMem allocation exported as a POSIX file descriptor: cumemshare.h).
 *
 * Collective over a communicator whose ranks are all on this host (every rank calls it; all end
 * alike): each rank listens on an abstract unix socket named after a key rank 0 makes and broadcasts
 * (pid, a counter) and its rank; once every rank listens (one PMPI_Allreduce), each connects to every
 * other and sends one message, its rank with its descriptor attached (SCM_RIGHTS; the listener's
 * backlog holds the connection until it is accepted), then accepts one connection from every other
 * rank and takes the descriptor it carries, placed by the sender's rank, not by arrival order. Every
 * wait is bounded by TLMPI_TIMEOUT (poll); the outcome is agreed (one PMPI_Allreduce). Abstract
 * names leave nothing in the file system, and processes of another network namespace cannot reach
 * them (they are on another host as far as this is concerned).
 */
#ifndef TLMPI_FDX_H
#define TLMPI_FDX_H

#include <mpi.h>
#include <stddef.h>

/* fds[q] (size entries): rank q's descriptor as received here (fds[rank]: -1; the caller keeps its
 * own). 0, or -1 with why on every rank (no descriptor left open). The descriptors received are the
 * caller's to close. */
int tlmpi_fdx_allgather(MPI_Comm comm, int rank, int size, int fd, int *fds, char *why, size_t len);

#endif
