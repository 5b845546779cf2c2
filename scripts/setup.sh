#!/usr/bin/env bash
# Installs what gemmlab needs and is missing on a Debian/Ubuntu machine that has the CUDA toolkit:
# system packages through apt, and a Python virtual environment (.venv) for the plots.
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

pkgs=(cmake ninja-build g++ pkg-config libmpfr-dev libgmp-dev libeigen3-dev libgtest-dev libcli11-dev
      nlohmann-json3-dev libtomlplusplus-dev libssl-dev python3-venv)
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

# The plots' Python: a venv with pinned matplotlib and numpy (scripts/requirements.txt).
if ! .venv/bin/python -c "import matplotlib, numpy" >/dev/null 2>&1; then
  echo "setup: creating .venv for the plots"
  py=python3
  [ -x /usr/bin/python3 ] && py=/usr/bin/python3
  "$py" -m venv .venv
  .venv/bin/python -m pip install -q --disable-pip-version-check -r scripts/requirements.txt
fi
