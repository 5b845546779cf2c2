#!/usr/bin/env bash
# Where explain's launches and the main job's statistics spend their time (issue 42), on the GPU:
#   scripts/lab/probes/profile_costs.sh BUILD_DIR OUT_DIR
# explain at 4096^3 of three cuBLAS kernels with GEMMLAB_PROFILE_ORACLE=1 (each oracle call split into
# writing the lines, the launch with its entries, and explain's own work between calls, printed at each
# perturbation and at the end), and a few main-job rows with GEMMLAB_PROFILE_STATS=1 (the statistics'
# phases, each after a device synchronisation). Logs in OUT_DIR.
set -uo pipefail
bin=$1 out=$2
mkdir -p "$out"
for k in cublaslt_fp8_e4m3_f32 cublas_gemmex_bf16_f32 cublas_gemmex_fp32_pedantic; do
  /usr/bin/time -f "wall %e s" env GEMMLAB_PROFILE_ORACLE=1 "$bin/gemmlab" explain -k "$k" -s 4096 \
    -o "$out/explain_$k.csv" >"$out/explain_$k.log" 2>&1
  echo "explain $k rc=$?"; grep -E "^\[oracle\]|wall|stage|seconds" "$out/explain_$k.log" | tail -12
done
/usr/bin/time -f "wall %e s" env GEMMLAB_PROFILE_STATS=1 "$bin/gemmlab" run --isolation none -s 4096 -d all \
  -k cublas_gemmex_fp16_f32,cublas_gemmex_bf16_f32,sgemm_10_warptiling -o "$out/stats.csv" >"$out/stats.log" 2>&1
echo "stats rc=$?"
grep "^\[stats\]" "$out/stats.log" | awk '{t[$2]+=$3; n[$2]++} END {for (k in t) printf "%-12s %8.3f ms total %4d calls\n", k, t[k], n[k]}'
python3 -c "import json; print(json.load(open('$out/stats.meta.json'))['timing_seconds'])"
