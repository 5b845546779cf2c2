"""``gemmlab.port``: what an explained kernel's numbers would be on other GPU generations.

The kernel's order of accumulation (or revealed tree) and operand conversion stay as ``explain`` found
them or its numerics record states; only its tensor-core instruction runs with each target generation's
model (``gemmlab.tc.model(name, gpu)``). Both the kernel on its own generation and on each target are
predicted bit for bit on the CPU (experiments/engine/port.hpp, the C++ of ``gemmlab port``), on the
inputs ``gemmlab run`` makes, at a seeded sample of output entries. No GPU is needed.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from importlib import resources
from pathlib import Path
from typing import Any, Iterable, Sequence

import pandas as pd

from . import _core

DEFAULT_PORT_DISTRIBUTIONS = ("uniform_0_1", "normal_0_1", "logunif_-8_8")


def _builtin_numerics() -> dict:
    try:
        return json.loads(resources.files("gemmlab").joinpath("builtin_numerics.json").read_text())
    except FileNotFoundError:
        return {}


def _kernel_json(what: Any, from_gpu: str, measured: dict | None) -> str:
    """One kernel as port's C++ reads it: an Explanation, a path to what explain wrote, or a built-in
    kernel's name."""
    if hasattr(what, "report") and hasattr(what, "name"):  # a gemmlab.explain Explanation
        r = what.report
        if not r.get("identified") or not r.get("numerics"):
            raise ValueError(f"{what.name} was not identified ({r.get('reason', '')}): there is nothing to port")
        conv = r.get("conversion", {})
        if measured is None and getattr(what, "judged", None) is not None:
            j = what.judged
            measured = {d: [float(g["rel_mean_u"].iloc[0]), float(g["rel_std_u"].iloc[0])]
                        for d, g in j.groupby("distribution") if "rel_mean_u" in j}
        return json.dumps({"name": what.name, "numerics": r["numerics"], "conversion_a": conv.get("a", "as_is"),
                           "conversion_b": conv.get("b", "as_is"), "from": r.get("tc_generation", from_gpu),
                           "origin": "gemmlab.explain", "measured": measured or {}})
    if isinstance(what, (str, os.PathLike)) and (str(what).endswith(".json") or str(what).endswith(".csv")):
        if not Path(what).exists():
            raise ValueError(f"{what}: no such file (give what gemmlab explain wrote: its CSV or .meta.json)")
        return json.dumps({"explanation": str(what)})
    if isinstance(what, str):
        known = _builtin_numerics()
        if what not in known:
            raise ValueError(f"{what!r} is neither a built-in kernel with a numerics record, an Explanation, nor "
                             "a file gemmlab explain wrote")
        return json.dumps({"name": what, "numerics": known[what], "from": from_gpu,
                           "origin": "built-in numerics record", "measured": measured or {}})
    raise TypeError(f"port takes an Explanation, a path or a built-in kernel's name, not {type(what).__name__}")


def port(explanation: Any | Sequence[Any], gpus: Iterable[str] | None = None, *,
         distributions: Iterable[str] = DEFAULT_PORT_DISTRIBUTIONS,
         size: int | tuple[int, int, int] = (4096, 4096, 4096), seed: int = 20261124, entries: int = 4096,
         threads: int = 0, from_gpu: str = "hopper", measured: dict | None = None,
         out: str | Path | None = None) -> pd.DataFrame:
    """Predict an explained kernel on other GPU generations (``gpus``: names, ``sm_XX`` or generations;
    default every generation but its own).

    ``explanation``: what ``gemmlab.explain`` returned, the CSV or ``.meta.json`` it wrote, or a built-in
    kernel's name (its numerics record, measured on ``from_gpu``), or a list of these. ``measured``:
    ``{distribution: (bias_u, spread_u)}`` to show beside the predictions (an Explanation's judged rows
    and a file's ``<stem>_judged.csv`` are read by themselves). Returns one row per kernel x
    distribution x target with ``port_columns``: ``changed_fraction`` (outputs whose bits change from
    the kernel's own generation), ``bias_u``/``spread_u`` on the target and ``bias_u_from``/
    ``spread_u_from`` at home (in units of the output's roundoff, over the sampled entries), and
    ``status``: ``ported``, ``same_model``, ``no_instruction`` (the target has no instruction of the
    kernel's formats). A target without the kernel's instruction gets the closest it has, named in
    ``assumption``. ``out`` also writes the CSV with its ``.meta.json``.
    """
    items = list(explanation) if isinstance(explanation, (list, tuple)) else [explanation]
    kernels = [_kernel_json(x, from_gpu, measured) for x in items]
    M, N, K = (size, size, size) if isinstance(size, int) else tuple(int(x) for x in size)
    if out is not None and Path(out).suffix != ".csv":
        raise ValueError(f"out must name a .csv file, got {str(out)!r}")
    if out is not None:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
    command = "gemmlab.port " + shlex.join(sys.argv[:1] + [str(x) for x in (gpus or [])])
    rows = _core.port(kernels, list(gpus or []), list(distributions), M, N, K, int(seed), int(entries),
                      int(threads), "" if out is None else str(out), command)
    frame = pd.DataFrame(rows, columns=list(_core.port_columns()))
    numeric = ["M", "N", "K", "seed", "entries", "changed", "changed_fraction", "bias_u", "spread_u", "bias_u_from",
               "spread_u_from", "measured_bias_u", "measured_spread_u", "entries_zero"]
    for c in numeric:
        frame[c] = pd.to_numeric(frame[c], errors="coerce")
    return frame
