#!/usr/bin/env bash
# Issue 44 on a GPU: a kernel that hangs or crashes costs its row, never the run. One call:
#   scripts/lab/gpu_watchdog.sh BIN_DIR OUT_DIR
# BIN_DIR holds the wheel of scripts/build_wheel.sh (gemmlab-*.whl; WHEEL names another: every kernel family,
# `-a 90a` keeps it small) and libgemmlab_faulting_plugin.so (the build folder's tests/plugins/; BIN_DIR's
# tests/plugins/ is looked in too); a gemmlab there is used instead of the wheel's, and a gemmlab_gpu_tests
# there adds its WatchdogGpu tests. PYTHON (default /opt/torch/.venv/bin/python, else python3) has torch,
# Triton, numpy, pandas and pytest; the wheel goes into OUT_DIR/venv on top of it (--system-site-packages,
# nothing fetched). In order (about 6 minutes on an H200):
#  1. `gemmlab run` of five kernels at 2048^3 whose third is a plugin kernel that spins on a flag nobody sets,
#     traps, or stores at an illegal address, with the default limit (10 s + 2MNK at 10 GFLOP/s), beside a run
#     of the four others: each row's status, the faulty row's note, the rows equal in all but timings, the
#     time against the limit + the four's time + 10 s; then the spinning kernel with --isolation none (the run
#     stops at its row) and --resume (it goes on after it);
#  2. tests/python/test_watchdog_gpu.py: gemmlab.judge on five sizes whose third spins (Triton), blocks in
#     Python, returns after its limit, traps, stores at an illegal address or raises, beside the four others;
#     gemmlab.explain of a callable that blocks on its 40th call; a closure that spins in-process, then resume
#     and retry_failed; and test_explain_gpu37.py's illegal access (the faulted row kept);
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
declare -a table
row() { table+=("$(printf '%-30s %s' "$1" "$2")"); echo "== $1: $2"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | tee "$out/gpu.txt"
row gpu "$(head -1 "$out/gpu.txt")"

# The wheel into a venv over PYTHON's packages; its gemmlab is the command unless BIN_DIR has one.
vpy=$py
if [ -n "$wheel" ] && [ -f "$wheel" ]; then
  rm -rf "$out/venv"
  "$py" -m venv --system-site-packages "$out/venv" > "$out/install.log" 2>&1
  "$py" -c 'import site; print("\n".join(site.getsitepackages()))' \
    > "$("$out"/venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/host-site.pth"
  "$out"/venv/bin/python -m pip install --no-deps --no-index --disable-pip-version-check "$wheel" >> "$out/install.log" 2>&1
  row "wheel rc=$?" "$(basename "$wheel")"
  vpy=$out/venv/bin/python
  # A wheel carried without its gemmlab command gets BIN_DIR's.
  cmd=$("$vpy" -c 'import gemmlab, pathlib; print(pathlib.Path(gemmlab.__file__).parent / "_bin" / "gemmlab")')
  [ -e "$cmd" ] || [ ! -x "$bin/gemmlab" ] || { mkdir -p "$(dirname "$cmd")" && ln -s "$bin/gemmlab" "$cmd"; }
fi
gl=$bin/gemmlab
[ -x "$gl" ] || gl=$(dirname "$vpy")/gemmlab
[ -x "$gl" ] || { row gemmlab "none in $bin and no wheel: nothing to run"; printf '%s\n' "${table[@]}"; exit 1; }
[ -n "$plugin" ] || row plugin "libgemmlab_faulting_plugin.so not in $bin: part 1 cannot run"
export GEMMLAB_BINARY=$gl GEMMLAB_FAULTING_PLUGIN=$plugin
row gemmlab "$gl"

# 1. `gemmlab run`: five kernels, the third faulty, beside the four others.
four=sgemm_01_naive,sgemm_02_coalesce,sgemm_03_smem,sgemm_10_warptiling
cli() {  # NAME KERNELS [ARGS...]: one run into OUT_DIR/NAME.csv; prints "rc seconds"
  local name=$1 kernels=$2
  shift 2
  local t0
  t0=$(date +%s.%N)
  timeout 400 "$gl" run --plugin "$plugin" -k "$kernels" -s 2048 -d uniform_0_1 -o "$out/$name.csv" "$@" > "$out/$name.log" 2>&1
  local rc=$?
  echo "$rc $(python3 -c "print(round($(date +%s.%N) - $t0, 1))")"
}
if [ -n "$plugin" ]; then
  read -r rc4 t4 <<<"$(cli four "$four")"
  row "run: four kernels rc=$rc4" "$t4 s"
  for faulty in fault_spin_fp32 fault_trap_fp32 fault_illegal_fp32; do
    read -r rc t <<<"$(cli "five_$faulty" "sgemm_01_naive,sgemm_02_coalesce,$faulty,sgemm_03_smem,sgemm_10_warptiling")"
    { nvidia-smi; ps -eo pid,stat,wchan:32,etime,cmd | grep -v grep | grep -i -E 'gemmlab|PID'; } > "$out/after_$faulty.txt" 2>&1
    verdict=$(python3 - "$out/four.csv" "$out/five_$faulty.csv" "$t" "$t4" <<'PY'
import csv, sys
timing = {"time_ms_median", "time_ms_min", "time_ms_max", "time_ms_iqr", "time_ms_ci95_rel", "reps", "stopped_by",
          "tflops", "sm_clock_mhz"}
four, five = (list(csv.DictReader(open(f))) for f in sys.argv[1:3])
t, t4 = float(sys.argv[3]), float(sys.argv[4])
limit = 10 + 2 * 2048 ** 3 / 1e10
others = [r for r in five if r["kernel"] != five[2]["kernel"]]
same = len(others) == 4 and all({k: v for k, v in a.items() if k not in timing} == {k: v for k, v in b.items() if k not in timing}
                                for a, b in zip(others, four))
print(f"statuses {[r['status'] for r in five]}; the four rows as alone: {same}; {t:.1f} s <= limit {limit:.1f} + "
      f"{t4:.1f} + 10 = {limit + t4 + 10:.1f}: {t <= limit + t4 + 10}; note: {five[2]['note'][:150]}")
PY
)
    row "run: $faulty rc=$rc" "$t s; $verdict"
  done
  read -r rc t <<<"$(cli in_process "sgemm_01_naive,sgemm_02_coalesce,fault_spin_fp32,sgemm_03_smem,sgemm_10_warptiling" --isolation none)"
  kept=$(( $(wc -l < "$out/in_process.csv.journal") - 1 ))
  row "run --isolation none rc=$rc" "$t s; stopped with $kept rows in the journal, the last: $(tail -1 "$out/in_process.csv.journal" | grep -o 'timeout' | head -1)"
  read -r rc t <<<"$(cli in_process "sgemm_01_naive,sgemm_02_coalesce,fault_spin_fp32,sgemm_03_smem,sgemm_10_warptiling" --isolation none --resume)"
  row "  then --resume rc=$rc" "$t s; statuses $(python3 -c "import csv,sys; print([r['status'] for r in csv.DictReader(open(sys.argv[1]))])" "$out/in_process.csv")"
fi
if [ -x "$bin/gemmlab_gpu_tests" ]; then
  "$bin"/gemmlab_gpu_tests --gtest_filter='WatchdogGpu*' > "$out/gpu_tests.log" 2>&1
  row "gpu tests rc=$?" "$(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$out/gpu_tests.log" | tr '\n' ' ')"
fi

# 2. The Python side.
if "$vpy" -c 'import gemmlab._gpu, pytest, torch, triton' 2>/dev/null; then
  (cd "$out" && "$vpy" -m pytest -q -s -p no:cacheprovider "$repo/tests/python/test_watchdog_gpu.py" \
     "$repo/tests/python/test_explain_gpu37.py::test_illegal_memory_access_is_reported_and_earlier_rows_kept" \
     > "$out/pytest.log" 2>&1)
  row "pytest rc=$?" "$(tail -1 "$out/pytest.log")"
  # judge's five sizes beside the four (one line a case), and explain's report of the 40th call.
  grep -E 'five sizes|hangs_on_call_40: UNIDENTIFIED' "$out/pytest.log" | cut -c1-230 | sed 's/^/  /' > "$out/python_figures.txt"
  while read -r line; do table+=("$line"); echo "$line"; done < "$out/python_figures.txt"
else
  row pytest "$vpy cannot import gemmlab._gpu, pytest, torch and triton: the Python part was not run"
fi

# 3. The main job, in this process and with its worker process.
for mode in none process; do
  t0=$(date +%s.%N)
  "$gl" run --suite default --isolation $mode -o "$out/main_$mode.csv" > "$out/main_$mode.log" 2>&1
  rc=$?
  wall=$(python3 -c "print(round($(date +%s.%N) - $t0, 1))")
  split=$(python3 - "$out/main_$mode.meta.json" <<'PY' 2>&1
import json, sys
m = json.load(open(sys.argv[1]))
t = m["timing_seconds"]
print(f"rows {m['rows']}, kernels {t['kernels']:.2f} s, non-kernel {t['non_kernel']:.2f} s "
      f"(fraction {t['non_kernel_fraction_of_kernels']:.4f}), restarts {m['isolation'].get('worker_restarts', '-')}")
PY
)
  row "main job --isolation $mode rc=$rc" "wall $wall s; $split"
done
python3 - "$out/main_none.csv" "$out/main_process.csv" <<'PY' > "$out/main_compare.txt" 2>&1
import csv, sys
timing = {"time_ms_median", "time_ms_min", "time_ms_max", "time_ms_iqr", "time_ms_ci95_rel", "reps", "stopped_by",
          "tflops", "sm_clock_mhz"}
a, b = (list(csv.DictReader(open(f))) for f in sys.argv[1:3])
diff = [(x["kernel"], c) for x, y in zip(a, b) for c in x if c not in timing and x[c] != y.get(c)]
print(f"{len(a)} / {len(b)} rows, columns other than timings differing: {len(diff)} {diff[:5]} -> "
      f"{'IDENTICAL' if len(a) == len(b) and not diff else 'DIFFERENT'}")
PY
row "main job, none vs process" "$(cat "$out/main_compare.txt")"

echo
echo "== issue 44 on $(head -1 "$out/gpu.txt")"
printf '%s\n' "${table[@]}"
