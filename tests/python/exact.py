"""Exact arithmetic for the tests, independent of gemmlab: sums as Fractions, rounding to a format."""

import math
from fractions import Fraction

import gemmlab


def exact_sum(a, b) -> Fraction:
    return sum((Fraction(float(x)) * Fraction(float(y)) for x, y in zip(a, b)), Fraction(0))


def round_fraction(x: Fraction, fmt: str, mode: str = "nearest_even") -> float:
    """x rounded to the format (nearest-even or toward zero), subnormals kept, overflow to inf
    (e4m3: saturate), computed on Fractions only."""
    info = gemmlab.format_info(fmt)
    if x == 0:
        return 0.0
    sign = -1 if x < 0 else 1
    m = abs(x)
    e = math.floor(math.log2(m.numerator) - math.log2(m.denominator))
    while Fraction(2) ** e > m:  # fix the float log2 estimate
        e -= 1
    while Fraction(2) ** (e + 1) <= m:
        e += 1
    q = max(e, info.emin) - info.precision + 1  # quantum of the grid near x
    scaled = m / Fraction(2) ** q
    n = math.floor(scaled)
    if mode == "nearest_even":
        rest = scaled - n
        if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and n % 2 == 1):
            n += 1
    v = Fraction(n) * Fraction(2) ** q
    if v > Fraction(info.max_finite):
        return sign * (info.max_finite if not info.has_infinity else math.inf)
    return sign * float(v)
