"""`gemmlab inputs` folders from Python, and Python's evaluate against the CLI's on one folder."""

import csv
import json
import sys
import shutil
import subprocess

import numpy as np
import pytest

import gemmlab


def test_inputs_are_gemmlab_runs_inputs(tmp_path):
    f = gemmlab.inputs("normal_0_1", 24, 16, 64, seed=9, fmt="bf16", out=tmp_path / "in")
    A, B = gemmlab.generate_problem("normal_0_1", 24, 16, 64, "bf16", 9)
    assert np.array_equal(f.A, A) and np.array_equal(f.B, B)
    assert (f.distribution, f.M, f.N, f.K, f.seed, f.format) == ("normal_0_1", 24, 16, 64, 9, "bf16")
    assert f.json["inputs_format_version"] == gemmlab.INPUTS_FORMAT_VERSION
    assert f.json["gemmlab_version"] and len(f.json["files"]["A"]["sha256"]) == 64
    back = gemmlab.read_inputs(tmp_path / "in")
    assert np.array_equal(back.A, A) and back.json == f.json


def test_bad_folders(tmp_path):
    gemmlab.inputs("uniform_0_1", 4, 4, 8, out=tmp_path / "in")
    with pytest.raises(ValueError, match="exists and is not empty"):
        gemmlab.inputs("uniform_0_1", 4, 4, 8, out=tmp_path / "in")
    gemmlab.inputs("uniform_0_1", 4, 4, 16, out=tmp_path / "in", force=True)
    assert gemmlab.read_inputs(tmp_path / "in").K == 16
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="is not a gemmlab inputs folder"):
        gemmlab.read_inputs(tmp_path / "empty")
    with pytest.raises(ValueError, match="cannot be|bf16"):
        gemmlab.inputs("cancel_-10", 4, 4, 8, fmt="bf16", out=tmp_path / "c")
    shutil.copytree(tmp_path / "in", tmp_path / "old")
    j = json.loads((tmp_path / "old/inputs.json").read_text())
    j["inputs_format_version"] = 0
    (tmp_path / "old/inputs.json").write_text(json.dumps(j))
    with pytest.raises(ValueError, match="inputs format version 0"):
        gemmlab.read_inputs(tmp_path / "old")
    j["inputs_format_version"], j["git_commit"] = gemmlab.INPUTS_FORMAT_VERSION, "another"
    (tmp_path / "old/inputs.json").write_text(json.dumps(j))
    with pytest.warns(UserWarning, match="git commit another"):
        gemmlab.read_inputs(tmp_path / "old")


def test_impossible_sizes(tmp_path):
    # A size this machine cannot hold is refused before anything is made (std::bad_alloc as a MemoryError before);
    # a size that is no whole number is refused, not truncated (64.5 made 64).
    with pytest.raises(ValueError, match=r"take [0-9.]+ GiB as binary64, more than this machine's"):
        gemmlab.inputs("uniform_0_1", 10**7, 10**7, 10**7, out=tmp_path / "huge")
    assert not (tmp_path / "huge" / "A.npy").exists()
    for bad in (64.5, "64", True):
        with pytest.raises(TypeError, match="M must be a whole number"):
            gemmlab.inputs("uniform_0_1", bad, 64, 64, out=tmp_path / "odd")
    with pytest.raises(ValueError, match="K = 0: K must be a whole number of at least 1"):
        gemmlab.inputs("uniform_0_1", 4, 4, 0, out=tmp_path / "zero")


def test_python_and_cli_evaluate_give_the_same_row(root, tmp_path):
    exe = root / "build/gemmlab"
    if not exe.exists():
        pytest.skip(f"the gemmlab CLI is not built ({exe}): scripts/test.sh builds it")
    f = gemmlab.inputs("uniform_-1_1", 32, 24, 256, seed=2, fmt="fp16", out=tmp_path / "in")
    C = (f.A.astype(np.float32) @ f.B.astype(np.float32)).astype(np.float32)
    np.save(tmp_path / "C.npy", C)
    subprocess.run([str(exe), "evaluate", str(tmp_path / "in"), "--output", str(tmp_path / "C.npy"), "--name", "np32",
                    "--accumulation", "fma", "--time-ms", "0.5", "-o", str(tmp_path / "cli.csv")], check=True,
                   capture_output=True)
    with open(tmp_path / "cli.csv") as fh:
        cli = next(csv.DictReader(fh))
    row = gemmlab.evaluate(f.A, f.B, C, input_format="fp16", output_format="fp32", accumulation="fma",
                           kernel="np32", distribution=f.distribution, seed=f.seed, time_ms=0.5)
    # Both rows come from the same C++ function: equal field for field (timings included).
    assert list(cli) == list(gemmlab.COLUMNS)
    assert row == gemmlab.results.row_from_fields(cli.values())
    assert cli["status"] == "passed" and row["status"] == "passed"


def test_torch_example(root, tmp_path):
    torch = pytest.importorskip("torch", reason="PyTorch is not installed: the torch example needs it "
                                                 "(the lent GPU machines have it)")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch sees no CUDA GPU: the torch example multiplies on the GPU")
    exe = root / "build/gemmlab"
    if not exe.exists():
        pytest.skip(f"the gemmlab CLI is not built ({exe})")
    out = tmp_path / "torch.csv"
    subprocess.run([sys.executable,
                    str(root / "examples/torch_matmul.py"), "--gemmlab", str(exe), "-s", "256x256x512",
                    "-d", "uniform_0_1", "--reps", "3", "-o", str(out)], check=True)
    df = gemmlab.load_results(out)
    assert len(df) == 6 and set(df["family"]) == {"external"}
    assert (df["time_ms_median"] > 0).all() and df["status"].isin(["passed", "failed_bound", "no_bound"]).all()
