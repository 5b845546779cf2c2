"""The tensor-core model: hand cases (as tests/cpu/test_tc_model.cpp) and whole-GEMM orders."""

from fractions import Fraction

import numpy as np
import pytest

import gemmlab
from exact import exact_sum, round_fraction

tc = gemmlab.tc


def run16(params, terms, c=0.0):
    a, b = np.zeros(16), np.zeros(16)
    for i, x, y in terms:
        a[i], b[i] = x, y
    return tc.dot(params, a, b, c)


def test_square_is_exact():
    x = 1 - 2.0**-11
    p = tc.TcParams(input="fp16", output="fp32")
    assert run16(p, [(0, x, x)]) == 1 - 2.0**-10 + 2.0**-22
    assert run16(p, [(0, x, x)], -1.0) == -(2.0**-10) + 2.0**-22


@pytest.mark.parametrize("neab", [0, 2, 3])
def test_neab_decides_which_small_term_survives(neab):
    p = tc.TcParams(input="fp16", output="fp32", neab=neab)
    assert p.fraction_bits == 23 + neab
    for j in range(20, 31):
        r = run16(p, [(0, 1.0, 1.0), (1, -1.0, 1.0), (2, 2.0 ** -(j // 2), 2.0 ** -(j - j // 2))])
        assert r == (2.0**-j if j <= 23 + neab else 0.0), j


@pytest.mark.parametrize("mode,pos,neg", [("toward_zero", 0.0, 0.0), ("floor", 0.0, -(2.0**-25)),
                                          ("nearest_even", 2.0**-25, -(2.0**-25))])
def test_rounding_of_shifted_out_bits(mode, pos, neg):
    # 1 - 1 + 0.75 quantum (2^-25 with F = 25)
    p = tc.TcParams(input="fp16", output="fp32", align_rounding=mode)
    assert run16(p, [(0, 1.0, 1.0), (1, -1.0, 1.0), (2, 0.75 * 2.0**-12, 2.0**-13)]) == pos
    assert run16(p, [(0, 1.0, 1.0), (1, -1.0, 1.0), (2, -0.75 * 2.0**-12, 2.0**-13)]) == neg


def test_output_truncation_and_nearest_even_differ():
    terms = [(0, 1.0, 1.0), (1, 0.75, 2.0**-23)]  # exact 1 + 1.5 * 2^-24
    assert run16(tc.TcParams(output_rounding="toward_zero"), terms) == 1.0
    assert run16(tc.TcParams(output_rounding="nearest_even"), terms) == 1.0 + 2.0**-23


def test_published_params_and_instruction_table():
    assert len(tc.INSTRUCTIONS) >= 12
    ins = tc.instruction("mma_m16n8k16_f16_f32")
    assert (ins.m, ins.n, ins.k, ins.input, ins.output) == (16, 8, 16, "fp16", "fp32")
    p = tc.published_params("mma_m16n8k16_f16_f16")
    assert (p.neab, p.output_rounding, p.fraction_bits) == (15, "nearest_even", 25)
    assert tc.published_params("wgmma_m64n8k8_tf32_f32").block_size == 8
    # bf16 -> fp32: fp16's settled model, the zero-C alignment the H100 probes inferred, and the special
    # rules the H100/H200 corpus settled (2026-11-24): fp32 overflow to infinity, an exact zero +0.
    expected = tc.TcParams(input="bf16", output="fp32")
    expected.zero_c_offset = 7
    expected.overflow = "infinity"
    expected.zero_sign = "plus"
    assert tc.published_params("mma_m16n8k16_bf16_f32") == expected
    assert (expected.nan_encoding, expected.zero_operand_exponent, expected.tf32_low_bits) == (
        "all_ones", "none", "toward_zero")
    with pytest.raises(ValueError, match="unknown overflow 'wrap'"):
        expected.overflow = "wrap"
    # fp8 wgmma keeps 13 fraction bits of the normalised result (results/probes, H100).
    assert tc.published_params("wgmma_m64n8k32_e4m3_f32").result_fraction_bits == 13
    with pytest.raises(ValueError, match="unknown instruction"):
        tc.instruction("mma_m16n8k4_f128")


def test_mma_tile_on_one_tile():
    rng = np.random.default_rng(1)
    A = gemmlab.round_to("fp16", rng.random((16, 16)))
    B = gemmlab.round_to("fp16", rng.random((16, 8)))
    C = gemmlab.round_to("fp32", rng.random((16, 8)))
    p = tc.published_params("mma_m16n8k16_f16_f32")
    D = tc.mma_tile(p, "mma_m16n8k16_f16_f32", A, B, C)
    assert D.shape == (16, 8)
    assert D[3, 5] == tc.dot(p, A[3], B[:, 5], C[3, 5])
    # products exact, one truncation of a sum of positive terms: below the exact value by < 2 ulp
    exact = float(exact_sum(A[3], B[:, 5]) + Fraction(float(C[3, 5])))
    assert 0 <= exact - D[3, 5] < 2 * 2.0**-23 * exact
    with pytest.raises(ValueError, match=r"A must be \(16, 16\)"):
        tc.mma_tile(p, "mma_m16n8k16_f16_f32", A[:, :8], B, C)


def test_fma_order_is_the_sequential_fp32_fma_chain():
    A, B = gemmlab.generate_problem("normal_0_1", 3, 2, 20, "fp32", 4)
    C = tc.emulate(tc.Order.of("fma"), A, B)
    for i in range(3):
        for j in range(2):
            acc = Fraction(0)
            for k in range(20):  # fmaf: one rounding of acc + a b
                acc = Fraction(round_fraction(acc + Fraction(float(A[i, k])) * Fraction(float(B[k, j])), "fp32"))
            assert C[i, j] == float(acc)


def test_in_mma_and_external_orders_compose_the_instruction():
    A, B = gemmlab.generate_problem("uniform_-1_1", 2, 3, 64, "fp16", 2)
    p = tc.published_params("mma_m16n8k16_f16_f32")
    in_mma = tc.emulate(tc.Order.of("in_mma", "mma_m16n8k16_f16_f32"), A, B)
    external = tc.emulate(tc.Order.of("external", "mma_m16n8k16_f16_f32"), A, B)
    for i in range(2):
        for j in range(3):
            # in_mma: the running sum is the C of every k16 instruction = blocks chained in one dot
            assert in_mma[i, j] == tc.dot(p, A[i], B[:, j], 0.0)
            acc = 0.0
            for k0 in range(0, 64, 16):
                t = tc.dot(p, A[i, k0:k0 + 16], B[k0:k0 + 16, j], 0.0)
                acc = round_fraction(Fraction(acc) + Fraction(t), "fp32")  # __fadd_rn
            assert external[i, j] == acc


def test_promoted_every_k_equals_external_when_k_is_one_step():
    A, B = gemmlab.generate_problem("uniform_0_1", 4, 4, 64, "bf16", 1)
    external = tc.emulate(tc.Order.of("external", "mma_m16n8k16_bf16_f32"), A, B)
    promoted = tc.emulate(tc.Order.of("promoted", "mma_m16n8k16_bf16_f32", promotion_k=16), A, B)
    assert np.array_equal(external, promoted)


@pytest.mark.parametrize("call,exc,match", [
    (lambda: tc.dot(tc.TcParams(), np.full(16, 0.1), np.ones(16)), ValueError, "not a value of fp16"),
    (lambda: tc.dot(tc.TcParams(), np.ones(8), np.ones(8)), ValueError, "multiple of block_size"),
    (lambda: tc.dot(tc.TcParams(), np.ones(16), np.ones(32)), ValueError, "same length"),
    (lambda: tc.TcParams(align_rounding="up"), ValueError, "unknown align_rounding 'up'"),
    (lambda: tc.TcParams(input="fp12"), ValueError, "unknown format 'fp12'"),
    (lambda: tc.emulate(tc.Order.of("in_mma", "mma_m16n8k16_f16_f32"), np.ones((2, 24)), np.ones((24, 2))),
     ValueError, "multiple of the k-step"),
    (lambda: tc.emulate(tc.Order.of("fma"), np.ones((2, 3)), np.ones((4, 2))), ValueError, "K"),
    # An order that is none (split_k 0 crashed the process with SIGFPE, -1 gave zeros; the names were taken).
    (lambda: tc.Order.of("in_mma", "mma_m16n8k16_f16_f32", split_k=0), ValueError, "split_k must be a whole number of at least 1"),
    (lambda: tc.Order.of("fma", split_k=-1), ValueError, "split_k must be a whole number of at least 1"),
    (lambda: tc.Order.of("banana", "mma_m16n8k16_f16_f32"), ValueError, "'banana' is not an order emulate takes"),
    (lambda: tc.Order.of("promoted", "mma_m16n8k16_f16_f32"), ValueError, "give promotion_k"),
    (lambda: tc.Order.of("in_mma"), ValueError, "needs its instruction"),
    (lambda: tc.Order("in_mma", "mma_m16n8k16_f16_f32", 16, 0, 0), ValueError, "split_k must be"),
])
def test_bad_input_raises(call, exc, match):
    with pytest.raises(exc, match=match):
        call()
