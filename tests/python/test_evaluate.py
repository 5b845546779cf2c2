"""evaluate(): the statistics row of any product, consistent with the CLI's rows."""

import csv
import math

import numpy as np
import pandas as pd
import pytest

import gemmlab


def test_numpy_float64_matmul_round_trip():
    # fp32 inputs, numpy's float64 product: the error is float64 summation error, within gamma_K(2u64).
    M, N, K = 48, 40, 512
    A, B = gemmlab.generate_problem("uniform_0_1", M, N, K, "fp32", 3)
    row = gemmlab.evaluate(A, B, A @ B, output_format="fp64", input_format="fp32", kernel="numpy_matmul_f64",
                           distribution="uniform_0_1", seed=3, time_ms=1.0)
    assert list(row) == list(gemmlab.COLUMNS)
    # accumulation "unknown" (the default) claims no bound (phase 2, `gemmlab evaluate`'s rule):
    # no_bound, with gamma_bound the weakest model's; declared as fma it passes (test below).
    assert row["status"] == "no_bound" and row["note"].startswith("accumulation unknown: no bound is claimed")
    assert row["accumulator_format"] == "fp64" and row["u_out"] == 2.0**-53
    gamma = K * 2.0**-52 / (1 - K * 2.0**-52)  # unknown accumulation: u_eff = 2 u
    assert row["gamma_bound"] == pytest.approx(gamma, rel=1e-12)
    assert row["componentwise"] <= row["gamma_bound"]
    # all terms are positive: each entry's relative error is within the same bound, and the bias of
    # round-to-nearest summation stays far below it.
    assert row["rel_max_abs"] <= gamma
    assert abs(row["rel_mean_u"]) < 2 * math.sqrt(K)
    assert row["reference"] == "fixed_int128+mpfr_spot16"
    assert (row["M"], row["N"], row["K"], row["entries"]) == (M, N, K, M * N)
    assert row["tflops"] == pytest.approx(2 * M * N * K / 1e-3 / 1e12)


def test_numpy_float64_matmul_declared_fma_is_within_gamma_k_of_u64():
    # Declared as what it is (nearest rounding, fp64 accumulator): passed, bound gamma_K(2^-53).
    M, N, K = 48, 40, 512
    A, B = gemmlab.generate_problem("uniform_0_1", M, N, K, "fp32", 3)
    row = gemmlab.evaluate(A, B, A @ B, output_format="fp64", input_format="fp32", accumulation="fma")
    gamma = K * 2.0**-53 / (1 - K * 2.0**-53)
    assert row["status"] == "passed" and row["note"] == "" and row["gamma_bound"] == gamma
    assert 0 < row["componentwise"] <= gamma


def test_exact_and_correctly_rounded_products():
    A, B = gemmlab.generate_problem("normal_0_1", 16, 16, 64, "fp16", 1)
    ref = gemmlab.exact_gemm(A, B, "fp32", input_format="fp16")
    row = gemmlab.evaluate(A, B, ref.c_out.astype(np.float32), output_format="fp32", input_format="fp16")
    assert row["frac_correctly_rounded"] == 1.0
    assert row["rel_max_abs_u"] <= 1.0
    exact = gemmlab.evaluate(A, B, ref.c, output_format="fp64", input_format="fp16")
    assert exact["rel_max_abs"] == 0 and exact["normwise"] == 0 and exact["status"] == "no_bound"  # unknown
    exact = gemmlab.evaluate(A, B, ref.c, output_format="fp64", input_format="fp16", accumulation="fma")
    assert exact["rel_max_abs"] == 0 and exact["status"] == "passed" and exact["note"] == ""


def test_same_statistics_as_gemmlab_run_on_the_h200(root):
    # results/audit/save.csv: `gemmlab run` on an H200, seed 1. sgemm_10 returns exactly the
    # sequential fp32 FMA chain, and the mma.sync in_mma kernel exactly the tensor-core model's
    # in_mma order (results/prediction/), so the CPU emulation gives the kernels' outputs and
    # evaluate must reproduce their CSV rows to the last bit.
    with open(root / "results/audit/save.csv") as f:
        rows = {(r["kernel"], r["distribution"]): r for r in csv.DictReader(f)}
    cases = [("sgemm_10_warptiling", "fp32", "fma", gemmlab.tc.Order.of("fma")),
             ("hgemm_mma_03b_pipeline_tile4x_128x256_s4_in_mma", "fp16", "in_mma",
              gemmlab.tc.Order.of("in_mma", "mma_m16n8k16_f16_f32"))]
    for kernel, fmt, acc, order in cases:
        want = rows[(kernel, "normal_0_1")]
        M, N, K = int(want["M"]), int(want["N"]), int(want["K"])
        A, B = gemmlab.generate_problem("normal_0_1", M, N, K, fmt, int(want["seed"]))
        C = gemmlab.tc.emulate(order, A, B)
        got = gemmlab.evaluate(A, B, C, output_format="fp32", input_format=fmt, accumulation=acc,
                               seed=int(want["seed"]), kernel=kernel, distribution="normal_0_1")
        for col in ("entries", "rel_count", "rel_mean", "rel_median", "rel_p01", "rel_p99",
                    "rel_max_abs", "frac_correctly_rounded", "gamma_bound", "sqrtk_u"):
            assert float(got[col]) == float(want[col]), (kernel, col)
        # The CSV predates the reproducible CPU/GPU statistics and the exact |A||B| (merge 749010b,
        # issue 12): sums in another order move these in the last bits. Bit identity of evaluate and
        # run on one binary: tests/gpu/test_evaluate.cpp.
        for col in ("rel_std", "normwise", "componentwise"):
            assert float(got[col]) == pytest.approx(float(want[col]), rel=1e-14), (kernel, col)
        assert got["reference"] == want["reference"] and got["status"] == want["status"]


def test_rows_make_a_dataframe_with_load_results(root):
    A, B = gemmlab.generate_problem("uniform_0_1", 8, 8, 16, "fp32", 1)
    row = gemmlab.evaluate(A, B, (A @ B).astype(np.float32), output_format="fp32", accumulation="unknown")
    df = pd.concat([gemmlab.load_results(root / "tests/data/sample_run.csv"), gemmlab.to_frame([row])], ignore_index=True)
    assert df["status"].dtype == "category" and df["M"].dtype == "Int64"
    assert df["kernel"].iloc[-1] == "python" and df["status"].iloc[-1] == "no_bound"  # accumulation unknown


def test_fp16_accumulator_with_long_k_has_no_bound():
    A, B = gemmlab.generate_problem("uniform_0_1", 4, 4, 4096, "fp16", 1)
    C = gemmlab.exact_gemm(A, B, "fp16", input_format="fp16").c_out
    row = gemmlab.evaluate(A, B, C.astype(np.float16), output_format="fp16", input_format="fp16",
                           accumulator_format="fp16", accumulation="in_mma")
    assert row["status"] == "no_bound" and math.isinf(row["gamma_bound"]) and "K u_eff >= 1" in row["note"]


def test_exact_result_beyond_the_output_range_is_not_applicable():
    A = np.full((2, 64), 64.0)
    B = np.full((64, 2), 64.0)  # C = 262144 > 65504
    row = gemmlab.evaluate(A, B, np.full((2, 2), np.float16(1.0)), output_format="fp16", input_format="fp16")
    assert row["status"] == "not_applicable" and "exceed fp16's range" in row["note"]


def test_nonfinite_entries_raise_or_are_counted():
    A, B = gemmlab.generate_problem("uniform_0_1", 4, 4, 16, "fp32", 1)
    C = (A @ B).astype(np.float32)
    C[1, 2] = np.nan
    C[3, 0] = np.inf
    with pytest.raises(ValueError, match=r"C has 2 NaN or infinite entries \(first at \[1, 2\]\)"):
        gemmlab.evaluate(A, B, C, output_format="fp32")
    row = gemmlab.evaluate(A, B, C, output_format="fp32", allow_nonfinite=True)
    assert row["nonfinite"] == 2 and row["status"] == "failed_bound" and "NaN or infinite" in row["note"]


@pytest.mark.parametrize("C,kw,exc,match", [
    (np.zeros((4, 5), np.float32), {}, ValueError, r"C has shape \(4, 5\) but A @ B is \(4, 4\)"),
    (np.zeros((4, 4), np.float16), {}, TypeError, "float16 but output_format is fp32"),
    (np.zeros((4, 4), np.int32), {}, TypeError, "dtype int32"),
    (np.full((4, 4), 0.1), {"output_format": "fp16"}, ValueError, "not a value of fp16"),
    (np.zeros((4, 4), np.float32), {"accumulation": "magic"}, ValueError, "accumulation 'magic' is not known"),
    (np.zeros((4, 4), np.float32), {"output_format": "fp8"}, ValueError, "not a gemmlab format"),
    (np.zeros((4, 4), np.float32), {"time_ms": -1.0}, ValueError, "time_ms"),
])
def test_bad_input_raises(C, kw, exc, match):
    A, B = gemmlab.generate_problem("uniform_0_1", 4, 4, 16, "fp32", 1)
    kw = {"output_format": "fp32", **kw}
    with pytest.raises(exc, match=match):
        gemmlab.evaluate(A, B, C, **kw)


def test_bound_matches_the_rows():
    g, s = gemmlab.bound(4096, input_format="fp16", output_format="fp32", acc_rounding="truncate")
    assert g == pytest.approx(4096 * 2.0**-23 / (1 - 4096 * 2.0**-23))
    assert s == pytest.approx(64 * 2.0**-23)


def test_one_reference_judges_several_kernels():
    A, B = gemmlab.generate_problem("normal_0_1", 16, 12, 64, "fp16", 4)
    ref = gemmlab.exact_gemm(A, B, "fp32", input_format="fp16", spot_checks=16, seed=4)
    assert ref.label == "fixed_int128+mpfr_spot16"
    C = (A.astype(np.float32) @ B.astype(np.float32))
    fresh = gemmlab.evaluate(A, B, C, output_format="fp32", input_format="fp16", seed=4)
    reused = gemmlab.evaluate(A, B, C, output_format="fp32", input_format="fp16", seed=4, reference=ref)
    assert fresh == reused
    with pytest.raises(ValueError, match="computed for fp32 output, not fp16"):
        gemmlab.evaluate(A, B, C.astype(np.float16), output_format="fp16", input_format="fp16", reference=ref)
    A2, B2 = gemmlab.generate_problem("normal_0_1", 16, 12, 64, "fp16", 5)
    with pytest.raises(ValueError, match="does not belong to these A and B"):
        gemmlab.evaluate(A2, B2, C, output_format="fp32", input_format="fp16", reference=ref)
