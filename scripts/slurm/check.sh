#!/usr/bin/env bash
# Runs the scripts of scripts/slurm/ on a real Slurm: a single-node cluster
# of its own, for the length of the check.
#
#   scripts/slurm/check.sh [RATESIM]     (default: target/release/ratesim)
#
# Installs slurm-wlm and munge when missing (root, Debian's apt-get);
# writes a munge key and a one-node slurm.conf (no accounting,
# proctrack/linuxproc, task/none, ports of its own) under a temporary
# directory; starts munged, slurmctld and slurmd from it; submits a
# 3-shard sweep and its merge (afterok), and a 3-partition replay and its
# merge (afterok); waits;
# checks the merged sweep is the unsharded sweep and the merged replay the
# whole run, byte for byte; stops its daemons by pid.
set -euo pipefail
cd "$(dirname "$0")/../.."
ratesim=$(realpath "${1:-target/release/ratesim}")
repo=$(pwd)

if ! command -v slurmctld >/dev/null 2>&1 || ! command -v munged >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends slurm-wlm munge >/dev/null
  else
    echo "check.sh: slurmctld and munged are missing, and this is not root on Debian to install them" >&2
    exit 1
  fi
fi
PATH=$PATH:/usr/sbin

tmp=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  done
  rm -rf "$tmp"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# munge: a key, a socket and a log of its own.
mkdir -p "$tmp/munge" "$tmp/slurm/state" "$tmp/slurm/spool" "$tmp/work"
chmod 711 "$tmp/munge"
dd if=/dev/urandom of="$tmp/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$tmp/munge/munge.key"
munged --force --key-file="$tmp/munge/munge.key" --socket="$tmp/munge/sock" \
  --pid-file="$tmp/munge/munged.pid" --log-file="$tmp/munge/munged.log" \
  --seed-file="$tmp/munge/seed" --foreground 2>"$tmp/munge/munged.out" &
pids+=($!)
for _ in $(seq 1 50); do [ -S "$tmp/munge/sock" ] && break; sleep 0.1; done

node=$(hostname -s)
export SLURM_CONF=$tmp/slurm/slurm.conf
cat >"$SLURM_CONF" <<CONF
ClusterName=ratesimcheck
SlurmctldHost=$node
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$tmp/munge/sock
StateSaveLocation=$tmp/slurm/state
SlurmdSpoolDir=$tmp/slurm/spool
SlurmctldPidFile=$tmp/slurm/slurmctld.pid
SlurmdPidFile=$tmp/slurm/slurmd.pid
SlurmctldLogFile=$tmp/slurm/slurmctld.log
SlurmdLogFile=$tmp/slurm/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
SlurmdTimeout=60
NodeName=$node CPUs=$(nproc) State=UNKNOWN
PartitionName=check Nodes=$node Default=YES MaxTime=INFINITE State=UP
CONF
slurmctld -D -i -f "$SLURM_CONF" >"$tmp/slurm/slurmctld.out" 2>&1 &
pids+=($!)
slurmd -D -N "$node" -f "$SLURM_CONF" >"$tmp/slurm/slurmd.out" 2>&1 &
pids+=($!)
up=
for _ in $(seq 1 100); do
  if sinfo -h -N -o '%T' 2>/dev/null | grep -qE '^(idle|mixed|allocated)'; then up=1; break; fi
  sleep 0.2
done
if [ -z "$up" ]; then
  echo "check.sh: the node did not come up" >&2
  tail -n 20 "$tmp/slurm/slurmctld.log" "$tmp/slurm/slurmd.log" >&2 || true
  exit 1
fi

# The work: a sweep in 3 shards and its merge, a replay in 3 partitions.
w=$tmp/work
cat >"$w/s.toml" <<'TOML'
name = "slurm-check"
seed = 3
duration = "4s"

[defaults]
limit = 10
window = "1s"

[[limiter]]
algorithm = "token_bucket"

[[limiter]]
algorithm = "sliding_log"

[[traffic]]
pattern = "poisson"
clients = 6
rate = "12/1s"
retry = { policy = "retry_after", max_attempts = 3 }
TOML
export RATESIM=$ratesim
flags=(--vary defaults.limit=4,8,12 --vary traffic[0].clients=2,6)
jobs=$(scripts/slurm/submit.sh sweep 3 "$w/s.toml" "$w/sweep" "${flags[@]}")
read -r sweep_job merge_job <<<"$jobs"
# The whole run, asked as the merge's run.json will say it was: the
# partitions' command without --keys, --out the merged directory (moved
# aside before the merge writes there).
replay_flags=(--quiet --decisions --no-plots --no-html)
"$ratesim" run "$w/s.toml" --out "$w/replay/merged" "${replay_flags[@]}"
mv "$w/replay/merged" "$w/whole-run"
read -r replay_job replay_merge_job <<<"$(scripts/slurm/submit.sh replay 3 "$w/s.toml" "$w/replay" --decisions --no-plots --no-html)"
echo "submitted: sweep array $sweep_job, merge $merge_job (afterok), replay array $replay_job, merge $replay_merge_job (afterok)"
# At the merged directory's depth: sweep.json holds the scenario's path
# relative to the directory.
"$ratesim" sweep "$w/s.toml" --out "$w/whole/sweep" --quiet "${flags[@]}"

for _ in $(seq 1 600); do
  [ -z "$(squeue -h -o %i 2>/dev/null)" ] && break
  sleep 0.2
done
if [ -n "$(squeue -h -o %i)" ]; then
  echo "check.sh: jobs still queued after 2 minutes:" >&2
  squeue >&2
  exit 1
fi
cat "$w"/sweep/slurm-*.out "$w"/replay/slurm-*.out 2>/dev/null | sed 's/^/  job: /'

status=0
if diff -r "$w/whole/sweep" "$w/sweep/merged" >/dev/null; then
  echo "sweep: 3 Slurm shards merged = the unsharded sweep, byte for byte"
else
  echo "sweep: the merged shards differ from the unsharded sweep:" >&2
  diff -rq "$w/whole/sweep" "$w/sweep/merged" >&2 || true
  status=1
fi
if diff -r "$w/whole-run" "$w/replay/merged" >/dev/null; then
  echo "replay: 3 Slurm key partitions merged = the whole run, byte for byte ($(($(wc -l <"$w/whole-run/decisions.csv") - 1)) decisions)"
else
  echo "replay: the merged partitions differ from the whole run:" >&2
  diff -rq "$w/whole-run" "$w/replay/merged" >&2 || true
  status=1
fi
cd "$repo"
exit $status
