#!/usr/bin/env python3
"""The Khattak-Mikaitis validation vectors (repository north-numerical-computing/MATLAB-tensor-core,
folder model_validation/<GPU>/) as `gemmlab tc-eval` cases, and gemmlab's model held against them.

    scripts/lab/probes/km_vectors.py CHECKOUT GEMMLAB OUT_DIR [GPU ...]

CHECKOUT is a checkout (or git directory) of that repository (its files are read, never copied here),
GEMMLAB the gemmlab binary, GPU H100 and/or H200 (default both). For every format folder it writes
OUT_DIR/km_<gpu>_<format>_<out>.csv (instruction, a, b, c, d, source, row), runs
`gemmlab tc-eval --in` on it and prints one line per file: cases, differing, first difference.

What the vectors are (their model_validation/CUDA/*.cu): one output D(0,0) per line, with A's row and
B's column the line's values in k order (fp32 bit patterns of values the input format holds) and C
one fp32 value. fp16, bf16 (k = 16) and tf32 (k = 8; the files give 4 values, the rest are zero)
ran through nvcuda::wmma with fp32 output, fp16 also with fp16 output (C rounded to fp16, as their
kernel's __float2half does). e4m3 and e5m2 (k = 32): their CUDA files use mma.sync.m16n8k32, and
the fp16-output files are what that gives on sm_90 (gemmlab's inference on them, alone: two
interleaved fp16 steps and C added last, as nvcc's SASS shows), run here as mma_m16n8k32_*_f16 with
the c file's C rounded to fp16. The fp32-output Hopper files are not: they are the products' sum
alone (C = 0 there; the c file is not the C that ran) cut to 13 fraction bits, wgmma's datapath
(QGMMA), so they are run as wgmma fp8 with C = 0. Checked on line 0 of H100/E4M3: sum a_k b_k =
3.78884506..., fp32 D = 0x40727c00 = 3.78881836 (13 bits); fp16 D = 0x446c = 4.421875 (sum + C).
"""
import csv
import os
import struct
import subprocess
import sys

# (folder, output file suffix) -> gemmlab instruction, k
INSTRUCTIONS = {
    ("fp16", "fp32"): ("wmma_m16n16k16_f16_f32", 16),
    ("fp16", "fp16"): ("mma_m16n8k16_f16_f16", 16),
    ("bf16", "fp32"): ("mma_m16n8k16_bf16_f32", 16),
    ("tf32", "fp32"): ("mma_m16n8k8_tf32_f32", 8),
    ("E4M3", "fp32"): ("wgmma_m64n8k32_e4m3_f32", 32),
    ("E4M3", "fp16"): ("mma_m16n8k32_e4m3_f16", 32),
    ("E5M2", "fp32"): ("wgmma_m64n8k32_e5m2_f32", 32),
    ("E5M2", "fp16"): ("mma_m16n8k32_e5m2_f16", 32),
}


def read(checkout, path):
    """A file of the checkout: from its work tree, or from git when it is a bare mirror."""
    full = os.path.join(checkout, path)
    if os.path.exists(full):
        with open(full) as f:
            return f.read()
    return subprocess.run(["git", "--git-dir", checkout, "show", f"HEAD:{path}"], check=True, capture_output=True,
                          text=True).stdout


def word_bits(word):
    """A 32-bit pattern as the files write it: 8 hex digits (a, b) or 32 binary digits (c, d)."""
    return int(word, 2) if len(word) == 32 and set(word) <= {"0", "1"} else int(word, 16)


def f32(word):
    return struct.unpack("<f", struct.pack("<I", word_bits(word)))[0]


def d_bits(word, out):
    """D's bits in the output format; an fp16 D was written as the fp32 pattern of its value (exact)."""
    bits = word_bits(word)
    if out == "fp32":
        return f"0x{bits:08x}"
    sign, exp, frac = bits >> 31, bits >> 23 & 0xFF, bits & 0x7FFFFF
    if exp == 0xFF:  # inf or NaN: fp16 keeps the top 10 fraction bits
        return f"0x{(sign << 15) | 0x7C00 | (frac >> 13):04x}"
    return f"0x{struct.unpack('<H', struct.pack('<e', f32(word)))[0]:04x}"


def main(checkout, gemmlab, out_dir, gpus):
    os.makedirs(out_dir, exist_ok=True)
    for gpu in gpus:
        for (fmt, out), (ins, k) in INSTRUCTIONS.items():
            base = f"model_validation/{gpu}/{fmt}"
            try:
                a = read(checkout, f"{base}/a_{gpu}_{fmt}.txt").split("\n")
                b = read(checkout, f"{base}/b_{gpu}_{fmt}.txt").split("\n")
                c = read(checkout, f"{base}/c_{gpu}_fp32.txt").split("\n")
                d = read(checkout, f"{base}/d_{gpu}_{out}.txt").split("\n")
            except (subprocess.CalledProcessError, FileNotFoundError):
                continue
            path = os.path.join(out_dir, f"km_{gpu.lower()}_{fmt.lower()}_{out}.csv")
            n = 0
            with open(path, "w", newline="") as f:
                w = csv.writer(f, lineterminator="\n")
                w.writerow(["instruction", "a", "b", "c", "d", "source", "row"])
                for row, (la, lb, lc, ld) in enumerate(zip(a, b, c, d)):
                    wa, wb = la.split(), lb.split()
                    if not wa or not lc.strip() or not ld.strip():
                        continue
                    va = [repr(f32(x)) for x in wa] + ["0"] * (k - len(wa))
                    vb = [repr(f32(x)) for x in wb] + ["0"] * (k - len(wb))
                    cv = 0.0 if fmt in ("E4M3", "E5M2") and out == "fp32" else f32(lc.split()[0])
                    if out == "fp16":
                        cv = struct.unpack("<e", struct.pack("<e", cv))[0]  # __float2half: to nearest even
                    w.writerow([ins, " ".join(va), " ".join(vb), repr(cv), d_bits(ld.split()[0], out),
                                f"{gpu}/{fmt}/d_{out}", row])
                    n += 1
            checked = path[:-4] + "_checked.csv"
            r = subprocess.run([gemmlab, "tc-eval", "--in", path, "-o", checked], capture_output=True, text=True)
            if r.returncode not in (0, 5):
                print(f"{gpu} {fmt} -> {out} ({ins}): tc-eval failed: {r.stderr.strip()}")
                continue
            with open(checked, newline="") as f:
                rows = list(csv.DictReader(f))
            bad = [x for x in rows if x["match"] == "0"]
            first = f"; first: row {bad[0]['row']} hardware {bad[0]['d']} model {bad[0]['d_model']}" if bad else ""
            print(f"{gpu} {fmt} -> {out} ({ins}): {len(rows)} cases, {len(bad)} differ{first}")


if __name__ == "__main__":
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:] or ["H100", "H200"])
