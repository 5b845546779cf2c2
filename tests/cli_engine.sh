#!/usr/bin/env bash
# `gemmlab run --dry-run`, --shard, `gemmlab merge`, --force and the output lock from the command
# line, with no GPU: a dry run writes every row of the plan with status `planned`; shards merged
# give the one-process CSV byte for byte; merge refuses a missing shard and shards of another plan;
# an existing CSV is replaced only with --force; a run refuses an output another process has locked.
# With PLUGIN (the example plugin, examples/plugin/): its kernel joins a dry run, `all`,
# shards and the merge, and the metadata records the plugin's path and sha256.
#   tests/cli_engine.sh GEMMLAB WORK_DIR [PLUGIN]
set -u
gemmlab=$1 work=$2 plugin=${3:-}
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

if [ -n "$plugin" ]; then
  echo "--- a plugin's kernel joins the plan, all, shards and the merge; the metadata records the plugin"
  pk=(--plugin "$plugin" -k sgemm_plugin_naive,sgemm_01_naive -d uniform_0_1,normal_0_1 -s 256x192x320)
  expect 0 "wrote plugin.csv \(4 rows\)" "$gemmlab" run --dry-run "${pk[@]}" -o plugin.csv
  [ "$(grep -c '^sgemm_plugin_naive,plugin,fp32,fp32,fp32,fp32,fma,' plugin.csv)" = 2 ] || fail "plugin.csv lacks the plugin's rows"
  sha=$(sha256sum "$plugin" | cut -d' ' -f1)
  grep -q "\"sha256\": \"$sha\"" plugin.meta.json || fail "plugin.meta.json does not record the plugin's sha256 $sha"
  grep -q "\"path\": \"$(realpath "$plugin")\"" plugin.meta.json || fail "plugin.meta.json does not record the plugin's path"
  for i in 1 2; do expect 0 "wrote" "$gemmlab" run --dry-run "${pk[@]}" --shard "$i/2" -o "plugin_s$i.csv"; done
  expect 0 "merged 2 shards" "$gemmlab" merge plugin_s1.csv plugin_s2.csv -o plugin_merged.csv
  cmp plugin_merged.csv plugin.csv || fail "the plugin plan's merged shards differ from the one-process CSV"
  grep -q "\"sha256\": \"$sha\"" plugin_merged.meta.json || fail "the merged metadata lost the plugin"
  expect 0 "wrote" "$gemmlab" run --dry-run --plugin "$plugin" -k all -d uniform_0_1 -s 256 -o plugin_all.csv
  grep -q '^sgemm_plugin_naive,' plugin_all.csv || fail "-k all left the plugin's kernel out"
  expect 2 "unknown kernel 'sgemm_plugin_naive'.*--plugin PATH" "$gemmlab" run --dry-run -k sgemm_plugin_naive -s 64 -o no_plugin.csv
fi

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
