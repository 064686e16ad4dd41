#!/bin/sh
# regcache.sh "NPS" BUILD_DIR: tests/gpu/gpu_regcache (the node tier's registration cache) with each
# rank count of NPS on this host's GPU (run it under tests/gpu/mps.sh where ranks share a GPU).
# Prints one PASS / FAIL line per run and exits nonzero if any failed.
nps=${1:?usage: regcache.sh "NPS" BUILD_DIR}
build=${2:?usage: regcache.sh "NPS" BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
export NCCL_NVLS_ENABLE=0 TLMPI_TIMEOUT=${TLMPI_TIMEOUT:-60}
rc=0
for np in $nps; do
    if timeout "${RUN_TIMEOUT:-120}" sh "$here/mpirun.sh" "$np" "$build/tests/gpu/gpu_regcache"; then
        echo "regcache np=$np: PASS"
    else
        echo "regcache np=$np: FAIL"
        rc=1
    fi
done
exit $rc
