#!/bin/sh
# fdx_strangers.sh [BUILD_DIR]: tests/mpi/mpi_fdx_strangers_np4 (the descriptor exchange with
# strangers connecting to it; see its header) twice, 4 ranks each, each rank logging at info level to
# its own file, each run under `timeout`:
#   checked   the exchange as built: the program passes (every rank mapped its peers' pools, none a
#             stranger's, the exchange well within TLMPI_TIMEOUT), and every rank's log has an info
#             line refusing a connection from each stranger's pid (with its uid), and no warning
#   nocred    the mutant TLMPI_FAULT=fdx_nocred (no credential check): the program must fail, some
#             rank having mapped a stranger's memory as a peer's pool
# Skips (77) where the program is not built (no CUDA headers at configure time).
here=$(cd "$(dirname "$0")" && pwd)
srcdir=${top_srcdir:-$here/../..}
builddir=${1:-${top_builddir:-.}}
builddir=$(cd "$builddir" && pwd)
MPIEXEC=${MPIEXEC:-mpiexec}
export MPIEXEC
prog=$builddir/tests/mpi/mpi_fdx_strangers_np4
if [ ! -x "$prog" ]; then
    echo "SKIP: $prog not built (needs the CUDA headers at configure time)"
    exit 77
fi
np=4
limit=${FDX_CASE_TIMEOUT:-120}
work=$builddir/tests/mpi/work-fdx-strangers
rm -rf "$work"
mkdir -p "$work"
failed=0
echo "fdx_strangers: expected: strangers connect to the descriptor exchange on purpose; the mutant run" \
    "(nocred) must FAIL (the ranks' logs: $work/<case>/log.<rank>)"

# run_case name then --env options: sets rc, secs, out, dir
run_case() {
    name=$1
    shift
    dir=$work/$name
    out=$dir/out
    mkdir -p "$dir"
    s=$(date +%s)
    timeout -k 5 "$limit" sh "$srcdir/tests/launch.sh" --np $np --env TLMPI_LOG_LEVEL=info \
        --env TLMPI_LOG_FILE="$dir/log.%r" ${TLMPI_TEST_SEED:+--env TLMPI_TEST_SEED=$TLMPI_TEST_SEED} "$@" \
        -- "$prog" >"$out" 2>&1
    rc=$?
    secs=$(( $(date +%s) - s ))
}

report() { # name verdict(0 pass) detail
    if [ "$2" = 0 ]; then
        echo "fdx_strangers $1: PASS ($3)"
    else
        echo "fdx_strangers $1: FAIL ($3)"
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

run_case checked
bad=
if [ $rc = 124 ] || [ $rc = 137 ]; then
    bad="timed out after $limit s"
elif [ $rc != 0 ]; then
    bad="exit $rc"
fi
grep -q '^mpi_fdx_strangers: PASS' "$out" || bad="${bad:+$bad; }no PASS line"
strangers=$(sed -n 's/^mpi_fdx_strangers: stranger pid \([0-9]*\) uid \([0-9]*\)$/\1:\2/p' "$out")
[ -n "$strangers" ] || bad="${bad:+$bad; }no stranger ran"
refusals=0
for r in $(seq 0 $((np - 1))); do
    log=$dir/log.$r
    if [ ! -f "$log" ]; then
        bad="${bad:+$bad; }no log.$r"
        continue
    fi
    for pu in $strangers; do
        p=${pu%:*} u=${pu#*:}
        n=$(grep ' TLMPI INFO ' "$log" | grep -c "refused a connection from pid $p, uid $u:")
        [ "$n" -ge 1 ] || bad="${bad:+$bad; }rank $r: no info line refusing pid $p (uid $u)"
        refusals=$((refusals + n))
    done
    w=$(grep -c ' TLMPI WARN ' "$log")
    [ "$w" = 0 ] || bad="${bad:+$bad; }rank $r: $w WARN lines"
done
took=$(sed -n 's/^mpi_fdx_strangers: with strangers: the exchange took \(.*\)$/\1/p' "$out")
if [ -z "$bad" ]; then
    detail="strangers (pid:uid) $(echo $strangers), $refusals connections refused, the exchange took $took"
    report checked 0 "$detail, ${secs} s"
else
    report checked 1 "$bad; ${secs} s"
fi

run_case nocred --env TLMPI_FAULT=fdx_nocred
bad=
if [ $rc = 124 ] || [ $rc = 137 ]; then
    bad="timed out after $limit s"
elif [ $rc = 0 ]; then
    bad="the mutant passed"
fi
grep -q '^mpi_fdx_strangers: FAIL' "$out" || bad="${bad:+$bad; }no FAIL line"
grep -q "mapping is a stranger's memory" "$out" || bad="${bad:+$bad; }no rank mapped a stranger's memory"
if [ -z "$bad" ]; then
    first=$(grep -m1 "mapping is a stranger's memory" "$out" | sed 's/.*FAIL [^ ]*: //')
    report nocred 0 "the mutant fails: $first, ${secs} s"
else
    report nocred 1 "$bad; ${secs} s"
fi

exit $failed
