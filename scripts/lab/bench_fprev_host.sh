#!/usr/bin/env bash
# explain's own host time in its tree and scheduling stages (FPRev's launches), two commits side by side on this CPU (one thread, taskset -c 0),
# each run twice, alternately:
#   scripts/lab/bench_fprev_host.sh OLD_COMMIT [NEW_COMMIT]     (NEW_COMMIT: the working tree)
# Only reference/explain/tree.cpp (Fprev::counts) is taken from each commit (scripts/lab/bench_commits.sh).
# Prints one line per run and format (scripts/lab/bench_fprev_host.cpp says what is timed).
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 OLD_COMMIT [NEW_COMMIT]" >&2; exit 2; }
exec "$(dirname "$0")/bench_commits.sh" reference/explain/tree.cpp scripts/lab/bench_fprev_host.cpp "$1" "${2:--}"
