"""gemmlab.judge and gemmlab.evaluate on GPU tensors.

The CPU half (what a CPU-only installation says) always runs. The GPU tests need a CUDA GPU, the
package's GPU engine and PyTorch; each skips with its reason where one is missing. The cuBLAS test
also needs the gemmlab CLI (GEMMLAB_BIN, set by ctest).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import gemmlab
import gemmlab._engine as engine

ROOT = Path(__file__).resolve().parents[2]
TIMING = set(gemmlab.TIMING_COLUMNS)


def test_cpu_only_install_names_what_to_install(monkeypatch):
    monkeypatch.setattr(engine, "_gpu", None)
    monkeypatch.setattr(engine, "_GPU_MISSING_CUDA", None)
    monkeypatch.setattr(engine, "_GPU_IMPORT_ERROR", None)  # not built
    with pytest.raises(gemmlab.GpuUnavailable, match=r"without its GPU engine.*CUDA toolkit.*pip install"):
        gemmlab.judge(lambda a, b: a @ b, name="mm", input_format="fp16")
    ok, why = gemmlab.gpu_available()
    assert not ok and "CUDA toolkit" in why


def test_gpu_engine_that_cannot_load_says_why(monkeypatch):
    monkeypatch.setattr(engine, "_gpu", None)
    monkeypatch.setattr(engine, "_GPU_MISSING_CUDA", None)
    monkeypatch.setattr(engine, "_GPU_IMPORT_ERROR", "libcublas.so.13: cannot open shared object file")
    with pytest.raises(gemmlab.GpuUnavailable, match=r"cannot be loaded: libcublas"):
        gemmlab.judge(lambda a, b: a @ b, name="mm", input_format="fp16")


def test_gpu_engine_with_an_undefined_symbol_is_not_called_a_cpu_only_install(monkeypatch):
    # the module is there but does not load: the message must not send the user to install a CUDA toolkit
    monkeypatch.setattr(engine, "_gpu", None)
    monkeypatch.setattr(engine, "_GPU_MISSING_CUDA", None)
    monkeypatch.setattr(engine, "_GPU_IMPORT_ERROR",
                        "/venv/site-packages/gemmlab/_gpu.abi3.so: undefined symbol: _ZN7gemmlab17gpu_tree_emulatorEv")
    with pytest.raises(gemmlab.GpuUnavailable, match=r"is installed but cannot be loaded: .*undefined symbol"):
        gemmlab.judge(lambda a, b: a @ b, name="mm", input_format="fp16")


@pytest.mark.skipif(os.environ.get("GEMMLAB_EXPECT_GPU_ENGINE") != "1",
                    reason="GEMMLAB_EXPECT_GPU_ENGINE=1 is set by scripts/test.sh where a CUDA toolkit is installed")
def test_cuda_toolkit_gives_the_gpu_engine():
    # scripts/setup.sh / test.sh install the package where nvcc exists: it must have been built with it.
    assert engine._gpu is not None, \
        f"gemmlab._gpu is missing: {engine._GPU_MISSING_CUDA or engine._GPU_IMPORT_ERROR}"


def test_gpu_engine_without_cublas_says_what_to_install(monkeypatch):
    monkeypatch.setattr(engine, "_gpu", None)
    monkeypatch.setattr(engine, "_GPU_MISSING_CUDA", "libcublasLt.so.13 and libcublas.so.13 not found (...). "
                        'install NVIDIA\'s wheel (pip install "nvidia-cublas>=13,<14"; ...)')
    with pytest.raises(gemmlab.GpuUnavailable, match=r"needs cuBLAS, which is not part of the package: .*nvidia-cublas"):
        gemmlab.judge(lambda a, b: a @ b, name="mm", input_format="fp16")


def test_no_gpu_says_so():
    if engine._gpu is None:
        pytest.skip("this installation has no GPU engine (the CPU-only message is tested above)")
    if engine._gpu.device_status(0)[0]:
        pytest.skip("a GPU is present: the GPU tests below run instead")
    with pytest.raises(gemmlab.GpuUnavailable, match="no usable CUDA GPU"):
        gemmlab.judge(lambda a, b: a @ b, name="mm", input_format="fp16")


# --- on a GPU ---------------------------------------------------------------------------------------

def _gpu_or_skip():
    ok, why = gemmlab.gpu_available()
    if not ok:
        pytest.skip(f"no GPU engine or GPU: {why}")
    return pytest.importorskip("torch", reason="the GPU tests hand tensors over as torch tensors")


SMALL = dict(sizes=[(256, 192, 320)], distributions=["uniform_0_1", "normal_0_1"], seeds=[7], reps=3, warmup=1)


def test_judge_cublas_call_equals_builtin_row(tmp_path):
    _gpu_or_skip()
    gemmlab_bin = os.environ.get("GEMMLAB_BIN")
    if not gemmlab_bin or not Path(gemmlab_bin).exists():
        pytest.skip("GEMMLAB_BIN (the gemmlab CLI) is not set: ctest sets it")
    sys.path.insert(0, str(ROOT / "examples"))
    from cublas_callable import cublas_gemmex

    for variant, fmt in (("fp16_f32", "fp16"), ("fp32_pedantic", "fp32")):
        name = f"cublas_gemmex_{variant}"
        compute = "fp32"
        judged = gemmlab.judge(cublas_gemmex(variant), name=name, family="cublas", input_format=fmt,
                               output_format="fp32", compute_format=fmt if fmt != "fp32" else compute,
                               accumulation="library", **SMALL)
        csv = tmp_path / f"{name}.csv"
        subprocess.run([gemmlab_bin, "run", "-k", name, "-d", "uniform_0_1,normal_0_1", "-s", "256x192x320",
                        "--seeds", "7", "--reps", "3", "--warmup", "1", "-o", str(csv)], check=True,
                       capture_output=True)
        builtin = gemmlab.load_results(csv)
        assert len(judged) == len(builtin) == 2
        for col in gemmlab.COLUMNS:
            if col in TIMING:
                continue
            a, b = judged[col].astype(str).tolist(), builtin[col].astype(str).tolist()
            assert a == b, f"{name}: column {col} differs: judge {a} vs run {b}"


def test_judge_torch_matmul_rows_and_metadata(tmp_path):
    torch = _gpu_or_skip()
    out = tmp_path / "mm.csv"
    rows = gemmlab.judge(lambda a, b: a @ b, name="torch_mm_fp16", input_format="fp16", output_format="fp16",
                         out=out, **SMALL)
    assert list(rows.columns) == list(gemmlab.COLUMNS)
    assert set(rows["status"]) <= {"passed", "no_bound"}
    assert (rows["time_ms_median"] > 0).all() and (rows["unwritten"] == 0).all()
    caller = json.loads(out.with_suffix(".meta.json").read_text())["caller"]
    assert caller["torch_version"] == torch.__version__
    assert "allow_tf32" in caller["torch"]


def test_judge_out_style_writes_into_poisoned_c():
    torch = _gpu_or_skip()

    def half_written(a, b, out):
        out[: out.shape[0] // 2] = (a @ b)[: out.shape[0] // 2].float()

    with pytest.warns(RuntimeWarning, match="NaN or infinite"):
        rows = gemmlab.judge(half_written, input_format="fp16", **SMALL)
    assert (rows["status"] == "failed_bound").all()
    assert (rows["unwritten"] == 256 // 2 * 192).all()


@pytest.mark.parametrize("bad, message", [
    ("shape", "shape"), ("dtype", "dtype"), ("device", "another device"), ("raises", "the callable raised"),
    ("writes_a", "wrote into its input A"), ("none", "returned None")])
def test_judge_bad_callables_are_error_rows(bad, message, tmp_path):
    torch = _gpu_or_skip()

    def fn(a, b):
        if bad == "shape":
            return (a @ b)[:-1]
        if bad == "dtype":
            return (a @ b).double()
        if bad == "device":
            return (a @ b).float().cpu()
        if bad == "raises":
            raise ZeroDivisionError("boom")
        if bad == "writes_a":
            a.zero_()
            return (a @ b).float()
        return None

    out = tmp_path / "bad.csv"
    with pytest.raises(gemmlab.JudgeError, match=message) as e:
        gemmlab.judge(fn, name=f"bad_{bad}", input_format="fp16", out=out, **SMALL)
    assert (e.value.rows["status"] == "error").all()
    # The CSV holds the complete rows (the errors said in them), never a half-written file.
    assert len(gemmlab.load_results(out)) == 2
    assert not Path(str(out) + ".journal").exists()


def test_judge_nondeterministic_callable_is_flagged():
    torch = _gpu_or_skip()
    calls = {"n": 0}

    def drifting(a, b):
        calls["n"] += 1
        return (a @ b).float() * (1 + calls["n"] * 2.0 ** -10)  # a relative drift every entry shows

    with pytest.warns(RuntimeWarning, match="not deterministic"):
        rows = gemmlab.judge(drifting, input_format="fp16", **SMALL)
    assert (rows["status"] == "nondeterministic").all()
    assert rows["note"].str.contains("differ bit for bit").all()


def test_judge_inputs_are_run_inputs():
    torch = _gpu_or_skip()
    seen = {}

    def capture(a, b):
        seen["A"], seen["B"] = a.double().cpu().numpy(), b.double().cpu().numpy()
        return (a @ b).float()

    gemmlab.judge(capture, input_format="bf16", sizes=[(64, 48, 80)], distributions=["normal_0_1"], seeds=[3],
                  reps=1, warmup=0)
    A, B = gemmlab.generate_problem("normal_0_1", 64, 48, 80, "bf16", 3)
    assert np.array_equal(seen["A"], A) and np.array_equal(seen["B"], B)


def test_evaluate_gpu_tensors_equals_cpu_row():
    torch = _gpu_or_skip()
    A, B = gemmlab.generate_problem("uniform_0_1", 200, 150, 300, "fp16", 11)
    At, Bt = torch.from_numpy(A).half().cuda(), torch.from_numpy(B).half().cuda()
    Ct = (At @ Bt).float()
    kw = dict(output_format="fp32", input_format="fp16", kernel="k", distribution="uniform_0_1", seed=11)
    gpu = gemmlab.evaluate(At, Bt, Ct, **kw)
    cpu = gemmlab.evaluate(A, B, Ct.cpu().numpy(), **kw)
    # Every column equal but `reference`, which names the engine that computed it (both exact).
    differ = [c for c in gemmlab.COLUMNS if c != "reference" and str(gpu[c]) != str(cpu[c])]
    assert not differ, f"GPU and CPU rows differ in {differ}"
    assert gpu["reference"].startswith("gpu_int8_ozaki+mpfr_spot") and cpu["reference"].endswith("+mpfr_spot16")
    with pytest.raises(ValueError, match="all be GPU tensors"):
        gemmlab.evaluate(At, B, Ct, **kw)


def test_rows_of_an_interrupted_run_come_back_from_its_journal(tmp_path, root):
    # GpuContextLost carries the rows finished before the GPU's context was lost, read from the run's
    # journal (engine/journal.hpp: a JSON identity line, then one CSV row per line).
    from gemmlab.gpu import _journal_rows
    header, *rows = (root / "tests" / "data" / "dry_run.csv").read_text().splitlines()
    journal = tmp_path / "x.csv.journal"
    journal.write_text(json.dumps({"gemmlab_journal": 1, "columns": header.split(",")}) + "\n" +
                       "".join(r + "\n" for r in rows[:2]))
    got = _journal_rows(journal)
    assert list(got.columns) == list(gemmlab.COLUMNS) and len(got) == 2
    assert list(got["kernel"]) == [r.split(",")[0] for r in rows[:2]]
    assert _journal_rows(tmp_path / "none.journal").empty
    e = gemmlab.GpuContextLost("lost", got, journal)
    assert isinstance(e, RuntimeError) and len(e.rows) == 2 and e.journal == journal
