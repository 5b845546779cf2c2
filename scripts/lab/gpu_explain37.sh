#!/usr/bin/env bash
# Issue 37's GPU parts: orders that depend on scheduling, frameworks (JAX, torch.compile), bad input.
# Usage: PYTHONPATH=<the gemmlab package with gemmlab._gpu> scripts/lab/gpu_explain37.sh BIN_DIR OUT_DIR [PART]
# BIN_DIR holds gemmlab_gpu_tests and gemmlab_cpu_tests; torch, Triton and JAX (with its CUDA plugin).
# PART: tests, splitk, jax, compile, bad, or all (default; each part can run alone, in any order):
#  tests    the GPU tests of the schedule perturbations (green contexts, held SMs, explain's verdict on a
#           kernel that sizes its split by the SMs it sees, the timing helper's perturbed launch, an
#           illegal memory access) and of explain, the CPU tests of the scheduling stage, and
#           tests/python/test_explain_gpu37.py (split-K atomics, jnp.matmul, torch.compile, bad input);
#  splitk, jax, compile, bad: scripts/lab/explain37.py --part PART: each case at 4096^3 and 1024x2048x8192
#           (bad input at 1024^3) on three distributions, in a process of its own, writing
#           <case>_<size>.csv (+ .meta.json), _judged.csv, .explain.json, .result.json to OUT_DIR.
# A case already done (its .result.json exists) is not run again. The table of every case done so far
# (kernel, shape, identified?, mismatches, judged status, scheduling verdict, seconds) is printed last.
set -uo pipefail
bin=$1; out=$2; part=${3:-all}
mkdir -p "$out"
if [ "$part" = tests ] || [ "$part" = all ]; then
  "$bin"/gemmlab_gpu_tests --gtest_filter='SchedulePerturbation*:ExplainGpu*:Docs*' > "$out/gpu_tests.log" 2>&1
  echo "GPU tests rc=$? ($(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$out/gpu_tests.log" | tr '\n' ' '))"
  grep -E '^\[ perturb  \]' "$out/gpu_tests.log"
  "$bin"/gemmlab_cpu_tests --gtest_filter='ExplainSchedule*:ExplainBadInput*' > "$out/cpu_tests.log" 2>&1
  echo "CPU tests rc=$? ($(grep -E '^\[  (PASSED|FAILED) ' "$out/cpu_tests.log" | tr '\n' ' '))"
  XLA_PYTHON_CLIENT_PREALLOCATE=false python3 -m pytest -q -s tests/python/test_explain_gpu37.py \
    > "$out/pytest37.log" 2>&1
  echo "pytest test_explain_gpu37.py rc=$? ($(tail -1 "$out/pytest37.log"))"
fi
if [ "$part" != tests ]; then
  [ "$part" = all ] && p=all || p=$part
  python3 scripts/lab/explain37.py --out "$out" --part "$p"
fi
