"""Judge the matmuls a model runs with gemmlab.judge, each on its form (reference/gemm_form.hpp): F.linear with a
bias, torch.addmm with alpha and beta, torch.bmm, a grouped GEMM, torch._scaled_mm with a bias and an fp8 output.

    python examples/judge_forms.py --out OUT [--only NAME,...] [--quick]

One CSV and .meta.json per callable under OUT, and a table on stdout (kernel, form, distribution, status, bias and
spread in units of the output's u, TFLOP/s). A callable torch refuses (a dtype or layout its build does not take)
gets a line saying why, and the run goes on. Where the installed torch has no torch._grouped_mm the grouped case
says so: run cuBLAS's grouped GEMM instead (`gemmlab run -k cublas_grouped_bf16 --form groups=128+512+1000+2048
-s 3688x4096x4096`, scripts/lab/gpu_forms.sh does). --quick: small sizes (a smoke run).
"""

from __future__ import annotations

import argparse
import math
import sys
from contextlib import contextmanager
from pathlib import Path

import pandas as pd
import torch
import torch.nn.functional as F

import gemmlab
from gemmlab.results import write_summary_meta

DISTS = ("uniform_0_1", "normal_0_1")
SEED = 20261121


def cases(quick: bool) -> dict[str, dict]:
    big = (1024, 1024, 1024) if quick else (4096, 4096, 4096)

    def linear(A, B, bias):
        # F.linear(x, W, b) = x W^T + b with W (N, K): gemmlab's B (K, N) transposed is that weight.
        return F.linear(A, B.t(), bias)

    def addmm(A, B, C0, alpha, beta):
        return torch.addmm(C0, A, B, beta=beta, alpha=alpha)

    def bmm(A, B):
        return torch.bmm(A, B)

    def grouped_mm(A, B, offs):
        # B arrives (groups, K, N) with each group's matrix column-major (layout_b="col"), as _grouped_mm wants.
        return torch._grouped_mm(A, B, offs=offs, out_dtype=torch.bfloat16)

    def scaled_mm_bias(A, B, bias):
        sa = torch.ones((A.shape[0], 1), dtype=torch.float32, device=A.device)
        sb = torch.ones((1, B.shape[1]), dtype=torch.float32, device=A.device)
        return torch._scaled_mm(A, B, scale_a=sa, scale_b=sb, bias=bias, out_dtype=torch.bfloat16)

    def scaled_mm_fp8_out(A, B, bias, scale):
        sa = torch.ones((A.shape[0], 1), dtype=torch.float32, device=A.device)
        sb = torch.ones((1, B.shape[1]), dtype=torch.float32, device=A.device)
        s = torch.tensor(scale, dtype=torch.float32, device=A.device)
        return torch._scaled_mm(A, B, scale_a=sa, scale_b=sb, bias=bias, scale_result=s, out_dtype=torch.float8_e4m3fn)

    addmm_form = dict(alpha=0.5, beta=2, c0="normal_0_1")
    out = {
        "torch_linear_bias_fp16": dict(fn=linear, input_format="fp16", output_format="fp16",
                                       bias="column:uniform_-1_1", sizes=[big]),
        "torch_linear_bias_bf16": dict(fn=linear, input_format="bf16", output_format="bf16",
                                       bias="column:uniform_-1_1", sizes=[big]),
        "torch_addmm_fp32": dict(fn=addmm, input_format="fp32", output_format="fp32", tf32=False, sizes=[big],
                                 **addmm_form),
        "torch_addmm_tf32": dict(fn=addmm, input_format="fp32", output_format="fp32", tf32=True,
                                 compute_format="tf32", sizes=[big], **addmm_form),
        "torch_addmm_bf16": dict(fn=addmm, input_format="bf16", output_format="bf16", sizes=[big], **addmm_form),
        "torch_bmm_bf16": dict(fn=bmm, input_format="bf16", output_format="bf16", batch=16,
                               sizes=[(256, 256, 512) if quick else (1024, 1024, 4096)]),
        "torch_scaled_mm_rowwise_e4m3_bias_bf16": dict(fn=scaled_mm_bias, input_format="e4m3", output_format="bf16",
                                                       layout_b="col", bias="column:uniform_-1_1",
                                                       bias_format="bf16", sizes=[big]),
        "torch_scaled_mm_rowwise_e4m3_bias_e4m3": dict(fn=scaled_mm_fp8_out, input_format="e4m3",
                                                       output_format="e4m3", layout_b="col",
                                                       bias="column:uniform_-1_1", bias_format="bf16", scale=0.015625,
                                                       sizes=[big]),
    }
    if hasattr(torch, "_grouped_mm"):
        out["torch_grouped_mm_bf16"] = dict(fn=grouped_mm, input_format="bf16", output_format="bf16",
                                            layout_b="col", groups=[128, 512, 1000, 2048],
                                            sizes=[(3688, 1024, 1024) if quick else (3688, 4096, 4096)])
    return out


def run(name: str, spec: dict, out: Path) -> pd.DataFrame | str:
    spec = dict(spec)
    try:
        with tf32_mode(spec.pop("tf32", None)):
            return gemmlab.judge(spec.pop("fn"), name=name, distributions=DISTS, seeds=[SEED],
                                 out=out / f"{name}.csv", force=True, family="external", errors="rows", **spec)
    except (RuntimeError, ValueError) as e:  # torch refused the call on every row: say why, go on
        return f"{type(e).__name__}: {e}"


@contextmanager
def tf32_mode(tf32: bool | None):
    """torch.matmul's TF32 switch set for a case that says (None: left as it is), restored after (also
    judge_frameworks.py's, explain_forms.py's)."""
    old = torch.backends.cuda.matmul.allow_tf32
    if tf32 is not None:
        torch.backends.cuda.matmul.allow_tf32 = tf32
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32 = old


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--only", default="", help="comma-separated names of the cases to run")
    p.add_argument("--quick", action="store_true", help="small sizes")
    a = p.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    table, ran = [], []
    all_cases = cases(a.quick)
    if not hasattr(torch, "_grouped_mm"):
        print(f"torch {torch.__version__} has no torch._grouped_mm: the grouped case runs cuBLAS's grouped GEMM "
              "(scripts/lab/gpu_forms.sh)", flush=True)
    only = [x for x in a.only.split(",") if x]
    for name, spec in all_cases.items():
        if only and name not in only:
            continue
        r = run(name, spec, a.out)
        ran.append(name)
        if isinstance(r, str):
            print(f"{name}: refused: {r}", flush=True)
            table.append(dict(kernel=name, form="", distribution="", status="refused", bias_u=math.nan,
                              spread_u=math.nan, tflops=math.nan, note=r[:200]))
            continue
        for row in r.itertuples():
            table.append(dict(kernel=row.kernel, form=row.form, distribution=row.distribution, status=row.status,
                              bias_u=row.rel_mean_u, spread_u=row.rel_std_u, tflops=row.tflops,
                              note=(row.note or "")[:200]))
    df = pd.DataFrame(table)
    df.to_csv(a.out / "forms_table.csv", index=False)
    write_summary_meta(a.out / "forms_table.csv", [a.out / f"{n}.csv" for n in ran],
                       "examples/judge_forms.py " + " ".join(sys.argv[1:]))
    with pd.option_context("display.max_colwidth", 60, "display.width", 220):
        print(df.drop(columns=["note"]).to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
