"""gemmlab.explain_diff on pairs of GEMM callables: where their numerics differ, each difference shown on
an input where their bits differ, or that they are bit-identical by construction.

    python examples/explain_diff_pairs.py --out results/explain_diff/h100_<date> \
        [--sizes 4096 2048x8192x3072] [--only tf32,fp16,splitk] [--dists uniform_0_1,normal_0_1,logunif_-8_8]

The pairs (the use: making a Triton GEMM reproduce cuBLAS bit for bit, as Meta's Triton "bitequiv" work
did, or checking that a change kept the numerics):

* ``tf32``: Triton's fp32 matmul with ``input_precision="tf32"`` (examples/triton_matmul.py)
  against cuBLAS ``cublasGemmEx`` with CUBLAS_COMPUTE_32F_FAST_TF32 (examples/
  cublas_callable.py: what the built-in ``cublas_gemmex_fp32_fast_tf32`` calls);
* ``fp16``: Triton's fp16 matmul against cuBLAS fp16 in, fp32 compute and out (``cublas_gemmex_fp16_f32``);
* ``splitk``: a Triton split-K kernel whose 8 parts are added into C with ``tl.atomic_add``
  (examples/splitk_atomic.py; both of its launch orders) against the Triton kernel below
  that adds the same parts in k order, deterministically: promoted every K / 8 (512 at K = 4096). At rest
  the two may give the same bits; what differs is that the first's order is the scheduler's.

Per pair and size: <pair>_<size>.csv (+ .meta.json) with the diff's rows, and a table on stdout, last.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import pandas as pd
import torch
import triton
import triton.language as tl

import gemmlab

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cublas_callable import cublas_gemmex  # noqa: E402
from triton_matmul import flavours  # noqa: E402

SEED = 20261124


@triton.jit
def _promoted_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, PART_K: tl.constexpr):
    # One program per (BLOCK_M, BLOCK_N) tile of C. K is walked in parts of PART_K in increasing k; each
    # part is one tl.dot chain from zero (BLOCK_K at a time), then added to the fp32 sum with one
    # round-to-nearest fp32 addition: "promoted every PART_K", the order split-K's atomics may take.
    pid = tl.program_id(0)
    num_n = tl.cdiv(N, BLOCK_N)
    pid_m = pid // num_n
    pid_n = pid % num_n
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + rm[:, None] * stride_am + rk[None, :] * stride_ak  # (BLOCK_M, BLOCK_K) tile of A
    b_ptrs = b_ptr + rk[:, None] * stride_bk + rn[None, :] * stride_bn  # (BLOCK_K, BLOCK_N) tile of B
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, PART_K):
        part = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k1 in range(0, PART_K, BLOCK_K):
            a = tl.load(a_ptrs, mask=rm[:, None] < M, other=0.0)
            b = tl.load(b_ptrs, mask=rn[None, :] < N, other=0.0)
            part = tl.dot(a, b, part)
            a_ptrs += BLOCK_K * stride_ak
            b_ptrs += BLOCK_K * stride_bk
        acc += part
    c_ptrs = c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn
    tl.store(c_ptrs, acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def promoted(parts: int = 8, block_m: int = 128, block_n: int = 128, block_k: int = 64, num_warps: int = 8,
             num_stages: int = 3, name: str | None = None):
    """``fn(A, B, out)``: fp16 A (M, K), B (K, N), fp32 C; K in `parts` parts added in k order (the tiles
    and the dot chain within a part are splitk_atomic.py's)."""

    def matmul(A: torch.Tensor, B: torch.Tensor, out: torch.Tensor) -> None:
        M, K = A.shape
        N = B.shape[1]
        if K % (parts * block_k):
            raise ValueError(f"K = {K} is not a multiple of parts * BLOCK_K = {parts * block_k}")
        grid = (triton.cdiv(M, block_m) * triton.cdiv(N, block_n),)
        _promoted_kernel[grid](A, B, out, M, N, K, A.stride(0), A.stride(1), B.stride(0), B.stride(1), out.stride(0),
                               out.stride(1), BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k, PART_K=K // parts,
                               num_warps=num_warps, num_stages=num_stages)

    matmul.__name__ = name or f"triton_fp16_promoted_{parts}_parts"
    return matmul


def pairs() -> dict[str, list[dict]]:
    """pair name -> the diffs to run: {a, b, names, input_format} each."""
    t = flavours()
    out = {
        "tf32": [dict(a=t["triton_fp32_tf32"]["fn"], b=cublas_gemmex("fp32_fast_tf32"),
                      names=("triton_fp32_tf32", "cublas_gemmex_fp32_fast_tf32"), input_format="fp32")],
        "fp16": [dict(a=t["triton_fp16_f32"]["fn"], b=cublas_gemmex("fp16_f32"),
                      names=("triton_fp16_f32", "cublas_gemmex_fp16_f32"), input_format="fp16")],
    }
    try:
        from splitk_atomic import splitk_atomic  # examples/splitk_atomic.py (issue 37's scheduling)
    except ImportError as e:
        print(f"splitk: examples/splitk_atomic.py cannot be imported ({e}); the pair is left out",
              flush=True)
        return out
    out["splitk"] = [dict(a=splitk_atomic(8, grid, name=f"triton_fp16_splitk8_atomic_{grid}"),
                          b=promoted(8, name="triton_fp16_promoted_8_parts"),
                          names=(f"triton_fp16_splitk8_atomic_{grid}", "triton_fp16_promoted_8_parts"),
                          input_format="fp16") for grid in ("tile_major", "split_major")]
    return out


def size_of(s: str) -> tuple[int, int, int]:
    if "x" in s:
        m, n, k = (int(x) for x in s.split("x"))
        return m, n, k
    return int(s), int(s), int(s)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--sizes", nargs="+", default=["4096"])
    ap.add_argument("--dists", default="uniform_0_1,normal_0_1,logunif_-8_8")
    ap.add_argument("--only", default="", help="comma-separated pairs: tf32, fp16, splitk (default: all)")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    todo = pairs()
    if args.only:
        keep = args.only.split(",")
        unknown = [k for k in keep if k not in ("tf32", "fp16", "splitk")]
        if unknown:
            sys.exit(f"--only: unknown pair(s) {', '.join(unknown)}; known: tf32, fp16, splitk")
        todo = {k: v for k, v in todo.items() if k in keep}
    dists = args.dists.split(",")
    torch.backends.cuda.matmul.allow_tf32 = False
    table = []
    for pair, diffs in todo.items():
        for spec in diffs:
            for s in args.sizes:
                M, N, K = size_of(s)
                tag = f"{M}x{N}x{K}"
                a_name, b_name = spec["names"]
                t0 = time.time()
                try:
                    d = gemmlab.explain_diff(spec["a"], spec["b"], names=spec["names"],
                                             input_format=spec["input_format"], size=(M, N, K), distributions=dists,
                                             seed=SEED, out=args.out / f"{a_name}-vs-{b_name}_{tag}.csv")
                except Exception as ex:  # noqa: BLE001 -- one pair's failure is a row, not the end of the study
                    print(f"{pair} {a_name} vs {b_name} {tag}: FAILED: {type(ex).__name__}: {ex}", flush=True)
                    table.append(dict(pair=pair, a=a_name, b=b_name, size=tag, verdict="error", aspects=str(ex)[:120]))
                    continue
                wall = time.time() - t0
                r = d.report
                differing = sum(c["differing"] for c in r["comparisons"])
                outputs = sum(c["outputs"] for c in r["comparisons"])
                aspects = ",".join(x["aspect"] + ("" if x["confirmed"] else "(unconfirmed)") for x in d.differences)
                table.append(dict(pair=pair, a=a_name, b=b_name, size=tag, verdict=d.verdict, aspects=aspects or "-",
                                  identified=f"{d.a.identified}/{d.b.identified}",
                                  differing=f"{differing}/{outputs}",
                                  explain_a_s=round(r["a"]["seconds"], 1), explain_b_s=round(r["b"]["seconds"], 1),
                                  diff_s=round(r["seconds"], 1), wall_s=round(wall, 1)))
                print(d.summary, f"  [{r['launches']} launches, diff {r['seconds']:.1f} s, wall {wall:.1f} s]",
                      flush=True)
    t = pd.DataFrame(table)
    t.to_csv(args.out / "explain_diff_table.csv", index=False)
    with pd.option_context("display.width", 250, "display.max_colwidth", 70):
        print(t.to_string(index=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
