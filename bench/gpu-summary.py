#!/usr/bin/env python3
"""bench/gpu-summary.py RESULTS.csv SUMMARY.md [PROBLEMS.txt]

Tables for docs/perf/gpu.md from tlmpi_bench CSV rows (as written by bench/run-gpu.sh): copy rates,
per rank count latency (path that served) and bandwidth per mode, tlmpi's NCCL tier against raw
NCCL, auto against the staging tier, and the staging tier against the measured pinned copy rates.
Rows are grouped by rank count; a CSV must come from one configuration (one run-gpu.sh run).
"""
import csv, sys, collections
src, dst = sys.argv[1], sys.argv[2]
probs = sys.argv[3] if len(sys.argv) > 3 else None
try:
    rows = list(csv.DictReader(open(src)))
except OSError:
    rows = []
out = []
def p(s=""):
    out.append(s)
def human(b):
    b = int(b)
    for u, n in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= n and b % n == 0:
            return f"{b // n} {u}"
    return f"{b} B"
if not rows:
    p("No rows were measured: see log.txt.")
else:
    r0 = rows[0]
    p(f"Measured {r0['date'][:10]} on {r0['host']} ({r0['gpu']}), dtype {rows[-1]['dtype']}.")
    gens = sorted({r["generation"] for r in rows})
    p(f"{len(gens)} generations; versions/knobs: `{'/'.join(r0['generation'].split('/')[4:-1])}`")
    p()
    # copy rates
    cp = [r for r in rows if r["coll"].startswith("copy_")]
    copyrate = {}
    if cp:
        p("### Host<->device copy rates (GB/s; all ranks copying at once)")
        p()
        p("| ranks | kind | memory | " + " | ".join(human(b) for b in sorted({int(r['bytes']) for r in cp})) + " |")
        sizes = sorted({int(r['bytes']) for r in cp})
        p("|---|---|---|" + "---|" * len(sizes))
        keys = collections.OrderedDict()
        for r in cp:
            keys.setdefault((r["nranks"], r["coll"], r["mode"]), {})[int(r["bytes"])] = float(r["algbw_GBps"])
            copyrate[(r["nranks"], r["coll"], r["mode"], int(r["bytes"]))] = float(r["algbw_GBps"])
        for (n, c, m), v in keys.items():
            p(f"| {n} | {c[5:]} | {m} | " + " | ".join(f"{v.get(s, float('nan')):.2f}" for s in sizes) + " |")
        p()
    coll_rows = [r for r in rows if not r["coll"].startswith("copy_")]
    by = collections.defaultdict(dict)
    for r in coll_rows:
        by[(int(r["nranks"]), r["coll"], int(r["bytes"]))][r["mode"]] = r
    for n in sorted({k[0] for k in by}):
        shared = any("/gpus=1/" in r["generation"] for k, v in by.items() if k[0] == n for r in v.values()) and n > 1
        bwname = "busbw" if n > 1 else "algbw"
        p(f"### {n} rank{'s' if n > 1 else ''}" + (" on one GPU: NCCL over loopback sockets" if shared else ""))
        p()
        modes = [m for m in ("auto", "nccl", "staging", "mpi", "raw-nccl") if any(m in v for k, v in by.items() if k[0] == n)]
        p(f"Each cell: latency avg us (path that served) {bwname} GB/s; medians of the repetitions."
          + (" With 1 rank busbw is 0 by definition, so algbw is shown." if n == 1 else ""))
        # measurements only: the one promise of the project with a target is the host pass-through
        # (bench/passthrough, bench/callgrind.sh); these columns say what was measured, not pass/fail
        p("Measurements, not pass/fail: 'nccl tier - raw NCCL' is what tlmpi's NCCL tier adds over raw NCCL; "
          "'auto speed-up vs staging' is staging's time over auto's (above 1: auto is faster)."
          + (" Two ranks on one GPU reach each other through NCCL's socket transport on loopback." if shared else ""))
        p()
        if any(r.get("d_raw_us") for k, v in by.items() if k[0] == n for r in v.values()):
            p("nccl tier - raw NCCL: median over the repetitions of the paired difference (nccl mode minus raw NCCL in the same repetition, mode order alternating), with its 95% confidence interval.")
            p()
        p("| coll | size | " + " | ".join(modes) + " | nccl tier - raw NCCL | auto speed-up vs staging |")
        p("|---|---|" + "---|" * len(modes) + "---|---|")
        for (nn, c, b), v in sorted(by.items()):
            if nn != n:
                continue
            cells = []
            for m in modes:
                r = v.get(m)
                if not r:
                    cells.append("-")
                    continue
                bw = float(r[f"{bwname}_GBps"])
                flag = "" if r["valid"] in ("pass", "-") else f" **{r['valid']}**"
                cells.append(f"{float(r['avg_us']):.1f} ({r['path_served']}) {bw:.2f}{flag}")
            ov = sp = "-"
            if "nccl" in v and "raw-nccl" in v:
                t, t0 = float(v["nccl"]["avg_us"]), float(v["raw-nccl"]["avg_us"])
                d = t - t0
                ci = ""
                if v["nccl"].get("d_raw_us"):
                    # paired: median over repetitions of (nccl - raw NCCL in the same repetition)
                    d = float(v["nccl"]["d_raw_us"])
                    ci = f" [{float(v['nccl']['d_raw_lo_us']):+.2f}, {float(v['nccl']['d_raw_hi_us']):+.2f}]"
                served = v["nccl"]["path_served"]
                ok = ""
                if served != "nccl" and not shared:
                    ok = f" (nccl mode served by {served}: no NCCL-tier figure)"
                ov = (f"{d:+.2f} us{ci} ({100 * d / t0:+.1f}%){ok}" if ci else f"{d:+.1f} us ({100 * d / t0:+.1f}%){ok}")
            if "auto" in v and "staging" in v:
                s = float(v["staging"]["avg_us"]) / float(v["auto"]["avg_us"])
                tgt = ""
                if v["auto"]["path_served"] == v["staging"]["path_served"]:
                    tgt += f" (auto served by {v['auto']['path_served']})"
                sp = f"{s:.1f}x{tgt}"
            p(f"| {c} | {human(b)} | " + " | ".join(cells) + f" | {ov} | {sp} |")
        p()
        # staging tier against the copy rate
        st = [(k, v["staging"]) for k, v in sorted(by.items()) if k[0] == n and "staging" in v and k[2] >= (1 << 20)]
        if st and copyrate:
            p(f"Staging tier vs measured pinned copies ({n} rank(s)): copy-bound time = D2H of the input + H2D of the output at the measured pinned rates, serial; 'overlapped' = the larger of the two.")
            p()
            p("| coll | size | staging us | copy-bound serial us | overlapped us | staging / serial |")
            p("|---|---|---|---|---|---|")
            for (nn, c, b), r in st:
                d2h = copyrate.get((str(n), "copy_d2h", "pinned", b))
                h2d = copyrate.get((str(n), "copy_h2d", "pinned", b))
                if not d2h or not h2d:
                    continue
                sin = b if c != "allgather" else b // n
                sout = b if c != "reduce_scatter" else b // n
                t_d2h, t_h2d = sin / d2h / 1e3, sout / h2d / 1e3
                ser, ovl = t_d2h + t_h2d, max(t_d2h, t_h2d)
                t = float(r["avg_us"])
                p(f"| {c} | {human(b)} | {t:.1f} | {ser:.1f} | {ovl:.1f} | {t / ser:.2f} |")
            p()
bad = [r for r in rows if r["valid"] not in ("pass", "-")]
p(f"Validation: {len(rows) - len(bad)} rows pass or unchecked, {len(bad)} failed.")
pr = open(probs).read().strip() if probs else ""
if pr:
    p()
    p("Problems seen in log.txt (first lines):")
    p("```")
    p(pr)
    p("```")
open(dst, "w").write("\n".join(out) + "\n")
