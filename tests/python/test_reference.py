"""The exact reference against independent exact arithmetic (Fractions) on dyadic inputs."""

import math

import numpy as np
import pytest

import gemmlab
from exact import exact_sum, round_fraction


def random_dyadic(rng, shape, fmt, lo=-30, hi=10):
    """Values of `fmt` with magnitudes 2^U[lo, hi), random signs and some exact zeros."""
    x = rng.standard_normal(shape) * np.exp2(rng.integers(lo, hi, size=shape))
    x[rng.random(shape) < 0.05] = 0.0
    return gemmlab.round_to(fmt, x)


@pytest.mark.parametrize("fmt,out", [("fp16", "fp32"), ("fp32", "fp32"), ("bf16", "fp16"), ("fp32", "bf16"),
                                     ("e4m3", "fp32")])
def test_exact_gemm_equals_fractions(fmt, out):
    rng = np.random.default_rng(11)
    lo, hi = {"fp16": (-20, 10), "e4m3": (-6, 6)}.get(fmt, (-60, 40))
    A = random_dyadic(rng, (5, 37), fmt, lo, hi)
    B = random_dyadic(rng, (37, 6), fmt, lo, hi)
    ref = gemmlab.exact_gemm(A, B, out, input_format=fmt)
    assert ref.c.shape == ref.c_out.shape == ref.abs_ab.shape == (5, 6)
    assert ref.output_format == out
    for i in range(5):
        for j in range(6):
            x = exact_sum(A[i], B[:, j])
            assert ref.c[i, j] == float(x)  # Fraction -> float rounds correctly (nearest-even)
            assert ref.c_out[i, j] == round_fraction(x, out), (i, j)
            ab = float(sum(abs(a * b) for a, b in zip(A[i], B[:, j])))
            assert ref.abs_ab[i, j] == pytest.approx(ab, rel=37 * 2.0**-52)


def test_massive_cancellation_and_ties_in_the_output_format():
    # 2^40 - 2^40 + 1 + 2^-24: exact 1 + 2^-24 is a tie in fp32 between 1 and 1 + 2^-23 -> 1 (even).
    A = np.array([[2.0**20, -2.0**20, 1.0, 2.0**-12]])
    B = np.array([[2.0**20], [2.0**20], [1.0], [2.0**-12]])
    ref = gemmlab.exact_gemm(A, B, "fp32")
    assert ref.c[0, 0] == 1 + 2.0**-24
    assert ref.c_out[0, 0] == 1.0
    # 1 + 3 * 2^-25 rounds up in fp32 (above the tie).
    B2 = B.copy()
    B2[3, 0] = 3 * 2.0**-13
    assert gemmlab.exact_gemm(A, B2, "fp32").c_out[0, 0] == 1 + 2.0**-23


def test_engines_and_mpfr_agree():
    A, B = gemmlab.generate_problem("logunif_-8_8", 9, 7, 33, "fp32", 5)
    fixed = gemmlab.exact_gemm(A, B, "fp16", engine="fixed_int128")
    kulisch = gemmlab.exact_gemm(A, B, "fp16", engine="kulisch")
    mpfr = gemmlab.mpfr_gemm(A, B, "fp16")
    assert (fixed.engine, kulisch.engine, mpfr.engine) == ("fixed_int128", "kulisch", "mpfr")
    for r in (kulisch, mpfr):
        assert np.array_equal(fixed.c, r.c) and np.array_equal(fixed.c_out, r.c_out)
    assert gemmlab.exact_dot(A, B, 3, 4) == gemmlab.mpfr_dot(A, B, 3, 4) == fixed.c[3, 4]


def test_wide_exponent_range_takes_the_kulisch_engine():
    rng = np.random.default_rng(2)
    A = random_dyadic(rng, (3, 8), "fp32", -120, 120)
    B = random_dyadic(rng, (8, 3), "fp32", -120, 120)
    ref = gemmlab.exact_gemm(A, B, "fp32")
    assert ref.engine == "kulisch"
    assert ref.c[1, 2] == float(exact_sum(A[1], B[:, 2]))


def test_float32_and_float16_arrays_are_accepted():
    A, B = gemmlab.generate_problem("uniform_0_1", 4, 4, 8, "fp16", 1)
    ref = gemmlab.exact_gemm(A.astype(np.float16), B.astype(np.float32), "fp32", input_format="fp16")
    assert np.array_equal(ref.c, gemmlab.exact_gemm(A, B, "fp32").c)


@pytest.mark.parametrize("A,B,kw,exc,match", [
    (np.ones((2, 3)), np.ones((4, 2)), {}, ValueError, "A's columns must equal B's rows"),
    (np.ones(3), np.ones((3, 2)), {}, ValueError, "2-D"),
    (np.ones((2, 3), dtype=np.int32), np.ones((3, 2)), {}, TypeError, "dtype int32"),
    (np.full((2, 3), np.nan), np.ones((3, 2)), {}, ValueError, "NaN or infinite"),
    (np.full((2, 3), 0.1), np.ones((3, 2)), {}, ValueError, r"A\[0, 0\] = 0.1 is not a value of fp32"),
    (np.full((2, 3), 1 + 2.0**-12), np.ones((3, 2)), {"input_format": "fp16"}, ValueError, "not a value of fp16"),
    (np.ones((2, 3)), np.ones((3, 2)), {"input_format": "fp64"}, ValueError, "at most 24 significand bits"),
    (np.ones((2, 3)), np.ones((3, 2)), {"engine": "fast"}, ValueError, "unknown engine"),
])
def test_bad_input_raises(A, B, kw, exc, match):
    with pytest.raises(exc, match=match):
        gemmlab.exact_gemm(A, B, "fp32", **kw)


def test_entry_outside_raises_index_error():
    with pytest.raises(IndexError, match="outside"):
        gemmlab.exact_dot(np.ones((2, 2)), np.ones((2, 2)), 2, 0)


def test_formats_round_and_encode():
    assert gemmlab.round_to("fp16", 1 + 2.0**-11) == 1.0  # tie to even
    assert gemmlab.round_to("fp16", 70000.0) == math.inf
    assert gemmlab.round_to("e4m3", 1000.0) == 448.0  # saturates
    assert gemmlab.to_bits("fp16", 1.0) == 0x3C00
    assert gemmlab.to_bits("bf16", -2.0) == 0xC000
    assert gemmlab.from_bits("e4m3", np.array([0x7E])).tolist() == [448.0]
    x = gemmlab.round_to("e5m2", np.linspace(-3, 3, 13).reshape(13, 1))
    assert x.shape == (13, 1)
    assert np.array_equal(gemmlab.from_bits("e5m2", gemmlab.to_bits("e5m2", x)), x)
    assert gemmlab.format_info("fp16").unit_roundoff == 2.0**-11
    with pytest.raises(ValueError, match="not representable"):
        gemmlab.to_bits("fp16", 0.1)
    # A pattern wider than the format, or negative, is none of its patterns (it read as 0 and NaN).
    with pytest.raises(ValueError, match="0x10000 is not a bit pattern of fp16, whose patterns are the 16-bit integers"):
        gemmlab.from_bits("fp16", 0x10000)
    with pytest.raises(ValueError, match="is not a bit pattern of e2m1"):
        gemmlab.from_bits("e2m1", np.array([3, -1]))
