#!/usr/bin/env bash
# Issue 43 (quantized matmuls) on an H100/H200. Usage: scripts/lab/gpu_quantized.sh BIN_DIR OUT_DIR [PART]
# BIN_DIR holds the prebuilt gemmlab and gemmlab_gpu_tests of this tree; PYTHON (default python3) is a Python with
# torch, Triton and this tree's gemmlab wheel (with gemmlab._gpu) installed. Run from the repository root. PART: tests (the GPU tests QuantizedGpu*, the Python
# tests of quantized forms), baselines (examples/judge_quantized.py at 4096^3 on three distributions: tl.dot_scaled
# MXFP8 x bf16, MXFP4 x bf16, MXFP4 x MXFP4, torch._int_mm with its epilogue, _weight_int4pack_mm g32 and g128, the
# Triton W4A16 kernel), explain (examples/explain_quantized.py at 4096^3: the same callables explained, every output
# of 64 rows of three quantized problems predicted), all (tests and baselines). Logs and CSVs go to OUT_DIR; a
# table of every quantized row is printed last
# (kernel, distribution, status, the kernel's bias and spread in units of u, the quantization and total spreads).
set -uo pipefail
bin=$1; out=$2; part=${3:-all}
mkdir -p "$out"
py=${PYTHON:-python3}
if [ "$part" = tests ] || [ "$part" = all ]; then
  "$bin"/gemmlab_gpu_tests --gtest_filter='QuantizedGpu*:ExplainQuantizedGpu*' > "$out/quantized_gpu_tests.log" 2>&1
  echo "QuantizedGpu and ExplainQuantizedGpu tests rc=$? ($(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$out/quantized_gpu_tests.log" | tr '\n' ' '))"
  GEMMLAB_BIN="$bin/gemmlab" "$py" -m pytest -q tests/python/test_quantized.py > "$out/quantized_pytest.log" 2>&1
  echo "pytest test_quantized.py rc=$? ($(tail -1 "$out/quantized_pytest.log"))"
fi
if [ "$part" = baselines ] || [ "$part" = all ]; then
  start=$(date +%s)
  "$py" examples/judge_quantized.py --out "$out/baselines" > "$out/baselines.log" 2>&1
  echo "examples/judge_quantized.py rc=$? in $(( $(date +%s) - start )) s"
  grep -E "refused" "$out/baselines.log" | cut -c1-300
fi
if [ "$part" = explain ]; then
  start=$(date +%s)
  "$py" examples/explain_quantized.py --out "$out/explain" ${EXPLAIN_ARGS:-} > "$out/explain.log" 2>&1
  echo "examples/explain_quantized.py rc=$? in $(( $(date +%s) - start )) s"
  tail -30 "$out/explain.log"
  exit 0
fi
"$py" - "$out" <<'PY'
import csv, glob, os, sys
rows = []
for f in sorted(glob.glob(os.path.join(sys.argv[1], "**", "*.csv"), recursive=True)):
    if f.endswith("quantized_table.csv"):
        continue
    with open(f) as fh:
        for r in csv.DictReader(fh):
            if "status" not in r or not r.get("recipe"):
                continue
            def g(c):
                v = r.get(c, "")
                return f"{float(v):.4g}" if v not in ("", "nan") else "-"
            rows.append((r["kernel"], r["distribution"], f'{r["M"]}x{r["N"]}x{r["K"]}', r["status"], g("rel_mean_u"),
                         g("rel_std_u"), g("quant_rel_std"), g("total_rel_std"), g("tflops"), (r.get("note") or "")[:70]))
print(f"{'kernel':38} {'distribution':34} {'size':15} {'status':13} {'bias_u':>9} {'spread_u':>9} {'quant_std':>9} "
      f"{'total_std':>9} {'TFLOP/s':>8}  note")
for r in rows:
    print(f"{r[0][:38]:38} {r[1][:34]:34} {r[2]:15} {r[3]:13} {r[4]:>9} {r[5]:>9} {r[6]:>9} {r[7]:>9} {r[8]:>8}  {r[9]}")
PY
