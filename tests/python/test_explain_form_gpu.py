"""gemmlab.explain of a form on the GPU: a Triton matmul with its bias fused both ways (added to the fp32
accumulator before the fp16 rounding, or to the rounded output and rounded again) must be told apart, each
form predicted bit for bit; torch.bmm's batch indices compared on every call. The callables are
examples/explain_forms.py's. Each test skips with its reason where there is no GPU, GPU engine,
PyTorch or Triton.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import gemmlab

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SMALL = dict(distributions=["uniform_0_1", "normal_0_1"], reps=2, warmup=1, schedule=False)


def _examples():
    ok, why = gemmlab.gpu_available()
    if not ok:
        pytest.skip(f"no GPU engine or GPU: {why}")
    pytest.importorskip("torch", reason="the callables are torch")
    sys.path.insert(0, str(EXAMPLES))
    import explain_forms  # noqa: PLC0415
    return explain_forms


@pytest.mark.parametrize("after", [0, 2])  # explain_forms._triton_linear: before the rounding; after it
def test_triton_fused_bias_both_ways_told_apart(after, tmp_path):
    ex = _examples()
    pytest.importorskip("triton", reason="the callables are Triton kernels")
    fn = ex._triton_linear(after)
    e = gemmlab.explain(fn, input_format="fp16", output_format="fp16", size=1024, bias="column:uniform_-1_1",
                        out=tmp_path / "e.csv", **SMALL)
    f = e.report["form"]
    want = "after_output_rounding" if after else "before_output_rounding"
    assert e.identified, e.summary
    assert f["epilogue"]["parts"]["bias"]["places"] == [want], e.summary
    assert f["identified"] and all(c["mismatches"] == 0 and c["outputs"] > 0 for c in f["comparisons"]), e.summary
    assert (tmp_path / "e_form.csv").exists() and (tmp_path / "e_form.meta.json").exists()
    assert set(e.judged["status"]) <= {"passed", "failed_bound"}, e.judged[["status", "note"]]


def test_bmm_batch_indices_compared_on_every_call():
    ex = _examples()
    bmm = ex.cases(True)["torch_bmm_bf16"]["fn"]
    e = gemmlab.explain(bmm, name="torch_bmm_bf16", input_format="bf16", output_format="bf16", size=(256, 256, 512),
                        batch=4, **SMALL)
    o = e.report["form"]["others"]
    assert o["compared"] == ["1", "2", "3"] and o["calls"] > 100, o
    assert e.identified and o["same"], e.summary
