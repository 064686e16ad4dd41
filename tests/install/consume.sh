#!/bin/bash
# consume.sh BUILD_DIR MPICC MPIEXEC: tlmpi installed from BUILD_DIR (make install DESTDIR=<tmp>), then
# tests/install/consumer.c built against the installed copy twice, through CMake's find_package(tlmpi)
# (CMAKE_PREFIX_PATH=<tmp><prefix>; MPI found from MPICC) and through pkg-config (tlmpi.pc under
# PKG_CONFIG_SYSROOT_DIR=<tmp>, compiled with MPICC), each run with 2 ranks. Prints one line per
# consumer, "consume: cmake PASS|FAIL|SKIP" and "consume: pkg-config PASS|FAIL|SKIP", and exits nonzero
# if one failed (SKIP: cmake or pkg-config not installed).
set -u
build=$(cd "${1:?usage: consume.sh BUILD_DIR MPICC MPIEXEC}" && pwd)
cc=${2:?usage: consume.sh BUILD_DIR MPICC MPIEXEC}
mpiexec=${3:?usage: consume.sh BUILD_DIR MPICC MPIEXEC}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tlmpi-consume.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT
flags=
if "$mpiexec" --version 2>&1 | grep -qiE 'open ?mpi|openrte'; then
    flags="--oversubscribe"
    [ "$(id -u)" = 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
if ! make -C "$build" install DESTDIR="$tmp/root" >"$tmp/install.log" 2>&1; then
    tail -20 "$tmp/install.log"
    echo "consume: cmake FAIL (make install failed)"
    echo "consume: pkg-config FAIL (make install failed)"
    exit 1
fi
prefix=$(sed -n 's/^prefix = //p' "$build/Makefile")
libdir=$(make -s -C "$build" print-libdir 2>/dev/null || true)
[ -n "$libdir" ] || libdir=$prefix/lib
root=$tmp/root
rc=0
run() { # name binary
    if timeout 120 "$mpiexec" $flags -n 2 env LD_LIBRARY_PATH="$root$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
        TLMPI_LOG_LEVEL=error "$2" >"$tmp/$1.out" 2>&1 && grep -q "consumer: PASS" "$tmp/$1.out"; then
        echo "consume: $1 PASS ($(grep -m1 'consumer:' "$tmp/$1.out"))"
    else
        cat "$tmp/$1.out"
        echo "consume: $1 FAIL"
        rc=1
    fi
}
if command -v cmake >/dev/null 2>&1; then
    if (cd "$tmp" && CC="$cc" cmake -S "$here" -B cm -DCMAKE_PREFIX_PATH="$root$prefix" -DMPI_C_COMPILER="$cc" \
            >cmake.log 2>&1 && cmake --build cm >>cmake.log 2>&1); then
        run cmake "$tmp/cm/consumer"
    else
        tail -30 "$tmp/cmake.log"
        echo "consume: cmake FAIL (configure or build)"
        rc=1
    fi
else
    echo "consume: cmake SKIP (no cmake)"
fi
if command -v pkg-config >/dev/null 2>&1; then
    pc=$(PKG_CONFIG_PATH="$root$libdir/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$root" pkg-config --cflags --libs tlmpi)
    # shellcheck disable=SC2086
    if "$cc" -o "$tmp/pc-consumer" "$here/consumer.c" $pc -ldl >"$tmp/pc.log" 2>&1; then
        run pkg-config "$tmp/pc-consumer"
    else
        cat "$tmp/pc.log"
        echo "consume: pkg-config FAIL (build: $cc ... $pc)"
        rc=1
    fi
else
    echo "consume: pkg-config SKIP (no pkg-config)"
fi
exit $rc
