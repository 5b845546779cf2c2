"""scripts/check_main_job.py, the main job's guard (issue 33), on small .meta.json fixtures
(tests/data/main_job/): within the limit exit 0, above it exit 1 with the figures, and a file it
cannot judge (missing key, malformed JSON, unreadable, a dry run) exit 2 with a message saying why."""

import importlib.util
import json
import re
import subprocess
import sys

import pytest


def check(root, *args):
    r = subprocess.run([sys.executable, str(root / "scripts/check_main_job.py"), *map(str, args)],
                       capture_output=True, text=True, timeout=60)
    return r.returncode, r.stdout + r.stderr


@pytest.fixture
def fixtures(root):
    return root / "tests/data/main_job"


def test_within_the_limit_passes_and_says_the_figures(root, fixtures):
    rc, out = check(root, fixtures / "pass.meta.json")
    assert rc == 0, out
    assert "ok:" in out and "kernels 57.10 s, everything else 1.50 s = 2.6% of the kernels' time (limit 3%)" in out
    assert "statistics 0.47 s" in out


def test_above_the_limit_fails_with_the_figures(root, fixtures):
    rc, out = check(root, fixtures / "fail.meta.json")
    assert rc == 1, out
    assert "FAIL" in out and "127.6% of the kernels' time (limit 3%)" in out
    assert "statistics 51.30 s" in out and "kernel_setup 30.50 s" in out


def test_the_limit_is_an_option(root, fixtures):
    assert check(root, fixtures / "fail.meta.json", "--max-fraction", "1.5")[0] == 0
    rc, out = check(root, fixtures / "pass.meta.json", "--max-fraction", "0.02")
    assert rc == 1 and "(limit 2%)" in out, out
    rc, out = check(root, fixtures / "pass.meta.json", "--max-fraction", "-0.1")
    assert rc == 2 and "give a non-negative number" in out, out


@pytest.mark.parametrize("name, message", [
    ("missing_key.meta.json", "timing_seconds has no non_kernel_fraction_of_kernels (keys: total, kernels, non_kernel)"),
    ("malformed.meta.json", "is not valid JSON"),
    ("dry_run.meta.json", "is a --dry-run's metadata: nothing ran"),
    ("no_such_file.meta.json", "cannot be read"),
])
def test_a_file_it_cannot_judge_is_exit_2_naming_why(root, fixtures, name, message):
    rc, out = check(root, fixtures / name)
    assert rc == 2, out
    assert message in out and name in out, out
    assert "Traceback" not in out


def test_a_non_number_or_no_kernel_time_is_exit_2(root, tmp_path):
    meta = {"rows": 3, "timing_seconds": {"total": 1.0, "kernels": 0.5, "non_kernel": 0.5,
                                          "non_kernel_fraction_of_kernels": "1.0"}}
    (tmp_path / "text.meta.json").write_text(json.dumps(meta))
    rc, out = check(root, tmp_path / "text.meta.json")
    assert rc == 2 and 'non_kernel_fraction_of_kernels is "1.0", not a finite number' in out, out
    meta["timing_seconds"].update(kernels=0.0, non_kernel_fraction_of_kernels=0.0)
    (tmp_path / "zero.meta.json").write_text(json.dumps(meta))
    rc, out = check(root, tmp_path / "zero.meta.json")
    assert rc == 2 and "no launch was timed" in out, out
    (tmp_path / "list.meta.json").write_text("[1, 2]")
    rc, out = check(root, tmp_path / "list.meta.json")
    assert rc == 2 and "has no timing_seconds object" in out, out


def test_the_default_limit_is_the_one_the_readme_states(root):
    # README.md's main job: "... checks that the time outside the kernels stays within N% of theirs".
    spec = importlib.util.spec_from_file_location("check_main_job", root / "scripts/check_main_job.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    stated = re.findall(r"time\s+outside\s+the\s+kernels\s+stays\s+within\s+(\d+(?:\.\d+)?)%\s+of\s+theirs",
                        (root / "README.md").read_text())
    assert stated, "README.md no longer states the main job's limit in the words this test reads"
    assert {float(x) / 100 for x in stated} == {module.LIMIT}, (stated, module.LIMIT)
