#!/usr/bin/env python3
"""Runs the shell examples of README.md and docs/*.md (ctest docs.examples).

An example is marked by an HTML comment on the line before its fenced block:

    <!-- ci -->            the block must exit 0
    <!-- ci: exit=N -->    the block's last command must exit N (e.g. 2 for a bad-input example)
    <!-- ci: install -->   the install: the block runs in a fresh venv (made in the work folder), which
                           stays first on PATH for the document's later blocks, so that they run the
                           `gemmlab` and `python` it installed; needs --wheel-archs (the architectures
                           scripts/test.sh built the wheel for: GEMMLAB_WHEEL_ARCHS of build_wheel.sh, and
                           GEMMLAB_WHEEL_PYTHON the venv's Python), skipped without it
    <!-- gpu: sh -->       the block must exit 0 on a machine with a GPU; skipped (saying so) without one

    ```sh
    gemmlab list
    gemmlab run --suite smoke --dry-run -o results/plan.csv
    ```

(`<!-- ci: python -->` and `<!-- gpu: python -->` blocks are pytest's: tests/python/test_docs.py.) Every
fenced block of README.md must carry one of these marks: a block nothing runs fails this check.

Each marked block runs as one `bash -eo pipefail` script (a `ci: exit=N` block without -e, its exit
status being the last command's), in order, in a work folder per document that looks like the
repository (its top-level folders linked, results/ empty and writable), with `gemmlab` on PATH being
the binary under test and `python` / `python3` the Python running this script. Blocks of one
document share that folder, so a later example may read what an earlier one wrote.

    tests/run_doc_examples.py --gemmlab BUILD/gemmlab [--work DIR] [--wheel-archs ARCHS] [FILE.md ...]

Prints one line per example and a table at the end; exit 1 if any example failed, a README block is
unmarked, or no example is marked at all (a check that runs nothing must not pass).
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MARK = re.compile(r"^<!-- (ci(?:: exit=(\d+)|: install)?|gpu: sh) -->$")
# The marks of blocks pytest runs (tests/python/test_docs.py).
PYTEST_MARKS = ("<!-- ci: python -->", "<!-- gpu: python -->")


def examples(doc: Path) -> list[tuple[int, str, int, str]]:
    """(line number, kind: ci / install / gpu, expected exit, script) of every marked block of doc."""
    lines = doc.read_text().splitlines()
    out = []
    for i, line in enumerate(lines):
        m = MARK.match(line.strip())
        if not m:
            continue
        if i + 1 >= len(lines) or not re.match(r"^```(sh|bash|console)?\s*$", lines[i + 1]):
            sys.exit(f"{doc.relative_to(ROOT)}:{i + 1}: '{line.strip()}' must be followed by a ```sh block")
        end = next((j for j in range(i + 2, len(lines)) if lines[j].startswith("```")), None)
        if end is None:
            sys.exit(f"{doc.relative_to(ROOT)}:{i + 2}: the block is not closed")
        kind = "gpu" if m.group(1) == "gpu: sh" else "install" if m.group(1) == "ci: install" else "ci"
        out.append((i + 3, kind, int(m.group(2) or 0), "\n".join(lines[i + 2:end])))
    return out


def unmarked_blocks(doc: Path) -> list[int]:
    """Line numbers of the fenced blocks of doc that no test runs (no mark on the line before)."""
    lines = doc.read_text().splitlines()
    out, inside = [], False
    for i, line in enumerate(lines):
        if not line.startswith("```"):
            continue
        if not inside:
            before = lines[i - 1].strip() if i else ""
            if not (MARK.match(before) or before in PYTEST_MARKS):
                out.append(i + 1)
        inside = not inside
    return out


def has_gpu() -> bool:
    try:
        return subprocess.run(["nvidia-smi", "-L"], capture_output=True, timeout=60).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def work_folder(base: Path, name: str, gemmlab: str) -> Path:
    """A folder that looks like the repository: top-level entries linked, results/ empty."""
    w = base / name
    if w.exists():
        shutil.rmtree(w)
    (w / "results").mkdir(parents=True)
    (w / ".bin").mkdir()
    for e in ROOT.iterdir():
        if e.name not in {"results", ".git", "build"} and not e.name.startswith((".venv", "build")):
            (w / e.name).symlink_to(e)
    (w / ".bin" / "gemmlab").symlink_to(Path(gemmlab).resolve())
    for py in ("python", "python3"):  # a wrapper, not a link: a venv's python finds its venv by its own path
        (w / ".bin" / py).write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
        (w / ".bin" / py).chmod(0o755)
    return w


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gemmlab", required=True, help="the gemmlab binary under test")
    ap.add_argument("--work", type=Path, default=Path("doc_examples"), help="folder for the work folders")
    ap.add_argument("--wheel-archs", help="CUDA architectures of the wheel scripts/test.sh built (runs the "
                                          "<!-- ci: install --> blocks with GEMMLAB_WHEEL_ARCHS set to them)")
    ap.add_argument("docs", nargs="*", type=Path, help="documents (default README.md and docs/*.md)")
    a = ap.parse_args()
    if not os.access(a.gemmlab, os.X_OK):
        print(f"run_doc_examples: {a.gemmlab} is not an executable file", file=sys.stderr)
        return 2
    docs = a.docs or [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    unmarked = [f"README.md:{n}" for n in unmarked_blocks(ROOT / "README.md")]
    gpu = has_gpu()
    results = []  # (where, expected, exit or None when skipped, seconds, ok)
    for doc in docs:
        doc = doc.resolve()
        blocks = examples(doc)
        if not blocks:
            continue
        work = work_folder(a.work.resolve(), doc.stem, a.gemmlab)
        env = {**os.environ, "PATH": f"{work / '.bin'}:{os.environ.get('PATH', '')}", "LC_ALL": "C"}
        for line, kind, expected, script in blocks:
            where = f"{doc.relative_to(ROOT)}:{line}"
            skip = ("no GPU here" if kind == "gpu" and not gpu else
                    "no --wheel-archs (scripts/test.sh gives the wheel's)" if kind == "install" and not a.wheel_archs
                    else None)
            if skip:
                results.append((where, expected, None, 0.0, True))
                print(f"== {where}: skipped ({skip})")
                continue
            if kind == "install":
                # A fresh venv, first on PATH from here on: the block's pip installs into it, and the
                # document's later blocks run the gemmlab and python it installed.
                venv = work / ".venv"
                subprocess.run([getattr(sys, "_base_executable", sys.executable), "-m", "venv", str(venv)], check=True)
                env["PATH"] = f"{venv / 'bin'}:{env['PATH']}"
                env["VIRTUAL_ENV"] = str(venv)
                # The wheel for the venv's Python and scripts/test.sh's architectures: build_wheel.sh
                # then reuses the build scripts/test.sh made, and pip installs what it wrote.
                env["GEMMLAB_WHEEL_ARCHS"] = a.wheel_archs
                env["GEMMLAB_WHEEL_PYTHON"] = str(venv / "bin" / "python")
            t0 = time.time()
            shell = ["bash", "-o", "pipefail"] + (["-e"] if expected == 0 else [])
            p = subprocess.run([*shell, "-c", script], cwd=work, env=env, capture_output=True, text=True,
                               timeout=1200 if kind == "install" else 300)
            ok = p.returncode == expected
            results.append((where, expected, p.returncode, time.time() - t0, ok))
            print(f"== {where}: exit {p.returncode} (expected {expected}) in {time.time() - t0:.1f} s "
                  f"{'ok' if ok else 'FAILED'}")
            if not ok:
                print("   script:\n" + "\n".join("     " + s for s in script.splitlines()))
                print("   output:\n" + "\n".join("     " + s for s in (p.stdout + p.stderr).splitlines()[-30:]))
    print(f"\n{'example':40} {'expected':>8} {'exit':>5} {'s':>6}  result")
    for where, expected, rc, secs, ok in results:
        print(f"{where:40} {expected:8d} {'-' if rc is None else rc:>5} {secs:6.1f}  "
              f"{'skipped' if rc is None else 'ok' if ok else 'FAILED'}")
    if unmarked:
        print(f"blocks of README.md that no test runs (mark each: {MARK.pattern} or {', '.join(PYTEST_MARKS)}): "
              + ", ".join(unmarked), file=sys.stderr)
    if not any(r[2] is not None for r in results):
        print("no example is marked <!-- ci --> in " + ", ".join(str(d) for d in docs), file=sys.stderr)
        return 1
    failed = sum(not r[4] for r in results)
    ran = sum(r[2] is not None for r in results)
    print(f"{ran - failed} of {ran} examples ran as documented, {len(results) - ran} skipped")
    return 1 if failed or unmarked else 0


if __name__ == "__main__":
    sys.exit(main())
