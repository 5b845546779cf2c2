"""gemmlab.invariance: a Python callable through `gemmlab invariance`'s core.

The CPU half (what a CPU-only installation says, bad sweeps) always runs. The GPU tests need a CUDA
GPU, the package's GPU engine and PyTorch; each skips with its reason where one is missing.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import gemmlab
import gemmlab._engine as engine
import gemmlab.gpu as gpu_module


def test_cpu_only_install_names_what_to_install(monkeypatch):
    monkeypatch.setattr(engine, "_gpu", None)
    monkeypatch.setattr(engine, "_GPU_MISSING_CUDA", None)
    monkeypatch.setattr(engine, "_GPU_IMPORT_ERROR", None)  # not built
    with pytest.raises(gemmlab.GpuUnavailable, match=r"without its GPU engine"):
        gemmlab.invariance(lambda a, b: a @ b, name="mm", input_format="fp16")


def test_sweeps_take_whole_numbers_or_default():
    assert gpu_module._sweep("default", "m") == ["default"]
    assert gpu_module._sweep([1, 3, "default"], "m") == ["1", "3", "default"]
    for bad in ([0], [1.5], ["all"], [True]):
        with pytest.raises(ValueError, match="whole numbers >= 1 or 'default'"):
            gpu_module._sweep(bad, "m")


def _gpu_or_skip():
    ok, why = gemmlab.gpu_available()
    if not ok:
        pytest.skip(f"no GPU engine or GPU: {why}")
    return pytest.importorskip("torch", reason="the GPU tests hand tensors over as torch tensors")


def test_a_fixed_order_callable_is_invariant(tmp_path):
    torch = _gpu_or_skip()

    # Products of fp32 values are exact in fp64 and K = 64 of them sum with an error near 2^-50: C
    # rounded once to fp32 does not depend on the order fp64 summed in (a tie within 2^-29 of a
    # rounding boundary aside), so every row is the same whatever M.
    def rowwise(a, b):
        return (a.double() @ b.double()).float()

    out = tmp_path / "rowwise.csv"
    rows = gemmlab.invariance(rowwise, input_format="fp32", size=(48, 32, 64), m=[1, 5, 17], n=[3], k_tails=[2],
                              repeats=2, out=out)
    assert list(rows.columns)[:3] == ["kernel", "config", "family"] and "why" in rows.columns
    checked = rows[rows["check"] != "cost"]
    assert len(checked) == 1 + 3 + 1 + 1
    assert (checked["status"] == "equal").all(), checked[["check", "m", "n", "k", "why"]]
    assert (checked["compared"] > 0).all()
    assert Path(out).exists() and Path(out).with_suffix(".meta.json").exists()


def test_a_batch_dependent_callable_is_caught():
    torch = _gpu_or_skip()

    # Rounds the K sum to fp32 once when M <= 8, twice (two halves, then their fp32 sum: split-K 2)
    # when M > 8, each half exact as above: rows of m <= 8 differ from M = 32's, the others agree.
    def split_when_large(a, b):
        if a.shape[0] <= 8:
            return (a.double() @ b.double()).float()
        h = a.shape[1] // 2
        return (a[:, :h].double() @ b[:h].double()).float() + (a[:, h:].double() @ b[h:].double()).float()

    rows = gemmlab.invariance(split_when_large, input_format="fp32", size=(32, 16, 256), m=[4, 8, 12, 20],
                              repeats=1, cost=False)
    by_m = {int(r.m): r.status for r in rows.itertuples() if r.check == "m"}
    assert by_m[4] == by_m[8] == "differs"
    assert by_m[12] == by_m[20] == "equal"
