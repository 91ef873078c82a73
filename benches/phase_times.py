#!/usr/bin/env python3
"""How long each phase of a replay took, for binaries run in turn: the
load (from the process's start to the exit of its last "log parser"
thread), the time between (from then to the start of the "run decider"
thread: the lines still to put in order, the names, the run set up)
and the decisions (the "run decider" thread's life), read from
the times strace gives the process's start and those threads' naming
(a thread names itself as it starts) and exit, with the wall-clock time
of the whole run under strace beside them.

    python3 benches/phase_times.py ROUNDS BINARY,BINARY... ARGS...   (ROUNDS >= 1)

e.g. the README's fourteenth entry in "Replaying a log":

    python3 benches/phase_times.py 40 /tmp/before/ratesim,target/release/ratesim \\
      run benches/log.toml --quiet --no-plots --no-html --out /tmp/log

Each round runs every binary once, in turn (the order reversed every
other round). Each phase is printed as each binary's median over the
rounds (ms) and, in brackets, the median of its ratios to the first
binary's in the same round: on a machine whose speed moves between
rounds the two can differ by several per cent, and the ratio, which
pairs runs made at the same moment, is the one to compare by. After
it, for every binary but the first, the median ratio's 95 % range
(in_turn.py's bootstrap): where it spans 1, the rounds did not
separate the two. strace
stops a thread only at the three calls it traces (with --seccomp-bpf),
so the phases take about as long as without it. A phase's time does
not carry the noise of the other phases, as the whole run's does:
compare a change to one phase by that phase. It needs a run with
threads to load and to decide on (a replay on two cores or more, one
run): it stops with exit status 2 on any other, a command that fails,
a missing strace or a wrong call.
"""

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from in_turn import median_range

PHASES = ("load", "between", "decide", "wall")


def fail(message):
    print(f"phase_times.py: {message}", file=sys.stderr)
    sys.exit(2)


def phases(binary, args, trace):
    """One run of `binary`: its phases in ms."""
    start = time.perf_counter()
    done = subprocess.run(
        ["strace", "--seccomp-bpf", "-f", "-ttt", "-e", "trace=execve,prctl,exit", "-o", trace]
        + [binary]
        + args,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    wall = time.perf_counter() - start
    if done.returncode != 0:
        said = done.stderr.strip().splitlines()[-3:]
        fail(f"{binary} exited with {done.returncode}: " + " / ".join(said))
    began, named, exits = None, {}, {}
    with open(trace) as f:
        for line in f:
            pid, at, call = line.split(maxsplit=2)
            if call.startswith("execve(") and began is None:
                began = float(at)
            elif call.startswith('prctl(PR_SET_NAME, "'):
                named.setdefault(call.split('"')[1], []).append((pid, float(at)))
            elif call.startswith("exit("):
                exits[pid] = float(at)
    parsers, deciders = named.get("log parser", []), named.get("run decider", [])
    threads = parsers + deciders
    if began is None or not parsers or len(deciders) != 1 or any(p not in exits for p, _ in threads):
        fail(f"{binary}: not one replay with a parsing and a deciding thread")
    (decider, decided_from), = deciders
    loaded = max(exits[p] for p, _ in parsers)
    return {
        "load": (loaded - began) * 1e3,
        "between": (decided_from - loaded) * 1e3,
        "decide": (exits[decider] - decided_from) * 1e3,
        "wall": wall * 1e3,
    }


def main():
    if len(sys.argv) < 4 or not sys.argv[1].isdigit() or int(sys.argv[1]) < 1:
        fail("usage: phase_times.py ROUNDS BINARY,BINARY... ARGS...")
    rounds, binaries, args = int(sys.argv[1]), sys.argv[2].split(","), sys.argv[3:]
    for b in binaries:
        if shutil.which(b) is None:
            fail(f"cannot run {b}")
    # By place, not by name: the same binary twice measures the noise.
    times = [[] for _ in binaries]
    with tempfile.TemporaryDirectory() as tmp:
        trace = os.path.join(tmp, "trace")
        order = list(range(len(binaries)))
        for r in range(rounds):
            for i in order if r % 2 == 0 else order[::-1]:
                try:
                    times[i].append(phases(binaries[i], args, trace))
                except FileNotFoundError as e:
                    fail(f"cannot run {e.filename}")
    for k, (b, runs) in enumerate(zip(binaries, times)):
        cells = []
        for p in PHASES:
            median = statistics.median(t[p] for t in runs)
            ratios = [t[p] / u[p] for t, u in zip(runs, times[0])]
            cell = f"{p} {median:.1f} ms ({statistics.median(ratios):.3f}"
            if k > 0:
                cell += ", 95 % range {:.3f}–{:.3f}".format(*median_range(ratios))
            cells.append(cell + ")")
        print(f"{b}: " + ", ".join(cells))


if __name__ == "__main__":
    main()
