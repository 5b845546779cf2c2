#!/usr/bin/env bash
# The test command: installs what is missing, builds every kernel and the Python package, runs all
# tests (ctest: GoogleTest, CLI, plots and pytest). CPU tests always run; GPU tests skip themselves
# (with the reason) when there is no GPU.
# Without a GPU, kernels are compiled for one architecture (sm_90a) to keep the build short;
# set GEMMLAB_CUDA_ARCHS to choose others (e.g. "80;89;90a").
set -euo pipefail
cd "$(dirname "$0")/.."
GEMMLAB_SETUP_SKIP_PACKAGE=1 scripts/setup.sh
export PATH=/usr/local/cuda/bin:$PATH
archs=${GEMMLAB_CUDA_ARCHS:-}
if [ -z "$archs" ]; then
  if nvidia-smi -L >/dev/null 2>&1; then archs=native-gemmlab; else archs=90a; fi
fi
# The Python package from this tree (pytest imports the installed package, never the sources). Where
# a CUDA toolkit is installed it is built with its GPU engine (gemmlab._gpu), for the same
# architectures as the CLI, and a test checks that it was.
if command -v nvcc >/dev/null 2>&1; then
  export GEMMLAB_EXPECT_GPU_ENGINE=1
  [ "$archs" != native-gemmlab ] && export SKBUILD_CMAKE_ARGS="-DCMAKE_CUDA_ARCHITECTURES=$archs"
fi
.venv/bin/python -m pip install -q --disable-pip-version-check .
build=${GEMMLAB_BUILD_DIR:-build}
args=(-S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release)
[ "$archs" != native-gemmlab ] && args+=("-DCMAKE_CUDA_ARCHITECTURES=$archs")
cmake "${args[@]}" >/dev/null
jobs=$(nproc)
cmake --build "$build" -j "$jobs"
cd "$build"
ctest --output-on-failure -j "$jobs" --timeout 900
