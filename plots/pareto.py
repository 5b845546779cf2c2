#!/usr/bin/env python3
"""Accuracy against speed: TFLOP/s over |bias| and spread in units of u, with the Pareto front.

Reads only gemmlab result CSVs (see results/README.md for the columns): one `gemmlab run` CSV, or
several whose rows are drawn together (e.g. the built-in kernels and a `gemmlab evaluate` CSV of
PyTorch's matmul on the same inputs; rows of family external or user, kernels gemmlab did not
build, are green diamonds and always numbered). It writes one figure. One
row of panels per input format (and output format, where a CSV has kernels of one input format
writing different outputs: fp16 -> fp16 is judged in units of fp16's u, so it gets its own row):
left |bias| = |mean (Ĉ−C)/|C|| / u_out, right spread = std (Ĉ−C)/|C| / u_out, both against the
kernel's TFLOP/s (same run). The Pareto front (no other kernel of the panel is both faster and
more accurate) is a step line; its kernels and every cuBLAS row (red stars) are numbered, with a key beside the
panels. Rows of one
distribution (default uniform_0_1) and one size (default the largest) with a time; failed_bound
rows are crosses.

--compact draws the overview instead (the README's first figure, legible at a page's width): one panel
per input format, |bias| only, three panels a row; the rows of the format's most common output format
make the panel's Pareto front, those of another output format (fp16 -> fp16) are hollow triangles, each
in units of its own output's u; no numbered key.

usage: pareto.py RUN.csv [MORE.csv ...] OUT.png [--dist uniform_0_1] [--size MxNxK] [--compact]
"""
import argparse
import csv
import math
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402

METRICS = (("rel_mean_u", "|bias| in units of u_out", abs), ("rel_std_u", "spread in units of u_out", float))
FORMAT_ORDER = ("fp64", "fp32", "tf32", "fp16", "bf16", "e4m3", "e5m2")


EXTERNAL = ("external", "user")  # families of kernels gemmlab did not build (`gemmlab evaluate`)


def load(paths, dist, size):
    rows = []
    for path in paths:
        with open(path, newline="") as f:
            rows += [r for r in csv.DictReader(f)
                     if r["status"] in ("passed", "failed_bound", "no_bound") and r.get("tflops")
                     and r["distribution"] == dist]
    if not rows:
        return [], size
    if not size:
        big = max(rows, key=lambda r: int(r["M"]) * int(r["N"]) * int(r["K"]))
        size = f'{big["M"]}x{big["N"]}x{big["K"]}'
    return [r for r in rows if f'{r["M"]}x{r["N"]}x{r["K"]}' == size], size


def pareto_front(points):
    """Indices of the points (err, tflops) that no other point beats in both (lower err, higher tflops)."""
    order = sorted(range(len(points)), key=lambda i: (points[i][0], -points[i][1]))
    front, best = [], -math.inf
    for i in order:
        if points[i][1] > best:
            front.append(i)
            best = points[i][1]
    return front


def at_floor(vals, sel):
    """(err, tflops) points; an error of exactly 0 has no place on a log axis: it is drawn at a
    floor a third of the smallest positive error (returned, or None when there is no zero)."""
    positive = [v for v in vals if v > 0 and math.isfinite(v)]
    floor = min(positive) / 3 if positive else 1e-3
    pts = [(v if v > 0 else floor, float(r["tflops"])) for v, r in zip(vals, sel)]
    return pts, (floor if len(positive) < len(vals) else None)


def log_ticks(axis, lo, hi, decades_above):
    """Readable ticks on a log axis: powers of ten over a range wider than `decades_above`, 1-2-5
    per decade over a narrower one, evenly spaced round numbers within one decade."""
    if hi / lo > decades_above:
        axis.set_major_locator(matplotlib.ticker.LogLocator(base=10))
        axis.set_major_formatter(matplotlib.ticker.LogFormatterSciNotation())
    else:
        if hi / lo > 8:
            axis.set_major_locator(matplotlib.ticker.LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        else:
            axis.set_major_locator(matplotlib.ticker.MaxNLocator(nbins=5))
        axis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    axis.set_minor_formatter(matplotlib.ticker.NullFormatter())


def draw_panel(ax, sel, vals, front, number, label):
    pts, floor = at_floor(vals, sel)
    ax.step([pts[i][0] for i in front], [pts[i][1] for i in front], where="post", color="tab:blue", lw=1.2,
            alpha=0.7, zorder=1)
    for i, (r, (x, y)) in enumerate(zip(sel, pts)):
        lib = r["family"] == "cublas"
        ext = r["family"] in EXTERNAL
        failed = r["status"] == "failed_bound"
        ax.scatter(x, y, s=120 if lib else 60 if ext else 32, marker="x" if failed else "*" if lib else "D" if ext else "o",
                   color="tab:red" if lib else "tab:green" if ext else "tab:blue" if i in front else "0.65",
                   linewidths=1.2 if failed else 0.4, edgecolors=None if failed else "white",
                   zorder=3 if lib or ext else 2)
    # One label per group of numbered points that coincide (e.g. cuBLAS modes that ran one kernel).
    groups = []
    for i in sorted(number, key=number.get):
        near = [g for g in groups if all(abs(math.log(pts[i][k] / pts[g[0]][k])) < 0.03 for k in (0, 1))]
        near[0].append(i) if near else groups.append([i])
    for g in groups:
        lib = any(sel[i]["family"] == "cublas" for i in g)
        ext = any(sel[i]["family"] in EXTERNAL for i in g)
        ax.annotate(",".join(str(number[i]) for i in g), pts[g[0]], xytext=(5, 3), textcoords="offset points",
                    fontsize=7.5, color="tab:red" if lib else "tab:green" if ext else "0.1", zorder=4)
    ax.set_xscale("log")
    ax.set_yscale("log")
    xs = [p[0] for p in pts]
    ys = [p[1] for p in pts]
    ax.set_xlim(min(xs) / 2.5, max(xs) * 4)
    ax.set_ylim(min(ys) / 1.2, max(ys) * 1.2)
    log_ticks(ax.yaxis, *ax.get_ylim(), decades_above=1e4)
    log_ticks(ax.xaxis, *ax.get_xlim(), decades_above=300)
    ax.grid(True, which="major", alpha=0.3)
    ax.set_xlabel(label + (f"  (0 drawn at {floor:.1g})" if floor else ""), fontsize=9)


def panel_key(r, pairs_per_input):
    inp, out = r["input_format"], r["output_format"]
    return f"{inp} → {out}" if pairs_per_input[inp] > 1 or out != "fp32" else f"{inp} inputs"


def draw_compact(rows, dist, size, out):
    """One panel per input format: TFLOP/s over |bias| in units of u_out, front and cuBLAS marked."""
    plt.rcParams.update({"font.size": 10.5, "xtick.labelsize": 9.5, "ytick.labelsize": 9.5})
    rank = {f: i for i, f in enumerate(FORMAT_ORDER)}
    inputs = sorted({r["input_format"] for r in rows}, key=lambda f: rank.get(f, 99))
    ncols = min(3, len(inputs))
    nrows = -(-len(inputs) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(4.2 * ncols, 3.3 * nrows + 0.8), squeeze=False)
    for ax in axes.flat[len(inputs):]:
        ax.axis("off")
    for ax, inp in zip(axes.flat, inputs):
        sel = [r for r in rows if r["input_format"] == inp]
        outs = [r["output_format"] for r in sel]
        main_out = max(set(outs), key=outs.count)
        vals = [abs(float(r["rel_mean_u"])) for r in sel]
        pts, floor = at_floor(vals, sel)
        main = [i for i, r in enumerate(sel) if r["output_format"] == main_out]
        front = [main[j] for j in pareto_front([pts[i] for i in main])]
        ax.step([pts[i][0] for i in front], [pts[i][1] for i in front], where="post", color="tab:blue", lw=1.2,
                alpha=0.7, zorder=1)
        for i, (r, (x, y)) in enumerate(zip(sel, pts)):
            lib, other = r["family"] == "cublas", r["output_format"] != main_out
            ax.scatter(x, y, s=110 if lib else 26, marker="*" if lib else "^" if other else "o",
                       facecolors="none" if other else "tab:red" if lib else "tab:blue" if i in front else "0.65",
                       edgecolors="tab:red" if lib else "0.35" if other else "white", linewidths=0.8 if other else 0.4,
                       zorder=3 if lib else 2)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(min(p[0] for p in pts) / 2.5, max(p[0] for p in pts) * 3)
        ax.set_ylim(min(p[1] for p in pts) / 1.3, max(p[1] for p in pts) * 1.3)
        log_ticks(ax.yaxis, *ax.get_ylim(), decades_above=1e4)
        log_ticks(ax.xaxis, *ax.get_xlim(), decades_above=300)
        ax.grid(True, which="major", alpha=0.3)
        extra = sorted(set(outs) - {main_out})
        ax.set_title(f"{inp} → {main_out}" + "".join(f" (△ → {o})" for o in extra) + f": {len(sel)} kernels",
                     fontsize=11, loc="left")
        ax.set_xlabel("|bias| in units of u_out" + (f"  (0 at {floor:.1g})" if floor else ""))
        ax.set_ylabel("TFLOP/s")
    handles = [
        plt.Line2D([], [], marker="o", ls="-", color="tab:blue", label="Pareto front"),
        plt.Line2D([], [], marker="o", ls="", color="0.55", label="other gemmlab kernels"),
        plt.Line2D([], [], marker="*", ls="", ms=11, color="tab:red", label="cuBLAS / cuBLASLt"),
        plt.Line2D([], [], marker="^", ls="", mfc="none", color="0.35", label="another output format"),
    ]
    fig.legend(handles=handles, loc="lower center", ncol=4, fontsize=10.5, frameon=False)
    fig.suptitle(f"Speed against bias, {dist} at {size}: better is up and to the left", fontsize=12)
    fig.tight_layout(rect=(0, 0.35 / fig.get_figheight(), 1, 1 - 0.3 / fig.get_figheight()))
    fig.savefig(out, dpi=100)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+", metavar="CSV... OUT.png", help="one or more result CSVs, then the figure")
    ap.add_argument("--dist", default="uniform_0_1")
    ap.add_argument("--size", help="only rows of this MxNxK (default: the largest size in the CSVs)")
    ap.add_argument("--compact", action="store_true",
                    help="one panel per input format, |bias| only (an overview legible at a page's width)")
    a = ap.parse_args()
    if len(a.files) < 2:
        ap.error("give at least one CSV and the output figure")
    csvs, out = a.files[:-1], a.files[-1]
    rows, size = load(csvs, a.dist, a.size)
    if not rows:
        sys.exit(f"pareto.py: no timed passed/failed_bound/no_bound rows for {a.dist} in {', '.join(csvs)}; "
                 "nothing to plot")
    if a.compact:
        draw_compact(rows, a.dist, size, out)
        return

    pairs = {}
    for r in rows:
        pairs.setdefault(r["input_format"], set()).add(r["output_format"])
    per_input = {k: len(v) for k, v in pairs.items()}
    rank = {f: i for i, f in enumerate(FORMAT_ORDER)}
    keys = sorted({(r["input_format"], r["output_format"]) for r in rows},
                  key=lambda io: (rank.get(io[0], 99), rank.get(io[1], 99)))
    panels = list(dict.fromkeys(panel_key({"input_format": i, "output_format": o}, per_input) for i, o in keys))
    # One row per format: |bias| and spread panels sharing the TFLOP/s axis, then the key to the
    # numbered kernels (the Pareto front of either panel, and every cuBLAS row).
    fig, axes = plt.subplots(len(panels), 3, figsize=(15, 3.5 * len(panels) + 0.9), squeeze=False,
                             gridspec_kw={"width_ratios": [1, 1, 0.85]})
    for row, name in enumerate(panels):
        sel = [r for r in rows if panel_key(r, per_input) == name]
        u_out = float(sel[0]["u_out"])
        values = [[fn(float(r[column])) for r in sel] for column, _, fn in METRICS]
        fronts = [pareto_front(at_floor(v, sel)[0]) for v in values]
        named = sorted(set(fronts[0]) | set(fronts[1])
                       | {i for i, r in enumerate(sel) if r["family"] == "cublas" or r["family"] in EXTERNAL},
                       key=lambda i: -float(sel[i]["tflops"]))
        number = {i: n + 1 for n, i in enumerate(named)}
        axes[row][1].sharey(axes[row][0])
        for m, (_, label, _) in enumerate(METRICS):
            draw_panel(axes[row][m], sel, values[m], fronts[m], number, label)
        axes[row][0].set_ylabel(f"{name}\nTFLOP/s (median time)")
        axes[row][0].set_title(f"{name}: |bias|   (u_out = 2^{round(math.log2(u_out))}, {len(sel)} kernels)",
                               fontsize=10, loc="left")
        axes[row][1].set_title(f"{name}: spread", fontsize=10, loc="left")
        key = axes[row][2]
        key.axis("off")
        for n, i in enumerate(named):
            r = sel[i]
            key.text(0, 1 - n * 0.085, f"{number[i]:>2}  {r['kernel']}", transform=key.transAxes, fontsize=7.5,
                     va="top", family="monospace",
                     color="tab:red" if r["family"] == "cublas" else "tab:green" if r["family"] in EXTERNAL else "0.1")
    handles = [
        plt.Line2D([], [], marker="o", ls="-", color="tab:blue", label="Pareto front (faster and more accurate than the rest)"),
        plt.Line2D([], [], marker="o", ls="", color="0.55", label="other kernels"),
        plt.Line2D([], [], marker="*", ls="", ms=11, color="tab:red", label="cuBLAS / cuBLASLt"),
        plt.Line2D([], [], marker="D", ls="", color="tab:green", label="evaluated (gemmlab evaluate)"),
        plt.Line2D([], [], marker="x", ls="", color="0.3", label="failed its bound"),
    ]
    fig.legend(handles=handles, loc="lower center", ncol=5, fontsize=9, frameon=False)
    fig.suptitle(f"Accuracy against speed, {a.dist} at {size}: better is up and to the left")
    fig.tight_layout(rect=(0, 0.4 / fig.get_figheight(), 1, 1 - 0.45 / fig.get_figheight()))
    fig.savefig(out, dpi=100)


if __name__ == "__main__":
    main()
