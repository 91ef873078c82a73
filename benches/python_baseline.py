#!/usr/bin/env python3
"""A plain-Python heapq simulator of the speed workload, for comparison.

The workload of benches/speed.toml: 100 000 Poisson clients at 1 request
per second each for 10 s, through seven limiters at 5 per 1 s, one thread.
Each arrival is generated once and decided by all seven limiters, as
ratesim's engine does — the fairest simple program, not one that
regenerates the arrivals for every limiter. Integer-ns times and integer
limiter arithmetic (the rules of docs/semantics.md §2 at rate 5/1s, where every
interval is a whole number of ns); counts outcomes but computes no
retry-after, time series or percentiles, so it does less per decision than
ratesim. Standard library only:

    python3 benches/python_baseline.py [--clients N] [--seconds S]

prints each limiter's outcomes and the decisions per CPU-second
(time.process_time) of the whole run.
"""

import argparse
import heapq
import random
import time
from collections import deque

W = 1_000_000_000  # window, ns
L = 5  # limit per window
T = W // L  # emission interval, ns


def token_bucket():
    state = {}

    def decide(key, now):
        bal, last = state.get(key, (L * W, now))
        bal = min(L * W, bal + (now - last) * L)
        if bal >= W:
            state[key] = (bal - W, now)
            return 0
        state[key] = (bal, now)
        return 2

    return decide


def interval_bucket():
    state = {}

    def decide(key, now):
        tokens, fills = state.get(key, (L, 0))
        k = now // T
        tokens = min(L, tokens + (k - fills))
        if tokens >= 1:
            state[key] = (tokens - 1, k)
            return 0
        state[key] = (tokens, k)
        return 2

    return decide


def gcra():
    tat = {}
    tau = (L - 1) * T

    def decide(key, now):
        t = tat.get(key, 0)
        if now >= t - tau:
            tat[key] = max(t, now) + T
            return 0
        return 2

    return decide


def leaky_bucket():
    state = {}

    def decide(key, now):
        s = state.get(key)
        if s is None:
            s = state[key] = [0, deque()]
        waiting = s[1]
        while waiting and waiting[0] <= now:
            waiting.popleft()
        release = max(now, s[0])
        if release == now:
            s[0] = release + T
            return 0
        if len(waiting) >= L:
            return 2
        waiting.append(release)
        s[0] = release + T
        return 1

    return decide


def fixed_window():
    state = {}

    def decide(key, now):
        k = now // W
        win, count = state.get(key, (k, 0))
        if win != k:
            win, count = k, 0
        if count + 1 <= L:
            state[key] = (win, count + 1)
            return 0
        state[key] = (win, count)
        return 2

    return decide


def sliding_log():
    logs = {}

    def decide(key, now):
        log = logs.get(key)
        if log is None:
            log = logs[key] = deque()
        while log and log[0] <= now - W:
            log.popleft()
        if len(log) + 1 <= L:
            log.append(now)
            return 0
        return 2

    return decide


def sliding_counter():
    state = {}

    def decide(key, now):
        k, e = divmod(now, W)
        win, prev, cur = state.get(key, (k, 0, 0))
        if win != k:
            prev, cur = (cur if win == k - 1 else 0), 0
            win = k
        if prev * (W - e) + (cur + 1) * W <= L * W:
            state[key] = (win, prev, cur + 1)
            return 0
        state[key] = (win, prev, cur)
        return 2

    return decide


LIMITERS = [
    ("token_bucket", token_bucket),
    ("interval_bucket", interval_bucket),
    ("gcra", gcra),
    ("leaky_bucket", leaky_bucket),
    ("fixed_window", fixed_window),
    ("sliding_log", sliding_log),
    ("sliding_counter", sliding_counter),
]


def simulate(clients, end, seed):
    """Every limiter's run at once: one heap of each client's next
    arrival, each arrival generated once and decided by every limiter in
    turn, as ratesim's engine hands each arrival to every limiter's run."""
    deciders = [make() for _, make in LIMITERS]
    outcomes = [[0, 0, 0] for _ in LIMITERS]
    rngs = [random.Random(seed * 1_000_003 + c) for c in range(clients)]
    heap = []
    for c, rng in enumerate(rngs):
        t = round(rng.expovariate(1.0) * W)
        if t < end:
            heap.append((t, c))
    heapq.heapify(heap)
    pairs = list(zip(deciders, outcomes))
    heappop, heapreplace = heapq.heappop, heapq.heapreplace
    while heap:
        now, c = heap[0]
        for decide, counts in pairs:
            counts[decide(c, now)] += 1
        # A client has one pending arrival: (time, client) orders them as
        # one queue by time, ties by client.
        t = now + round(rngs[c].expovariate(1.0) * W)
        if t < end:
            heapreplace(heap, (t, c))
        else:
            heappop(heap)
    return outcomes


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--clients", type=int, default=100_000)
    p.add_argument("--seconds", type=int, default=10)
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args()
    end = a.seconds * W
    start = time.process_time()
    outcomes = simulate(a.clients, end, a.seed)
    cpu = time.process_time() - start
    total = 0
    for (name, _), (admitted, delayed, rejected) in zip(LIMITERS, outcomes):
        n = admitted + delayed + rejected
        total += n
        print(f"{name:<16} {n:>10} decisions ({admitted} admitted, {delayed} delayed, "
              f"{rejected} rejected)")
    print(f"python heapq: {total} decisions in {cpu:.2f} CPU-s: "
          f"{total / cpu / 1e6:.3f} M decisions per CPU-second")


if __name__ == "__main__":
    main()
