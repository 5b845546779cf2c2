"""Round-trip identity through `gemmlab inputs` and `gemmlab evaluate`, with numpy as the kernel.

    gemmlab inputs -> numpy float64 matmul -> gemmlab evaluate

numpy's float64 product of fp32 inputs forms every product exactly (24 + 24 significand bits fit in
53) and rounds each addition to nearest in binary64, in whatever order its BLAS chooses; so every
entry satisfies |C^ - C| <= gamma_K(2^-53) (|A||B|)(i, j) (Higham, ASNA §3.1). Declared as such
(`--accumulation fma --output-format fp64`: nearest rounding, fp64 accumulator), the row must say
`passed` with gamma_bound = gamma_K(2^-53) exactly. Needs only the gemmlab binary and numpy.

    python examples/numpy_round_trip.py --gemmlab build/gemmlab --work /tmp/rt

Exit 0 when every check holds (the test cli.evaluate_round_trip runs it). With --check-cli DIR (the
folder tests/evaluate_fixture.py made) it also checks two accepted cases: a folder of another git
commit (a warning, exit 0) and NaN/Inf counted with --allow-nonfinite (status failed_bound, exit 0).
"""

from __future__ import annotations

import argparse
import csv
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np


def run(cmd: list[str]) -> subprocess.CompletedProcess:
    p = subprocess.run(cmd, capture_output=True, text=True)
    sys.stderr.write(p.stderr)
    if p.returncode != 0:
        raise SystemExit(f"FAIL: {' '.join(cmd)} exited {p.returncode}")
    return p


def row_of(path: Path) -> dict[str, str]:
    with open(path) as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 1, f"{path}: {len(rows)} rows, expected 1"
    return rows[0]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gemmlab", default="build/gemmlab")
    ap.add_argument("--work", required=True, help="scratch folder (replaced)")
    ap.add_argument("--dist", default="uniform_0_1")
    ap.add_argument("--size", default="96x80x1024", help="MxNxK")
    ap.add_argument("--seed", default="7")
    ap.add_argument("--check-cli", help="folder made by tests/evaluate_fixture.py")
    a = ap.parse_args()

    work = Path(a.work)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    run([a.gemmlab, "inputs", "-d", a.dist, "-s", a.size, "--seed", a.seed, "--format", "fp32", "-o", str(work / "in")])
    A, B = np.load(work / "in/A.npy"), np.load(work / "in/B.npy")
    np.save(work / "C.npy", A @ B)
    out = work / "numpy_f64.csv"
    run([a.gemmlab, "evaluate", str(work / "in"), "--output", str(work / "C.npy"), "--name", "numpy_matmul_f64",
         "--family", "external", "--output-format", "fp64", "--accumulation", "fma", "-o", str(out)])
    r = row_of(out)
    K = A.shape[1]
    gamma = K * 2.0**-53 / (1 - K * 2.0**-53)
    # The same componentwise error, from numpy, against the exact values the reference gives.
    cw = float(r["componentwise"])
    print(f"numpy float64 on {a.dist} {a.size} fp32 inputs: componentwise {cw:.3e}, gamma_K(2^-53) {gamma:.3e}, "
          f"bias {float(r['rel_mean']):+.3e}, status {r['status']}")
    assert r["status"] == "passed" and r["note"] == "", r
    assert float(r["gamma_bound"]) == gamma, (r["gamma_bound"], gamma)
    assert 0 < cw <= gamma, (cw, gamma)
    assert r["accumulation"] == "fma" and r["accumulator_format"] == "fp64" and r["family"] == "external"
    assert r["reference"].endswith("+mpfr_spot16") and (r["distribution"], r["seed"]) == (a.dist, a.seed)
    assert (work / "numpy_f64.meta.json").exists()

    if a.check_cli:
        ev = Path(a.check_cli)
        p = run([a.gemmlab, "evaluate", str(ev / "other_commit"), "--output", str(ev / "c_ok.npy"), "--name", "k",
                 "-o", str(work / "other_commit.csv")])
        assert "warning: " in p.stderr and "git commit 0123456789abcdef" in p.stderr, p.stderr
        assert row_of(work / "other_commit.csv")["status"] == "no_bound"  # accumulation unknown
        run([a.gemmlab, "evaluate", str(ev / "in"), "--output", str(ev / "c_nan.npy"), "--name", "k",
             "--accumulation", "fma", "--allow-nonfinite", "-o", str(work / "nan.csv")])
        r = row_of(work / "nan.csv")
        assert (r["status"], r["nonfinite"], r["unwritten"]) == ("failed_bound", "2", "1"), r
        assert "2 entries of C are NaN or infinite (1 NaN)" in r["note"], r["note"]
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
