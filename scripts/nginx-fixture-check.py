#!/usr/bin/env python3
"""Sanity checks for the nginx fixture (scripts/nginx-fixture.sh).

    nginx-fixture-check.py FIXTURE_DIR

Reads FIXTURE_DIR/{nginx.conf,access.log,schedule.csv} and prints a
Markdown report: per location the counts of `$limit_req_status` and of
`$status`, the `$request_time` of DELAYED lines, how far log order departs
from arrival order, and a replay of docs/semantics.md §5's nginx rule (whole ms,
thousandths of a request) over the arrivals the log implies (`$msec` minus
`$request_time`, ties ordered as docs/semantics.md §8 says), compared with nginx's
own verdicts and delays. Exits 1 if a basic expectation fails (no 429, a
DELAYED line with `$request_time` 0, a line that does not parse or join).
"""

import collections
import csv
import re
import sys
from pathlib import Path

LINE = re.compile(
    r'^(?P<msec>\d+)\.(?P<msec_frac>\d{3}) (?P<rt_s>\d+)\.(?P<rt_frac>\d{3}) '
    r'(?P<status>\d{3}) (?P<lrs>\S+) (?P<client>\S+) "(?P<request>[^"]*)" '
    r'(?P<combined>.*)$')
REQUEST = re.compile(r'^GET (?P<loc>/[a-z]+)\?seq=(?P<seq>\d+) HTTP/1\.1$')


def parse_conf(text):
    """{location: (rate_milli, burst, delay)} from our own nginx.conf."""
    zones = {}
    for m in re.finditer(r'limit_req_zone\s+\S+\s+zone=(\w+):\S+\s+rate=(\d+)r/([sm]);', text):
        n = int(m.group(2))
        zones[m.group(1)] = n * 1000 if m.group(3) == "s" else n * 1000 // 60
    locs = {}
    for m in re.finditer(r'location\s+=?\s*(/\w+)\s*\{([^}]*)\}', text):
        lr = re.search(r'limit_req\s+zone=(\w+)([^;]*);', m.group(2))
        if not lr:
            continue
        opts = lr.group(2)
        burst = int(re.search(r'burst=(\d+)', opts).group(1)) if 'burst=' in opts else 0
        if 'nodelay' in opts:
            delay = burst
        elif 'delay=' in opts:
            delay = int(re.search(r'delay=(\d+)', opts).group(1))
        else:
            delay = 0
        locs[m.group(1)] = (zones[lr.group(1)], burst, delay, lr.group(0))
    return locs


def replay(events, rate, burst, delay):
    """docs/semantics.md §5 `arithmetic = "nginx"`, cost 1. events: (m, client, idx)
    in processing order, m in whole ms. Returns {idx: (verdict, wait_ms,
    excess)}, excess being the e the rule computed (what nginx logs for a
    rejection or a delay)."""
    state = {}
    out = {}
    for m, client, idx in events:
        if client not in state:
            state[client] = [0, m]
            out[idx] = ("PASSED", 0, 0)
            continue
        excess, last = state[client]
        ms = m - last
        e = max(0, excess - rate * ms // 1000 + 1000)
        if e > 1000 * burst:
            out[idx] = ("REJECTED", None, e)
            continue
        state[client][0] = e
        if ms != 0:
            state[client][1] = m
        wait = (e - 1000 * delay) * 1000 // rate if e > 1000 * delay else 0
        out[idx] = ("DELAYED", wait, e) if wait > 0 else ("PASSED", 0, e)
    return out


RANK = {"PASSED": 0, "DELAYED": 1, "REJECTED": 2}


def replay_table(title, by_loc, locs, arrival, excess):
    """Replays each location with arrival(r) as the request's ms and prints
    how often verdicts, delays and (where nginx logged it) excess agree."""
    print(title + "\n")
    print("| location | verdicts agree | delays agree (±1 ms) | excess agrees | first disagreements |")
    print("|---|---:|---:|---:|---|")
    total = 0
    for loc in sorted(by_loc):
        rate, burst, delay, _ = locs[loc]
        rs = by_loc[loc]
        order = sorted(range(len(rs)), key=lambda i: (
            arrival(rs[i]), RANK.get(rs[i]["lrs"], 3),
            rs[i]["rt"] if rs[i]["lrs"] == "DELAYED" else 0, rs[i]["n"]))
        got = replay([(arrival(rs[i]), rs[i]["client"], i) for i in order],
                     rate, burst, delay)
        agree = dagree = ndel = eagree = nex = 0
        bad = []
        for i, r in enumerate(rs):
            v, w, e = got[i]
            if v == r["lrs"]:
                agree += 1
            else:
                bad.append(f"seq {r['seq']} ({r['client']}) nginx {r['lrs']}, rule {v}")
            if r["lrs"] == "DELAYED" and v == "DELAYED":
                ndel += 1
                if abs(r["rt"] - w) <= 1:
                    dagree += 1
                else:
                    bad.append(f"seq {r['seq']} waited {r['rt']} ms, rule {w} ms")
            if r["seq"] in excess:
                nex += 1
                eagree += excess[r["seq"]] == e
        total += len(rs) - agree
        print(f"| `{loc}` | {agree}/{len(rs)} | {dagree}/{ndel} | {eagree}/{nex} | "
              + ("; ".join(bad[:3]) or "none") + " |")
    print()
    return total


def main(d):
    d = Path(d)
    locs = parse_conf((d / "nginx.conf").read_text())
    sched = {}
    with open(d / "schedule.csv") as f:
        for r in csv.DictReader(f):
            sched[int(r["seq"])] = (int(r["time_us"]), r["client"], r["location"])
    lines = (d / "access.log").read_text().splitlines()
    recs = []
    problems = []
    for n, text in enumerate(lines, 1):
        m = LINE.match(text)
        rq = REQUEST.match(m.group("request")) if m else None
        if not m or not rq:
            problems.append(f"access.log line {n} does not parse: {text!r}")
            continue
        seq = int(rq.group("seq"))
        end_ms = int(m.group("msec")) * 1000 + int(m.group("msec_frac"))
        rt_ms = int(m.group("rt_s")) * 1000 + int(m.group("rt_frac"))
        recs.append(dict(n=n, seq=seq, loc=rq.group("loc"), client=m.group("client"),
                         status=m.group("status"), lrs=m.group("lrs"),
                         end=end_ms, rt=rt_ms, arr=end_ms - rt_ms))
        s = sched.get(seq)
        if s is None or s[1] != m.group("client") or s[2] != rq.group("loc"):
            problems.append(f"access.log line {n}: seq {seq} does not match schedule.csv")
    seen = collections.Counter(r["seq"] for r in recs)
    missing = [s for s in sched if s not in seen]
    dup = [s for s, c in seen.items() if c > 1]
    if missing or dup:
        problems.append(f"{len(missing)} scheduled requests not logged, {len(dup)} logged twice")

    t0 = min(r["arr"] for r in recs)
    print(f"{len(lines)} log lines, {len(sched)} scheduled requests; "
          f"first arrival {t0 / 1000:.3f} (Unix s), last line logged "
          f"{(max(r['end'] for r in recs) - t0) / 1000:.3f} s after it.\n")

    print("| location | limit_req | requests | PASSED | DELAYED | REJECTED | other `$limit_req_status` | `$status` |")
    print("|---|---|---:|---:|---:|---:|---|---|")
    by_loc = collections.defaultdict(list)
    for r in recs:
        by_loc[r["loc"]].append(r)
    for loc in sorted(by_loc):
        rs = by_loc[loc]
        c = collections.Counter(r["lrs"] for r in rs)
        st = collections.Counter(r["status"] for r in rs)
        other = ", ".join(f"`{k}` {v}" for k, v in sorted(c.items())
                          if k not in ("PASSED", "DELAYED", "REJECTED")) or "none"
        print(f"| `{loc}` | `{locs[loc][3]}` | {len(rs)} | {c['PASSED']} | {c['DELAYED']} | "
              f"{c['REJECTED']} | {other} | "
              + ", ".join(f"{k}: {v}" for k, v in sorted(st.items())) + " |")
        for r in rs:
            want = {"PASSED": "200", "DELAYED": "200", "REJECTED": "429"}.get(r["lrs"])
            if want and r["status"] != want:
                problems.append(f"line {r['n']}: {r['lrs']} with status {r['status']}")
    print()

    print("Per client and location (PASSED/DELAYED/REJECTED):\n")
    print("| location | " + " | ".join(sorted({r['client'] for r in recs})) + " |")
    clients = sorted({r['client'] for r in recs})
    print("|---|" + "---|" * len(clients))
    for loc in sorted(by_loc):
        cells = []
        for cl in clients:
            c = collections.Counter(r["lrs"] for r in by_loc[loc] if r["client"] == cl)
            cells.append(f"{c['PASSED']}/{c['DELAYED']}/{c['REJECTED']}" if c else "–")
        print(f"| `{loc}` | " + " | ".join(cells) + " |")
    print()

    if not any(r["status"] == "429" for r in recs):
        problems.append("no 429 at all")
    delayed = [r for r in recs if r["lrs"] == "DELAYED"]
    zero = [r for r in delayed if r["rt"] == 0]
    if zero:
        problems.append(f"{len(zero)} DELAYED lines with $request_time 0")
    nondelayed_rt = collections.Counter(r["rt"] for r in recs if r["lrs"] != "DELAYED")
    print(f"`$request_time` of DELAYED lines: {len(delayed)} lines, min "
          f"{min((r['rt'] for r in delayed), default=0)} ms, max "
          f"{max((r['rt'] for r in delayed), default=0)} ms; of all other lines: "
          + ", ".join(f"{k} ms ×{v}" for k, v in sorted(nondelayed_rt.items())) + ".\n")

    # Log order vs arrival order.
    back = 0
    worst = 0
    latest = None
    for r in recs:
        if latest is not None and r["arr"] < latest:
            back += 1
            worst = max(worst, latest - r["arr"])
        latest = r["arr"] if latest is None else max(latest, r["arr"])
    print(f"Log order: {back} lines arrived before an earlier-logged line "
          f"(at most {worst} ms before); lines are written when the response "
          f"is sent, so a DELAYED line comes after later arrivals.\n")

    # nginx's own excess (error log) and the client's monotonic send times.
    excess = {}
    if (d / "limit_req_excess.csv").exists():
        with open(d / "limit_req_excess.csv") as f:
            for r in csv.DictReader(f):
                excess[int(r["seq"])] = int(r["excess_milli"])
    mono = {}
    if (d / "client.csv").exists():
        with open(d / "client.csv") as f:
            for r in csv.DictReader(f):
                if r.get("sent_mono_ns"):
                    mono[int(r["seq"])] = int(r["sent_mono_ns"]) // 1_000_000

    # DELAYED: does $request_time equal the wait nginx's own excess implies?
    offs = collections.Counter()
    for r in delayed:
        rate, _, delay, _ = locs[r["loc"]]
        if r["seq"] in excess:
            w = (excess[r["seq"]] - 1000 * delay) * 1000 // rate
            offs[r["rt"] - w] += 1
    if offs:
        print("DELAYED lines: `$request_time` minus the wait nginx's logged excess implies "
              "(⌊(excess − 1000·delay)·1000 / rate⌋ ms): "
              + ", ".join(f"{k:+d} ms ×{v}" for k, v in sorted(offs.items())) + ".\n")

    replay_table(
        "Replay of docs/semantics.md §5 (`arithmetic = \"nginx\"`) with arrival = `$msec` − "
        "`$request_time` (the log's wall clock; equal arrivals of a key: passed, delayed by "
        "shortest delay, rejected, then log order); *excess agrees* compares the rule's "
        "excess with nginx's logged one for every REJECTED/DELAYED line:",
        by_loc, locs, lambda r: r["arr"], excess)
    if mono and all(r["seq"] in mono for r in recs):
        replay_table(
            "The same replay with arrival = ⌊client CLOCK_MONOTONIC at send / 1 ms⌋ "
            "(`client.csv` `sent_mono_ns`; nginx's limit_req reads its cached monotonic "
            "ms, not the wall clock the log prints):",
            by_loc, locs, lambda r: mono[r["seq"]], excess)

    for p in problems[:20]:
        print(f"PROBLEM: {p}")
    return 1 if problems else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__.split("\n\n")[1])
    sys.exit(main(sys.argv[1]))
