#!/bin/sh
# Leak check: mpi_churn with 50 cycles (dup/split/use/free, some communicators never freed) on
# 2 ranks under valgrind --leak-check=full. MPI libraries and their transports (UCX, PMIx, hwloc)
# leak on their own, so valgrind's exit code is not used; instead each "definitely lost" record
# is attributed to tlmpi when the first frame after the allocator (malloc, calloc, realloc,
# strdup, ...) is in tlmpi: a frame "(in .../libtlmpi.so...)" or one whose source file is one of
# tlmpi's (src/*/*.c, cuda/*.cu). Any such record fails the test. A leak that MPI makes while tlmpi
# calls it (tlmpi -> PMPI_Comm_split -> leak inside the MPI) is not tlmpi's and is not counted.
# Skipped without valgrind. TLMPI_LEAK_VERBOSE=1 (make check-leaks) prints valgrind's reports;
# TLMPI_LEAK_PARSE_ONLY=DIR only classifies the records of DIR/vg.*.log (to test this script). The
# attribution first checks itself on two records written here (one tlmpi's, one the MPI's).
name=leak_churn
. "$top_srcdir/tests/interpose/common.sh"

vg=${VALGRIND:-}
[ -n "$vg" ] || vg=$(command -v valgrind 2>/dev/null)
[ -n "$vg" ] || skip "valgrind not found"
prog=$(cd "$top_builddir" && pwd)/tests/mpi/mpi_churn
[ -x "$prog" ] || fail "$prog is not built"

# tlmpi's source files (src/*/ and cuda/), as valgrind prints them in frames: "(comm.c:52)"
files=$(cd "$top_srcdir" && find src cuda -name '*.c' -o -name '*.cu' 2>/dev/null | sed 's|.*/||' | sort -u | tr '\n' ' ')
[ -n "$files" ] || fail "no tlmpi source files found under $top_srcdir/src and cuda"

# classify DIR: the definitely-lost records of DIR/vg.*.log; sets n_total and n_tlmpi and names each
# record allocated by tlmpi
classify() {
    n_tlmpi=0
    n_total=0
    for f in "$1"/vg.*.log; do
        [ -e "$f" ] || continue
        [ "${TLMPI_LEAK_VERBOSE:-0}" = 1 ] && cat "$f"
        # one line per definitely-lost record: "<first non-allocator frame>\t<bytes>"
        awk '
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
}

# the attribution's own check: a record whose first frame is a static function of a tlmpi source file
# (no tlmpi_ prefix, no library path: what valgrind prints with debug info) is tlmpi's; one in the MPI's
# library is not
mkdir -p "$work/selftest"
cat >"$work/selftest/vg.1.log" <<'EOV'
==1== 64 bytes in 1 blocks are definitely lost in loss record 1 of 2
==1==    at 0x4848899: malloc (vg_replace_malloc.c:381)
==1==    by 0x5A1B2C3: node_memo (node.c:1230)
==1== 
==1== 32 bytes in 1 blocks are definitely lost in loss record 2 of 2
==1==    at 0x4848899: malloc (vg_replace_malloc.c:381)
==1==    by 0x6A1B2C3: ??? (in /usr/lib/x86_64-linux-gnu/libmpich.so.12.3.0)
==1== 
EOV
classify "$work/selftest" >/dev/null
[ "$n_total:$n_tlmpi" = 2:1 ] ||
    fail "the attribution's self-check: $n_total records, $n_tlmpi counted as tlmpi's (expected 2, 1)"

if [ -n "${TLMPI_LEAK_PARSE_ONLY:-}" ]; then
    work=$TLMPI_LEAK_PARSE_ONLY # only the attribution below: a directory of vg.*.log files
else
    launch --np 2 "$vg" --leak-check=full --show-leak-kinds=definite --errors-for-leak-kinds=definite \
        --num-callers=24 --log-file="$work/vg.%p.log" "$prog" 50 >"$work/run.log" 2>&1
    rc=$?
    cat "$work/run.log"
    [ $rc = 0 ] || fail "mpi_churn under valgrind failed (rc $rc)"
fi

classify "$work"
echo "valgrind: $n_total definitely-lost records in all, $n_tlmpi allocated by tlmpi"
if [ $n_tlmpi != 0 ]; then
    for f in "$work"/vg.*.log; do
        grep -A30 "definitely lost in loss record" "$f" | grep -B3 -A27 -E "libtlmpi|$(echo $files | sed 's/ /|/g')" | head -80
    done
    fail "tlmpi leaks memory (details above; full reports: $work/vg.*.log)"
fi
echo "PASS: no definitely-lost block allocated by tlmpi"
