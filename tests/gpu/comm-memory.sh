#!/bin/sh
# comm-memory.sh "NPS" BUILD_DIR [NCOMMS [CYCLES]]: tests/gpu/gpu_comm_memory (the node tier's memory per
# communicator and a new communicator's first call) with each rank count of NPS on this host's GPU (run it
# under tests/gpu/mps.sh where ranks share a GPU). Prints the program's lines and one PASS / FAIL line per
# run; exits nonzero if any failed.
nps=${1:?usage: comm-memory.sh "NPS" BUILD_DIR [NCOMMS [CYCLES]]}
build=${2:?usage: comm-memory.sh "NPS" BUILD_DIR [NCOMMS [CYCLES]]}
here=$(cd "$(dirname "$0")" && pwd)
export NCCL_NVLS_ENABLE=0 TLMPI_TIMEOUT=${TLMPI_TIMEOUT:-60}
rc=0
for np in $nps; do
    if timeout "${RUN_TIMEOUT:-300}" sh "$here/mpirun.sh" "$np" "$build/tests/gpu/gpu_comm_memory" ${3:-64} ${4:-1000}; then
        echo "comm-memory np=$np: PASS"
    else
        echo "comm-memory np=$np: FAIL"
        rc=1
    fi
done
exit $rc
