"""Input checks shared by the public functions: each raises a clear exception before C++ is called."""

from __future__ import annotations

import numbers

import numpy as np
import numpy.typing as npt

from . import _core

#: How each declared accumulation rounds its additions (reference/numerics.hpp
#: ``default_accumulation_rounding``: fma to nearest even; the tensor-core modes truncate in
#: alignment, even external and promoted inside each k-step; library and unknown are judged by the
#: weaker model).
ACC_ROUNDING: dict[str, str] = {a: _core.default_accumulation_rounding(a) for a in _core.accumulations()}



def check_format(name: str, what: str = "format", quantized: bool = False) -> str:
    """``name`` if it is a run format (or, with ``quantized``, a quantized element or scale format too);
    ValueError listing the valid ones otherwise."""
    valid = list(_core.format_names()) + (list(_core.quantized_format_names()) if quantized else [])
    if not isinstance(name, str) or name not in valid:
        raise ValueError(f"{what} {name!r} is not a gemmlab format; valid: {', '.join(valid)}")
    return name


def matrix(x: npt.ArrayLike, name: str) -> np.ndarray:
    """A 2-D, C-contiguous float64 copy-or-view of a float array; TypeError/ValueError otherwise."""
    a = np.asarray(x)
    if a.dtype.kind != "f" or a.dtype.itemsize > 8:
        raise TypeError(f"{name} must be a float16, float32 or float64 array, got dtype {a.dtype}")
    if a.ndim != 2:
        raise ValueError(f"{name} must be 2-D, got shape {a.shape}")
    return np.ascontiguousarray(a, dtype=np.float64)


def vector(x: npt.ArrayLike, name: str) -> np.ndarray:
    a = np.asarray(x)
    if a.dtype.kind not in "fiu":
        raise TypeError(f"{name} must be numeric, got dtype {a.dtype}")
    return np.ascontiguousarray(a, dtype=np.float64).reshape(-1)


def representable(a: np.ndarray, fmt: str, name: str) -> None:
    """ValueError naming the first entry of `a` that is not a value of `fmt` (or is not finite)."""
    flat = a.reshape(-1)
    bad = ~np.isfinite(flat)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"{name} has {int(bad.sum())} NaN or infinite entries (first at flat index {i}); "
                         "inputs must be finite")
    ok = np.asarray(_core.is_representable(fmt, flat)).astype(bool)
    if not ok.all():
        i = int(np.flatnonzero(~ok)[0])
        idx = [int(k) for k in np.unravel_index(i, a.shape)]
        raise ValueError(f"{name}{idx} = {float(flat[i])!r} is not a value of {fmt} "
                         f"({int((~ok).sum())} entries are not): round the matrix with gemmlab.round_to({fmt!r}, ...) "
                         "or declare the format it really has")


def whole(value, name: str, lowest: int = 1) -> int:
    """``value`` as an int: a whole number (not a bool, a float or a string, which would be truncated or
    read) of at least ``lowest``; TypeError or ValueError naming ``name`` otherwise."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be a whole number, got {value!r} ({type(value).__name__})")
    if int(value) < lowest:
        raise ValueError(f"{name} = {int(value)}: {name} must be a whole number of at least {lowest}")
    return int(value)
