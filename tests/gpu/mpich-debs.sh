#!/bin/bash
# mpich-debs.sh DEBS_DIR TARBALL [BUILD_DIR]: tlmpi built against MPICH on a host that has only
# another MPI (the GPU host: Open MPI 4.1.6, without the MPI-4 persistent collectives), from MPICH's
# Debian packages carried in DEBS_DIR (Debian 12: `apt-get download mpich libmpich12 libmpich-dev
# libslurm38 libucx0` on a Debian 12 machine; see shared/reference/machines.md).
#  1. every DEBS_DIR/*.deb unpacked with `dpkg -x` into MPICH_PREFIX (default /tmp/mp; never into /);
#  2. MPICH_PREFIX/env.sh written: LD_LIBRARY_PATH (the prefix's library directory first), PATH (its
#     bin), HYDRA_LAUNCHER=fork (no ssh), MPIR_CVAR_ENABLE_GPU=0 (tlmpi never hands a device pointer
#     to the MPI; MPICH need not look for GPUs), MPIEXEC (its mpiexec.hydra), MPICH_DEBS_CC and
#     MPICH_DEBS_LIBS (the CC and LIBS below, for building other MPI programs) - source it before
#     running anything of the build;
#  3. tlmpi built from TARBALL by tests/gpu/build.sh in BUILD_DIR (default /tmp/tlmpi-mpich-build)
#     from the packaged wrapper's `mpicc.mpich -show` with /usr replaced by the prefix (its paths are
#     baked in): its compiler and -I / -W flags as CC, its -L / -l flags plus an rpath to the
#     prefix's libraries as LIBS (after the objects: with --as-needed, as Debian's and Ubuntu's gcc
#     link, a -lmpich before them is dropped, configure's MPI link test fails and it falls back to
#     pkg-config: a system MPICH, or none), MPIEXEC as above; BUILD_JOBS and
#     BUILD_CHECK_TARGETS are passed on (default targets: gpu_persist, gpu_nbc, the PMPI guard).
#     The build must say "MPI : MPICH (CC)" (checked).
# Prints the build (source) directory as the last line of stdout; the build log is BUILD_DIR/build.log.
# Exit 1 with a reason when a step fails.
set -u -o pipefail
debs=$(cd "${1:?usage: mpich-debs.sh DEBS_DIR TARBALL [BUILD_DIR]}" 2>/dev/null && pwd) || { echo "mpich-debs: no directory $1" >&2; exit 1; }
tarball=${2:?usage: mpich-debs.sh DEBS_DIR TARBALL [BUILD_DIR]}
top=${3:-/tmp/tlmpi-mpich-build}
here=$(cd "$(dirname "$0")" && pwd)
P=${MPICH_PREFIX:-/tmp/mp}
case $P in /|/usr|/usr/*) echo "mpich-debs: refusing MPICH_PREFIX=$P" >&2; exit 1 ;; esac
command -v dpkg >/dev/null 2>&1 || { echo "mpich-debs: no dpkg on this host" >&2; exit 1; }
ls "$debs"/*.deb >/dev/null 2>&1 || { echo "mpich-debs: no .deb files in $debs" >&2; exit 1; }
rm -rf "$P"
mkdir -p "$P"
for d in "$debs"/*.deb; do
    dpkg -x "$d" "$P" || { echo "mpich-debs: dpkg -x $d failed" >&2; exit 1; }
done
lib=$(dirname "$(ls "$P"/usr/lib/*/libmpich.so.12 2>/dev/null | head -1)")
wrapper=$P/usr/bin/mpicc.mpich
if [ ! -e "$lib/libmpich.so.12" ] || [ ! -x "$wrapper" ] || [ ! -x "$P/usr/bin/mpiexec.hydra" ]; then
    echo "mpich-debs: the packages lack libmpich.so.12, mpicc.mpich or mpiexec.hydra (need mpich, libmpich12, libmpich-dev)" >&2
    exit 1
fi
show=$("$wrapper" -show 2>/dev/null)
[ -n "$show" ] || { echo "mpich-debs: $wrapper -show printed nothing" >&2; exit 1; }
show=$(echo "$show" | sed -e "s#-I/usr/#-I$P/usr/#g" -e "s#-L/usr/#-L$P/usr/#g")
cc= libs=
for w in $show; do
    case $w in
        -L*|-l*) libs="$libs $w" ;;
        *) cc="$cc $w" ;;
    esac
done
cc=${cc# }
libs="${libs# } -Wl,-rpath,$lib"
cat >"$P/env.sh" <<EOF
# MPICH unpacked from Debian packages by tests/gpu/mpich-debs.sh: source this file
export LD_LIBRARY_PATH=$lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}
export PATH=$P/usr/bin:\$PATH
export HYDRA_LAUNCHER=fork MPIR_CVAR_ENABLE_GPU=0
export MPIEXEC=$P/usr/bin/mpiexec.hydra
export MPICH_DEBS_CC="$cc" MPICH_DEBS_LIBS="$libs" # (not TLMPI_*: tlmpi warns about unknown TLMPI_ variables)
EOF
# shellcheck disable=SC1091
. "$P/env.sh"
echo "mpich-debs: MPICH from $(ls "$debs" | tr '\n' ' ')in $P; CC=$cc LIBS=$libs" >&2
"$MPIEXEC" --version 2>&1 | grep -m1 -i version >&2
src=$(CC=$cc LIBS=$libs MPIEXEC=$MPIEXEC TLMPI_GPU_BUILD_DIR=$top \
    BUILD_CHECK_TARGETS=${BUILD_CHECK_TARGETS:-tests/gpu/gpu_persist tests/gpu/gpu_nbc tests/gpu/libtlmpi_guard.la} \
    bash "$here/build.sh" "$tarball" "$top" | tail -1) || exit 1
if ! grep -qE 'MPI +: MPICH \(CC\)' "$top/build.log"; then
    echo "mpich-debs: configure did not take the unpacked MPICH through CC/LIBS:" >&2
    grep -E 'compiles and links MPI|MPI +:' "$top/build.log" >&2
    exit 1
fi
echo "$src"
