#!/usr/bin/env python3
"""Bias and spread of the signed relative error against K, per accumulation mode and distribution.

Reads only a gemmlab CSV (the accumulation_vs_k suite: experiments/suites/accumulation_vs_k.toml)
and writes one figure: one column per distribution; top row the bias (mean signed relative error,
with its 95% confidence half-width as error bars), bottom row the spread (standard deviation).
One line per kernel, coloured by accumulation mode (in_mma, external, promoted every N, library).

    python3 plots/accumulation_vs_k.py results/accumulation_vs_k.csv -o results/accumulation_vs_k.png
"""
import argparse
import csv
import math
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

NEEDED = ["kernel", "accumulation", "promotion_interval_k", "distribution", "K", "rel_mean", "rel_mean_ci95",
          "rel_std", "status"]


def label(row):
    acc = row["accumulation"]
    if acc == "promoted":
        return f"promoted every {int(row['promotion_interval_k'])} k"
    return acc


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv", help="gemmlab CSV (one row per kernel x distribution x size x seed)")
    ap.add_argument("out_pos", nargs="?", help="figure file (same as --out)")
    ap.add_argument("-o", "--out", default="accumulation_vs_k.png", help="figure file (png, pdf or svg)")
    args = ap.parse_args()
    if args.out_pos:
        args.out = args.out_pos

    with open(args.csv, newline="") as f:
        reader = csv.DictReader(f)
        missing = [c for c in NEEDED if c not in (reader.fieldnames or [])]
        if missing:
            sys.exit(f"{args.csv}: missing columns {missing}; expected a gemmlab run CSV")
        rows = [r for r in reader if r["status"] in ("passed", "failed_bound", "no_bound")]
    if not rows:
        sys.exit(f"{args.csv}: no rows with results (status passed or failed_bound)")
    # (kernel, distribution) -> K -> per-seed statistics; several seeds per K are averaged.
    # For mean-zero data |C| << |A||B| at many entries and relative errors explode there, so those
    # distributions use the signed componentwise error (C^-C)/(|A||B|) when the CSV has it.
    acc = defaultdict(lambda: defaultdict(list))
    info = {}
    measure = {}
    for r in rows:
        d = r["distribution"]
        cw = "cw_mean" in r and r["cw_mean"] != "" and not d.startswith("uniform_0_1")
        measure[d] = "componentwise (Ĉ−C)/(|A||B|)" if cw else "relative (Ĉ−C)/|C|"
        p = "cw" if cw else "rel"
        acc[(r["kernel"], d)][int(r["K"])].append(
            (float(r[p + "_mean"]), float(r[p + "_mean_ci95"]), float(r[p + "_std"])))
        info[r["kernel"]] = r
    dists = sorted({d for _, d in acc})
    kernels = sorted(info, key=lambda k: (info[k]["accumulation"], int(info[k]["promotion_interval_k"] or 0), k))
    cmap = plt.get_cmap("tab10")
    colours = {k: cmap(i % 10) for i, k in enumerate(kernels)}
    styles = {"in_mma": "-", "external": "--", "promoted": ":", "library": "-."}

    fig, axes = plt.subplots(2, len(dists), figsize=(6.0 * len(dists), 7.5), squeeze=False, sharex=True)
    for c, dist in enumerate(dists):
        for k in kernels:
            series = acc.get((k, dist))
            if not series:
                continue
            ks = sorted(series)
            mean = [sum(x[0] for x in series[K]) / len(series[K]) for K in ks]
            ci = [sum(x[1] for x in series[K]) / len(series[K]) for K in ks]
            std = [sum(x[2] for x in series[K]) / len(series[K]) for K in ks]
            name = f"{k} ({label(info[k])})"
            ls = styles.get(info[k]["accumulation"], "-")
            axes[0, c].errorbar(ks, mean, yerr=ci, ls=ls, marker="o", ms=3, color=colours[k], label=name)
            axes[1, c].plot(ks, std, ls=ls, marker="o", ms=3, color=colours[k], label=name)
        axes[0, c].set_title(f"{dist}: bias (mean of the signed {measure[dist]})", fontsize=9)
        axes[0, c].axhline(0.0, color="k", lw=0.6)
        small = [abs(x[0]) for (k, d), ser in acc.items() if d == dist for v in ser.values() for x in v if x[0] != 0]
        axes[0, c].set_yscale("symlog", linthresh=10 ** math.floor(math.log10(min(small))) if small else 1e-8)
        axes[1, c].set_title(f"{dist}: spread (std of the signed {measure[dist]})", fontsize=9)
        axes[1, c].set_yscale("log")
        all_k = sorted({K for (k, d), ser in acc.items() if d == dist for K in ser})
        for r in range(2):
            axes[r, c].set_xscale("log", base=2)
            axes[r, c].set_xlim(all_k[0] / 1.4, all_k[-1] * 1.4)
            axes[r, c].grid(True, which="both", alpha=0.3)
        axes[1, c].set_xlabel("K")
    axes[0, 0].set_ylabel("bias")
    axes[1, 0].set_ylabel("spread")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=2, fontsize=8, frameon=False)
    fig.suptitle("Tensor-core accumulation: in the mma vs outside (fp32, round to nearest) vs promoted")
    fig.tight_layout(rect=(0, 0.04 + 0.025 * ((len(labels) + 1) // 2), 1, 0.97))
    fig.savefig(args.out, dpi=130)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
