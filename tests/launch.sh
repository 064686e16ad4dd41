#!/bin/sh
# LOG_COMPILER of every test (automake runs "launch.sh <test> [args]"), and the MPI launcher used
# by the shell tests:
#   mpi_*, gpu_*         run under $MPIEXEC with $TLMPI_TEST_NP ranks (default 2; a name containing
#                        _np4 / _np3 / _np1 uses that many)
#   *.sh                 run with $SHELL (shell tests; they call this script again to launch MPI)
#   anything else        exec'd as is
#   launch.sh --np N [--env NAME=VALUE]... [--] prog [args]
#                        prog under $MPIEXEC with N ranks; each --env is handed to the ranks
#                        explicitly (hydra: -genv NAME VALUE, Open MPI: -x NAME=VALUE), never to
#                        mpiexec itself (so LD_PRELOAD does not preload into the launcher)
# Open MPI's mpiexec gets --oversubscribe and, as root, OMPI_ALLOW_RUN_AS_ROOT(_CONFIRM). Both
# launchers kill a hung job after $MPIEXEC_TIMEOUT seconds when it is set (CI sets 300).
# stdin is /dev/null: hydra and orterun both forward stdin, which a CI job may not have.

is_ompi() {
    "$MPIEXEC" --version 2>&1 | grep -qiE 'open ?mpi|openrte'
}

run_mpi() { # np, then the mpiexec arguments (env options, program, args)
    np=$1
    shift
    if [ -z "$MPIEXEC" ]; then
        echo "SKIP: no mpiexec"
        exit 77
    fi
    ompi_flags=
    if is_ompi; then
        ompi_flags="--oversubscribe"
        if [ "$(id -u)" = 0 ]; then
            export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
        fi
    fi
    exec "$MPIEXEC" $ompi_flags -n "$np" "$@" </dev/null
}

if [ "$1" = --np ]; then
    np=$2
    shift 2
    ompi=0
    is_ompi && ompi=1
    # rebuild "$@" as: env options, then the program and its arguments
    n=$#
    i=0
    opts=1
    while [ $i -lt $n ]; do
        a=$1
        shift
        i=$((i + 1))
        if [ $opts = 1 ] && [ "$a" = --env ] && [ $i -lt $n ]; then
            v=$1
            shift
            i=$((i + 1))
            if [ $ompi = 1 ]; then
                set -- "$@" -x "$v"
            else
                set -- "$@" -genv "${v%%=*}" "${v#*=}"
            fi
        elif [ $opts = 1 ] && [ "$a" = -- ]; then
            opts=0
        else
            opts=0
            set -- "$@" "$a"
        fi
    done
    run_mpi "$np" "$@"
fi

prog=$1
shift
base=$(basename "$prog")
case "$base" in
    mpi_*|gpu_*)
        np=${TLMPI_TEST_NP:-2}
        case "$base" in *_np4*) np=4 ;; *_np3*) np=3 ;; *_np1*) np=1 ;; esac
        run_mpi "$np" "$prog" "$@" ;;
    *.sh)
        exec ${SHELL:-/bin/sh} "$prog" "$@" ;;
    *)
        exec "$prog" "$@" ;;
esac
