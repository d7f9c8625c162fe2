#!/usr/bin/env python3
"""Plots one or two `cohort_perf -c ... --json FILE` results as a PNG.

usage: contrib/plot-perf.py A.json [B.json] -o PLOT.png

Left: bus bandwidth (GB/s) against size; right: time (us) against size, both on a log2 size
axis.  One line per collective per file, and per placement when a file has both; a file run
with --vs-mpi adds the MPI call's line (same bytes, MPI's time).  Lines are labelled by the
file names (cohort.json and mpi.json plot as "cohort" and "mpi").  Rows that move no data
(count 0, the barrier) have no place on a log size axis and are left out.
Needs matplotlib (Debian: python3-matplotlib).
"""

import argparse
import importlib.util
import json
import math
import os
import sys

COLORS = ["tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown",
          "tab:pink"]
# (file index, series) -> line style: files differ by style, Cohort and MPI by dash.
STYLES = {(0, "cohort"): "-", (0, "mpi"): "--", (1, "cohort"): "-.", (1, "mpi"): ":"}
MARKERS = {"out-of-place": "o", "in-place": "x"}
PLACEMENTS = ["out-of-place", "in-place"]


def parse_args(argv):
    parser = argparse.ArgumentParser(
        description="Plot cohort_perf --json sweeps: bus bandwidth and time against size.")
    parser.add_argument("files", nargs="+", metavar="FILE.json",
                        help="one or two cohort_perf -c ... --json results")
    parser.add_argument("-o", "--output", required=True, metavar="PLOT.png",
                        help="the PNG to write")
    args = parser.parse_args(argv)
    if len(args.files) > 2:
        parser.error("at most two files: %d given" % len(args.files))
    return args


def load(path):
    """The file's JSON, checked to be a collective sweep; exits with a message otherwise."""
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        sys.exit("plot-perf: %s: %s" % (path, e))
    if doc.get("benchmark") != "collectives" or "rows" not in doc:
        sys.exit("plot-perf: %s: not a collective sweep (cohort_perf -c ... --json); "
                 "benchmark is %r" % (path, doc.get("benchmark")))
    return doc


def labels_of(paths):
    """The files' names without .json; with the folder when two names are the same."""
    names = [os.path.splitext(os.path.basename(p))[0] for p in paths]
    if len(names) == 2 and names[0] == names[1]:
        names = [os.path.join(os.path.basename(os.path.dirname(os.path.abspath(p))), n)
                 for p, n in zip(paths, names)]
    return names


def series_of(doc):
    """{(collective, placement, series): [(size B, busbw GB/s or None, time us)]}, in the
    file's order of collectives, out of place first, Cohort before MPI: series is "cohort", or
    "mpi" for the --vs-mpi time of the same row."""
    out = {}
    for row in doc["rows"]:
        size, time_us, busbw = row["size"], row["time_us"], row.get("busbw_gbs")
        if not size or time_us is None or time_us <= 0:
            continue
        key = (row["collective"], row["placement"])
        out.setdefault(key + ("cohort",), []).append((size, busbw, time_us))
        mpi_us = row.get("mpi_time_us")
        if mpi_us:
            # The same bytes in MPI's time: bandwidth scales with the time ratio.
            mpi_busbw = busbw * time_us / mpi_us if busbw is not None else None
            out.setdefault(key + ("mpi",), []).append((size, mpi_busbw, mpi_us))
    collectives = list(dict.fromkeys(row["collective"] for row in doc["rows"]))

    def order(key):
        collective, placement, kind = key
        return (collectives.index(collective), PLACEMENTS.index(placement), kind != "cohort")
    return {key: sorted(out[key]) for key in sorted(out, key=order)}


def size_label(size, _pos=None):
    for unit, scale in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if size >= scale:
            value = size / scale
            return "%g %s" % (value, unit)
    return "%g B" % size


def set_size_axis(ax, sizes):
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator
    lo, hi = math.floor(math.log2(min(sizes))), math.ceil(math.log2(max(sizes)))
    step = max(1, math.ceil((hi - lo) / 10))
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(FixedLocator([2.0 ** e for e in range(lo, hi + 1, step)]))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_major_formatter(FuncFormatter(size_label))
    ax.set_xlabel("size (B; KB = 1024 B)")
    for label in ax.get_xticklabels():
        label.set_rotation(45)


def describe(label, doc):
    """One line of the title: what ran, where, when."""
    load = doc.get("host_load") or {}
    text = "%s: cohort_perf %s (git %s), %s ranks on %s host(s)" % (
        label, doc.get("version", "?"), doc.get("git_revision", "?"), doc.get("ranks", "?"),
        doc.get("hosts", doc.get("nodes", "?")))
    if load.get("oversubscribed"):
        text += " (%d ranks share %d cores: not meaningful)" % (load["ranks"], load["cores"])
    types = [r["type"] for r in doc["rows"] if r.get("type", "none") != "none"]
    ops = [r["redop"] for r in doc["rows"] if r.get("redop", "none") != "none"]
    if types:
        text += ", " + types[0] + (" " + ops[0] if ops else "")
    if doc.get("date"):
        text += ", %s" % doc["date"]
    return text


def plot(docs, labels, output):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (bw_ax, time_ax) = plt.subplots(1, 2, figsize=(15, 6.5))
    collectives = []
    sizes = []
    legend = []  # (collective, file, line): a legend column per collective
    for index, (doc, label) in enumerate(zip(docs, labels)):
        series = series_of(doc)
        placements = {p for (_, p, _) in series}
        for (collective, placement, kind), points in series.items():
            if collective not in collectives:
                collectives.append(collective)
            xs = [p[0] for p in points]
            sizes.extend(xs)
            name = collective
            if len(placements) > 1:
                name += " " + placement
            if kind == "mpi":
                name += " MPI"
            if len(docs) > 1:
                name = "%s: %s" % (label, name)
            style = dict(color=COLORS[collectives.index(collective) % len(COLORS)],
                         linestyle=STYLES[(index, kind)], marker=MARKERS.get(placement, "."),
                         markersize=4, label=name)
            bw = [(x, p[1]) for x, p in zip(xs, points) if p[1] is not None]
            lines = bw_ax.plot([b[0] for b in bw], [b[1] for b in bw], **style)
            legend.append((collectives.index(collective), index, len(legend), lines[0], name))
            time_ax.plot(xs, [p[2] for p in points], **style)
    if not sizes:
        sys.exit("plot-perf: no row that moves data to plot")
    for ax in (bw_ax, time_ax):
        set_size_axis(ax, sizes)
        ax.grid(True, which="major", alpha=0.3)
    bw_ax.set_ylabel("bus bandwidth (GB/s)")
    bw_ax.set_title("Bus bandwidth")
    time_ax.set_yscale("log")
    time_ax.set_ylabel("time (us, slowest rank, average per call)")
    time_ax.set_title("Time")
    legend.sort()
    per_column = max(sum(1 for entry in legend if entry[0] == 0), 1)
    fig.suptitle("\n".join(describe(l, d) for l, d in zip(labels, docs)), fontsize="small")
    fig.tight_layout()
    # Below the plots; the saved image grows to hold it.
    fig.legend([e[3] for e in legend], [e[4] for e in legend], loc="upper center",
               bbox_to_anchor=(0.5, 0.0), ncol=math.ceil(len(legend) / per_column),
               fontsize="small")
    fig.savefig(output, dpi=110, bbox_inches="tight")


def main(argv):
    args = parse_args(argv)
    docs = [load(p) for p in args.files]
    if importlib.util.find_spec("matplotlib") is None:
        sys.exit("plot-perf: %s has no matplotlib (Debian: apt-get install python3-matplotlib, "
                 "then run /usr/bin/python3 %s)" % (sys.executable, sys.argv[0]))
    plot(docs, labels_of(args.files), args.output)


if __name__ == "__main__":
    main(sys.argv[1:])
