/*
 * mpi_fdx_strangers (4 ranks on one host, the fake CUDA runtime; run by tests/mpi/fdx_strangers.sh):
 * the descriptor exchange (src/transport/fdx.c) with strangers connecting to it, on the fake
 * runtime's descriptor path (tlmpi_cumem_share: a cuMem pool exported, passed, imported and mapped;
 * the fake stands the pools in with memfds, so a mapping is the owner's memory itself).
 *
 * Rank 0 forks the strangers before the exchange: one of this user, and (as root) one that drops to
 * nobody (uid 65534); without root that one is left out, with a note. Through the exchange's test hook
 * (fdx.h) rank 0 hands them the sockets' random names once every rank listens; each stranger first
 * finds the names in /proc/net/unix, as any process of the node can, then connects twice to every
 * rank's socket: one connection says nothing and stays open, the other sends a well-formed message
 * claiming rank 3 (at rank 3's own socket: rank 0) with a descriptor of its own memory, a memfd of the
 * pool's size whose first word is its pid (a rank that refuses the connection at once may close it
 * before the message goes). The ranks' own connections come after the strangers':
 * rank 0 sends once the strangers have connected, rank 3 once they and every other rank have sent,
 * so rank 3's connection is the last one queued at every socket.
 *
 * Checked on every rank: the share succeeds (what the tier that uses it keeps its tier on); each
 * peer's mapping is that peer's pool (its first word the peer's pid, gathered over MPI; the rest the
 * peer's random token), never a stranger's; the exchange, strangers and all, ends within a quarter of
 * TLMPI_TIMEOUT (20 s here), so the silent connections stalled nothing; no descriptor is left open;
 * and a second share with no strangers still works. Rank 0 prints the strangers' pids
 * ("mpi_fdx_strangers: stranger pid P uid U"), which fdx_strangers.sh finds in the ranks' info lines.
 * Under the mutant TLMPI_FAULT=fdx_nocred (no credential check) the ranks take a stranger's memory as
 * rank 3's (or rank 0's) and the test fails naming it.
 */
#define _GNU_SOURCE
#include "config.h"
#include "cumemshare.h"
#include "env.h"
#include "fault.h"
#include "fdx.h"
#include "log.h"
#include "harness.h"

#include <cuda_runtime_api.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#define POOL (1u << 20)
#define NOBODY 65534
#define MAX_STRANGERS 2
#define STRANGER_WORD 0x5354524e47455221ULL /* "STRNGER!": the strangers' memory after the pid */
#define TIMEOUT_S 20
#define FDX_MAGIC 0x74666478 /* the exchange's message, as its source shows it: magic, rank */

static char dir[64];          /* the files the ranks tell each other their progress by */
static int victim;            /* the rank the strangers claim to be; its sends come last */
static int nstr;              /* strangers forked (rank 0) */
static pid_t str_pid[MAX_STRANGERS];
static long str_uid[MAX_STRANGERS];
static int str_in[MAX_STRANGERS], str_out[MAX_STRANGERS]; /* rank 0's ends: names to it, its verdict back */
static char str_said[MAX_STRANGERS];                      /* 'y': found every name and connected twice to each */

static void touch(const char *name)
{
    char p[128];
    int fd;

    snprintf(p, sizeof(p), "%s/%s", dir, name);
    if ((fd = open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0600)) >= 0) {
        close(fd);
    }
}

static int present(const char *name)
{
    char p[128];

    snprintf(p, sizeof(p), "%s/%s", dir, name);
    return access(p, F_OK) == 0;
}

static int stranger_connect(const char *name)
{
    struct sockaddr_un a;
    size_t n = strlen(name);
    int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

    memset(&a, 0, sizeof(a));
    a.sun_family = AF_UNIX;
    memcpy(a.sun_path + 1, name, n);
    if (s >= 0 && connect(s, (struct sockaddr *)&a, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n)) != 0) {
        close(s);
        s = -1;
    }
    return s;
}

/* A stranger: learns the names on in, says on out whether it found and reached them all ('y'), keeps
 * its connections open until in closes. Never returns. */
static void stranger(int size, int in, int out, int drop)
{
    char (*names)[TLMPI_FDX_NAME_MAX] = calloc((size_t)size, TLMPI_FDX_NAME_MAX);
    char *listing = calloc(1, 1 << 20), verdict = 'y';
    size_t have = 0, want = (size_t)size * TLMPI_FDX_NAME_MAX;
    uint64_t *mem;
    int q, fd, s, u, c;
    ssize_t n;

    if (drop && (setgroups(0, NULL) != 0 || setgid(NOBODY) != 0 || setuid(NOBODY) != 0 || getuid() != NOBODY)) {
        verdict = 'u';
    }
    for (have = 0; have < want && (n = read(in, (char *)names + have, want - have)) > 0;) {
        have += (size_t)n;
    }
    if (have != want) {
        _exit(2);
    }
    /* the names, as every process of the node sees them */
    if ((u = open("/proc/net/unix", O_RDONLY | O_CLOEXEC)) >= 0) {
        for (have = 0; have < (1 << 20) - 1 && (n = read(u, listing + have, (1 << 20) - 1 - have)) > 0;) {
            have += (size_t)n;
        }
        close(u);
    }
    for (q = 0; q < size; q++) {
        char at[TLMPI_FDX_NAME_MAX + 2];

        snprintf(at, sizeof(at), "@%s\n", names[q]);
        if (!strstr(listing, at)) {
            verdict = verdict == 'y' ? 'l' : verdict;
        }
    }
    /* its own memory, the size of a pool: its pid, then its word */
    fd = memfd_create("stranger", MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, POOL) != 0 ||
        (mem = mmap(NULL, POOL, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
        _exit(3);
    }
    mem[0] = (uint64_t)getpid();
    for (c = 1; c < (int)(POOL / 8); c++) {
        mem[c] = STRANGER_WORD;
    }
    for (q = 0; q < size; q++) {
        int m[2] = { FDX_MAGIC, q == victim ? 0 : victim };
        struct iovec iov = { m, sizeof(m) };
        union {
            char buf[CMSG_SPACE(sizeof(int))];
            struct cmsghdr align;
        } cb;
        struct msghdr h;
        struct cmsghdr *cm;

        if ((s = stranger_connect(names[q])) < 0) { /* silent: stays open, says nothing */
            verdict = verdict == 'y' ? 'c' : verdict;
        }
        if ((s = stranger_connect(names[q])) < 0) {
            verdict = verdict == 'y' ? 'c' : verdict;
            continue;
        }
        memset(&cb, 0, sizeof(cb));
        memset(&h, 0, sizeof(h));
        h.msg_iov = &iov;
        h.msg_iovlen = 1;
        h.msg_control = cb.buf;
        h.msg_controllen = sizeof(cb.buf);
        cm = CMSG_FIRSTHDR(&h);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(cm), &fd, sizeof(int));
        /* EPIPE, ECONNRESET: the rank closed the connection before the message went (refused it) */
        if (sendmsg(s, &h, MSG_NOSIGNAL) != (ssize_t)sizeof(m) && errno != EPIPE && errno != ECONNRESET) {
            verdict = verdict == 'y' ? 's' : verdict;
        }
    }
    if (write(out, &verdict, 1) != 1) {
        _exit(4);
    }
    while (read(in, &c, 1) > 0) {
    }
    _exit(0);
}

static void fork_strangers(void)
{
    int k;

    for (k = 0; k < MAX_STRANGERS; k++) {
        int to[2], from[2], drop = k == 1;

        if (drop && geteuid() != 0) {
            printf("mpi_fdx_strangers: note: not root, so no stranger of another uid (the same-uid one runs)\n");
            continue;
        }
        if (pipe2(to, O_CLOEXEC) != 0 || pipe2(from, O_CLOEXEC) != 0) {
            TST_FAIL("pipe: %s", strerror(errno));
            return;
        }
        fflush(stdout);
        fflush(stderr);
        if ((str_pid[nstr] = fork()) == 0) {
            int j;

            for (j = 0; j < nstr; j++) { /* the earlier strangers' pipes: they end when rank 0 closes them */
                close(str_in[j]);
                close(str_out[j]);
            }
            close(to[1]);
            close(from[0]);
            stranger(tst_size, to[0], from[1], drop);
        }
        close(to[0]);
        close(from[1]);
        TST_CHECK(str_pid[nstr] > 0, "fork: %s", strerror(errno));
        str_uid[nstr] = drop ? NOBODY : (long)geteuid();
        str_in[nstr] = to[1];
        str_out[nstr] = from[0];
        printf("mpi_fdx_strangers: stranger pid %ld uid %ld\n", (long)str_pid[nstr], str_uid[nstr]);
        nstr++;
    }
    fflush(stdout);
}

static void end_strangers(void)
{
    int k, st;

    for (k = 0; k < nstr; k++) {
        close(str_in[k]);
        close(str_out[k]);
        TST_CHECK(waitpid(str_pid[k], &st, 0) == str_pid[k] && WIFEXITED(st) && WEXITSTATUS(st) == 0,
                  "stranger %ld ended with status %#x", (long)str_pid[k], st);
    }
    nstr = 0;
}

/* Rank 0 sets the strangers on once every rank listens; rank `victim` sends once they and every other
 * rank have sent; the others say when they have sent. */
static void hold_back(int rank, int size, const char (*names)[TLMPI_FDX_NAME_MAX], int sent)
{
    char f[32];
    double t0 = MPI_Wtime();
    int k, q, all;

    if (!sent && rank == 0) {
        for (k = 0; k < nstr; k++) {
            TST_CHECK(write(str_in[k], names, (size_t)size * TLMPI_FDX_NAME_MAX) ==
                          (ssize_t)((size_t)size * TLMPI_FDX_NAME_MAX), "names to the stranger");
        }
        for (k = 0; k < nstr; k++) {
            if (read(str_out[k], &str_said[k], 1) != 1) {
                str_said[k] = '?';
            }
        }
        touch("strangers");
    }
    if (!sent && rank == victim) {
        do {
            all = present("strangers");
            for (q = 0; q < size; q++) {
                snprintf(f, sizeof(f), "sent-%d", q);
                all = all && (q == victim || present(f));
            }
            if (!all) {
                usleep(1000);
            }
        } while (!all && MPI_Wtime() - t0 < TIMEOUT_S);
        TST_CHECK(all, "rank %d: the strangers and the other ranks did not come first", rank);
    }
    if (sent && rank != victim) {
        snprintf(f, sizeof(f), "sent-%d", rank);
        touch(f);
    }
}

/* One share of fresh pools; with_strangers: the strangers connect first. */
static void share(int with_strangers, const char *what)
{
    void *pool = NULL, *base[8];
    tlmpi_cumem_map_t maps[8];
    uint64_t mine[2], *all = malloc(2 * sizeof(uint64_t) * (size_t)tst_size), *b;
    char why[256] = "";
    double t;
    int q, k, rc;
    size_t i;

    TST_CHECK(cudaMalloc(&pool, POOL) == cudaSuccess, "cudaMalloc");
    mine[0] = (uint64_t)getpid();
    mine[1] = tst_rand();
    ((uint64_t *)pool)[0] = mine[0];
    for (i = 1; i < POOL / 8; i++) {
        ((uint64_t *)pool)[i] = mine[1] ^ (uint64_t)i;
    }
    PMPI_Allgather(mine, 2, MPI_UINT64_T, all, 2, MPI_UINT64_T, MPI_COMM_WORLD);
    if (with_strangers && tst_rank == 0) {
        fork_strangers();
    }
    tlmpi_fdx_test_hook = with_strangers ? hold_back : NULL;
    t = MPI_Wtime();
    rc = tlmpi_cumem_share(MPI_COMM_WORLD, tst_rank, tst_size, pool, 0, base, maps, why, sizeof(why));
    t = MPI_Wtime() - t;
    tlmpi_fdx_test_hook = NULL;
    TST_CHECK(rc == 0, "%s: the share failed (the tier would be lost): %s", what, why);
    TST_CHECK(t < TIMEOUT_S / 4.0, "%s: the exchange took %.1f s (TLMPI_TIMEOUT %d s): something stalled it", what, t,
              TIMEOUT_S);
    for (q = 0; rc == 0 && q < tst_size; q++) {
        if (q == tst_rank) {
            continue;
        }
        b = base[q];
        if (!b || b[0] != all[2 * q]) {
            TST_FAIL("%s: rank %d's mapping is %s memory (pid %lld), not rank %d's (pid %llu)", what, q,
                     b && b[1] == STRANGER_WORD ? "a stranger's" : "someone else's", b ? (long long)b[0] : -1LL, q,
                     (unsigned long long)all[2 * q]);
            continue;
        }
        for (i = 1; i < POOL / 8; i += 4093) {
            TST_CHECK(b[i] == (all[2 * q + 1] ^ (uint64_t)i), "%s: rank %d's word %zu", what, q, i);
        }
    }
    if (tst_rank == 0) {
        for (k = 0; k < nstr; k++) {
            TST_CHECK(str_said[k] == 'y', "%s: the stranger of uid %ld did not reach every socket ('%c': u setuid, l "
                      "a name not in /proc/net/unix, c connect, s send)", what, str_uid[k], str_said[k]);
        }
        printf("mpi_fdx_strangers: %s: the exchange took %.3f s\n", what, t);
        fflush(stdout);
    }
    PMPI_Barrier(MPI_COMM_WORLD);
    if (tst_rank == 0) {
        end_strangers();
    }
    if (rc == 0) {
        tlmpi_cumem_unshare(maps, tst_size);
    }
    cudaFree(pool);
    free(all);
}

int main(int argc, char **argv)
{
    int before, q;
    char f[128];

    tst_init("mpi_fdx_strangers", &argc, &argv);
    setenv("TLMPI_TIMEOUT", "20", 1);
    tlmpi_env_load(NULL, NULL);
    tlmpi_log_set_rank(tst_rank);
    tlmpi_log_configure((int)TLMPI_ENV_I(LOG_LEVEL), TLMPI_ENV_S(LOG_SUBSYS), TLMPI_ENV_S(LOG_FILE));
    tlmpi_fault_configure(TLMPI_ENV_S(FAULT), tst_rank);
    if (tst_size < 2 || tst_size > 8) {
        return tst_skip("2..8 ranks");
    }
    victim = tst_size - 1;
    if (tst_rank == 0) {
        snprintf(dir, sizeof(dir), "/tmp/tlmpi-fdx-strangers-XXXXXX");
        TST_CHECK(mkdtemp(dir) != NULL, "mkdtemp: %s", strerror(errno));
    }
    PMPI_Bcast(dir, (int)sizeof(dir), MPI_CHAR, 0, MPI_COMM_WORLD);
    before = tst_open_fds();
    share(1, "with strangers");
    share(0, "alone");
    TST_CHECK(tst_open_fds() == before, "descriptors open: %d before, %d after", before, tst_open_fds());
    PMPI_Barrier(MPI_COMM_WORLD);
    if (tst_rank == 0) {
        for (q = 0; q < tst_size; q++) {
            snprintf(f, sizeof(f), "%s/sent-%d", dir, q);
            unlink(f);
        }
        snprintf(f, sizeof(f), "%s/strangers", dir);
        unlink(f);
        rmdir(dir);
    }
    return tst_finish();
}
