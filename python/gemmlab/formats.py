"""Number formats: rounding and bit patterns (reference/formats.hpp).

Formats are named as in the CLI and the CSV: fp64, fp32, tf32, fp16, bf16, e4m3, e5m2 (``FORMATS``: the
formats of a run's operands and outputs), and the element and scale formats of quantized operands
(``QUANTIZED_FORMATS``: e2m1, e2m3, e3m2, ue8m0, ue4m3, int8, int4, uint4), which the functions below take
too. Every value of every format is exact in a float64, so values travel as float64; bit patterns as
uint64 (low ``storage_bits`` bits used; tf32 in its 32-bit container; int8 and int4 in two's
complement).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import overload

import numpy as np
import numpy.typing as npt

from . import _core
from ._checks import check_format, vector


@dataclass(frozen=True)
class FormatInfo:
    """Facts of one format (reference/formats.hpp ``FormatInfo``)."""

    name: str
    precision: int  #: significand bits including the implicit one (fp32: 24, fp16: 11)
    emin: int  #: exponent of the smallest normal number; integers: precision - 1 (their grid's step, 1, is 2**(emin - precision + 1))
    emax: int  #: exponent of the largest finite number (int8: 6, as 127 < 2**7)
    storage_bits: int
    has_infinity: bool  #: False for e4m3 (saturating) and every quantized format
    max_finite: float
    unit_roundoff: float  #: u = 2**-precision (integers: 1/2, absolute)
    lowest: float  #: the most negative finite value (-max_finite; 0 unsigned; 2**-127 ue8m0; -128 int8)
    has_nan: bool  #: False for e2m1, e2m3, e3m2 and the integers
    integer: bool  #: int8, int4, uint4


FORMATS: tuple[str, ...] = tuple(_core.format_names())
QUANTIZED_FORMATS: tuple[str, ...] = tuple(_core.quantized_format_names())


def format_info(fmt: str) -> FormatInfo:
    """The facts of ``fmt`` (``"fp16"``, ...)."""
    return FormatInfo(**_core.format_info(check_format(fmt, quantized=True)))


def _apply(fn, fmt: str, x: npt.ArrayLike, out_dtype=None):
    arr = np.asarray(x)
    flat = vector(arr, "x")
    r = np.asarray(fn(check_format(fmt, quantized=True), flat))
    if arr.ndim == 0:
        return r[0].item()
    return r.reshape(arr.shape) if out_dtype is None else r.reshape(arr.shape).astype(out_dtype)


@overload
def round_to(fmt: str, x: float) -> float: ...
@overload
def round_to(fmt: str, x: npt.ArrayLike) -> np.ndarray: ...
def round_to(fmt, x):
    """Round to nearest-even into ``fmt`` with subnormals; overflow to +-inf (e4m3: saturate to
    +-448; the quantized formats saturate to their range, OCP MX's conversion: e2m1(7) = 6, int8(-200) =
    -128, uint4(-3) = 0). A scalar gives a float, an array a float64 array of the same shape."""
    return _apply(_core.round_to, fmt, x)


def is_representable(fmt: str, x: npt.ArrayLike) -> np.ndarray | bool:
    """Whether each value is exactly a value of ``fmt``."""
    r = _apply(_core.is_representable, fmt, x)
    return bool(r) if np.ndim(x) == 0 else r.astype(bool)


def to_bits(fmt: str, x: npt.ArrayLike) -> np.ndarray | int:
    """Bit patterns of values representable in ``fmt`` (ValueError otherwise: round first).
    NaN maps to the format's canonical NaN."""
    return _apply(_core.to_bits, fmt, x)


def from_bits(fmt: str, bits: npt.ArrayLike) -> np.ndarray | float:
    """Values of bit patterns of ``fmt`` (as float64)."""
    arr = np.asarray(bits)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"bits must be an integer array, got dtype {arr.dtype}")
    fmt = check_format(fmt, quantized=True)
    width = format_info(fmt).storage_bits
    if arr.size and (int(arr.min()) < 0 or (width < 64 and int(arr.max()) >= 1 << width)):
        bad = int(arr.min()) if int(arr.min()) < 0 else int(arr.max())
        raise ValueError(f"bits {bad:#x} is not a bit pattern of {fmt}, whose patterns are the {width}-bit integers "
                         f"0 .. {(1 << width) - 1:#x}")
    r = np.asarray(_core.from_bits(fmt, np.ascontiguousarray(arr, dtype=np.uint64).reshape(-1)))
    return r[0].item() if arr.ndim == 0 else r.reshape(arr.shape)
