"""Explain the quantized matmuls of examples/judge_quantized.py with gemmlab.explain (docs/python.md, quantized
forms): where the scales enter, the summation tree, the tensor-core arithmetic, how a weight-only kernel rounds its
dequantized weights, and every output of three quantized problems predicted bit for bit.

    python examples/explain_quantized.py --out OUT [--only NAME,...] [--size N]

Each callable gets its quantized tensors as gemmlab.judge hands them; explain writes its probes into them at unit
scale (every scale 1, so the quantized operand holds its elements' values) and compares on the three fp32 sources
quantized under the recipe (normal_0_1, uniform_-1_1, expspread_1, seed 20261129), every output of 64 rows
predicted. torch._int_mm's integer sums are exact, so its explanation is the fp32 epilogue that predicts every output
(judge's candidates). One explain CSV (+ .meta.json) per callable under OUT, explain_table.csv (+ .meta.json) with a
row per callable and distribution, and a table on stdout. A recipe explain refuses (both operands quantized: MXFP4
x MXFP4) gets a row saying why, and the run goes on.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import pandas as pd

import gemmlab
from gemmlab.results import write_summary_meta

sys.path.insert(0, str(Path(__file__).resolve().parent))
import judge_quantized as jq  # noqa: E402  (the callables, defined once there)

DISTS = jq.DISTS
SEED = jq.SEED


def cases() -> dict[str, dict]:
    return {
        "triton_dot_scaled_mxfp8_e4m3_x_bf16": dict(fn=jq.dot_scaled("e4m3", "bf16"), input_format="mxfp8_e4m3_x_bf16"),
        "triton_dot_scaled_mxfp4_x_bf16": dict(fn=jq.dot_scaled("e2m1", "bf16"), input_format="mxfp4_x_bf16"),
        "torch_weight_int4pack_mm_g32": dict(fn=jq.weight_int4pack_mm(32),
                                             input_format="int4_weight_only", group_size=32, output_format="bf16"),
        "torch_weight_int4pack_mm_g128": dict(fn=jq.weight_int4pack_mm(128),
                                              input_format="int4_weight_only", group_size=128, output_format="bf16"),
        "triton_w4a16_g128": dict(fn=jq.triton_w4a16(128), input_format="int4_weight_only", group_size=128),
        "torch_int_mm_rowwise": dict(fn=jq.int_mm_rowwise, input_format="int8"),  # exact sums: its epilogue
        # Refused: both operands quantized (the tree stage needs an operand that holds any value).
        "triton_dot_scaled_mxfp4_x_mxfp4": dict(fn=jq.dot_scaled("e2m1", "e2m1"), input_format="mxfp4"),
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--only", default="", help="comma-separated names of the cases to run")
    p.add_argument("--size", type=int, default=4096, help="M = N = K (default 4096)")
    a = p.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    only = [x for x in a.only.split(",") if x]
    table, written = [], []
    for name, spec in cases().items():
        if only and name not in only:
            continue
        spec = dict(spec)
        fn = spec.pop("fn")
        t0 = time.perf_counter()
        try:
            e = gemmlab.explain(fn, name=name, size=a.size, distributions=DISTS, seed=SEED, judge_rows=False,
                                compare_outputs=64 * a.size, out=a.out / f"{name}.csv", **spec)
        except ValueError as err:  # refused before any launch: say why, go on
            print(f"{name}: refused: {err}", flush=True)
            table.append(dict(kernel=name, recipe=spec["input_format"], identified=False, failed_stage="refused",
                              distribution="", outputs=0, mismatches=-1, dequantization="", seconds=0.0,
                              numerics=str(err)[:300]))
            continue
        seconds = time.perf_counter() - t0
        written.append(a.out / f"{name}.csv")
        r = e.report
        dq = r.get("dequantization") or {}
        chosen = f"{dq['chosen']} ({', '.join(f'{k} {v}' for k, v in dq['mismatches'].items())})" if dq else ""
        print(e.summary, flush=True)
        for c in r["comparisons"] or [dict(distribution="", outputs=0, mismatches=-1)]:
            table.append(dict(kernel=name, recipe=spec["input_format"], identified=r["identified"],
                              failed_stage=r["failed_stage"], distribution=c["distribution"], outputs=c["outputs"],
                              mismatches=c["mismatches"], dequantization=chosen, seconds=round(seconds, 1),
                              numerics=(r["numerics_text"] or r["reason"])[:300]))
    df = pd.DataFrame(table)
    df.to_csv(a.out / "explain_table.csv", index=False)
    write_summary_meta(a.out / "explain_table.csv", written, "examples/explain_quantized.py " + " ".join(sys.argv[1:]))
    with pd.option_context("display.max_colwidth", 50, "display.width", 220):
        print(df.drop(columns=["numerics"]).to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
