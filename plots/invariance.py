#!/usr/bin/env python3
"""The invariance matrix: for each kernel (and library setting) and each m, whether rows [0, m) of C
computed with M = m are bit for bit those computed at the full M (`gemmlab invariance`), with a
short reason in every cell that differs; beside it, what each row costs (median time and the spread
of the relative error at the full size, from the `cost` rows).

Reads only CSV (one or more `gemmlab invariance` CSVs, e.g. an H100 and an H200 run; rows of
another GPU get their own lines). Cell marks: "=" equal, "sK" split-K count changed, "ch" stream-K
chunks moved, "alg" the library chose another algorithm, "tr" another tree, "≠" differs for a reason
not revealed; grey: the kernel cannot take this m (not_supported).

    python3 plots/invariance.py results/invariance/h100_<date>/invariance_bf16.csv out.png [--check m]
"""
import argparse
import csv
import math
import sys
from collections import OrderedDict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.colors import ListedColormap  # noqa: E402

NEEDED = ["kernel", "config", "gpu", "check", "m", "n", "k", "status", "why", "time_ms_median", "rel_std"]
STATUS_CODE = {"equal": 0, "differs": 1, "not_supported": 2, "error": 3}


def reason(row):
    """A short mark for a cell: what changed, as the `why` column says it in words."""
    if row["status"] == "equal":
        return "="
    if row["status"] != "differs":
        return ""
    why = row["why"]
    if "stream-K split-K" in why:
        return "ch"
    if "split-K " in why and " vs split-K " in why:
        return "sK"
    if "another algorithm" in why:
        return "alg"
    if "another tree" in why:
        return "tr"
    return "≠"


def read(paths):
    rows = []
    for path in paths:
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            missing = [c for c in NEEDED if c not in (reader.fieldnames or [])]
            if missing:
                sys.exit(f"{path}: not a `gemmlab invariance` CSV (missing columns {', '.join(missing)})")
            rows.extend(reader)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("inputs", nargs="+", help="invariance CSVs, then the output PNG")
    ap.add_argument("--check", default="m", choices=["m", "n", "k_tail"], help="which sweep to draw")
    ap.add_argument("--title", default="")
    a = ap.parse_args()
    if len(a.inputs) < 2 or not a.inputs[-1].endswith(".png"):
        sys.exit("usage: invariance.py IN.csv [MORE.csv ...] OUT.png [--check m|n|k_tail]")
    csvs, out = a.inputs[:-1], a.inputs[-1]
    rows = read(csvs)
    key_of = lambda r: (r["kernel"], r["config"], r["gpu"])  # noqa: E731
    size_col = {"m": "m", "n": "n", "k_tail": "k"}[a.check]
    lines = OrderedDict()
    sizes = set()
    cost = {}
    for r in rows:
        k = key_of(r)
        if r["check"] == a.check:
            lines.setdefault(k, {})[int(r[size_col])] = r
            sizes.add(int(r[size_col]))
        elif r["check"] == "cost" and r["status"] == "measured":
            cost[k] = (float(r["time_ms_median"]), float(r["rel_std"]))
    if not lines:
        sys.exit(f"no `{a.check}` rows in {', '.join(csvs)}")
    sizes = sorted(sizes)
    keys = list(lines)
    gpus = {k[2] for k in keys}
    label = lambda k: k[0] + ("" if k[1] == "default" else f" [{k[1]}]") + (f" ({k[2]})" if len(gpus) > 1 else "")  # noqa: E731

    grid = [[math.nan] * len(sizes) for _ in keys]
    marks = [[""] * len(sizes) for _ in keys]
    for y, k in enumerate(keys):
        for x, s in enumerate(sizes):
            r = lines[k].get(s)
            if r is None:
                continue
            grid[y][x] = STATUS_CODE.get(r["status"], 3)
            marks[y][x] = reason(r)

    height = max(3.0, 0.32 * len(keys) + 1.5)
    fig, (ax, axc) = plt.subplots(1, 2, figsize=(min(4 + 0.42 * len(sizes), 22) + 5, height),
                                  gridspec_kw={"width_ratios": [max(len(sizes), 4), 6]}, sharey=True)
    cmap = ListedColormap(["#4caf50", "#e53935", "#bdbdbd", "#6a1b9a"])
    ax.imshow(grid, aspect="auto", cmap=cmap, vmin=-0.5, vmax=3.5, interpolation="nearest")
    for y in range(len(keys)):
        for x in range(len(sizes)):
            if marks[y][x] and marks[y][x] != "=":
                ax.text(x, y, marks[y][x], ha="center", va="center", fontsize=7, color="white")
    ax.set_xticks(range(len(sizes)))
    ax.set_xticklabels([str(s) for s in sizes], rotation=90, fontsize=7)
    ax.set_yticks(range(len(keys)))
    ax.set_yticklabels([label(k) for k in keys], fontsize=7)
    ax.set_xlabel({"m": "m (rows computed with M = m)", "n": "n (columns computed with N = n)",
                   "k_tail": "K + t (zero tail)"}[a.check])
    ax.set_title(a.title or "bit-for-bit equal to the full size: green; differs: red (sK split-K, ch stream-K "
                 "chunks, alg algorithm, tr tree); grey: size not taken", fontsize=8)

    times = [cost.get(k, (math.nan, math.nan))[0] for k in keys]
    spreads = [cost.get(k, (math.nan, math.nan))[1] for k in keys]
    ys = range(len(keys))
    axc.barh(ys, times, color="#1e88e5", height=0.4, label="time (ms)")
    axc.set_xlabel("median time at the full size (ms)", fontsize=8)
    axc2 = axc.twiny()
    axc2.plot(spreads, ys, "o", color="#fb8c00", label="spread of the relative error")
    axc2.set_xlabel("spread (rel_std)", fontsize=8, color="#fb8c00")
    axc2.tick_params(labelsize=6)
    if any(s > 0 for s in spreads if not math.isnan(s)):
        axc2.set_xscale("log")
    fig.tight_layout()
    fig.savefig(out, dpi=130)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
