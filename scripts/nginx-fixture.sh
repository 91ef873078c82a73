#!/usr/bin/env bash
# Records a real-nginx `limit_req` fixture for access-log replay and
# nginx-config import: tests/fixtures/nginx/.
#
#   scripts/nginx-fixture.sh [OUT_DIR]     # default tests/fixtures/nginx
#   FIXTURE=two-locations scripts/nginx-fixture.sh   # tests/fixtures/nginx-two-locations
#   FIXTURE=layered scripts/nginx-fixture.sh         # tests/fixtures/nginx-layered
#   FIXTURE=plans scripts/nginx-fixture.sh           # tests/fixtures/nginx-plans
#
# FIXTURE=two-locations records the second fixture instead: two locations
# (`/api/` per client address, `/key/` per X-Api-Key header, which some
# requests lack), a log format without $limit_req_status, and clients on
# several loopback addresses (127.0.0.2-5); its README is written here and
# checked by tests/it/accesslog.rs rather than nginx-fixture-check.py.
# FIXTURE=layered records nginx's documentation example of several limits
# on one request (two limit_req in one location: per address, and per
# $server_name); FIXTURE=plans records plans written with `map` (a free and
# a pro zone keyed by X-Api-Key when X-Plan says so, and a per-server zone).
# Both are checked by tests/it/chains.rs (docs/semantics.md §13).
#
# 1. Installs nginx from Debian packages if it is missing (needs root).
# 2. Writes a config into a temporary prefix: one worker, listening only on
#    127.0.0.1 on a free port, four locations each with its own
#    `limit_req_zone $http_x_client` zone (all traffic comes from 127.0.0.1,
#    so the zones key on the X-Client header), `limit_req_status 429`, and an
#    access log carrying `$msec $request_time $status $limit_req_status`.
#    The locations serve a static file: `return` would answer in the rewrite
#    phase, before limit_req (preaccess phase) ever runs.
# 3. Runs nginx in the foreground, drives it with scripts/nginx-fixture-client.py
#    (a fixed, seeded schedule of ~2,300 requests over 15 s, loopback only,
#    each on its own connection so delayed requests block nothing), stops
#    nginx (also on error or Ctrl-C), and copies nginx.conf, the access and
#    error logs, the schedule and the client's results into OUT_DIR with a
#    README.md that includes scripts/nginx-fixture-check.py's report.
#
# Re-running gives the same schedule but not byte-identical logs: wall-clock
# timing decides which millisecond each request lands in.
set -euo pipefail
cd "$(dirname "$0")/.."

FIXTURE=${FIXTURE:-limits}
case "$FIXTURE" in
  limits) OUT=${1:-tests/fixtures/nginx} ;;
  two-locations) OUT=${1:-tests/fixtures/nginx-two-locations} ;;
  layered) OUT=${1:-tests/fixtures/nginx-layered} ;;
  plans) OUT=${1:-tests/fixtures/nginx-plans} ;;
  *) echo "FIXTURE=$FIXTURE: expected limits, two-locations, layered or plans" >&2; exit 2 ;;
esac
HERE=scripts

# --- 1. nginx ---------------------------------------------------------------
if ! command -v nginx >/dev/null 2>&1 && [ ! -x /usr/sbin/nginx ]; then
  echo "nginx not found; installing it from Debian packages" >&2
  # Debian's `nginx` is the core server (limit_req is built in); bookworm's
  # nginx-light is a transitional package that pulls in `nginx` plus a module.
  pkg=nginx
  if ! apt-cache policy nginx 2>/dev/null | grep 'Candidate: [0-9]' >/dev/null; then
    apt-get update
  fi
  apt-cache policy nginx | grep 'Candidate: [0-9]' >/dev/null || pkg=nginx-light
  # Keep the package's own service (port 80 on all interfaces) from starting.
  made_policy=
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
    chmod +x /usr/sbin/policy-rc.d
    made_policy=1
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$pkg"
  [ -n "$made_policy" ] && rm -f /usr/sbin/policy-rc.d
fi
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
NGINX_VERSION=$("$NGINX" -v 2>&1)

# --- 2. config --------------------------------------------------------------
PREFIX=$(mktemp -d /tmp/ratesim-nginx.XXXXXX)
chmod 755 "$PREFIX"            # the worker runs as `nobody` and reads html/
mkdir -p "$PREFIX/conf" "$PREFIX/logs" "$PREFIX/html" "$PREFIX/temp"
printf 'ok\n' >"$PREFIX/html/ok.txt"
chmod 644 "$PREFIX/html/ok.txt"

NGINX_PID=
cleanup() {
  local rc=$?
  if [ -n "$NGINX_PID" ] && kill -0 "$NGINX_PID" 2>/dev/null; then
    kill -QUIT "$NGINX_PID" 2>/dev/null || true      # graceful: flush logs
    for _ in $(seq 50); do kill -0 "$NGINX_PID" 2>/dev/null || break; sleep 0.1; done
    kill -TERM "$NGINX_PID" 2>/dev/null || true
    wait "$NGINX_PID" 2>/dev/null || true
  fi
  if [ "$rc" -eq 0 ] || [ -z "${KEEP_ON_ERROR:-}" ]; then rm -rf "$PREFIX"; else
    echo "kept $PREFIX for inspection" >&2; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Every fixture's nginx.conf begins the same way: one worker in the
# foreground, paths inside the prefix, no access log but the server's own.
conf_head() {
  cat <<'HEAD'
daemon off;
worker_processes 1;
pid logs/nginx.pid;
error_log logs/error.log info;   # limit_req logs rejections at error, delays at warn

events {
    worker_connections 4096;
}

http {
    default_type text/plain;
    access_log off;
    client_body_temp_path temp/client_body;
    proxy_temp_path temp/proxy;
    fastcgi_temp_path temp/fastcgi;
    uwsgi_temp_path temp/uwsgi;
    scgi_temp_path temp/scgi;
HEAD
}

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

# All paths are relative to the prefix given with -p.
cat >"$PREFIX/conf/nginx.conf" <<EOF
# ratesim fixture: nginx limit_req on loopback (scripts/nginx-fixture.sh).
$(conf_head)

    # \$msec: when the line is written (s.ms); \$request_time: since the first
    # byte of the request was read (s.ms); then the standard "combined" fields.
    log_format ratesim '\$msec \$request_time \$status \$limit_req_status '
                       '\$http_x_client "\$request" '
                       '\$remote_addr - \$remote_user [\$time_local] '
                       '"\$request" \$status \$body_bytes_sent '
                       '"\$http_referer" "\$http_user_agent"';

    # One zone per location so each location's state is independent.
    # Keyed on the X-Client header (all traffic comes from 127.0.0.1).
    limit_req_zone \$http_x_client zone=perclient:1m rate=10r/s;
    limit_req_zone \$http_x_client zone=slow:1m     rate=30r/m;
    limit_req_zone \$http_x_client zone=nodelay:1m  rate=10r/s;
    limit_req_zone \$http_x_client zone=delay3:1m   rate=10r/s;
    limit_req_status 429;

    server {
        listen 127.0.0.1:$PORT;
        server_name fixture;
        access_log logs/access.log ratesim;
        root html;

        # try_files runs in the precontent phase, after limit_req (preaccess).
        location = /plain   { limit_req zone=perclient;               try_files /ok.txt =404; }
        location = /slow    { limit_req zone=slow burst=5;            try_files /ok.txt =404; }
        location = /nodelay { limit_req zone=nodelay burst=5 nodelay; try_files /ok.txt =404; }
        location = /delay   { limit_req zone=delay3 burst=10 delay=3; try_files /ok.txt =404; }
        location / { return 404; }
    }
}
EOF

if [ "$FIXTURE" = two-locations ]; then
cat >"$PREFIX/conf/nginx.conf" <<EOF
# ratesim fixture: two locations, one keyed by a header some requests lack
# (FIXTURE=two-locations scripts/nginx-fixture.sh).
$(conf_head)

    # No \$limit_req_status: the verdict is the status (limit_req_status).
    log_format main '\$msec \$request_time \$status \$remote_addr '
                    '\$http_x_api_key "\$request" \$body_bytes_sent';

    limit_req_zone \$binary_remote_addr zone=perip:1m rate=20r/s;
    limit_req_zone \$http_x_api_key zone=perkey:1m rate=5r/s;
    limit_req_status 429;

    server {
        listen 127.0.0.1:$PORT;
        server_name fixture;
        access_log logs/access.log main;
        root html;

        # try_files runs in the precontent phase, after limit_req (preaccess).
        location /api/ { limit_req zone=perip burst=10 nodelay; try_files /ok.txt =404; }
        location /key/ { limit_req zone=perkey burst=5;         try_files /ok.txt =404; }
        location / { return 404; }
    }
}
EOF
fi

if [ "$FIXTURE" = layered ] || [ "$FIXTURE" = plans ]; then
  if [ "$FIXTURE" = layered ]; then
    LIMITS="    # nginx's documentation example (ngx_http_limit_req_module): two
    # limits on one request, per client address and per server.
    log_format main '\$msec \$request_time \$status \$limit_req_status '
                    '\$remote_addr \"\$request\" \$body_bytes_sent';

    limit_req_zone \$binary_remote_addr zone=perip:1m rate=5r/s;
    limit_req_zone \$server_name zone=perserver:1m rate=40r/s;"
    LOCATION="location / { limit_req zone=perip burst=5 nodelay; limit_req zone=perserver burst=10 nodelay; try_files /ok.txt =404; }"
  else
    LIMITS="    # Plans: the free and pro zones key on X-Api-Key only when X-Plan names
    # their plan (a map's empty key is not accounted); one zone per server.
    log_format main '\$msec \$request_time \$status \$limit_req_status '
                    '\$remote_addr \$http_x_plan \$http_x_api_key \"\$request\"';

    map \$http_x_plan \$free_key { default \"\"; free \$http_x_api_key; }
    map \$http_x_plan \$pro_key  { default \"\"; pro  \$http_x_api_key; }
    limit_req_zone \$free_key    zone=free:1m      rate=2r/s;
    limit_req_zone \$pro_key     zone=pro:1m       rate=10r/s;
    limit_req_zone \$server_name zone=perserver:1m rate=30r/s;"
    LOCATION="location / { limit_req zone=free burst=2 nodelay; limit_req zone=pro burst=10 nodelay; limit_req zone=perserver burst=20 nodelay; try_files /ok.txt =404; }"
  fi
cat >"$PREFIX/conf/nginx.conf" <<EOF
# ratesim fixture: several limits on one request (FIXTURE=$FIXTURE scripts/nginx-fixture.sh).
$(conf_head)

$LIMITS
    limit_req_status 429;

    server {
        listen 127.0.0.1:$PORT;
        server_name fixture;
        access_log logs/access.log main;
        root html;

        # try_files runs in the precontent phase, after limit_req (preaccess).
        $LOCATION
    }
}
EOF
fi

"$NGINX" -t -q -p "$PREFIX/" -c conf/nginx.conf -e "$PREFIX/logs/error.log"

# --- 3. run -------------------------------------------------------------------
"$NGINX" -p "$PREFIX/" -c conf/nginx.conf -e "$PREFIX/logs/error.log" &
NGINX_PID=$!
for _ in $(seq 50); do
  (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break   # connect only: nothing is logged
  kill -0 "$NGINX_PID" 2>/dev/null || { echo "nginx exited; see error.log:" >&2; cat "$PREFIX/logs/error.log" >&2; exit 1; }
  sleep 0.1
done
echo "$NGINX_VERSION, pid $NGINX_PID, listening on 127.0.0.1:$PORT" >&2

timeout 90 python3 "$HERE/nginx-fixture-client.py" "$PORT" \
  "$PREFIX/schedule.csv" "$PREFIX/client.csv" "$FIXTURE"

kill -QUIT "$NGINX_PID"
wait "$NGINX_PID" || true
NGINX_PID=

# --- 4. copy --------------------------------------------------------------------
mkdir -p "$OUT"
cp "$PREFIX/conf/nginx.conf" "$OUT/nginx.conf"
cp "$PREFIX/logs/access.log" "$OUT/access.log"
# nginx's error log has a line per rejection (level error: "limiting
# requests, excess: 0.160 by zone ...") and per delay (warn: "delaying
# request, excess: 3.540, by zone ..."); keep just seq, zone, verdict and
# the excess in thousandths of a request (docs/semantics.md §5's unit).
{
  echo "seq,zone,verdict,excess_milli"
  sed -nE 's/.*(limiting requests|delaying request), excess: ([0-9]+)\.([0-9]{3}),? by zone "([^"]+)".*request: "GET [^?]*\?seq=([0-9]+) .*/\5 \4 \1 \2\3/p' \
    "$PREFIX/logs/error.log" \
  | awk '{ v = ($3 == "limiting") ? "REJECTED" : "DELAYED"; printf "%s,%s,%s,%d\n", $1, $2, v, $NF + 0 }'
} >"$OUT/limit_req_excess.csv"
cp "$PREFIX/schedule.csv" "$OUT/schedule.csv"
cp "$PREFIX/client.csv" "$OUT/client.csv"

if [ "$FIXTURE" = layered ] || [ "$FIXTURE" = plans ]; then
  verdicts=$(awk '{ print $4 }' "$OUT/access.log" | sort | uniq -c | awk '{ printf "%s %s; ", $2, $1 }')
  cat >"$OUT/README.md" <<EOF
# Real-nginx fixture: several limits on one request (\`$FIXTURE\`)

Recorded by \`FIXTURE=$FIXTURE scripts/nginx-fixture.sh\` (as root, on
Debian) with **$NGINX_VERSION**, on $(date -u +%Y-%m-%d), on loopback only,
for docs/semantics.md §13: nginx asks every \`limit_req\` of a location
about each request together — a request one zone rejects is counted by
none, a passed one waits the longest delay.

| file | what it is |
|---|---|
| \`nginx.conf\` | the exact config nginx ran (the port was a free one picked at run time) |
| \`access.log\` | nginx's access log (its \`log_format main\`), with \`\$limit_req_status\` |
| \`limit_req_excess.csv\` | \`seq,zone,verdict,excess_milli\` from nginx's error log: the zone that rejected or delayed each request |
| \`schedule.csv\` | what the client meant to send: \`seq,time_us,client,location\`; \`client\` is \`ADDRESS KEY\` (layered) or \`ADDRESS PLAN KEY\` (plans), \`-\` for a header not sent |
| \`client.csv\` | what the client saw: \`seq,time_us,sent_us,done_us,status,sent_mono_ns\` |

$(($(wc -l <"$OUT/schedule.csv") - 1)) requests over 15 s
(\`scripts/nginx-fixture-client.py\`, variant \`$FIXTURE\`), each on its own
connection from its loopback address. Verdicts: $verdicts

tests/it/chains.rs imports \`nginx.conf\` with this log (\`ratesim import
nginx.conf --trace access.log\`), runs it, and checks the chain's agreement
with these verdicts.
EOF
  echo "wrote $OUT: $(ls "$OUT" | tr '\n' ' ')" >&2
  exit 0
fi

if [ "$FIXTURE" = two-locations ]; then
  statuses=$(awk '{ split($7, p, "/"); print "/" p[2] "/", $3 }' "$OUT/access.log" | sort | uniq -c | awk '{ printf "`%s` %s: %s; ", $2, $3, $1 }')
  cat >"$OUT/README.md" <<EOF
# Real-nginx fixture: two locations, a header key, no \`\$limit_req_status\`

Recorded by \`FIXTURE=two-locations scripts/nginx-fixture.sh\` (as root,
on Debian bookworm) with **$NGINX_VERSION**, on $(date -u +%Y-%m-%d), on
loopback only. What issue 23 replayed: two locations, \`/api/\` limited per
client address at 20r/s burst=10 nodelay and \`/key/\` per \`X-Api-Key\`
at 5r/s burst=5, with a log format that has \`\$status\` but not
\`\$limit_req_status\` (so a rejection is \`limit_req_status 429\`).

| file | what it is |
|---|---|
| \`nginx.conf\` | the exact config nginx ran (the port was a free one picked at run time) |
| \`access.log\` | nginx's access log: \`\$msec \$request_time \$status \$remote_addr \$http_x_api_key "\$request" \$body_bytes_sent\` |
| \`limit_req_excess.csv\` | \`seq,zone,verdict,excess_milli\` from nginx's error log, for every rejected and delayed request |
| \`schedule.csv\` | what the client meant to send: \`seq,time_us,client,location\`; \`client\` is \`ADDRESS KEY\` (\`-\`: no X-Api-Key header) |
| \`client.csv\` | what the client saw: \`seq,time_us,sent_us,done_us,status,sent_mono_ns\` |

Traffic (\`scripts/nginx-fixture-client.py\`, variant \`two-locations\`,
$(($(wc -l <"$OUT/schedule.csv") - 1)) requests over 15 s, each on its own
connection from its address): on \`/api/\`, 127.0.0.2 every 100 ms,
127.0.0.4 Poisson at 5/s, 127.0.0.3 bursts of 20 within 10 ms every 3 s,
127.0.0.5 (with key k1) every 700 ms; on \`/key/\`, key k1 bursts of 10
within 5 ms every 4 s, key k2 every 500 ms, and 127.0.0.4 without a key
every 333 ms — requests nginx does not account in zone perkey.

Lines per location and status: $statuses

\`\$http_x_api_key\` is \`-\` where the header was absent.
tests/it/accesslog.rs imports \`nginx.conf\` with this log and checks the
replay's agreement with these verdicts.
EOF
  echo "wrote $OUT: $(ls "$OUT" | tr '\n' ' ')" >&2
  exit 0
fi

REPORT=$(python3 "$HERE/nginx-fixture-check.py" "$OUT") || { echo "$REPORT"; echo "check failed" >&2; exit 1; }
echo "$REPORT"

cat >"$OUT/README.md" <<EOF
# Real-nginx \`limit_req\` fixture

A recording of a real nginx rate-limiting real requests on loopback, for
replaying access logs (docs/semantics.md §8) and importing nginx configs (the
\`nginx\` preset, \`leaky_bucket.arithmetic = "nginx"\`, docs/semantics.md §5).

Produced by \`scripts/nginx-fixture.sh\` (as root, on Debian bookworm) with
**$NGINX_VERSION** (Debian package \`nginx\` $(dpkg-query -W -f='${Version}' nginx 2>/dev/null || echo '?')),
on $(date -u +%Y-%m-%d). Re-running it gives the same schedule but not
byte-identical logs: wall-clock timing decides which millisecond each
request lands in.

## Files

| file | what it is |
|---|---|
| \`nginx.conf\` | the exact config nginx ran (run with \`nginx -p PREFIX/ -c conf/nginx.conf\`; paths are relative to the prefix; the port was a free one picked at run time) |
| \`access.log\` | nginx's access log, one line per request, written when the response was sent |
| \`limit_req_excess.csv\` | \`seq,zone,verdict,excess_milli\`: from nginx's error log, whose \`limiting requests, excess: 0.160 by zone "perclient"\` (rejection, level error) and \`delaying request, excess: 3.540, by zone "delay3"\` (delay, level warn) lines give nginx's own \`excess\` — here in thousandths of a request, docs/semantics.md §5's unit — for every REJECTED and DELAYED request (PASSED ones are not logged) |
| \`schedule.csv\` | what the client meant to send: \`seq,time_us,client,location\` — \`time_us\` is the intended send time in µs from the client's start |
| \`client.csv\` | what the client saw: \`seq,time_us,sent_us,done_us,status,sent_mono_ns\` — its own send and completion offsets (µs from the same start), the HTTP status, and CLOCK_MONOTONIC (ns) just after the request was written: the clock nginx's limit_req reads (see below) |

## The limits

\`\`\`nginx
$(grep -E '^ *(limit_req_zone|limit_req_status|location = )' "$OUT/nginx.conf" | sed -E 's/ +try_files [^;]*;//; s/ +/ /g; s/^ //')
\`\`\`

Every zone is keyed on \`\$http_x_client\` (the \`X-Client\` request header),
because all traffic comes from 127.0.0.1; a location's key is the client.
Each location has its own zone, so the four are independent. In ratesim terms
(\`leaky_bucket\`, \`queue\` = burst, \`delay\` = delay=, nodelay = delay = queue):

| location | rate | queue (burst) | delay |
|---|---|---:|---:|
| \`/plain\` | 10/1s | 0 | 0 |
| \`/slow\` | 30/1m | 5 | 0 |
| \`/nodelay\` | 10/1s | 5 | 5 |
| \`/delay\` | 10/1s | 10 | 3 |

## Access-log lines

\`\`\`
log_format ratesim '\$msec \$request_time \$status \$limit_req_status \$http_x_client "\$request" '
                   '\$remote_addr - \$remote_user [\$time_local] "\$request" \$status \$body_bytes_sent '
                   '"\$http_referer" "\$http_user_agent"';
\`\`\`

The first six fields, then a complete \`combined\` line (so \`\$request\` and
\`\$status\` appear twice):

1. \`\$msec\` — Unix time, seconds with millisecond resolution, when the line was written (the response was sent).
2. \`\$request_time\` — seconds (ms resolution) since nginx read the request's first byte; for a DELAYED request it includes the delay. Arrival = \`\$msec\` − \`\$request_time\`, exact in whole ms.
3. \`\$status\` — 200, or 429 (\`limit_req_status 429\`) for a rejection.
4. \`\$limit_req_status\` — \`PASSED\`, \`DELAYED\` or \`REJECTED\` (nginx ≥ 1.17.6).
5. \`\$http_x_client\` — the limiter key: \`a\`, \`b\`, \`c\` or \`heavy\`.
6. \`"\$request"\` — \`GET /LOCATION?seq=N HTTP/1.1\`; \`seq\` is the row of \`schedule.csv\`/\`client.csv\`.
7. onwards: \`\$remote_addr - \$remote_user [\$time_local] "\$request" \$status \$body_bytes_sent "\$http_referer" "\$http_user_agent"\` (always \`127.0.0.1\`, \`-\`, \`ratesim-fixture/1\`).

The first lines:

\`\`\`
$(head -5 "$OUT/access.log")
\`\`\`

## Traffic

\`scripts/nginx-fixture-client.py\` (seed fixed in the file) sends
$(($(wc -l <"$OUT/schedule.csv") - 1)) requests over 15 s, each on its own
connection (opened 30 ms ahead, request written at its scheduled time), so
delayed requests hold up nothing. On \`/plain\`, \`/nodelay\` and \`/delay\`:
\`a\` steady at 8/s (±2 ms jitter), \`c\` exactly every 100 ms (10/s, the
rate itself), \`b\` steady at 12/s, \`heavy\` Poisson at 8/s plus a burst of
30 requests in 60 ms (groups of 3 at the same scheduled µs) every 2.5 s. On
\`/slow\` (30r/m): \`a\` every 2.5 s, \`b\` every 1.5 s, \`heavy\` Poisson at
0.5/s plus a burst of 10 in 20 ms every 5 s.

## What to expect (the check, \`scripts/nginx-fixture-check.py\`)

$REPORT

## Notes for a replay

- **Log order is completion order.** A line is written when the response
  is sent, so a DELAYED request's line comes after the lines of requests
  that arrived later (here by up to ~10 s on \`/slow\`); sort by arrival
  (\`\$msec\` − \`\$request_time\`) within a window of at least the longest
  delay. Lines of one instant may be in any order: the client's groups of
  three requests at the same scheduled µs reach nginx in the same ms but
  not necessarily in \`seq\` order.
- **\`\$request_time\` is 0.000 on every PASSED and REJECTED line** and, on a
  DELAYED line, the wait nginx computed from its excess to within a few ms
  (the table above). A \`nodelay\` location never logs DELAYED: a request it
  lets through on the burst is PASSED. \`\$limit_req_status\` is never empty
  (\`-\`) here, since every request went to a limited location; it would be
  \`-\` for a location without \`limit_req\`.
- **nginx's limiter clock is not the log's clock.** \`\$msec\` and
  \`\$request_time\` print nginx's cached *wall-clock* millisecond; limit_req
  evidently counts in a different millisecond, in phase with CLOCK_MONOTONIC
  (the second table fits nginx's logged excess far better than the first;
  nginx's timers use the monotonic clock). Both are read at the same
  instant but their millisecond boundaries fall at different points, so an interval
  derived from the log can be 1 ms longer or shorter than the one nginx
  used. At 10r/s one millisecond is 10 thousandths of excess: enough to flip
  a request sent exactly at the rate (client \`c\` on \`/plain\`) or one at
  the edge of the burst. Hence the first replay table: verdicts from the
  log's times agree with nginx's on most lines, not all. Replaying the same
  rule with the client's own CLOCK_MONOTONIC send times (second table)
  agrees more closely; what is left is requests whose send and nginx's
  clock reading fall in different milliseconds, and the knock-on effect on
  that key's later requests. So a replay of this log that disagrees with
  nginx on a few percent of lines is expected, not a bug;
  \`limit_req_excess.csv\` shows, line by line, the state nginx actually had.
EOF

echo "wrote $OUT: $(ls "$OUT" | tr '\n' ' ')" >&2
du -sh "$OUT"/* >&2
