"""scripts/lab/cpu_baselines.py (issue 33): gemmlab's CPU baselines beside numpy.matmul, with a stand-in
for `gemmlab run` (a script writing the rows the real one writes, so no GPU is needed): one CSV with
a row per implementation and dtype, GFLOP/s and the ratio to numpy's, the .meta.json, the table; and
a failed or unmeasured gemmlab run is exit 1 naming its log or rows."""

import csv
import json
import subprocess
import sys
import textwrap

import pytest

NOTE = ("ran on the host CPU, Eigen 3.4.0 x86-64-v4 (AVX-512 + FMA), up to 16 OpenMP threads "
        "(copies to and from the GPU untimed); ")


def stub(tmp_path, status="passed", rc=0):
    """A `gemmlab` that writes two cpu rows (time 10 ms and 20 ms at the size asked) into -o."""
    path = tmp_path / "gemmlab"
    path.write_text(textwrap.dedent(f"""\
        #!{sys.executable}
        import csv, sys
        a = sys.argv
        n = int(a[a.index("-s") + 1]); out = a[a.index("-o") + 1]
        assert a[1:5] == ["run", "-k", "family:cpu", "-s"], a
        cols = ["kernel", "family", "input_format", "M", "N", "K", "reps", "time_ms_median", "tflops", "status", "note"]
        with open(out, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(cols)
            for k, fmt, ms in (("eigen_gemm_fp32", "fp32", 10.0), ("eigen_gemm_fp64", "fp64", 20.0)):
                w.writerow([k, "cpu", fmt, n, n, n, a[a.index("--reps") + 1], ms, 2 * n**3 / (ms * 1e-3) / 1e12,
                            "{status}", {NOTE!r}])
        print("gemmlab stand-in", file=sys.stderr)
        sys.exit({rc})
        """))
    path.chmod(0o755)
    return path


def run(root, *args):
    r = subprocess.run([sys.executable, str(root / "scripts/lab/cpu_baselines.py"), *map(str, args)],
                       capture_output=True, text=True, timeout=300)
    return r.returncode, r.stdout + r.stderr


def test_one_csv_with_gflops_ratios_threads_and_metadata(root, tmp_path):
    out = tmp_path / "cpu_baselines.csv"
    rc, text = run(root, "--gemmlab", stub(tmp_path), "--out", out, "--size", 64, "--reps", 3, "--numpy-reps", 3)
    assert rc == 0, text
    rows = list(csv.DictReader(out.open()))
    assert [(r["implementation"], r["dtype"]) for r in rows] == [
        ("gemmlab eigen_gemm_fp32", "fp32"), ("numpy.matmul", "fp32"),
        ("gemmlab eigen_gemm_fp64", "fp64"), ("numpy.matmul", "fp64")]
    by = {(r["implementation"], r["dtype"]): r for r in rows}
    eig = by[("gemmlab eigen_gemm_fp32", "fp32")]
    assert float(eig["gflops"]) == pytest.approx(2 * 64**3 / 10e-3 / 1e9, rel=1e-3)
    assert eig["threads"] == "16" and eig["simd"] == "x86-64-v4 (AVX-512 + FMA)" and eig["repetitions"] == "3"
    np32 = by[("numpy.matmul", "fp32")]
    assert float(np32["gflops"]) > 0 and np32["ratio_to_numpy"] == "1" and np32["library"]
    assert float(eig["ratio_to_numpy"]) == pytest.approx(float(eig["gflops"]) / float(np32["gflops"]), rel=2e-3)
    meta = json.loads((tmp_path / "cpu_baselines.meta.json").read_text())
    assert meta["gemmlab"]["exit"] == 0 and "family:cpu" in meta["gemmlab"]["command"]
    assert meta["numpy"]["reps"] == 3 and meta["host"]["usable_cpus"] >= 1
    assert (tmp_path / "cpu_baselines_gemmlab.log").read_text().strip() == "gemmlab stand-in"
    assert "x numpy" in text and "gemmlab eigen_gemm_fp64" in text


@pytest.mark.parametrize("status, rc, message", [
    ("passed", 3, "gemmlab exited 3; see "),
    ("error", 0, "gemmlab's cpu rows are missing or not measured: [('eigen_gemm_fp32', 'error'"),
])
def test_a_failed_gemmlab_run_is_exit_1_and_writes_nothing(root, tmp_path, status, rc, message):
    out = tmp_path / "x.csv"
    code, text = run(root, "--gemmlab", stub(tmp_path, status, rc), "--out", out, "--size", 32, "--numpy-reps", 1)
    assert code == 1 and message in text, text
    assert not out.exists() and not (tmp_path / "x.meta.json").exists()


def test_bad_arguments_are_exit_2(root, tmp_path):
    code, text = run(root, "--out", tmp_path / "x.txt")
    assert code == 2 and "name a .csv file" in text, text
    code, text = run(root, "--out", tmp_path / "missing" / "x.csv")
    assert code == 2 and "does not exist" in text, text
    code, text = run(root, "--gemmlab", tmp_path / "no_gemmlab", "--out", tmp_path / "x.csv", "--size", 8)
    assert code == 1 and "cannot run" in text, text
