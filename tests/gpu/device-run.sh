#!/bin/bash
# device-run.sh TARBALL [WHAT]: one call on a GPU host that runs, on one build, the parts named in
# WHAT (comma separated; default all = tests,bench):
#   tests     the GPU test suite (tests/gpu/run.sh)            -> tests-summary.md, tests-logs.tar.gz
#   threads   MPI_THREAD_MULTIPLE suite (tests/gpu/threads.sh) with 2 and 4 ranks at the same time,
#             THREADS_REPEAT times each (default 20); THREADS_MPS=1 runs both under one MPS daemon
#             of the job (tests/gpu/mps.sh) -> threads.txt
#   kernels   bench/kernel_bench (copy/reduce kernels vs cudaMemcpyAsync) -> kernels.md
#   overhead  bench/overhead-gpu.sh (paired NCCL tier vs raw NCCL; CONFIGS, REPS) -> overhead.tar.gz
#   bench     bench/run-gpu.sh                                   -> bench-*.{csv,md,txt}
#   node      the node tier's suite (tests/gpu/node.sh, tests/gpu/gpu_node): NODE_NPS (default
#             "2 3 4 8") ranks on the GPU under an MPS daemon of the job at level NODE_LEVEL (full),
#             then NODE_NOMPS_NPS (2) ranks without MPS at level quick; NODE_DEVCOMM=1 adds the
#             1-rank devcomm runs    -> node-summary.md, node-logs.tar.gz
#   hier      the hier tier on fake nodes (tests/mpi/hier.sh with gpu_hier) under MPS: HIER_LAYOUTS
#             (default: 4x2, 6x2, 8x4, 8x2 with the ipc rail, the same with the NCCL rail, and with
#             the fused kernels at 1, 2 and 4 rail groups), steps required on the node tier (and
#             NCCL where the rail is), hier/fused on every collective for the fused runs; every
#             type of exact_values.h (TLMPI_TEST_TYPES=all) -> hier.txt, hier-logs.tar.gz
#   tune      tools/tlmpi_tune under MPS with TUNE_NPS (2 4) ranks (TUNE_SIZES, TUNE_PASSES), then one
#             bench run per rank count with modes auto,tuned,staging,raw-nccl (tuned: the file just
#             written), round-robin repetitions -> tune-npN.txt (file and table), tune-bench.csv
#   hierbench the 2D comparison in one bench run (bench/run-gpu.sh): 4 ranks as 2 fake nodes x 2,
#             modes hier (fused), hier-steps (NCCL rail), node-flat (the flat node kernels on the same
#             ranks), staging, raw-nccl; HIERBENCH_SIZES, HIERBENCH_REPS -> hierbench.txt, .csv
#   nodebench the node tier's benchmark (bench/node-bench.sh: floor, 8 B latency, sweep node vs
#             staging, HBM efficiency) under MPS, NODEBENCH_NPS (2 4 8) -> nodebench.md,
#             nodebench.csv, nodebench-logs.tar.gz
#   demo      scripts/demo.sh as a user runs it, in the unpacked tarball (Open MPI there: nothing
#             installed, no autoreconf), its GPU step included (DEMO_GPU_SIZES, default 8,1m,16m)
#             -> demo.txt, demo-plots.tar.gz
#   nbc       the non-blocking and persistent forms in one call (each step only while DEADLINE_AT
#             leaves room): 1. tests/gpu/nbc.sh (gpu_nbc) with NBC_NPS (2 4 8) ranks under MPS at
#             NBC_LEVEL (full: + the 1 MiB-pool overflow run at NBC_OVERFLOW_NPS, 2 8); 1b. with NBC_DEBS (a directory of MPICH
#             .deb files, e.g. the carried .debs): tlmpi built against that MPICH in the background
#             during step 1 (tests/gpu/mpich-debs.sh into /tmp/mp, NBC_MPICH_JOBS=6 jobs), then under
#             MPS with 2 ranks gpu_persist (1000 Start/Wait rounds, the matrix, the overflow run) and
#             gpu_nbc --quick (the _c forms); 2. bench/node_bench -S form (bench/node-bench.sh) under
#             MPS with NBC_BENCH_NPS (2 4 8) ranks on Open MPI and 2 on MPICH (persistent rows);
#             3. with NBC_OSU_DIR (an OSU 7.4 build with CUDA; NBC_OSU_WAIT=FILE waits for a build of
#             the same command to write FILE, "ok" when it succeeded): tlmpi-osu-compare -b nonblocking
#             -m auto (NBC_OSU_MODES), 4 B .. 64 MiB (NBC_OSU_SIZES), validated, NBC_OSU_NPS (2 4)
#             ranks, each rank count only with NBC_OSU_MIN_S (80) s left
#             -> nbc-summary.md, nbc-bench.csv, osu-nbc.csv, nbc-logs.tar.gz
#   python    the Python example of the stream-ordered collectives (tests/gpu/python.sh: make install
#             of the build, python/examples/graph_step.py with CuPy and PyTorch graphs, LD_PRELOAD)
#             under MPS with PY_NPS (2 4) ranks; only when named (not part of all)
#             -> python-summary.md, python-logs.tar.gz
#   graph     the stream-ordered forms and CUDA graph capture (issue 21): 1. tests/gpu/graph.sh
#             (gpu_graph: captured once, replayed GRAPH_REPLAYS (200) times with new inputs, checked)
#             with GRAPH_NPS (2 4 8) ranks under MPS at GRAPH_LEVEL (full: + the 1 MiB-pool
#             overflow run at GRAPH_OVERFLOW_NPS, 2 8); 2. bench/node_bench -S graph
#             (bench/node-bench.sh: K back-to-back enqueued calls, eager stream and replayed graph,
#             against the eager and graph floors of the same run; GRAPH_BENCH_ARGS) under MPS with
#             GRAPH_BENCH_NPS (2 4 8) ranks -> graph-summary.md, graph-bench.csv, graph-logs.tar.gz
# The device tool returns at most 8 files from $OUT.
# The parts node, nodebench and nbc stop starting runs near DEADLINE_AT (seconds since the epoch;
# default: DEVICE_BUDGET_S, 560, after this script started), so that one device command (600 s at
# most) still writes its summaries and tarballs when something hangs.
set -u
export NCCL_NVLS_ENABLE=0
export DEADLINE_AT=${DEADLINE_AT:-$(( $(date +%s) + ${DEVICE_BUDGET_S:-560} ))}
tarball=$1
what=${2:-all}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
final=${OUT:-$PWD/device-out}
mkdir -p "$final"
rc=0
want() { case ",$what," in *",$1,"*|*",all,"*) return 0 ;; esac; return 1; }
build_dir() { # the build of the test run (same tarball, same machine) when there is one
    local b
    b=$(ls -d /tmp/tlmpi-gpu-build/tlmpi-*/ 2>/dev/null | head -1)
    if [ -z "$b" ] || [ ! -e "$b/.libs/libtlmpi.so" ]; then
        b=$(bash "$here/build.sh" "$tarball" 2>"$final/build-err.txt" | tail -1)
    fi
    echo "$b"
}
if want tests; then
    OUT=/tmp/tlmpi-tests-out bash "$here/run.sh" "$tarball" || rc=1
    cp /tmp/tlmpi-tests-out/summary.md "$final/tests-summary.md" 2>/dev/null
    tar czf "$final/tests-logs.tar.gz" -C /tmp tlmpi-tests-out 2>/dev/null
fi
if want threads; then
    b=$(build_dir)
    # the 2- and 4-rank matrices run at the same time (6 processes on the one GPU: also a stress
    # test), each with its own log directory; with THREADS_MPS=1 both under one MPS daemon of the
    # job (one MPS server per GPU)
    pids=
    if [ -n "${THREADS_MPS:-}" ]; then
        sh "$here/mps.sh" bash -c "
            OUT=/tmp/tlmpi-threads-out-np2 sh '$here/threads.sh' 2 '${THREADS_REPEAT:-20}' '$b' >/tmp/threads-np2.txt 2>&1 &
            OUT=/tmp/tlmpi-threads-out-np4 sh '$here/threads.sh' 4 '${THREADS_REPEAT:-20}' '$b' >/tmp/threads-np4.txt 2>&1 &
            r=0; for p in \$(jobs -p); do wait \$p || r=1; done; exit \$r" || rc=1
    else
        for np in 2 4; do
            OUT=/tmp/tlmpi-threads-out-np$np sh "$here/threads.sh" $np "${THREADS_REPEAT:-20}" "$b" \
                >"/tmp/threads-np$np.txt" 2>&1 &
            pids="$pids $!"
        done
    fi
    for p in $pids; do wait "$p" || rc=1; done
    cat /tmp/threads-np2.txt /tmp/threads-np4.txt >>"$final/threads.txt"
    tail -40 "$final/threads.txt"
fi
if want kernels; then
    b=$(build_dir)
    "$b/bench/kernel_bench" --csv "$final/kernels.csv" >"$final/kernels.md" 2>&1 || rc=1
    cat "$final/kernels.md"
fi
if want overhead; then
    b=$(build_dir)
    OUT=/tmp/tlmpi-overhead-out bash "$root/bench/overhead-gpu.sh" "$b" >/tmp/tlmpi-overhead-out.log 2>&1 || rc=1
    cp /tmp/tlmpi-overhead-out.log /tmp/tlmpi-overhead-out/ 2>/dev/null
    tar czf "$final/overhead.tar.gz" -C /tmp tlmpi-overhead-out 2>/dev/null
    cat /tmp/tlmpi-overhead-out/paired-*.md 2>/dev/null | head -60
fi
host_facts() { # markdown lines: date, host, GPU, driver, CUDA, MPI, NCCL, tarball
    echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "- host: $(uname -srm), $(. /etc/os-release 2>/dev/null; echo "$PRETTY_NAME"), $(nproc) cores"
    echo "- GPU: $(nvidia-smi --query-gpu=name,memory.total,driver_version,compute_cap,compute_mode --format=csv,noheader 2>/dev/null | head -1)"
    echo "- CUDA (nvcc): $(nvcc --version 2>/dev/null | grep -o 'release [0-9.]*' | head -1); MPI: $(${MPIEXEC:-mpiexec} --version 2>&1 | head -1)"
    echo "- NCCL: $(ls -l /lib/x86_64-linux-gnu/libnccl.so.2 2>/dev/null | sed 's/.*-> //'); tarball: $(basename "$tarball") ($(sha256sum "$tarball" 2>/dev/null | cut -c1-16))"
}
if want node; then
    b=$(build_dir)
    nout=/tmp/tlmpi-node-out
    rm -rf "$nout"
    mkdir -p "$nout"
    s0=$(date +%s)
    {
        echo "# tlmpi node tier: GPU tests (tests/gpu/node.sh)"
        echo
        host_facts
        echo
        echo "## under MPS: np ${NODE_NPS:-2 3 4 8}, level ${NODE_LEVEL:-full}"
        echo
        echo '```'
    } >"$nout/summary.md"
    # under MPS; the daemon's control log (one "New client" line per rank that attached) is kept
    OUT=$nout/mps NOUT=$nout sh "$here/mps.sh" sh -c '
        sh "$0" "$1" "$2" "$3"; rc=$?
        [ -n "${CUDA_MPS_LOG_DIRECTORY:-}" ] && cp "$CUDA_MPS_LOG_DIRECTORY/control.log" "$NOUT/mps-control.log" 2>/dev/null
        exit $rc' "$here/node.sh" "${NODE_NPS:-2 3 4 8}" "$b" "${NODE_LEVEL:-full}" >>"$nout/summary.md" 2>&1 || rc=1
    {
        echo '```'
        echo
        echo "MPS: $(grep -ci 'new client' "$nout/mps-control.log" 2>/dev/null || echo 0) client connections in the daemon's control log"
        echo
        echo "## without MPS: np ${NODE_NOMPS_NPS:-2}, level quick"
        echo
        echo '```'
    } >>"$nout/summary.md"
    OUT=$nout/nomps sh "$here/node.sh" "${NODE_NOMPS_NPS:-2}" "$b" quick >>"$nout/summary.md" 2>&1 || rc=1
    {
        echo '```'
        echo
        echo "node part: $(( $(date +%s) - s0 )) s"
    } >>"$nout/summary.md"
    cp "$nout/summary.md" "$final/node-summary.md"
    tar czf "$final/node-logs.tar.gz" -C /tmp tlmpi-node-out 2>/dev/null
    grep -E '^node|^MPS|^node part|FAIL' "$nout/summary.md" | head -40
fi
if want hier; then
    b=$(build_dir)
    hout=/tmp/tlmpi-hier-out
    rm -rf "$hout"
    mkdir -p "$hout"
    for rail in ipc nccl fused1 fused2 fused4; do
        lays=${HIER_LAYOUTS:-4x2:RAIL 6x2:RAIL 8x4:RAIL 8x2:RAIL}
        steps=node
        [ $rail = nccl ] && steps=node,nccl
        OUT=$hout/$rail HIER_EXPECT_STEPS=$steps HIER_PROG=$b/tests/gpu/gpu_hier HIER_MPIRUN=$here/mpirun.sh \
            HIER_LAYOUTS=$(echo "$lays" | sed "s/RAIL/$rail/g") TLMPI_TEST_ITERS=${TLMPI_TEST_ITERS:-1000} \
            TLMPI_TEST_TYPES=${TLMPI_TEST_TYPES:-all} \
            sh "$here/mps.sh" sh "$root/tests/mpi/hier.sh" "$b" >>"$final/hier.txt" 2>&1 || rc=1
    done
    tar czf "$final/hier-logs.tar.gz" -C /tmp tlmpi-hier-out 2>/dev/null
    cat "$final/hier.txt"
fi
if want tune; then
    b=$(build_dir)
    tout=/tmp/tlmpi-tune-out
    rm -rf "$tout"
    mkdir -p "$tout"
    for np in ${TUNE_NPS:-2 4}; do
        f=$tout/tuning-np$np.txt
        TLMPI_TIMEOUT=120 sh "$here/mps.sh" sh "$here/mpirun.sh" "$np" "$b/tools/tlmpi_tune" -o "$f" \
            -s "${TUNE_SIZES:-8,1k,16k,64k,256k,1m,4m,16m,64m}" -p "${TUNE_PASSES:-3}" >"$tout/tune-np$np.log" 2>&1 || rc=1
        { cat "$tout/tune-np$np.log"; echo; cat "$f" 2>/dev/null; } >"$final/tune-np$np.txt"
        OUT=$tout/bench-np$np NPS=$np MODES=auto,tuned,staging,raw-nccl TLMPI_BENCH_TUNING_FILE=$f \
            SIZES=${TUNE_BENCH_SIZES:-8,64k,1m,16m,64m} REPS=${TUNE_REPS:-5} TARGET_S=0.05 \
            sh "$here/mps.sh" bash "$root/bench/run-gpu.sh" "$b" >"$tout/bench-np$np.log" 2>&1 || rc=1
        cat "$tout/bench-np$np/results.csv" >>"$final/tune-bench.csv" 2>/dev/null
    done
    tail -30 "$final"/tune-np*.txt
fi
if want hierbench; then
    # issue 9's comparison in one bench run: 4 ranks as 2 fake nodes x 2, the fused kernels (hier),
    # the host-ordered steps over the NCCL rail (hier-steps), the flat node kernels on the same
    # ranks (node-flat: a communicator of its own without fake nodes), staging and raw NCCL
    b=$(build_dir)
    hb=/tmp/tlmpi-hierbench-out
    rm -rf "$hb"
    OUT=$hb NPS=4 MODES=${HIERBENCH_MODES:-hier,hier-steps,node-flat,staging,raw-nccl} \
        SIZES=${HIERBENCH_SIZES:-8,64k,1m,64m,256m} REPS=${HIERBENCH_REPS:-3} TARGET_S=0.05 \
        TLMPI_TOPO_RANKS_PER_NODE=2 TLMPI_HIER_RAIL=nccl \
        sh "$here/mps.sh" bash "$root/bench/run-gpu.sh" "$b" >"$final/hierbench.txt" 2>&1 || rc=1
    cp "$hb/results.csv" "$final/hierbench.csv" 2>/dev/null
    tail -40 "$final/hierbench.txt"
fi
if want nodebench; then
    b=$(build_dir)
    bout=/tmp/tlmpi-nodebench-out
    rm -rf "$bout"
    mkdir -p "$bout"
    { host_facts; echo; } >"$bout/facts.md"
    OUT=$bout NPS="${NODEBENCH_NPS:-2 4 8}" sh "$here/mps.sh" bash "$root/bench/node-bench.sh" "$b" \
        >"$bout/log.txt" 2>&1 || rc=1
    cat "$bout/facts.md" "$bout/summary.md" >"$final/nodebench.md" 2>/dev/null
    cp "$bout/results.csv" "$final/nodebench.csv" 2>/dev/null
    tar czf "$final/nodebench-logs.tar.gz" -C /tmp tlmpi-nodebench-out 2>/dev/null
    tail -5 "$bout/log.txt"
    cat "$final/nodebench.md" 2>/dev/null | head -80
fi
if want nbc; then
    # the non-blocking and persistent forms (docs/GPU-TESTS.md), each step started only while
    # DEADLINE_AT leaves it room, in the order of their weight: the suite on Open MPI, the
    # persistent suite on MPICH (built meanwhile from NBC_DEBS), the bench rows, OSU's non-blocking
    # benchmarks (NBC_OSU_DIR)
    b=$(build_dir)
    nout=/tmp/tlmpi-nbc-out
    rm -rf "$nout"
    mkdir -p "$nout"
    s0=$(date +%s)
    left() { echo $((DEADLINE_AT - $(date +%s))); }
    sum=$nout/summary.md
    {
        echo "# tlmpi non-blocking and persistent forms on the GPU (device-run.sh part nbc)"
        echo
        host_facts
        echo "- Open MPI build: $b"
    } >"$sum"
    # MPICH (MPI-4: persistent collectives) from its Debian packages, built in the background
    mpid=
    mb=$(ls -d /tmp/tlmpi-mpich-build/tlmpi-*/ 2>/dev/null | head -1)
    if [ -n "${NBC_DEBS:-}" ] && [ -z "${NBC_MPICH_REBUILD:-}" ] && [ -n "$mb" ] && [ -x "$mb/tests/gpu/gpu_persist" ] &&
       [ -f "${MPICH_PREFIX:-/tmp/mp}/env.sh" ]; then
        # a warm machine: the MPICH build of an earlier call (NBC_MPICH_REBUILD=1 rebuilds)
        ( echo "mpich-debs: reusing $mb (NBC_MPICH_REBUILD=1 rebuilds)" >&2; echo "$mb" ) \
            >"$nout/mpich-build.out" 2>"$nout/mpich-build.err" &
        mpid=$!
    elif [ -n "${NBC_DEBS:-}" ]; then
        ( timeout -k 5 $(( $(left) - 150 > 60 ? $(left) - 150 : 60 )) env BUILD_JOBS="${NBC_MPICH_JOBS:-6}" \
            MPICH_PREFIX="${MPICH_PREFIX:-/tmp/mp}" bash "$here/mpich-debs.sh" "$NBC_DEBS" "$tarball" /tmp/tlmpi-mpich-build \
            >"$nout/mpich-build.out" 2>"$nout/mpich-build.err" ) &
        mpid=$!
    fi
    # 1. the non-blocking suite: 2, 4, 8 ranks under MPS (main + several pool chunks)
    t=$(date +%s)
    { echo; echo "## 1. non-blocking suite, Open MPI, under MPS: np ${NBC_NPS:-2 4 8}, level ${NBC_LEVEL:-full}"; echo; echo '```'; } >>"$sum"
    OUT=$nout/suite NBC_OVERFLOW_NPS=${NBC_OVERFLOW_NPS:-2 8} \
        sh "$here/mps.sh" sh "$here/nbc.sh" "${NBC_NPS:-2 4 8}" "$b" "${NBC_LEVEL:-full}" >>"$sum" 2>&1 || rc=1
    { echo '```'; echo; echo "(step 1: $(( $(date +%s) - t )) s)"; } >>"$sum"
    # 1b. the persistent suite (and the non-blocking one, quick, with the _c forms) on MPICH, 2 ranks
    bm=
    if [ -n "$mpid" ]; then
        t=$(date +%s)
        wait "$mpid"
        mrc=$?
        bm=$(tail -1 "$nout/mpich-build.out" 2>/dev/null)
        { echo; echo "## 1b. persistent suite, MPICH from ${NBC_DEBS}, under MPS: 2 ranks"; echo
          echo "- MPICH build: exit $mrc after waiting $(( $(date +%s) - t )) s; $(grep -m1 'CC=' "$nout/mpich-build.err" | cut -c1-200)"; } >>"$sum"
        if [ $mrc != 0 ] || [ ! -x "$bm/tests/gpu/gpu_persist" ]; then
            { echo; echo '```'; tail -25 "$nout/mpich-build.err"; echo '```'; } >>"$sum"
            bm=
            rc=1
        else
            t=$(date +%s)
            { echo; echo '```'; } >>"$sum"
            ( . "${MPICH_PREFIX:-/tmp/mp}/env.sh" && OUT=$nout/persist NBC_PERSIST_NPS=2 \
                sh "$here/mps.sh" sh "$here/nbc.sh" - "$bm" "${NBC_LEVEL:-full}" ) >>"$sum" 2>&1 || rc=1
            ( . "${MPICH_PREFIX:-/tmp/mp}/env.sh" && OUT=$nout/persist-nbc \
                sh "$here/mps.sh" sh "$here/nbc.sh" 2 "$bm" quick ) >>"$sum" 2>&1 || rc=1
            { echo '```'; echo; echo "(step 1b: $(( $(date +%s) - t )) s)"; } >>"$sum"
        fi
    fi
    # 2. the bench rows (bench/node_bench -S form): Open MPI at NBC_BENCH_NPS, then MPICH at 2 ranks
    t=$(date +%s)
    { echo; echo "## 2. bench (node_bench -S form ${NBC_BENCH_ARGS:-}), under MPS"; echo; } >>"$sum"
    OUT=$nout/bench-ompi NPS="${NBC_BENCH_NPS:-2 4 8}" BENCH_ARGS="-S form ${NBC_BENCH_ARGS:-}" RUN_TIMEOUT=${NBC_BENCH_TIMEOUT:-120} \
        sh "$here/mps.sh" bash "$root/bench/node-bench.sh" "$b" >"$nout/bench-ompi.log" 2>&1 || rc=1
    grep -vE '^- options' "$nout/bench-ompi/summary.md" >>"$sum" 2>/dev/null
    cp "$nout/bench-ompi/results.csv" "$final/nbc-bench.csv" 2>/dev/null
    if [ -n "$bm" ]; then
        ( . "${MPICH_PREFIX:-/tmp/mp}/env.sh" && OUT=$nout/bench-mpich NPS=2 BENCH_ARGS="-S form ${NBC_BENCH_ARGS:-}" \
            RUN_TIMEOUT=${NBC_BENCH_TIMEOUT:-120} sh "$here/mps.sh" bash "$root/bench/node-bench.sh" "$bm" ) \
            >"$nout/bench-mpich.log" 2>&1 || rc=1
        { echo; echo "### MPICH build (persistent rows)"; echo; grep -vE '^- options' "$nout/bench-mpich/summary.md"; } >>"$sum" 2>/dev/null
        tail -n +2 "$nout/bench-mpich/results.csv" >>"$final/nbc-bench.csv" 2>/dev/null
    fi
    { echo; echo "(step 2: $(( $(date +%s) - t )) s)"; } >>"$sum"
    # 3. OSU's non-blocking benchmarks with tlmpi preloaded (an OSU build given in NBC_OSU_DIR;
    #    NBC_OSU_WAIT=FILE: a build started by the same command writes FILE when it ends, "ok" or not)
    if [ -n "${NBC_OSU_DIR:-}" ]; then
        t=$(date +%s)
        { echo; echo "## 3. OSU non-blocking benchmarks (tlmpi-osu-compare -b nonblocking), under MPS"; echo; } >>"$sum"
        if [ -n "${NBC_OSU_WAIT:-}" ]; then
            while [ ! -e "$NBC_OSU_WAIT" ] && [ "$(left)" -gt 90 ]; do sleep 2; done
            grep -q ok "$NBC_OSU_WAIT" 2>/dev/null || echo "- OSU build: not ready ($(cat "$NBC_OSU_WAIT" 2>/dev/null || echo 'no marker'))" >>"$sum"
        fi
        oo=$nout/osu
        for np in ${NBC_OSU_NPS:-2 4}; do
            l=$(left)
            if [ "$l" -lt "${NBC_OSU_MIN_S:-80}" ]; then
                echo "- np=$np: not run ($l s left before DEADLINE_AT)" >>"$sum"
                continue
            fi
            ot=$(( (l - 30) / 3 < 150 ? (l - 30) / 3 : 150 )) # per OSU run; the whole bounded below
            NCCL_NVLS_ENABLE=0 timeout -k 5 $(( l - 20 )) sh "$here/mps.sh" bash "$root/bench/osu/osu-compare.sh" -o "$oo" -n "$np" \
                -m "${NBC_OSU_MODES:-auto}" -b nonblocking -s "${NBC_OSU_SIZES:-4:67108864}" -a "${NBC_OSU_ARGS:--i 100 -x 10}" \
                -L "${NBC_OSU_LARGE:-4194304}" -A "${NBC_OSU_ARGS_LARGE:--i 10 -x 2}" -t "$ot" --no-in-place --no-plot \
                "$NBC_OSU_DIR" "$b" >>"$nout/osu.log" 2>&1 || rc=1
        done
        # one table of every run that is there (a run cut by the timeout merged nothing)
        [ -d "$oo" ] && bash "$root/bench/osu/osu-compare.sh" --from-dir "$oo" --no-plot >>"$nout/osu.log" 2>&1
        grep -E '^osu_i.*exit|^tlmpi-osu-compare:|plain MPI' "$nout/osu.log" | sed 's/^/- /' >>"$sum"
        [ -f "$oo/osu-compare.md" ] && { echo; sed -n '/^## Validation per mode/,$p' "$oo/osu-compare.md"; } >>"$sum"
        cp "$oo/osu-compare.csv" "$final/osu-nbc.csv" 2>/dev/null
        { echo; echo "(step 3: $(( $(date +%s) - t )) s)"; } >>"$sum"
    fi
    { echo; echo "nbc part: $(( $(date +%s) - s0 )) s, exit status so far $rc"; } >>"$sum"
    cp "$sum" "$final/nbc-summary.md"
    cp /tmp/tlmpi-gpu-build/build.log "$nout/ompi-build.log" 2>/dev/null
    cp /tmp/tlmpi-mpich-build/build.log "$nout/mpich-build.log" 2>/dev/null
    [ -n "${NBC_OSU_LOG:-}" ] && cp "$NBC_OSU_LOG" "$nout/" 2>/dev/null
    tar czf "$final/nbc-logs.tar.gz" -C /tmp tlmpi-nbc-out 2>/dev/null
    grep -E '^(nbc|nbc np|- MPICH|- np|\(step|nbc part)' "$sum" | head -60
fi
if want graph; then
    b=$(build_dir)
    gout=/tmp/tlmpi-graph-out
    rm -rf "$gout"
    mkdir -p "$gout"
    s0=$(date +%s)
    sum=$gout/summary.md
    {
        echo "# tlmpi stream-ordered forms and CUDA graphs on the GPU (device-run.sh part graph)"
        echo
        host_facts
        echo "- build: $b"
        echo
        echo "## 1. gpu_graph under MPS: np ${GRAPH_NPS:-2 4 8}, level ${GRAPH_LEVEL:-full}"
        echo
        echo '```'
    } >"$sum"
    OUT=$gout/suite GRAPH_OVERFLOW_NPS=${GRAPH_OVERFLOW_NPS:-2 8} \
        sh "$here/mps.sh" sh "$here/graph.sh" "${GRAPH_NPS:-2 4 8}" "$b" "${GRAPH_LEVEL:-full}" >>"$sum" 2>&1 || rc=1
    { echo '```'; echo; echo "## 2. bench (node_bench -S graph ${GRAPH_BENCH_ARGS:-}), under MPS"; echo; } >>"$sum"
    OUT=$gout/bench NPS="${GRAPH_BENCH_NPS:-2 4 8}" BENCH_ARGS="-S graph ${GRAPH_BENCH_ARGS:-}" \
        RUN_TIMEOUT=${GRAPH_BENCH_TIMEOUT:-150} sh "$here/mps.sh" bash "$root/bench/node-bench.sh" "$b" \
        >"$gout/bench.log" 2>&1 || rc=1
    grep -vE '^- options' "$gout/bench/summary.md" >>"$sum" 2>/dev/null
    cp "$gout/bench/results.csv" "$final/graph-bench.csv" 2>/dev/null
    { echo; echo "graph part: $(( $(date +%s) - s0 )) s, exit status so far $rc"; } >>"$sum"
    cp "$sum" "$final/graph-summary.md"
    tar czf "$final/graph-logs.tar.gz" -C /tmp tlmpi-graph-out 2>/dev/null
    grep -E '^(graph|RESULT|\| (allreduce|allgather|reduce_scatter_block|floor))' "$sum" | head -60
fi
if case ",$what," in *,python,*) true ;; *) false ;; esac; then
    b=$(build_dir)
    pout=/tmp/tlmpi-python-out
    rm -rf "$pout"
    mkdir -p "$pout"
    { echo "# tlmpi Python example on the GPU (tests/gpu/python.sh)"; echo; host_facts; echo; echo '```'; } >"$pout/summary.md"
    OUT=$pout sh "$here/mps.sh" sh "$here/python.sh" "${PY_NPS:-2 4}" "$b" >>"$pout/summary.md" 2>&1 || rc=1
    echo '```' >>"$pout/summary.md"
    cp "$pout/summary.md" "$final/python-summary.md"
    tar czf "$final/python-logs.tar.gz" -C /tmp --exclude=install tlmpi-python-out 2>/dev/null
    cat "$final/python-summary.md"
fi
if want demo; then
    rm -rf /tmp/tlmpi-demo && mkdir -p /tmp/tlmpi-demo && tar xzf "$tarball" -C /tmp/tlmpi-demo
    d=$(ls -d /tmp/tlmpi-demo/tlmpi-*/ | head -1)
    (cd "$d" && DEMO_CALLGRIND=0 DEMO_GPU_SIZES=${DEMO_GPU_SIZES:-8,1m,16m} sh scripts/demo.sh -r 50) >"$final/demo.txt" 2>&1 || rc=1
    tar czf "$final/demo-plots.tar.gz" -C "$d/build" demo-gpu 2>/dev/null
    tail -60 "$final/demo.txt"
fi
if [ "$what" = bench ] || [ "$what" = all ]; then
    b=$(build_dir)
    OUT=/tmp/tlmpi-bench-out bash "$root/bench/run-gpu.sh" "${b:-$tarball}" || rc=1
    for f in results.csv summary.md log.txt env.txt; do
        cp "/tmp/tlmpi-bench-out/$f" "$final/bench-$f" 2>/dev/null
    done
fi
[ -f "$final/tests-summary.md" ] && { echo "===== tests"; cat "$final/tests-summary.md"; }
[ -f "$final/bench-summary.md" ] && { echo "===== bench"; cat "$final/bench-summary.md"; }
exit $rc
