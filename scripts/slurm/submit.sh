#!/usr/bin/env bash
# Submits a sharded sweep and the merge that waits for it:
#
#   scripts/slurm/submit.sh sweep N SCENARIO OUT [sweep flags...]
#   scripts/slurm/submit.sh replay N SCENARIO OUT [run flags...]
#
# `sweep`: N array tasks of sweep.sbatch, then sweep-merge.sbatch with
# --dependency=afterok on the array (OUT/merged is the unsharded sweep).
# `replay`: N array tasks of replay.sbatch (OUT/part-1 .. OUT/part-N),
# then replay-merge.sbatch with --dependency=afterok on the array
# (OUT/merged is the whole run).
# Prints the job ids, the last one the job to wait for.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
what=$1 n=$2 scenario=$3 out=$4
shift 4
mkdir -p "$out"
case $what in
  sweep)
    array=$(sbatch --parsable --array=0-$((n - 1)) --output="$out/slurm-%A_%a.out" \
      "$here/sweep.sbatch" "$scenario" "$out" "$@")
    merge=$(sbatch --parsable --dependency=afterok:"$array" --output="$out/slurm-%j.out" \
      "$here/sweep-merge.sbatch" "$out")
    echo "$array $merge"
    ;;
  replay)
    array=$(sbatch --parsable --array=0-$((n - 1)) --output="$out/slurm-%A_%a.out" \
      "$here/replay.sbatch" "$scenario" "$out" "$@")
    merge=$(sbatch --parsable --dependency=afterok:"$array" --output="$out/slurm-%j.out" \
      "$here/replay-merge.sbatch" "$out")
    echo "$array $merge"
    ;;
  *)
    echo "usage: $0 sweep|replay N SCENARIO OUT [flags...]" >&2
    exit 2
    ;;
esac
