"""gemmlab.explain of a form, the parts that need no GPU (gemmlab/explain_form.py): the epilogue's candidates
computed exactly, the probes telling every place apart, and the stage finding the place of simulated kernels
whose epilogue is known (fp32 FMA chains written independently of the module, with numpy's IEEE fp16 and
fp32 arithmetic). The GPU half (torch, Triton, cuBLASLt) is in test_explain_form_gpu.py."""

from __future__ import annotations

import json
import re
from types import SimpleNamespace

import numpy as np
import pytest

from gemmlab import explain_form as ef
from gemmlab.formats import round_to, to_bits

PLACES = ef.PLACES


def test_epilogue_rounds_once_or_twice_fp16():
    # acc = 1 + 3 2^-13 (3/8 of fp16's ulp at 1 above 1), bias 3 2^-13: once -> 1 + 2^-10; twice -> 1.
    acc, b = 1 + 3 * 2.0 ** -13, 3 * 2.0 ** -13
    kw = dict(alpha=1.0, beta_c0=0.0, bias=b, scale=1.0, output="fp16")
    assert ef.epilogue({"bias": "before_output_rounding"}, acc, **kw) == 1 + 2.0 ** -10
    assert ef.epilogue({"bias": "after_output_rounding"}, acc, **kw) == 1.0


def test_epilogue_on_arrays_matches_scalars():
    rng = np.random.default_rng(7)
    acc = np.float32(rng.normal(size=200) * 100).astype(np.float64)
    bias = round_to("bf16", rng.uniform(-1, 1, size=200))
    for place in ("before_output_rounding", "after_output_rounding"):
        arr = ef.epilogue({"bias": place}, acc, alpha=0.5, beta_c0=0.0, bias=bias, scale=1.0, output="bf16")
        one = [ef.epilogue({"bias": place}, a, alpha=0.5, beta_c0=0.0, bias=x, scale=1.0, output="bf16")
               for a, x in zip(acc, bias)]
        assert np.array_equal(arr, np.array(one, dtype=np.float64))


@pytest.mark.parametrize("text,inp,out", [
    ("bias=column:uniform_-1_1", "fp16", "fp16"), ("bias=column:uniform_-1_1", "bf16", "bf16"),
    ("bias=row:uniform_-1_1", "e4m3", "bf16"), ("alpha=0.5,beta=2,c0=normal_0_1", "bf16", "bf16"),
    ("alpha=0.5,beta=2,c0=normal_0_1,bias=column:uniform_-1_1", "fp16", "fp16")])
def test_probes_tell_every_place_apart(text, inp, out):
    form = ef.Form.parse(text, 64)
    probes = ef._probes(form, inp, out, out, out)
    seen = {}
    for c in ef._candidates(form.parts()):
        key = tuple(ef._bits(out, ef._predict(p, c, form, out)) for p in probes)
        assert key not in seen, f"{c} and {seen.get(key)} give the same bits on every probe"
        seen[key] = c


def test_fp32_output_tells_the_start_apart_only():
    form = ef.Form.parse("alpha=0.5,beta=2,c0=normal_0_1", 64)
    probes = ef._probes(form, "fp32", "fp32", "fp32", "fp32")
    keys = {place: tuple(ef._bits("fp32", ef._predict(p, {"c0": place}, form, "fp32")) for p in probes)
            for place in PLACES}
    assert keys["before_output_rounding"] == keys["after_output_rounding"]
    assert keys["accumulator_start"] != keys["before_output_rounding"]


def _simulated(place: dict, form: ef.Form, out: str, alpha_on_operands: bool = False):
    """A kernel: an fp32 FMA chain over k = 0, 1 from its start value, then alpha, beta C0 and the bias where
    ``place`` says, with numpy's float32 / float16 arithmetic (bf16 by round_to)."""
    alpha = np.float32(1.0 if form.alpha is None else form.alpha)
    beta = np.float32(1.0 if form.beta is None else form.beta)

    def rnd(x):
        return np.float32(x) if out == "fp32" else np.float32(np.float16(np.float32(x))) if out == "fp16" \
            else np.float32(round_to(out, float(x)))

    def run(probe, _ctx):
        parts = {"bias": np.float32(probe.bias), "c0": beta * np.float32(probe.c0)}
        acc = np.float32(0)
        for p in ("c0", "bias"):
            if place.get(p) == "accumulator_start":
                acc = np.float32(acc + parts[p])
        for a, b in zip(probe.a, probe.b):
            if alpha_on_operands:
                a = float(alpha) * a
            with np.errstate(over="ignore"):  # 2^128 overflows fp32: inf, as the kernel writes
                acc = np.float32(np.float64(a) * np.float64(b) + np.float64(acc))  # fma: one rounding
        t = acc if alpha_on_operands else np.float32(alpha * acc)
        for p in ("c0", "bias"):
            if place.get(p) == "before_output_rounding":
                t = np.float32(t + parts[p])
        y = rnd(t)
        for p in ("c0", "bias"):
            if place.get(p) == "after_output_rounding":
                y = rnd(np.float32(y) + parts[p])
        bits = int(to_bits(out, np.array([float(y)]))[0])
        return [bits] * 4
    return run


@pytest.mark.parametrize("text,inp,out", [("bias=column:uniform_-1_1", "fp16", "fp16"),
                                          ("bias=column:uniform_-1_1", "bf16", "bf16"),
                                          ("alpha=0.5,beta=2,c0=normal_0_1", "bf16", "bf16")])
def test_stage_finds_the_place_of_simulated_kernels(text, inp, out):
    form = ef.Form.parse(text, 64)
    ctx = SimpleNamespace(form=form, input_format=inp, output_format=out, bias_format=out, c0_format=out)
    for truth in ef._candidates(form.parts()):
        r = ef.epilogue_stage(ctx, run_probe=_simulated(truth, form, out))
        assert r["candidates"] == [truth], json.dumps(r["probes"], indent=1)
        for part, place in truth.items():
            assert r["parts"][part]["places"] == [place]


@pytest.mark.parametrize("on_operands", [False, True])
def test_alpha_probe_tells_the_sum_from_the_operands(on_operands):
    form = ef.Form.parse("alpha=0.5,beta=2,c0=normal_0_1", 64)
    ctx = SimpleNamespace(form=form, input_format="bf16", output_format="bf16", bias_format="bf16", c0_format="bf16")
    r = ef.epilogue_stage(ctx, run_probe=_simulated({"c0": "before_output_rounding"}, form, "bf16", on_operands))
    assert r["alpha"]["where"] == ["on_the_operands" if on_operands else "on_the_sum"]


def test_alpha_not_probed_where_no_product_reaches_fp32_range():
    form = ef.Form.parse("alpha=0.5,beta=2,c0=normal_0_1", 64)
    ctx = SimpleNamespace(form=form, input_format="fp16", output_format="fp16", bias_format="fp16", c0_format="fp16")
    r = ef.epilogue_stage(ctx, run_probe=_simulated({"c0": "before_output_rounding"}, form, "fp16"))
    assert r["alpha"]["where"] == []
    assert "power of two" in r["alpha"]["words"]


def test_an_epilogue_no_candidate_has_is_reported_not_forced():
    form = ef.Form.parse("bias=column:uniform_-1_1", 64)
    ctx = SimpleNamespace(form=form, input_format="fp16", output_format="fp16", bias_format="fp16", c0_format="fp16")

    def doubles_the_bias(probe, _ctx):  # C = A B + 2 bias: no place explains it
        y = np.float16(np.float32(probe.a[0] * probe.b[0] + probe.a[1] * probe.b[1]) + np.float32(2 * probe.bias))
        return [int(to_bits("fp16", np.array([float(y)]))[0])] * 4
    r = ef.epilogue_stage(ctx, run_probe=doubles_the_bias)
    assert r["candidates"] == []
    assert r["parts"]["bias"]["places"] == []
    assert "no candidate" in r["parts"]["bias"]["words"]


def test_form_parse_resolves_the_rest_of_the_groups():
    f = ef.Form.parse("groups=128+512+*", 3688)
    assert f.groups == [128, 512, 3048]
    with pytest.raises(ValueError, match="do not add up"):
        ef.Form.parse("groups=128+512", 3688)


def test_predictions_file_is_read_exactly(tmp_path):
    p = tmp_path / "pred.txt"
    vals = [1 + 2.0 ** -23, -3 * 2.0 ** -140, 0.0]
    p.write_text("".join(f"uniform_0_1 {i} {2 * i} {v.hex()}\n" for i, v in enumerate(vals)))
    I, J, V = ef._read_predictions(p)["uniform_0_1"]
    assert I.tolist() == [0, 1, 2] and J.tolist() == [0, 2, 4] and V.tolist() == vals


def test_form_csv_columns_are_documented(root):
    text = (root / "docs" / "csv.md").read_text().splitlines()
    at = text.index("<!-- columns: explain_form -->")
    names = []
    for line in text[at + 3:]:
        if not line.startswith("|"):
            break
        names += re.findall(r"`([^`]*)`", line.split("|")[1])
    assert names == list(ef.FORM_COLUMNS)


def test_fma32_is_the_correctly_rounded_fma():
    from fractions import Fraction
    rng = np.random.default_rng(3)
    a = np.float32(rng.normal(size=3000)).astype(np.float64)
    b = np.float32(rng.normal(size=3000)).astype(np.float64)
    c = np.float32(rng.normal(size=3000) * 2.0 ** rng.integers(-40, 40, size=3000)).astype(np.float64)
    # a b = 1 + 2^-11 + 2^-24, halfway between two fp32 values; c = +-2^-80 is lost in binary64's sum, which
    # then ties (to even: down) where the exact sum is above (up) or below (down) the halfway point.
    a[:6] = b[:6] = 1 + 2.0 ** -12
    c[:6] = [2.0 ** -80, -(2.0 ** -80), 2.0 ** -80, 0.0, 2.0 ** -90, -(2.0 ** -90)]
    got = ef._fma32(a, b, c)

    def exact(x, y, z):  # round half to even of the exact x y + z into fp32, through fractions
        v = Fraction(x) * Fraction(y) + Fraction(z)
        lo = float(np.float32(float(v)))
        cands = sorted({lo, float(np.nextafter(np.float32(lo), np.float32(np.inf))),
                        float(np.nextafter(np.float32(lo), np.float32(-np.inf)))})
        best = min(cands, key=lambda r: (abs(Fraction(r) - v), int(np.float32(r).view(np.int32)) & 1))
        return best
    want = [exact(x, y, z) for x, y, z in zip(a, b, c)]
    assert want[0] == 1 + 2.0 ** -11 + 2.0 ** -23 and want[1] == want[3] == 1 + 2.0 ** -11
    assert got.tolist() == want


def test_the_neutral_add_is_minus_zero():
    # A negative sum rounded to fp16 zero is -0; added after the rounding, +0 would make it +0 (what the
    # Triton kernel that adds its bias to the fp16 output showed on the H100), -0 keeps it.
    kw = dict(alpha=1.0, beta_c0=0.0, scale=1.0, output="fp16")
    after = {"bias": "after_output_rounding"}
    assert np.signbit(ef.epilogue(after, -(2.0 ** -25), bias=-0.0, **kw))
    assert not np.signbit(ef.epilogue(after, -(2.0 ** -25), bias=0.0, **kw))
    assert ef._neutral_c0(ef.Form.parse("beta=2,c0=normal_0_1", 8)) == 0.0
    assert np.signbit(ef._neutral_c0(ef.Form.parse("beta=2,c0=normal_0_1", 8)))
    assert not np.signbit(ef._neutral_c0(ef.Form.parse("beta=-2,c0=normal_0_1", 8)))
