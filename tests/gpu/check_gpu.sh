#!/bin/sh
# make check entry for the GPU tests: exit 77 (skip) without a usable CUDA device; else the quick
# suite on 1 and 2 ranks, with the PMPI guard library preloaded when it was built.
b=${top_builddir:-.}/tests/gpu
s=${top_srcdir:-.}/tests/gpu
"$b/gpu_coll" --probe || { echo "SKIP: no CUDA device"; exit 77; }
if [ -f "$b/.libs/libtlmpi_guard.so" ]; then
    GPU_TEST_GUARD_LIB=$(cd "$b/.libs" && pwd)/libtlmpi_guard.so
    export GPU_TEST_GUARD_LIB
fi
export NCCL_NVLS_ENABLE=0 NCCL_MNNVL_ENABLE=0 NCCL_SOCKET_IFNAME=${NCCL_SOCKET_IFNAME:-lo}
for np in 1 2; do
    sh "$s/mpirun.sh" $np "$b/gpu_coll" --quick || exit 1
done
