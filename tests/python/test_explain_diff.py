"""gemmlab.explain_diff on GPU callables: two callables of the same numerics must not differ on full
inputs; torch.matmul in fp32 with TF32 off against the same with TF32 on must differ, naming the operand
conversion where both are identified, each witness giving different bits; a callable that is not a GEMM
against one that is must differ, with the aspects it could not compare said. Argument errors are named.
Each GPU test skips with its reason where there is no GPU, GPU engine or PyTorch.
"""

from __future__ import annotations

import json

import pytest

import gemmlab
from gemmlab.explain_diff import _pair


def test_explain_diff_without_gpu_engine_says_so(monkeypatch):
    import gemmlab._engine as g
    monkeypatch.setattr(g, "_gpu", None)
    monkeypatch.setattr(g, "_GPU_IMPORT_ERROR", None)  # not built

    def mm(a, b):
        return a @ b

    def mm2(a, b):
        return a @ b

    with pytest.raises(gemmlab.GpuUnavailable):
        gemmlab.explain_diff(mm, mm2, input_format="fp16")


def test_per_kernel_settings_are_one_value_or_a_pair():
    assert _pair("fp32", "output_format") == ("fp32", "fp32")
    assert _pair(("fp32", "bf16"), "output_format") == ("fp32", "bf16")

    def mm(a, b):
        return a @ b

    def mm2(a, b):
        return a @ b

    # Named before any GPU is needed.
    with pytest.raises(ValueError, match="a pair"):
        gemmlab.explain_diff(mm, mm2, input_format="fp32", output_format=("fp32", "bf16", "fp16"))
    with pytest.raises(ValueError, match="a pair"):
        gemmlab.explain_diff(mm, mm2, input_format="fp32", names=("a", "b", "c"))
    with pytest.raises(ValueError, match="every output"):
        gemmlab.explain_diff(mm, mm2, input_format="fp32", confirm_outputs=-1)


def _torch():
    ok, why = gemmlab.gpu_available()
    if not ok:
        pytest.skip(f"no GPU engine or GPU: {why}")
    return pytest.importorskip("torch", reason="the GPU tests hand tensors over as torch tensors")


SIZE = (256, 256, 256)
DISTS = ["uniform_0_1", "normal_0_1"]


def _witnesses_differ(d):
    for x in d.differences:
        if x["confirmed"]:
            assert x["bits_a"] != x["bits_b"], x


def test_the_same_callable_twice_does_not_differ(tmp_path):
    torch = _torch()

    def mm_out(a, b, out):
        torch.matmul(a, b, out=out)

    def mm_ret(a, b):
        return torch.matmul(a, b)

    torch.backends.cuda.matmul.allow_tf32 = False
    d = gemmlab.explain_diff(mm_out, mm_ret, input_format="fp32", size=SIZE, distributions=DISTS,
                             out=tmp_path / "d.csv")
    print(d)
    assert (tmp_path / "d.meta.json").exists()
    meta = json.loads((tmp_path / "d.meta.json").read_text())
    assert meta["diff"]["verdict"] == d.verdict
    assert d.verdict in ("identical_by_construction", "incomplete"), d.summary
    assert all(c["differing"] == 0 for c in d.report["comparisons"]), d.summary
    assert (d.rows["differing_outputs"] == 0).all()
    assert d.a.name == "mm_out" and d.b.name == "mm_ret"
    assert len(d.a.rows) >= 1 and len(d.b.rows) >= 1


def test_tf32_on_and_off_differ_in_the_operand_conversion():
    torch = _torch()

    def fp32(a, b, out):
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.matmul(a, b, out=out)

    def tf32(a, b, out):
        old = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = True
        try:
            torch.matmul(a, b, out=out)
        finally:
            torch.backends.cuda.matmul.allow_tf32 = old

    d = gemmlab.explain_diff(fp32, tf32, input_format="fp32", size=SIZE, distributions=DISTS)
    print(d)
    assert d.verdict == "different", d.summary
    if d.a.identified and d.b.identified:
        assert "operand_conversion" in [x["aspect"] for x in d.differences], d.summary
    _witnesses_differ(d)
    assert len(d.rows) == len(d.differences)


def test_what_is_not_a_gemm_differs_and_says_what_was_not_compared():
    torch = _torch()

    def plus_one(a, b):
        return torch.matmul(a.float(), b.float()) + 1

    def gemm(a, b):
        return torch.matmul(a.float(), b.float())

    d = gemmlab.explain_diff(plus_one, gemm, input_format="fp16", size=SIZE, distributions=DISTS)
    print(d)
    assert not d.a.identified
    assert d.verdict == "different"
    assert d.report["not_compared"], d.summary
    assert [x["aspect"] for x in d.differences] == ["unexplained"], d.summary


def test_bad_arguments_are_named():
    torch = _torch()

    def mm(a, b):
        return torch.matmul(a, b)

    with pytest.raises(ValueError, match="names"):
        gemmlab.explain_diff(mm, mm, input_format="fp32", size=SIZE)
    with pytest.raises(ValueError, match="input_format"):
        gemmlab.explain_diff(mm, mm, input_format="fp99", size=SIZE, names=("a", "b"))
