"""Determinism and batch invariance of torch.matmul (fp32, TF32, fp16, bf16), torch._scaled_mm (e4m3)
and one Triton matmul per format, with gemmlab.invariance: the same C++ as `gemmlab invariance`.

    python examples/invariance_frameworks.py --out DIR [--size 512x4096x4096] [--te]

One CSV + .meta.json per callable under --out (rows [0, m) at M = m against the full M for m = 1..8,
2^p - 1, 2^p, 2^p + 1 below M; 3 repeats; the cost row), and a table on stdout. --te adds Transformer
Engine #2986's batch sizes (1, 2, 4, 8, 16, 32 rows against 64, bf16 (M, 4096) x (4096, 4096)) for
torch.matmul bf16 and the Triton bf16 matmul. The Triton kernels have one fixed tile configuration
(examples/triton_matmul.py): each entry's K range is summed in one order whatever M, so
they are expected to be invariant; torch.matmul calls cuBLAS(Lt), which chooses its algorithm per size.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import pandas as pd

import gemmlab

sys.path.insert(0, str(Path(__file__).resolve().parent))
from judge_frameworks import parse_size, tf32_mode, torch_flavours  # noqa: E402
from triton_matmul import flavours  # noqa: E402

# The flavours of judge_frameworks.py / triton_matmul.py this study covers: every format once.
KERNELS = ("torch_matmul_fp32", "torch_matmul_fp32_tf32", "torch_matmul_fp16", "torch_matmul_bf16",
           "torch_scaled_mm_rowwise_e4m3", "triton_fp32_ieee", "triton_fp32_tf32", "triton_fp16_f32",
           "triton_bf16_f32", "triton_e4m3_f32")
TE = ("torch_matmul_bf16", "triton_bf16_f32")


def run(name: str, f: dict, out: Path, **kw) -> pd.DataFrame | None:
    t0 = time.time()
    try:
        with tf32_mode(f.get("tf32")):
            rows = gemmlab.invariance(f["fn"], name=name, input_format=f["input_format"],
                                      output_format=f["output_format"], layout_b=f.get("layout_b", "row"),
                                      family="external", out=out, force=True, **kw)
    except (RuntimeError, ValueError) as e:  # a flavour this Triton, torch or GPU cannot run
        print(f"{name}: not run: {str(e).splitlines()[-1][:300]}", flush=True)
        return None
    print(f"{name}: {len(rows)} rows in {time.time() - t0:.1f} s", flush=True)
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="folder for one CSV + .meta.json per callable")
    ap.add_argument("--size", default="512x4096x4096")
    ap.add_argument("--te", action="store_true", help="also Transformer Engine #2986's batch sizes")
    a = ap.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    every = {**flavours(), **torch_flavours()}
    frames = []
    for name in KERNELS:
        rows = run(name, every[name], out / f"fw_{name}.csv", size=parse_size(a.size), m="default", repeats=3)
        if rows is not None:
            frames.append(rows)
    if a.te:
        for name in TE:
            rows = run(name, every[name], out / f"te_{name}.csv", size=(64, 4096, 4096), m=[1, 2, 4, 8, 16, 32],
                       repeats=3, cost=False)
            if rows is not None:
                frames.append(rows)
    if not frames:
        return 1
    df = pd.concat(frames, ignore_index=True)
    table = (df[df["check"] != "cost"].groupby(["kernel", "M", "N", "K"])["status"].value_counts().unstack(fill_value=0))
    with pd.option_context("display.width", 200, "display.max_rows", 500):
        print(table.to_string())
    return 0


if __name__ == "__main__":
    sys.exit(main())
