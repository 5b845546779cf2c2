#!/usr/bin/env bash
# ctest tc.km_vectors: every sample of the published tensor-core outputs (tests/data/km_vectors/)
# through `gemmlab tc-eval --gpu <its GPU>`: exit 0 (every output matched) required. The samples of
# GPUs whose arithmetic differs from Hopper's (V100, A100, A2, Ada, L40S) must also FAIL under
# `--gpu hopper` (exit 5): the sample holds vectors that tell the models apart. The fp16 -> fp16 sets
# are the exception: Hopper's model reproduces all of them on every GPU (rounding to fp16's 11 bits
# hides the accumulator's 23, 24 or 25), so they pin nothing and are not held to it.
#   tests/check_km_vectors.sh GEMMLAB DATA_DIR OUT_DIR
set -uo pipefail
gemmlab=$1; data=$2; out=$3
mkdir -p "$out"
fail=0; n=0
for f in "$data"/*.csv; do
  name=$(basename "$f" .csv); gpu=${name%%_*}
  n=$((n + 1))
  "$gemmlab" tc-eval --gpu "$gpu" --in "$f" -o "$out/${name}_own.csv" 2>"$out/${name}_own.log"
  rc=$?
  if [ $rc -ne 0 ]; then echo "FAIL $name under --gpu $gpu: rc $rc ($(cat "$out/${name}_own.log"))"; fail=1; fi
  case $name in
    *_fp16_fp16) ;;
    v100_*|a100_*|a2_*|ada_*|l40s_*)
      "$gemmlab" tc-eval --gpu hopper --in "$f" -o "$out/${name}_hopper.csv" 2>"$out/${name}_hopper.log"
      rc=$?
      if [ $rc -ne 5 ]; then echo "FAIL $name under --gpu hopper: rc $rc, expected 5 (mismatches)"; fail=1; fi ;;
  esac
done
[ $n -eq 48 ] || { echo "FAIL: $n sample files, expected 48 (every set of model_validation/)"; fail=1; }
echo "km_vectors: $n sets checked"
exit $fail
