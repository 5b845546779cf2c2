"""Which callables gemmlab.judge and explain can send to a worker process (gemmlab._worker), how a callable
of a script's __main__ is re-created there (the script's top level runs up to its first gemmlab call, which
stops it), and explain's parent (gemmlab._gpu.explain_isolated) with fake workers that block in a call, die,
or cannot start: the report stops at the stage in progress, naming the call and the limit or the signal,
with the stages finished before. No GPU needed."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pandas as pd
import pytest

import gemmlab
from gemmlab import _worker
from gemmlab.formats import format_info


def test_a_module_function_goes_by_reference_and_a_lambda_or_closure_does_not():
    data, main, why = _worker.sendable(format_info, "torch", None)
    assert why == "" and main is None
    assert pickle.loads(data) is format_info
    _, _, why = _worker.sendable(lambda a, b: a @ b, "torch", None)
    assert "cannot be pickled" in why and "lambda" in why

    def closure(a, b):
        return a @ b

    assert "cannot be pickled" in _worker.sendable(closure, "torch", None)[2]


def test_jax_and_an_explicit_stream_stay_in_this_process():
    assert "JAX preallocates" in _worker.sendable(format_info, "jax", None)[2]
    assert "stream" in _worker.sendable(format_info, "torch", 1234)[2]


def test_a_scripts_main_callable_is_re_created_by_its_top_level_up_to_the_first_gemmlab_call(tmp_path):
    script = tmp_path / "user_script.py"
    script.write_text(textwrap.dedent("""
        import gemmlab
        BEFORE = "ran"
        def my_matmul(a, b):
            return "my_matmul's result"
        gemmlab.judge(my_matmul, input_format="fp16")
        AFTER = "ran too"
        if __name__ == "__main__":
            raise SystemExit("the __main__ block must not run in a worker")
    """))
    saved = {k: sys.modules.get(k) for k in ("__main__", "__mp_main__")}
    try:
        _worker._load_main(str(script))
        main = sys.modules["__main__"]
        assert main.BEFORE == "ran"
        assert main.my_matmul(1, 2) == "my_matmul's result"
        assert not hasattr(main, "AFTER"), "the top level stops at the first gemmlab call"
        assert _worker.importing_main is False
    finally:
        for k, m in saved.items():
            if m is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = m


def test_a_script_callable_is_sent_with_its_scripts_path_and_an_interactive_one_is_not(tmp_path):
    script = tmp_path / "sender.py"
    script.write_text(textwrap.dedent("""
        import json, sys
        from gemmlab import _worker
        def mine(a, b):
            return a @ b
        data, main, why = _worker.sendable(mine, "torch", None)
        print(json.dumps({"main": main, "why": why, "pickled": data is not None}))
    """))
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    seen = json.loads(r.stdout.strip().splitlines()[-1])
    assert seen == {"main": str(script.resolve()), "why": "", "pickled": True}
    r = subprocess.run([sys.executable, "-c", script.read_text()], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    seen = json.loads(r.stdout.strip().splitlines()[-1])
    assert seen["pickled"] is False and "python -c" in seen["why"], seen


def test_the_worker_says_why_it_cannot_re_create_a_callable(tmp_path):
    spec = tmp_path / "spec.pkl"
    spec.write_bytes(pickle.dumps({"kind": "judge", "fn": b"not a pickle", "main": None, "sys_path": list(sys.path),
                                   "kwargs": {}}))
    read, write = os.pipe()
    r = subprocess.run([sys.executable, "-c", f"import os; os.dup2({write}, 4); import runpy, sys; "
                        f"sys.argv = ['x', {str(spec)!r}]; runpy.run_module('gemmlab._worker', run_name='__main__')"],
                       pass_fds=(write,), capture_output=True, text=True, timeout=120)
    os.close(write)
    said = os.read(read, 65536).decode()
    assert r.returncode == 1, r.stderr
    assert json.loads(said.splitlines()[0])["failed"].startswith("the callable could not be re-created in a worker")


def test_the_workers_command_starts_it_without_runpys_warning(tmp_path):
    # The command write_spec gives the C++ side, run as it runs it: the worker reads its spec, says on
    # fd 4 why it cannot re-create the callable, and prints nothing else (python -m printed runpy's
    # "'gemmlab._worker' found in sys.modules" RuntimeWarning in every worker).
    argv = _worker.write_spec(tmp_path, "judge", b"not a pickle", None, {})
    read, write = os.pipe()
    exec_on_fd4 = f"import os; os.dup2({write}, 4); os.execv({argv[0]!r}, {argv!r})"
    r = subprocess.run([sys.executable, "-c", exec_on_fd4], pass_fds=(write,), capture_output=True, text=True,
                       timeout=120)
    os.close(write)
    said = os.read(read, 65536).decode()
    assert r.returncode == 1, r.stderr
    assert json.loads(said.splitlines()[0])["failed"].startswith("the callable could not be re-created in a worker")
    assert "RuntimeWarning" not in r.stderr and "found in sys.modules" not in r.stderr, r.stderr


@pytest.mark.parametrize("entry", ["judge", "explain", "explain_diff", "invariance"])
def test_every_entry_point_stops_a_scripts_top_level_in_a_worker(entry):
    _worker.importing_main = True
    try:
        with pytest.raises(_worker.StopMainImport):
            fn = getattr(gemmlab, entry)
            fn(format_info, format_info, input_format="fp16") if entry == "explain_diff" else fn(format_info,
                                                                                                   input_format="fp16")
    finally:
        _worker.importing_main = False


FAKE_EXPLAIN_WORKER = textwrap.dedent("""
    # A worker of gemmlab.explain that reports two stages begun, then blocks in its call 4 (or dies, or
    # never gets ready), speaking the protocol of experiments/engine/worker_process.hpp on fd 4.
    import json, os, signal, sys, time
    how, ncols = sys.argv[1], int(sys.argv[2])
    def send(m):
        os.write(4, (json.dumps(m) + "\\n").encode())
    if how == "no_start":
        send({"failed": "the callable could not be re-created in a worker process: told so"})
        sys.exit(1)
    send({"ready": {"explain": "fake"}})
    def stage(name, launches, gemm_check, tail):
        report = {"identified": False, "failed_stage": name, "reason": "", "gemm_check": gemm_check,
                  "numerics": None, "behaves_like": [], "schedule": {"verdict": ""}, "launches": launches}
        send({"stage": {"stage": name, "report": report, "row": [f"c{i}" for i in range(ncols)],
                        "summary_tail": tail, "launches": launches}})
    def call(n):
        send({"arm": {"kernel": "fake", "size": "64x64x64", "limit": 0.3}})
        send({"beat": f"call {n}"})
    stage("gemm", 0, "", "")
    for n in (1, 2, 3):
        call(n)
        send({"disarm": True})
    stage("tree", 3, "C = A B on 3 calls", "  gemm: C = A B on 3 calls\\n")
    call(4)
    if how == "crash":
        os.kill(os.getpid(), signal.SIGSEGV)
    time.sleep(120)
""")


def _explain_columns(root: Path) -> list[str]:
    from test_docs import documented  # noqa: PLC0415 - the docs' explain columns, in the writer's order
    return documented(root / "docs" / "csv.md", "<!-- columns: explain -->")


@pytest.mark.parametrize("how", ["hang", "crash"])
def test_an_explain_worker_that_stops_answering_leaves_the_stages_it_finished(how, tmp_path, root):
    gpu = gemmlab._engine._gpu
    if gpu is None:
        pytest.skip("this gemmlab has no GPU engine module (gemmlab._gpu)")
    sys.path.insert(0, str(root / "tests" / "python"))
    cols = _explain_columns(root)
    fake = tmp_path / "fake_worker.py"
    fake.write_text(FAKE_EXPLAIN_WORKER)
    out = tmp_path / "x.csv"
    t0 = time.monotonic()
    text = gpu.explain_isolated([sys.executable, str(fake), how, str(len(cols))], "fake", 64, 64, 64, 1, 0, str(out),
                                "{}", "gemmlab.explain fake", grace_seconds=0.5)
    took = time.monotonic() - t0
    r = json.loads(text)
    assert r["failed_stage"] == "tree" and r["oracle_lost"] is True
    assert r["gemm_check"] == "C = A B on 3 calls", "the stage finished before is reported"
    assert r["launches"] == 4, r["launches"]
    if how == "hang":
        assert r["worker_stopped"] == "timeout"
        assert r["reason"].startswith("fake at 64x64x64: call 4 did not finish within its limit of 0.3 s (and 0.5 s "
                                      "of grace)"), r["reason"]
        assert took < 30, took
    else:
        assert r["worker_stopped"] == "faulted"
        assert r["reason"] == "the worker process running fake (call 4) was killed by signal 11 (Segmentation fault)", r
    assert r["summary"] == f"UNIDENTIFIED (tree: {r['reason']})\n  gemm: C = A B on 3 calls\n"
    row = pd.read_csv(out, keep_default_na=False, dtype=str)
    assert list(row.columns) == cols and len(row) == 1
    assert row["failed_stage"][0] == "tree" and row["reason"][0] == r["reason"] and row["launches"][0] == "4"
    assert row[cols[0]][0] == "c0", "the other fields are the worker's row"
    meta = json.loads((tmp_path / "x.meta.json").read_text())
    assert meta["report"]["reason"] == r["reason"]


def test_an_explain_worker_that_cannot_start_says_why(tmp_path):
    gpu = gemmlab._engine._gpu
    if gpu is None:
        pytest.skip("this gemmlab has no GPU engine module (gemmlab._gpu)")
    fake = tmp_path / "fake_worker.py"
    fake.write_text(FAKE_EXPLAIN_WORKER)
    with pytest.raises(gpu.WorkerStartFailed, match="told so"):
        gpu.explain_isolated([sys.executable, str(fake), "no_start", "3"], "fake", 64, 64, 64, 1, 0, "", "{}", "x")


def test_a_worker_takes_the_callers_torch_numerics_switches():
    torch = pytest.importorskip("torch", reason="torch's switches")
    from gemmlab.gpu import _take_torch_state, _torch_state

    before = _torch_state()
    try:
        torch.backends.cuda.matmul.allow_tf32 = not before["allow_tf32"]
        wanted = _torch_state()
        torch.backends.cuda.matmul.allow_tf32 = before["allow_tf32"]  # as a fresh worker has it
        _take_torch_state(wanted)
        assert _torch_state() == wanted
    finally:
        _take_torch_state(before)


def test_a_worker_ends_normally_unless_a_launch_still_holds_the_gpu():
    # Nothing launched in this process: the GPU engine (where installed) holds nothing, and _end returns the code
    # for Python's own exit. (A launch that never ends sets it: tests/python/test_watchdog_gpu.py on a GPU.)
    from gemmlab import _engine

    if _engine._gpu is not None:
        assert _engine._gpu.gpu_held_by_a_kernel() is False
    assert _worker._end(3) == 3
    assert _worker._end(0) == 0
