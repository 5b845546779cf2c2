#!/usr/bin/env python3
"""One family's series: speed and error per kernel, from a gemmlab run CSV.

Left: TFLOP/s per kernel (median time, same run), with the cuBLAS baseline as a line and the ratio
printed on each bar. Without --baseline, each tensor-core kernel is compared with cuBLAS of its own
input format (cublas_gemmex_<fp16|bf16>_f32) when the CSV has that row, else with the family default. Right: for one distribution, the bias (mean relative error) as a dot
and the normwise error as a bar, both in units of the output format's unit roundoff. Reads only
the CSV; writes one figure.

usage: series.py RUN.csv OUT.png --family simt [--baseline cublas_gemmex_fp32_pedantic]
                 [--dist uniform_0_1] [--size MxNxK]
"""
import argparse
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

DEFAULT_BASELINE = {
    "simt": "cublas_gemmex_fp32_pedantic",
    "mma": "cublas_gemmex_fp16_f32",
    "wmma": "cublas_gemmex_fp16_f32",
    "hopper": "cublas_gemmex_fp16_f32",
    "cublas": "cublas_gemmex_fp32_pedantic",
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv")
    ap.add_argument("out")
    ap.add_argument("--family", required=True)
    ap.add_argument("--baseline")
    ap.add_argument("--dist", default="uniform_0_1")
    ap.add_argument("--size")
    a = ap.parse_args()
    baseline = a.baseline or DEFAULT_BASELINE.get(a.family, "cublas_gemmex_fp16_f32")
    with open(a.csv, newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["status"] in ("passed", "failed_bound", "no_bound")]
    if a.size:
        rows = [r for r in rows if f'{r["M"]}x{r["N"]}x{r["K"]}' == a.size]
    elif rows:
        big = max(rows, key=lambda r: int(r["M"]) * int(r["N"]) * int(r["K"]))
        a.size = f'{big["M"]}x{big["N"]}x{big["K"]}'
        rows = [r for r in rows if f'{r["M"]}x{r["N"]}x{r["K"]}' == a.size]
    rows = [r for r in rows if r["distribution"] == a.dist]
    fam = [r for r in rows if r["family"] == a.family]
    if not fam:
        sys.exit(f"series.py: no {a.family} rows for {a.dist} at {a.size} in {a.csv}")
    # A series is speed beside error: rows with no time (gemmlab evaluate's) have none to draw.
    fam = [r for r in fam if r["tflops"]]
    if not fam:
        sys.exit(f"series.py: the {a.family} rows of {a.csv} are not timed (no tflops: rows of gemmlab evaluate?)")
    kernels = list(dict.fromkeys(r["kernel"] for r in fam))
    by = {r["kernel"]: r for r in fam}
    times = {r["kernel"]: float(r["time_ms_median"]) for r in rows if r["time_ms_median"]}
    tflops = {r["kernel"]: float(r["tflops"]) for r in rows if r["tflops"]}

    def baseline_of(k):
        if a.baseline:
            return a.baseline
        own = f'cublas_gemmex_{by[k]["input_format"]}_f32'
        if a.family in ("mma", "wmma", "hopper") and own in times:
            return own
        return baseline

    h = max(3.0, 0.3 * len(kernels) + 1.6)
    fig, (ax_t, ax_e) = plt.subplots(1, 2, figsize=(14, h), sharey=True, gridspec_kw={"width_ratios": [1.2, 1]})
    ys = range(len(kernels))
    tf = [float(by[k]["tflops"]) for k in kernels]
    ax_t.barh(ys, tf, color="tab:blue")
    used = list(dict.fromkeys(baseline_of(k) for k in kernels if baseline_of(k) in times))
    for b, style in zip(used, ["--", ":", "-."]):
        ax_t.axvline(tflops[b], color="tab:red", ls=style, lw=1, label=b)
    for y, k in zip(ys, kernels):
        b = baseline_of(k)
        if b in times:
            ax_t.text(tf[y], y, f" {times[b] / times[k]:.2f}×", va="center", fontsize=7)
    if used:
        ax_t.legend(fontsize=7, loc="lower right")
    ax_t.set_xlabel("TFLOP/s (median of the run's repetitions; label: baseline's time / kernel's time)")
    ax_t.set_yticks(list(ys))
    ax_t.set_yticklabels(kernels, fontsize=7)
    ax_t.invert_yaxis()

    u = [float(by[k]["u_out"]) for k in kernels]
    normw = [float(by[k]["normwise"]) / uu for k, uu in zip(kernels, u)]
    bias = [float(by[k]["rel_mean"]) / uu for k, uu in zip(kernels, u)]
    ax_e.barh(ys, normw, color="tab:gray", alpha=0.6, label="normwise ‖Ĉ−C‖/‖C‖")
    ax_e.plot([abs(b) for b in bias], list(ys), "o", color="tab:orange", ms=4, label="|bias| (mean rel. error)")
    for y, b in zip(ys, bias):
        ax_e.text(abs(b) if b else 1e-3, y, " −" if b < 0 else (" +" if b > 0 else " 0"), va="center", fontsize=7)
    ax_e.set_xscale("log")
    ax_e.set_xlabel(f"error on {a.dist}, in units of u_out (sign of the bias beside the dot)")
    ax_e.legend(fontsize=7, loc="lower right")
    for ax in (ax_t, ax_e):
        ax.grid(True, axis="x", alpha=0.3)
    fig.suptitle(f"{a.family} series at {a.size}: speed and accuracy (one run)")
    fig.tight_layout()
    fig.savefig(a.out, dpi=130)


if __name__ == "__main__":
    main()
