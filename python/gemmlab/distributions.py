"""Controlled, seeded input distributions, bit-identical to the CLI (reference/distributions.hpp).

Names carry their parameters, as in the CSV's ``distribution`` column: ``uniform_0_1``,
``uniform_-1_1``, ``normal_0_1``, ``logunif_L_H``, ``cancel_E``, ``exactint_R`` (aliases
``uniform01``, ``normal``, ... give the defaults). Every entry is a pure function of
(seed, operand, distribution, i, j) through Philox-4x32-10, so ``generate(...)`` returns exactly
the A and B that ``gemmlab run -d DIST -s MxNxK --seeds SEED`` feeds a kernel of that input format.
"""

from __future__ import annotations

import numpy as np

from . import _core
from ._checks import check_format

DEFAULT_DISTRIBUTIONS: tuple[str, ...] = tuple(_core.default_distributions())


def canonical_name(distribution: str) -> str:
    """The canonical name (``"normal"`` -> ``"normal_0_1"``); ValueError listing valid names."""
    return _core.canonical_distribution(distribution)


def _check_seed(seed: int) -> int:
    if isinstance(seed, (bool, float)) or not isinstance(seed, (int, np.integer)) or not 0 <= int(seed) < 2**64:
        raise ValueError(f"seed must be an integer in [0, 2**64), got {seed!r}")
    return int(seed)


def generate(distribution: str, operand: str, rows: int, cols: int, fmt: str, seed: int,
             threads: int = 0) -> np.ndarray:
    """One operand, (rows, cols) float64, every value rounded to ``fmt``.

    ``operand`` is ``"A"`` (shape (M, K)) or ``"B"`` (shape (K, N)): the two get independent streams
    of one seed. For ``cancel_E`` A and B are coupled through K: generate both with the same seed.
    Raises ValueError when the distribution cannot be expressed in ``fmt`` (see ``unusable_reason``).
    """
    if rows < 0 or cols < 0:
        raise ValueError(f"shape must be non-negative, got ({rows}, {cols})")
    return np.asarray(_core.generate(distribution, operand, int(rows), int(cols), check_format(fmt),
                                     _check_seed(seed), threads))


def generate_problem(distribution: str, M: int, N: int, K: int, fmt: str, seed: int,
                     threads: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(A, B) of one problem, as ``gemmlab run`` makes them for a kernel with input format ``fmt``."""
    return (generate(distribution, "A", M, K, fmt, seed, threads),
            generate(distribution, "B", K, N, fmt, seed, threads))


def unusable_reason(distribution: str, fmt: str) -> str:
    """Why ``distribution`` cannot be generated in ``fmt`` ('' when it can)."""
    return _core.unusable_reason(distribution, check_format(fmt))


def exact_in(distribution: str, input_format: str, output_format: str, K: int) -> str:
    """For exactint_R: '' when every product and partial sum is exact in ``output_format``."""
    return _core.exact_in(distribution, check_format(input_format), check_format(output_format), K)
