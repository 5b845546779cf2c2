"""The tensor-core model: one instruction, and a whole GEMM in a given order of accumulation.

``TcParams`` (reference/tc_model.hpp) describes how one instruction computes d = c + sum a_i b_i:
exact products; the products of a block of ``block_size`` (and C, when it joins) aligned to the
largest exponent keeping F = p_out - 1 + neab fraction bits, the bits shifted out rounded as
``align_rounding`` says; one normalisation and rounding into the output (``output_rounding``).
``published_params`` gives the parameters gemmlab's probes inferred on an H200
(results/probes/README.md); ``model(name, gpu=...)`` any GPU generation's model (reference/tc_gpus.hpp:
Hopper's probed, Volta's, Ampere's, Ada's and Blackwell's fitted to published hardware outputs or taken
from the literature, ``provenance`` says which); ``block_scaled_dot`` Blackwell's block-scaled kinds (a model
from the literature). ``emulate`` composes the model in a kernel's order of
accumulation (reference/kernel_emulation.hpp) and predicts every output bit of such a kernel.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from . import _core
from ._checks import check_format, matrix, representable, vector, whole

#: Blackwell's block-scaled tcgen05 kinds (reference/tc_block_scaled.hpp; ``block_scaled_dot``).
BLOCK_SCALED_KINDS = ("tcgen05_mxf8f6f4", "tcgen05_mxf4", "tcgen05_mxf4nvf4")

TcParams = _core.TcParams


@dataclass(frozen=True)
class Instruction:
    """One instruction gemmlab probes (reference/tc_model.hpp ``InstructionInfo``)."""

    name: str  #: e.g. "mma_m16n8k16_f16_f32", as in the probe CSVs
    input: str
    input_b: str  #: B's format: the input's, except for mixed fp8 (e4m3 x e5m2)
    output: str
    m: int
    n: int
    k: int
    min_cc: int  #: compute capability needed (90: the sm_90a wgmma instructions)


INSTRUCTIONS: dict[str, Instruction] = {d["name"]: Instruction(**d) for d in _core.instructions()}


def instruction(name: str) -> Instruction:
    """The instruction named ``name``; ValueError listing the known ones."""
    try:
        return INSTRUCTIONS[name]
    except KeyError:
        raise ValueError(f"unknown instruction {name!r}; known: {', '.join(INSTRUCTIONS)}") from None


def published_params(name: str) -> TcParams:
    """The model the probes found for an instruction on the H200 (results/probes/README.md): fp16/bf16
    -> fp32: block 16, neab 2 (25 fraction bits), alignment and output truncated toward zero,
    alignment by exponent sum, C joins the alignment, subnormals kept; fp16 -> fp16: neab 15 (the
    same 25 bits) and output to nearest even; tf32: block 8. wgmma and wmma behave as mma.sync.
    fp8 (H100 probes, 2026-11-23): wgmma one block of 32 with the result cut to 13 fraction bits;
    mma.sync m16n8k32 two interleaved fp16 steps and a final round-to-nearest add of C. tf32, bf16
    and fp16 -> fp16: a zero C joins the alignment at emin - 7. ValueError for an instruction with
    no measured model.

    Bound from C++: reference/tc_model.hpp ``measured_hopper_params``, the table the GPU tests use.
    """
    ins = instruction(name)
    p = _core.measured_hopper_params(ins.name)
    if p is None:
        raise ValueError(f"{name}: no published parameters (the fp8 model is an open question, "
                         "results/probes/README.md)")
    return p


def gpus() -> list[dict]:
    """The GPUs gemmlab models: name (as ``gpu=`` takes it), full name, generation, compute capability."""
    return list(_core.tc_gpus())


def generation(gpu: str) -> str:
    """The generation (volta, ampere, ada, hopper, blackwell) a GPU name (``"a100"``, ``"l4"``), an
    architecture (``"sm_89"``) or a generation name stands for; ValueError listing the known ones."""
    return _core.tc_generation(gpu)


def instructions(gpu: str = "hopper") -> list[str]:
    """The instructions a GPU generation has (wgmma: Hopper only; fp8 mma.sync from Ada; tcgen05:
    Blackwell)."""
    return list(_core.tc_instructions_of(gpu))


def model(name: str, gpu: str = "hopper") -> TcParams:
    """``gpu``'s model of instruction ``name`` (``gpu``: a GPU, architecture or generation name; see
    ``gpus()``). ValueError when that generation lacks the instruction (naming the closest it has)."""
    return _core.generation_params(instruction(name).name, gpu)


def provenance(name: str, gpu: str = "hopper") -> tuple[str, str]:
    """Where ``gpu``'s model of ``name`` comes from: ("probed" | "fitted" | "literature", the evidence)."""
    return tuple(_core.tc_provenance(instruction(name).name, gpu))


def dot(params: TcParams, a: npt.ArrayLike, b: npt.ArrayLike, c: float = 0.0) -> float:
    """d = c + sum_i a_i b_i as one instruction with ``params`` computes it.

    a and b (length k, a multiple of ``params.block_size``) must hold values of ``params.input``, c a
    value of ``params.output``; blocks chain, each block's rounded result is the next block's C.
    """
    av, bv = vector(a, "a"), vector(b, "b")
    if av.shape != bv.shape:
        raise ValueError(f"a and b must have the same length, got {av.size} and {bv.size}")
    if av.size == 0 or av.size % params.block_size:
        raise ValueError(f"the length of a and b ({av.size}) must be a positive multiple of block_size "
                         f"({params.block_size})")
    representable(av.reshape(1, -1), params.input, "a")
    representable(bv.reshape(1, -1), params.input, "b")
    representable(np.array([[float(c)]]), params.output, "c")
    return _core.tc_dot(params, av, bv, float(c))


def block_scaled_dot(kind: Literal["tcgen05_mxf8f6f4", "tcgen05_mxf4", "tcgen05_mxf4nvf4"], a: npt.ArrayLike,
                     b: npt.ArrayLike, *, scale_a: npt.ArrayLike, scale_b: npt.ArrayLike, a_format: str | None = None,
                     b_format: str | None = None, block: int | None = None, scale_format: str | None = None,
                     c: float = 0.0) -> float:
    """d = c + sum_i a_i b_i sa sb as Blackwell's block-scaled ``tcgen05.mma`` (kind::mxf8f6f4, mxf4,
    mxf4nvf4) computes it, by MMA-Sim's description: A MODEL FROM THE LITERATURE that no gemmlab probe
    has run (reference/tc_block_scaled.hpp; ``gemmlab tc-eval --gpu b200 -i KIND`` on the command line).

    a and b (length K, a multiple of the kind's k: 32 for mxf8f6f4, 64 otherwise) hold values of
    ``a_format`` and ``b_format``; scale_a and scale_b one scale per ``block`` of K (a float when there is
    one); K > k chains instructions, each one's fp32 result the next one's C. ``None`` takes the kind's
    default: e4m3 elements (mxf4, mxf4nvf4: e2m1), block 32 (mxf4nvf4: 16), ue8m0 scales (mxf4nvf4 at
    16: ue4m3). Bound from C++: ``tc::block_scaled_dot``.
    """
    av, bv = vector(a, "a"), vector(b, "b")
    if av.shape != bv.shape:
        raise ValueError(f"a and b must have the same length, got {av.size} and {bv.size}")
    sa, sb = vector(scale_a, "scale_a"), vector(scale_b, "scale_b")
    return float(_core.block_scaled_dot(kind, av, bv, sa, sb, a_format or "", b_format or "", block or 0,
                                        scale_format or "", float(c)))


def mma_tile(params: TcParams, instruction_name: str, A: npt.ArrayLike, B: npt.ArrayLike,
             C: npt.ArrayLike | None = None) -> np.ndarray:
    """D = A B + C on one tile of the instruction: A (m, k), B (k, n), C and D (m, n)."""
    ins = instruction(instruction_name)
    a, b = matrix(A, "A"), matrix(B, "B")
    c = np.zeros((ins.m, ins.n)) if C is None else matrix(C, "C")
    for name, x, shape in (("A", a, (ins.m, ins.k)), ("B", b, (ins.k, ins.n)), ("C", c, (ins.m, ins.n))):
        if x.shape != shape:
            raise ValueError(f"{name} must be {shape} for {ins.name}, got {x.shape}")
    representable(a, params.input, "A")
    representable(b, params.input, "B")
    representable(c, params.output, "C")
    return np.asarray(_core.mma_tile(params, ins.name, a, b, c))


ORDER_ACCUMULATIONS = ("fma", "in_mma", "external", "promoted")


def _order_accumulation(accumulation: str) -> str:
    if accumulation not in ORDER_ACCUMULATIONS:
        raise ValueError(f"accumulation {accumulation!r} is not an order emulate takes; valid: "
                         f"{', '.join(ORDER_ACCUMULATIONS)}")
    return accumulation


@dataclass(frozen=True)
class Order:
    """A kernel's order of accumulation (what its header comment says about its numerics, as data).

    * ``fma``: acc = fma(a_k, b_k, acc) in fp32 from +0, increasing k (CUDA cores);
    * ``in_mma``: D = mma(A, B, D), k-steps of ``k_step`` in increasing k;
    * ``external``: T = mma(A, B, 0) per k-step, acc = fp32 RN(acc + T);
    * ``promoted``: in_mma for ``promotion_k`` elements of K into a partial, then added to an fp32
      accumulator with RN;
    * ``split_k`` > 1: k-step s goes to partial sum s % split_k, partials added at the end.

    The order-of-accumulation part of the numerics record (reference/numerics.hpp ``Numerics``),
    which ``emulate`` builds from it.
    """

    accumulation: Literal["fma", "in_mma", "external", "promoted"] = "fma"
    instruction: str = "mma_m16n8k16_f16_f32"  #: ignored for fma
    k_step: int = 1  #: products per instruction along K (the instruction's k; 1 for fma)
    promotion_k: int = 0
    split_k: int = 1
    output: str = "fp32"

    def __post_init__(self) -> None:
        _order_accumulation(self.accumulation)
        whole(self.k_step, "k_step")
        whole(self.split_k, "split_k")
        whole(self.promotion_k, "promotion_k", 0)  # 0: none
        if self.accumulation == "promoted" and self.promotion_k == 0:
            raise ValueError("a promoted order adds its partial to the fp32 accumulator every promotion_k elements of K: "
                             "give promotion_k (a positive multiple of the instruction's k), e.g. promotion_k=128")

    @staticmethod
    def of(accumulation: Literal["fma", "in_mma", "external", "promoted"], instruction_name: str = "",
           *, promotion_k: int = 0, split_k: int = 1) -> "Order":
        """An order with k_step and output taken from the instruction (fp32 FMA if ``fma``). Raises ValueError for an
        accumulation that is not one of these, a split_k below 1, a promoted order without promotion_k, or another
        order without its instruction."""
        if _order_accumulation(accumulation) == "fma":
            return Order("fma", split_k=split_k)
        if not instruction_name:
            raise ValueError(f"an {accumulation} order needs its instruction, e.g. Order.of({accumulation!r}, "
                             "'mma_m16n8k16_f16_f32') (gemmlab.tc.instructions() lists them)")
        ins = instruction(instruction_name)
        return Order(accumulation, ins.name, ins.k, promotion_k, split_k, ins.output)


def emulate(order: Order, A: npt.ArrayLike, B: npt.ArrayLike, params: TcParams | None = None, *,
            threads: int = 0, gpu: str = "hopper") -> np.ndarray:
    """C = A B (M, N) as a kernel with this order computes it, bit for bit under the model.

    A (M, K) and B (K, N) must hold values of the instruction's input format (fp32 for fma);
    ``params`` defaults to ``model(order.instruction, gpu)`` (Hopper's: ``published_params``). K must be a multiple of
    ``k_step * split_k`` (and of ``promotion_k`` for promoted).
    """
    check_format(order.output, "order.output")
    if order.accumulation == "fma":
        input_format = "fp32"
        params = params or TcParams(input="fp32", output="fp32")
    else:
        input_format = instruction(order.instruction).input
        params = params or model(order.instruction, gpu)
    a, b = matrix(A, "A"), matrix(B, "B")
    if a.shape[1] != b.shape[0]:
        raise ValueError(f"A is {a.shape} but B is {b.shape}: A's columns must equal B's rows (K)")
    representable(a, input_format, "A")
    representable(b, input_format, "B")
    return np.asarray(_core.emulate(order.accumulation, order.instruction, order.k_step, order.promotion_k,
                                    order.split_k, order.output, a, b, params, threads))
