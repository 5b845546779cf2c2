"""gemmlab.explain on the matmuls a model runs, each on its form: F.linear with a bias, torch.addmm with alpha and
beta, torch.bmm, a grouped GEMM, torch._scaled_mm with a bias (bf16 and fp8 outputs), and a Triton matmul with a
fused bias written both ways (added to the fp32 accumulator before the fp16 rounding, or to the rounded fp16
output), which explain must tell apart, and cuBLASLt's BIAS epilogue with alpha and beta (cublaslt_bias_callable.py:
the call of the built-in cublaslt_bias_fp16).

    python examples/explain_forms.py --out OUT [--only NAME,...] [--quick]

Per case under OUT: ``<name>.csv`` (+ .meta.json: the product's explain report), ``<name>_form.csv`` (+ .meta.json:
the epilogue's probes and the form's bit-for-bit comparison), ``<name>_judged.csv`` (the form judged by the
record and places found), and a table on stdout and in ``forms_explained.csv``. Distributions U[0,1), N(0,1) and
logunif_-8_8, seed 20261124. A callable torch refuses gets a line saying why, and the run goes on.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import pandas as pd
import judge_forms  # beside this file: the torch cases
import torch

import gemmlab

try:
    import triton
    import triton.language as tl
except ImportError:  # the Triton cases say so
    triton = None


if triton is not None:
    @triton.jit
    def _mm_bias(a_ptr, b_ptr, bias_ptr, c_ptr, K, sam, sbk, scm, BM: tl.constexpr, BN: tl.constexpr,
                 BK: tl.constexpr, AFTER: tl.constexpr):
        rm = tl.program_id(0) * BM + tl.arange(0, BM)
        rn = tl.program_id(1) * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k0 in range(0, K, BK):
            a = tl.load(a_ptr + rm[:, None] * sam + (k0 + rk)[None, :])
            b = tl.load(b_ptr + (k0 + rk)[:, None] * sbk + rn[None, :])
            acc = tl.dot(a, b, acc)
        bias = tl.load(bias_ptr + rn).to(tl.float32)
        if AFTER == 2:  # the fp16 output first (cvt.rn in PTX), then the bias added in fp32, rounded to fp16 again
            c16 = tl.inline_asm_elementwise("cvt.rn.f16.f32 $0, $1;", "=h,r", [acc], dtype=tl.float16, is_pure=True,
                                            pack=1)
            c = (c16.to(tl.float32) + bias[None, :]).to(tl.float16)
        elif AFTER == 1:  # the same written with Triton's conversions
            c = (acc.to(tl.float16).to(tl.float32) + bias[None, :]).to(tl.float16)
        else:  # the bias added to the fp32 accumulator, one rounding to fp16
            c = (acc + bias[None, :]).to(tl.float16)
        tl.store(c_ptr + rm[:, None] * scm + rn[None, :], c)


def _triton_linear(after: int):
    """The Triton linear layer with its bias fused: ``after`` 0 adds it to the fp32 accumulator before the one fp16
    rounding; 2 rounds to fp16 first (cvt.rn.f16.f32 in inline PTX), adds the bias in fp32 and rounds again; 1
    writes 2 with Triton's own conversions (acc.to(tl.float16).to(tl.float32))."""
    def fn(A, B, bias):
        M, K = A.shape
        N = B.shape[1]
        C = torch.empty((M, N), dtype=torch.float16, device=A.device)
        _mm_bias[(M // 128, N // 128)](A, B, bias, C, K, A.stride(0), B.stride(0), C.stride(0), BM=128, BN=128,
                                       BK=32, AFTER=int(after), num_warps=8, num_stages=3)
        return C
    fn.__name__ = ["triton_linear_bias_before_rounding_fp16", "triton_linear_bias_after_rounding_tl_to_fp16",
                   "triton_linear_bias_after_rounding_fp16"][int(after)]
    return fn


def cases(quick: bool) -> dict[str, dict]:
    """judge_forms.py's torch cases (one size each), cuBLASLt's BIAS epilogue and the Triton linear layers."""
    big = (1024, 1024, 1024) if quick else (4096, 4096, 4096)
    out = {}
    for name, spec in judge_forms.cases(quick).items():
        spec = dict(spec)
        spec["size"] = spec.pop("sizes")[0]
        spec.pop("compute_format", None)  # declared for judge; explain finds it
        out[name] = spec
    from cublaslt_bias_callable import cublaslt_bias  # noqa: PLC0415 - beside this file
    # The built-in cublaslt_bias_fp16's own form (gemmlab run's default for it): alpha and beta not powers of two.
    out["cublaslt_bias_fp16"] = dict(fn=cublaslt_bias, input_format="fp16", output_format="fp16", alpha=0.3, beta=0.7,
                                     c0="uniform_-1_1", bias="column:uniform_-1_1", size=big)
    if triton is not None:
        for after in (0, 2, 1):
            fn = _triton_linear(after)
            out[fn.__name__] = dict(fn=fn, input_format="fp16", output_format="fp16", bias="column:uniform_-1_1",
                                    size=big)
    return out


def run(name: str, spec: dict, out: Path):
    spec = dict(spec)
    try:
        with judge_forms.tf32_mode(spec.pop("tf32", None)):
            return gemmlab.explain(spec.pop("fn"), name=name, out=out / f"{name}.csv",
                                   judge_out=out / f"{name}_judged.csv", **spec)
    except (RuntimeError, ValueError) as e:  # torch refused the call: say why, go on
        return f"{type(e).__name__}: {e}"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--only", default="", help="comma-separated names of the cases to run")
    p.add_argument("--quick", action="store_true", help="small sizes")
    a = p.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    only = [x for x in a.only.split(",") if x]
    table = []
    for name, spec in cases(a.quick).items():
        if only and name not in only:
            continue
        t0 = time.perf_counter()
        r = run(name, spec, a.out)
        wall = time.perf_counter() - t0
        if isinstance(r, str):
            print(f"{name}: refused: {r}", flush=True)
            table.append(dict(kernel=name, explained=False, reason=r[:300], wall_s=round(wall, 1)))
            continue
        print(r.summary, flush=True)
        f = r.report.get("form", {})
        parts = f.get("epilogue", {}).get("parts", {})
        judged = r.judged
        table.append(dict(
            kernel=name, form=f.get("form", ""), product_identified=r.identified, explained=f.get("identified", False),
            bias=" | ".join(parts.get("bias", {}).get("places", [])), c0=" | ".join(parts.get("c0", {}).get("places", [])),
            alpha=" | ".join(f.get("epilogue", {}).get("alpha", {}).get("where", [])),
            every_index_same=f.get("others", {}).get("same", ""),
            mismatches=f"{sum(c['mismatches'] for c in f.get('comparisons', []))}/"
                       f"{sum(c['outputs'] for c in f.get('comparisons', []))}",
            tree=r.report.get("tree", {}).get("words", "")[:160],
            status=",".join(sorted(set(judged["status"].astype(str)))) if judged is not None and len(judged) else "",
            bias_u=judged["rel_mean_u"].iloc[0] if judged is not None and len(judged) else float("nan"),
            spread_u=judged["rel_std_u"].iloc[0] if judged is not None and len(judged) else float("nan"),
            reason=f.get("why", "")[:300], wall_s=round(wall, 1)))
    df = pd.DataFrame(table)
    df.to_csv(a.out / "forms_explained.csv", index=False)
    with pd.option_context("display.max_colwidth", 50, "display.width", 250):
        print(df.drop(columns=[c for c in ("tree", "reason", "form") if c in df]).to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
