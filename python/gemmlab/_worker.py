"""The worker processes of ``gemmlab.judge`` and ``gemmlab.explain``: a callable under test runs in a child
process, so that one that hangs (a kernel spinning on a flag, a call blocked in Python) or faults (an
illegal memory access, a segmentation fault) costs its row, never the caller's process.

The parent side (``worker_command``) decides whether the callable can be sent to a child and writes the
spec the child reads; the child side (``gemmlab._worker.main`` in a fresh Python, given SPEC) re-creates the callable and runs
the same C++ as in-process (``gemmlab._gpu.judge(..., serve=True)``, ``explain(..., serve=True)``), which
talks to its parent on file descriptors 3 and 4 (experiments/engine/worker_process.hpp). The parent's
watchdog stops a child silent beyond a launch's limit; the C++ parent (``gemmlab._gpu``) starts another.

A callable is sent by pickle, by reference: a function or class of an importable module, an instance of
such a class with picklable state, a ``functools.partial`` of them. One defined in a script's ``__main__``
is re-created by running the script's top level in the child, as ``multiprocessing`` does under its
"spawn" start method (``__name__`` is not ``"__main__"`` there, so ``if __name__ == "__main__":`` blocks do
not run), up to the script's first call of ``gemmlab.judge``, ``explain``, ``explain_diff`` or
``invariance``. A lambda, a closure, a callable of a notebook or of ``python -c`` cannot be sent: it runs in
the caller's process with the watchdog alone (a launch that never ends is then reported, and nothing more
runs on the GPU in that process; a call blocked in Python cannot be stopped there).
"""

from __future__ import annotations

import json
import os
import pickle
import sys
import types
from pathlib import Path
from typing import Any

#: True while a worker re-runs a script's top level to re-create a callable of its ``__main__``.
importing_main = False


class StopMainImport(BaseException):
    """Raised by gemmlab's entry points while a worker re-runs a script's top level: the callables the
    script defined before its first gemmlab call exist; nothing after it runs in the worker."""


def stop_if_importing_main() -> None:
    """Called first by judge, explain, explain_diff and invariance."""
    if importing_main:
        raise StopMainImport()


def sendable(fn: Any, framework: str, stream: int | None) -> tuple[bytes | None, str | None, str]:
    """``(pickled fn, path of the script whose __main__ defines it or None, "")`` when ``fn`` can run in a
    worker process, else ``(None, None, why not)``."""
    if framework == "jax":
        return None, None, ("JAX preallocates most of the GPU's memory in every process that uses it, so a worker "
                            "beside this one would have too little")
    if stream is not None:
        return None, None, "stream= names a stream of this process"
    try:
        data = pickle.dumps(fn, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as e:  # noqa: BLE001 - whatever pickle says is the reason
        return None, None, (f"it cannot be pickled ({type(e).__name__}: {e}); a lambda, a closure or a function "
                            "defined inside another is not importable by a new process")
    main = None
    if b"__main__" in data:
        m = sys.modules.get("__main__")
        path = getattr(m, "__file__", None)
        if not path or not Path(path).is_file():
            return None, None, ("it is defined in the __main__ of an interactive session, a notebook or python -c, "
                                "which a new process cannot re-create")
        main = str(Path(path).resolve())
    return data, main, ""


def write_spec(folder: Path, kind: str, fn_bytes: bytes, main: str | None, kwargs: dict) -> list[str]:
    """The spec a worker reads, written into ``folder``; returns the command that starts a worker."""
    spec = folder / "worker_spec.pkl"
    spec.write_bytes(pickle.dumps({"kind": kind, "fn": fn_bytes, "main": main, "sys_path": list(sys.path),
                                   "kwargs": kwargs}, protocol=pickle.HIGHEST_PROTOCOL))
    # Not `python -m gemmlab._worker`: runpy would run this file a second time as __main__ beside the
    # gemmlab._worker the package has already imported, and warn so ("found in sys.modules").
    return [sys.executable, "-c", "import sys; from gemmlab._worker import main; sys.exit(main(sys.argv))", str(spec)]


def _load_main(path: str) -> None:
    """The script's top level as the ``__main__`` its callables pickled by reference name, run up to the
    script's first gemmlab call (StopMainImport)."""
    global importing_main
    mod = types.ModuleType("__mp_main__")
    mod.__file__ = path
    mod.__builtins__ = __builtins__
    sys.modules["__main__"] = sys.modules["__mp_main__"] = mod
    code = compile(Path(path).read_text(), path, "exec")
    importing_main = True
    try:
        exec(code, mod.__dict__)  # noqa: S102 - the user's own script, as multiprocessing's spawn runs it
    except StopMainImport:
        pass
    finally:
        importing_main = False


def _tell_parent(message: dict) -> None:
    """One message on the parent's pipe (fd 4), before the C++ side has taken it over."""
    try:
        os.write(4, (json.dumps(message) + "\n").encode())
    except OSError:
        pass


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m gemmlab._worker SPEC (started by gemmlab.judge / explain, not by hand)",
              file=sys.stderr)
        return 2
    try:
        spec = pickle.loads(Path(argv[1]).read_bytes())
        sys.path[:] = spec["sys_path"]
        if spec["main"]:
            _load_main(spec["main"])
        fn = pickle.loads(spec["fn"])
    except BaseException as e:  # noqa: BLE001 - the parent says it and runs the callable in-process
        _tell_parent({"failed": f"the callable could not be re-created in a worker process: {type(e).__name__}: {e}"})
        return 1
    if spec["kind"] == "judge":
        from .gpu import _judge_in_worker
        return _end(_judge_in_worker(fn, spec["kwargs"]))
    from .explain import _explain_in_worker
    return _end(_explain_in_worker(fn, spec["kwargs"]))


def _end(rc: int) -> int:
    """``rc``; or, where a launch of the callable never ended and may still hold the GPU, the end of the process
    here (``os._exit``): Python's own exit would run the CUDA runtime's teardown, which waits for that launch, and
    the parent would stop the worker only after its 10 s of grace."""
    from . import _engine

    if _engine._gpu is not None and _engine._gpu.gpu_held_by_a_kernel():
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(rc)
    return rc


if __name__ == "__main__":
    # Run as `python -m gemmlab._worker`, this file is the module __main__; judge and explain look at
    # gemmlab._worker's importing_main, so the worker runs in that module, not in this copy.
    from gemmlab._worker import main as _main

    sys.exit(_main(sys.argv))
