#!/usr/bin/env python3
"""Bias and spread of the relative error, per kernel and distribution.

Reads only a gemmlab run CSV (see results/README.md for the columns) and writes one figure:
left, the bias (mean signed relative error, with its 95% confidence interval) on a symmetric-log
axis; right, the spread (standard deviation of the relative error) on a log axis. One row per
kernel, one colour per distribution. Rows whose status is not passed/failed_bound are left out;
failed_bound rows are marked with a cross.

usage: bias_spread.py RUN.csv OUT.png [--size MxNxK]
"""
import argparse
import csv
import math
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402


def load(path, size):
    rows = []
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            if r["status"] not in ("passed", "failed_bound", "no_bound"):
                continue
            if size and f'{r["M"]}x{r["N"]}x{r["K"]}' != size:
                continue
            rows.append(r)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv")
    ap.add_argument("out")
    ap.add_argument("--size", help="only rows of this MxNxK (default: the largest size in the CSV)")
    a = ap.parse_args()
    rows = load(a.csv, a.size)
    if not a.size and rows:
        largest = max(rows, key=lambda r: int(r["M"]) * int(r["N"]) * int(r["K"]))
        a.size = f'{largest["M"]}x{largest["N"]}x{largest["K"]}'
        rows = [r for r in rows if f'{r["M"]}x{r["N"]}x{r["K"]}' == a.size]
    if not rows:
        sys.exit(f"bias_spread.py: no passed/failed_bound rows in {a.csv}; nothing to plot")

    kernels = list(dict.fromkeys(r["kernel"] for r in rows))
    dists = list(dict.fromkeys(r["distribution"] for r in rows))
    colors = plt.cm.tab10.colors
    h = max(3.0, 0.28 * len(kernels) + 1.5)
    fig, (ax_b, ax_s) = plt.subplots(1, 2, figsize=(13, h), sharey=True)
    off = {d: (i - (len(dists) - 1) / 2) * 0.7 / max(1, len(dists)) for i, d in enumerate(dists)}
    smallest = []
    reach = 0.0  # the largest |bias| +- its CI shown
    for r in rows:
        y = kernels.index(r["kernel"]) + off[r["distribution"]]
        c = colors[dists.index(r["distribution"]) % len(colors)]
        # In units of the output format's unit roundoff u, so fp32 and fp16 outputs compare directly.
        u = float(r["u_out"])
        mean, ci, std = float(r["rel_mean"]) / u, float(r["rel_mean_ci95"]) / u, float(r["rel_std"]) / u
        marker = "x" if r["status"] == "failed_bound" else "o"
        ax_b.errorbar(mean, y, xerr=ci, fmt=marker, color=c, ms=4, capsize=2)
        ax_s.plot(std if std > 0 else float("nan"), y, marker, color=c, ms=4)
        for v in (abs(mean), std):
            if v > 0 and math.isfinite(v):
                smallest.append(v)
        if math.isfinite(mean) and math.isfinite(ci):
            reach = max(reach, abs(mean) + ci)
    lin = 10 ** math.floor(math.log10(min(smallest))) if smallest else 1e-6
    if reach <= 100 * lin:
        pass  # the biases span less than two decades: a linear axis reads best (symlog's ticks crowded 0)
    else:
        ax_b.set_xscale("symlog", linthresh=lin)
        # Ticks at 0 and at powers of 100 beyond the linear part; not at +-lin, whose labels ran into 0's.
        lo, hi = ax_b.get_xlim()
        ticks = [t for t in matplotlib.ticker.SymmetricalLogLocator(linthresh=lin, base=100).tick_values(lo, hi)
                 if lo <= t <= hi and (t == 0 or abs(t) > 1.5 * lin)]
        if len(ticks) >= 2:
            ax_b.set_xticks(ticks)
        else:
            ax_b.xaxis.set_major_locator(matplotlib.ticker.SymmetricalLogLocator(linthresh=lin, base=100))
    ax_b.axvline(0, color="0.6", lw=0.8)
    ax_b.set_xlabel("bias: mean of (Ĉ−C)/|C| in units of u_out  (bars: 95% CI)")
    ax_s.set_xscale("log")
    ax_s.set_xlabel("spread: std of (Ĉ−C)/|C| in units of u_out")
    ax_b.set_yticks(range(len(kernels)))
    ax_b.set_yticklabels(kernels, fontsize=8)
    ax_b.invert_yaxis()
    for ax in (ax_b, ax_s):
        ax.grid(True, axis="x", which="major", alpha=0.3)
    handles = [plt.Line2D([], [], marker="o", ls="", color=colors[i % len(colors)], label=d) for i, d in enumerate(dists)]
    ax_s.legend(handles=handles, fontsize=8, loc="best", title="distribution")
    fig.suptitle(f"Relative error of each kernel against the exact reference, {a.size} (x: failed its bound)")
    fig.tight_layout()
    fig.savefig(a.out, dpi=130)


if __name__ == "__main__":
    main()
