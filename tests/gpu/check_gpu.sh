#!/bin/sh
# make check entry for the GPU tests: exit 77 (skip) without a usable CUDA device; else the quick
# suite on 1 and 2 ranks, with the PMPI guard library preloaded when it was built, and gpu_node's
# quick subset on 2 ranks.
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
# the node tier (tlmpi's own kernels), every algorithm forced, quick subset on 2 ranks (without MPS
# the ranks time-slice the GPU and every device barrier costs milliseconds: few calls); the full
# suite is tests/gpu/node.sh
if [ -x "$b/gpu_node" ]; then
    TLMPI_TIMEOUT=60 timeout -k 10 300 sh "$s/mpirun.sh" 2 "$b/gpu_node" --quick --b2b 100 || exit 1
fi
