/*
 * fdx: descriptors passed between the processes of one host (see fdx.h).
 */
#include "config.h"
#include "fdx.h"
#include "env.h"
#include "fault.h"
#include "xport.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* What a sender puts in its one message (the descriptor rides in the control part). */
typedef struct {
    int magic, rank;
} fdx_msg_t;
#define FDX_MAGIC 0x74666478 /* "tfdx" */
/* the control part of a message: room for one descriptor, aligned for its header */
typedef union {
    char buf[CMSG_SPACE(sizeof(int))];
    struct cmsghdr align;
} fdx_cbuf_t;

/* The abstract address of rank q's socket for key (sun_path[0] = 0); its length in *alen. */
static void fdx_addr(struct sockaddr_un *a, socklen_t *alen, const char *key, int q)
{
    int n;

    memset(a, 0, sizeof(*a));
    a->sun_family = AF_UNIX;
    n = snprintf(a->sun_path + 1, sizeof(a->sun_path) - 1, "%s-%d", key, q);
    *alen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

static double fdx_now(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Wait (bounded by deadline) until fd is readable; 0, or -1 with why. */
static int fdx_readable(int fd, double deadline, const char *what, char *why, size_t len)
{
    for (;;) {
        struct pollfd p = { fd, POLLIN, 0 };
        double left = deadline - fdx_now();
        int r;

        if (left <= 0) {
            snprintf(why, len, "%s: nothing after %ld s (TLMPI_TIMEOUT)", what, (long)TLMPI_ENV_I(TIMEOUT));
            return -1;
        }
        r = poll(&p, 1, left > 1.0 ? 1000 : (int)(left * 1000) + 1);
        if (r > 0) {
            return 0;
        }
        if (r < 0 && errno != EINTR) {
            snprintf(why, len, "%s: poll: %s", what, strerror(errno));
            return -1;
        }
    }
}

/* A message of one buffer (iov) with room for one descriptor in its control part (cbuf). */
static void fdx_msghdr(struct msghdr *h, struct iovec *iov, char *cbuf, size_t cbytes)
{
    memset(h, 0, sizeof(*h));
    h->msg_iov = iov;
    h->msg_iovlen = 1;
    h->msg_control = cbuf;
    h->msg_controllen = cbytes;
}

/* Send this rank's descriptor to rank q. 0, or -1 with why. */
static int fdx_send(const char *key, int q, int rank, int fd, char *why, size_t len)
{
    struct sockaddr_un a;
    socklen_t alen;
    fdx_msg_t m = { FDX_MAGIC, rank };
    struct iovec iov = { &m, sizeof(m) };
    fdx_cbuf_t c;
    struct msghdr h;
    struct cmsghdr *cm;
    int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), ok = 0;

    if (s < 0) {
        snprintf(why, len, "socket: %s", strerror(errno));
        return -1;
    }
    fdx_addr(&a, &alen, key, q);
    memset(&c, 0, sizeof(c));
    fdx_msghdr(&h, &iov, c.buf, sizeof(c.buf));
    cm = CMSG_FIRSTHDR(&h);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(cm), &fd, sizeof(int));
    if (connect(s, (struct sockaddr *)&a, alen) != 0) {
        snprintf(why, len, "connect to rank %d's socket: %s (not on this host?)", q, strerror(errno));
    } else if (sendmsg(s, &h, MSG_NOSIGNAL) != (ssize_t)sizeof(m)) {
        snprintf(why, len, "sendmsg to rank %d: %s", q, strerror(errno));
    } else {
        ok = 1;
    }
    close(s); /* the message stays queued at the receiver */
    return ok ? 0 : -1;
}

/* Accept one connection on l and take its rank and descriptor into fds. 0, or -1 with why. */
static int fdx_receive(int l, int size, int *fds, double deadline, char *why, size_t len)
{
    fdx_msg_t m;
    struct iovec iov = { &m, sizeof(m) };
    fdx_cbuf_t c;
    struct msghdr h;
    struct cmsghdr *cm;
    int s, fd = -1, rc = -1;
    ssize_t n;

    if (fdx_readable(l, deadline, "waiting for a peer's connection", why, len) != 0) {
        return -1;
    }
    if ((s = accept(l, NULL, NULL)) < 0) {
        snprintf(why, len, "accept: %s", strerror(errno));
        return -1;
    }
    if (fdx_readable(s, deadline, "waiting for a peer's descriptor", why, len) != 0) {
        close(s);
        return -1;
    }
    fdx_msghdr(&h, &iov, c.buf, sizeof(c.buf));
    n = recvmsg(s, &h, MSG_CMSG_CLOEXEC);
    cm = n == (ssize_t)sizeof(m) ? CMSG_FIRSTHDR(&h) : NULL;
    if (cm && cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS && cm->cmsg_len == CMSG_LEN(sizeof(int))) {
        memcpy(&fd, CMSG_DATA(cm), sizeof(int));
    }
    if (n != (ssize_t)sizeof(m) || m.magic != FDX_MAGIC || fd < 0) {
        snprintf(why, len, "a malformed message (%zd bytes%s)", n, fd < 0 ? ", no descriptor" : "");
    } else if (m.rank < 0 || m.rank >= size || fds[m.rank] >= 0) {
        snprintf(why, len, "a descriptor from rank %d twice or out of range", m.rank);
    } else {
        fds[m.rank] = fd;
        fd = -1;
        rc = 0;
    }
    if (fd >= 0) {
        close(fd);
    }
    close(s);
    return rc;
}

/* After a failed receive: append the peers whose descriptors had not come (whom this rank waited for). */
static void fdx_missing(int rank, int size, const int *fds, char *why, size_t len)
{
    size_t n = strlen(why);
    int q, k = 0;

    for (q = 0; q < size && n + 16 < len; q++) {
        if (q != rank && fds[q] < 0) {
            n += (size_t)snprintf(why + n, len - n, "%s%d", k++ ? ", " : " (no descriptor from rank ", q);
        }
    }
    if (k && n + 2 < len) {
        snprintf(why + n, len - n, ")");
    }
}

int tlmpi_fdx_allgather(MPI_Comm comm, int rank, int size, int fd, int *fds, char *why, size_t len)
{
    static unsigned calls;
    char key[64];
    struct sockaddr_un a;
    socklen_t alen;
    double deadline;
    long limit = (long)TLMPI_ENV_I(TIMEOUT);
    int l = -1, ok = 1, q;

    for (q = 0; q < size; q++) {
        fds[q] = -1;
    }
    /* the key: rank 0's pid and call count (two exchanges of one job, or two jobs, never meet) */
    snprintf(key, sizeof(key), "tlmpi-fdx-%ld-%u", (long)getpid(), calls++);
    if (PMPI_Bcast(key, (int)sizeof(key), MPI_CHAR, 0, comm) != MPI_SUCCESS) {
        snprintf(why, len, "PMPI_Bcast of the socket key failed");
        return -1;
    }
    key[sizeof(key) - 1] = '\0';
    if (fd < 0) {
        snprintf(why, len, "no descriptor to send");
        ok = 0;
    } else if ((l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0) {
        snprintf(why, len, "socket: %s", strerror(errno));
        ok = 0;
    } else {
        fdx_addr(&a, &alen, key, rank);
        if (bind(l, (struct sockaddr *)&a, alen) != 0 || listen(l, size) != 0) {
            snprintf(why, len, "bind / listen on an abstract unix socket: %s", strerror(errno));
            ok = 0;
        }
    }
    if (tlmpi_xport_agree_step(comm, ok, "listening for descriptors", why, len) != 0) {
        goto out;
    }
    deadline = fdx_now() + (double)(limit > 0 ? limit : 3600);
    for (q = 1; q < size && ok && !tlmpi_fault_hit(FDX_SILENT); q++) {
        ok = fdx_send(key, (rank + q) % size, rank, fd, why, len) == 0;
    }
    for (q = 1; q < size && ok; q++) {
        if (fdx_receive(l, size, fds, deadline, why, len) != 0) {
            fdx_missing(rank, size, fds, why, len);
            ok = 0;
        }
    }
    if (tlmpi_xport_agree_step(comm, ok, "passing descriptors", why, len) != 0) {
        goto out;
    }
    close(l);
    return 0;
out:
    if (l >= 0) {
        close(l);
    }
    for (q = 0; q < size; q++) {
        if (fds[q] >= 0) {
            close(fds[q]);
            fds[q] = -1;
        }
    }
    return -1;
}
