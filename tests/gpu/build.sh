#!/bin/bash
# build.sh TARBALL [BUILD_DIR]: unpack a `make dist` tarball, configure and build tlmpi plus its check
# programs (no tests run) in BUILD_DIR (default /tmp/tlmpi-gpu-build). Prints the build (source)
# directory as the last line of stdout; logs go to BUILD_DIR/build.log. For hosts without
# libtool/autoreconf (the tarball carries configure). Reused by bench scripts. configure takes CC,
# MPIEXEC etc. from the environment; BUILD_JOBS (default nproc) sets make's -j; BUILD_CHECK_TARGETS
# (e.g. "tests/gpu/gpu_persist") builds only those check programs instead of all of them.
set -eo pipefail
tarball=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
top=${2:-${TLMPI_GPU_BUILD_DIR:-/tmp/tlmpi-gpu-build}}
rm -rf "$top"
mkdir -p "$top"
log=$top/build.log
tar -xzf "$tarball" -C "$top"
src=$(ls -d "$top"/tlmpi-*/ | head -1)
cd "$src"
{
    echo "== configure ($(date -u +%FT%TZ))"
    ./configure --enable-silent-rules
    echo "== make"
    make -j"${BUILD_JOBS:-$(nproc)}"
    echo "== check programs"
    if [ -n "${BUILD_CHECK_TARGETS:-}" ]; then
        # shellcheck disable=SC2086
        make -j"${BUILD_JOBS:-$(nproc)}" $BUILD_CHECK_TARGETS
    else
        make -j"${BUILD_JOBS:-$(nproc)}" check TESTS=
    fi
} >"$log" 2>&1 || { tail -40 "$log" >&2; echo "build failed (see $log)" >&2; exit 1; }
grep -A14 "configuration summary" "$log" >&2 || true
pwd
