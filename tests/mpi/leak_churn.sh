#!/bin/sh
# Leak check: mpi_churn with 50 cycles (dup/split/use/free, some communicators never freed) on
# 2 ranks under valgrind --leak-check=full. MPI libraries and their transports (UCX, PMIx, hwloc)
# leak on their own, so valgrind's exit code is not used; instead each "definitely lost" record
# is attributed to tlmpi when the first frame after the allocator (malloc, calloc, realloc,
# strdup, ...) is in tlmpi: a frame "(in .../libtlmpi.so...)" or one whose source file is one of
# tlmpi's (src/*.c, cuda/*.cu). Any such record fails the test. A leak that MPI makes while tlmpi
# calls it (tlmpi -> PMPI_Comm_split -> leak inside the MPI) is not tlmpi's and is not counted.
# Skipped without valgrind. TLMPI_LEAK_VERBOSE=1 (make check-leaks) prints valgrind's reports;
# TLMPI_LEAK_PARSE_ONLY=DIR only classifies the records of DIR/vg.*.log (to test this script).
name=leak_churn
. "$top_srcdir/tests/interpose/common.sh"

vg=${VALGRIND:-}
[ -n "$vg" ] || vg=$(command -v valgrind 2>/dev/null)
[ -n "$vg" ] || skip "valgrind not found"
prog=$(cd "$top_builddir" && pwd)/tests/mpi/mpi_churn
[ -x "$prog" ] || fail "$prog is not built"

if [ -n "${TLMPI_LEAK_PARSE_ONLY:-}" ]; then
    work=$TLMPI_LEAK_PARSE_ONLY # self-test of the attribution below: a directory of vg.*.log files
else
    launch --np 2 "$vg" --leak-check=full --show-leak-kinds=definite --errors-for-leak-kinds=definite \
        --num-callers=24 --log-file="$work/vg.%p.log" "$prog" 50 >"$work/run.log" 2>&1
    rc=$?
    cat "$work/run.log"
    [ $rc = 0 ] || fail "mpi_churn under valgrind failed (rc $rc)"
fi

# tlmpi's source files, as valgrind prints them in frames: "(comm.c:52)"
files=$(cd "$top_srcdir" && ls src/*.c cuda/*.cu 2>/dev/null | sed 's|.*/||' | tr '\n' ' ')
n_tlmpi=0
n_total=0
for f in "$work"/vg.*.log; do
    [ "${TLMPI_LEAK_VERBOSE:-0}" = 1 ] && cat "$f"
    # one line per definitely-lost record: "<bytes> <first non-allocator frame>"
    awk -v files="$files" '
        BEGIN { n = split(files, fa, " "); for (i = 1; i <= n; i++) own["(" fa[i]] = 1 }
        / are definitely lost in loss record / { inrec = 1; first = ""; bytes = $2; next }
        inrec && /^==[0-9]+== *$/ { print (first == "" ? "?" : first) "\t" bytes; inrec = 0; next }
        inrec && first == "" && / at 0x/ { next }   # the allocator itself
        inrec && first == "" && / by 0x/ {
            if ($0 ~ /: (malloc|calloc|realloc|reallocarray|memalign|posix_memalign|aligned_alloc|strdup|strndup|operator new)/) next
            first = $0
        }
    ' "$f" >"$f.records"
    while IFS='	' read -r frame bytes; do
        n_total=$((n_total + 1))
        t=0
        case "$frame" in *libtlmpi*|*" tlmpi_"*) t=1 ;; esac
        for s in $files; do
            case "$frame" in *"($s:"*) t=1 ;; esac
        done
        if [ $t = 1 ]; then
            n_tlmpi=$((n_tlmpi + 1))
            echo "tlmpi leak ($bytes bytes) in $(basename "$f"): $frame"
        fi
    done <"$f.records"
done
echo "valgrind: $n_total definitely-lost records in all, $n_tlmpi allocated by tlmpi"
if [ $n_tlmpi != 0 ]; then
    for f in "$work"/vg.*.log; do
        grep -A30 "definitely lost in loss record" "$f" | grep -B3 -A27 -E "libtlmpi|$(echo $files | sed 's/ /|/g')" | head -80
    done
    fail "tlmpi leaks memory (details above; full reports: $work/vg.*.log)"
fi
echo "PASS: no definitely-lost block allocated by tlmpi"
