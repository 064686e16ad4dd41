#!/bin/sh
# siblings.sh "NPS" BUILD_DIR: tests/gpu/gpu_siblings (MPI_Allgatherv, MPI_Reduce_scatter, MPI_Bcast,
# MPI_Reduce, MPI_Alltoall on device buffers, on the node tier, against PMPI_* on host copies) with each
# rank count of NPS on this host's GPU (run it under tests/gpu/mps.sh where ranks share a GPU): per rank
# count one run of small cases (counts up to 3000), one of large ones (up to 600k elements) with
# TLMPI_NODE_POOL=4m, so that calls take several pool steps, and two runs of counts up to 1M and 1.5M
# elements, where calls from TLMPI_NODE_REG_MIN (2 MiB) run zero-copy on the registration cache's
# kernels (zc with -Z, which fails where some collective ran none zero-copy; zclarge every case the
# largest), and zcsteps: zclarge's cases under TLMPI_NODE_POOL=4m, whose 2 MiB steps (kernels.h:
# step_bytes) make the zero-copy exchange of uneven blocks take several steps; gated: zc's cases with
# TLMPI_NODE_GATE_SIBLINGS=1 (the non-blocking calls gated on the memos the blocking ones leave, and the
# blocking ones trying the gated kernel first) - SIBLINGS_PARTS picks (default "small large zc zclarge
# zcsteps"; gated is not in it while the setting is off by default). Prints the program's lines and one
# PASS / FAIL line per run; exits nonzero
# if any failed. TLMPI_NODE_SIBLINGS=1 unless set. SIBLINGS_ARGS are added to every command line.
nps=${1:?usage: siblings.sh "NPS" BUILD_DIR}
build=${2:?usage: siblings.sh "NPS" BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
export NCCL_NVLS_ENABLE=0 TLMPI_TIMEOUT=${TLMPI_TIMEOUT:-60} TLMPI_NODE_SIBLINGS=${TLMPI_NODE_SIBLINGS:-1}
rc=0
for np in $nps; do
    for part in ${SIBLINGS_PARTS:-small large zc zclarge zcsteps}; do
        case $part in
        small) set -- -n 150 ;;
        zc | gated) set -- -n 80 -C 1000000 -Z ;;
        zclarge | zcsteps) set -- -n 24 -C 1500000 -L -Z ;;
        *) set -- -n 24 -C 600000 -L ;;
        esac
        pool=
        case $part in
        large | zcsteps) pool=TLMPI_NODE_POOL=4m ;;
        gated) pool=TLMPI_NODE_GATE_SIBLINGS=1 ;;
        esac
        # shellcheck disable=SC2086
        if env $pool timeout "${RUN_TIMEOUT:-120}" \
            sh "$here/mpirun.sh" "$np" "$build/tests/gpu/gpu_siblings" "$@" ${SIBLINGS_ARGS:-}; then
            echo "siblings np=$np $part: PASS"
        else
            echo "siblings np=$np $part: FAIL"
            rc=1
        fi
    done
done
exit $rc
