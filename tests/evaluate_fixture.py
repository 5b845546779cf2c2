"""Fixtures for the `gemmlab evaluate` CLI tests (tests/cli.cmake): a `gemmlab inputs` folder, C
files that are wrong in one way each, and folders that are not (or no longer) inputs folders.

    evaluate_fixture.py GEMMLAB OUT_DIR
"""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

gemmlab, out = sys.argv[1], Path(sys.argv[2])
shutil.rmtree(out, ignore_errors=True)
out.mkdir(parents=True)
subprocess.run([gemmlab, "inputs", "-d", "uniform_0_1", "-s", "8x6x32", "--seed", "1", "--format", "fp16",
                "-o", str(out / "in")], check=True)
A, B = np.load(out / "in/A.npy"), np.load(out / "in/B.npy")
C = (A @ B).astype(np.float32)
np.save(out / "c_ok.npy", C)
np.save(out / "c_shape.npy", C[:, :5])
np.save(out / "c_f64.npy", C.astype(np.float64))
np.save(out / "c_int.npy", np.zeros((8, 6), np.int32))
np.save(out / "c_not_bf16.npy", C)  # fp32 values: not all bf16 values
bad = C.copy()
bad[1, 2], bad[3, 0] = np.nan, np.inf
np.save(out / "c_nan.npy", bad)
(out / "not_inputs").mkdir()
(out / "not_inputs/readme.txt").write_text("not a gemmlab inputs folder\n")
(out / "foreign_json").mkdir()
(out / "foreign_json/inputs.json").write_text('{"hello": 1}\n')


def variant(name, **changes):
    shutil.copytree(out / "in", out / name)
    j = json.loads((out / name / "inputs.json").read_text())
    j.update(changes)
    (out / name / "inputs.json").write_text(json.dumps(j))


variant("other_version", gemmlab_version="0.0")
variant("other_format", inputs_format_version=99)
variant("other_commit", git_commit="0123456789abcdef")
shutil.copytree(out / "in", out / "tampered")
A2 = A.copy()
A2[0, 0] = 0.5
np.save(out / "tampered/A.npy", A2)
