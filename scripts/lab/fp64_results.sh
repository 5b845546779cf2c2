#!/usr/bin/env bash
# Post-processing of scripts/lab/gpu_fp64.sh's OUT_DIR, on any machine (no GPU needed):
#   scripts/lab/fp64_results.sh OUT_DIR TAG        e.g.  scripts/lab/fp64_results.sh /tmp/fp64_out h100_20261124
# Copies the CSVs with their .meta.json (written by gemmlab beside each CSV) and the logs into
# results/fp64/ as <name>_<TAG>.*, and renders the figure results/fp64/fp64_emulation_<TAG>.png with
# plots/fp64_emulation.py (the project's .venv from scripts/setup.sh has matplotlib).
set -euo pipefail
src=$1; tag=$2
here=$(cd "$(dirname "$0")/../.." && pwd)
dst=$here/results/fp64
mkdir -p "$dst"
for name in fp64_emulation_1024 fp64_emulation_4096 fp64_cpu_reference bits_1024 bench_reference_fp64 predict_fp64; do
  if [ ! -s "$src/$name.csv" ]; then echo "missing $src/$name.csv (did gpu_fp64.sh finish that step?)" >&2; exit 1; fi
  if [ ! -s "$src/$name.meta.json" ]; then echo "missing $src/$name.meta.json beside $name.csv" >&2; exit 1; fi
  cp "$src/$name.csv" "$dst/${name}_$tag.csv"
  cp "$src/$name.meta.json" "$dst/${name}_$tag.meta.json"
done
for log in gpu_tests_fp64.log bits_compare.txt; do cp "$src/$log" "$dst/${log%.*}_$tag.${log##*.}"; done
py=$here/.venv/bin/python
[ -x "$py" ] || py=python3
"$py" "$here/plots/fp64_emulation.py" "$dst/fp64_emulation_1024_$tag.csv" "$dst/fp64_emulation_4096_$tag.csv" \
  -o "$dst/fp64_emulation_$tag.png"
