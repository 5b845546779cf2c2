#!/usr/bin/env bash
# Issue 34 (forms beyond C = A B) on a GPU. Usage: scripts/lab/gpu_forms.sh BIN_DIR OUT_DIR [PART]
# PART: tests (the GPU tests FormsGpu* and the Python tests of forms), suite (every form on the cuBLAS baselines
# at a small size; the baselines' slice of the main job: their own forms at 4096^3 on the default distributions,
# with its timing split; cuBLAS's grouped GEMM on the Done-when groups), torch (examples/judge_forms.py:
# F.linear with a bias, torch.addmm, torch.bmm, torch._grouped_mm, torch._scaled_mm with a bias and an fp8 output),
# all (the three). PYTHONPATH must hold the gemmlab wheel (with gemmlab._gpu) for the Python parts. A short table
# of every row is printed last (kernel, form, distribution, status, bias and spread in units of u).
set -uo pipefail
bin=$1; out=$2; part=${3:-all}
mkdir -p "$out"
baselines=cublaslt_bias_fp16,cublaslt_bias_bf16,cublas_strided_batched_bf16,cublas_grouped_bf16
if [ "$part" = tests ] || [ "$part" = all ]; then
  "$bin"/gemmlab_gpu_tests --gtest_filter='FormsGpu*' > "$out/forms_gpu_tests.log" 2>&1
  echo "FormsGpu tests rc=$? ($(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$out/forms_gpu_tests.log" | tr '\n' ' '))"
  GEMMLAB_BIN="$bin/gemmlab" python3 -m pytest -q tests/python/test_forms.py > "$out/forms_pytest.log" 2>&1
  echo "pytest test_forms.py rc=$? ($(tail -1 "$out/forms_pytest.log"))"
fi
if [ "$part" = suite ] || [ "$part" = all ]; then
  "$bin"/gemmlab run --suite forms -o "$out/forms_small.csv" --force > "$out/forms_small.log" 2>&1
  echo "small suite of forms rc=$?"
  "$bin"/gemmlab run --suite default -k "$baselines" -o "$out/default_baselines.csv" --force \
    > "$out/default_baselines.log" 2>&1
  echo "the baselines' slice of the main job rc=$? (timing: $(python3 -c "import json,sys; t=json.load(open('$out/default_baselines.meta.json'))['timing_seconds']; print(', '.join(f'{k} {v:.2f}' for k,v in t.items()))" 2>&1))"
  "$bin"/gemmlab run -k cublas_grouped_bf16 --form 'groups=128+512+1000+2048' -s 3688x4096x4096 \
    -d uniform_0_1,normal_0_1 --seeds 20261121 -o "$out/cublas_grouped_doneWhen.csv" --force \
    > "$out/cublas_grouped_doneWhen.log" 2>&1
  echo "cuBLAS grouped, groups 128/512/1000/2048 rc=$?"
fi
if [ "$part" = torch ] || [ "$part" = all ]; then
  python3 examples/judge_forms.py --out "$out/torch" > "$out/torch.log" 2>&1
  echo "torch forms rc=$?"
  grep -E "refused|has no torch._grouped_mm" "$out/torch.log" | cut -c1-240
fi
python3 - "$out" <<'EOF'
import csv, glob, math, os, sys
rows = []
for f in sorted(glob.glob(os.path.join(sys.argv[1], "**", "*.csv"), recursive=True)):
    if f.endswith("forms_table.csv"):
        continue
    with open(f) as fh:
        for r in csv.DictReader(fh):
            if "status" not in r or "kernel" not in r:
                break
            def u(c):
                v = r.get(c, "")
                return f"{float(v):.4g}" if v not in ("", "nan") else "-"
            rows.append((os.path.basename(f), r["kernel"], r.get("form", "plain"), r["distribution"],
                         f'{r["M"]}x{r["N"]}x{r["K"]}', r["status"], u("rel_mean_u"), u("rel_std_u"), u("tflops")))
print(f"{'csv':28} {'kernel':40} {'form':52} {'dist':12} {'size':16} {'status':14} {'bias_u':>10} {'spread_u':>10} {'TFLOP/s':>8}")
for r in rows:
    print(f"{r[0][:28]:28} {r[1][:40]:40} {r[2][:52]:52} {r[3][:12]:12} {r[4]:16} {r[5]:14} {r[6]:>10} {r[7]:>10} {r[8]:>8}")
EOF
