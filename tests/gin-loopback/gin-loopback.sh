#!/bin/sh
# gin-loopback.sh (make check): the loopback NCCL net + GIN plugin alone on the CPU box, two
# processes, no NCCL, no GPU (tests/gin-loopback/ginlb_driver.c says what it checks), then the
# plugin's two mutants, which the driver must catch:
#   TLMPI_GINLB_MUTANT=signal_first  the signal is sent before the data copy -> the ordering check fails
#   TLMPI_GINLB_MUTANT=early_done    test() says done when the put is queued -> the completion check fails
# Skips (77) where the plugin is not built (configure without CUDA or NCCL headers).
b=${top_builddir:-.}
drv=$b/tests/gin-loopback/ginlb_driver
so=$b/tests/gin-loopback/.libs/libnccl-net-tlmpi-loopback.so
if [ ! -x "$drv" ] || [ ! -f "$so" ]; then
    echo "SKIP: the loopback plugin is not built here (it needs the CUDA and NCCL headers)"
    exit 77
fi
log=${TMPDIR:-/tmp}/gin-loopback.$$
trap 'rm -f "$log"' EXIT
"$drv" "$so" >"$log" 2>&1
rc=$?
cat "$log"
if [ $rc = 77 ]; then exit 77; fi
if [ $rc != 0 ] || ! grep -q '^PASS$' "$log"; then
    echo "FAIL: ginlb_driver (exit $rc)"
    exit 1
fi
fails=0
for m in signal_first:ordering early_done:completion; do
    name=${m%%:*}
    want=${m#*:}
    TLMPI_GINLB_MUTANT=$name "$drv" "$so" >"$log" 2>&1
    rc=$?
    line=$(grep '^FAIL rank' "$log" | grep "$want" | head -1)
    if [ $rc = 1 ] && [ -n "$line" ]; then
        echo "PASS: mutant $name caught: $line"
    else
        echo "FAIL: mutant $name not caught by the $want check (exit $rc):"
        cat "$log"
        fails=$((fails + 1))
    fi
done
[ $fails = 0 ] || exit 1
echo "PASS: plugin correct, both mutants caught"
