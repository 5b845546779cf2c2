"""Two Triton matmuls whose numerics were explain's blind spots before issue 37, and a driver that explains
them: ``python3 examples/triton_orders.py --out DIR [--sizes 4096 2048x8192x3072]``.

* ``triton_fp16_acc16``: fp16 operands, an fp16 accumulator (``tl.dot(..., out_dtype=tl.float16)``) and
  an fp16 output: the nodes are mma/wgmma f16 -> f16, one of ``gemmlab tc-eval --list``'s candidates.
* ``triton_fp32_k_reversed``: fp32 operands, ``input_precision="ieee"`` (FMA on the CUDA cores), the K
  blocks visited in decreasing order: an order outside gemmlab's named ones, bounded by its tree.

``fn(A, B, C)`` (gemmlab's style "out"), row-major, M, N multiples of 64 and K a multiple of 32. Each is
explained on uniform_0_1, normal_0_1 and logunif_-8_8 (``<name>_<size>.csv`` + ``.meta.json`` in DIR, the
rows judged by the record found in ``_judged.csv``); a line per kernel and size is printed last.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch
import triton
import triton.language as tl

import gemmlab


@triton.jit
def _mm(a_ptr, b_ptr, c_ptr, K, sam, sbk, scm, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
        ACC16: tl.constexpr, REVERSE: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    if ACC16:
        acc = tl.zeros((BM, BN), dtype=tl.float16)
    else:
        acc = tl.zeros((BM, BN), dtype=tl.float32)
    nk = K // BK
    for i in range(0, nk):
        if REVERSE:
            k0 = (nk - 1 - i) * BK
        else:
            k0 = i * BK
        a = tl.load(a_ptr + rm[:, None] * sam + (k0 + rk)[None, :])
        b = tl.load(b_ptr + (k0 + rk)[:, None] * sbk + rn[None, :])
        if ACC16:
            acc = tl.dot(a, b, acc, out_dtype=tl.float16)
        else:
            acc = tl.dot(a, b, acc, input_precision="ieee")
    tl.store(c_ptr + rm[:, None] * scm + rn[None, :], acc)


def triton_fp16_acc16(A, B, C):
    _mm[(A.shape[0] // 128, B.shape[1] // 128)](A, B, C, A.shape[1], A.stride(0), B.stride(0), C.stride(0),
                                               128, 128, 64, True, False)


def triton_fp32_k_reversed(A, B, C):
    _mm[(A.shape[0] // 64, B.shape[1] // 64)](A, B, C, A.shape[1], A.stride(0), B.stride(0), C.stride(0),
                                             64, 64, 32, False, True)


CASES = {
    "triton_fp16_acc16": dict(fn=triton_fp16_acc16, input_format="fp16", output_format="fp16"),
    "triton_fp32_k_reversed": dict(fn=triton_fp32_k_reversed, input_format="fp32", output_format="fp32"),
}


def size_of(text: str) -> tuple[int, int, int]:
    parts = [int(p) for p in text.split("x")]
    return (parts[0],) * 3 if len(parts) == 1 else tuple(parts)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--sizes", nargs="+", default=["4096"])
    ap.add_argument("--only", default="", help="comma-separated case names (default: both)")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    lines = []
    for name, case in CASES.items():
        if args.only and name not in args.only.split(","):
            continue
        for text in args.sizes:
            size = size_of(text)
            tag = "x".join(map(str, size))
            t0 = time.perf_counter()
            r = gemmlab.explain(case["fn"], name=name, input_format=case["input_format"],
                                output_format=case["output_format"], size=size, style="out",
                                out=args.out / f"{name}_{tag}.csv", judge_out=args.out / f"{name}_{tag}_judged.csv")
            print(r, flush=True)
            judged = r.judged["status"].tolist() if r.judged is not None and len(r.judged) else []
            mism = sum(int(c.get("mismatches", 0)) for c in r.report.get("comparisons", []))
            lines.append(f"{name} {tag}: identified={r.identified} mismatches={mism} judged={judged} "
                         f"tree={r.report.get('tree', {}).get('words', '')!r} [{time.perf_counter() - t0:.1f} s]")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
