#!/usr/bin/env python3
"""Post-processing of scripts/lab/gpu_scaled_fp8.sh's OUT_DIR into committed results (run locally).

    python3 scripts/lab/scaled_fp8_results.py OUT_DIR results/scaled_fp8 [--gpu h100]

Copies each CSV with its .meta.json (written by gemmlab beside it) as <stem>_<gpu>.csv, the GPU test
log, and renders plots/scaled_fp8.py's figure; prints the numbers results/scaled_fp8 and the README
report: the speed ratios (block-scaled / cuBLASLt VEC128xBLK128x128, / unscaled fp8 kernels),
prediction mismatches per kernel and candidate order, and the unpromoted fp8 error at K = 4096 beside
DeepSeek-V3's "nearly 2%". Refuses (exit 2, nothing written) a folder without the suite's CSV or a CSV
without its .meta.json.
"""
import argparse
import csv
import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the repository (this file is in scripts/lab/)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir", help="OUT_DIR of scripts/lab/gpu_scaled_fp8.sh")
    ap.add_argument("dest", help="results folder, e.g. results/scaled_fp8")
    ap.add_argument("--gpu", help="suffix naming the GPU (default: from gpu.txt, e.g. h100)")
    a = ap.parse_args()
    suites = sorted(os.path.join(a.out_dir, f) for f in os.listdir(a.out_dir)
                    if f.startswith("scaled_fp8_") and f.endswith(".csv"))
    if not suites:
        sys.exit(f"{a.out_dir} has no scaled_fp8_*.csv: run scripts/lab/gpu_scaled_fp8.sh BIN {a.out_dir} first")
    gpu = a.gpu
    if not gpu:
        name = open(os.path.join(a.out_dir, "gpu.txt")).read().split(",")[0] if os.path.exists(
            os.path.join(a.out_dir, "gpu.txt")) else "gpu"
        gpu = next((m.lower() for m in ("H100", "H200") if m in name), "gpu")
    csvs = sorted(f for f in os.listdir(a.out_dir) if f.endswith(".csv"))
    for f in csvs:
        meta = os.path.join(a.out_dir, f[:-4] + ".meta.json")
        if not os.path.exists(meta):
            sys.exit(f"{f} has no {os.path.basename(meta)} beside it: every committed CSV needs its metadata")
    os.makedirs(a.dest, exist_ok=True)
    for f in csvs:
        stem = f[:-4]
        shutil.copyfile(os.path.join(a.out_dir, f), os.path.join(a.dest, f"{stem}_{gpu}.csv"))
        shutil.copyfile(os.path.join(a.out_dir, stem + ".meta.json"), os.path.join(a.dest, f"{stem}_{gpu}.meta.json"))
    for log in ("gpu_tests.log", "predict.log"):
        if os.path.exists(os.path.join(a.out_dir, log)):
            shutil.copyfile(os.path.join(a.out_dir, log), os.path.join(a.dest, log[:-4] + f"_{gpu}.log"))
    figure = os.path.join(a.dest, f"scaled_fp8_{gpu}.png")
    inputs = [os.path.join(a.dest, os.path.basename(f)[:-4] + f"_{gpu}.csv") for f in suites]
    subprocess.run([sys.executable, os.path.join(ROOT, "plots", "scaled_fp8.py"), *inputs, "-o", figure], check=True)

    rows = [r for f in suites for r in csv.DictReader(open(f))]
    measured = [r for r in rows if r["status"] in ("passed", "failed_bound", "no_bound")]

    def pick(kernel, size, dist):
        return next((r for r in measured if r["kernel"] == kernel and f'{r["M"]}x{r["N"]}x{r["K"]}' == size
                     and r["distribution"] == dist), None)

    print("speed (same run):")
    for size in ("4096x4096x4096", "8192x8192x7168"):
        ours = pick("hgemm_wgmma_11_fp8scaled_sm8_e4m3_1x128_128x128", size, "normal_0_1@e4m3_1x128_128x128")
        lt = pick("cublaslt_fp8_scaled_e4m3_1x128_128x128_f32", size, "normal_0_1@e4m3_1x128_128x128")
        raw = pick("hgemm_wgmma_04_persistent_sm8_e4m3_in_wgmma", size, "normal_0_1")
        prom = pick("hgemm_wgmma_04_persistent_sm8_e4m3_promoted_every_128k", size, "normal_0_1")
        if ours and lt:
            t = float(ours["tflops"])
            print(f"  {size}: {t:.0f} TFLOP/s, {t / float(lt['tflops']):.3f}x cuBLASLt VEC128xBLK128x128"
                  + (f", {t / float(raw['tflops']):.3f}x unscaled in_wgmma" if raw else "")
                  + (f", {t / float(prom['tflops']):.3f}x unscaled promoted_every_128k" if prom else ""))
        else:
            print(f"  {size}: the block-scaled rows are missing (statuses: see the CSV)")
    unpromoted = pick("hgemm_wgmma_04_persistent_sm8_e4m3_in_wgmma", "4096x4096x4096", "normal_0_1")
    if unpromoted:
        print(f"unpromoted e4m3 wgmma at K = 4096 on N(0,1): max relative error {float(unpromoted['rel_max_abs']):.3e}, "
              f"normwise {float(unpromoted['normwise']):.3e}, bias {float(unpromoted['rel_mean']):.3e} "
              "(DeepSeek-V3: 'nearly 2%' maximum relative error)")
    for f in csvs:
        if f.startswith("predict_"):
            for r in csv.DictReader(open(os.path.join(a.out_dir, f))):
                print(f"predict {r['kernel']} {r['distribution']} [{r['order_source']}] {r['order']}: "
                      f"{r['mismatches']} of {r['outputs']} mismatch")
    print(f"wrote {a.dest} ({len(csvs)} CSVs) and {figure}")


if __name__ == "__main__":
    main()
