"""gemmlab for Python: judge any GEMM kernel's accuracy against an exact reference.

The same code as the gemmlab CLI's reference/ (plain C++, no GPU needed), bound with nanobind:

* ``generate`` / ``generate_problem``: seeded inputs, bit-identical to ``gemmlab run``;
* ``round_to``, ``to_bits``, ``from_bits``, ``format_info``: the number formats;
* ``exact_gemm``, ``exact_dot``, ``mpfr_dot``: the exact reference on the CPU;
* ``inputs`` / ``read_inputs``: ``gemmlab inputs`` folders (A and B as ``gemmlab run`` makes them);
* ``evaluate(A, B, C, output_format=...)``: the statistics row ``gemmlab run`` and ``gemmlab evaluate``
  write (a dict keyed by the CSV columns, ``COLUMNS``; the same C++ function as the CLI);
* ``tc``: the tensor-core model (``tc.dot``, ``tc.mma_tile``, ``tc.emulate``);
* ``load_results``: result CSVs as typed pandas DataFrames;
* ``judge(fn, ...)``: any GEMM callable (torch, Triton, CuPy, JAX) timed and judged on the GPU by the
  engine of ``gemmlab run`` (needs the GPU engine, built where a CUDA toolkit is found; on a CPU-only
  installation it raises ``GpuUnavailable`` saying what to install). ``evaluate`` takes GPU tensors
  too, and judges them on the GPU;
* ``invariance(fn, ...)``: determinism and batch invariance of such a callable, bit for bit, as
  ``gemmlab invariance`` measures a built-in kernel (the same C++);
* ``explain(fn, ...)``: what such a callable does to the numbers (tree, operand conversion, node
  arithmetic, whether its order depends on scheduling), predicted bit for bit. A GPU error after which
  nothing more runs in the process raises ``GpuContextLost``, the rows finished before kept;
* ``explain_diff(a, b, ...)``: where two such callables' numerics differ (tree, scheduling, operand
  conversion, node arithmetic, output conversion), each difference on an input where their bits differ,
  or that they are bit-identical by construction (``gemmlab explain --diff``'s C++).
* ``port(explanation, gpus=[...])``: the same kernel's outputs on other GPU generations, predicted on the
  CPU from its explained numerics and each generation's tensor-core model (``tc.model(name, gpu)``);
* ``judge(fn, input_format="mxfp4" | "mxfp8_e4m3" | "nvfp4" | "int8" | "int4_weight_only", ...)``: a quantized
  kernel, given the quantized tensors in the frameworks' layouts, judged against the exact product of the
  dequantized operands (``quantized_inputs``: the same problem on the host);
* ``form_text(...)``: the canonical text of a form beyond C = A B (alpha, beta C0, a bias, batches, groups, an
  output scale), as ``judge`` takes it and the CSV's ``form`` column writes it;
* ``plot(csv)``: every figure of a run CSV (``gemmlab plot``; needs ``pip install "gemmlab[plots]"``);
* ``plugin_header()``: the C header a plugin is built against (``gemmlab plugin-header``).
"""

from . import _core, tc
from .distributions import (DEFAULT_DISTRIBUTIONS, canonical_name, exact_in, generate, generate_problem,
                            unusable_reason)
from .evaluate import ACC_ROUNDING, bound, evaluate
from .inputs import INPUTS_FORMAT_VERSION, Inputs, inputs, read_inputs
from .plugin import plugin_header
from .gpu import (FORM_KEYWORDS, QUANTIZED_KEYWORDS, GpuContextLost, GpuUnavailable, JudgeError, form_text,
                  framework_metadata, gpu_available, invariance, judge, quantized_recipe)
from .quantized import QuantizedInputs, dequantize, quantized_inputs
from .explain import DEFAULT_EXPLAIN_DISTRIBUTIONS, Explanation, explain
from .explain_diff import KernelDiff, explain_diff
from .figures import PlotError, plot
from .port import DEFAULT_PORT_DISTRIBUTIONS, port
from .formats import FORMATS, QUANTIZED_FORMATS, FormatInfo, format_info, from_bits, is_representable, round_to, to_bits
from .reference import Reference, exact_dot, exact_gemm, mpfr_dot, mpfr_gemm
from .results import COLUMNS, STATUSES, TIMING_COLUMNS, load_results, to_frame

# pyproject.toml's version, compiled into the C++ (the same string as `gemmlab --version`).
__version__: str = _core.version()

__all__ = [
    "ACC_ROUNDING", "COLUMNS", "DEFAULT_DISTRIBUTIONS", "FORMATS", "QUANTIZED_FORMATS", "FormatInfo", "GpuContextLost",
    "GpuUnavailable", "INPUTS_FORMAT_VERSION", "QUANTIZED_KEYWORDS", "QuantizedInputs", "dequantize", "quantized_inputs",
    "quantized_recipe",
    "Inputs", "JudgeError", "PlotError", "FORM_KEYWORDS", "form_text", "framework_metadata", "gpu_available",
    "invariance", "judge", "plot", "plugin_header",
    "explain", "Explanation", "DEFAULT_EXPLAIN_DISTRIBUTIONS", "explain_diff", "KernelDiff", "port",
    "DEFAULT_PORT_DISTRIBUTIONS",
    "Reference", "STATUSES", "TIMING_COLUMNS", "bound", "inputs", "read_inputs",
    "canonical_name", "evaluate", "exact_dot", "exact_gemm", "exact_in", "format_info", "from_bits", "generate",
    "generate_problem", "is_representable", "load_results", "mpfr_dot", "mpfr_gemm", "round_to", "tc", "to_bits",
    "to_frame", "unusable_reason",
]
