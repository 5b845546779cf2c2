#!/usr/bin/env bash
# Issue 44 on a GPU: a kernel that hangs or crashes costs its row, never the run. One call:
#   scripts/lab/gpu_watchdog.sh BIN_DIR OUT_DIR
# BIN_DIR holds the prebuilt gemmlab, gemmlab_gpu_tests, gemmlab_cpu_tests and libgemmlab_faulting_plugin.so
# (the build folder's tests/plugins/ is looked in too), and the wheel of scripts/build_wheel.sh (gemmlab-*.whl;
# WHEEL names another). PYTHON (default /opt/torch/.venv/bin/python, else python3) has torch, Triton, numpy,
# pandas and pytest; the wheel goes into OUT_DIR/venv on top of it (--system-site-packages, nothing fetched).
# In order (about 6 minutes on an H200):
#  1. the CPU tests of the watchdog (the limit, a fake worker that hangs, dies, loses its context; resume and
#     --retry-failed) and the GPU tests WatchdogGpu: `gemmlab run` of five kernels whose third is a plugin kernel
#     that spins on a flag nobody sets, traps, or stores at an illegal address (--launch-timeout 3), beside a
#     run of the four others: rows, notes and times (the `[ watchdog ]` lines);
#  2. tests/python/test_watchdog_gpu.py: gemmlab.judge on five sizes whose third spins (Triton), blocks in
#     Python, returns after its limit, traps (a failed device assertion), stores at an illegal address, or
#     raises, beside the four others; gemmlab.explain of a callable that blocks on its 40th call; a closure
#     that spins in-process, then resume and retry_failed; and tests/python/test_explain_gpu37.py's bad input;
#  3. the main job (`gemmlab run --suite default`) with --isolation none, then with its worker process (the
#     default): wall time, the time split, rows identical in every column but the timings.
# Logs and CSVs go to OUT_DIR; a table of the figures is printed last.
set -uo pipefail
[ $# -eq 2 ] || { echo "usage: $0 BIN_DIR OUT_DIR" >&2; exit 2; }
bin=$(readlink -f "$1"); out=$(mkdir -p "$2" && cd "$2" && pwd)
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"
py=${PYTHON:-/opt/torch/.venv/bin/python}
[ -x "$py" ] || py=python3
plugin=$(ls "$bin"/libgemmlab_faulting_plugin.so "$bin"/tests/plugins/libgemmlab_faulting_plugin.so 2>/dev/null | head -1)
wheel=${WHEEL:-$(ls "$bin"/gemmlab-*.whl 2>/dev/null | head -1)}
export GEMMLAB_BINARY=$bin/gemmlab GEMMLAB_FAULTING_PLUGIN=$plugin
declare -a table
row() { table+=("$(printf '%-34s %s' "$1" "$2")"); echo "== $1: $2"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | tee "$out/gpu.txt"
row gpu "$(head -1 "$out/gpu.txt")"

# 1. CPU and GPU tests.
"$bin"/gemmlab_cpu_tests --gtest_filter='Isolation*:LaunchLimit*:RunLoop*:ExplainBadInput*:Docs*' \
  > "$out/cpu_tests.log" 2>&1
row "cpu tests rc=$?" "$(grep -E '^\[  (PASSED|FAILED) ' "$out/cpu_tests.log" | tr '\n' ' ')"
"$bin"/gemmlab_gpu_tests --gtest_filter='WatchdogGpu*:Plugins*:SchedulePerturbation*' > "$out/gpu_tests.log" 2>&1
row "gpu tests rc=$?" "$(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$out/gpu_tests.log" | tr '\n' ' ')"
# The `[ watchdog ]` lines: each faulty kernel's status and the five-kernel run's time beside the four's.
grep -E '^\[ watchdog \]' "$out/gpu_tests.log" | sed 's/^\[ watchdog \] /  gemmlab run: /' > "$out/run_figures.txt"
while read -r line; do table+=("$line"); echo "$line"; done < "$out/run_figures.txt"

# 2. The Python side, from the wheel.
if [ -n "$wheel" ] && [ -f "$wheel" ]; then
  rm -rf "$out/venv"
  "$py" -m venv --system-site-packages "$out/venv" > "$out/install.log" 2>&1
  "$py" -c 'import site; print("\n".join(site.getsitepackages()))' \
    > "$("$out"/venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/host-site.pth"
  "$out"/venv/bin/python -m pip install --no-deps --no-index --disable-pip-version-check "$wheel" >> "$out/install.log" 2>&1
  row "wheel rc=$?" "$(basename "$wheel")"
  vpy=$out/venv/bin/python
  if "$vpy" -c 'import pytest' 2>/dev/null; then
    (cd "$out" && "$vpy" -m pytest -q -s -p no:cacheprovider "$repo/tests/python/test_watchdog_gpu.py" \
       "$repo/tests/python/test_explain_gpu37.py" -k 'watchdog or raising or illegal or wrong_shape or callable' \
       > "$out/pytest.log" 2>&1)
    row "pytest rc=$?" "$(tail -1 "$out/pytest.log")"
    # judge's five sizes beside the four (each case's line), and explain's report of the 40th call.
    grep -E 'five sizes|hangs_on_call_40: UNIDENTIFIED' "$out/pytest.log" | cut -c1-240 | sed 's/^/  /' \
      > "$out/python_figures.txt"
    while read -r line; do table+=("$line"); echo "$line"; done < "$out/python_figures.txt"
  else
    row "pytest" "not importable by $py: carry it (tests/python/test_watchdog_gpu.py not run)"
  fi
else
  row "wheel" "none in $bin (WHEEL=...): the Python part was not run"
fi

# 3. The main job, in this process and with its worker process.
for mode in none process; do
  t0=$(date +%s.%N)
  "$bin"/gemmlab run --suite default --isolation $mode -o "$out/main_$mode.csv" > "$out/main_$mode.log" 2>&1
  rc=$?
  wall=$(python3 -c "print(round($(date +%s.%N) - $t0, 1))")
  split=$(python3 - "$out/main_$mode.meta.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))["timing_seconds"]
print(f"kernels {t['kernels']:.2f} s, non-kernel {t['non_kernel']:.2f} s ({t['non_kernel_fraction_of_kernels']:.3f})")
PY
)
  row "main job --isolation $mode rc=$rc" "wall $wall s; $split"
done
python3 - "$out/main_none.csv" "$out/main_process.csv" <<'PY' > "$out/main_compare.txt" 2>&1
import csv, sys
timing = {"time_ms_median", "time_ms_min", "time_ms_max", "time_ms_iqr", "tflops", "sm_clock_mhz"}
a, b = (list(csv.DictReader(open(f))) for f in sys.argv[1:3])
diff = [(x["kernel"], c) for x, y in zip(a, b) for c in x if c not in timing and x[c] != y.get(c)]
print(f"{len(a)} / {len(b)} rows, columns other than timings differing: {len(diff)} {diff[:5]} -> "
      f"{'IDENTICAL' if len(a) == len(b) and not diff else 'DIFFERENT'}")
PY
row "main job rows, none vs process" "$(cat "$out/main_compare.txt")"

echo
echo "== issue 44 on $(head -1 "$out/gpu.txt")"
printf '%s\n' "${table[@]}"
