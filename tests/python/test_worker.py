"""Which callables gemmlab.judge and explain can send to a worker process (gemmlab._worker), and how a
callable of a script's __main__ is re-created there: the script's top level runs up to its first gemmlab
call, which stops it. No GPU needed."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

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
    read, write = __import__("os").pipe()
    r = subprocess.run([sys.executable, "-c", f"import os; os.dup2({write}, 4); import runpy, sys; "
                        f"sys.argv = ['x', {str(spec)!r}]; runpy.run_module('gemmlab._worker', run_name='__main__')"],
                       pass_fds=(write,), capture_output=True, text=True, timeout=120)
    __import__("os").close(write)
    said = __import__("os").read(read, 65536).decode()
    assert r.returncode == 1, r.stderr
    assert json.loads(said.splitlines()[0])["failed"].startswith("the callable could not be re-created in a worker")


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
