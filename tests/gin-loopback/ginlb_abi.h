/* ginlb_abi.h: the NCCL plugin ABI the loopback plugin (ginlb_plugin.c) and its driver
 * (ginlb_driver.c) use, declared here by tlmpi from reading NCCL v2.28.9-1's
 * src/include/plugin/nccl_net.h, src/include/plugin/net/net_v11.h,
 * src/include/nccl_device/net_device.h and src/include/nccl_common.h. It matches NCCL 2.28.9
 * (net plugin interface v11, GIN plugin interface v11, the only GIN version 2.28.9 loads:
 * src/plugin/net/net_v11.cc looks up the symbols "ncclNetPlugin_v11" and "ncclGinPlugin_v11").
 * Only what the fixture needs; the order of every struct member is NCCL's. No NCCL header is
 * included, so the fixture builds and its CPU test runs without NCCL. */
#ifndef TLMPI_GINLB_ABI_H
#define TLMPI_GINLB_ABI_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#define GINLB_NCCL_VERSION_CODE 22809 /* the NCCL release these declarations were read from */

/* ncclResult_t (nccl.h): values are part of the ABI */
typedef enum {
    ginlbSuccess = 0,
    ginlbUnhandledCudaError = 1,
    ginlbSystemError = 2,
    ginlbInternalError = 3,
    ginlbInvalidArgument = 4,
    ginlbInvalidUsage = 5,
    ginlbRemoteError = 6,
    ginlbInProgress = 7
} ginlb_result_t;

/* nccl_common.h */
enum { GINLB_LOG_WARN = 2, GINLB_LOG_INFO = 3, GINLB_LOG_TRACE = 5 };
enum { GINLB_SUBSYS_INIT = 0x1, GINLB_SUBSYS_NET = 0x10 };
typedef void (*ginlb_logger_t)(int level, unsigned long flags, const char *file, int line, const char *fmt, ...);
typedef ginlb_result_t (*ginlb_prof_cb_t)(void **eHandle, int type, void *pHandle, int64_t pluginId, void *extData);

/* nccl_net.h */
#define GINLB_HANDLE_MAXSIZE 128          /* NCCL_NET_HANDLE_MAXSIZE */
#define GINLB_PTR_HOST 0x1                /* NCCL_PTR_HOST */
#define GINLB_PTR_CUDA 0x2                /* NCCL_PTR_CUDA */
#define GINLB_PTR_DMABUF 0x4              /* NCCL_PTR_DMABUF */
#define GINLB_MR_FLAG_FORCE_SO (1 << 0)   /* NCCL_NET_MR_FLAG_FORCE_SO */
#define GINLB_SIGNAL_OP_INC 0x1           /* NCCL_NET_SIGNAL_OP_INC */
#define GINLB_SIGNAL_OP_ADD 0x2           /* NCCL_NET_SIGNAL_OP_ADD */
#define GINLB_MAX_REQUESTS 32             /* NCCL_NET_MAX_REQUESTS */
#define GINLB_MAX_DEVS_PER_NIC 4          /* NCCL_NET_MAX_DEVS_PER_NIC */
#define GINLB_MAX_NET_SIZE_BYTES (1 * 1024 * 1024 * 1024 * 1024L) /* NCCL_MAX_NET_SIZE_BYTES */
#define GINLB_MAX_COLLNET_SIZE (512 * 1024 * 1024L)                /* MAX_COLLNET_SIZE */

/* net_device.h */
typedef enum {
    GINLB_DEVICE_HOST = 0,      /* NCCL_NET_DEVICE_HOST */
    GINLB_DEVICE_UNPACK = 1,    /* NCCL_NET_DEVICE_UNPACK */
    GINLB_DEVICE_GIN_PROXY = 2, /* NCCL_NET_DEVICE_GIN_PROXY: NCCL's CPU proxy calls iput/iputSignal */
    GINLB_DEVICE_GIN_GDAKI = 3  /* NCCL_NET_DEVICE_GIN_GDAKI */
} ginlb_device_type_t;
#define GINLB_DEVICE_INVALID_VERSION 0x0

typedef struct {
    ginlb_device_type_t netDeviceType;
    int netDeviceVersion;
    void *handle;
    size_t size;
    int needsProxyProgress;
} ginlb_dev_handle_t; /* ncclNetDeviceHandle_v11_t */

/* net_v11.h */
typedef struct {
    int ndevs;
    int devs[GINLB_MAX_DEVS_PER_NIC];
} ginlb_vprops_t; /* ncclNetVDeviceProps_v11_t */

typedef struct {
    int trafficClass;
} ginlb_comm_config_t; /* ncclNetCommConfig_v11_t */

typedef struct {
    char *name;
    char *pciPath;
    uint64_t guid;
    int ptrSupport;
    int regIsGlobal;
    int forceFlush;
    int speed; /* Mbps */
    int port;
    float latency;
    int maxComms;
    int maxRecvs;
    ginlb_device_type_t netDeviceType;
    int netDeviceVersion;
    ginlb_vprops_t vProps;
    size_t maxP2pBytes;
    size_t maxCollBytes;
    int maxMultiRequestSize;
} ginlb_props_t; /* ncclNetProperties_v11_t */

typedef struct ginlb_net_attr ginlb_net_attr_t; /* ncclNetAttr_v11_t: only passed through */

typedef struct {
    const char *name;
    ginlb_result_t (*init)(void **ctx, uint64_t commId, ginlb_comm_config_t *config, ginlb_logger_t log,
                           ginlb_prof_cb_t prof);
    ginlb_result_t (*devices)(int *ndev);
    ginlb_result_t (*getProperties)(int dev, ginlb_props_t *props);
    ginlb_result_t (*listen)(void *ctx, int dev, void *handle, void **listenComm);
    ginlb_result_t (*connect)(void *ctx, int dev, void *handle, void **sendComm, ginlb_dev_handle_t **sendDevComm);
    ginlb_result_t (*accept)(void *listenComm, void **recvComm, ginlb_dev_handle_t **recvDevComm);
    ginlb_result_t (*regMr)(void *comm, void *data, size_t size, int type, void **mhandle);
    ginlb_result_t (*regMrDmaBuf)(void *comm, void *data, size_t size, int type, uint64_t offset, int fd,
                                  void **mhandle);
    ginlb_result_t (*deregMr)(void *comm, void *mhandle);
    ginlb_result_t (*isend)(void *sendComm, void *data, size_t size, int tag, void *mhandle, void *phandle,
                            void **request);
    ginlb_result_t (*irecv)(void *recvComm, int n, void **data, size_t *sizes, int *tags, void **mhandles,
                            void **phandles, void **request);
    ginlb_result_t (*iflush)(void *recvComm, int n, void **data, int *sizes, void **mhandles, void **request);
    ginlb_result_t (*test)(void *request, int *done, int *sizes);
    ginlb_result_t (*closeSend)(void *sendComm);
    ginlb_result_t (*closeRecv)(void *recvComm);
    ginlb_result_t (*closeListen)(void *listenComm);
    ginlb_result_t (*getDeviceMr)(void *comm, void *mhandle, void **dptr_mhandle);
    ginlb_result_t (*irecvConsumed)(void *recvComm, int n, void *request);
    ginlb_result_t (*makeVDevice)(int *d, ginlb_vprops_t *props);
    ginlb_result_t (*finalize)(void *ctx);
    ginlb_result_t (*setNetAttr)(void *ctx, ginlb_net_attr_t *netAttr);
} ginlb_net_v11_t; /* ncclNet_v11_t */

typedef struct {
    const char *name;
    ginlb_result_t (*init)(void **ctx, uint64_t commId, ginlb_logger_t log);
    ginlb_result_t (*devices)(int *ndev);
    ginlb_result_t (*getProperties)(int dev, ginlb_props_t *props);
    ginlb_result_t (*listen)(void *ctx, int dev, void *handle, void **listenComm);
    /* collective over the nranks ranks: handles[r] is rank r's listen handle */
    ginlb_result_t (*connect)(void *ctx, void *handles[], int nranks, int rank, void *listenComm, void **collComm);
    ginlb_result_t (*createContext)(void *collComm, int nSignals, int nCounters, void **ginCtx,
                                    ginlb_dev_handle_t **devHandle); /* unused in GIN_PROXY mode */
    /* collective: every rank registers its own buffer of the symmetric region, in the same order */
    ginlb_result_t (*regMrSym)(void *collComm, void *data, size_t size, int type, uint64_t mrFlags, void **mhandle,
                               void **ginHandle);
    ginlb_result_t (*regMrSymDmaBuf)(void *collComm, void *data, size_t size, int type, uint64_t offset, int fd,
                                     uint64_t mrFlags, void **mhandle, void **ginHandle);
    ginlb_result_t (*deregMrSym)(void *collComm, void *mhandle);
    ginlb_result_t (*destroyContext)(void *ginCtx);
    ginlb_result_t (*closeColl)(void *collComm);
    ginlb_result_t (*closeListen)(void *listenComm);
    /* offsets are relative to the registered address; the handles are the ginHandles (NCCL's proxy
     * passes ginHandle for windows and signals and mhandle for its inline buffer: they must be equal) */
    ginlb_result_t (*iput)(void *collComm, uint64_t srcOff, void *srcMhandle, size_t size, uint64_t dstOff,
                           void *dstMhandle, uint32_t rank, void **request);
    ginlb_result_t (*iputSignal)(void *collComm, uint64_t srcOff, void *srcMhandle, size_t size, uint64_t dstOff,
                                 void *dstMhandle, uint32_t rank, uint64_t signalOff, void *signalMhandle,
                                 uint64_t signalValue, uint32_t signalOp, void **request);
    ginlb_result_t (*test)(void *collComm, void *request, int *done);
    ginlb_result_t (*ginProgress)(void *collComm);
    ginlb_result_t (*queryLastError)(void *ginCtx, bool *hasError);
    ginlb_result_t (*finalize)(void *ctx);
} ginlb_gin_v11_t; /* ncclGin_v11_t */

#endif
