"""Triton split-K matmuls that add their partial sums into C with ``tl.atomic_add``: the kernels whose
order of summation the GPU's scheduler decides (gemmlab.explain's scheduling stage; shared by
examples/explain_scheduling.py, scripts/lab/explain37.py and tests/python/test_explain_gpu37.py).

Each of SPLIT_K programs per (BLOCK_M, BLOCK_N) tile of C sums its K / SPLIT_K slice with ``tl.dot`` into
an fp32 accumulator (one in-wgmma chain, BLOCK_K at a time, in increasing k), then adds it into C with an
fp32 atomic add. C starts at zero, so the first part lands exact and each later part is one fp32 addition
rounded to nearest: the parts are summed in the order their programs finish, which nobody fixes.

Two launch orders of the same programs (``grid``):

* ``"split_major"``: grid (tiles, SPLIT_K), split index slowest, as ``triton.ops.matmul`` launched its
  split-K: every tile's part 0 is dispatched before any part 1. Where there are many more tiles than
  SMs the parts of one tile run waves apart, so they finish in k order: the kernel then behaves like
  "promoted every K / SPLIT_K" without anything guaranteeing it.
* ``"tile_major"``: program p = tile * SPLIT_K + split: the parts of one tile are dispatched together and
  race to C.

``fn(A, B, out)`` (gemmlab's style "out"): ``out`` is zeroed on the current stream, then the kernel runs
there. K must be a multiple of SPLIT_K * BLOCK_K.
"""

from __future__ import annotations

try:
    import torch
    import triton
    import triton.language as tl
except ImportError as e:  # a CPU-only install: say what these examples need instead of a bare traceback
    raise ImportError(f"examples/splitk_atomic.py needs PyTorch and Triton with a CUDA GPU ({e})") from e


@triton.jit
def _splitk_atomic_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm,
                          stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                          SPLIT_K: tl.constexpr, TILE_MAJOR: tl.constexpr):
    if TILE_MAJOR:  # the SPLIT_K parts of one tile are consecutive programs
        pid = tl.program_id(0)
        tile = pid // SPLIT_K
        part = pid % SPLIT_K
    else:  # grid (tiles, SPLIT_K): part 0 of every tile first
        tile = tl.program_id(0)
        part = tl.program_id(1)
    num_n = tl.cdiv(N, BLOCK_N)
    pid_m = tile // num_n
    pid_n = tile % num_n
    k_part = K // SPLIT_K
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = part * k_part + tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + rm[:, None] * stride_am + rk[None, :] * stride_ak  # (BLOCK_M, BLOCK_K) tile of A
    b_ptrs = b_ptr + rk[:, None] * stride_bk + rn[None, :] * stride_bn  # (BLOCK_K, BLOCK_N) tile of B
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for _ in range(0, k_part, BLOCK_K):
        a = tl.load(a_ptrs, mask=rm[:, None] < M, other=0.0)
        b = tl.load(b_ptrs, mask=rn[None, :] < N, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c_ptrs = c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn
    tl.atomic_add(c_ptrs, acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def splitk_atomic(split_k: int = 8, grid: str = "split_major", block_m: int = 128, block_n: int = 128,
                  block_k: int = 64, num_warps: int = 8, num_stages: int = 3, name: str | None = None):
    """``fn(A, B, out)``: fp16 or bf16 A (M, K) and B (K, N), C (M, N) fp32, as the module says."""
    if grid not in ("split_major", "tile_major"):
        raise ValueError(f"grid must be 'split_major' or 'tile_major', got {grid!r}")

    def matmul(A: torch.Tensor, B: torch.Tensor, out: torch.Tensor) -> None:
        M, K = A.shape
        N = B.shape[1]
        if K % (split_k * block_k):
            raise ValueError(f"K = {K} is not a multiple of SPLIT_K * BLOCK_K = {split_k * block_k}")
        out.zero_()  # the atomics add into C
        tiles = triton.cdiv(M, block_m) * triton.cdiv(N, block_n)
        launch = (tiles * split_k,) if grid == "tile_major" else (tiles, split_k)
        _splitk_atomic_kernel[launch](A, B, out, M, N, K, A.stride(0), A.stride(1), B.stride(0), B.stride(1),
                                      out.stride(0), out.stride(1), BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k,
                                      SPLIT_K=split_k, TILE_MAJOR=grid == "tile_major", num_warps=num_warps,
                                      num_stages=num_stages)

    matmul.__name__ = name or f"triton_fp16_splitk{split_k}_atomic_{grid}"
    return matmul


def flavours() -> dict[str, dict]:
    """The split-K atomic kernels the scheduling checks explain: name -> {fn, input_format, output_format}."""
    return {
        "triton_fp16_splitk8_atomic": dict(fn=splitk_atomic(8, "split_major", name="triton_fp16_splitk8_atomic"),
                                           input_format="fp16", output_format="fp32"),
        "triton_fp16_splitk8_atomic_tile_major": dict(
            fn=splitk_atomic(8, "tile_major", name="triton_fp16_splitk8_atomic_tile_major"), input_format="fp16",
            output_format="fp32"),
    }
