#!/usr/bin/env python3
"""Audits `gemmlab run --save-matrices DIR` independently of gemmlab: for every saved problem it
recomputes A @ B in float64 with numpy, checks it against the saved reference, and recomputes each
kernel's normwise error from the saved output against the value in the run's CSV.

usage: audit_npy.py DIR RUN.csv
"""
import csv
import glob
import os
import sys

import numpy as np

d, run_csv = sys.argv[1], sys.argv[2]
rows = list(csv.DictReader(open(run_csv)))
bad = 0
for a_path in sorted(glob.glob(os.path.join(d, "*_A.npy"))):
    tag = a_path[: -len("_A.npy")]
    A, B = np.load(a_path), np.load(tag + "_B.npy")
    ref = np.load(tag + "_ref_fp64.npy")
    K = A.shape[1]
    # float64 summation error is at most K * 2^-53 * (|A||B|): the exact reference must sit inside it.
    bound = K * 2.0**-53 * (np.abs(A) @ np.abs(B)) * 1.01
    ok_ref = bool(np.all(np.abs(A @ B - ref) <= bound))
    print(f"{os.path.basename(tag)}: A{A.shape} B{B.shape} reference within the float64 bound of numpy's A@B: {ok_ref}")
    bad += not ok_ref
    for c_path in sorted(glob.glob(tag + "_*_C.npy")):
        kernel = c_path[len(tag) + 1 : -len("_C.npy")]
        C = np.load(c_path)
        normwise = np.linalg.norm(C - ref) / np.linalg.norm(ref)
        row = [r for r in rows if r["kernel"] == kernel and os.path.basename(tag).startswith(r["distribution"])]
        csv_nw = float(row[0]["normwise"]) if row else float("nan")
        same = abs(normwise - csv_nw) <= 1e-6 * max(csv_nw, 1e-300)
        print(f"  {kernel}: normwise from .npy {normwise:.6e}, CSV {csv_nw:.6e}, agree: {same}")
        bad += not same
sys.exit(1 if bad else 0)
