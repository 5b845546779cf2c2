#!/usr/bin/env bash
# Issue 22 (scaled fp8) on a Hopper GPU, with prebuilt binaries:
#   scripts/lab/gpu_scaled_fp8.sh BIN_DIR OUT_DIR
# BIN_DIR holds gemmlab and gemmlab_gpu_tests (built with the cublas and hopper families, sm_90a);
# everything goes under OUT_DIR, and a short table is printed last. About 5 to 6 minutes on an H100
# (the scaled suite's problems are quantized and judged on the host: about 4 s per 4096^3 problem and
# 12 s per 8192x8192x7168 one), plus up to 150 s when the DeepGEMM wheel is there: run the script a
# second time with the same OUT_DIR if a call's limit cuts it (finished steps are skipped):
#  1. the topic's GPU tests (ScaledFp8Gpu*: quantization on the GPU = the CPU's bits, every scaled
#     kernel within its bound at K = 640 and 400, gemmlab's scaled kernels predicted bit for bit, the
#     cuBLASLt modes against the candidate orders);
#  2. the scaled_fp8 suite, trimmed to fit: the fp32-scale recipes on all three sources at 4096^3 and on
#     normal_0_1 at 8192x8192x7168, the UE8M0 recipes on normal_0_1 at 4096^3; SCALED_FP8_FULL=1 adds
#     8192x8192x7168 on U[0,1) and expspread_1 (the Done-when's full set; about 4 more minutes: a second
#     call with the same OUT_DIR). `gemmlab run --suite scaled_fp8` is the whole plan in one run;
#  3. `gemmlab predict` at 512x512x896 ((K/128) mod 4 = 3): gemmlab's scaled kernels through their
#     numerics, each cuBLASLt mode against every candidate order (which one, if any, matches); then
#     `gemmlab order` (FPRev, every scale 1) for the cuBLASLt modes at 256x256x256: their summation trees;
#  4. DeepGEMM (optional): when BIN_DIR holds the sgl-deep-gemm wheel (`pip download sgl-deep-gemm==0.2.5
#     --no-deps`, a CUDA 13 / PyTorch manylinux build of deepseek-ai/DeepGEMM), it is installed into
#     OUT_DIR/pydeps and judged by examples/judge_deepgemm.py (gemmlab.judge, total error
#     against A0 B0 on the suite's sources and seed; at most 150 s); otherwise the step says why not;
#  5. the speed table: hgemm_wgmma_11 block-scaled / cuBLASLt VEC128 x BLK128x128 and / the unscaled fp8
#     kernels, per size, from the same run.
# Idempotent: a step whose output exists is skipped; a suite run cut short continues its journal.
# Post-processing (on any machine): python3 scripts/lab/scaled_fp8_results.py OUT_DIR results/scaled_fp8
set -uo pipefail
bin=$1; out=$2
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader | tee "$out/gpu.txt"

# 1. GPU tests of the topic.
if [ ! -s "$out/gpu_tests.log" ] || ! grep -q "tests ran" "$out/gpu_tests.log"; then
  "$bin"/gemmlab_gpu_tests --gtest_filter='ScaledFp8*' 2>&1 | tee "$out/gpu_tests.log" | grep -E '^\[ *(FAILED|PASSED|SKIPPED) |tests ran|\[scaled'
fi

# 2. The suite (resumable: a journal left by a cut-short call is continued).
run() {
  local csv=$1 resume=()
  shift
  [ -e "$csv" ] && { echo "$(basename "$csv") exists: skipped"; return 0; }
  [ -e "$csv.journal" ] && resume=(--resume)
  "$bin"/gemmlab run "$@" -o "$csv" "${resume[@]}"
}
recipes() {  # the fp32-scale recipes of the sources given
  local list="" s g
  for s in "$@"; do
    for g in tensor rowwise 1x128_128x128 1x128_1x128; do list+="${list:+,}$s@e4m3_$g"; done
  done
  echo "$list"
}
ue8m0=""
for g in tensor rowwise 1x128_128x128 1x128_1x128; do ue8m0+="${ue8m0:+,}normal_0_1@e4m3_${g}_ue8m0"; done
# The scaled rows are quantized and judged on the host (two exact references on the GPU, two sets
# of CPU statistics per row): about 5 s per row at 8192x8192x7168, so that size runs on normal_0_1
# here and on the other two sources only with SCALED_FP8_FULL=1 (a second call, about 4 minutes).
run "$out/scaled_fp8_4096.csv" --suite scaled_fp8 -s 4096 -d "normal_0_1,$(recipes uniform_0_1 normal_0_1 expspread_1)" \
  2>>"$out/scaled_fp8.log"; echo "suite 4096^3 (fp32 scales) rc=$?"
run "$out/scaled_fp8_8192.csv" --suite scaled_fp8 -s 8192x8192x7168 -d "normal_0_1,$(recipes normal_0_1)" \
  2>>"$out/scaled_fp8.log"; echo "suite 8192x8192x7168 normal_0_1 (fp32 scales) rc=$?"
run "$out/scaled_fp8_ue8m0_4096.csv" --suite scaled_fp8 -s 4096 -d "$ue8m0" 2>>"$out/scaled_fp8.log"
echo "suite 4096^3 (ue8m0) rc=$?"
if [ "${SCALED_FP8_FULL:-0}" = 1 ]; then
  run "$out/scaled_fp8_8192_more.csv" --suite scaled_fp8 -s 8192x8192x7168 -d "$(recipes uniform_0_1 expspread_1)" \
    2>>"$out/scaled_fp8.log"; echo "suite 8192x8192x7168 uniform, expspread (fp32 scales) rc=$?"
fi

# 3. Prediction, one call per recipe granularity (a scaled kernel takes only its recipe's operands).
predict() {
  local csv=$1 kernels=$2 dists=$3
  [ -e "$csv" ] && { echo "$(basename "$csv") exists: skipped"; return 0; }
  "$bin"/gemmlab predict -k "$kernels" -d "$dists" -s 512x512x896 --seed 22 -o "$csv" >>"$out/predict.log" 2>&1
  local rc=$?
  echo "predict $(basename "$csv") rc=$rc (5: some outputs differ from the prediction)"
}
predict "$out/predict_1x128_128x128.csv" \
  hgemm_wgmma_11_fp8scaled_sm8_e4m3_1x128_128x128,cublaslt_fp8_scaled_e4m3_1x128_128x128_f32 \
  normal_0_1@e4m3_1x128_128x128,expspread_1@e4m3_1x128_128x128
predict "$out/predict_rowwise.csv" \
  hgemm_wgmma_11_fp8scaled_sm8_e4m3_rowwise,cublaslt_fp8_scaled_e4m3_rowwise_f32,cublaslt_fp8_scaled_e4m3_rowwise_f32_fast_accum \
  normal_0_1@e4m3_rowwise
predict "$out/predict_tensor.csv" \
  cublaslt_fp8_scaled_e4m3_tensor_f32,cublaslt_fp8_scaled_e4m3_tensor_f32_fast_accum normal_0_1@e4m3_tensor
predict "$out/predict_1x128_1x128.csv" cublaslt_fp8_scaled_e4m3_1x128_1x128_f32 normal_0_1@e4m3_1x128_1x128
grep -E "matched|mismatch" "$out/predict.log" | tail -n 20
# The summation tree of each cuBLASLt mode (FPRev masking with every scale 1: where its blocks of K
# start and end), at K = 256 (2 scale blocks); at most 30 s each.
for k in cublaslt_fp8_scaled_e4m3_1x128_128x128_f32 cublaslt_fp8_scaled_e4m3_1x128_1x128_f32 \
         cublaslt_fp8_scaled_e4m3_rowwise_f32 cublaslt_fp8_scaled_e4m3_rowwise_f32_fast_accum; do
  [ -e "$out/order_$k.csv" ] && continue
  timeout 30 "$bin"/gemmlab order -k "$k" -s 256x256x256 -o "$out/order_$k.csv" >>"$out/order.log" 2>&1
  echo "order $k rc=$?"
done
grep -iE "tree|blocks|promot" "$out/order.log" | tail -n 12

# 4. DeepGEMM through the callable path, if a wheel of it was carried here. sgl-deep-gemm wheels are
#    built against one PyTorch each (its README), so every carried one is tried, newest first, until
#    one imports; torch's and CUDA's libraries go on the loader path (the wheel has no RPATH to them).
here=$(cd "$(dirname "$0")/../.." && pwd)
wheels=$(ls "$bin"/sgl_deep_gemm-*.whl 2>/dev/null | sort -rV)
if [ -e "$out/deepgemm.csv" ]; then
  echo "deepgemm.csv exists: skipped"
elif [ -z "$wheels" ]; then
  echo "DeepGEMM: no sgl_deep_gemm-*.whl in $bin: not judged" | tee "$out/deepgemm_unavailable.txt"
else
  libs=$(python3 -c "import glob, os, torch; d = os.path.dirname(torch.__file__); print(':'.join([os.path.join(d, 'lib')] + sorted(glob.glob(os.path.join(os.path.dirname(d), 'nvidia', '*', 'lib')))))" 2>/dev/null)
  for wheel in $wheels; do
    rm -rf "$out/pydeps"
    python3 -m pip install --no-deps --quiet --target "$out/pydeps" "$wheel" >>"$out/deepgemm.log" 2>&1
    # sgl-deep-gemm 0.2.0 loads its _C through apache-tvm-ffi (==0.1.11): carried beside it, if at all.
    for dep in "$bin"/apache_tvm_ffi-*.whl; do
      [ -e "$dep" ] && python3 -m pip install --no-deps --quiet --target "$out/pydeps" "$dep" >>"$out/deepgemm.log" 2>&1
    done
    echo "== $(basename "$wheel")" >>"$out/deepgemm.log"
    LD_LIBRARY_PATH="$libs:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
      PYTHONPATH="$out/pydeps${PYTHONPATH:+:$PYTHONPATH}" timeout 150 python3 "$here/examples/judge_deepgemm.py" \
      --out "$out/deepgemm.csv" >>"$out/deepgemm.log" 2>&1
    rc=$?
    echo "deepgemm $(basename "$wheel") rc=$rc (log: deepgemm.log)"
    [ $rc -eq 3 ] || break  # 3: this wheel does not import here; try the next
  done
  [ -e "$out/deepgemm.csv" ] && rm -f "$out/deepgemm_unavailable.txt"
  tail -n 12 "$out/deepgemm.log"
fi

# 5. The short table: speed ratios and both errors, from the suite's CSV.
python3 - "$out"/scaled_fp8_*.csv <<'PY'
import csv, sys
rows = [r for f in sys.argv[1:] for r in csv.DictReader(open(f)) if r["status"] in ("passed", "failed_bound", "no_bound")]
def tf(kernel, size, dist):
    v = [float(r["tflops"]) for r in rows if r["kernel"] == kernel and f'{r["M"]}x{r["N"]}x{r["K"]}' == size
         and r["distribution"] == dist]
    return v[0] if v else float("nan")
for size in ("4096x4096x4096", "8192x8192x7168"):
    ours = tf("hgemm_wgmma_11_fp8scaled_sm8_e4m3_1x128_128x128", size, "normal_0_1@e4m3_1x128_128x128")
    lt = tf("cublaslt_fp8_scaled_e4m3_1x128_128x128_f32", size, "normal_0_1@e4m3_1x128_128x128")
    raw = tf("hgemm_wgmma_04_persistent_sm8_e4m3_in_wgmma", size, "normal_0_1")
    prom = tf("hgemm_wgmma_04_persistent_sm8_e4m3_promoted_every_128k", size, "normal_0_1")
    print(f"{size}: block-scaled {ours:.0f} TFLOP/s, cuBLASLt VEC128xBLK128x128 {lt:.0f} -> ratio {ours / lt:.3f} "
          f"(target >= 1.0); vs unscaled e4m3 in_wgmma {ours / raw:.3f}, vs promoted_every_128k {ours / prom:.3f}")
print(f"{'kernel':52s} {'distribution':32s} {'size':15s} {'TFLOP/s':>8s} {'gemm rel_std':>12s} {'total rel_std':>13s} status")
for r in rows:
    print(f'{r["kernel"]:52s} {r["distribution"]:32s} {r["M"] + "x" + r["N"] + "x" + r["K"]:15s} '
          f'{float(r["tflops"]):8.0f} {float(r["rel_std"]):12.3e} {r["total_rel_std"] or "-":>13s} {r["status"]}')
PY
