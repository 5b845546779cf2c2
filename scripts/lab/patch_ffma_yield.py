#!/usr/bin/env python3
"""Experiment of issue 22 (not used by any build): DeepGEMM's FFMA control-bit flips, patched into one
kernel of a built gemmlab binary, so its speed can be compared with the unpatched binary's.

    cuobjdump -sass build/CMakeFiles/gemmlab_kernels.dir/kernels/hopper/hgemm_wgmma_11_fp8scaled.cu.o > sass.txt
    python3 scripts/lab/patch_ffma_yield.py sass.txt FastestE build/gemmlab gemmlab_deepgemm deepgemm

The kernel is the one function of SASS whose name contains FUNCTION; its instruction bytes (both
64-bit words of each 128-bit instruction, as cuobjdump prints them) must occur exactly once in
BINARY (the fatbin's cubin is stored uncompressed). Rules, on the high word of each FFMA (runs of
consecutive FFMAs, as in the promotion of hgemm_wgmma_11):
  deepgemm  the FFMAs of a run's first 9/16 that carry .reuse (bit 59) get .reuse cleared and the
            yield-hint bit (bit 45) flipped (deepseek-ai/DeepGEMM, interleave_ffma.py);
  all       every FFMA: .reuse and the yield-hint bit cleared.
Control bits change scheduling only: the outputs stay bit for bit the same (the committed CSVs'
error statistics are identical to the unpatched binary's).
"""
import argparse
import os
import re
import sys
import tempfile

REUSE_B, YIELD = 1 << 59, 1 << 45


def read(path, mode="r"):
    try:
        with open(path, mode) as f:
            return f.read()
    except OSError as e:
        sys.exit(f"{path}: cannot read it ({e.strerror})")


def kernel_instructions(sass_path, function):
    lines = read(sass_path).splitlines()
    heads = [i for i, line in enumerate(lines) if "Function :" in line and function in line]
    if len(heads) != 1:
        sys.exit(f"{sass_path}: {len(heads)} functions contain '{function}'; name exactly one")
    end = next((i for i in range(heads[0] + 1, len(lines)) if "Function :" in lines[i]), len(lines))
    out = []
    i = heads[0]
    while i < end - 1:
        m = re.search(r"/\*[0-9a-f]{4}\*/\s+(.*?);\s*/\* (0x[0-9a-f]{16}) \*/", lines[i])
        high = re.search(r"/\* (0x[0-9a-f]{16}) \*/", lines[i + 1]) if m else None
        if m and high:
            out.append([m.group(1).strip(), int(m.group(2), 16), int(high.group(1), 16)])
            i += 2
        else:
            i += 1
    return out


def encode(instructions):
    return b"".join(lo.to_bytes(8, "little") + hi.to_bytes(8, "little") for _, lo, hi in instructions)


def ffma_runs(instructions):
    runs, run = [], []
    for k, (text, _, _) in enumerate(instructions):
        words = text.split()
        opcode = words[1] if words[0].startswith("@") else words[0]
        if opcode == "FFMA":
            run.append(k)
        elif run:
            runs.append(run)
            run = []
    return runs + ([run] if run else [])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("sass")
    p.add_argument("function")
    p.add_argument("binary")
    p.add_argument("out")
    p.add_argument("rule", choices=["deepgemm", "all"])
    a = p.parse_args()
    instructions = kernel_instructions(a.sass, a.function)
    original = encode(instructions)
    data = bytearray(read(a.binary, "rb"))
    at = data.find(original)
    if at < 0 or data.find(original, at + 1) >= 0:
        sys.exit(f"{a.binary}: the kernel's {len(instructions)} instructions are not there exactly once "
                 "(built from other sources than the SASS, or a compressed fatbin)")
    changed = 0
    runs = ffma_runs(instructions)
    for run in runs:
        for k in run[: len(run) * 9 // 16] if a.rule == "deepgemm" else run:
            high = instructions[k][2]
            if a.rule == "deepgemm":
                new = high ^ (REUSE_B | YIELD) if high & REUSE_B else high
            else:
                new = high & ~(REUSE_B | YIELD)
            changed += new != high
            instructions[k][2] = new
    data[at:at + len(original)] = encode(instructions)
    # Written beside OUT and renamed over it: OUT is whole or absent, never half a binary.
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(a.out)), prefix=".patch_ffma_yield.")
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, os.stat(a.binary).st_mode & 0o777)
        os.replace(tmp, a.out)
    except OSError as e:
        if tmp and os.path.exists(tmp):
            os.unlink(tmp)
        sys.exit(f"{a.out}: cannot write it ({e.strerror})")
    print(f"{a.rule}: {len(instructions)} instructions, {sum(map(len, runs))} FFMAs in {len(runs)} runs, "
          f"{changed} changed, at byte {at} of {a.binary} -> {a.out}")


if __name__ == "__main__":
    main()
