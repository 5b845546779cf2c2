#!/usr/bin/env bash
# Runs one gemmlab plan on a Slurm cluster as a job array: task i of n computes shard i/n
# (`gemmlab run --shard i/n`), and a job that starts when every task has succeeded merges the
# shards into one CSV in plan order (`gemmlab merge`), as a single run would have written it.
#
#   scripts/slurm_array.sh N OUT.csv [gemmlab run arguments, without -o and --shard]
#   e.g. GEMMLAB_SBATCH_ARGS="--gres=gpu:1 --partition=gpu --time=2:00:00" \
#        scripts/slurm_array.sh 8 results/big.csv --suite default
#
# Shard i writes OUT.shard-i-of-N.csv (+ .meta.json) beside OUT.csv. A task that Slurm requeues
# (or one resubmitted by hand) continues its journal with --resume instead of starting again, or
# does nothing if its shard is complete; Slurm's SIGTERM at a time limit or preemption stops it
# after the current row.
#
# Every task gets the same gemmlab run arguments, `--plugin PATH` included (a relative PATH is read
# from the folder sbatch was called in, where Slurm starts the tasks); the plugin's SHA-256 is part of
# the plan's hash, so the merge refuses shards computed with different builds of it.
#
# Environment: GEMMLAB (the gemmlab binary; default build/gemmlab), GEMMLAB_SBATCH_ARGS (extra
# sbatch options for the shard tasks, e.g. a GPU request; the merge job needs no GPU).
set -euo pipefail

usage() {
  echo "usage: scripts/slurm_array.sh N OUT.csv [gemmlab run arguments]" >&2
  echo "  submits N shard tasks and a merge job; see the comment at the top of this script" >&2
  exit 2
}

# --- inside Slurm: one shard, or the merge --------------------------------------------------
if [ "${1:-}" = "__shard" ]; then
  shift
  out=$1
  shift
  i=$SLURM_ARRAY_TASK_ID n=$SLURM_ARRAY_TASK_COUNT
  shard_csv="${out%.csv}.shard-$i-of-$n.csv"
  # A requeued task: done already, or continue its journal (gemmlab refuses --resume without one).
  if [ -e "$shard_csv" ] && [ ! -e "$shard_csv.journal" ]; then echo "shard $i/$n is complete: $shard_csv"; exit 0; fi
  resume=()
  [ -e "$shard_csv.journal" ] && resume=(--resume)
  exec "$GEMMLAB" run "$@" --shard "$i/$n" -o "$shard_csv" "${resume[@]}"
fi
if [ "${1:-}" = "__merge" ]; then
  n=$2 out=$3
  shards=()
  for i in $(seq 1 "$n"); do shards+=("${out%.csv}.shard-$i-of-$n.csv"); done
  exec "$GEMMLAB" merge "${shards[@]}" -o "$out"
fi

# --- on the login node: submit --------------------------------------------------------------
[ $# -ge 2 ] || usage
n=$1 out=$2
shift 2
[[ "$n" =~ ^[1-9][0-9]*$ ]] || { echo "slurm_array.sh: N must be a positive number of shards, got '$n'" >&2; exit 2; }
[[ "$out" == *.csv ]] || { echo "slurm_array.sh: OUT must name a .csv file, got '$out'" >&2; exit 2; }
for a in "$@"; do
  case "$a" in
    -o|--out|--out=*|--shard|--shard=*|--resume|--gpus|--gpus=*)
      echo "slurm_array.sh: '$a' is set by this script (OUT, the task's shard, --resume, one GPU per task): leave it out" >&2
      exit 2 ;;
  esac
done
command -v sbatch >/dev/null || { echo "slurm_array.sh: sbatch not found: run this on a Slurm login node" >&2; exit 2; }
GEMMLAB=$(realpath "${GEMMLAB:-build/gemmlab}")
[ -x "$GEMMLAB" ] || { echo "slurm_array.sh: no gemmlab binary at $GEMMLAB: build it, or set GEMMLAB" >&2; exit 2; }
export GEMMLAB
out=$(realpath -m "$out")
mkdir -p "$(dirname "$out")"
logs="${out%.csv}.slurm"
mkdir -p "$logs"

# sbatch copies this script into its spool, so the tasks call it by its role, not by its path.
# shellcheck disable=SC2086  # GEMMLAB_SBATCH_ARGS is a list of options
array=$(sbatch --parsable --array="1-$n" --job-name=gemmlab-shard --output="$logs/shard-%a.log" \
        ${GEMMLAB_SBATCH_ARGS:-} "$0" __shard "$out" "$@")
array=${array%%;*}
merge=$(sbatch --parsable --dependency="afterok:$array" --kill-on-invalid-dep=yes --job-name=gemmlab-merge \
        --output="$logs/merge.log" "$0" __merge "$n" "$out")
merge=${merge%%;*}
echo "submitted shards as job array $array (tasks 1-$n) and the merge as job $merge (after all succeed)"
echo "logs: $logs/; result: $out"
echo "$array $merge"
