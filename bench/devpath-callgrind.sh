#!/bin/bash
# devpath-callgrind.sh BUILD_DIR [CALLS]: count the instructions tlmpi's own host code spends on a
# device-buffer call of the NCCL tier, on a machine without a GPU. MODE=pool carves both buffers from
# one allocation (default: two allocations, as OSU and tlmpi_bench use). CPU stand-ins for the CUDA
# runtime (tests/fakes/fakecudart.c: "device" memory is whatever its cudaMalloc returned) and for
# NCCL (tests/fakes/fakenccl.c: collectives return at once) are preloaded / dlopen'ed, so what
# callgrind counts under MPI_Allreduce is tlmpi's dispatch, classification, comm lookup and tier
# code plus a few instructions of the fakes. Needs mpicc.mpich, gcc, valgrind, CUDA headers.
set -eu
build=$(cd "$1" && pwd)
calls=${2:-20000}
here=$(cd "$(dirname "$0")" && pwd)
cuda=${CUDA_HOME:-/usr/local/cuda}
work=$(mktemp -d /tmp/tlmpi-devpath.XXXXXX)
gcc -O2 -fPIC -shared -I"$cuda/include" -o "$work/libfakecudart.so" "$here/../tests/fakes/fakecudart.c"
gcc -O2 -fPIC -shared -I"$cuda/include" -o "$work/libfakenccl.so" "$here/../tests/fakes/fakenccl.c"
mpicc.mpich -O2 -I"$cuda/include" -o "$work/dev_loop" "$here/../tests/fakes/dev_loop.c" -L"$cuda/lib64" -lcudart
export TLMPI_TIER=nccl TLMPI_NCCL_LIBRARY=$work/libfakenccl.so
pre="$work/libfakecudart.so $build/.libs/libtlmpi.so"
mode=${MODE:-two}
LD_PRELOAD="$pre" mpiexec.mpich -n 1 "$work/dev_loop" 200000 "$mode"
LD_PRELOAD="$pre" valgrind --tool=callgrind --callgrind-out-file="$work/cg.out" "$work/dev_loop" "$calls" "$mode" >/dev/null 2>&1
echo "instructions per call, inclusive (callgrind, $calls calls + 1 warm-up):"
callgrind_annotate --inclusive=yes "$work/cg.out" 2>/dev/null |
    awk -v n=$((calls + 1)) '/(MPI_Allreduce|coll_slow|tlmpi_mem_type|tlmpi_mem_type_in_call|tlmpi_comm_get|PMPI_Comm_get_attr|tlmpi_tier_run|tlmpi_nccl_run|tlmpi_select_path|tlmpi_dtype_classify|tlmpi_gpu_ctx) \[/ {
        gsub(",", "", $1); name = $NF; sub(/.*:/, "", $(NF-1)); printf "  %-28s %8.0f\n", $(NF-1), $1 / n }'
rm -rf "$work"
