#!/usr/bin/env python3
"""Runs one plot script on one or more CSVs and checks that it wrote a non-empty PNG.

usage: check_plot.py SCRIPT.py IN.csv [MORE.csv ...] OUT.png [extra args]
"""
import os
import subprocess
import sys

script, args = sys.argv[1], sys.argv[2:]
at = next(i for i, a in enumerate(args) if a.endswith(".png"))
csvs, out, extra = args[:at], args[at], args[at + 1:]
if os.path.exists(out):
    os.remove(out)
r = subprocess.run([sys.executable, script, *csvs, out, *extra])
if r.returncode != 0:
    sys.exit(f"FAIL: {script} exited with {r.returncode}")
with open(out, "rb") as f:
    head = f.read(8)
if head != b"\x89PNG\r\n\x1a\n" or os.path.getsize(out) < 5000:
    sys.exit(f"FAIL: {out} is not a plausible PNG figure")
print(f"ok: {out} ({os.path.getsize(out)} bytes)")
