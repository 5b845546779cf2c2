#!/usr/bin/env bash
# Renders every figure that applies to a run CSV, beside it: RUN.csv -> RUN-<figure>.png.
set -euo pipefail
cd "$(dirname "$0")/.."
csv=$1
py=.venv/bin/python
[ -x "$py" ] || py=python3
"$py" plots/bias_spread.py "$csv" "${csv%.csv}-bias_spread.png"
# One series figure per kernel family present in the CSV.
for fam in $(awk -F, 'NR>1 {print $2}' "$csv" | sort -u); do
  [ "$fam" = cublas ] && continue
  "$py" plots/series.py "$csv" "${csv%.csv}-series_$fam.png" --family "$fam" || echo "plots: no $fam series in $csv"
done
echo "figures beside $csv"
