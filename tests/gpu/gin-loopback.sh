#!/bin/bash
# tests/gpu/gin-loopback.sh TARBALL [OUT_DIR]: the GIN rail on one GPU host through tlmpi's loopback
# NCCL net + GIN plugin (tests/gin-loopback/ginlb_plugin.c), with PyTorch's NCCL 2.28.9 (headers and
# library: NCCL_DIR, default the wheel's). Builds the tarball against those headers in
# /tmp/tlmpi-gin-build, then runs the steps of GIN_STEPS in their order below, each logged in OUT_DIR
# (default /tmp/tlmpi-gin-out) with one summary line per run on stdout, ending "(N s)":
#   cpu     the plugin alone (tests/gin-loopback/gin-loopback.sh: two processes, host memory, both
#           mutants caught)
#   probe   tests/gin-loopback/gin_probe.cu under NCCL's real GIN proxy: 2 and 4 ranks on the GPU,
#           each its own fake host (NCCL_HOSTID), so NCCL has one-rank nodes and ncclDevCommCreate
#           takes GIN from the plugin (NCCL_GIN_TYPE=2: the proxy type, or NCCL refuses); device
#           memory mapped between the processes (cuMem POSIX fds), puts + SignalInc checked on the
#           device; with NCCL_GIN_NCONTEXTS=1 and the default (4)
#   net     tlmpi's NCCL tier over the plugin's ordinary network transport (gpu_coll, 2 ranks,
#           TLMPI_TIER=nccl): NCCL's collectives between fake hosts through ncclNet_v11
#   hier    tlmpi's hier tier with TLMPI_HIER_FUSED=gin, TLMPI_STATS=1, gpu_hier (the 2D matrix: every
#           type of TLMPI_TEST_TYPES, default all, and op, in place, odd sizes, then TLMPI_TEST_ITERS,
#           default 300, back-to-back mixed calls) in the layouts of GIN_HIER_LAYOUTS (NPxRPN, default
#           "4x2 8x4 8x2": 4 ranks as 2 fake nodes x 2, 8 as 2 x 4 and 4 x 2, TLMPI_TOPO_RANKS_PER_NODE)
#           and the host-id modes of GIN_HIER_MODES (default "rank"):
#           rank  NCCL_HOSTID per rank (what NCCL accepts on one GPU: NCCL's nodes are single ranks, its
#                 LSA team 1 rank; tlmpi then makes a world GIN devcomm: the fake node's pools mapped
#                 through cuMem descriptors, src/transport/cumemshare.c, the rail peers addressed in
#                 NCCL's world team). PASS: gpu_hier passed with every collective on hier/fused
#                 (HIER_EXPECT_ALGO=fused, HIER_EXPECT_STEPS=none) and the plan line names the GIN rail;
#                 the line reports the rail, the granted context count and the hier/fused calls per rank
#                 (TLMPI_STATS)
#           node  NCCL_HOSTID per fake node: NCCL 2.28.9 refuses two ranks of one host on one GPU
#                 ("Duplicate GPU detected", v2.28.9-1:src/init.cc:903), so GIN is refused and the
#                 emulated rail serves; PASS: gpu_hier passed (which rail served is reported, not judged)
#   stuck   a stuck GIN signal: 4x2, rank mode, TLMPI_FAULT=rail_stuck:1 (rank 1 never signals its
#           rail peers), TLMPI_TIMEOUT=GIN_STUCK_TIMEOUT (default 10). PASS: the job exits non-zero
#           within TLMPI_TIMEOUT + 50 s (not killed by the step's bound) with a TLMPI_TIMEOUT diagnostic
#           naming rank, communicator and collective on the GIN rail (tier hier, algorithm fused, GIN
#           rail) and some rank waiting for world rank 1, and the plan line names the GIN rail
#   ctx     the per-context wait targets under NCCL's real GIN (issue 23, item 3), 4x2, rank mode:
#           more   TLMPI_HIER_GROUPS=1 with NCCL's default contexts (4 granted): more contexts than
#                  rail groups; PASS: gpu_hier passed on hier/fused, granted > 1
#           fewer  TLMPI_HIER_GROUPS=4, NCCL_GIN_NCONTEXTS=GIN_CTX_FEWER (default 2; tlmpi asks for 4):
#                  PASS: gpu_hier passed on hier/fused, granted < 4
#           full   mutant TLMPI_FAULT=gin_wait_full (each context waits for the grid-wide target),
#                  default contexts, TLMPI_TIMEOUT=GIN_CTX_TIMEOUT (default 10): caught when the job
#                  exits non-zero within the bound with a TLMPI_TIMEOUT diagnostic on the GIN rail
#           short  mutant TLMPI_FAULT=gin_wait_short (target / (2 x contexts): returns early): caught
#                  when gpu_hier reports FAIL or a TLMPI_TIMEOUT diagnostic ends it (exit non-zero)
#           both mutants must show the mutant armed in the plan line ("testing: TLMPI_FAULT=...") with
#           more than one context granted. The step passes when both honest runs pass and both mutants
#           are caught. The mutants are run-time fault sites (src/core/fault.c): no rebuild.
#   bench   GIN rail vs emulated rail vs the flat node kernels in one bench run (bench/tlmpi_bench,
#           4 ranks as 2 fake nodes x 2, rank mode, NCCL's default contexts (4), modes hier-gin (rail
#           groups auto: 2), hier-emulated, node-flat and the groups knob hier-gin-g1, hier-gin-g4, sizes
#           GIN_BENCH_SIZES, default 8,64k,64m,256m), then the contexts knob: modes hier-gin-g1,
#           hier-gin-g2, hier-gin-g4 at the sizes GIN_BENCH_KNOB_SIZES (default 64k,64m) under
#           NCCL_GIN_NCONTEXTS = each of GIN_BENCH_CTX (default "1 2"; NCCL grants that many), one run
#           each (NCCL reads it once per process). Each
#           row's algorithm field says which rail served, from the communicator's plan after the calls
#           (fused-gin:ctx=C:groups=G with the granted C, fused-emulated:groups=G, steps). REPS
#           (default 1) and TARGET_S (default 0.05) per measurement, validated (-c). Writes
#           OUT_DIR/bench.csv and OUT_DIR/bench.md (one table). PASS: every run exited 0, no row
#           failed validation, every hier-* row on path hier (tlmpi's counters), every hier-gin* row
#           served by fused-gin and every hier-emulated row by fused-emulated.
# GIN_STEPS (default "hier stuck ctx bench"; every step: "cpu probe net hier stuck ctx bench") picks
# the steps. GIN_DEADLINE (default 560): seconds after the script's start by which every run has
# ended: each run's own bound is cut to what is left, and a step that would start with less than its
# minimum left is reported "SKIP (GIN_DEADLINE ...)" instead (so one device call of 600 s, build
# included, never overruns). NCCL_NVLS_ENABLE=0 always; the whole run under one MPS daemon
# (tests/gpu/mps.sh). A second run on the same machine with the same tarball reuses the build in
# /tmp/tlmpi-gin-build (so the steps can be split over several device calls while the machine is
# warm). Exit 0 when every step that ran passed and none was skipped, 1 otherwise.
set -u
export NCCL_NVLS_ENABLE=0
here=$(cd "$(dirname "$0")" && pwd)
# one MPS daemon for the whole run (the ranks of every step share the GPU)
if [ -z "${GIN_MPS_INNER:-}" ]; then
    GIN_MPS_INNER=1 exec sh "$here/mps.sh" bash "$0" "$@"
fi
SECONDS=0
deadline=${GIN_DEADLINE:-560}
tarball=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
out=${2:-/tmp/tlmpi-gin-out}
NCCL_DIR=${NCCL_DIR:-/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl}
steps=${GIN_STEPS:-hier stuck ctx bench}
top=/tmp/tlmpi-gin-build
sum=$(cksum <"$tarball")
rm -rf "$out"
mkdir -p "$out"
if [ "$(cat "$top/.built" 2>/dev/null)" = "$sum" ]; then
    # the same tarball built by an earlier run on this machine (a warm device machine): reused
    src=$(ls -d "$top"/tlmpi-*/ | head -1)
    src=${src%/}
    cd "$src" || exit 1
    echo "build: reused ($top, the same tarball)"
else
    rm -rf "$top"
    mkdir -p "$top"
    tar -xzf "$tarball" -C "$top"
    src=$(ls -d "$top"/tlmpi-*/ | head -1)
    src=${src%/}
    cd "$src" || exit 1
    if ! { ./configure --enable-silent-rules --with-nccl="$NCCL_DIR" && make -j"$(nproc)" && make -j"$(nproc)" check TESTS=; } \
        >"$out/build.log" 2>&1; then
        tail -30 "$out/build.log"
        echo "gin-loopback: FAIL: build (see $out/build.log)"
        exit 1
    fi
    grep -A12 "configuration summary" "$out/build.log" | grep -E 'NCCL|CUDA|MPI '
    echo "$sum" >"$top/.built"
    echo "build: $SECONDS s"
fi
plugin=$src/tests/gin-loopback/.libs/libnccl-net-tlmpi-loopback.so
[ -f "$plugin" ] || { echo "gin-loopback: FAIL: $plugin not built"; exit 1; }
export LD_LIBRARY_PATH=$NCCL_DIR/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export TLMPI_NCCL_LIBRARY=$NCCL_DIR/lib/libnccl.so.2
rc=0
want() { case " $steps " in *" $1 "*) return 0 ;; esac; return 1; }
# bound WANT: seconds the next run may take, WANT cut to what GIN_DEADLINE leaves (0: none left)
bound() {
    local left=$((deadline - SECONDS))
    [ "$left" -lt 5 ] && { echo 0; return; }
    [ "$left" -lt "$1" ] && { echo "$left"; return; }
    echo "$1"
}
# enough STEP MIN: whether MIN seconds are left for STEP; else the step's SKIP line (rc=1)
enough() {
    local left=$((deadline - SECONDS))
    [ "$left" -ge "$2" ] && return 0
    rc=1
    echo "$1: SKIP (GIN_DEADLINE=$deadline: $left s left at $SECONDS s, the step needs $2)"
    return 1
}

if want cpu && enough cpu 20; then
    t0=$SECONDS
    if top_builddir=$src timeout -k 5 "$(bound 120)" sh "$src/tests/gin-loopback/gin-loopback.sh" >"$out/cpu.log" 2>&1; then
        echo "cpu: $(tail -1 "$out/cpu.log") ($((SECONDS - t0)) s)"
    else
        rc=1; echo "cpu: FAIL (see $out/cpu.log) ($((SECONDS - t0)) s)"; tail -5 "$out/cpu.log"
    fi
fi

# probe NP CONTEXTS: NP processes, each its own NCCL host, through the plugin
probe_run() {
    np=$1 nctx=$2 log=$out/probe-np$1-ctx$2.log id=$out/probe-np$1-ctx$2.id t0=$SECONDS
    lim=$(bound 300)
    rm -f "$id"
    pids=
    for r in $(seq 0 $((np - 1))); do
        env NCCL_HOSTID=ginlb-probe-$r NCCL_NET_PLUGIN="$plugin" NCCL_GIN_TYPE=2 ${nctx:+NCCL_GIN_NCONTEXTS=$nctx} \
            NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET TLMPI_GINLB_DEBUG=1 \
            timeout -k 5 "$lim" "$out/gin_probe" "$r" "$np" "$id" 20 $((16 << 20)) >"$log.$r" 2>&1 &
        pids="$pids $!"
    done
    prc=0
    for p in $pids; do wait "$p" || prc=1; done
    cat "$log".* >"$log"
    if [ $prc = 0 ] && [ "$(grep -c ': PASS' "$log")" = "$np" ]; then
        echo "probe np=$np contexts=${nctx:-default}: PASS ($(grep -m1 'contexts granted' "$log" | sed 's/^rank 0: //'); $(grep -m1 -o 'Assigned GIN plugin.*' "$log")) ($((SECONDS - t0)) s)"
    else
        rc=1
        echo "probe np=$np contexts=${nctx:-default}: FAIL (see $log) ($((SECONDS - t0)) s)"
        grep -E 'FAIL|WARN|GINLB' "$log" | head -12 | sed 's/^/    /'
    fi
}
if want probe && enough probe 60; then
    if /usr/local/cuda/bin/nvcc -std=c++17 -O2 -arch=sm_90 -I"$NCCL_DIR/include" -o "$out/gin_probe" \
        "$src/tests/gin-loopback/gin_probe.cu" -L"$NCCL_DIR/lib" -l:libnccl.so.2 -Xlinker -rpath="$NCCL_DIR/lib" \
        >"$out/probe-build.log" 2>&1; then
        probe_run 2 1
        probe_run 2 ''
        probe_run 4 ''
    else
        rc=1; echo "probe: FAIL: nvcc (see $out/probe-build.log)"; tail -5 "$out/probe-build.log"
    fi
fi

if want net && enough net 60; then
    t0=$SECONDS
    # TLMPI_NODE_SLOW_US=1: auto leaves the node tier out (gpu_coll expects staging where ranks share a GPU)
    if NCCL_NET_PLUGIN=$plugin NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET TLMPI_TIER=nccl TLMPI_STATS=1 TLMPI_NODE_SLOW_US=1 \
        timeout -k 5 "$(bound 300)" sh "$here/mpirun.sh" 2 "$src/tests/gpu/gpu_coll" >"$out/net.log" 2>&1; then
        echo "net: PASS ($(grep -m1 -o 'Using network tlmpi_loopback\|NET/Plugin: Loaded net plugin[^,]*' "$out/net.log"); $(grep -m1 -E '^allreduce|nccl' "$out/net.log" | head -c 120)) ($((SECONDS - t0)) s)"
    else
        rc=1; echo "net: FAIL (see $out/net.log) ($((SECONDS - t0)) s)"; grep -E 'FAIL|WARN|ERROR' "$out/net.log" | head -8
    fi
fi

# show_errors LOG: the log's first failure lines, indented
show_errors() { grep -E 'FAIL|TLMPI_TIMEOUT|ERROR|rror:' "$1" | head -6 | sed 's/^/    /'; }

# the per-rank NCCL_HOSTID wrappers: rank (each rank its own NCCL host) and node (one per fake node)
hostid_wrapper() {
    local mode=$1 rpn=$2 w=$out/hostid-$1-rpn$2.sh
    cat >"$w" <<EOF
#!/bin/sh
r=\${OMPI_COMM_WORLD_RANK:-\${PMI_RANK:-0}}
if [ "$mode" = node ]; then NCCL_HOSTID=ginlb-node-\$((r / $rpn)); else NCCL_HOSTID=ginlb-rank-\$r; fi
export NCCL_HOSTID
exec "\$@"
EOF
    echo "$w"
}
# hier_job LOG NP RPN MODE LIMIT [VAR=VALUE ...]: gpu_hier on the hier tier, TLMPI_HIER_FUSED=gin,
# under `timeout LIMIT` (cut to GIN_DEADLINE), the extra variables last; sets jrc (exit status) and
# jsecs. Rank mode also asks gpu_hier to check that every collective ran hier/fused, no sub-comm step.
hier_job() {
    local log=$1 np=$2 rpn=$3 mode=$4 lim t0=$SECONDS expect=
    lim=$(bound "$5")
    shift 5
    [ "$mode" = rank ] && expect="HIER_EXPECT_ALGO=fused HIER_EXPECT_STEPS=none"
    # shellcheck disable=SC2086 # $expect: two assignments or none
    env TLMPI_TIER=hier TLMPI_TOPO_RANKS_PER_NODE="$rpn" TLMPI_HIER_FUSED=gin TLMPI_HIER_GROUPS=0 TLMPI_STATS=1 \
        TLMPI_LOG_LEVEL=info TLMPI_TIMEOUT=60 TLMPI_TEST_ITERS="${TLMPI_TEST_ITERS:-300}" \
        TLMPI_TEST_TYPES="${TLMPI_TEST_TYPES:-all}" $expect \
        NCCL_NET_PLUGIN="$plugin" NCCL_GIN_TYPE=2 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET "$@" \
        timeout -k 10 "$lim" sh "$here/mpirun.sh" "$np" sh "$(hostid_wrapper "$mode" "$rpn")" "$src/tests/gpu/gpu_hier" \
        >"$log" 2>&1
    jrc=$?
    jsecs=$((SECONDS - t0))
    [ "$jrc" = 124 ] || [ "$jrc" = 137 ] && echo "gin-loopback: killed after $lim s (the run's bound)" >>"$log"
}
# what a hier log says: the result line, the rail the plan names, the GIN line, the granted contexts,
# the rail groups, the hier/fused calls per rank (TLMPI_STATS, summed over the ranks / NP), the first
# TLMPI_TIMEOUT diagnostic, whether a mutant was armed
hier_facts() {
    local log=$1 np=$2
    res=$(grep -m1 -E '(mpi|gpu)_hier: (PASS|FAIL|SKIP)' "$log")
    rail=$(grep -m1 -oE 'fused: [A-Za-z]+ rail' "$log" | sed 's/^fused: //; s/ rail$//')
    gin=$(grep -m1 -oE 'GIN (unavailable for the fused 2D kernels: .*|failed.*)|ncclDevCommCreate with GIN succeeded[^)]*\)' "$log" | head -c 300)
    ctx=$(grep -m1 -oE 'GIN succeeded \([0-9]+ contexts granted' "$log" | grep -oE '[0-9]+')
    groups=$(grep -m1 -oE 'fused: [A-Za-z]+ rail.*, [0-9]+ rail groups' "$log" | grep -oE '[0-9]+ rail groups$' | grep -oE '^[0-9]+')
    calls=$(awk -v np="$np" '$2 == "hier/fused" && $3 == "calls" { s[$1] += $4 }
        END { n = 0; for (c in s) { printf "%s%s %d", (n++ ? ", " : ""), c, s[c] / np }; if (!n) printf "none" }' "$log")
    diag=$(grep -m1 -oE 'TLMPI_TIMEOUT: rank .*' "$log" | head -c 420)
    armed=$(grep -m1 -oE 'testing: TLMPI_FAULT=[a-z_]+' "$log" | sed 's/^testing: //')
    dup=$(grep -m1 -o 'Duplicate GPU detected' "$log")
}

if want hier && enough hier 90; then
    for lay in ${GIN_HIER_LAYOUTS:-4x2 8x4 8x2}; do
        np=${lay%x*} rpn=${lay#*x}
        for mode in ${GIN_HIER_MODES:-rank}; do
            log=$out/hier-np$np-rpn$rpn-$mode.log
            enough "hier np=$np nodes=$((np / rpn))x$rpn hostid=$mode" 40 || continue
            hier_job "$log" "$np" "$rpn" "$mode" 150
            hier_facts "$log" "$np"
            v=PASS
            if [ "$jrc" != 0 ] || ! echo "$res" | grep -q PASS; then
                v=FAIL
            elif [ "$mode" = rank ] && { [ "$rail" != GIN ] || [ "$calls" = none ]; }; then
                v="FAIL (the GIN rail did not serve)"
            fi
            [ "$v" = PASS ] || rc=1
            echo "hier np=$np nodes=$((np / rpn))x$rpn hostid=$mode: $v: exit $jrc, ${res:-no result line}; rail: ${rail:-none named}${ctx:+, $ctx contexts granted}${groups:+, $groups rail groups}; hier/fused calls per rank: $calls; GIN: ${gin:-no GIN line}${dup:+; NCCL: $dup} ($jsecs s)"
            [ "$v" = PASS ] || show_errors "$log"
        done
    done
fi

if want stuck && enough stuck 45; then
    st=${GIN_STUCK_TIMEOUT:-10}
    lim=$((st + 50))
    log=$out/stuck-np4-rpn2.log
    hier_job "$log" 4 2 rank "$lim" TLMPI_FAULT=rail_stuck:1 TLMPI_TIMEOUT="$st" TLMPI_TEST_ITERS=20 TLMPI_TEST_TYPES=
    hier_facts "$log" 4
    bad=
    [ "$jrc" = 0 ] && bad="exit 0"
    [ "$jrc" = 124 ] || [ "$jrc" = 137 ] && bad="hung: killed after the ${lim} s bound"
    [ -z "$bad" ] && [ "$rail" != GIN ] && bad="the plan line names no GIN rail (${rail:-none}; GIN: ${gin:-no GIN line})"
    [ -z "$bad" ] && ! echo "$diag" | grep -qE 'of communicator #[0-9]+ .* in [a-z_]+ on tier hier \(algorithm fused, GIN rail' &&
        bad="no TLMPI_TIMEOUT diagnostic of the GIN rail (${diag:-none})"
    [ -z "$bad" ] && ! grep -q 'waiting for the rail peer on node 0 (world rank 1)' "$log" &&
        bad="no rank waited for the stuck world rank 1"
    if [ -z "$bad" ]; then
        echo "stuck np=4 nodes=2x2 TLMPI_FAULT=rail_stuck:1 TLMPI_TIMEOUT=$st: PASS: exit $jrc after $jsecs s (bound $lim s); $diag ($jsecs s)"
    else
        rc=1
        echo "stuck np=4 nodes=2x2 TLMPI_FAULT=rail_stuck:1 TLMPI_TIMEOUT=$st: FAIL: $bad; exit $jrc ($jsecs s)"
        show_errors "$log"
    fi
fi

if want ctx && enough ctx 120; then
    ct=${GIN_CTX_TIMEOUT:-10}
    fewer=${GIN_CTX_FEWER:-2}
    ctx_ok=0
    ctx_runs=0
    # ctx_result GOOD LINE: LINE on stdout; counted where GOOD is 1, else the log's failure lines
    ctx_result() {
        echo "$2"
        if [ "$1" = 1 ]; then ctx_ok=$((ctx_ok + 1)); else show_errors "$log"; fi
    }
    # honest runs: gpu_hier passes on hier/fused with the granted count where it must be
    for run in more fewer; do
        log=$out/ctx-$run.log
        enough "ctx $run" 40 || continue
        ctx_runs=$((ctx_runs + 1))
        if [ $run = more ]; then
            hier_job "$log" 4 2 rank 120 TLMPI_HIER_GROUPS=1 TLMPI_TEST_ITERS="${GIN_CTX_ITERS:-100}" TLMPI_TEST_TYPES=
        else
            hier_job "$log" 4 2 rank 120 TLMPI_HIER_GROUPS=4 NCCL_GIN_NCONTEXTS="$fewer" TLMPI_TEST_ITERS="${GIN_CTX_ITERS:-100}" TLMPI_TEST_TYPES=
        fi
        hier_facts "$log" 4
        bad=
        if [ "$jrc" != 0 ] || ! echo "$res" | grep -q PASS; then
            bad="exit $jrc, ${res:-no result line}"
        elif [ "$rail" != GIN ] || [ -z "$ctx" ]; then
            bad="not on the GIN rail (${rail:-none}; GIN: ${gin:-no GIN line})"
        elif [ $run = more ] && [ "$ctx" -le "${groups:-0}" ]; then
            bad="$ctx contexts granted for $groups rail groups: not more contexts than groups"
        elif [ $run = fewer ] && [ "$ctx" -ge 4 ]; then
            bad="$ctx contexts granted with NCCL_GIN_NCONTEXTS=$fewer: not fewer than the 4 requested"
        fi
        what="$ctx contexts granted, ${groups:-?} rail groups; hier/fused calls per rank: $calls"
        [ $run = fewer ] && what="NCCL_GIN_NCONTEXTS=$fewer, 4 requested: $what"
        if [ -z "$bad" ]; then
            ctx_result 1 "ctx $run: PASS: $res; $what ($jsecs s)"
        else
            ctx_result 0 "ctx $run: FAIL: $bad; $what ($jsecs s)"
        fi
    done
    # mutants: caught = the run fails in the way the mutant must (see the header)
    for mut in full short; do
        log=$out/ctx-mutant-$mut.log
        enough "ctx mutant gin_wait_$mut" 40 || continue
        ctx_runs=$((ctx_runs + 1))
        lim=$((ct + 60))
        hier_job "$log" 4 2 rank "$lim" TLMPI_FAULT=gin_wait_$mut TLMPI_TIMEOUT="$ct" TLMPI_TEST_ITERS=50 TLMPI_TEST_TYPES=
        hier_facts "$log" 4
        how='' miss=''
        if [ "$armed" != "TLMPI_FAULT=gin_wait_$mut" ]; then
            miss="the plan line shows no armed mutant (${armed:-none}; rail ${rail:-none})"
        elif [ "${ctx:-0}" -le 1 ]; then
            miss="${ctx:-no} context granted: the mutant cannot differ from the rule"
        elif [ "$jrc" = 124 ] || [ "$jrc" = 137 ]; then
            miss="hung past the ${lim} s bound"
        elif [ "$jrc" = 0 ]; then
            miss="exit 0: ${res:-no result line}"
        elif echo "$diag" | grep -q 'GIN rail'; then
            how="TLMPI_TIMEOUT after $jsecs s: $diag"
        elif [ $mut = short ] && echo "$res" | grep -q FAIL; then
            how="wrong results: $res"
        else
            miss="exit $jrc without the expected failure (${res:-no result line}; ${diag:-no TLMPI_TIMEOUT line})"
        fi
        # the full-target mutant must hang into the timeout; the short one fails the check (or times out)
        [ $mut = full ] && [ -n "$how" ] && ! echo "$how" | grep -q '^TLMPI_TIMEOUT' && { miss="$how (not a timeout)"; how=; }
        if [ -n "$how" ]; then
            ctx_result 1 "ctx mutant gin_wait_$mut ($ctx contexts): CAUGHT: exit $jrc, $how ($jsecs s)"
        else
            ctx_result 0 "ctx mutant gin_wait_$mut: NOT CAUGHT: $miss ($jsecs s)"
        fi
    done
    if [ $ctx_ok = 4 ]; then
        echo "ctx: PASS (2 honest runs passed, 2 mutants caught)"
    else
        rc=1
        echo "ctx: FAIL ($ctx_ok of 4 runs as required, $ctx_runs ran)"
    fi
fi

if want bench && enough bench 60; then
    t0=$SECONDS
    bench=$src/bench/tlmpi_bench
    csv=$out/bench.csv
    brc=0
    rm -f "$csv"
    # bench_run TAG NCONTEXTS MODES SIZES: one tlmpi_bench run, rows appended to bench.csv with a
    # first column naming the run
    bench_run() {
        local tag=$1 nctx=$2 modes=$3 sizes=$4 lim r
        lim=$(bound 150)
        if [ "$lim" -lt 20 ]; then
            echo "bench $tag: SKIP (GIN_DEADLINE)"
            brc=1
            return
        fi
        r=$SECONDS
        env TLMPI_TOPO_RANKS_PER_NODE=2 TLMPI_HIER_GROUPS=0 TLMPI_LOG_LEVEL=info TLMPI_TIMEOUT=60 \
            NCCL_NET_PLUGIN="$plugin" NCCL_GIN_TYPE=2 ${nctx:+NCCL_GIN_NCONTEXTS=$nctx} \
            timeout -k 10 "$lim" sh "$here/mpirun.sh" 4 sh "$(hostid_wrapper rank 2)" "$bench" -o "$out/bench-$tag.csv" \
            -T float -r "${REPS:-1}" -w "${TARGET_S:-0.05}" -c -s "$sizes" -M "$modes" \
            -C allreduce,allgather,reduce_scatter >"$out/bench-$tag.log" 2>&1
        local e=$?
        [ -s "$out/bench-$tag.csv" ] && python3 - "$out/bench-$tag.csv" "$csv" "$tag" <<'EOF'
import csv, os, sys
src, dst, tag = sys.argv[1:4]
rows = list(csv.reader(open(src)))
new = not os.path.exists(dst)
with open(dst, "a", newline="") as f:
    w = csv.writer(f)
    if new:
        w.writerow(["run"] + rows[0])
    for r in rows[1:]:
        w.writerow([tag] + r)
EOF
        echo "bench $tag (NCCL_GIN_NCONTEXTS=${nctx:-default}, $modes, $sizes): exit $e, $(($(wc -l <"$out/bench-$tag.csv" 2>/dev/null || echo 1) - 1)) rows ($((SECONDS - r)) s)"
        [ $e = 0 ] || { brc=1; show_errors "$out/bench-$tag.log"; }
    }
    bench_run main '' hier-gin,hier-emulated,node-flat,hier-gin-g1,hier-gin-g4 "${GIN_BENCH_SIZES:-8,64k,64m,256m}"
    for c in ${GIN_BENCH_CTX:-1 2}; do
        bench_run "ctx$c" "$c" hier-gin-g1,hier-gin-g2,hier-gin-g4 "${GIN_BENCH_KNOB_SIZES:-64k,64m}"
    done
    # the table, and the checks: validation, and which rail served each row (the generation's
    # algorithm field, fourth of its '/'-separated fields)
    verdict=$(python3 - "$csv" "$out/bench.md" <<'EOF'
import csv, sys
src, md = sys.argv[1:3]
try:
    rows = list(csv.DictReader(open(src)))
except OSError:
    rows = []
bad = []
lines = ["| run | coll | bytes | mode | rail served | path | avg us | busbw GB/s | valid |",
         "|---|---|---:|---|---|---|---:|---:|---|"]
for r in rows:
    algo = r["generation"].split("/")[3] if r["generation"].count("/") > 3 else "?"
    mode = r["mode"]
    lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (r["run"], r["coll"], r["bytes"], mode, algo,
                 r["path_served"], r["avg_us"], r.get("busbw_GBps", ""), r.get("valid", "")))
    if r.get("valid", "pass") not in ("pass", "-"):
        bad.append("%s %s %s %s: validation %s" % (r["run"], mode, r["coll"], r["bytes"], r.get("valid")))
    if mode.startswith("hier-gin") and not algo.startswith("fused-gin"):
        bad.append("%s %s %s %s: served by %s" % (r["run"], mode, r["coll"], r["bytes"], algo))
    if mode == "hier-emulated" and not algo.startswith("fused-emulated"):
        bad.append("%s %s %s %s: served by %s" % (r["run"], mode, r["coll"], r["bytes"], algo))
    if mode.startswith("hier-") and r["path_served"] != "hier":
        bad.append("%s %s %s %s: path %s" % (r["run"], mode, r["coll"], r["bytes"], r["path_served"]))
with open(md, "w") as f:
    f.write("GIN rail vs emulated rail vs flat node kernels, 4 ranks as 2 fake nodes x 2 on one GPU (one host "
            "measures protocol, not fabric); run ctxC: NCCL_GIN_NCONTEXTS=C\n\n")
    f.write("\n".join(lines) + "\n")
print("%d rows%s" % (len(rows), ("; " + "; ".join(bad[:4]) + (" ..." if len(bad) > 4 else "")) if bad else ""))
sys.exit(1 if bad or not rows else 0)
EOF
    ) || brc=1
    if [ $brc = 0 ]; then
        echo "bench: PASS ($verdict; $out/bench.csv, $out/bench.md) ($((SECONDS - t0)) s)"
    else
        rc=1
        echo "bench: FAIL ($verdict; see $out/bench-*.log) ($((SECONDS - t0)) s)"
    fi
fi
[ $rc = 0 ] && echo "gin-loopback: PASS ($SECONDS s)" || echo "gin-loopback: FAIL (logs in $out) ($SECONDS s)"
exit $rc
