"""scripts/lab/merge_speed.py, which merges several scripts/lab/bench_speed.py tables into one current table:
a later input's row replaces an earlier one's of the same part and item and keeps its run's label; the
metadata names the inputs and the command; an input it cannot read, or one that is not such a table, exit 2."""

import csv
import json
import subprocess
import sys

COLUMNS = ["part", "item", "size", "value", "value_committed", "unit", "committed_from", "shows"]


def write(path, rows):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(COLUMNS)
        w.writerows(rows)


def merge(root, *args):
    r = subprocess.run([sys.executable, str(root / "scripts/lab/merge_speed.py"), *map(str, args)],
                       capture_output=True, text=True, timeout=60)
    return r.returncode, r.stdout + r.stderr


def test_a_later_run_replaces_an_earlier_ones_row_and_keeps_its_label(root, tmp_path):
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    write(a, [["explain-cli", "k1:explain_s", "4096", "9.0", "20", "s", "x", "old"],
              ["explain-cli", "k2:explain_s", "4096", "5.0", "20", "s", "x", "only in a"]])
    write(b, [["explain-cli", "k1:explain_s", "4096", "7.5", "20", "s", "x", "new"]])
    out = tmp_path / "merged.csv"
    rc, text = merge(root, out, f"first run={a}", f"second run={b}")
    assert rc == 0, text
    rows = {r["item"]: r for r in csv.DictReader(open(out))}
    assert rows["k1:explain_s"]["value"] == "7.5" and rows["k1:explain_s"]["run"] == "second run"
    assert rows["k2:explain_s"]["value"] == "5.0" and rows["k2:explain_s"]["run"] == "first run"
    meta = json.loads((tmp_path / "merged.meta.json").read_text())
    assert [i["label"] for i in meta["inputs"]] == ["first run", "second run"]
    assert meta["rows"] == 2 and meta["columns"][-1] == "run"
    assert "merge_speed.py" in meta["command"]


def test_an_input_it_cannot_use_is_refused_with_exit_2(root, tmp_path):
    rc, text = merge(root, tmp_path / "m.csv", f"x={tmp_path / 'missing.csv'}")
    assert rc == 2 and "missing.csv" in text
    other = tmp_path / "other.csv"
    other.write_text("kernel,value\nk,1\n")
    rc, text = merge(root, tmp_path / "m.csv", f"x={other}")
    assert rc == 2 and "not a bench_speed.py table" in text
    rc, text = merge(root, tmp_path / "m.csv", str(other))  # no LABEL=
    assert rc == 2
    assert not (tmp_path / "m.csv").exists()
