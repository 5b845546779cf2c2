#!/usr/bin/env bash
# `gemmlab explain` on Triton's fp32 flavours with split operands: input_precision "tf32x3" (two tf32
# pieces), "bf16x3" (two bf16 pieces) and "bf16x6" (three bf16 pieces).
# Usage: scripts/lab/gpu_split.sh BIN_DIR OUT_DIR. BIN_DIR holds gemmlab, gemmlab_cpu_tests and
# gemmlab_gpu_tests; PYTHONPATH must hold the gemmlab wheel (with gemmlab._gpu); Triton 3.6 and torch.
# 1. the GPU tests of explain and the CPU tests of the split schemes (regressions: no built-in kernel
#    splits its operands, so the split itself is tested on synthetic CPU kernels);
# 2. examples/explain_frameworks.py on triton_fp32_tf32x3, triton_fp32_bf16x3 and
#    triton_fp32_bf16x6, with triton_fp32_tf32 and triton_fp32_ieee beside them (their identification
#    must not change), at 4096^3 and 2048x8192x3072, on three distributions, each judged by the bound
#    of the numerics found (the split ones by the bound of their pieces). Rows already written are
#    kept (delete OUT_DIR/frameworks to redo them).
# About 5-6 minutes on an H100. A short table is printed last.
set -uo pipefail
bin=$1; out=$2
mkdir -p "$out"
"$bin"/gemmlab_gpu_tests --gtest_filter='ExplainGpu*' > "$out/explain_gpu_tests.log" 2>&1
echo "ExplainGpu tests rc=$? ($(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$out/explain_gpu_tests.log" | tr '\n' ' '))"
"$bin"/gemmlab_cpu_tests --gtest_filter='ExplainSplit*:KernelEmulationSplit*' > "$out/split_cpu_tests.log" 2>&1
echo "split CPU tests rc=$? ($(grep -E '^\[  (PASSED|FAILED) ' "$out/split_cpu_tests.log" | tr '\n' ' '))"
only=""
for k in triton_fp32_tf32x3 triton_fp32_bf16x3 triton_fp32_bf16x6 triton_fp32_tf32 triton_fp32_ieee; do
  done_all=1
  for s in 4096x4096x4096 2048x8192x3072; do [ -s "$out/frameworks/${k}_$s.csv" ] || done_all=0; done
  [ $done_all = 1 ] || only="$only${only:+,}$k"
done
if [ -n "$only" ]; then
  GEMMLAB_EXPLAIN_TRACE=1 python3 examples/explain_frameworks.py --out "$out/frameworks" \
    --dists uniform_0_1,normal_0_1,logunif_-8_8 --sizes 4096 2048x8192x3072 --only "$only" > "$out/frameworks.log" 2>&1
  echo "explain_frameworks.py ($only) rc=$?"
fi
# kernel, size, identified / failed stage, mismatches per distribution, seconds, the split found
python3 - "$out/frameworks" <<'PY'
import csv, json, pathlib, sys
d = pathlib.Path(sys.argv[1])
print(f"{'kernel':22} {'size':15} {'identified':12} {'mismatches':24} {'s':>6} {'judged':10} split / reason")
for f in sorted(d.glob("triton_fp32_*.csv")):
    if f.name.endswith("_judged.csv"):
        continue
    rows = list(csv.DictReader(f.open()))
    if not rows:
        continue
    r = rows[0]
    meta = json.loads(f.with_suffix(".meta.json").read_text()) if f.with_suffix(".meta.json").exists() else {}
    summary = meta.get("report", {}).get("summary", "")
    split = next((l.strip() for l in summary.splitlines() if l.strip().startswith("split:")), "")
    mism = " ".join(f"{x['mismatches']}/{x['compared_outputs']}" for x in rows if x["distribution"])
    size = f"{r['M']}x{r['N']}x{r['K']}"
    ident = "yes" if r["identified"] == "yes" else f"no ({r['failed_stage']})"
    judged = f.with_name(f.stem + "_judged.csv")
    status = ",".join(sorted({x["status"] for x in csv.DictReader(judged.open())})) if judged.exists() else "-"
    print(f"{r['kernel']:22} {size:15} {ident:12} {mism:24} {float(r['explain_seconds']):6.1f} {status:10} "
          f"{(split or r['reason'])[:160]}")
PY
