#!/bin/sh
# LOG_COMPILER of every test. Programs named mpi_* run under $MPIEXEC with $TLMPI_TEST_NP ranks
# (default 2; a test named *_np4 uses 4); everything else runs as is.
prog=$1; shift
base=$(basename "$prog")
case "$base" in
  mpi_*|gpu_*)
    np=${TLMPI_TEST_NP:-2}
    case "$base" in *_np4*) np=4 ;; *_np3*) np=3 ;; *_np1*) np=1 ;; esac
    if [ -z "$MPIEXEC" ]; then echo "SKIP: no mpiexec"; exit 77; fi
    flags=
    if "$MPIEXEC" --version 2>&1 | grep -qiE 'open ?mpi|openrte'; then
      flags="--oversubscribe"
      if [ "$(id -u)" = 0 ]; then
        export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
      fi
    fi
    exec "$MPIEXEC" $flags -n "$np" "$prog" "$@" </dev/null ;;
  *)
    exec "$prog" "$@" ;;
esac
