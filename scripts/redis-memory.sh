#!/usr/bin/env bash
# Measures what each shipped Redis script's per-key state costs in a real
# Redis: the numbers behind `ratesim::limiter::redis_bytes`
# (crates/core/src/limiter/mod.rs) and the "Redis" state-byte columns.
#
#   scripts/redis-memory.sh [PORT]       # default port 6391, loopback only
#
# Starts a throwaway redis-server (no persistence) on 127.0.0.1:PORT, runs
# each script of redis/ on one key with a realistic clock (16-digit
# microseconds) and key name (21 bytes), prints `MEMORY USAGE key SAMPLES 0`
# (key name, value, dict entry and robj included; the expires-dict entry of
# a PEXPIREd key is not), then the sliding log's sorted set at several
# sizes across its listpack → skiplist conversion, then the memory per key
# in all (INFO used_memory over a million keys, each with its expiry; the
# server's active expiry is off so none expires while they are written),
# and stops the server.
#
# Needs redis-server and redis-cli (Debian: apt-get install redis-server).
set -euo pipefail
cd "$(dirname "$0")/.."

PORT=${1:-6391}
KEY="ratesim:client-000042"        # 21 bytes: a realistic key name
NOW_US=1700000000123456            # a Unix time in microseconds (16 digits)

redis-server --bind 127.0.0.1 --port "$PORT" --save '' --appendonly no \
    --daemonize no --loglevel warning --enable-debug-command local >/dev/null &
PID=$!
trap 'kill "$PID" 2>/dev/null; wait "$PID" 2>/dev/null || true' EXIT
cli() { redis-cli -p "$PORT" "$@"; }
for _ in $(seq 50); do cli ping >/dev/null 2>&1 && break; sleep 0.1; done

echo "redis_version $(cli INFO server | tr -d '\r' | sed -n 's/^redis_version://p')"
echo "allocator $(cli INFO memory | tr -d '\r' | sed -n 's/^mem_allocator://p')"
echo "key_name $KEY (${#KEY} bytes)"
echo

# One admitted request at 5 per second on a fresh key, then MEMORY USAGE.
measure() {
  local algorithm=$1; shift
  local sha
  sha=$(cli SCRIPT LOAD "$(cat "redis/$algorithm.lua")")
  cli DEL "$KEY" >/dev/null
  cli EVALSHA "$sha" 1 "$KEY" "$NOW_US" 1 5 1000000 "$@" >/dev/null
  printf '%-34s %s\n' "$algorithm $*" "$(cli MEMORY USAGE "$KEY" SAMPLES 0)"
}
measure token_bucket 5
measure gcra 5
# GCRA at 3 per second: T = 333 333 1/3 us, so TAT keeps a fraction ("u:f").
sha=$(cli SCRIPT LOAD "$(cat redis/gcra.lua)")
cli DEL "$KEY" >/dev/null
cli EVALSHA "$sha" 1 "$KEY" "$NOW_US" 1 3 1000000 3 >/dev/null
printf '%-34s %s\n' "gcra 3 (3 per s: TAT u:f)" "$(cli MEMORY USAGE "$KEY" SAMPLES 0)"
measure leaky_bucket 5 0
measure fixed_window 0 epoch
measure fixed_window 1 first_hit
measure sliding_counter 0 exact
measure smooth_bursty 5 full

# The leaky bucket's hash grows with the requests waiting.
sha=$(cli SCRIPT LOAD "$(cat redis/leaky_bucket.lua)")
for waiting in 1 5 20; do
  cli DEL "$KEY" >/dev/null
  for _ in $(seq 0 "$waiting"); do
    cli EVALSHA "$sha" 1 "$KEY" "$NOW_US" 1 5 1000000 100 0 >/dev/null
  done
  printf '%-34s %s\n' "leaky_bucket, $waiting waiting" "$(cli MEMORY USAGE "$KEY" SAMPLES 0)"
done

# The sliding log's sorted set: listpack up to 128 entries, skiplist after.
sha=$(cli SCRIPT LOAD "$(cat redis/sliding_log.lua)")
for n in 1 2 5 64 128 129 300 1000; do
  cli DEL "$KEY" >/dev/null
  for i in $(seq 1 "$n"); do
    echo "EVALSHA $sha 1 $KEY $((NOW_US + i * 997)) 1 100000 1000000000 0 exclusive"
  done | cli >/dev/null
  printf '%-34s %s\n' "sliding_log, $n entries" "$(cli MEMORY USAGE "$KEY" SAMPLES 0)"
done

# In all: INFO used_memory over a million keys (21-byte names), one
# admitted request each, divided by the keys.
cli DEBUG SET-ACTIVE-EXPIRE 0 >/dev/null
in_all() {
  local algorithm=$1 limit=$2 extra=$3 keys=1000000 sha before after
  sha=$(cli -x SCRIPT LOAD <"redis/$algorithm.lua")
  cli FLUSHALL >/dev/null
  before=$(cli INFO memory | tr -d '\r' | sed -n 's/^used_memory://p')
  awk -v sha="$sha" -v now="$NOW_US" -v limit="$limit" -v extra="$extra" -v n="$keys" \
    'BEGIN { for (i = 0; i < n; i++)
      printf "EVALSHA %s 1 ratesim:client-%06d %s 1 %s 1000000 %s\r\n", sha, i, now, limit, extra }' |
    cli --pipe >/dev/null
  after=$(cli INFO memory | tr -d '\r' | sed -n 's/^used_memory://p')
  printf '%-34s %s\n' "in all: $algorithm $limit per s" "$(( (after - before) / keys ))"
}
in_all token_bucket 5 5
in_all gcra 5 5
in_all gcra 3 3
