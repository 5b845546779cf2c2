#!/usr/bin/env bash
# The tensor-core model's speed in explain's composition, two commits side by side on this CPU (one thread,
# taskset -c 0), each run twice, alternately:
#   scripts/lab/bench_emulation.sh OLD_COMMIT [NEW_COMMIT]     (NEW_COMMIT: the working tree)
# Needs build/libgemmlab_reference.a (cmake --build build --target gemmlab_reference) and g++; only
# reference/tc_model.cpp is taken from each commit, the rest of the model from build/. Prints one line per
# run: fp16 and e4m3 wgmma models and Triton's bf16x6 split (six bf16 passes of a wgmma model on fp32
# operands, 16,384 outputs), seconds and the outputs' sum (equal sums: the same bits).
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 OLD_COMMIT [NEW_COMMIT]" >&2; exit 2; }
root=$(cd "$(dirname "$0")/../.." && pwd)
lib=$root/build/libgemmlab_reference.a
[ -f "$lib" ] || { echo "bench_emulation: $lib is missing: cmake --build build --target gemmlab_reference" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
flags=(-O3 -march=x86-64-v2 -ffp-contract=off -std=c++20 -I"$root" -I"$root/build")
for side in old new; do
  if [ "$side" = old ]; then git -C "$root" show "$1:reference/tc_model.cpp" > "$tmp/tc_$side.cpp"
  elif [ $# -ge 2 ]; then git -C "$root" show "$2:reference/tc_model.cpp" > "$tmp/tc_$side.cpp"
  else cp "$root/reference/tc_model.cpp" "$tmp/tc_$side.cpp"; fi
  g++ "${flags[@]}" -c "$tmp/tc_$side.cpp" -o "$tmp/tc_$side.o"
  g++ "${flags[@]}" "$root/scripts/lab/bench_emulation.cpp" "$tmp/tc_$side.o" "$lib" -lmpfr -lgmp -fopenmp -o "$tmp/bench_$side"
done
for round in 1 2; do
  for side in old new; do
    for ins in fp16 fp8 bf16x6; do echo "$side $(taskset -c 0 "$tmp/bench_$side" $ins)"; done
  done
done
