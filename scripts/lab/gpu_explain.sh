#!/usr/bin/env bash
# Issue 20 on a GPU: `gemmlab explain` and gemmlab.explain. Usage: scripts/lab/gpu_explain.sh BIN_DIR OUT_DIR [PART]
# PART: tests (the GPU and Python tests of explain), cli (gemmlab explain on cuBLAS baselines and
# built-in kernels at 4096^3), frameworks (examples/explain_frameworks.py: Triton and torch
# at 4096^3 and 2048x8192x3072; EXPLAIN_ONLY / EXPLAIN_SIZES narrow it), all (the three). PYTHONPATH
# must hold the gemmlab wheel (with gemmlab._gpu). A short table is printed last.
set -uo pipefail
bin=$1; out=$2; part=${3:-all}
mkdir -p "$out"
dists=uniform_0_1,normal_0_1,logunif_-8_8
if [ "$part" = tests ] || [ "$part" = all ]; then
  "$bin"/gemmlab_gpu_tests --gtest_filter='ExplainGpu*' > "$out/explain_gpu_tests.log" 2>&1
  echo "ExplainGpu tests rc=$? ($(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$out/explain_gpu_tests.log" | tr '\n' ' '))"
  GEMMLAB_BIN="$bin/gemmlab" python3 -m pytest -q tests/python/test_explain.py > "$out/explain_pytest.log" 2>&1
  echo "pytest test_explain.py rc=$? ($(tail -1 "$out/explain_pytest.log"))"
fi
if [ "$part" = cli ] || [ "$part" = all ]; then
  for k in ${EXPLAIN_KERNELS:-cublas_gemmex_fp32_pedantic cublas_gemmex_fp32_fast_tf32 cublas_gemmex_fp16_f32 cublas_gemmex_bf16_f32 cublaslt_fp8_e4m3_f32 cublaslt_fp8_e4m3_f32_fast_accum hgemm_wgmma_06_tmastore_sm16_fp16_in_wgmma}; do
    t0=$(date +%s.%N)
    "$bin"/gemmlab explain -k "$k" -s 4096 -d "$dists" -o "$out/cli_$k.csv" --judge "$out/cli_${k}_judged.csv" \
      > "$out/cli_$k.log" 2>&1
    echo "explain $k rc=$? $(python3 -c "import sys;print(round($(date +%s.%N)-$t0,1))") s: $(head -1 "$out/cli_$k.log" | cut -c1-160)"
  done
fi
if [ "$part" = frameworks ] || [ "$part" = all ]; then
  python3 examples/explain_frameworks.py --out "$out/frameworks" --dists "$dists" \
    ${EXPLAIN_SIZES:+--sizes $EXPLAIN_SIZES} ${EXPLAIN_ONLY:+--only $EXPLAIN_ONLY} > "$out/frameworks.log" 2>&1
  echo "frameworks rc=$?"
  tail -40 "$out/frameworks.log"
fi
