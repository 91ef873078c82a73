#!/usr/bin/env python3
"""Runs a command for each of several values in turn, round after round,
and prints each one's CPU-seconds (user + system of the process and its
children) and wall-clock seconds: lowest, highest and median. The
README's before/after numbers from the later session of 2026-12-02
were measured this way: binaries run in turn on a machine whose speed
moves, so that each round compares them at the same moment. A round
runs the values in the order given and the next in the reverse order,
so that none is always run first or always after the same one (run in
the same order every round, a binary against its own copy measured
1 to 1.5 % apart, 2026-12-06: the second run of a pair gained).

    python3 benches/in_turn.py ROUNDS 'COMMAND with {}' VALUE...   (ROUNDS >= 1, each VALUE once)

{} in the command is replaced by each value, e.g. two binaries:

    RAYON_NUM_THREADS=1 python3 benches/in_turn.py 5 \\
      '{} run benches/log.toml --quiet --no-plots --no-html --out /tmp/log' \\
      /tmp/before/ratesim target/release/ratesim

With two values or more, it also prints, for each value but the last,
its wall-clock time divided by the last's in the same round: lowest,
highest, median, and in how many rounds it was below 0.5 (a replay
against the Python floor, last: more than twice as fast). Beside the
median, its 95 % range: the middle 95 % of the medians of 2 000
resamples of the rounds (a bootstrap, from a fixed seed). Where the
range spans 0.5, or 1 for two binaries, the rounds did not separate
the two. With three rounds or fewer it is only the lowest and highest
ratio, and with few more it comes out too narrow (phase_times.py,
three rounds of a binary against its own copy: its deciding phase
0.786–0.947): take 20 or more.

A command that fails stops the measurement; so does a wrong call (exit
status 2 for both).
"""

import random
import resource
import statistics
import subprocess
import sys
import time


def cpu_seconds():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def median_range(ratios):
    """The middle 95 % of the medians of 2 000 resamples of `ratios`
    (with replacement), from a fixed seed: 50 of them lie below it, 50
    above."""
    rng = random.Random(0)
    n = len(ratios)
    medians = sorted(statistics.median(rng.choices(ratios, k=n)) for _ in range(2000))
    return medians[50], medians[1949]


def main():
    ok = len(sys.argv) >= 4 and sys.argv[1].isdigit() and int(sys.argv[1]) >= 1
    # (Each value's times are kept by the value: the same one twice would mix.)
    if not ok or "{}" not in sys.argv[2] or len(set(sys.argv[3:])) != len(sys.argv[3:]):
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    rounds, command, values = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
    times = {v: [] for v in values}
    walls = {v: [] for v in values}
    for k in range(rounds):
        for v in values if k % 2 == 0 else values[::-1]:
            start, wall = cpu_seconds(), time.perf_counter()
            done = subprocess.run(
                command.replace("{}", v),
                shell=True,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            if done.returncode != 0:
                print(f"{command.replace('{}', v)}: exit status {done.returncode}", file=sys.stderr)
                sys.exit(2)
            walls[v].append(time.perf_counter() - wall)
            times[v].append(cpu_seconds() - start)
    for v in values:
        t, w = sorted(times[v]), sorted(walls[v])
        print(f"{v}: {t[0]:.3f}–{t[-1]:.3f} CPU-s (median {statistics.median(t):.3f}) in {rounds} rounds")
        print(f"{' ' * len(v)}  {w[0]:.3f}–{w[-1]:.3f} s wall (median {statistics.median(w):.3f})")
    last = values[-1]
    for v in values[:-1]:
        r = sorted(a / b for a, b in zip(walls[v], walls[last]))
        below = sum(x < 0.5 for x in r)
        low, high = median_range(r)
        print(
            f"{v} ÷ {last}, wall, per round: {r[0]:.3f}–{r[-1]:.3f} "
            f"(median {statistics.median(r):.3f}, 95 % range {low:.3f}–{high:.3f}), "
            f"below 0.5 in {below} of {rounds}"
        )


if __name__ == "__main__":
    main()
