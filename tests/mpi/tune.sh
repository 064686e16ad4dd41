#!/bin/sh
# tune.sh [BUILD_DIR]: tests/mpi/mpi_tune (tools/tlmpi_tune.c linked with the CPU fakes) with 2 ranks
# on a few small sizes, timing the blocking calls and (-F enqueue) the stream-ordered ones: it must
# write a tuning file of this library's generation and layout, and a
# plan built with that file must say "(tuned)" for each collective the file names; a file of
# another generation must be ignored with one warning per rank, and one without this layout with
# an info line and no "(tuned)"; the real tools/tlmpi_tune -c reads a file without a GPU too, and
# its -h names -c FILE. Exit 77 where mpi_tune is not built.
here=$(cd "$(dirname "$0")" && pwd)
srcdir=${top_srcdir:-$here/../..}
builddir=${1:-${top_builddir:-.}}
builddir=$(cd "$builddir" && pwd)
MPIEXEC=${MPIEXEC:-mpiexec}
export MPIEXEC
prog=$builddir/tests/mpi/mpi_tune
if [ ! -x "$prog" ]; then
    echo "SKIP: $prog not built (needs CUDA headers at configure time)"
    exit 77
fi
work=$builddir/tests/mpi/work-tune
rm -rf "$work"
mkdir -p "$work"
fail=0
bad() { echo "FAIL: $*"; fail=1; }
launch() { timeout -k 10 240 sh "$srcdir/tests/launch.sh" --np 2 --env TLMPI_TIMEOUT=60 "$@"; }

# 1. tune: the file, with this generation and layout
launch -- "$prog" -o "$work/t.txt" -s 1k,64k -p 2 -t 0.005 -k 0,4 >"$work/tune.log" 2>&1 || bad "tlmpi_tune exited $? ($work/tune.log)"
grep -q '^tlmpi-tuning 1$' "$work/t.txt" 2>/dev/null || bad "no tuning file header in $work/t.txt"
grep -q '^generation tlmpi-' "$work/t.txt" 2>/dev/null || bad "no generation line"
grep -q '^layout nodes=1 ranks_per_node=2 gpu=' "$work/t.txt" 2>/dev/null || bad "no layout line for 1 node x 2"
grep -q '^| allreduce | 1024 |' "$work/tune.log" || bad "no allreduce row in the tuner's table"
# 64 KiB is above the LL kernels' limit: ll's two knobs are not candidates there (10 at 1 KiB, 8 at 64 KiB)
grep -q '^| allreduce | 1024 | .* | [0-9]*/10 |$' "$work/tune.log" || bad "the 1 KiB allreduce row has not 10 candidates"
grep -q '^| allreduce | 65536 | .* | [0-9]*/8 |$' "$work/tune.log" ||
    bad "the 64 KiB allreduce row has not 8 candidates (ll above its limit left out)"
# 2. a file naming every collective (the tuner's own may keep the defaults: ties): the plan uses it
{ sed -n '1,/^layout/p' "$work/t.txt"; echo "allreduce staging:4k,nccl"; echo "allgather nccl"; echo "reduce_scatter_block staging"; } >"$work/f.txt"
launch --env TLMPI_LOG_FILE="$work/f.%r.log" -- "$prog" -c "$work/f.txt" >"$work/f.out" 2>&1 || bad "check run exited $?"
for c in allgather reduce_scatter_block allreduce; do
    grep -q "$c (tuned):" "$work/f.out" || bad "the plan does not say '$c (tuned)' ($work/f.out)"
done
grep -q 'allreduce (tuned): staging<=4096 nccl' "$work/f.out" || bad "the allreduce table is not the file's"
# 3. another generation: ignored, one warning per rank
sed 's/^generation .*/generation tlmpi-0.0.0 other/' "$work/f.txt" >"$work/g.txt"
launch --env TLMPI_LOG_FILE="$work/g.%r.log" -- "$prog" -c "$work/g.txt" >"$work/g.out" 2>&1 || bad "generation run exited $?"
grep -q '(tuned)' "$work/g.out" && bad "a file of another generation was used"
for r in 0 1; do
    n=$(grep -c 'TLMPI_TUNING_FILE.*measured with' "$work/g.$r.log" 2>/dev/null)
    [ "$n" = 1 ] || bad "rank $r: $n generation warnings, expected 1"
done
# 4. another layout: not used, an info line
sed 's/^layout nodes=1 ranks_per_node=2/layout nodes=2 ranks_per_node=4/' "$work/f.txt" >"$work/l.txt"
launch --env TLMPI_LOG_LEVEL=info --env TLMPI_LOG_FILE="$work/l.%r.log" -- "$prog" -c "$work/l.txt" >"$work/l.out" 2>&1 || bad "layout run exited $?"
grep -q '(tuned)' "$work/l.out" && bad "a file without this layout was used"
grep -q 'has no section for nodes=1 ranks_per_node=2' "$work/l.0.log" || bad "no info line about the missing layout"
# 5. -F enqueue: the stream-ordered entry points timed; only tiers that run stream-ordered are candidates
# (node's three allreduce algorithms x 2 knobs and nccl: 7, no hier or staging); on the fakes the node
# kernels do not launch, so the default (auto: node) fails its check and nccl, the one valid
# candidate, wins every size; the file's comment names the form
launch -- "$prog" -o "$work/e.txt" -s 1k,64k -p 2 -t 0.005 -k 0,4 -F enqueue >"$work/enq.log" 2>&1 || bad "tlmpi_tune -F enqueue exited $? ($work/enq.log)"
grep -q '^# written by tlmpi_tune: .*form enqueue$' "$work/e.txt" 2>/dev/null || bad "-F enqueue: the file does not name the form"
grep -q '^| allreduce | 1024 | - | .* | nccl (the default failed its check) | - | 1/7 |$' "$work/enq.log" ||
    bad "-F enqueue: the allreduce row is not nccl of 7 candidates ($work/enq.log)"
grep -q '^allgather nccl$' "$work/e.txt" 2>/dev/null || bad "-F enqueue: no 'allgather nccl' in $work/e.txt"
grep -q '^# written by tlmpi_tune: .*form blocking$' "$work/t.txt" 2>/dev/null || bad "the blocking file does not name its form"
launch -- "$prog" -F graph >"$work/badf.log" 2>&1 && bad "-F graph (not a form) was accepted"
# 5b. -T, the least gain that replaces the default: at 100 no valid default is ever replaced (the
# blocking form: every row a tie or the default, no collective in the file, the header says 100%);
# where the default fails its check (-F enqueue) the best valid candidate still wins; a bad -T exits
launch -- "$prog" -o "$work/t100.txt" -s 1k -C allreduce -p 1 -t 0.005 -k 0 -T 100 >"$work/t100.log" 2>&1 || bad "tlmpi_tune -T 100 exited $? ($work/t100.log)"
grep -q '^# written by tlmpi_tune: .*tie under 100%, form blocking$' "$work/t100.txt" 2>/dev/null || bad "-T 100: the file does not say 'tie under 100%'"
grep -q '^allreduce ' "$work/t100.txt" && bad "-T 100: a candidate replaced the default ($work/t100.txt)"
grep -q '^| allreduce | 1024 | [0-9.]* | .* | auto (\(tie: under 100%\|the default was fastest\)' "$work/t100.log" ||
    bad "-T 100: the allreduce row is not the default's ($work/t100.log)"
launch -- "$prog" -o "$work/e100.txt" -s 1k -C allreduce -p 1 -t 0.005 -k 0 -F enqueue -T 100 >"$work/e100.log" 2>&1 || bad "tlmpi_tune -F enqueue -T 100 exited $?"
grep -q '^allreduce nccl$' "$work/e100.txt" 2>/dev/null || bad "-F enqueue -T 100: the failing default was kept ($work/e100.txt)"
launch -- "$prog" -T 101 >"$work/badt.log" 2>&1 && bad "-T 101 was accepted"
launch -- "$prog" -T x >"$work/badt.log" 2>&1 && bad "-T x was accepted"
# 6. the real tools/tlmpi_tune (the CUDA runtime of the system, not the fakes) reads a file with -c
# on any machine, with or without a GPU (without one it measures nothing and exits 77, but -c needs none)
tool=$builddir/tools/tlmpi_tune
if [ -x "$tool" ]; then
    launch -- "$tool" -c "$work/f.txt" >"$work/c.out" 2>&1 || bad "tools/tlmpi_tune -c exited $? ($work/c.out)"
    grep -q "^tlmpi_tune: plan with $work/f.txt:" "$work/c.out" || bad "tools/tlmpi_tune -c printed no plan ($work/c.out)"
    launch -- "$tool" -h >"$work/h.out" 2>&1 || bad "tools/tlmpi_tune -h exited $?"
    grep -q -- '-c FILE' "$work/h.out" || bad "tools/tlmpi_tune -h does not mention -c FILE"
fi
if [ $fail = 0 ]; then
    echo "tune: PASS ($(grep -c '^| ' "$work/tune.log") table rows; file: $(grep -v '^#' "$work/t.txt" | wc -l) lines)"
    exit 0
fi
exit 1
