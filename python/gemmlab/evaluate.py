"""Judge any product C of A and B: the exact reference and gemmlab's error statistics, as one row.

``evaluate`` returns the row ``gemmlab run`` would write for a kernel that produced C: a dict whose
keys are the CSV columns (``gemmlab.COLUMNS``), so ``pandas.DataFrame([evaluate(...), ...])`` and
``load_results`` frames concatenate and plot together.
"""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from . import _core
from ._checks import ACC_ROUNDING, check_format, representable
from ._engine import gpu_module
from .reference import Reference, operands
from .results import row_from_fields

Accumulation = Literal["fma", "in_mma", "in_wgmma", "external", "promoted", "library", "unknown"]
AccRounding = Literal["nearest_even", "toward_zero", "unknown", "nearest", "truncate"]


# The earlier spellings of the roundings, still accepted.
_ROUNDING_ALIASES = {"nearest": "nearest_even", "truncate": "toward_zero"}


def _rounding(name: str) -> str:
    r = _ROUNDING_ALIASES.get(name, name)
    if r not in ("nearest_even", "toward_zero", "unknown"):
        raise ValueError(f"acc_rounding {name!r} is not known; valid: nearest_even (nearest), toward_zero (truncate), "
                         "unknown")
    return r


# numpy dtypes that hold every value of a format (bf16, fp8 and tf32 have no numpy dtype of their own).
_HOLDS = {
    np.dtype(np.float16): {"fp16", "e4m3", "e5m2"},
    np.dtype(np.float32): {"fp32", "tf32", "fp16", "bf16", "e4m3", "e5m2"},
    np.dtype(np.float64): {"fp64", "fp32", "tf32", "fp16", "bf16", "e4m3", "e5m2"},
}


def bound(K: int, *, input_format: str, output_format: str, compute_format: str | None = None,
          accumulator_format: str | None = None, acc_rounding: AccRounding = "unknown",
          acc_unit_roundoff: float = 0.0) -> tuple[float, float]:
    """``(gamma_bound, sqrtk_u)``: the componentwise bound factor f (|C^ - C| <= f |A||B|, +inf
    when K u_eff >= 1) and the probabilistic scale sqrt(K) u_eff (reference/error_stats.hpp)."""
    compute_format = compute_format or input_format
    accumulator_format = accumulator_format or _default_accumulator(output_format)
    return _core.bound(K, check_format(input_format), check_format(compute_format), check_format(accumulator_format),
                       check_format(output_format), _rounding(acc_rounding), acc_unit_roundoff)


def _default_accumulator(output_format: str) -> str:
    return "fp64" if output_format == "fp64" else "fp32"


def _check_c(C: npt.ArrayLike, M: int, N: int, output_format: str, allow_nonfinite: bool) -> np.ndarray:
    arr = np.asarray(C)
    if arr.dtype.kind != "f" or arr.dtype not in _HOLDS:
        raise TypeError(f"C must be a float16, float32 or float64 array, got dtype {arr.dtype}")
    if output_format not in _HOLDS[arr.dtype]:
        raise TypeError(f"C is {arr.dtype} but output_format is {output_format}: {arr.dtype} cannot hold "
                        f"{output_format} values; pass the kernel's output as it was written (or as float64) "
                        "and declare the format it really has")
    if arr.shape != (M, N):
        raise ValueError(f"C has shape {arr.shape} but A @ B is ({M}, {N})")
    c = np.ascontiguousarray(arr, dtype=np.float64)
    finite = np.isfinite(c)
    if not finite.all() and not allow_nonfinite:
        i = [int(k) for k in np.unravel_index(int(np.flatnonzero(~finite)[0]), c.shape)]
        raise ValueError(f"C has {int((~finite).sum())} NaN or infinite entries (first at {i}); "
                         "pass allow_nonfinite=True to count them in the row (status failed_bound)")
    representable(np.where(finite, c, 0.0), output_format, "C")
    return c


def _check_reference(ref: Reference, a: np.ndarray, b: np.ndarray, output_format: str) -> None:
    M, N = a.shape[0], b.shape[1]
    if ref.output_format != output_format:
        raise ValueError(f"the reference was computed for {ref.output_format} output, not {output_format}")
    if ref.c.shape != (M, N):
        raise ValueError(f"the reference is {ref.c.shape[0]}x{ref.c.shape[1]} but A @ B is {M}x{N}")
    if M * N == 0:
        return
    # A reference of other inputs: caught on the corners and the centre (exact dot products, O(K) each).
    for i, j in {(0, 0), (M - 1, N - 1), (M // 2, N // 2)}:
        if _core.exact_dot(a[i:i + 1], np.ascontiguousarray(b[:, j:j + 1]), 0, 0) != ref.c[i, j]:
            raise ValueError(f"the reference does not belong to these A and B (entry ({i}, {j}) differs); "
                             "compute it with gemmlab.exact_gemm(A, B, output_format)")


def evaluate(A: npt.ArrayLike, B: npt.ArrayLike, C: npt.ArrayLike, *, output_format: str,
             input_format: str = "fp32", accumulation: Accumulation = "unknown",
             compute_format: str | None = None, accumulator_format: str | None = None,
             acc_rounding: AccRounding | None = None, acc_unit_roundoff: float = 0.0,
             promotion_interval_k: int = 0, kernel: str = "python", family: str = "user",
             distribution: str = "", seed: int | None = None, time_ms: float | None = None,
             reps: int | None = None, note: str = "", allow_nonfinite: bool = False,
             reference: Reference | None = None, spot_checks: int = 16, threads: int = 0) -> dict[str, Any]:
    """The statistics row of a computed product C ~ A @ B against its exact reference.

    A (M, K) and B (K, N) must hold values of ``input_format`` (as ``generate`` makes them); C
    (M, N) values of ``output_format``, in a dtype that holds them (float64 always does). The
    reference is exact (checked against MPFR on ``spot_checks`` entries chosen by ``seed``, as
    ``gemmlab run`` does) and the bound is the gamma_K bound of the declared numerics:
    ``accumulation`` gives the rounding of the additions (``ACC_ROUNDING``; override with
    ``acc_rounding``), ``accumulator_format`` defaults to fp32 (fp64 for fp64 output),
    ``compute_format`` to ``input_format``.

    The row comes from the same C++ function as ``gemmlab evaluate``'s (experiments/engine/
    evaluate.hpp), so it equals the CLI's row for the same inputs and declaration.

    Returns a dict with exactly the keys ``COLUMNS``. ``status`` is ``passed`` (within the bound),
    ``no_bound`` (K u_eff >= 1: no deterministic bound; or ``accumulation="unknown"``, which claims
    no bound: ``gamma_bound`` then shows the weakest model's, u_eff = 2u), ``failed_bound``, or
    ``not_applicable`` when the exact result leaves the output format's range. ``family`` is
    ``"user"`` or ``"external"`` (a library or framework). ``time_ms`` (the kernel's median time)
    fills ``time_ms_median`` and ``tflops``. Raises TypeError / ValueError on bad input, NaN or
    infinity in C included unless ``allow_nonfinite`` (then counted in ``nonfinite``).

    ``reference``: a ``Reference`` of these A and B in ``output_format`` from ``exact_gemm``, to judge
    several kernels without recomputing it (checked against A and B on a few entries); its ``label``
    becomes the row's ``reference`` column (pass ``spot_checks=16`` to ``exact_gemm`` for the CLI's).

    GPU tensors (torch, CuPy, JAX: anything with ``__dlpack__`` on a CUDA device) are judged on the
    GPU, with no host copy: A, B and C in the dtypes that store their formats (float32 for fp32 and
    tf32, float16, bfloat16, float8 for e4m3 / e5m2), any strides, on one GPU; the same row as the
    CPU path, from the GPU reference and statistics (needs gemmlab's GPU engine, ``gemmlab.judge``).
    """
    check_format(output_format, "output_format")
    if any(_on_gpu(x) for x in (A, B, C)):
        if reference is not None:
            raise ValueError("reference= is for host arrays; with GPU tensors the exact reference is computed on the GPU")
        return _evaluate_on_gpu(A, B, C, output_format=output_format, input_format=input_format,
                                accumulation=accumulation, compute_format=compute_format,
                                accumulator_format=accumulator_format, promotion_interval_k=promotion_interval_k,
                                kernel=kernel, family=family, distribution=distribution, seed=seed, time_ms=time_ms,
                                reps=reps, note=note, allow_nonfinite=allow_nonfinite, spot_checks=spot_checks)
    if accumulation not in ACC_ROUNDING:
        raise ValueError(f"accumulation {accumulation!r} is not known; valid: {', '.join(ACC_ROUNDING)}")
    rounding = _rounding(acc_rounding) if acc_rounding else ""
    compute_format = check_format(compute_format or input_format, "compute_format")
    accumulator_format = check_format(accumulator_format or _default_accumulator(output_format), "accumulator_format")
    a, b = operands(A, B, input_format)
    M, K = a.shape
    N = b.shape[1]
    c = _check_c(C, M, N, output_format, allow_nonfinite)
    if time_ms is not None and not (math.isfinite(time_ms) and time_ms > 0):
        raise ValueError(f"time_ms must be a positive number of milliseconds, got {time_ms!r}")
    if seed is not None and not (isinstance(seed, (int, np.integer)) and 0 <= int(seed) < 2**64):
        raise ValueError(f"seed must be an integer in [0, 2**64) or None, got {seed!r}")
    if family not in ("user", "external"):
        raise ValueError(f"family must be 'user' or 'external', got {family!r}")
    if reference is not None:
        _check_reference(reference, a, b, output_format)
    # One implementation with `gemmlab evaluate`: experiments/engine/evaluate.hpp.
    fields = _core.evaluate(
        a, b, c, kernel, family, input_format, compute_format, accumulator_format, output_format, accumulation,
        rounding, float(acc_unit_roundoff), int(promotion_interval_k), distribution, int(seed or 0),
        float("nan") if time_ms is None else float(time_ms), -1 if reps is None else int(reps), note,
        int(spot_checks), int(threads),
        None if reference is None else reference.c, None if reference is None else reference.c_out,
        None if reference is None else reference.abs_ab, "" if reference is None else reference.label)
    return row_from_fields(fields)


def _on_gpu(x: Any) -> bool:
    """Whether x is a DLPack tensor on a CUDA device (DLPack device type 2: kDLCUDA)."""
    try:
        return hasattr(x, "__dlpack_device__") and int(x.__dlpack_device__()[0]) == 2
    except Exception:
        return False


def _raw(x: Any) -> Any:
    """float8 tensors travel as their bytes (DLPack has no float8 type in gemmlab's bindings)."""
    dt = str(getattr(x, "dtype", ""))
    if "float8" in dt:
        if hasattr(x, "view") and "torch" in type(x).__module__:
            import torch
            return x.view(torch.uint8)
        import jax
        import jax.numpy as jnp
        return jax.lax.bitcast_convert_type(x, jnp.uint8)
    return x


def _evaluate_on_gpu(A: Any, B: Any, C: Any, *, output_format: str, input_format: str, accumulation: str,
                     compute_format: str | None, accumulator_format: str | None, promotion_interval_k: int,
                     kernel: str, family: str, distribution: str, seed: int | None, time_ms: float | None,
                     reps: int | None, note: str, allow_nonfinite: bool, spot_checks: int) -> dict[str, Any]:
    if not all(_on_gpu(x) for x in (A, B, C)):
        raise ValueError("A, B and C must all be GPU tensors, or all host arrays")
    device = int(C.__dlpack_device__()[1])
    gpu = gpu_module(device)
    check_format(input_format, "input_format")
    if accumulation not in ACC_ROUNDING:
        raise ValueError(f"accumulation {accumulation!r} is not known; valid: {', '.join(ACC_ROUNDING)}")
    if family not in ("user", "external"):
        raise ValueError(f"family must be 'user' or 'external', got {family!r}")
    if time_ms is not None and not (math.isfinite(time_ms) and time_ms > 0):
        raise ValueError(f"time_ms must be a positive number of milliseconds, got {time_ms!r}")
    stream = 0
    if "torch" in type(C).__module__:
        import torch
        stream = int(torch.cuda.current_stream(device).cuda_stream)
        torch.cuda.current_stream(device).synchronize()
    fields, _seconds, _ref_seconds = gpu.evaluate(
        _raw(A), _raw(B), C, input_format, compute_format or "", accumulator_format or "", output_format, accumulation,
        int(promotion_interval_k), kernel, family, distribution, int(seed or 0), time_ms, reps, note, int(spot_checks),
        bool(allow_nonfinite), device, stream)
    return row_from_fields(fields)
