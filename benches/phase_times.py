#!/usr/bin/env python3
"""How long each phase of a replay took, for binaries run in turn: the
load (the log parser thread's life, from the process's first thread
start to its exit) and the decisions (the run decider thread's life),
read from the times strace gives those threads' start and exit, with
the wall-clock time of the whole run beside them.

    python3 benches/phase_times.py ROUNDS BINARY,BINARY... ARGS...   (ROUNDS >= 1)

e.g. the README's fourteenth entry in "Replaying a log":

    python3 benches/phase_times.py 40 /tmp/before/ratesim,target/release/ratesim \\
      run benches/log.toml --quiet --no-plots --no-html --out /tmp/log

Each round runs every binary once, in turn (the order reversed every
other round); each phase is printed as its median over the rounds (ms)
and the median of its ratios to the first binary's in the same round.
strace stops a thread only at the two calls it traces (thread start and
exit, with --seccomp-bpf), so the phases take about as long as without
it. A phase moves with the machine's speed far less than the whole run
does when the phases before it move: compare a change to one phase by
that phase. It reads the threads that a replay on two cores or more
starts: the log parser is the third thread started (after the two of
the pool), the run decider the last. It stops with exit status 2 on a
run with fewer threads, a command that fails, a missing strace or a
wrong call.
"""

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

PHASES = ("load", "decide", "wall")


def fail(message):
    print(f"phase_times.py: {message}", file=sys.stderr)
    sys.exit(2)


def phases(binary, args, trace):
    """One run of `binary`: its phases in ms."""
    start = time.perf_counter()
    done = subprocess.run(
        ["strace", "--seccomp-bpf", "-f", "-ttt", "-e", "trace=clone3,exit", "-o", trace, binary]
        + args,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    wall = time.perf_counter() - start
    if done.returncode != 0:
        fail(f"{binary} exited with {done.returncode}")
    first, starts, exits = None, [], {}
    with open(trace) as f:
        for line in f:
            pid, at, call = line.split(maxsplit=2)
            first = float(at) if first is None else first
            # `clone3(...) = TID`, or resumed: `<... clone3 resumed> ... = TID`.
            if "clone3" in call and call.rstrip().rsplit("= ", 1)[-1].isdigit():
                starts.append((call.rstrip().rsplit("= ", 1)[-1], float(at)))
            elif call.startswith("exit("):
                exits[pid] = float(at)
    # The pool's two threads, the parser, then (after the address names
    # and others) the decider last.
    if len(starts) < 5 or starts[2][0] not in exits or starts[-1][0] not in exits:
        fail(f"{binary}: not a replay's threads ({len(starts)} started)")
    parser, (decider, decider_start) = starts[2][0], starts[-1]
    return {
        "load": (exits[parser] - first) * 1e3,
        "decide": (exits[decider] - decider_start) * 1e3,
        "wall": wall * 1e3,
    }


def main():
    if len(sys.argv) < 4 or not sys.argv[1].isdigit() or int(sys.argv[1]) < 1:
        fail("usage: phase_times.py ROUNDS BINARY,BINARY... ARGS...")
    rounds, binaries, args = int(sys.argv[1]), sys.argv[2].split(","), sys.argv[3:]
    for b in binaries:
        if shutil.which(b) is None:
            fail(f"cannot run {b}")
    times = {b: [] for b in binaries}
    with tempfile.TemporaryDirectory() as tmp:
        trace = os.path.join(tmp, "trace")
        for r in range(rounds):
            for b in binaries if r % 2 == 0 else binaries[::-1]:
                try:
                    times[b].append(phases(b, args, trace))
                except FileNotFoundError as e:
                    fail(f"cannot run {e.filename}")
    base = times[binaries[0]]
    for b in binaries:
        cells = []
        for p in PHASES:
            median = statistics.median(t[p] for t in times[b])
            ratio = statistics.median(t[p] / u[p] for t, u in zip(times[b], base))
            cells.append(f"{p} {median:.1f} ms ({ratio:.3f})")
        print(f"{b}: " + ", ".join(cells))


if __name__ == "__main__":
    main()
