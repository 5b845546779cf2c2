#!/usr/bin/env bash
# A real single-node Slurm cluster on localhost, to test scripts/slurm_array.sh end to end:
# installs Debian's slurm-wlm and munge if missing, writes a slurm.conf for this host
# (proctrack/linuxproc and task/none, so no cgroups are needed), starts munged, slurmctld and
# slurmd, submits a job array of `gemmlab run --dry-run --shard i/n` tasks and the merge job,
# waits for them, and checks that the merged CSV equals a one-process `--dry-run` of the same
# plan, byte for byte. The daemons it started are stopped at the end (munged only if it started it).
#
#   tests/slurm/run_local_slurm.sh [GEMMLAB_BINARY] [SHARDS]     (as root; default build/gemmlab, 4)
#
# Exit 0 when the merge reproduces the plan; 1 when it does not; 77 (CTest's skip, as the ctest
# entry `slurm.local_job_array` runs it) when the daemons cannot start here: not root, packages not
# installable, or a sandbox without the privileges they need; the log says which and why.
set -euo pipefail
cd "$(dirname "$0")/../.."
GEMMLAB=$(realpath "${1:-build/gemmlab}")
shards=${2:-4}
[ -x "$GEMMLAB" ] || { echo "run_local_slurm: no gemmlab binary at $GEMMLAB: build it first" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "run_local_slurm: SKIP: not root, and it installs packages and starts daemons" >&2; exit 77; }

work=$(mktemp -d /tmp/gemmlab-slurm.XXXXXX)
echo "run_local_slurm: working in $work"

# --- packages ---------------------------------------------------------------------------
missing=()
for p in slurm-wlm munge; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "run_local_slurm: installing ${missing[*]}"
  if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; }; then
    echo "run_local_slurm: SKIP: could not install ${missing[*]} (no package source here?)" >&2
    exit 77
  fi
fi

# --- teardown: stop only what this script started, by pid -------------------------------
started_pids=()
# shellcheck disable=SC2317  # called by the trap
cleanup() {
  for pid in "${started_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  sleep 1
}
trap cleanup EXIT
daemon_failed() {  # name, log
  echo "run_local_slurm: $1 did not start here; its log ($2) ends with:" >&2
  tail -n 20 "$2" >&2 || true
  exit 77
}

# --- munge: Slurm's authentication --------------------------------------------------------
if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
  [ -s /etc/munge/munge.key ] || mungekey --create --keyfile=/etc/munge/munge.key
  chown munge:munge /etc/munge/munge.key && chmod 600 /etc/munge/munge.key
  install -d -o munge -g munge -m 0755 /run/munge
  runuser -u munge -- /usr/sbin/munged --pid-file=/run/munge/munged.pid >"$work/munged.out" 2>&1 ||
    daemon_failed munged "$work/munged.out"
  for _ in $(seq 50); do [ -s /run/munge/munged.pid ] && break; sleep 0.1; done
  started_pids+=("$(cat /run/munge/munged.pid)")
  munge -n | unmunge >/dev/null || daemon_failed "munged (credential round trip)" /var/log/munge/munged.log
fi
echo "run_local_slurm: munge works"

# --- slurm.conf for this host ---------------------------------------------------------------
host=$(hostname -s)
node_line=$(slurmd -C | head -n 1)  # "NodeName=<host> CPUs=… RealMemory=…": this machine as slurmd sees it
mkdir -p "$work/spool" "$work/state"
export SLURM_CONF=$work/slurm.conf
cat >"$SLURM_CONF" <<CONF
ClusterName=gemmlab-local
SlurmctldHost=$host
SlurmUser=root
SlurmctldPort=6817
SlurmdPort=6818
AuthType=auth/munge
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
MpiDefault=none
ReturnToService=2
MinJobAge=600
$node_line State=UNKNOWN
PartitionName=local Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF

/usr/sbin/slurmctld -c -f "$SLURM_CONF" >"$work/slurmctld.out" 2>&1 || daemon_failed slurmctld "$work/slurmctld.log"
for _ in $(seq 50); do [ -s "$work/slurmctld.pid" ] && break; sleep 0.1; done
[ -s "$work/slurmctld.pid" ] || daemon_failed slurmctld "$work/slurmctld.log"
started_pids+=("$(cat "$work/slurmctld.pid")")
/usr/sbin/slurmd -f "$SLURM_CONF" >"$work/slurmd.out" 2>&1 || daemon_failed slurmd "$work/slurmd.log"
for _ in $(seq 50); do [ -s "$work/slurmd.pid" ] && break; sleep 0.1; done
[ -s "$work/slurmd.pid" ] || daemon_failed slurmd "$work/slurmd.log"
started_pids+=("$(cat "$work/slurmd.pid")")

state=""
for _ in $(seq 60); do
  state=$(sinfo -h -n "$host" -o %T 2>/dev/null || true)
  [ "$state" = "idle" ] && break
  sleep 1
done
[ "$state" = "idle" ] || daemon_failed "slurmd (node state '$state', not idle)" "$work/slurmd.log"
echo "run_local_slurm: slurmctld and slurmd up, node $host idle"

# --- the job array ---------------------------------------------------------------------------
# Sizes every registered kernel takes (a dry run computes nothing, so large ones cost nothing).
# shellcheck disable=SC2054  # --seeds takes a comma-separated list
plan=(--dry-run -k all -d all -s 4096 -s 2048x4096x1024 --seeds 1,2,3)
ids=$(GEMMLAB="$GEMMLAB" scripts/slurm_array.sh "$shards" "$work/out/merged.csv" "${plan[@]}" | tail -n 1)
merge_job=${ids#* }
echo "run_local_slurm: submitted array and merge: $ids"

end_state=""
for _ in $(seq 600); do
  end_state=$(scontrol show job "$merge_job" 2>/dev/null | grep -o 'JobState=[A-Z_]*' | cut -d= -f2 || true)
  case "$end_state" in COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY) break ;; esac
  sleep 1
done
echo "run_local_slurm: merge job $merge_job ended $end_state"
for f in "$work"/out/merged.slurm/*.log; do echo "--- $f"; cat "$f"; done

# --- the check: the merged shards are the plan, as one process writes it ----------------------
"$GEMMLAB" run "${plan[@]}" -o "$work/out/single.csv" >/dev/null 2>"$work/single.log" || tail -n 5 "$work/single.log"
if [ "$end_state" = "COMPLETED" ] && cmp "$work/out/merged.csv" "$work/out/single.csv"; then
  echo "run_local_slurm: PASS: $shards shards merged by Slurm equal the one-process plan ($(($(wc -l <"$work/out/single.csv") - 1)) rows)"
  rm -rf "$work"
  exit 0
fi
echo "run_local_slurm: FAIL: the merged CSV is missing or differs from the one-process plan (see $work)" >&2
exit 1
