#!/usr/bin/env python3
"""Scaled fp8: total error and GEMM error against TFLOP/s, per recipe and kernel.

Reads only CSV: a `gemmlab run --suite scaled_fp8` result (columns kernel, distribution, recipe, M, N,
K, tflops, rel_std, total_rel_std, status). One panel per (size, source distribution): every measured
scaled row as two markers joined by a line at its TFLOP/s, the GEMM's own error (spread of the
relative error against the exact product of the dequantized operands; hollow) and the total error
(against the exact product of the fp32 sources; filled); the colour is the recipe, the marker the
kernel. Unscaled fp8 rows (no recipe) are drawn with their GEMM error only, in grey.

    python3 plots/scaled_fp8.py results/scaled_fp8/scaled_fp8_h100.csv -o results/scaled_fp8/scaled_fp8_h100.png
"""
import argparse
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

NEEDED = ["kernel", "distribution", "recipe", "M", "N", "K", "tflops", "rel_std", "total_rel_std", "status"]
MEASURED = {"passed", "failed_bound", "no_bound", "nondeterministic"}
MARKERS = "osD^v<>ph*X"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv", nargs="+", help="result CSV(s) of the scaled_fp8 suite, then optionally the figure file")
    ap.add_argument("-o", "--out", default="scaled_fp8.png", help="figure file (png, pdf or svg)")
    args = ap.parse_args()
    if len(args.csv) > 1 and args.csv[-1].lower().endswith((".png", ".pdf", ".svg")):
        args.out = args.csv.pop()
    rows = []
    for path in args.csv:
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            missing = [c for c in NEEDED if c not in (reader.fieldnames or [])]
            if missing:
                sys.exit(f"{path}: missing columns {missing}; a CSV of `gemmlab run --suite scaled_fp8` has them")
            rows += [r for r in reader if r["status"] in MEASURED and r["tflops"]]
    if not rows:
        sys.exit(f"{args.csv}: no measured rows")
    size = lambda r: f'{r["M"]}x{r["N"]}x{r["K"]}'
    source = lambda r: r["distribution"].split("@")[0]
    panels = sorted({(size(r), source(r)) for r in rows if r["recipe"]})
    recipes = sorted({r["recipe"] for r in rows if r["recipe"]})
    kernels = sorted({r["kernel"] for r in rows})
    colour = {rc: plt.cm.tab10(i % 10) for i, rc in enumerate(recipes)}
    marker = {k: MARKERS[i % len(MARKERS)] for i, k in enumerate(kernels)}
    sizes = sorted({p[0] for p in panels})
    sources = sorted({p[1] for p in panels})
    fig, axes = plt.subplots(len(sizes), len(sources), figsize=(5.2 * len(sources), 4.2 * len(sizes)), squeeze=False)
    for (z, src) in panels:
        ax = axes[sizes.index(z)][sources.index(src)]
        for r in rows:
            if size(r) != z:
                continue
            t = float(r["tflops"])
            gemm = abs(float(r["rel_std"]))
            if not r["recipe"]:
                if source(r) == src or src == "normal_0_1" and r["distribution"] == "normal_0_1":
                    ax.scatter([t], [gemm], marker=marker[r["kernel"]], color="0.6", s=30)
                continue
            if source(r) != src:
                continue
            total = float(r["total_rel_std"])
            c = colour[r["recipe"]]
            ax.plot([t, t], [gemm, total], color=c, lw=0.8, alpha=0.6)
            ax.scatter([t], [gemm], marker=marker[r["kernel"]], facecolors="none", edgecolors=c, s=40)
            ax.scatter([t], [total], marker=marker[r["kernel"]], color=c, s=40)
        ax.set_yscale("log")
        ax.set_title(f"{src}, {z}", fontsize=9)
        ax.set_xlabel("TFLOP/s")
        ax.set_ylabel("spread of the relative error")
        ax.grid(True, which="both", alpha=0.3)
    handles = [plt.Line2D([], [], color=colour[rc], marker="s", ls="", label=rc) for rc in recipes]
    handles += [plt.Line2D([], [], color="k", marker=marker[k], ls="", mfc="none", label=k) for k in kernels]
    handles += [plt.Line2D([], [], color="k", marker="o", ls="", mfc="none", label="hollow: GEMM error (vs dequantized)"),
                plt.Line2D([], [], color="k", marker="o", ls="", label="filled: total error (vs fp32 sources)")]
    fig.legend(handles=handles, loc="lower center", ncol=3, fontsize=7, frameon=False)
    fig.tight_layout(rect=(0, 0.05 + 0.012 * len(handles) / 3, 1, 1))
    fig.savefig(args.out, dpi=130)
    print(args.out)


if __name__ == "__main__":
    main()
