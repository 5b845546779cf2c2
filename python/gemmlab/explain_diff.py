"""``gemmlab.explain_diff``: where two GEMM callables' numerics differ, in words, each difference shown
on an input where their bits differ.

The use: making one kernel reproduce another bit for bit (a Triton GEMM that must give cuBLAS's bits,
the aim of Meta's Triton "bitequiv" work), or checking that a refactor kept the numerics.

The same C++ as ``gemmlab explain --diff A B`` (reference/explain/diff.hpp in the repository):
``gemmlab.explain``'s stages run on each callable, and their reports are compared aspect by aspect:
the summation tree, whether the order changes between calls (scheduling), how fp32 operands reach the
multiplier (operand conversion), the model of each kind of fused tensor-core node (node arithmetic), and
the format each writes (output conversion). Each aspect that differs comes with a witness: an input
built to expose that difference alone (FPRev masks at the first pair of products whose trees differ, a
single product the two conversions make different, a tensor-core probe the two node models answer
differently, a sum the two outputs round differently), run on both callables, with the entry and both
outputs' bits. Where nothing differs, the two are bit-identical by construction, and the full-size
confirmation (both callables on full random inputs of each distribution, each launched twice) must find
no output whose bits differ.
"""

from __future__ import annotations

import json
import shlex
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from . import _worker
from .explain import DEFAULT_EXPLAIN_DISTRIBUTIONS, Explanation, _known_kernels
from .gpu import GpuContextLost, _prepare, gpu_module


@dataclass
class KernelDiff:
    """The report of ``gemmlab.explain_diff``: ``verdict`` (``"identical_by_construction"``,
    ``"different"`` or ``"incomplete"``), ``differences`` (one dict per difference: ``aspect``, what each
    kernel does, ``entry``, the witness ``inputs`` in words and as ``a_row`` / ``b_col``, both kernels'
    ``bits_a`` / ``bits_b`` and their reports' predictions), ``rows`` (the explain_diff CSV's rows),
    ``a`` and ``b`` (each callable's ``Explanation``, without judged rows)."""
    report: dict
    rows: pd.DataFrame
    a: Explanation
    b: Explanation

    verdict: str = field(init=False)
    identical: bool = field(init=False)
    differences: list = field(init=False)

    def __post_init__(self):
        self.verdict = self.report["verdict"]
        self.identical = self.verdict == "identical_by_construction"
        self.differences = list(self.report["differences"])

    @property
    def summary(self) -> str:
        return self.report["summary"]

    def __str__(self) -> str:
        return self.summary


def _pair(value, what: str) -> tuple:
    """A per-kernel setting: one value for both, or (a's, b's)."""
    if isinstance(value, (tuple, list)):
        if len(value) != 2:
            raise ValueError(f"{what} must be one value or a pair (a's, b's), got {len(value)} values")
        return tuple(value)
    return (value, value)


def explain_diff(a: Callable, b: Callable, *, input_format: str, output_format: str | tuple[str, str] = "fp32",
                 size: int | tuple[int, int, int] = (4096, 4096, 4096),
                 distributions: Iterable[str] = DEFAULT_EXPLAIN_DISTRIBUTIONS, seed: int = 20261124,
                 names: tuple[str | None, str | None] = (None, None), framework: str | tuple[str, str] = "torch",
                 style: str | tuple[str, str] = "auto", layout_a: str | tuple[str, str] = "row",
                 layout_b: str | tuple[str, str] = "row", compare_outputs: int = 1 << 16, confirm_outputs: int = 0,
                 verify_entries: int = 256, device: int = 0, out: str | Path | None = None, schedule: bool = True,
                 schedule_seconds: float = 12.0, launch_timeout: float = 10.0) -> KernelDiff:
    """Where ``a`` and ``b`` (each ``fn(A, B) -> C`` or ``fn(A, B, out)``, as for ``gemmlab.judge``) differ
    in their numerics at ``size``, each difference with an entry and inputs where their bits differ; or
    that they are bit-identical by construction, confirmed on full inputs.

    Use it to make a kernel reproduce another bit for bit (a Triton GEMM against cuBLAS, as Meta's Triton
    "bitequiv" work did), or to check that a refactor kept the numerics.

    ``output_format``, ``framework``, ``style``, ``layout_a``, ``layout_b``: one value for both callables,
    or a pair (a's, b's). ``names``: their names (default ``fn.__name__``; they must differ).
    ``compare_outputs``: outputs each explanation predicts per distribution (0: every output);
    ``confirm_outputs``: outputs compared between the two on full inputs per distribution (0: every
    output). ``out`` writes the explain_diff CSV (one row per difference) with its ``.meta.json``.
    ``schedule``, ``schedule_seconds``: each explanation's scheduling stage, as for ``gemmlab.explain``.
    The callables run in this process, every launch within ``launch_timeout`` (the floor of its limit, as
    for ``gemmlab.judge``): one beyond it stops the diff (``GpuContextLost``).

    Raises ``GpuUnavailable`` without a usable GPU engine, ``ValueError`` for bad arguments, and
    ``GpuContextLost`` when a callable made the GPU unusable in this process (``out`` is written first,
    the diff as far as it got in the exception's ``explanation``).
    """
    _worker.stop_if_importing_main()
    outputs, frameworks = _pair(output_format, "output_format"), _pair(framework, "framework")
    styles, las, lbs = _pair(style, "style"), _pair(layout_a, "layout_a"), _pair(layout_b, "layout_b")
    names = _pair(names, "names")
    if confirm_outputs < 0 or compare_outputs < 0:
        raise ValueError("compare_outputs and confirm_outputs must be 0 (every output) or more")
    gpu = gpu_module(device)
    gpu.select_model(int(device), "")  # this GPU's generation; ValueError on a GPU gemmlab has no model for
    sides = [_prepare(fn, names[s], frameworks[s], styles[s], input_format, outputs[s], "unknown", device, None,
                      "gemmlab.explain_diff") for s, fn in enumerate((a, b))]
    if sides[0].kernel == sides[1].kernel:
        raise ValueError(f"both callables are named {sides[0].kernel!r}: pass names=(a_name, b_name)")
    M, N, K = (size, size, size) if isinstance(size, int) else tuple(int(x) for x in size)
    distributions = list(distributions)
    pa, pb = sides
    caller = {"a": pa.caller, "b": pb.caller}
    with tempfile.TemporaryDirectory(prefix="gemmlab-explain-diff-") as tmp:
        csv = Path(out) if out is not None else Path(tmp) / f"{pa.kernel}-vs-{pb.kernel}.csv"
        if csv.suffix != ".csv":
            raise ValueError(f"out must name a .csv file, got {str(csv)!r}")
        csv_a, csv_b = Path(tmp) / "a.csv", Path(tmp) / "b.csv"
        text = gpu.explain_diff(
            pa.launcher, frameworks[0], pa.kernel, pa.output_format, las[0], lbs[0], pa.how == "return", pa.stream,
            pb.launcher, frameworks[1], pb.kernel, pb.output_format, las[1], lbs[1], pb.how == "return", pb.stream,
            pa.input_format, M, N, K, distributions, int(seed), int(compare_outputs), int(confirm_outputs),
            int(verify_entries), int(device), _known_kernels(), str(csv), str(csv_a), str(csv_b), json.dumps(caller),
            "gemmlab.explain_diff " + shlex.join([pa.kernel, pb.kernel]), bool(schedule), float(schedule_seconds),
            launch_timeout=float(launch_timeout))
        rows = pd.read_csv(csv, keep_default_na=False)
        rows_a = pd.read_csv(csv_a, keep_default_na=False)
        rows_b = pd.read_csv(csv_b, keep_default_na=False)
    report = json.loads(text)
    diff = KernelDiff(report=report, rows=rows, a=Explanation(report=report["a"], rows=rows_a, name=pa.kernel),
                      b=Explanation(report=report["b"], rows=rows_b, name=pb.kernel))
    for side, name in (("a", pa.kernel), ("b", pb.kernel)):
        if report[side].get("oracle_lost"):
            # Nothing more runs on the GPU in this process: the diff as far as it got.
            raise GpuContextLost(f"gemmlab.explain_diff: {name} stopped at its {report[side]['failed_stage']} stage: "
                                 f"{report[side]['reason']}", explanation=diff)
    return diff
