/*
 * fdx: file descriptors passed between the processes of one host, for memory that CUDA shares only
 * through a descriptor (a cuMem allocation exported as a POSIX file descriptor: cumemshare.h).
 *
 * Collective over a communicator whose ranks are all on this host (every rank calls it; all end
 * alike). One PMPI_Allgather tells every rank who the others are as the kernel names a socket's
 * peer (process id, effective uid, pid namespace) and the random part of each rank's socket name
 * (16 bytes of getrandom); the ranks must share one uid and one pid namespace. Each rank listens on an
 * abstract unix socket of that name; once every rank listens (one PMPI_Allreduce), each connects to
 * every other, checks that the socket is held by that rank's process (SO_PEERCRED), and sends one
 * message, its rank with its descriptor attached (SCM_RIGHTS). Each rank accepts, all at once with
 * its own sends (non-blocking sockets, one poll), and keeps a connection only when its kernel-reported
 * credentials (SO_PEERCRED: the connecting process) are those of a rank whose descriptor is still owed:
 * the ranks' uid and that rank's pid; the message must then claim that rank. Any other connection is
 * closed unread, with one info line naming its pid and uid (the first 8 of an exchange; then a count),
 * and the exchange goes on: a stranger neither stalls it nor is taken for a rank. Every wait is bounded
 * by TLMPI_TIMEOUT; the outcome is agreed (one PMPI_Allreduce). Abstract names leave nothing in the
 * file system and have no permissions (any local process can connect: hence the credential check);
 * processes of another network namespace cannot reach them (they are on another host as far as this
 * is concerned). docs/DESIGN.md ("Trust on a shared node") says what another process of the node can
 * and cannot do.
 */
#ifndef TLMPI_FDX_H
#define TLMPI_FDX_H

#include <mpi.h>
#include <stddef.h>

#define TLMPI_FDX_MAX_RANKS 64 /* ranks of one exchange, at most */
#define TLMPI_FDX_NAME_MAX 48  /* an abstract socket name here, its terminating NUL included */

/* fds[q] (size entries): rank q's descriptor as received here (fds[rank]: -1; the caller keeps its
 * own). 0, or -1 with why on every rank (no descriptor left open). The descriptors received are the
 * caller's to close. */
int tlmpi_fdx_allgather(MPI_Comm comm, int rank, int size, int fd, int *fds, char *why, size_t len);

/* Tests only (NULL; libtlmpi does not export it): where set, called on every rank once every rank
 * listens, before this rank sends (sent 0) and once it has sent to every peer (sent 1), with the
 * abstract names of the ranks' sockets (names[q]: rank q's, without the leading NUL). The tests hold
 * a rank's sends back with it and hand the names to the processes that play strangers. */
extern void (*tlmpi_fdx_test_hook)(int rank, int size, const char (*names)[TLMPI_FDX_NAME_MAX], int sent);

#endif
