"""``gemmlab.explain`` of a form: C = s (alpha A B + beta C0 + bias), batched or grouped (reference/gemm_form.hpp).

The product is explained by gemmlab.explain's stages through a *core* callable: the user's callable on
the same form with its epilogue made neutral (C0 and the bias zero, alpha 1, the scale 1), so that the
kernel, its tree and its nodes are the ones the form runs. A batched form is explained at batch index 0
with the same A and B at every index; a grouped form at its largest group, each other group holding the
first rows of that group's A. On every call of the core, each batch index's (group's) bits are compared
with index 0's (the explained group's): a tree that depends on the index or the group's size shows there.

Then the epilogue. Each part (the bias, beta C0) has three candidate places:
``accumulator_start`` (the accumulator's first value, summed into the products' tree),
``before_output_rounding`` (added to alpha times the accumulated sum in fp32, the output rounded once) and
``after_output_rounding`` (the output rounded, the part added, the output rounded again). Dyadic probes
whose outputs under each candidate are exact tell them apart: products +H and -H with the part far
below H's ulp (the start value is lost, the others keep it), and a sum a third of an output ulp above a
value of the output format with the part another third (one rounding goes up, two stay). alpha below 1 is
probed where a product can reach fp32's range: applied to the accumulated sum the sum overflows, folded
into the operands it does not. A probe whose candidates give the same bits says so (an fp32 output: one
rounding or two are the same bits).

Last, the whole form is predicted bit for bit on the distributions the product was compared on: the
product's prediction before the output rounding (gemmlab.explain's composition), then the epilogue found,
compared with the callable's C at the same entries, every batch index and group included.
"""

from __future__ import annotations

import json
import math
import tempfile
from datetime import datetime, timezone
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from . import _core
from .formats import format_info, round_to, to_bits
from .gpu import form_text

PLACES = ("accumulator_start", "before_output_rounding", "after_output_rounding")
PLACE_WORDS = {
    "accumulator_start": "as the accumulator's first value, inside the products' sum",
    "before_output_rounding": "after the accumulation, in fp32, before the output's one rounding",
    "after_output_rounding": "after the output is rounded, then rounded again",
}

_TORCH_DTYPES = {"fp32": "float32", "tf32": "float32", "fp16": "float16", "bf16": "bfloat16",
                 "e4m3": "float8_e4m3fn", "e5m2": "float8_e5m2"}
_BITS_DTYPES = {1: "uint8", 2: "int16", 4: "int32"}


@dataclass
class Form:
    """A form's parts, parsed from its canonical text (``gemmlab.form_text``)."""
    text: str
    alpha: float | None = None
    beta: float | None = None
    c0: str | None = None
    bias_kind: str | None = None  # "column" or "row"
    bias: str | None = None
    batch: int = 1
    groups: list[int] | None = None
    scale: float | None = None

    @staticmethod
    def parse(text: str, M: int) -> Form:
        f = Form(text)
        for part in [] if text == "plain" else text.split(","):
            key, _, value = part.partition("=")
            if key == "alpha":
                f.alpha = float(value)
            elif key == "beta":
                f.beta = float(value)
            elif key == "c0":
                f.c0 = value
            elif key == "bias":
                f.bias_kind, _, f.bias = value.partition(":")
            elif key == "batch":
                f.batch = int(value)
            elif key == "groups":
                rows = value.split("+")
                fixed = [int(r) for r in rows if r != "*"]
                f.groups = [int(r) if r != "*" else M - sum(fixed) for r in rows]
                if sum(f.groups) != M or min(f.groups) < 1:
                    raise ValueError(f"groups {value} do not add up to M = {M} rows")
            elif key == "scale":
                f.scale = float(value)
            else:
                raise ValueError(f"form part {key!r} is not known to explain")
        if f.c0 is not None and f.beta is None:
            f.beta = 1.0
        return f

    def parts(self) -> list[str]:
        return (["bias"] if self.bias else []) + (["c0"] if self.c0 else [])


def _torch():
    import torch  # noqa: PLC0415 - only forms need it
    return torch


def _dtype(fmt: str):
    return getattr(_torch(), _TORCH_DTYPES[fmt])


def _bits_of(t, fmt: str) -> np.ndarray:
    """The bit patterns of a torch tensor in ``fmt`` (on the host, as int64)."""
    torch = _torch()
    size = torch.empty((), dtype=_dtype(fmt)).element_size()
    v = t.contiguous().view(getattr(torch, _BITS_DTYPES[size])).cpu().numpy().astype(np.int64)
    return v & ((1 << (8 * size)) - 1)


def _stack(X, n: int):
    """n copies of matrix X along a new first axis, each with X's layout (row- or column-major)."""
    if X.is_contiguous():
        return X.unsqueeze(0).expand(n, *X.shape).contiguous()
    return X.t().unsqueeze(0).expand(n, X.shape[1], X.shape[0]).contiguous().transpose(1, 2)


class _Shaper:
    """Builds the form's operands from one problem's A (rows, K) and B (K, N), and reads back the
    explained problem's C: batch index 0, or the explained (largest) group."""

    def __init__(self, form: Form, rows: int, N: int, device: int):
        self.form, self.rows, self.N, self.device = form, rows, N, device
        torch = _torch()
        if form.groups:
            self.gx = max(range(len(form.groups)), key=lambda g: (form.groups[g], g))
            self.starts = np.concatenate([[0], np.cumsum(form.groups)[:-1]]).astype(int).tolist()
            self.M_total = sum(form.groups)
            self.offs = torch.tensor(np.cumsum(form.groups), dtype=torch.int32, device=f"cuda:{device}")
        self.differing = None  # per batch index / group: calls whose bits differed from the explained one
        self.calls = 0

    @property
    def others(self) -> list[int]:
        f = self.form
        if f.groups:
            return [g for g in range(len(f.groups)) if g != self.gx]
        return list(range(1, f.batch))

    def operands(self, A, B):
        f = self.form
        if f.groups:
            torch = _torch()
            A_all = torch.cat([A[: min(m, self.rows)] for m in f.groups]).contiguous()
            return A_all, _stack(B, len(f.groups))
        if f.batch > 1:
            return _stack(A, f.batch), _stack(B, f.batch)
        return A, B

    def c_rows(self) -> int:
        return self.M_total if self.form.groups else self.rows

    def explained(self, C):
        if self.form.groups:
            return C[self.starts[self.gx]: self.starts[self.gx] + self.rows]
        return C[0] if self.form.batch > 1 else C

    def check_others(self, C):
        """Counts, on the GPU, the calls where another batch index or group differs from the explained one."""
        torch = _torch()
        if not self.others:
            return
        size = C.element_size()
        bits = C.view(getattr(torch, _BITS_DTYPES[size]))
        mine = self.explained(bits)
        if self.form.groups:
            d = torch.stack([(bits[self.starts[g]: self.starts[g] + self.form.groups[g]]
                              != mine[: self.form.groups[g]]).any() for g in self.others])
        else:
            d = (bits[1:] != bits[0:1]).flatten(1).any(1)
        self.differing = d.to(torch.int64) if self.differing is None else self.differing + d
        self.calls += 1

    def others_report(self) -> dict:
        f = self.form
        if not self.others:
            return {}
        counts = [0] * len(self.others) if self.differing is None else self.differing.cpu().tolist()
        what = "group" if f.groups else "batch index"
        names = [f"{f.groups[g]} rows" for g in self.others] if f.groups else [str(b) for b in self.others]
        explained = f"the group of {f.groups[self.gx]} rows" if f.groups else "batch index 0"
        same = all(c == 0 for c in counts)
        if same:
            words = (f"the same bits at every {what} as at {explained} on all {self.calls} calls of the explanation "
                     f"(tree, conversion, node probes and the full comparisons): one tree for every {what}"
                     + (", whatever the group's size" if f.groups else ""))
        else:
            bad = [f"{n} ({c} of {self.calls} calls)" for n, c in zip(names, counts) if c]
            words = f"bits differ from {explained} at {what} " + ", ".join(bad) + f": the order depends on the {what}"
        return {"what": what, "explained": explained, "compared": names, "calls": self.calls,
                "differing_calls": counts, "same": same, "words": words}


def _neutral_c0(form: Form) -> float:
    """C0 whose beta C0 is -0 (beta negative: +0)."""
    return 0.0 if (form.beta or 1.0) < 0 else -0.0


def _kwargs(form: Form, shaper: _Shaper, *, C0=None, bias=None, neutral: bool, c0_format: str, bias_format: str):
    """The keyword arguments gemmlab passes for this form (gpu.FORM_KEYWORDS), the epilogue neutral or not."""
    torch = _torch()
    dev = f"cuda:{shaper.device}"
    kw = {}
    rows = shaper.c_rows()
    # The neutral value of an add is -0, not +0: x + (-0) = x for every x, where -0 + (+0) = +0 would turn the
    # sign of a negative sum rounded to zero (an epilogue that adds after the output rounding shows it).
    if form.c0:
        shape = (form.batch, rows, shaper.N) if form.batch > 1 else (rows, shaper.N)
        kw["C0"] = (torch.full(shape, _neutral_c0(form), dtype=_dtype(c0_format), device=dev)
                    if neutral or C0 is None else C0)
        kw["beta"] = float(form.beta)
    if form.bias:
        n = rows if form.bias_kind == "row" else shaper.N
        kw["bias"] = (torch.full((n,), -0.0, dtype=_dtype(bias_format), device=dev)
                      if neutral or bias is None else bias)
    if form.alpha is not None:
        kw["alpha"] = 1.0 if neutral else float(form.alpha)
    if form.scale is not None:
        kw["scale"] = 1.0 if neutral else float(form.scale)
    if form.groups:
        kw["offs"] = shaper.offs
    return kw


def _call(fn, how: str, A, B, kw, shaper: _Shaper, output_format: str):
    """One call of the user's callable on the form; returns the whole C (every batch index / group)."""
    torch = _torch()
    if how == "out":
        f = shaper.form
        shape = (f.batch, shaper.c_rows(), shaper.N) if f.batch > 1 else (shaper.c_rows(), shaper.N)
        C = torch.empty(shape, dtype=_dtype(output_format), device=A.device)
        fn(A, B, C, **kw)
        return C
    r = fn(A, B, **kw)
    return r[0] if isinstance(r, (tuple, list)) else r


# --- the epilogue's candidates, exactly --------------------------------------------------------------------

def _f32(x):
    return np.float64(np.float32(x)) if np.ndim(x) == 0 else np.asarray(x, np.float32).astype(np.float64)


def _add32(a, b):
    return _f32(np.float32(a) + np.float32(b))


def _mul32(a, b):
    return _f32(np.float32(a) * np.float32(b))


def _rnd(fmt: str, x):
    return x if fmt == "fp32" else round_to(fmt, x)


def _fma32(a, b, c):
    """fp32 fma(a, b, c) (a, b, c fp32 values): a b exact in binary64, the sum's error by TwoSum, and the one case
    where rounding the binary64 sum to fp32 differs from rounding the exact sum (a binary64 sum exactly halfway
    between two fp32 values, the error pulling it to one side) corrected."""
    a, b, c = (np.asarray(x, np.float64) for x in (a, b, c))
    p = a * b
    s = p + c
    bp = s - p
    e = (p - (s - bp)) + (c - bp)
    r = np.asarray(np.float32(s), np.float64)
    other = np.asarray(np.nextafter(np.float32(r), np.float32(np.where(s > r, np.inf, -np.inf))), np.float64)
    tie = (s != r) & (np.abs(s - r) == np.abs(other - r) / 2) & (e != 0) & (np.sign(e) == np.sign(s - r))
    out = np.where(tie, other, r)
    return out if out.ndim else np.float64(out)


#: How alpha A B, beta C0 and the bias are combined in fp32 (the full comparison tries each where alpha or beta is
#: not a power of two, or both parts are present; the probes' values make them agree there).
ARITHMETIC = {
    "separate": "alpha times the sum rounded, then beta C0 added, then the bias, each add rounded",
    "fma_alpha_c0": "fma(alpha, sum, beta C0) (one rounding), then the bias added",
    "fma_beta": "fma(beta, C0, alpha times the sum rounded), then the bias added",
    "fma_alpha_bias": "fma(alpha, sum, bias) (one rounding), then beta C0 added",
    "bias_first": "alpha times the sum rounded, then the bias added, then beta C0, each add rounded",
    "fma_alpha_bias_fma_beta": "fma(beta, C0, fma(alpha, sum, bias)) (CUTLASS's LinCombPerRowBias order)",
    "fma_beta_bias_fma_alpha": "fma(alpha, sum, fma(beta, C0, bias))",
    "bias_first_fma_beta": "alpha times the sum rounded, the bias added, then fma(beta, C0, that)",
    "c0_bias_first": "beta C0 rounded plus the bias, rounded, then added to alpha times the sum rounded",
    "fma_alpha_c0_bias": "fma(alpha, sum, beta C0 rounded plus the bias, rounded)",
}


def epilogue(places: dict[str, str], acc, *, alpha: float, beta_c0, bias, scale: float, output: str,
             arithmetic: str = "separate", beta: float = 1.0, c0=None):
    """C's value under the candidate ``places`` ({"bias": place, "c0": place}) from the accumulator's value
    ``acc`` (which holds a part placed at ``accumulator_start`` already): alpha times the sum in fp32, the
    parts before the output rounding added in fp32 as ``arithmetic`` (ARITHMETIC) says (``fma_beta`` needs
    ``beta`` and ``c0``, beta_c0 being their product rounded), the scale, the output rounding, then the parts
    after it, each add rounded to the output again. Scalars or numpy arrays."""
    before = [p for p in ("c0", "bias") if places.get(p) == "before_output_rounding"]
    values = {"c0": beta_c0, "bias": bias}
    both = {
        "fma_alpha_bias_fma_beta": lambda: _fma32(beta, c0, _fma32(alpha, acc, bias)),
        "fma_beta_bias_fma_alpha": lambda: _fma32(alpha, acc, _fma32(beta, c0, bias)),
        "bias_first_fma_beta": lambda: _fma32(beta, c0, _add32(_mul32(alpha, acc), bias)),
        "c0_bias_first": lambda: _add32(_mul32(alpha, acc), _add32(beta_c0, bias)),
        "fma_alpha_c0_bias": lambda: _fma32(alpha, acc, _add32(beta_c0, bias)),
    }
    if arithmetic in both and set(before) == {"c0", "bias"}:
        t = both[arithmetic]()
        rest = []
    elif arithmetic == "fma_alpha_c0" and "c0" in before:
        t = _fma32(alpha, acc, beta_c0)
        rest = [p for p in before if p != "c0"]
    elif arithmetic == "fma_alpha_bias" and "bias" in before:
        t = _fma32(alpha, acc, bias)
        rest = [p for p in before if p != "bias"]
    elif arithmetic == "fma_beta" and "c0" in before:
        t = _fma32(beta, c0, _mul32(alpha, acc))
        rest = [p for p in before if p != "c0"]
    else:
        t = _mul32(alpha, acc)
        rest = before[::-1] if arithmetic == "bias_first" else before
    for part in rest:
        t = _add32(t, values[part])
    t = _mul32(scale, t)
    y = _rnd(output, t)
    for part in ("c0", "bias"):
        if places.get(part) == "after_output_rounding":
            y = _rnd(output, _add32(y, values[part]))
    return y


def _candidates(parts: list[str]) -> list[dict[str, str]]:
    out = [{}]
    for p in parts:
        out = [dict(c, **{p: place}) for c in out for place in PLACES]
    return out


def _product_of(v: float, fmt: str) -> tuple[float, float]:
    """(a, b) in ``fmt`` with a b = v exactly (v = 3 2^-m or a power of two)."""
    tiny = 2.0 ** format_info(fmt).emin  # normal operands only (an fp8 multiplier's subnormals aside)
    for s in range(0, 160):
        for b in (2.0 ** -s, 2.0 ** s):
            a = v / b
            if tiny <= abs(a) < math.inf and b >= tiny and _core.is_representable(fmt, np.array([a]))[0] \
                    and _core.is_representable(fmt, np.array([b]))[0]:
                return a, b
    raise ValueError(f"no product of two {fmt} values is {v!r}")


@dataclass
class Probe:
    """One probe: at each entry, A's row holds a[k] and B's column b[k] at k = 0, 1 (0 elsewhere), the bias
    (at the entry's column or row) ``bias`` and C0 ``c0``; ``acc`` is the accumulated sum without any part,
    ``start`` the sum with the parts placed at the accumulator's start (by part), as every tree gives them."""
    name: str
    part: str
    a: tuple[float, float]
    b: tuple[float, float]
    bias: float
    c0: float
    acc: float
    start: dict


def _probes(form: Form, input_format: str, output: str, bias_format: str, c0_format: str) -> list[Probe]:
    """The probes that tell each part's places apart, the values chosen so that every candidate's output is
    exact and within every format's range."""
    alpha = 1.0 if form.alpha is None else form.alpha
    scale = 1.0 if form.scale is None else form.scale
    beta = 1.0 if form.beta is None else form.beta
    probes = []
    e = min(15, format_info(input_format).emax)
    H = 2.0 ** (2 * e)
    p_out = format_info(output).precision - 1
    # A magnitude T whose scaled value s alpha T is near 1 (the output's normal range), a power of two.
    T = 2.0 ** round(-math.log2(abs(alpha * scale)))
    for part in form.parts():
        fmt = bias_format if part == "bias" else c0_format
        # 1. +H and -H, the part 2^-32 H: kept unless it is the accumulator's first value (then lost).
        x = 2.0 ** (2 * e - 32)
        x = _rnd(fmt, x / beta) if part == "c0" else x  # C0 holds x / beta: beta C0 = x
        probes.append(Probe(f"{part}_absorbed", part, (2.0 ** e, 2.0 ** e), (2.0 ** e, -(2.0 ** e)),
                            x if part == "bias" else -0.0, x if part == "c0" else _neutral_c0(form), 0.0, {part: 0.0}))
        # 2. A sum 3/8 of an output ulp above T, the part another 3/8 (alpha times it, in the sum's scale):
        # rounded once the output goes up one ulp, rounded twice it stays at T.
        if p_out < 23:
            u = 2.0 ** -p_out
            small = 0.375 * u * T
            a1, b1 = _product_of(small, input_format)
            a0, b0 = _product_of(T, input_format)
            want = _f32(alpha * small)
            x = _rnd(fmt, want / beta) if part == "c0" else _rnd(fmt, want)
            acc = _add32(T, small)
            start_value = _mul32(beta, x) if part == "c0" else x
            probes.append(Probe(f"{part}_rounded_once_or_twice", part, (a0, a1), (b0, b1),
                                x if part == "bias" else -0.0, x if part == "c0" else _neutral_c0(form), acc,
                                {part: _add32(start_value, acc)}))
    return probes


def _predict(probe: Probe, places: dict[str, str], form: Form, output: str) -> float:
    beta = 1.0 if form.beta is None else form.beta
    acc = probe.acc
    if any(places.get(p) == "accumulator_start" for p in probe.start):
        acc = probe.start[probe.part] if places.get(probe.part) == "accumulator_start" else acc
    bias = -0.0 if places.get("bias") == "accumulator_start" else probe.bias
    c0 = -0.0 if places.get("c0") == "accumulator_start" else _mul32(beta, probe.c0)
    return epilogue(places, acc, alpha=1.0 if form.alpha is None else form.alpha, beta_c0=c0, bias=bias,
                    scale=1.0 if form.scale is None else form.scale, output=output)


def _alpha_probe(form: Form, input_format: str, output: str) -> Probe | None:
    """alpha below 1, applied to the accumulated sum or folded into the operands: one product of 2^128 overflows
    fp32 in the sum; alpha times it does not. None where no product of the input format reaches it."""
    if form.alpha is None or not 0 < abs(form.alpha) < 1 or format_info(input_format).emax < 64:
        return None
    return Probe("alpha_on_the_sum", "alpha", (2.0 ** 64, 0.0), (2.0 ** 64, 0.0), -0.0, _neutral_c0(form), math.inf,
                 {"alpha": _f32(form.alpha * 2.0 ** 128)})


def _alpha_predict(probe: Probe, where: str, form: Form, output: str) -> float:
    acc = probe.acc if where == "on_the_sum" else probe.start["alpha"]
    alpha = form.alpha if where == "on_the_sum" else 1.0
    scale = 1.0 if form.scale is None else form.scale
    return _rnd(output, _mul32(scale, _mul32(alpha, acc)))


def _probe_entries(rows: int, N: int) -> list[tuple[int, int]]:
    """Four entries in distinct rows and columns: the first, a tile edge, the middle and the last."""
    cand = [(0, 0), (min(rows - 1, 127), min(N - 1, 129)), (rows // 2 + 1, N // 2 + 3), (rows - 1, N - 1)]
    out, used_i, used_j = [], set(), set()
    for i, j in cand:
        if 0 <= i < rows and 0 <= j < N and i not in used_i and j not in used_j:
            out.append((i, j))
            used_i.add(i)
            used_j.add(j)
    return out


def _layout(X, layout: str):
    """X (a row-major tensor) as the transposed view of a column-major buffer where ``layout`` is "col"."""
    return X.t().contiguous().t() if layout == "col" else X


def _run_probe(probe: Probe, ctx) -> list[int]:
    """The output bits of the callable at the probe's entries (the explained problem's C)."""
    torch = _torch()
    rows, N, K = ctx.rows, ctx.N, ctx.K
    dev = f"cuda:{ctx.device}"
    f32 = torch.float32  # every probe value is exact in fp32
    A = torch.zeros((rows, K), dtype=f32, device=dev)
    B = torch.zeros((K, N), dtype=f32, device=dev)
    entries = _probe_entries(rows, N)
    shaper = ctx.shaper
    total_rows = shaper.c_rows()
    row0 = shaper.starts[shaper.gx] if ctx.form.groups else 0
    bias = torch.full((total_rows if ctx.form.bias_kind == "row" else N,), -0.0, dtype=f32, device=dev)
    C0 = torch.full((total_rows, N), _neutral_c0(ctx.form), dtype=f32, device=dev) if ctx.form.c0 else None
    for i, j in entries:
        A[i, 0], A[i, 1] = probe.a
        B[0, j], B[1, j] = probe.b
        bias[row0 + i if ctx.form.bias_kind == "row" else j] = probe.bias
        if C0 is not None:
            C0[row0 + i, j] = probe.c0
    A = _layout(A.to(_dtype(ctx.input_format)), ctx.layout_a)
    B = _layout(B.to(_dtype(ctx.input_format)), ctx.layout_b)
    if C0 is not None:
        C0 = C0.to(_dtype(ctx.c0_format))
        if ctx.form.batch > 1:
            C0 = C0.unsqueeze(0).expand(ctx.form.batch, *C0.shape).contiguous()
    kw = _kwargs(ctx.form, shaper, C0=C0, bias=bias.to(_dtype(ctx.bias_format)), neutral=False,
                 c0_format=ctx.c0_format, bias_format=ctx.bias_format)
    Aop, Bop = shaper.operands(A, B)
    C = shaper.explained(_call(ctx.fn, ctx.how, Aop, Bop, kw, shaper, ctx.output_format))
    torch.cuda.synchronize(ctx.device)
    return [int(b) for b in _bits_of(torch.stack([C[i, j] for i, j in entries]), ctx.output_format)]


def _bits(fmt: str, v) -> int:
    return int(to_bits(fmt, np.array([float(v)]))[0])


def epilogue_stage(ctx, run_probe: Callable = _run_probe) -> dict:
    """The probes, each candidate's prediction and what the kernel wrote (``run_probe(probe, ctx)``: the output
    bits at the probe's entries); the places left for each part."""
    form, out = ctx.form, ctx.output_format
    parts = form.parts()
    alive = _candidates(parts)
    records = []
    for probe in _probes(form, ctx.input_format, out, ctx.bias_format, ctx.c0_format):
        got = run_probe(probe, ctx)
        preds = {json.dumps(c, sort_keys=True): _predict(probe, c, form, out) for c in _candidates(parts)}
        informative = len({_bits(out, v) for v in preds.values()}) > 1
        kept = [c for c in alive if all(g == _bits(out, preds[json.dumps(c, sort_keys=True)]) for g in got)]
        records.append({"probe": probe.name, "part": probe.part, "a": list(probe.a), "b": list(probe.b),
                        "bias": probe.bias, "c0": probe.c0, "kernel_bits": sorted(set(got)),
                        "predicted_bits": {k: _bits(out, v) for k, v in preds.items()},
                        "informative": informative, "ruled_out": len(alive) - len(kept)})
        alive = kept
    result = {"probes": records, "parts": {}}
    for part in parts:
        places = sorted({c[part] for c in alive}, key=PLACES.index)
        if not places:
            words = "no candidate place explains the probes' outputs (see the probes)"
        elif len(places) == 1:
            words = PLACE_WORDS[places[0]]
        else:
            words = "not told apart: " + " or ".join(PLACE_WORDS[p] for p in places) + (
                " (the same bits for an fp32 output)" if out == "fp32" else "")
        result["parts"][part] = {"places": places, "words": words}
    result["candidates"] = alive
    ap = _alpha_probe(form, ctx.input_format, out)
    if form.alpha is not None:
        if ap is None:
            why = ("alpha is 1" if form.alpha == 1 else
                   f"no product of two {ctx.input_format} values reaches fp32's range" if abs(form.alpha) < 1 else
                   "alpha above 1 overflows wherever it is applied")
            exact = math.frexp(form.alpha)[0] == 0.5
            result["alpha"] = {"where": [], "words": f"not probed: {why}" + (
                f"; alpha = {form.alpha:g} is a power of two: applied to the sum or folded into the operands, "
                "the bits are the same wherever nothing under- or overflows" if exact else "")}
        else:
            got = run_probe(ap, ctx)
            preds = {w: _alpha_predict(ap, w, form, out) for w in ("on_the_sum", "on_the_operands")}
            where = [w for w, v in preds.items() if all(g == _bits(out, v) for g in got)]
            records.append({"probe": ap.name, "part": "alpha", "a": list(ap.a), "b": list(ap.b), "bias": 0.0,
                            "c0": 0.0, "kernel_bits": sorted(set(got)),
                            "predicted_bits": {w: _bits(out, v) for w, v in preds.items()},
                            "informative": len({_bits(out, v) for v in preds.values()}) > 1,
                            "ruled_out": 2 - len(where)})
            words = {"on_the_sum": "applied to the accumulated sum (one product of 2^128 overflows before it)",
                     "on_the_operands": "folded into the operands or products (2^128 alpha stays finite)"}
            result["alpha"] = {"where": where, "words": " or ".join(words[w] for w in where) if where else
                               "neither the sum nor the operands: the probe's output is unexplained"}
    return result


def _read_predictions(path: Path) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """The composition's predictions file: per distribution, rows, columns and the values (exact)."""
    by: dict[str, list] = {}
    for line in path.read_text().splitlines():
        d, i, j, v = line.split()
        by.setdefault(d, []).append((int(i), int(j), float.fromhex(v)))
    return {d: (np.array([t[0] for t in r]), np.array([t[1] for t in r]), np.array([t[2] for t in r]))
            for d, r in by.items()}


def compare_stage(ctx, places: dict[str, str], predictions: dict) -> list[dict]:
    """The whole form predicted from the product's prediction and the epilogue found, compared bit for bit with
    the callable's C at the composition's entries on each distribution (every batch index and group), under
    each of ARITHMETIC's ways of combining the epilogue's terms where they can differ; the rows of the one
    that predicts every output (``arithmetic``; ``arithmetic_exact``: every one that does)."""
    torch = _torch()
    form, out = ctx.form, ctx.output_format
    dev = f"cuda:{ctx.device}"
    alpha = 1.0 if form.alpha is None else form.alpha
    beta = 1.0 if form.beta is None else form.beta
    scale = 1.0 if form.scale is None else form.scale
    shaper = ctx.shaper
    rows_total = shaper.c_rows()
    row0 = shaper.starts[shaper.gx] if form.groups else 0
    pow2 = all(math.frexp(v)[0] == 0.5 for v in (alpha, beta) if v != 0)
    arithmetic = ["separate"] if pow2 and len(places) < 2 else list(ARITHMETIC)
    results = []
    for d, (I, J, acc) in predictions.items():
        A = _core.generate(d, "A", ctx.rows, ctx.K, ctx.input_format, ctx.seed, 0)
        B = _core.generate(d, "B", ctx.K, ctx.N, ctx.input_format, ctx.seed, 0)
        C0 = _core.generate(form.c0, "A", rows_total, ctx.N, ctx.c0_format, ctx.seed + 1, 0) if form.c0 else None
        nb = rows_total if form.bias_kind == "row" else ctx.N
        bias = _core.generate(form.bias, "B", 1, nb, ctx.bias_format, ctx.seed + 2, 0)[0] if form.bias else None
        f32 = torch.float32  # the generated values are exact in their format, so in fp32
        tA = _layout(torch.from_numpy(A).to(dev, f32).to(_dtype(ctx.input_format)), ctx.layout_a)
        tB = _layout(torch.from_numpy(B).to(dev, f32).to(_dtype(ctx.input_format)), ctx.layout_b)
        tC0 = None
        if C0 is not None:
            tC0 = torch.from_numpy(C0).to(dev, f32).to(_dtype(ctx.c0_format))
            if form.batch > 1:
                tC0 = tC0.unsqueeze(0).expand(form.batch, *tC0.shape).contiguous()
        tbias = torch.from_numpy(bias).to(dev, f32).to(_dtype(ctx.bias_format)) if bias is not None else None
        kw = _kwargs(form, shaper, C0=tC0, bias=tbias, neutral=False, c0_format=ctx.c0_format,
                     bias_format=ctx.bias_format)
        Aop, Bop = shaper.operands(tA, tB)
        C = _call(ctx.fn, ctx.how, Aop, Bop, kw, shaper, out)
        torch.cuda.synchronize(ctx.device)
        c0 = C0[row0 + I, J] if C0 is not None else -0.0
        b = (bias[row0 + I] if form.bias_kind == "row" else bias[J]) if bias is not None else -0.0
        wants = {a: np.asarray(to_bits(out, epilogue(places, acc, alpha=alpha, beta_c0=_mul32(beta, c0), bias=b,
                                                     scale=scale, output=out, arithmetic=a, beta=beta, c0=c0)),
                               dtype=np.int64) for a in arithmetic}
        # The explained problem, then every other batch index / group at the entries it has.
        views = [("explained", shaper.explained(C), np.ones(len(I), bool))]
        for o in shaper.others:
            if form.groups:
                m = form.groups[o]
                views.append((f"group of {m} rows", C[shaper.starts[o]: shaper.starts[o] + m], I < m))
            else:
                views.append((f"batch index {o}", C[o], np.ones(len(I), bool)))
        got = [(what, mask, _bits_of(Cv[torch.from_numpy(I[mask]).to(dev), torch.from_numpy(J[mask]).to(dev)], out))
               for what, Cv, mask in views]
        by = {}
        for a, want in wants.items():
            compared = mismatches = 0
            first = ""
            for what, mask, g in got:
                bad = np.nonzero(g != want[mask])[0]
                compared += int(mask.sum())
                mismatches += len(bad)
                if len(bad) and not first:
                    k = bad[0]
                    first = f"{what} C({I[mask][k]},{J[mask][k]}): predicted {want[mask][k]:#x}, kernel {g[k]:#x}"
            by[a] = {"distribution": d, "outputs": compared, "mismatches": mismatches, "first_mismatch": first}
        results.append(by)
    # The arithmetic that predicts every output of every distribution (the first of ARITHMETIC's order), else
    # the one that mispredicts the fewest.
    total = {a: sum(r[a]["mismatches"] for r in results) for a in arithmetic}
    best = min(arithmetic, key=lambda a: (total[a], arithmetic.index(a)))
    exact = [a for a in arithmetic if total[a] == 0]
    return [dict(r[best], arithmetic=best, arithmetic_exact=exact,
                 arithmetic_mismatches={a: r[a]["mismatches"] for a in arithmetic}) for r in results]


@dataclass
class _Context:
    fn: Callable
    how: str
    form: Form
    rows: int  # the explained problem's rows (a grouped form: its largest group's)
    N: int
    K: int
    device: int
    input_format: str
    output_format: str
    c0_format: str
    bias_format: str
    layout_a: str
    layout_b: str
    seed: int
    shaper: _Shaper


def _summary(report: dict) -> str:
    f = report["form"]
    lines = [f"form {f['form']}: " + ("explained" if f["identified"] else f"not explained ({f['why']})")]
    for part, r in f.get("epilogue", {}).get("parts", {}).items():
        lines.append(f"  {'the bias' if part == 'bias' else 'beta C0'}: {r['words']}")
    if "alpha" in f.get("epilogue", {}):
        lines.append(f"  alpha: {f['epilogue']['alpha']['words']}")
    if f.get("others"):
        lines.append(f"  {f['others']['words']}")
    if f.get("comparisons"):
        c = f["comparisons"][0]
        also = [a for a in c.get("arithmetic_exact", []) if a != c["arithmetic"]]
        lines.append(f"  arithmetic: {ARITHMETIC[c['arithmetic']]}" + (
            f" (the same bits: {', '.join(ARITHMETIC[a] for a in also)})" if also else ""))
    for c in f.get("comparisons", []):
        lines.append(f"  {c['distribution']}: {c['mismatches']} of {c['outputs']} outputs of the form mispredicted"
                     + (f" (first: {c['first_mismatch']})" if c["first_mismatch"] else ""))
    return "\n".join(lines)


def explain_form(run_core: Callable, fn: Callable, how: str, form_text_: str, *, input_format: str, output_format: str,
                 size: tuple[int, int, int], seed: int, device: int, layout_a: str, layout_b: str,
                 c0_format: str | None, bias_format: str | None, out: Path | None) -> tuple[dict, pd.DataFrame, dict]:
    """gemmlab.explain on a form (see the module's text). ``run_core(core, M, predictions_file)`` runs
    gemmlab.explain's stages on the core callable (style "return") and returns (report, rows). Returns the
    report (the product's, with ``report["form"]``), the explain CSV's rows and the places found for
    gemmlab.judge (``bias_placement``, ``c0_placement``)."""
    torch = _torch()
    M, N, K = size
    form = Form.parse(form_text_, M)
    c0_format = c0_format or output_format
    bias_format = bias_format or output_format
    rows = max(form.groups) if form.groups else M
    shaper = _Shaper(form, rows, N, device)
    ctx = _Context(fn, how, form, rows, N, K, device, input_format, output_format, c0_format, bias_format, layout_a,
                   layout_b, seed, shaper)

    def core(A, B):
        kw = _kwargs(form, shaper, neutral=True, c0_format=c0_format, bias_format=bias_format)
        Aop, Bop = shaper.operands(A, B)
        C = _call(fn, how, Aop, Bop, kw, shaper, output_format)
        if not isinstance(C, torch.Tensor) or tuple(C.shape[-1:]) != (N,) or C.dtype != _dtype(output_format):
            return C  # gemmlab.explain reports what is wrong with it
        shaper.check_others(C)
        return shaper.explained(C)

    core.__name__ = getattr(fn, "__name__", "callable")
    with tempfile.TemporaryDirectory(prefix="gemmlab-explain-form-") as tmp:
        pfile = Path(tmp) / "predictions.txt"
        report, rows_df = run_core(core, rows, str(pfile))
        predictions = _read_predictions(pfile) if pfile.exists() else {}
    f = {"form": form.text, "explained_problem": (f"the group of {rows} rows" if form.groups else
                                                  "batch index 0" if form.batch > 1 else "the problem"),
         "identified": False, "why": "", "epilogue": {}, "comparisons": [], "others": {}}
    report["form"] = f

    def finish(judged_places: dict) -> tuple[dict, pd.DataFrame, dict]:
        f["others"] = shaper.others_report()
        if f["others"] and not f["others"]["same"]:
            f["identified"] = False
            f["why"] = (f["why"] + "; " if f["why"] else "") + f["others"]["words"]
        report["summary"] = report["summary"] + "\n" + _summary(report)
        if out is not None:
            _write_form_csv(out, core.__name__, report, size)
        return report, rows_df, judged_places

    if not report["identified"] or report.get("oracle_lost"):
        f["why"] = f"the product was not identified ({report['failed_stage']}: {report['reason']})"
        return finish({})
    try:
        f["epilogue"] = epilogue_stage(ctx)
    except Exception as e:  # noqa: BLE001 - a callable that raises on the probes: say so, never guess
        f["why"] = f"the epilogue's probes failed: {type(e).__name__}: {e}"
        return finish({})
    cands = f["epilogue"]["candidates"]
    parts = f["epilogue"]["parts"]
    if not cands:
        f["why"] = "no candidate place of the epilogue explains the probes' outputs"
    elif any(parts[p]["places"] == ["accumulator_start"] for p in parts):
        f["why"] = ("a part enters as the accumulator's first value: the product's prediction does not hold it, "
                    "so the whole form is not predicted")
    else:
        # Where places are not told apart, they give the same bits on the probes; predict with the first.
        places = {p: next(x for x in parts[p]["places"] if x != "accumulator_start") for p in parts}
        try:
            f["comparisons"] = compare_stage(ctx, places, predictions)
        except Exception as e:  # noqa: BLE001
            f["why"] = f"the form's comparison failed: {type(e).__name__}: {e}"
        else:
            bad = sum(c["mismatches"] for c in f["comparisons"])
            f["identified"] = bad == 0 and bool(f["comparisons"])
            if bad:
                f["why"] = f"{bad} outputs of the form differ from the prediction"
    return finish({f"{p}_placement": ("unknown" if len(r["places"]) != 1 or r["places"][0] == "accumulator_start"
                                       else r["places"][0]) for p, r in parts.items()})


FORM_COLUMNS = ("kernel", "form", "M", "N", "K", "explained_problem", "identified", "bias_placement", "c0_placement",
                "alpha", "every_index_same", "distribution", "outputs", "mismatches", "first_mismatch", "arithmetic",
                "reason")


def _write_form_csv(csv: Path, kernel: str, report: dict, size: tuple[int, int, int]) -> Path:
    """``<csv stem>_form.csv`` beside the explain CSV (one row per distribution compared) and its .meta.json
    (the form's whole report: probes, predictions, what the kernel wrote)."""
    f = report["form"]
    path = csv.with_name(csv.stem + "_form.csv")
    parts = f.get("epilogue", {}).get("parts", {})
    base = {"kernel": kernel, "form": f["form"], "M": size[0], "N": size[1], "K": size[2],
            "explained_problem": f["explained_problem"], "identified": f["identified"],
            "bias_placement": "|".join(parts.get("bias", {}).get("places", [])),
            "c0_placement": "|".join(parts.get("c0", {}).get("places", [])),
            "alpha": "|".join(f.get("epilogue", {}).get("alpha", {}).get("where", [])),
            "every_index_same": f["others"].get("same", "") if f.get("others") else "", "reason": f["why"]}
    rows = [dict(base, **c) for c in f["comparisons"]] or [dict(base, distribution="", outputs=0, mismatches=0,
                                                                  first_mismatch="", arithmetic="")]
    pd.DataFrame(rows, columns=list(FORM_COLUMNS)).to_csv(path, index=False)
    from . import __version__  # noqa: PLC0415
    meta = {"what": "gemmlab.explain of a form: the epilogue's places, probes and the form's bit-for-bit comparison",
            "explain_csv": csv.name, "device_and_command": f"in {csv.stem}.meta.json (the product's explanation)",
            "gemmlab_version": __version__, "date_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "form_report": f, "summary": report["summary"]}
    path.with_suffix("").with_suffix(".meta.json").write_text(json.dumps(meta, indent=1, default=float))
    return path
