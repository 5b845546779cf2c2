"""scripts/compare_runs.py (issue 33's check of a new main-job run) on small CSVs: every check holds
for a faithful run, and each kind of departure fails it (exit 1): an old row missing, a statistic
changed, a row judged on the host path, an fp64 row that differs from its host-path row or a
host-path row that did not take the host path; bad input exits 2. The comparisons are `gemmlab
compare`'s, so the CLI is needed (GEMMLAB_BIN, set by ctest)."""

import csv
import json
import os
import subprocess
import sys

import pytest


@pytest.fixture
def gemmlab_bin():
    path = os.environ.get("GEMMLAB_BIN")
    if not path:
        pytest.skip("GEMMLAB_BIN (the gemmlab CLI) is not set: ctest sets it")
    return path


def read(path):
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        return reader.fieldnames, list(reader)


def write(path, header, rows):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=header, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)


def fp64_row(row):
    r = dict(row, kernel="dgemm_01_dfma_tiled", family="fp64")
    for c in ("input_format", "compute_format", "accumulator_format", "output_format"):
        r[c] = "fp64"
    return r


@pytest.fixture
def runs(root, tmp_path):
    """OLD (the committed run's rows), NEW (those plus an fp64 row) with its metadata, and the fp64
    row's host-path CSV, all as a faithful run would write them."""
    header, rows = read(root / "tests/data/compare/base.csv")
    new_rows = rows + [fp64_row(rows[0])]
    host = [dict(new_rows[-1], reference="kulisch+mpfr_spot4",
                 note="host path: its exact reference is on the CPU, as --reference cpu or mpfr asks; " + rows[0]["note"])]
    meta = {"plan": {"reps": 2, "warmup": 1}, "gpu_path": {"host_path_rows": 0, "host_path_reasons": {}},
            "timing_seconds": {"total": 61.0, "kernels": 59.0, "non_kernel_fraction_of_kernels": 2.0 / 59.0}}
    return {"header": header, "old": rows, "new": new_rows, "host": host, "meta": meta, "dir": tmp_path}


def check(root, gemmlab_bin, runs):
    d = runs["dir"]
    write(d / "old.csv", runs["header"], runs["old"])
    write(d / "new.csv", runs["header"], runs["new"])
    write(d / "host.csv", runs["header"], runs["host"])
    (d / "new.meta.json").write_text(json.dumps(runs["meta"]))
    return subprocess.run([sys.executable, str(root / "scripts/compare_runs.py"), "--gemmlab", gemmlab_bin,
                           "--old", str(d / "old.csv"), "--new", str(d / "new.csv"), "--out", str(d / "out"),
                           "--host-csv", str(d / "host.csv")], capture_output=True, text=True)


def test_a_faithful_run_passes_every_check(root, gemmlab_bin, runs):
    r = check(root, gemmlab_bin, runs)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "all checks hold" in r.stdout
    assert "3 / 3" in r.stdout and "1 rows, bit-identical" in r.stdout
    assert (runs["dir"] / "out/old_vs_new.md").exists() and (runs["dir"] / "out/fp64_gpu_vs_host.md").exists()


def test_a_missing_old_row_fails(root, gemmlab_bin, runs):
    runs["old"].append(dict(runs["old"][0], seed="2"))
    r = check(root, gemmlab_bin, runs)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "3 / 4" in r.stdout and "missing in NEW: kernel=sgemm_01_naive" in r.stdout


def test_a_changed_statistic_fails(root, gemmlab_bin, runs):
    runs["new"][1] = dict(runs["new"][1], rel_std=repr(float(runs["new"][1]["rel_std"]) * (1 + 2**-40)))
    r = check(root, gemmlab_bin, runs)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "NO (gemmlab compare exit 3" in r.stdout


def test_a_host_path_row_in_the_new_run_fails(root, gemmlab_bin, runs):
    runs["meta"]["gpu_path"] = {"host_path_rows": 1, "host_path_reasons": {"its operands were made on the host": 1}}
    r = check(root, gemmlab_bin, runs)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "its operands were made on the host" in r.stdout


def test_an_fp64_row_unlike_its_host_path_row_fails(root, gemmlab_bin, runs):
    runs["host"][0]["rel_mean"] = repr(-float(runs["host"][0]["rel_mean"]))
    r = check(root, gemmlab_bin, runs)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "NOT identical (exit 3" in r.stdout


def test_a_host_path_row_that_stayed_on_the_gpu_fails(root, gemmlab_bin, runs):
    runs["host"][0]["note"] = runs["new"][-1]["note"]
    r = check(root, gemmlab_bin, runs)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "0 / 1" in r.stdout


def test_bad_input_exits_2(root, gemmlab_bin, tmp_path):
    r = subprocess.run([sys.executable, str(root / "scripts/compare_runs.py"), "--gemmlab", gemmlab_bin, "--old",
                        str(tmp_path / "none.csv"), "--new", str(tmp_path / "none.csv"), "--out", str(tmp_path / "o")],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "cannot read" in r.stderr
