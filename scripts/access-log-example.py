#!/usr/bin/env python3
"""Writes scenarios/traces/access.log: a small synthetic nginx access log for
scenarios/access-log.toml (deterministic: the same bytes on every run).

One minute of an API behind nginx, logged with

    log_format api '$remote_addr $msec $request_time "$request" "$http_user_agent"';

- 20 ordinary clients (10.0.1.1 .. 10.0.1.20), each Poisson at 0.5 requests/s;
- 3 heavy clients (10.0.9.1 .. 10.0.9.3) at 6/s, each with a burst of 40
  requests in 200 ms at its own moment every 15 s.

Times are whole milliseconds from 2026-12-01T00:00:00Z; every request is
logged as served at once (request_time 0.000, no status): the log is what
arrived, and the scenario asks what each limiter would have done with it.

Usage: scripts/access-log-example.py > scenarios/traces/access.log
"""
import random
import sys

START_MS = 1_796_083_200_000  # 2026-12-01T00:00:00Z
DURATION_MS = 60_000

rng = random.Random(20261201)
events = []  # (ms, seq, client, path)


def poisson(client, rate_per_s, paths):
    t = 0.0
    while True:
        t += rng.expovariate(rate_per_s)
        ms = int(t * 1000)
        if ms >= DURATION_MS:
            return
        events.append((ms, len(events), client, rng.choice(paths)))


for i in range(1, 21):
    poisson(f"10.0.1.{i}", 0.5, ["/api/items", "/api/items/42", "/api/search"])
for i in range(1, 4):
    client = f"10.0.9.{i}"
    poisson(client, 6.0, ["/api/search"])
    for start in range(2_000 + 4_000 * i, DURATION_MS, 15_000):
        for k in range(40):
            events.append((start + k * 5, len(events), client, "/api/export"))

events.sort()
out = sys.stdout
for ms, _, client, path in events:
    t = START_MS + ms
    agent = "batch-exporter/2.1" if client.startswith("10.0.9.") else "web/1.0"
    out.write(f'{client} {t // 1000}.{t % 1000:03d} 0.000 "GET {path} HTTP/1.1" "{agent}"\n')
