"""The GPU engine, gemmlab._gpu, loaded once: ``gpu_module`` hands it to ``judge``, ``invariance``,
``explain`` and ``evaluate`` on GPU tensors, or raises ``GpuUnavailable`` saying what is missing.

Its own module, below both ``gpu.py`` and ``evaluate.py``, so that neither imports the other.
"""

from __future__ import annotations

from . import _cuda_libs


class GpuUnavailable(RuntimeError):
    """The GPU half of gemmlab cannot run here; the message says what to install or change."""


_GPU_IMPORT_ERROR: str | None = None
# Set when gemmlab._gpu is installed but the cuBLAS it links was found nowhere (_cuda_libs says what
# to install).
_GPU_MISSING_CUDA: str | None = None
try:  # the GPU half is built only where a CUDA toolkit was found at install time
    # The engine's CUDA translation units instantiate some libstdc++ templates themselves (nvcc's
    # front end), among them the static ids of locale facets. Python loads extension modules with
    # RTLD_LOCAL, so without this the module would bind to its own copies of those ids, which the
    # process's locales never registered: the first number written to a std::ostringstream in the
    # engine crashed (seen on the H100 host, 2026-11-24). With libstdc++ in the global scope first,
    # the module binds to libstdc++'s own, as the gemmlab executable does.
    import ctypes as _ctypes

    try:
        _ctypes.CDLL("libstdc++.so.6", mode=_ctypes.RTLD_GLOBAL)
    except OSError:
        pass
    # cuBLAS is not in the package: loaded from NVIDIA's pip wheels or the system's CUDA first, so
    # that the module's references to it bind to that copy.
    _cuda_libs.load()
    from . import _gpu  # type: ignore[attr-defined]
except _cuda_libs.CudaLibrariesNotFound as e:  # pragma: no cover - depends on the machine
    _gpu = None
    _GPU_MISSING_CUDA = str(e)
except ModuleNotFoundError as e:  # pragma: no cover - depends on the installation
    _gpu = None
    # not built (a CPU-only installation); a module it needs missing is a load failure
    _GPU_IMPORT_ERROR = None if e.name == f"{__package__}._gpu" else str(e)
except ImportError as e:  # pragma: no cover - depends on the installation
    _gpu = None
    _GPU_IMPORT_ERROR = str(e)  # installed, but it cannot be loaded (an undefined symbol, a missing library)


def gpu_module(device: int = 0):
    """The GPU engine, or ``GpuUnavailable`` naming what is missing: a CPU-only installation (no
    CUDA toolkit when ``pip install .`` ran), a module that cannot load, or no usable GPU."""
    if _gpu is None:
        if _GPU_MISSING_CUDA:
            raise GpuUnavailable(f"gemmlab's GPU engine needs cuBLAS, which is not part of the package: "
                                 f"{_GPU_MISSING_CUDA}")
        if _GPU_IMPORT_ERROR:
            raise GpuUnavailable(f"gemmlab's GPU engine (gemmlab._gpu) is installed but cannot be loaded: "
                                 f"{_GPU_IMPORT_ERROR}. Check that the CUDA runtime libraries (libcublas) are on the "
                                 "library path, or reinstall gemmlab on this machine: pip install --force-reinstall .")
        raise GpuUnavailable("this gemmlab was installed without its GPU engine (gemmlab._gpu): no CUDA toolkit was "
                             "found when it was built. Install the CUDA toolkit (nvcc and cuBLAS, 12.8 or newer; "
                             "/usr/local/cuda) and reinstall from the repository: pip install --force-reinstall . "
                             "(gemmlab.evaluate on numpy arrays works without it)")
    ok, what = _gpu.device_status(device)
    if not ok:
        raise GpuUnavailable(f"gemmlab's GPU engine has no usable CUDA GPU {device}: {what}")
    return _gpu


def gpu_available(device: int = 0) -> tuple[bool, str]:
    """``(True, GPU name)`` when ``judge`` can run on GPU ``device``, else ``(False, why not)``."""
    try:
        gpu_module(device)
    except GpuUnavailable as e:
        return False, str(e)
    return True, _gpu.device_status(device)[1]

