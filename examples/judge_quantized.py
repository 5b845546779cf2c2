"""Judge the matmuls quantized models run with gemmlab.judge's quantized forms (docs/python.md, quantized forms):
Triton's tl.dot_scaled with MXFP8 (E4M3) x bf16, MXFP4 (E2M1) x bf16 and MXFP4 x MXFP4 (on Hopper Triton
converts the MX operands to bf16 before the tensor core), torch._int_mm with a row/column dequantizing epilogue,
torch's int4 weight-only kernel _weight_int4pack_mm (groups of 32 and 128), and a W4A16 Triton kernel written
here (Marlin's arithmetic: int4 weights dequantized in registers, (q - 8) s + z in fp32 rounded to bf16, then a
bf16 tensor-core product; not Marlin's weight layout or pipeline).

    python examples/judge_quantized.py --out OUT [--only NAME,...] [--quick]

One CSV and .meta.json per callable under OUT, and a table on stdout (kernel, distribution, status, the kernel's
bias and spread in units of the output's u against the exact product of the dequantized operands, the
quantization error's and the total error's spread, TFLOP/s); quantized_table.csv holds it. Each case declares
where it applies the scales (the bound it is judged by): the Triton and weight-only kernels on the operands, in
bf16 (scales="operands", compute bf16), _int_mm on the output (exact int32 sums, then the conversion to fp32 and
one multiplication before the output's rounding: scales="output", scale_roundings=2). A case the installed
torch or Triton refuses gets a line saying why, and the run goes on. --quick: 512^3 (a smoke run).
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import pandas as pd
import torch
import triton
import triton.language as tl

import gemmlab
from gemmlab.results import write_summary_meta

DISTS = ("normal_0_1", "uniform_-1_1", "expspread_1")
SEED = 20261129


# ---- tl.dot_scaled: A (M, K) MX, B (K, N) MX or bf16 ---------------------------------------------------------------
@triton.jit
def _dot_scaled_kernel(a_ptr, as_ptr, b_ptr, bs_ptr, c_ptr, N, K, A_FMT: tl.constexpr, B_FMT: tl.constexpr,
                       A_PACK: tl.constexpr, B_PACK: tl.constexpr, B_SCALED: tl.constexpr, BM: tl.constexpr,
                       BN: tl.constexpr, BK: tl.constexpr):
    # A (M, K / A_PACK) row-major (e2m1: two per byte along K), a_scale (M, K / 32); B (K / B_PACK, N), b_scale
    # (N, K / 32): tl.dot_scaled's operands as gemmlab hands them. fp32 accumulator across the K loop.
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    ka = tl.arange(0, BK // A_PACK)
    kb = tl.arange(0, BK // B_PACK)
    ks = tl.arange(0, BK // 32)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * (K // A_PACK) + (k // A_PACK + ka)[None, :])
        a_s = tl.load(as_ptr + rm[:, None] * (K // 32) + (k // 32 + ks)[None, :])
        b = tl.load(b_ptr + (k // B_PACK + kb)[:, None] * N + rn[None, :])
        if B_SCALED:
            b_s = tl.load(bs_ptr + rn[:, None] * (K // 32) + (k // 32 + ks)[None, :])
            acc = tl.dot_scaled(a, a_s, A_FMT, b, b_s, B_FMT, acc)
        else:
            acc = tl.dot_scaled(a, a_s, A_FMT, b, None, B_FMT, acc)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)


def dot_scaled(a_fmt: str, b_fmt: str):
    a_pack = 2 if a_fmt == "e2m1" else 1
    b_pack = 2 if b_fmt == "e2m1" else 1

    def fn(A, B, out, a_scale, b_scale=None):
        M, N = out.shape
        K = A.shape[1] * a_pack
        _dot_scaled_kernel[(M // 128, N // 128)](A, a_scale, B, a_scale if b_scale is None else b_scale, out, N, K,
                                                 a_fmt, b_fmt, a_pack, b_pack, b_scale is not None, 128, 128, 128,
                                                 num_warps=8)
    fn.__name__ = f"triton_dot_scaled_{a_fmt}_x_{b_fmt}"
    return fn


# ---- torch._int_mm with a dequantizing epilogue --------------------------------------------------------------------
def int_mm_rowwise(A, B, a_scale, b_scale):
    # Exact int32 sums; the epilogue converts them to fp32 (one rounding) and multiplies by the row scale (one
    # rounding), then by the column scale (the output's rounding).
    return (torch._int_mm(A, B).float() * a_scale[:, None]) * b_scale[None, :]


# ---- torch.ops.aten._weight_int4pack_mm (tinygemm) ------------------------------------------------------------------
def weight_int4pack_mm(group: int):
    """gemmlab's B (K/2, N) uint8, two uint4 codes per byte along K (the even k low), repacked into
    _convert_weight_to_int4pack's input (N, K/2) (the even k high) and its tiled layout; scales and zeros stacked
    into (K/G, N, 2). The packed weight is kept while the call's B, scales and zeros equal the last call's (compared
    whole on the GPU: a few microseconds), so the timed calls run the matmul alone and gemmlab.explain, which
    changes the weights between calls, gets every change packed."""
    cache: dict = {}

    def fn(A, B, b_scale, b_zero):
        K2, N = B.shape
        same = "B" in cache and all(x.shape == y.shape and torch.equal(x, y)
                                    for x, y in ((B, cache["B"]), (b_scale, cache["s"]), (b_zero, cache["z"])))
        if not same:
            q = torch.stack([B & 0xF, B >> 4], dim=1).reshape(2 * K2, N)  # (K, N) codes, rows in k order
            W = q.t().contiguous()  # (N, K)
            w = torch.ops.aten._convert_weight_to_int4pack((W[:, ::2] << 4 | W[:, 1::2]).to(torch.uint8), 8)
            cache.update(B=B.clone(), s=b_scale.clone(), z=b_zero.clone(), w=w,
                         sz=torch.stack([b_scale, b_zero], dim=-1).contiguous())
        return torch.ops.aten._weight_int4pack_mm(A, cache["w"], group, cache["sz"])
    fn.__name__ = f"torch_weight_int4pack_mm_g{group}"
    return fn


# ---- a W4A16 Triton kernel: int4 weights dequantized in registers --------------------------------------------------
@triton.jit
def _w4a16_kernel(a_ptr, b_ptr, s_ptr, z_ptr, c_ptr, N, K, G: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
                  BK: tl.constexpr):
    # A (M, K) bf16; B (K / 2, N) uint8 (two codes per byte along K, the even k low); scales and zeros (K / G, N)
    # bf16. Each (BK, BN) tile of W = (q - 8) s + z in fp32, rounded to bf16, then a bf16 dot into fp32.
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    rk2 = tl.arange(0, BK // 2)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        packed = tl.load(b_ptr + (k // 2 + rk2)[:, None] * N + rn[None, :])  # (BK / 2, BN)
        lo = (packed & 0xF).to(tl.float32)
        hi = (packed >> 4).to(tl.float32)
        q = tl.reshape(tl.permute(tl.join(lo, hi), (0, 2, 1)), (BK, BN))  # row 2r: lo[r], row 2r + 1: hi[r]
        g = (k + rk) // G
        s = tl.load(s_ptr + g[:, None] * N + rn[None, :]).to(tl.float32)
        z = tl.load(z_ptr + g[:, None] * N + rn[None, :]).to(tl.float32)
        w = ((q - 8.0) * s + z).to(tl.bfloat16)
        acc = tl.dot(a, w, acc)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)


def triton_w4a16(group: int):
    def fn(A, B, out, b_scale, b_zero):
        M, N = out.shape
        _w4a16_kernel[(M // 128, N // 128)](A, B, b_scale, b_zero, out, N, A.shape[1], group, 128, 128, 64,
                                            num_warps=8)
    fn.__name__ = f"triton_w4a16_g{group}"
    return fn


def cases(quick: bool) -> dict[str, dict]:
    size = (512, 512, 512) if quick else (4096, 4096, 4096)
    on_operands = dict(scales="operands", compute_format="bf16", accumulation="in_wgmma", sizes=[size])
    return {
        "triton_dot_scaled_mxfp8_e4m3_x_bf16": dict(fn=dot_scaled("e4m3", "bf16"), input_format="mxfp8_e4m3_x_bf16",
                                                   **on_operands),
        "triton_dot_scaled_mxfp4_x_bf16": dict(fn=dot_scaled("e2m1", "bf16"), input_format="mxfp4_x_bf16",
                                              **on_operands),
        "triton_dot_scaled_mxfp4_x_mxfp4": dict(fn=dot_scaled("e2m1", "e2m1"), input_format="mxfp4", **on_operands),
        "torch_int_mm_rowwise": dict(fn=int_mm_rowwise, input_format="int8", scales="output", scale_roundings=2,
                                     sizes=[size]),
        "torch_weight_int4pack_mm_g32": dict(fn=weight_int4pack_mm(32), input_format="int4_weight_only", group_size=32,
                                             output_format="bf16", scales="operands", compute_format="bf16",
                                             accumulation="in_mma", sizes=[size]),
        "torch_weight_int4pack_mm_g128": dict(fn=weight_int4pack_mm(128), input_format="int4_weight_only",
                                              group_size=128, output_format="bf16", scales="operands",
                                              compute_format="bf16", accumulation="in_mma", sizes=[size]),
        "triton_w4a16_g128": dict(fn=triton_w4a16(128), input_format="int4_weight_only", group_size=128,
                                  **on_operands),
    }


def run(name: str, spec: dict, out: Path) -> pd.DataFrame | str:
    spec = dict(spec)
    try:
        return gemmlab.judge(spec.pop("fn"), name=name, distributions=DISTS, seeds=[SEED], out=out / f"{name}.csv",
                             force=True, family="external", errors="rows", **spec)
    except (RuntimeError, ValueError) as e:  # the library refused the call on every row: say why, go on
        return f"{type(e).__name__}: {e}"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--only", default="", help="comma-separated names of the cases to run")
    p.add_argument("--quick", action="store_true", help="small sizes")
    a = p.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    only = [x for x in a.only.split(",") if x]
    table, ran = [], []
    for name, spec in cases(a.quick).items():
        if only and name not in only:
            continue
        r = run(name, spec, a.out)
        ran.append(name)
        if isinstance(r, str):
            print(f"{name}: refused: {r}", flush=True)
            table.append(dict(kernel=name, distribution="", status="refused", bias_u=math.nan, spread_u=math.nan,
                              quant_std=math.nan, total_std=math.nan, tflops=math.nan, note=r[:300]))
            continue
        for row in r.itertuples():
            table.append(dict(kernel=row.kernel, distribution=row.distribution, status=row.status, bias_u=row.rel_mean_u,
                              spread_u=row.rel_std_u, quant_std=row.quant_rel_std, total_std=row.total_rel_std,
                              tflops=row.tflops, note=(row.note or "")[:300]))
    df = pd.DataFrame(table)
    df.to_csv(a.out / "quantized_table.csv", index=False)
    write_summary_meta(a.out / "quantized_table.csv", [a.out / f"{n}.csv" for n in ran],
                       "examples/judge_quantized.py " + " ".join(sys.argv[1:]))
    with pd.option_context("display.max_colwidth", 60, "display.width", 220):
        print(df.drop(columns=["note"]).to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
