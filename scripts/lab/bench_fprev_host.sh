#!/usr/bin/env bash
# explain's own host time per FPRev launch, two commits side by side on this CPU (one thread, taskset -c 0),
# each run twice, alternately:
#   scripts/lab/bench_fprev_host.sh OLD_COMMIT [NEW_COMMIT]     (NEW_COMMIT: the working tree)
# Needs build/libgemmlab_reference.a (cmake --build build --target gemmlab_reference) and g++; only
# reference/explain/tree.cpp (Fprev::counts) is taken from each commit, the rest from build/. Prints one line
# per run and format (scripts/lab/bench_fprev_host.cpp says what is timed).
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 OLD_COMMIT [NEW_COMMIT]" >&2; exit 2; }
root=$(cd "$(dirname "$0")/../.." && pwd)
lib=$root/build/libgemmlab_reference.a
[ -f "$lib" ] || { echo "bench_fprev_host: $lib is missing: cmake --build build --target gemmlab_reference" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
flags=(-O3 -march=x86-64-v2 -ffp-contract=off -std=c++20 -I"$root" -I"$root/build")
for side in old new; do
  if [ "$side" = old ]; then git -C "$root" show "$1:reference/explain/tree.cpp" > "$tmp/tree_$side.cpp"
  elif [ $# -ge 2 ]; then git -C "$root" show "$2:reference/explain/tree.cpp" > "$tmp/tree_$side.cpp"
  else cp "$root/reference/explain/tree.cpp" "$tmp/tree_$side.cpp"; fi
  g++ "${flags[@]}" -c "$tmp/tree_$side.cpp" -o "$tmp/tree_$side.o"
  g++ "${flags[@]}" "$root/scripts/lab/bench_fprev_host.cpp" "$tmp/tree_$side.o" "$lib" -lmpfr -lgmp -fopenmp \
    -o "$tmp/bench_$side"
done
for round in 1 2; do
  for side in old new; do taskset -c 0 "$tmp/bench_$side" | sed "s/^/$side /"; done
done
