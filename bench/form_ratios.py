#!/usr/bin/env python3
# form_ratios.py CSV...: every form of a call against its persistent zero-copy form, from node_bench's CSV
# rows of one run (bench/node-bench.sh with BENCH_ARGS="-S persist,graph -F SIZES -G SIZES" under an MPI
# with MPI-4 persistent collectives): per rank count, collective and size, the median us of the blocking
# call, the non-blocking call + wait (section form), the enqueued call and the replayed graph (section
# graph, mixing and no-mixing), each divided by the persistent start + wait of the same run. Prints a
# Markdown table; a ratio above 1.05 is marked.
import csv
import sys

rows = {}
for path in sys.argv[1:]:
    with open(path) as f:
        for r in csv.DictReader(f):
            if r["section"] not in ("form", "graph"):
                continue
            key = (int(r["nranks"]), r["coll"], int(r["bytes"]))
            mode = r["mode"] if r["section"] == "form" else "g-" + r["mode"]
            rows.setdefault(key, {})[mode] = float(r["median_us"])
cols = [("blocking", "blocking"), ("nonblocking", "non-blocking + wait"), ("g-enqueue", "enqueue"),
        ("g-graph-mixing", "graph (mixing)"), ("g-graph-nomixing", "graph (no mixing)")]
print("| ranks | collective | bytes | persistent us | " + " | ".join(c[1] + " / persistent" for c in cols) + " |")
print("| ---: | --- | ---: | ---: |" + " ---: |" * len(cols))
for key in sorted(rows):
    v = rows[key]
    p = v.get("persistent")
    if not p:
        continue
    cells = []
    for m, _ in cols:
        if m in v:
            q = v[m] / p
            cells.append("%.3f%s" % (q, " **>1.05**" if q > 1.05 else ""))
        else:
            cells.append("-")
    print("| %d | %s | %d | %.2f | %s |" % (key[0], key[1], key[2], p, " | ".join(cells)))
