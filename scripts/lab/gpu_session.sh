#!/usr/bin/env bash
# One call on a GPU machine with prebuilt binaries (no compiler or MPFR headers needed there):
#   scripts/lab/gpu_session.sh BIN_DIR OUT_DIR PART...
# PART: tests | default-a | default-b | default | experiments | probes | tc-corpus | engine | plugin |
# predict-kernels | predict-library | judge-tests | judge  (default-a/-b split the
# default suite's distributions so each half fits one 10-minute call). Logs and CSVs go to OUT_DIR;
# a short table is printed last. A run cut short (the call's time limit, a kill) leaves its journal
# in OUT_DIR, and calling the same PART again with the same OUT_DIR continues it (--resume).
# `default` runs the README's main job, then scripts/check_main_job.py on its metadata (rc 1 when the
# time outside the launches exceeds 5% of them).
# `engine` checks --gpus on a multi-GPU host: the plan ENGINE_PLAN (default: the default suite at
# 2048^3 on two distributions) on GPU 0 alone, then on every GPU (statistics must be identical bit
# for bit, wall time about 1/n), then on every GPU SIGKILLed after ENGINE_KILL_AFTER seconds (default:
# half the --gpus all wall time) and resumed (no row missing, none twice, same statistics).
# `plugin` runs the example plugin (BIN_DIR/libgemmlab_example_plugin.so, or PLUGIN) beside
# sgemm_01_naive from a suite with `plugins = [...]`, 1024^3, two distributions, three seeds, with
# --gpus all: the plugin's rows must equal sgemm_01_naive's in every statistic. Then the same suite
# on a copy of the plugin, SIGKILLed after its first journaled row: --resume is refused once the copy's
# bytes change, and with the original bytes back it completes to the same rows.
set -uo pipefail
bin=$1; out=$2; shift 2
# scripts/, where check_main_job.py lies (this script may live in scripts/lab/).
here=$(cd "$(dirname "$0")" && pwd)
[ -e "$here/check_main_job.py" ] || here=$(cd "$here/.." && pwd)
mkdir -p "$out"
# gemmlab run into CSV, continuing its journal if an earlier call was cut short.
run() {
  local csv=$1 resume=()
  shift
  [ -e "$csv.journal" ] && resume=(--resume)
  "$bin"/gemmlab run "$@" -o "$csv" "${resume[@]}"
}
# The rows of two CSVs equal in every column but the timings (and in order).
same_statistics() {
  python3 - "$1" "$2" <<'PY'
import csv, sys
timing = {"time_ms_median", "time_ms_min", "time_ms_max", "time_ms_iqr", "tflops", "sm_clock_mhz"}
a, b = (list(csv.DictReader(open(f))) for f in sys.argv[1:3])
keys = lambda rows: [(r["kernel"], r["distribution"], r["M"], r["N"], r["K"], r["seed"]) for r in rows]
diff = [(x["kernel"], c) for x, y in zip(a, b) for c in x if c not in timing and x[c] != y.get(c)]
ok = keys(a) == keys(b) and not diff
print(f"{sys.argv[1].split('/')[-1]} vs {sys.argv[2].split('/')[-1]}: {len(a)} / {len(b)} rows, same keys in order: "
      f"{keys(a) == keys(b)}, rows twice: {len(keys(b)) - len(set(keys(b)))}, non-timing fields differing: {len(diff)} {diff[:5]}"
      f" -> {'IDENTICAL' if ok else 'DIFFERENT'}")
sys.exit(0 if ok else 1)
PY
}
# Within one CSV, the rows of kernel $2 equal those of kernel $3 in every column but the identity
# and the timings, problem by problem.
same_as_builtin() {
  python3 - "$1" "$2" "$3" <<'PY'
import csv, sys
path, plugin, builtin = sys.argv[1:4]
skip = {"kernel", "family", "time_ms_median", "time_ms_min", "time_ms_max", "time_ms_iqr", "tflops", "sm_clock_mhz"}
rows = list(csv.DictReader(open(path)))
key = lambda r: (r["distribution"], r["M"], r["N"], r["K"], r["seed"])
p = {key(r): r for r in rows if r["kernel"] == plugin}
b = {key(r): r for r in rows if r["kernel"] == builtin}
diff = [(k, c) for k in p for c in p[k] if c not in skip and p[k][c] != b.get(k, {}).get(c)]
ok = p and p.keys() == b.keys() and not diff and all(r["status"] == "passed" for r in p.values())
print(f"{path.split('/')[-1]}: {len(p)} {plugin} rows vs {len(b)} {builtin} rows, fields differing: {len(diff)} {diff[:5]}"
      f" -> {'IDENTICAL' if ok else 'DIFFERENT'}")
sys.exit(0 if ok else 1)
PY
}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader | tee "$out/gpu.txt"
for part in "$@"; do
  case $part in
    tests)
      "$bin"/gemmlab_gpu_tests --gtest_brief=1 2>&1 | tee "$out/gpu_tests.log" | grep -E '^\[ *(FAILED|PASSED|SKIPPED) |tests ran' ;;
    default-a)
      run "$out/default_a.csv" --suite default -d uniform_0_1,uniform_-1_1,normal_0_1 2>>"$out/default_a.log"; echo "default-a rc=$?" ;;
    default-b)
      run "$out/default_b.csv" --suite default -d logunif_-8_8,cancel_-10,exactint_8 2>>"$out/default_b.log"; echo "default-b rc=$?" ;;
    experiments)
      run "$out/accumulation_vs_k.csv" --suite accumulation_vs_k 2>>"$out/accumulation_vs_k.log"; echo "accumulation_vs_k rc=$?"
      run "$out/fp8_promotion.csv" --suite fp8_promotion 2>>"$out/fp8_promotion.log"; echo "fp8_promotion rc=$?" ;;
    engine)
      read -r -a plan <<<"${ENGINE_PLAN:---suite default -s 2048 -d uniform_0_1,normal_0_1}"
      nvidia-smi -L | tee "$out/engine_gpus.txt"
      for g in 0 all; do
        t0=$(date +%s)
        run "$out/engine_gpus_$g.csv" "${plan[@]}" --gpus "$g" >/dev/null 2>>"$out/engine_gpus_$g.log"
        echo "engine --gpus $g rc=$? wall $(($(date +%s) - t0)) s"
        wall_all=$(($(date +%s) - t0))
      done
      same_statistics "$out/engine_gpus_0.csv" "$out/engine_gpus_all.csv"
      killed=$out/engine_killed.csv
      "$bin"/gemmlab run "${plan[@]}" --gpus all -o "$killed" >/dev/null 2>"$out/engine_killed.log" &
      pid=$!
      kill_after=${ENGINE_KILL_AFTER:-$((wall_all / 2 > 5 ? wall_all / 2 : 5))}
      sleep "$kill_after"
      kill -KILL "$pid"; wait "$pid"; echo "engine: SIGKILLed after $kill_after s, rc=$?"
      echo "engine: journal keeps $(($(wc -l <"$killed.journal") - 1)) rows (lines after the identity; a row's note may span lines)"
      "$bin"/gemmlab run "${plan[@]}" --gpus all -o "$killed" --resume >/dev/null 2>"$out/engine_resumed.log"
      echo "engine --resume rc=$?; $(grep -m1 resuming "$out/engine_resumed.log")"
      same_statistics "$out/engine_gpus_0.csv" "$killed" ;;
    plugin)
      lib=$(realpath "${PLUGIN:-$bin/libgemmlab_example_plugin.so}")
      suite() {  # suite file $1 loading plugin $2
        printf '%s\n' 'kernels = ["sgemm_plugin_naive", "sgemm_01_naive"]' 'distributions = ["uniform_0_1", "normal_0_1"]' \
          'sizes = [1024]' 'seeds = [1, 2, 3]' 'reps = 5' "plugins = [\"$2\"]" >"$1"
      }
      suite "$out/plugin.toml" "$lib"
      run "$out/plugin_gpus_all.csv" --suite "$out/plugin.toml" --gpus all >/dev/null 2>>"$out/plugin_gpus_all.log"
      echo "plugin --gpus all rc=$?"
      same_as_builtin "$out/plugin_gpus_all.csv" sgemm_plugin_naive sgemm_01_naive
      copy=$out/libplugin_copy.so killed=$out/plugin_killed.csv
      cp "$lib" "$copy" && suite "$out/plugin_copy.toml" "$copy"
      rm -f "$killed" "${killed%.csv}.meta.json" "$killed.journal"
      "$bin"/gemmlab run --suite "$out/plugin_copy.toml" --gpus all -o "$killed" >/dev/null 2>"$out/plugin_killed.log" &
      pid=$!
      for _ in $(seq 600); do [ "$(wc -l <"$killed.journal" 2>/dev/null || echo 0)" -ge 2 ] && break; sleep 0.05; done
      kill -KILL "$pid"; wait "$pid"; rc=$?
      echo "plugin: SIGKILLed with $(($(wc -l <"$killed.journal") - 1)) rows journaled, rc=$rc"
      printf 'rebuilt' >>"$copy"
      "$bin"/gemmlab run --suite "$out/plugin_copy.toml" --gpus all -o "$killed" --resume >/dev/null 2>"$out/plugin_refused.log"
      rc=$?
      echo "plugin: --resume after the plugin changed rc=$rc (expected 2): $(grep -o 'plugins changed[^;]*' "$out/plugin_refused.log" | head -c 300)"
      cp "$lib" "$copy"
      "$bin"/gemmlab run --suite "$out/plugin_copy.toml" --gpus all -o "$killed" --resume >/dev/null 2>"$out/plugin_resumed.log"
      echo "plugin: --resume with the original bytes rc=$?; $(grep -m1 resuming "$out/plugin_resumed.log")"
      same_statistics "$out/plugin_gpus_all.csv" "$killed"
      same_as_builtin "$killed" sgemm_plugin_naive sgemm_01_naive ;;
    predict-kernels)
      # Every kernel gemmlab builds, predicted bit for bit at 512^3 (the wgmma series by input format,
      # each on U[0,1), N(0,1) and a wide range of its format), and stream-K at 4096 x 4096 (256 cluster
      # tiles for 66 co-resident clusters: a tail of 58 tiles whose K is cut into chunks).
      hop() { "$bin"/gemmlab list | awk -v f="$1" '$2 == "hopper" && $3 == f {print $1}' | paste -sd,; }
      for spec in "fp16 logunif_-20_14" "bf16 logunif_-40_40" "e4m3 logunif_-9_8" "e5m2 logunif_-16_15"; do
        read -r fmt wide <<<"$spec"
        "$bin"/gemmlab predict -k "$(hop "$fmt")" -d "uniform_0_1,normal_0_1,$wide" -s 512 --seed 1 \
          -o "$out/predict_wgmma_${fmt}_512.csv" >"$out/predict_wgmma_${fmt}_512.log" 2>&1
        echo "predict wgmma $fmt rc=$?"
      done
      "$bin"/gemmlab predict -k hgemm_wgmma_08_streamk_sm16_fp16_in_wgmma,hgemm_wgmma_08_streamk_sm16_bf16_in_wgmma \
        -d normal_0_1 -s 4096x4096x256 --seed 1 -o "$out/predict_streamk_4096x4096x256.csv" \
        >"$out/predict_streamk_4096x4096x256.log" 2>&1
      echo "predict stream-K 4096x4096x256 rc=$?" ;;
    predict-library)
      # cuBLAS / cuBLASLt baselines through the tree gemmlab order reveals at each size.
      lib=cublas_gemmex_fp16_f32,cublas_gemmex_bf16_f32,cublas_gemmex_fp32_pedantic,cublaslt_fp8_e4m3_f32,cublaslt_fp8_e4m3_f32_fast_accum
      "$bin"/gemmlab predict -k "$lib" -d uniform_0_1,normal_0_1 -s 256 --seed 1 -o "$out/predict_library_256.csv" \
        >"$out/predict_library_256.log" 2>&1; echo "predict library 256^3 rc=$?"
      "$bin"/gemmlab predict -k "$lib" -d normal_0_1 -s 4096x4096x256 --seed 1 -o "$out/predict_library_4096x4096x256.csv" \
        >"$out/predict_library_4096x4096x256.log" 2>&1; echo "predict library 4096x4096x256 rc=$?" ;;
    default)
      # The README's main job in one call, with its time split (metadata timing_seconds).
      run "$out/default_full.csv" --suite default 2>>"$out/default_full.log"; echo "default rc=$?"
      python3 - "$out/default_full.meta.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))["timing_seconds"]
print("main job: " + ", ".join(f"{k} {v:.2f}" for k, v in t.items()))
PY
      # The guard (issue 33): everything outside the launches at most 5% of them.
      python3 "$here/check_main_job.py" "$out/default_full.meta.json"; echo "main job guard rc=$?"
      ;;
    judge-tests)
      # The Python package's GPU tests (gemmlab.judge, evaluate on GPU tensors) with the gemmlab CLI
      # for the cuBLAS comparison. The package comes from the wheel in $GEMMLAB_WHEEL_DIR (built
      # here for Python 3.12) installed into /tmp/site for the machine's python3 with torch.
      GEMMLAB_BIN="$bin"/gemmlab python3 -m pytest -q -p no:cacheprovider tests/python/test_judge.py \
        2>&1 | tee "$out/pytest_judge.log" | tail -15 ;;
    judge)
      # Triton, torch.matmul and torch._scaled_mm judged at 4096^3 and 2048x8192x3072 on U[0,1) and
      # N(0,1), then the built-in kernels on the same inputs; and evaluate, CPU against GPU.
      PYTHONUNBUFFERED=1 python3 examples/judge_frameworks.py --out "$out/judge" \
        ${JUDGE_SIZES:+--sizes $JUDGE_SIZES} 2>"$out/judge.log" | tail -40
      for z in ${JUDGE_SIZES:-4096 2048x8192x3072}; do
        run "$out/judge/builtin_$z.csv" -k cublas_gemmex_fp16_f32,cublas_gemmex_bf16_f32,cublas_gemmex_fp32_default,\
cublas_gemmex_fp32_fast_tf32,cublas_gemmex_fp16_f16,cublaslt_fp8_e4m3_f32,cublaslt_fp8_e4m3_f32_fast_accum,\
hgemm_wgmma_10_epioverlap_sm16_fp16_in_wgmma,hgemm_wgmma_10_epioverlap_sm16_bf16_in_wgmma,sgemm_10_warptiling \
          -d uniform_0_1,normal_0_1 -s "$z" --seeds 20261121 2>>"$out/judge_builtin.log"
        echo "builtin $z rc=$?"
      done
      python3 examples/bench_evaluate.py --out "$out/judge/evaluate_cpu_vs_gpu.csv" 2>>"$out/judge.log" ;;
    probes)
      "$bin"/gemmlab probe -o "$out/probes.csv" --validate 1000000 > "$out/probes.log" 2>&1; echo "probe rc=$?"; grep -E '^validate' "$out/probes.log" ;;
    tc-corpus)
      # Issue 21: every instruction (the 12 validated before and the new ones): the probes and the
      # adversarial corpus (reference/tc_corpus.hpp, 1,000 cases per rule class), every model
      # parameter inferred from their outcomes (the special rules from the corpus), then TC_TILES
      # random tiles per instruction from tile TC_FIRST_TILE of seed 1 (calls with TC_FIRST_TILE = 0,
      # TC_TILES, 2 TC_TILES, ... add up to one long validation). scripts/lab/probes/tc_corpus_postprocess.py
      # turns OUT_DIR into the committed CSVs and the tables.
      tiles=${TC_TILES:-200000} first=${TC_FIRST_TILE:-0}
      t0=$(date +%s)
      "$bin"/gemmlab probe --corpus -o "$out/tc_corpus.csv" --validate "$tiles" --first-tile "$first" --seed 1 \
        > "$out/tc_corpus.log" 2>&1
      echo "tc-corpus rc=$? wall $(($(date +%s) - t0)) s"
      python3 - "$out" <<'PY'
import csv, os, sys
out = sys.argv[1]
def rows(name):
    path = os.path.join(out, name)
    return list(csv.DictReader(open(path))) if os.path.exists(path) else []
corpus, valid, find = rows("tc_corpus_corpus.csv"), rows("tc_corpus_validation.csv"), rows("tc_corpus.csv")
bad = {}
for r in corpus:
    bad.setdefault(r["instruction"], []).append((r["class"], int(r["mismatching_outputs"]), int(r["cases"])))
tiles = {r["instruction"]: (r["tiles"], r["mismatching_outputs"]) for r in valid if r["distribution"] == "all"}
rules = {}
for r in find:
    if r["feature"] in ("nan_encoding", "overflow", "zero_sign", "zero_operand_alignment", "tf32_low_bits"):
        rules.setdefault(r["instruction"], []).append(r["feature"] + "=" + r["observed"].split(" ")[0])
for ins in sorted(set(bad) | set(tiles)):
    cls = bad.get(ins, [])
    miss = sum(m for _, m, _ in cls)
    worst = ", ".join(f"{c} {m}/{n}" for c, m, n in cls if m)
    t, tm = tiles.get(ins, ("-", "-"))
    print(f"{ins:30s} corpus {miss:5d} / {sum(n for _, _, n in cls):6d} differ{(' (' + worst + ')') if worst else ''}; "
          f"random tiles {t}: {tm} differ; {' '.join(rules.get(ins, []))}")
PY
      ;;
    *) echo "unknown part $part"; exit 2 ;;
  esac
done
# Short table: status counts, then each family's fastest kernel against its cuBLAS baseline.
for f in "$out"/default_*.csv; do
  [ -e "$f" ] || continue
  python3 - "$f" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
from collections import Counter
print(sys.argv[1].split('/')[-1], dict(Counter(r['status'] for r in rows)))
dist = rows[0]['distribution']
t = {r['kernel']: float(r['time_ms_median']) for r in rows if r['distribution'] == dist and r['time_ms_median']}
base = {'simt': 'cublas_gemmex_fp32_pedantic', 'mma': 'cublas_gemmex_fp16_f32', 'wmma': 'cublas_gemmex_fp16_f32', 'hopper': 'cublas_gemmex_fp16_f32'}
for fam, b in base.items():
    ks = [r['kernel'] for r in rows if r['family'] == fam and r['distribution'] == dist and r['kernel'] in t
          and r['input_format'] == ('fp32' if fam == 'simt' else 'fp16') and r['output_format'] == 'fp32' and r['accumulation'] != 'promoted']
    if ks and b in t:
        k = min(ks, key=t.get)
        print(f"  {fam:7s} fastest {k:55s} {t[k]:8.3f} ms  x{t[b]/t[k]:.3f} of {b}")
PY
done
