#!/usr/bin/env bash
# One call on a lent GPU machine with prebuilt binaries (no compiler or MPFR headers needed there):
#   scripts/gpu_session.sh BIN_DIR OUT_DIR PART...
# PART: tests | default-a | default-b | experiments | probes  (default-a/-b split the default suite's
# distributions so each half fits one 10-minute call). Logs and CSVs go to OUT_DIR; a short table
# is printed last.
set -uo pipefail
bin=$1; out=$2; shift 2
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader | tee "$out/gpu.txt"
for part in "$@"; do
  case $part in
    tests)
      "$bin"/gemmlab_gpu_tests --gtest_brief=1 2>&1 | tee "$out/gpu_tests.log" | grep -E '^\[ *(FAILED|PASSED|SKIPPED) |tests ran' ;;
    default-a)
      "$bin"/gemmlab run --suite default -d uniform_0_1,uniform_-1_1,normal_0_1 -o "$out/default_a.csv" 2>"$out/default_a.log"; echo "default-a rc=$?" ;;
    default-b)
      "$bin"/gemmlab run --suite default -d logunif_-8_8,cancel_-10,exactint_8 -o "$out/default_b.csv" 2>"$out/default_b.log"; echo "default-b rc=$?" ;;
    experiments)
      "$bin"/gemmlab run --suite accumulation_vs_k -o "$out/accumulation_vs_k.csv" 2>"$out/accumulation_vs_k.log"; echo "accumulation_vs_k rc=$?"
      "$bin"/gemmlab run --suite fp8_promotion -o "$out/fp8_promotion.csv" 2>"$out/fp8_promotion.log"; echo "fp8_promotion rc=$?" ;;
    probes)
      "$bin"/gemmlab probe -o "$out/probes.csv" --validate 1000000 > "$out/probes.log" 2>&1; echo "probe rc=$?"; grep -E '^validate' "$out/probes.log" ;;
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
