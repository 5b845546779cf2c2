#!/usr/bin/env bash
# The main job: installs what is missing, builds gemmlab for this machine's GPU, runs the default
# suite (every registered kernel x every distribution at 4096^3) to a CSV under results/, and
# renders its figures beside it. Extra arguments go to `gemmlab run` (e.g. --suite smoke).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export PATH=/usr/local/cuda/bin:$PATH
build=${GEMMLAB_BUILD_DIR:-build-run}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j "$(nproc)" --target gemmlab
stamp=$(date -u +%Y%m%dT%H%M%SZ)
csv=results/default-$stamp.csv
"$build"/gemmlab run --suite default --out "$csv" "$@"
scripts/plots.sh "$csv"
