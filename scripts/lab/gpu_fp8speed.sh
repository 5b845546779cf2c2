#!/usr/bin/env bash
# Issue 22's speed target on a Hopper GPU, with prebuilt binaries:
#   scripts/lab/gpu_fp8speed.sh BIN_DIR OUT_DIR
# BIN_DIR holds gemmlab and gemmlab_gpu_tests (built with the cublas and hopper families, sm_90a).
# The schedules of hgemm_wgmma_11's block-scaled kernel (every hopper kernel whose name starts with
# hgemm_wgmma_11x_; kernels/hopper/hgemm_wgmma_11_fp8scaled.cu) against the kernel itself, cuBLASLt's
# VEC128 x BLK128x128 mode and the unscaled e4m3 kernels, in one run. The schedules are registered
# only for a round of measurements (round 3 at e22e6de: nine schedules, 219 s with the build on an
# H100; round 4 at 903f29b, 567993d and cada655: 175-285 s each, with ncu; round 5 at 693135e); between
# rounds none is registered, and the script stops with exit 2 saying so. The rounds' figures are in
# the kernel's NOTES and results/scaled_fp8/schedules_round*:
#  1. the topic's GPU tests (ScaledFp8Gpu*: every schedule within its bound, predicted bit for bit,
#     and the kernel's bits with more tiles than SMs at two sizes); at
#     most 150 s;
#  2. `gemmlab run` at 4096^3 and 8192x8192x7168 on normal_0_1 (unscaled) and its 1x128 x 128x128
#     recipe (scaled), seed 22 -> OUT_DIR/speed.csv;
#  3. `gemmlab predict` of the kernel and its schedules at 512x512x896 ((K/128) mod 4 = 3)
#     -> OUT_DIR/predict.csv: 0 mismatches required;
#  4. the table: kernel / size / TFLOP/s / ratio to cuBLASLt's VEC128 x BLK128x128 of the same run.
# Idempotent: a step whose output exists is skipped; a run cut short continues its journal.
set -uo pipefail
bin=$1; out=$2
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader | tee "$out/gpu.txt"

base=hgemm_wgmma_11_fp8scaled_sm8_e4m3_1x128_128x128
lt=cublaslt_fp8_scaled_e4m3_1x128_128x128_f32
schedules=$("$bin"/gemmlab list 2>/dev/null | grep -o 'hgemm_wgmma_11x_[A-Za-z0-9_]*' | sort -u | paste -sd, -)
if [ -z "$schedules" ]; then
  echo "no hgemm_wgmma_11x_* kernel in \`$bin/gemmlab list\`: register the schedules to compare under hgemm_wgmma_11x_* names (as commit 8b8f934 does) and build the hopper family" >&2
  exit 2
fi
echo "schedules: $schedules"

# 1. GPU tests of the topic.
if [ ! -s "$out/gpu_tests.log" ] || ! grep -q "tests ran" "$out/gpu_tests.log"; then
  timeout 150 "$bin"/gemmlab_gpu_tests --gtest_filter='ScaledFp8Gpu*' 2>&1 | tee "$out/gpu_tests.log" |
    grep -E '^\[ *(FAILED|PASSED|SKIPPED|  FAILED) |tests ran|\[scaled (schedules|prediction)\]'
fi

# 2. Speed, every kernel in one run (the ratios compare rows of the same run only).
kernels="$base,$schedules,$lt,hgemm_wgmma_04_persistent_sm8_e4m3_in_wgmma,hgemm_wgmma_04_persistent_sm8_e4m3_promoted_every_128k"
if [ -e "$out/speed.csv" ]; then
  echo "speed.csv exists: skipped"
else
  resume=()
  [ -e "$out/speed.csv.journal" ] && resume=(--resume)
  "$bin"/gemmlab run -k "$kernels" -d normal_0_1,normal_0_1@e4m3_1x128_128x128 -s 4096,8192x8192x7168 --seeds 22 \
    --reps 10 --warmup 3 -o "$out/speed.csv" "${resume[@]}" 2>>"$out/speed.log"
  echo "run rc=$?"
fi

# 3. Prediction of the kernel and its schedules (5: some outputs differ from the prediction).
if [ -e "$out/predict.csv" ]; then
  echo "predict.csv exists: skipped"
else
  "$bin"/gemmlab predict -k "$base,$schedules" -d normal_0_1@e4m3_1x128_128x128,expspread_1@e4m3_1x128_128x128 \
    -s 512x512x896 --seed 22 -o "$out/predict.csv" >"$out/predict.log" 2>&1
  echo "predict rc=$? (5: some outputs differ from the prediction)"
fi
grep -E "matched|mismatch" "$out/predict.log" | tail -n 20

# 4. The table, from the CSVs.
python3 - "$out/speed.csv" "$out/predict.csv" "$lt" <<'PY'
import csv, os, sys
speed, predict, lt = sys.argv[1:4]
rows = list(csv.DictReader(open(speed))) if os.path.exists(speed) else []
size = lambda r: f'{r["M"]}x{r["N"]}x{r["K"]}'
timed = [r for r in rows if r["status"] in ("passed", "failed_bound", "no_bound") and r["tflops"]]
ref = {size(r): float(r["tflops"]) for r in timed if r["kernel"] == lt}
print(f"{'kernel':56s} {'size':15s} {'TFLOP/s':>8s} {'/ cuBLASLt':>10s} status")
for r in sorted(timed, key=lambda r: (size(r), -float(r["tflops"]))):
    t = float(r["tflops"])
    ratio = f"{t / ref[size(r)]:.3f}" if size(r) in ref else "-"
    print(f'{r["kernel"]:56s} {size(r):15s} {t:8.0f} {ratio:>10s} {r["status"]}')
for r in rows:
    if r["status"] not in ("passed", "failed_bound", "no_bound", "not_applicable"):
        print(f'{r["kernel"]} {size(r)} {r["distribution"]}: {r["status"]}')
if os.path.exists(predict):
    for r in csv.DictReader(open(predict)):
        print(f'predict {r["kernel"]} {r["distribution"]}: {r["mismatches"]} of {r["outputs"]} outputs differ')
PY
