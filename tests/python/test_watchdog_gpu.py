"""The watchdog and the worker processes of gemmlab.judge and gemmlab.explain, on a GPU, with callables that
fail for real (examples/bad_callables.py): a Triton kernel that spins on a flag nobody sets, a call blocked
in Python, one that returns after its limit, a Triton kernel whose assertion traps, one that stores at an
illegal address, one that raises. Each misbehaves at one size of a plan of five: its row is `timeout`,
`faulted` or `error` with the message, and the rows of the other sizes are measured as a run without it
measures them. explain on a callable that blocks on its 40th call stops there naming the call, the stages
finished before reported. A callable that cannot go to a worker (a closure) runs in this process with the
watchdog alone (in a process of its own here: a kernel that never ends holds that process's GPU).
Each test skips with its reason where there is no GPU, GPU engine, PyTorch or Triton.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import gemmlab

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
sys.path.insert(0, str(EXAMPLES))

LIMIT = 3.0  # launch_timeout: the floor of every call's limit here
SIZES = [(256, 256, k) for k in (256, 320, 384, 448, 512)]  # the third (K = 384) misbehaves
SMALL = dict(distributions=["uniform_0_1"], reps=3, warmup=1, launch_timeout=LIMIT, errors="rows")


def _torch_triton():
    ok, why = gemmlab.gpu_available()
    if not ok:
        pytest.skip(f"no GPU engine or GPU: {why}")
    pytest.importorskip("torch", reason="the callables are torch and Triton")
    pytest.importorskip("triton", reason="the callables are Triton kernels")


def _statistics(rows):
    return rows[[c for c in rows.columns if c not in gemmlab.TIMING_COLUMNS]].reset_index(drop=True)


def _five(fn, tmp_path):
    """judge on the five sizes, and on the four that behave; returns (rows of five, seconds, rows of four, seconds)."""
    t0 = time.monotonic()
    five = gemmlab.judge(fn, input_format="fp16", sizes=SIZES, out=tmp_path / "five.csv", **SMALL)
    t_five = time.monotonic() - t0
    t0 = time.monotonic()
    four = gemmlab.judge(fn, input_format="fp16", sizes=SIZES[:2] + SIZES[3:], out=tmp_path / "four.csv", **SMALL)
    t_four = time.monotonic() - t0
    assert len(five) == 5 and len(four) == 4
    meta = json.loads((tmp_path / "five.meta.json").read_text())
    assert meta["caller"]["isolation"] == "worker process", meta["caller"]
    others = five.drop(index=2).reset_index(drop=True)
    assert (others["status"] != "timeout").all() and (others["status"] != "faulted").all(), others[["status", "note"]]
    # Measured as before: every column but the timings as in the run without the misbehaving size.
    assert _statistics(others).equals(_statistics(four)), (others, four)
    print(f"{fn.__name__}: five sizes {t_five:.1f} s (third {five['status'][2]}), four {t_four:.1f} s")
    return five, t_five, four, t_four


@pytest.mark.parametrize("what", ["spin", "sleep_forever", "returns_late"])
def test_a_call_beyond_its_limit_is_a_timeout_row_and_the_rows_after_it_are_measured(what, tmp_path):
    _torch_triton()
    from bad_callables import SleepsOnK, SpinsOnK

    fn = {"spin": lambda: SpinsOnK(384, name="spins_at_384"),
          "sleep_forever": lambda: SleepsOnK(384, name="sleeps_forever_at_384"),
          "returns_late": lambda: SleepsOnK(384, seconds=1.5 * LIMIT, name="returns_late_at_384")}[what]()
    if what == "spin":
        # Its kernel compiled beforehand: the four sizes never compile it, so the five would pay a first
        # compilation in the row that hangs (H200, 2026-11-29: 27.4 s against 10.5 s + 13 s, where the
        # blocked-in-Python case, which compiles nothing, kept within its bound).
        SpinsOnK.warm()
    five, t_five, _, t_four = _five(fn, tmp_path)
    row = five.iloc[2]
    assert row["status"] == "timeout", row["note"]
    assert f"{fn.__name__} at 256x256x384" in row["note"], row["note"]
    assert "limit of 3" in row["note"], row["note"]
    if what == "sleep_forever":  # blocked in Python: the parent's watchdog names the call
        assert "call " in row["note"] and "did not finish within its limit" in row["note"], row["note"]
    if what == "returns_late":  # came back after its limit: the worker saw it, and goes on
        assert "returned after 4.5 s, beyond its limit" in row["note"], row["note"]
    # The limit, its grace (5 s) where only the parent can see it, and a new worker's start, beyond the four rows.
    grace = 5 if what == "sleep_forever" else 0
    assert t_five <= LIMIT + grace + t_four + 10, (t_five, t_four)


@pytest.mark.parametrize("what, error", [("assert", "cudaError"), ("illegal", "cudaErrorIllegalAddress"),
                                         ("raises", "raised on purpose at K = 384")])
def test_a_kernel_that_faults_or_raises_costs_its_row_only(what, error, tmp_path):
    _torch_triton()
    from bad_callables import AssertsOnK, IllegalAccessOnK, RaisesOnK

    fn = {"assert": AssertsOnK, "illegal": IllegalAccessOnK, "raises": RaisesOnK}[what](384)
    five, *_ = _five(fn, tmp_path)
    row = five.iloc[2]
    assert row["status"] == ("error" if what == "raises" else "faulted"), row["note"]
    assert error in row["note"], row["note"]


def test_explain_of_a_callable_blocked_on_its_40th_call_stops_there_with_the_stages_before(tmp_path):
    _torch_triton()
    from bad_callables import HangsOnCall

    out = tmp_path / "hang40.csv"
    t0 = time.monotonic()
    e = gemmlab.explain(HangsOnCall(40), name="hangs_on_call_40", input_format="fp16", size=128,
                        distributions=["uniform_0_1"], out=out, judge_rows=False, launch_timeout=LIMIT)
    took = time.monotonic() - t0
    print(e.summary, f"({took:.1f} s)")
    assert not e.identified
    r = e.report
    assert r["worker_stopped"] == "timeout", r
    assert "call 40 did not finish within its limit" in r["reason"], r["reason"]
    assert r["gemm_check"], "the gemm stage finished before call 40 and is reported"
    assert r["failed_stage"] in ("tree", "scheduling", "conversion", "nodes", "composition"), r["failed_stage"]
    assert r["launches"] >= 39, r["launches"]
    written = json.loads(Path(str(out).replace(".csv", ".meta.json")).read_text())
    assert written["report"]["reason"] == r["reason"]
    assert (e.rows["reason"] == r["reason"]).all() and (e.rows["identified"] == "no").all()


CHILD = textwrap.dedent("""
    import json, os, sys, torch
    sys.path.insert(0, {examples!r})
    import gemmlab
    from bad_callables import SpinsOnK
    spin = SpinsOnK(384)
    def closure(A, B, out):  # not picklable: runs in this process
        spin(A, B, out)
    seen = {{}}
    try:
        gemmlab.judge(closure, name="closure_spins_at_384", input_format="fp16", sizes={sizes!r},
                      distributions=["uniform_0_1"], reps=3, warmup=1, launch_timeout={limit}, out=sys.argv[1])
        seen["raised"] = None
    except gemmlab.GpuContextLost as e:
        seen.update(raised="GpuContextLost", message=str(e), statuses=[str(s) for s in e.rows["status"]],
                    notes=[str(n) for n in e.rows["note"]])
    print(json.dumps(seen), flush=True)
    os._exit(0)  # the spinning kernel holds this process's GPU: no teardown
""")


def test_in_process_a_spinning_kernel_is_a_timeout_row_and_resume_keeps_or_retries_it(tmp_path):
    _torch_triton()
    from bad_callables import SleepsOnK

    out = tmp_path / "c.csv"
    r = subprocess.run([sys.executable, "-c", CHILD.format(examples=str(EXAMPLES), sizes=SIZES, limit=LIMIT), str(out)],
                       capture_output=True, text=True, timeout=600, env=os.environ.copy())
    assert r.returncode == 0, r.stderr[-3000:]
    assert "runs closure_spins_at_384 in this process with the watchdog alone" in r.stderr, r.stderr[-3000:]
    seen = json.loads(r.stdout.strip().splitlines()[-1])
    assert seen["raised"] == "GpuContextLost", seen
    assert seen["statuses"] == ["no_bound", "no_bound", "timeout"], seen
    assert "did not end within its limit" in seen["notes"][2], seen
    journal = Path(f"{out}.journal")
    assert journal.exists()
    again = tmp_path / "again.csv"
    Path(f"{again}.journal").write_bytes(journal.read_bytes())  # the same interrupted run, twice
    # The same plan (the callable's name) with a callable that behaves: resume keeps the timeout row (a result)
    # and computes the two rows after it; with retry_failed the timeout row is computed again.
    behaves = SleepsOnK(999, name="closure_spins_at_384")
    kept = gemmlab.judge(behaves, input_format="fp16", sizes=SIZES, out=out, resume=True, **SMALL)
    assert list(kept["status"]) == ["no_bound", "no_bound", "timeout", "no_bound", "no_bound"], kept[["status", "note"]]
    retried = gemmlab.judge(behaves, input_format="fp16", sizes=SIZES, out=again, resume=True, retry_failed=True,
                            **SMALL)
    assert list(retried["status"]) == ["no_bound"] * 5, retried[["status", "note"]]
    # A finished CSV has no journal to retry from: said so.
    with pytest.raises(ValueError, match="retry-failed"):
        gemmlab.judge(behaves, input_format="fp16", sizes=SIZES, out=again, resume=True, retry_failed=True, **SMALL)
