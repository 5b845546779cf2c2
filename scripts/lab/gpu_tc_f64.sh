#!/usr/bin/env bash
# Issue 23 (the fp64 tensor-core instructions in the probes and the model) on a GPU machine, with
# prebuilt binaries:
#   scripts/lab/gpu_tc_f64.sh BIN_DIR OUT_DIR
# BIN_DIR holds gemmlab and gemmlab_gpu_tests (a build with the fp64 family); everything goes to
# OUT_DIR, a short table is printed last. Under 4 minutes on an H100. Each step skips itself when its
# output is complete, so calling the script again with the same OUT_DIR resumes it.
#  1. the GPU tests of the topic: each f64 instruction's probes (mma_m8n8k4_f64; on sm_90 also
#     mma_m16n8k{4,8,16}_f64) infer a model that explains every probe and matches 1,000 random
#     tiles; dgemm_mma_01_m8n8k4 predicted bit for bit at 256^3 through m8n8k4's; the instruction
#     list's own test (every instruction runs, and every probed one, the f64 ones included, gives the
#     model's bits);
#  2. gemmlab probe --corpus on the four f64 instructions: the probes (reference/tc_infer.cpp, with
#     the step_rounding probes that tell an FMA chain, its order, its steps and fused roundings
#     apart: is m16n8k16 a chain of k4 steps?), the adversarial corpus (12 rule classes x 1,000
#     cases, step_rounding among them), the inference, and 10^6 random tiles each against the
#     inferred model;
#  3. gemmlab predict of the f64 tensor-core kernel and the DFMA kernel at 1024^3 (the tensor-core
#     kernel through the committed model, reference/tc_model.cpp measured_hopper_params, which holds
#     the model these probes inferred on the H100 and the H200, 2026-11-24).
# Post-processing on any machine (no GPU):
#   scripts/lab/probes/tc_corpus_postprocess.py OUT_DIR h100 DATE --run tc_f64 --also predict_f64.csv --gemmlab BIN
# writes results/probes/<gpu>_tc_f64_<date>*; where a run infers another model than the committed one
# (OUT_DIR/tc_f64.csv, feature model_fit), measured_hopper_params and model_evidence must follow it.
set -uo pipefail
bin=$1; out=$2
mkdir -p "$out"
status=()
note() { status+=("$1"); }
done_csv() { [ -s "$1" ]; }

# 1. GPU tests of the topic.
if [ ! -s "$out/gpu_tests_tc_f64.log" ]; then
  t0=$(date +%s)
  "$bin"/gemmlab_gpu_tests --gtest_filter='TcF64Gpu*:TcInstructions*' \
    --gtest_output="json:$out/gpu_tests_tc_f64.json" >"$out/gpu_tests_tc_f64.log" 2>&1
  note "tests: rc $? ($(grep -c '\[       OK \]' "$out/gpu_tests_tc_f64.log") OK, $(grep -c '\[  FAILED  \]' "$out/gpu_tests_tc_f64.log") FAILED lines, $(grep -c '\[  SKIPPED \]' "$out/gpu_tests_tc_f64.log") SKIPPED), $(($(date +%s) - t0)) s"
fi

# 2. Probes, corpus, inference and 10^6 random tiles of each f64 instruction.
if ! done_csv "$out/tc_f64_validation.csv"; then
  t0=$(date +%s)
  "$bin"/gemmlab probe --corpus --validate 1000000 --seed 1 \
    --instructions mma_m8n8k4_f64,mma_m16n8k4_f64,mma_m16n8k8_f64,mma_m16n8k16_f64 -o "$out/tc_f64.csv" \
    >"$out/tc_f64.log" 2>&1
  note "probe --corpus --validate 1000000: rc $?, $(($(date +%s) - t0)) s"
fi

# 3. Prediction of the f64 tensor-core kernel and the DFMA kernel.
if ! done_csv "$out/predict_f64.csv"; then
  t0=$(date +%s)
  "$bin"/gemmlab predict -k dgemm_mma_01_m8n8k4,dgemm_01_dfma_tiled -d expspread_1,normal_0_1,cancel_-40 -s 1024 \
    -o "$out/predict_f64.csv" >"$out/predict_f64.log" 2>&1
  note "predict: rc $? (0: every output matched; 5: some did not), $(($(date +%s) - t0)) s"
fi

echo "== gpu_tc_f64.sh: $out"
for s in "${status[@]}"; do echo "  $s"; done
grep -E "inferred:|committed|differs|model_fit|\[prediction\]" "$out/gpu_tests_tc_f64.log" 2>/dev/null | head -20
python3 - "$out" <<'PY'
import csv, os, sys
d = sys.argv[1]
def rows(name):
    p = os.path.join(d, name)
    return list(csv.DictReader(open(p))) if os.path.exists(p) else []
for r in rows("tc_f64.csv"):
    if r["feature"] in ("arithmetic", "chain_order", "model_family", "model_fit", "subnormal_inputs",
                        "subnormal_output", "nan_encoding", "overflow", "zero_sign"):
        print(f"  {r['instruction']:18} {r['feature']:18} {r['observed'][:140]}")
corpus = rows("tc_f64_corpus.csv")
if corpus:
    for ins in dict.fromkeys(r["instruction"] for r in corpus):
        print(f"  corpus {ins} (mismatching / cases): " + ", ".join(
            f"{r['class']} {r['mismatching_outputs']}/{r['cases']}" for r in corpus if r["instruction"] == ins))
for r in rows("tc_f64_validation.csv"):
    if r["distribution"] == "all":
        print(f"  random tiles: {r['instruction']} {r['tiles']} tiles, {r['outputs']} outputs, "
              f"{r['mismatching_outputs']} mismatching")
print(f"  {'kernel':24} {'distribution':14} {'outputs':>9} {'mismatches':>10}")
for r in rows("predict_f64.csv"):
    print(f"  {r['kernel']:24} {r['distribution']:14} {r['outputs']:>9} {r['mismatches']:>10}")
PY
