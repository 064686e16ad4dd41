/*
 * fdx: descriptors passed between the processes of one host (see fdx.h).
 */
#define _GNU_SOURCE /* struct ucred, accept4 */
#include "config.h"
#include "fdx.h"
#include "env.h"
#include "fault.h"
#include "log.h"
#include "xport.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

void (*tlmpi_fdx_test_hook)(int rank, int size, const char (*names)[TLMPI_FDX_NAME_MAX], int sent);

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

/* What each rank tells the others before the exchange (one PMPI_Allgather): who it is as the kernel
 * reports a socket's peer (SO_PEERCRED: the process id and the effective uid), its pid namespace
 * (pids compare only within one), and the random part of its socket's name. */
typedef struct {
    long long pid, uid;
    unsigned long long pidns_dev, pidns_ino;
    unsigned char nonce[16];
} fdx_id_t;

/* A connection accepted and not yet read. */
typedef struct {
    int s;
    int rank; /* the rank its credentials are (-1: not checked, the fdx_nocred mutant) */
} fdx_conn_t;

/* One exchange as this rank sees it. */
typedef struct {
    const fdx_id_t *ids;    /* every rank's, by rank */
    char (*names)[TLMPI_FDX_NAME_MAX];
    int rank, size, check;  /* check: the credentials are checked (0: the fdx_nocred mutant) */
    int *fds, got;          /* the descriptors received, and how many */
    fdx_conn_t *conns;      /* accepted, not yet read */
    int nconns, maxconns;
    int refused;            /* connections refused */
} fdx_x_t;

#define FDX_REFUSED_LOGGED 8 /* refusals logged one by one in an exchange; the rest are counted */
#define FDX_MAX_CONNS (2 * TLMPI_FDX_MAX_RANKS + 16) /* accepted connections waiting to be read, at most */

/* The abstract address of a socket named name (sun_path[0] = 0); its length in *alen. */
static void fdx_addr(struct sockaddr_un *a, socklen_t *alen, const char *name)
{
    size_t n = strlen(name);

    memset(a, 0, sizeof(*a));
    a->sun_family = AF_UNIX;
    memcpy(a->sun_path + 1, name, n);
    *alen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
}

static double fdx_now(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* This process as fdx_id_t says, with a fresh nonce. 0, or -1 with why. */
static int fdx_self(fdx_id_t *me, char *why, size_t len)
{
    struct stat st;
    size_t got = 0;

    memset(me, 0, sizeof(*me));
    me->pid = (long long)getpid();
    me->uid = (long long)geteuid();
    if (stat("/proc/self/ns/pid", &st) == 0) {
        me->pidns_dev = (unsigned long long)st.st_dev;
        me->pidns_ino = (unsigned long long)st.st_ino;
    }
    while (got < sizeof(me->nonce)) {
        ssize_t n = getrandom(me->nonce + got, sizeof(me->nonce) - got, 0);

        if (n < 0 && errno != EINTR) {
            snprintf(why, len, "getrandom for the socket's name: %s", strerror(errno));
            return -1;
        }
        got += n > 0 ? (size_t)n : 0;
    }
    return 0;
}

/* Can this rank check the others' credentials: one uid and one pid namespace everywhere? 0, or -1 with why. */
static int fdx_same_kind(const fdx_id_t *ids, int rank, int size, char *why, size_t len)
{
    int q;

    for (q = 0; q < size; q++) {
        if (ids[q].uid != ids[rank].uid) {
            snprintf(why, len, "rank %d runs as uid %lld, rank %d as uid %lld (descriptors pass only between "
                     "processes of one user)", q, ids[q].uid, rank, ids[rank].uid);
            return -1;
        }
        if (ids[q].pidns_dev != ids[rank].pidns_dev || ids[q].pidns_ino != ids[rank].pidns_ino) {
            snprintf(why, len, "rank %d is in another pid namespace than rank %d (a connection's pid could not be "
                     "checked against the rank it claims)", q, rank);
            return -1;
        }
    }
    return 0;
}

/* The rank whose process id is pid (not this one), or -1. */
static int fdx_rank_of(const fdx_x_t *x, long long pid)
{
    int q;

    for (q = 0; q < x->size; q++) {
        if (q != x->rank && x->ids[q].pid == pid) {
            return q;
        }
    }
    return -1;
}

/* A connection refused: closed (s; -1: the caller closes it), and said (one info line naming the peer,
 * the first few times). */
static void fdx_refuse(fdx_x_t *x, int s, long long pid, long long uid, const char *reason)
{
    if (s >= 0) {
        close(s);
    }
    if (x->refused++ < FDX_REFUSED_LOGGED) {
        tlmpi_info(COMM, "descriptor exchange (rank %d of %d): refused a connection from pid %lld, uid %lld: %s",
                   x->rank, x->size, pid, uid, reason);
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

/* Send this rank's descriptor to rank q, once rank q's own process holds the socket (its credentials).
 * 1 sent, 0 not yet (the socket's backlog is full: again later), -1 failed with why. */
static int fdx_send(const fdx_x_t *x, int q, int fd, char *why, size_t len)
{
    struct sockaddr_un a;
    socklen_t alen, cl = sizeof(struct ucred);
    fdx_msg_t m = { FDX_MAGIC, x->rank };
    struct iovec iov = { &m, sizeof(m) };
    struct ucred cr;
    fdx_cbuf_t c;
    struct msghdr h;
    struct cmsghdr *cm;
    int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), rc = -1;

    if (s < 0) {
        snprintf(why, len, "socket: %s", strerror(errno));
        return -1;
    }
    fdx_addr(&a, &alen, x->names[q]);
    memset(&c, 0, sizeof(c));
    fdx_msghdr(&h, &iov, c.buf, sizeof(c.buf));
    cm = CMSG_FIRSTHDR(&h);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(cm), &fd, sizeof(int));
    if (connect(s, (struct sockaddr *)&a, alen) != 0) {
        if (errno == EAGAIN || errno == EINTR) {
            rc = 0;
        } else {
            snprintf(why, len, "connect to rank %d's socket: %s (not on this host?)", q, strerror(errno));
        }
    } else if (getsockopt(s, SOL_SOCKET, SO_PEERCRED, &cr, &cl) != 0) {
        snprintf(why, len, "the credentials of rank %d's socket: %s", q, strerror(errno));
    } else if (x->check && ((long long)cr.pid != x->ids[q].pid || (long long)cr.uid != x->ids[x->rank].uid)) {
        snprintf(why, len, "rank %d's socket is held by pid %ld, uid %ld, not by rank %d (pid %lld)", q, (long)cr.pid,
                 (long)cr.uid, q, x->ids[q].pid);
    } else if (sendmsg(s, &h, MSG_NOSIGNAL) != (ssize_t)sizeof(m)) {
        snprintf(why, len, "sendmsg to rank %d: %s", q, strerror(errno));
    } else {
        rc = 1;
    }
    close(s); /* the message stays queued at the receiver */
    return rc;
}

/* Accept what waits on l: a connection whose credentials are a rank's still owed (its pid that rank's,
 * the ranks' uid) is kept to be read; any other is refused. 0, or -1 with why. */
static int fdx_accept(fdx_x_t *x, int l, char *why, size_t len)
{
    for (;;) {
        struct ucred cr;
        socklen_t cl = sizeof(cr);
        int s = accept4(l, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK), k = -1, j;

        if (s < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ECONNABORTED || errno == EINTR) {
                return 0;
            }
            snprintf(why, len, "accept: %s", strerror(errno));
            return -1;
        }
        if (getsockopt(s, SOL_SOCKET, SO_PEERCRED, &cr, &cl) != 0) {
            fdx_refuse(x, s, -1, -1, "its credentials could not be read");
            continue;
        }
        if (x->check) {
            if ((long long)cr.uid != x->ids[x->rank].uid) {
                fdx_refuse(x, s, cr.pid, cr.uid, "another user");
                continue;
            }
            if ((k = fdx_rank_of(x, cr.pid)) < 0) {
                fdx_refuse(x, s, cr.pid, cr.uid, "no rank of this communicator");
                continue;
            }
            for (j = 0; j < x->nconns && x->conns[j].rank != k; j++) {
            }
            if (x->fds[k] >= 0 || j < x->nconns) {
                fdx_refuse(x, s, cr.pid, cr.uid, "a second connection of its rank");
                continue;
            }
        }
        if (x->nconns == x->maxconns) {
            fdx_refuse(x, s, cr.pid, cr.uid, "too many connections waiting to be read");
            continue;
        }
        x->conns[x->nconns].s = s;
        x->conns[x->nconns].rank = k;
        x->nconns++;
    }
}

/* Read the message waiting on connection c (it is readable). 1 when c is done with (closed), 0 when
 * nothing came yet, -1 with why when a rank's own connection carried no descriptor of its rank. */
static int fdx_read(fdx_x_t *x, fdx_conn_t *c, char *why, size_t len)
{
    fdx_msg_t m = { 0, -1 };
    struct iovec iov = { &m, sizeof(m) };
    fdx_cbuf_t cb;
    struct msghdr h;
    struct cmsghdr *cm;
    struct ucred cr = { -1, (uid_t)-1, (gid_t)-1 };
    socklen_t cl = sizeof(cr);
    int fd = -1, k = c->rank, rc = 1;
    ssize_t n;

    fdx_msghdr(&h, &iov, cb.buf, sizeof(cb.buf));
    n = recvmsg(c->s, &h, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
        return 0;
    }
    cm = n == (ssize_t)sizeof(m) ? CMSG_FIRSTHDR(&h) : NULL;
    if (cm && cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS && cm->cmsg_len == CMSG_LEN(sizeof(int))) {
        memcpy(&fd, CMSG_DATA(cm), sizeof(int));
    }
    if (k >= 0) { /* a rank's own connection (its credentials checked) */
        if (n != (ssize_t)sizeof(m) || m.magic != FDX_MAGIC || fd < 0) {
            snprintf(why, len, "a malformed message from rank %d (%zd bytes%s)", k, n, fd < 0 ? ", no descriptor" : "");
            rc = -1;
        } else if (m.rank != k) {
            snprintf(why, len, "rank %d sent a descriptor as rank %d", k, m.rank);
            rc = -1;
        } else {
            x->fds[k] = fd;
            x->got++;
            fd = -1;
        }
    } else { /* the fdx_nocred mutant: whatever claims a rank still owed is taken as that rank's */
        (void)getsockopt(c->s, SOL_SOCKET, SO_PEERCRED, &cr, &cl);
        if (n != (ssize_t)sizeof(m) || m.magic != FDX_MAGIC || fd < 0 || m.rank < 0 || m.rank >= x->size ||
            m.rank == x->rank || x->fds[m.rank] >= 0) {
            fdx_refuse(x, -1, cr.pid, cr.uid, "a malformed message, or a rank's descriptor twice");
        } else {
            x->fds[m.rank] = fd;
            x->got++;
            fd = -1;
        }
    }
    if (fd >= 0) {
        close(fd);
    }
    close(c->s);
    c->s = -1;
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

/* Send to every peer and take every peer's descriptor, all at once: a full backlog is tried again, a
 * refused connection costs nothing, a connection that sends nothing holds up no other. Bounded by
 * deadline. 0, or -1 with why. */
static int fdx_run(fdx_x_t *x, int l, int fd, double deadline, char *why, size_t len)
{
    struct pollfd p[1 + FDX_MAX_CONNS];
    char sent[TLMPI_FDX_MAX_RANKS] = { 0 };
    int left = tlmpi_fault_hit(FDX_SILENT) ? 0 : x->size - 1, q, j, hooked = 0;

    if (tlmpi_fdx_test_hook) {
        tlmpi_fdx_test_hook(x->rank, x->size, (const char (*)[TLMPI_FDX_NAME_MAX])x->names, 0);
    }
    for (;;) {
        double now = fdx_now();
        int n = 0, wait_ms;

        for (q = 1; q < x->size && left; q++) {
            int to = (x->rank + q) % x->size, r;

            if (!sent[to] && (r = fdx_send(x, to, fd, why, len)) != 0) {
                if (r < 0) {
                    return -1;
                }
                sent[to] = 1;
                left--;
            }
        }
        if (!left && !hooked) {
            hooked = 1;
            if (tlmpi_fdx_test_hook) {
                tlmpi_fdx_test_hook(x->rank, x->size, (const char (*)[TLMPI_FDX_NAME_MAX])x->names, 1);
            }
        }
        if (!left && x->got == x->size - 1) {
            return 0;
        }
        if (now >= deadline) {
            if (left) {
                for (q = 0; q < x->size && (q == x->rank || sent[q]); q++) {
                }
                snprintf(why, len, "connecting to rank %d's socket: its backlog stayed full for %ld s (TLMPI_TIMEOUT)",
                         q, (long)TLMPI_ENV_I(TIMEOUT));
            } else {
                snprintf(why, len, "waiting for the peers' descriptors: not all came in %ld s (TLMPI_TIMEOUT)",
                         (long)TLMPI_ENV_I(TIMEOUT));
                fdx_missing(x->rank, x->size, x->fds, why, len);
            }
            return -1;
        }
        p[n++] = (struct pollfd){ l, POLLIN, 0 };
        for (j = 0; j < x->nconns; j++) {
            p[n++] = (struct pollfd){ x->conns[j].s, POLLIN, 0 };
        }
        wait_ms = left ? 2 : (deadline - now > 1.0 ? 1000 : (int)((deadline - now) * 1000) + 1);
        if (poll(p, (nfds_t)n, wait_ms) < 0 && errno != EINTR) {
            snprintf(why, len, "poll: %s", strerror(errno));
            return -1;
        }
        for (j = 0; j < x->nconns; j++) {
            if (p[1 + j].revents && fdx_read(x, &x->conns[j], why, len) < 0) {
                return -1;
            }
        }
        for (j = 0; j < x->nconns;) { /* the connections read are gone */
            if (x->conns[j].s < 0) {
                x->conns[j] = x->conns[--x->nconns];
            } else {
                j++;
            }
        }
        if ((p[0].revents & POLLIN) && fdx_accept(x, l, why, len) != 0) {
            return -1;
        }
    }
}

int tlmpi_fdx_allgather(MPI_Comm comm, int rank, int size, int fd, int *fds, char *why, size_t len)
{
    fdx_id_t me, ids[TLMPI_FDX_MAX_RANKS];
    char names[TLMPI_FDX_MAX_RANKS][TLMPI_FDX_NAME_MAX];
    fdx_conn_t conns[FDX_MAX_CONNS];
    fdx_x_t x;
    struct sockaddr_un a;
    socklen_t alen;
    long limit = (long)TLMPI_ENV_I(TIMEOUT);
    int l = -1, ok, q, i;

    if (size < 1 || size > TLMPI_FDX_MAX_RANKS || rank < 0 || rank >= size) {
        snprintf(why, len, "%d ranks (1..%d)", size, TLMPI_FDX_MAX_RANKS);
        return -1; /* the same on every rank: nothing collective entered */
    }
    for (q = 0; q < size; q++) {
        fds[q] = -1;
    }
    ok = fdx_self(&me, why, len) == 0;
    /* who every rank is, and its socket's name: random, so that no other process can foresee it */
    if (PMPI_Allgather(&me, (int)sizeof(me), MPI_BYTE, ids, (int)sizeof(me), MPI_BYTE, comm) != MPI_SUCCESS) {
        snprintf(why, len, "PMPI_Allgather of the ranks' identities failed");
        return -1; /* the same on every rank (MPI errors are fatal by default) */
    }
    memset(&x, 0, sizeof(x));
    x.ids = ids;
    x.names = names;
    x.rank = rank;
    x.size = size;
    x.check = !tlmpi_fault_hit(FDX_NOCRED);
    x.fds = fds;
    x.conns = conns;
    x.maxconns = FDX_MAX_CONNS;
    for (q = 0; q < size; q++) {
        int n = snprintf(names[q], TLMPI_FDX_NAME_MAX, "tlmpi-fdx-");

        for (i = 0; i < (int)sizeof(ids[q].nonce); i++) {
            n += snprintf(names[q] + n, (size_t)(TLMPI_FDX_NAME_MAX - n), "%02x", ids[q].nonce[i]);
        }
    }
    if (ok && fd < 0) {
        snprintf(why, len, "no descriptor to send");
        ok = 0;
    } else if (ok && fdx_same_kind(ids, rank, size, why, len) != 0) {
        ok = 0;
    } else if (ok && (l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0)) < 0) {
        snprintf(why, len, "socket: %s", strerror(errno));
        ok = 0;
    } else if (ok) {
        fdx_addr(&a, &alen, names[rank]);
        if (bind(l, (struct sockaddr *)&a, alen) != 0 || listen(l, SOMAXCONN) != 0) {
            snprintf(why, len, "bind / listen on an abstract unix socket: %s", strerror(errno));
            ok = 0;
        }
    }
    if (tlmpi_xport_agree_step(comm, ok, "listening for descriptors", why, len) == 0) {
        ok = fdx_run(&x, l, fd, fdx_now() + (double)(limit > 0 ? limit : 3600), why, len) == 0;
        if (x.refused > FDX_REFUSED_LOGGED) {
            tlmpi_info(COMM, "descriptor exchange (rank %d of %d): refused %d connections in all", rank, size,
                       x.refused);
        }
        ok = tlmpi_xport_agree_step(comm, ok, "passing descriptors", why, len) == 0;
    } else {
        ok = 0;
    }
    for (q = 0; q < x.nconns; q++) {
        close(x.conns[q].s);
    }
    if (l >= 0) {
        close(l);
    }
    for (q = 0; !ok && q < size; q++) {
        if (fds[q] >= 0) {
            close(fds[q]);
            fds[q] = -1;
        }
    }
    return ok ? 0 : -1;
}
