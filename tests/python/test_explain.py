"""gemmlab.explain on GPU callables: a torch matmul in fp32 with TF32 off must be identified exactly;
with TF32 on, its operand conversion must be named; callables that are not GEMMs, whose order changes
between calls, or that return NaN must come back unidentified with the stage and the reason.
Each GPU test skips with its reason where there is no GPU, GPU engine or PyTorch.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import gemmlab

ROOT = Path(__file__).resolve().parents[2]


def test_builtin_numerics_file_is_valid_json_of_records():
    known = json.loads((ROOT / "python" / "gemmlab" / "builtin_numerics.json").read_text())
    assert known, "python/gemmlab/builtin_numerics.json lists no kernel (gemmlab list --numerics-json writes it)"
    for name, n in known.items():
        assert {"input", "compute", "accumulation", "k_step", "instruction"} <= set(n), name


def test_explain_without_gpu_engine_says_so(monkeypatch):
    import gemmlab._engine as g
    monkeypatch.setattr(g, "_gpu", None)
    monkeypatch.setattr(g, "_GPU_MISSING_CUDA", None)
    monkeypatch.setattr(g, "_GPU_IMPORT_ERROR", None)  # not built
    with pytest.raises(gemmlab.GpuUnavailable):
        gemmlab.explain(lambda a, b: a @ b, name="mm", input_format="fp16")


def _torch():
    ok, why = gemmlab.gpu_available()
    if not ok:
        pytest.skip(f"no GPU engine or GPU: {why}")
    return pytest.importorskip("torch", reason="the GPU tests hand tensors over as torch tensors")


SIZE = (256, 256, 256)


def test_explain_fp16_matmul_is_identified_and_judged_by_its_bound(tmp_path):
    torch = _torch()

    def mm(a, b, out):
        torch.matmul(a.float(), b.float(), out=out)  # fp16 values, fp32 CUDA-core or TF32-off cuBLAS

    torch.backends.cuda.matmul.allow_tf32 = False
    e = gemmlab.explain(mm, name="torch_mm_fp32_of_fp16", input_format="fp16", size=SIZE,
                        distributions=["uniform_0_1", "normal_0_1"], out=tmp_path / "x.csv", reps=3, warmup=1)
    assert (tmp_path / "x.meta.json").exists()
    assert len(e.rows) == 2
    if e.identified:
        assert (e.rows["mismatches"] == 0).all()
        if e.numerics is not None:
            assert set(e.judged["status"]) <= {"passed"}, e.judged[["status", "note"]]
    else:
        # Whatever cuBLAS does, an unidentified report names the stage and a reason.
        assert e.report["failed_stage"] and e.report["reason"], e.summary


def test_explain_tf32_names_the_operand_conversion():
    torch = _torch()

    def mm_tf32(a, b, out):
        torch.matmul(a, b, out=out)

    old = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = True
    try:
        e = gemmlab.explain(mm_tf32, input_format="fp32", size=SIZE, distributions=["uniform_0_1"], judge_rows=False)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = old
    if e.report["conversion"]["ok"]:
        assert e.report["conversion"]["a"].startswith("tf32"), e.summary


def test_explain_refuses_what_is_not_a_gemm():
    torch = _torch()

    def plus_one(a, b, out):
        torch.add(torch.matmul(a, b).float(), 0.5, out=out)

    e = gemmlab.explain(plus_one, input_format="fp16", size=SIZE, distributions=["uniform_0_1"], judge_rows=False)
    assert not e.identified
    assert e.report["failed_stage"] == "gemm" and "not C = A B" in e.report["reason"]


def test_explain_nan_on_probe_inputs_is_unidentified():
    torch = _torch()

    def nan_where_zero(a, b, out):
        c = torch.matmul(a, b).float()
        c[(a == 0).all(dim=1)] = float("nan")
        out.copy_(c)

    e = gemmlab.explain(nan_where_zero, input_format="fp16", size=SIZE, distributions=["uniform_0_1"],
                        judge_rows=False)
    assert not e.identified and "NaN" in e.report["reason"]


def test_explain_order_that_changes_between_calls_is_unidentified():
    torch = _torch()
    calls = {"n": 0}

    def flip(a, b, out):
        # every other call sums K in the other direction (a different tree)
        calls["n"] += 1
        if calls["n"] % 2:
            torch.matmul(a, b, out=out)
        else:
            torch.matmul(a.flip(1), b.flip(0), out=out)

    e = gemmlab.explain(flip, input_format="fp32", size=SIZE, distributions=["uniform_0_1"], judge_rows=False)
    assert not e.identified and e.report["failed_stage"] in ("tree", "composition"), e.summary


def test_explain_fp16_output_names_the_candidate_node_models():
    # torch.matmul writing fp16: every fp16 instruction of 16 products is a candidate node, fp16
    # accumulators (mma.sync / wgmma f16 -> f16) included; the report names the one chosen and those ruled out.
    torch = _torch()

    def mm_fp16(a, b, out):
        torch.matmul(a, b, out=out)

    e = gemmlab.explain(mm_fp16, input_format="fp16", output_format="fp16", size=SIZE, distributions=["uniform_0_1"],
                        judge_rows=False)
    kinds = e.report["nodes"]["kinds"]
    if not e.report["nodes"]["ok"] and not kinds:
        assert e.report["failed_stage"] and e.report["reason"], e.summary
        return
    names = {c["instruction"] for k in kinds for c in k["candidates"]}
    assert {"mma_m16n8k16_f16_f32", "mma_m16n8k16_f16_f16", "wgmma_m64n8k16_f16_f16"} <= names, names
    for k in kinds:
        for c in k["candidates"]:
            assert c["ruled_out"] == (c["mismatching"] > 0) and c["probes"] >= 0, c
    if e.identified:
        assert (e.rows["mismatches"] == 0).all()
        assert e.report["tree"]["form"] and e.report["tree"]["words"], e.report["tree"]
        if e.numerics is not None:
            assert e.numerics["tree"] == e.report["tree"]["form"]
