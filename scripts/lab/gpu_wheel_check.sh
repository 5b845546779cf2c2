#!/usr/bin/env bash
# Issue 35 on a GPU host: the gemmlab wheel (scripts/build_wheel.sh) installed by pip where there are
# Python >= 3.12, PyTorch, Triton and the CUDA driver but no compiler or -dev packages, and no internet.
# usage: scripts/lab/gpu_wheel_check.sh WHEEL OUT_DIR
# The wheel goes into OUT_DIR/venv (--system-site-packages: the host's numpy, pandas, torch and
# triton; --no-deps --no-index: nothing is fetched; OUT_DIR/site on PYTHONPATH where there is no
# venv module). Everything runs from OUT_DIR, so `import gemmlab` is the installed wheel, never the
# repository's python/ (the Triton kernel is the repository's examples/triton_matmul.py).
# PYTHON picks the host's Python (default python3). Then:
#   1. gemmlab list;  2. gemmlab run -k cublas_gemmex_fp16_f32,hgemm_wgmma_10_epioverlap_sm16_fp16_in_wgmma -s 4096;
#   3. gemmlab.judge(torch.matmul, fp16, 4096^3);  4. gemmlab.explain(Triton fp16 -> fp32 matmul, 4096^3).
# Logs in OUT_DIR/*.log, CSVs beside them; a short table last (step, exit code, what it shows).
set -uo pipefail
[ $# -eq 2 ] || { echo "usage: $0 WHEEL OUT_DIR" >&2; exit 2; }
wheel=$(readlink -f "$1"); out=$(mkdir -p "$2" && cd "$2" && pwd)
repo=$(cd "$(dirname "$0")/../.." && pwd)
py=${PYTHON:-python3}
[ -f "$wheel" ] || { echo "no wheel at $1" >&2; exit 2; }
cd "$out"
declare -a table
row() { table+=("$(printf '%-10s %-4s %s' "$1" "$2" "$3")"); echo "== $1 rc=$2: $3"; }

{
  echo "host: $(hostname); $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -1)"
  echo "python: $($py --version 2>&1) ($py)"
  $py -c 'import torch, triton, numpy, pandas; print("torch", torch.__version__, "cuda", torch.version.cuda, "| triton", triton.__version__, "| numpy", numpy.__version__, "| pandas", pandas.__version__)' 2>&1
  echo "-dev headers: mpfr.h $(ls /usr/include/mpfr.h 2>/dev/null || echo absent), gmp.h $(ls /usr/include/gmp.h /usr/include/x86_64-linux-gnu/gmp.h 2>/dev/null | head -1 || true)"
  echo "nvcc: $(command -v nvcc || echo absent); cuBLAS in ldconfig: $(ldconfig -p 2>/dev/null | grep -c 'libcublas')"
  echo "wheel: $(basename "$wheel") $(du -h "$wheel" | cut -f1)"
} 2>&1 | tee env.log
row env 0 "$(basename "$wheel"), $(du -h "$wheel" | cut -f1)"

rm -rf venv site
if $py -m venv --system-site-packages venv > install.log 2>&1; then
  vpy=venv/bin/python; gl=venv/bin/gemmlab
  # The host's own packages (torch, triton, numpy, pandas, pytest): where $py is itself a venv's
  # Python, --system-site-packages reaches only the base interpreter's, so name them in a .pth file.
  $py -c 'import site; print("\n".join(site.getsitepackages()))' \
    > "$(venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/host-site.pth"
  $vpy -m pip install --no-deps --no-index --disable-pip-version-check "$wheel" >> install.log 2>&1
else  # no venv module here: a folder of its own on PYTHONPATH
  echo "no venv: pip install --target $out/site" >> install.log
  vpy=$py; gl=$out/site/bin/gemmlab; export PYTHONPATH=$out/site
  $py -m pip install --no-deps --no-index --disable-pip-version-check --target site "$wheel" >> install.log 2>&1
fi
rc=$?
row install $rc "$(tail -1 install.log | cut -c1-120)"
[ $rc -eq 0 ] || { printf '%s\n' "${table[@]}"; exit 1; }
$vpy -c 'from gemmlab import _cuda_libs as c; f = c.find(); print(f.source, *f.paths)' > cublas.log 2>&1
row cublas $? "$(cut -c1-150 cublas.log)"

"$gl" list > list.log 2>&1
row list $? "$(grep -c '^  [a-z]' list.log) lines; wgmma_10: $(grep -c 'hgemm_wgmma_10_epioverlap_sm16_fp16_in_wgmma' list.log)"

"$gl" run -k cublas_gemmex_fp16_f32,hgemm_wgmma_10_epioverlap_sm16_fp16_in_wgmma -s 4096 -o "$out/run.csv" \
  > run.log 2>&1
rc=$?
summary=$($vpy - "$out/run.csv" <<'EOF' 2>&1
import sys, pandas as pd
d = pd.read_csv(sys.argv[1])
print("; ".join(f"{r.kernel} {r.status} {r.tflops:.0f} TFLOP/s rel_std={r.rel_std:.3g}" for r in d.itertuples()))
EOF
)
row run $rc "$(tail -1 <<<"$summary")"

cat > judge.py <<'EOF'
import torch  # first: gemmlab then shares PyTorch's cuBLAS
import gemmlab
from gemmlab import _cuda_libs

print("cuBLAS:", _cuda_libs.find().source)
print("gpu:", gemmlab.gpu_available())
rows = gemmlab.judge(torch.matmul, name="torch_matmul_fp16", input_format="fp16", output_format="fp16",
                     sizes=[4096], out="judge.csv")
print(rows[["kernel", "M", "status", "tflops", "rel_std", "cw_over_gamma"]].to_string())
r = rows.iloc[0]
print(f"SUMMARY {r.kernel} {r.status} {r.tflops:.0f} TFLOP/s cw/gamma={r.cw_over_gamma:.3g}")
EOF
$vpy judge.py > judge.log 2>&1
row judge $? "$(grep '^SUMMARY\|Error' judge.log | tail -1 | cut -c1-150)"

cat > explain.py <<EOF
import sys
import torch
import gemmlab
sys.path.insert(0, "$repo/examples")
from triton_matmul import flavours

f = flavours()["triton_fp16_f32"]
e = gemmlab.explain(f["fn"], name="triton_fp16_f32", input_format="fp16", output_format="fp32", size=4096,
                    reps=5, warmup=2, out="explain.csv", judge_out="explain_judged.csv")
print(e.summary)
status = ",".join(sorted(set(e.judged["status"]))) if e.judged is not None else "-"
print(f"SUMMARY identified={e.identified} judged={status} behaves_like={' '.join(e.behaves_like[:2])}")
EOF
$vpy explain.py > explain.log 2>&1
row explain $? "$(grep '^SUMMARY\|Error' explain.log | tail -1 | cut -c1-150)"

echo
echo "step       rc   result"
printf '%s\n' "${table[@]}"
