#!/usr/bin/env bash
# Determinism and batch invariance on one GPU (issue 24), with prebuilt binaries:
#   scripts/lab/gpu_invariance.sh BIN_DIR OUT_DIR
# BIN_DIR holds gemmlab and gemmlab_gpu_tests; CSVs (+ .meta.json) and logs go to OUT_DIR, and a
# short table is printed last. Each part is skipped when its CSV is already there (a second call
# after a cut-short one does only what is missing). About 5 minutes on an H100.
#  1. the GPU tests of this topic (InvarianceGpu*);
#  2. the matrix at 512x4096x4096 (uniform_-1_1, m = 1..8, 2^p - 1, 2^p, 2^p + 1 below 512; 3
#     repeats; cost rows): every cuBLAS and cuBLASLt kernel (family:cublas: fp32, TF32, the fast
#     16F/16BF modes, fp16, bf16, fp8) under the harness's settings, and every Hopper step
#     (family:hopper: hgemm_wgmma_01..10 in fp16, bf16, fp8);
#  3. vLLM PR #43337 ("split-K is the only source on SM90; cuBLAS workspace settings remove it"):
#     the bf16 library kernels under ws=0, ws=large, CUBLAS_WORKSPACE_CONFIG=:4096:8 and :0:0
#     (fresh handles), and on a stream of their own, beside the default; then the same at K = 256
#     with the order of each differing entry revealed (split-K or not, in the `why` column);
#  4. Transformer Engine issue #2986 ("a row changing with 5 of 7 batch sizes"): batch sizes
#     1, 2, 4, 8, 16, 32, 64 rows of a bf16 (., 4096) x (4096, 4096) GEMM: rows of M = 1..32
#     against M = 64, cuBLAS and cuBLASLt bf16 under the default and ws=0.
#  5. torch.matmul (fp32, TF32, fp16, bf16), torch._scaled_mm (e4m3) and the Triton matmul of
#     examples/triton_matmul.py in each format, through gemmlab.invariance (the Python
#     package on PYTHONPATH), at 512x4096x4096, and TE #2986's batch sizes for torch and Triton bf16
#     (fw_*.csv, te_*.csv).
set -uo pipefail
bin=$1; out=$2
mkdir -p "$out"
gl="$bin/gemmlab"
status=0
part() {  # part NAME ARGS...: gemmlab invariance into OUT/NAME.csv unless it is there
  local name=$1; shift
  if [ -e "$out/$name.csv" ]; then echo "== $name: already there"; return; fi
  echo "== $name"
  "$gl" invariance "$@" -o "$out/$name.csv" 2>&1 | tee "$out/$name.log"
  local rc=${PIPESTATUS[0]}
  [ "$rc" -eq 0 ] || { echo "== $name: exit $rc"; status=1; }
}

if [ ! -e "$out/gpu_tests.log" ] || ! grep -q PASSED "$out/gpu_tests.log"; then
  "$bin"/gemmlab_gpu_tests --gtest_filter='InvarianceGpu*' 2>&1 | tee "$out/gpu_tests.log" || status=1
fi

part matrix_cublas -k family:cublas -s 512x4096x4096 --m default --repeats 3
part matrix_hopper -k family:hopper -s 512x4096x4096 --m default --repeats 3
part vllm_workspace -k cublas_gemmex_bf16_f32,cublaslt_bf16_f32 -s 512x4096x4096 --m default --repeats 3 \
  --settings 'default;ws=0;ws=large;cfg=:4096:8;cfg=:0:0;stream=own'
part vllm_orders_k256 -k cublas_gemmex_bf16_f32,cublaslt_bf16_f32 -s 512x4096x256 --m 1,8,16,64,128,256 \
  --settings 'default;ws=0' --reveal-k-max 256 --no-cost
part te_batch_sizes -k cublas_gemmex_bf16_f32,cublaslt_bf16_f32 -s 64x4096x4096 --m 1,2,4,8,16,32 --repeats 3 \
  --settings 'default;ws=0'

here=$(cd "$(dirname "$0")/../.." && pwd)
if [ -e "$out/fw_done" ]; then
  echo "== frameworks: already there"
elif python3 -c 'import gemmlab, torch, triton; gemmlab.invariance' 2>/dev/null; then
  echo "== frameworks"
  python3 "$here/examples/invariance_frameworks.py" --out "$out" --te 2>&1 | tee "$out/frameworks.log" \
    && touch "$out/fw_done" || status=1
else
  echo "== frameworks: not run (python3 cannot import gemmlab with invariance, torch and triton)"
fi

python3 - "$out" <<'PY'
import csv, glob, os, sys
out = sys.argv[1]
print(f"\n{'csv':<18} {'kernel':<44} {'config':<14} {'equal':>5} {'differ':>6} {'n/a':>4} {'time_ms':>8}  first why")
for path in sorted(glob.glob(os.path.join(out, "*.csv"))):
    rows = list(csv.DictReader(open(path)))
    keys = []
    for r in rows:
        k = (r["kernel"], r["config"])
        if k not in keys:
            keys.append(k)
    for k in keys:
        mine = [r for r in rows if (r["kernel"], r["config"]) == k and r["check"] != "cost"]
        cost = [r for r in rows if (r["kernel"], r["config"]) == k and r["check"] == "cost"]
        eq = sum(r["status"] == "equal" for r in mine)
        df = [r for r in mine if r["status"] == "differs"]
        na = len(mine) - eq - len(df)
        t = cost[0]["time_ms_median"] if cost else ""
        why = df[0]["why"][:70] if df else ""
        print(f"{os.path.basename(path)[:-4]:<18} {k[0]:<44} {k[1]:<14} {eq:>5} {len(df):>6} {na:>4} {t:>8}  {why}")
PY
exit $status
