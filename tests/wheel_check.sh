#!/usr/bin/env bash
# The wheel as a user gets it (scripts/test.sh builds it with scripts/build_wheel.sh), installed into
# fresh venvs and run from a folder outside the repository, with no PYTHONPATH:
#  * dependencies: into a venv where the newest numpy and pandas (scripts/requirements.txt: numpy 2,
#    pandas 3) are already installed, and into one with the lower bounds of pyproject.toml, `pip install
#    WHEEL` (no --no-deps) succeeds and changes neither; the Python CPU API runs in both;
#  * the gemmlab command (console script): `gemmlab --version` (pyproject.toml's, = gemmlab.__version__),
#    `gemmlab list` (its kernels and the suites it carries), `python -m gemmlab`; with cuBLAS hidden
#    (GEMMLAB_CUDA_LIB_DIR naming an empty folder: gemmlab looks nowhere else) `list`, `run --dry-run -o
#    new/plan.csv` (new/ made), `inputs`, `evaluate`, `tc-eval`, `order --declared` and `plugin-header`
#    run, and `run` exits 2 naming cuBLAS (and, on a machine without one, the driver); the command does
#    not link cuBLAS;
#  * figures: `gemmlab plot` without matplotlib says to install gemmlab[plots]; with it, every figure of
#    a run CSV (tests/data/sample_suite.csv: six); the plugin header carried and printed;
#  * the Python CPU API: an exact product of dyadic inputs (exact engine and MPFR), and gemmlab._gpu
#    loads (cuBLAS found on this machine);
#  * ldd: every library the package's binaries need resolves inside the venv (gemmlab.libs: MPFR,
#    GMP, libcrypto) or is a manylinux system library or cuBLAS (the machine's); no toml++ or CLI11;
#  * the licenses: gemmlab's (MIT) and the bundled libraries' are in the wheel.
# usage: tests/wheel_check.sh WHEEL VENV_DIR PYTHON   (VENV_DIR, and VENV_DIR-oldest, are made anew)
# Needs PyPI (or pip's cache) for numpy, pandas and matplotlib. Prints one line per check; exits 1 at the
# first failure.
set -euo pipefail
[ $# -eq 3 ] || { echo "usage: $0 WHEEL VENV_DIR PYTHON" >&2; exit 2; }
wheel=$(readlink -f "$1"); venv=$2; py=$3
root=$(cd "$(dirname "$0")/.." && pwd)
[ -f "$wheel" ] || { echo "FAIL: no wheel at $1 (scripts/build_wheel.sh makes it)"; exit 1; }
fail() { echo "FAIL: $*"; exit 1; }
ok() { echo "ok: $*"; }

rm -rf "$venv" "$venv-oldest"
versions() { "$1/bin/python" -c 'import numpy, pandas; print(f"numpy {numpy.__version__}, pandas {pandas.__version__}")'; }
# install_into VENV PACKAGE_SPEC...: a fresh venv with those packages, then the wheel with its dependencies
# (no --no-deps): pip must keep them as they are.
install_into() {
  local v=$1; shift
  "$py" -m venv "$v"
  "$v/bin/python" -m pip install -q --disable-pip-version-check "$@" || fail "pip install $* into a fresh venv"
  local before; before=$(versions "$v")
  "$v/bin/python" -m pip install -q --disable-pip-version-check "$wheel" >"$v.pip.log" 2>&1 \
    || fail "pip install $(basename "$wheel") where $before are installed: $(tail -5 "$v.pip.log")"
  local after; after=$(versions "$v")
  [ "$before" = "$after" ] || fail "pip install $(basename "$wheel") changed $before to $after"
  "$v/bin/python" -m pip check >/dev/null || fail "pip check: $("$v/bin/python" -m pip check)"
  ok "installed $(basename "$wheel") into a fresh venv with $before (pip install without --no-deps): unchanged"
}
# The newest: scripts/requirements.txt's numpy 2 and pandas 3.
install_into "$venv" $(grep -E '^(numpy|pandas)==' "$root/scripts/requirements.txt")
# The oldest pyproject.toml allows: numpy>=1.26 -> numpy==1.26.*, pandas>=2.1 -> pandas==2.1.*.
oldest=$(sed -n 's/^dependencies = \[\(.*\)\]$/\1/p' "$root/pyproject.toml" | tr -d '" ' | tr ',' '\n' \
         | sed -n 's/^\(numpy\|pandas\)>=\([0-9.]*\)$/\1==\2.*/p')
[ "$(wc -w <<<"$oldest")" = 2 ] || fail "pyproject.toml's dependencies give no lower bounds of numpy and pandas: '$oldest'"
install_into "$venv-oldest" $oldest
venv=$(cd "$venv" && pwd)

work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
cd "$work"
unset PYTHONPATH
pkg=$("$venv/bin/python" -c 'import gemmlab, os; print(os.path.dirname(gemmlab.__file__))')
case $pkg in "$venv"/*) ok "gemmlab imports from the venv ($pkg)" ;; *) fail "gemmlab imported from $pkg, not the venv" ;; esac

# --- the command -----------------------------------------------------------------------------
gl=$venv/bin/gemmlab
[ -x "$gl" ] || fail "the console script $gl is missing"
"$gl" list >list.txt 2>list.err || fail "gemmlab list exited $?: $(cat list.err)"
for k in cublas_gemmex_fp16_f32 sgemm_01_naive; do
  grep -q "^  *$k " list.txt || fail "gemmlab list does not list $k"
done
sed -n '/^suites:/,$p' list.txt >suites.txt
grep -q "^  smoke$" suites.txt || fail "gemmlab list shows no suite 'smoke' (gemmlab/_bin/suites)"
ok "gemmlab list: $(grep -c '^  [a-z]' list.txt) lines, the suites installed with it"
zeros=$(printf '0 %.0s' $(seq 32))
out=$("$gl" tc-eval -i wgmma_m64n8k32_e4m3_f32 --c 0x3f800008 --a "$zeros" --b "$zeros" 2>&1) \
  || fail "gemmlab tc-eval exited $?: $out"
grep -Eq "0x3f800000 1([^.0-9]|$)" <<<"$out" || fail "gemmlab tc-eval printed: $out"
ok "gemmlab tc-eval (tensor-core model on the CPU)"
"$venv/bin/python" -m gemmlab --help >help.txt 2>&1 || fail "python -m gemmlab --help exited $?: $(cat help.txt)"
grep -q "tc-eval" help.txt || fail "python -m gemmlab --help does not name tc-eval"
ok "python -m gemmlab"
if ! nvidia-smi -L >/dev/null 2>&1; then
  set +e; "$gl" run -k sgemm_01_naive -s 64 -o "$work/r.csv" 2>run.err; rc=$?; set -e
  [ "$rc" = 2 ] && grep -q "needs a CUDA GPU" run.err || fail "gemmlab run without a GPU: exit $rc, $(cat run.err)"
  [ ! -e "$work/r.csv" ] || fail "gemmlab run without a GPU left r.csv"
  ok "gemmlab run without a GPU: exit 2, 'needs a CUDA GPU'"
fi
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$root/pyproject.toml")
pyversion=$("$venv/bin/python" -c 'import gemmlab; print(gemmlab.__version__)')
"$gl" --version >version.txt || fail "gemmlab --version exited $?"
grep -q "^gemmlab $version " version.txt && [ "$pyversion" = "$version" ] \
  || fail "versions differ: pyproject.toml $version, gemmlab --version '$(cat version.txt)', gemmlab.__version__ $pyversion"
ok "one version: gemmlab --version, gemmlab.__version__ and pyproject.toml say $version"

# Without cuBLAS: GEMMLAB_CUDA_LIB_DIR names an empty folder (neither the entry nor the command looks
# elsewhere), and the command does not link it.
needed=$(objdump -p "$pkg/_bin/gemmlab" | sed -n 's/^ *NEEDED *//p' | tr '\n' ' ')
[[ $needed =~ lib(cublas|cublasLt|cuda|cudart)\.so ]] && fail "gemmlab/_bin/gemmlab links $needed"
mkdir nolib
nolib() { GEMMLAB_CUDA_LIB_DIR=$work/nolib "$gl" "$@"; }
for cmd in "list" "run --suite smoke --dry-run -o new/plan.csv" "inputs -d normal_0_1 -s 64x64x128 --seed 1 --format fp16 -o in/" \
           "order -k sgemm_01_naive -s 64x64x32 --declared -o trees/o.csv" "plugin-header"; do
  # shellcheck disable=SC2086
  nolib $cmd >cmd.out 2>&1 || fail "gemmlab $cmd without cuBLAS exited $?: $(tail -3 cmd.out)"
done
nolib tc-eval -i wgmma_m64n8k32_e4m3_f32 --c 0x3f800008 --a "$zeros" --b "$zeros" >cmd.out 2>&1 \
  || fail "gemmlab tc-eval without cuBLAS exited $?: $(tail -3 cmd.out)"
[ -s new/plan.csv ] || fail "gemmlab run --dry-run -o new/plan.csv made no new/plan.csv"
"$venv/bin/python" -c "import numpy as n; n.save('C.npy', n.load('in/A.npy').astype('f4') @ n.load('in/B.npy').astype('f4'))"
nolib evaluate in/ --output C.npy --name numpy_fp32 --accumulation fma -o judged/c.csv >cmd.out 2>&1 \
  || fail "gemmlab evaluate without cuBLAS exited $?: $(tail -3 cmd.out)"
set +e; nolib run -k sgemm_01_naive -s 64 -o gpu/r.csv >cmd.out 2>&1; rc=$?; set -e
[ "$rc" = 2 ] && grep -q 'cuBLAS 13 not found in GEMMLAB_CUDA_LIB_DIR=.*pip install "nvidia-cublas' cmd.out \
  || fail "gemmlab run without cuBLAS: exit $rc, $(cat cmd.out)"
if ! nvidia-smi -L >/dev/null 2>&1; then
  grep -q "no NVIDIA driver" cmd.out || fail "gemmlab run without a driver does not name it: $(cat cmd.out)"
fi
[ ! -e gpu ] || fail "gemmlab run that could not start left gpu/"
GEMMLAB_CUDA_LIB_DIR=$work/nolib "$venv/bin/python" -c '
import numpy as np, gemmlab
r = gemmlab.exact_gemm(np.ones((2, 3)), np.ones((3, 2)), "fp32")
ok, why = gemmlab.gpu_available()
assert r.c[0, 0] == 3 and not ok and "cuBLAS" in why, (r.c, ok, why)' >cmd.out 2>&1 \
  || fail "the Python CPU API without cuBLAS: $(tail -5 cmd.out)"
ok "without cuBLAS: list, run --dry-run (new/ made), inputs, evaluate, tc-eval, order --declared, plugin-header and the Python CPU API run; run exits 2 naming what is missing"

# --- figures and the plugin header ---------------------------------------------------------------
set +e; "$gl" plot "$root/tests/data/sample_suite.csv" -o figs >plot.out 2>&1; rc=$?; set -e
[ "$rc" = 2 ] && grep -q 'pip install "gemmlab\[plots\]"' plot.out || fail "gemmlab plot without matplotlib: exit $rc, $(cat plot.out)"
"$venv/bin/python" -m pip install -q --disable-pip-version-check $(grep -E '^matplotlib==' "$root/scripts/requirements.txt") \
  || fail "pip install matplotlib"
"$gl" plot "$root/tests/data/sample_suite.csv" -o figs >plot.out 2>&1 || fail "gemmlab plot exited $?: $(cat plot.out)"
for f in bias_spread heatmap pareto series_hopper series_mma series_simt; do
  png=figs/sample_suite-$f.png
  [ "$(head -c 8 "$png" 2>/dev/null | od -An -tx1 | tr -d ' ')" = 89504e470d0a1a0a ] && [ "$(stat -c %s "$png")" -gt 5000 ] \
    || fail "gemmlab plot drew no $png: $(cat plot.out)"
done
[ "$(ls figs | wc -l)" = 6 ] || fail "gemmlab plot drew $(ls figs | tr '\n' ' '), not the six figures of sample_suite.csv"
ok "gemmlab plot: six figures of sample_suite.csv; without matplotlib it says to install gemmlab[plots]"
header=$("$gl" plugin-header)
[ "$header" = "$("$venv/bin/python" -c 'import gemmlab; print(gemmlab.plugin_header())')" ] \
  && case $header in "$venv"/*) true ;; *) false ;; esac && cmp -s "$header" "$root/kernels/plugin/gemmlab_plugin.h" \
  || fail "gemmlab plugin-header printed $header: not the package's copy of kernels/plugin/gemmlab_plugin.h"
ok "gemmlab plugin-header: $header"

# --- the Python API --------------------------------------------------------------------------
for v in "$venv-oldest" "$venv"; do "$v/bin/python" - "$root/tests/data/sample_run.csv" <<'EOF' || fail "the Python CPU API ($(versions "$v"))"
import sys
import numpy as np
import pandas as pd
import gemmlab
# The pandas side: a run CSV typed, and a row of gemmlab.evaluate as a frame with the same columns.
df = gemmlab.load_results(sys.argv[1])
assert len(df) == 36 and isinstance(df["kernel"].dtype, pd.StringDtype) and str(df["K"].dtype) == "Int64", df.dtypes
rng = np.random.default_rng(1)
a, b = (rng.random(s).astype(np.float32).astype(np.float64) for s in ((8, 16), (16, 8)))
row = gemmlab.evaluate(a, b, a.astype(np.float32) @ b.astype(np.float32), output_format="fp32")
frame = gemmlab.to_frame([row])
assert list(frame.columns) == list(gemmlab.COLUMNS), frame.columns
print(f"ok: load_results and evaluate with numpy {np.__version__}, pandas {pd.__version__}: {frame['status'].iloc[0]}")
EOF
done
"$venv/bin/python" - <<'EOF' || fail "the Python CPU API"
import numpy as np
import gemmlab
from gemmlab import _engine as gpu
# 2^40 - 2^40 + 1 + 2^-24: exactly 1 + 2^-24, a tie in fp32 between 1 and 1 + 2^-23 -> 1 (even).
A = np.array([[2.0**20, -2.0**20, 1.0, 2.0**-12]])
B = np.array([[2.0**20], [2.0**20], [1.0], [2.0**-12]])
for r in (gemmlab.exact_gemm(A, B, "fp32"), gemmlab.mpfr_gemm(A, B, "fp32")):
    assert r.c[0, 0] == 1 + 2.0**-24 and r.c_out[0, 0] == 1.0, (r.engine, r.c, r.c_out)
assert gpu._gpu is not None, f"gemmlab._gpu did not load: {gpu._GPU_MISSING_CUDA or gpu._GPU_IMPORT_ERROR}"
print("ok: the Python CPU API (exact and MPFR products of dyadic inputs); gemmlab._gpu loads;",
      "gpu_available:", gemmlab.gpu_available()[0])
EOF

# --- what the binaries need at run time --------------------------------------------------------
site=$(dirname "$pkg")
libs=$(ls -d "$site"/gemmlab.libs 2>/dev/null) || fail "no gemmlab.libs: auditwheel bundled nothing"
for l in libmpfr libgmp; do
  ls "$libs"/$l-*.so* >/dev/null 2>&1 || fail "$l is not bundled in gemmlab.libs"
done
# glibc's, libstdc++ and libgcc_s (manylinux's system libraries), and cuBLAS (the machine's CUDA).
allowed='^(linux-vdso\.so\.1|/lib64/ld-linux-x86-64\.so\.2|ld-linux-x86-64\.so\.2|libc\.so\.6|libm\.so\.6|libdl\.so\.2|libpthread\.so\.0|librt\.so\.1|libstdc\+\+\.so\.6|libgcc_s\.so\.1|libcublas\.so\.[0-9]+|libcublasLt\.so\.[0-9]+)$'
n=0
while IFS= read -r f; do
  [ "$(head -c 4 "$f" | od -An -c | tr -d ' ')" = 177ELF ] || continue
  n=$((n + 1))
  objdump -p "$f" | grep -Eiq 'NEEDED +lib(tomlplusplus|cli11)' && fail "$f needs a toml++ or CLI11 library"
  while read -r name arrow path _; do
    [ "$arrow" = "=>" ] || { name=${name%% *}; path=$name; }
    [ "$path" = "not" ] && fail "$f: $name not found (ldd)"
    case $path in "$venv"/*) continue ;; esac
    [[ $name =~ $allowed ]] || fail "$f needs $name from $path, outside the wheel"
  done < <(ldd "$f" | sed 's/ (0x[0-9a-f]*)$//; s/^\t//')
done < <(find "$pkg" "$libs" -type f \( -name '*.so*' -o -path '*/_bin/gemmlab' \))
[ "$n" -ge 5 ] || fail "only $n ELF files checked (expected _core, _gpu, the command and the bundled libraries)"
ok "ldd on $n binaries: MPFR, GMP and libcrypto from the wheel; only glibc, libstdc++, libgcc_s and cuBLAS from the system"

lic=$(ls -d "$site"/gemmlab-*.dist-info/licenses) || fail "no licenses folder in the wheel's dist-info"
grep -q "MIT License" "$lic/LICENSE" || fail "the wheel has no gemmlab LICENSE (MIT) in its dist-info/licenses"
for f in THIRD_PARTY.md libmpfr6/copyright libmpfr6/LGPL-3 libgmp10/copyright nanobind.LICENSE CUDA-runtime.EULA.txt; do
  [ -s "$lic/$f" ] || fail "the wheel has no $f in $(basename "$(dirname "$lic")")/licenses"
done
ok "licenses: $(find "$lic" -type f | wc -l) files, MPFR's and GMP's among them"
echo "wheel_check: all checks passed"
