#!/usr/bin/env bash
# Issue 37, "the difference between two kernels, in words": `gemmlab explain --diff` and
# gemmlab.explain_diff on a GPU. Usage: scripts/lab/gpu_explain_diff.sh BIN_DIR OUT_DIR [PART]
# PART: tests (the GPU tests of the diff and its Python tests), cli (`gemmlab explain --diff` on
# built-in pairs at 4096^3), pairs (examples/explain_diff_pairs.py: Triton tf32 vs cuBLAS
# TF32, Triton fp16 vs cuBLAS fp16, Triton split-K with atomics vs promoted every 512; DIFF_ONLY /
# DIFF_SIZES narrow it), all (the three). PYTHONPATH must hold the gemmlab package (with gemmlab._gpu).
# Each part prints one line per run; a short table is printed last.
set -uo pipefail
bin=$1; out=$2; part=${3:-all}
mkdir -p "$out"
dists=uniform_0_1,normal_0_1,logunif_-8_8
table=()
if [ "$part" = tests ] || [ "$part" = all ]; then
  "$bin"/gemmlab_gpu_tests --gtest_filter='ExplainDiffGpu*:Docs.ExplainDiff*' > "$out/explain_diff_gpu_tests.log" 2>&1
  rc=$?
  echo "ExplainDiffGpu tests rc=$rc ($(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$out/explain_diff_gpu_tests.log" | tr '\n' ' '))"
  grep '^\[explain --diff table\]' "$out/explain_diff_gpu_tests.log"
  table+=("gpu tests rc=$rc")
  GEMMLAB_BIN="$bin/gemmlab" python3 -m pytest -q tests/python/test_explain_diff.py > "$out/explain_diff_pytest.log" 2>&1
  rc=$?
  echo "pytest test_explain_diff.py rc=$rc ($(tail -1 "$out/explain_diff_pytest.log"))"
  table+=("pytest rc=$rc: $(tail -1 "$out/explain_diff_pytest.log")")
fi
if [ "$part" = cli ] || [ "$part" = all ]; then
  for pair in "cublas_gemmex_fp32_pedantic cublas_gemmex_fp32_fast_tf32" \
              "cublas_gemmex_fp16_f32 hgemm_wgmma_06_tmastore_sm16_fp16_in_wgmma" \
              "hgemm_wgmma_03_pipelined_fp16_in_wgmma hgemm_wgmma_06_tmastore_sm16_fp16_in_wgmma" \
              "hgemm_mma_01_naive_in_mma hgemm_mma_01_naive_external"; do
    set -- $pair
    t0=$(date +%s.%N)
    "$bin"/gemmlab explain --diff "$1" "$2" -s 4096 -d "$dists" -o "$out/cli_$1-vs-$2.csv" > "$out/cli_$1-vs-$2.log" 2>&1
    rc=$?
    secs=$(python3 -c "print(round($(date +%s.%N)-$t0,1))")
    line="explain --diff $1 $2 rc=$rc $secs s: $(head -1 "$out/cli_$1-vs-$2.log" | cut -c1-200)"
    echo "$line"
    table+=("$line")
  done
fi
if [ "$part" = pairs ] || [ "$part" = all ]; then
  python3 examples/explain_diff_pairs.py --out "$out/pairs" --dists "$dists" \
    ${DIFF_SIZES:+--sizes $DIFF_SIZES} ${DIFF_ONLY:+--only $DIFF_ONLY} > "$out/pairs.log" 2>&1
  rc=$?
  echo "explain_diff_pairs.py rc=$rc (the diffs in $out/pairs.log)"
  table+=("explain_diff_pairs.py rc=$rc")
fi
echo "== summary"
for line in "${table[@]}"; do echo "  $line"; done
if [ -f "$out/pairs/explain_diff_table.csv" ]; then
  python3 -c "import pandas as pd; pd.set_option('display.width', 250); print(pd.read_csv('$out/pairs/explain_diff_table.csv').to_string(index=False))"
fi
