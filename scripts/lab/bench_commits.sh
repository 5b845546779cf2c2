#!/usr/bin/env bash
# One source file of the reference library at two commits, side by side on this CPU: a benchmark program built
# against each commit's version of the file (the rest of the library from build/), each run twice with every
# argument, alternately, on one thread (taskset -c 0):
#   scripts/lab/bench_commits.sh SOURCE BENCH_CPP OLD_COMMIT NEW_COMMIT|- [ARG...]
# SOURCE: the file's path in the repository (reference/tc_model.cpp); NEW_COMMIT "-": the working tree. Each
# line is the run's output prefixed with old or new. Needs build/libgemmlab_reference.a (cmake --build build
# --target gemmlab_reference) and g++. bench_emulation.sh and bench_fprev_host.sh call it.
set -euo pipefail
[ $# -ge 4 ] || { echo "usage: $0 SOURCE BENCH_CPP OLD_COMMIT NEW_COMMIT|- [ARG...]" >&2; exit 2; }
source_file=$1 bench=$2 old=$3 new=$4
shift 4
root=$(cd "$(dirname "$0")/../.." && pwd)
lib=$root/build/libgemmlab_reference.a
[ -f "$lib" ] || { echo "bench_commits: $lib is missing: cmake --build build --target gemmlab_reference" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
flags=(-O3 -march=x86-64-v2 -ffp-contract=off -std=c++20 -I"$root" -I"$root/build")
for side in old new; do
  commit=$old
  [ "$side" = new ] && commit=$new
  if [ "$commit" = - ]; then cp "$root/$source_file" "$tmp/src_$side.cpp"
  else git -C "$root" show "$commit:$source_file" > "$tmp/src_$side.cpp"; fi
  g++ "${flags[@]}" -c "$tmp/src_$side.cpp" -o "$tmp/src_$side.o"
  g++ "${flags[@]}" "$root/$bench" "$tmp/src_$side.o" "$lib" -lmpfr -lgmp -fopenmp -o "$tmp/bench_$side"
done
[ $# -gt 0 ] || set -- ""
for round in 1 2; do
  for side in old new; do
    for arg in "$@"; do taskset -c 0 "$tmp/bench_$side" $arg | sed "s/^/$side /"; done
  done
done
