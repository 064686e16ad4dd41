#!/bin/sh
# scripts/demo.sh: quick start, command 1 (Debian 12).
#
#   1. installs the Debian packages that are missing (needs root or sudo only then),
#   2. builds tlmpi out of tree in build/ with MPICH (autoreconf -fi; configure CC=mpicc.mpich; make),
#   3. runs the demo: bench/passthrough, an ordinary MPI program built WITHOUT tlmpi, on 2 ranks with
#      libtlmpi.so preloaded. It times MPI_X (through tlmpi) against PMPI_X (plain MPICH) in the same
#      run and prints the pass-through overhead; tlmpi prints at MPI_Finalize what it intercepted
#      (TLMPI_STATS=1); then the same calls on heap memory allocated before MPI_Init and on mmap'ed
#      memory (--buf=preinit, --buf=mmap: on a GPU node each takes its own way through tlmpi's host
#      classification). If valgrind is installed, bench/callgrind.sh also counts the instructions
#      tlmpi adds per call (heap and mmap'ed buffers).
#   4. on a machine with a GPU (and a CUDA build): the device-buffer bench (bench/run-gpu.sh):
#      tlmpi auto against raw NCCL and host staging, 1 rank, then 2 and 4 ranks on the one GPU
#      under an MPS daemon of its own where nvidia-cuda-mps-control exists; it prints the tables
#      and the plots' paths (bench/plot.sh, where a Python with matplotlib is there). Without a GPU
#      this step says so and is skipped.
#
# MPI: MPICH (mpicc.mpich, installed when missing), unless only Open MPI is installed
# (mpicc.openmpi, e.g. a GPU host with nothing installable): then it is used and nothing is
# installed; an unpacked dist tarball needs no autoreconf.
#
# Arguments are passed to bench/passthrough (e.g. scripts/demo.sh -r 200 for a shorter run).
# Idempotent: a second run installs nothing, rebuilds only what changed and reruns the demo.
# Environment: MPICC (default mpicc.mpich), MPIEXEC (default mpiexec.mpich), BUILD_DIR (default
# build), DEMO_CALLGRIND=0 to skip the instruction count, SKIP_APT=1 to never call apt-get,
# DEMO_GPU=0 to skip step 4, DEMO_GPU_SIZES (default 8,64k,1m,16m), DEMO_GPU_NPS (default "2 4").
set -eu

cd "$(dirname "$0")/.."
src=$(pwd)
build=${BUILD_DIR:-build}
case $build in /*) ;; *) build=$src/$build ;; esac
# MPICH, unless only Open MPI is installed (then it is used and nothing is installed: e.g. a GPU host)
if [ -z "${MPICC:-}" ] && ! command -v mpicc.mpich >/dev/null 2>&1 && command -v mpicc.openmpi >/dev/null 2>&1; then
    MPICC=mpicc.openmpi MPIEXEC=${MPIEXEC:-mpiexec.openmpi}
fi
mpicc=${MPICC:-mpicc.mpich}
mpiexec=${MPIEXEC:-mpiexec.mpich}
export MPIEXEC_TIMEOUT=${MPIEXEC_TIMEOUT:-300} # hydra kills a hung job
t0=$(date +%s)

say() { printf '\n==> %s\n' "$*"; }

# ---- 1. packages ---------------------------------------------------------------------------------
# shellcheck source=scripts/packages.sh
. "$src/scripts/packages.sh"
case $mpicc in
*mpich*) install_missing demo.sh mpich libmpich-dev libhwloc-dev hwloc check autoconf automake libtool pkg-config make ;;
*) printf '\n==> packages: none installed (MPI: %s)\n' "$mpicc" ;;
esac
need_ar=
[ -x "$src/configure" ] && [ -f "$src/Makefile.in" ] || need_ar=autoreconf
for tool in "$mpicc" "$mpiexec" $need_ar make; do
    command -v "$tool" >/dev/null 2>&1 || { echo "demo.sh: $tool not found" >&2; exit 1; }
done

# ---- 2. build -------------------------------------------------------------------------------------
log=$build/demo-build.log
mkdir -p "$build"
: >"$log"
run_logged() { # what, command...
    what=$1; shift
    if ! "$@" >>"$log" 2>&1; then
        echo "demo.sh: $what failed; last lines of $log:" >&2
        tail -n 40 "$log" >&2
        exit 1
    fi
}
# autoreconf only when the generated configure is missing or older than its inputs
stale=no
if [ ! -x "$src/configure" ] || [ ! -f "$src/Makefile.in" ]; then
    stale=yes
elif [ -e "$src/.git" ] && [ -n "$(find "$src/configure.ac" "$src/Makefile.am" "$src"/*/local.mk "$src"/m4 -newer "$src/configure" 2>/dev/null | head -1)" ]; then
    # a checkout whose inputs changed (an unpacked dist tarball is never regenerated)
    stale=yes
fi
if [ $stale = yes ]; then
    say "autoreconf -fi"
    run_logged autoreconf sh -c "cd '$src' && autoreconf -fi"
fi
if [ ! -f "$build/config.status" ] || [ "$src/configure" -nt "$build/config.status" ] ||
   ! grep -q "CC=.*$mpicc" "$build/config.status" 2>/dev/null; then
    say "configure (out of tree in $build, CC=$mpicc)"
    run_logged configure sh -c "cd '$build' && '$src/configure' --enable-silent-rules CC='$mpicc'"
fi
jobs=$(nproc 2>/dev/null || echo 2)
say "make -j$jobs (log: $log)"
run_logged make make -C "$build" -j"$jobs"
grep -E '^  (C compiler|MPI|CUDA|NCCL|hwloc) ' "$log" 2>/dev/null | sed 's/^/   /' || true
lib=$build/.libs/libtlmpi.so
prog=$build/bench/passthrough
[ -f "$lib" ] && [ -x "$prog" ] || { echo "demo.sh: build did not produce $lib and $prog" >&2; exit 1; }
echo "   built in $(( $(date +%s) - t0 )) s: $lib"
echo "   demo program: $prog (NEEDED: $(readelf -d "$prog" 2>/dev/null | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p' | tr '\n' ' '))"

# ---- 3. demo --------------------------------------------------------------------------------------
say "what tlmpi sees on this machine (tools/tlmpi_info)"
"$build/tools/tlmpi_info" 2>&1 | sed -n '1,/^$/p' | sed '/^$/d; s/^/   /'
if "$build/tools/tlmpi_info" 2>&1 | grep -q 'GPUs 0'; then
    echo "   -> no usable GPU here: every collective on host buffers goes to MPICH unchanged (pass-through)"
else
    echo "   -> GPU(s) visible: device buffers would be taken over; this demo uses host buffers only"
fi

out=$build/demo-run.out err=$build/demo-run.err
rc=0
if "$mpiexec" --version 2>&1 | grep -qiE 'open ?mpi|openrte'; then
    # Open MPI: -x hands a variable to the ranks (never to mpiexec itself); root needs the override
    [ "$(id -u)" = 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    say "$mpiexec -n 2 -x LD_PRELOAD=$lib -x TLMPI_STATS=1 $prog"
    "$mpiexec" -n 2 -x LD_PRELOAD="$lib" -x TLMPI_STATS=1 "$prog" "$@" </dev/null >"$out" 2>"$err" || rc=$?
else
    say "$mpiexec -n 2 -genv LD_PRELOAD=$lib -genv TLMPI_STATS=1 $prog"
    "$mpiexec" -n 2 -genv LD_PRELOAD="$lib" -genv TLMPI_STATS=1 "$prog" "$@" </dev/null >"$out" 2>"$err" || rc=$?
fi
cat "$out"
printf '\nwhat tlmpi intercepted (TLMPI_STATS=1, printed by each rank inside MPI_Finalize):\n'
# ranks print in any order: show rank 0 then rank 1, each with its lines
awk '/^tlmpi stats rank/ { r = $4; sub(/:$/, "", r) } r != "" { lines[r] = lines[r] $0 "\n"; next } { other = other $0 "\n" }
     END { for (i = 0; i < 64; i++) if (i "" in lines) printf "%s", lines[i ""]; if (other != "") printf "other output:\n%s", other }' "$err"
if [ $rc -ne 0 ]; then
    echo "demo.sh: the demo program failed (rc $rc)" >&2
    exit $rc
fi
# The same 8-byte calls on host buffers of the other kinds, which take other ways through tlmpi's
# host classification on a GPU node (src/mem/classify.c): the brk heap allocated before MPI_Init,
# and an anonymous mmap made before MPI_Init (what allocators hand out for large blocks).
say "the same 8-byte calls on other host buffers: heap allocated before MPI_Init, and mmap'ed"
for kind in preinit mmap; do
    kout=$build/demo-run-$kind.out
    krc=0
    if "$mpiexec" --version 2>&1 | grep -qiE 'open ?mpi|openrte'; then
        "$mpiexec" -n 2 -x LD_PRELOAD="$lib" "$prog" --buf=$kind "$@" </dev/null >"$kout" 2>&1 || krc=$?
    else
        "$mpiexec" -n 2 -genv LD_PRELOAD="$lib" "$prog" --buf=$kind "$@" </dev/null >"$kout" 2>&1 || krc=$?
    fi
    if [ $krc -ne 0 ]; then
        echo "demo.sh: the demo program failed with --buf=$kind (rc $krc); its output: $kout" >&2
        exit $krc
    fi
    printf '   %-8s %s\n' "$kind:" "$(grep '^target:' "$kout" || echo "no target line (see $kout)")"
    grep -E '^MPI_(Allreduce|Allgather|Reduce_scatter_block) ' "$kout" | sed 's/^/            /'
done

if [ "${DEMO_CALLGRIND:-1}" = 1 ] && command -v valgrind >/dev/null 2>&1; then
    say "instructions tlmpi adds per call (bench/callgrind.sh: valgrind --tool=callgrind, 2 ranks)"
    for kind in heap mmap; do
        echo "   host buffers: $kind"
        sh "$src/bench/callgrind.sh" -b "$build" -m "$mpiexec" -n 2000 -B $kind | sed 's/^/   /' || true
    done
elif [ "${DEMO_CALLGRIND:-1}" = 1 ]; then
    say "instruction count skipped: valgrind is not installed (apt-get install valgrind; bench/callgrind.sh)"
fi
# ---- 4. device buffers (a GPU host) ---------------------------------------------------------------
if [ "${DEMO_GPU:-1}" = 1 ] && ! "$build/tools/tlmpi_info" 2>&1 | grep -q 'GPUs 0' && [ -x "$build/bench/tlmpi_bench" ] &&
   grep -q '^#define HAVE_CUDA 1' "$build/config.h" 2>/dev/null; then
    gout=$build/demo-gpu
    rm -rf "$gout"
    mkdir -p "$gout"
    export NCCL_NVLS_ENABLE=0 # never NVLink multicast on a shared host
    gsizes=${DEMO_GPU_SIZES:-8,64k,1m,16m}
    say "device buffers, 1 rank: tlmpi auto vs raw NCCL vs host staging (bench/run-gpu.sh; $gsizes)"
    OUT=$gout/np1 NPS=1 MODES=auto,raw-nccl,staging SIZES=$gsizes REPS=3 TARGET_S=0.05 MPIEXEC=$mpiexec \
        bash "$src/bench/run-gpu.sh" "$build" >"$gout/np1.log" 2>&1 || echo "   (the 1-rank bench failed: $gout/np1.log)"
    sed -n '/^|/p' "$gout/np1/summary.md" 2>/dev/null | head -40 | sed 's/^/   /'
    if command -v nvidia-cuda-mps-control >/dev/null 2>&1; then
        say "device buffers, ${DEMO_GPU_NPS:-2 4} ranks on the one GPU under an MPS daemon of this demo (tests/gpu/mps.sh)"
        OUT=$gout/mps NPS="${DEMO_GPU_NPS:-2 4}" MODES=auto,raw-nccl,staging SIZES=$gsizes REPS=3 TARGET_S=0.05 \
            MPIEXEC=$mpiexec sh "$src/tests/gpu/mps.sh" bash "$src/bench/run-gpu.sh" "$build" >"$gout/mps.log" 2>&1 ||
            echo "   (the multi-rank bench failed: $gout/mps.log)"
        sed -n '/^|/p' "$gout/mps/summary.md" 2>/dev/null | head -60 | sed 's/^/   /'
    else
        say "several ranks on one GPU skipped: no nvidia-cuda-mps-control here (without MPS their waits cost milliseconds)"
    fi
    for d in np1 mps; do
        [ -f "$gout/$d/results.csv" ] || continue
        if sh "$src/bench/plot.sh" -o "$gout/plots" --prefix "demo-$d" --note "scripts/demo.sh" "$gout/$d/results.csv" \
            >"$gout/plot-$d.log" 2>&1; then
            echo "   plots: $(ls "$gout/plots"/demo-"$d"*.png 2>/dev/null | tr '\n' ' ')"
        else
            echo "   plots for $d skipped: $(tail -1 "$gout/plot-$d.log")"
        fi
    done
    echo "   CSVs and logs: $gout"
elif [ "${DEMO_GPU:-1}" = 1 ]; then
    say "device-buffer bench skipped: no usable GPU (or a build without CUDA) here"
fi
say "demo done in $(( $(date +%s) - t0 )) s. The whole test suite: scripts/test.sh"
