"""Explain Triton, torch.matmul and torch._scaled_mm with gemmlab.explain: their summation trees,
operand conversions and tensor-core arithmetic, each predicted bit for bit and judged by the bound of
the numerics found.

    python examples/explain_frameworks.py --out results/explain/h100_<date> \
        [--sizes 4096 2048x8192x3072] [--only triton_fp16_f32,...] [--dists uniform_0_1,normal_0_1,logunif_-8_8]

Every flavour of examples/triton_matmul.py (fp16, bf16, e4m3 with and without
max_num_imprecise_acc, fp32 with every input_precision this Triton compiles), the split-K kernels of
examples/splitk_atomic.py (parts added with atomics: the scheduling stage's case),
torch.matmul in fp16, bf16 (fp32 output through out_dtype where this torch has it), fp32 and TF32, and
torch._scaled_mm rowwise (unit scales). Per kernel and size: <kernel>_<size>.csv (+ .meta.json) with the
explain rows, <kernel>_<size>_judged.csv with the rows judged by the identified numerics, and a table on
stdout. (jnp.matmul and torch.compile, each best in a process of its own: scripts/lab/explain37.py.)
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
from splitk_atomic import flavours as splitk_flavours  # noqa: E402
from triton_matmul import flavours  # noqa: E402

SEED = 20261124


def torch_flavours() -> dict[str, dict]:
    def mm(A, B):
        return torch.matmul(A, B)

    def mm_f32out(A, B):
        # fp16/bf16 operands, fp32 C: the accumulator's bits reach gemmlab (an fp16 C cannot count K units).
        return torch.mm(A, B, out_dtype=torch.float32)

    def scaled_mm_rowwise(A, B):
        sa = torch.ones((A.shape[0], 1), dtype=torch.float32, device=A.device)
        sb = torch.ones((1, B.shape[1]), dtype=torch.float32, device=A.device)
        return torch._scaled_mm(A, B, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)

    f = {
        "torch_matmul_fp32": dict(fn=mm, input_format="fp32", output_format="fp32", tf32=False),
        "torch_matmul_fp32_tf32": dict(fn=mm, input_format="fp32", output_format="fp32", tf32=True),
        "torch_scaled_mm_rowwise_e4m3": dict(fn=scaled_mm_rowwise, input_format="e4m3", output_format="bf16",
                                             layout_b="col"),
    }
    try:
        a = torch.ones((16, 16), dtype=torch.float16, device="cuda")
        torch.mm(a, a, out_dtype=torch.float32)
        f["torch_mm_fp16_f32out"] = dict(fn=mm_f32out, input_format="fp16", output_format="fp32")
        f["torch_mm_bf16_f32out"] = dict(fn=mm_f32out, input_format="bf16", output_format="fp32")
    except (TypeError, RuntimeError) as e:
        print(f"torch.mm has no out_dtype here ({e}); fp16/bf16 torch.matmul are explained with their own output")
    f["torch_matmul_fp16"] = dict(fn=mm, input_format="fp16", output_format="fp16")
    f["torch_matmul_bf16"] = dict(fn=mm, input_format="bf16", output_format="bf16")
    return f


def size_of(s: str) -> tuple[int, int, int]:
    if "x" in s:
        m, n, k = (int(x) for x in s.split("x"))
        return m, n, k
    return int(s), int(s), int(s)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--sizes", nargs="+", default=["4096", "2048x8192x3072"])
    ap.add_argument("--dists", default="uniform_0_1,normal_0_1,logunif_-8_8")
    ap.add_argument("--only", default="", help="comma-separated kernel names (default: all)")
    ap.add_argument("--compare-outputs", type=int, default=1 << 16)
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    todo = {**flavours(), **splitk_flavours(), **torch_flavours()}
    if args.only:
        keep = args.only.split(",")
        unknown = [k for k in keep if k not in todo]
        if unknown:
            sys.exit(f"--only: unknown kernel(s) {', '.join(unknown)}; known: {', '.join(todo)}")
        todo = {k: v for k, v in todo.items() if k in keep}
    dists = args.dists.split(",")
    table = []
    for name, spec in todo.items():
        for s in args.sizes:
            M, N, K = size_of(s)
            tag = f"{M}x{N}x{K}"
            torch.backends.cuda.matmul.allow_tf32 = bool(spec.get("tf32", False))
            t0 = time.time()
            try:
                e = gemmlab.explain(spec["fn"], name=name, input_format=spec["input_format"],
                                    output_format=spec.get("output_format", "fp32"),
                                    layout_b=spec.get("layout_b", "row"), size=(M, N, K), distributions=dists,
                                    seed=SEED, compare_outputs=args.compare_outputs, reps=args.reps, warmup=2,
                                    out=args.out / f"{name}_{tag}.csv", judge_out=args.out / f"{name}_{tag}_judged.csv")
            except Exception as ex:  # noqa: BLE001 -- one kernel's failure is a row, not the end of the study
                print(f"{name} {tag}: FAILED: {type(ex).__name__}: {ex}", flush=True)
                table.append(dict(kernel=name, size=tag, identified="error", reason=str(ex)[:200]))
                continue
            wall = time.time() - t0
            r = e.report
            status = ",".join(sorted(set(e.judged["status"]))) if e.judged is not None else ""
            mism = sum(c["mismatches"] for c in r["comparisons"])
            outs = sum(c["outputs"] for c in r["comparisons"])
            table.append(dict(kernel=name, size=tag, identified=e.identified, stage=r["failed_stage"],
                              conversion=r["conversion"]["a"] if r["conversion"]["ok"] else "",
                              numerics=(r["numerics_text"] or "")[:120], mismatches=f"{mism}/{outs}",
                              status=status, scheduling=e.scheduling, behaves_like=" ".join(e.behaves_like[:3]),
                              explain_s=round(r["seconds"], 1), wall_s=round(wall, 1),
                              reason=(r["reason"] or "")[:160]))
            print(e.summary, f"  [{r['launches']} launches, explain {r['seconds']:.1f} s, wall {wall:.1f} s]",
                  flush=True)
    t = pd.DataFrame(table)
    t.to_csv(args.out / "explain_table.csv", index=False)
    with pd.option_context("display.width", 250, "display.max_colwidth", 60):
        print(t.drop(columns=["reason", "numerics"], errors="ignore").to_string(index=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
