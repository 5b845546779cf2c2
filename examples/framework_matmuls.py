"""Framework matmuls for gemmlab.explain and gemmlab.judge: ``jnp.matmul`` at JAX's default precision
and at ``precision=HIGHEST`` (fp32 operands), and ``torch.compile(mode="max-autotune")`` of
``torch.matmul`` on fp16 and bf16 (Inductor's Triton templates, or cuBLAS where its autotuning picks
it). Shared by scripts/lab/explain37.py and tests/python/test_explain_gpu37.py.

torch.compile compiles and autotunes on the first call of each shape, timing its candidates on its own
inputs, and a later call with other guards (another shape, stride or dtype) compiles again and may pick
another kernel. ``CompiledMatmul`` therefore compiles once per shape before gemmlab calls it (``warm``,
with ``dynamic=False``: one static kernel per shape) and, while gemmlab explains or judges it
(``held``), runs under ``torch.compiler.set_stance("fail_on_recompile")``: a recompilation raises (and
explain reports the call that raised) instead of silently swapping the kernel under explain's launches.
``compiles`` counts Dynamo's compiled frames, so a report can say that one compiled kernel served every
launch.
"""

from __future__ import annotations

import time
from contextlib import contextmanager

# --- JAX -------------------------------------------------------------------------------------------


def jax_matmuls() -> dict[str, dict]:
    """name -> {fn, framework, input_format, output_format}: ``jnp.matmul`` of fp32 operands at JAX's
    default precision (on Hopper: TF32 tensor cores) and at ``HIGHEST`` (true fp32)."""
    import jax
    import jax.numpy as jnp

    def jnp_matmul_default(A, B):
        return jnp.matmul(A, B)

    def jnp_matmul_highest(A, B):
        return jnp.matmul(A, B, precision=jax.lax.Precision.HIGHEST)

    return {
        "jnp_matmul_fp32_default": dict(fn=jnp_matmul_default, framework="jax", input_format="fp32",
                                        output_format="fp32"),
        "jnp_matmul_fp32_highest": dict(fn=jnp_matmul_highest, framework="jax", input_format="fp32",
                                        output_format="fp32"),
    }


def jax_metadata() -> dict:
    """What decides jnp.matmul's numerics: versions, the default matmul precision, XLA's flags."""
    import os

    import jax
    return {"jax_version": jax.__version__, "jax_default_matmul_precision": str(jax.config.jax_default_matmul_precision),
            "XLA_FLAGS": os.environ.get("XLA_FLAGS"), "devices": [str(d) for d in jax.devices()]}


# --- torch.compile ---------------------------------------------------------------------------------


class CompiledMatmul:
    """``torch.compile(torch.matmul, mode="max-autotune", dynamic=False)`` on one dtype, compiled per
    shape by ``warm`` and held to that code by ``held`` (see the module)."""

    def __init__(self, dtype: str, mode: str = "max-autotune"):
        import torch
        self.torch = torch
        self.dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}[dtype]
        self.mode = mode
        self.fn = torch.compile(lambda a, b: torch.matmul(a, b), mode=mode, dynamic=False)
        self.__name__ = f"torch_compile_{mode.replace('-', '_')}_{dtype}"
        self.warm_seconds: dict[tuple[int, int, int], float] = {}

    def compiles(self) -> int:
        """Frames Dynamo has compiled so far in this process (torch._dynamo.utils.counters)."""
        from torch._dynamo.utils import counters
        return int(counters["stats"]["unique_graphs"])

    def warm(self, M: int, N: int, K: int) -> float:
        """Compiles and autotunes at (M, N, K) on inputs with the guards gemmlab's will have (contiguous,
        this dtype, on the current GPU); returns the seconds it took."""
        torch = self.torch
        t0 = time.time()
        a = torch.randn(M, K, device="cuda", dtype=self.dtype)
        b = torch.randn(K, N, device="cuda", dtype=self.dtype)
        for _ in range(3):  # compile, autotune, and (max-autotune's CUDA graphs) record and replay
            self.fn(a, b)
        torch.cuda.synchronize()
        self.warm_seconds[(M, N, K)] = time.time() - t0
        return self.warm_seconds[(M, N, K)]

    @contextmanager
    def held(self):
        """No recompilation while gemmlab runs the callable: one compiled kernel for every launch."""
        torch = self.torch
        torch.compiler.set_stance("fail_on_recompile")
        try:
            yield
        finally:
            torch.compiler.set_stance("default")

    def __call__(self, A, B):
        return self.fn(A, B)


def compiled_matmuls() -> dict[str, dict]:
    """name -> {fn (a CompiledMatmul), framework, input_format, output_format}."""
    out = {}
    for dt in ("fp16", "bf16"):
        cm = CompiledMatmul(dt)
        out[cm.__name__] = dict(fn=cm, framework="torch", input_format=dt, output_format=dt)
    return out


def torch_compile_metadata() -> dict:
    """Inductor's settings that decide which kernels max-autotune may pick."""
    import torch
    import torch._inductor.config as ic
    return {"torch_version": torch.__version__,
            "max_autotune_gemm_backends": getattr(ic, "max_autotune_gemm_backends", None),
            "triton_cudagraphs": getattr(ic.triton, "cudagraphs", None),
            "force_same_precision": getattr(ic, "force_same_precision", None)}
