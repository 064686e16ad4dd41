/*
 * A CPU stand-in for NCCL, never linked into libtlmpi: dlopen'ed by tlmpi (TLMPI_NCCL_LIBRARY) in
 * tests/mpi/mpi_fake_device and tests/mpi/mpi_threads, and by bench/devpath-callgrind.sh (cost
 * counting, one rank). "Device memory" under tests/fakes/fakecudart.c is host memory, so the
 * collectives read and write the buffers directly, synchronously, inside the call (the stream is
 * ignored: under the fake CUDA runtime every earlier stream operation has already happened).
 *
 * One-rank communicator: the collective is a copy of the input to the output (memmove when the
 * buffers differ), nothing else: this is what the instruction counts of devpath-callgrind.sh see.
 *
 * Several ranks (processes of one host): the communicator is a POSIX shared-memory segment named
 * from the unique id ("/fakenccl-<hex>"). ncclGetUniqueId makes a fresh random id (and records the
 * slot size in it, so every rank agrees); ncclCommInitRank creates or opens the segment (whoever
 * comes first creates it; ftruncate to the same size is harmless for the others), maps it, and waits
 * until all ranks have mapped it; the last rank to arrive unlinks the name (ncclCommDestroy/Abort
 * unlink it too, in case). The segment holds a header (attach counter, barrier counter and sense)
 * and one slot per rank (FAKE_NCCL_SLOT_BYTES at ncclGetUniqueId time, default 1 MiB). Each
 * collective runs in chunks that fit a slot: every rank copies its part of the chunk into its own
 * slot, barrier, every rank computes its output from all slots (reductions in rank order 0..n-1, so
 * every rank gets bit-identical results), barrier (slots free again). Barriers are sense-reversing
 * on C11 atomics in the segment, spinning with sched_yield. Every wait is bounded
 * (FAKE_NCCL_TIMEOUT seconds, default 120): then "fakenccl: rank R of comm NAME (N ranks) waited
 * S s for WHAT" goes to stderr and the process aborts, so a hang in a test becomes a failure.
 *
 * Thread safety: each communicator is its own object, so different threads may use different
 * communicators at the same time (one thread at a time per communicator, as NCCL requires). The one
 * mutable global is the in-flight count of FAKE_NCCL_ONE_AT_A_TIME=1, which models the GPU's hazard:
 * NCCL's kernels wait for their peers on the GPU, so two collectives of one process on different
 * communicators in flight at once can deadlock a real GPU (a waiting kernel holds its work queue).
 * With it set, a multi-rank collective that starts while another one of this process is in flight
 * prints "fakenccl: rank R: two collectives of different communicators in flight at once" and
 * aborts the process (tests/mpi/threads.sh: tlmpi's GPU turn must prevent it).
 *
 * In-place conventions are NCCL's: allreduce sendbuff == recvbuff; allgather sendbuff ==
 * recvbuff + rank * count; reduce-scatter sendbuff + rank * recvcount == recvbuff. Reductions: the
 * ten integer/float types of NCCL x sum/prod/min/max/avg; half types are widened to float, reduced
 * in float in rank order and rounded once (round to nearest even). fp8 types are moved (allgather)
 * but not reduced (ncclInvalidArgument).
 *
 * The devcomm transport's entry points, minimally: ncclMemAlloc / ncclMemFree are page-aligned host
 * memory (what fakecudart's memset and copies accept), a window is a small record naming its range,
 * ncclDevCommCreate fails with ncclInvalidUsage ("not supported by the fake NCCL", from
 * ncclGetLastError) after counting a request for multicast (lsaMultimem, read with the 2.28.9
 * layout of ncclDevCommRequirements this fake's version stands for) in
 * fake_nccl_multicast_requests, so that tlmpi's fallback is what the CPU tests exercise.
 * fake_nccl_comm_inits and fake_nccl_devcomm_creates count the calls of ncclCommInitRank and
 * ncclDevCommCreate; FAKE_NCCL_VERSION (an NCCL_VERSION_CODE) replaces the headers' version that
 * ncclGetVersion reports; with FAKE_NCCL_NO_SYMMETRIC set, ncclDevCommCreate's last error is real
 * NCCL's "Communicator does not support symmetric memory!".
 */
#define _GNU_SOURCE
#include <nccl.h>

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define FK_MAGIC 0x434e4b46u /* "FKNC" in the unique id */
#define FK_COMM_MAGIC 0x66616b65u
#define FK_DEFAULT_SLOT ((uint32_t)1 << 20)
#define FK_HDR 4096

typedef struct {
    _Atomic uint32_t attached; /* ranks that mapped the segment */
    _Atomic uint32_t arrived;  /* barrier: ranks arrived in the current round */
    _Atomic uint32_t sense;    /* barrier: flips when a round completes */
    uint32_t nranks;
} fk_hdr_t;

struct fk_comm {
    uint32_t magic;
    int nranks, rank;
    uint32_t slot;       /* bytes per rank slot */
    uint32_t sense;      /* this rank's barrier sense */
    int unlinked;
    fk_hdr_t *hdr;       /* NULL for one rank */
    unsigned char *base; /* slots */
    size_t maplen;
    unsigned long ncalls;
    char name[48];
};
typedef struct fk_comm fk_comm_t;

/* the headers tlmpi (and its kernels) were built with, or FAKE_NCCL_VERSION (an NCCL_VERSION_CODE,
 * e.g. 22803: tests/mpi/fault.sh's devcomm_old) */
ncclResult_t ncclGetVersion(int *v)
{
    const char *e = getenv("FAKE_NCCL_VERSION");

    if (!v) return ncclInvalidArgument;
    *v = e && *e ? atoi(e) : NCCL_VERSION_CODE;
    return ncclSuccess;
}

const char *ncclGetErrorString(ncclResult_t r)
{
    switch (r) {
    case ncclSuccess: return "no error (fake NCCL)";
    case ncclSystemError: return "system error (fake NCCL)";
    case ncclInternalError: return "internal error (fake NCCL)";
    case ncclInvalidArgument: return "invalid argument (fake NCCL)";
    case ncclInvalidUsage: return "invalid usage (fake NCCL)";
    default: return "error (fake NCCL)";
    }
}

/* the last failure's text, per thread (only the devcomm fakes set it) */
static __thread const char *fk_last_error = "";

const char *ncclGetLastError(ncclComm_t c)
{
    (void)c;
    return fk_last_error;
}

static double fk_timeout(void)
{
    const char *e = getenv("FAKE_NCCL_TIMEOUT");
    double t = e && *e ? atof(e) : 120.0;

    return t > 0 ? t : 120.0;
}

static double fk_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Spin (sched_yield) until *w == want; bounded. */
static void fk_wait_eq(fk_comm_t *c, _Atomic uint32_t *w, uint32_t want, const char *what)
{
    double t0 = 0, limit = 0;
    unsigned long i;

    for (i = 0;; i++) {
        if (atomic_load(w) == want) return;
        if ((i & 63) == 0) {
            double t = fk_now();

            if (i == 0) {
                t0 = t;
                limit = fk_timeout();
            } else if (t - t0 > limit) {
                fprintf(stderr, "fakenccl: rank %d of comm %s (%d ranks) waited %.0f s for %s (call %lu)\n",
                        c->rank, c->name, c->nranks, t - t0, what, c->ncalls);
                fflush(stderr);
                if (!c->unlinked) shm_unlink(c->name); /* leave nothing behind in /dev/shm */
                abort();
            }
        }
        sched_yield();
    }
}

static void fk_barrier(fk_comm_t *c, const char *what)
{
    fk_hdr_t *h = c->hdr;
    uint32_t s = c->sense ^= 1u;

    if (atomic_fetch_add(&h->arrived, 1) == (uint32_t)c->nranks - 1) {
        atomic_store(&h->arrived, 0);
        atomic_store(&h->sense, s);
    } else {
        fk_wait_eq(c, &h->sense, s, what);
    }
}

ncclResult_t ncclGetUniqueId(ncclUniqueId *id)
{
    const char *e = getenv("FAKE_NCCL_SLOT_BYTES");
    uint32_t magic = FK_MAGIC, slot = FK_DEFAULT_SLOT;
    size_t got = 0;

    if (!id) return ncclInvalidArgument;
    memset(id, 0, sizeof(*id));
    while (got < 16) {
        ssize_t n = getrandom(id->internal + got, 16 - got, 0);

        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) { /* no getrandom: pid, time and an address still make a fresh name */
            uint64_t x[2] = { (uint64_t)getpid() << 32 ^ (uint64_t)(uintptr_t)id, (uint64_t)(fk_now() * 1e9) };

            memcpy(id->internal, x, 16);
            break;
        }
        got += (size_t)n;
    }
    if (e && *e) {
        long v = atol(e);

        if (v >= 64) slot = (uint32_t)v;
    }
    memcpy(id->internal + 16, &magic, 4);
    memcpy(id->internal + 20, &slot, 4);
    return ncclSuccess;
}

/* Requests for multicast objects (tests/mpi/mpi_fault reads it through dlsym): a real NCCL creates
 * NVLS multicast for a communicator of several ranks at init unless NCCL_NVLS_ENABLE=0, so an init
 * with it unset or not 0 counts as one. */
unsigned long fake_nccl_multicast_requests;
/* calls of ncclCommInitRank and ncclDevCommCreate (read the same way) */
unsigned long fake_nccl_comm_inits, fake_nccl_devcomm_creates;

ncclResult_t ncclCommInitRank(ncclComm_t *cp, int n, ncclUniqueId id, int r)
{
    const char *nvls = getenv("NCCL_NVLS_ENABLE");
    fk_comm_t *c;
    uint32_t magic, slot = FK_DEFAULT_SLOT;
    int fd, i;

    __atomic_fetch_add(&fake_nccl_comm_inits, 1, __ATOMIC_RELAXED);
    if (n > 1 && (!nvls || strcmp(nvls, "0"))) __atomic_fetch_add(&fake_nccl_multicast_requests, 1, __ATOMIC_RELAXED);

    if (!cp || n < 1 || r < 0 || r >= n) return ncclInvalidArgument;
    c = calloc(1, sizeof(*c));
    if (!c) return ncclSystemError;
    c->magic = FK_COMM_MAGIC;
    c->nranks = n;
    c->rank = r;
    memcpy(&magic, id.internal + 16, 4);
    if (magic == FK_MAGIC) memcpy(&slot, id.internal + 20, 4);
    c->slot = slot & ~7u;
    memcpy(c->name, "/fakenccl-", 10);
    for (i = 0; i < 16; i++) snprintf(c->name + 10 + 2 * i, 3, "%02x", (unsigned char)id.internal[i]);
    if (n == 1) {
        *cp = (ncclComm_t)c;
        return ncclSuccess;
    }
    c->maplen = FK_HDR + (size_t)n * c->slot;
    fd = shm_open(c->name, O_RDWR | O_CREAT, 0600);
    if (fd < 0 || ftruncate(fd, (off_t)c->maplen) != 0) {
        fprintf(stderr, "fakenccl: rank %d: shm %s: %s\n", r, c->name, strerror(errno));
        if (fd >= 0) close(fd);
        free(c);
        return ncclSystemError;
    }
    c->hdr = mmap(NULL, c->maplen, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (c->hdr == MAP_FAILED) {
        fprintf(stderr, "fakenccl: rank %d: mmap %s: %s\n", r, c->name, strerror(errno));
        free(c);
        return ncclSystemError;
    }
    c->base = (unsigned char *)c->hdr + FK_HDR;
    /* like NCCL, init returns once every rank has joined; the last to join unlinks the name */
    if (atomic_fetch_add(&c->hdr->attached, 1) == (uint32_t)n - 1) {
        c->hdr->nranks = (uint32_t)n;
        shm_unlink(c->name);
        c->unlinked = 1;
    } else {
        fk_wait_eq(c, &c->hdr->attached, (uint32_t)n, "all ranks to join (ncclCommInitRank)");
    }
    *cp = (ncclComm_t)c;
    return ncclSuccess;
}

static fk_comm_t *fk_get(ncclComm_t cm)
{
    fk_comm_t *c = (fk_comm_t *)cm;

    return c && c->magic == FK_COMM_MAGIC ? c : NULL;
}

static ncclResult_t fk_free(ncclComm_t cm)
{
    fk_comm_t *c = fk_get(cm);

    if (!c) return ncclInvalidArgument;
    if (c->hdr) {
        if (!c->unlinked) shm_unlink(c->name); /* ENOENT once the last rank unlinked it: harmless */
        munmap(c->hdr, c->maplen);
    }
    c->magic = 0;
    free(c);
    return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t c) { return fk_free(c); }
ncclResult_t ncclCommAbort(ncclComm_t c) { return fk_free(c); }

ncclResult_t ncclCommGetAsyncError(ncclComm_t c, ncclResult_t *e)
{
    if (!fk_get(c) || !e) return ncclInvalidArgument;
    *e = ncclSuccess;
    return ncclSuccess;
}

ncclResult_t ncclCommCount(const ncclComm_t cm, int *n)
{
    fk_comm_t *c = fk_get(cm);

    if (!c || !n) return ncclInvalidArgument;
    *n = c->nranks;
    return ncclSuccess;
}

ncclResult_t ncclCommUserRank(const ncclComm_t cm, int *r)
{
    fk_comm_t *c = fk_get(cm);

    if (!c || !r) return ncclInvalidArgument;
    *r = c->rank;
    return ncclSuccess;
}

ncclResult_t ncclCommCuDevice(const ncclComm_t cm, int *d)
{
    if (!fk_get(cm) || !d) return ncclInvalidArgument;
    *d = 0;
    return ncclSuccess;
}

/* ---- the devcomm transport's entry points (see the top) ---- */
ncclResult_t ncclMemAlloc(void **p, size_t n)
{
    size_t pg = 4096, len = (n + pg - 1) / pg * pg;

    if (!p || !n) return ncclInvalidArgument;
    *p = aligned_alloc(pg, len);
    return *p ? ncclSuccess : ncclSystemError;
}

ncclResult_t ncclMemFree(void *p)
{
    free(p);
    return ncclSuccess;
}

#define FK_WIN_MAGIC 0x6e697766u
typedef struct { uint32_t magic; void *base; size_t size; } fk_win_t;

ncclResult_t ncclCommWindowRegister(ncclComm_t cm, void *buf, size_t n, ncclWindow_t *win, int flags)
{
    fk_win_t *w;

    (void)flags;
    if (!fk_get(cm) || !win) return ncclInvalidArgument;
    if (!buf || !n) return ncclSuccess; /* as NCCL 2.28: *win untouched */
    w = calloc(1, sizeof(*w));
    if (!w) return ncclSystemError;
    w->magic = FK_WIN_MAGIC;
    w->base = buf;
    w->size = n;
    *win = (ncclWindow_t)(void *)w;
    return ncclSuccess;
}

ncclResult_t ncclCommWindowDeregister(ncclComm_t cm, ncclWindow_t win)
{
    fk_win_t *w = (fk_win_t *)(void *)win;

    if (!fk_get(cm) || !w || w->magic != FK_WIN_MAGIC) return ncclInvalidArgument;
    w->magic = 0;
    free(w);
    return ncclSuccess;
}

/* the head of NCCL 2.28.9's ncclDevCommRequirements (nccl_device/core.h) */
typedef struct {
    void *resourceRequirementsList, *teamRequirementsList;
    _Bool lsaMultimem;
} fk_devcomm_reqs_t;

/* nccl_device/core.h is not included here: the prototypes of the two */
ncclResult_t ncclDevCommCreate(ncclComm_t cm, const void *reqs, void *devcomm);
ncclResult_t ncclDevCommDestroy(ncclComm_t cm, const void *devcomm);

ncclResult_t ncclDevCommCreate(ncclComm_t cm, const void *reqs, void *devcomm)
{
    const fk_devcomm_reqs_t *r = reqs;

    (void)devcomm;
    __atomic_fetch_add(&fake_nccl_devcomm_creates, 1, __ATOMIC_RELAXED);
    if (!fk_get(cm) || !r) return ncclInvalidArgument;
    if (r->lsaMultimem) __atomic_fetch_add(&fake_nccl_multicast_requests, 1, __ATOMIC_RELAXED);
    fk_last_error = getenv("FAKE_NCCL_NO_SYMMETRIC") ? "Communicator does not support symmetric memory!"
                                                     : "not supported by the fake NCCL";
    return ncclInvalidUsage;
}

ncclResult_t ncclDevCommDestroy(ncclComm_t cm, const void *devcomm)
{
    (void)devcomm;
    return fk_get(cm) ? ncclSuccess : ncclInvalidArgument;
}

/* collectives run inside the call, so a group is nothing (nccl.h declares these without a
 * prototype) */
ncclResult_t ncclGroupStart(void);
ncclResult_t ncclGroupEnd(void);
ncclResult_t ncclGroupStart(void) { return ncclSuccess; }
ncclResult_t ncclGroupEnd(void) { return ncclSuccess; }

static size_t tsize(ncclDataType_t t)
{
    switch (t) {
    case ncclInt8: case ncclUint8: case ncclFloat8e4m3: case ncclFloat8e5m2: return 1;
    case ncclFloat16: case ncclBfloat16: return 2;
    case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
    case ncclInt64: case ncclUint64: case ncclFloat64: return 8;
    default: return 0;
    }
}

/* ---- halves: widen to float, round once (to nearest even) ---- */
static float h2f(uint16_t h)
{
    uint32_t s = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu, x;
    float f;

    if (e == 0) {
        f = (float)m * (1.0f / 16777216.0f); /* subnormal: m * 2^-24, exact */
        return s ? -f : f;
    }
    x = e == 31 ? s | 0x7f800000u | (m << 13) : s | ((e + 112u) << 23) | (m << 13);
    memcpy(&f, &x, 4);
    return f;
}

static uint16_t f2h(float f)
{
    uint32_t x, s, a;

    memcpy(&x, &f, 4);
    s = (x >> 16) & 0x8000u;
    a = x & 0x7fffffffu;
    if (a > 0x7f800000u) return (uint16_t)(s | 0x7e00u);     /* NaN */
    if (a >= 0x477ff000u) return (uint16_t)(s | 0x7c00u);    /* rounds to infinity */
    if (a < 0x38800000u) {                                   /* half subnormal (or zero) */
        float v;
        volatile float big = 12582912.0f;                    /* 1.5 * 2^23: rounds v to an integer */

        memcpy(&v, &a, 4);
        v = v * 16777216.0f + big;
        v -= big;
        return (uint16_t)(s | (uint32_t)v);
    }
    a += 0xfffu + ((a >> 13) & 1u);
    return (uint16_t)(s | ((a - (112u << 23)) >> 13));
}

static float b2f(uint16_t h)
{
    uint32_t x = (uint32_t)h << 16;
    float f;

    memcpy(&f, &x, 4);
    return f;
}

static uint16_t f2b(float f)
{
    uint32_t x;

    memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

/* out[i] = src[0][i] op src[1][i] op ... (rank order); n ranks, L elements */
#define FK_RED_INT(T, U)                                                                     \
    do {                                                                                     \
        T *o = (T *)out;                                                                     \
        for (size_t i = 0; i < L; i++) {                                                     \
            T a = ((const T *)src[0])[i];                                                    \
            for (int r = 1; r < n; r++) {                                                    \
                T b = ((const T *)src[r])[i];                                                \
                switch (op) {                                                                \
                case ncclSum: case ncclAvg: a = (T)((U)a + (U)b); break;                     \
                case ncclProd: a = (T)((U)a * (U)b); break;                                  \
                case ncclMin: a = b < a ? b : a; break;                                      \
                default: a = b > a ? b : a; break;                                           \
                }                                                                            \
            }                                                                                \
            o[i] = op == ncclAvg ? (T)(a / (T)n) : a;                                        \
        }                                                                                    \
    } while (0)
/* floating types: loaded into accumulator type A (float for the halves and f32, double for f64) */
#define FK_RED_FLT(T, A, LOAD, STORE)                                                        \
    do {                                                                                     \
        T *o = (T *)out;                                                                     \
        for (size_t i = 0; i < L; i++) {                                                     \
            A a = LOAD(((const T *)src[0])[i]);                                              \
            for (int r = 1; r < n; r++) {                                                    \
                A b = LOAD(((const T *)src[r])[i]);                                          \
                switch (op) {                                                                \
                case ncclSum: case ncclAvg: a += b; break;                                   \
                case ncclProd: a *= b; break;                                                \
                case ncclMin: a = b < a ? b : a; break;                                      \
                default: a = b > a ? b : a; break;                                           \
                }                                                                            \
            }                                                                                \
            o[i] = STORE(op == ncclAvg ? a / (A)n : a);                                      \
        }                                                                                    \
    } while (0)
#define FK_ID(x) (x)

static void fk_reduce(void *out, const unsigned char *const *src, int n, size_t L, ncclDataType_t t, ncclRedOp_t op)
{
    switch (t) {
    case ncclInt8: FK_RED_INT(int8_t, uint8_t); break;
    case ncclUint8: FK_RED_INT(uint8_t, uint8_t); break;
    case ncclInt32: FK_RED_INT(int32_t, uint32_t); break;
    case ncclUint32: FK_RED_INT(uint32_t, uint32_t); break;
    case ncclInt64: FK_RED_INT(int64_t, uint64_t); break;
    case ncclUint64: FK_RED_INT(uint64_t, uint64_t); break;
    case ncclFloat16: FK_RED_FLT(uint16_t, float, h2f, f2h); break;
    case ncclBfloat16: FK_RED_FLT(uint16_t, float, b2f, f2b); break;
    case ncclFloat32: FK_RED_FLT(float, float, FK_ID, FK_ID); break;
    default: FK_RED_FLT(double, double, FK_ID, FK_ID); break;
    }
}

static int fk_can_reduce(ncclDataType_t t, ncclRedOp_t op)
{
    return tsize(t) && t != ncclFloat8e4m3 && t != ncclFloat8e5m2 && op >= ncclSum && op <= ncclAvg;
}

static unsigned char *fk_slot(fk_comm_t *c, int r) { return c->base + (size_t)r * c->slot; }

/* Each collective: a one-rank communicator copies right away (a thin function: the instruction
 * counts of devpath-callgrind.sh see little of the fake); several ranks go through the slots. */
#define FK_ONE_RANK(_c, _s, _r, _bytes)                                                      \
    do {                                                                                     \
        if ((_c) && (_c)->nranks == 1 && (_c)->magic == FK_COMM_MAGIC) {                     \
            if ((_s) != (_r)) memmove((_r), (_s), (_bytes));                                 \
            return ncclSuccess;                                                              \
        }                                                                                    \
    } while (0)

static __attribute__((noinline)) ncclResult_t fk_allreduce(const void *s, void *rb, size_t count, ncclDataType_t t,
                                                           ncclRedOp_t op, fk_comm_t *c)
{
    size_t es = tsize(t), per, off;

    if (!c || !fk_can_reduce(t, op) || (count && (!s || !rb))) return ncclInvalidArgument;
    const unsigned char *src[c->nranks];

    c->ncalls++;
    per = c->slot / es;
    for (int r = 0; r < c->nranks; r++) src[r] = fk_slot(c, r);
    for (off = 0; off < count; off += per) {
        size_t L = count - off < per ? count - off : per;

        memcpy(fk_slot(c, c->rank), (const unsigned char *)s + off * es, L * es);
        fk_barrier(c, "the other ranks' allreduce input");
        fk_reduce((unsigned char *)rb + off * es, src, c->nranks, L, t, op);
        fk_barrier(c, "the other ranks to finish reading (allreduce)");
    }
    return ncclSuccess;
}

static __attribute__((noinline)) ncclResult_t fk_allgather(const void *s, void *rb, size_t count, ncclDataType_t t,
                                                           fk_comm_t *c)
{
    size_t es = tsize(t), per, off;

    if (!c || !es || (count && (!s || !rb))) return ncclInvalidArgument;
    c->ncalls++;
    per = c->slot / es;
    for (off = 0; off < count; off += per) {
        size_t L = count - off < per ? count - off : per;

        memcpy(fk_slot(c, c->rank), (const unsigned char *)s + off * es, L * es);
        fk_barrier(c, "the other ranks' allgather input");
        for (int r = 0; r < c->nranks; r++)
            memcpy((unsigned char *)rb + ((size_t)r * count + off) * es, fk_slot(c, r), L * es);
        fk_barrier(c, "the other ranks to finish reading (allgather)");
    }
    return ncclSuccess;
}

static __attribute__((noinline)) ncclResult_t fk_reduce_scatter(const void *s, void *rb, size_t count,
                                                                ncclDataType_t t, ncclRedOp_t op, fk_comm_t *c)
{
    size_t es = tsize(t), per, off;

    if (!c || !fk_can_reduce(t, op) || (count && (!s || !rb))) return ncclInvalidArgument;
    const unsigned char *src[c->nranks];

    c->ncalls++;
    per = c->slot / (es * (size_t)c->nranks); /* a chunk of every destination's block */
    if (!per) return ncclInvalidArgument;
    for (off = 0; off < count; off += per) {
        size_t L = count - off < per ? count - off : per;
        unsigned char *mine = fk_slot(c, c->rank);

        for (int d = 0; d < c->nranks; d++)
            memcpy(mine + (size_t)d * L * es, (const unsigned char *)s + ((size_t)d * count + off) * es, L * es);
        fk_barrier(c, "the other ranks' reduce-scatter input");
        for (int r = 0; r < c->nranks; r++) src[r] = fk_slot(c, r) + (size_t)c->rank * L * es;
        fk_reduce((unsigned char *)rb + off * es, src, c->nranks, L, t, op);
        fk_barrier(c, "the other ranks to finish reading (reduce-scatter)");
    }
    return ncclSuccess;
}

/* FAKE_NCCL_ONE_AT_A_TIME=1 (see the top): enter / leave a multi-rank collective */
static atomic_int fk_inflight;

static int fk_one_at_a_time(void)
{
    static atomic_int v = -1;
    int x = atomic_load(&v);

    if (x < 0) {
        const char *e = getenv("FAKE_NCCL_ONE_AT_A_TIME");

        x = e && *e == '1';
        atomic_store(&v, x);
    }
    return x;
}

static void fk_enter(const fk_comm_t *c)
{
    if (fk_one_at_a_time() && atomic_fetch_add(&fk_inflight, 1) > 0) {
        fprintf(stderr, "fakenccl: rank %d: two collectives of different communicators in flight at once "
                "(on a GPU their kernels could deadlock)\n", c ? c->rank : -1);
        fflush(stderr);
        abort();
    }
}

static ncclResult_t fk_leave(ncclResult_t r)
{
    if (fk_one_at_a_time()) {
        atomic_fetch_sub(&fk_inflight, 1);
    }
    return r;
}

ncclResult_t ncclAllReduce(const void *s, void *rb, size_t count, ncclDataType_t t, ncclRedOp_t op, ncclComm_t cm,
                           cudaStream_t st)
{
    fk_comm_t *c = (fk_comm_t *)cm;

    (void)st;
    FK_ONE_RANK(c, s, rb, count * tsize(t)); /* a one-rank reduction is a copy */
    fk_enter(c);
    return fk_leave(fk_allreduce(s, rb, count, t, op, fk_get(cm)));
}

ncclResult_t ncclAllGather(const void *s, void *rb, size_t count, ncclDataType_t t, ncclComm_t cm, cudaStream_t st)
{
    fk_comm_t *c = (fk_comm_t *)cm;

    (void)st;
    FK_ONE_RANK(c, s, rb, count * tsize(t));
    fk_enter(c);
    return fk_leave(fk_allgather(s, rb, count, t, fk_get(cm)));
}

ncclResult_t ncclReduceScatter(const void *s, void *rb, size_t count, ncclDataType_t t, ncclRedOp_t op,
                               ncclComm_t cm, cudaStream_t st)
{
    fk_comm_t *c = (fk_comm_t *)cm;

    (void)st;
    FK_ONE_RANK(c, s, rb, count * tsize(t));
    fk_enter(c);
    return fk_leave(fk_reduce_scatter(s, rb, count, t, op, fk_get(cm)));
}
