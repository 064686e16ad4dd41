#!/bin/bash
# tests/gpu/gin-loopback.sh TARBALL [OUT_DIR]: the GIN rail on one GPU host through tlmpi's loopback
# NCCL net + GIN plugin (tests/gin-loopback/ginlb_plugin.c), with PyTorch's NCCL 2.28.9 (headers and
# library: NCCL_DIR, default the wheel's). Builds the tarball against those headers in
# /tmp/tlmpi-gin-build, then runs, each step logged in OUT_DIR (default /tmp/tlmpi-gin-out) with one
# summary line on stdout:
#   cpu     the plugin alone (tests/gin-loopback/gin-loopback.sh: two processes, host memory, both
#           mutants caught)
#   probe   tests/gin-loopback/gin_probe.cu under NCCL's real GIN proxy: 2 and 4 ranks on the GPU,
#           each its own fake host (NCCL_HOSTID), so NCCL has one-rank nodes and ncclDevCommCreate
#           takes GIN from the plugin (NCCL_GIN_TYPE=2: the proxy type, or NCCL refuses); device
#           memory mapped between the processes (cuMem POSIX fds), puts + SignalInc checked on the
#           device; with NCCL_GIN_NCONTEXTS=1 and the default (4)
#   net     tlmpi's NCCL tier over the plugin's ordinary network transport (gpu_coll, 2 ranks,
#           TLMPI_TIER=nccl): NCCL's collectives between fake hosts through ncclNet_v11
#   hier    tlmpi's hier tier with TLMPI_HIER_FUSED=gin, TLMPI_STATS=1: 4 ranks as 2 fake nodes x 2
#           (TLMPI_TOPO_RANKS_PER_NODE=2) and 8 as 2 x 4 and 4 x 2, gpu_hier, (a) NCCL_HOSTID per rank
#           (what NCCL accepts on one GPU: NCCL's nodes are single ranks, its LSA team 1 rank; tlmpi
#           then makes a world GIN devcomm: the fake node's pools mapped through cuMem descriptors,
#           src/transport/cumemshare.c, the rail peers addressed in NCCL's world team) and
#           (b) NCCL_HOSTID per fake node (NCCL 2.28.9 refuses two ranks of one host on one GPU:
#           "Duplicate GPU detected", v2.28.9-1:src/init.cc:903). The plan/info lines say which
#           rail ran and why GIN was refused where it was.
# GIN_STEPS (default "cpu probe net hier") picks steps, GIN_HIER_LAYOUTS (default "4x2 8x4 8x2",
# NPxRPN) the hier layouts, TLMPI_TEST_ITERS (default 300) gpu_hier's mixed calls. NCCL_NVLS_ENABLE=0
# always; the whole run under one MPS daemon (tests/gpu/mps.sh). Exit 0 when every step passed (hier: when gpu_hier passed; which rail served is
# reported, not judged), 1 otherwise.
set -u
export NCCL_NVLS_ENABLE=0
here=$(cd "$(dirname "$0")" && pwd)
# one MPS daemon for the whole run (the ranks of every step share the GPU)
if [ -z "${GIN_MPS_INNER:-}" ]; then
    GIN_MPS_INNER=1 exec sh "$here/mps.sh" bash "$0" "$@"
fi
tarball=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
out=${2:-/tmp/tlmpi-gin-out}
NCCL_DIR=${NCCL_DIR:-/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl}
steps=${GIN_STEPS:-cpu probe net hier}
top=/tmp/tlmpi-gin-build
rm -rf "$top" "$out"
mkdir -p "$top" "$out"
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
plugin=$src/tests/gin-loopback/.libs/libnccl-net-tlmpi-loopback.so
[ -f "$plugin" ] || { echo "gin-loopback: FAIL: $plugin not built"; exit 1; }
export LD_LIBRARY_PATH=$NCCL_DIR/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export TLMPI_NCCL_LIBRARY=$NCCL_DIR/lib/libnccl.so.2
rc=0
want() { case " $steps " in *" $1 "*) return 0 ;; esac; return 1; }

if want cpu; then
    if top_builddir=$src sh "$src/tests/gin-loopback/gin-loopback.sh" >"$out/cpu.log" 2>&1; then
        echo "cpu: $(tail -1 "$out/cpu.log")"
    else
        rc=1; echo "cpu: FAIL (see $out/cpu.log)"; tail -5 "$out/cpu.log"
    fi
fi

# probe NP CONTEXTS: NP processes, each its own NCCL host, through the plugin
probe_run() {
    np=$1 nctx=$2 log=$out/probe-np$1-ctx$2.log id=$out/probe-np$1-ctx$2.id
    rm -f "$id"
    pids=
    for r in $(seq 0 $((np - 1))); do
        env NCCL_HOSTID=ginlb-probe-$r NCCL_NET_PLUGIN="$plugin" NCCL_GIN_TYPE=2 ${nctx:+NCCL_GIN_NCONTEXTS=$nctx} \
            NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET TLMPI_GINLB_DEBUG=1 \
            timeout -k 5 300 "$out/gin_probe" "$r" "$np" "$id" 20 $((16 << 20)) >"$log.$r" 2>&1 &
        pids="$pids $!"
    done
    prc=0
    for p in $pids; do wait "$p" || prc=1; done
    cat "$log".* >"$log"
    if [ $prc = 0 ] && [ "$(grep -c ': PASS' "$log")" = "$np" ]; then
        echo "probe np=$np contexts=${nctx:-default}: PASS ($(grep -m1 'contexts granted' "$log" | sed 's/^rank 0: //'); $(grep -m1 -o 'Assigned GIN plugin.*' "$log"))"
    else
        rc=1
        echo "probe np=$np contexts=${nctx:-default}: FAIL (see $log)"
        grep -E 'FAIL|WARN|GINLB' "$log" | head -12 | sed 's/^/    /'
    fi
}
if want probe; then
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

if want net; then
    # TLMPI_NODE_SLOW_US=1: auto leaves the node tier out (gpu_coll expects staging where ranks share a GPU)
    if NCCL_NET_PLUGIN=$plugin NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET TLMPI_TIER=nccl TLMPI_STATS=1 TLMPI_NODE_SLOW_US=1 \
        timeout -k 5 300 sh "$here/mpirun.sh" 2 "$src/tests/gpu/gpu_coll" >"$out/net.log" 2>&1; then
        echo "net: PASS ($(grep -m1 -o 'Using network tlmpi_loopback\|NET/Plugin: Loaded net plugin[^,]*' "$out/net.log"); $(grep -m1 -E '^allreduce|nccl' "$out/net.log" | head -c 120))"
    else
        rc=1; echo "net: FAIL (see $out/net.log)"; grep -E 'FAIL|WARN|ERROR' "$out/net.log" | head -8
    fi
fi

# hier NP RPN HOSTID-MODE: gpu_hier on the GIN rail as asked (TLMPI_HIER_FUSED=gin)
hier_run() {
    np=$1 rpn=$2 mode=$3 log=$out/hier-np$1-rpn$2-$3.log
    # rank-env.sh gives each rank its own NCCL_HOSTID; "node" mode overrides it per fake node
    cat >"$out/hostid-$mode.sh" <<EOF
#!/bin/sh
r=\${OMPI_COMM_WORLD_RANK:-\${PMI_RANK:-0}}
if [ "$mode" = node ]; then NCCL_HOSTID=ginlb-node-\$((r / $rpn)); else NCCL_HOSTID=ginlb-rank-\$r; fi
export NCCL_HOSTID
exec "\$@"
EOF
    TLMPI_TIER=hier TLMPI_TOPO_RANKS_PER_NODE=$rpn TLMPI_HIER_FUSED=gin TLMPI_HIER_GROUPS=0 TLMPI_STATS=1 \
        TLMPI_LOG_LEVEL=info TLMPI_TIMEOUT=60 TLMPI_TEST_ITERS=${TLMPI_TEST_ITERS:-300} TLMPI_TEST_TYPES=${TLMPI_TEST_TYPES:-all} \
        NCCL_NET_PLUGIN=$plugin NCCL_GIN_TYPE=2 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET \
        timeout -k 10 600 sh "$here/mpirun.sh" "$np" sh "$out/hostid-$mode.sh" "$src/tests/gpu/gpu_hier" \
        >"$log" 2>&1
    hrc=$?
    res=$(grep -m1 -E '(mpi|gpu)_hier: (PASS|FAIL|SKIP)' "$log")
    rail=$(grep -m1 -oE 'fused: [a-z]+ rail[^;]*' "$log")
    gin=$(grep -m1 -oE 'GIN (unavailable for the fused 2D kernels: .*|failed.*)|ncclDevCommCreate with GIN succeeded[^)]*\)' "$log" | head -c 300)
    dup=$(grep -m1 -o 'Duplicate GPU detected[^\n]*' "$log")
    echo "hier np=$np nodes=$((np / rpn))x$rpn hostid=$mode: exit $hrc, ${res:-no result line}; rail: ${rail:-none named}; GIN: ${gin:-no GIN line}${dup:+; NCCL: $dup}"
    [ $hrc = 0 ] || rc=1
}
if want hier; then
    for lay in ${GIN_HIER_LAYOUTS:-4x2 8x4 8x2}; do
        np=${lay%x*} rpn=${lay#*x}
        hier_run "$np" "$rpn" rank
        hier_run "$np" "$rpn" node
    done
fi
[ $rc = 0 ] && echo "gin-loopback: PASS" || echo "gin-loopback: FAIL (logs in $out)"
exit $rc
