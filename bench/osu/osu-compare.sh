#!/bin/bash
# osu-compare.sh (installed as tlmpi-osu-compare): the user's own OSU micro-benchmarks build against
# tlmpi and every baseline this machine offers, in one run, on CUDA device buffers.
#
#   tlmpi-osu-compare [options] OSU_DIR [TLMPI]
#   tlmpi-osu-compare --from-dir DIR [options]     (merge + plot outputs that exist; runs nothing)
#
# OSU_DIR: an existing OSU build (7.4 or newer, configured with CUDA against this MPI): the
# directory holding osu_allreduce, or its build or install tree (c/mpi/collective/blocking,
# libexec/osu-micro-benchmarks/mpi/collective/blocking). This script never builds OSU. TLMPI:
# libtlmpi.so, a tlmpi build directory (.libs/libtlmpi.so) or an install prefix (lib/libtlmpi.so);
# default: the library installed beside this command.
#
# Runs osu_allreduce, osu_allgather and osu_reduce_scatter_block (-b nonblocking: OSU's non-blocking
# osu_iallreduce, osu_iallgather and osu_ireduce_scatter_block instead, whose tables add OSU's pure
# communication time and overlap (%) per mode; -b all: both; -b siblings: osu_allgatherv,
# osu_reduce_scatter, osu_bcast, osu_reduce and osu_alltoall; -b nonblocking-siblings: their osu_i*
# forms; -b all-siblings: both; -b persistent: osu_allreduce_persistent and osu_allgather_persistent
# (OSU has no persistent reduce_scatter_block); -b persistent-siblings: the siblings' osu_*_persistent;
# -b osu_NAME,osu_NAME...: those benchmarks) with `-d cuda -c` (OSU validates
# every size; `-T mpi_float` for the reductions), OSU's sizes -s MIN:MAX (default 4 B .. 256 MiB;
# OSU's -M raised to fit), on every rank count of -n "2 4", in these modes (-m LIST picks; default
# auto,staging,nccl,node,mpi):
#   auto       libtlmpi preloaded, TLMPI_TIER=auto (tlmpi's own choice)
#   staging    TLMPI_TIER=staging (pinned host staging + the MPI's host collective: what a staging
#              MPI such as Open MPI's coll/accelerator does)
#   nccl       TLMPI_TIER=nccl (the flat NCCL tier; with ranks sharing a GPU NCCL talks over loopback
#              sockets: every rank gets its own NCCL_HOSTID, tests/gpu/rank-env.sh)
#   node       each node-tier algorithm forced through the tables: TLMPI_ALLREDUCE_TIERS=node/ll,
#              node/oneshot and node/twoshot, TLMPI_ALLGATHER_TIERS=node/ll, node/push and node/pull,
#              TLMPI_REDUCE_SCATTER_BLOCK_TIERS=node/ll and node/pull (ll above its 8 KiB limit: auto)
#   mpi        the MPI alone, without tlmpi, only where it is CUDA-aware (Open MPI: ompi_info says
#              *_built_with_cuda_support true; MPICH: mpichversion shows a --with-cuda configure and
#              MPIR_CVAR_ENABLE_GPU is not 0); when that cannot be established it says so and skips:
#              a device pointer is never handed to an MPI that is not CUDA-aware (Debian's MPICH,
#              Debian's and Ubuntu's Open MPI)
# and each again in place (-l) where the OSU build has it (its -h lists -l). Ranks start through
# MPIEXEC (default mpiexec; MPICH's hydra and Open MPI both work) with tests/gpu/mpirun.sh; when
# there are more ranks than GPUs, the whole run goes under an MPS daemon of its own
# (tests/gpu/mps.sh) unless --no-mps or one is already running (CUDA_MPS_PIPE_DIRECTORY).
#
# Output in -o DIR (default ./osu-out): one raw OSU output per run (osu_<coll>-np<N>-<mode>
# [-inplace].txt, with its exit status in .rc and tlmpi's TLMPI_STATS counters at the end: which
# path served), meta.txt, osu-compare.csv and osu-compare.md (bench/osu/osu_merge.py: latency per
# mode, speed-up of auto over every other mode, validation per mode), and a PNG per collective in
# DIR/plots (bench/plot.py through bench/plot.sh, which installs python3-matplotlib when missing;
# --no-plot skips). The non-blocking binaries are looked for beside the blocking ones and in
# c/mpi/collective/non_blocking (build tree) or libexec/osu-micro-benchmarks/mpi/collective (install). Other options: -a "OSU ARGS" (default "-i 200 -x 20"), -A "OSU ARGS" for the
# sizes from -L BYTES up (default "-i 20 -x 2" from 4 MiB: OSU's -c fills and checks the buffers on
# the host around every iteration, so one 256 MiB size with -i 200 takes minutes; such runs are made
# as a second OSU run of the same benchmark, appended to the same output; -L 0: one run with -a for
# every size), -t SECONDS per OSU run (default 900), --no-in-place, --no-mps, --note TEXT (a caption line), --meta KEY=VALUE (a metadata
# field of the table; with --from-dir for outputs without meta.txt). Exit status: 0 when every run exited 0 and OSU's validation passed everywhere.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." 2>/dev/null && pwd)
# installed: everything beside this script in $TLMPI_OSU_HOME; in the source tree: where it lives
home=${TLMPI_OSU_HOME:-$here}
helper() {
    for d in "$home" "$here" "$root/bench/osu" "$root/bench" "$root/tests/gpu"; do
        [ -f "$d/$1" ] && { echo "$d/$1"; return 0; }
    done
    echo "tlmpi-osu-compare: helper $1 not found" >&2
    return 1
}
usage() { sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit "${1:-0}"; }

out=$PWD/osu-out; nps="2 4"; modes=auto,staging,nccl,node,mpi; minsz=4; maxsz=268435456
bset=blocking; osu_args="-i 200 -x 20"; large_from=4194304; large_args="-i 20 -x 2"; inplace=1; mps=1; plot=1; from=; note=; timeout_s=${RUN_TIMEOUT:-900}
metas=()
while [ $# -gt 0 ]; do
    case $1 in
        -o|--out) out=$2; shift 2 ;;
        -n|--np) nps=$2; shift 2 ;;
        -m|--modes) modes=$2; shift 2 ;;
        -b|--benchmarks) bset=$2; shift 2 ;;
        -s|--sizes) minsz=${2%%:*}; maxsz=${2##*:}; shift 2 ;;
        -a|--osu-args) osu_args=$2; shift 2 ;;
        -A|--osu-args-large) large_args=$2; shift 2 ;;
        -L|--large-from) large_from=$2; shift 2 ;;
        -t|--timeout) timeout_s=$2; shift 2 ;;
        --no-in-place) inplace=0; shift ;;
        --no-mps) mps=0; shift ;;
        --no-plot) plot=0; shift ;;
        --from-dir) from=$2; shift 2 ;;
        --note) note=$2; shift 2 ;;
        --meta) metas+=(--meta "$2"); shift 2 ;;
        -h|--help) usage 0 ;;
        --) shift; break ;;
        -*) echo "tlmpi-osu-compare: unknown option $1" >&2; usage 2 ;;
        *) break ;;
    esac
done
case $bset in
    blocking) benches="osu_allreduce osu_allgather osu_reduce_scatter_block" ;;
    nonblocking) benches="osu_iallreduce osu_iallgather osu_ireduce_scatter_block" ;;
    all) benches="osu_allreduce osu_allgather osu_reduce_scatter_block osu_iallreduce osu_iallgather osu_ireduce_scatter_block" ;;
    siblings) benches="osu_allgatherv osu_reduce_scatter osu_bcast osu_reduce osu_alltoall" ;;
    nonblocking-siblings) benches="osu_iallgatherv osu_ireduce_scatter osu_ibcast osu_ireduce osu_ialltoall" ;;
    all-siblings) benches="osu_allgatherv osu_reduce_scatter osu_bcast osu_reduce osu_alltoall osu_iallgatherv osu_ireduce_scatter osu_ibcast osu_ireduce osu_ialltoall" ;;
    persistent) benches="osu_allreduce_persistent osu_allgather_persistent" ;;
    persistent-siblings) benches="osu_allgatherv_persistent osu_reduce_scatter_persistent osu_bcast_persistent osu_reduce_persistent osu_alltoall_persistent" ;;
    osu_*) benches=${bset//,/ }
           for b in $benches; do
               case $b in
                   osu_*[!a-z_]*|osu_) echo "tlmpi-osu-compare: -b: '$b' is not an OSU benchmark name" >&2; exit 2 ;;
               esac
           done ;;
    *) echo "tlmpi-osu-compare: -b takes blocking, nonblocking, all, siblings, nonblocking-siblings, all-siblings, persistent, persistent-siblings or OSU benchmark names (osu_alltoall,osu_ialltoall), not '$bset'" >&2; exit 2 ;;
esac
for v in "$minsz" "$maxsz" "$large_from" "$timeout_s"; do
    case $v in
        ''|*[!0-9]*) echo "tlmpi-osu-compare: sizes (-s MIN:MAX, -L) and -t are whole numbers of bytes / seconds, not '$v'" >&2
                     exit 2 ;;
    esac
done

merge_and_plot() { # DIR
    local d=$1 rc
    python3 "$(helper osu_merge.py)" "$d" "${metas[@]}"
    rc=$?
    [ $rc = 2 ] && return 2
    if [ "$plot" = 1 ]; then
        sh "$(helper plot.sh)" --kind osu -o "$d/plots" --prefix osu ${note:+--note "$note"} "$d/osu-compare.csv" ||
            echo "tlmpi-osu-compare: no plots (the tables are complete)" >&2
    fi
    echo "tlmpi-osu-compare: table $d/osu-compare.md, CSV $d/osu-compare.csv$([ "$plot" = 1 ] && echo ", plots in $d/plots")"
    return $rc
}

if [ -n "$from" ]; then
    [ -d "$from" ] || { echo "tlmpi-osu-compare: no directory $from" >&2; exit 2; }
    merge_and_plot "$from"
    exit $?
fi

[ $# -ge 1 ] || usage 2
osu=$(cd "$1" 2>/dev/null && pwd) || { echo "tlmpi-osu-compare: no OSU directory $1" >&2; exit 2; }
tl=${2:-${TLMPI_LIBDIR:+$TLMPI_LIBDIR/libtlmpi.so}}
lib=
for c in "$tl" "$tl/.libs/libtlmpi.so" "$tl/lib/libtlmpi.so" "$tl/lib64/libtlmpi.so"; do
    [ -n "$tl" ] && [ -f "$c" ] && { lib=$(cd "$(dirname "$c")" && pwd)/$(basename "$c"); break; }
done
[ -n "$lib" ] || { echo "tlmpi-osu-compare: no libtlmpi.so (give a tlmpi build dir, prefix or the library)" >&2; exit 2; }
# the directory of a benchmark: blocking ones under .../blocking, non-blocking ones under
# .../non_blocking in a build tree; both in libexec/osu-micro-benchmarks/mpi/collective installed
bindir_of() { # BENCHMARK
    local d sub=blocking
    case $1 in osu_i*) sub=non_blocking ;; *_persistent) sub=persistent ;; esac
    for d in "$osu" "$osu/c/mpi/collective/$sub" "$osu/mpi/collective/$sub" "$osu/../$sub" \
             "$osu/libexec/osu-micro-benchmarks/mpi/collective/$sub" "$osu/libexec/osu-micro-benchmarks/mpi/collective"; do
        [ -x "$d/$1" ] && { (cd "$d" && pwd); return 0; }
    done
    return 1
}
first=${benches%% *}
bindir=$(bindir_of "$first") || { echo "tlmpi-osu-compare: no $first under $osu (an OSU build, 7.4 or newer)" >&2; exit 2; }
for b in $benches; do
    bindir_of "$b" >/dev/null || { echo "tlmpi-osu-compare: $b is missing (looked under $osu)" >&2; exit 2; }
done
mpirun=$(helper mpirun.sh) || exit 2
helper rank-env.sh >/dev/null || exit 2
mpiexec=${MPIEXEC:-mpiexec}
command -v "$mpiexec" >/dev/null 2>&1 || { echo "tlmpi-osu-compare: no launcher $mpiexec (MPIEXEC)" >&2; exit 2; }
export MPIEXEC=$mpiexec

# Under MPS when ranks share a GPU: re-run this script inside tests/gpu/mps.sh once.
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
maxnp=0; for n in $nps; do [ "$n" -gt "$maxnp" ] && maxnp=$n; done
if [ "$mps" = 1 ] && [ -z "${CUDA_MPS_PIPE_DIRECTORY:-}" ] && [ -z "${OSU_COMPARE_IN_MPS:-}" ] &&
   [ "$ngpu" -ge 1 ] && [ "$maxnp" -gt "$ngpu" ]; then
    mpssh=$(helper mps.sh) || exit 2
    OSU_COMPARE_IN_MPS=1 exec sh "$mpssh" bash "$0" -o "$out" -n "$nps" -m "$modes" -b "$bset" -s "$minsz:$maxsz" \
        -a "$osu_args" -A "$large_args" -L "$large_from" -t "$timeout_s" $([ $inplace = 0 ] && echo --no-in-place) \
        $([ $plot = 0 ] && echo --no-plot) ${note:+--note "$note"} "${metas[@]}" -- "$osu" "$lib"
fi

mkdir -p "$out"
log=$out/log.txt
: >"$log"
say() { echo "$*" | tee -a "$log"; }

# Was OSU built with CUDA? Its -h lists -d (accelerator) only then; else libcudart in ldd.
help=$(timeout -k 5 60 sh "$mpirun" 1 "$bindir/$first" -h 2>&1)
if printf '%s\n' "$help" | grep -qE -- '(^|[[:space:]])-d([[:space:]]|,)|--accelerator'; then
    say "OSU: $bindir, built with CUDA (its -h lists -d)"
elif ldd "$bindir/$first" 2>/dev/null | grep -qE 'libcudart|libcuda\.so'; then
    say "OSU: $bindir, linked with the CUDA runtime (ldd; -h did not answer)"
else
    echo "tlmpi-osu-compare: $bindir/$first was not built with CUDA (no -d in its -h, no libcudart):" \
         "configure OSU with --enable-cuda" >&2
    exit 2
fi
# in place: every benchmark's -h must list -l
# in place: the benchmarks whose -h lists -l (osu_bcast has none: out of place only)
inplace_set=
if [ "$inplace" = 1 ]; then
    for b in $benches; do
        h=$([ $b = "$first" ] && printf '%s' "$help" || timeout -k 5 60 sh "$mpirun" 1 "$(bindir_of "$b")/$b" -h 2>&1)
        if printf '%s\n' "$h" | grep -qE -- '(^|[[:space:]])-l([[:space:]]|,)|--in-place'; then
            inplace_set="$inplace_set $b"
        else
            say "in place: this OSU build's $b has no -l; out of place only"
        fi
    done
fi

# Is the plain MPI CUDA-aware? Only a positive answer lets it see device buffers.
plain=no; plain_why=
if "$mpiexec" --version 2>&1 | grep -qiE 'open ?mpi|openrte'; then
    oi=$(dirname "$(command -v "$mpiexec")")/ompi_info
    [ -x "$oi" ] || oi=$(command -v ompi_info)
    if [ -n "$oi" ] && "$oi" --parsable --all 2>/dev/null | grep -q 'built_with_cuda_support:value:true'; then
        plain=yes; plain_why="Open MPI built with CUDA support ($oi)"
    else
        plain_why="Open MPI without CUDA support (ompi_info: built_with_cuda_support not true)"
    fi
elif "$mpiexec" --version 2>&1 | grep -qiE 'hydra|mpich'; then
    mv=$(dirname "$(command -v "$mpiexec")")/mpichversion
    [ -x "$mv" ] || mv=$(command -v mpichversion)
    if [ "${MPIR_CVAR_ENABLE_GPU:-1}" = 0 ]; then
        plain_why="MPICH with MPIR_CVAR_ENABLE_GPU=0"
    elif [ -n "$mv" ] && "$mv" 2>/dev/null | grep -qE -- '--with-cuda(=|[[:space:]]|$)'; then
        plain=yes; plain_why="MPICH configured --with-cuda ($mv)"
    else
        plain_why="MPICH without a CUDA configuration (mpichversion shows no --with-cuda)"
    fi
else
    plain_why="unknown MPI: cannot tell whether it is CUDA-aware"
fi
skipped=
case ",$modes," in *,mpi,*)
    if [ $plain = yes ]; then say "plain MPI: $plain_why: measured as mpi-plain"
    else say "plain MPI: $plain_why: not measured (never hand device buffers to it)"; skipped="mpi-plain ($plain_why)"; fi ;;
esac

gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)
tv=$(strings "$lib" 2>/dev/null | grep -m1 -E '^tlmpi [0-9]' || true)
{
    echo "date=$(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "host=$(hostname)"
    echo "gpu=${gpu:-unknown} (${ngpu:-0} GPUs)"
    echo "mpi=$("$mpiexec" --version 2>&1 | head -1)"
    echo "mps=$([ -n "${CUDA_MPS_PIPE_DIRECTORY:-}" ] && echo on || echo off)"
    echo "tlmpi=$lib${tv:+ ($tv)}${TLMPI_COMMIT:+ commit $TLMPI_COMMIT}"
    echo "benchmarks=$benches"
    echo "options=-d cuda -c [-T mpi_float for the reductions] -m $minsz:$maxsz $osu_args$( [ "$large_from" -gt 0 ] && [ "$large_from" -le "$maxsz" ] && echo " ($large_args from $large_from bytes)")"
    [ -n "$skipped" ] && echo "skipped=$skipped"
    env | grep -E '^(TLMPI|NCCL)_' | grep -vE '^(TLMPI_TIER|TLMPI_[A-Z_]*_TIERS|NCCL_HOSTID)=' | sort | sed 's/^/env./'
} >"$out/meta.txt"

# the size ranges of one benchmark's runs: MIN:MAX, or MIN:LARGE-1 and LARGE:MAX; a range that
# starts at or above LARGE (-L; 0: none) runs with -A, any other with -a
osu_ranges() {
    if [ "$large_from" -gt "$minsz" ] && [ "$large_from" -le "$maxsz" ]; then
        echo "$minsz:$((large_from - 1)) $large_from:$maxsz"
    else
        echo "$minsz:$maxsz"
    fi
}

export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0} TLMPI_TIMEOUT=${TLMPI_TIMEOUT:-120}
rc=0
for np in $nps; do
    memlimit=$((maxsz * (np + 2)))
    for b in $benches; do
        case $b in
            osu_allreduce|osu_iallreduce|osu_allreduce_persistent) algos="ll oneshot twoshot"; tvar=TLMPI_ALLREDUCE_TIERS; T="-T mpi_float" ;;
            osu_allgather|osu_iallgather|osu_allgather_persistent) algos="ll push pull"; tvar=TLMPI_ALLGATHER_TIERS; T= ;;
            osu_reduce_scatter_block|osu_ireduce_scatter_block) algos="ll pull"; tvar=TLMPI_REDUCE_SCATTER_BLOCK_TIERS; T="-T mpi_float" ;;
            # the siblings: no node-tier algorithms of their own (node: TLMPI_TIER=node, served where it can)
            osu_allgatherv|osu_iallgatherv|osu_allgatherv_persistent) algos=; tvar=TLMPI_ALLGATHERV_TIERS; T= ;;
            osu_reduce_scatter|osu_ireduce_scatter|osu_reduce_scatter_persistent) algos=; tvar=TLMPI_REDUCE_SCATTER_TIERS; T="-T mpi_float" ;;
            osu_bcast|osu_ibcast|osu_bcast_persistent) algos=; tvar=TLMPI_BCAST_TIERS; T= ;;
            osu_reduce|osu_ireduce|osu_reduce_persistent) algos=; tvar=TLMPI_REDUCE_TIERS; T="-T mpi_float" ;;
            osu_alltoall|osu_ialltoall|osu_alltoall_persistent) algos=; tvar=TLMPI_ALLTOALL_TIERS; T= ;;
        esac
        bdir=$(bindir_of "$b")
        list=
        for m in ${modes//,/ }; do
            case $m in
                node) for a in $algos; do list="$list node-$a"; done; [ -z "$algos" ] && list="$list node" ;;
                mpi) [ $plain = yes ] && list="$list mpi-plain" ;;
                *) list="$list $m" ;;
            esac
        done
        for m in $list; do
            for ip in 0 $(case " $inplace_set " in *" $b "*) echo 1 ;; esac); do
                f=$out/$b-np$np-$m$([ $ip = 1 ] && echo -inplace).txt
                : >"$f"
                r=0
                # one OSU run per size range: below large_from with -a, from it with -A
                for range in $(osu_ranges); do
                (
                    unset TLMPI_TIER TLMPI_ALLREDUCE_TIERS TLMPI_ALLGATHER_TIERS TLMPI_REDUCE_SCATTER_BLOCK_TIERS \
                        TLMPI_ALLGATHERV_TIERS TLMPI_REDUCE_SCATTER_TIERS TLMPI_BCAST_TIERS TLMPI_REDUCE_TIERS \
                        TLMPI_ALLTOALL_TIERS
                    case $m in
                        mpi-plain) unset GPU_TEST_GUARD_LIB ;;
                        node-*) export "$tvar=node/${m#node-}" ;;
                        *) export TLMPI_TIER=$m ;;
                    esac
                    # rank-env.sh preloads GPU_TEST_GUARD_LIB into the ranks only (not mpiexec)
                    [ $m != mpi-plain ] && export GPU_TEST_GUARD_LIB=$lib TLMPI_STATS=1
                    args=$osu_args
                    [ "$large_from" -gt 0 ] && [ "${range%%:*}" -ge "$large_from" ] && args=$large_args
                    exec timeout -k 10 "$timeout_s" sh "$mpirun" "$np" "$bdir/$b" -d cuda -c $T \
                        -m "$range" -M "$memlimit" $([ $ip = 1 ] && echo -l) $args
                ) >>"$f" 2>&1
                rr=$?
                [ $r = 0 ] && r=$rr
                done
                echo $r >"${f%.txt}.rc"
                [ $r = 0 ] || rc=1
                say "$(basename "$f"): exit $r, $(grep -cE '^[0-9]+[[:space:]]' "$f") sizes, $(grep -ciE '[[:space:]]fail' "$f") failed"
            done
        done
    done
done
merge_and_plot "$out" || rc=1
exit $rc
