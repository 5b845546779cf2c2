#!/usr/bin/env python3
"""gemmlab's tensor-core model against MMA-Sim (microsoft/MMA-Sim, arXiv 2511.10909) on the probes,
the adversarial corpus and the committed H100 outcomes, case by case.

    scripts/lab/probes/mmasim_crosscheck.py MMASIM_CHECKOUT GEMMLAB OUT_DIR

MMASIM_CHECKOUT is a checkout (or git directory) of MMA-Sim: its simulator/arithmetic.py is read and
run as it is (nothing of it is copied here). MMA-Sim needs PyTorch for its tensors; this script gives
it a small stand-in `torch` module (scalars and vectors of Python floats with a dtype, rounding to
float32 / float16 through `struct`, which rounds to nearest even), enough for nv_fused_dot_add, the
function every Hopper mma.sync and wgmma model of MMA-Sim calls. The parameters are MMA-Sim's own
(mmasim/simulator/nv_ptx.py, Hopper): 25 fraction bits, one fused block per instruction (Hopper's
mma.sync is not split), fp32 output truncated, fp16 output rounded to nearest even; wgmma fp8: 13
fraction bits and an "f32_e8m13" output; tf32 operands truncated to tf32. fp8 mma.sync is not
modelled by MMA-Sim on Hopper (its ISA lists fp8 mma for Ada only), nor is nvcuda::wmma (run here with
its mma.sync m16n8k16 model, which wmma compiles to).

For every instruction MMA-Sim models, `gemmlab tc-eval --write-cases probes|corpus` writes the cases
and `gemmlab tc-eval --in` evaluates gemmlab's model on them; each case then goes through MMA-Sim.
Writes OUT_DIR/mmasim_disagreements.csv (instruction, source, class, cases, disagreeing, example) and
prints it; where a committed H100 outcome exists for a case (the probes of the 12 instructions
probed on 2026-11-23), it counts which model the hardware agrees with.
"""
import csv
import math
import os
import struct
import subprocess
import sys
import types

HERE = os.path.dirname(os.path.abspath(__file__))
# The committed probe results: results/probes/ of this repository.
PROBES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(HERE))), "results", "probes")

# gemmlab instruction -> (A format, B format, output, MMA-Sim fraction bits, MMA-Sim output type)
MODELLED = {
    "mma_m16n8k16_f16_f32": ("fp16", "fp16", "fp32", 25, "f32"),
    "mma_m16n8k16_f16_f16": ("fp16", "fp16", "fp16", 25, "f16"),
    "mma_m16n8k16_bf16_f32": ("bf16", "bf16", "fp32", 25, "f32"),
    "mma_m16n8k8_tf32_f32": ("tf32", "tf32", "fp32", 25, "f32"),
    "mma_m16n8k8_f16_f32": ("fp16", "fp16", "fp32", 25, "f32"),
    "mma_m16n8k8_bf16_f32": ("bf16", "bf16", "fp32", 25, "f32"),
    "mma_m16n8k4_tf32_f32": ("tf32", "tf32", "fp32", 25, "f32"),
    "wmma_m16n16k16_f16_f32": ("fp16", "fp16", "fp32", 25, "f32"),
    "wgmma_m64n8k16_f16_f32": ("fp16", "fp16", "fp32", 25, "f32"),
    "wgmma_m64n16k16_f16_f32": ("fp16", "fp16", "fp32", 25, "f32"),
    "wgmma_m64n8k16_f16_f16": ("fp16", "fp16", "fp16", 25, "f16"),
    "wgmma_m64n8k16_bf16_f32": ("bf16", "bf16", "fp32", 25, "f32"),
    "wgmma_m64n8k8_tf32_f32": ("tf32", "tf32", "fp32", 25, "f32"),
    "wgmma_m64n8k32_e4m3_f32": ("e4m3", "e4m3", "fp32", 13, "f32_e8m13"),
    "wgmma_m64n8k32_e5m2_f32": ("e5m2", "e5m2", "fp32", 13, "f32_e8m13"),
    "wgmma_m64n8k32_e4m3_e5m2_f32": ("e4m3", "e5m2", "fp32", 13, "f32_e8m13"),
    "wgmma_m64n8k32_e4m3_f16": ("e4m3", "e4m3", "fp16", 13, "f16"),
    "wgmma_m64n8k32_e5m2_f16": ("e5m2", "e5m2", "fp16", 13, "f16"),
}

# format -> (exponent bits, fraction bits, has infinity), for decoding bit patterns
FORMATS = {"fp32": (8, 23, True), "tf32": (8, 23, True), "fp16": (5, 10, True), "bf16": (8, 7, True),
           "e4m3": (4, 3, False), "e5m2": (5, 2, True)}


def decode(fmt, bits):
    e_bits, f_bits, has_inf = FORMATS[fmt]
    if fmt == "tf32":
        bits &= ~0x1FFF  # MMA-Sim's truncate_to_tf32
    sign = -1.0 if bits >> (e_bits + f_bits) & 1 else 1.0
    e = bits >> f_bits & ((1 << e_bits) - 1)
    f = bits & ((1 << f_bits) - 1)
    bias = (1 << (e_bits - 1)) - 1
    if e == (1 << e_bits) - 1 and (has_inf or f == (1 << f_bits) - 1):
        return math.nan if (f or not has_inf) else sign * math.inf
    if e == 0:
        return sign * math.ldexp(f, 1 - bias - f_bits)
    return sign * math.ldexp(f + (1 << f_bits), e - bias - f_bits)


# --- a stand-in for the few torch features nv_fused_dot_add uses ---------------------------------
class DType:
    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return "torch." + self.name


def make_torch():
    t = types.ModuleType("torch")
    for name in ["float64", "float32", "float16", "bfloat16", "uint16", "uint32", "int32", "float8_e8m0fnu",
                 "float8_e5m2", "float8_e4m3fn", "float8_e5m2fnuz", "float8_e4m3fnuz"]:
        setattr(t, name, DType(name))

    def round_to(dtype, x):
        if dtype is t.float32:
            try:
                return struct.unpack("<f", struct.pack("<f", x))[0]
            except OverflowError:
                return math.copysign(math.inf, x)
        if dtype is t.float16:
            try:
                return struct.unpack("<e", struct.pack("<e", x))[0]
            except OverflowError:
                return math.copysign(math.inf, x)
        return x

    class Tensor:
        def __init__(self, vals, dtype, bits=None):
            self.vals = list(vals)
            self.dtype = dtype
            self.bits = bits

        def double(self):
            return Tensor(self.vals, t.float64)

        def __mul__(self, o):
            if len(o.vals) == 1:
                return Tensor([v * o.vals[0] for v in self.vals], t.float64)
            return Tensor([x * y for x, y in zip(self.vals, o.vals)], t.float64)

        def __add__(self, o):
            return Tensor([self.vals[0] + o.vals[0]], t.float64)

        def sum(self):
            s = 0.0
            for v in self.vals:
                s += v
            return Tensor([s], t.float64)

        def any(self):
            return any(self.vals)

        def item(self):
            return self.vals[0]

        def numel(self):
            return len(self.vals)

        def __getitem__(self, i):
            if isinstance(i, slice):
                return Tensor(self.vals[i], self.dtype)
            return Tensor([self.vals[i]], self.dtype)

        def view(self, dtype):
            return Tensor([math.nan], dtype, bits=int(self.vals[0]))

        def to(self, dtype):
            return Tensor([round_to(dtype, v) for v in self.vals], dtype)

    t.Tensor = Tensor
    t.dtype = DType
    t.tensor = lambda v, dtype=None: Tensor([v] if dtype in (t.uint16, t.uint32) else [round_to(dtype, v)],
                                           dtype if dtype is not None else t.float32)
    t.isnan = lambda x: Tensor([v != v for v in x.vals], t.float64)
    t.isinf = lambda x: Tensor([v in (math.inf, -math.inf) for v in x.vals], t.float64)
    return t


def bits_of(tensor, out):
    if tensor.bits is not None:
        return tensor.bits
    v = tensor.vals[0]
    if out == "fp16":
        return struct.unpack("<H", struct.pack("<e", v))[0]
    return struct.unpack("<I", struct.pack("<f", v))[0]


def load_mmasim(checkout):
    path = "mmasim/simulator/arithmetic.py"
    full = os.path.join(checkout, path)
    if os.path.exists(full):
        src = open(full).read()
    else:
        src = subprocess.run(["git", "--git-dir", checkout, "show", f"HEAD:{path}"], check=True, capture_output=True,
                             text=True).stdout
    torch = make_torch()
    sys.modules["torch"] = torch
    mod = types.ModuleType("mmasim_arithmetic")
    exec(compile(src, path, "exec"), mod.__dict__)
    dtypes = {"fp32": torch.float32, "tf32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16,
              "e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2}
    return torch, mod, dtypes


def committed_h100():
    """The H100's probe outputs of 2026-11-23, per instruction in probe order."""
    out = {}
    with open(os.path.join(PROBES, "h100_probes_20261123_outputs.csv"), newline="") as f:
        for r in csv.DictReader(f):
            out[r["instruction"]] = r["output_bits"].split()
    return out


def main(checkout, gemmlab, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    torch, mm, dtypes = load_mmasim(checkout)
    hardware = committed_h100()
    summary = []
    verdicts = {}
    for ins, (fa, fb, fo, nbits, otype) in MODELLED.items():
        for source in ("probes", "corpus"):
            cases = os.path.join(out_dir, f"{ins}_{source}.csv")
            checked = cases[:-4] + "_gemmlab.csv"
            subprocess.run([gemmlab, "tc-eval", "--write-cases", source, "-i", ins, "-o", cases], check=True,
                           capture_output=True)
            subprocess.run([gemmlab, "tc-eval", "--in", cases, "-o", checked], check=True, capture_output=True)
            with open(checked, newline="") as f:
                rows = list(csv.DictReader(f))
            hw = hardware.get(ins) if source == "probes" else None
            per_class = {}
            for i, r in enumerate(rows):
                a = [decode(fa, int(x, 16)) for x in r["a"].split()]
                b = [decode(fb, int(x, 16)) for x in r["b"].split()]
                c = decode(fo, int(r["c"], 16))
                d = mm.nv_fused_dot_add(torch.Tensor(a, dtypes[fa]), torch.Tensor(b, dtypes[fb]),
                                        torch.Tensor([c], dtypes[fo]), n_fractional_bits=nbits, output_type=otype)
                sim = bits_of(d, fo)
                ours = int(r["d_model"], 16)
                cell = per_class.setdefault(r["class"], [0, 0, "", 0, 0])
                cell[0] += 1
                if sim != ours:
                    cell[1] += 1
                    if not cell[2]:
                        cell[2] = f"{r['case']}: gemmlab {r['d_model']}, MMA-Sim {sim:#x}"
                    if hw:
                        h = int(hw[i], 16)
                        cell[3] += h == ours
                        cell[4] += h == sim
            for cls, (n, dis, ex, hw_g, hw_m) in per_class.items():
                if dis:
                    verdict = f"H100: gemmlab {hw_g}, MMA-Sim {hw_m}" if hw else "to settle on GPU"
                    summary.append([ins, source, cls, n, dis, verdict, ex])
            print(f"{ins} {source}: {len(rows)} cases, {sum(v[1] for v in per_class.values())} differ from MMA-Sim",
                  flush=True)
    with open(os.path.join(out_dir, "mmasim_disagreements.csv"), "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["instruction", "source", "class", "cases", "disagreeing", "hardware", "example"])
        w.writerows(summary)
    for row in summary:
        print(" | ".join(str(x) for x in row))


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2], sys.argv[3])
