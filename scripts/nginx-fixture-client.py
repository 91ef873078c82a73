#!/usr/bin/env python3
"""Bounded loopback load client for scripts/nginx-fixture.sh.

    nginx-fixture-client.py PORT SCHEDULE_CSV RESULTS_CSV [VARIANT]

Builds a fixed, seeded schedule of requests (written to SCHEDULE_CSV:
seq,time_us,client,location), then sends each one to 127.0.0.1:PORT at its
scheduled wall-clock offset from the start, every request on its own
connection so a request that nginx delays never holds up the others. The
request line is `GET <location>?seq=<seq> HTTP/1.1` with an `X-Client`
header, so every access-log line joins back to its schedule row.

Bounded: the schedule is a fixed list (no retries, no loops on responses),
each connection has a timeout, and the whole run is cut off after
DEADLINE_S seconds. Only the standard library; only 127.0.0.1.

VARIANT `two-locations` (tests/fixtures/nginx-two-locations) sends instead
to `/api/` and `/key/` from several loopback addresses (127.0.0.2 ..
127.0.0.5, bound as the source address), with an `X-Api-Key` header on
some requests only; its schedule's `client` column is `ADDRESS KEY`
(`-`: no header).

VARIANT `layered` (tests/fixtures/nginx-layered) is nginx's documentation
example of two limit_req in one location (per address and per
$server_name): 13 clients on 127.0.0.2 .. 127.0.0.14, `client` =
`ADDRESS -`. VARIANT `plans` (tests/fixtures/nginx-plans) sends X-Plan
and X-Api-Key headers: `client` = `ADDRESS PLAN KEY` (`-`: no header).

RESULTS_CSV has one row per request:
seq,time_us,sent_us,done_us,status,sent_mono_ns. sent_us/done_us are the
client's offsets from the start (when the request was written, when the
response ended); status is the HTTP status, or `timeout`/`error:<kind>`;
sent_mono_ns is CLOCK_MONOTONIC when the request was written, the clock
nginx's timers and limit_req read (its wall-clock variables $msec and
$request_time do not).
"""

import asyncio
import csv
import random
import sys
import time

HOST = "127.0.0.1"
SEED = 20240611
DURATION_S = 15                 # the schedule spans [0, 15 s)
DEADLINE_S = DURATION_S + 40    # hard stop for the whole run
REQUEST_TIMEOUT_S = 30          # the longest nginx delay here is ~10 s
CONNECT_AHEAD_S = 0.030         # open the connection this long before sending

S = 1_000_000  # microseconds per second


def build_schedule(variant="limits"):
    """Deterministic schedule: a list of (time_us, client, location)."""
    rng = random.Random(SEED)
    rows = []

    def steady(client, loc, interval_us, start_us, jitter_us=0):
        t = start_us
        while t < DURATION_S * S:
            j = rng.randint(-jitter_us, jitter_us) if jitter_us else 0
            rows.append((max(0, t + j), client, loc))
            t += interval_us

    def poisson(client, loc, per_s, start_us=0):
        t = start_us
        while True:
            t += int(rng.expovariate(per_s) * S) + 1
            if t >= DURATION_S * S:
                break
            rows.append((t, client, loc))

    def bursts(client, loc, every_us, first_us, size, spread_us, group=1):
        """`size` requests within `spread_us`, in groups of `group` sent at
        the same scheduled microsecond."""
        t0 = first_us
        while t0 < DURATION_S * S:
            n_groups = (size + group - 1) // group
            for g in range(n_groups):
                t = t0 + (spread_us * g) // max(1, n_groups - 1)
                for _ in range(min(group, size - g * group)):
                    rows.append((t, client, loc))
            t0 += every_us

    if variant == "layered":
        # perip 5r/s burst=5 nodelay per address; perserver 40r/s burst=10
        # nodelay for the server. Ten clients under their own rate (about
        # 3/s each, 30/s together), two Poisson at 4/s, one bursty (15
        # within 20 ms every 2 s), and two server-wide spikes where every
        # client sends 3 within 30 ms.
        addrs = [f"127.0.0.{i} -" for i in range(2, 15)]
        for k, a in enumerate(addrs[:10]):
            steady(a, "/", 333_333, 20_000 + k * 31_000, jitter_us=20_000)
        poisson(addrs[10], "/", 4.0)
        poisson(addrs[11], "/", 4.0)
        bursts(addrs[12], "/", 2_000_000, 700_000, size=15, spread_us=20_000)
        for t0 in (5_000_000, 10_000_000):
            for k, a in enumerate(addrs):
                for j in range(3):
                    rows.append((t0 + k * 2_000 + j * 1_000, a, "/"))
        rows.sort(key=lambda r: r[0])
        return rows

    if variant == "plans":
        # free 2r/s burst=2 nodelay per key, pro 10r/s burst=10 nodelay per
        # key, and 30r/s burst=20 nodelay for the server (map by X-Plan).
        steady("127.0.0.2 free f1", "/", 666_666, 30_000, jitter_us=5_000)   # 1.5/s
        poisson("127.0.0.3 free f2", "/", 3.0)                               # over
        bursts("127.0.0.4 FREE f3", "/", 3_000_000, 400_000, size=6,
               spread_us=10_000)                                             # case
        steady("127.0.0.5 pro p1", "/", 125_000, 60_000, jitter_us=5_000)    # 8/s
        bursts("127.0.0.6 pro p2", "/", 4_000_000, 900_000, size=25,
               spread_us=50_000)
        poisson("127.0.0.7 - a1", "/", 4.0)                                   # no plan
        for t0 in (7_000_000, 12_000_000):
            for c in ("127.0.0.2 free f1", "127.0.0.5 pro p1",
                      "127.0.0.7 - a1", "127.0.0.8 - a2"):
                for j in range(8):
                    rows.append((t0 + j * 2_000, c, "/"))
        rows.sort(key=lambda r: r[0])
        return rows

    if variant == "two-locations":
        # /api/ (per address, 20r/s burst=10 nodelay): .2 at half the rate,
        # .4 Poisson at a quarter, .3 bursts of 20 within 10 ms every 3 s
        # (11 pass on the burst, 9 rejected). Most carry no API key.
        steady("127.0.0.2 -", "/api/", 100_000, 13_000, jitter_us=2_000)
        poisson("127.0.0.4 -", "/api/", 5.0)
        bursts("127.0.0.3 -", "/api/", 3_000_000, 500_000, size=20,
               spread_us=10_000, group=2)
        steady("127.0.0.5 k1", "/api/", 700_000, 250_000)
        # /key/ (per X-Api-Key, 5r/s burst=5): k1 bursts 10 within 5 ms
        # every 4 s (1 passes, 5 wait 200..1000 ms, 4 rejected); k2 at
        # 2/s; requests without a key, which nginx does not account.
        bursts("127.0.0.5 k1", "/key/", 4_000_000, 1_100_000, size=10,
               spread_us=5_000, group=2)
        steady("127.0.0.3 k2", "/key/", 500_000, 170_000, jitter_us=2_000)
        steady("127.0.0.4 -", "/key/", 333_333, 90_000)
        rows.sort(key=lambda r: r[0])
        return rows

    # 10 r/s: a under the rate, c exactly at it (every 100 ms, so nginx's
    # whole-ms clock decides), b a little over, heavy in bursts.
    for loc in ("/plain", "/nodelay", "/delay"):
        steady("a", loc, 125_000, 7_000 + len(loc) * 1_000, jitter_us=2_000)  # 8/s
        steady("c", loc, 100_000, 45_000 + len(loc) * 1_000)                  # 10/s
        steady("b", loc, 83_333, 11_000 + len(loc) * 1_000)                    # 12/s
        poisson("heavy", loc, 8.0)
        bursts("heavy", loc, 2_500_000, 1_000_000 + len(loc) * 10_000,
               size=30, spread_us=60_000, group=3)
    # 30 r/m burst=5: one request per 2 s, delays of up to 10 s.
    steady("a", "/slow", 2_500_000, 300_000)                  # 24/min: passes
    steady("b", "/slow", 1_500_000, 500_000)                  # 40/min: queues
    bursts("heavy", "/slow", 5_000_000, 1_200_000, size=10,
           spread_us=20_000, group=2)
    poisson("heavy", "/slow", 0.5)

    rows.sort(key=lambda r: r[0])  # stable: equal times keep creation order
    return rows


async def one(seq, t_us, client, loc, start, results):
    loop = asyncio.get_running_loop()
    sent_us = done_us = sent_mono_ns = None
    status = "error:unsent"
    writer = None
    try:
        await asyncio.sleep(max(0.0, start + t_us / S - CONNECT_AHEAD_S - loop.time()))
        if client.count(" ") == 2:   # plans: "ADDRESS PLAN KEY"
            addr, plan, key = client.split(" ")
            local = (addr, 0)
            header = "" if plan == "-" else f"X-Plan: {plan}\r\n"
            header += "" if key == "-" else f"X-Api-Key: {key}\r\n"
        elif " " in client:   # two-locations, layered: "ADDRESS KEY"
            addr, key = client.split(" ")
            local = (addr, 0)
            header = "" if key == "-" else f"X-Api-Key: {key}\r\n"
        else:
            local, header = None, f"X-Client: {client}\r\n"
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection(HOST, PORT, local_addr=local), timeout=5)
        await asyncio.sleep(max(0.0, start + t_us / S - loop.time()))
        req = (f"GET {loc}?seq={seq} HTTP/1.1\r\nHost: fixture\r\n"
               f"{header}User-Agent: ratesim-fixture/1\r\n"
               f"Connection: close\r\n\r\n").encode()
        writer.write(req)
        sent_mono_ns = time.monotonic_ns()
        sent_us = round((loop.time() - start) * S)
        await writer.drain()
        data = await asyncio.wait_for(reader.read(), timeout=REQUEST_TIMEOUT_S)
        done_us = round((loop.time() - start) * S)
        line = data.split(b"\r\n", 1)[0].split()
        status = line[1].decode() if len(line) >= 2 else "error:short"
    except asyncio.TimeoutError:
        status = "timeout"
    except OSError as e:
        status = f"error:{type(e).__name__}"
    finally:
        if writer is not None:
            writer.close()
    results[seq] = (t_us, sent_us, done_us, status, sent_mono_ns)


async def main(schedule):
    loop = asyncio.get_running_loop()
    start = loop.time() + 0.2  # time to create the tasks before t = 0
    results = {}
    tasks = [asyncio.create_task(one(i, t, c, l, start, results))
             for i, (t, c, l) in enumerate(schedule)]
    done, pending = await asyncio.wait(tasks, timeout=DEADLINE_S)
    for t in pending:
        t.cancel()
    if pending:
        await asyncio.wait(pending, timeout=5)
    return results


if __name__ == "__main__":
    if len(sys.argv) not in (4, 5):
        sys.exit(__doc__.split("\n\n")[1])
    PORT = int(sys.argv[1])
    schedule = build_schedule(sys.argv[4] if len(sys.argv) == 5 else "limits")
    with open(sys.argv[2], "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["seq", "time_us", "client", "location"])
        for i, (t, c, l) in enumerate(schedule):
            w.writerow([i, t, c, l])
    print(f"client: {len(schedule)} requests over {DURATION_S} s to "
          f"{HOST}:{PORT}", file=sys.stderr)
    wall0 = time.monotonic()
    results = asyncio.run(main(schedule))
    with open(sys.argv[3], "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["seq", "time_us", "sent_us", "done_us", "status", "sent_mono_ns"])
        for i in range(len(schedule)):
            t, s, d, st, mono = results.get(
                i, (schedule[i][0], None, None, "cancelled", None))
            w.writerow([i, t] + ["" if x is None else x for x in (s, d)]
                       + [st, "" if mono is None else mono])
    late = [r[1] - r[0] for r in results.values() if r[1] is not None]
    late.sort()
    if late:
        print(f"client: done in {time.monotonic() - wall0:.1f} s; send lateness "
              f"p50 {late[len(late) // 2]} us, p99 {late[len(late) * 99 // 100]} us, "
              f"max {late[-1]} us", file=sys.stderr)
    bad = sum(1 for r in results.values() if not r[3].isdigit())
    if bad or len(results) != len(schedule):
        print(f"client: {bad} requests without an HTTP status", file=sys.stderr)
        sys.exit(1)
