#!/usr/bin/env python3
"""Writes a seeded access log to benchmark replaying one (README, Performance).

One gateway's traffic, written as nginx, Envoy or JSON lines: Poisson
arrivals at RATE requests per second from KEYS clients picked uniformly,
each request taking 0, 1, 12 or 250 ms (equally likely) and one in ten
rejected. As a gateway writes its log, each line is written when its
request completes, so lines are in completion order and arrivals are not:
the replay re-orders them (docs/semantics.md §8). The three formats carry
the same requests, so they replay to the same decisions:

    nginx  log_format '$msec $arg_k $status $request_time'
           1764547200.012 k4943 200 0.012        (503 = rejected)
    envoy  '%START_TIME% %REQ(X-K)% %RESPONSE_CODE% %DURATION%'
           2025-12-01T00:00:00.000Z k4943 200 12  (429 = rejected)
    jsonl  {"time":1764547200.000,"client":"k4943","status":200}
    combined  nginx's combined format, then $request_time and $msec,
           the key as the address (k4943 is 10.0.19.79), 157 bytes a line:
           log_format '$remote_addr - $remote_user [$time_local] "$request"
             $status $body_bytes_sent "$http_referer" "$http_user_agent"
             $request_time $msec'

Standard library only; the same arguments write the same bytes:

    python3 benches/make_log.py nginx [--lines N] [--keys K] [--rate R] [--seed S]
        [--slow SHARE:MAX_S] > access.log

--slow makes a share of requests slower by up to MAX_S seconds, so their
lines come that much later than the lines of requests that arrived after
them (README, Replaying a log).

benches/log.toml, benches/log-envoy.toml, benches/log-jsonl.toml and
benches/log-combined.toml replay `access.log`, `access-envoy.log`,
`access.jsonl` and `access-combined.log` beside them.
"""

import argparse
import heapq
import random
import sys
import time

START_S = 1764547200  # 2025-12-01T00:00:00Z
DURATIONS_MS = (0, 1, 12, 250)
MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("format", choices=("nginx", "envoy", "jsonl", "combined"))
    ap.add_argument("--lines", type=int, default=1_000_000)
    ap.add_argument("--keys", type=int, default=20_000)
    ap.add_argument("--rate", type=float, default=10_000.0, help="requests per second")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--slow", metavar="SHARE:MAX_S", default=None,
                    help="that share of requests take up to MAX_S seconds longer (uniformly)")
    a = ap.parse_args()
    slow_share, slow_max_ms = 0.0, 0
    if a.slow:
        share, most = a.slow.split(":")
        slow_share, slow_max_ms = float(share), int(float(most) * 1000)
    rng = random.Random(a.seed)
    write = sys.stdout.write
    fmt = a.format

    def line(arrival_ms, key, status, dur_ms):
        if fmt == "nginx":
            done = START_S * 1000 + arrival_ms + dur_ms
            code = 503 if status else 200
            return "%d.%03d k%d %d %d.%03d\n" % (
                done // 1000, done % 1000, key, code, dur_ms // 1000, dur_ms % 1000)
        if fmt == "envoy":
            t = time.gmtime(START_S + arrival_ms // 1000)
            code = 429 if status else 200
            return "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ k%d %d %d\n" % (
                t.tm_year, t.tm_mon, t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec,
                arrival_ms % 1000, key, code, dur_ms)
        if fmt == "combined":
            done = START_S * 1000 + arrival_ms + dur_ms
            t = time.gmtime(done // 1000)
            code = 503 if status else 200
            return ('10.%d.%d.%d - - [%02d/%s/%04d:%02d:%02d:%02d +0000] '
                    '"GET /api/items?k=k%d HTTP/1.1" %d 612 "-" '
                    '"Mozilla/5.0 (X11; Linux x86_64) curl/8.5.0" %d.%03d %d.%03d\n') % (
                key >> 16 & 255, key >> 8 & 255, key & 255,
                t.tm_mday, MONTHS[t.tm_mon - 1], t.tm_year, t.tm_hour, t.tm_min, t.tm_sec,
                key, code, dur_ms // 1000, dur_ms % 1000, done // 1000, done % 1000)
        start = START_S * 1000 + arrival_ms
        code = 429 if status else 200
        return '{"time":%d.%03d,"client":"k%d","status":%d}\n' % (
            start // 1000, start % 1000, key, code)

    # Lines wait in a heap until no later request can complete before
    # them (a request completes after it arrives).
    pending = []
    t = 0.0
    for seq in range(a.lines):
        t += rng.expovariate(a.rate)
        arrival_ms = int(t * 1000)
        key = rng.randrange(a.keys)
        rejected = rng.random() < 0.1
        dur_ms = DURATIONS_MS[rng.randrange(4)]
        # Only drawn when asked for: the same arguments write the same bytes.
        if slow_share and rng.random() < slow_share:
            dur_ms += rng.randrange(slow_max_ms + 1)
        while pending and pending[0][0] <= arrival_ms:
            write(heapq.heappop(pending)[2])
        heapq.heappush(pending, (arrival_ms + dur_ms, seq, line(arrival_ms, key, rejected, dur_ms)))
    while pending:
        write(heapq.heappop(pending)[2])


if __name__ == "__main__":
    main()
