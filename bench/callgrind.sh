#!/bin/sh
# bench/callgrind.sh: instructions an interposer adds to one 8-byte MPI_Allreduce on host buffers,
# counted with valgrind --tool=callgrind on 2 ranks.
#
# usage: bench/callgrind.sh [-n CALLS] [-b BUILDDIR] [-l LIB.so] [-m MPIEXEC] [-k] [-t TARGET] [-o OP]
#                           [-B BUF] [-p PRE.so]
#   -n CALLS    calls per phase (default 10000)
#   -b BUILDDIR tlmpi build directory holding bench/passthrough and .libs/libtlmpi.so
#               (default: the current directory if it has bench/passthrough, else <repo>/build)
#   -l LIB.so   interposer to preload (default BUILDDIR/.libs/libtlmpi.so); "none" = no interposer
#   -m MPIEXEC  launcher (default mpiexec.mpich; an Open MPI mpiexec is detected and handled)
#   -k          keep the callgrind output directory
#   -t TARGET   target in instructions per call (default 60: the host pass-through target of issue 20 and 22); exit 2 when missed
#   -o OP       the call counted (bench/passthrough --cg-op): allreduce (default), iallreduce
#               (host buffers), wait / test (on requests that are not tlmpi's)
#   -B BUF      where the host buffers live (bench/passthrough --buf): heap (default), preinit, mmap
#   -p PRE.so   a library preloaded ahead of the interposer in both phases, e.g. the fake CUDA
#               runtime (build/tests/mpi/.libs/libfakecudart.so): tlmpi then sees a GPU, as on a GPU node
#
# Method. bench/passthrough --callgrind=mpi makes N MPI_Allreduce calls inside cg_phase_mpi(),
# after warm-up calls (tlmpi's lazy init and symbol binding happen there, not in the measured part);
# --callgrind=pmpi makes N PMPI_Allreduce calls inside cg_phase_pmpi(). Each phase runs in its own
# job with --collect-atstart=no --toggle-collect=cg_phase_<phase>, so only the phase is counted.
# The instructions spent inside the MPI library depend on timing (ch4:ucx busy-polls while waiting
# for the other rank), so totals of the two phases cannot be compared directly. Instead, from the
# call graph (callgrind_annotate --tree=calling --inclusive=yes), per phase:
#     outside = inclusive Ir of cg_phase_X
#               - sum of inclusive Ir of the call edges into the MPI library whose caller is
#                 cg_phase_X itself or a function of the interposer object
# (edges into the MPI library from UCX callbacks are nested inside those and are not counted again)
# i.e. every instruction of the phase not executed inside the MPI library: the benchmark loop and
# PLT stubs in both phases, plus the interposer (its code, its PLT hop to PMPI_Allreduce) in the mpi
# phase. The MPI library object is found from the pmpi phase: the object of cg_phase_pmpi's callee.
# No symbol names of the MPI library are needed (MPICH and Open MPI define MPI_Allreduce as a weak
# alias of PMPI_Allreduce, so callgrind may show either name). Then
#     extra instructions per call = (outside_mpi - outside_pmpi) / N
# which is exact (no timing noise): the polling instructions are all inside the MPI library.
# -f: no pathname expansion anywhere (the unquoted $launch and analyse's words, e.g. an object
# valgrind could not name, "???", which would otherwise match a file of the working directory)
set -euf

calls=10000 builddir= lib= mpiexec=mpiexec.mpich keep=0 target=60 op=allreduce buf=heap pre=
while getopts n:b:l:m:kt:o:B:p:h opt; do
    case $opt in
        n) calls=$OPTARG ;;
        b) builddir=$OPTARG ;;
        l) lib=$OPTARG ;;
        m) mpiexec=$OPTARG ;;
        k) keep=1 ;;
        t) target=$OPTARG ;;
        o) op=$OPTARG ;;
        B) buf=$OPTARG ;;
        p) pre=$(cd "$(dirname "$OPTARG")" && pwd)/$(basename "$OPTARG") ;;
        *) sed -n '2,20p' "$0"; exit 1 ;;
    esac
done
srcdir=$(cd "$(dirname "$0")/.." && pwd)
if [ -z "$builddir" ]; then
    if [ -x bench/passthrough ]; then builddir=$(pwd); else builddir=$srcdir/build; fi
fi
builddir=$(cd "$builddir" && pwd)
prog=$builddir/bench/passthrough
[ -n "$lib" ] || lib=$builddir/.libs/libtlmpi.so
for tool in valgrind callgrind_annotate "$mpiexec"; do
    command -v "$tool" >/dev/null 2>&1 || { echo "callgrind.sh: $tool not found" >&2; exit 1; }
done
[ -x "$prog" ] || { echo "callgrind.sh: $prog not built (make bench/passthrough)" >&2; exit 1; }
if [ "$lib" != none ]; then
    [ -f "$lib" ] || { echo "callgrind.sh: $lib not found" >&2; exit 1; }
    lib=$(cd "$(dirname "$lib")" && pwd)/$(basename "$lib")
fi

ipobj=none
[ "$lib" = none ] || ipobj=$(readlink -f "$lib")
out=$(mktemp -d "${TMPDIR:-/tmp}/tlmpi-callgrind.XXXXXX")
if [ "$keep" = 1 ]; then echo "callgrind files kept in $out"; else trap 'rm -rf "$out"' EXIT; fi

# launcher flags: hydra -genv, Open MPI -x (and --oversubscribe, root permission)
preload=$lib
[ "$lib" != none ] || preload=
[ -z "$pre" ] || preload=$pre${preload:+:$preload}
if "$mpiexec" --version 2>&1 | grep -qiE 'open ?mpi|openrte'; then
    launch="$mpiexec --oversubscribe -n 2" rankvar=OMPI_COMM_WORLD_RANK
    [ -z "$preload" ] || launch="$launch -x LD_PRELOAD=$preload"
    if [ "$(id -u)" = 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
else
    launch="$mpiexec -n 2" rankvar=PMI_RANK
    [ -z "$preload" ] || launch="$launch -genv LD_PRELOAD $preload"
fi

for phase in mpi pmpi; do
    mkdir -p "$out/$phase"
    # shellcheck disable=SC2086
    (cd "$out/$phase" && MPIEXEC_TIMEOUT=600 $launch valgrind -q --tool=callgrind --collect-atstart=no \
        --toggle-collect=cg_phase_$phase --callgrind-out-file="$out/$phase/cg.%q{$rankvar}" \
        "$prog" --callgrind=$phase --cg-op="$op" --buf="$buf" -n "$calls" -w 200 </dev/null >"$out/$phase/log" 2>&1) || {
        echo "callgrind.sh: the $phase run failed; its output:" >&2; cat "$out/$phase/log" >&2; exit 1; }
done

# Print "<incl of cg_phase_X> <Ir of the edges into OBJ from cg_phase_X or the interposer object>
# <callee obj of cg_phase_X>" from one callgrind file. OBJ empty: only report the callee object.
# A PLT stub valgrind cannot place in an object (".plt.sec" of -fcf-protection builds, Ubuntu's
# default: "???:0x... [???]") is seen through: an edge into OBJ from a stub that cg_phase_X or the
# interposer called counts as theirs, and the callee object of cg_phase_X is its stub's callee's.
analyse() { # file phase obj
    callgrind_annotate --tree=calling --inclusive=yes --threshold=100 --auto=no "$1" |
    awk -v phase="cg_phase_$2" -v obj="$3" -v ipobj="$ipobj" '
        function ir(s) { s = $1; gsub(/,/, "", s); return s + 0 }
        function objof(line,   o) { if (index(line, "[") == 0) return ""; o = line; sub(/.*\[/, "", o); sub(/\][^]]*$/, "", o); return o }
        function fname(line,   o) { o = line; sub(/^ *[0-9,]+ *\([^)]*\) *[*>] +/, "", o); sub(/ .*/, "", o); return o }
        # callgrind_annotate leaves the object out of some lines (a function of a header, a tail
        # call): a caller from tlmpi'"'"'s own sources (src/) is the interposer
        / \*  / { cname = fname($0); cobj = objof($0); if (cobj == "" && index($0, "src/") > 0) cobj = ipobj
                  inphase = (index($0, ":" phase " [") > 0)
                  if (inphase) incl = ir(); next }
        / >   / { n++; ph[n] = inphase; ip[n] = (cobj == ipobj); cn[n] = cname; co[n] = cobj
                  en[n] = fname($0); eo[n] = objof($0); ei[n] = ir(); next }
        END {
            for (i = 1; i <= n; i++) if ((ph[i] || ip[i]) && eo[i] == "???") stub[en[i]] = 1
            for (i = 1; i <= n; i++) if (ph[i]) { first = eo[i]; fs = en[i]; break }
            if (first == "???") for (i = 1; i <= n; i++) if (co[i] == "???" && cn[i] == fs) { first = eo[i]; break }
            for (i = 1; i <= n; i++)
                if (obj != "" && eo[i] == obj && (ph[i] || ip[i] || (co[i] == "???" && (cn[i] in stub)))) entered += ei[i]
            printf "%.0f %.0f %s\n", incl, entered, (first == "" ? "none" : first) }'
}

echo "callgrind: $calls calls ($op: $(sed -n 's/^callgrind phase mpi: [0-9]* //p' "$out/mpi/log" | head -1)) per phase, MPI_DOUBLE, MPI_SUM, host buffers, 2 ranks"
echo "launcher : $launch"
worst=0
for rank in 0 1; do
    fp=$out/pmpi/cg.$rank fm=$out/mpi/cg.$rank
    set -- $(analyse "$fp" pmpi "")
    mpilib=$3
    case $mpilib in
    /*) ;;
    *) echo "callgrind.sh: rank $rank: the MPI library object was not found (the pmpi phase's callee: $mpilib); kept: $out" >&2
       trap - EXIT; exit 1 ;;
    esac
    set -- $(analyse "$fp" pmpi "$mpilib")
    out_p=$(( $1 - $2 ))
    set -- $(analyse "$fm" mpi "$mpilib")
    incl_m=$1 entered_m=$2 out_m=$(( $1 - $2 ))
    extra=$(awk -v a="$out_m" -v b="$out_p" -v n="$calls" 'BEGIN { printf "%.1f", (a - b) / n }')
    echo "rank $rank: MPI library object: $mpilib"
    echo "  mpi  phase: inclusive $incl_m Ir, inside the MPI library $entered_m Ir, outside $out_m Ir = $(awk -v a="$out_m" -v n="$calls" 'BEGIN { printf "%.1f", a / n }') per call"
    echo "  pmpi phase: outside the MPI library $out_p Ir = $(awk -v a="$out_p" -v n="$calls" 'BEGIN { printf "%.1f", a / n }') per call"
    echo "  extra instructions per call ($op): $extra"
    worst=$(awk -v a="$worst" -v b="$extra" 'BEGIN { print (b > a ? b : a) }')
done
if awk -v w="$worst" -v t="$target" 'BEGIN { exit !(w <= t) }'; then
    echo "target: <= $target extra instructions per call: met ($worst)"
else
    echo "target: <= $target extra instructions per call: MISSED ($worst)"
    exit 2
fi
