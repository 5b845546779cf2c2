#!/usr/bin/env bash
# `gemmlab plot` from a build of the sources: drawn by the gemmlab package of GEMMLAB_PYTHON with this
# tree's plots/; the four figures of tests/data/sample_run.csv (6 kernels of simt and cublas, timed
# uniform_0_1 rows) in a folder it makes.   tests/cli_plot.sh GEMMLAB PYTHON WORK_DIR
set -euo pipefail
gemmlab=$1; export GEMMLAB_PYTHON=$2; work=$3
root=$(cd "$(dirname "$0")/.." && pwd)
rm -rf "$work"
"$gemmlab" plot "$root/tests/data/sample_run.csv" -o "$work/figs"
want=$(printf 'sample_run-%s.png\n' bias_spread heatmap pareto series_simt)
[ "$(ls "$work/figs")" = "$want" ] || { echo "FAIL: gemmlab plot drew $(ls "$work/figs" | tr '\n' ' ')"; exit 1; }
for f in "$work"/figs/*.png; do
  [ "$(head -c 4 "$f" | od -An -c | tr -d ' ')" = 211PNG ] || { echo "FAIL: $f is not a PNG"; exit 1; }
done
echo "ok: gemmlab plot drew $(echo $want)"
