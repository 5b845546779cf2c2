"""Judge Triton, torch.matmul and torch._scaled_mm with gemmlab.judge, on the inputs gemmlab run uses.

    python examples/judge_frameworks.py --out results/judge/h100_<date> [--sizes 4096 2048x8192x3072]

Every flavour of examples/triton_matmul.py, torch.matmul in fp16, bf16 and fp32 (TF32 off
and on), and torch._scaled_mm with rowwise e4m3 scaling (unit scales: the product itself; scaled
recipes are another study), each at every size on U[0,1) and N(0,1), seed 20261121: one CSV and
.meta.json per kernel under --out, and a table on stdout. `gemmlab run` with the same -d, -s and
--seed gives the built-in kernels' rows on bit-identical inputs (scripts/lab/gpu_session.sh part judge).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import pandas as pd
import torch

import gemmlab

sys.path.insert(0, str(Path(__file__).resolve().parent))
from judge_forms import tf32_mode  # noqa: E402,F401 - invariance_frameworks.py takes it from here
from triton_matmul import flavours  # noqa: E402

DISTS = ("uniform_0_1", "normal_0_1")
SEED = 20261121


def torch_flavours() -> dict[str, dict]:
    def mm(A, B):
        return torch.matmul(A, B)

    def scaled_mm_rowwise(A, B):
        # Rowwise scales (one per row of A, one per column of B), all 1: bf16 output, as Hopper's
        # rowwise path requires. B arrives column-major (layout_b="col"), as _scaled_mm wants it.
        sa = torch.ones((A.shape[0], 1), dtype=torch.float32, device=A.device)
        sb = torch.ones((1, B.shape[1]), dtype=torch.float32, device=A.device)
        return torch._scaled_mm(A, B, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)

    return {
        "torch_matmul_fp16": dict(fn=mm, input_format="fp16", output_format="fp16"),
        "torch_matmul_bf16": dict(fn=mm, input_format="bf16", output_format="bf16"),
        "torch_matmul_fp32": dict(fn=mm, input_format="fp32", output_format="fp32", tf32=False),
        "torch_matmul_fp32_tf32": dict(fn=mm, input_format="fp32", output_format="fp32", tf32=True),
        "torch_scaled_mm_rowwise_e4m3": dict(fn=scaled_mm_rowwise, input_format="e4m3", output_format="bf16",
                                             layout_b="col"),
    }


def parse_size(s: str) -> tuple[int, int, int]:
    parts = [int(x) for x in s.lower().split("x")]
    return (parts[0],) * 3 if len(parts) == 1 else tuple(parts)  # type: ignore[return-value]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="folder for one CSV + .meta.json per kernel")
    ap.add_argument("--sizes", nargs="+", default=["4096", "2048x8192x3072"])
    ap.add_argument("--only", nargs="*", help="kernel names to run (default: all)")
    ap.add_argument("--reps", type=int, default=20)
    a = ap.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    sizes = [parse_size(s) for s in a.sizes]
    todo = {**flavours(), **torch_flavours()}
    if a.only:
        todo = {k: v for k, v in todo.items() if k in a.only}
    frames, skipped = [], []
    for name, f in todo.items():
        t0 = time.time()
        try:
            with tf32_mode(f.get("tf32")):
                rows = gemmlab.judge(f["fn"], name=name, input_format=f["input_format"],
                                     output_format=f["output_format"], layout_b=f.get("layout_b", "row"), sizes=sizes,
                                     distributions=DISTS, seeds=[SEED], reps=a.reps, out=out / f"{name}.csv",
                                     force=True, family="external")
        except gemmlab.JudgeError as e:
            # A flavour this Triton or GPU cannot compile or run (e.g. an input_precision it lacks).
            skipped.append((name, str(e).splitlines()[-1][:300]))
            print(f"{name}: not run: {skipped[-1][1]}", flush=True)
            (out / f"{name}.csv").unlink(missing_ok=True)
            (out / f"{name}.meta.json").unlink(missing_ok=True)
            continue
        frames.append(rows)
        print(f"{name}: {len(rows)} rows in {time.time() - t0:.1f} s", flush=True)
    if skipped:
        pd.DataFrame(skipped, columns=["kernel", "why_not_run"]).to_csv(out / "not_run.csv", index=False)
    if not frames:
        return 1
    df = pd.concat(frames, ignore_index=True)
    cols = ["kernel", "distribution", "M", "N", "K", "status", "rel_mean_u", "rel_std_u", "normwise", "time_ms_median",
            "tflops"]
    with pd.option_context("display.width", 200, "display.max_rows", 500):
        print(df[cols].to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
