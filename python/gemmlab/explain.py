"""``gemmlab.explain``: what a GEMM callable does to your numbers, inferred from its outputs alone.

The stages (reference/explain.hpp in the repository) run on the GPU through the callable itself:
whether it computes C = A B at all; its summation tree (FPRev masking at many output entries, checked
entry by entry and call by call); how fp32 operands reach the multiplier (as they are, or rounded to
tf32 to nearest even, to nearest away from zero, cut toward zero, or to bf16 / fp16); the arithmetic
of each kind of fused tensor-core node (gemmlab's tensor-core probes embedded in full GEMMs at one
node's leaves: every instruction of ``gemmlab tc-eval --list`` with that block is a candidate, fp16
accumulators included; the report names the one chosen and those ruled out, with counts). Then tree +
conversion + node model predict C, compared bit for bit with the callable's C on several distributions
at full size.

Between the tree and the conversion, the scheduling stage asks the tree's pairs again with the GPU's
schedule disturbed: the same launches repeated, in a shuffled order, in a CUDA green context of fewer
SMs (not for JAX, whose streams gemmlab cannot move), and beside a kernel holding half the SMs. Where
the order changes, the report says the order depends on scheduling (``scheduling == "depends"``),
which perturbation exposed it, the other orders seen and how often; the kernel is judged by a bound
that covers them all, or by none where an order seen could not be revealed. Where nothing changes,
the report lists what was tried.

Identified, the callable's record holds its revealed tree (``report["tree"]``: ``words``, the compact
``form``, every node in ``nodes``; ``plots/explain_tree.py`` draws it) and it is judged by that tree's
bound (``report["bound"]``; ``passed`` or ``failed_bound`` instead of ``no_bound``, which stays only
where the bound reaches 1; an order that depends on scheduling is judged by a bound that covers
every order seen); otherwise the report names the stage that failed and why.
"""

from __future__ import annotations

import json
import re
import shlex
import tempfile
import time
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import pandas as pd

from . import _worker
from .gpu import (GpuContextLost, _prepare, _quantized_plan, _take_torch_state, _worker_argv, form_text, gpu_module,
                  judge, quantized_recipe)

DEFAULT_EXPLAIN_DISTRIBUTIONS = ("uniform_0_1", "normal_0_1", "logunif_-8_8")


@dataclass
class Explanation:
    """The report of ``gemmlab.explain``: ``identified``, the stage that failed and why, the tree,
    operand conversions, node models, the bit-for-bit comparison per distribution, the identified
    numerics (``numerics``: gemmlab's record, or None) and the built-in kernels it behaves exactly like.
    ``rows``: the explain CSV's rows; ``judged``: the callable judged by the identified numerics' bound
    (``gemmlab.judge`` rows), when asked for."""
    report: dict
    rows: pd.DataFrame
    judged: pd.DataFrame | None = None
    name: str = ""

    identified: bool = field(init=False)
    numerics: dict | None = field(init=False)
    behaves_like: list = field(init=False)
    scheduling: str = field(init=False)  # "unchanged", "depends", or "" (not checked)

    def __post_init__(self):
        self.identified = bool(self.report["identified"])
        self.numerics = self.report["numerics"]
        self.behaves_like = list(self.report["behaves_like"])
        self.scheduling = self.report.get("schedule", {}).get("verdict", "")

    @property
    def summary(self) -> str:
        return f"{self.name}: {self.report['summary']}"

    def __str__(self) -> str:
        return self.summary


def _known_kernels() -> str:
    """The built-in kernels' numerics (``gemmlab list --numerics-json``), for "behaves exactly like"."""
    try:
        return resources.files("gemmlab").joinpath("builtin_numerics.json").read_text()
    except FileNotFoundError:
        return ""


def explain(fn: Callable, *, input_format: str, output_format: str = "fp32",
            size: int | tuple[int, int, int] = (4096, 4096, 4096),
            distributions: Iterable[str] = DEFAULT_EXPLAIN_DISTRIBUTIONS, seed: int = 20261124,
            name: str | None = None, framework: str = "torch", style: str = "auto", layout_a: str = "row",
            layout_b: str = "row", compare_outputs: int = 1 << 16, verify_entries: int = 256, device: int = 0,
            judge_rows: bool = True, reps: int | None = None, warmup: int = 1, out: str | Path | None = None,
            judge_out: str | Path | None = None, schedule: bool = True, schedule_seconds: float = 12.0,
            form: str | None = None, alpha: float | None = None, beta: float | None = None, c0: str | None = None,
            bias: str | tuple[str, str] | None = None, batch: int | None = None,
            groups: Sequence[int | str] | None = None, scale: float | None = None, c0_format: str | None = None,
            bias_format: str | None = None, isolate: bool | str = "auto", launch_timeout: float = 10.0,
            gpu: str | None = None, group_size: int | None = None) -> Explanation:
    """Explain ``fn`` (``fn(A, B) -> C`` or ``fn(A, B, out)``, as for ``gemmlab.judge``) at ``size``.

    ``compare_outputs``: outputs predicted per distribution, whole rows including the first, middle,
    last and tile-edge rows (0: every output). ``out`` writes the explain CSV with its ``.meta.json``;
    ``judge_out`` the judged rows. With ``judge_rows`` the callable is then judged on the same
    distributions under the numerics found (unknown when not identified: status ``no_bound``).
    ``schedule``: run the scheduling stage (``schedule_seconds``: the most it may take; trials left
    then are reported as not tried).

    A form (``form`` text and/or ``alpha``, ``beta``, ``c0``, ``bias``, ``batch``, ``groups``, ``scale``,
    ``c0_format``, ``bias_format``: as for ``gemmlab.judge``, which calls ``fn(A, B, **parts)`` the same way;
    torch callables): the product is explained through ``fn`` with its epilogue neutral (batch index 0 with
    the same operands at every index; the largest group, the others holding its first rows), each index's
    or group's bits compared with the explained one's on every call; then probes tell where the bias and
    beta C0 enter (the accumulator's first value, before the output's rounding, or after it) and, for
    alpha < 1, whether alpha scales the sum or the operands; then the whole form is predicted bit for bit.
    ``report["form"]`` holds it (gemmlab/explain_form.py), ``out`` gets ``<stem>_form.csv`` beside it, and
    the judged rows use the places found.

    A quantized form (``input_format`` ``"mxfp4_x_bf16"``, ``"mxfp8_e4m3_x_bf16"``, ``"int4_weight_only"`` with
    ``group_size``, or any recipe with one plain operand; docs/python.md): ``fn`` takes the quantized tensors as
    ``gemmlab.judge`` hands them. It is explained in the plain operand's format, the quantized operand's probes
    written as its elements at unit scale (every scale 1: its values are the elements'), the plain operand
    carrying the tree stage's large and small values; each distribution is the source quantized under the recipe
    (``normal_0_1`` becomes ``normal_0_1@mxfp4_x_bf16``), predicted from the dequantized operands (the scales on
    the operands, before the multiply). Where those are not values of the plain operand's format (a weight-only
    kernel's ``(q - 8) s + z`` against bf16), the way the kernel rounds them is found (``report["dequantization"]``).
    Both operands quantized (``"mxfp4"``, ``"nvfp4"``) is refused: the tree stage needs an operand that holds any
    value. ``"int8"`` (integer elements, a scale per row of A and column of B, applied after the sum): every sum
    is exact, so no tree or node shows in the bits; its fp32 epilogue is found among the candidates judge tries
    (``report["epilogue"]``), every output of every distribution predicted, and ``out`` gets a row per
    distribution with judge's rows beside (``<stem>_judged.csv``). The judged rows are ``gemmlab.judge``'s of the
    quantized form (``scales="operands"``; int8's ``"output"``).

    ``gpu``: the tensor-core models' GPU (a name such as ``"a100"``, ``"sm_89"`` or a generation; see
    ``gemmlab.tc.gpus()``); by default this GPU's own generation. On a GPU gemmlab has no model for,
    ``gpu`` is needed, and nothing found that way is validated (the report's ``tc_generation`` says
    which was used).

    Every launch of ``fn`` has a time limit, ``launch_timeout`` + 2MNK at 10 GFLOP/s, as for ``gemmlab.judge``.
    ``isolate`` (``"auto"``, as for ``judge``): ``fn`` runs in a worker process; a call that never comes back
    (beyond its limit) or a worker that dies stops the explanation there: the report is unidentified at the
    stage in progress, its reason naming the call, the limit or the signal, the stages finished before kept
    (``report["worker_stopped"]``: ``"timeout"`` or ``"faulted"``), and ``out`` written. A form is explained
    in this process.

    Raises ``GpuUnavailable`` without a usable GPU engine, ``ValueError`` for bad arguments, and
    ``GpuContextLost`` when, in this process, the GPU reported an error after which nothing more runs (an
    illegal memory access in the callable) or a launch never ended: ``out`` is written first (one row, the
    stage and the call in its reason) and the exception's ``explanation`` holds the report, with the stages
    finished before (its ``rows``: the CSV's; the exception's own ``rows``, judged rows, are empty: none was
    judged).
    """
    kw = {k: v for k, v in locals().items() if k != "fn"}
    _worker.stop_if_importing_main()
    from . import _core  # noqa: PLC0415
    recipe = quantized_recipe(input_format, group_size) if isinstance(input_format, str) else None
    the_form = form_text(form, alpha=alpha, beta=beta, c0=c0, bias=bias, batch=batch, groups=groups, scale=scale)
    M, N, K = (size, size, size) if isinstance(size, int) else tuple(int(x) for x in size)
    distributions = sources = list(distributions)  # sources: a quantized form's, before its recipe is attached
    if recipe:  # checked before the GPU is touched (it needs none of it)
        if the_form != "plain":
            raise ValueError(f"a quantized form ({recipe}) takes no form beyond C = A B")
        if recipe in _SCALED_ON_OUTPUT:
            return _explain_on_output(fn, recipe, kw)
        _core.explain_input_format(recipe)  # ValueError: both operands quantized
        # ValueError for a K the recipe's blocks do not divide, a source that carries a recipe already
        distributions, _ = _quantized_plan(recipe, distributions, [(M, N, K)], "operands", 0)
        kw["distributions"] = distributions
    kw["recipe"] = recipe
    engine = gpu_module(device)
    engine.select_model(int(device), gpu or "")  # ValueError on a GPU without a model unless gpu names one
    if isolate not in ("auto", True, False):
        raise ValueError(f"isolate must be 'auto', True or False, got {isolate!r}")
    if not (float(launch_timeout) >= 0):
        raise ValueError(f"launch_timeout must be >= 0 seconds (0: no limit), got {launch_timeout!r}")
    if the_form != "plain" and framework != "torch":
        raise ValueError(f"explain of a form ({the_form}) takes torch callables; got framework {framework!r}")
    if the_form == "plain" and (c0_format or bias_format):
        raise ValueError("c0_format and bias_format belong to a form with c0 or bias")
    if the_form != "plain" and isolate is True:
        raise ValueError(f"isolate=True: a form ({the_form}) is explained in this process; pass isolate='auto' or False")
    p = _prepare(fn, name, framework, style, input_format, output_format, "unknown", device, None, "gemmlab.explain",
                 quantized=recipe)
    kernel, how, caller = p.kernel, p.how, p.caller
    if recipe:
        caller["quantized"] = {"recipe": recipe}
    if the_form != "plain":
        caller["form"] = the_form
    with tempfile.TemporaryDirectory(prefix="gemmlab-explain-") as tmp:
        csv = Path(out) if out is not None else Path(tmp) / f"{kernel}.csv"
        if csv.suffix != ".csv":
            raise ValueError(f"out must name a .csv file, got {str(csv)!r}")

        command_line = "gemmlab.explain " + shlex.join([kernel, f"--framework={framework}", f"--style={how}",
                                                        f"--form={the_form}"])

        def run_core(core: Callable, rows: int, predictions_file: str = "") -> tuple[dict, pd.DataFrame]:
            q = p if core is fn else _prepare(core, kernel, framework, "return", input_format, output_format,
                                              "unknown", device, None, "gemmlab.explain")
            text = engine.explain(q.launcher, framework, kernel, q.input_format, q.output_format, layout_a, layout_b,
                               q.how == "return", rows, N, K, distributions, int(seed), int(compare_outputs),
                               int(verify_entries), int(device), q.stream, _known_kernels(), str(csv),
                               json.dumps(caller), command_line, bool(schedule), float(schedule_seconds),
                               predictions_file, launch_timeout=float(launch_timeout), quantized=recipe or "")
            return json.loads(text), pd.read_csv(csv, keep_default_na=False)

        places: dict = {}
        argv: list[str] = []
        if the_form == "plain":
            kw.update(name=kernel, csv=str(csv), caller=caller, command_line=command_line)
            argv, why = _worker_argv(fn, "explain", kw, Path(tmp))
            caller["isolation"] = "worker process" if argv else f"this process: {why}"
        if argv:
            try:
                report = json.loads(engine.explain_isolated(argv, kernel, M, N, K, int(seed), int(device), str(csv),
                                                         json.dumps(caller), command_line))
                rows = pd.read_csv(csv, keep_default_na=False)
            except engine.WorkerStartFailed as e:
                warnings.warn(f"{kernel} could not run in a worker process ({e}); it is explained in this process "
                              "with the watchdog alone", RuntimeWarning, stacklevel=2)
                argv = []
                caller["isolation"] = f"this process: its worker process did not start: {e}"
                report, rows = run_core(fn, M)
        elif the_form == "plain":
            report, rows = run_core(fn, M)
        else:
            from .explain_form import explain_form  # noqa: PLC0415 - needs torch
            report, rows, places = explain_form(
                run_core, fn, how, the_form, input_format=p.input_format, output_format=p.output_format,
                size=(M, N, K), seed=int(seed), device=device, layout_a=layout_a, layout_b=layout_b,
                c0_format=c0_format, bias_format=bias_format, out=Path(out) if out is not None else None)
    report.setdefault("epilogue", None)  # an int8 form's (_explain_on_output); None for the engine's reports
    if report.get("oracle_lost") and not argv:
        # Nothing more runs on the GPU in this process: no judging, the report as it stopped.
        e = Explanation(report=report, rows=rows, judged=None, name=kernel)
        raise GpuContextLost(f"gemmlab.explain of {kernel} stopped at its {report['failed_stage']} stage: "
                             f"{report['reason']}", explanation=e)
    judged = None
    if judge_rows:
        form_kw = {} if the_form == "plain" else dict(form=the_form, c0_format=c0_format, bias_format=bias_format,
                                                     **places)
        if recipe:
            # The quantized form on its sources again, judged by where its scales enter (the operands) under the
            # numerics found, whose input is then the dequantized operands (binary64, exact) as judge takes them.
            form_kw = dict(scales="operands")
            judged_as, judged_on = recipe, sources
            judged_numerics = dict(report["numerics"], input="fp64") if report["identified"] else None
        else:
            judged_as, judged_on = p.input_format, distributions
            judged_numerics = report["numerics"] if report["identified"] else None
        judged = judge(fn, input_format=judged_as, output_format=p.output_format, sizes=[(M, N, K)],
                       distributions=judged_on, seeds=[seed], name=kernel, framework=framework, style=how,
                       layout_a=layout_a, layout_b=layout_b, reps=reps, warmup=warmup, device=device,
                       out=judge_out, force=judge_out is not None, errors="rows", numerics=judged_numerics,
                       isolate=isolate, launch_timeout=launch_timeout, **form_kw)
    return Explanation(report=report, rows=rows, judged=judged, name=kernel)


#: Recipes of integer elements whose scales are one per row of A and column of B, which a kernel applies after the
#: exact integer sum (``torch._int_mm`` with a dequantizing epilogue): explained by the epilogue that predicts every
#: output (below).
_SCALED_ON_OUTPUT = ("int8_rowwise",)
_EPILOGUE_NOTE = re.compile(r"(?P<head>explained: the scales enter after the exact sum as|no candidate epilogue "
                            r"predicts every output; the closest is) (?P<name>\w+): (?P<formula>[^;]*?) from the exact "
                            r"int32 sum S: (?P<miss>\d+) of (?P<outputs>\d+) outputs differ from its prediction "
                            r"\(the other candidates: (?P<others>[^)]*)\)")


def _explain_on_output(fn: Callable, recipe: str, kw: dict) -> Explanation:
    """explain of an integer recipe with its scales on the output (int8 rowwise). Every product q_a q_b and every
    partial sum is an integer below 2^31 (|q| <= 127, K 127^2 < 2^31, which judge checks): any order and any node of
    the sum gives the same S, so no tree or node shows in the bits. What decides them is the fp32 epilogue from S:
    judge runs ``fn`` on each distribution's quantized problem with its scales on the output and predicts every
    output under each candidate epilogue (reference/quantized.hpp epilogue_explanation); the kernel is identified
    when one candidate predicts every output of every distribution. The report has the keys the engine's reports
    share (``identified``, ``failed_stage``, ``reason``, ``comparisons``, ``numerics_text``, ``summary``, ...), the
    stages that do not run (``tree``, ``conversion``, ``nodes``, ``numerics``: exact sums hide them) ``None``, and
    ``epilogue`` ({name, formula}); ``out`` gets a row per distribution, its ``.meta.json`` holding the report, and
    judge's rows beside it. The options of the stages that do not run (``compare_outputs``, ``verify_entries``,
    ``schedule``, ``schedule_seconds``, ``gpu``) have nothing to act on; ``reps`` defaults to 2."""
    if kw["output_format"] != "fp32":
        raise ValueError(f"{recipe}: its epilogue is explained from an fp32 output; got output_format "
                         f"{kw['output_format']!r}")
    size = kw["size"]
    M, N, K = (size, size, size) if isinstance(size, int) else tuple(int(x) for x in size)
    sources = list(kw["distributions"])
    name = kw["name"] or getattr(fn, "__name__", None) or "callable"
    if kw["out"] is not None and Path(kw["out"]).suffix != ".csv":
        raise ValueError(f"out must name a .csv file, got {str(kw['out'])!r}")
    judge_out = kw["judge_out"]
    if judge_out is None and kw["out"] is not None:  # the rows the explanation is drawn from, beside it
        judge_out = Path(kw["out"]).with_name(Path(kw["out"]).stem + "_judged.csv")
    t0 = time.perf_counter()
    judged = judge(fn, input_format=recipe, output_format="fp32", sizes=[(M, N, K)], distributions=sources,
                   seeds=[kw["seed"]], name=name, framework=kw["framework"], style=kw["style"],
                   layout_a=kw["layout_a"], layout_b=kw["layout_b"], reps=kw["reps"] or 2, warmup=kw["warmup"],
                   device=kw["device"], out=judge_out, force=judge_out is not None, errors="rows",
                   scales="output", scale_roundings=2, isolate=kw["isolate"], launch_timeout=kw["launch_timeout"])
    comparisons, chosen, reason = [], set(), ""
    for r in judged.itertuples():
        m = _EPILOGUE_NOTE.search(r.note or "")
        if not m:
            reason = reason or f"{r.distribution}: no epilogue explained ({r.status}: {(r.note or '')[:200]})"
            comparisons.append(dict(distribution=r.distribution, outputs=0, mismatches=-1, first_mismatch=""))
            continue
        chosen.add((m["name"], m["formula"]))
        comparisons.append(dict(distribution=r.distribution, outputs=int(m["outputs"]), mismatches=int(m["miss"]),
                                first_mismatch="", others=m["others"]))
    missed = sum(c["mismatches"] for c in comparisons if c["mismatches"] > 0)
    if not reason and missed:
        reason = f"{missed} compared outputs differ from every candidate epilogue's prediction"
    if not reason and len(chosen) > 1:
        reason = "the distributions are predicted by different epilogues: " + ", ".join(sorted(n for n, _ in chosen))
    identified = not reason and len(chosen) == 1
    epi, formula = next(iter(chosen)) if len(chosen) == 1 else ("", "")
    text = (f"exact integer products and sums (int32: any order gives the same S), then the scales on the output "
            f"as {epi}: {formula}, in fp32" if identified else "")
    summary = (f"{'identified' if identified else 'UNIDENTIFIED (epilogue: ' + reason + ')'}\n"
               f"  {recipe}: both operands integers, their scales one per row of A and column of B; the sum is exact, "
               f"so no tree or node shows in the bits (the tree and nodes stages do not run)\n"
               + "".join(f"  {c['distribution']}: {c['mismatches']} of {c['outputs']} outputs differ from the "
                         f"prediction (the other candidates: {c.get('others', '')})\n" for c in comparisons)
               + (f"  numerics: {text}\n" if text else ""))
    report = dict(identified=identified, failed_stage="" if identified else "epilogue", reason=reason,
                  oracle_lost=False, gemm_check="", tree=None, conversion=None, nodes=None, schedule={},
                  comparisons=comparisons, stages=[], numerics=None, numerics_text=text, bound=None, behaves_like=[],
                  signature=f"{recipe}|exact|{epi}" if identified else "", quantized=True, dequantization=None,
                  epilogue=dict(name=epi, formula=formula) if identified else None, launches=None,
                  seconds=time.perf_counter() - t0, first_call_seconds=0.0, predicted_on_gpu=0, summary=summary)
    rows = pd.DataFrame([dict(kernel=name, M=M, N=N, K=K, seed=kw["seed"], distribution=c["distribution"],
                              identified=identified, failed_stage=report["failed_stage"], reason=reason,
                              numerics=text, compared_outputs=c["outputs"], mismatches=c["mismatches"])
                         for c in comparisons])
    if kw["out"] is not None:
        csv = Path(kw["out"])
        csv.parent.mkdir(parents=True, exist_ok=True)
        rows.to_csv(csv, index=False)
        from .results import write_summary_meta  # noqa: PLC0415
        meta = write_summary_meta(csv, [judge_out], f"gemmlab.explain {name} --input-format={recipe}",
                                  note="an integer recipe with its scales on the output: the epilogue judge explains")
        with_report = dict(json.loads(meta.read_text()), report=report)  # as the engine's explain metadata holds it
        tmp = meta.with_name(meta.name + ".tmp")
        tmp.write_text(json.dumps(with_report, indent=2) + "\n")
        tmp.replace(meta)
    return Explanation(report=report, rows=rows, judged=judged if kw["judge_rows"] else None, name=name)


def _explain_in_worker(fn: Callable, kw: dict) -> int:
    """A worker process of explain (``gemmlab._worker``): the plain explanation, its stages and
    launches told to the parent as they go (gemmlab._gpu.explain(..., serve=True)); it writes the CSV."""
    gpu = gpu_module(kw["device"])
    gpu.select_model(int(kw["device"]), kw.get("gpu") or "")  # the parent's choice of tensor-core model
    _take_torch_state(kw.get("torch_state"))
    p = _prepare(fn, kw["name"], kw["framework"], kw["style"], kw["input_format"], kw["output_format"], "unknown",
                 kw["device"], None, "gemmlab.explain", quantized=kw.get("recipe"))
    M, N, K = (kw["size"],) * 3 if isinstance(kw["size"], int) else tuple(int(x) for x in kw["size"])
    gpu.explain(p.launcher, kw["framework"], p.kernel, p.input_format, p.output_format, kw["layout_a"], kw["layout_b"],
                p.how == "return", M, N, K, list(kw["distributions"]), int(kw["seed"]), int(kw["compare_outputs"]),
                int(kw["verify_entries"]), int(kw["device"]), p.stream, _known_kernels(), kw["csv"],
                json.dumps(kw["caller"]), kw["command_line"], bool(kw["schedule"]), float(kw["schedule_seconds"]), "",
                launch_timeout=float(kw["launch_timeout"]), serve=True, quantized=kw.get("recipe") or "")
    return 0
