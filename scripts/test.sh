#!/usr/bin/env bash
# The test command: installs what is missing, builds the gemmlab wheel and every kernel, runs all
# tests (ctest: GoogleTest, CLI, plots, pytest, and the wheel installed into a fresh venv). CPU tests
# always run; GPU tests skip themselves (with the reason) when there is no GPU.
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
# ccache, with the repository as its base folder: a kernel compiles to the same command in the
# wheel's build (build-wheel-<tag>/) and in the test build (build/), so it is compiled once.
launchers=()
if command -v ccache >/dev/null 2>&1; then
  export CCACHE_BASEDIR=$PWD
  launchers=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
fi
# The Python package is the wheel (scripts/build_wheel.sh, for .venv's Python, the same
# architectures as the CLI): installed into .venv, where pytest imports it (with its GPU engine,
# which a test checks), and into a fresh venv by the test wheel.installed (tests/wheel_check.sh).
export GEMMLAB_EXPECT_GPU_ENGINE=1
mkdir -p dist
wheel_archs=$archs
[ "$archs" = native-gemmlab ] && wheel_archs=auto
scripts/build_wheel.sh -p .venv/bin/python -a "$wheel_archs" -o dist | tee dist/build_wheel.log
wheel=$(tail -n 1 dist/build_wheel.log)
.venv/bin/python -m pip install -q --disable-pip-version-check --force-reinstall --no-deps "$wheel"
base_python=$(.venv/bin/python -c 'import sys; print(sys._base_executable)')
build=${GEMMLAB_BUILD_DIR:-build}
args=(-S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGEMMLAB_BUILD_TESTS=ON "${launchers[@]}"
      -DGEMMLAB_WHEEL="$PWD/$wheel" -DGEMMLAB_WHEEL_PYTHON="$base_python" -DGEMMLAB_WHEEL_ARCHS="$wheel_archs")
[ "$archs" != native-gemmlab ] && args+=("-DCMAKE_CUDA_ARCHITECTURES=$archs")
cmake "${args[@]}" >/dev/null
jobs=$(nproc)
cmake --build "$build" -j "$jobs"
cd "$build"
ctest --output-on-failure -j "$jobs" --timeout 900
