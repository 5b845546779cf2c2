#!/usr/bin/env bash
# Renders every figure that applies to a run CSV, beside it: RUN.csv -> RUN-<figure>.png.
set -euo pipefail
cd "$(dirname "$0")/.."
csv=$1
py=.venv/bin/python
[ -x "$py" ] || py=python3
"$py" plots/bias_spread.py "$csv" "${csv%.csv}-bias_spread.png"
for extra in plots/series_*.py; do
  [ -e "$extra" ] || continue
  "$py" "$extra" "$csv" "${csv%.csv}-$(basename "${extra%.py}").png" || echo "plots: $extra did not apply to $csv"
done
echo "figures beside $csv"
