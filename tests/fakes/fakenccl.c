/* CPU stand-ins for NCCL, never linked into libtlmpi: bench/devpath-callgrind.sh (cost counting) and
 * tests/mpi/mpi_fake_device (control flow). Collectives move no data, except that a one-rank
 * communicator's collective copies its input to its output (what real NCCL leaves there). */
#include <nccl.h>
#include <stdlib.h>
#include <string.h>
ncclResult_t ncclGetVersion(int *v) { *v = 22809; return ncclSuccess; }
const char *ncclGetErrorString(ncclResult_t r) { (void)r; return "fake"; }
const char *ncclGetLastError(ncclComm_t c) { (void)c; return ""; }
ncclResult_t ncclGetUniqueId(ncclUniqueId *id) { memset(id, 1, sizeof(*id)); return ncclSuccess; }
ncclResult_t ncclCommInitRank(ncclComm_t *c, int n, ncclUniqueId id, int r) { (void)id; (void)r; int *p = malloc(sizeof(int)); *p = n; *c = (ncclComm_t)p; return ncclSuccess; }
static size_t tsize(ncclDataType_t t) { switch (t) { case ncclInt8: case ncclUint8: return 1; case ncclFloat16: case ncclBfloat16: return 2; case ncclInt32: case ncclUint32: case ncclFloat32: return 4; default: return 8; } }
static void one_rank_copy(const void *s, void *r, size_t n, ncclDataType_t t, ncclComm_t c) { if (*(int *)c == 1 && s != r) memmove(r, s, n * tsize(t)); }
ncclResult_t ncclCommDestroy(ncclComm_t c) { free(c); return ncclSuccess; }
ncclResult_t ncclCommAbort(ncclComm_t c) { free(c); return ncclSuccess; }
ncclResult_t ncclCommGetAsyncError(ncclComm_t c, ncclResult_t *e) { (void)c; *e = ncclSuccess; return ncclSuccess; }
ncclResult_t ncclAllReduce(const void *s, void *r, size_t n, ncclDataType_t t, ncclRedOp_t o, ncclComm_t c, cudaStream_t st) { (void)o; (void)st; one_rank_copy(s, r, n, t, c); return ncclSuccess; }
ncclResult_t ncclAllGather(const void *s, void *r, size_t n, ncclDataType_t t, ncclComm_t c, cudaStream_t st) { (void)st; one_rank_copy(s, r, n, t, c); return ncclSuccess; }
ncclResult_t ncclReduceScatter(const void *s, void *r, size_t n, ncclDataType_t t, ncclRedOp_t o, ncclComm_t c, cudaStream_t st) { (void)o; (void)st; one_rank_copy(s, r, n, t, c); return ncclSuccess; }
