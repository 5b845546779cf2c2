#!/usr/bin/env python3
"""fp64 emulation: error of cuBLAS's fixed-point DGEMM emulation against mantissa bits and against phi,
native DGEMM and the correctly rounded result marked, with speed beside it.

Reads only CSV (gemmlab run rows of the fp64_emulation suite, experiments/suites/fp64_emulation.toml;
columns kernel, distribution, M, N, K, status, rel_max_abs, tflops). Three panels:
  1. maximum relative error against the emulation's mantissa bits, one line per expspread_PHI at
     m = n = k = 1024 (solid) and k = 16384 (dashed); native DGEMM (cublas_dgemm) as horizontal lines
     and the library's automatic setting as markers at the right; u = 2^-53 (a correctly rounded
     result's largest relative error) as the "exact" line;
  2. maximum relative error against phi for native DGEMM, the automatic setting and the DFMA and f64
     tensor-core kernels (k = 1024 solid, 16384 dashed);
  3. TFLOP/s of every fp64 kernel at the largest size in the CSVs.

    python3 plots/fp64_emulation.py results/fp64/fp64_emulation_1024_h100.csv \
        results/fp64/fp64_emulation_4096_h100.csv -o results/fp64/fp64_emulation_h100.png
"""
import argparse
import csv
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

NEEDED = ["kernel", "distribution", "M", "N", "K", "status", "rel_max_abs", "tflops"]
# The fixed mantissa setting each emulation kernel is registered with (kernels/fp64/cublas_dgemm.cu,
# GEMMLAB_EMU_BITS). A name is an identity, not parsed: a kernel missing here stops the script.
MANTISSA_BITS = {f"cublas_dgemm_emu_b{b}": b for b in (16, 24, 32, 40, 48, 56, 64, 72, 79)}
NATIVE, AUTO = "cublas_dgemm", "cublas_dgemm_emu_auto"
OTHERS = {"dgemm_01_dfma_tiled": "DFMA (CUDA cores)", "dgemm_mma_01_m8n8k4": "mma.sync f64"}
MEASURED = {"passed", "failed_bound", "no_bound", "nondeterministic"}


def read(paths):
    rows = []
    for p in paths:
        with open(p, newline="") as f:
            reader = csv.DictReader(f)
            missing = [c for c in NEEDED if c not in (reader.fieldnames or [])]
            if missing:
                sys.exit(f"{p}: missing columns {missing}; expected at least {NEEDED}")
            rows += [r for r in reader if r["status"] in MEASURED]
    emu = {r["kernel"] for r in rows if r["kernel"].startswith("cublas_dgemm_emu_")} - {AUTO}
    unknown = sorted(emu - MANTISSA_BITS.keys())
    if unknown:
        sys.exit(f"emulation kernels without a known mantissa setting: {unknown}; add them to MANTISSA_BITS")
    return rows


def phi(dist):
    return float(dist.split("_", 1)[1]) if dist.startswith("expspread_") else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv", nargs="+", help="gemmlab run CSVs of the fp64_emulation suite (a last .png: the figure)")
    ap.add_argument("-o", "--out", help="figure file (.png)")
    a = ap.parse_args()
    if not a.out and len(a.csv) > 1 and a.csv[-1].endswith(".png"):
        a.out = a.csv.pop()
    if not a.out:
        sys.exit("give the figure file: -o OUT.png (or as the last argument)")
    rows = read(a.csv)
    m1024 = [r for r in rows if r["M"] == "1024" and r["N"] == "1024" and phi(r["distribution"]) is not None]
    if not m1024:
        sys.exit("no m = n = 1024 expspread_PHI rows to plot")
    fig, ax = plt.subplots(1, 3, figsize=(17, 5))
    colours = {}
    for ks, style in (("1024", "-"), ("16384", "--")):
        by = defaultdict(dict)
        native, auto = {}, {}
        for r in m1024:
            if r["K"] != ks:
                continue
            p, err = phi(r["distribution"]), float(r["rel_max_abs"])
            if r["kernel"] in MANTISSA_BITS:
                by[p][MANTISSA_BITS[r["kernel"]]] = err
            elif r["kernel"] == NATIVE:
                native[p] = err
            elif r["kernel"] == AUTO:
                auto[p] = err
        for p in sorted(by):
            bits = sorted(by[p])
            line = ax[0].semilogy(bits, [by[p][b] for b in bits], style, marker="o", ms=3,
                                  color=colours.get(p), label=f"phi {p:g}, k {ks}")[0]
            colours[p] = line.get_color()
            if p in native:
                ax[0].axhline(native[p], color=colours[p], ls=":", lw=1)
            if p in auto:
                ax[0].plot([max(bits) + 4], [auto[p]], marker="*", ms=10, color=colours[p], ls="none")
        for name, label in [(NATIVE, "cuBLAS DGEMM"), (AUTO, "emulation, automatic bits"), *OTHERS.items()]:
            pts = sorted((phi(r["distribution"]), float(r["rel_max_abs"])) for r in m1024
                         if r["kernel"] == name and r["K"] == ks)
            if pts:
                ax[1].semilogy([x for x, _ in pts], [y for _, y in pts], style, marker="o", label=f"{label}, k {ks}")
    for x in ax[:2]:
        x.axhline(2.0**-53, color="k", lw=1, label="exact, correctly rounded (u = 2^-53)")
    ax[0].set(xlabel="emulation mantissa bits (fixed)", ylabel="max relative error",
              title="cuBLAS fixed-point DGEMM emulation, m = n = 1024\n(dotted: native DGEMM; star: automatic)")
    ax[1].set(xlabel="phi of expspread_PHI", ylabel="max relative error", title="error against phi, m = n = 1024")
    ax[0].legend(fontsize=7)
    ax[1].legend(fontsize=7)
    big = max(rows, key=lambda r: int(r["M"]) * int(r["N"]) * int(r["K"]))
    size = (big["M"], big["N"], big["K"])
    speed = {}
    for r in rows:
        if (r["M"], r["N"], r["K"]) == size and r["tflops"] not in ("", "nan"):
            speed.setdefault(r["kernel"], float(r["tflops"]))
    names = sorted(speed, key=speed.get)
    ax[2].barh(names, [speed[n] for n in names])
    ax[2].set(xlabel="TFLOP/s", title=f"speed at {'x'.join(size)}")
    ax[2].tick_params(axis="y", labelsize=7)
    fig.tight_layout()
    fig.savefig(a.out, dpi=130)
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
