#!/usr/bin/env bash
# One GPU session of the 2026-11-29 round, in parts that fit 10-minute calls on one machine (a part's
# builds and venv stay on the machine for the next call while it is held):
#   scripts/lab/gpu_round.sh OUT_DIR PART...
# Run from the repository root, with carry-sys/ (scripts/lab/gpu_build.sh's archive of the -dev packages)
# and dist-gpu/ (a cp312 wheel of this tree: scripts/build_wheel.sh -a 90a -o dist-gpu) carried; WHEEL_DIR=DIR
# names another folder (a copy of that wheel without gemmlab/_bin/gemmlab, which setup links to the one it builds).
# PART:
#   setup      the wheel into /tmp/glvenv (over /opt/torch/.venv's packages, nothing fetched); gemmlab,
#              gemmlab_gpu_tests and the test plugins built into build-gpu/ (about 2 minutes on 16 cores)
#   tests      build-gpu/gemmlab_gpu_tests, every GPU test (GTEST_FILTER=... chooses some)
#   gen        scripts/lab/gpu_generations.sh (issue 41)
#   corun      scripts/lab/probes/corun.sh: whether a kernel runs beside held SMs (busy_sms, issue 42)
#   killprobe  scripts/lab/probes/kill_spin.sh: how long the GPU stays held after a spinning kernel's process
#              ends (issue 44)
#   profile    scripts/lab/probes/profile_costs.sh: where explain's launches and the statistics spend their time (issue 42)
#   profmain   the main job with GEMMLAB_PROFILE_REFERENCE=1 GEMMLAB_PROFILE_STATS=1: each reference's and each
#              statistics call's phases (each after a device synchronisation, so the run itself is slower; issue 42)
#   refsplit   `gemmlab bench-reference` at 4096^3 (fp32, fp16, bf16, fp64; every distribution; GPU only) with the
#              digit split and with the automatic choice, joined by scripts/lab/reference_splits.py (issue 42)
#   fp8prof    scripts/lab/probes/profile_fp8_explain.py: where a Python fp8 kernel's explain spends its time (issue 42)
#   pytest     tests/python with the GPU (every Python test, the GPU ones included; PYTEST_ARGS="..." instead chooses)
#   main       scripts/lab/bench_speed.py main (issue 42: the main job stopped on noise, its guard, compare)
#   fastest    scripts/lab/bench_speed.py fastest (issue 42: the fastest rows, fixed count and noise rule in turn)
#   explain    scripts/lab/bench_speed.py explain-cli explain-frameworks explain-others (issue 42)
#   explain-cli, explain-frameworks, explain-others: one of those
#   quantized  scripts/lab/gpu_quantized.sh (issue 43): its GPU tests and the judged baselines
#   explain-quantized  scripts/lab/gpu_quantized.sh's explain part: the baselines explained (issue 43)
#   suite-quantized  `gemmlab run --suite quantized` (the built-in quantized kernels, issue 43)
#   watchdog   scripts/lab/gpu_watchdog.sh (issue 44)
# Each part's logs go to OUT_DIR/<part>/; one line per part (its exit code and seconds) is printed at the
# end and written to OUT_DIR/round.txt, and OUT_DIR/<part>.tar.xz holds each part's folder.
set -uo pipefail
out=$(mkdir -p "$1" && cd "$1" && pwd); shift
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
export PYTHONUNBUFFERED=1
host_py=/opt/torch/.venv/bin/python
[ -x "$host_py" ] || host_py=python3
venv=/tmp/glvenv
py=$venv/bin/python
bin=$root/build-gpu
summary=()
part_run() {  # NAME COMMAND...: run, time, remember (LIMITS="tests=240 main=200": seconds a part may take)
  local name=$1 t0 rc limit
  shift
  mkdir -p "$out/$name"
  limit=$(tr ' ' '\n' <<<"${LIMITS:-}" | sed -n "s/^$name=//p")
  t0=$(date +%s.%N)
  if [ -n "$limit" ] && [ "$(type -t "$1")" != function ]; then timeout "$limit" "$@"; else "$@"; fi >"$out/$name/log.txt" 2>&1
  rc=$?
  summary+=("$(printf '%-20s rc=%-3s %6.1f s' "$name" "$rc" "$(python3 -c "print($(date +%s.%N) - $t0)")")")
  echo "== $name rc=$rc"; tail -25 "$out/$name/log.txt"
}
refsplit() {
  local d=$out/refsplit
  GEMMLAB_REFERENCE_SPLIT=digits "$bin/gemmlab" bench-reference -s 4096 --cpu none --formats fp32,fp16,bf16,fp64 \
    -o "$d/digits.csv" || return 1
  "$bin/gemmlab" bench-reference -s 4096 --cpu none --formats fp32,fp16,bf16,fp64 -o "$d/auto.csv" || return 1
  python3 scripts/lab/reference_splits.py "$d/digits.csv" "$d/auto.csv" "$d/reference_splits.csv"
}
setup() {
  rm -rf "$venv"
  "$host_py" -m venv --system-site-packages "$venv" || return 1
  "$host_py" -c 'import site; print("\n".join(site.getsitepackages()))' \
    >"$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/host-site.pth"
  "$py" -m pip install -q --no-deps --no-index --disable-pip-version-check "${WHEEL_DIR:-dist-gpu}"/gemmlab-*.whl || return 1
  scripts/lab/gpu_build.sh carry-sys "$bin" gemmlab gemmlab_gpu_tests gemmlab_faulting_plugin gemmlab_example_plugin || return 1
  # A wheel carried without its gemmlab command (the 64 MiB limit on what travels) gets the one just built.
  local cmd
  cmd=$("$py" -c 'import gemmlab, pathlib; print(pathlib.Path(gemmlab.__file__).parent / "_bin" / "gemmlab")')
  [ -e "$cmd" ] || { mkdir -p "$(dirname "$cmd")" && ln -s "$bin/gemmlab" "$cmd"; }
  "$py" -c 'import gemmlab; print("gemmlab", gemmlab.__version__, gemmlab.gpu_available())' 
}
for part in "$@"; do
  case $part in
    setup) part_run setup setup ;;
    tests) part_run tests "$bin/gemmlab_gpu_tests" --gtest_brief=1 ;;
    corun) part_run corun scripts/lab/probes/corun.sh "$out/corun/files" ;;
    profile) part_run profile scripts/lab/probes/profile_costs.sh "$bin" "$out/profile/files" ;;
    fp8prof) part_run fp8prof "$py" scripts/lab/probes/profile_fp8_explain.py "$out/fp8prof/files" ;;
    killprobe) part_run killprobe scripts/lab/probes/kill_spin.sh "$out/killprobe/files" ;;
    gen) part_run gen scripts/lab/gpu_generations.sh "$bin" "$out/gen/files" ;;
    pytest) part_run pytest env GEMMLAB_BINARY="$bin/gemmlab" "$py" -m pytest -q -p no:cacheprovider ${PYTEST_ARGS:-tests/python} ;;
    profmain) part_run profmain env GEMMLAB_PROFILE_REFERENCE=1 GEMMLAB_PROFILE_STATS=1 "$bin/gemmlab" run --suite default \
                -o "$out/profmain/default.csv" --force ;;
    refsplit) part_run refsplit refsplit ;;
    main) part_run main "$py" scripts/lab/bench_speed.py "$bin" "$out/speed" main ;;
    fastest) part_run fastest "$py" scripts/lab/bench_speed.py "$bin" "$out/speed" fastest ;;
    explain) part_run explain "$py" scripts/lab/bench_speed.py "$bin" "$out/speed" explain ;;
    explain-cli|explain-frameworks|explain-others) part_run "$part" "$py" scripts/lab/bench_speed.py "$bin" "$out/speed" "$part" ;;
    suite-quantized) part_run suite-quantized "$bin/gemmlab" run --suite quantized -o "$out/suite-quantized/quantized.csv" ;;
    quantized) part_run quantized env PYTHON="$py" scripts/lab/gpu_quantized.sh "$bin" "$out/quantized/files" ;;
    explain-quantized) part_run explain-quantized env PYTHON="$py" scripts/lab/gpu_quantized.sh "$bin" "$out/explain-quantized/files" explain ;;
    watchdog) part_run watchdog env PYTHON="$host_py" WHEEL="$(ls "$root"/"${WHEEL_DIR:-dist-gpu}"/gemmlab-*.whl | head -1)" \
                scripts/lab/gpu_watchdog.sh "$bin" "$out/watchdog/files" ;;
    *) echo "gpu_round: unknown part '$part'" >&2; exit 2 ;;
  esac
done
printf '%s\n' "${summary[@]}" | tee -a "$out/round.txt"
for d in "$out"/*/; do
  name=$(basename "$d")
  [ "$name" = venv ] && continue
  tar -cJf "$out/$name.tar.xz" -C "$out" "$name" && rm -rf "$d"
done
