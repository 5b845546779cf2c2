#!/usr/bin/env python3
"""Runs one plot script on a CSV and checks that it wrote a non-empty PNG.

usage: check_plot.py SCRIPT.py IN.csv OUT.png [extra args]
"""
import os
import subprocess
import sys

script, csv_path, out = sys.argv[1:4]
if os.path.exists(out):
    os.remove(out)
r = subprocess.run([sys.executable, script, csv_path, out, *sys.argv[4:]])
if r.returncode != 0:
    sys.exit(f"FAIL: {script} exited with {r.returncode}")
with open(out, "rb") as f:
    head = f.read(8)
if head != b"\x89PNG\r\n\x1a\n" or os.path.getsize(out) < 5000:
    sys.exit(f"FAIL: {out} is not a plausible PNG figure")
print(f"ok: {out} ({os.path.getsize(out)} bytes)")
