"""pytest set-up: the tests import the installed package, never the source tree."""

from pathlib import Path

import pytest

try:
    import gemmlab  # noqa: F401
except ImportError as e:  # pragma: no cover - only without the package
    raise pytest.UsageError(f"the gemmlab package is not installed ({e}): run scripts/test.sh, "
                            "or `.venv/bin/pip install .` from the repository root") from e

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def root() -> Path:
    return ROOT
