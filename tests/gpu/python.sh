#!/bin/sh
# python.sh NPS BUILD_DIR: the Python example of the stream-ordered collectives
# (python/examples/graph_step.py over python/tlmpi_enqueue.py, issue 21) on a GPU host, as a user
# runs it from an installed tlmpi: `make install DESTDIR=...` of BUILD_DIR (a build of the tarball,
# tests/gpu/build.sh), then for each rank count in NPS (e.g. "2 4"), all ranks on this host's GPU(s)
# through mpirun.sh, LD_PRELOAD=<installed>/lib/libtlmpi.so (and the PMPI guard where it was built:
# a device pointer reaching PMPI_* aborts) set in the ranks only, python3 running the installed
# example, per run:
#   cupy        cupy.cuda.Graph, capture mode global, mixing (the defaults)
#   cupy-nomix  the same with prepare(no_mixing=True)
#   torch       torch.cuda.CUDAGraph (capture_error_mode global); only where torch imports
# PY_RUNS picks runs, PY_REPLAYS (50) checked replays, PY_BENCH (200) back-to-back replays, PY_ARGS
# more arguments for graph_step.py, PY_GUARD=0 leaves the PMPI guard out, PYTHON the interpreter
# (python3: on the GPU host the one with PyTorch, CuPy and mpi4py). Under MPS (CUDA_MPS_PIPE_DIRECTORY
# set, as tests/gpu/mps.sh does) tlmpi picks the node tier and each rank's PASS line must show node
# captures ("node/capture"); without MPS TLMPI_TIER=node is forced (correct, slow: time-sliced device waits). Every run has
# TLMPI_TIMEOUT=60, TLMPI_STATS=1 and runs under `timeout` (PY_TIMEOUT, 240 s; cut to what
# DEADLINE_AT leaves). Prints one line per run and each rank's line, then "python: PASS k/k runs" or
# "python: FAIL ..."; exit 0 only if every run passed. Logs: $OUT/python-npN-RUN.log (default OUT:
# BUILD_DIR/tests/gpu/work-python).
#   on the GPU host: sh tests/gpu/mps.sh sh tests/gpu/python.sh "2 4" /tmp/tlmpi-gpu-build/tlmpi-0.1.0
#   or, from a tarball:  bash tests/gpu/device-run.sh tlmpi-0.1.0.tar.gz python
nps=${1:?usage: python.sh NPS BUILD_DIR}
build=$(cd "${2:?usage: python.sh NPS BUILD_DIR}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-$build/tests/gpu/work-python}
mkdir -p "$out"
py=${PYTHON:-python3}
export NCCL_NVLS_ENABLE=0 NCCL_MNNVL_ENABLE=0 NCCL_SOCKET_IFNAME=${NCCL_SOCKET_IFNAME:-lo} NCCL_DEBUG=${NCCL_DEBUG:-WARN}
export TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
export TLMPI_TIMEOUT=60 TLMPI_STATS=1
unset TLMPI_ALLREDUCE_TIERS TLMPI_ALLGATHER_TIERS TLMPI_REDUCE_SCATTER_BLOCK_TIERS TLMPI_NODE_POOL TLMPI_NODE_CTAS
if [ -n "${CUDA_MPS_PIPE_DIRECTORY:-}" ]; then
    mps=yes
    unset TLMPI_TIER
else
    mps=no
    export TLMPI_TIER=node
fi
# install, as a user would
dest=$out/install
rm -rf "$dest"
if ! make -C "$build" install DESTDIR="$dest" >"$out/install.log" 2>&1; then
    echo "python: FAIL (make install DESTDIR=$dest failed: $out/install.log)"
    tail -15 "$out/install.log" | sed 's/^/    /'
    exit 1
fi
lib=$(find "$dest" -name libtlmpi.so -path '*/lib/*' | head -1)
ex=$(find "$dest" -name graph_step.py -path '*/tlmpi/python/examples/*' | head -1)
mod=$(find "$dest" -name tlmpi_enqueue.py -path '*/tlmpi/python/*' | head -1)
if [ -z "$lib" ] || [ -z "$ex" ] || [ -z "$mod" ]; then
    echo "python: FAIL (installed tree lacks libtlmpi.so, tlmpi/python/tlmpi_enqueue.py or examples/graph_step.py: lib=$lib module=$mod example=$ex)"
    exit 1
fi
echo "python: installed $lib, $mod, $ex"
preload=$lib
guard=$build/tests/gpu/.libs/libtlmpi_guard.so
[ -f "$guard" ] && [ "${PY_GUARD:-1}" != 0 ] && preload=$guard:$lib
if ! "$py" -c 'import cupy, numpy, mpi4py' >"$out/imports.log" 2>&1; then
    echo "python: FAIL ($py cannot import cupy, numpy and mpi4py: $(tail -1 "$out/imports.log"))"
    exit 1
fi
echo "python: $("$py" -c 'import sys, cupy, mpi4py; print("python", sys.version.split()[0], "cupy", cupy.__version__, "mpi4py", mpi4py.__version__)' 2>&1)"
# the module's optional C extension (installed beside it where the build found Python.h): which one runs
echo "python: tlmpi_enqueue's C extension: $(cd "$(dirname "$mod")" && "$py" -c 'import tlmpi_enqueue as te; print(te._fast_file or "none, the Python path (%s)" % te._fast_why)' 2>&1 | tail -1)"
has_torch=no
"$py" -c 'import torch; assert torch.cuda.is_available()' >/dev/null 2>&1 && has_torch=yes
runs=${PY_RUNS:-cupy cupy-nomix torch}
total=0
passed=0
for np in $nps; do
    for run in $runs; do
        case $run in
            cupy) set -- --framework cupy ;;
            cupy-nomix) set -- --framework cupy --no-mixing ;;
            torch)
                if [ $has_torch = no ]; then
                    echo "python np=$np mps=$mps torch: not run (torch with CUDA does not import)"
                    continue
                fi
                set -- --framework torch ;;
            *) echo "python: unknown run $run"; exit 2 ;;
        esac
        total=$((total + 1))
        limit=${PY_TIMEOUT:-240}
        if [ -n "${DEADLINE_AT:-}" ]; then
            left=$((DEADLINE_AT - $(date +%s) - 5))
            if [ "$left" -lt 30 ]; then
                echo "python np=$np mps=$mps $run: FAIL (not run: DEADLINE_AT reached)"
                continue
            fi
            [ "$left" -lt "$limit" ] && limit=$left
        fi
        log=$out/python-np$np-$run.log
        s=$(date +%s)
        (
            echo "== python.sh: np=$np mps=$mps run=$run LD_PRELOAD=$preload TLMPI_TIER=${TLMPI_TIER:-} $py $ex $*"
            exec timeout -k 10 "$limit" sh "$here/mpirun.sh" "$np" env LD_PRELOAD="$preload" "$py" "$ex" \
                --replays "${PY_REPLAYS:-50}" --bench "${PY_BENCH:-200}" "$@" ${PY_ARGS:-}
        ) >"$log" 2>&1
        rc=$?
        t=$(( $(date +%s) - s ))
        res=$(grep -m1 '^graph_step: ' "$log")
        nrank=$(grep -c "^graph_step rank .*: PASS" "$log")
        ncap=$(grep "^graph_step rank .*: PASS" "$log" | grep -c 'node/capture')
        why=
        if [ $rc != 0 ] || ! echo "$res" | grep -q PASS; then
            why="exit $rc${res:+, $res}"
            { [ $rc = 124 ] || [ $rc = 137 ]; } && why="timed out after $limit s${res:+; $res}"
        elif [ "$nrank" != "$np" ]; then
            why="$nrank of $np ranks printed PASS"
        elif [ $mps = yes ] && [ "$ncap" != "$np" ]; then
            why="$ncap of $np ranks counted node captures (node/capture)"
        fi
        if [ -z "$why" ]; then
            passed=$((passed + 1))
            echo "python np=$np mps=$mps $run: PASS, $t s"
        else
            echo "python np=$np mps=$mps $run: FAIL ($why, $t s; log: $log)"
            grep -E 'FAIL|TLMPI_TIMEOUT|TLMPI_GUARD|Error|rror:|Traceback|Abort|signal' "$log" | grep -v '^graph_step rank' |
                head -12 | sed 's/^/    /'
        fi
        grep '^graph_step rank' "$log" | sed 's/^/    /'
        sed -n '/^tlmpi stats rank 0:/,/^tlmpi stats rank [1-9]/p' "$log" | grep -E 'enqueue|capture' | head -8 | sed 's/^/    /'
    done
done
if [ "$total" -gt 0 ] && [ "$passed" = "$total" ]; then
    echo "python: PASS $passed/$total runs (mps=$mps, np $nps)"
    exit 0
fi
echo "python: FAIL: $passed/$total runs passed (mps=$mps, np $nps)"
exit 1
