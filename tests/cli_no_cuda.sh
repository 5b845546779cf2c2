#!/usr/bin/env bash
# The commands that launch no kernel run where cuBLAS and the NVIDIA driver are absent, and those that
# launch one say what is missing (kernels/common/cuda_libraries.hpp). cuBLAS is hidden from every place
# gemmlab looks: the executable runs under the dynamic loader with its cache off (ld.so --inhibit-cache:
# no ldconfig), with LD_LIBRARY_PATH, CUDA_HOME and CUDA_PATH unset, and GEMMLAB_CUDA_LIB_DIR naming an
# empty folder (then gemmlab looks nowhere else). The test first proves that cuBLAS cannot be loaded so,
# and that the executable does not link it.
#   tests/cli_no_cuda.sh GEMMLAB PYTHON WORK_DIR
# PYTHON: a Python with numpy (for the C that `gemmlab evaluate` judges). Exit 77 (skip) where cuBLAS
# sits in a folder the loader always searches, so that it cannot be hidden.
set -uo pipefail
[ $# -eq 3 ] || { echo "usage: $0 GEMMLAB PYTHON WORK_DIR" >&2; exit 2; }
gemmlab=$(readlink -f "$1"); work=$3
# The Python by its absolute path, its symlinks kept (a venv's python finds its venv by its own path).
case $2 in */*) py=$(cd "$(dirname "$2")" && pwd)/$(basename "$2") ;; *) py=$(command -v "$2") ;; esac
root=$(cd "$(dirname "$0")/.." && pwd)
fail() { echo "FAIL: $*"; exit 1; }
ok() { echo "ok: $*"; }
ldso=$(readelf -l "$gemmlab" | sed -n 's/.*Requesting program interpreter: \(.*\)\]/\1/p')
[ -x "$ldso" ] || fail "no dynamic loader found for $gemmlab"

rm -rf "$work"; mkdir -p "$work/empty"; cd "$work"
unset LD_LIBRARY_PATH CUDA_HOME CUDA_PATH
export GEMMLAB_CUDA_LIB_DIR=$work/empty
hidden() { "$ldso" --inhibit-cache "$@"; }

# cuBLAS is hidden: the loader without its cache finds no libcublas, and gemmlab does not link it.
if hidden "$(command -v python3)" -c 'import ctypes; ctypes.CDLL("libcublas.so.13")' 2>/dev/null; then
  echo "SKIP: libcublas.so.13 is in a folder the dynamic loader always searches: it cannot be hidden here"; exit 77
fi
needed=$(readelf -d "$gemmlab" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
[[ $needed =~ lib(cublas|cublasLt|cuda|cudart)\.so ]] && fail "$gemmlab links $needed"
ok "cuBLAS hidden (no ldconfig cache, GEMMLAB_CUDA_LIB_DIR empty); gemmlab links only: $needed"

run() {  # run EXPECTED_RC DESCRIPTION COMMAND...: the command's output in out.txt
  local want=$1 what=$2; shift 2
  hidden "$gemmlab" "$@" >out.txt 2>&1; local rc=$?
  [ "$rc" = "$want" ] || fail "$what: exit $rc, expected $want: $(tail -5 out.txt)"
}

version=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$root/pyproject.toml")
run 0 "gemmlab --version" --version
grep -q "^gemmlab $version " out.txt || fail "gemmlab --version printed $(cat out.txt), not version $version"
ok "gemmlab --version: $(cat out.txt)"
run 0 "gemmlab list" list
grep -q "^  sgemm_01_naive " out.txt || fail "gemmlab list does not list sgemm_01_naive"
ok "gemmlab list"
run 0 "gemmlab run --dry-run" run --suite smoke --dry-run -o new/plan.csv
[ -s new/plan.csv ] || fail "gemmlab run --dry-run -o new/plan.csv did not make new/plan.csv"
ok "gemmlab run --suite smoke --dry-run -o new/plan.csv (new/ made)"
run 0 "gemmlab inputs" inputs -d normal_0_1 -s 64x64x128 --seed 1 --format fp16 -o in/
"$py" -c "import numpy as n; n.save('C.npy', n.load('in/A.npy').astype('f4') @ n.load('in/B.npy').astype('f4'))" \
  || fail "numpy could not make C.npy"
run 0 "gemmlab evaluate" evaluate in/ --output C.npy --name numpy_fp32 --accumulation fma -o judged/numpy_fp32.csv
grep -q "numpy_fp32" judged/numpy_fp32.csv || fail "gemmlab evaluate wrote no row"
ok "gemmlab inputs, gemmlab evaluate (-o judged/ made)"
run 0 "gemmlab tc-eval" tc-eval -i mma_m16n8k16_f16_f32 --a "1 0x0e00 0 0 0 0 0 0 0 0 0 0 0 0 0 0" \
  --b "1 0x0c00 0 0 0 0 0 0 0 0 0 0 0 0 0 0"
ok "gemmlab tc-eval"
run 0 "gemmlab order --declared" order -k sgemm_01_naive -s 64x64x32 --declared -o trees/order.csv
[ -s trees/order.csv ] || fail "gemmlab order --declared wrote no tree"
ok "gemmlab order --declared"
run 0 "gemmlab plugin-header" plugin-header
[ -f "$(cat out.txt)" ] || fail "gemmlab plugin-header printed $(cat out.txt), not a file"
ok "gemmlab plugin-header"

# A command that launches kernels: exit 2, naming what is missing, nothing written.
run 2 "gemmlab run without --dry-run" run -k sgemm_01_naive -s 64 -o gpu/run.csv
grep -q "cuBLAS 13 not found in GEMMLAB_CUDA_LIB_DIR=.*install it (pip install \"nvidia-cublas" out.txt \
  || fail "gemmlab run does not name the missing cuBLAS: $(cat out.txt)"
if ! "$(command -v python3)" -c 'import ctypes; ctypes.CDLL("libcuda.so.1")' 2>/dev/null; then
  grep -q "no NVIDIA driver (libcuda.so.1" out.txt || fail "gemmlab run does not name the missing driver: $(cat out.txt)"
  ok "gemmlab run: exit 2, 'no NVIDIA driver' and 'cuBLAS 13 not found'"
else
  ok "gemmlab run: exit 2, 'cuBLAS 13 not found' (this machine has a driver)"
fi
[ ! -e gpu ] || fail "gemmlab run that could not start left gpu/"
echo "cli_no_cuda: all checks passed"
