#!/usr/bin/env bash
# Renders every figure that applies to a run CSV, beside it: RUN.csv -> RUN-<figure>.png.
set -euo pipefail
cd "$(dirname "$0")/.."
csv=$1
py=.venv/bin/python
[ -x "$py" ] || py=python3
# Bias and spread: one row per kernel for small runs; a kernel x distribution heatmap for any run
# (readable for suites of a hundred kernels, where the bias_spread chart is not).
kernels=$(awk -F, 'NR>1 {print $1}' "$csv" | sort -u | wc -l)
if [ "$kernels" -le 24 ]; then
  "$py" plots/bias_spread.py "$csv" "${csv%.csv}-bias_spread.png"
fi
"$py" plots/heatmap.py "$csv" "${csv%.csv}-heatmap.png"
# Accuracy against speed (needs timed rows of uniform_0_1).
"$py" plots/pareto.py "$csv" "${csv%.csv}-pareto.png" || echo "plots: no timed uniform_0_1 rows for the Pareto figure in $csv"
# One series figure per kernel family present in the CSV.
for fam in $(awk -F, 'NR>1 {print $2}' "$csv" | sort -u); do
  [ "$fam" = cublas ] && continue
  "$py" plots/series.py "$csv" "${csv%.csv}-series_$fam.png" --family "$fam" || echo "plots: no $fam series in $csv"
done
echo "figures beside $csv"
