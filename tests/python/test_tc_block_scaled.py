"""gemmlab.tc.block_scaled_dot: Blackwell's block-scaled kinds (a model from the literature, MMA-Sim's) on the
hand-derived dyadic cases of tests/cpu/test_tc_eval_block_scaled.cpp, each expected value written out."""

import numpy as np
import pytest

import gemmlab

tc = gemmlab.tc


def head(n, values):
    """n values: `values` first, zeros after."""
    out = np.zeros(n)
    out[: len(values)] = values
    return out


def eight_small_products(scale_a):
    # kind::mxf8f6f4, C = 1 and eight products 1.5 (e4m3) * 2^-6 under scale_a, scale_b = 1
    return tc.block_scaled_dot("tcgen05_mxf8f6f4", head(32, [1.5] * 8), head(32, [2.0**-6] * 8), scale_a=scale_a,
                               scale_b=1.0, c=1.0)


def test_aligned_terms_are_cut_to_25_fraction_bits():
    # each product 1.5 2^-6 2^-19 = 3 2^-26 keeps 2^-25 beside C = 1 (F = 25): 1 + 8 2^-25 = 1 + 2^-22,
    # where the exact sum 1 + 3 2^-23 is on fp32's grid
    assert eight_small_products(2.0**-19) == 1 + 2.0**-22


def test_scales_that_keep_every_bit_give_the_exact_sum():
    # each product 3 2^-24, a multiple of 2^-25: 1 + 24 2^-24 = 1 + 12 2^-23 exactly
    assert eight_small_products(2.0**-17) == 1 + 12 * 2.0**-23


def test_c_larger_than_the_products():
    # 32 products 1.75 (e2m3) * 1.5 (e3m2) * 2^-16 * 2^-1 = 21 2^-20 each: below C = 1024's last kept place
    # 2^-15 every one is cut to 0; beside C = 32 (last place 2^-20) every one is whole: 32 + 672 2^-20
    a, b = np.full(32, 1.75), np.full(32, 1.5)
    kw = dict(scale_a=2.0**-16, scale_b=0.5, a_format="e2m3", b_format="e3m2")
    assert tc.block_scaled_dot("tcgen05_mxf8f6f4", a, b, c=1024.0, **kw) == 1024.0
    assert tc.block_scaled_dot("tcgen05_mxf8f6f4", a, b, c=32.0, **kw) == 32 + 672 * 2.0**-20


def test_mxf4nvf4_with_ue4m3_scales():
    # group 0: 1.5 * 3 + 6 * -0.5 = 1.5 under 1.25 * 0.75; group 1: 4 * 4 = 16 under 448 * 2^-6: 1.40625 + 112
    a = head(64, [1.5, 6] + [0] * 14 + [4])
    b = head(64, [3, -0.5] + [0] * 14 + [4])
    d = tc.block_scaled_dot("tcgen05_mxf4nvf4", a, b, scale_a=[1.25, 448, 1, 1], scale_b=[0.75, 2.0**-6, 1, 1])
    assert d == 113.40625
    # the same with the defaults named: block 16, ue4m3
    assert tc.block_scaled_dot("tcgen05_mxf4nvf4", a, b, scale_a=[1.25, 448, 1, 1], scale_b=[0.75, 2.0**-6, 1, 1],
                               block=16, scale_format="ue4m3") == d


def test_chains_instructions_along_k():
    # K = 128 as two kind::mxf4 instructions, each 64 * 6 * 6 = 2304 under scales 1
    assert tc.block_scaled_dot("tcgen05_mxf4", np.full(128, 6.0), np.full(128, 6.0), scale_a=np.ones(4),
                               scale_b=np.ones(4)) == 4608.0


@pytest.mark.parametrize("kwargs,match", [
    (dict(scale_a=3.0), "not a value of ue8m0"),
    (dict(scale_a=[1.0, 1.0]), "scales per operand"),
    (dict(scale_a=1.0, a_format="e9m9"), "unknown format"),
    (dict(scale_a=1.0, b_format="e2m1"), "not a value of e2m1"),
    (dict(scale_a=1.0, scale_format="ue4m3"), "takes scales ue8m0 per 32, not ue4m3 per 32"),
])
def test_bad_input_is_named(kwargs, match):
    kw = dict(scale_b=1.0, c=1.0) | kwargs
    with pytest.raises(ValueError, match=match):
        tc.block_scaled_dot("tcgen05_mxf8f6f4", head(32, [1.5] * 8), head(32, [2.0**-6] * 8), **kw)
    with pytest.raises(ValueError, match="unknown block-scaled kind"):
        tc.block_scaled_dot("tcgen05_mxf6", np.zeros(32), np.zeros(32), scale_a=1.0, scale_b=1.0)
