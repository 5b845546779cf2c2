"""Triton matmul kernels, written after Triton's matrix-multiplication tutorial, in the flavours people
run: fp16, bf16 and e4m3 inputs with fp32 accumulation (optionally ``max_num_imprecise_acc``, the
fp8 promotion knob), and fp32 inputs with each ``input_precision`` Triton offers. Each ``matmul_*``
is a ``fn(A, B, out)`` callable for ``gemmlab.judge`` (style "out": it writes gemmlab's NaN-poisoned C).

One fixed tile configuration per flavour (no autotuning, so the order of summation is the same on
every call and every size): BLOCK_M x BLOCK_N x BLOCK_K tiles, K walked in increasing order, one
``tl.dot`` per K tile accumulating into the fp32 accumulator.
"""

from __future__ import annotations

try:
    import torch
    import triton
    import triton.language as tl
except ImportError as e:  # a CPU-only install: say what these examples need instead of a bare traceback
    raise ImportError(f"examples/triton_matmul.py needs PyTorch and Triton with a CUDA GPU ({e}); "
                      "on a CPU-only install use gemmlab.evaluate on a saved C instead") from e


@triton.jit
def _matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                   INPUT_PRECISION: tl.constexpr, MAX_IMPRECISE: tl.constexpr):
    # Grouped ordering of the (BLOCK_M, BLOCK_N) output tiles, as in the tutorial (L2 reuse).
    pid = tl.program_id(0)
    num_m = tl.cdiv(M, BLOCK_M)
    num_n = tl.cdiv(N, BLOCK_N)
    group = GROUP_M * num_n
    first_m = (pid // group) * GROUP_M
    size_m = min(num_m - first_m, GROUP_M)
    pid_m = first_m + ((pid % group) % size_m)
    pid_n = (pid % group) // size_m
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + rm[:, None] * stride_am + rk[None, :] * stride_ak   # (BLOCK_M, BLOCK_K) tile of A
    b_ptrs = b_ptr + rk[:, None] * stride_bk + rn[None, :] * stride_bn   # (BLOCK_K, BLOCK_N) tile of B
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - k * BLOCK_K
        a = tl.load(a_ptrs, mask=(rm[:, None] < M) & (rk[None, :] < k_left), other=0.0)
        b = tl.load(b_ptrs, mask=(rk[:, None] < k_left) & (rn[None, :] < N), other=0.0)
        if MAX_IMPRECISE > 0:
            acc = tl.dot(a, b, acc, input_precision=INPUT_PRECISION, max_num_imprecise_acc=MAX_IMPRECISE)
        else:
            acc = tl.dot(a, b, acc, input_precision=INPUT_PRECISION)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c = acc.to(c_ptr.dtype.element_ty)
    c_ptrs = c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn
    tl.store(c_ptrs, c, mask=(rm[:, None] < M) & (rn[None, :] < N))


def _launcher(block_m: int, block_n: int, block_k: int, num_warps: int, num_stages: int, input_precision: str = "ieee",
              max_imprecise: int = 0, name: str = "triton_matmul"):
    def matmul(A: torch.Tensor, B: torch.Tensor, out: torch.Tensor) -> None:
        M, K = A.shape
        N = B.shape[1]
        grid = (triton.cdiv(M, block_m) * triton.cdiv(N, block_n),)
        _matmul_kernel[grid](A, B, out, M, N, K, A.stride(0), A.stride(1), B.stride(0), B.stride(1), out.stride(0),
                             out.stride(1), BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k, GROUP_M=8,
                             INPUT_PRECISION=input_precision, MAX_IMPRECISE=max_imprecise, num_warps=num_warps,
                             num_stages=num_stages)

    matmul.__name__ = name
    return matmul


# The input precisions of tl.dot for fp32 operands in this Triton (3.6 on Hopper: "tf32", "tf32x3",
# "ieee"; newer ones may add "bf16x3" / "bf16x6", tried and kept when they compile).
FP32_PRECISIONS = ("tf32", "tf32x3", "ieee", "bf16x3", "bf16x6")


def flavours() -> dict[str, dict]:
    """Every Triton flavour: name -> {fn, input_format, output_format, layout_b, accumulation}."""
    f: dict[str, dict] = {
        "triton_fp16_f32": dict(fn=_launcher(128, 128, 64, 8, 3, name="triton_fp16_f32"), input_format="fp16"),
        "triton_bf16_f32": dict(fn=_launcher(128, 128, 64, 8, 3, name="triton_bf16_f32"), input_format="bf16"),
        "triton_e4m3_f32": dict(fn=_launcher(128, 128, 128, 8, 3, name="triton_e4m3_f32"), input_format="e4m3",
                                layout_b="col"),
        # max_num_imprecise_acc on 16-bit operands: Triton documents it for fp8 dots; these two show by
        # their bits whether it changes anything for fp16 / bf16 (added 2026-11-24, not yet run on a GPU).
        "triton_fp16_f32_imprecise32": dict(
            fn=_launcher(128, 128, 64, 8, 3, max_imprecise=32, name="triton_fp16_f32_imprecise32"), input_format="fp16"),
        "triton_bf16_f32_imprecise32": dict(
            fn=_launcher(128, 128, 64, 8, 3, max_imprecise=32, name="triton_bf16_f32_imprecise32"), input_format="bf16"),
        "triton_e4m3_f32_imprecise128": dict(
            fn=_launcher(128, 128, 128, 8, 3, max_imprecise=128, name="triton_e4m3_f32_imprecise128"),
            input_format="e4m3", layout_b="col"),
    }
    for p in FP32_PRECISIONS:
        bk = 32 if p == "ieee" else 32
        f[f"triton_fp32_{p}"] = dict(fn=_launcher(128, 128, bk, 8, 3, input_precision=p, name=f"triton_fp32_{p}"),
                                     input_format="fp32")
    for v in f.values():
        v.setdefault("output_format", "fp32")
        v.setdefault("layout_b", "row")
    return f
