#!/usr/bin/env bash
# scripts/lab/probes/corun.sh OUT_DIR: corun.cu's cases (the holding blocks' shape, the connections).
set -uo pipefail
out=$(mkdir -p "$1" && cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
nvcc -O2 -arch=native -o "$out/corun" "$here/corun.cu" || exit 1
env | grep -E '^CUDA_|^NVIDIA_' | sort
for args in "1024 -1" "32 -1" "1024 65536" "1024 1024"; do "$out/corun" $args; done
for c in 1 8 32; do CUDA_DEVICE_MAX_CONNECTIONS=$c "$out/corun" 1024 -1; done
