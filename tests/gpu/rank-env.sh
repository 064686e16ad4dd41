#!/bin/sh
# Per-rank wrapper for GPU tests: with several ranks on one GPU, NCCL refuses two ranks with the same
# host hash and bus id ("Duplicate GPU detected"), so every rank fakes its own host (NCCL_HOSTID);
# NCCL then runs over loopback sockets. GPU_TEST_GUARD_LIB, when set, is preloaded into the rank only.
NCCL_HOSTID="tlmpi-${OMPI_COMM_WORLD_RANK}${PMI_RANK}"
export NCCL_HOSTID
if [ -n "$GPU_TEST_GUARD_LIB" ]; then
    LD_PRELOAD="$GPU_TEST_GUARD_LIB${LD_PRELOAD:+:$LD_PRELOAD}"
    export LD_PRELOAD
fi
exec "$@"
