#!/usr/bin/env bash
# The tensor-core model's speed in explain's composition, two commits side by side on this CPU (one thread,
# taskset -c 0), each run twice, alternately:
#   scripts/lab/bench_emulation.sh OLD_COMMIT [NEW_COMMIT]     (NEW_COMMIT: the working tree)
# Only reference/tc_model.cpp is taken from each commit (scripts/lab/bench_commits.sh). Prints one line per
# run: fp16 and e4m3 wgmma models and Triton's bf16x6 split (six bf16 passes of a wgmma model on fp32
# operands, 16,384 outputs), seconds and the outputs' sum (equal sums: the same bits).
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 OLD_COMMIT [NEW_COMMIT]" >&2; exit 2; }
exec "$(dirname "$0")/bench_commits.sh" reference/tc_model.cpp scripts/lab/bench_emulation.cpp "$1" "${2:--}" fp16 fp8 bf16x6
