#!/bin/sh
# osu_compare.sh: bench/osu/osu-compare.sh (tlmpi-osu-compare) end to end on the CPU, with stand-ins
# for OSU's three benchmarks that print OSU 7.4's output format (rank 0; one Fail injected in
# node/twoshot at 64 B; for -b the non-blocking ones too, in an OSU build tree): every mode is run with the right environment (TLMPI_TIER, the node tables,
# libtlmpi preloaded into the ranks only), in place as well, the plain MPI is skipped where it is not
# CUDA-aware (never handed device buffers), the merged table has the latencies, speed-ups, empty
# reduce_scatter_block sizes and the failure, the exit status says so, --from-dir gives the same
# table again, an OSU build without CUDA is refused, and the build tree's bench/osu/tlmpi-osu-compare
# wrapper runs before make install. Plots are made too where matplotlib is
# present (SKIP_APT=1: the test never installs anything). Skips (77) without python3 or mpiexec.
set -u
command -v python3 >/dev/null 2>&1 || { echo "SKIP: no python3"; exit 77; }
[ -n "${MPIEXEC:-}" ] || { echo "SKIP: no mpiexec"; exit 77; }
src=${top_srcdir:-.}
lib=$(cd "${top_builddir:-.}" && pwd)/.libs/libtlmpi.so
[ -f "$lib" ] || { echo "FAIL: no $lib"; exit 1; }
t=$(mktemp -d /tmp/tlmpi-osu-test.XXXXXX)
trap 'rm -rf "$t"' EXIT
fail=0
check() { # description, command...
    d=$1; shift
    if "$@"; then echo "ok: $d"; else echo "FAIL: $d"; fail=1; fi
}

mkfake() { # DIR, with_cuda (1/0); FAKE_BENCHES: the benchmarks (default the three; osu_bcast has no -l)
    mkdir -p "$1"
    for b in ${FAKE_BENCHES:-osu_allreduce osu_allgather osu_reduce_scatter_block}; do
        cat >"$1/$b" <<EOF
#!/bin/sh
case " \$* " in *" -h "*)
    echo "Usage: $b [options]"
    [ $2 = 1 ] && echo "  -d, --accelerator  TYPE     use accelerator device buffers, which can be of TYPE cuda"
    [ $b = osu_bcast ] || echo "  -l, --in-place             use MPI_IN_PLACE"
    exit 0 ;;
esac
r=\${OMPI_COMM_WORLD_RANK:-\${PMI_RANK:-0}}
[ "\$r" = 0 ] || exit 0
echo "# OSU MPI-CUDA Fake Latency Test v7.4"
case " \$* " in *" -T mpi_float "*) echo "# Datatype: MPI_FLOAT." ;; *) echo "# Datatype: MPI_CHAR." ;; esac
echo "# Size       Avg Latency(us)        Validation"
mode="\${TLMPI_TIER:-}\${TLMPI_ALLREDUCE_TIERS:-}\${TLMPI_ALLGATHER_TIERS:-}\${TLMPI_REDUCE_SCATTER_BLOCK_TIERS:-}"
case \$mode in auto) lat=10.00 ;; staging) lat=20.00 ;; *) lat=15.00 ;; esac
[ -z "\${LD_PRELOAD:-}" ] && lat=40.00
for s in 4 8 16 64 1024; do
    v=Pass
    [ "\$mode" = node/twoshot ] && [ \$s = 64 ] && v=Fail
    printf '%-10d%18s%18s\n' \$s \$lat \$v
done
echo "fake-env: mode=\$mode preload=\$(case "\${LD_PRELOAD:-}" in *libtlmpi*) echo tlmpi ;; *) echo none ;; esac) args=\$*"
EOF
        chmod +x "$1/$b"
    done
}

mkfake "$t/osu" 1
SKIP_APT=1 bash "$src/bench/osu/osu-compare.sh" -o "$t/out" -n 2 -s 4:1024 -a "-i 5 -x 1" --no-mps \
    "$t/osu" "$lib" >"$t/run.log" 2>&1
rc=$?
cat "$t/run.log"
check "exit status 1 with a validation failure" [ $rc = 1 ]
o=$t/out
for f in osu_allreduce-np2-auto osu_allreduce-np2-staging osu_allreduce-np2-nccl osu_allreduce-np2-node-oneshot \
         osu_allreduce-np2-node-twoshot osu_allgather-np2-node-push osu_allgather-np2-node-pull \
         osu_reduce_scatter_block-np2-node-pull osu_reduce_scatter_block-np2-auto-inplace osu_allreduce-np2-node-ll \
         osu_allgather-np2-node-ll osu_reduce_scatter_block-np2-node-ll; do
    check "ran $f" [ -s "$o/$f.txt" ]
done
check "no plain-MPI run on a non-CUDA-aware MPI" [ ! -e "$o/osu_allreduce-np2-mpi-plain.txt" ]
check "the skip is said" grep -q "not measured (never hand device buffers to it)" "$o/log.txt"
check "auto: TLMPI_TIER=auto, tlmpi preloaded" grep -q "fake-env: mode=auto preload=tlmpi" "$o/osu_allreduce-np2-auto.txt"
check "node/oneshot through the allreduce table" grep -q "mode=node/oneshot preload=tlmpi" "$o/osu_allreduce-np2-node-oneshot.txt"
check "node/pull through the reduce_scatter_block table" grep -q "mode=node/pull " "$o/osu_reduce_scatter_block-np2-node-pull.txt"
check "OSU arguments: -d cuda -c, -T for reductions, sizes, -M" \
    grep -q "args=-d cuda -c -T mpi_float -m 4:1024 -M 4096 -i 5 -x 1" "$o/osu_allreduce-np2-auto.txt"
check "no -T for allgather" grep -q "args=-d cuda -c -m 4:1024" "$o/osu_allgather-np2-auto.txt"
check "in place adds -l" grep -q "args=.* -l -i 5" "$o/osu_allgather-np2-staging-inplace.txt"
md=$o/osu-compare.md
check "table row: latency per mode and speed-ups" \
    grep -qF "| 1024 | 10.00 | 20.00 | 15.00 | 15.00 | 15.00 | 15.00 | 2.00x | 1.50x | 1.50x | 1.50x | 1.50x | pass |" "$md"
check "the failure is in the row" grep -qF "| 64 | 10.00 | 20.00 | 15.00 | 15.00 | 15.00 | 15.00 | 2.00x | 1.50x | 1.50x | 1.50x | 1.50x | node/twoshot Fail |" "$md"
check "validation table counts it" grep -qF "| allreduce | 2 | no | node/twoshot | 5 | 4 | **1** | ok |" "$md"
check "empty reduce_scatter_block size" grep -qF "| 4 | 10.00 | 20.00 | 15.00 | 15.00 | 15.00 | - | - | - | - | pass (empty call: 1 elements for 2 ranks) |" "$md"
check "CSV row with busbw" grep -q ",2,allreduce,0,auto,1024,10.00,Pass,0.1024," "$o/osu-compare.csv"
cp "$o/osu-compare.csv" "$t/first.csv"
SKIP_APT=1 bash "$src/bench/osu/osu-compare.sh" --from-dir "$o" --no-plot >"$t/from.log" 2>&1
check "--from-dir: same exit status" [ $? = 1 ]
check "--from-dir: same CSV" cmp -s "$o/osu-compare.csv" "$t/first.csv"
if SKIP_APT=1 sh "$src/bench/plot.sh" --kind osu -o "$t/plots" --prefix osu "$o/osu-compare.csv" >"$t/plot.log" 2>&1; then
    check "a PNG per collective and variant" [ -s "$t/plots/osu-allreduce.png" -a -s "$t/plots/osu-reduce_scatter_block-inplace.png" ]
else
    echo "note: no plots here ($(tail -1 "$t/plot.log"))"
fi

# large sizes in a second OSU run with their own arguments (-L, -A), appended to the same output
SKIP_APT=1 bash "$src/bench/osu/osu-compare.sh" -o "$t/out3" -n 2 -m auto -s 4:1024 -a "-i 5 -x 1" -L 64 -A "-i 2 -x 1" \
    --no-mps --no-in-place --no-plot "$t/osu" "$lib" >"$t/large.log" 2>&1
check "-L/-A: exit status 0" [ $? = 0 ]
check "-L/-A: the sizes below 64 with -a" grep -q "args=-d cuda -c -T mpi_float -m 4:63 -M 4096 -i 5 -x 1" "$t/out3/osu_allreduce-np2-auto.txt"
check "-L/-A: the sizes from 64 with -A" grep -q "args=-d cuda -c -T mpi_float -m 64:1024 -M 4096 -i 2 -x 1" "$t/out3/osu_allreduce-np2-auto.txt"
check "-L/-A: one merged row per size" grep -qF "| 1024 | 10.00 |" "$t/out3/osu-compare.md"
check "-L/-A: said in the metadata" grep -q "options=.*-i 5 -x 1 (-i 2 -x 1 from 64 bytes)" "$t/out3/meta.txt"

bash "$src/bench/osu/osu-compare.sh" -o "$t/out4" -n 2 -L 4M --no-mps "$t/osu" "$lib" >"$t/badsize.log" 2>&1
check "-L 4M (not bytes) is refused (exit 2) and says why" [ $? = 2 ]
check "... and says why" grep -q "whole numbers of bytes" "$t/badsize.log"

# the siblings (-b siblings): osu_allgatherv, osu_reduce_scatter, osu_bcast (no -l: out of place
# only), osu_reduce, osu_alltoall; node mode is TLMPI_TIER=node (no node algorithms of their own)
FAKE_BENCHES="osu_allgatherv osu_reduce_scatter osu_bcast osu_reduce osu_alltoall" mkfake "$t/sib" 1
SKIP_APT=1 bash "$src/bench/osu/osu-compare.sh" -o "$t/outs" -n 2 -m auto,staging,node -b siblings -s 4:1024 \
    -a "-i 5 -x 1" --no-mps --no-plot "$t/sib" "$lib" >"$t/sib.log" 2>&1
check "-b siblings: exit status 0" [ $? = 0 ]
for f in osu_allgatherv-np2-auto osu_allgatherv-np2-staging-inplace osu_reduce_scatter-np2-node osu_bcast-np2-staging \
         osu_reduce-np2-auto-inplace osu_alltoall-np2-node-inplace; do
    check "-b siblings: ran $f" [ -s "$t/outs/$f.txt" ]
done
check "-b siblings: osu_bcast out of place only" [ ! -e "$t/outs/osu_bcast-np2-auto-inplace.txt" ]
check "-b siblings: ... and said so" grep -q "osu_bcast has no -l" "$t/outs/log.txt"
check "-b siblings: node mode is TLMPI_TIER=node" grep -q "fake-env: mode=node preload=tlmpi" "$t/outs/osu_reduce-np2-node.txt"
check "-b siblings: -T for osu_reduce" grep -q "args=-d cuda -c -T mpi_float -m 4:1024" "$t/outs/osu_reduce-np2-auto.txt"
check "-b siblings: no -T for osu_alltoall" grep -q "args=-d cuda -c -m 4:1024" "$t/outs/osu_alltoall-np2-auto.txt"
check "-b siblings: a table per collective" grep -qF "## bcast, 2 ranks" "$t/outs/osu-compare.md"
check "-b siblings: empty reduce_scatter size" grep -qF "pass (empty call: 1 elements for 2 ranks)" "$t/outs/osu-compare.md"
# -b with benchmark names: those only
SKIP_APT=1 bash "$src/bench/osu/osu-compare.sh" -o "$t/outn" -n 2 -m auto -b osu_alltoall,osu_reduce -s 4:1024 \
    -a "-i 5 -x 1" --no-in-place --no-mps --no-plot "$t/sib" "$lib" >"$t/names.log" 2>&1
check "-b names: exit status 0" [ $? = 0 ]
check "-b names: osu_alltoall and osu_reduce ran" [ -s "$t/outn/osu_alltoall-np2-auto.txt" -a -s "$t/outn/osu_reduce-np2-auto.txt" ]
check "-b names: nothing else" [ ! -e "$t/outn/osu_allgatherv-np2-auto.txt" -a ! -e "$t/outn/osu_bcast-np2-auto.txt" ]
bash "$src/bench/osu/osu-compare.sh" -o "$t/outb" -n 2 -b osu_all-to-all --no-mps "$t/sib" "$lib" >"$t/badname.log" 2>&1
check "-b osu_all-to-all is refused (exit 2)" [ $? = 2 ]
check "... and says why" grep -q "not an OSU benchmark name" "$t/badname.log"

# the non-blocking benchmarks (-b nonblocking / all) in an OSU build tree: c/mpi/collective/non_blocking
mkfake_nbc() { # DIR
    mkdir -p "$1"
    for b in osu_iallreduce osu_iallgather osu_ireduce_scatter_block; do
        cat >"$1/$b" <<EOF
#!/bin/sh
case " \$* " in *" -h "*)
    echo "Usage: $b [options]"
    echo "  -d, --accelerator  TYPE     use accelerator device buffers, which can be of TYPE cuda"
    echo "  -l, --in-place             use MPI_IN_PLACE"
    exit 0 ;;
esac
r=\${OMPI_COMM_WORLD_RANK:-\${PMI_RANK:-0}}
[ "\$r" = 0 ] || exit 0
echo "# OSU MPI-CUDA Non-blocking Fake Latency Test v7.4"
echo "# Overall = Coll. Init + Compute + MPI_Test + MPI_Wait"
echo
case " \$* " in *" -T mpi_float "*) echo "# Datatype: MPI_FLOAT." ;; *) echo "# Datatype: MPI_CHAR." ;; esac
echo "# Size           Overall(us)       Compute(us)    Pure Comm.(us)        Overlap(%)      Validation"
case \${TLMPI_TIER:-} in auto) l=10.00 c=5.00 p=8.00 o=50.00 ;; *) l=20.00 c=10.00 p=16.00 o=25.00 ;; esac
for s in 4 8 16 64 1024; do
    printf '%-10d%18s%18s%18s%18s%18s\n' \$s \$l \$c \$p \$o Pass
done
echo "fake-env: nbc mode=\${TLMPI_TIER:-} preload=\$(case "\${LD_PRELOAD:-}" in *libtlmpi*) echo tlmpi ;; *) echo none ;; esac) args=\$*"
EOF
        chmod +x "$1/$b"
    done
}
mkfake "$t/tree/c/mpi/collective/blocking" 1
mkfake_nbc "$t/tree/c/mpi/collective/non_blocking"
SKIP_APT=1 bash "$src/bench/osu/osu-compare.sh" -o "$t/out5" -n 2 -m auto,staging -b nonblocking -s 4:1024 -a "-i 5 -x 1" \
    --no-mps --no-in-place --no-plot "$t/tree" "$lib" >"$t/nbc.log" 2>&1
check "-b nonblocking: exit status 0" [ $? = 0 ]
o5=$t/out5
check "-b nonblocking: osu_iallreduce auto ran, found in non_blocking" grep -q "fake-env: nbc mode=auto preload=tlmpi" "$o5/osu_iallreduce-np2-auto.txt"
check "-b nonblocking: osu_ireduce_scatter_block staging ran" [ -s "$o5/osu_ireduce_scatter_block-np2-staging.txt" ]
check "-b nonblocking: no blocking run" [ ! -e "$o5/osu_allreduce-np2-auto.txt" ]
check "-b nonblocking: -T mpi_float for the reductions" grep -q "args=-d cuda -c -T mpi_float -m 4:1024 -M 4096 -i 5 -x 1" "$o5/osu_iallreduce-np2-auto.txt"
check "-b nonblocking: no -T for iallgather" grep -q "args=-d cuda -c -m 4:1024" "$o5/osu_iallgather-np2-staging.txt"
check "-b nonblocking: overall, speed-up, pure communication and overlap per mode in the table" \
    grep -qF "| 1024 | 10.00 | 20.00 | 2.00x | 8.00 | 50.0 | 16.00 | 25.0 | pass |" "$o5/osu-compare.md"
check "-b nonblocking: the table's header names them" \
    grep -qF "| bytes | auto overall us | staging overall us | auto vs staging | auto pure comm. us | auto overlap % | staging pure comm. us | staging overlap % | validation |" "$o5/osu-compare.md"
check "-b nonblocking: CSV row with compute, pure communication and overlap" \
    grep -q ",2,iallreduce,0,auto,1024,10.00,Pass,0.1024,,5.00,8.00,50.00" "$o5/osu-compare.csv"
check "-b nonblocking: empty ireduce_scatter_block size" grep -qF "pass (empty call: 1 elements for 2 ranks)" "$o5/osu-compare.md"
SKIP_APT=1 bash "$src/bench/osu/osu-compare.sh" -o "$t/out6" -n 2 -m auto -b all -s 4:1024 -a "-i 5 -x 1" \
    --no-mps --no-in-place --no-plot "$t/tree" "$lib" >"$t/all.log" 2>&1
check "-b all: exit status 0" [ $? = 0 ]
check "-b all: blocking and non-blocking runs" [ -s "$t/out6/osu_allgather-np2-auto.txt" -a -s "$t/out6/osu_iallgather-np2-auto.txt" ]
check "-b all: a blocking row keeps its columns" grep -qF "| 1024 | 10.00 | pass |" "$t/out6/osu-compare.md"
bash "$src/bench/osu/osu-compare.sh" -o "$t/out7" -n 2 -b sometimes --no-mps "$t/tree" "$lib" >"$t/badb.log" 2>&1
check "-b with another word is refused (exit 2)" [ $? = 2 ]
bash "$src/bench/osu/osu-compare.sh" -o "$t/out8" -n 2 -b nonblocking --no-mps "$t/osu" "$lib" >"$t/nonbc.log" 2>&1
check "-b nonblocking without the non-blocking benchmarks is refused (exit 2)" [ $? = 2 ]

mkfake "$t/osu-nocuda" 0
bash "$src/bench/osu/osu-compare.sh" -o "$t/out2" -n 2 --no-mps "$t/osu-nocuda" "$lib" >"$t/nocuda.log" 2>&1
check "an OSU build without CUDA is refused (exit 2)" [ $? = 2 ]
check "... and says why" grep -q "was not built with CUDA" "$t/nocuda.log"
check "... before running anything" [ ! -e "$t/out2/osu_allreduce-np2-auto.txt" ]

# the build tree's wrapper works before make install: the source tree's script, this build's library
# (no TLMPI argument: it must find .libs/libtlmpi.so itself and get as far as the OSU build's check)
w=$(cd "${top_builddir:-.}" && pwd)/bench/osu/tlmpi-osu-compare
if [ -x "$w" ]; then
    "$w" -o "$t/out9" -n 2 --no-mps "$t/osu-nocuda" >"$t/wrap.log" 2>&1
    check "build tree's tlmpi-osu-compare runs before make install (exit 2 on the OSU build without CUDA)" [ $? = 2 ]
    check "... having found the script and libtlmpi.so" grep -q "was not built with CUDA" "$t/wrap.log"
    "$w" -h >"$t/wraph.log" 2>&1
    check "build tree's tlmpi-osu-compare -h: exit 0 with the usage" grep -q "tlmpi-osu-compare \[options\] OSU_DIR" "$t/wraph.log"
fi
exit $fail
