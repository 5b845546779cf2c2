"""The distributions are bit-identical to the C++ generator the CLI runs."""

import hashlib

import numpy as np
import pytest

import gemmlab

# tests/cpu/test_distributions.cpp FixedSeedRegression: seed 0, A(0, 0..1) in fp64.
PINNED_CPU_TEST = {
    "uniform_0_1": ("0x1.8a87325db46a4p-3", "0x1.8c76e2e008d7bp-1"),
    "normal_0_1": ("-0x1.13e945b85d593p+0", "0x1.27298cd38b37dp+1"),
    "logunif_-8_8": ("-0x1.2992599745a03p+4", "0x1.2db42bdeca2d1p-8"),
}

# SHA-256 (first 32 hex digits) of A (8, 12) then B (12, 8) as float64 bytes, seed 42, written by a
# program linking reference/distributions.cpp with the root build's flags (-O3 -march=x86-64-v2).
PINNED_HASHES = {
    ("uniform_0_1", "fp32"): "9b7def1865c658cdd09a6fd816703027",
    ("uniform_0_1", "fp16"): "a2e623fe4ca5441242332d56f4d0cf0e",
    ("uniform_0_1", "bf16"): "84a6f972d39ce551852cba026a30d9ed",
    ("uniform_-1_1", "fp32"): "30d8157c77e4c83556f1bad336037fc3",
    ("uniform_-1_1", "fp16"): "324a9e7f9b29ac673e6fdcc6fb6858f6",
    ("uniform_-1_1", "bf16"): "6a7ed5e45c9067b67c46489ce14bc44a",
    ("normal_0_1", "fp32"): "ed913e4d2eb24b77a8c5c91261d843c3",
    ("normal_0_1", "fp16"): "67655921844c3e63d9ae0534498227d0",
    ("normal_0_1", "bf16"): "ea889af5db42254b8081d2721d36213e",
    ("logunif_-8_8", "fp32"): "0000bcb1c444ba716876d1e189ad0d5a",
    ("logunif_-8_8", "fp16"): "d40f0f2e7d777e57d0e488c9c45b59bc",
    ("logunif_-8_8", "bf16"): "3f34111ed5777ffe200f9e229305336f",
    ("cancel_-10", "fp32"): "fee7cd5e8924c9ce425af57b2d34bd54",
    ("cancel_-10", "fp16"): "71d974b3011891e7984579d732cc004b",
    ("exactint_8", "fp32"): "5635d89d705113788801db1453d663e9",
    ("exactint_8", "fp16"): "5635d89d705113788801db1453d663e9",
    ("exactint_8", "bf16"): "5635d89d705113788801db1453d663e9",
}


@pytest.mark.parametrize("name", sorted(PINNED_CPU_TEST))
def test_values_pinned_by_the_cpu_tests(name):
    a = gemmlab.generate(name, "A", 1, 2, "fp64", 0)
    assert a.dtype == np.float64 and a.shape == (1, 2)
    assert [x.hex() for x in a[0]] == [float.fromhex(v).hex() for v in PINNED_CPU_TEST[name]]


@pytest.mark.parametrize("dist,fmt", sorted(PINNED_HASHES))
def test_operands_hash_as_the_cpp_generator(dist, fmt):
    A, B = gemmlab.generate_problem(dist, 8, 8, 12, fmt, 42)
    digest = hashlib.sha256(A.tobytes() + B.tobytes()).hexdigest()[:32]
    assert digest == PINNED_HASHES[(dist, fmt)]


def test_values_are_rounded_to_the_format():
    a = gemmlab.generate("normal_0_1", "A", 16, 16, "bf16", 3)
    assert gemmlab.is_representable("bf16", a).all()
    assert np.array_equal(gemmlab.round_to("bf16", gemmlab.generate("normal_0_1", "A", 16, 16, "fp64", 3)), a)


def test_entry_depends_only_on_seed_operand_and_position():
    small = gemmlab.generate("uniform_-1_1", "B", 3, 5, "fp32", 7)
    big = gemmlab.generate("uniform_-1_1", "B", 9, 11, "fp32", 7, threads=2)
    assert np.array_equal(small, big[:3, :5])
    assert not np.array_equal(small, gemmlab.generate("uniform_-1_1", "A", 3, 5, "fp32", 7))
    assert not np.array_equal(small, gemmlab.generate("uniform_-1_1", "B", 3, 5, "fp32", 8))


def test_cancel_couples_a_and_b_through_k():
    A, B = gemmlab.generate_problem("cancel_-10", 4, 4, 64, "fp32", 1)
    assert np.array_equal(A[:, :32], A[:, 32:])
    ref = gemmlab.exact_gemm(A, B)
    assert (np.abs(ref.c) <= 2.0**-9 * ref.abs_ab).all()


def test_names_and_defaults():
    assert gemmlab.canonical_name("normal") == "normal_0_1"
    assert gemmlab.canonical_name("cancel") == "cancel_-10"
    assert len(gemmlab.DEFAULT_DISTRIBUTIONS) == 6
    assert gemmlab.unusable_reason("cancel_-10", "bf16") != ""
    assert gemmlab.exact_in("exactint_8", "fp16", "fp32", 4096) == ""


@pytest.mark.parametrize("args,exc,match", [
    (("gaussian_7", "A", 2, 2, "fp32", 0), ValueError, "unknown distribution"),
    (("normal", "C", 2, 2, "fp32", 0), ValueError, "operand must be 'A' or 'B'"),
    (("normal", "A", 2, 2, "fp12", 0), ValueError, "not a gemmlab format"),
    (("normal", "A", -1, 2, "fp32", 0), ValueError, "non-negative"),
    (("normal", "A", 2, 2, "fp32", -1), ValueError, "seed"),
    (("normal", "A", 2, 2, "fp32", 1.5), ValueError, "seed"),
    (("cancel_-10", "A", 2, 2, "bf16", 0), ValueError, "cancel"),
])
def test_bad_arguments_raise_clear_errors(args, exc, match):
    with pytest.raises(exc, match=match):
        gemmlab.generate(*args)
