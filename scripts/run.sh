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
# The default suite unless the arguments name another one (scripts/run.sh --suite smoke).
suite=default
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  [ "${args[i]}" = --suite ] && [ $((i + 1)) -lt ${#args[@]} ] && suite=${args[i + 1]}
done
stamp=$(date -u +%Y%m%dT%H%M%SZ)
csv=results/$(basename "$suite" .toml)-$stamp.csv
if [ "$suite" = default ]; then
  "$build"/gemmlab run --suite default --out "$csv" "$@"
else
  "$build"/gemmlab run --out "$csv" "$@"
fi
scripts/plots.sh "$csv"
