#!/usr/bin/env bash
# Issue 20, FPRev unit groups on a GPU. Usage: scripts/lab/gpu_fprevgroups.sh BIN_DIR OUT_DIR
# 1. the GPU test of the groups (a built-in e4m3 kernel promoted every 128 at K = 1536);
# 2. the two kernels whose FPRev counts failed at 4096^3 before groups: Triton e4m3 with
#    max_num_imprecise_acc=128 and torch._scaled_mm rowwise (bf16 output), through
#    examples/explain_frameworks.py; and cuBLASLt fp8 without fast accumulation (CLI).
# PYTHONPATH must hold the gemmlab wheel. Each step is skipped when its CSV is already in OUT_DIR
# (rerun after an interruption); a short table is printed last. About 5 minutes on an H100.
set -uo pipefail
bin=$1; out=$2
mkdir -p "$out"
dists=uniform_0_1,normal_0_1,logunif_-8_8
"$bin"/gemmlab_gpu_tests --gtest_filter='ExplainGpuFprevGroups*' > "$out/fprevgroups_gpu_tests.log" 2>&1
echo "ExplainGpuFprevGroups rc=$? ($(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$out/fprevgroups_gpu_tests.log" | tr '\n' ' '))"
grep '^\[explain\]' "$out/fprevgroups_gpu_tests.log"
k=cublaslt_fp8_e4m3_f32
if [ ! -s "$out/cli_$k.csv" ]; then
  timeout 150 "$bin"/gemmlab explain -k "$k" -s 4096 -d "$dists" -o "$out/cli_$k.csv" \
    --judge "$out/cli_${k}_judged.csv" > "$out/cli_$k.log" 2>&1
  echo "explain $k rc=$?"
fi
if [ ! -s "$out/frameworks/explain_table.csv" ]; then
  timeout 330 python3 examples/explain_frameworks.py --out "$out/frameworks" --dists "$dists" \
    --sizes 4096 --only triton_e4m3_f32_imprecise128,torch_scaled_mm_rowwise_e4m3 > "$out/frameworks.log" 2>&1
  echo "frameworks rc=$?"
fi
python3 scripts/lab/fprevgroups_results.py "$out" --table-only
