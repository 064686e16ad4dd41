/* ginlb_plugin.c: tlmpi's loopback NCCL network + GIN plugin, a test fixture (never installed).
 *
 * Contract (NCCL 2.28.9, ABI declared in ginlb_abi.h): exports "ncclNetPlugin_v11" (ncclNet_v11_t)
 * and "ncclGinPlugin_v11" (ncclGin_v11_t), the symbols src/plugin/net/net_v11.cc looks up, so that
 * NCCL_NET_PLUGIN=<this .so> gives NCCL
 *  - a network between the fake nodes of one host (NCCL_HOSTID per fake node): one device,
 *    host memory only (NCCL stages through its host buffers), each connection one Unix stream
 *    socket (abstract name), each message a 16-byte header (size, tag) and its bytes, requests
 *    completed in posting order by non-blocking progress in test();
 *  - GIN in proxy mode: getProperties says NCCL_NET_DEVICE_GIN_PROXY, so NCCL's CPU proxy
 *    (src/gin/gin_host_proxy.cc) turns the device API's puts into iput/iputSignal calls here.
 *    connect() builds a full mesh between the nranks ranks (two Unix seqpacket sockets per ordered
 *    pair: control and signals). regMrSym() is collective: each rank exports its buffer and every
 *    other rank maps it: cuMem device memory as a POSIX file descriptor (cuMemExportToShareableHandle,
 *    passed with SCM_RIGHTS, imported and cuMemMap'ed), cudaMalloc memory through CUDA IPC, host
 *    memory of a shared file mapping (/dev/shm: the CPU-box "device memory") by its file. Memory that
 *    cannot be exported (NCCL's signal buffer has no shareable handle type, its inline buffer is heap)
 *    is registered for local use only: a put source, or the target of signals.
 *    iput/iputSignal queue an operation on the collComm's engine thread, which executes them in
 *    posting order (one context = one ordered queue, as one QP): the data is a copy into the peer's
 *    mapping (cuMemcpyAsync on the engine's own non-blocking stream, then a stream synchronize; a
 *    memcpy for host memory); for iputSignal the signal is sent to the target only after that copy,
 *    and of every earlier put of this collComm, has completed. The target applies it to its signal
 *    (64-bit add: INC adds 1, ADD the value) in its ginProgress()/test(): host memory by an atomic
 *    add, device memory by a read-modify-write through the copy engine on a private non-blocking
 *    stream (only the target's progress writes its signals from the host, so no other writer races
 *    it; the device's own resetSignal is only allowed with no update in flight). test() says done
 *    only when the engine has executed the operation (the data copied and the signal sent).
 *  - the CUDA driver is reached by dlopen("libcuda.so.1") (never linked); without it, or with
 *    TLMPI_GINLB_HOST=1, every buffer is host memory (the CPU-box mode of tests/gin-loopback).
 *  - TLMPI_GINLB_MUTANT=signal_first (the signal is sent before the data copy) and =early_done
 *    (test says done when the operation is queued) break the contract on purpose: the fixture's
 *    own test (gin-loopback.sh) must catch both.
 * Correctness over speed: one copy and one socket message per operation. */
#define _GNU_SOURCE
#include "ginlb_abi.h"

#include <cuda.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define GINLB_EXPORT __attribute__((visibility("default")))
#define GINLB_MAGIC 0x4c424e47u /* "GNBL" */

/* ---------------------------------------------------------------- logging */
static ginlb_logger_t g_log;
#define WARN(...) ginlb_log(GINLB_LOG_WARN, __LINE__, __VA_ARGS__)
#define INFO(...) ginlb_log(GINLB_LOG_INFO, __LINE__, __VA_ARGS__)
static void ginlb_log(int level, int line, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (g_log)
        g_log(level, GINLB_SUBSYS_NET, __FILE__, line, "GINLB %s", msg);
    else if (level == GINLB_LOG_WARN || getenv("TLMPI_GINLB_DEBUG"))
        fprintf(stderr, "GINLB[%d] %s: %s\n", (int)getpid(), level == GINLB_LOG_WARN ? "WARN" : "INFO", msg);
}

enum { MUTANT_NONE = 0, MUTANT_SIGNAL_FIRST, MUTANT_EARLY_DONE };
static int g_mutant = -1;
static int mutant(void) {
    if (g_mutant < 0) {
        const char *m = getenv("TLMPI_GINLB_MUTANT");
        g_mutant = MUTANT_NONE;
        if (m && !strcmp(m, "signal_first")) g_mutant = MUTANT_SIGNAL_FIRST;
        else if (m && !strcmp(m, "early_done")) g_mutant = MUTANT_EARLY_DONE;
        if (g_mutant != MUTANT_NONE) WARN("MUTANT %s active: this plugin breaks the GIN contract on purpose", m);
    }
    return g_mutant;
}

/* ---------------------------------------------------------------- CUDA driver (dlopen) */
static struct {
    int ok; /* 1: driver usable */
    CUresult (*cuInit)(unsigned);
    CUresult (*cuCtxGetCurrent)(CUcontext *);
    CUresult (*cuCtxSetCurrent)(CUcontext);
    CUresult (*cuCtxGetDevice)(CUdevice *);
    CUresult (*cuPointerGetAttribute)(void *, CUpointer_attribute, CUdeviceptr);
    CUresult (*cuMemGetAddressRange)(CUdeviceptr *, size_t *, CUdeviceptr);
    CUresult (*cuMemRetainAllocationHandle)(CUmemGenericAllocationHandle *, void *);
    CUresult (*cuMemExportToShareableHandle)(void *, CUmemGenericAllocationHandle, CUmemAllocationHandleType,
                                             unsigned long long);
    CUresult (*cuMemImportFromShareableHandle)(CUmemGenericAllocationHandle *, void *, CUmemAllocationHandleType);
    CUresult (*cuMemAddressReserve)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long);
    CUresult (*cuMemAddressFree)(CUdeviceptr, size_t);
    CUresult (*cuMemMap)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long);
    CUresult (*cuMemUnmap)(CUdeviceptr, size_t);
    CUresult (*cuMemSetAccess)(CUdeviceptr, size_t, const CUmemAccessDesc *, size_t);
    CUresult (*cuMemRelease)(CUmemGenericAllocationHandle);
    CUresult (*cuStreamCreate)(CUstream *, unsigned);
    CUresult (*cuStreamDestroy)(CUstream);
    CUresult (*cuStreamSynchronize)(CUstream);
    CUresult (*cuMemcpyAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
    CUresult (*cuMemcpyDtoHAsync)(void *, CUdeviceptr, size_t, CUstream);
    CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr, const void *, size_t, CUstream);
    CUresult (*cuIpcGetMemHandle)(CUipcMemHandle *, CUdeviceptr);
    CUresult (*cuIpcOpenMemHandle)(CUdeviceptr *, CUipcMemHandle, unsigned);
    CUresult (*cuIpcCloseMemHandle)(CUdeviceptr);
    CUresult (*cuGetErrorString)(CUresult, const char **);
} cu;
static pthread_once_t cu_once = PTHREAD_ONCE_INIT;

static void cu_load(void) {
    const char *h = getenv("TLMPI_GINLB_HOST");
    if (h && *h && strcmp(h, "0")) {
        INFO("TLMPI_GINLB_HOST set: host memory only");
        return;
    }
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        INFO("no libcuda.so.1 (%s): host memory only", dlerror());
        return;
    }
#define LOAD(field, sym)                                                  \
    do {                                                                  \
        *(void **)&cu.field = dlsym(lib, sym);                            \
        if (!cu.field) {                                                  \
            WARN("libcuda.so.1 lacks %s: host memory only", sym);         \
            return;                                                       \
        }                                                                 \
    } while (0)
    LOAD(cuInit, "cuInit");
    LOAD(cuCtxGetCurrent, "cuCtxGetCurrent");
    LOAD(cuCtxSetCurrent, "cuCtxSetCurrent");
    LOAD(cuCtxGetDevice, "cuCtxGetDevice");
    LOAD(cuPointerGetAttribute, "cuPointerGetAttribute");
    LOAD(cuMemGetAddressRange, "cuMemGetAddressRange_v2");
    LOAD(cuMemRetainAllocationHandle, "cuMemRetainAllocationHandle");
    LOAD(cuMemExportToShareableHandle, "cuMemExportToShareableHandle");
    LOAD(cuMemImportFromShareableHandle, "cuMemImportFromShareableHandle");
    LOAD(cuMemAddressReserve, "cuMemAddressReserve");
    LOAD(cuMemAddressFree, "cuMemAddressFree");
    LOAD(cuMemMap, "cuMemMap");
    LOAD(cuMemUnmap, "cuMemUnmap");
    LOAD(cuMemSetAccess, "cuMemSetAccess");
    LOAD(cuMemRelease, "cuMemRelease");
    LOAD(cuStreamCreate, "cuStreamCreate");
    LOAD(cuStreamDestroy, "cuStreamDestroy_v2");
    LOAD(cuStreamSynchronize, "cuStreamSynchronize");
    LOAD(cuMemcpyAsync, "cuMemcpyAsync");
    LOAD(cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2");
    LOAD(cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2");
    LOAD(cuIpcGetMemHandle, "cuIpcGetMemHandle");
    LOAD(cuIpcOpenMemHandle, "cuIpcOpenMemHandle_v2");
    LOAD(cuIpcCloseMemHandle, "cuIpcCloseMemHandle");
    LOAD(cuGetErrorString, "cuGetErrorString");
#undef LOAD
    CUresult r = cu.cuInit(0);
    if (r != CUDA_SUCCESS) {
        INFO("cuInit failed (%d): host memory only", (int)r);
        return;
    }
    cu.ok = 1;
}
static int cu_ready(void) {
    pthread_once(&cu_once, cu_load);
    return cu.ok;
}
static const char *cu_err(CUresult r) {
    const char *s = NULL;
    if (cu.cuGetErrorString) cu.cuGetErrorString(r, &s);
    return s ? s : "?";
}
/* is p device memory of the current context's process? (0 without CUDA) */
static int is_device_ptr(const void *p) {
    if (!cu_ready() || !p) return 0;
    unsigned int mt = 0;
    if (cu.cuPointerGetAttribute(&mt, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)(uintptr_t)p) != CUDA_SUCCESS)
        return 0;
    return mt == CU_MEMORYTYPE_DEVICE;
}

/* ---------------------------------------------------------------- sockets */
typedef struct {
    uint32_t magic;
    uint32_t kind; /* 1 net, 2 gin */
    char name[108]; /* abstract Unix socket name; name[0] == 0 */
} ginlb_handle_t;
_Static_assert(sizeof(ginlb_handle_t) <= GINLB_HANDLE_MAXSIZE, "handle too large");

static socklen_t make_addr(struct sockaddr_un *a, const char *name) {
    memset(a, 0, sizeof *a);
    a->sun_family = AF_UNIX;
    size_t n = 1 + strlen(name + 1);
    memcpy(a->sun_path, name, n);
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
}

static int listen_socket(int type, ginlb_handle_t *h, uint32_t kind) {
    static unsigned counter;
    int fd = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    memset(h, 0, sizeof *h);
    h->magic = GINLB_MAGIC;
    h->kind = kind;
    snprintf(h->name + 1, sizeof h->name - 1, "tlmpi-ginlb-%d-%u-%u-%lx", (int)getpid(), kind,
             __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED), (unsigned long)(uintptr_t)h);
    struct sockaddr_un a;
    socklen_t len = make_addr(&a, h->name);
    if (bind(fd, (struct sockaddr *)&a, len) || listen(fd, 1024)) {
        WARN("bind/listen %s: %s", h->name + 1, strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

static int set_nonblock(int fd) {
    int fl = fcntl(fd, F_GETFL);
    return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

/* blocking full write/read of a stream or seqpacket socket */
static int write_all(int fd, const void *buf, size_t n) {
    const char *p = buf;
    while (n) {
        ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            struct pollfd pf = {fd, POLLOUT, 0};
            poll(&pf, 1, 100);
            continue;
        }
        if (k <= 0) return -1;
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

/* one message with an optional file descriptor (SCM_RIGHTS) on a seqpacket socket */
static int send_msg_fd(int sock, const void *buf, size_t n, int fd) {
    struct iovec iov = {(void *)buf, n};
    struct msghdr mh;
    char cbuf[CMSG_SPACE(sizeof(int))];
    memset(&mh, 0, sizeof mh);
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    if (fd >= 0) {
        memset(cbuf, 0, sizeof cbuf);
        mh.msg_control = cbuf;
        mh.msg_controllen = sizeof cbuf;
        struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &fd, sizeof(int));
    }
    for (;;) {
        ssize_t k = sendmsg(sock, &mh, MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR) continue;
        return k == (ssize_t)n ? 0 : -1;
    }
}
static int recv_msg_fd(int sock, void *buf, size_t n, int *fd) {
    struct iovec iov = {buf, n};
    struct msghdr mh;
    char cbuf[CMSG_SPACE(sizeof(int))];
    memset(&mh, 0, sizeof mh);
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = cbuf;
    mh.msg_controllen = sizeof cbuf;
    *fd = -1;
    ssize_t k;
    do k = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
    while (k < 0 && errno == EINTR);
    if (k != (ssize_t)n) return -1;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) memcpy(fd, CMSG_DATA(c), sizeof(int));
    return 0;
}

static ginlb_props_t base_props(int dev, ginlb_device_type_t type, int ptr) {
    ginlb_props_t p;
    memset(&p, 0, sizeof p);
    p.name = (char *)(type == GINLB_DEVICE_HOST ? "tlmpi_loopback" : "tlmpi_loopback_gin");
    p.pciPath = NULL; /* no PCI device: NCCL attaches the NIC to the CPU */
    p.guid = 0x746c6d7069000000ull + (uint64_t)dev;
    p.ptrSupport = ptr;
    p.regIsGlobal = 0;
    p.forceFlush = 0;
    p.speed = 100000;
    p.port = 0;
    p.latency = 0;
    p.maxComms = 1024 * 1024;
    p.maxRecvs = 1;
    p.netDeviceType = type;
    p.netDeviceVersion = GINLB_DEVICE_INVALID_VERSION;
    p.vProps.ndevs = 1;
    p.vProps.devs[0] = dev;
    p.maxP2pBytes = GINLB_MAX_NET_SIZE_BYTES;
    p.maxCollBytes = GINLB_MAX_COLLNET_SIZE;
    p.maxMultiRequestSize = 1;
    return p;
}

/* ================================================================ ncclNet_v11 */
typedef struct {
    uint64_t size;
    int32_t tag;
    uint32_t magic;
} net_hdr_t;

typedef struct net_req {
    struct net_comm *comm;
    int used, is_send, done;
    char *data;
    size_t cap;      /* recv: the posted size; send: the size */
    net_hdr_t hdr;   /* send: to write; recv: read */
    size_t hdr_done; /* header bytes moved */
    size_t data_done;
    int error;
} net_req_t;

typedef struct net_comm {
    int fd;
    int is_send;
    net_req_t reqs[GINLB_MAX_REQUESTS];
    int order[GINLB_MAX_REQUESTS]; /* posted, not yet complete, oldest first */
    int npending;
} net_comm_t;

typedef struct {
    int fd;
    ginlb_handle_t h;
} net_listen_t;

static ginlb_result_t net_init(void **ctx, uint64_t commId, ginlb_comm_config_t *config, ginlb_logger_t log,
                               ginlb_prof_cb_t prof) {
    (void)commId, (void)config, (void)prof;
    if (log) g_log = log;
    *ctx = (void *)&g_log;
    mutant();
    INFO("net init (loopback over Unix sockets, host memory)");
    return ginlbSuccess;
}
static ginlb_result_t net_devices(int *ndev) {
    *ndev = 1;
    return ginlbSuccess;
}
static ginlb_result_t net_get_properties(int dev, ginlb_props_t *props) {
    if (dev != 0) return ginlbInvalidArgument;
    *props = base_props(dev, GINLB_DEVICE_HOST, GINLB_PTR_HOST);
    return ginlbSuccess;
}
static ginlb_result_t net_listen(void *ctx, int dev, void *handle, void **listenComm) {
    (void)ctx, (void)dev;
    net_listen_t *l = calloc(1, sizeof *l);
    if (!l) return ginlbSystemError;
    l->fd = listen_socket(SOCK_STREAM, &l->h, 1);
    if (l->fd < 0 || set_nonblock(l->fd)) {
        free(l);
        return ginlbSystemError;
    }
    memset(handle, 0, GINLB_HANDLE_MAXSIZE);
    memcpy(handle, &l->h, sizeof l->h);
    *listenComm = l;
    return ginlbSuccess;
}
static net_comm_t *net_comm_new(int fd, int is_send) {
    net_comm_t *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->fd = fd;
    c->is_send = is_send;
    for (int i = 0; i < GINLB_MAX_REQUESTS; i++) c->reqs[i].comm = c;
    return c;
}
static ginlb_result_t net_connect(void *ctx, int dev, void *handle, void **sendComm, ginlb_dev_handle_t **sendDevComm) {
    (void)ctx, (void)dev;
    *sendComm = NULL;
    if (sendDevComm) *sendDevComm = NULL; /* no device offload */
    ginlb_handle_t h;
    memcpy(&h, handle, sizeof h);
    if (h.magic != GINLB_MAGIC || h.kind != 1) {
        WARN("net connect: not a loopback handle");
        return ginlbInternalError;
    }
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) return ginlbSystemError;
    struct sockaddr_un a;
    socklen_t len = make_addr(&a, h.name);
    if (connect(fd, (struct sockaddr *)&a, len)) {
        int e = errno;
        close(fd);
        if (e == EAGAIN || e == EINPROGRESS) return ginlbSuccess; /* backlog full: NCCL calls again */
        WARN("net connect %s: %s", h.name + 1, strerror(e));
        return ginlbSystemError;
    }
    *sendComm = net_comm_new(fd, 1);
    return *sendComm ? ginlbSuccess : ginlbSystemError;
}
static ginlb_result_t net_accept(void *listenComm, void **recvComm, ginlb_dev_handle_t **recvDevComm) {
    net_listen_t *l = listenComm;
    *recvComm = NULL;
    if (recvDevComm) *recvDevComm = NULL;
    int fd = accept4(l->fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return ginlbSuccess; /* not yet */
        WARN("net accept: %s", strerror(errno));
        return ginlbSystemError;
    }
    *recvComm = net_comm_new(fd, 0);
    return *recvComm ? ginlbSuccess : ginlbSystemError;
}
static int g_mr_token;
static ginlb_result_t net_reg_mr(void *comm, void *data, size_t size, int type, void **mhandle) {
    (void)comm, (void)data, (void)size;
    if (type != GINLB_PTR_HOST) return ginlbInternalError;
    *mhandle = &g_mr_token;
    return ginlbSuccess;
}
static ginlb_result_t net_reg_mr_dmabuf(void *comm, void *data, size_t size, int type, uint64_t offset, int fd,
                                        void **mhandle) {
    (void)offset, (void)fd;
    return net_reg_mr(comm, data, size, type, mhandle);
}
static ginlb_result_t net_dereg_mr(void *comm, void *mhandle) {
    (void)comm, (void)mhandle;
    return ginlbSuccess;
}
static net_req_t *net_req_get(net_comm_t *c) {
    for (int i = 0; i < GINLB_MAX_REQUESTS; i++)
        if (!c->reqs[i].used) {
            net_req_t *r = &c->reqs[i];
            memset((char *)r + sizeof r->comm, 0, sizeof *r - sizeof r->comm);
            r->used = 1;
            c->order[c->npending++] = i;
            return r;
        }
    return NULL;
}
/* move bytes of the oldest pending requests until the socket would block */
static ginlb_result_t net_progress(net_comm_t *c) {
    while (c->npending) {
        net_req_t *r = &c->reqs[c->order[0]];
        while (!r->done) {
            char *p;
            size_t left;
            if (r->hdr_done < sizeof r->hdr) {
                p = (char *)&r->hdr + r->hdr_done;
                left = sizeof r->hdr - r->hdr_done;
            } else {
                size_t total = r->is_send ? r->cap : r->hdr.size;
                if (!r->is_send && (r->hdr.magic != GINLB_MAGIC || r->hdr.size > r->cap)) {
                    WARN("net recv: message of %" PRIu64 " bytes into %zu (magic %x)", r->hdr.size, r->cap,
                         r->hdr.magic);
                    return ginlbInternalError;
                }
                if (r->data_done == total) {
                    r->done = 1;
                    break;
                }
                p = r->data + r->data_done;
                left = total - r->data_done;
            }
            ssize_t k = r->is_send ? send(c->fd, p, left, MSG_NOSIGNAL | MSG_DONTWAIT)
                                   : recv(c->fd, p, left, MSG_DONTWAIT);
            if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return ginlbSuccess;
            if (k <= 0) {
                WARN("net %s: %s", r->is_send ? "send" : "recv", k == 0 ? "peer closed" : strerror(errno));
                return ginlbRemoteError;
            }
            if (r->hdr_done < sizeof r->hdr)
                r->hdr_done += (size_t)k;
            else
                r->data_done += (size_t)k;
        }
        memmove(c->order, c->order + 1, (size_t)(--c->npending) * sizeof c->order[0]);
    }
    return ginlbSuccess;
}
static ginlb_result_t net_isend(void *sendComm, void *data, size_t size, int tag, void *mhandle, void *phandle,
                                void **request) {
    (void)mhandle, (void)phandle;
    net_comm_t *c = sendComm;
    net_req_t *r = net_req_get(c);
    *request = r;
    if (!r) return ginlbSuccess; /* NCCL retries */
    r->is_send = 1;
    r->data = data;
    r->cap = size;
    r->hdr.size = size;
    r->hdr.tag = tag;
    r->hdr.magic = GINLB_MAGIC;
    return net_progress(c);
}
static ginlb_result_t net_irecv(void *recvComm, int n, void **data, size_t *sizes, int *tags, void **mhandles,
                                void **phandles, void **request) {
    (void)tags, (void)mhandles, (void)phandles;
    net_comm_t *c = recvComm;
    if (n != 1) {
        WARN("net irecv of %d buffers (maxRecvs is 1)", n);
        return ginlbInternalError;
    }
    net_req_t *r = net_req_get(c);
    *request = r;
    if (!r) return ginlbSuccess;
    r->data = data[0];
    r->cap = sizes[0];
    return net_progress(c);
}
static ginlb_result_t net_iflush(void *recvComm, int n, void **data, int *sizes, void **mhandles, void **request) {
    (void)recvComm, (void)n, (void)data, (void)sizes, (void)mhandles;
    *request = NULL; /* host memory: nothing to flush */
    return ginlbSuccess;
}
static ginlb_result_t net_test(void *request, int *done, int *sizes) {
    net_req_t *r = request;
    *done = 0;
    ginlb_result_t res = net_progress(r->comm);
    if (res != ginlbSuccess) return res;
    if (r->done) {
        *done = 1;
        if (sizes) *sizes = (int)(r->is_send ? r->cap : r->hdr.size);
        r->used = 0;
    }
    return ginlbSuccess;
}
static ginlb_result_t net_close(void *comm) {
    net_comm_t *c = comm;
    if (c) {
        close(c->fd);
        free(c);
    }
    return ginlbSuccess;
}
static ginlb_result_t net_close_listen(void *listenComm) {
    net_listen_t *l = listenComm;
    if (l) {
        close(l->fd);
        free(l);
    }
    return ginlbSuccess;
}
static ginlb_result_t net_finalize(void *ctx) {
    (void)ctx;
    return ginlbSuccess;
}
static ginlb_result_t net_set_attr(void *ctx, ginlb_net_attr_t *attr) {
    (void)ctx, (void)attr;
    return ginlbSuccess;
}

GINLB_EXPORT const ginlb_net_v11_t ncclNetPlugin_v11 = {
    .name = "tlmpi_loopback",
    .init = net_init,
    .devices = net_devices,
    .getProperties = net_get_properties,
    .listen = net_listen,
    .connect = net_connect,
    .accept = net_accept,
    .regMr = net_reg_mr,
    .regMrDmaBuf = net_reg_mr_dmabuf,
    .deregMr = net_dereg_mr,
    .isend = net_isend,
    .irecv = net_irecv,
    .iflush = net_iflush,
    .test = net_test,
    .closeSend = net_close,
    .closeRecv = net_close,
    .closeListen = net_close_listen,
    .getDeviceMr = NULL,
    .irecvConsumed = NULL,
    .makeVDevice = NULL,
    .finalize = net_finalize,
    .setNetAttr = net_set_attr,
};

/* ================================================================ ncclGin_v11 (proxy mode) */
enum { MAP_NONE = 0, MAP_CUMEM = 1, MAP_IPC = 2, MAP_HOST = 3 };

typedef struct gin_reg {
    struct gin_reg *next;
    uint32_t id;     /* the registration's position in the collComm's sequence: the same on every rank */
    char *base;      /* the local address registered */
    size_t size;
    int is_dev;
    char **peer;     /* peer[r]: rank r's buffer as mapped here (NULL: not mappable) */
    size_t *peer_size;
    int *map_kind;
    uintptr_t *map_addr; /* what to unmap */
    size_t *map_len;
} gin_reg_t;

typedef struct gin_op {
    struct gin_op *next;
    const char *src;
    char *dst;
    size_t size;
    int dev_copy;
    uint32_t peer;
    int has_signal;
    uint32_t sig_reg;
    uint64_t sig_off, sig_add;
    int done; /* atomic */
} gin_op_t;

typedef struct {
    uint32_t magic;
    uint32_t reg;
    uint64_t off;
    uint64_t add;
} sig_msg_t;

typedef struct {
    uint32_t magic;
    uint32_t reg;
    uint64_t size;
    int32_t kind;
    int32_t is_dev;
    uint64_t map_len;
    uint64_t data_off;
    CUipcMemHandle ipc;
} reg_msg_t;

typedef struct {
    uint32_t magic;
    int32_t rank;
    int32_t mesh; /* 0 control, 1 signals */
    int32_t pad;
} hello_t;

typedef struct {
    int rank, nranks;
    int *ctrl_out, *ctrl_in, *sig_out, *sig_in;
    CUcontext ctx; /* NULL: host memory only */
    CUstream copy_stream, sig_stream;
    pthread_mutex_t reg_lock; /* the registration list */
    pthread_mutex_t sig_lock; /* applying signals (progress thread, and the engine for self-signals) */
    gin_reg_t *regs;
    uint32_t next_id;
    /* the engine: operations in posting order */
    pthread_t engine;
    int engine_started;
    pthread_mutex_t q_lock;
    pthread_cond_t q_cond;
    gin_op_t *q_head, *q_tail;
    int stop;
    int error; /* atomic: first failure (ginlb_result_t) */
    sig_msg_t *batch;
    size_t batch_cap;
} gin_coll_t;

typedef struct {
    int fd;
    ginlb_handle_t h;
} gin_listen_t;

static void ctx_make_current(CUcontext ctx) {
    static __thread CUcontext cur;
    if (ctx && cur != ctx) {
        if (cu.cuCtxSetCurrent(ctx) == CUDA_SUCCESS) cur = ctx;
    }
}

static ginlb_result_t gin_init(void **ctx, uint64_t commId, ginlb_logger_t log) {
    (void)commId;
    if (log) g_log = log;
    *ctx = (void *)&g_log;
    mutant();
    INFO("GIN init (proxy mode, %s)", cu_ready() ? "CUDA driver loaded" : "host memory only");
    return ginlbSuccess;
}
static ginlb_result_t gin_get_properties(int dev, ginlb_props_t *props) {
    if (dev != 0) return ginlbInvalidArgument;
    /* no NCCL_PTR_DMABUF: NCCL's proxy then registers CUDA memory through regMrSym */
    *props = base_props(dev, GINLB_DEVICE_GIN_PROXY, GINLB_PTR_HOST | GINLB_PTR_CUDA);
    return ginlbSuccess;
}
static ginlb_result_t gin_listen(void *ctx, int dev, void *handle, void **listenComm) {
    (void)ctx, (void)dev;
    gin_listen_t *l = calloc(1, sizeof *l);
    if (!l) return ginlbSystemError;
    l->fd = listen_socket(SOCK_SEQPACKET, &l->h, 2);
    if (l->fd < 0) {
        free(l);
        return ginlbSystemError;
    }
    memset(handle, 0, GINLB_HANDLE_MAXSIZE);
    memcpy(handle, &l->h, sizeof l->h);
    *listenComm = l;
    return ginlbSuccess;
}
static ginlb_result_t gin_close_listen(void *listenComm) {
    return net_close_listen(listenComm);
}

static void set_error(gin_coll_t *c, ginlb_result_t r) {
    int expect = 0;
    __atomic_compare_exchange_n(&c->error, &expect, (int)r, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
}

static gin_reg_t *find_reg(gin_coll_t *c, uint32_t id) {
    pthread_mutex_lock(&c->reg_lock);
    gin_reg_t *g = c->regs;
    while (g && g->id != id) g = g->next;
    pthread_mutex_unlock(&c->reg_lock);
    return g;
}

/* add `add` to this rank's 64-bit signal at byte `off` of registration `reg` */
static ginlb_result_t apply_signal(gin_coll_t *c, uint32_t reg, uint64_t off, uint64_t add) {
    gin_reg_t *g = find_reg(c, reg);
    if (!g || off + 8 > g->size || (off & 7)) {
        WARN("signal at %" PRIu64 " of registration %u: %s", off, reg, g ? "out of range" : "no such registration");
        return ginlbInternalError;
    }
    char *p = g->base + off;
    ginlb_result_t res = ginlbSuccess;
    pthread_mutex_lock(&c->sig_lock);
    if (g->is_dev) {
        ctx_make_current(c->ctx);
        uint64_t v = 0;
        CUresult r = cu.cuMemcpyDtoHAsync(&v, (CUdeviceptr)(uintptr_t)p, 8, c->sig_stream);
        if (r == CUDA_SUCCESS) r = cu.cuStreamSynchronize(c->sig_stream);
        v += add;
        if (r == CUDA_SUCCESS) r = cu.cuMemcpyHtoDAsync((CUdeviceptr)(uintptr_t)p, &v, 8, c->sig_stream);
        if (r == CUDA_SUCCESS) r = cu.cuStreamSynchronize(c->sig_stream);
        if (r != CUDA_SUCCESS) {
            WARN("signal update: %s", cu_err(r));
            res = ginlbUnhandledCudaError;
        }
    } else {
        __atomic_fetch_add((uint64_t *)(void *)p, add, __ATOMIC_SEQ_CST);
    }
    pthread_mutex_unlock(&c->sig_lock);
    return res;
}

static ginlb_result_t send_signal(gin_coll_t *c, gin_op_t *op) {
    if ((int)op->peer == c->rank) return apply_signal(c, op->sig_reg, op->sig_off, op->sig_add);
    sig_msg_t m = {GINLB_MAGIC, op->sig_reg, op->sig_off, op->sig_add};
    if (write_all(c->sig_out[op->peer], &m, sizeof m)) {
        WARN("signal to rank %u: %s", op->peer, strerror(errno));
        return ginlbRemoteError;
    }
    return ginlbSuccess;
}

static ginlb_result_t do_copy(gin_coll_t *c, gin_op_t *op) {
    if (!op->size) return ginlbSuccess;
    if (!op->dev_copy) { /* host memory: 1 MiB at a time, letting others run between (a DMA engine's pace) */
        for (size_t o = 0; o < op->size; o += (size_t)1 << 20) {
            size_t n = op->size - o < ((size_t)1 << 20) ? op->size - o : (size_t)1 << 20;
            memcpy(op->dst + o, op->src + o, n);
            if (o + n < op->size) sched_yield();
        }
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
        return ginlbSuccess;
    }
    ctx_make_current(c->ctx);
    CUresult r = cu.cuMemcpyAsync((CUdeviceptr)(uintptr_t)op->dst, (CUdeviceptr)(uintptr_t)op->src, op->size,
                                  c->copy_stream);
    if (r == CUDA_SUCCESS) r = cu.cuStreamSynchronize(c->copy_stream);
    if (r != CUDA_SUCCESS) {
        WARN("put of %zu bytes to rank %u: %s", op->size, op->peer, cu_err(r));
        return ginlbUnhandledCudaError;
    }
    return ginlbSuccess;
}

static void *engine_main(void *arg) {
    gin_coll_t *c = arg;
    for (;;) {
        pthread_mutex_lock(&c->q_lock);
        while (!c->q_head && !c->stop) pthread_cond_wait(&c->q_cond, &c->q_lock);
        gin_op_t *op = c->q_head;
        if (op) {
            c->q_head = op->next;
            if (!c->q_head) c->q_tail = NULL;
        }
        pthread_mutex_unlock(&c->q_lock);
        if (!op) break; /* stopped and drained */
        ginlb_result_t r = ginlbSuccess;
        if (!__atomic_load_n(&c->error, __ATOMIC_ACQUIRE)) {
            if (op->has_signal && mutant() == MUTANT_SIGNAL_FIRST) r = send_signal(c, op);
            if (r == ginlbSuccess) r = do_copy(c, op);
            if (r == ginlbSuccess && op->has_signal && mutant() != MUTANT_SIGNAL_FIRST) r = send_signal(c, op);
            if (r != ginlbSuccess) set_error(c, r);
        }
        __atomic_store_n(&op->done, 1, __ATOMIC_RELEASE);
    }
    return NULL;
}

static ginlb_result_t gin_connect(void *ctx, void *handles[], int nranks, int rank, void *listenComm,
                                  void **collComm) {
    (void)ctx;
    gin_listen_t *l = listenComm;
    *collComm = NULL;
    gin_coll_t *c = calloc(1, sizeof *c);
    if (!c) return ginlbSystemError;
    c->rank = rank;
    c->nranks = nranks;
    c->ctrl_out = malloc(4 * (size_t)nranks * sizeof(int));
    if (!c->ctrl_out) {
        free(c);
        return ginlbSystemError;
    }
    c->ctrl_in = c->ctrl_out + nranks;
    c->sig_out = c->ctrl_in + nranks;
    c->sig_in = c->sig_out + nranks;
    for (int i = 0; i < 4 * nranks; i++) c->ctrl_out[i] = -1;
    pthread_mutex_init(&c->reg_lock, NULL);
    pthread_mutex_init(&c->sig_lock, NULL);
    pthread_mutex_init(&c->q_lock, NULL);
    pthread_cond_init(&c->q_cond, NULL);
    ginlb_result_t res = ginlbSuccess;
    /* outgoing: two connections to every peer (a Unix connect completes without the accept) */
    for (int r = 0; r < nranks && res == ginlbSuccess; r++) {
        if (r == rank) continue;
        ginlb_handle_t h;
        memcpy(&h, handles[r], sizeof h);
        if (h.magic != GINLB_MAGIC || h.kind != 2) {
            WARN("GIN connect: rank %d's handle is not a loopback GIN handle", r);
            res = ginlbInternalError;
            break;
        }
        for (int mesh = 0; mesh < 2; mesh++) {
            int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
            struct sockaddr_un a;
            socklen_t len = make_addr(&a, h.name);
            hello_t hello = {GINLB_MAGIC, rank, mesh, 0};
            if (fd < 0 || connect(fd, (struct sockaddr *)&a, len) || write_all(fd, &hello, sizeof hello)) {
                WARN("GIN connect to rank %d: %s", r, strerror(errno));
                if (fd >= 0) close(fd);
                res = ginlbSystemError;
                break;
            }
            (mesh ? c->sig_out : c->ctrl_out)[r] = fd;
        }
    }
    /* incoming: 2 (nranks - 1) connections, each names its rank and mesh */
    for (int i = 0; i < 2 * (nranks - 1) && res == ginlbSuccess; i++) {
        int fd;
        do fd = accept4(l->fd, NULL, NULL, SOCK_CLOEXEC);
        while (fd < 0 && errno == EINTR);
        hello_t hello;
        int dummy;
        if (fd < 0 || recv_msg_fd(fd, &hello, sizeof hello, &dummy) || hello.magic != GINLB_MAGIC ||
            hello.rank < 0 || hello.rank >= nranks || hello.rank == rank ||
            (hello.mesh ? c->sig_in : c->ctrl_in)[hello.rank] >= 0) {
            WARN("GIN accept: %s", fd < 0 ? strerror(errno) : "bad hello");
            if (fd >= 0) close(fd);
            res = ginlbSystemError;
            break;
        }
        (hello.mesh ? c->sig_in : c->ctrl_in)[hello.rank] = fd;
    }
    if (res == ginlbSuccess && cu_ready()) {
        CUcontext cur = NULL;
        if (cu.cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur) {
            c->ctx = cur;
            if (cu.cuStreamCreate(&c->copy_stream, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS ||
                cu.cuStreamCreate(&c->sig_stream, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) {
                WARN("GIN connect: cuStreamCreate failed");
                res = ginlbUnhandledCudaError;
            }
        } else {
            INFO("GIN connect: no current CUDA context: host memory only");
        }
    }
    if (res == ginlbSuccess) {
        if (pthread_create(&c->engine, NULL, engine_main, c)) res = ginlbSystemError;
        else c->engine_started = 1;
    }
    if (res != ginlbSuccess) {
        for (int i = 0; i < 4 * nranks; i++)
            if (c->ctrl_out[i] >= 0) close(c->ctrl_out[i]);
        free(c->ctrl_out);
        free(c);
        return res;
    }
    INFO("GIN connected: rank %d of %d, %s", rank, nranks, c->ctx ? "CUDA" : "host memory");
    *collComm = c;
    return ginlbSuccess;
}

/* what this rank can give its peers for [data, data+size) */
static void export_local(gin_coll_t *c, void *data, size_t size, int is_dev, reg_msg_t *m, int *fd) {
    *fd = -1;
    m->kind = MAP_NONE;
    if (is_dev) {
        ctx_make_current(c->ctx);
        CUdeviceptr base = 0;
        size_t len = 0;
        CUmemGenericAllocationHandle h;
        if (cu.cuMemGetAddressRange(&base, &len, (CUdeviceptr)(uintptr_t)data) != CUDA_SUCCESS) return;
        if (cu.cuMemRetainAllocationHandle(&h, data) == CUDA_SUCCESS) {
            int xfd = -1;
            CUresult r = cu.cuMemExportToShareableHandle(&xfd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
            cu.cuMemRelease(h);
            if (r == CUDA_SUCCESS && (uintptr_t)data + size <= base + len) {
                *fd = xfd;
                m->kind = MAP_CUMEM;
                m->map_len = len;
                m->data_off = (uintptr_t)data - base;
            } else {
                if (r == CUDA_SUCCESS) close(xfd);
                INFO("registration of %p (%zu bytes): no POSIX fd (%s): local use only", data, size, cu_err(r));
            }
            return;
        }
        if (cu.cuIpcGetMemHandle(&m->ipc, base) == CUDA_SUCCESS) { /* cudaMalloc memory */
            m->kind = MAP_IPC;
            m->map_len = len;
            m->data_off = (uintptr_t)data - base;
        }
        return;
    }
    /* host memory: a shared file mapping can be opened by the peers */
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f) return;
    char line[4096];
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi, off;
        char perms[8], path[4096] = "";
        if (sscanf(line, "%lx-%lx %7s %lx %*s %*s %4095[^\n]", &lo, &hi, perms, &off, path) < 4) continue;
        if ((uintptr_t)data < lo || (uintptr_t)data >= hi) continue;
        if ((uintptr_t)data + size <= hi && perms[3] == 's') {
            char *p = path;
            while (*p == ' ') p++;
            int xfd = *p == '/' ? open(p, O_RDWR | O_CLOEXEC) : -1;
            if (xfd < 0) {
                char mf[128];
                snprintf(mf, sizeof mf, "/proc/self/map_files/%lx-%lx", lo, hi);
                xfd = open(mf, O_RDWR | O_CLOEXEC);
            }
            if (xfd >= 0) {
                *fd = xfd;
                m->kind = MAP_HOST;
                m->map_len = size;
                m->data_off = off + ((uintptr_t)data - lo);
            }
        }
        break;
    }
    fclose(f);
}

static void unmap_peer(gin_coll_t *c, gin_reg_t *g, int r) {
    if (!g->map_addr || !g->map_addr[r]) return;
    switch (g->map_kind[r]) {
    case MAP_CUMEM:
        ctx_make_current(c->ctx);
        cu.cuMemUnmap((CUdeviceptr)g->map_addr[r], g->map_len[r]);
        cu.cuMemAddressFree((CUdeviceptr)g->map_addr[r], g->map_len[r]);
        break;
    case MAP_IPC:
        ctx_make_current(c->ctx);
        cu.cuIpcCloseMemHandle((CUdeviceptr)g->map_addr[r]);
        break;
    case MAP_HOST:
        munmap((void *)g->map_addr[r], g->map_len[r]);
        break;
    }
    g->map_addr[r] = 0;
}

/* map rank r's exported buffer here */
static int import_peer(gin_coll_t *c, gin_reg_t *g, int r, const reg_msg_t *m, int fd) {
    g->peer_size[r] = m->size;
    g->map_kind[r] = m->kind;
    if (m->kind == MAP_CUMEM) {
        CUmemGenericAllocationHandle h;
        CUdeviceptr va = 0;
        CUdevice dev;
        CUresult e;
        ctx_make_current(c->ctx);
        if ((e = cu.cuMemImportFromShareableHandle(&h, (void *)(uintptr_t)fd, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)) !=
            CUDA_SUCCESS) {
            WARN("import of rank %d's registration %u: %s", r, g->id, cu_err(e));
            return -1;
        }
        CUmemAccessDesc acc;
        memset(&acc, 0, sizeof acc);
        cu.cuCtxGetDevice(&dev);
        acc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        acc.location.id = dev;
        acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
        if ((e = cu.cuMemAddressReserve(&va, m->map_len, 0, 0, 0)) != CUDA_SUCCESS ||
            (e = cu.cuMemMap(va, m->map_len, 0, h, 0)) != CUDA_SUCCESS ||
            (e = cu.cuMemSetAccess(va, m->map_len, &acc, 1)) != CUDA_SUCCESS) {
            WARN("mapping rank %d's registration %u (%" PRIu64 " bytes): %s", r, g->id, m->map_len, cu_err(e));
            cu.cuMemRelease(h);
            return -1;
        }
        cu.cuMemRelease(h); /* the mapping keeps the memory */
        g->map_addr[r] = va;
        g->map_len[r] = m->map_len;
        g->peer[r] = (char *)(uintptr_t)va + m->data_off;
    } else if (m->kind == MAP_IPC) {
        CUdeviceptr p = 0;
        CUresult e = cu.cuIpcOpenMemHandle(&p, m->ipc, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
        if (e != CUDA_SUCCESS) {
            WARN("CUDA IPC open of rank %d's registration %u: %s", r, g->id, cu_err(e));
            return -1;
        }
        g->map_addr[r] = p;
        g->peer[r] = (char *)(uintptr_t)p + m->data_off;
    } else if (m->kind == MAP_HOST) {
        long pg = sysconf(_SC_PAGESIZE);
        uint64_t aligned = m->data_off & ~(uint64_t)(pg - 1);
        size_t len = m->map_len + (m->data_off - aligned);
        void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)aligned);
        if (p == MAP_FAILED) {
            WARN("mmap of rank %d's registration %u: %s", r, g->id, strerror(errno));
            return -1;
        }
        g->map_addr[r] = (uintptr_t)p;
        g->map_len[r] = len;
        g->peer[r] = (char *)p + (m->data_off - aligned);
    }
    return 0;
}

static ginlb_result_t gin_reg_mr_sym(void *collComm, void *data, size_t size, int type, uint64_t mrFlags,
                                     void **mhandle, void **ginHandle) {
    gin_coll_t *c = collComm;
    (void)mrFlags; /* FORCE_SO: every put and signal of this plugin is strongly ordered already */
    *mhandle = *ginHandle = NULL;
    int n = c->nranks;
    gin_reg_t *g = calloc(1, sizeof *g);
    if (!g) return ginlbSystemError;
    g->peer = calloc((size_t)n, sizeof *g->peer);
    g->peer_size = calloc((size_t)n, sizeof *g->peer_size);
    g->map_kind = calloc((size_t)n, sizeof *g->map_kind);
    g->map_addr = calloc((size_t)n, sizeof *g->map_addr);
    g->map_len = calloc((size_t)n, sizeof *g->map_len);
    if (!g->peer || !g->peer_size || !g->map_kind || !g->map_addr || !g->map_len) return ginlbSystemError;
    g->id = c->next_id++;
    g->base = data;
    g->size = size;
    g->is_dev = type == GINLB_PTR_CUDA && c->ctx && is_device_ptr(data);
    g->peer[c->rank] = data;
    g->peer_size[c->rank] = size;

    reg_msg_t mine;
    memset(&mine, 0, sizeof mine);
    mine.magic = GINLB_MAGIC;
    mine.reg = g->id;
    mine.size = size;
    mine.is_dev = g->is_dev;
    int fd = -1;
    export_local(c, data, size, g->is_dev, &mine, &fd);
    ginlb_result_t res = ginlbSuccess;
    /* the exchange: to every peer, then from every peer (seqpacket buffers hold these few messages) */
    for (int r = 0; r < n; r++)
        if (r != c->rank && send_msg_fd(c->ctrl_out[r], &mine, sizeof mine, fd)) {
            WARN("regMrSym: send to rank %d: %s", r, strerror(errno));
            res = ginlbRemoteError;
        }
    if (fd >= 0) close(fd);
    int mapped = 0;
    for (int r = 0; r < n; r++) {
        if (r == c->rank) continue;
        reg_msg_t m;
        int pfd = -1;
        if (recv_msg_fd(c->ctrl_in[r], &m, sizeof m, &pfd) || m.magic != GINLB_MAGIC) {
            WARN("regMrSym: receive from rank %d failed", r);
            res = ginlbRemoteError;
            continue;
        }
        if (m.reg != g->id) {
            WARN("regMrSym: rank %d registers its #%u while this rank registers #%u", r, m.reg, g->id);
            res = ginlbInternalError;
        } else if (import_peer(c, g, r, &m, pfd) == 0 && g->peer[r]) {
            mapped++;
        }
        if (pfd >= 0) close(pfd);
    }
    INFO("regMrSym #%u: %p, %zu bytes, %s, %s, %d of %d peers mapped here", g->id, data, size,
         g->is_dev ? "device" : "host", mine.kind == MAP_NONE ? "local use only" : "exported", mapped, n - 1);
    pthread_mutex_lock(&c->reg_lock);
    g->next = c->regs;
    c->regs = g;
    pthread_mutex_unlock(&c->reg_lock);
    *mhandle = *ginHandle = g; /* NCCL's proxy passes either one to iput: they are the same */
    return res;
}
static ginlb_result_t gin_reg_mr_sym_dmabuf(void *collComm, void *data, size_t size, int type, uint64_t offset,
                                            int fd, uint64_t mrFlags, void **mhandle, void **ginHandle) {
    (void)offset, (void)fd; /* the address is enough here */
    return gin_reg_mr_sym(collComm, data, size, type, mrFlags, mhandle, ginHandle);
}
static ginlb_result_t gin_dereg_mr_sym(void *collComm, void *mhandle) {
    gin_coll_t *c = collComm;
    gin_reg_t *g = mhandle;
    if (!g) return ginlbSuccess;
    pthread_mutex_lock(&c->reg_lock);
    for (gin_reg_t **pp = &c->regs; *pp; pp = &(*pp)->next)
        if (*pp == g) {
            *pp = g->next;
            break;
        }
    pthread_mutex_unlock(&c->reg_lock);
    for (int r = 0; r < c->nranks; r++)
        if (r != c->rank) unmap_peer(c, g, r);
    free(g->peer);
    free(g->peer_size);
    free(g->map_kind);
    free(g->map_addr);
    free(g->map_len);
    free(g);
    return ginlbSuccess;
}

static ginlb_result_t post(gin_coll_t *c, uint64_t srcOff, gin_reg_t *src, size_t size, uint64_t dstOff,
                           gin_reg_t *dst, uint32_t rank, int has_signal, uint64_t sigOff, gin_reg_t *sig,
                           uint64_t sigAdd, void **request) {
    *request = NULL;
    int e = __atomic_load_n(&c->error, __ATOMIC_ACQUIRE);
    if (e) return (ginlb_result_t)e;
    if ((int)rank >= c->nranks) return ginlbInvalidArgument;
    gin_op_t *op = calloc(1, sizeof *op);
    if (!op) return ginlbSystemError;
    op->peer = rank;
    op->size = size;
    if (size) {
        if (!src || !dst || srcOff + size > src->size || !dst->peer[rank] || dstOff + size > dst->peer_size[rank]) {
            WARN("put of %zu bytes from %" PRIu64 " of #%u to %" PRIu64 " of rank %u's #%u: %s", size, srcOff,
                 src ? src->id : 0, dstOff, rank, dst ? dst->id : 0,
                 !src || !dst ? "no handle" : !dst->peer[rank] ? "that registration is not mapped here" : "out of range");
            free(op);
            return ginlbInvalidUsage;
        }
        op->src = src->base + srcOff;
        op->dst = dst->peer[rank] + dstOff;
        op->dev_copy = src->is_dev || dst->is_dev;
    }
    if (has_signal) {
        if (!sig || sigOff + 8 > sig->peer_size[rank]) {
            WARN("signal at %" PRIu64 " of rank %u: %s", sigOff, rank, sig ? "out of range" : "no handle");
            free(op);
            return ginlbInvalidUsage;
        }
        op->has_signal = 1;
        op->sig_reg = sig->id;
        op->sig_off = sigOff;
        op->sig_add = sigAdd;
    }
    if (mutant() == MUTANT_EARLY_DONE) op->done = 1; /* MUTANT: completion claimed before the copy */
    pthread_mutex_lock(&c->q_lock);
    if (c->q_tail) c->q_tail->next = op;
    else c->q_head = op;
    c->q_tail = op;
    pthread_cond_signal(&c->q_cond);
    pthread_mutex_unlock(&c->q_lock);
    *request = op;
    return ginlbSuccess;
}
static ginlb_result_t gin_iput(void *collComm, uint64_t srcOff, void *srcMhandle, size_t size, uint64_t dstOff,
                               void *dstMhandle, uint32_t rank, void **request) {
    return post(collComm, srcOff, srcMhandle, size, dstOff, dstMhandle, rank, 0, 0, NULL, 0, request);
}
static ginlb_result_t gin_iput_signal(void *collComm, uint64_t srcOff, void *srcMhandle, size_t size,
                                      uint64_t dstOff, void *dstMhandle, uint32_t rank, uint64_t signalOff,
                                      void *signalMhandle, uint64_t signalValue, uint32_t signalOp, void **request) {
    uint64_t add;
    if (signalOp == GINLB_SIGNAL_OP_INC) add = 1;
    else if (signalOp == GINLB_SIGNAL_OP_ADD) add = signalValue;
    else {
        WARN("iputSignal: unsupported signal op %u", signalOp);
        return ginlbInvalidArgument;
    }
    return post(collComm, srcOff, srcMhandle, size, dstOff, dstMhandle, rank, 1, signalOff, signalMhandle, add,
                request);
}

/* apply every signal that has arrived from the peers */
static ginlb_result_t gin_progress(void *collComm) {
    gin_coll_t *c = collComm;
    int e = __atomic_load_n(&c->error, __ATOMIC_ACQUIRE);
    if (e) return (ginlb_result_t)e;
    size_t nb = 0;
    for (int r = 0; r < c->nranks; r++) {
        if (r == c->rank || c->sig_in[r] < 0) continue;
        for (;;) {
            sig_msg_t m;
            ssize_t k = recv(c->sig_in[r], &m, sizeof m, MSG_DONTWAIT);
            if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) break;
            if (k == 0) { /* the peer closed its collComm */
                close(c->sig_in[r]);
                c->sig_in[r] = -1;
                break;
            }
            if (k != (ssize_t)sizeof m || m.magic != GINLB_MAGIC) {
                WARN("bad signal message from rank %d", r);
                set_error(c, ginlbRemoteError);
                return ginlbRemoteError;
            }
            /* one update per signal and round: merge with an earlier message for the same word */
            size_t i = 0;
            while (i < nb && (c->batch[i].reg != m.reg || c->batch[i].off != m.off)) i++;
            if (i < nb) {
                c->batch[i].add += m.add;
                continue;
            }
            if (nb == c->batch_cap) {
                size_t cap = c->batch_cap ? 2 * c->batch_cap : 64;
                sig_msg_t *b = realloc(c->batch, cap * sizeof *b);
                if (!b) return ginlbSystemError;
                c->batch = b;
                c->batch_cap = cap;
            }
            c->batch[nb++] = m;
        }
    }
    for (size_t i = 0; i < nb; i++) {
        ginlb_result_t r = apply_signal(c, c->batch[i].reg, c->batch[i].off, c->batch[i].add);
        if (r != ginlbSuccess) {
            set_error(c, r);
            return r;
        }
    }
    return ginlbSuccess;
}

static ginlb_result_t gin_test(void *collComm, void *request, int *done) {
    gin_coll_t *c = collComm;
    gin_op_t *op = request;
    *done = 0;
    ginlb_result_t r = gin_progress(c);
    if (r != ginlbSuccess) return r;
    if (__atomic_load_n(&op->done, __ATOMIC_ACQUIRE)) {
        int e = __atomic_load_n(&c->error, __ATOMIC_ACQUIRE);
        if (e) return (ginlb_result_t)e;
        if (mutant() == MUTANT_EARLY_DONE) return (*done = 1), ginlbSuccess; /* the engine still owns it */
        *done = 1;
        free(op);
    }
    return ginlbSuccess;
}

static ginlb_result_t gin_close_coll(void *collComm) {
    gin_coll_t *c = collComm;
    if (!c) return ginlbSuccess;
    if (c->engine_started) {
        pthread_mutex_lock(&c->q_lock);
        c->stop = 1;
        pthread_cond_signal(&c->q_cond);
        pthread_mutex_unlock(&c->q_lock);
        pthread_join(c->engine, NULL);
    }
    while (c->regs) gin_dereg_mr_sym(c, c->regs);
    if (c->ctx) {
        ctx_make_current(c->ctx);
        if (c->copy_stream) cu.cuStreamDestroy(c->copy_stream);
        if (c->sig_stream) cu.cuStreamDestroy(c->sig_stream);
    }
    for (int i = 0; i < 4 * c->nranks; i++)
        if (c->ctrl_out[i] >= 0) close(c->ctrl_out[i]);
    free(c->ctrl_out);
    free(c->batch);
    free(c);
    return ginlbSuccess;
}
static ginlb_result_t gin_finalize(void *ctx) {
    (void)ctx;
    return ginlbSuccess;
}

GINLB_EXPORT const ginlb_gin_v11_t ncclGinPlugin_v11 = {
    .name = "tlmpi_loopback_gin",
    .init = gin_init,
    .devices = net_devices,
    .getProperties = gin_get_properties,
    .listen = gin_listen,
    .connect = gin_connect,
    .createContext = NULL, /* proxy mode: NCCL makes the context (ncclGinProxyCreateContext) */
    .regMrSym = gin_reg_mr_sym,
    .regMrSymDmaBuf = gin_reg_mr_sym_dmabuf,
    .deregMrSym = gin_dereg_mr_sym,
    .destroyContext = NULL,
    .closeColl = gin_close_coll,
    .closeListen = gin_close_listen,
    .iput = gin_iput,
    .iputSignal = gin_iput_signal,
    .test = gin_test,
    .ginProgress = gin_progress,
    .queryLastError = NULL,
    .finalize = gin_finalize,
};
