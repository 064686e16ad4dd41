#!/bin/sh
# mps.sh COMMAND [ARGS...]: run COMMAND with an MPS control daemon that belongs to this job (ranks
# sharing the GPU then run their kernels concurrently instead of time-sliced: a cross-rank device
# wait costs ~1.7 us instead of ~4.4 ms, see shared/reference/single-gpu-testing.md). The daemon
# gets private pipe and log directories (exported, so every rank started by COMMAND inherits them)
# and is stopped on every exit path. No GPU setting is changed. Where nvidia-cuda-mps-control is
# missing or does not start, COMMAND runs without MPS and the script says so on stderr. Exit
# status: COMMAND's.
ctl=$(command -v nvidia-cuda-mps-control || ls /usr/local/nvidia/bin/nvidia-cuda-mps-control 2>/dev/null)
if [ -z "$ctl" ]; then
    echo "mps.sh: no nvidia-cuda-mps-control: running without MPS" >&2
    exec "$@"
fi
CUDA_MPS_PIPE_DIRECTORY=$(mktemp -d /tmp/tlmpi-mps-pipe.XXXXXX)
CUDA_MPS_LOG_DIRECTORY=$(mktemp -d /tmp/tlmpi-mps-log.XXXXXX)
export CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
stop() {
    echo quit | "$ctl" >/dev/null 2>&1
    sleep 1
    rm -rf "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
}
if ! "$ctl" -d; then
    echo "mps.sh: the MPS daemon did not start: running without MPS" >&2
    unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
    exec "$@"
fi
trap stop EXIT
trap 'exit 130' INT TERM
echo "mps.sh: MPS daemon started (pipes in $CUDA_MPS_PIPE_DIRECTORY)" >&2
"$@"
