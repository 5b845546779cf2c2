"""Finding, at run time, the CUDA libraries gemmlab links but does not carry: cuBLAS.

gemmlab._gpu and the gemmlab command link cuBLAS (``CUBLAS_LIBRARIES`` of ``_build_config``, e.g.
libcublasLt.so.13 and libcublas.so.13 for CUDA 13); the CUDA runtime is linked in statically and the
driver (libcuda.so.1) is the system's. A wheel of gemmlab bundles MPFR and GMP but never cuBLAS: as
CuPy and cuda-python do, it uses the copy the machine has. The first place that has every library
wins, in this order:

1. ``GEMMLAB_CUDA_LIB_DIR``: a folder the user names (nothing else is tried);
2. a copy already loaded in this process (PyTorch loads its own first: gemmlab then shares it);
3. NVIDIA's pip wheels on ``sys.path`` (as PyTorch installs them): ``nvidia/cu13/lib`` (CUDA 13's
   ``nvidia-cublas``), ``nvidia/cublas/lib`` (CUDA 12's ``nvidia-cublas-cu12``);
4. the dynamic loader's own search: ``LD_LIBRARY_PATH``, then ldconfig's cache (``ldconfig -p``);
5. ``CUDA_HOME``, ``CUDA_PATH``, then ``/usr/local/cuda`` and ``/usr/local/cuda-<version>``: their
   ``lib64``, ``lib`` and ``targets/x86_64-linux/lib``; last, the library folder of the toolkit that
   gemmlab was built with (for a ``pip install .`` on the same machine).

When none has them, ``CudaLibrariesNotFound`` says what to install. The Python side loads them before
gemmlab._gpu (``load``); the gemmlab command gets their folder on ``LD_LIBRARY_PATH`` (``_cli.py``).
cuda-pathfinder (CuPy's finder) searches much the same places; it is not used so that the wheel needs
nothing beyond numpy and pandas on a machine without internet.
"""

from __future__ import annotations

import ctypes
import glob
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

try:
    from ._build_config import CUBLAS_LIBRARIES, CUDA_LIBRARY_DIR, CUDA_VERSION
except ImportError:  # the source tree, not an installed package: nothing to find
    CUBLAS_LIBRARIES: tuple[str, ...] = ()
    CUDA_LIBRARY_DIR = ""
    CUDA_VERSION = ""

ENV_DIR = "GEMMLAB_CUDA_LIB_DIR"

# Where NVIDIA's pip wheels put cuBLAS, below site-packages.
_PIP_LIB_DIRS = ("nvidia/cu13/lib", "nvidia/cublas/lib")


class CudaLibrariesNotFound(RuntimeError):
    """No folder has every cuBLAS library this gemmlab was built with; the message says what to install."""


@dataclass(frozen=True)
class Found:
    paths: tuple[str, ...]   # one file per library of ``names``, in load order
    source: str              # where they were found, in words
    loader_finds: bool       # the dynamic loader finds them by itself (LD_LIBRARY_PATH or ldconfig)

    @property
    def dirs(self) -> list[str]:
        return list(dict.fromkeys(os.path.dirname(p) for p in self.paths))


def _in_dir(d: str | os.PathLike, names: tuple[str, ...]) -> tuple[str, ...] | None:
    paths = tuple(os.path.join(d, n) for n in names)
    return paths if all(os.path.isfile(p) for p in paths) else None


def _loaded(names: tuple[str, ...], maps: str) -> tuple[str, ...] | None:
    """The files of ``names`` mapped into this process (``maps``: /proc/self/maps), if all are."""
    found: dict[str, str] = {}
    for line in maps.splitlines():
        parts = line.split(maxsplit=5)  # address perms offset device inode path
        if len(parts) < 6:
            continue
        path = parts[5].strip()
        base = os.path.basename(path)
        for n in names:  # libcublas.so.13 may be mapped as libcublas.so.13.1.0.3
            if n not in found and (base == n or base.startswith(n + ".")):
                found[n] = path
    return tuple(found[n] for n in names) if len(found) == len(names) else None


def _ldconfig_cache() -> dict[str, str]:
    """soname -> path from ldconfig's cache (x86-64 entries), or {} where there is no ldconfig."""
    exe = shutil.which("ldconfig") or next((p for p in ("/sbin/ldconfig", "/usr/sbin/ldconfig") if os.path.isfile(p)),
                                           None)
    if exe is None:
        return {}
    try:
        out = subprocess.run([exe, "-p"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    cache: dict[str, str] = {}
    for line in out.splitlines():
        # "\tlibcublas.so.13 (libc6,x86-64) => /usr/local/cuda-13.0/lib/libcublas.so.13"
        name, _, rest = line.strip().partition(" (")
        flags, _, path = rest.partition(") => ")
        if path and "x86-64" in flags:
            cache.setdefault(name, path)
    return cache


def _cuda_lib_dirs(env: dict[str, str] | os._Environ) -> list[str]:
    homes = [env[v] for v in ("CUDA_HOME", "CUDA_PATH") if env.get(v)]
    homes.append("/usr/local/cuda")
    major = CUDA_VERSION.split(".")[0]
    if major:
        homes += sorted(glob.glob(f"/usr/local/cuda-{major}.*"), reverse=True)
    dirs = [os.path.join(h, sub) for h in homes for sub in ("lib64", "lib", "targets/x86_64-linux/lib")]
    return dirs + ([CUDA_LIBRARY_DIR] if CUDA_LIBRARY_DIR else [])


def find(names: tuple[str, ...] | None = None, *, environ: dict[str, str] | None = None,
         search_path: list[str] | None = None, maps: str | None = None,
         ldconfig: dict[str, str] | None = None, cuda_lib_dirs: list[str] | None = None) -> Found | None:
    """Where ``names`` (default: ``CUBLAS_LIBRARIES``) are, or None when no library is needed (a
    CPU-only build). Raises ``CudaLibrariesNotFound``. The keyword arguments replace the process's
    environment, sys.path, /proc/self/maps, ldconfig's cache and the CUDA folders (for the tests)."""
    names = CUBLAS_LIBRARIES if names is None else names
    if not names:
        return None
    env = os.environ if environ is None else environ
    looked: list[str] = []

    named = env.get(ENV_DIR)
    if named:
        paths = _in_dir(named, names)
        if paths:
            return Found(paths, f"{ENV_DIR}={named}", False)
        missing = [n for n in names if not os.path.isfile(os.path.join(named, n))]
        raise CudaLibrariesNotFound(f"{ENV_DIR}={named} names a folder without {', '.join(missing)}: "
                                    f"{_what_to_install(names)}")

    if maps is None:
        try:
            maps = Path("/proc/self/maps").read_text()
        except OSError:
            maps = ""
    paths = _loaded(names, maps)
    if paths:
        return Found(paths, "already loaded in this process", False)

    for entry in sys.path if search_path is None else search_path:
        for sub in _PIP_LIB_DIRS:
            d = os.path.join(entry or ".", sub)
            paths = _in_dir(d, names)
            if paths:
                return Found(paths, f"NVIDIA's pip wheel ({d})", False)
    looked.append("NVIDIA's pip wheels (" + ", ".join(_PIP_LIB_DIRS) + " below sys.path)")

    for d in filter(None, env.get("LD_LIBRARY_PATH", "").split(":")):
        paths = _in_dir(d, names)
        if paths:
            return Found(paths, f"LD_LIBRARY_PATH ({d})", True)
    looked.append("LD_LIBRARY_PATH")
    cache = _ldconfig_cache() if ldconfig is None else ldconfig
    if all(n in cache for n in names):
        return Found(tuple(cache[n] for n in names), "the system (ldconfig)", True)
    looked.append("ldconfig's cache")

    dirs = _cuda_lib_dirs(env) if cuda_lib_dirs is None else cuda_lib_dirs
    for d in dirs:
        paths = _in_dir(d, names)
        if paths:
            return Found(paths, f"the CUDA toolkit ({d})", False)
    looked.append(", ".join(dirs) if dirs else "no CUDA toolkit folder")
    raise CudaLibrariesNotFound(f"{' and '.join(names)} not found (looked in: {'; '.join(looked)}). "
                                f"{_what_to_install(names)}")


def _what_to_install(names: tuple[str, ...]) -> str:
    major = next((n.rsplit(".so.", 1)[1] for n in names if ".so." in n), CUDA_VERSION.split(".")[0] or "?")
    pip_name = f'"nvidia-cublas>={major},<{int(major) + 1}"' if major.isdigit() and int(major) >= 13 \
        else f"nvidia-cublas-cu{major}"
    return (f"gemmlab was built with CUDA {CUDA_VERSION or major} and needs cuBLAS {major}: install NVIDIA's wheel "
            f"(pip install {pip_name}; PyTorch built for CUDA {major} brings it), or the CUDA {major} toolkit's "
            f"cuBLAS (/usr/local/cuda), or name the folder that holds them with {ENV_DIR}=/path/to/lib")


def load(names: tuple[str, ...] | None = None) -> Found | None:
    """Loads the cuBLAS libraries into this process (before gemmlab._gpu, whose references to them then
    bind to these copies); None for a CPU-only build. Raises ``CudaLibrariesNotFound``."""
    names = CUBLAS_LIBRARIES if names is None else names
    found = find(names)
    if found is not None and found.source != "already loaded in this process":
        for p in found.paths:
            try:
                ctypes.CDLL(p, mode=ctypes.RTLD_GLOBAL)
            except OSError as e:
                raise CudaLibrariesNotFound(f"{p} (found in {found.source}) cannot be loaded: {e}. "
                                            f"{_what_to_install(names)}") from e
    return found
