"""Judge any GEMM callable on the GPU: ``gemmlab.judge(fn, ...)``.

gemmlab makes the inputs on the GPU (bit for bit those of ``gemmlab run``), hands them to ``fn`` as
tensors of your framework (torch, CuPy or JAX, through DLPack: no copy), times ``fn`` with gemmlab's
protocol (warm-up, L2 flush and NaN-poisoned output before every repetition, CUDA events on your
stream, every repetition kept), computes the exact reference and every statistic on the GPU, checks
that ``fn`` left A and B alone and gave the same bits on its first and last call, and returns the rows
``gemmlab run`` writes, as a typed DataFrame with exactly its columns. Everything runs in the same
C++ as ``gemmlab run`` (its engine, journal and report layer), so rows compare with ``gemmlab run``'s
built-in kernels on the same seeds, and a run with ``out=`` is journaled and resumable.

Two call styles: ``fn(A, B) -> C`` (``style="return"``) and ``fn(A, B, out)`` writing into gemmlab's
NaN-poisoned C (``style="out"``, the only style that catches unwritten entries). ``"auto"`` picks by
the number of parameters.
"""

from __future__ import annotations

import inspect
import json
import os
import shlex
import sys
import tempfile
import warnings
from collections.abc import Callable, Iterable, Sequence
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any, Literal, NamedTuple

import pandas as pd

from . import _engine, _worker
from ._checks import ACC_ROUNDING, check_format
from ._engine import GpuUnavailable, gpu_available, gpu_module
from .results import load_results

Framework = Literal["torch", "cupy", "jax"]
Style = Literal["auto", "return", "out"]


class JudgeError(RuntimeError):
    """Some rows of a judged callable are errors (the callable raised, returned something that is not
    C, or wrote into A or B). ``rows`` holds the whole DataFrame, error rows included."""

    def __init__(self, message: str, rows: pd.DataFrame):
        super().__init__(message)
        self.rows = rows


class GpuContextLost(RuntimeError):
    """With the callable in this process (not in a worker: ``isolate``), the GPU reported an error after
    which nothing more runs on it here (an illegal memory access, a misaligned address, a trap in a kernel),
    or a launch never ended within its limit: the message names the callable, the call and what to do. The
    rows finished are kept, that one's included (status ``faulted`` or ``timeout``): ``rows`` (a DataFrame,
    possibly empty; from explain, empty: its judging had not begun) and, where the run wrote files,
    ``journal`` (the ``<out>.csv.journal`` that ``resume=True`` continues from in a new process).
    ``explanation``: gemmlab.explain's report up to where it stopped, with the stages finished before (its
    CSV is written, and is the explanation's ``rows``)."""

    def __init__(self, message: str, rows: pd.DataFrame | None = None, journal: Path | None = None,
                 explanation: Any = None):
        super().__init__(message)
        self.rows = rows if rows is not None else pd.DataFrame()
        self.journal = journal
        self.explanation = explanation


# --- frameworks -----------------------------------------------------------------------------------

def _torch_adapter(input_format: str, output_format: str):
    import torch

    fp8 = {"e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2}
    view_in = (lambda t: t.view(fp8[input_format])) if input_format in fp8 else (lambda t: t)
    view_out = (lambda t: t.view(fp8[output_format])) if output_format in fp8 else (lambda t: t)

    def one(r):
        if not isinstance(r, torch.Tensor):
            return r
        r = r.detach()
        # DLPack has no float8 type in every torch: an fp8 C crosses as its raw bytes.
        return r.view(torch.uint8) if r.dtype in (torch.float8_e4m3fn, torch.float8_e5m2) else r

    def out_of(r):
        return tuple(one(x) for x in r) if isinstance(r, tuple) else one(r)

    return view_in, view_out, out_of


def _cupy_adapter(input_format: str, output_format: str):
    # CuPy has no bfloat16 or float8 dtypes: those operands arrive as their raw bits (uint16 / uint8).
    return (lambda t: t), (lambda t: t), (lambda r: r)


def _jax_adapter(input_format: str, output_format: str):
    import jax
    import jax.numpy as jnp

    fp8 = {"e4m3": jnp.float8_e4m3fn, "e5m2": jnp.float8_e5m2}
    view_in = (lambda t: jax.lax.bitcast_convert_type(t, fp8[input_format])) if input_format in fp8 else (lambda t: t)

    def out_of(r):
        r.block_until_ready()  # XLA runs on its own streams: the launch ends when C is ready
        return r

    return view_in, (lambda t: t), out_of


_ADAPTERS = {"torch": _torch_adapter, "cupy": _cupy_adapter, "jax": _jax_adapter}


def _stream_switch(framework: str, base: int | None, device: int) -> Callable[[int], Any]:
    """``on(stream)``: a context in which ``stream`` (an integer cudaStream_t; 1 the legacy default
    stream) is the framework's current stream. gemmlab asks for another stream than the caller's for a
    schedule perturbation (a green context's: fewer SMs); for the caller's own, nothing changes."""
    def same(stream: int) -> bool:
        return base is None or stream == base or (stream == 1 and base == 0)

    if framework == "torch":
        import torch
        cache: dict[int, Any] = {}

        def on(stream: int):
            if same(stream):
                return nullcontext()
            if stream not in cache:
                cache[stream] = torch.cuda.ExternalStream(stream, device=torch.device("cuda", device))
            return torch.cuda.stream(cache[stream])
        return on
    if framework == "cupy":
        import cupy
        cache2: dict[int, Any] = {}

        def on(stream: int):
            if same(stream):
                return nullcontext()
            if stream not in cache2:
                cache2[stream] = cupy.cuda.ExternalStream(stream, device)
            return cache2[stream]
        return on

    def on(stream: int):  # jax: XLA's streams; gemmlab never moves them (it refuses fewer_sms instead)
        return nullcontext()
    return on


def _current_stream(framework: str, device: int) -> int | None:
    """The caller's current stream (an integer handle; 0 is the legacy default stream)."""
    if framework == "torch":
        import torch
        return int(torch.cuda.current_stream(device).cuda_stream)
    if framework == "cupy":
        import cupy
        with cupy.cuda.Device(device):
            return int(cupy.cuda.get_current_stream().ptr)
    return None  # jax: timed by the host clock around fn and block_until_ready


def framework_metadata(framework: str) -> dict[str, Any]:
    """What decides a framework kernel's numerics, for the run's metadata: versions, TF32 and
    reduced-precision flags, cuBLAS workspace settings."""
    meta: dict[str, Any] = {"python": sys.version.split()[0], "framework": framework,
                            "env": {k: os.environ.get(k) for k in ("CUBLAS_WORKSPACE_CONFIG", "CUBLASLT_WORKSPACE_SIZE",
                                                                   "NVIDIA_TF32_OVERRIDE", "TRITON_F32_DEFAULT")}}
    for mod in ("torch", "triton", "cupy", "jax", "numpy"):
        m = sys.modules.get(mod)
        if m is not None:
            meta[f"{mod}_version"] = getattr(m, "__version__", "unknown")
    torch = sys.modules.get("torch")
    if torch is not None:
        mm = torch.backends.cuda.matmul
        meta["torch"] = {
            "allow_tf32": bool(mm.allow_tf32),
            "allow_fp16_reduced_precision_reduction": bool(mm.allow_fp16_reduced_precision_reduction),
            "allow_bf16_reduced_precision_reduction": bool(mm.allow_bf16_reduced_precision_reduction),
            "float32_matmul_precision": torch.get_float32_matmul_precision(),
            "cudnn_allow_tf32": bool(torch.backends.cudnn.allow_tf32),
            "cuda": torch.version.cuda,
            "deterministic_algorithms": bool(torch.are_deterministic_algorithms_enabled()),
        }
    return meta


def _torch_state() -> dict[str, Any] | None:
    """The torch settings that decide a matmul's numerics in this process (framework_metadata records them),
    for a worker process to take: None where torch is not imported."""
    return framework_metadata("torch").get("torch") if "torch" in sys.modules else None


def _take_torch_state(state: dict[str, Any] | None) -> None:
    """In a worker process: the caller's torch settings (``_torch_state``), so that ``fn`` computes what it
    computes in the caller's process (a TF32 switch set before judge, say)."""
    if not state:
        return
    import torch
    torch.set_float32_matmul_precision(state["float32_matmul_precision"])
    mm = torch.backends.cuda.matmul
    mm.allow_tf32 = state["allow_tf32"]
    mm.allow_fp16_reduced_precision_reduction = state["allow_fp16_reduced_precision_reduction"]
    mm.allow_bf16_reduced_precision_reduction = state["allow_bf16_reduced_precision_reduction"]
    torch.backends.cudnn.allow_tf32 = state["cudnn_allow_tf32"]
    torch.use_deterministic_algorithms(state["deterministic_algorithms"])


def _style(fn: Callable, style: Style) -> str:
    if style in ("return", "out"):
        return style
    if style != "auto":
        raise ValueError(f"style must be 'auto', 'return' or 'out', got {style!r}")
    try:
        params = [p for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
                  and p.name not in FORM_KEYWORDS + QUANTIZED_KEYWORDS]
    except (TypeError, ValueError):
        return "return"
    return "out" if len(params) >= 3 else "return"


#: The keyword arguments a callable judged on a form receives (only those of the form's parts): ``C0`` and
#: ``bias`` tensors, ``alpha``, ``beta`` and ``scale`` floats, and ``offs`` (a grouped form: int32 row ends of
#: the groups on the GPU, as ``torch._grouped_mm`` takes them).
FORM_KEYWORDS = ("C0", "bias", "alpha", "beta", "scale", "offs")

#: The keyword arguments a quantized callable receives beside A and B (only those its recipe has):
#: ``a_scale`` / ``b_scale`` (block scales), ``a_zero`` / ``b_zero`` (uint4 zeros), ``a_tensor_scale`` /
#: ``b_tensor_scale`` (NVFP4's fp32 tensor scales, floats). Layouts: docs/python.md, quantized forms.
QUANTIZED_KEYWORDS = ("a_scale", "b_scale", "a_zero", "b_zero", "a_tensor_scale", "b_tensor_scale")

#: Short names of the quantized forms judge takes as ``input_format`` (each a recipe of
#: reference/quantized_recipe.hpp; any recipe's own name is taken too, e.g. ``"mxfp4_x_bf16"``).
QUANTIZED_ALIASES = {"int8": "int8_rowwise", "mxfp8": "mxfp8_e4m3"}


def quantized_recipe(input_format: str, group_size: int | None = None) -> str | None:
    """The quantized recipe ``input_format`` names (``None`` for a plain format such as ``"bf16"``):
    ``"mxfp4"``, ``"mxfp8_e4m3"``, ``"nvfp4"``, ``"int8"`` (``int8_rowwise``), ``"int4_weight_only"`` (bf16
    activations times uint4 weights with a bf16 scale and zero per ``group_size`` of K:
    ``bf16_x_uint4_g<group_size>``), or any recipe's name. ValueError for a bad name or group size."""
    from . import _core  # noqa: PLC0415
    if not isinstance(input_format, str):
        raise ValueError(f"input_format must be a string, got {input_format!r}")
    if input_format in _core.format_names():
        if group_size is not None:
            raise ValueError("group_size is for input_format='int4_weight_only' (or a recipe with groups)")
        return None
    if input_format == "int4_weight_only":
        g = 128 if group_size is None else group_size
        if g not in (32, 64, 128, 256):
            raise ValueError(f"group_size must be 32, 64, 128 or 256 (a group of K sharing one scale and zero), got {g!r}")
        return f"bf16_x_uint4_g{g}"
    if group_size is not None:
        raise ValueError("group_size is for input_format='int4_weight_only'; a recipe names its groups (uint4_g128)")
    name = QUANTIZED_ALIASES.get(input_format, input_format)
    try:
        return _core.canonical_quant_recipe(name)
    except ValueError as e:
        raise ValueError(f"input_format {input_format!r} is neither a gemmlab format ({', '.join(_core.format_names())}) "
                         f"nor a quantized form ({', '.join(['mxfp4', 'mxfp8_e4m3', 'nvfp4', 'int8', 'int4_weight_only'])}, "
                         f"or a recipe): {e}") from None


def form_text(form: str | None = None, *, alpha: float | None = None, beta: float | None = None,
              c0: str | None = None, bias: str | tuple[str, str] | None = None, batch: int | None = None,
              groups: Sequence[int | str] | None = None, scale: float | None = None) -> str:
    """The canonical text of a form (the CSV's ``form`` column, ``gemmlab run --form``): ``form`` (text) and the
    keyword parts together, each given once. ``bias`` is ``"column:DIST"``, ``"row:DIST"`` or ``(kind, DIST)``;
    ``groups`` the rows of each group, the last may be ``"*"`` (the rest of M). Raises ValueError naming a part
    that is wrong. The text is read by the same C++ as ``gemmlab run``'s."""
    parts = [form] if form and form != "plain" else []
    if batch is not None:
        parts.append(f"batch={int(batch)}")
    if groups is not None:
        parts.append("groups=" + "+".join(str(g) for g in groups))
    if alpha is not None:
        parts.append(f"alpha={float(alpha)!r}")
    if beta is not None:
        parts.append(f"beta={float(beta)!r}")
    if c0 is not None:
        parts.append(f"c0={c0}")
    if bias is not None:
        parts.append("bias=" + (bias if isinstance(bias, str) else f"{bias[0]}:{bias[1]}"))
    if scale is not None:
        parts.append(f"scale={float(scale)!r}")
    from . import _core  # noqa: PLC0415 - the CPU half always exists
    return _core.form_name(",".join(parts) or "plain")


def _sizes(sizes: Iterable[int | Sequence[int]]) -> list[tuple[int, int, int]]:
    out = []
    for z in sizes:
        t = (int(z),) * 3 if isinstance(z, int) else tuple(int(v) for v in z)
        if len(t) != 3 or min(t) <= 0:
            raise ValueError(f"a size is M, N, K (positive) or one integer for a cube; got {z!r}")
        out.append(t)
    if not out:
        raise ValueError("give at least one size")
    return out


class _Prepared(NamedTuple):
    kernel: str          # the CSV's kernel column
    how: str             # "return" or "out"
    launcher: Callable   # launcher(A, B, C_or_None, stream, form keywords) for the C++ side
    input_format: str
    output_format: str
    stream: int | None
    caller: dict[str, Any]


def _prepare(fn: Callable, name: str | None, framework: str, style: Style, input_format: str, output_format: str,
             accumulation: str, device: int, stream: int | None, judged_by: str,
             quantized: str | None = None) -> _Prepared:
    """What judge and invariance check and build alike: the launcher, the stream, the caller's metadata.
    ``quantized``: a quantized callable's recipe (its A, B and keyword tensors are viewed by their types)."""
    if accumulation not in ACC_ROUNDING:
        raise ValueError(f"accumulation {accumulation!r} is not known; valid: {', '.join(ACC_ROUNDING)}")
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    if framework not in _ADAPTERS:
        raise ValueError(f"framework must be one of {', '.join(_ADAPTERS)}, got {framework!r}")
    output_format = check_format(output_format, "output_format")
    if output_format not in ("fp32", "fp16", "bf16", "e4m3", "e5m2"):
        raise ValueError(f"output_format must be fp32, fp16, bf16, e4m3 or e5m2 for a GPU tensor, got {output_format!r}")
    if quantized:
        input_format = "fp64"  # the numerics' input: the dequantized operands, exact in binary64
    else:
        input_format = check_format(input_format, "input_format")
        if input_format not in ("fp32", "tf32", "fp16", "bf16", "e4m3", "e5m2"):
            raise ValueError(f"input_format must be fp32, tf32, fp16, bf16, e4m3 or e5m2 (or a quantized form: "
                             f"mxfp4, mxfp8_e4m3, nvfp4, int8, int4_weight_only), got {input_format!r}")
    kernel = name or getattr(fn, "__name__", None) or "callable"
    if kernel == "<lambda>":
        raise ValueError("a lambda has no name: pass name= (it becomes the CSV's kernel column)")
    how = _style(fn, style)
    if framework == "jax" and how == "out":
        raise ValueError("JAX arrays are immutable: use style='return' (fn(A, B) -> C) with framework='jax'")
    view_in, view_out, out_of = _ADAPTERS[framework]("fp32" if quantized else input_format, output_format)
    if quantized:
        view_a, view_b, view_kw = _quantized_views(framework, quantized)
    else:
        view_a = view_b = view_in
        view_kw = lambda kw: kw  # noqa: E731
    base = _current_stream(framework, device) if stream is None else stream
    on = _stream_switch(framework, base, device)

    # kw: a form's parts (C0, bias, alpha, beta, scale, offs), passed to fn as keyword arguments; empty for C = A B.
    if how == "return":
        def launcher(a, b, _c, s, kw):
            with on(s):
                return out_of(fn(view_a(a), view_b(b), **view_kw(kw)))
    else:
        def launcher(a, b, c, s, kw):
            with on(s):
                fn(view_a(a), view_b(b), view_out(c), **view_kw(kw))
            return None
    caller = framework_metadata(framework)
    caller.update({"judged": judged_by, "callable": getattr(fn, "__qualname__", kernel),
                   "module": getattr(fn, "__module__", None), "style": how})
    return _Prepared(kernel, how, launcher, input_format, output_format, base, caller)


def _quantized_views(framework: str, recipe: str):
    """Views of a quantized callable's tensors as their types (reference/quantized_layout.hpp): float8 tensors
    cross DLPack as bytes and are viewed as the framework's float8 dtype (CuPy, which has none, keeps the
    bytes)."""
    from . import _core  # noqa: PLC0415
    types = _core.quantized_tensor_types(recipe)  # name -> "float8_e4m3fn", "uint8", ...
    if framework == "torch":
        import torch
        f8 = {"float8_e4m3fn": torch.float8_e4m3fn, "float8_e5m2": torch.float8_e5m2}

        def view(t, ty=None):
            return t.view(f8[ty]) if ty in f8 else t
    elif framework == "jax":
        import jax
        import jax.numpy as jnp
        f8j = {"float8_e4m3fn": jnp.float8_e4m3fn, "float8_e5m2": jnp.float8_e5m2}

        def view(t, ty=None):
            return jax.lax.bitcast_convert_type(t, f8j[ty]) if ty in f8j else t
    else:
        def view(t, ty=None):
            return t
    return ((lambda a: view(a, types.get("A"))), (lambda b: view(b, types.get("B"))),
            (lambda kw: {k: (view(v, types.get(k)) if k in types else v) for k, v in kw.items()}))


@contextmanager
def _csv_path(out: str | os.PathLike | None, kernel: str, prefix: str):
    """``out`` as a Path (it must name a .csv), or a temporary one removed afterwards."""
    if out is None:
        with tempfile.TemporaryDirectory(prefix=prefix) as d:
            yield Path(d) / f"{kernel}.csv"
        return
    path = Path(out)
    if path.suffix != ".csv":
        raise ValueError(f"out must name a .csv file, got {str(path)!r}")
    yield path


def judge(fn: Callable, *, input_format: str, output_format: str = "fp32",
          sizes: Iterable[int | Sequence[int]] = ((4096, 4096, 4096),),
          distributions: Iterable[str] = ("uniform_0_1",), seeds: Iterable[int] = (20261121,),
          name: str | None = None, family: str = "user", description: str = "",
          framework: Framework = "torch", style: Style = "auto", layout_a: str = "row", layout_b: str = "row",
          accumulation: str = "unknown", compute_format: str | None = None, accumulator_format: str | None = None,
          promotion_interval_k: int = 0, reps: int | None = None, warmup: int = 1, max_noise: float = 0.005,
          min_samples: int = 10, min_time_ms: float = 0.0, max_time_ms: float = 500.0, flush_l2: bool = True,
          reference: str = "auto", spot_checks: int = 16, device: int = 0, stream: int | None = None,
          out: str | os.PathLike | None = None, resume: bool = False, force: bool = False, quiet: bool = True,
          errors: Literal["raise", "rows"] = "raise", numerics: dict | None = None, form: str | None = None,
          alpha: float | None = None, beta: float | None = None, c0: str | None = None,
          bias: str | tuple[str, str] | None = None, batch: int | None = None,
          groups: Sequence[int | str] | None = None, scale: float | None = None, c0_format: str | None = None,
          bias_format: str | None = None, c0_placement: str = "unknown",
          bias_placement: str = "unknown", perturbation: str = "auto", isolate: bool | Literal["auto"] = "auto",
          launch_timeout: float = 10.0, retry_failed: bool = False, scales: str = "unknown",
          scale_roundings: int = 0, group_size: int | None = None) -> pd.DataFrame:
    """Judge ``fn`` as ``gemmlab run`` judges its built-in kernels; one row per size x distribution x seed.

    ``fn(A, B) -> C`` or ``fn(A, B, out)``: A (M, K) and B (K, N) are tensors of ``framework`` in
    ``input_format`` (fp32, tf32 as float32, fp16, bf16, e4m3 / e5m2 as float8 — raw uint8 for CuPy),
    laid out as ``layout_a`` / ``layout_b`` say ("col" gives the transposed view of a column-major
    buffer); C is (M, N) in ``output_format`` (fp32, fp16, bf16) on the same GPU, any strides.
    The launches go to ``stream`` (default: the framework's current stream on ``device``).

    Timing, as ``gemmlab run`` times its rows (experiments/report/stopping.hpp): ``warmup`` untimed calls,
    then timed calls until the median's distribution-free 95% confidence interval is within
    ``+-max_noise`` of it (after at least ``min_samples`` calls and ``min_time_ms`` of their time), or
    ``max_time_ms`` of wall clock have passed; ``reps=N`` times exactly N calls instead. Each row says how many (``reps``), its
    ``time_ms_ci95_rel`` and what stopped it (``stopped_by``).

    ``accumulation`` and the formats declare what you know of the kernel's numerics (the bound it is
    judged by; ``"unknown"`` claims none: status ``no_bound``). ``name`` (default: ``fn.__name__``)
    is the CSV's ``kernel``. ``out`` writes the CSV and its ``.meta.json`` (journaled; ``resume=True``
    continues an interrupted run; ``force=True`` replaces); without it the rows are only returned.

    ``numerics`` (the ``numerics`` of a ``gemmlab.explain`` report) replaces the declared
    accumulation and formats with the whole record gemmlab identified: the rows are then judged by
    that record's bound.

    The problem beyond C = A B (a form, reference/gemm_form.hpp; the rows' ``form`` column): ``form`` as text
    (``"alpha=0.5,beta=2,c0=normal_0_1"``) and/or its parts as keywords: ``alpha``, ``beta`` (fp32 values),
    ``c0`` (the distribution of C0; C = alpha A B + beta C0), ``bias`` (``"column:DIST"``: one value per column
    of C, as F.linear's; ``"row:DIST"``), ``batch`` (strided batches: A (batch, M, K), B (batch, K, N), C
    (batch, M, N)), ``groups`` (rows of each group, the last may be ``"*"``: A (M, K), B (groups, K, N), C (M, N)),
    ``scale`` (an output scale: C = s (alpha A B + beta C0 + bias) rounded once, e.g. an fp8 output). gemmlab
    then calls ``fn(A, B, **parts)`` (``fn(A, B, out, **parts)`` in style "out") with only the parts the form
    has: ``C0=`` and ``bias=`` tensors (in ``c0_format`` / ``bias_format``, default the output format),
    ``alpha=``, ``beta=``, ``scale=`` floats, ``offs=`` the groups' int32 row ends on the GPU. A callable that
    reports amax returns ``(C, amax)`` (a float32 tensor of one element: max |alpha A B + beta C0 + bias|).
    ``c0_placement`` / ``bias_placement`` declare where beta C0 and the bias enter ("before_output_rounding",
    "after_output_rounding"; "unknown": the bound takes the weaker). Every row is judged against the exact
    reference of the form and by its bound; a returned C of the wrong shape or dtype for the form is an error
    row saying what was expected.

    Returns the rows (``gemmlab.COLUMNS``, typed as ``load_results`` types them). Raises
    ``GpuUnavailable`` without a usable GPU engine, ``ValueError`` for bad arguments, and
    ``JudgeError`` when a row is an error (``errors="rows"`` returns them instead): the callable raised,
    returned something that is not C (shape, dtype, device), or wrote into A or B. A callable whose
    first and last call differ bit for bit gets status ``nondeterministic``; NaN in C, status
    ``failed_bound``: both with a warning.

    ``perturbation``: after the timed repetitions, one more launch runs with the GPU's schedule
    disturbed and is compared bit for bit with the last; a row whose bits change gets status
    ``nondeterministic`` and a note naming the perturbation. ``"auto"``: ``busy_sms_<half the SMs>``
    (another kernel holds half the SMs from before the launch to its end; works for every framework), or on
    a GPU that runs nothing beside those held SMs (found once per process, in a quarter of a second),
    ``fewer_sms_<half>`` where the kernel can take it;
    ``"fewer_sms_<N>"``: the launch in a CUDA green context of N SMs (not for JAX, whose streams gemmlab
    cannot move); ``""``: none.

    Every launch of ``fn`` has a time limit, ``launch_timeout`` (its floor, 10 s) + 2MNK at 10 GFLOP/s, and
    the host calls of its first row in a process 120 s more (compilation); a call beyond it gives its row status
    ``timeout``. ``isolate`` (``"auto"``): ``fn`` runs in a worker process (``gemmlab._worker``: it is
    pickled by reference, or re-created by re-running the script that defines it in ``__main__`` up to its
    first gemmlab call), so that a call that hangs or faults costs its row (``timeout``, ``faulted``), the
    worker is replaced and the next row goes on; where ``fn`` cannot be sent (a lambda, a closure, a
    notebook's function, JAX, an explicit ``stream``), it runs in this process with the watchdog alone and a
    warning says why. ``isolate=False`` runs it here; ``True`` refuses a callable that cannot be sent.
    ``retry_failed`` (with ``resume``): the journal's ``timeout``, ``faulted`` and ``error`` rows are
    computed again.

    Raises ``GpuContextLost`` when, in this process, the GPU reports an error after which nothing more
    runs (an illegal memory access) or a launch never ends: the rows finished before and that one's
    (``faulted`` or ``timeout``) are in its ``rows`` (and, with ``out``, in ``out``'s journal, which
    ``resume=True`` continues from in a new process).

    Quantized forms (docs/python.md): ``input_format`` ``"mxfp4"``, ``"mxfp8_e4m3"``, ``"nvfp4"``, ``"int8"``,
    ``"int4_weight_only"`` (with ``group_size``, default 128) or any recipe (``"mxfp4_x_bf16"``). Each
    distribution is the fp32 source, quantized under the recipe (``normal_0_1`` becomes
    ``normal_0_1@mxfp4``); ``fn`` gets the quantized tensors (A, B and the keywords of
    ``QUANTIZED_KEYWORDS``) in the frameworks' layouts, and each row is judged against the exact product of
    the dequantized operands, with the total (``total_*``) and the quantization error (``quant_*``) beside.
    ``scales`` declares where the kernel applies them: ``"operands"`` (before the multiply, in
    ``compute_format``, accumulated as ``accumulation`` says), ``"output"`` (integer products summed exactly,
    then ``scale_roundings`` fp32 roundings before the output's), ``"unknown"`` (no bound). A size whose K
    is not a multiple of the recipe's blocks, a bad group size or a form is refused before anything runs.
    """
    kw = {k: v for k, v in locals().items() if k != "fn"}
    _worker.stop_if_importing_main()
    if errors not in ("raise", "rows"):
        raise ValueError(f"errors must be 'raise' or 'rows', got {errors!r}")
    # A quantized form's input is checked before the GPU is touched (it needs none of it).
    recipe = quantized_recipe(input_format, group_size)
    if recipe:
        kw["distributions"], kw["sizes"] = _quantized_plan(recipe, list(distributions), sizes, scales, scale_roundings)
        if form_text(form, alpha=alpha, beta=beta, c0=c0, bias=bias, batch=batch, groups=groups, scale=scale) != "plain":
            raise ValueError(f"a quantized form ({recipe}) takes no form beyond C = A B")
    elif scales != "unknown" or scale_roundings:
        raise ValueError("scales and scale_roundings are for a quantized input_format (mxfp4, nvfp4, int8, ...)")
    kw["recipe"] = recipe
    gpu = gpu_module(device)
    if isolate not in ("auto", True, False):
        raise ValueError(f"isolate must be 'auto', True or False, got {isolate!r}")
    if not (float(launch_timeout) >= 0):
        raise ValueError(f"launch_timeout must be >= 0 seconds (0: no limit), got {launch_timeout!r}")
    if retry_failed and not resume:
        raise ValueError("retry_failed computes again rows of an interrupted run's journal: pass resume=True too")
    if reps is not None and int(reps) < 1:
        raise ValueError(f"reps must be at least 1 (a fixed count), or None to stop on noise; got {reps!r}")
    p = _prepare(fn, name, framework, style, input_format, output_format, accumulation, device, stream,
                 "gemmlab.judge", quantized=recipe)
    kw["name"] = p.kernel
    with _csv_path(out, p.kernel, "gemmlab-judge-") as csv, \
            tempfile.TemporaryDirectory(prefix="gemmlab-worker-") as spec_dir:
        kw["csv"] = str(csv)  # the workers make the plan of this output (they write nothing there)
        argv, why = _worker_argv(fn, "judge", kw, Path(spec_dir))
        try:
            rc = _judge_call(gpu, p, kw, csv, argv, why)
        except gpu.WorkerStartFailed as e:
            warnings.warn(f"{p.kernel} could not run in a worker process ({e}); it runs in this process with the "
                          "watchdog alone", RuntimeWarning, stacklevel=2)
            rc = _judge_call(gpu, p, kw, csv, [], f"its worker process did not start: {e}")
        except gpu.CudaContextLost as e:
            journal = Path(f"{csv}.journal")
            kept = _journal_rows(journal)
            where = (f"; the {len(kept)} rows finished (that one's included) are in {journal}: call judge again with "
                     f"out={str(out)!r}, resume=True in a new process" if out is not None and journal.exists()
                     else f"; the {len(kept)} rows finished (that one's included) are in this exception's .rows")
            raise GpuContextLost(f"gemmlab.judge of {e}{where}", kept,
                                 journal if out is not None and journal.exists() else None) from None
        rows = load_results(csv)
    _warn(rows)
    bad = rows[rows["status"].isin(["error", "timeout", "faulted"])]
    if (rc != 0 or len(bad)) and errors == "raise":
        lines = "\n".join(f"  {r.kernel} {r.distribution} {r.M}x{r.N}x{r.K} seed {r.seed}: {r.status}: {r.note}"
                          for r in bad.itertuples())
        raise JudgeError(f"{len(bad)} of {len(rows)} rows of {p.kernel} are errors, timeouts or faults:\n{lines}",
                         rows)
    return rows


_WARNED_IN_PROCESS: set[str] = set()


def _worker_argv(fn: Callable, kind: str, kw: dict, spec_dir: Path) -> tuple[list[str], str]:
    """The command of ``fn``'s worker process (``kind``: judge or explain), or ``([], why it runs here)``,
    with the warning ``isolate="auto"`` gives once per callable, or the ValueError of ``isolate=True``."""
    if kw["isolate"] is False:
        return [], "isolate=False"
    data, main, why = _worker.sendable(fn, kw["framework"], kw.get("stream"))
    if why:
        name = kw.get("name") or getattr(fn, "__name__", "fn")
        if kw["isolate"] is True:
            raise ValueError(f"isolate=True: {name} cannot run in a worker process: {why}")
        if name not in _WARNED_IN_PROCESS:
            _WARNED_IN_PROCESS.add(name)
            warnings.warn(f"gemmlab.{kind} runs {name} in this process with the watchdog alone ({why}): a launch "
                          "beyond its limit stops the run there, and a call blocked in Python cannot be stopped. "
                          "Define it in a module (or a script) to run it in a worker process", RuntimeWarning,
                          stacklevel=3)
        return [], why
    return _worker.write_spec(spec_dir, kind, data, main, {**kw, "torch_state": _torch_state()}), ""


def _judge_call(gpu, p: _Prepared, kw: dict, csv: Path | str, worker_argv: list[str], why: str,
                serve: bool = False) -> int:
    """gemmlab._gpu.judge of the prepared callable ``p`` with judge's keywords ``kw``: in worker processes
    started with ``worker_argv`` (empty: in this process, ``why``), or as such a worker (``serve``)."""
    form = form_text(kw["form"], alpha=kw["alpha"], beta=kw["beta"], c0=kw["c0"], bias=kw["bias"], batch=kw["batch"],
                     groups=kw["groups"], scale=kw["scale"])
    p.caller["form"] = form
    p.caller["isolation"] = "worker process" if worker_argv or serve else f"this process: {why}"
    recipe = kw.get("recipe")
    if recipe:
        p.caller["quantized"] = {"recipe": recipe, "scales": kw["scales"], "scale_roundings": int(kw["scale_roundings"])}
    rc = gpu.judge(
        p.launcher, kw["framework"], p.kernel, kw["family"],
        kw["description"] or f"Python callable {p.caller['callable']}", p.input_format, kw["compute_format"] or "",
        kw["accumulator_format"] or "", p.output_format, kw["accumulation"], int(kw["promotion_interval_k"]),
        kw["layout_a"], kw["layout_b"], p.how == "return", _sizes(kw["sizes"]), list(kw["distributions"]),
        [int(s) for s in kw["seeds"]], 0 if kw["reps"] is None else int(kw["reps"]), int(kw["warmup"]),
        bool(kw["flush_l2"]), kw["reference"],
        int(kw["spot_checks"]), int(kw["device"]), p.stream, kw["framework"] == "jax", str(csv), bool(kw["resume"]),
        bool(kw["force"]), json.dumps(p.caller),
        "gemmlab.judge " + shlex.join([p.kernel, f"--framework={kw['framework']}", f"--style={p.how}",
                                       f"--form={form}"]), bool(kw["quiet"]),
        json.dumps(kw["numerics"]) if kw["numerics"] else "", kw["perturbation"], "" if form == "plain" else form,
        kw["c0_format"] or "", kw["bias_format"] or "", kw["c0_placement"], kw["bias_placement"],
        worker_argv=list(worker_argv), launch_timeout=float(kw["launch_timeout"]),
        retry_failed=bool(kw["retry_failed"]), serve=serve, max_noise=float(kw["max_noise"]),
        min_samples=int(kw["min_samples"]), min_time_ms=float(kw["min_time_ms"]), max_time_ms=float(kw["max_time_ms"]),
        quantized=recipe or "", quantized_scales=kw["scales"], scale_roundings=int(kw["scale_roundings"]))
    return rc


def _judge_in_worker(fn: Callable, kw: dict) -> int:
    """A worker process of judge (``gemmlab._worker``): serves its parent's rows."""
    _take_torch_state(kw.get("torch_state"))
    p = _prepare(fn, kw["name"], kw["framework"], kw["style"], kw["input_format"], kw["output_format"],
                 kw["accumulation"], kw["device"], None, "gemmlab.judge", quantized=kw.get("recipe"))
    return _judge_call(gpu_module(kw["device"]), p, kw, kw["csv"], [], "", serve=True)


def _quantized_plan(recipe: str, distributions: list[str], sizes, scales: str, scale_roundings: int):
    """The distributions SOURCE@RECIPE and the sizes of a quantized judge, every one checked before any launch
    (a K the recipe's blocks do not divide, a source that carries a recipe already, a bad placement)."""
    from . import _core  # noqa: PLC0415
    if scales not in ("operands", "output", "unknown"):
        raise ValueError(f"scales must be 'operands', 'output' or 'unknown' (where the kernel applies them), got {scales!r}")
    if not isinstance(scale_roundings, int) or scale_roundings < 0 or (scale_roundings and scales != "output"):
        raise ValueError("scale_roundings (an int >= 0) counts the fp32 roundings of scales='output' before the output's")
    out = []
    for d in distributions:
        if "@" in d:
            raise ValueError(f"distribution {d!r} carries a recipe already: give its source ({d.split('@')[0]!r}); "
                             f"gemmlab quantizes it under {recipe}")
        out.append(_core.canonical_distribution(f"{d}@{recipe}"))
    checked = _sizes(sizes)
    for (M, N, K) in checked:
        _core.quantized_layout(recipe, M, N, K)  # ValueError naming the block K must be a multiple of
    return out, checked


def _journal_rows(journal: Path) -> pd.DataFrame:
    """The finished rows of an interrupted run's journal (engine/journal.hpp: a JSON identity line, then
    one CSV row per line), typed as ``load_results`` types a CSV; empty where there is none."""
    if not journal.exists():
        return pd.DataFrame()
    identity, _, rows = journal.read_text().partition("\n")
    if not identity:
        return pd.DataFrame()
    columns = json.loads(identity).get("columns", [])
    with tempfile.TemporaryDirectory(prefix="gemmlab-journal-") as d:
        f = Path(d) / "rows.csv"
        f.write_text(",".join(columns) + "\n" + rows)  # the rows are CSV lines, quoted as the CSV's
        return load_results(f)


def _warn(rows: pd.DataFrame) -> None:
    for r in rows.itertuples():
        form = "" if pd.isna(r.form) or r.form == "plain" else f" ({r.form})"
        where = f"{r.kernel} on {r.distribution} {r.M}x{r.N}x{r.K}{form} seed {r.seed}"
        if r.status == "nondeterministic":
            warnings.warn(f"{where} is not deterministic: {r.note}", RuntimeWarning, stacklevel=3)
        elif not pd.isna(r.nonfinite) and r.nonfinite > 0:
            warnings.warn(f"{where} returned {r.nonfinite} NaN or infinite entries (status {r.status})",
                          RuntimeWarning, stacklevel=3)


def _sweep(values, what: str) -> list[str]:
    """A sweep for the C++ side: "default", or whole numbers."""
    if isinstance(values, str):
        values = [values]
    out = []
    for v in values:
        if isinstance(v, str) and v == "default":
            out.append(v)
        elif isinstance(v, (int,)) and not isinstance(v, bool) and v >= 1:
            out.append(str(v))
        else:
            raise ValueError(f"{what} holds whole numbers >= 1 or 'default', got {v!r}")
    return out


@contextmanager
def _context_lost(what: str):
    """The engine's CudaContextLost as ``GpuContextLost`` (no rows kept: a run without a journal)."""
    try:
        yield
    except Exception as e:
        if _engine._gpu is not None and isinstance(e, _engine._gpu.CudaContextLost):
            raise GpuContextLost(f"{what} of {e}") from None
        raise


def invariance(fn: Callable, *, input_format: str, output_format: str = "fp32",
               size: int | Sequence[int] = (512, 4096, 4096), m: Iterable[int | str] | str = "default",
               n: Iterable[int | str] = (), k_tails: Iterable[int] = (), repeats: int = 3,
               distribution: str = "uniform_-1_1", seed: int = 1, name: str | None = None, family: str = "user",
               description: str = "", framework: Framework = "torch", style: Style = "auto", layout_a: str = "row",
               layout_b: str = "row", accumulation: str = "unknown", compute_format: str | None = None,
               accumulator_format: str | None = None, promotion_interval_k: int = 0, reps: int = 3, warmup: int = 1,
               flush_l2: bool = True, reveal_k_max: int = 0, cost: bool = True, device: int = 0,
               stream: int | None = None, out: str | os.PathLike | None = None, resume: bool = False,
               force: bool = False, quiet: bool = True, launch_timeout: float = 10.0) -> pd.DataFrame:
    """Determinism and batch invariance of ``fn``, bit for bit, as ``gemmlab invariance`` measures a
    built-in kernel (the same C++): rows [0, m) of C computed with M = m against the same rows at the
    full M for every ``m`` ("default": 1..8, 2^p - 1, 2^p, 2^p + 1 below M), likewise columns ``n``
    and zero ``k_tails``, ``repeats`` launches on the same inputs, and a ``cost`` row (median time,
    bias and spread of the relative error at the full size).

    ``fn`` and the format, layout and numerics arguments are those of ``judge``. ``size`` is the full
    (M, N, K) (or one integer for a cube). Orders of differing entries are revealed only where K is
    at most ``reveal_k_max`` (default 0: never; each reveal takes about K x depth whole launches of
    ``fn``). ``out`` writes the CSV and its ``.meta.json`` (journaled: ``resume=True`` continues an
    interrupted run, ``force=True`` replaces); without it the rows are only returned.

    Returns the rows with exactly the CSV's columns (kernel, config, ..., check, m, n, k, compared,
    differing, first_i, first_j, status, why, ...). Raises ``GpuUnavailable`` without a usable GPU
    engine, ``ValueError`` for bad arguments, ``RuntimeError`` when the run stopped early.

    ``fn`` runs in this process, every launch within ``launch_timeout`` (the floor of its limit, as for
    ``judge``): one beyond it raises ``GpuContextLost``.
    """
    _worker.stop_if_importing_main()
    gpu = gpu_module(device)
    p = _prepare(fn, name, framework, style, input_format, output_format, accumulation, device, stream,
                 "gemmlab.invariance")
    (full,) = _sizes([size])
    with _csv_path(out, p.kernel, "gemmlab-invariance-") as csv, _context_lost("gemmlab.invariance"):
        rc = gpu.invariance(
            p.launcher, framework, p.kernel, family, description or f"Python callable {p.caller['callable']}",
            p.input_format, compute_format or "", accumulator_format or "", p.output_format, accumulation,
            int(promotion_interval_k), layout_a, layout_b, p.how == "return", full, _sweep(m, "m"), _sweep(n, "n"),
            _sweep(k_tails, "k_tails"), int(repeats), distribution, int(seed), int(reps), int(warmup), bool(flush_l2),
            int(reveal_k_max), bool(cost), int(device), p.stream, framework == "jax", str(csv), bool(resume),
            bool(force), json.dumps(p.caller),
            "gemmlab.invariance " + shlex.join([p.kernel, f"--framework={framework}", f"--style={p.how}"]), bool(quiet),
            launch_timeout=float(launch_timeout))
        if rc not in (0, 3):
            raise RuntimeError(f"gemmlab.invariance of {p.kernel} stopped early (exit {rc}); its journal "
                               f"{csv}.journal keeps the finished rows: call again with resume=True")
        rows = pd.read_csv(csv, keep_default_na=False, dtype=str)
    for col in ("seed", "M", "N", "K", "m", "n", "k", "compared", "differing"):
        rows[col] = rows[col].astype("int64")
    for col in ("time_ms_median", "rel_mean", "rel_std"):
        rows[col] = pd.to_numeric(rows[col].replace("", None), errors="coerce")
    return rows
