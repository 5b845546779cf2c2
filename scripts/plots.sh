#!/usr/bin/env bash
# Renders every figure that applies to a run CSV, beside it: RUN.csv -> RUN-<figure>.png. The same as
# `gemmlab plot RUN.csv` (python/gemmlab/figures.py: which figures apply), with the scripts of this
# tree's plots/ rather than the copies installed with the package.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { echo "usage: scripts/plots.sh RUN.csv [-o DIR]" >&2; exit 2; }
py=.venv/bin/python
[ -x "$py" ] || py=python3
GEMMLAB_PLOTS_DIR=$PWD/plots exec "$py" -m gemmlab plot "$@"
