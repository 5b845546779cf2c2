#!/usr/bin/env bash
# `gemmlab run --dry-run`, --shard, `gemmlab merge`, --force and the output lock from the command
# line, with no GPU: a dry run writes every row of the plan with status `planned`; shards merged
# give the one-process CSV byte for byte; merge refuses a missing shard and shards of another plan;
# an existing CSV is replaced only with --force; a run refuses an output another process has locked.
#   tests/cli_engine.sh GEMMLAB WORK_DIR
set -u
gemmlab=$1 work=$2
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
kds=(-k sgemm_01_naive,cublas_gemmex_fp16_f32,cublas_gemmex_bf16_f32 -d uniform_0_1,normal_0_1,exactint_8 -s 256 -s 128x256x64)
plan=("${kds[@]}" --seeds 1,2)
rows=$((3 * 3 * 2 * 2))

fail() { echo "FAIL: $*"; exit 1; }
# expect RC PATTERN COMMAND...: the exit code and a match in stderr
expect() {
  local want=$1 pattern=$2
  shift 2
  "$@" >out.txt 2>err.txt
  local rc=$?
  cat err.txt
  [ "$rc" = "$want" ] || fail "'$*' exited $rc, expected $want"
  grep -Eq -- "$pattern" err.txt || fail "'$*': stderr does not match /$pattern/"
}

echo "--- a dry run writes every row of the plan, status planned"
expect 0 "wrote full.csv \($rows rows\)" "$gemmlab" run --dry-run "${plan[@]}" -o full.csv
[ "$(tail -n +2 full.csv | wc -l)" = "$rows" ] || fail "full.csv has $(tail -n +2 full.csv | wc -l) rows, expected $rows"
statuses=$(tail -n +2 full.csv | awk -F, '{print $NF == "" ? $(NF-1) : $NF}' | sort -u)
[ "$statuses" = planned ] || fail "statuses other than planned: $statuses"
grep -q '"dry_run": true' full.meta.json || fail "full.meta.json does not say dry_run"
[ ! -e full.csv.journal ] && [ ! -e full.csv.lock ] || fail "journal or lock left behind"

echo "--- shards merged are the one-process CSV"
for i in 1 2 3; do expect 0 "wrote" "$gemmlab" run --dry-run "${plan[@]}" --shard "$i/3" -o "s$i.csv"; done
expect 0 "merged 3 shards into merged.csv \($rows rows" "$gemmlab" merge s1.csv s2.csv s3.csv -o merged.csv
cmp merged.csv full.csv || fail "merged.csv differs from full.csv"

echo "--- merge refuses a missing shard, a shard given twice, and a shard of another plan"
expect 2 "rows missing" "$gemmlab" merge s1.csv s3.csv -o m2.csv
expect 2 "rows duplicated" "$gemmlab" merge s1.csv s2.csv s3.csv s3.csv -o m3.csv
expect 0 "wrote" "$gemmlab" run --dry-run "${kds[@]}" --seeds 1,3 --shard 2/3 -o other.csv
expect 2 "plan_hash differs" "$gemmlab" merge s1.csv other.csv s3.csv -o m4.csv
[ ! -e m2.csv ] && [ ! -e m3.csv ] && [ ! -e m4.csv ] || fail "a refused merge left a CSV"
expect 2 "already exists.*--force" "$gemmlab" merge s1.csv s2.csv s3.csv -o merged.csv
expect 0 "merged" "$gemmlab" merge s1.csv s2.csv s3.csv -o merged.csv --force

echo "--- no overwrite without --force"
cp full.csv precious.csv
expect 2 "'precious.csv' already exists: choose another --out to keep it, or pass --force" \
  "$gemmlab" run --dry-run "${kds[@]}" --seeds 5 -o precious.csv
cmp precious.csv full.csv || fail "precious.csv was changed"
expect 0 "wrote precious.csv" "$gemmlab" run --dry-run "${kds[@]}" --seeds 5 -o precious.csv --force
cmp -s precious.csv full.csv && fail "--force did not replace precious.csv"

echo "--- --resume needs a journal"
expect 2 "there is no journal 'fresh.csv.journal'" "$gemmlab" run --dry-run "${plan[@]}" -o fresh.csv --resume
[ ! -e fresh.csv ] || fail "fresh.csv written"

echo "--- an output locked by another process is refused"
if command -v flock >/dev/null; then
  exec {lockfd}>locked.csv.lock
  flock -n "$lockfd" || fail "could not take the lock for the test"
  expect 2 "another gemmlab run is writing this output" "$gemmlab" run --dry-run "${plan[@]}" -o locked.csv
  exec {lockfd}>&-
  [ ! -e locked.csv ] || fail "locked.csv written while locked"
  expect 0 "wrote locked.csv" "$gemmlab" run --dry-run "${plan[@]}" -o locked.csv
else
  echo "(flock(1) not installed: the CPU tests check lock contention between processes)"
fi
echo "ok"
