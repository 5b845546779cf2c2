"""The docs against the installed package: docs/csv.md's columns and statuses are gemmlab.COLUMNS and
gemmlab.STATUSES; docs/python.md documents every parameter of each function it lists and no other,
its signature blocks are the package's (scripts/gen_docs.py --python writes them), and the Python
examples of README.md and docs/*.md marked `<!-- ci: python -->` run (in a fresh folder each)."""

import dataclasses
import importlib.util
import inspect
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import gemmlab

ROOT = Path(__file__).resolve().parents[2]
CSV_DOC = ROOT / "docs" / "csv.md"
PY_DOC = ROOT / "docs" / "python.md"


def _gen_docs():
    spec = importlib.util.spec_from_file_location("gen_docs", ROOT / "scripts" / "gen_docs.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def documented(path: Path, marker: str) -> list[str]:
    """Every `name` in the first cell of the table after the line `marker`, in order (as
    tests/docs_tables.hpp reads it for the C++ tests)."""
    lines = path.read_text().splitlines()
    assert marker in lines, f"{path} has no line {marker!r} above the table it marks"
    rows = []
    for line in lines[lines.index(marker) + 1:]:
        if not line.startswith("|"):
            break
        rows.append(line)
    names = [n for row in rows[2:] for n in re.findall(r"`([^`]*)`", row.split("|")[1])]
    assert names, f"{path}: the table after {marker!r} lists no `name`"
    return names


def markers(path: Path, kind: str) -> list[str]:
    return re.findall(rf"^<!-- {kind}: ([\w.]+) -->$", path.read_text(), flags=re.M)


def same_list(doc: list[str], code: list[str], what: str, where: str) -> None:
    undocumented = [c for c in code if c not in doc]
    stale = [d for d in doc if d not in code]
    assert not undocumented, f"{what} the code has but {where} does not document: {undocumented}; edit {where}"
    assert not stale, f"{what} {where} documents but the code does not have: {stale}; edit {where}"
    assert doc == code, f"{what} of {where} are in another order than the code's: {doc} vs {code}"


def test_csv_columns_are_the_package_columns():
    same_list(documented(CSV_DOC, "<!-- columns: run -->"), list(gemmlab.COLUMNS), "columns", "docs/csv.md")


def test_statuses_are_the_package_statuses():
    same_list(documented(CSV_DOC, "<!-- statuses -->"), list(gemmlab.STATUSES), "statuses", "docs/csv.md")
    assert len(gemmlab.STATUSES) == 10


@pytest.mark.parametrize("name", markers(PY_DOC, "parameters"))
def test_every_parameter_is_documented_and_exists(name):
    params = list(inspect.signature(_gen_docs().resolve(name)).parameters)
    same_list(documented(PY_DOC, f"<!-- parameters: {name} -->"), params, f"parameters of {name}", "docs/python.md")


def test_every_signature_block_has_its_parameter_table():
    assert markers(PY_DOC, "signature"), "docs/python.md has no signature block"
    assert set(markers(PY_DOC, "signature")) == set(markers(PY_DOC, "parameters"))
    for name in ("gemmlab.judge", "gemmlab.explain", "gemmlab.explain_diff", "gemmlab.invariance", "gemmlab.evaluate",
                 "gemmlab.load_results", "gemmlab.tc.emulate", "gemmlab.tc.dot"):
        assert name in markers(PY_DOC, "signature"), f"docs/python.md does not document {name}"


def test_signature_blocks_are_the_packages():
    gen = _gen_docs()
    text = PY_DOC.read_text()
    assert gen.render_python(text) == text, (
        f"docs/python.md's signatures differ from the package's: refresh them with {gen.REFRESH_PYTHON}")


@pytest.mark.parametrize("name", ["Explanation", "KernelDiff"])
def test_report_attributes_are_documented(name):
    cls = getattr(gemmlab, name)
    code = [f.name for f in dataclasses.fields(cls)] + [
        n for n, v in vars(cls).items() if isinstance(v, property) and not n.startswith("_")]
    doc = documented(PY_DOC, f"<!-- attributes: gemmlab.{name} -->")
    assert sorted(doc) == sorted(code), f"docs/python.md's {name} attributes {doc} vs the class's {code}"


def python_examples():
    out = []
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        lines = doc.read_text().splitlines()
        for i, line in enumerate(lines):
            if line.strip() == "<!-- ci: python -->":
                assert lines[i + 1] == "```python", f"{doc.name}:{i + 1}: a ```python block must follow"
                end = lines.index("```", i + 2)
                out.append(pytest.param("\n".join(lines[i + 2:end]), id=f"{doc.name}:{i + 3}"))
    return out


@pytest.mark.parametrize("code", python_examples())
def test_python_example_runs(code, tmp_path, capsys):
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        exec(compile(code, "<example>", "exec"), {})
    finally:
        os.chdir(cwd)
    assert capsys.readouterr().out.strip(), "the example printed nothing"


def gpu_examples():
    out = []
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        lines = doc.read_text().splitlines()
        for i, line in enumerate(lines):
            if line.strip() == "<!-- gpu: python -->":
                assert lines[i + 1] == "```python", f"{doc.name}:{i + 1}: a ```python block must follow"
                end = lines.index("```", i + 2)
                out.append(pytest.param("\n".join(lines[i + 2:end]), id=f"gpu-{doc.name}:{i + 3}"))
    assert out, "README.md has no quick start marked <!-- gpu: python -->"
    return out


@pytest.mark.parametrize("code", gpu_examples())
def test_gpu_example_runs(code, tmp_path, capsys):
    """The README's quick start on a GPU (judge and explain a Triton kernel); run with -s to see its output."""
    ok, why = gemmlab.gpu_available()
    if not ok:
        pytest.skip(f"the quick start needs gemmlab's GPU engine and a GPU: {why}")
    for mod in ("torch", "triton"):
        pytest.importorskip(mod, reason=f"the quick start needs {mod}")
    # A file of its own, run by this Python: Triton's @jit reads its kernel's source from a file.
    script = tmp_path / "quick_start.py"
    script.write_text(code + "\n")
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    out = done.stdout
    with capsys.disabled():
        print("\n" + out + done.stderr[-3000:])
    assert done.returncode == 0, f"the quick start exited {done.returncode}: {done.stderr[-3000:]}"
    assert "rel_mean_u" in out, "the judged rows were not printed"
    assert "UNIDENTIFIED" not in out and "identified" in out, "explain did not identify the quick start's kernel"
