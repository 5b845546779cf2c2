"""The ``gemmlab`` command of the Python package (the console script of pyproject.toml).

The command itself is the root build's gemmlab executable, installed as gemmlab/_bin/gemmlab (every
kernel; the same main as ``build/gemmlab``). It does not link cuBLAS or the driver: it loads them when a
command first launches a kernel (kernels/common/cuda_libraries.hpp), so ``list``, ``run --dry-run``,
``inputs``, ``evaluate``, ``tc-eval`` and the rest that launch nothing run without them. This entry finds
cuBLAS where the executable would not look by itself (``_cuda_libs``: NVIDIA's pip wheels) and puts its
folder on LD_LIBRARY_PATH, then replaces this process by the executable, so that signals, exit codes and
output are the command's own. Where cuBLAS is found nowhere the executable still runs, and a command
that needs it says what to install. ``gemmlab plot`` is drawn here, in Python (``figures.py``).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from . import _cuda_libs

EXE = Path(__file__).resolve().parent / "_bin" / "gemmlab"


def command_environment(found: _cuda_libs.Found | None, environ: dict[str, str]) -> dict[str, str]:
    """The environment to run the executable in: ``environ`` with the cuBLAS folders first on
    LD_LIBRARY_PATH unless the dynamic loader finds them by itself."""
    env = dict(environ)
    if found is not None and not found.loader_finds:
        old = [d for d in env.get("LD_LIBRARY_PATH", "").split(":") if d]
        env["LD_LIBRARY_PATH"] = ":".join(found.dirs + [d for d in old if d not in found.dirs])
    return env


def main() -> None:
    if sys.argv[1:2] == ["plot"]:
        from .figures import main as plot_main

        sys.exit(plot_main(sys.argv[2:]))
    if not EXE.is_file():
        why = ("it was built with GEMMLAB_PYTHON_CLI=OFF" if _cuda_libs.CUDA_VERSION
               else "it was built without a CUDA toolkit")
        sys.stderr.write(f"gemmlab: this installation of the gemmlab package has no gemmlab command ({EXE} is "
                         f"missing): {why}. Install the gemmlab wheel (pip install gemmlab-*.whl), or build on a "
                         "machine with the CUDA toolkit (nvcc): pip install --force-reinstall . (the Python CPU API "
                         "works without it)\n")
        sys.exit(2)
    try:
        found = _cuda_libs.find()
    except _cuda_libs.CudaLibrariesNotFound:
        found = None  # the executable says what to install when a command needs cuBLAS
    env = command_environment(found, dict(os.environ))
    # argv[0] is "gemmlab", as typed: the command line is recorded in each run's metadata.
    os.execve(EXE, ["gemmlab", *sys.argv[1:]], env)


if __name__ == "__main__":
    main()
