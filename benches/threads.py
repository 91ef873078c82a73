#!/usr/bin/env python3
"""Where a command's threads spend their work: how a replay's time was
taken apart for the README's "Replaying a log" entries, kept here so
that the next measurement is the same one.

    python3 benches/threads.py instructions N COMMAND...
    python3 benches/threads.py phases COMMAND...

`instructions` runs COMMAND under callgrind (valgrind), one profile a
thread, and prints each thread (numbered in the order they started: in
a replay, 1 is the main thread, which orders the log's lines and then
decodes the recording and records, and the parser and the decider
come later) with its instructions, the same divided by N
(the lines or the decisions the run makes: instructions a line, a
decision) and the functions that cost it most, themselves. Instruction
counts do not move with the machine's load, as times do: compare two
binaries by them. They miss what an instruction waits for (a cache
miss, a division), which `phases` shows. E.g. the nginx bench log's
first 2·10^5 lines (a scenario like benches/log.toml reading them):

    head -200000 benches/access.log > /tmp/cut.log
    sed 's|"access.log"|"/tmp/cut.log"|' benches/log.toml > /tmp/cut.toml
    python3 benches/threads.py instructions 200000 \\
      target/release/ratesim run /tmp/cut.toml --quiet --no-plots --no-html --out /tmp/cut

`phases` runs COMMAND under `perf record` (20 000 samples a second a
thread) and prints each thread by its name: when it first and last ran
(ms from the first sample), its samples, the share of them in the
scheduler or a thread's hand-off (waiting, or spinning for the next
batch), and its top functions. A replay's threads live through its
phases: "log parser" while the log loads, "run decider" while the run
decides, the main thread throughout.

Exit status 2 for a wrong call or a tool that is missing or fails.
"""

import collections
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

# A sample in one of these is a thread waiting for another, or spinning
# for its next batch (crates/core/src/handoff.rs).
WAITING = re.compile(
    r"schedule|sched_yield|futex|syscall|clock_gettime|recv|Taker|wake|switch|poll"
)


def fail(message):
    print(f"threads.py: {message}", file=sys.stderr)
    sys.exit(2)


def run(argv, **kw):
    try:
        return subprocess.run(argv, check=True, **kw)
    except FileNotFoundError:
        fail(f"{argv[0]} is not installed")
    except subprocess.CalledProcessError as e:
        fail(f"{' '.join(argv[:3])}… exited with status {e.returncode}")


def short(function):
    """A function's name without its path, crate paths and hash."""
    name = function.split(":", 1)[-1] if "/" in function.split(":", 1)[0] else function
    name = re.sub(r" \[.*\]$", "", name)
    return re.sub(r"\b[a-z_]+::", "", name)[:70]


def instructions(n, command):
    tmp = tempfile.mkdtemp(prefix="threads-")
    try:
        out = os.path.join(tmp, "cg")
        run(
            ["valgrind", "--tool=callgrind", "--separate-threads=yes",
             f"--callgrind-out-file={out}", *command],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        files = sorted(glob.glob(out + "-*"), key=lambda f: int(f.rsplit("-", 1)[1]))
        print(f"{'thread':>6} {'instructions':>14} {'per unit':>9}  most, themselves")
        for f in files:
            text = run(["callgrind_annotate", f], capture_output=True, text=True).stdout
            total = re.search(r"([\d,]+) \(100\.0%\)\s+PROGRAM TOTALS", text)
            if not total:
                continue
            ir = int(total.group(1).replace(",", ""))
            if ir < 1_000_000:
                continue  # a helper thread that barely ran
            # A function inlined from several files is listed once a file.
            own = collections.Counter()
            # The table of functions: after its header and its rule, up
            # to the next rule (the annotated source follows).
            body = text.split("file:function", 1)[-1].split("\n", 2)[-1]
            body = body.split("\n--", 1)[0]
            for c, fn in re.findall(r"^\s*([\d,]+) \([\s\d.]+%\)\s+(\S.*)$", body, re.M):
                own[short(fn)] += int(c.replace(",", ""))
            most = ", ".join(f"{fn} {c / n:.0f}" for fn, c in own.most_common(3))
            print(f"{f.rsplit('-', 1)[1]:>6} {ir:>14,} {ir / n:>9.0f}  {most}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def phases(command):
    tmp = tempfile.mkdtemp(prefix="threads-")
    try:
        data = os.path.join(tmp, "perf.data")
        run(["perf", "record", "-F", "20000", "-o", data, *command],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        script = run(["perf", "script", "-i", data, "-F", "comm,tid,time,ip,sym"],
                     capture_output=True, text=True).stdout
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    samples = []
    for line in script.splitlines():
        m = re.match(r"\s*(.+?)\s+(\d+)\s+([\d.]+):\s+(?:\S+\s+)?(.*)$", line)
        if m:
            samples.append((m.group(1), int(m.group(2)), float(m.group(3)), m.group(4).strip()))
    if not samples:
        fail("perf recorded no samples")
    t0 = min(s[2] for s in samples)
    threads = collections.defaultdict(list)
    for comm, tid, t, sym in samples:
        threads[(comm, tid)].append((t - t0, sym))
    # (Helper threads that barely ran are left out.)
    ran = sorted(
        ((who, got) for who, got in threads.items() if len(got) >= 20),
        key=lambda kv: kv[1][0][0],
    )
    print(f"{'thread':<16} {'from ms':>8} {'to ms':>8} {'samples':>8} {'waiting':>8}  most")
    for (comm, _), got in ran:
        most = collections.Counter(short(sym) for _, sym in got).most_common(3)
        print(
            f"{comm[:16]:<16} {got[0][0] * 1e3:>8.1f} {got[-1][0] * 1e3:>8.1f} {len(got):>8}"
            f" {waiting(got):>7.0%}  "
            + ", ".join(f"{fn} {k / len(got):.0%}" for fn, k in most)
        )
    # Each later thread's life is a phase: which thread waited for which.
    for (comm, _), life in ran[1:]:
        start, end = life[0][0], life[-1][0]
        during = [
            (c, [s for s in got if start <= s[0] <= end]) for (c, _), got in ran
        ]
        print(
            f"while {comm} ran ({(end - start) * 1e3:.1f} ms): "
            + "; ".join(
                f"{c} {len(got)} samples, {waiting(got):.0%} waiting"
                for c, got in during
                if got
            )
        )


def waiting(samples):
    """The share of `samples` (time, function) in a wait."""
    return sum(1 for _, sym in samples if WAITING.search(sym)) / max(len(samples), 1)


def main():
    args = sys.argv[1:]
    if len(args) >= 3 and args[0] == "instructions" and args[1].isdigit() and int(args[1]) > 0:
        instructions(int(args[1]), args[2:])
    elif len(args) >= 2 and args[0] == "phases":
        phases(args[1:])
    else:
        print(__doc__, file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
