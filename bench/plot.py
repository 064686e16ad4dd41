#!/usr/bin/env python3
"""plot.py: PNG plots of latency and bus bandwidth against message size, one line per mode.

    python3 bench/plot.py [--kind auto|bench|node|osu] [-o DIR] [--prefix NAME] [--note TEXT]
                          [--modes LIST] CSV...

Inputs (the kind is recognised from the CSV header unless --kind says it):
  bench  bench/tlmpi_bench CSVs (bench/run-gpu.sh results.csv): one PNG per run and rank count,
         a row of panels per collective (latency, busbw; algbw at 1 rank, where busbw is 0 by
         definition). Columns: docs/perf/gpu.md.
  node   bench/node_bench CSVs (bench/node-bench.sh): the "sweep" section (node vs staging), one PNG
         per rank count, a row per collective. Bytes are the per-rank message (allreduce: the
         vector; allgather: the send block; reduce_scatter_block: the result block).
  osu    the merged CSV of bench/osu/osu-compare.sh (tlmpi-osu-compare): one PNG per collective
         (and per in-place variant), a row per rank count.

Bus bandwidth follows nccl-tests: algbw = S / t with S the whole vector (allreduce), or n times the
per-rank block (allgather, reduce_scatter), and busbw = algbw * 2(n-1)/n (allreduce) or
algbw * (n-1)/n (allgather, reduce_scatter); GB/s = 1e9 B/s. tlmpi_bench CSVs carry algbw and busbw
already (computed that way); for node_bench and OSU they are computed here from the sizes.

A plot never mixes runs: the rows of one figure share the CSV file and, for tlmpi_bench, the
generation string minus its mode/path/algorithm fields (library version, MPI, NCCL, CUDA, GPU count,
knobs), for OSU the merged CSV's "run" column. Two rows of one mode and size in such a group mean
two runs were concatenated: the script stops and says so. The caption names the hardware, the date
and the generation; --note adds what the CSV does not hold (the commit, the command).

Needs matplotlib (Debian: python3-matplotlib; bench/plot.sh installs it when missing).
Prints the path of every PNG it writes.
"""
import argparse
import collections
import csv
import os
import sys
import textwrap

COLL_ORDER = ["allreduce", "allgather", "reduce_scatter", "reduce_scatter_block"]
# colours fixed per mode, so the same mode looks the same in every figure
MODE_COLOR = {
    "auto": "C0", "node": "C0", "nccl": "C1", "raw-nccl": "C2", "staging": "C3", "mpi": "C7",
    "mpi-plain": "C7", "node/oneshot": "C4", "node/twoshot": "C5", "node/push": "C4",
    "node/pull": "C5", "node/ring": "C6", "node/ll": "C8",
}
MODE_ORDER = ["auto", "node", "nccl", "raw-nccl", "staging", "mpi", "mpi-plain"]
# markers and dashes differ too: lines that coincide (auto = staging at 2 ranks, nccl = raw NCCL)
# stay visible
MODE_STYLE = {
    "auto": ("o", "-", 2.4), "node": ("o", "-", 2.4), "nccl": ("s", "--", 1.6), "raw-nccl": ("D", ":", 1.8),
    "staging": ("v", "-", 1.4), "mpi": ("^", "-.", 1.2), "mpi-plain": ("^", "-.", 1.4),
}


class InputError(Exception):
    pass


def human_bytes(b):
    b = int(b)
    for unit, div in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= div and b % div == 0:
            return "%d %s" % (b // div, unit)
    return "%d B" % b


def bus_factor(coll, n):
    if n <= 1:
        return 0.0
    if coll == "allreduce":
        return 2.0 * (n - 1) / n
    return float(n - 1) / n


def nccl_size(coll, per_rank_bytes, n):
    """NCCL's S from a per-rank message size (node_bench's and tlmpi's counters' convention)."""
    return per_rank_bytes if coll == "allreduce" else per_rank_bytes * n


def detect_kind(header):
    if header and header[0] == "generation":
        return "bench"
    if header and header[0] == "section":
        return "node"
    if header and header[0] == "run" and "latency_us" in header:
        return "osu"
    raise InputError("unknown CSV header: %s" % ",".join(header[:6]))


def read_csv(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
        if not rows:
            raise InputError("%s: no rows" % path)
        return rows


def mode_key(m):
    base = m.split("/")[0]
    return (MODE_ORDER.index(m) if m in MODE_ORDER else
            (MODE_ORDER.index(base) + 0.5 if base in MODE_ORDER else len(MODE_ORDER)), m)


def coll_key(c):
    return COLL_ORDER.index(c) if c in COLL_ORDER else len(COLL_ORDER)


# ------------------------------------------------------------------ grouping per kind

def gen_fields(gen):
    """tlmpi-<version>/<mode>/<path>/<algorithm>/<mpi>/<nccl>/<cuda>/gpus=<G>/<knobs>/#<hash>"""
    body, _, h = gen.rpartition("/#")
    parts = body.split("/")
    if len(parts) < 9 or not parts[0].startswith("tlmpi-"):
        raise InputError("generation string not understood: %.80s" % gen)
    run = "/".join([parts[0]] + parts[4:])  # everything but mode, path, algorithm (and the hash)
    return run, parts, h


def groups_bench(path, rows, modes):
    """(caption facts, panels) per (run key, nranks, dtype); one figure each."""
    out = collections.OrderedDict()
    for r in rows:
        if r["coll"].startswith("copy_"):
            continue
        if modes and r["mode"] not in modes:
            continue
        run, parts, h = gen_fields(r["generation"])
        key = (run, int(r["nranks"]), r["dtype"])
        g = out.setdefault(key, {"rows": [], "hashes": set(), "dates": [], "host": set(), "gpu": set()})
        g["rows"].append(r)
        g["hashes"].add(h)
        g["dates"].append(r["date"])
        g["host"].add(r["host"])
        g["gpu"].add(r["gpu"])
    figs = []
    for (run, n, dtype), g in out.items():
        panels = collections.OrderedDict()
        seen = {}
        for r in g["rows"]:
            k = (r["coll"], r["mode"], int(r["bytes"]))
            if k in seen:
                raise InputError("%s: two rows for %s %s %s B at %d ranks in one run (%s): more than one run in "
                                 "this file; split it" % (path, r["coll"], r["mode"], r["bytes"], n, run[:60]))
            seen[k] = r
            t = float(r["avg_us"])
            # from bytes and avg_us (the CSV's GB/s columns are rounded to 4 decimals: 0 at 8 B)
            algbw = int(r["bytes"]) / (t * 1e-6) / 1e9 if t > 0 else 0.0
            bw = algbw if n == 1 else algbw * bus_factor(r["coll"], n)
            pts = panels.setdefault(r["coll"], collections.OrderedDict()).setdefault(r["mode"], [])
            pts.append({"bytes": int(r["bytes"]), "lat": t, "bw": bw, "valid": r["valid"],
                        "path": r["path_served"]})
        parts = run.split("/")
        knobs = parts[-1]
        date0, date1 = min(g["dates"]), max(g["dates"])
        facts = [
            "%s on host %s, %d rank%s, %s; measured %s .. %s" % (
                "/".join(sorted(g["gpu"])), "/".join(sorted(g["host"])), n, "" if n == 1 else "s", dtype,
                date0.replace("T", " "), date1.replace("T", " ")),
            "generation: %s (mode/path/algorithm per line; %d generation hashes: %s)" % (
                "/".join(parts[:-1]), len(g["hashes"]), " ".join(sorted(g["hashes"]))),
            "knobs: %s" % knobs,
            "source: %s (bench/tlmpi_bench); latency = avg_us, median of the repetitions; %s" % (
                os.path.basename(path),
                "algbw (busbw is 0 with 1 rank)" if n == 1 else
                "busbw = algbw x 2(n-1)/n (allreduce) or (n-1)/n (allgather, reduce_scatter), S as in the CSV"),
        ]
        figs.append({"suffix": "np%d" % n + ("" if dtype == "float" else "-" + dtype), "facts": facts,
                     "panels": panels, "row_label": lambda c, n=n: "%s, %d rank%s" % (c, n, "" if n == 1 else "s"),
                     "bw_label": "algbw GB/s" if n == 1 else "busbw GB/s",
                     "multi_run": sum(1 for k in out if k[1:] == (n, dtype)) > 1,
                     "title_n": n})
    return figs


def groups_node(path, rows, modes):
    out = collections.OrderedDict()
    for r in rows:
        if r["section"] != "sweep":
            continue
        if modes and r["mode"] not in modes:
            continue
        out.setdefault(int(r["nranks"]), []).append(r)
    if not out:
        raise InputError("%s: no 'sweep' rows" % path)
    figs = []
    for n, rs in out.items():
        panels = collections.OrderedDict()
        seen = set()
        for r in rs:
            k = (r["coll"], r["mode"], int(r["bytes"]))
            if k in seen:
                raise InputError("%s: two sweep rows for %s %s %s B at %d ranks: more than one run in this "
                                 "file; split it" % (path, r["coll"], r["mode"], r["bytes"], n))
            seen.add(k)
            b = int(r["bytes"])
            t = float(r["median_us"])
            S = nccl_size(r["coll"], b, n)
            bw = S / (t * 1e-6) / 1e9 * bus_factor(r["coll"], n) if t > 0 else 0.0
            pts = panels.setdefault(r["coll"], collections.OrderedDict()).setdefault(r["mode"], [])
            pts.append({"bytes": b, "lat": t, "bw": bw, "valid": r["valid"], "path": r["path"]})
        reps = sorted(set(r["reps"] for r in rs))
        facts = [
            "%d ranks; source: %s (bench/node_bench, section sweep: TLMPI_TIER=node, its own algorithm choice, "
            "against TLMPI_TIER=staging, round robin; median over %s repetitions of the mean over ranks)" % (
                n, os.path.basename(path), " or ".join(reps)),
            "size = the per-rank message (allreduce: the vector; allgather: the send block; reduce_scatter_block: "
            "the result block); busbw = S/t x 2(n-1)/n (allreduce, S = size) or (n-1)/n (S = n x size)",
        ]
        figs.append({"suffix": "np%d" % n, "facts": facts, "panels": panels,
                     "row_label": lambda c, n=n: "%s, %d ranks" % (c, n), "bw_label": "busbw GB/s",
                     "multi_run": False, "title_n": n})
    return figs


def groups_osu(path, rows, modes):
    """One figure per (run, collective, in-place); a row of panels per rank count."""
    out = collections.OrderedDict()
    runs = collections.OrderedDict()
    for r in rows:
        if modes and r["mode"] not in modes:
            continue
        runs.setdefault(r["run"], r)
        key = (r["run"], r["coll"], r["inplace"])
        out.setdefault(key, []).append(r)
    figs = []
    for (run, coll, inplace), rs in out.items():
        panels = collections.OrderedDict()
        seen = set()
        for r in sorted(rs, key=lambda r: int(r["nranks"])):
            n = int(r["nranks"])
            k = (n, r["mode"], int(r["bytes"]))
            if k in seen:
                raise InputError("%s: two rows for %s %s %s B at %d ranks in run %s" % (
                    path, coll, r["mode"], r["bytes"], n, run))
            seen.add(k)
            if r.get("note") == "empty":
                continue  # reduce_scatter_block of fewer elements than ranks: an empty call
            t = float(r["latency_us"])
            pts = panels.setdefault("%d" % n, collections.OrderedDict()).setdefault(r["mode"], [])
            pts.append({"bytes": int(r["bytes"]), "lat": t, "bw": float(r["busbw_GBps"] or 0),
                        "valid": r["valid"], "path": ""})
        m = runs[run]
        facts = [
            "%s on host %s; %s; measured %s; MPS %s" % (m["gpu"], m["host"], m["mpi"], m["date"], m["mps"]),
            "generation: tlmpi %s; OSU %s; options: %s" % (m["tlmpi"], m["osu"], m["options"]),
            "source: %s (bench/osu/osu-compare.sh); latency = OSU's Avg Latency(us); busbw = S/t x 2(n-1)/n "
            "(allreduce, S = OSU size) or (n-1)/n (allgather, S = n x size; reduce_scatter_block, S = size)%s" % (
                os.path.basename(path), "; in place (-l)" if inplace == "1" else ""),
        ]
        figs.append({"suffix": coll + ("-inplace" if inplace == "1" else ""), "facts": facts, "panels": panels,
                     "row_label": lambda n, coll=coll: "%s, %s ranks" % (coll, n), "bw_label": "busbw GB/s",
                     "multi_run": len(runs) > 1, "run": run, "title_n": None})
    return figs


# ------------------------------------------------------------------ drawing

def line_label(mode, pts):
    paths = []
    for p in pts:
        if p["path"] and p["path"] != mode and p["path"] not in paths:
            paths.append(p["path"])
    if not paths:
        return mode
    if len(paths) == 1:
        return "%s (%s)" % (mode, paths[0])
    # path changes with the size: name the ranges
    spans = []
    for p in sorted(pts, key=lambda p: p["bytes"]):
        if spans and spans[-1][0] == p["path"]:
            spans[-1][2] = p["bytes"]
        else:
            spans.append([p["path"], p["bytes"], p["bytes"]])
    return "%s (%s)" % (mode, ", ".join("%s %s..%s" % (s[0], human_bytes(s[1]), human_bytes(s[2])) for s in spans))


def draw(fig_spec, title, note, outpath):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, NullFormatter, NullLocator

    panels = fig_spec["panels"]
    rows = sorted(panels.keys(), key=lambda c: (coll_key(c), c.zfill(4)))
    nrow = len(rows)
    facts = list(fig_spec["facts"])
    if note:
        facts.append("note: %s" % note)
    lines = [textwrap.fill(f, 175, subsequent_indent="    ") for f in facts]
    ncap = sum(l.count("\n") + 1 for l in lines) + 1  # + the validation line
    cap_h = 0.16 * ncap + 0.15
    fig_h = 3.4 * nrow + 0.5 + cap_h
    fig, axes = plt.subplots(nrow, 2, figsize=(13, fig_h), squeeze=False)
    all_bytes = sorted({p["bytes"] for r in rows for pts in panels[r].values() for p in pts})
    ticks = [b for b in all_bytes]
    if len(ticks) > 12:  # every other power of 4 or so
        step = (len(ticks) + 11) // 12
        ticks = ticks[::step]
    fails = 0
    total = 0
    for i, row in enumerate(rows):
        for j, what in enumerate(("lat", "bw")):
            ax = axes[i][j]
            for mode in sorted(panels[row].keys(), key=mode_key):
                pts = sorted(panels[row][mode], key=lambda p: p["bytes"])
                xs = [p["bytes"] for p in pts if p[what] > 0]
                ys = [p[what] for p in pts if p[what] > 0]
                if not xs:
                    continue
                mk, ls, lw = MODE_STYLE.get(mode, ("P", "--", 1.4))
                ax.plot(xs, ys, marker=mk, markersize=5 if lw > 2 else 4, linewidth=lw, linestyle=ls,
                        markerfacecolor="none", color=MODE_COLOR.get(mode), label=line_label(mode, pts))
                bad = [p for p in pts if str(p["valid"]).lower() in ("fail", "failed") and p[what] > 0]
                if what == "lat":
                    total += len(pts)
                    fails += len(bad)
                if bad:
                    ax.plot([p["bytes"] for p in bad], [p[what] for p in bad], "x", color="red", markersize=9,
                            markeredgewidth=2, label="validation FAIL" if what == "lat" else None)
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.xaxis.set_major_locator(FixedLocator(ticks))
            ax.xaxis.set_minor_locator(NullLocator())
            ax.xaxis.set_minor_formatter(NullFormatter())
            ax.set_xticks(ticks)
            ax.set_xticklabels([human_bytes(b) for b in ticks], rotation=45, ha="right", fontsize=8)
            # plain numbers on the log y axis, with 2 and 5 labelled inside a decade
            ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: "%g" % v))
            lo, hi = ax.get_ylim()
            if hi / lo < 1e3:
                ax.yaxis.set_minor_locator(LogLocator(base=10, subs=(2.0, 5.0)))
                ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _: "%g" % v))
                ax.tick_params(axis="y", which="minor", labelsize=7)
            ax.grid(True, which="major", alpha=0.35)
            ax.grid(True, which="minor", axis="y", alpha=0.12)
            ax.set_title("%s: %s" % (fig_spec["row_label"](row), "latency" if what == "lat" else
                                     fig_spec["bw_label"].split()[0]), fontsize=10)
            ax.set_ylabel("latency (us), lower is better" if what == "lat" else
                          "%s, higher is better" % fig_spec["bw_label"], fontsize=9)
            if i == nrow - 1:
                ax.set_xlabel("message size", fontsize=9)
            if j == 0:
                ax.legend(fontsize=7.5, loc="upper left")
    lines.append("validation: %s" % ("every plotted point passed or was not checked ('-')" if fails == 0 else
                                      "%d of %d points FAILED (red x)" % (fails, total)))
    caption = "\n".join(lines)
    fig.suptitle(title, fontsize=12, y=1 - 0.12 / fig_h)
    fig.tight_layout(rect=(0, cap_h / fig_h, 1, 1 - 0.4 / fig_h))
    fig.text(0.01, 0.06 / fig_h, caption, fontsize=7.2, family="monospace", va="bottom", ha="left")
    fig.savefig(outpath, dpi=110)
    plt.close(fig)
    print(outpath)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("csv", nargs="+")
    ap.add_argument("--kind", default="auto", choices=("auto", "bench", "node", "osu"))
    ap.add_argument("-o", "--out", default=".", help="directory for the PNGs (default .)")
    ap.add_argument("--prefix", help="file name prefix (default: the CSV's base name)")
    ap.add_argument("--note", default="", help="one more caption line: commit, command, anything the CSV lacks")
    ap.add_argument("--title", help="figure title (default from the input)")
    ap.add_argument("--modes", help="comma-separated modes to plot (default: all)")
    a = ap.parse_args(argv)
    os.makedirs(a.out, exist_ok=True)
    modes = set(a.modes.split(",")) if a.modes else None
    status = 0
    for path in a.csv:
        try:
            rows = read_csv(path)
            kind = a.kind if a.kind != "auto" else detect_kind(list(rows[0].keys()))
            figs = {"bench": groups_bench, "node": groups_node, "osu": groups_osu}[kind](path, rows, modes)
            prefix = a.prefix or os.path.splitext(os.path.basename(path))[0]
            for k, f in enumerate(figs):
                name = "%s-%s" % (prefix, f["suffix"])
                if f.get("multi_run"):
                    name += "-run%d" % (k + 1) if kind != "osu" else "-" + "".join(
                        ch if ch.isalnum() else "-" for ch in f["run"])[:40]
                if a.title:
                    title = a.title
                elif kind == "bench":
                    title = "tlmpi_bench, device buffers, %d rank%s: latency and bandwidth per mode" % (
                        f["title_n"], "" if f["title_n"] == 1 else "s")
                elif kind == "node":
                    title = "node_bench sweep, %d ranks on one GPU: tlmpi's node tier against host staging" % f["title_n"]
                else:
                    title = "OSU %s with tlmpi preloaded, device buffers: latency and bus bandwidth per mode" % (
                        f["suffix"].replace("-inplace", " (in place)"))
                draw(f, title, a.note, os.path.join(a.out, name + ".png"))
        except (InputError, KeyError, ValueError) as e:
            print("plot.py: %s: %s" % (path, e), file=sys.stderr)
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
