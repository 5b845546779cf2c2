"""gemmlab.plot / `gemmlab plot` (python/gemmlab/figures.py): every figure that applies to a run CSV,
drawn by the scripts of plots/ as the package carries them, and the messages when it cannot; and the
plugin header the package carries (gemmlab.plugin_header)."""

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

import gemmlab
from gemmlab import figures

DATA = Path(__file__).resolve().parents[1] / "data"
PNG = b"\x89PNG\r\n\x1a\n"


def is_png(p: Path) -> bool:
    return p.is_file() and p.read_bytes()[:8] == PNG and p.stat().st_size > 5000


needs_matplotlib = pytest.mark.skipif(importlib.util.find_spec("matplotlib") is None,
                                      reason="matplotlib is not installed (scripts/requirements.txt installs it)")


@needs_matplotlib
def test_plot_draws_every_figure_of_a_run(tmp_path):
    # sample_suite.csv: 15 kernels of cublas, hopper, mma and simt, timed uniform_0_1 rows.
    written = gemmlab.plot(DATA / "sample_suite.csv", tmp_path / "made" / "here")
    names = sorted(p.name for p in written)
    assert names == sorted(f"sample_suite-{f}.png" for f in
                           ("bias_spread", "heatmap", "pareto", "series_hopper", "series_mma", "series_simt"))
    assert all(is_png(p) and p.parent == tmp_path / "made" / "here" for p in written)


@needs_matplotlib
def test_plot_cli_writes_beside_the_csv(tmp_path):
    csv = tmp_path / "run.csv"
    csv.write_bytes((DATA / "sample_run.csv").read_bytes())
    r = subprocess.run([sys.executable, "-m", "gemmlab", "plot", str(csv)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    printed = [Path(line) for line in r.stdout.split()]
    assert {p.name for p in printed} == {"run-bias_spread.png", "run-heatmap.png", "run-pareto.png", "run-series_simt.png"}
    assert all(is_png(p) for p in printed)


def test_plot_without_matplotlib_says_what_to_install(monkeypatch, tmp_path):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "matplotlib" else real(name, *a))
    with pytest.raises(gemmlab.PlotError, match=r'pip install "gemmlab\[plots\]"'):
        gemmlab.plot(DATA / "sample_run.csv", tmp_path)
    assert not list(tmp_path.iterdir())


def test_plot_of_what_is_not_a_run_csv_says_so(tmp_path, capsys):
    with pytest.raises(gemmlab.PlotError, match="does not exist"):
        gemmlab.plot(tmp_path / "none.csv")
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b\n1,2\n")
    with pytest.raises(gemmlab.PlotError, match="not a gemmlab run CSV: it has no column kernel, family, status"):
        gemmlab.plot(bad)
    assert figures.main([str(bad)]) == 2
    assert "gemmlab plot: " in capsys.readouterr().err


def test_plot_of_a_folder_or_a_dry_run_says_what_to_give(tmp_path, capsys):
    # A folder (load_results reads one; plot draws one run) names a CSV in it; a --dry-run's plan has nothing
    # measured. Both before any script runs, exit 2 with the message, no traceback.
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "a.csv").write_bytes((DATA / "sample_run.csv").read_bytes())
    with pytest.raises(gemmlab.PlotError, match=r"is a folder \(it holds a.csv\): give one run's CSV, e.g. gemmlab plot .*a.csv"):
        gemmlab.plot(runs)
    assert figures.main([str(runs)]) == 2
    assert "is a folder" in capsys.readouterr().err
    with pytest.raises(gemmlab.PlotError, match="holds only planned rows, the plan of a --dry-run: nothing was measured"):
        gemmlab.plot(DATA / "dry_run.csv", tmp_path)
    assert not list(tmp_path.glob("*.png"))
    # A binary file and a figures' folder that cannot be made: messages, not tracebacks.
    npy = tmp_path / "A.npy"
    npy.write_bytes(b"\x93NUMPY\x01\x00" + bytes(range(256)))
    with pytest.raises(gemmlab.PlotError, match="cannot be read|not a gemmlab run CSV"):
        gemmlab.plot(npy)
    if importlib.util.find_spec("matplotlib") is not None:  # checked first, before the folder is made
        blocker = tmp_path / "file"
        blocker.write_text("")
        with pytest.raises(gemmlab.PlotError, match="cannot be made"):
            gemmlab.plot(runs / "a.csv", blocker / "figs")


def test_package_carries_the_plot_scripts_and_the_plugin_header():
    root = Path(__file__).resolve().parents[2]
    carried = sorted(p.name for p in figures.plots_dir().glob("*.py"))
    assert carried == sorted(p.name for p in (root / "plots").glob("*.py"))
    header = gemmlab.plugin_header()
    assert header.name == "gemmlab_plugin.h"
    assert header.read_text() == (root / "kernels" / "plugin" / "gemmlab_plugin.h").read_text()


def test_plot_takes_the_arguments_its_reference_documents():
    # `gemmlab plot` is parsed here (figures.parser) and listed by the executable's help (docs/cli.md):
    # the same positional and options, with the same help text.
    root = Path(__file__).resolve().parents[2]
    doc = (root / "docs" / "cli.md").read_text().split("## gemmlab plot\n", 1)[1].split("```", 2)[1]
    actions = {a.dest: a for a in figures.parser()._actions if a.dest != "help"}
    assert set(actions) == {"csv", "out"}
    assert f"csv TEXT REQUIRED           {actions['csv'].help}" in doc
    assert actions["out"].option_strings == ["-o", "--out"]
    assert f"-o,--out TEXT               {actions['out'].help}" in doc
    assert figures.parser().description in doc
