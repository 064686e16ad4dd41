/* Part of bench/devpath-callgrind.sh: CPU stand-ins, never linked into libtlmpi. */
#include <nccl.h>
#include <stdlib.h>
#include <string.h>
ncclResult_t ncclGetVersion(int *v) { *v = 22809; return ncclSuccess; }
const char *ncclGetErrorString(ncclResult_t r) { (void)r; return "fake"; }
const char *ncclGetLastError(ncclComm_t c) { (void)c; return ""; }
ncclResult_t ncclGetUniqueId(ncclUniqueId *id) { memset(id, 1, sizeof(*id)); return ncclSuccess; }
ncclResult_t ncclCommInitRank(ncclComm_t *c, int n, ncclUniqueId id, int r) { (void)n; (void)id; (void)r; *c = (ncclComm_t)malloc(8); return ncclSuccess; }
ncclResult_t ncclCommDestroy(ncclComm_t c) { free(c); return ncclSuccess; }
ncclResult_t ncclCommAbort(ncclComm_t c) { free(c); return ncclSuccess; }
ncclResult_t ncclCommGetAsyncError(ncclComm_t c, ncclResult_t *e) { (void)c; *e = ncclSuccess; return ncclSuccess; }
ncclResult_t ncclAllReduce(const void *s, void *r, size_t n, ncclDataType_t t, ncclRedOp_t o, ncclComm_t c, cudaStream_t st) { (void)s; (void)r; (void)n; (void)t; (void)o; (void)c; (void)st; return ncclSuccess; }
ncclResult_t ncclAllGather(const void *s, void *r, size_t n, ncclDataType_t t, ncclComm_t c, cudaStream_t st) { (void)s; (void)r; (void)n; (void)t; (void)c; (void)st; return ncclSuccess; }
ncclResult_t ncclReduceScatter(const void *s, void *r, size_t n, ncclDataType_t t, ncclRedOp_t o, ncclComm_t c, cudaStream_t st) { (void)s; (void)r; (void)n; (void)t; (void)o; (void)c; (void)st; return ncclSuccess; }
