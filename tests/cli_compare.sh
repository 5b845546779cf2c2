#!/usr/bin/env bash
# `gemmlab compare` from the command line on small CSVs (tests/data/compare/): the exit status
# (0 nothing changed beyond noise, 3 accuracy, 4 slower beyond noise, 2 bad input), the markdown
# report on stdout and in --md, and the messages for bad input.
#   tests/cli_compare.sh GEMMLAB DATA_DIR WORK_DIR
set -u
gemmlab=$1 data=$2 work=$3
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1

fail() { echo "FAIL: $*"; exit 1; }
# expect RC COMMAND...: the exit code; stdout in out.txt, stderr in err.txt
expect() {
  local want=$1
  shift
  "$@" >out.txt 2>err.txt
  local rc=$?
  cat err.txt
  [ "$rc" = "$want" ] || { cat out.txt; fail "'$*' exited $rc, expected $want"; }
}
has() { grep -Fq -- "$2" "$1" || { cat "$1"; fail "$1 does not contain '$2'"; }; }

echo "--- identical CSVs: exit 0"
expect 0 "$gemmlab" compare "$data/base.csv" "$data/base.csv"
has out.txt "**No change beyond noise.** 3 rows matched; in each, the 38 statistics compared and the status are bit-identical."

echo "--- one statistic changed in its last digit: exit 3, the report names it, also in --md"
expect 3 "$gemmlab" compare "$data/base.csv" "$data/stat_changed.csv" --md report.md
has out.txt "**Accuracy changed in 1 row.**"
has out.txt "| \`cublas_gemmex_fp32_pedantic\` | uniform_0_1 | 256×256×256 | 1 | fp32→fp32 | rel_std | 6.906877171244399e-08 | 6.906877171244402e-08 |"
cmp out.txt report.md || fail "report.md differs from what was printed"
[ ! -e report.md.partial ] || fail "report.md.partial left behind"
expect 0 "$gemmlab" compare "$data/base.csv" "$data/stat_changed.csv" --ignore rel_std,reference

echo "--- a slower time beyond the noise: exit 4; within the noise or under the threshold: exit 0"
expect 4 "$gemmlab" compare "$data/base.csv" "$data/slower.csv"
has out.txt "**Slower beyond noise in 1 row.**"
has out.txt "| slower |"
expect 0 "$gemmlab" compare "$data/base.csv" "$data/slower.csv" --slowdown-threshold 0.2
expect 0 "$gemmlab" compare "$data/base.csv" "$data/within_noise.csv"
has out.txt "3 rows timed in both: 0 slower, 0 faster, 3 within noise."
expect 3 "$gemmlab" compare "$data/slower.csv" "$data/stat_changed.csv"   # faster and a statistic changed: 3

echo "--- an older CSV (no time_ms_iqr, fewer statistics): the range is the noise, and it says so"
expect 0 "$gemmlab" compare "$data/../sample_run.csv" "$data/base.csv"
has out.txt "(time_ms_max − time_ms_min) / time_ms_median, the file having no time_ms_iqr column in A"
has out.txt "- only in B (an older gemmlab wrote A?): cw_mean, cw_mean_ci95, cw_std"
has out.txt "Rows only in A: 33, only in B: 0."

echo "--- bad input: exit 2 with the reason, no report file"
expect 2 "$gemmlab" compare "$data/base.csv" missing.csv --md bad.md
has err.txt "missing.csv"
[ ! -e bad.md ] || fail "bad.md written for bad input"
expect 2 "$gemmlab" compare "$data/base.csv" "$data/malformed.csv"
has err.txt "malformed.csv' line 5 has 58 fields, the header 63"
expect 2 "$gemmlab" compare "$data/base.csv" "$data/duplicated.csv"
has err.txt "appear more than once"
expect 2 "$gemmlab" compare "$data/base.csv" "$data/../tc_eval_cases.csv"
has err.txt "is not a gemmlab result CSV: it has no 'kernel'"
expect 2 "$gemmlab" compare "$data/base.csv" "$data/base.csv" --ignore seed
has err.txt "--ignore seed: rows are matched by that column"
expect 2 "$gemmlab" compare "$data/base.csv" "$data/base.csv" --ignore rel_sdt
has err.txt "--ignore rel_sdt: gemmlab writes no column of that name"
expect 2 "$gemmlab" compare "$data/base.csv"
has err.txt "B is required"
echo "ok"
