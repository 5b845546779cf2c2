"""Quantized forms in Python: the element and scale formats (gemmlab.round_to & co. take them), the recipes
``gemmlab.judge`` takes as input_format, bad input refused before anything runs (on any machine: these checks
come before the GPU is touched), ``gemmlab.quantized_inputs``' tensors decoded back to the dequantized operands by
hand (the layouts of docs/python.md), and on a GPU (each test skips with its reason without one, its engine, torch
or Triton) the baselines of examples/judge_quantized.py at a small size, each within the bound of where it applies
its scales, and a quantized callable that reads its scales wrongly caught.
"""

from __future__ import annotations

import importlib.util
import json

import numpy as np
import pandas as pd
import pytest

import gemmlab


def test_element_and_scale_formats():
    assert set(gemmlab.QUANTIZED_FORMATS) == {"e2m1", "e2m3", "e3m2", "ue8m0", "ue4m3", "int8", "int4", "uint4"}
    assert "e2m1" not in gemmlab.FORMATS  # not a run format
    assert list(gemmlab.round_to("e2m1", [0.25, 0.3, 2.5, 5.0, 7.0, -9.0])) == [0.0, 0.5, 2.0, 4.0, 6.0, -6.0]
    assert list(gemmlab.round_to("int8", [2.5, 3.5, -200.0])) == [2.0, 4.0, -128.0]
    assert gemmlab.round_to("uint4", -3.0) == 0.0
    assert gemmlab.from_bits("ue8m0", 127) == 1.0 and np.isnan(gemmlab.from_bits("ue8m0", 255))
    assert gemmlab.to_bits("e2m1", 6.0) == 7
    info = gemmlab.format_info("int8")
    assert info.integer and info.lowest == -128.0 and not info.has_nan
    with pytest.raises(ValueError, match="round it first"):
        gemmlab.to_bits("int4", 0.5)


def test_quantized_recipes_of_input_formats():
    assert gemmlab.quantized_recipe("bf16") is None
    assert gemmlab.quantized_recipe("mxfp4") == "mxfp4"
    assert gemmlab.quantized_recipe("int8") == "int8_rowwise"
    assert gemmlab.quantized_recipe("int4_weight_only") == "bf16_x_uint4_g128"
    assert gemmlab.quantized_recipe("int4_weight_only", group_size=32) == "bf16_x_uint4_g32"
    assert gemmlab.quantized_recipe("mxfp4_x_mxfp4") == "mxfp4"
    assert gemmlab.quantized_recipe("mxfp8_e4m3_x_bf16") == "mxfp8_e4m3_x_bf16"
    with pytest.raises(ValueError, match="group_size must be 32, 64, 128 or 256"):
        gemmlab.quantized_recipe("int4_weight_only", group_size=48)
    with pytest.raises(ValueError, match="is neither a gemmlab format .* nor a quantized form"):
        gemmlab.quantized_recipe("mxfp5")


@pytest.mark.parametrize("kwargs, match", [
    (dict(input_format="int4_weight_only", group_size=48), "group_size must be 32, 64, 128 or 256"),
    (dict(input_format="mxfp4", sizes=[(64, 64, 48)]), "K = 48 is not a multiple of its block of 32"),
    (dict(input_format="nvfp4", sizes=[(64, 64, 40)]), "block of 16"),
    (dict(input_format="int4_weight_only", group_size=128, sizes=[(64, 64, 64)]), "block of 128"),
    (dict(input_format="mxfp4", distributions=["normal_0_1@mxfp4"]), "carries a recipe already"),
    (dict(input_format="mxfp4", scales="everywhere"), "scales must be 'operands', 'output' or 'unknown'"),
    (dict(input_format="int8", scales="operands", scale_roundings=2), "scale_roundings"),
    (dict(input_format="bf16", scales="output"), "for a quantized input_format"),
])
def test_bad_quantized_input_is_refused_before_anything_runs(kwargs, match):
    # ValueError, not GpuUnavailable: the checks come before the GPU engine is asked for (this passes on a CPU).
    def fn(A, B, a_scale, b_scale):
        raise AssertionError("never called")
    with pytest.raises(ValueError, match=match):
        gemmlab.judge(fn, **kwargs)


def _nibbles(packed: np.ndarray, along_rows: bool) -> np.ndarray:
    """Two 4-bit codes per byte along K, the even k low: A (M, K/2) -> (M, K), B (K/2, N) -> (K, N)."""
    lo, hi = packed & 0xF, packed >> 4
    if along_rows:  # B: rows 2r, 2r + 1
        return np.stack([lo, hi], axis=1).reshape(2 * packed.shape[0], packed.shape[1])
    return np.stack([lo, hi], axis=2).reshape(packed.shape[0], 2 * packed.shape[1])


def _bf16(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def test_quantized_inputs_decode_to_the_dequantized_operands():
    M, N, K = 8, 16, 128
    q = gemmlab.quantized_inputs("normal_0_1@mxfp4", (M, N, K), seed=3)
    assert q.types == {"A": "uint8", "B": "uint8", "a_scale": "uint8", "b_scale": "uint8"}
    assert q.tensors["A"].shape == (M, K // 2) and q.tensors["B"].shape == (K // 2, N)
    assert q.tensors["a_scale"].shape == (M, K // 32) and q.tensors["b_scale"].shape == (N, K // 32)
    e2m1 = np.array([gemmlab.from_bits("e2m1", c) for c in range(16)])
    a = e2m1[_nibbles(q.tensors["A"], False)] * np.exp2(q.tensors["a_scale"].astype(np.float64) - 127).repeat(32, axis=1)
    b = e2m1[_nibbles(q.tensors["B"], True)] * np.exp2(q.tensors["b_scale"].astype(np.float64) - 127).T.repeat(32, axis=0)
    assert np.array_equal(a, q.dequantized[0]) and np.array_equal(b, q.dequantized[1])

    w = gemmlab.quantized_inputs("uniform_-1_1@bf16_x_uint4_g32", (M, N, K), seed=3)
    assert w.types == {"A": "bfloat16", "B": "uint8", "b_scale": "bfloat16", "b_zero": "bfloat16"}
    codes = _nibbles(w.tensors["B"], True).astype(np.float64)
    s, z = _bf16(w.tensors["b_scale"]).repeat(32, axis=0), _bf16(w.tensors["b_zero"]).repeat(32, axis=0)
    assert np.array_equal((codes - 8) * s + z, w.dequantized[1])
    assert np.array_equal(_bf16(w.tensors["A"]), w.dequantized[0])

    i8 = gemmlab.quantized_inputs("normal_0_1@int8_rowwise", (M, N, K), seed=3)
    assert i8.tensors["a_scale"].shape == (M,) and i8.tensors["B"].dtype == np.int8
    assert np.array_equal(i8.tensors["A"] * i8.tensors["a_scale"][:, None].astype(np.float64), i8.dequantized[0])

    nv = gemmlab.quantized_inputs("normal_0_1@nvfp4", (M, N, K), seed=3)
    assert set(nv.tensor_scales) == {"a_tensor_scale", "b_tensor_scale"}
    assert nv.types["a_scale"] == "float8_e4m3fn" and nv.tensors["a_scale"].shape == (M, K // 16)
    # The source is the plain distribution's fp32 operand, bit for bit.
    assert np.array_equal(q.sources[0], gemmlab.generate("normal_0_1", "A", M, K, "fp32", seed=3))


def test_quantized_inputs_refuse_what_has_no_recipe():
    with pytest.raises(ValueError, match="carries no quantized recipe"):
        gemmlab.quantized_inputs("normal_0_1", 64)
    with pytest.raises(ValueError, match="all zero"):
        gemmlab.quantized_inputs("logunif_-200_-160@mxfp4", (8, 8, 64))


# --- on a GPU ---------------------------------------------------------------------------------------

def _gpu():
    ok, why = gemmlab.gpu_available()
    if not ok:
        pytest.skip(f"no GPU engine or GPU: {why}")
    return pytest.importorskip("torch", reason="the GPU tests hand tensors over as torch tensors")


def _examples(root):
    pytest.importorskip("triton", reason="examples/judge_quantized.py's kernels are Triton's")
    spec = importlib.util.spec_from_file_location("judge_quantized", root / "examples" / "judge_quantized.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_baselines_pass_the_bounds_of_their_scale_placement(root):
    _gpu()
    ex = _examples(root)
    for name, spec in ex.cases(quick=True).items():
        spec = dict(spec, sizes=[(256, 256, 512)])
        rows = gemmlab.judge(spec.pop("fn"), name=name, distributions=["normal_0_1", "uniform_-1_1"], seeds=[5],
                             reps=2, warmup=1, errors="rows", **spec)
        for r in rows.itertuples():
            assert r.status == "passed", f"{name} on {r.distribution}: {r.status}: {r.note}"
            assert r.quant_rel_std > 0 and r.total_rel_std > 0, name
            if name == "torch_int_mm_rowwise":  # its epilogue explained: every output predicted bit for bit
                assert "explained: the scales enter after the exact sum as epilogue_mul_mul" in r.note, r.note


def test_a_callable_that_misreads_its_scales_fails(root):
    torch = _gpu()

    def int8_one_scale(A, B, a_scale, b_scale):  # applies row 0's scale to every row: not C
        return (torch._int_mm(A, B).float() * a_scale[0]) * b_scale[None, :]

    rows = gemmlab.judge(int8_one_scale, input_format="int8", scales="output", scale_roundings=2,
                         sizes=[(256, 256, 512)], distributions=["normal_0_1"], reps=2, warmup=1)
    assert (rows["status"] == "failed_bound").all()


def test_explain_refuses_bad_quantized_forms_before_the_gpu():
    # Checked before the GPU is touched: CI, with none, gets the same message.
    for form in ("mxfp4", "nvfp4", "mxfp8_e4m3"):
        with pytest.raises(ValueError, match=r"both operands of \S+ are quantized.*gemmlab.judge"):
            gemmlab.explain(lambda a, b: a, input_format=form, name="x")
    with pytest.raises(ValueError, match="group_size must be 32, 64, 128 or 256"):
        gemmlab.explain(lambda a, b: a, input_format="int4_weight_only", group_size=48, name="x")
    with pytest.raises(ValueError, match="K = 100 is not a multiple of its block of 32"):
        gemmlab.explain(lambda a, b: a, input_format="mxfp4_x_bf16", size=(64, 64, 100), name="x")
    with pytest.raises(ValueError, match="carries a recipe already"):
        gemmlab.explain(lambda a, b: a, input_format="mxfp4_x_bf16", distributions=["normal_0_1@mxfp4"], name="x")
    with pytest.raises(ValueError, match="takes no form beyond C = A B"):
        gemmlab.explain(lambda a, b: a, input_format="int8", alpha=0.5, name="x")
    with pytest.raises(ValueError, match="epilogue is explained from an fp32 output"):
        gemmlab.explain(lambda a, b: a, input_format="int8", output_format="bf16", name="x")
    with pytest.raises(ValueError, match="out must name a .csv file"):
        gemmlab.explain(lambda a, b: a, input_format="int8", out="x.txt", name="x")
    assert gemmlab._core.explain_input_format("mxfp4_x_bf16") == "bf16"
    assert gemmlab._core.explain_input_format("fp16_x_uint4_g32") == "fp16"
    assert gemmlab._core.unit_scale_values("mxfp4") == [-6, -4, -3, -2, -1.5, -1, -0.5, 0, 0.5, 1, 1.5, 2, 3, 4, 6]
    assert gemmlab._core.unit_scale_values("uint4_g128") == list(range(-8, 8))


def test_explain_of_int8_reads_the_words_judge_writes():
    # explain of int8 reads each judged row's epilogue from its note: the words epilogue_explanation writes.
    from gemmlab.explain import _EPILOGUE_NOTE
    m = _EPILOGUE_NOTE.search("scales on the output; " + gemmlab._core.epilogue_explanation([0, 5, 6, 7], 100) + "; ")
    assert m and (m["name"], m["miss"], m["outputs"]) == ("epilogue_mul_mul", "0", "100")
    assert m["formula"] == "RN(RN(RN(S) a_scale) b_scale)" and m["others"].startswith("epilogue_mul_mul_ba 5")
    m = _EPILOGUE_NOTE.search(gemmlab._core.epilogue_explanation([9, 5, 3, 7], 100))
    assert m and m["head"].startswith("no candidate") and (m["name"], m["miss"]) == ("epilogue", "3")
    with pytest.raises(ValueError, match="one count per candidate"):
        gemmlab._core.epilogue_explanation([0], 1)


def test_explain_predicts_the_baselines_with_one_plain_operand(root):
    _gpu()
    ex = _examples(root)
    cases = {"mxfp4_x_bf16": dict(fn=ex.dot_scaled("e2m1", "bf16"), input_format="mxfp4_x_bf16"),
             "w4a16": dict(fn=ex.triton_w4a16(128), input_format="int4_weight_only", group_size=128)}
    for name, spec in cases.items():
        spec = dict(spec)
        e = gemmlab.explain(spec.pop("fn"), name=name, size=(256, 256, 512), distributions=["normal_0_1", "uniform_-1_1"],
                            seed=5, compare_outputs=0, judge_rows=True, reps=2, **spec)
        assert e.identified, e.summary
        assert [c["distribution"].split("@")[1] for c in e.report["comparisons"]] == [e.report["comparisons"][0]
                                                                                     ["distribution"].split("@")[1]] * 2
        assert all(c["mismatches"] == 0 and c["outputs"] == 256 * 256 for c in e.report["comparisons"]), e.summary
        assert e.report["quantized"] is True
        if name == "w4a16":  # (q - 8) s + z is no bf16 value: the kernel's rounding of it is found
            assert e.report["dequantization"]["operands"] == "B", e.summary
            assert e.report["dequantization"]["mismatches"][e.report["dequantization"]["chosen"]] == 0
        else:
            assert e.report["dequantization"] is None
        assert len(e.judged) == 2 and (e.judged["status"] == "passed").all(), e.judged[["status", "note"]]


def test_explain_of_int8_finds_the_epilogue(root, tmp_path):
    torch = _gpu()
    ex = _examples(root)
    out = tmp_path / "int_mm.csv"
    e = gemmlab.explain(ex.int_mm_rowwise, input_format="int8", name="int_mm", size=(256, 256, 512),
                        distributions=["normal_0_1", "uniform_-1_1"], seed=5, reps=2, out=out)
    assert e.identified, e.summary
    assert e.report["epilogue"]["name"] == "epilogue_mul_mul", e.summary
    assert [c["mismatches"] for c in e.report["comparisons"]] == [0, 0]
    assert [c["outputs"] for c in e.report["comparisons"]] == [256 * 256] * 2
    assert "exact integer products and sums" in e.report["numerics_text"]
    rows = pd.read_csv(out, keep_default_na=False)
    assert list(rows["distribution"]) == ["normal_0_1@int8_rowwise", "uniform_-1_1@int8_rowwise"]
    assert (tmp_path / "int_mm_judged.csv").is_file()
    meta = json.loads((tmp_path / "int_mm.meta.json").read_text())
    assert meta["report"]["epilogue"] == e.report["epilogue"] and meta["sources"][0]["csv"] == "int_mm_judged.csv"

    def one_scale(A, B, a_scale, b_scale):  # row 0's scale on every row: no candidate predicts it
        return (torch._int_mm(A, B).float() * a_scale[0]) * b_scale[None, :]

    e = gemmlab.explain(one_scale, input_format="int8", name="one_scale", size=(256, 256, 512),
                        distributions=["normal_0_1"], seed=5, reps=2)
    assert not e.identified and e.report["failed_stage"] == "epilogue", e.summary


def test_dequantize_checks_user_tensors_before_use():
    M, N, K = 8, 16, 128
    q = gemmlab.quantized_inputs("normal_0_1@nvfp4", (M, N, K), seed=4)
    A, B = gemmlab.dequantize("nvfp4", (M, N, K), **q.tensors, **q.tensor_scales)
    assert np.array_equal(A, q.dequantized[0]) and np.array_equal(B, q.dequantized[1])
    t = dict(q.tensors, **q.tensor_scales)
    with pytest.raises(ValueError, match=r"A of nvfp4 at 8x16x128 must be uint8 of shape \(8, 64\)"):
        gemmlab.dequantize("nvfp4", (M, N, K), **dict(t, A=q.tensors["A"][:, :32]))
    zero = q.tensors["b_scale"].copy()
    zero[1, 2] = 0
    with pytest.raises(ValueError, match=r"b_scale\[1, 2\] is zero"):
        gemmlab.dequantize("nvfp4", (M, N, K), **dict(t, b_scale=zero))
    with pytest.raises(ValueError, match=r"needs b_tensor_scale \(a QuantizedInputs keeps it in .tensor_scales"):
        gemmlab.dequantize("nvfp4", (M, N, K), **{k: v for k, v in t.items() if k != "b_tensor_scale"})
    # A bfloat16 tensor given as its uint16 bits (the documented form) of a wrong shape: the shape is named, not
    # the dtype (the message said "must be bfloat16 ...; got uint16").
    g = gemmlab.quantized_inputs("uniform_-1_1@bf16_x_uint4_g32", (M, N, K), seed=4)
    short = g.tensors["b_scale"][:1]
    with pytest.raises(ValueError, match=r"b_scale of .* must be bfloat16 \(or its uint16 bits\) of shape .*; got of shape \(1,"):
        gemmlab.dequantize("int4_weight_only", (M, N, K), group_size=32, **dict(g.tensors, b_scale=short))
    mx = gemmlab.quantized_inputs("normal_0_1@mxfp4", (M, N, K), seed=4)
    nan = mx.tensors["a_scale"].copy()
    nan[0, 0] = 0xFF
    with pytest.raises(ValueError, match=r"a_scale\[0, 0\] is NaN"):
        gemmlab.dequantize("mxfp4", (M, N, K), **dict(mx.tensors, a_scale=nan))
    with pytest.raises(ValueError, match="not a multiple of its block of 128"):
        gemmlab.dequantize("int4_weight_only", (M, N, 96), A=np.zeros((M, 96), np.uint16))
