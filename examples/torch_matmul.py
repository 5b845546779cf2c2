"""PyTorch's matmul judged by gemmlab, on the same inputs as the built-in kernels.

For each distribution, `gemmlab inputs` writes A and B (the default suite's size and seed, so the
inputs are exactly those of results/default's rows); torch.matmul multiplies them on the GPU under
each precision setting; `gemmlab evaluate` judges every C against the exact reference and writes the
row `gemmlab run` would. The rows go into one CSV, with metadata beside it.

    settings (kernel column)                        inputs  output  torch flag
    torch_matmul_fp16                               fp16    fp16    allow_fp16_reduced_precision_reduction = False
    torch_matmul_fp16_reduced_precision_reduction   fp16    fp16    ... = True
    torch_matmul_bf16                               bf16    bf16    allow_bf16_reduced_precision_reduction = False
    torch_matmul_bf16_reduced_precision_reduction   bf16    bf16    ... = True
    torch_matmul_fp32                               fp32    fp32    allow_tf32 = False
    torch_matmul_fp32_tf32                          fp32    fp32    allow_tf32 = True

Declared numerics (what PyTorch documents, nothing more): accumulation `library` (cuBLAS, internals
not known: judged by u_eff = 2u); accumulator fp32, except fp16 when a reduced-precision reduction
is allowed (the reduction may then run in the output format); compute format tf32 under TF32.

Timing as gemmlab's helper (experiments/device/runner.hpp): warm-up launches, then for each timed
repetition an L2 flush and a NaN-poisoned C, CUDA events around torch.matmul(A, B, out=C) only;
the median is reported (time_ms) with the number of repetitions.

Needs the gemmlab binary, numpy and torch with a CUDA GPU (not the gemmlab Python package):

    python examples/torch_matmul.py --gemmlab carry/gemmlab -o results/torch/torch_matmul.csv
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

# (kernel, input format, output format, accumulator format, compute format, torch flag to set, value)
SETTINGS = [
    ("torch_matmul_fp16", "fp16", "fp16", "fp32", "fp16", "allow_fp16_reduced_precision_reduction", False),
    ("torch_matmul_fp16_reduced_precision_reduction", "fp16", "fp16", "fp16", "fp16",
     "allow_fp16_reduced_precision_reduction", True),
    ("torch_matmul_bf16", "bf16", "bf16", "fp32", "bf16", "allow_bf16_reduced_precision_reduction", False),
    ("torch_matmul_bf16_reduced_precision_reduction", "bf16", "bf16", "bf16", "bf16",
     "allow_bf16_reduced_precision_reduction", True),
    ("torch_matmul_fp32", "fp32", "fp32", "fp32", "fp32", "allow_tf32", False),
    ("torch_matmul_fp32_tf32", "fp32", "fp32", "fp32", "tf32", "allow_tf32", True),
]


def default_distributions(gemmlab: str) -> list[str]:
    """The distributions `gemmlab run -d all` uses, as `gemmlab list` prints them."""
    out = subprocess.run([gemmlab, "list"], capture_output=True, text=True, check=True).stdout.splitlines()
    i = next(k for k, line in enumerate(out) if line.startswith("distributions"))
    names = []
    for line in out[i + 1:]:
        if not line.startswith("  ") or line.strip().startswith("forms:"):
            break
        names.append(line.strip())
    return names


def time_matmul(torch, A, B, C, warmup: int, reps: int) -> list[float]:
    """gemmlab's timing helper for torch.matmul: L2 flush and NaN-poisoned C before each repetition,
    CUDA events around the matmul only. Returns every repetition's time in ms."""
    l2 = torch.cuda.get_device_properties(A.device).L2_cache_size if hasattr(
        torch.cuda.get_device_properties(A.device), "L2_cache_size") else 64 << 20
    flush = torch.empty(2 * max(l2, 1 << 20), dtype=torch.uint8, device=A.device)
    for _ in range(warmup):
        torch.matmul(A, B, out=C)
    times = []
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(reps):
        flush.zero_()
        C.fill_(float("nan"))
        start.record()
        torch.matmul(A, B, out=C)
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    return times


def run(cmd: list[str]) -> subprocess.CompletedProcess:
    p = subprocess.run(cmd, capture_output=True, text=True)
    sys.stderr.write(p.stderr)
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {p.returncode}")
    return p


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gemmlab", default="build/gemmlab", help="the gemmlab binary")
    ap.add_argument("-o", "--out", default="results/torch/torch_matmul.csv", help="CSV (metadata beside it)")
    ap.add_argument("-s", "--size", default="4096x4096x4096", help="MxNxK (default the default suite's)")
    ap.add_argument("-d", "--dists", default="all", help="comma-separated distributions (default: gemmlab's defaults)")
    ap.add_argument("--seed", default="20261121", help="seed (default: the default suite's, same inputs as its rows)")
    ap.add_argument("--settings", default="all", help="comma-separated kernel names from the table above")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--threads", type=int, default=0, help="CPU threads for gemmlab's reference")
    ap.add_argument("--work", help="folder for inputs and outputs (default: a temporary folder, removed)")
    a = ap.parse_args()

    try:
        import torch
    except ImportError:
        print("torch_matmul.py: PyTorch is not installed (pip install torch); nothing done", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("torch_matmul.py: no CUDA GPU is visible to PyTorch; nothing done", file=sys.stderr)
        return 2
    out = Path(a.out)
    if out.suffix != ".csv":
        raise SystemExit("--out must name a .csv file")
    out.parent.mkdir(parents=True, exist_ok=True)
    dists = default_distributions(a.gemmlab) if a.dists == "all" else a.dists.split(",")
    settings = SETTINGS if a.settings == "all" else [s for s in SETTINGS if s[0] in a.settings.split(",")]
    if not settings:
        raise SystemExit(f"--settings: none of {a.settings} is known; known: {', '.join(s[0] for s in SETTINGS)}")
    work = Path(a.work) if a.work else Path(tempfile.mkdtemp(prefix="gemmlab_torch_"))
    work.mkdir(parents=True, exist_ok=True)
    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}
    flags = torch.backends.cuda.matmul
    saved = {f: getattr(flags, f) for f in ("allow_tf32", "allow_fp16_reduced_precision_reduction",
                                            "allow_bf16_reduced_precision_reduction")}
    header, rows, evaluations, skipped = None, [], [], []
    t0 = time.time()
    try:
        for dist in dists:
            for fmt in dict.fromkeys(s[1] for s in settings):
                folder = work / f"{dist}_{fmt}"
                p = subprocess.run([a.gemmlab, "inputs", "-d", dist, "-s", a.size, "--seed", a.seed, "--format", fmt,
                                    "-o", str(folder), "--force", "--threads", str(a.threads)],
                                   capture_output=True, text=True)
                if p.returncode != 0:  # e.g. cancel_-10 cannot be expressed in bf16
                    skipped.append({"distribution": dist, "format": fmt, "why": p.stderr.strip()})
                    print(f"[torch] skip {dist} {fmt}: {p.stderr.strip()}", file=sys.stderr)
                    continue
                A = torch.from_numpy(np.load(folder / "A.npy")).to(dtype[fmt]).cuda()
                B = torch.from_numpy(np.load(folder / "B.npy")).to(dtype[fmt]).cuda()
                C = torch.empty((A.shape[0], B.shape[1]), dtype=dtype[fmt], device="cuda")
                for name, _, out_fmt, acc_fmt, compute_fmt, flag, value in (s for s in settings if s[1] == fmt):
                    for f, v in saved.items():
                        setattr(flags, f, v)
                    setattr(flags, flag, value)
                    times = time_matmul(torch, A, B, C, a.warmup, a.reps)
                    torch.matmul(A, B, out=C)  # the C judged: one more product, as the last timed one
                    torch.cuda.synchronize()
                    c = C.float().cpu().numpy() if fmt == "bf16" else C.cpu().numpy()  # bf16 -> float32 is exact
                    c_path = work / f"{name}_{dist}.npy"
                    np.save(c_path, c)
                    row_csv = work / f"{name}_{dist}.csv"
                    median = float(np.median(times))
                    run([a.gemmlab, "evaluate", str(folder), "--output", str(c_path), "--name", name,
                         "--family", "external", "--output-format", out_fmt, "--accumulation", "library",
                         "--accumulator-format", acc_fmt, "--compute-format", compute_fmt,
                         "--time-ms", repr(median), "--reps", str(a.reps), "--allow-nonfinite",
                         "--note", f"torch.backends.cuda.matmul.{flag}={value}", "--threads", str(a.threads),
                         "-o", str(row_csv)])
                    with open(row_csv) as f:
                        r = list(csv.reader(f))
                    header = header or r[0]
                    assert r[0] == header, "evaluate rows must share one header"
                    rows += r[1:]
                    with open(row_csv.with_suffix("").with_suffix(".meta.json")) as f:
                        meta = json.load(f)
                    meta["times_ms"] = times
                    evaluations.append(meta)
                    os.remove(c_path)
                    print(f"[torch] {name} {dist}: {median:.3f} ms", file=sys.stderr)
                shutil.rmtree(folder)
    finally:
        for f, v in saved.items():
            setattr(flags, f, v)
        if not a.work:
            shutil.rmtree(work, ignore_errors=True)
    if header is None:
        raise SystemExit("no row was evaluated")
    partial = out.with_name(out.name + ".partial")
    with open(partial, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(header)
        w.writerows(rows)
    props = torch.cuda.get_device_properties(0)
    meta = {"produced_by": "examples/torch_matmul.py", "command_line": " ".join(sys.argv),
            "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "seconds": time.time() - t0,
            "torch": torch.__version__, "cuda": torch.version.cuda, "cublas_note": "torch.matmul -> cuBLAS",
            "gpu": {"name": props.name, "cc": f"{props.major}.{props.minor}", "sm_count": props.multi_processor_count},
            "numpy": np.__version__, "size": a.size, "seed": a.seed, "distributions": dists,
            "timing": {"warmup": a.warmup, "reps": a.reps, "l2_flush": True, "nan_poisoned_c": True},
            "skipped": skipped, "rows": len(rows), "columns": header, "evaluations": evaluations}
    meta_path = out.with_suffix("").with_suffix(".meta.json")
    meta_path.write_text(json.dumps(meta, indent=2) + "\n")
    os.replace(partial, out)
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
