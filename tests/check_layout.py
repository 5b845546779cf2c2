#!/usr/bin/env python3
"""The repository's layout, as the README states it (ctest docs.layout):
  * results/ holds data and READMEs only: no code (the code that made the evidence is in scripts/lab/);
  * scripts/ holds the tools users run; the GPU-session and post-processing scripts (gpu_*.sh,
    *_results.*, patch_*.py) live in scripts/lab/;
  * every script in scripts/lab/ has its line in scripts/lab/README.md;
  * results/README.md has no line over 300 characters (a map of the folders, not a table of claims);
  * README.md, docs/*.md and results/README.md speak of the project as it is: no notebook phrases
    ("the next issue", "the binary that ran", "the lent machine", "before this change") and no path
    outside the repository (/work/, /root/, /tmp/).
Exit 1 naming each problem."""
import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CODE = {".py", ".sh", ".c", ".h", ".cpp", ".hpp", ".cu", ".cuh", ".ipynb"}
problems = []
for dirpath, _, files in os.walk(ROOT / "results"):
    for f in files:
        if Path(f).suffix in CODE:
            problems.append(f"{Path(dirpath, f).relative_to(ROOT)}: code under results/ (results/ holds data and "
                            "READMEs; move it to scripts/lab/ or tests/)")
for f in sorted((ROOT / "scripts").iterdir()):
    if f.is_file() and re.match(r"(gpu_.*\.sh|.*_results\.(py|sh)|patch_.*\.py)$", f.name):
        problems.append(f"scripts/{f.name}: a GPU-session or post-processing script belongs in scripts/lab/ "
                        "(with its line in scripts/lab/README.md)")
lab = ROOT / "scripts" / "lab"
readme = (lab / "README.md").read_text() if (lab / "README.md").exists() else ""
if lab.exists():
    for dirpath, _, files in os.walk(lab):
        for f in files:
            rel = Path(dirpath, f).relative_to(lab)
            if rel.suffix in {".py", ".sh"} and f"`{rel}" not in readme:
                problems.append(f"scripts/lab/{rel}: no line in scripts/lab/README.md (a table row starting `{rel}`)")
for n, line in enumerate((ROOT / "results" / "README.md").read_text().splitlines(), 1):
    if len(line) > 300:
        problems.append(f"results/README.md:{n}: {len(line)} characters (at most 300: put the detail in the folder's README)")
STALE = re.compile(r"next issue|binary that ran|lent machine|before this change|(?<![\w.])/(work|root|tmp)/")
for doc in [ROOT / "README.md", ROOT / "results" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
    for n, line in enumerate(doc.read_text().splitlines(), 1):
        m = STALE.search(line)
        if m:
            problems.append(f"{doc.relative_to(ROOT)}:{n}: '{m.group(0)}': a sentence should speak of the project as it "
                            "is, with paths inside the repository")
for p in problems:
    print(p, file=sys.stderr)
print(f"layout: {len(problems)} problem(s)")
sys.exit(1 if problems else 0)
