"""The figures of a run CSV: ``gemmlab.plot(csv)`` and ``gemmlab plot RUN.csv``.

Every figure that applies to a ``gemmlab run`` CSV, beside it (or in ``out_dir``), as
``<RUN>-<figure>.png``: the bias and spread of each kernel (``bias_spread``, for runs of at most 24
kernels), the kernel x distribution heatmap (``heatmap``, any run), accuracy against speed
(``pareto``, where the run timed uniform_0_1 rows) and one series figure per kernel family but cuBLAS
(``series_<family>``). Each is drawn by its script of the repository's ``plots/`` (one script per
figure, reading CSV only), which the package carries as ``gemmlab/_plots/``; they need matplotlib,
an optional dependency: ``pip install "gemmlab[plots]"``. ``GEMMLAB_PLOTS_DIR`` names another folder of
those scripts (``scripts/plots.sh`` points it at the repository's ``plots/``).
"""

from __future__ import annotations

import csv
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

# More kernels than this and the bias_spread chart (one row per kernel) is unreadable: the heatmap
# stays readable for suites of a hundred kernels.
BIAS_SPREAD_MAX_KERNELS = 24


class PlotError(RuntimeError):
    """A figure cannot be drawn: matplotlib is missing, the CSV is not a run CSV, or a script failed."""


def plots_dir() -> Path:
    """The folder of the figure scripts: ``GEMMLAB_PLOTS_DIR``, else the package's ``_plots``."""
    env = os.environ.get("GEMMLAB_PLOTS_DIR")
    return Path(env) if env else Path(__file__).resolve().parent / "_plots"


def _require_matplotlib() -> None:
    if importlib.util.find_spec("matplotlib") is None:
        raise PlotError('gemmlab plot draws with matplotlib, which is not installed: pip install "gemmlab[plots]" '
                        '(or pip install matplotlib)')


def _run_columns(path: Path) -> tuple[list[str], list[str]]:
    """The kernels and the families of a run CSV, each in order of first appearance."""
    if path.is_dir():
        csvs = sorted(q.name for q in path.glob("*.csv"))
        some = f" (it holds {', '.join(csvs[:3])}{', ...' if len(csvs) > 3 else ''})" if csvs else " (it holds no CSV)"
        raise PlotError(f"{path} is a folder{some}: give one run's CSV, e.g. gemmlab plot {path / (csvs[0] if csvs else 'RUN.csv')}")
    statuses: set[str] = set()
    try:
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            missing = [c for c in ("kernel", "family", "status") if c not in (reader.fieldnames or [])]
            if missing:
                raise PlotError(f"{path} is not a gemmlab run CSV: it has no column {', '.join(missing)}")
            kernels: dict[str, None] = {}
            families: dict[str, None] = {}
            for row in reader:
                kernels[row["kernel"]] = None
                families[row["family"]] = None
                statuses.add(row["status"])
    except FileNotFoundError:
        raise PlotError(f"{path} does not exist: give the CSV of a gemmlab run") from None
    except (OSError, UnicodeDecodeError) as e:
        raise PlotError(f"{path} cannot be read ({getattr(e, 'strerror', None) or e}): give the CSV of a gemmlab run") from None
    if not kernels:
        raise PlotError(f"{path} has no rows: nothing to draw")
    if statuses == {"planned"}:
        raise PlotError(f"{path} holds only planned rows, the plan of a --dry-run: nothing was measured, so there is "
                        "nothing to draw; run it without --dry-run")
    return list(kernels), list(families)


def plot(csv_path: str | os.PathLike, out_dir: str | os.PathLike | None = None, *,
         quiet: bool = False) -> list[Path]:
    """Draws every figure that applies to the run CSV ``csv_path``, as ``scripts/plots.sh`` does, into
    ``out_dir`` (default: beside the CSV; made if missing). Returns the PNG files written. A figure the
    run has no rows for (no timed uniform_0_1 rows for ``pareto``, a family without a series) is left
    out, saying so unless ``quiet``. Raises ``PlotError`` when matplotlib is missing, the CSV is not a
    run CSV, or a script fails for another reason."""
    src = Path(csv_path)
    kernels, families = _run_columns(src)
    _require_matplotlib()
    scripts = plots_dir()
    if not (scripts / "heatmap.py").is_file():
        raise PlotError(f"the figure scripts are not in {scripts}: reinstall gemmlab, or set GEMMLAB_PLOTS_DIR to the "
                        "repository's plots/ folder")
    out = Path(out_dir) if out_dir is not None else src.parent
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise PlotError(f"the figures' folder {out} cannot be made ({e.strerror or e}): give another with -o") from None
    stem = out / src.stem
    # (figure, script, extra arguments, may the run lack its rows)
    jobs: list[tuple[str, str, list[str], bool]] = []
    if len(kernels) <= BIAS_SPREAD_MAX_KERNELS:
        jobs.append(("bias_spread", "bias_spread.py", [], False))
    jobs.append(("heatmap", "heatmap.py", [], False))
    jobs.append(("pareto", "pareto.py", [], True))
    jobs += [(f"series_{fam}", "series.py", ["--family", fam], True) for fam in families if fam != "cublas"]
    written = []
    for figure, script, extra, optional in jobs:
        png = Path(f"{stem}-{figure}.png")
        p = subprocess.run([sys.executable, str(scripts / script), str(src), str(png), *extra],
                           capture_output=True, text=True)
        if p.returncode == 0 and png.is_file():
            written.append(png)
        elif optional:
            if not quiet:
                why = (p.stderr.strip().splitlines() or ["no rows for it"])[-1]
                print(f"gemmlab plot: no {figure} figure for {src}: {why}", file=sys.stderr)
        else:
            why = p.stderr.strip()[-2000:] or f"its script ({script}) ended with exit {p.returncode}"
            raise PlotError(f"the {figure} figure of {src} cannot be drawn: {why}")
    return written


def parser():
    """The arguments of ``gemmlab plot``: the same as the executable's ``gemmlab plot --help`` (docs/cli.md),
    which a test holds them to."""
    import argparse

    ap = argparse.ArgumentParser(
        prog="gemmlab plot",
        description="draw every figure that applies to a gemmlab run CSV (bias and spread, heatmap, accuracy "
                    "against speed, one series per kernel family) as <RUN>-<figure>.png; needs matplotlib "
                    '(pip install "gemmlab[plots]")')
    ap.add_argument("csv", help="the CSV of a gemmlab run (gemmlab run -o RUN.csv)")
    ap.add_argument("-o", "--out", metavar="DIR", help="folder of the figures (default: beside the CSV; made if missing)")
    return ap


def main(argv: list[str] | None = None) -> int:
    """``gemmlab plot RUN.csv [-o DIR]``: exit 0 with the figures' paths, 2 with the reason."""
    a = parser().parse_args(argv)
    try:
        for png in plot(a.csv, a.out):
            print(png)
    except PlotError as e:
        print(f"gemmlab plot: {e}", file=sys.stderr)
        return 2
    return 0
