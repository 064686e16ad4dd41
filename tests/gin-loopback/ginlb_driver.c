/* ginlb_driver.c: the CPU-box test of the loopback NCCL net + GIN plugin (ginlb_plugin.c) alone,
 * without NCCL and without a GPU. Usage: ginlb_driver PLUGIN.so
 *
 * It plays NCCL's part of the contract of ginlb_abi.h (NCCL 2.28.9, v11 interfaces): it dlopens
 * the plugin, takes "ncclNetPlugin_v11" and "ncclGinPlugin_v11" (the names NCCL's loader looks up)
 * and forks two ranks (a socketpair is their bootstrap) that run
 *  net: init, devices, getProperties, listen, connect/accept (non-blocking, retried), isend/irecv
 *       of 0 B .. 8 MiB in both directions with receive buffers larger than the messages, test
 *       (sizes and contents checked), close;
 *  GIN: init, devices, getProperties (must say the proxy device type), listen, the collective
 *       connect, regMrSym of a window and a signal buffer in POSIX shared memory (the CPU box's
 *       "device memory", registered as NCCL_PTR_CUDA) and of a private heap buffer (NCCL's inline
 *       source, NCCL_PTR_HOST: a local source only), then in both directions:
 *   1 completion: an iput of 32 MiB, test() until done, then the target checks every word (from
 *     the last one back: the last is written last) -- done must mean the data is at the target;
 *   2 ordering: 8 rounds of iputSignal (32 MiB + SignalInc) where the target spins in ginProgress
 *     until its signal reaches the round and then checks every word of the data; and rounds of an
 *     iput followed at once by a data-less iputSignal (SignalAdd): its signal must follow the
 *     earlier put of the same context; the final signal values are exact (each op applied once);
 *   3 an 8-byte put from the heap buffer with a signal (NCCL's putValue path);
 *   4 a put into a registration the peer could not export is refused (ncclInvalidUsage);
 *  then deregMrSym, closeColl, finalize.
 * Exit 0 when every check passes, 1 on the first failure (the line says which check), 77 when
 * the plugin cannot be loaded. Every wait is bounded (SIGALRM at 120 s).
 * gin-loopback.sh runs it as is and with the plugin's two mutants, which it must catch. */
#define _GNU_SOURCE
#include "ginlb_abi.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int g_rank = -1, g_boot = -1, g_job;
static const ginlb_net_v11_t *net;
static const ginlb_gin_v11_t *gin;

#define FAIL(...)                                                          \
    do {                                                                   \
        fprintf(stderr, "FAIL rank %d: ", g_rank);                         \
        fprintf(stderr, __VA_ARGS__);                                      \
        fprintf(stderr, "\n");                                             \
        fflush(stderr);                                                    \
        _exit(1);                                                          \
    } while (0)
#define CHECK(call)                                                                \
    do {                                                                           \
        ginlb_result_t r_ = (call);                                                \
        if (r_ != ginlbSuccess) FAIL("%s returned %d (line %d)", #call, (int)r_, __LINE__); \
    } while (0)

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* bootstrap: exchange n bytes with the peer (small messages: a write never blocks) */
static void xchg(const void *mine, void *theirs, size_t n) {
    if (write(g_boot, mine, n) != (ssize_t)n) FAIL("bootstrap write");
    size_t got = 0;
    while (got < n) {
        ssize_t k = read(g_boot, (char *)theirs + got, n - got);
        if (k <= 0) FAIL("bootstrap read (peer gone?)");
        got += (size_t)k;
    }
}
static void boot_send(uint64_t v) {
    if (write(g_boot, &v, sizeof v) != sizeof v) FAIL("bootstrap write");
}
static uint64_t boot_recv(void) {
    uint64_t v;
    size_t got = 0;
    while (got < sizeof v) {
        ssize_t k = read(g_boot, (char *)&v + got, sizeof v - got);
        if (k <= 0) FAIL("bootstrap read (peer gone?)");
        got += (size_t)k;
    }
    return v;
}
static void barrier(void) {
    char a = 'b', b;
    xchg(&a, &b, 1);
}

static uint64_t pat(uint64_t round, uint64_t i) {
    return (round + 1) * 0x9E3779B97F4A7C15ull ^ (i * 0xD6E8FEB86659FD93ull);
}

/* ------------------------------------------------------------------ net */
static void run_net(void) {
    void *ctx = NULL;
    ginlb_comm_config_t cfg = {-1};
    CHECK(net->init(&ctx, 0x746c6d7069ull, &cfg, NULL, NULL));
    int ndev = 0;
    CHECK(net->devices(&ndev));
    if (ndev < 1) FAIL("net devices: %d", ndev);
    ginlb_props_t p;
    CHECK(net->getProperties(0, &p));
    if (!(p.ptrSupport & GINLB_PTR_HOST) || p.netDeviceType != GINLB_DEVICE_HOST || p.maxRecvs < 1 || !p.name)
        FAIL("net properties: ptrSupport %d type %d maxRecvs %d", p.ptrSupport, (int)p.netDeviceType, p.maxRecvs);
    char h[GINLB_HANDLE_MAXSIZE], ph[GINLB_HANDLE_MAXSIZE];
    void *lc = NULL, *sc = NULL, *rc = NULL;
    CHECK(net->listen(ctx, 0, h, &lc));
    xchg(h, ph, sizeof h);
    double t0 = now();
    while (!sc || !rc) {
        ginlb_dev_handle_t *dh = NULL;
        if (!sc) CHECK(net->connect(ctx, 0, ph, &sc, &dh));
        if (!rc) CHECK(net->accept(lc, &rc, &dh));
        if (now() - t0 > 20) FAIL("net connect/accept did not complete");
    }
    enum { NMSG = 6 };
    static const size_t sizes[NMSG] = {0, 1, 4097, 1 << 20, 8 << 20, 3};
    char *sbuf[NMSG], *rbuf[NMSG];
    void *sreq[NMSG] = {0}, *rreq[NMSG] = {0}, *mh = NULL;
    CHECK(net->regMr(sc, NULL, 0, GINLB_PTR_HOST, &mh));
    for (int m = 0; m < NMSG; m++) {
        sbuf[m] = malloc(sizes[m] + 1);
        rbuf[m] = malloc(sizes[m] + 64);
        for (size_t i = 0; i < sizes[m]; i++) sbuf[m][i] = (char)(pat((uint64_t)(g_rank * 16 + m), i) >> 7);
        memset(rbuf[m], 0x5a, sizes[m] + 64);
    }
    int sdone[NMSG] = {0}, rdone[NMSG] = {0}, left = 2 * NMSG;
    t0 = now();
    while (left) {
        for (int m = 0; m < NMSG; m++) {
            if (!sreq[m] && (m == 0 || sreq[m - 1])) CHECK(net->isend(sc, sbuf[m], sizes[m], 7, mh, NULL, &sreq[m]));
            if (!rreq[m] && (m == 0 || rreq[m - 1])) {
                void *d = rbuf[m];
                size_t cap = sizes[m] + 64;
                int tag = 7;
                CHECK(net->irecv(rc, 1, &d, &cap, &tag, &mh, NULL, &rreq[m]));
            }
            int done = 0, got = -1;
            if (sreq[m] && !sdone[m]) {
                CHECK(net->test(sreq[m], &done, &got));
                if (done) {
                    if ((size_t)got != sizes[m]) FAIL("net send %d: test says %d bytes, sent %zu", m, got, sizes[m]);
                    sdone[m] = 1, left--;
                }
            }
            if (rreq[m] && !rdone[m]) {
                CHECK(net->test(rreq[m], &done, &got));
                if (done) {
                    if ((size_t)got != sizes[m]) FAIL("net recv %d: %d bytes, the peer sent %zu", m, got, sizes[m]);
                    int peer = 1 - g_rank;
                    for (size_t i = 0; i < sizes[m]; i++)
                        if (rbuf[m][i] != (char)(pat((uint64_t)(peer * 16 + m), i) >> 7))
                            FAIL("net recv %d: byte %zu wrong", m, i);
                    rdone[m] = 1, left--;
                }
            }
        }
        if (now() - t0 > 60) FAIL("net messages did not complete (%d left)", left);
    }
    CHECK(net->deregMr(sc, mh));
    for (int m = 0; m < NMSG; m++) free(sbuf[m]), free(rbuf[m]);
    barrier();
    CHECK(net->closeSend(sc));
    CHECK(net->closeRecv(rc));
    CHECK(net->closeListen(lc));
    CHECK(net->finalize(ctx));
    printf("rank %d: net: connect/accept, 6 messages each way (0 B .. 8 MiB), sizes and bytes right\n", g_rank);
}

/* ------------------------------------------------------------------ GIN */
static void *shm_segment(const char *tag, size_t size, char *name, size_t namelen) {
    snprintf(name, namelen, "/tlmpi-ginlb-%d-%d-%s", g_job, g_rank, tag);
    int fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0) FAIL("shm_open %s: %s", name, strerror(errno));
    if (ftruncate(fd, (off_t)size)) FAIL("ftruncate %s: %s", name, strerror(errno));
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) FAIL("mmap %s: %s", name, strerror(errno));
    return p;
}

#define S ((size_t)32 << 20) /* one put */
#define WIN (2 * S + 4096)   /* [0,S) source, [S,2S) destination, [2S,+4096) small puts */
#define ROUNDS 8

static void *g_coll;
static volatile uint64_t *g_sig;

static uint64_t read_sig(int i) {
    return __atomic_load_n(&g_sig[i], __ATOMIC_ACQUIRE);
}
/* target side: progress until signal i reaches want (bounded) */
static void wait_signal(int i, uint64_t want, const char *what) {
    double t0 = now();
    while (read_sig(i) < want) {
        CHECK(gin->ginProgress(g_coll));
        if (now() - t0 > 30) FAIL("%s: signal %d stuck at %" PRIu64 ", want %" PRIu64, what, i, read_sig(i), want);
    }
}
/* from the last word back: a copy in progress has not written the end yet */
static void check_data(const uint64_t *w, size_t nwords, uint64_t round, const char *what) {
    for (size_t k = nwords; k-- > 0;)
        if (w[k] != pat(round, k))
            FAIL("%s: word %zu of %zu at the target is %#" PRIx64 ", want %#" PRIx64 " (round %" PRIu64 ")", what, k,
                 nwords, w[k], pat(round, k), round);
}
static void wait_done(void *req, const char *what) {
    double t0 = now();
    int done = 0;
    while (!done) {
        CHECK(gin->test(g_coll, req, &done));
        if (!done && now() - t0 > 30) FAIL("%s: test() never said done", what);
        if (!done) usleep(20); /* leave the cores to the engine and the target */
    }
}
static void fill(uint64_t *w, size_t nwords, uint64_t round) {
    for (size_t k = 0; k < nwords; k++) w[k] = pat(round, k);
}

static void run_gin(void) {
    void *ctx = NULL;
    CHECK(gin->init(&ctx, 0x746c6d7069ull, NULL));
    int ndev = 0;
    CHECK(gin->devices(&ndev));
    if (ndev < 1) FAIL("GIN devices: %d", ndev);
    ginlb_props_t p;
    CHECK(gin->getProperties(0, &p));
    if (p.netDeviceType != GINLB_DEVICE_GIN_PROXY)
        FAIL("GIN properties: device type %d, want %d (proxy)", (int)p.netDeviceType, GINLB_DEVICE_GIN_PROXY);
    if (p.maxRecvs < 1) FAIL("GIN properties: maxRecvs %d (NCCL's proxy queue is 32 x maxRecvs)", p.maxRecvs);
    char h[2][GINLB_HANDLE_MAXSIZE];
    void *lc = NULL;
    CHECK(gin->listen(ctx, 0, h[g_rank], &lc));
    xchg(h[g_rank], h[1 - g_rank], GINLB_HANDLE_MAXSIZE);
    void *handles[2] = {h[0], h[1]};
    CHECK(gin->connect(ctx, handles, 2, g_rank, lc, &g_coll));
    if (!g_coll) FAIL("GIN connect gave no collComm");
    CHECK(gin->closeListen(lc));

    char wname[96], sname[96];
    char *win = shm_segment("win", WIN, wname, sizeof wname);
    g_sig = shm_segment("sig", 4096, sname, sizeof sname);
    size_t privsz = 1 << 20;
    uint64_t *priv = calloc(1, privsz);
    void *wm, *wg, *sm, *sg, *pm, *pg;
    CHECK(gin->regMrSym(g_coll, win, WIN, GINLB_PTR_CUDA, 0, &wm, &wg));
    CHECK(gin->regMrSym(g_coll, (void *)g_sig, 4096, GINLB_PTR_CUDA, GINLB_MR_FLAG_FORCE_SO, &sm, &sg));
    CHECK(gin->regMrSym(g_coll, priv, privsz, GINLB_PTR_HOST, 0, &pm, &pg));
    if (!wm || wm != wg || !sm || sm != sg || !pm || pm != pg)
        FAIL("regMrSym: mhandle and ginHandle must be equal and set (NCCL's proxy passes either)");
    barrier(); /* both ranks mapped everything: the names can go */
    shm_unlink(wname);
    shm_unlink(sname);
    int peer = 1 - g_rank;
    uint64_t *src = (uint64_t *)(void *)win, *dst = (uint64_t *)(void *)(win + S);
    size_t nw = S / 8;
    uint64_t round = 0;
    int early = 0;
    for (int sender = 0; sender < 2; sender++) {
        int me_send = g_rank == sender;
        /* 1 completion: test() done => the data is at the target */
        round++;
        if (me_send) {
            fill(src, nw, round);
            void *req = NULL;
            CHECK(gin->iput(g_coll, 0, wm, S, S, wm, (uint32_t)peer, &req));
            if (!req) FAIL("iput gave no request");
            int done = 0;
            CHECK(gin->test(g_coll, req, &done));
            early += done;
            if (!done) wait_done(req, "completion");
            boot_send(round);
        } else {
            if (boot_recv() != round) FAIL("bootstrap out of step");
            check_data(dst, nw, round, "completion (test() said done)");
        }
        barrier();
        /* 2 ordering: the signal never before the data */
        for (int k = 0; k < ROUNDS; k++) {
            round++;
            if (me_send) {
                fill(src, nw, round);
                void *req = NULL, *req2 = NULL;
                if (k % 2 == 0) {
                    CHECK(gin->iputSignal(g_coll, 0, wm, S, S, wm, (uint32_t)peer, 0 * 8, sm, 0, GINLB_SIGNAL_OP_INC,
                                          &req));
                } else {
                    CHECK(gin->iput(g_coll, 0, wm, S, S, wm, (uint32_t)peer, &req));
                    CHECK(gin->iputSignal(g_coll, 0, NULL, 0, 0, NULL, (uint32_t)peer, 1 * 8, sm, 1000 + (uint64_t)k,
                                          GINLB_SIGNAL_OP_ADD, &req2));
                }
                wait_done(req, "ordering put");
                if (req2) wait_done(req2, "ordering signal");
                if (boot_recv() != round) FAIL("bootstrap out of step"); /* the target checked: next round */
            } else {
                if (k % 2 == 0) {
                    wait_signal(0, (uint64_t)(k / 2 + 1), "ordering (iputSignal)");
                    check_data(dst, nw, round, "ordering: the signal of iputSignal was visible before its data");
                } else {
                    uint64_t want = 0;
                    for (int j = 1; j <= k; j += 2) want += 1000 + (uint64_t)j;
                    wait_signal(1, want, "ordering (iput, then a signal)");
                    check_data(dst, nw, round, "ordering: a signal was visible before an earlier put of its context");
                }
                boot_send(round);
            }
        }
        barrier();
        /* 3 an 8-byte put from the heap registration (local source) with a signal */
        round++;
        if (me_send) {
            priv[3] = pat(round, 3);
            void *req = NULL;
            CHECK(gin->iputSignal(g_coll, 3 * 8, pm, 8, 2 * S + 64, wm, (uint32_t)peer, 2 * 8, sm, 0,
                                  GINLB_SIGNAL_OP_INC, &req));
            wait_done(req, "inline put");
        } else {
            wait_signal(2, 1, "inline put");
            uint64_t v = *(volatile uint64_t *)(void *)(win + 2 * S + 64);
            if (v != pat(round, 3)) FAIL("inline put: %#" PRIx64 " at the target", v);
        }
        barrier();
        /* 4 the peer's heap registration is not mapped here: a put into it is refused */
        if (me_send) {
            void *req = NULL;
            ginlb_result_t r = gin->iput(g_coll, 0, wm, 8, 0, pm, (uint32_t)peer, &req);
            if (r != ginlbInvalidUsage || req) FAIL("a put into an unmapped registration returned %d", (int)r);
        }
        barrier();
        /* exact signal values: each op applied once */
        if (!me_send) {
            for (int j = 0; j < 50; j++) CHECK(gin->ginProgress(g_coll));
            uint64_t want1 = 0;
            for (int j = 1; j < ROUNDS; j += 2) want1 += 1000 + (uint64_t)j;
            if (read_sig(0) != ROUNDS / 2 || read_sig(1) != want1 || read_sig(2) != 1)
                FAIL("signals after the rounds: %" PRIu64 " %" PRIu64 " %" PRIu64 ", want %d %" PRIu64 " 1", read_sig(0),
                     read_sig(1), read_sig(2), ROUNDS / 2, want1);
            memset((void *)g_sig, 0, 64); /* the next direction starts from 0 (no update in flight) */
        }
        barrier();
    }
    CHECK(gin->deregMrSym(g_coll, pm));
    CHECK(gin->deregMrSym(g_coll, sm));
    CHECK(gin->deregMrSym(g_coll, wm));
    barrier();
    CHECK(gin->closeColl(g_coll));
    CHECK(gin->finalize(ctx));
    munmap(win, WIN);
    munmap((void *)g_sig, 4096);
    free(priv);
    printf("rank %d: GIN: proxy type, regMrSym (shm window + signals exported, heap local), completion, "
           "%d ordered put+signal rounds each way, inline put, unmapped put refused, exact signals "
           "(test done at once %d of 2 times)\n",
           g_rank, ROUNDS, early);
}

static void on_alarm(int s) {
    (void)s;
    static const char m[] = "FAIL: ginlb_driver timed out (120 s)\n";
    if (write(2, m, sizeof m - 1)) {}
    _exit(1);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s PLUGIN.so\n", argv[0]);
        return 2;
    }
    setenv("TLMPI_GINLB_HOST", "1", 0); /* the CPU-box mode: "device memory" is shared host memory */
    void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        printf("SKIP: cannot load %s: %s\n", argv[1], dlerror());
        return 77;
    }
    net = dlsym(lib, "ncclNetPlugin_v11");
    gin = dlsym(lib, "ncclGinPlugin_v11");
    if (!net || !gin) {
        fprintf(stderr, "FAIL: %s lacks ncclNetPlugin_v11 or ncclGinPlugin_v11\n", argv[1]);
        return 1;
    }
    printf("plugin %s: net \"%s\", GIN \"%s\" (ABI of NCCL %d)\n", argv[1], net->name, gin->name,
           GINLB_NCCL_VERSION_CODE);
    fflush(stdout);
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv)) return 1;
    g_job = (int)getpid();
    pid_t child = fork();
    if (child < 0) return 1;
    g_rank = child == 0 ? 1 : 0;
    g_boot = sv[g_rank];
    close(sv[1 - g_rank]);
    signal(SIGALRM, on_alarm);
    signal(SIGPIPE, SIG_IGN); /* a peer that failed first: its FAIL line is the one that counts */
    alarm(120);
    run_net();
    run_gin();
    fflush(stdout);
    if (child == 0) _exit(0);
    int st = 0;
    waitpid(child, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "FAIL: rank 1 ended with status %d\n", st);
        return 1;
    }
    printf("PASS\n");
    return 0;
}
