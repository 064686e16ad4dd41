#!/bin/sh
# mpirun.sh NP PROGRAM ARGS...: start NP ranks on this host with Open MPI or MPICH, each through
# rank-env.sh. MPIEXEC overrides the launcher (default: mpiexec).
np=$1; shift
here=$(cd "$(dirname "$0")" && pwd)
mpiexec=${MPIEXEC:-mpiexec}
flags=
if "$mpiexec" --version 2>&1 | grep -qiE 'open ?mpi|openrte'; then
    flags="--oversubscribe --bind-to none"
    if [ "$(id -u)" = 0 ]; then
        export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    fi
fi
exec "$mpiexec" $flags -n "$np" sh "$here/rank-env.sh" "$@" </dev/null
