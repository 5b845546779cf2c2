#!/usr/bin/env python3
"""The Khattak-Mikaitis validation vectors (repository north-numerical-computing/MATLAB-tensor-core,
folder model_validation/<GPU>/<format>/) as `gemmlab tc-eval` cases, held against gemmlab's model of
each GPU's generation (`tc-eval --gpu`).

    scripts/lab/probes/km_vectors.py CHECKOUT GEMMLAB OUT_DIR [--sample DIR] [--hopper] [GPU ...]

CHECKOUT is a checkout (or git directory) of that repository (its files are read, never copied here),
GEMMLAB the gemmlab binary, GPU any of V100 A100 A2 Ada L40S H100 H200 B200 (default: all). For every
format folder and output it writes OUT_DIR/km_<gpu>_<format>_<out>.csv (instruction, a, b, c, d,
source, row), runs `gemmlab tc-eval --gpu <gpu> --in` on it and prints one line per file: cases,
differing, first difference; a table last. --hopper runs every set under Hopper's model instead (the
count of outputs a Hopper-only model gets wrong). --sample DIR writes, per set, the cases of a test
sample to DIR/<gpu>_<format>_<out>.csv: the first 40 vectors and the first 40 that Hopper's model
mispredicts (the vectors that tell the generations apart).

What the vectors are (their model_validation/CUDA/*.cu and Validate_TC_models.m): one output D(0,0)
per line, A's row and B's column the line's values in k order (fp32 bit patterns of values the input
format holds; only the first `fma_size` of them are loaded, the rest of the instruction's k are zero),
C one fp32 value (rounded to fp16 by __float2half for an fp16 D). fp16 and bf16 ran through
nvcuda::wmma 16x16x16 (gemmlab: wmma_m16n16k16_f16_f32 / _f16_f16, and mma_m16n8k16_bf16_f32, the same
datapath), tf32 through wmma 16x16x8 (mma_m16n8k8_tf32_f32). fma_size is 4 for V100 fp16, 8 for
fp16/bf16 on A100, A2, Ada and L40S, 16 on H100, H200 and B200, and 4 for tf32 everywhere. e4m3 and
e5m2 (k = 32, all 32 values) ran through mma.sync.m16n8k32 (fp32 and fp16 outputs), except the
fp32-output files of H100 and H200, which are wgmma's datapath with C = 0 (their validation script
zeroes C there; checked on line 0 of H100/E4M3: sum a_k b_k = 3.78884506..., D = 0x40727c00 =
3.78881836, 13 fraction bits): they run as wgmma_m64n8k32_*_f32 with C = 0.
"""
import csv
import os
import struct
import subprocess
import sys

GPUS = ["V100", "A100", "A2", "Ada", "L40S", "H100", "H200", "B200"]
FORMATS = {  # GPU -> formats its folder holds
    "V100": ["fp16"],
    "A100": ["fp16", "bf16", "tf32"], "A2": ["fp16", "bf16", "tf32"],
    "Ada": ["fp16", "bf16", "tf32", "E4M3", "E5M2"], "L40S": ["fp16", "bf16", "tf32", "E4M3", "E5M2"],
    "H100": ["fp16", "bf16", "tf32", "E4M3", "E5M2"], "H200": ["fp16", "bf16", "tf32", "E4M3", "E5M2"],
    "B200": ["fp16", "bf16", "tf32", "E4M3", "E5M2"],
}
HOPPER_WGMMA = {"H100", "H200"}


def fma_size(gpu, fmt):
    """How many of a line's values the benchmark loaded (the rest of k is zero)."""
    if fmt in ("E4M3", "E5M2"):
        return 32
    if fmt == "tf32":
        return 4
    if gpu == "V100":
        return 4
    return 16 if gpu in ("H100", "H200", "B200") else 8


def instruction(gpu, fmt, out):
    """gemmlab's instruction for a set, its k, and whether C is taken as zero."""
    if fmt == "fp16":
        return ("wmma_m16n16k16_f16_f32" if out == "fp32" else "wmma_m16n16k16_f16_f16"), 16, False
    if fmt == "bf16":
        return "mma_m16n8k16_bf16_f32", 16, False
    if fmt == "tf32":
        return "mma_m16n8k8_tf32_f32", 8, False
    f8 = fmt.lower()
    if out == "fp32" and gpu in HOPPER_WGMMA:
        return f"wgmma_m64n8k32_{f8}_f32", 32, True
    return f"mma_m16n8k32_{f8}_{out.replace('fp', 'f')}", 32, False


def read(checkout, path):
    """A file of the checkout: from its work tree, or from git when it is a bare mirror."""
    full = os.path.join(checkout, path)
    if os.path.exists(full):
        with open(full) as f:
            return f.read()
    return subprocess.run(["git", "--git-dir", checkout, "show", f"HEAD:{path}"], check=True, capture_output=True,
                          text=True).stdout


def exists(checkout, path):
    if os.path.exists(os.path.join(checkout, path)):
        return True
    return subprocess.run(["git", "--git-dir", checkout, "cat-file", "-e", f"HEAD:{path}"],
                          capture_output=True).returncode == 0


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


def value_text(word):
    """An input value, exactly: the repr of the fp32 value (every input format's values are fp32 values)."""
    return repr(f32(word))


def sets(checkout, gpus):
    for gpu in gpus:
        for fmt in FORMATS[gpu]:
            for out in ("fp32", "fp16") if fmt in ("fp16", "E4M3", "E5M2") else ("fp32",):
                base = f"model_validation/{gpu}/{fmt}"
                if exists(checkout, f"{base}/d_{gpu}_{out}.txt"):
                    yield gpu, fmt, out, base


def write_cases(checkout, gpu, fmt, out, base, path):
    ins, k, zero_c = instruction(gpu, fmt, out)
    n_load = fma_size(gpu, fmt)
    a = read(checkout, f"{base}/a_{gpu}_{fmt}.txt").split("\n")
    b = read(checkout, f"{base}/b_{gpu}_{fmt}.txt").split("\n")
    c = read(checkout, f"{base}/c_{gpu}_fp32.txt").split("\n")
    d = read(checkout, f"{base}/d_{gpu}_{out}.txt").split("\n")
    rows = []
    for row, (la, lb, lc, ld) in enumerate(zip(a, b, c, d)):
        wa, wb = la.split()[:n_load], lb.split()[:n_load]
        if not wa or not lc.strip() or not ld.strip():
            continue
        va = [value_text(x) for x in wa] + ["0"] * (k - len(wa))
        vb = [value_text(x) for x in wb] + ["0"] * (k - len(wb))
        cv = 0.0 if zero_c else f32(lc.split()[0])
        if out == "fp16":
            cv = struct.unpack("<e", struct.pack("<e", cv))[0]  # __float2half: to nearest even
        rows.append([ins, " ".join(va), " ".join(vb), repr(cv), d_bits(ld.split()[0], out),
                     f"{gpu}/{fmt}/d_{out}", row])
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["instruction", "a", "b", "c", "d", "source", "row"])
        w.writerows(rows)
    return rows


def tc_eval(gemmlab, path, model):
    checked = path[:-4] + f"_checked_{model}.csv"
    r = subprocess.run([gemmlab, "tc-eval", "--gpu", model, "--in", path, "-o", checked], capture_output=True, text=True)
    if r.returncode not in (0, 5):
        raise RuntimeError(f"tc-eval failed on {path}: {r.stderr.strip()}")
    with open(checked, newline="") as f:
        return list(csv.DictReader(f))


def main(argv):
    args = [x for x in argv if not x.startswith("--")]
    sample_dir = None
    if "--sample" in argv:
        sample_dir = argv[argv.index("--sample") + 1]
        args.remove(sample_dir)
    hopper_only = "--hopper" in argv
    if len(args) < 3:
        sys.exit(__doc__)
    checkout, gemmlab, out_dir = args[:3]
    gpus = args[3:] or GPUS
    os.makedirs(out_dir, exist_ok=True)
    if sample_dir:
        os.makedirs(sample_dir, exist_ok=True)
    table = []
    for gpu, fmt, out, base in sets(checkout, gpus):
        path = os.path.join(out_dir, f"km_{gpu.lower()}_{fmt.lower()}_{out}.csv")
        cases = write_cases(checkout, gpu, fmt, out, base, path)
        model = "hopper" if hopper_only else gpu.lower()
        rows = tc_eval(gemmlab, path, model)
        bad = [x for x in rows if x["match"] == "0"]
        first = f"; first: row {bad[0]['row']} hardware {bad[0]['d']} model {bad[0]['d_model']}" if bad else ""
        print(f"{gpu} {fmt} -> {out} ({cases[0][0]}, model {model}): {len(rows)} cases, {len(bad)} differ{first}",
              flush=True)
        table.append((gpu, fmt, out, cases[0][0], len(rows), len(bad)))
        if sample_dir:
            hopper = rows if model == "hopper" else tc_eval(gemmlab, path, "hopper")
            telling = [i for i, x in enumerate(hopper) if x["match"] == "0"][:40]
            keep = sorted(set(range(min(40, len(cases)))) | set(telling))
            with open(os.path.join(sample_dir, f"{gpu.lower()}_{fmt.lower()}_{out}.csv"), "w", newline="") as f:
                w = csv.writer(f, lineterminator="\n")
                w.writerow(["instruction", "a", "b", "c", "d", "source", "row"])
                w.writerows(cases[i] for i in keep)
    print(f"\n{'set':<22} {'instruction':<26} {'cases':>6} {'differ':>6}")
    for gpu, fmt, out, ins, n, bad in table:
        print(f"{gpu + ' ' + fmt + ' -> ' + out:<22} {ins:<26} {n:>6} {bad:>6}")
    total = sum(t[4] for t in table)
    wrong = sum(t[5] for t in table)
    print(f"{'all':<22} {'':<26} {total:>6} {wrong:>6}")
    return 0 if wrong == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
