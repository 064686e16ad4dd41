#!/usr/bin/env python3
"""osu_merge.py DIR [--meta KEY=VALUE]... [--csv FILE] [--md FILE]: merge the OSU outputs that
bench/osu/osu-compare.sh (tlmpi-osu-compare) left in DIR into one CSV and one Markdown table.

Inputs: DIR/osu_<collective>-np<N>-<mode>[-inplace].txt, the raw output of one OSU run (7.x,
"# Size  Avg Latency(us)  [Validation]" rows; for the non-blocking benchmarks osu_iallreduce,
osu_iallgather and osu_ireduce_scatter_block "# Size  Overall(us)  Compute(us)  Pure Comm.(us)
Overlap(%)  [Validation]" rows, whose Overall is taken as the latency; the persistent benchmarks
osu_<coll>_persistent (*_init once, MPI_Start + MPI_Wait per iteration) as the blocking ones), with <mode> auto, staging, nccl, node-<algorithm>
(node/<algorithm> forced through TLMPI_<COLL>_TIERS), mpi-plain (the MPI alone), or any other
name; beside it optionally <same name>.rc (the run's exit status). Metadata: DIR/meta.txt
(KEY=VALUE lines, written by osu-compare.sh) or, for outputs of the older bench/osu-compare.sh, the
"- date: ...; GPU: ..." header of DIR/summary.md; --meta overrides either.

Sizes are OSU's: osu_allreduce, osu_bcast and osu_reduce the vector, osu_allgather, osu_allgatherv
and osu_alltoall the per-rank send block, osu_reduce_scatter_block and osu_reduce_scatter the whole
send vector (each rank gets size / n: sizes of fewer elements than ranks are empty calls, marked
"empty" and left out of speed-ups and plots); the MPI_I* benchmarks as their blocking ones. busbw
(nccl-tests): S = size (allreduce, reduce_scatter(_block), bcast, reduce) or n x size (allgather(v),
alltoall), algbw = S / t, busbw = algbw x 2(n-1)/n (allreduce), algbw (bcast, reduce) or (n-1)/n.

Writes (default DIR/osu-compare.csv and DIR/osu-compare.md): CSV columns run,date,host,gpu,mpi,mps,
osu,tlmpi,options,nranks,coll,inplace,mode,bytes,latency_us,valid,busbw_GBps,note,compute_us,
pure_comm_us,overlap_pct (the last three for the non-blocking benchmarks only), and Markdown with
a validation table per mode and, per collective, rank count and in-place variant, the latency of
every mode at every size, the speed-up of auto over every other mode (baseline latency / auto
latency), for the non-blocking benchmarks each mode's pure communication time and OSU's overlap
(%), and the validation of every mode at that size. Exit status: 0 when every run exited 0 and
every checked size passed in every mode, 1 otherwise (the tables say where), 2 on bad input.
"""
import argparse
import collections
import csv
import os
import re
import sys

NAME_RE = re.compile(r"^(osu_[a-z_]+)-np(\d+)-(.+?)(-inplace)?\.txt$")
ROW_RE = re.compile(r"^\s*(\d+)\s+([0-9.]+)(?:\s+(\S+))?\s*$")
# non-blocking: size, overall, compute, pure communication, overlap (%), [validation]
NBC_ROW_RE = re.compile(r"^\s*(\d+)\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)(?:\s+([A-Za-z]\S*))?\s*$")
DTYPE_BYTES = {"MPI_CHAR": 1, "MPI_SIGNED_CHAR": 1, "MPI_UNSIGNED_CHAR": 1, "MPI_BYTE": 1, "MPI_SHORT": 2,
               "MPI_INT": 4, "MPI_FLOAT": 4, "MPI_LONG": 8, "MPI_DOUBLE": 8, "MPI_LONG_LONG": 8}
COLLS = {"osu_allreduce": "allreduce", "osu_allgather": "allgather",
         "osu_reduce_scatter_block": "reduce_scatter_block", "osu_iallreduce": "iallreduce",
         "osu_iallgather": "iallgather", "osu_ireduce_scatter_block": "ireduce_scatter_block",
         "osu_allgatherv": "allgatherv", "osu_reduce_scatter": "reduce_scatter", "osu_bcast": "bcast",
         "osu_reduce": "reduce", "osu_alltoall": "alltoall", "osu_iallgatherv": "iallgatherv",
         "osu_ireduce_scatter": "ireduce_scatter", "osu_ibcast": "ibcast", "osu_ireduce": "ireduce",
         "osu_ialltoall": "ialltoall", "osu_allreduce_persistent": "allreduce_persistent",
         "osu_allgather_persistent": "allgather_persistent", "osu_allgatherv_persistent": "allgatherv_persistent",
         "osu_reduce_scatter_persistent": "reduce_scatter_persistent", "osu_bcast_persistent": "bcast_persistent",
         "osu_reduce_persistent": "reduce_persistent", "osu_alltoall_persistent": "alltoall_persistent"}
# the blocking collective a non-blocking or persistent benchmark's sizes and busbw follow
BASE = {"iallreduce": "allreduce", "iallgather": "allgather", "ireduce_scatter_block": "reduce_scatter_block",
        "iallgatherv": "allgatherv", "ireduce_scatter": "reduce_scatter", "ibcast": "bcast", "ireduce": "reduce",
        "ialltoall": "alltoall", "allreduce_persistent": "allreduce", "allgather_persistent": "allgather",
        "allgatherv_persistent": "allgatherv", "reduce_scatter_persistent": "reduce_scatter",
        "bcast_persistent": "bcast", "reduce_persistent": "reduce", "alltoall_persistent": "alltoall"}
# busbw: S = n x size for the collectives whose OSU size is one rank's block, and the factor on algbw
PER_RANK_SIZE = ("allgather", "allgatherv", "alltoall")
NO_FACTOR = ("bcast", "reduce")
MODE_ORDER = ["auto", "staging", "nccl", "mpi-plain"]


def mode_of(slug):
    return "node/" + slug[5:] if slug.startswith("node-") else slug


def mode_key(m):
    if m in MODE_ORDER:
        return (MODE_ORDER.index(m), m)
    return (2.5 if m.startswith("node/") else len(MODE_ORDER), m)


def parse_output(path):
    """-> (version, dtype, rows {bytes: (latency, valid)}, nbc {bytes: (compute, pure comm, overlap)})"""
    version, dtype, rows, nbc = "", "", collections.OrderedDict(), {}
    with open(path, errors="replace") as f:
        for line in f:
            m = re.match(r"#\s*OSU .*Test\s+(v\S+)", line)
            if m:
                version = m.group(1)
                continue
            m = re.match(r"#\s*Datatype:\s*(\S+?)\.?\s*$", line)
            if m:
                dtype = m.group(1)
                continue
            m = NBC_ROW_RE.match(line)
            if m:
                rows[int(m.group(1))] = (float(m.group(2)), m.group(6) or "-")
                nbc[int(m.group(1))] = (float(m.group(3)), float(m.group(4)), float(m.group(5)))
                continue
            m = ROW_RE.match(line)
            if m:
                rows[int(m.group(1))] = (float(m.group(2)), m.group(3) or "-")
    return version, dtype, rows, nbc


def read_meta(d, overrides):
    meta = {}
    p = os.path.join(d, "meta.txt")
    if os.path.exists(p):
        with open(p) as f:
            for line in f:
                if "=" in line and not line.startswith("#"):
                    k, v = line.rstrip("\n").split("=", 1)
                    meta[k.strip()] = v.strip()
    else:
        p = os.path.join(d, "summary.md")
        if os.path.exists(p):  # the older bench/osu-compare.sh's header
            with open(p) as f:
                for line in f:
                    m = re.match(r"- date: (.*?); GPU: (.*)$", line)
                    if m:
                        meta["date"], meta["gpu"] = m.group(1), m.group(2)
                    m = re.match(r"- MPS: (\S+); options: (.*)$", line)
                    if m:
                        meta["mps"], meta["options"] = m.group(1), m.group(2)
    for kv in overrides:
        k, _, v = kv.partition("=")
        meta[k] = v
    for k in ("date", "host", "gpu", "mpi", "mps", "osu", "tlmpi", "options"):
        meta.setdefault(k, "unknown")
    meta.setdefault("run", re.sub(r"[^A-Za-z0-9.:-]+", "_", "%s/%s" % (meta["date"], meta["tlmpi"])))
    return meta


def fmt_lat(x):
    return "%.2f" % x if x < 1000 else "%.0f" % x


def merge(d, meta_over, csv_path, md_path):
    runs = {}
    for name in sorted(os.listdir(d)):
        m = NAME_RE.match(name)
        if not m or m.group(1) not in COLLS:
            continue
        bench, n, slug, inpl = m.group(1), int(m.group(2)), m.group(3), bool(m.group(4))
        version, dtype, rows, nbc = parse_output(os.path.join(d, name))
        rc = None
        rcp = os.path.join(d, name[:-4] + ".rc")
        if os.path.exists(rcp):
            with open(rcp) as f:
                txt = f.read().strip()
                rc = int(txt) if re.match(r"^-?\d+$", txt) else txt
        runs[(COLLS[bench], n, inpl, mode_of(slug))] = {"version": version, "dtype": dtype, "rows": rows,
                                                        "nbc": nbc, "rc": rc, "file": name}
    if not runs:
        print("osu_merge: no osu_<coll>-np<N>-<mode>.txt outputs in %s" % d, file=sys.stderr)
        return 2
    meta = read_meta(d, meta_over)
    if meta["osu"] == "unknown":
        vs = sorted({r["version"] for r in runs.values() if r["version"]})
        meta["osu"] = "/".join(vs) if vs else "unknown"
    ok = True
    out_rows = []
    groups = collections.OrderedDict()
    for key in sorted(runs, key=lambda k: (list(COLLS.values()).index(k[0]), k[1], k[2], mode_key(k[3]))):
        groups.setdefault(key[:3], []).append(key[3])
    md = ["# OSU collectives on device buffers with tlmpi preloaded, per mode", ""]
    md.append("- date: %s; host: %s; GPU: %s; MPS: %s" % (meta["date"], meta["host"], meta["gpu"], meta["mps"]))
    md.append("- MPI: %s; OSU: %s; tlmpi: %s" % (meta["mpi"], meta["osu"], meta["tlmpi"]))
    md.append("- OSU options: %s" % meta["options"])
    if meta.get("skipped"):
        md.append("- not run: %s" % meta["skipped"])
    md.append("- modes: auto = tlmpi's choice; staging / nccl = TLMPI_TIER forced; node/ALG = "
              "TLMPI_<COLL>_TIERS=node/ALG; mpi-plain = the MPI alone (only where it is CUDA-aware). "
              "Speed-up = the other mode's latency / auto's (above 1: auto is faster). Validation: OSU's "
              "own check (-c); '-' = not checked or no row.")
    md.append("")
    vt = ["## Validation per mode", "", "| collective | ranks | in place | mode | sizes | passed | failed | run |",
          "| --- | ---: | --- | --- | ---: | ---: | ---: | --- |"]
    body = []
    for (coll, n, inpl), modes in groups.items():
        sizes = sorted({b for m in modes for b in runs[(coll, n, inpl, m)]["rows"]})
        for m in modes:
            r = runs[(coll, n, inpl, m)]
            vals = [v for _, v in r["rows"].values()]
            npass = sum(1 for v in vals if v.lower() == "pass")
            nfail = sum(1 for v in vals if v.lower().startswith("fail"))
            missing = len(sizes) - len(r["rows"])
            status = "exit %s" % r["rc"] if r["rc"] not in (None, 0) else ("ok" if r["rc"] == 0 else "")
            if missing:
                status += (", " if status else "") + "%d sizes missing" % missing
            if nfail or missing or r["rc"] not in (None, 0):
                ok = False
            vt.append("| %s | %d | %s | %s | %d | %d | %s | %s |" % (coll, n, "yes" if inpl else "no", m,
                                                                   len(r["rows"]), npass,
                                                                   "**%d**" % nfail if nfail else "0", status))
        base = [m for m in modes if m != "auto"]
        bcoll = BASE.get(coll, coll)
        isnbc = coll in BASE and not coll.endswith("_persistent")
        hdr = "| bytes | " + " | ".join(("%s overall us" if isnbc else "%s us") % m for m in modes)
        hdr += "".join(" | auto vs %s" % m for m in base if "auto" in modes)
        if isnbc:
            hdr += "".join(" | %s pure comm. us | %s overlap %%" % (m, m) for m in modes)
        hdr += " | validation |"
        body += ["## %s, %d ranks%s" % (coll, n, ", in place (-l)" if inpl else ""), ""]
        if isnbc:
            body += ["OSU's non-blocking test: overall = MPI_I%s + compute (as long as the pure communication) + "
                     "MPI_Wait; overlap = 100 - 100 x (overall - compute) / pure communication." % bcoll, ""]
        body += [hdr, "|" + " ---: |" * (1 + len(modes) + (len(base) if "auto" in modes else 0) +
                                         (2 * len(modes) if isnbc else 0)) + " --- |"]
        for b in sizes:
            cells, vals = [], []
            dt = runs[(coll, n, inpl, modes[0])]["dtype"] or "MPI_CHAR"
            esz = DTYPE_BYTES.get(dt, 1)
            empty = bcoll in ("reduce_scatter_block", "reduce_scatter") and b // esz < n
            lat = {}
            for m in modes:
                r = runs[(coll, n, inpl, m)]
                if b in r["rows"]:
                    t, v = r["rows"][b]
                    lat[m] = t
                    cells.append(fmt_lat(t))
                    vals.append((m, v))
                    S = b * n if bcoll in PER_RANK_SIZE else b
                    fac = (2.0 * (n - 1) / n) if bcoll == "allreduce" else 1.0 if bcoll in NO_FACTOR else (float(n - 1) / n)
                    bw = S / (t * 1e-6) / 1e9 * fac if t > 0 and not empty else 0.0
                    x = r["nbc"].get(b)
                    out_rows.append([meta["run"], meta["date"], meta["host"], meta["gpu"], meta["mpi"], meta["mps"],
                                     r["version"] or meta["osu"], meta["tlmpi"], meta["options"], n, coll,
                                     1 if inpl else 0, m, b, "%.2f" % t, v, "%.4f" % bw, "empty" if empty else "",
                                     "%.2f" % x[0] if x else "", "%.2f" % x[1] if x else "",
                                     "%.2f" % x[2] if x else ""])
                else:
                    cells.append("-")
                    vals.append((m, "-"))
            sp = []
            if "auto" in modes:
                for m in base:
                    if empty or "auto" not in lat or m not in lat or lat["auto"] <= 0:
                        sp.append("-")
                    else:
                        sp.append("%.2fx" % (lat[m] / lat["auto"]))
            if isnbc:
                for m in modes:
                    x = runs[(coll, n, inpl, m)]["nbc"].get(b)
                    sp += [fmt_lat(x[1]), "%.1f" % x[2]] if x else ["-", "-"]
            bad = ["%s %s" % (m, v) for m, v in vals if v.lower() != "pass"]
            valid = "pass" if not bad else ", ".join(bad)
            if empty:
                valid += " (empty call: %d elements for %d ranks)" % (b // esz, n)
            body.append("| %s | %s |%s %s |" % (b, " | ".join(cells), "".join(" %s |" % s for s in sp), valid))
        body.append("")
    md += vt + [""] + body
    with open(csv_path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["run", "date", "host", "gpu", "mpi", "mps", "osu", "tlmpi", "options", "nranks", "coll",
                    "inplace", "mode", "bytes", "latency_us", "valid", "busbw_GBps", "note", "compute_us",
                    "pure_comm_us", "overlap_pct"])
        w.writerows(out_rows)
    with open(md_path, "w") as f:
        f.write("\n".join(md))
    print("osu_merge: %d runs, %d rows -> %s, %s; validation %s" % (
        len(runs), len(out_rows), csv_path, md_path, "passed everywhere" if ok else "NOT clean (see the tables)"))
    return 0 if ok else 1


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("dir")
    ap.add_argument("--meta", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--csv")
    ap.add_argument("--md")
    a = ap.parse_args(argv)
    return merge(a.dir, a.meta, a.csv or os.path.join(a.dir, "osu-compare.csv"),
                 a.md or os.path.join(a.dir, "osu-compare.md"))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
