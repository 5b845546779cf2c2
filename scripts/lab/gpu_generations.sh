#!/usr/bin/env bash
# Issue 41's GPU part, on a Hopper GPU with prebuilt binaries:
#   scripts/lab/gpu_generations.sh BIN_DIR OUT_DIR
# 1. the new probed instruction wmma_m16n16k16_f16_f16: probes, the adversarial corpus and 200,000
#    random tiles, the inferred model compared with the one gemmlab holds (tc-eval --list);
# 2. the GPU decides the model: `gemmlab predict` and `gemmlab explain` record tc_model (hopper,
#    validated) in their metadata; --gpu a100 is used and said to be an assumption; --gpu nope refused;
# 3. nothing moves on Hopper: the predictions of three built-in kernels against the hardware.
# A short table last. About 2 minutes on an H200.
set -uo pipefail
bin=$1; out=$2
mkdir -p "$out"
g=$bin/gemmlab
"$g" probe --corpus --instructions wmma_m16n16k16_f16_f16 --validate 200000 --seed 1 -o "$out/probe_wmma_f16_f16.csv" \
  >"$out/probe_wmma_f16_f16.log" 2>&1
echo "probe rc=$?"
"$g" tc-eval --list --gpu hopper | grep -A1 "wmma_m16n16k16_f16_f16" >"$out/model_wmma_f16_f16.txt"
"$g" predict -k hgemm_mma_01_naive_in_mma,hgemm_wgmma_10_epioverlap_sm16_fp16_in_wgmma,sgemm_10_warptiling \
  -d uniform_0_1,normal_0_1 -s 512 -o "$out/predict.csv" >"$out/predict.log" 2>&1
echo "predict rc=$?"
"$g" predict -k hgemm_mma_01_naive_in_mma -d uniform_0_1 -s 512 --gpu a100 -o "$out/predict_as_a100.csv" \
  >"$out/predict_as_a100.log" 2>&1
echo "predict --gpu a100 rc=$? (5 expected: Ampere's arithmetic does not predict Hopper's bits)"
"$g" predict -k hgemm_mma_01_naive_in_mma -d uniform_0_1 -s 512 --gpu nope -o "$out/predict_nope.csv" \
  >"$out/predict_nope.log" 2>&1
echo "predict --gpu nope rc=$? (2 expected)"
python3 - "$out" <<'PY'
import csv, json, sys
out = sys.argv[1]
def meta(p):
    try: return json.load(open(p)).get("tc_model", {})
    except Exception as e: return {"error": str(e)}
print("\n| check | result |\n| --- | --- |")
rows = list(csv.DictReader(open(f"{out}/probe_wmma_f16_f16.csv"))) if True else []
fit = [r for r in rows if r.get("feature") in ("model_fit", "status")]
print(f"| probe wmma f16->f16 | {'; '.join(r['observed'][:120] for r in fit)} |")
for line in open(f"{out}/probe_wmma_f16_f16.log"):
    if line.startswith("validate"): print(f"| validation | {line.strip()[:160]} |")
print(f"| model held | {open(f'{out}/model_wmma_f16_f16.txt').read().split(chr(10))[0][:160]} |")
for r in csv.DictReader(open(f"{out}/predict.csv")):
    print(f"| predict {r['kernel']} {r['distribution']} | {r['mismatches']} of {r['outputs']} mismatching |")
print(f"| predict metadata tc_model | {meta(out + '/predict.meta.json')} |")
print(f"| --gpu a100 | {meta(out + '/predict_as_a100.meta.json')} |")
print(f"| --gpu nope | {open(out + '/predict_nope.log').read().strip()[:160]} |")
PY
