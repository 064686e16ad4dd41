#!/bin/sh
# fault.sh [BUILD_DIR]: tests/mpi/mpi_fault with 4 ranks under injected faults (TLMPI_FAULT, see
# src/core/fault.c), the fake CUDA runtime and the fake NCCL of tests/fakes. Per case, each rank logs
# to its own file (TLMPI_LOG_FILE=$work/<case>/log.%r) and the case runs under `timeout`, so a hang
# is a failure:
#   baseline   no fault, TLMPI_TIER=nccl: every rank on nccl, no warning
#   nccl_init  TLMPI_FAULT=nccl_init:1, TLMPI_TIER=nccl: every rank on staging, exact results, exactly
#              one warning per rank, mentioning NCCL
#   stream     TLMPI_FAULT=stream_create:2, TLMPI_TIER=nccl: every rank on staging, exactly one
#              warning per rank, mentioning the streams
#   pool       TLMPI_FAULT=pool_alloc:3, TLMPI_TIER=staging: every rank on staging, exact results,
#              exactly one warning per rank, mentioning the pinned staging pool
#   invalid    TLMPI_ALLREDUCE_TIERS=bogus on every rank, TLMPI_TIER=nccl: every rank on nccl (the
#              table is ignored, TLMPI_TIER decides), exactly one warning per rank saying it is invalid
#   nonuniform TLMPI_ALLREDUCE_TIERS=staging on rank 1 only, TLMPI_TIER=nccl: the ranks' settings
#              differ, so every rank takes the automatic plan (staging: the ranks share the fake GPU)
#              with exactly one warning per rank saying so (TLMPI_NODE=0: the node tier's setup, which
#              auto would try, cannot launch its smoke test on the CPU; node_shared checks that)
#   turns      TLMPI_GPU_TURNS=yes (the GPU turn, as under MPI_THREAD_MULTIPLE), TLMPI_TIER=nccl: every
#              rank on nccl, exact results, no warning
#   turn_stuck TLMPI_FAULT=turn_stuck:1 TLMPI_GPU_TURNS=yes TLMPI_TIMEOUT=2, TLMPI_TIER=nccl: rank 1
#              never gets the turn; the job ends within 60 s with a non-zero exit and a TLMPI_TIMEOUT:
#              diagnostic "for the GPU turn" counting the rounds
#   timeout    TLMPI_FAULT=wait_stuck:1 TLMPI_TIMEOUT=2, TLMPI_TIER=nccl: the job ends within 60 s
#              with a non-zero exit and rank 1's log has the TLMPI_TIMEOUT: diagnostic naming the
#              collective (allreduce, the first call) and the tier (nccl)
# The node tier (tlmpi's own kernels; FAKE_CUDA_DEVICES=4 gives each rank its own fake GPU, so no
# timed barrier runs at setup and the setup succeeds on the CPU; kernel launches fail there, before
# any data moved, so the calls are staged). The fake NCCL has the devcomm transport's entry points,
# but its ncclDevCommCreate fails everywhere, so where ranks have their own GPUs TLMPI_NODE_TRANSPORT=auto
# attempts devcomm and falls back to ipc with one warning per rank; the ipc cases ask for ipc:
#   node       TLMPI_TIER=node, ipc: the ipc transport is set up on every rank (the plan says "node:
#              transport ipc, 4 ranks"), every call staged, one warning per rank (the failed launch)
#   ipc_open   TLMPI_FAULT=ipc_open:1, TLMPI_TIER=node, ipc: every rank on staging, one warning per
#              rank (setting up tier node failed)
#   ipc_open_auto the same with TLMPI_TIER=auto: every rank on nccl (the next tier of the auto order)
#   node_pool  TLMPI_FAULT=node_pool:2, TLMPI_TIER=node, ipc: the same
#   devcomm    TLMPI_FAULT=devcomm_init:3 TLMPI_NODE_TRANSPORT=devcomm, TLMPI_TIER=node: every rank
#              attempts devcomm, it fails (on rank 3: injected, its log says TLMPI_FAULT=devcomm_init;
#              elsewhere the fake's ncclDevCommCreate): staging, one warning per rank (setting up tier
#              node failed, devcomm transport failed)
#   devcomm_auto the same with TLMPI_NODE_TRANSPORT=auto: every rank falls back to ipc (the plan says
#              "node: transport ipc, 4 ranks"), two warnings per rank (the devcomm transport failed on
#              some rank; the failed launch)
#   devcomm_one TLMPI_NODE_TRANSPORT=devcomm, TLMPI_TIER=node, one rank: the node tier takes a
#              one-rank communicator only there; devcomm is attempted (a one-rank NCCL communicator,
#              pool, window) and fails in the fake: staging, one warning (setting up tier node
#              failed); no multicast is requested (one rank); auto_one (the control: transport auto):
#              no node tier for one rank, no warning. Both with the version the fake NCCL reports by
#              default, the build's headers': where those are 2.28.0..2.28.6 devcomm_one is refused
#              as devcomm_old is (NCCL's rule below), and devcomm_nosym is skipped
#   devcomm_old the same as devcomm_one with the fake NCCL reporting 2.28.3 (FAKE_NCCL_VERSION=22803):
#              NCCL before 2.28.7 gives no 1-rank communicator symmetric memory, so the transport is
#              unavailable before any NCCL call: exactly one info line naming the rule, the warning
#              (the named tier's setup failed) says unavailable and names the rule, never
#              NCCL_CUMEM_ENABLE; the fake counted no ncclCommInitRank and no ncclDevCommCreate
#              (devcomm_one, attempted: one of each)
#   devcomm_nosym devcomm_one with the fake's ncclDevCommCreate failing as NCCL's does without
#              symmetric memory (FAKE_NCCL_NO_SYMMETRIC=1): the warning names what that NCCL
#              version needs (CUDA P2P, cuMem on), not the old NCCL_CUMEM_ENABLE=1 advice alone
#   node_shared TLMPI_TIER=node, one fake GPU for all ranks: devcomm is unavailable (a shared GPU,
#              silently), the ipc setup's smoke test (a node barrier) cannot launch: staging, one
#              warning per rank (setting up tier node failed)
#   nvls0      TLMPI_NVLS=0, auto, devices that report multicast (FAKE_CUDA_MULTICAST=1): the plan
#              says multicast is emulated (TLMPI_NVLS=0) on every rank, neither fake counted a
#              multicast request (no NVLS at NCCL init, no lsaMultimem in ncclDevCommCreate) and the
#              devcomm warning does not name lsaMultimem; nccl_nvls0 the same with NCCL_NVLS_ENABLE=0;
#              nvls_on (the control: neither set): the fakes count requests (the NCCL inits of a real
#              NCCL would create NVLS, and ncclDevCommCreate was asked for lsaMultimem: its warning
#              says so); nvls_nomc (neither set, no multicast support): multicast emulated (no
#              multicast support), no lsaMultimem asked for. Both controls are skipped where
#              NCCL_NVLS_ENABLE is set in the caller's environment (GPU hosts export it as 0).
# One line per case: "fault <case>: PASS|FAIL (...)"; exit 1 on any failure, 77 where mpi_fault is
# not built (no CUDA or NCCL headers at configure time). A rank without its own log file (%r not
# expanded to the rank) is a failure; its lines are then taken from the case's log files by their
# "rR" tag so the other checks still say something (FAULT_LOG_BY_TAG=1: that alone is no failure).
# Run by hand from a build directory:
#   MPIEXEC=mpiexec.mpich sh ../tests/mpi/fault.sh
here=$(cd "$(dirname "$0")" && pwd)
srcdir=${top_srcdir:-$here/../..}
builddir=${1:-${top_builddir:-.}}
builddir=$(cd "$builddir" && pwd)
MPIEXEC=${MPIEXEC:-mpiexec}
export MPIEXEC
prog=$builddir/tests/mpi/mpi_fault
if [ ! -x "$prog" ]; then
    echo "SKIP: $prog not built (needs CUDA and NCCL headers at configure time)"
    exit 77
fi
np=4
limit=${FAULT_CASE_TIMEOUT:-60}
work=$builddir/tests/mpi/work-fault
rm -rf "$work"
mkdir -p "$work"
failed=0
echo "fault: expected: the cases below provoke faults on purpose (those with 0 WARN are controls); the WARN counts and TLMPI_TIMEOUT texts quoted in its PASS line are what it checks for (the ranks' logs: $work/<case>/log.<rank>)"

# run_case name expect_path|- then --env options: runs mpi_fault; sets rc, secs, out, dir
run_case() {
    name=$1 expect=$2
    shift 2
    dir=$work/$name
    out=$dir/out
    mkdir -p "$dir"
    [ "$expect" != - ] && set -- "$@" --env FAULT_EXPECT_PATH="$expect"
    s=$(date +%s)
    timeout -k 5 "$limit" sh "$srcdir/tests/launch.sh" --np $np --env TLMPI_LOG_FILE="$dir/log.%r" \
        ${TLMPI_TEST_SEED:+--env TLMPI_TEST_SEED=$TLMPI_TEST_SEED} "$@" -- ${runprog:-$prog} >"$out" 2>&1
    rc=$?
    secs=$(( $(date +%s) - s ))
}

# rank_log r: the log lines of rank r (its own file; else the lines tagged rR in the case's files);
# appends to $bad when the file is missing or holds lines of other ranks
rank_log() {
    if [ -f "$dir/log.$1" ]; then
        other=$(grep ' TLMPI ' "$dir/log.$1" | grep -vc " r$1 TLMPI ")
        [ "$other" = 0 ] || bad="${bad:+$bad; }log.$1 holds $other lines of other ranks"
        cat "$dir/log.$1"
    else
        if [ "${FAULT_LOG_BY_TAG:-0}" != 1 ]; then
            bad="${bad:+$bad; }no log.$1 (files: $(cd "$dir" && ls log.* 2>/dev/null | tr '\n' ' '| sed 's/ $//'))"
        fi
        cat "$dir"/log.* 2>/dev/null | grep " r$1 TLMPI "
    fi
}

report() { # name verdict(0 pass) detail
    if [ "$2" = 0 ]; then
        echo "fault $1: PASS ($3)"
    else
        echo "fault $1: FAIL ($3)"
        failed=1
        echo "    --- $out:"
        tail -25 "$out" | sed 's/^/    /'
        for f in "$dir"/log.*; do
            [ -f "$f" ] || continue
            echo "    --- $f:"
            tail -8 "$f" | sed 's/^/    /'
        done
    fi
}

# check_run name expect_path warnings(0|1|2) pattern [plan_pattern [multicast [nopat]]]: the
# verdict of a case that must complete; some WARN line of every rank matches pattern (grep -iE);
# plan_pattern (grep -E) must be in every rank's "mpi_fault: rank R plan" line, multicast is 0 (no
# rank counted a multicast request) or + (every rank counted some); no WARN line matches nopat
check_run() {
    name=$1 expect=$2 nwarn=$3 pat=$4 plan_pat=${5:-} mc=${6:-} nopat=${7:-}
    bad=
    if [ $rc = 124 ] || [ $rc = 137 ]; then
        bad="timed out after $limit s"
    elif [ $rc != 0 ]; then
        bad="exit $rc"
    fi
    grep -q '^mpi_fault: PASS' "$out" || bad="${bad:+$bad; }no PASS line ($(grep -m1 -E '^mpi_fault: (FAIL|SKIP)' "$out"))"
    paths=
    for r in $(seq 0 $((np - 1))); do
        p=$(sed -n "s/^mpi_fault: rank $r path \(.*\)$/\1/p" "$out" | head -1)
        paths="$paths${paths:+ }${p:-?}"
        [ "$p" = "$expect" ] || bad="${bad:+$bad; }rank $r path ${p:-none}, expected $expect"
        rank_log $r >"$dir/rank$r.lines"
        n=$(grep -c ' TLMPI WARN ' "$dir/rank$r.lines")
        [ "$n" = "$nwarn" ] || bad="${bad:+$bad; }rank $r: $n WARN lines, expected $nwarn"
        if [ "$nwarn" != 0 ] && [ -n "$pat" ] && [ "$n" != 0 ] && ! grep ' TLMPI WARN ' "$dir/rank$r.lines" | grep -qiE "$pat"; then
            bad="${bad:+$bad; }rank $r: the warning does not mention /$pat/"
        fi
        if [ -n "$nopat" ] && grep ' TLMPI WARN ' "$dir/rank$r.lines" | grep -qiE "$nopat"; then
            bad="${bad:+$bad; }rank $r: a warning mentions /$nopat/"
        fi
        if [ -n "$plan_pat" ] && ! grep "^mpi_fault: rank $r plan " "$out" | grep -qE "$plan_pat"; then
            bad="${bad:+$bad; }rank $r: the plan does not say /$plan_pat/"
        fi
        if [ -n "$mc" ]; then
            m=$(sed -n "s/^mpi_fault: rank $r multicast requests \([0-9]*\)$/\1/p" "$out" | head -1)
            if [ -z "$m" ] || { [ "$mc" = 0 ] && [ "$m" != 0 ]; } || { [ "$mc" = + ] && [ "$m" = 0 ]; }; then
                bad="${bad:+$bad; }rank $r: ${m:-no} multicast requests counted, expected $mc"
            fi
        fi
    done
    if [ -z "$bad" ]; then
        report "$name" 0 "paths $paths, $nwarn WARN per rank, ${secs} s"
    else
        report "$name" 1 "$bad; paths $paths, ${secs} s"
    fi
}

run_case baseline nccl --env TLMPI_TIER=nccl
check_run baseline nccl 0 ''

run_case nccl_init staging --env TLMPI_TIER=nccl --env TLMPI_FAULT=nccl_init:1
check_run nccl_init staging 1 'nccl'

run_case stream staging --env TLMPI_TIER=nccl --env TLMPI_FAULT=stream_create:2
check_run stream staging 1 'stream'

run_case pool staging --env TLMPI_TIER=staging --env TLMPI_FAULT=pool_alloc:3
check_run pool staging 1 'pinned staging pool'

run_case invalid nccl --env TLMPI_TIER=nccl --env TLMPI_ALLREDUCE_TIERS=bogus
check_run invalid nccl 1 'TLMPI_ALLREDUCE_TIERS.*invalid'

# a setting only rank 1 has (its rank from hydra's PMI_RANK or Open MPI's OMPI_COMM_WORLD_RANK)
cat >"$work/rank1-env.sh" <<'EOS'
r=${PMI_RANK:-${OMPI_COMM_WORLD_RANK:-}}
[ "$r" = 1 ] && export TLMPI_ALLREDUCE_TIERS=staging
exec "$@"
EOS
runprog="sh $work/rank1-env.sh $prog"
run_case nonuniform staging --env TLMPI_TIER=nccl --env TLMPI_NODE=0
runprog=
check_run nonuniform staging 1 'differ between its ranks'

# injected: rank R's log names the fault site (after check_run, which wrote rankR.lines)
check_injected() { # name rank
    if ! grep ' TLMPI WARN ' "$dir/rank$2.lines" | grep -q 'injected: TLMPI_FAULT=devcomm_init'; then
        report "$1 (rank $2)" 1 "rank $2's warning does not say injected: TLMPI_FAULT=devcomm_init"
    fi
}

# the node tier (see the top)
ndev="--env FAKE_CUDA_DEVICES=4"
ipc="--env TLMPI_NODE_TRANSPORT=ipc"
run_case node staging --env TLMPI_TIER=node $ndev $ipc
check_run node staging 1 'tier node.*launch failed' 'node: transport ipc, 4 ranks, pool 320 KiB header \+ data area of [0-9]+ KiB \(grows on demand up to 131072 KiB\)'

run_case ipc_open staging --env TLMPI_TIER=node $ndev $ipc --env TLMPI_FAULT=ipc_open:1
check_run ipc_open staging 1 'setting up tier node failed'

# auto: the failed node tier leaves the comm's streams to the next tier (nccl: separate fake GPUs)
run_case ipc_open_auto nccl $ndev $ipc --env TLMPI_FAULT=ipc_open:1
check_run ipc_open_auto nccl 1 'setting up tier node failed'

run_case node_pool staging --env TLMPI_TIER=node $ndev $ipc --env TLMPI_FAULT=node_pool:2
check_run node_pool staging 1 'setting up tier node failed'

# the data area cannot grow on one rank: agreed, every rank stages the calls that need it (one warning
# each, besides the fake's launch failure)
run_case node_pool_grow staging --env TLMPI_TIER=node $ndev $ipc --env TLMPI_FAULT=node_pool_grow:2
check_run node_pool_grow staging 2 'data area could not grow'

run_case devcomm staging --env TLMPI_TIER=node $ndev --env TLMPI_FAULT=devcomm_init:3 --env TLMPI_NODE_TRANSPORT=devcomm
check_run devcomm staging 1 'setting up tier node failed.*devcomm transport failed'
check_injected devcomm 3

run_case devcomm_auto staging --env TLMPI_TIER=node $ndev --env TLMPI_FAULT=devcomm_init:3
check_run devcomm_auto staging 2 "devcomm transport.*failed on some rank.*uses the ipc transport" \
    'node: transport ipc, 4 ranks, pool 320 KiB header \+ data area of [0-9]+ KiB \(grows on demand up to 131072 KiB\)'
check_injected devcomm_auto 3

# check_calls name inits creates: the fake NCCL's calls of ncclCommInitRank and ncclDevCommCreate on
# every rank (mpi_fault's "nccl inits N devcomm creates M" line)
check_calls() {
    bad=
    for r in $(seq 0 $((np - 1))); do
        c=$(sed -n "s/^mpi_fault: rank $r nccl inits \([0-9]*\) devcomm creates \([0-9]*\)$/\1 \2/p" "$out" | head -1)
        [ "$c" = "$2 $3" ] || bad="${bad:+$bad; }rank $r: ncclCommInitRank, ncclDevCommCreate calls ${c:-not printed}, expected $2 $3"
    done
    if [ -n "$bad" ]; then
        report "$1 (NCCL calls)" 1 "$bad"
    fi
}

# check_rule name version: refused by NCCL's symmetric-memory rule for one rank (check_run before):
# exactly one info line per rank names it, the warning says unavailable and names it, no NCCL
# communicator or devcomm was created
check_rule() {
    rule="devcomm transport unavailable: NCCL $2 gives the Device API \(symmetric memory\) only to one node of 2\+ ranks; NCCL 2\.28\.7\+ also to 1-rank communicators"
    bad=
    for r in $(seq 0 $((np - 1))); do
        n=$(grep ' TLMPI INFO ' "$dir/rank$r.lines" | grep -cE "$rule\$")
        [ "$n" = 1 ] || bad="${bad:+$bad; }rank $r: $n info lines name NCCL's rule, expected 1"
        grep ' TLMPI WARN ' "$dir/rank$r.lines" | grep -qE "setting up tier node failed.*\(here: $rule\)" ||
            bad="${bad:+$bad; }rank $r: the warning does not say /$rule/"
    done
    if [ -n "$bad" ]; then
        report "$1 (NCCL's rule)" 1 "$bad"
    fi
    check_calls "$1" 0 0
}

# the NCCL_VERSION_CODE of the build's NCCL headers, what the fake NCCL reports by default
hv=$("$builddir/tools/tlmpi_info" 2>/dev/null | sed -n 's/^build: NCCL headers \([0-9]*\)$/\1/p')
hv=${hv:-0}
hvs=$(echo "$hv" | awk '{ printf "%d\\.%d\\.%d", $1 / 10000, $1 % 10000 / 100, $1 % 100 }')
old_headers=0 # 2.28.0..2.28.6: NCCL's rule refuses a 1-rank devcomm before any NCCL call
[ "$hv" -ge 22800 ] && [ "$hv" -lt 22807 ] && old_headers=1

np=1
info="--env TLMPI_LOG_LEVEL=info"
run_case devcomm_one staging --env TLMPI_TIER=node --env TLMPI_NODE_TRANSPORT=devcomm $info
if [ $old_headers = 1 ]; then
    check_run devcomm_one staging 1 'setting up tier node failed.*devcomm transport unavailable' '' 0 'NCCL_CUMEM_ENABLE'
    check_rule devcomm_one "$hvs"
else
    check_run devcomm_one staging 1 'setting up tier node failed.*devcomm transport failed.*not supported by the fake' \
        '' 0 'lsaMultimem'
    check_calls devcomm_one 1 1
fi

run_case devcomm_old staging --env TLMPI_TIER=node --env TLMPI_NODE_TRANSPORT=devcomm $info --env FAKE_NCCL_VERSION=22803
check_run devcomm_old staging 1 'setting up tier node failed.*devcomm transport unavailable' '' 0 'NCCL_CUMEM_ENABLE'
check_rule devcomm_old '2\.28\.3'

if [ $old_headers = 1 ]; then
    echo "fault devcomm_nosym: SKIP (the build's NCCL headers are $hv: one rank is refused before ncclDevCommCreate)"
else
    run_case devcomm_nosym staging --env TLMPI_TIER=node --env TLMPI_NODE_TRANSPORT=devcomm --env FAKE_NCCL_NO_SYMMETRIC=1
    check_run devcomm_nosym staging 1 \
        "devcomm transport failed: ncclDevCommCreate: .*\(Communicator does not support symmetric memory!\); NCCL $hvs needs CUDA P2P between the GPUs on a node, cuMem on" \
        '' 0 'NCCL_CUMEM_ENABLE=1 may enable'
fi

run_case auto_one self --env TLMPI_NODE_TRANSPORT=devcomm
check_run auto_one self 0 ''
np=4

run_case node_shared staging --env TLMPI_TIER=node
check_run node_shared staging 1 'setting up tier node failed.*smoke test' '' '' 'devcomm'

fmc="--env FAKE_CUDA_MULTICAST=1"
run_case nvls0 staging --env TLMPI_NVLS=0 $ndev $fmc
check_run nvls0 staging 2 'launch failed' 'transport ipc.*multicast emulated \(TLMPI_NVLS=0\)' 0 'lsaMultimem'

run_case nccl_nvls0 staging --env NCCL_NVLS_ENABLE=0 $ndev $fmc
check_run nccl_nvls0 staging 2 'launch failed' 'transport ipc.*multicast emulated \(NCCL_NVLS_ENABLE=0\)' 0 'lsaMultimem'

# the two controls need NCCL_NVLS_ENABLE unset; where the caller exported it (GPU hosts that must
# never use NVLink multicast export NCCL_NVLS_ENABLE=0 in every command), they are skipped, not
# run with the variable removed
if [ -n "${NCCL_NVLS_ENABLE+set}" ]; then
    echo "fault nvls_on: SKIP (NCCL_NVLS_ENABLE=$NCCL_NVLS_ENABLE in the environment; the control needs it unset)"
    echo "fault nvls_nomc: SKIP (NCCL_NVLS_ENABLE=$NCCL_NVLS_ENABLE in the environment; the control needs it unset)"
else
    run_case nvls_on staging $ndev $fmc
    check_run nvls_on staging 2 'devcomm transport.*ncclDevCommCreate \(lsaMultimem\)' \
        'multicast emulated \(the ipc transport creates no multicast object\)' +

    run_case nvls_nomc staging $ndev
    check_run nvls_nomc staging 2 'launch failed' 'multicast emulated \(no multicast support' + 'lsaMultimem'
fi

# the GPU turn (TLMPI_GPU_TURNS=yes: taken as under MPI_THREAD_MULTIPLE) on the NCCL tier: exact
# results, every rank on nccl, no warning
run_case turns nccl --env TLMPI_TIER=nccl --env TLMPI_GPU_TURNS=yes
check_run turns nccl 0 ''

# rank 1 never gets the GPU turn: every rank's take ends at TLMPI_TIMEOUT with the diagnostic
run_case turn_stuck - --env TLMPI_TIER=nccl --env TLMPI_GPU_TURNS=yes --env TLMPI_FAULT=turn_stuck:1 --env TLMPI_TIMEOUT=2
bad=
if [ $rc = 124 ] || [ $rc = 137 ]; then
    bad="still running after $limit s"
elif [ $rc = 0 ]; then
    bad="exit 0"
fi
diag=$(cat "$dir"/log.* 2>/dev/null | grep -m1 'TLMPI_TIMEOUT:.*for the GPU turn')
if [ -z "$diag" ]; then
    bad="${bad:+$bad; }no rank logged a TLMPI_TIMEOUT: line for the GPU turn"
else
    echo "$diag" | grep -q ' TLMPI ERROR ' || bad="${bad:+$bad; }the diagnostic is not an ERROR line"
    echo "$diag" | grep -qE 'rounds, in none of which' || bad="${bad:+$bad; }the diagnostic does not count the rounds"
fi
if [ -z "$bad" ]; then
    report turn_stuck 0 "exit $rc after ${secs} s; $(echo "$diag" | sed 's/^.*TLMPI_TIMEOUT:/TLMPI_TIMEOUT:/')"
else
    report turn_stuck 1 "$bad; exit $rc after ${secs} s"
fi

# a stuck wait on rank 1: TLMPI_TIMEOUT aborts the job
run_case timeout - --env TLMPI_TIER=nccl --env TLMPI_FAULT=wait_stuck:1 --env TLMPI_TIMEOUT=2
bad=
if [ $rc = 124 ] || [ $rc = 137 ]; then
    bad="still running after $limit s"
elif [ $rc = 0 ]; then
    bad="exit 0"
fi
rank_log 1 >"$dir/rank1.lines"
diag=$(grep -m1 'TLMPI_TIMEOUT:' "$dir/rank1.lines")
if [ -z "$diag" ]; then
    bad="${bad:+$bad; }no TLMPI_TIMEOUT: line in rank 1's log"
else
    echo "$diag" | grep -q ' TLMPI ERROR ' || bad="${bad:+$bad; }the diagnostic is not an ERROR line"
    echo "$diag" | grep -q 'in allreduce on tier nccl ' ||
        bad="${bad:+$bad; }the diagnostic does not name allreduce (the first call) on tier nccl"
    # mpi_fault calls nothing on MPI_COMM_WORLD itself: the stuck wait is on its dup
    echo "$diag" | grep -q 'MPI_COMM_WORLD' && bad="${bad:+$bad; }the diagnostic names MPI_COMM_WORLD, not the dup"
fi
if [ -z "$bad" ]; then
    report timeout 0 "exit $rc after ${secs} s; rank 1: $(echo "$diag" | sed 's/^.*TLMPI_TIMEOUT:/TLMPI_TIMEOUT:/')"
else
    report timeout 1 "$bad; exit $rc after ${secs} s${diag:+; rank 1: $(echo "$diag" | sed 's/^.*TLMPI_TIMEOUT:/TLMPI_TIMEOUT:/')}"
fi

[ $failed = 0 ] && exit 0
exit 1
