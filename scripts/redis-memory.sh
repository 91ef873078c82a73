#!/usr/bin/env bash
# Measures what each algorithm's per-key state costs in a real Redis, the
# numbers behind `ratesim::limiter::redis_bytes` (src/limiter/mod.rs).
#
#   scripts/redis-memory.sh [PORT]       # default port 6391, loopback only
#
# Starts a throwaway redis-server (no persistence) on 127.0.0.1:PORT, writes
# one key per structure the Redis scripts would use, prints
# `MEMORY USAGE key SAMPLES 0` for each (key name, value, dict entry and
# robj included; the expires-dict entry of a PEXPIREd key is not), fits the
# sorted set's fixed overhead and per-entry slope for both of its encodings,
# cross-checks with INFO used_memory over many keys, and stops the server.
#
# Needs redis-server and redis-cli (Debian: apt-get install redis-server).
set -euo pipefail

PORT=${1:-6391}
KEY="ratesim:client-000042"        # 21 bytes: a realistic key name
NOW_US=1700000000123456            # a Unix time in microseconds (16 digits)

redis-server --bind 127.0.0.1 --port "$PORT" --save '' --appendonly no \
    --daemonize no --loglevel warning >/dev/null &
PID=$!
TMP=$(mktemp)
trap 'kill "$PID" 2>/dev/null; wait "$PID" 2>/dev/null || true; rm -f "$TMP"' EXIT
cli() { redis-cli -p "$PORT" "$@"; }
for _ in $(seq 50); do cli ping >/dev/null 2>&1 && break; sleep 0.1; done

usage() { cli MEMORY USAGE "$KEY" SAMPLES 0; }
fresh() { cli FLUSHALL >/dev/null; }

echo "redis_version $(cli INFO server | tr -d '\r' | sed -n 's/^redis_version://p')"
echo "allocator $(cli INFO memory | tr -d '\r' | sed -n 's/^mem_allocator://p')"
echo "key_name $KEY (${#KEY} bytes)"
echo

fresh; cli SET "$KEY" 17 >/dev/null; cli PEXPIRE "$KEY" 1000 >/dev/null
echo "string_counter         $(usage)   # fixed_window count; one sliding_counter window (SET/INCR 17)"
fresh; cli SET "$KEY" "$NOW_US" >/dev/null; cli PEXPIRE "$KEY" 1000 >/dev/null
echo "string_timestamp       $(usage)   # gcra TAT (SET $NOW_US)"
fresh; cli HSET "$KEY" tokens 17 ts "$NOW_US" >/dev/null; cli PEXPIRE "$KEY" 1000 >/dev/null
echo "hash_two_fields        $(usage)   # token_bucket, interval_bucket, leaky_bucket (HSET tokens 17 ts $NOW_US)"
echo

# Sorted set: one member per logged request, "<time_us>-<6-digit seq>"
# (23 bytes, unique), score = time_us. Listpack up to 128 entries
# (zset-max-listpack-entries), then a skiplist + dict. Sizes move in
# allocator steps (and the dict doubles), so the slopes are least-squares
# fits: 1..128 for the listpack, 129..1000 for the skiplist.
fresh
: >"$TMP"
for n in $(seq 1 1000); do
    t=$((NOW_US + n))
    cli ZADD "$KEY" "$t" "$t-$(printf %06d "$n")" >/dev/null
    [ "$n" = 128 ] && echo "zset_encoding_at_128   $(cli OBJECT ENCODING "$KEY")"
    [ "$n" = 129 ] && echo "zset_encoding_at_129   $(cli OBJECT ENCODING "$KEY")"
    echo "$n $(usage)" >>"$TMP"
done
for n in 1 2 8 32 64 128 129 256 257 512 513 1000; do
    printf 'zset_entries_%-9s %s\n' "$n" "$(awk -v n="$n" '$1 == n { print $2 }' "$TMP")"
done
fit() { # least squares of usage on entries over [lo, hi]
    awk -v lo="$1" -v hi="$2" -v name="$3" '$1 >= lo && $1 <= hi {
        n++; sx += $1; sy += $2; sxx += $1 * $1; sxy += $1 * $2 }
    END { b = (n * sxy - sx * sy) / (n * sxx - sx * sx); a = (sy - b * sx) / n;
          printf "%-22s base %.1f + %.2f per entry (%d..%d)\n", name, a, b, lo, hi }' "$TMP"
}
fit 1 128 zset_listpack_fit
fit 129 1000 zset_skiplist_fit
echo

# Cross-check: INFO used_memory per key over 10000 keys with an expiry
# (includes the main and expires dict entries and bucket arrays).
per_key() {
    fresh; local before after
    before=$(cli INFO memory | tr -d '\r' | sed -n 's/^used_memory:\([0-9]*\)$/\1/p')
    seq -f "$1" 1 10000 | cli >/dev/null
    after=$(cli INFO memory | tr -d '\r' | sed -n 's/^used_memory:\([0-9]*\)$/\1/p')
    echo $(((after - before) / 10000))
}
echo "used_memory_per_key string_counter    $(per_key "SET ratesim:client-%06g 17 PX 100000")"
echo "used_memory_per_key string_timestamp  $(per_key "SET ratesim:client-%06g $NOW_US PX 100000")"
echo "used_memory_per_key hash_two_fields   $(per_key "HSET ratesim:client-%06g tokens 17 ts $NOW_US")"
