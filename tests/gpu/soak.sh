#!/bin/sh
# soak.sh "NPS" BUILD_DIR [PARTS]: tests/gpu/gpu_soak (a random mix of blocking, non-blocking,
# persistent, stream-ordered and graph-replayed calls on churning communicators, every result checked;
# issue 46 item 4) on a GPU host, all ranks on this host's GPU(s); run it under tests/gpu/mps.sh. PARTS
# (comma separated, default soak,die):
#   soak    for each rank count of NPS: gpu_soak -t SOAK_SECONDS (default 480) --mem-check, under
#           `timeout` (SOAK_SECONDS + 180 s): PASS when it exits 0 with "RESULT gpu_soak ... PASS" (every
#           result right, device memory and RSS flat after the first minute: the checkpoint lines every
#           30 s are copied here)
#   mutant  gpu_soak --mutant 20 -t 20 with the first rank count: one reference off by one, the run
#           must FAIL and name the mutant call (the soak can fail)
#   die     the dying rank: SOAK_DIE_NP ranks (default the last of NPS), world rank SOAK_DIE_RANK
#           (default NP/2) sends itself SIGKILL mid-collective SOAK_DIE_AFTER (default 30) s into a
#           soak, TLMPI_TIMEOUT=SOAK_TLMPI_TIMEOUT (default 30); the job must end (outer `timeout`:
#           startup + SOAK_DIE_AFTER + TLMPI_TIMEOUT + 10 + 90 s) with a non-zero exit within
#           TLMPI_TIMEOUT + 10 + SOAK_DIE_MARGIN (default 5) s of the kill (the "DYING" line's
#           timestamp), with the MPI's abort ("BAD TERMINATION" / "KILLED BY SIGNAL" from MPICH's hydra,
#           "exited on signal" / "MPI_ABORT was invoked" from Open MPI's mpirun) or tlmpi's own
#           "TLMPI_TIMEOUT:" diagnostic naming who waited for what, and no crash (no segmentation
#           fault, bus error, SIGABRT or core dump, no core file in the run's directory)
# Every soak run has TLMPI_TIMEOUT=SOAK_TLMPI_TIMEOUT and TLMPI_STATS=1; SOAK_ARGS are added to every
# gpu_soak command line (e.g. "-m 16m"); SOAK_SEED replays a run (gpu_soak -s). Launcher: SOAK_LAUNCH
# (default "sh tests/gpu/mpirun.sh", which takes NP PROGRAM ARGS; MPIEXEC picks mpiexec). Exit 77
# without a GPU (gpu_soak --probe; SOAK_NO_PROBE=1 skips the probe: tests/mpi/soak.sh runs this script
# against the CPU fakes). Prints one line per run, then "soak: PASS k/k" or "soak: FAIL ..."; logs in
# $OUT (default BUILD_DIR/tests/gpu/work-soak).
nps=${1:?usage: soak.sh "NPS" BUILD_DIR [soak,mutant,die]}
build=$(cd "${2:?usage: soak.sh \"NPS\" BUILD_DIR [PARTS]}" && pwd)
parts=${3:-soak,die}
here=$(cd "$(dirname "$0")" && pwd)
prog=${SOAK_PROG:-$build/tests/gpu/gpu_soak}
launch=${SOAK_LAUNCH:-sh $here/mpirun.sh}
if [ ! -x "$prog" ]; then
    echo "soak: FAIL ($prog not built: make check TESTS= in a CUDA build, or BUILD_CHECK_TARGETS=tests/gpu/gpu_soak)"
    exit 1
fi
if [ -z "${SOAK_NO_PROBE:-}" ] && ! "$prog" --probe; then
    echo "soak: SKIP (no CUDA device)"
    exit 77
fi
export NCCL_NVLS_ENABLE=0 NCCL_MNNVL_ENABLE=0 NCCL_SOCKET_IFNAME=${NCCL_SOCKET_IFNAME:-lo} NCCL_DEBUG=${NCCL_DEBUG:-WARN}
tmo=${SOAK_TLMPI_TIMEOUT:-30}
export TLMPI_TIMEOUT=$tmo TLMPI_STATS=1
secs=${SOAK_SECONDS:-480}
seed=
[ -n "${SOAK_SEED:-}" ] && seed="-s $SOAK_SEED"
out=${OUT:-$build/tests/gpu/work-soak}
mkdir -p "$out"
mps=no
[ -n "${CUDA_MPS_PIPE_DIRECTORY:-}" ] && mps=yes
first=
for np in $nps; do first=${first:-$np}; last=$np; done
runs=0 passed=0
want() { case ",$parts," in *",$1,"*) return 0 ;; esac; return 1; }
fail_lines() { # the failure lines of a log, then its last lines
    grep -m 20 -E 'FAIL|Abort|ABORT|TLMPI (ERROR|WARN)|TLMPI_TIMEOUT|DYING|not complete' "$1" | sed 's/^/    /'
    echo "    --- last lines of $1:"
    tail -12 "$1" | sed 's/^/    /'
}

if want soak; then
    for np in $nps; do
        log=$out/soak-np$np.log
        runs=$((runs + 1))
        s=$(date +%s)
        # shellcheck disable=SC2086
        timeout -k 10 $((secs + 180)) $launch "$np" "$prog" -t "$secs" --mem-check $seed ${SOAK_ARGS:-} >"$log" 2>&1
        rc=$?
        res=$(grep -m1 '^RESULT gpu_soak' "$log")
        t=$(( $(date +%s) - s ))
        if [ $rc = 0 ] && echo "$res" | grep -q 'PASS$'; then
            echo "soak np=$np mps=$mps: PASS, $t s: $res"
            passed=$((passed + 1))
        else
            [ $t -ge $((secs + 180)) ] && res="timed out after $((secs + 180)) s"
            echo "soak np=$np mps=$mps: FAIL (exit $rc, $t s): ${res:-no RESULT line}"
            fail_lines "$log"
        fi
        grep -E '^gpu_soak: (np=|t=|memory|summary| )' "$log" | sed 's/^/    /'
    done
fi

if want mutant; then
    np=$first
    log=$out/mutant-np$np.log
    runs=$((runs + 1))
    # shellcheck disable=SC2086
    timeout -k 10 200 $launch "$np" "$prog" -t "${SOAK_MUTANT_SECONDS:-20}" --mutant 20 $seed ${SOAK_ARGS:-} >"$log" 2>&1
    rc=$?
    res=$(grep -m1 '^RESULT gpu_soak' "$log")
    if [ $rc != 0 ] && echo "$res" | grep -q 'FAIL$' && grep -q 'mutant: the reference' "$log" &&
        grep -q 'FAIL .*element 0 = ' "$log"; then
        echo "soak mutant np=$np: PASS (the run failed as it must: $res)"
        grep -m2 -E 'mutant: the reference|FAIL .*element 0 = ' "$log" | sed 's/^/    /'
        passed=$((passed + 1))
    else
        echo "soak mutant np=$np: FAIL (the mutant was not caught: exit $rc, ${res:-no RESULT line})"
        fail_lines "$log"
    fi
fi

if want die; then
    np=${SOAK_DIE_NP:-$last}
    dr=${SOAK_DIE_RANK:-$((np / 2))}
    after=${SOAK_DIE_AFTER:-30}
    margin=${SOAK_DIE_MARGIN:-5}
    bound=$((tmo + 10 + margin))
    outer=$((after + tmo + 10 + 90))
    dir=$out/die-np$np
    rm -rf "$dir"
    mkdir -p "$dir"
    log=$out/die-np$np.log
    runs=$((runs + 1))
    s=$(date +%s)
    # shellcheck disable=SC2086
    (cd "$dir" && timeout -k 10 "$outer" $launch "$np" "$prog" -t $((after + 3600)) \
        --die-rank "$dr" --die-after "$after" $seed ${SOAK_ARGS:-} >"$log" 2>&1)
    rc=$?
    tend=$(date +%s.%N)
    t=$(( $(date +%s) - s ))
    tkill=$(grep -m1 'gpu_soak: DYING' "$log" | sed -n 's/.* at \([0-9.]*\) (CLOCK_REALTIME).*/\1/p')
    why=
    # (timeout's 124 / 137 are no proof: Open MPI's mpiexec exits 137 when a rank died of SIGKILL)
    if [ $t -ge $outer ]; then
        why="the job hung: still running after the outer timeout ($outer s; exit $rc)"
    elif [ -z "$tkill" ]; then
        why="no rank died (no DYING line; exit $rc)"
    elif [ $rc = 0 ]; then
        why="the job exited 0 after a rank died"
    fi
    ended=
    [ -n "$tkill" ] && ended=$(awk -v a="$tend" -v b="$tkill" 'BEGIN { printf "%.1f", a - b }')
    if [ -z "$why" ] && awk -v e="$ended" -v l="$bound" 'BEGIN { exit !(e > l) }'; then
        why="the job ended $ended s after the kill, later than TLMPI_TIMEOUT + 10 + $margin = $bound s"
    fi
    diag=
    if grep -qE 'TLMPI_TIMEOUT:' "$log"; then
        diag="tlmpi's diagnostic: $(grep -m1 'TLMPI_TIMEOUT:' "$log" | cut -c1-300)"
    elif grep -qiE 'BAD TERMINATION|KILLED BY SIGNAL|exited on signal|noticed that process rank|MPI_ABORT was invoked|job aborted' "$log"; then
        for p in 'KILLED BY SIGNAL' 'exited on signal|noticed that process rank' 'MPI_ABORT was invoked' 'BAD TERMINATION|job aborted'; do
            l=$(grep -m1 -iE "$p" "$log" | sed 's/^[= ]*//' | cut -c1-300)
            [ -n "$l" ] && break
        done
        diag="the MPI's abort: $l"
    fi
    [ -z "$why" ] && [ -z "$diag" ] && why="no diagnostic: neither the MPI's abort nor a TLMPI_TIMEOUT: line"
    crash=$(grep -m3 -iE 'segmentation fault|SIGSEGV|signal:? 11([^0-9]|$)|bus error|SIGBUS|signal:? 7([^0-9]|$)|core dumped|SIGABRT|signal:? 6([^0-9]|$)' "$log")
    cores=$(ls "$dir" | grep -E '^core' | head -3)
    [ -z "$why" ] && [ -n "$crash$cores" ] && why="a crash beside the killed rank: ${crash:+$crash }${cores:+core files: $cores}"
    if [ -z "$why" ]; then
        echo "soak die np=$np rank $dr after ${after} s: PASS (exit $rc, ended $ended s after the kill, bound $bound s; $t s in all): $diag"
        passed=$((passed + 1))
    else
        echo "soak die np=$np rank $dr after ${after} s: FAIL: $why"
        fail_lines "$log"
    fi
    grep -m1 'gpu_soak: DYING' "$log" | sed 's/^/    /'
fi

if [ $runs = 0 ]; then
    echo "soak: nothing to run (PARTS: $parts)"
    exit 2
fi
if [ $passed = $runs ]; then
    echo "soak: PASS $passed/$runs"
    exit 0
fi
echo "soak: FAIL $((runs - passed))/$runs (passed $passed)"
exit 1
