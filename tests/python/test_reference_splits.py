"""scripts/lab/reference_splits.py, which joins two `gemmlab bench-reference` runs (the digit split and the
automatic choice): on the committed H200 run it writes the committed table again, and what it cannot join
(a missing file, a CSV of another command, runs of different problems, a digit run of another split, a
row without a time) is refused with exit 2 and a message saying why, no table written."""

import csv
import shutil
import subprocess
import sys

import pytest

RUN = "results/oracle/h200_20261130_reference_splits"


def join(root, *args):
    r = subprocess.run([sys.executable, str(root / "scripts/lab/reference_splits.py"), *map(str, args)],
                       capture_output=True, text=True, timeout=60)
    return r.returncode, r.stdout + r.stderr


def rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_the_committed_runs_give_the_committed_table(root, tmp_path):
    out = tmp_path / "splits.csv"
    rc, text = join(root, root / RUN / "digits.csv", root / RUN / "auto.csv", out)
    assert rc == 0, text
    assert rows(out) == rows(root / RUN / "reference_splits.csv")
    assert (tmp_path / "splits.meta.json").is_file()
    assert "normal_0_1" in text and "residues" in text


def _copy(root, tmp_path):
    d, a = tmp_path / "digits.csv", tmp_path / "auto.csv"
    shutil.copy(root / RUN / "digits.csv", d)
    shutil.copy(root / RUN / "auto.csv", a)
    return d, a


def _rewrite(path, change):
    rs = rows(path)
    fields = list(rs[0].keys())
    rs = change(rs, fields)
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(rs)


@pytest.mark.parametrize("case, words", [
    ("missing", "no such file"),
    ("other_command", "no column"),
    ("fewer_problems", "differ in their problems"),
    ("not_digits", "GEMMLAB_REFERENCE_SPLIT=digits"),
    ("no_time", "has seconds"),
])
def test_what_cannot_be_joined_is_refused(root, tmp_path, case, words):
    d, a = _copy(root, tmp_path)
    if case == "missing":
        d.unlink()
    elif case == "other_command":
        d.write_text("kernel,distribution,tflops\nx,normal_0_1,1\n")
    elif case == "fewer_problems":
        _rewrite(a, lambda rs, f: [r for r in rs if r["distribution"] != "normal_0_1"])
    elif case == "not_digits":
        _rewrite(d, lambda rs, f: [dict(r, split="residues") if r["split"] else r for r in rs])
    elif case == "no_time":
        _rewrite(a, lambda rs, f: [dict(r, seconds="0") if r["engine"].startswith("gpu") else r for r in rs])
    out = tmp_path / "splits.csv"
    rc, text = join(root, d, a, out)
    assert rc == 2, text
    assert words in text, text
    assert not out.exists()
