#!/usr/bin/env bash
# How long the GPU stays held after the process of a spinning kernel ends (issue 44), on a GPU machine:
#   scripts/lab/probes/kill_spin.sh OUT_DIR
# For each way a process can end (SIGKILL while it waits, its own _exit), a timeline every 0.5 s of the
# process's state (/proc), nvidia-smi's compute processes, and a new process's first kernel (kill_spin probe,
# 5 s at most each), until the new process's kernel runs or 120 s pass.
set -uo pipefail
out=$(mkdir -p "$1" && cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
nvcc -O2 -arch=native -o "$out/kill_spin" "$here/kill_spin.cu" || exit 1
for mode in wait exit; do
  echo "== mode $mode"
  "$out/kill_spin" $mode & pid=$!
  sleep 3
  [ $mode = wait ] && kill -9 $pid && echo "SIGKILL sent"
  t0=$(date +%s.%N)
  for i in $(seq 1 100); do
    t=$(python3 -c "print(round($(date +%s.%N) - $t0, 1))")
    st=$(awk '{print $3}' /proc/$pid/stat 2>/dev/null || echo gone)
    apps=$(nvidia-smi --query-compute-apps=pid --format=csv,noheader 2>/dev/null | tr '\n' ' ')
    util=$(nvidia-smi --query-gpu=utilization.gpu --format=csv,noheader 2>/dev/null)
    pr=$(timeout 5 "$out/kill_spin" probe 2>&1 || echo "probe failed or timed out")
    echo "t=$t s  process: $st  compute apps: [$apps]  util: $util  new process: $pr"
    case $pr in ok*) [ "$st" = gone ] || [ "$st" = Z ] && break ;; esac
    sleep 0.5
  done
  wait $pid 2>/dev/null; echo "exit status $?"
done
