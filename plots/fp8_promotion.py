#!/usr/bin/env python3
"""fp8 promotion: error of fp8 GEMM against K for each promotion interval, beside its speed.

Reads only CSV: the error CSV (columns kernel, accumulation, promotion_interval_k, distribution, K,
rel_mean, rel_std, rel_max_abs; written by the fp8 promotion experiment, see
experiments/suites/fp8_promotion.toml) and, optionally, a timing CSV with columns kernel, M, tflops
(results/hopper/hopper_bench_h200.csv). One figure: for each distribution, |bias|, spread and max
relative error against K (log-log), one line per kernel; a last panel with TFLOP/s at the largest
size of the timing CSV.

    python3 plots/fp8_promotion.py results/hopper/fp8_promotion_h200.csv \
        --speed results/hopper/hopper_bench_h200.csv -o results/hopper/fp8_promotion_h200.png
"""
import argparse
import csv
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

NEEDED = ["kernel", "accumulation", "promotion_interval_k", "distribution", "K", "rel_mean", "rel_std", "rel_max_abs"]


def label(row):
    name = row["kernel"]
    if name.startswith("cublaslt"):
        return "cuBLASLt" + (" fast_accum" if name.endswith("fast_accum") else " (default)")
    fmt = "e5m2" if "e5m2" in name else "e4m3"
    if row["accumulation"] == "promoted":
        return f"{fmt} promoted every {int(row['promotion_interval_k'])}"
    return f"{fmt} {row['accumulation']}" + (" (cluster2)" if "cluster2" in name else "")


def read(path, needed):
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        missing = [c for c in needed if c not in (reader.fieldnames or [])]
        if missing:
            sys.exit(f"{path}: missing columns {missing}; expected at least {needed}")
        return list(reader)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv", help="error CSV of the fp8 promotion experiment")
    ap.add_argument("--speed", help="timing CSV (kernel, M, tflops), optional")
    ap.add_argument("out_pos", nargs="?", help="figure file (same as --out)")
    ap.add_argument("-o", "--out", default="fp8_promotion.png", help="figure file (png, pdf or svg)")
    args = ap.parse_args()
    if args.out_pos:
        args.out = args.out_pos

    rows = read(args.csv, NEEDED)
    if not rows:
        sys.exit(f"{args.csv}: no rows")
    dists = sorted({r["distribution"] for r in rows})
    series = defaultdict(list)  # (dist, kernel) -> [(K, bias, spread, max)]
    labels = {}
    for r in rows:
        if "cluster2" in r["kernel"]:
            continue  # same numerics as the step-4 e4m3 in_wgmma kernel
        series[(r["distribution"], r["kernel"])].append(
            (int(r["K"]), abs(float(r["rel_mean"])), float(r["rel_std"]), float(r["rel_max_abs"])))
        labels[r["kernel"]] = label(r)

    speed = None
    if args.speed:
        srows = read(args.speed, ["kernel", "M", "tflops"])
        big = max(int(r["M"]) for r in srows)
        speed = {r["kernel"]: float(r["tflops"]) for r in srows if int(r["M"]) == big}

    ncols = 3
    nrows = len(dists) + (1 if speed else 0)
    fig, axes = plt.subplots(nrows, ncols, figsize=(15, 4 * nrows), squeeze=False)
    titles = ["|bias| (mean signed relative error)", "spread (std of relative error)", "max |relative error|"]
    kernels = sorted(labels, key=lambda k: labels[k])
    for i, d in enumerate(dists):
        for j in range(3):
            ax = axes[i][j]
            for k in kernels:
                pts = sorted(series.get((d, k), []))
                if not pts:
                    continue
                style = "--" if k.startswith("cublaslt") else "-"
                ax.plot([p[0] for p in pts], [p[j + 1] for p in pts], style, marker="o", ms=3, label=labels[k])
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_xlabel("K")
            ax.set_title(f"{titles[j]}, {d}")
            ax.grid(True, which="both", alpha=0.3)
    axes[0][2].legend(fontsize=7, loc="best")
    if speed:
        ax = axes[-1][0]
        ks = [k for k in kernels if k in speed]
        ax.barh([labels[k] for k in ks], [speed[k] for k in ks])
        ax.set_xlabel(f"TFLOP/s at {big}^3")
        ax.set_title("speed (same GPU, one run)")
        for extra in axes[-1][1:]:
            extra.axis("off")
    fig.tight_layout()
    fig.savefig(args.out, dpi=110)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
