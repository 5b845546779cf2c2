"""Forms beyond C = A B in Python (reference/gemm_form.hpp): the canonical text ``gemmlab.form_text`` builds (the same
C++ as ``gemmlab run --form``), the CSV's form columns read by ``load_results`` (an older CSV: every row plain), and
``gemmlab.judge`` on forms with torch callables (each GPU test skips with its reason without a GPU, the GPU engine or
PyTorch): C0, bias, alpha/beta, batches and groups reach the callable as keywords, a result of the wrong shape is an
error row saying what the form expects, and a callable that computes the form exactly passes its bound.
"""

from __future__ import annotations

import pandas as pd
import pytest

import gemmlab

ROOT_ROWS = dict(sizes=[(96, 64, 128)], distributions=["uniform_0_1"], seeds=[3], reps=2, warmup=1)


def test_form_text_is_canonical():
    assert gemmlab.form_text() == "plain"
    assert gemmlab.form_text(alpha=0.5, beta=2, c0="normal") == "alpha=0.5,beta=2,c0=normal_0_1"
    assert gemmlab.form_text("batch=16", bias=("column", "uniform_pm1")) == "batch=16,bias=column:uniform_-1_1"
    assert gemmlab.form_text(groups=[128, 512, 1000, "*"]) == "groups=128+512+1000+*"
    assert gemmlab.form_text(alpha=0.1) == "alpha=0.1"  # the fp32 value's shortest decimal
    assert gemmlab.form_text("c0=uniform_0_1") == "beta=1,c0=uniform_0_1"


@pytest.mark.parametrize("kwargs, match", [
    (dict(beta=2.0), "beta needs a C0"),
    (dict(form="alpha=1", alpha=2.0), "given twice"),
    (dict(batch=2, groups=[1, 2]), "batched or grouped"),
    (dict(bias="diagonal:normal"), "row:DISTRIBUTION or column:DISTRIBUTION"),
    (dict(c0="gaussian"), "c0"),
])
def test_bad_forms_say_what_is_wrong(kwargs, match):
    with pytest.raises(ValueError, match=match):
        gemmlab.form_text(**kwargs)


def test_old_csv_rows_are_plain(tmp_path):
    old = tmp_path / "old.csv"
    old.write_text("kernel,distribution,M,N,K,seed,status,note\nk1,uniform_0_1,8,8,8,1,passed,\n")
    rows = gemmlab.load_results(old)
    assert list(rows["form"]) == ["plain"]
    assert str(rows["form"].dtype) == "string"
    assert pd.isna(rows["bias_placement"][0]) and pd.isna(rows["amax"][0])
    for col in ("form", "c0_format", "bias_format", "epilogue_format", "c0_placement", "bias_placement", "amax",
                "amax_exact"):
        assert col in gemmlab.COLUMNS


# --- on a GPU ---------------------------------------------------------------------------------------

def _torch():
    ok, why = gemmlab.gpu_available()
    if not ok:
        pytest.skip(f"no GPU engine or GPU: {why}")
    return pytest.importorskip("torch", reason="the GPU tests hand tensors over as torch tensors")


def test_judge_addmm_with_bias_gets_its_keywords_and_passes():
    torch = _torch()
    seen = {}

    def addmm_bias(A, B, C0, bias, alpha, beta):
        seen.update(C0=tuple(C0.shape), bias=tuple(bias.shape), alpha=alpha, beta=beta)
        # exact in float64, then one rounding to fp32: within every bound
        return (alpha * (A.double() @ B.double()) + beta * C0.double() + bias.double()).float()

    rows = gemmlab.judge(addmm_bias, input_format="fp16", output_format="fp32", alpha=0.3, beta=2, c0="normal_0_1",
                         bias="column:uniform_-1_1", c0_format="fp32", bias_format="fp32",
                         c0_placement="before_output_rounding", bias_placement="before_output_rounding", **ROOT_ROWS)
    assert seen == dict(C0=(96, 64), bias=(64,), alpha=pytest.approx(0.3), beta=2.0)
    r = rows.iloc[0]
    assert r.form == "alpha=0.3,beta=2,c0=normal_0_1,bias=column:uniform_-1_1"
    assert r.status in ("passed", "no_bound"), r.note  # accumulation unknown: no_bound, with no violation
    assert r.bound_violations == 0 and r.c0_format == "fp32" and r.bias_placement == "before_output_rounding"
    assert torch.cuda.is_available()


def test_judge_batched_and_grouped_shapes():
    torch = _torch()

    def bmm(A, B):
        assert A.dim() == 3 and B.dim() == 3
        return torch.bmm(A.float(), B.float())

    rows = gemmlab.judge(bmm, name="bmm", input_format="bf16", output_format="fp32", batch=3, **ROOT_ROWS)
    assert rows.iloc[0].entries == 3 * 96 * 64 and rows.iloc[0].bound_violations == 0

    def grouped(A, B, offs):
        ends = offs.tolist()
        starts = [0] + ends[:-1]
        return torch.cat([A[s:e].float() @ B[g].float() for g, (s, e) in enumerate(zip(starts, ends))])

    rows = gemmlab.judge(grouped, name="grouped", input_format="bf16", output_format="fp32", groups=[10, 50, "*"],
                         **ROOT_ROWS)
    assert rows.iloc[0].form == "groups=10+50+*" and rows.iloc[0].bound_violations == 0


def test_judge_refuses_the_wrong_shape_for_the_form():
    torch = _torch()

    def plain_shape(A, B):
        return torch.zeros(96, 64, device=A.device)  # a batched form needs (2, 96, 64)

    with pytest.raises(gemmlab.JudgeError, match=r"shape \(96, 64\); it must return a \(2, 96, 64\) fp32 tensor"):
        gemmlab.judge(plain_shape, input_format="fp16", output_format="fp32", batch=2, **ROOT_ROWS)
