#!/usr/bin/env bash
# Issue 33 on a GPU: the main job end to end and its guards, in one call.
#   scripts/lab/gpu_mainjob.sh BIN_DIR OUT_DIR
# 1. the GPU tests of the GPU path, the references, the fp64 and emulation kernels and the CPU baselines;
# 2. the main job (`gemmlab run --suite default`) from BIN_DIR's fresh binary, its wall time, and
#    scripts/check_main_job.py on its metadata (non-kernel time <= 5% of kernel time);
# 3. scripts/compare_runs.py: the rows of the last committed main job bit-identical, no row on the host
#    path, and the fp64 rows equal to the host path's on the same inputs;
# 4. the CPU baselines: `gemmlab run -k family:cpu -s 4096 -d uniform_0_1` and scripts/lab/cpu_baselines.py
#    (Eigen beside numpy's BLAS on the same host).
# A short table is printed last.
set -uo pipefail
bin=$1; out=$2
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader | tee "$out/gpu.txt"
nproc > "$out/nproc.txt"
"$bin"/gemmlab_gpu_tests --gtest_brief=1 \
  --gtest_filter='GpuPathGpu*:InputsGpu*:EngineGpus*:GpuOracle*:ScaledFp8Gpu*:CpuEigen*:Fp64Kernels*' \
  > "$out/gpu_tests_mainjob.log" 2>&1
echo "gpu tests rc=$? $(grep -E '^\[  (PASSED|FAILED) ' "$out/gpu_tests_mainjob.log" | tr '\n' ' ')"
t0=$(date +%s.%N)
"$bin"/gemmlab run --suite default -o "$out/default_h100.csv" > "$out/default_h100.log" 2>&1
rc=$?
wall=$(python3 -c "print(round($(date +%s.%N) - $t0, 1))")
echo "main job rc=$rc wall ${wall} s"
python3 scripts/check_main_job.py "$out/default_h100.meta.json"; echo "check_main_job rc=$?"
python3 scripts/compare_runs.py --gemmlab "$bin"/gemmlab --old results/engine/h100_20261123_judge_engine/default_h100.csv \
  --new "$out/default_h100.csv" --out "$out/compare" > "$out/compare_runs.log" 2>&1
echo "compare_runs rc=$?"; tail -25 "$out/compare_runs.log"
"$bin"/gemmlab run -k family:cpu -s 4096 -d uniform_0_1 -o "$out/cpu_4096_h100.csv" > "$out/cpu_4096_h100.log" 2>&1
echo "family:cpu rc=$?"; grep -E 'eigen' "$out/cpu_4096_h100.log" | tail -2
python3 scripts/lab/cpu_baselines.py --gemmlab "$bin"/gemmlab --out "$out/cpu_baselines_h100.csv" 2>&1 | tail -8
python3 - "$out/default_h100.csv" "$out/default_h100.meta.json" <<'PY'
import csv, json, sys
from collections import Counter
rows = list(csv.DictReader(open(sys.argv[1])))
meta = json.load(open(sys.argv[2]))
t = meta["timing_seconds"]
print("main job:", len(rows), "rows", dict(Counter(r["status"] for r in rows)))
print("timing:", ", ".join(f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}" for k, v in t.items()))
print("gpu_path:", meta.get("gpu_path"))
bad = [(r["kernel"], r["distribution"]) for r in rows if r["status"] == "failed_bound"]
print("failed_bound rows:", bad[:20])
PY
