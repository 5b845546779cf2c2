"""The exact reference on the CPU (reference/exact_gemm.hpp, reference/mpfr_gemm.hpp).

Every product of two inputs of at most 24 significand bits is exact in binary64, so each C(i, j) is
an exact sum; ``exact_gemm`` sums it exactly (int128 fixed point, or a Kulisch accumulator over the
whole exponent range) and rounds once, to binary64 (``c``) and to the output format (``c_out``).
MPFR computes the same at a precision where nothing rounds: ``mpfr_dot`` spot-checks one entry.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from . import _core
from ._checks import check_format, matrix, representable

Engine = Literal["automatic", "fixed_int128", "kulisch"]


@dataclass(frozen=True)
class Reference:
    """Exact C = A B rounded once. Arrays are (M, N) float64."""

    c: np.ndarray  #: exact C rounded to nearest-even binary64
    c_out: np.ndarray  #: exact C rounded to nearest-even in ``output_format`` (one rounding)
    abs_ab: np.ndarray  #: (|A||B|)(i, j), for componentwise errors and bounds
    output_format: str
    engine: str  #: "fixed_int128", "kulisch" or "mpfr": what actually ran
    seconds: float
    label: str  #: the CSV ``reference`` column: engine, plus "+mpfr_spotN" when N entries were checked


def operands(A: npt.ArrayLike, B: npt.ArrayLike, input_format: str = "fp32") -> tuple[np.ndarray, np.ndarray]:
    """A (M, K) and B (K, N) as float64, checked: 2-D, matching K, finite, values of ``input_format``
    (at most fp32, so every product is exact in binary64)."""
    check_format(input_format, "input_format")
    if input_format == "fp64":
        raise ValueError("input_format fp64 is not supported: the exact reference needs inputs of at most "
                         "24 significand bits (fp32, tf32, fp16, bf16, e4m3, e5m2) so products are exact")
    a, b = matrix(A, "A"), matrix(B, "B")
    if a.shape[1] != b.shape[0]:
        raise ValueError(f"A is {a.shape[0]}x{a.shape[1]} but B is {b.shape[0]}x{b.shape[1]}: "
                         "A's columns must equal B's rows (K)")
    representable(a, input_format, "A")
    representable(b, input_format, "B")
    return a, b


def exact_gemm(A: npt.ArrayLike, B: npt.ArrayLike, output_format: str = "fp32", *, input_format: str = "fp32",
               threads: int = 0, engine: Engine = "automatic", spot_checks: int = 0, seed: int = 0) -> Reference:
    """The exact product, rounded once to binary64 and to ``output_format``.

    A and B must hold values of ``input_format`` (default fp32; any narrower format's values are
    fp32 values too). ``threads=0`` uses every core. ``engine`` forces one exact engine (tests).
    ``spot_checks`` entries, chosen by ``seed`` as ``gemmlab run`` chooses them, are recomputed with
    MPFR (RuntimeError if one differs); ``evaluate`` uses 16, like the CLI.
    """
    a, b = operands(A, B, input_format)
    return Reference(**_core.exact_gemm(a, b, check_format(output_format, "output_format"), threads, engine,
                                        int(spot_checks), int(seed)))


def mpfr_gemm(A: npt.ArrayLike, B: npt.ArrayLike, output_format: str = "fp32", *, input_format: str = "fp32",
              threads: int = 0) -> Reference:
    """The same as ``exact_gemm`` through MPFR (about 10x slower: small sizes)."""
    a, b = operands(A, B, input_format)
    return Reference(**_core.mpfr_gemm(a, b, check_format(output_format, "output_format"), threads))


def _entry(a: np.ndarray, b: np.ndarray, i: int, j: int) -> None:
    if not (0 <= i < a.shape[0] and 0 <= j < b.shape[1]):
        raise IndexError(f"entry ({i}, {j}) is outside the {a.shape[0]}x{b.shape[1]} product")


def exact_dot(A: npt.ArrayLike, B: npt.ArrayLike, i: int, j: int, *, input_format: str = "fp32") -> float:
    """Exact C(i, j) = sum_k A(i, k) B(k, j), rounded to binary64 (Kulisch accumulator)."""
    a, b = operands(A, B, input_format)
    _entry(a, b, i, j)
    return _core.exact_dot(a, b, i, j)


def mpfr_dot(A: npt.ArrayLike, B: npt.ArrayLike, i: int, j: int, *, input_format: str = "fp32") -> float:
    """Exact C(i, j) through MPFR, rounded to binary64: the independent check of ``exact_dot``."""
    a, b = operands(A, B, input_format)
    _entry(a, b, i, j)
    return _core.mpfr_dot(a, b, i, j)
