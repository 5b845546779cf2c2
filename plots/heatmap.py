#!/usr/bin/env python3
"""Kernel x distribution heatmaps of bias and spread, for suites too big for bias_spread.py.

Reads only gemmlab result CSVs (see results/README.md for the columns): one run's, or several drawn
together (a `gemmlab evaluate` CSV beside the built-in kernels: their families, e.g. external, get
their own group of rows). It writes one figure with two
heatmaps sharing their rows: left the bias (mean signed relative error (Ĉ−C)/|C|), right the spread
(its standard deviation), both in units of the output format's u so fp32 and fp16 outputs compare
directly. One row per kernel, grouped by family in the CSV's order; one column per distribution.
Every cell prints its value. Colours are logarithmic (bias: signed, red above zero and blue below,
linear within ±0.1 u). Cells of rows that did not run say why (n/a: not_applicable, n/s:
not_supported, err: error); failed_bound cells are framed in black, no_bound cells (no finite
bound) marked with a dagger. Several seeds of one cell: their mean. One size (default the largest).

usage: heatmap.py RUN.csv [MORE.csv ...] OUT.png [--size MxNxK] [--family hopper]
"""
import argparse
import csv
import math
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.colors  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402
import numpy as np  # noqa: E402

SHORT_STATUS = {"not_applicable": "n/a", "not_supported": "n/s", "error": "err"}
LIN_U = 0.1  # |bias| below 0.1 u is drawn on a linear scale (near white)


def compact(v):
    """A value in at most 5 characters: 0.031, -2.3, 390, -1.1e6."""
    if v == 0:
        return "0"
    a = abs(v)
    if a >= 1e4 or a < 1e-3:
        m, e = f"{v:.1e}".split("e")
        return f"{m}e{int(e)}"
    if a >= 100:
        return f"{v:.0f}"
    return f"{v:.2g}" if a >= 1 else f"{v:.2f}" if a >= 0.01 else f"{v:.3f}"


def load(paths, size, family):
    rows = []
    for path in paths:
        with open(path, newline="") as f:
            rows += [r for r in csv.DictReader(f) if not family or r["family"] == family]
    sized = [r for r in rows if r["M"] and r["N"] and r["K"]]
    if not size and sized:
        big = max(sized, key=lambda r: int(r["M"]) * int(r["N"]) * int(r["K"]))
        size = f'{big["M"]}x{big["N"]}x{big["K"]}'
    return [r for r in rows if f'{r["M"]}x{r["N"]}x{r["K"]}' == size], size


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+", metavar="CSV... OUT.png", help="one or more result CSVs, then the figure")
    ap.add_argument("--size", help="only rows of this MxNxK (default: the largest size in the CSVs)")
    ap.add_argument("--family", help="only the kernels of this family")
    a = ap.parse_args()
    if len(a.files) < 2:
        ap.error("give at least one CSV and the output figure")
    csvs, a.out = a.files[:-1], a.files[-1]
    rows, size = load(csvs, a.size, a.family)
    if not rows:
        sys.exit(f"heatmap.py: no rows{' of family ' + a.family if a.family else ''} in {', '.join(csvs)}; "
                 "nothing to plot")

    kernels = list(dict.fromkeys(r["kernel"] for r in rows))
    family_of = {r["kernel"]: r["family"] for r in rows}
    families = list(dict.fromkeys(family_of[k] for k in kernels))
    kernels.sort(key=lambda k: families.index(family_of[k]))  # grouped by family, CSV order within
    dists = list(dict.fromkeys(r["distribution"] for r in rows))
    cells = defaultdict(list)
    for r in rows:
        cells[(r["kernel"], r["distribution"])].append(r)

    shape = (len(kernels), len(dists))
    bias, spread = np.full(shape, np.nan), np.full(shape, np.nan)
    text_b, text_s = np.full(shape, "", dtype=object), np.full(shape, "", dtype=object)
    failed, unbounded = np.zeros(shape, bool), np.zeros(shape, bool)
    for i, k in enumerate(kernels):
        for j, d in enumerate(dists):
            rs = cells.get((k, d), [])
            ran = [r for r in rs if r["status"] in ("passed", "failed_bound", "no_bound") and r["rel_mean_u"]]
            if not ran:
                why = {SHORT_STATUS.get(r["status"], r["status"]) for r in rs}
                text_b[i, j] = text_s[i, j] = "/".join(sorted(why)) if why else ""
                continue
            bias[i, j] = sum(float(r["rel_mean_u"]) for r in ran) / len(ran)
            spread[i, j] = sum(float(r["rel_std_u"]) for r in ran) / len(ran)
            failed[i, j] = any(r["status"] == "failed_bound" for r in ran)
            unbounded[i, j] = any(r["status"] == "no_bound" for r in ran)
            mark = "†" if unbounded[i, j] else ""
            text_b[i, j] = compact(bias[i, j]) + mark
            text_s[i, j] = compact(spread[i, j]) + mark

    row_h = 0.19
    label_w = 0.075 * max(len(k) for k in kernels) + 0.4
    cell_w = 0.62
    # At least the title's width: a run of one distribution (gemmlab evaluate's) is otherwise too narrow.
    width = max(label_w + 2 * cell_w * len(dists) + 2.6, 9.5)
    height = max(row_h * len(kernels) + 2.4, 3.2)  # room for the colour bars and their labels
    fig, (ax_b, ax_s) = plt.subplots(1, 2, figsize=(width, height), sharey=True)

    finite_b = np.abs(bias[np.isfinite(bias)])
    vmax_b = max(float(finite_b.max()) if finite_b.size else 1.0, 10 * LIN_U)
    norm_b = matplotlib.colors.SymLogNorm(linthresh=LIN_U, linscale=0.5, vmin=-vmax_b, vmax=vmax_b, base=10)
    pos_s = spread[np.isfinite(spread) & (spread > 0)]
    lo_s, hi_s = (float(pos_s.min()), float(pos_s.max())) if pos_s.size else (0.1, 1.0)
    norm_s = matplotlib.colors.LogNorm(vmin=lo_s, vmax=max(hi_s, lo_s * 10))
    cmap_b = plt.get_cmap("RdBu_r").copy()
    cmap_s = plt.get_cmap("viridis").copy()
    for cm in (cmap_b, cmap_s):
        cm.set_bad("0.88")
    im_b = ax_b.imshow(np.ma.masked_invalid(bias), cmap=cmap_b, norm=norm_b, aspect="auto", interpolation="nearest")
    im_s = ax_s.imshow(np.ma.masked_invalid(np.where(spread > 0, spread, np.nan)), cmap=cmap_s, norm=norm_s,
                       aspect="auto", interpolation="nearest")

    for ax, values, texts, im in ((ax_b, bias, text_b, im_b), (ax_s, spread, text_s, im_s)):
        for i in range(shape[0]):
            for j in range(shape[1]):
                v = values[i, j]
                if math.isfinite(v):
                    r, g, b, _ = im.cmap(im.norm(v)) if v != 0 or ax is ax_b else (1, 1, 1, 1)
                    dark = 0.299 * r + 0.587 * g + 0.114 * b < 0.5
                    color = "white" if dark else "black"
                else:
                    color = "0.35"
                ax.text(j, i, texts[i, j], ha="center", va="center", fontsize=6.3, color=color)
                if failed[i, j]:
                    ax.add_patch(plt.Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, ec="black", lw=1.6))
        ax.set_xticks(range(len(dists)))
        ax.set_xticklabels(dists, rotation=30, ha="right", fontsize=8)
        ax.tick_params(axis="x", top=True, labeltop=True, bottom=False, labelbottom=False)
        plt.setp(ax.get_xticklabels(), rotation=30, ha="left")
        # family separators
        start = 0
        for fam in families:
            n = sum(1 for k in kernels if family_of[k] == fam)
            if start:
                ax.axhline(start - 0.5, color="black", lw=1.0)
            start += n
    ax_b.set_yticks(range(len(kernels)))
    ax_b.set_yticklabels(kernels, fontsize=7, family="monospace")
    # family names on the right of the spread map
    start = 0
    for fam in families:
        n = sum(1 for k in kernels if family_of[k] == fam)
        ax_s.text(len(dists) - 0.35, start + (n - 1) / 2, fam, rotation=-90, va="center", ha="left", fontsize=9,
                  fontweight="bold")
        start += n
    cb_b = fig.colorbar(im_b, ax=ax_b, orientation="horizontal", fraction=0.6 / height, pad=0.25 / height, aspect=40)
    cb_b.set_label("bias: mean of (Ĉ−C)/|C| in units of u_out (red: too large, blue: too small)", fontsize=8)
    cb_s = fig.colorbar(im_s, ax=ax_s, orientation="horizontal", fraction=0.6 / height, pad=0.25 / height, aspect=40)
    cb_s.set_label("spread: std of (Ĉ−C)/|C| in units of u_out", fontsize=8)
    # Every other decade, fewer where the range is wide: at most 4 a side, so that the labels never touch.
    top = int(math.log10(vmax_b))
    step = max(2, math.ceil((top + 2) / 4))
    decades = [10.0**e for e in range(-1 if step == 2 else 1, top + 1, step)]
    # Where the range is wide, the linear part around 0 is too narrow for ±0.1 apart: 0 marks it.
    cb_b.set_ticks([-d for d in reversed(decades)] + ([] if step == 2 else [0.0]) + decades)
    cb_b.ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: compact(v)))
    # The spread's ticks: its decades, or its ends where it spans less than two (LogNorm's minor labels
    # would overlap there).
    hi_n = norm_s.vmax
    e0, e1 = math.ceil(math.log10(lo_s)), math.floor(math.log10(hi_n))
    ticks_s = [10.0**e for e in range(e0, e1 + 1, max(1, math.ceil((e1 - e0 + 1) / 7)))]
    if len(ticks_s) < 2:
        ticks_s = [lo_s, math.sqrt(lo_s * hi_n), hi_n]
    cb_s.set_ticks(ticks_s)
    cb_s.ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    cb_s.ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: compact(v)))
    for cb in (cb_b, cb_s):
        cb.ax.tick_params(labelsize=7)
    ax_b.set_title("bias", fontsize=11, pad=4)
    ax_s.set_title("spread", fontsize=11, pad=4)
    fig.suptitle(f"Relative error of every kernel on every distribution, {size} "
                 "(framed: failed its bound; †: no finite bound; n/a, n/s, err: did not run)", fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.3 / height))
    fig.savefig(a.out, dpi=110)


if __name__ == "__main__":
    main()
