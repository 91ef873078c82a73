#!/usr/bin/env python3
"""`ratesim export nginx-lua` on a real nginx and a real Redis.

    scripts/nginx-lua-check.py path/to/ratesim

1. `nginx -t` of the fragment of every algorithm that has a Redis script
   (both fixed-window aligns, and a local_fallback whose fallback runs
   another script), each in a location of one configuration.
2. A live run: redis-server and nginx (Debian's nginx with
   libnginx-mod-http-lua) on free loopback ports, each in a temporary
   directory of its own (nginx -p PREFIX, its own nginx.conf, pid file,
   error log). Eight locations, one per limiter of one scenario and so one
   or more per Redis script — a token bucket (fail_closed), a leaky bucket
   that delays (fail_open), a GCRA (local_fallback), a fixed window of each
   align, a sliding log, a floored sliding counter and a smooth_bursty
   bucket — each keyed by the X-Client header. Clients send
   seeded schedules, each client's requests one after another (so a key's
   requests reach nginx in the order they were sent). nginx logs `$msec
   $request_time $status` and the RateLimit, RateLimit-Policy and
   Retry-After fields it answered with.
3. `ratesim run` replays those access logs (arrival = $msec -
   $request_time, docs/semantics.md §8) with `--decisions=headers`; every
   request's status (429 = rejected, else 200) and header fields must equal
   ratesim's decision for it (`ratelimit`, `ratelimit_policy`,
   `retry_after_s`); every limiter must admit and reject (the leaky bucket:
   delay). Redis counts the epoch-aligned fixed window's and the sliding
   counter's windows from Unix time 0, a replay from the log's first
   arrival: their logs get an anchor line first, on the whole second
   before every request, which is not compared.
4. Redis stopped mid-run: SIGSTOP (connected, but no answer: the timeout),
   then killed (connection refused), on the first three locations.
   fail_closed answers 503, fail_open 200 with no RateLimit field,
   local_fallback decides by the fallback limiter on nginx's shared dict
   (passes, then 429 past its capacity).
5. Stops nginx and Redis by pid; prints one summary line.

Exit 0 on success, 1 on a disagreement. Without nginx, its Lua module or
redis-server it prints SKIPPED and exits 0, unless RATESIM_REQUIRE_NGINX_LUA
is set (as .ci/run sets it whenever they are installed): then it fails.
"""

import csv
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

MODULES = "/usr/lib/nginx/modules"
LOG_FORMAT = ('$msec $request_time $status "$http_x_client" "$request" '
              '"$sent_http_ratelimit" "$sent_http_ratelimit_policy" "$sent_http_retry_after"')
LINE = re.compile(r'^(\d+)\.(\d{3}) (\d+)\.(\d{3}) (\d+) "([^"]*)" "([^"]*)" '
                  r'"((?:[^"\\]|\\.)*)" "((?:[^"\\]|\\.)*)" "([^"]*)"$')

SCENARIO = """name = "nginx-lua-check"

[defaults]
limit = 5
window = "1s"

[deployment]
scope = "global"
timeout = "80ms"

[[limiter]]
name = "tb"
algorithm = "token_bucket"
capacity = 4
rate = "5/1s"
traffic = ["tb"]
deployment = {{ on_store_failure = "fail_closed" }}

[[limiter]]
name = "shaper"
algorithm = "leaky_bucket"
rate = "8/1s"
queue = 4
delay = 2
traffic = ["shaper"]
deployment = {{ on_store_failure = "fail_open" }}

[[limiter]]
name = "gcra"
algorithm = "gcra"
burst = 3
rate = "4/1s"
traffic = ["gcra"]
deployment = {{ on_store_failure = "local_fallback", fallback = {{ algorithm = "token_bucket", capacity = 2, rate = "1/1s" }} }}

[[limiter]]
name = "fw"
algorithm = "fixed_window"
traffic = ["fw"]
deployment = {{ on_store_failure = "fail_open" }}

[[limiter]]
name = "fwhit"
algorithm = "fixed_window"
align = "first_hit"
count_rejected = true
traffic = ["fwhit"]
deployment = {{ on_store_failure = "fail_open" }}

[[limiter]]
name = "slog"
algorithm = "sliding_log"
boundary = "inclusive"
traffic = ["slog"]
deployment = {{ on_store_failure = "fail_open" }}

[[limiter]]
name = "sctr"
algorithm = "sliding_counter"
weight = "floor"
traffic = ["sctr"]
deployment = {{ on_store_failure = "fail_open" }}

[[limiter]]
name = "sb"
algorithm = "smooth_bursty"
capacity = 3
traffic = ["sb"]
deployment = {{ on_store_failure = "fail_open" }}
{traffic}"""

# The limiters whose windows Redis counts from Unix time 0 and a replay
# from the log's first arrival (README, "From simulation to production"):
# their logs start with an anchor line on a whole second, before every
# request, so that the two count the same windows. The anchor is not
# compared.
ALIGNED = ["fw", "sctr"]
ANCHOR = "anchor"

TRAFFIC = """
[[traffic]]
name = "{name}"
pattern = "trace"
format = "nginx"
path = "{name}.log"
log_format = '{fmt}'
client = "$http_x_client"
limit_req_status = 429
"""

# One limiter per script for `nginx -t` (and a fallback of another script).
ALL = """name = "every-script"
duration = "1s"
[defaults]
limit = 5
window = "1s"
[[limiter]]
name = "token_bucket"
algorithm = "token_bucket"
capacity = 5
[[limiter]]
name = "gcra"
algorithm = "gcra"
burst = 3
key_by = "ip"
[[limiter]]
name = "leaky_bucket"
algorithm = "leaky_bucket"
queue = 4
delay = 1
key_by = "global"
[[limiter]]
name = "fixed_epoch"
algorithm = "fixed_window"
[[limiter]]
name = "fixed_first_hit"
algorithm = "fixed_window"
align = "first_hit"
count_rejected = true
[[limiter]]
name = "sliding_log"
algorithm = "sliding_log"
boundary = "inclusive"
[[limiter]]
name = "sliding_counter"
algorithm = "sliding_counter"
weight = "floor"
[[limiter]]
name = "smooth_bursty"
algorithm = "smooth_bursty"
capacity = 3
[[limiter]]
name = "fallback"
algorithm = "sliding_counter"
deployment = { scope = "global", timeout = "20ms", on_store_failure = "local_fallback", fallback = { algorithm = "sliding_log", limit = 2 } }
[[traffic]]
pattern = "steady"
clients = 2
rate = "1/1s"
"""
ALL_NAMES = ["token_bucket", "gcra", "leaky_bucket", "fixed_epoch", "fixed_first_hit",
             "sliding_log", "sliding_counter", "smooth_bursty", "fallback"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def skip(why):
    if os.environ.get("RATESIM_REQUIRE_NGINX_LUA"):
        sys.exit(f"nginx-lua check: {why}, and RATESIM_REQUIRE_NGINX_LUA is set")
    print(f"nginx-lua check: SKIPPED ({why})")
    sys.exit(0)


def export(ratesim, cwd, scenario, limiter, redis, key=()):
    out = subprocess.run([ratesim, "export", "nginx-lua", scenario, "--limiter", limiter,
                          "--redis", redis, *key], cwd=cwd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"export nginx-lua {limiter}: {out.stderr}")
    return out.stdout


def split(fragment):
    """The fragment's http-block lines and its location-block text."""
    http, location, part = [], [], None
    for line in fragment.splitlines(keepends=True):
        if line.startswith("# Part ") and "(http block)" in line:
            part = http
        elif line.startswith("# Part ") and "(location block)" in line:
            part = location
        elif part is not None:
            part.append(line)
    return [l.strip() for l in http if l.strip()], "".join(location)


def write_conf(prefix, port, fragments, logs):
    """nginx.conf in prefix: one location /NAME/ per fragment."""
    http_lines, locations = [], []
    for name, fragment in fragments:
        http, location = split(fragment)
        http_lines += [l for l in http if l not in http_lines]
        log = f"access_log {prefix}/{name}.log ratesim;" if logs else "access_log off;"
        locations.append(f"        location /{name}/ {{\n            {log}\n"
                         f"            alias {prefix}/html/;\n{location}        }}\n")
    os.makedirs(f"{prefix}/html", exist_ok=True)
    with open(f"{prefix}/html/x", "w") as f:
        f.write("ok\n")
    conf = f"""load_module {MODULES}/ndk_http_module.so;
load_module {MODULES}/ngx_http_lua_module.so;
worker_processes 1;
daemon off;
pid {prefix}/nginx.pid;
error_log {prefix}/error.log warn;
events {{ worker_connections 512; }}
http {{
    client_body_temp_path {prefix}/body;
    proxy_temp_path {prefix}/proxy;
    fastcgi_temp_path {prefix}/fastcgi;
    uwsgi_temp_path {prefix}/uwsgi;
    scgi_temp_path {prefix}/scgi;
    log_format ratesim '{LOG_FORMAT}';
    access_log off;
    {chr(10).join('    ' + l for l in http_lines).strip()}
    server {{
        listen 127.0.0.1:{port};
{''.join(locations)}    }}
}}
"""
    with open(f"{prefix}/nginx.conf", "w") as f:
        f.write(conf)
    return f"{prefix}/nginx.conf"


def get(port, path, client):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", headers={"X-Client": client})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, dict(r.headers)
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers)


def wait_for(check, what, seconds=10):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if check():
            return
        time.sleep(0.05)
    sys.exit(f"nginx-lua check: {what} did not start")


def ping(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
            s.sendall(b"PING\r\n")
            return s.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def read_log(path):
    """(arrival ms, client, status, ratelimit, policy, retry-after) per line."""
    rows = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            m = LINE.match(line.rstrip("\n"))
            if not m:
                sys.exit(f"{path}:{n}: unexpected line {line!r}")
            msec = int(m[1]) * 1000 + int(m[2])
            took = int(m[3]) * 1000 + int(m[4])
            # nginx logs an empty value as "-", and escapes '"' as \x22.
            dash = lambda v: "" if v == "-" else re.sub(
                r"\\x([0-9A-Fa-f]{2})", lambda h: chr(int(h[1], 16)), v)
            rows.append((msec - took, m[6], int(m[5]), dash(m[8]), dash(m[9]), dash(m[10]), took))
    return rows


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    ratesim = os.path.abspath(sys.argv[1])
    nginx = os.environ.get("RATESIM_NGINX") or shutil.which("nginx") or "/usr/sbin/nginx"
    if not os.access(nginx, os.X_OK):
        skip("no nginx")
    if not os.path.exists(f"{MODULES}/ngx_http_lua_module.so"):
        skip("no libnginx-mod-http-lua")
    redis_server = shutil.which("redis-server")
    if not redis_server:
        skip("no redis-server")
    started = time.monotonic()
    tmp = tempfile.mkdtemp(prefix="ratesim-nginx-lua-")
    os.chmod(tmp, 0o755)  # nginx's workers run as another user when it is root
    procs = []
    try:
        # 1. nginx -t of every script's fragment.
        with open(f"{tmp}/all.toml", "w") as f:
            f.write(ALL)
        os.makedirs(f"{tmp}/t")
        # gcra keys by address ($binary_remote_addr), leaky_bucket is one
        # key; the others read a header.
        key = lambda n: () if n in ("gcra", "leaky_bucket") else ("--key", "$http_x_client")
        fragments = [(n, export(ratesim, tmp, "all.toml", n, "127.0.0.1:6379", key(n)))
                     for n in ALL_NAMES]
        conf = write_conf(f"{tmp}/t", free_port(), fragments, logs=False)
        t = subprocess.run([nginx, "-t", "-p", f"{tmp}/t", "-c", conf], capture_output=True, text=True)
        if t.returncode != 0:
            sys.exit(f"nginx -t of the exported fragments failed:\n{t.stderr}")

        # 2. The live run.
        rport, nport = free_port(), free_port()
        os.makedirs(f"{tmp}/redis")
        redis = subprocess.Popen([redis_server, "--port", str(rport), "--bind", "127.0.0.1",
                                  "--save", "", "--appendonly", "no", "--dir", f"{tmp}/redis"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(redis)
        wait_for(lambda: ping(rport), "redis-server")
        # One location per Redis script (fixed_window in both aligns); the
        # outages are checked on the first three.
        names = ["tb", "shaper", "gcra", "fw", "fwhit", "slog", "sctr", "sb"]
        traffic = "".join(TRAFFIC.format(name=n, fmt=LOG_FORMAT) for n in names)
        with open(f"{tmp}/s.toml", "w") as f:
            f.write(SCENARIO.format(traffic=traffic))
        for n in names:  # the logs are read when the scenario is loaded
            with open(f"{tmp}/{n}.log", "w") as f:
                f.write('1700000000.000 0.000 200 "x" "GET /x HTTP/1.1" "-" "-" "-"\n')
        fragments = [(n, export(ratesim, tmp, "s.toml", n, f"127.0.0.1:{rport}")) for n in names]
        prefix = f"{tmp}/nginx"
        conf = write_conf(prefix, nport, fragments, logs=True)
        ngx = subprocess.Popen([nginx, "-p", prefix, "-c", conf],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(ngx)
        wait_for(lambda: os.path.exists(f"{prefix}/nginx.pid") and get(nport, "/none", "-")[0] == 404,
                 "nginx")

        rng = random.Random(28)
        gaps = [0, 0, 5, 20, 60, 150, 400]
        schedules = [(n, f"{n}-c{c}", [rng.choice(gaps) / 1000 for _ in range(30)])
                     for n in names for c in range(3)]
        answers = {}

        def client(name, who, waits):
            got = []
            for w in waits:
                time.sleep(w)
                got.append(get(nport, f"/{name}/x", who))
            answers[who] = got

        threads = [threading.Thread(target=client, args=s) for s in schedules]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        sent = sum(len(s[2]) for s in schedules)
        for n in names:
            shutil.copy(f"{prefix}/{n}.log", f"{tmp}/{n}.log")
        for n in ALIGNED:
            with open(f"{tmp}/{n}.log") as f:
                logged = f.read()
            second = min(r[0] for r in read_log(f"{tmp}/{n}.log")) // 1000
            with open(f"{tmp}/{n}.log", "w") as f:
                f.write(f'{second}.000 0.000 200 "{ANCHOR}" "GET /x HTTP/1.1" "-" "-" "-"\n')
                f.write(logged)

        # 3. ratesim on the same arrivals.
        out = subprocess.run([ratesim, "run", "s.toml", "--decisions=headers", "--no-plots",
                              "--quiet", "--out", "run"], cwd=tmp, capture_output=True, text=True)
        if out.returncode != 0:
            sys.exit(f"ratesim run: {out.stderr}")
        with open(f"{tmp}/run/decisions.csv") as f:
            decisions = list(csv.DictReader(f))
        failures, agree, delayed = [], {"status": 0, "RateLimit": 0, "RateLimit-Policy": 0, "Retry-After": 0}, 0
        outcomes, by_limiter = {}, {}
        for n in names:
            lines = [l for l in read_log(f"{tmp}/{n}.log") if l[1] != ANCHOR]
            mine = [d for d in decisions if d["limiter"] == n and d["client"] != ANCHOR]
            if len(lines) != len(mine):
                failures.append(f"{n}: nginx logged {len(lines)} requests, ratesim decided {len(mine)}")
                continue
            by_client = {}
            for i, l in enumerate(lines):
                by_client.setdefault(l[1], []).append((l[0], i, l))
            ours = {}
            for d in mine:
                ours.setdefault(d["client"], []).append(d)
            for who, got in by_client.items():
                got.sort(key=lambda x: (x[0], x[1]))
                want = ours.get(who, [])
                if len(got) != len(want):
                    failures.append(f"{n} {who}: {len(got)} lines, {len(want)} decisions")
                    continue
                for k, ((_, _, (arrival, _, status, rl, policy, retry, took)), d) in enumerate(zip(got, want)):
                    outcomes[d["outcome"]] = outcomes.get(d["outcome"], 0) + 1
                    by_limiter.setdefault(n, set()).add(d["outcome"])
                    checks = {
                        "status": (status, 429 if d["outcome"] == "rejected" else 200),
                        "RateLimit": (rl, d["ratelimit"]),
                        "RateLimit-Policy": (policy, d["ratelimit_policy"]),
                        "Retry-After": (retry, d["retry_after_s"]),
                    }
                    for what, (a, b) in checks.items():
                        if a == b:
                            agree[what] += 1
                        else:
                            failures.append(f"{n} {who} request {k} (arrival {arrival} ms): "
                                            f"{what} nginx {a!r}, ratesim {b!r}")
                    if d["outcome"] == "delayed":
                        delayed += 1
                        if took * 1_000_000 < int(d["delay_ns"]) - 1_000_000:
                            failures.append(f"{n} {who} request {k}: delayed {d['delay_ns']} ns, "
                                            f"nginx took {took} ms")
        total = sum(len([l for l in read_log(f"{tmp}/{n}.log") if l[1] != ANCHOR]) for n in names)
        if total != sent:
            failures.append(f"the clients sent {sent} requests, nginx logged {total}")
        for want in ["admitted", "delayed", "rejected"]:
            if not outcomes.get(want):
                failures.append(f"no request was {want}: the run shows too little")
        for n in names:
            # The shaper must delay; every other limiter pass and reject.
            seen, want = by_limiter.get(n, set()), {"admitted", "rejected"}
            if n == "shaper":
                want = {"delayed"}
            if not want <= seen:
                failures.append(f"{n}: outcomes {sorted(seen)}, not all of {sorted(want)}")

        # 4. Redis stops answering, then is gone.
        outage = {}
        for how in ["stopped", "killed"]:
            if how == "stopped":
                os.kill(redis.pid, signal.SIGSTOP)
            else:
                os.kill(redis.pid, signal.SIGCONT)
                redis.kill()
                redis.wait()
            for n in names[:3]:
                got = [get(nport, f"/{n}/x", f"outage-{how}") for _ in range(4)]
                outage[(n, how)] = got
        for how in ["stopped", "killed"]:
            for status, headers in outage[("tb", how)]:
                if status != 503 or "RateLimit" in headers or "Retry-After" in headers:
                    failures.append(f"fail_closed, Redis {how}: {status} {headers}")
            for status, headers in outage[("shaper", how)]:
                if status != 200 or "RateLimit" in headers or "RateLimit-Policy" not in headers:
                    failures.append(f"fail_open, Redis {how}: {status} {headers}")
        # The fallback: a token bucket of capacity 2 at 1/s on this nginx's
        # shared dict; each outage has a key of its own: 2 pass (r = 1,
        # then 0), then 429 with its fields, within the second.
        statuses = []
        for how in ["stopped", "killed"]:
            fb = outage[("gcra", how)]
            got = [s for s, _ in fb]
            statuses += got
            if got[:2] != [200, 200] or 429 not in got[2:]:
                failures.append(f"local_fallback, Redis {how}: statuses {got}")
            for (status, headers), r in zip(fb, ["1", "0"]):
                if not headers.get("RateLimit", "").startswith(f'"gcra";r={r};t='):
                    failures.append(f"local_fallback, Redis {how}: RateLimit {headers}")
            for status, headers in fb:
                if status == 429 and not headers.get("Retry-After"):
                    failures.append(f"local_fallback: a 429 without Retry-After: {headers}")

        for f in failures[:20]:
            print("  " + f, file=sys.stderr)
        summary = (f"nginx-lua check: nginx -t of {len(ALL_NAMES)} fragments ok; {total} requests "
                   f"through nginx + Redis ({outcomes.get('admitted', 0)} admitted, {delayed} delayed, "
                   f"{outcomes.get('rejected', 0)} rejected): status {agree['status']}/{total}, "
                   f"RateLimit {agree['RateLimit']}/{total}, RateLimit-Policy "
                   f"{agree['RateLimit-Policy']}/{total}, Retry-After {agree['Retry-After']}/{total} "
                   f"agree with ratesim; Redis stopped and killed: fail_closed 503, fail_open 200, "
                   f"local_fallback {statuses}; {time.monotonic() - started:.1f} s")
        print(summary if not failures else f"FAILED ({len(failures)}): {summary}")
        return 1 if failures else 0
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                try:
                    os.kill(p.pid, signal.SIGCONT)
                except OSError:
                    pass
                p.terminate()
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        if os.environ.get("RATESIM_KEEP"):
            print(f"kept {tmp}", file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
