#!/usr/bin/env bash
# The wheel as a user gets it (scripts/test.sh builds it with scripts/build_wheel.sh), installed into
# a fresh venv and run from a folder outside the repository, with no PYTHONPATH:
#  * the gemmlab command (console script): `gemmlab list` (its kernels and the suites it carries),
#    `gemmlab tc-eval` (no GPU needed), `python -m gemmlab`, and on a machine without a GPU a run
#    that says it needs one (exit 2); with GEMMLAB_CUDA_LIB_DIR naming a folder without cuBLAS, the
#    command says what to install;
#  * the Python CPU API: an exact product of dyadic inputs (exact engine and MPFR), and gemmlab._gpu
#    loads (cuBLAS found on this machine);
#  * ldd: every library the package's binaries need resolves inside the venv (gemmlab.libs: MPFR,
#    GMP, libcrypto) or is a manylinux system library or cuBLAS (the machine's); no toml++ or CLI11;
#  * the licenses of the bundled libraries are in the wheel.
# usage: tests/wheel_check.sh WHEEL VENV_DIR PYTHON   (VENV_DIR is made anew)
# Prints one line per check; exits 1 at the first failure.
set -euo pipefail
[ $# -eq 3 ] || { echo "usage: $0 WHEEL VENV_DIR PYTHON" >&2; exit 2; }
wheel=$(readlink -f "$1"); venv=$2; py=$3
root=$(cd "$(dirname "$0")/.." && pwd)
[ -f "$wheel" ] || { echo "FAIL: no wheel at $1 (scripts/build_wheel.sh makes it)"; exit 1; }
fail() { echo "FAIL: $*"; exit 1; }
ok() { echo "ok: $*"; }

rm -rf "$venv"
"$py" -m venv "$venv"
venv=$(cd "$venv" && pwd)
# numpy and pandas at the versions the tests use; the wheel with --no-deps, then pip check.
"$venv/bin/python" -m pip install -q --disable-pip-version-check \
  $(grep -E '^(numpy|pandas)==' "$root/scripts/requirements.txt")
"$venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps "$wheel"
"$venv/bin/python" -m pip check >/dev/null || fail "pip check: $("$venv/bin/python" -m pip check)"
ok "installed $(basename "$wheel") into a fresh venv"

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
set +e; GEMMLAB_CUDA_LIB_DIR=$work/none "$gl" list >/dev/null 2>nolib.err; rc=$?; set -e
[ "$rc" = 2 ] && grep -q "needs cuBLAS.*nvidia-cublas" nolib.err || fail "gemmlab without cuBLAS: exit $rc, $(cat nolib.err)"
ok "gemmlab without cuBLAS: exit 2, names what to install"

# --- the Python API --------------------------------------------------------------------------
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
for f in THIRD_PARTY.md libmpfr6/copyright libmpfr6/LGPL-3 libgmp10/copyright nanobind.LICENSE CUDA-runtime.EULA.txt; do
  [ -s "$lic/$f" ] || fail "the wheel has no $f in $(basename "$(dirname "$lic")")/licenses"
done
ok "licenses: $(find "$lic" -type f | wc -l) files, MPFR's and GMP's among them"
echo "wheel_check: all checks passed"
