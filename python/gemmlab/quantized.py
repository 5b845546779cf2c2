"""Quantized operands on the host: ``gemmlab.quantized_inputs`` (reference/quantized.hpp).

The problem ``gemmlab.judge(fn, input_format="mxfp4", ...)`` hands a quantized callable, made on the CPU bit
for bit as the GPU makes it: the fp32 sources, the quantized operands' tensors in the frameworks' layouts
(reference/quantized_layout.hpp; docs/python.md), and the dequantized operands (every element times its
scales, exact in float64). Useful to test a quantized kernel by hand, or to check what it is given.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from . import _core

# numpy dtypes of the kernel tensors' types; numpy has no bfloat16 or float8: those stay their raw bits.
_NUMPY = {"uint8": np.uint8, "int8": np.int8, "float32": np.float32, "float16": np.float16, "bfloat16": np.uint16,
          "float8_e4m3fn": np.uint8, "float8_e5m2": np.uint8}


@dataclass(frozen=True)
class QuantizedInputs:
    """One quantized problem (see ``quantized_inputs``)."""

    distribution: str  #: SOURCE@RECIPE, canonical
    recipe: str
    M: int
    N: int
    K: int
    seed: int
    sources: tuple[np.ndarray, np.ndarray]  #: A0 (M, K), B0 (K, N): the fp32 source values, as float64
    dequantized: tuple[np.ndarray, np.ndarray]  #: the dequantized operands, exact, float64
    #: The kernel tensors by keyword (``A``, ``B``, ``a_scale``, ``b_scale``, ``a_zero``, ``b_zero``) in their
    #: layouts' shapes; bfloat16 tensors as their uint16 bits, float8 ones as their uint8 bits (``types`` names them).
    tensors: dict[str, np.ndarray]
    types: dict[str, str]
    tensor_scales: dict[str, float]  #: ``a_tensor_scale`` / ``b_tensor_scale`` (NVFP4)


def _as_numpy(x, name: str) -> np.ndarray:
    """A numpy array of ``x`` with its shape; a torch tensor (any device) by its bits where numpy has no dtype."""
    if hasattr(x, "detach") and hasattr(x, "dtype"):  # torch
        import torch
        t = x.detach().cpu()
        bits = {torch.bfloat16: torch.int16, torch.float8_e4m3fn: torch.uint8, torch.float8_e5m2: torch.uint8}
        t = t.view(bits[t.dtype]) if t.dtype in bits else t
        return t.contiguous().numpy()
    if not isinstance(x, np.ndarray):
        raise TypeError(f"{name} must be a numpy array or a torch tensor, got {type(x).__name__}")
    return np.ascontiguousarray(x)


_SIZES = {"uint8": 1, "int8": 1, "float8_e4m3fn": 1, "float8_e5m2": 1, "bfloat16": 2, "float16": 2, "float32": 4}


def dequantize(input_format: str, size: int | Sequence[int], *, group_size: int | None = None,
               **tensors) -> tuple[np.ndarray, np.ndarray]:
    """The dequantized operands (A (M, K), B (K, N), float64, exact) of quantized tensors you made, e.g. to judge a
    C computed elsewhere with ``gemmlab.evaluate(A, B, C, ...)``. ``input_format`` and ``group_size`` as
    ``judge`` takes them; ``tensors``: ``A``, ``B`` and the keywords of ``QUANTIZED_KEYWORDS`` the form has, in the
    layouts of docs/python.md (numpy arrays of those shapes, bfloat16 and float8 as their bits, or torch tensors).
    Everything is checked before it is used: ValueError naming the tensor for a missing or extra tensor, a wrong
    shape or element size (a packed tensor of the wrong shape), a NaN, infinite, zero or negative scale, a NaN
    element, a K the form's blocks do not divide."""
    from .gpu import quantized_recipe  # noqa: PLC0415
    M, N, K = (int(size),) * 3 if isinstance(size, int) else (int(v) for v in size)
    recipe = quantized_recipe(input_format, group_size)
    if recipe is None:
        raise ValueError(f"{input_format!r} is a plain format: there is nothing to dequantize")
    layout = _core.quantized_layout(recipe, M, N, K)
    unknown = sorted(set(tensors) - set(layout))
    if unknown:
        raise ValueError(f"{recipe} at {M}x{N}x{K} takes {', '.join(sorted(layout))}; not {', '.join(unknown)}")
    raw, scales = {}, {}
    for key, spec in layout.items():
        if key not in tensors:
            where = (" (a QuantizedInputs keeps it in .tensor_scales: pass **q.tensors, **q.tensor_scales)"
                     if spec is True else "")
            raise ValueError(f"{recipe} needs {key}{where} (docs/python.md, quantized forms)")
        if spec is True:
            scales[key] = float(tensors[key])
            continue
        ty, shape = spec
        arr = _as_numpy(tensors[key], key)
        if tuple(arr.shape) != tuple(shape) or arr.dtype.itemsize != _SIZES[ty]:
            raw_bits = {"bfloat16": "uint16 bits", "float8_e4m3fn": "uint8 bits", "float8_e5m2": "uint8 bits"}.get(ty)
            want = f"{ty}{f' (or its {raw_bits})' if raw_bits else ''}"
            wrong = (f"of shape {tuple(arr.shape)}" if arr.dtype.itemsize == _SIZES[ty] else
                     f"{arr.dtype} of shape {tuple(arr.shape)}, elements of {arr.dtype.itemsize} bytes")
            raise ValueError(f"{key} of {recipe} at {M}x{N}x{K} must be {want} of shape {tuple(shape)}; got {wrong}")
        raw[key] = arr.view(np.uint8).reshape(-1)
    return _core.dequantize_tensors(recipe, M, N, K, raw, scales.get("a_tensor_scale", 1.0),
                                    scales.get("b_tensor_scale", 1.0))


def quantized_inputs(distribution: str, size: int | Sequence[int], seed: int = 20261121,
                     threads: int = 0) -> QuantizedInputs:
    """The quantized problem of ``distribution`` (``"normal_0_1@mxfp4"``, ``"uniform_-1_1@bf16_x_uint4_g128"``) at
    ``size`` (M, N, K, or one integer for a cube) from ``seed``: exactly what ``gemmlab.judge`` hands a quantized
    callable for that row. ValueError for a distribution without a quantized recipe, a K its blocks do not divide,
    or data the recipe refuses (an all-zero block, ...), naming the problem."""
    M, N, K = (int(size),) * 3 if isinstance(size, int) else (int(v) for v in size)
    name = _core.canonical_distribution(distribution)
    if "@" not in name:
        raise ValueError(f"{distribution!r} carries no quantized recipe: give SOURCE@RECIPE, e.g. {name}@mxfp4")
    recipe = name.split("@", 1)[1]
    layout = _core.quantized_layout(recipe, M, N, K)
    raw = _core.quantized_problem(name, M, N, K, int(seed), int(threads))
    tensors, types, tensor_scales = {}, {}, {}
    for key, spec in layout.items():
        if spec is True:
            tensor_scales[key] = float(raw[key])
            continue
        ty, shape = spec
        types[key] = ty
        tensors[key] = np.asarray(raw[key]).view(_NUMPY[ty]).reshape(shape)
    return QuantizedInputs(name, recipe, M, N, K, int(seed), (raw["A0"], raw["B0"]),
                           (raw["A_dequantized"], raw["B_dequantized"]), tensors, types, tensor_scales)
