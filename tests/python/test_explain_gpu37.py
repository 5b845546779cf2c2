"""gemmlab.explain on the GPU, issue 37's parts: the scheduling stage on Triton split-K kernels that add
their parts with atomics, jnp.matmul (whose tree stage failed before explain waited for its own writes
of A and B), torch.compile(mode="max-autotune") held to one compiled kernel, and bad input: a callable
that raises on its fourth call, one that returns the wrong shape on some calls, and one that hits an
illegal memory access (in a process of its own: the CUDA context is lost there). The callables are
examples' (splitk_atomic.py, framework_matmuls.py, bad_callables.py). Each test skips with
its reason where there is no GPU, GPU engine, PyTorch, Triton or JAX.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import gemmlab

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
sys.path.insert(0, str(EXAMPLES))

SMALL = dict(distributions=["uniform_0_1"], reps=2, warmup=1)


def _gpu():
    ok, why = gemmlab.gpu_available()
    if not ok:
        pytest.skip(f"no GPU engine or GPU: {why}")


def _torch_triton():
    _gpu()
    torch = pytest.importorskip("torch", reason="the callables are torch and Triton")
    pytest.importorskip("triton", reason="the callables are Triton kernels")
    return torch


def _consistent_schedule(e: gemmlab.Explanation) -> dict:
    """The scheduling stage's report holds together: every trial listed with what it saw, a verdict that
    follows from them, and no bound claimed over an order never revealed."""
    s = e.report["schedule"]
    assert s["ran"], e.summary
    names = [t["perturbation"] for t in s["trials"]]
    assert names[:2] == ["repeat", "shuffled_launches"], names
    assert any(n.startswith("busy_sms_") for n in names), names
    changed = [t for t in s["trials"] if not t["not_applied"] and t["following"] < t["entries"]]
    if s["verdict"] == "unchanged":
        assert not changed and e.report["tree"]["deterministic"], s["text"]
    else:
        assert s["verdict"] == "depends", s["text"]
        assert s["exposed_by"], s["text"]
        if e.identified and any(not v["revealed"] for v in s["variants"]):
            assert e.numerics is None and "no bound covers" in s["bound_note"], s
    for col in ("scheduling", "scheduling_trials", "predicted_by_variant"):
        assert col in e.rows.columns
    assert (e.rows["scheduling"] == s["verdict"]).all()
    return s


@pytest.mark.parametrize("grid", ["split_major", "tile_major"])
def test_split_k_atomics_get_a_scheduling_verdict(grid, tmp_path):
    _torch_triton()
    from splitk_atomic import splitk_atomic

    fn = splitk_atomic(8, grid, name=f"splitk8_{grid}")
    e = gemmlab.explain(fn, name=f"splitk8_{grid}", input_format="fp16", size=(256, 256, 4096),
                        out=tmp_path / "x.csv", **SMALL)
    print(e.summary)
    s = _consistent_schedule(e)
    meta = json.loads((tmp_path / "x.meta.json").read_text())
    assert meta["report"]["schedule"]["verdict"] == s["verdict"]


def test_jnp_matmul_tree_stage_counts_whole_units(tmp_path):
    _gpu()
    pytest.importorskip("jax", reason="jnp.matmul needs JAX")
    from framework_matmuls import jax_matmuls

    for name, spec in jax_matmuls().items():
        e = gemmlab.explain(spec["fn"], name=name, framework="jax", input_format="fp32", size=256,
                            out=tmp_path / f"{name}.csv", **SMALL)
        print(e.summary)
        # The race of explain's writes of A and B with XLA's streams gave counts of no whole number of units.
        assert "did not cancel" not in e.report["reason"], e.summary
        if e.identified:
            assert (e.rows["mismatches"] == 0).all()
        else:
            assert e.report["failed_stage"] and e.report["reason"], e.summary
        if e.report["schedule"]["ran"]:  # XLA's streams cannot be moved into a green context: said so
            fewer = [t for t in e.report["schedule"]["trials"] if t["perturbation"].startswith("fewer_sms_")]
            assert fewer and all("JAX" in t["not_applied"] for t in fewer), fewer


def test_torch_compile_max_autotune_is_explained_on_one_compiled_kernel(tmp_path):
    _torch_triton()
    from framework_matmuls import CompiledMatmul

    cm = CompiledMatmul("fp16")
    M = N = K = 256
    cm.warm(M, N, K)
    before = cm.compiles()
    with cm.held():
        e = gemmlab.explain(cm, name=cm.__name__, input_format="fp16", output_format="fp16", size=(M, N, K),
                            out=tmp_path / "c.csv", **SMALL)
    print(e.summary)
    assert cm.compiles() == before, "torch.compile compiled again while explain ran"
    assert "recompil" not in e.report["reason"], e.summary
    if e.identified:
        assert (e.rows["mismatches"] == 0).all()


def test_callable_raising_on_its_fourth_call_stops_explain_there(tmp_path):
    _torch_triton()
    from bad_callables import RaisesOnCall

    e = gemmlab.explain(RaisesOnCall(4), name="raises_on_call_4", input_format="fp16", size=128,
                        out=tmp_path / "r.csv", judge_rows=False, **SMALL)
    assert not e.identified
    # call 1 is the first call, before explain's clock; calls 2 and 3 are the GEMM check's
    assert e.report["failed_stage"] == "tree", e.summary
    assert "call 4: the callable raised" in e.report["reason"], e.report["reason"]
    assert "ValueError: raised on purpose on call 4" in e.report["reason"], e.report["reason"]
    assert e.numerics is None
    assert (tmp_path / "r.csv").exists()


def test_judge_keeps_the_rows_before_a_raising_call(tmp_path):
    _torch_triton()
    from bad_callables import RaisesOnCall

    # Each row: one warm-up, two timed launches and one perturbed launch: call 6 is the second row's.
    out = tmp_path / "j.csv"
    with pytest.raises(gemmlab.JudgeError) as e:
        gemmlab.judge(RaisesOnCall(6), name="raises_on_call_6", input_format="fp16", sizes=[128],
                      distributions=["uniform_0_1", "normal_0_1"], reps=2, warmup=1, out=out)
    rows = e.value.rows
    assert rows["status"].iloc[1] == "error" and rows["status"].iloc[0] != "error", rows[["status", "note"]]
    # the exception as Python prints it: its traceback, ending in the type and message
    assert "call 6: the callable raised" in rows["note"].iloc[1], rows["note"].iloc[1]
    assert "ValueError: raised on purpose on call 6" in rows["note"].iloc[1], rows["note"].iloc[1]
    assert len(gemmlab.load_results(out)) == 2


def test_wrong_shape_on_some_calls_is_never_identified(tmp_path):
    _torch_triton()
    from bad_callables import WrongShapeEvery

    e = gemmlab.explain(WrongShapeEvery(5), name="wrong_shape_every_5", input_format="fp16", size=128,
                        out=tmp_path / "w.csv", judge_rows=False, **SMALL)
    assert not e.identified
    assert "returned a tensor of shape (128, 127)" in e.report["reason"], e.summary
    assert "call 5:" in e.report["reason"]


CHILD = textwrap.dedent("""
    import json, os, sys
    sys.path.insert(0, {examples!r})
    import gemmlab
    from bad_callables import illegal_access_on_call
    what, out = sys.argv[1], sys.argv[2]
    seen = {{}}
    try:
        if what == "judge":
            gemmlab.judge(illegal_access_on_call(6), name="illegal_access", input_format="fp16", sizes=[128],
                          distributions=["uniform_0_1", "normal_0_1"], reps=2, warmup=1, out=out)
        else:
            gemmlab.explain(illegal_access_on_call(3), name="illegal_access", input_format="fp16", size=128,
                            distributions=["uniform_0_1"], out=out)
        seen["raised"] = None
    except gemmlab.GpuContextLost as e:
        seen.update(raised="GpuContextLost", message=str(e), rows=len(e.rows),
                    statuses=[str(s) for s in e.rows["status"]] if len(e.rows) else [],
                    journal=str(e.journal) if e.journal else None)
    print(json.dumps(seen), flush=True)
    os._exit(0)  # the process's CUDA context is lost: no teardown of the frameworks' GPU state
""")


@pytest.mark.parametrize("what", ["judge", "explain"])
def test_illegal_memory_access_is_reported_and_earlier_rows_kept(what, tmp_path):
    _torch_triton()
    out = tmp_path / f"{what}.csv"
    r = subprocess.run([sys.executable, "-c", CHILD.format(examples=str(EXAMPLES)), what, str(out)],
                       capture_output=True, text=True, timeout=600, env=os.environ.copy())
    assert r.returncode == 0, r.stderr[-3000:]
    seen = json.loads(r.stdout.strip().splitlines()[-1])
    assert seen["raised"] == "GpuContextLost", seen
    assert "cudaErrorIllegalAddress" in seen["message"] or "illegal" in seen["message"].lower(), seen
    assert "new process" in seen["message"], seen
    if what == "judge":
        # Row 1 (calls 1-4) was finished before call 6 faulted: kept, in the exception and in the journal, with
        # the faulted row 2 (a result: resume goes on after it). The closure ran in this process.
        assert seen["rows"] == 2 and seen["statuses"][0] not in ("error", "faulted"), seen
        assert seen["statuses"][1] == "faulted", seen
        assert seen["journal"] and Path(seen["journal"]).exists(), seen
        assert not out.exists(), "a CSV was written for a run that did not finish"
    else:
        import pandas as pd
        written = pd.read_csv(out, keep_default_na=False)  # explain's CSV (not a run CSV)
        assert len(written) == 1 and written["identified"].iloc[0] == "no"
        assert "call 3" in written["reason"].iloc[0] and "new process" in written["reason"].iloc[0]
