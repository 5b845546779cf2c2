#!/usr/bin/env bash
# Installs what gemmlab needs and is missing on a Debian/Ubuntu machine that has the CUDA toolkit:
# system packages through apt, and a Python virtual environment (.venv) with the plots' packages and
# the gemmlab Python package (python/: built with its GPU engine where the CUDA toolkit is found).
# Safe to run again: it installs only what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v nvcc >/dev/null 2>&1; then
  if [ -x /usr/local/cuda/bin/nvcc ]; then
    export PATH=/usr/local/cuda/bin:$PATH
  else
    echo "setup: the CUDA toolkit (nvcc) is not installed; install it from NVIDIA's repository first" >&2
    exit 1
  fi
fi

# ccache: scripts/test.sh compiles each kernel once for the wheel's build and the test build.
# unzip: scripts/build_wheel.sh looks into the wheel it built.
pkgs=(cmake ninja-build g++ pkg-config libmpfr-dev libgmp-dev libeigen3-dev libgtest-dev libcli11-dev
      nlohmann-json3-dev libtomlplusplus-dev libssl-dev python3-venv python3-dev ccache unzip)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Python: a venv with the pinned packages of scripts/requirements.txt (plots, the gemmlab package's
# numpy and pandas, pytest), installed again only when that file changed.
py=python3
[ -x /usr/bin/python3 ] && py=/usr/bin/python3
if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv"
  "$py" -m venv .venv
fi
stamp=.venv/.gemmlab-requirements
if ! cmp -s scripts/requirements.txt "$stamp"; then
  echo "setup: installing scripts/requirements.txt into .venv"
  .venv/bin/python -m pip install -q --disable-pip-version-check -r scripts/requirements.txt
  cp scripts/requirements.txt "$stamp"
fi
# The gemmlab Python package (`import gemmlab`), when missing; scripts/test.sh reinstalls it from the
# tree on every run (and sets GEMMLAB_SETUP_SKIP_PACKAGE=1 so it is not built twice).
# Where the CUDA toolkit is installed the package must have its GPU engine (gemmlab._gpu).
want=gemmlab
command -v nvcc >/dev/null 2>&1 && want=gemmlab._gpu
if [ "${GEMMLAB_SETUP_SKIP_PACKAGE:-0}" != 1 ] && ! .venv/bin/python -c "import $want" >/dev/null 2>&1; then
  echo "setup: installing the gemmlab Python package into .venv (pip install .)"
  .venv/bin/python -m pip install -q --disable-pip-version-check .
fi
