#!/bin/sh
# soak.sh [BUILD_DIR]: the GPU soak (tests/gpu/gpu_soak, driven by tests/gpu/soak.sh) briefly against
# the CPU fakes of tests/fakes, 2 ranks: the fake CUDA runtime preloaded into the ranks, the fake NCCL
# (which really communicates between the processes), TLMPI_TIER=nccl (types NCCL lacks, 16-bit integers,
# go to staging; one-rank communicators to self) and TLMPI_ENQUEUE_FALLBACK=sync (stream-ordered calls
# that staging serves run synchronously). Graph replay is left out (--no-graph: the fakes' graphs run
# nothing), sizes up to 256 KiB, a checkpoint every 5 s. Parts of tests/gpu/soak.sh:
#   soak    SOAK_CPU_SECONDS (default 15) of the random mix (blocking, non-blocking completed by
#           Waitall / Waitany / Testsome / Wait / Testall, persistent under an MPI-4 MPI, stream-ordered)
#           on churning communicators, every result checked, the memory verdict (--mem-check);
#   mutant  a reference off by one: the run must fail and say so;
#   die     rank 1 SIGKILLs itself mid-collective 3 s in (TLMPI_TIMEOUT=10): the job must end within
#           TLMPI_TIMEOUT + 15 s of the kill with the MPI's abort or tlmpi's TLMPI_TIMEOUT diagnostic.
# Exit 77 where gpu_soak or the fakes are not built (no CUDA or NCCL headers at configure time).
# Under make check the launcher is $MPIEXEC (tests/launch.sh); by hand from a build directory:
#   MPIEXEC=mpiexec.mpich sh ../tests/mpi/soak.sh
here=$(cd "$(dirname "$0")" && pwd)
srcdir=${top_srcdir:-$here/../..}
srcdir=$(cd "$srcdir" && pwd)
if [ "${1:-}" = --launch ]; then
    # the launcher tests/gpu/soak.sh calls: --launch NP PROGRAM ARGS..., the fakes handed to the ranks only
    np=$2
    shift 2
    libs=$(cd "$(dirname "$1")/../mpi/.libs" && pwd)
    exec sh "$srcdir/tests/launch.sh" --np "$np" --env "LD_PRELOAD=$libs/libfakecudart.so" \
        --env "TLMPI_NCCL_LIBRARY=$libs/libfakenccl.so" --env FAKE_CUDA_DEVICES=8 --env TLMPI_TIER=nccl \
        --env TLMPI_ENQUEUE_FALLBACK=sync --env "TLMPI_TIMEOUT=$TLMPI_TIMEOUT" -- "$@"
fi
top_srcdir=$srcdir # absolute: the launcher runs again from the dying-rank run's own directory
export top_srcdir
builddir=${1:-${top_builddir:-.}}
builddir=$(cd "$builddir" && pwd)
MPIEXEC=${MPIEXEC:-mpiexec}
export MPIEXEC
prog=$builddir/tests/gpu/gpu_soak
for f in "$prog" "$builddir/tests/mpi/.libs/libfakecudart.so" "$builddir/tests/mpi/.libs/libfakenccl.so"; do
    if [ ! -e "$f" ]; then
        echo "SKIP: $f not built (needs CUDA and NCCL headers at configure time)"
        exit 77
    fi
done
s=$(date +%s)
SOAK_NO_PROBE=1 SOAK_LAUNCH="sh $here/soak.sh --launch" SOAK_SECONDS=${SOAK_CPU_SECONDS:-15} \
    SOAK_ARGS="-m 256k --no-graph --cp 5 ${SOAK_CPU_ARGS:-}" SOAK_MUTANT_SECONDS=4 SOAK_DIE_NP=2 SOAK_DIE_RANK=1 \
    SOAK_DIE_AFTER=3 SOAK_TLMPI_TIMEOUT=10 OUT=$builddir/tests/mpi/work-soak \
    sh "$srcdir/tests/gpu/soak.sh" 2 "$builddir" "${SOAK_CPU_PARTS:-soak,mutant,die}"
rc=$?
echo "soak.sh against the fakes: $(( $(date +%s) - s )) s"
exit $rc
