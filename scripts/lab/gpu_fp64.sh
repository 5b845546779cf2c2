#!/usr/bin/env bash
# Issue 23 (fp64 and emulated GEMM) on a GPU machine, with prebuilt binaries:
#   scripts/lab/gpu_fp64.sh BIN_DIR OUT_DIR
# BIN_DIR holds gemmlab and gemmlab_gpu_tests (a build with the fp64 and cpu families); everything
# goes to OUT_DIR, a short table is printed last. About 5 minutes on an H100. Each step skips itself
# when its output is complete, and a `gemmlab run` cut short continues from its journal, so calling
# the script again with the same OUT_DIR resumes it.
#  1. the GPU tests of the topic (GPU exact reference on fp64 inputs, the fp64 kernels, Eigen's rows);
#  2. bench-reference: the GPU exact reference on fp64 inputs at 4096^3 (and 1024^3, where the CPU
#     engine checks it bit for bit);
#  3. the fp64_emulation suite: every fp64 kernel and emulation setting, m = n = 1024 at k = 1024 and
#     16384 on every phi (GEMMul8's sizes), and 4096^3 on expspread_0.5 / expspread_4 / cancel_-40;
#  4. the fp64_cpu_reference suite (Eigen's products on the host);
#  5. bits: native DGEMM vs the EAGER emulation, and BF16x9 vs cuBLAS fp32 pedantic / default, on the
#     same inputs (1024^3, outputs saved as .npy): equal bits mean the emulation did not engage; and
#     the f64 tensor-core kernel vs the DFMA kernel: equal bits everywhere support MMA-Sim's model of
#     mma.sync f64 (a chain of IEEE FMAs over k from C), which the probes of scripts/lab/gpu_tc_f64.sh
#     then established instruction by instruction;
#  6. gemmlab predict of the DFMA kernel (bit for bit against the CPU's binary64 FMA chain).
# Post-processing on any machine (no GPU): scripts/lab/fp64_results.sh OUT_DIR TAG -> results/fp64/.
set -uo pipefail
bin=$1; out=$2
mkdir -p "$out"
status=()
note() { status+=("$1"); }
run() {
  local csv=$1 resume=()
  shift
  [ -e "$csv.journal" ] && resume=(--resume)
  "$bin"/gemmlab run "$@" -o "$csv" "${resume[@]}"
}
done_csv() { [ -s "$1" ] && [ ! -e "$1.journal" ]; }

# 1. GPU tests of the topic.
if [ ! -s "$out/gpu_tests_fp64.log" ]; then
  "$bin"/gemmlab_gpu_tests --gtest_filter='GpuOracleFp64*:Fp64Kernels*:CpuEigen*' \
    --gtest_output="json:$out/gpu_tests_fp64.json" >"$out/gpu_tests_fp64.log" 2>&1
  note "tests: rc $? ($(grep -c '\[       OK \]' "$out/gpu_tests_fp64.log") OK, $(grep -c '\[  FAILED  \]' "$out/gpu_tests_fp64.log") FAILED lines, $(grep -c '\[  SKIPPED \]' "$out/gpu_tests_fp64.log") SKIPPED)"
fi

# 2. The GPU exact reference on fp64 inputs.
if ! done_csv "$out/bench_reference_fp64.csv"; then
  "$bin"/gemmlab bench-reference --formats fp64 --size 1024,4096 --cpu 1024 \
    --dists expspread_0.5,expspread_4,cancel_-40 -o "$out/bench_reference_fp64.csv" 2>"$out/bench_reference_fp64.log"
  note "bench-reference fp64: rc $?"
fi

# 3. The fp64_emulation suite, in two parts that each fit a call.
if ! done_csv "$out/fp64_emulation_1024.csv"; then
  run "$out/fp64_emulation_1024.csv" --suite fp64_emulation --size 1024x1024x1024,1024x1024x16384 \
    -d expspread_0.5,expspread_1,expspread_2,expspread_4,cancel_-40 >"$out/fp64_emulation_1024.log" 2>&1
  note "suite 1024 (k 1024, 16384): rc $?"
fi
if ! done_csv "$out/fp64_emulation_4096.csv"; then
  run "$out/fp64_emulation_4096.csv" --suite fp64_emulation --size 4096 -d expspread_0.5,expspread_4,cancel_-40 \
    --reps 5 >"$out/fp64_emulation_4096.log" 2>&1
  note "suite 4096^3: rc $?"
fi

# 4. Eigen's products on the host.
if ! done_csv "$out/fp64_cpu_reference.csv"; then
  run "$out/fp64_cpu_reference.csv" --suite fp64_cpu_reference >"$out/fp64_cpu_reference.log" 2>&1
  note "cpu reference suite: rc $?"
fi

# 5. Bits of the emulations against the native results on the same inputs.
if ! done_csv "$out/bits_1024.csv"; then
  mkdir -p "$out/bits_npy"
  run "$out/bits_1024.csv" -k cublas_dgemm,cublas_dgemm_emu_auto,cublas_dgemm_emu_b79,cublas_sgemm_emu_bf16x9,cublas_gemmex_fp32_pedantic,cublas_gemmex_fp32_default,dgemm_01_dfma_tiled,dgemm_mma_01_m8n8k4 \
    -d expspread_1,cancel_-40,logunif_-60_60 -s 1024 --reps 3 --save-matrices "$out/bits_npy" >"$out/bits_1024.log" 2>&1
  note "bits run: rc $?"
fi
python3 - "$out/bits_npy" >"$out/bits_compare.txt" 2>&1 <<'PY'
import glob, os, sys
import numpy as np
d = sys.argv[1]
# --save-matrices names each output <problem tag>_<kernel>_C.npy; the tag names the distribution.
def outputs(kernel):
    suffix = f"_{kernel}_C.npy"
    return {os.path.basename(f)[:-len(suffix)]: f for f in glob.glob(os.path.join(d, "*" + suffix))}
pairs = [("cublas_dgemm_emu_auto", "cublas_dgemm"), ("cublas_dgemm_emu_b79", "cublas_dgemm"),
         ("cublas_sgemm_emu_bf16x9", "cublas_gemmex_fp32_pedantic"), ("cublas_sgemm_emu_bf16x9", "cublas_gemmex_fp32_default"),
         ("cublas_gemmex_fp32_default", "cublas_gemmex_fp32_pedantic"),
         # MMA-Sim models mma.sync f64 as a chain of IEEE FMAs over k starting from C: then the tensor-core
         # kernel's bits equal the DFMA kernel's (the same chain in increasing k). 0 differing supports it.
         ("dgemm_mma_01_m8n8k4", "dgemm_01_dfma_tiled")]
for a, b in pairs:
    xs, ys = outputs(a), outputs(b)
    tags = sorted(set(xs) & set(ys))
    if not tags:
        print(f"{a} vs {b}: no problem with both outputs ({len(xs)} / {len(ys)} files)")
    for t in tags:
        x, y = np.load(xs[t]), np.load(ys[t])
        differ = int(np.count_nonzero(x.view(np.uint64) != y.view(np.uint64)))
        print(f"{t}: {a} vs {b}: {differ} of {x.size} entries differ bit for bit")
PY

# 6. Prediction of the DFMA kernel.
if ! done_csv "$out/predict_fp64.csv"; then
  "$bin"/gemmlab predict -k dgemm_01_dfma_tiled -d expspread_1,normal_0_1,cancel_-40 -s 1024 \
    -o "$out/predict_fp64.csv" >"$out/predict_fp64.log" 2>&1
  note "predict: rc $?"
fi

echo "== gpu_fp64.sh: $out"
for s in "${status[@]}"; do echo "  $s"; done
cat "$out/bits_compare.txt"
python3 - "$out" <<'PY'
import csv, os, sys
d = sys.argv[1]
rows = []
for name in ("fp64_emulation_1024.csv", "fp64_emulation_4096.csv", "fp64_cpu_reference.csv"):
    p = os.path.join(d, name)
    if os.path.exists(p):
        rows += list(csv.DictReader(open(p)))
print(f"{'kernel':30} {'dist':14} {'MxNxK':18} {'status':14} {'rel_max_abs':>11} {'rel_mean_u':>10} {'TFLOP/s':>8}")
for r in rows:
    if r["distribution"] not in ("expspread_0.5", "expspread_4", "uniform_0_1") and r["K"] != "16384":
        continue
    print(f"{r['kernel']:30} {r['distribution']:14} {r['M'] + 'x' + r['N'] + 'x' + r['K']:18} {r['status']:14} "
          f"{float(r['rel_max_abs'] or 'nan'):11.3e} {float(r['rel_mean_u'] or 'nan'):10.3f} {float(r['tflops'] or 'nan'):8.2f}")
PY
