#!/usr/bin/env python3
"""Where a command's threads spend their work: how a replay's time was
taken apart for the README's "Replaying a log" entries, kept here so
that the next measurement is the same one.

    python3 benches/threads.py instructions N COMMAND...
    python3 benches/threads.py phases COMMAND...

`instructions` runs COMMAND under callgrind (valgrind), one profile a
thread, and prints each thread that ran 10^6 instructions or more
(numbered in the order they started: in a replay, 1 is the main
thread, which orders the log's lines and then decodes the recording
and records, and the parser and the decider come later) with its
instructions, the same divided by N (the lines or the decisions the run
makes: instructions a line, a decision) and the three functions that
cost it most themselves, each divided by N too. Instruction counts move
far less with the machine's load than times do (a thread that waits
spins a little longer or shorter: about 0.1 % between runs of the same
binary), so compare two binaries by them. They miss what an
instruction waits for (a cache miss, a division), which `phases`
shows. E.g. the nginx bench log's first 2·10^5 lines (a scenario like
benches/log.toml reading them):

    head -200000 benches/access.log > /tmp/cut.log
    sed 's|"access.log"|"/tmp/cut.log"|' benches/log.toml > /tmp/cut.toml
    python3 benches/threads.py instructions 200000 \\
      target/release/ratesim run /tmp/cut.toml --quiet --no-plots --no-html --out /tmp/cut

`phases` runs COMMAND under `perf record` (20 000 samples a second a
thread) and prints each thread with 20 samples or more by its name:
when it first and last ran (ms from the first sample), its samples,
the share of them waiting (in the scheduler, yielding, on a futex,
reading the clock while it spins, or in a channel's or the hand-off's
receive: see WAITING) and its top three functions. Then, for the life
of each thread but the first, how much of it each thread ran (its
samples against 20 000 a second: a thread asleep takes none) and the
share of those samples waiting: which thread waited for which. A
replay's threads live through its phases: "log parser" while the log
loads, "run decider" while the run decides, the main thread
throughout.

Exit status 2 for a wrong call or a tool that is missing or fails.
"""

import collections
import glob
import os
import re
import subprocess
import sys
import tempfile

# A sample in one of these is a thread waiting for another, or spinning
# for its next batch (crates/core/src/handoff.rs): the scheduler, a
# yield, a futex, the clock the spin reads, a channel's receive.
WAITING = re.compile(
    r"^(__schedule|schedule|finish_task_switch\S*|__sched_yield|do_sched_yield"
    r"|__x64_sys_sched_yield|futex_\w+|__futex_\w+|__vdso_clock_gettime)$"
    r"|^std::sync::mpmc::.*recv|^ratesim_core::handoff::Taker::"
)


# Samples a second a thread, as `perf record -F` takes them.
RATE = 20000


def fail(message):
    print(f"threads.py: {message}", file=sys.stderr)
    sys.exit(2)


def run(argv, **kw):
    """Runs `argv`, its standard error kept: the last of it is shown if
    it fails."""
    kw.setdefault("stderr", subprocess.PIPE)
    try:
        return subprocess.run(argv, check=True, text=True, **kw)
    except FileNotFoundError:
        fail(f"{argv[0]} is not installed")
    except subprocess.CalledProcessError as e:
        said = "\n".join((e.stderr or "").strip().splitlines()[-5:])
        fail(f"{' '.join(argv[:3])}… exited with status {e.returncode}" + (f":\n{said}" if said else ""))


def short(function):
    """A function's name without its source file, its module paths and
    the object it is in (callgrind's ` [/path/to/binary]`)."""
    name = function.split(":", 1)[-1] if "/" in function.split(":", 1)[0] else function
    name = re.sub(r" \[.*\]$", "", name)
    return re.sub(r"\b[a-z_]+::", "", name)[:70]


def instructions(n, command):
    with tempfile.TemporaryDirectory(prefix="threads-") as tmp:
        out = os.path.join(tmp, "cg")
        run(
            ["valgrind", "--tool=callgrind", "--separate-threads=yes",
             f"--callgrind-out-file={out}", *command],
            stdout=subprocess.DEVNULL,
        )
        files = sorted(glob.glob(out + "-*"), key=lambda f: int(f.rsplit("-", 1)[1]))
        if not files:
            fail("callgrind wrote no profile")
        print(f"{'thread':>6} {'instructions':>14} {'per unit':>9}  most, themselves")
        for f in files:
            text = run(["callgrind_annotate", f], stdout=subprocess.PIPE).stdout
            total = re.search(r"([\d,]+) \(100\.0%\)\s+PROGRAM TOTALS", text)
            if not total or "file:function" not in text:
                fail(f"callgrind_annotate's output of {f} is not in the form read here")
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


def phases(command):
    with tempfile.TemporaryDirectory(prefix="threads-") as tmp:
        data = os.path.join(tmp, "perf.data")
        run(["perf", "record", "-F", str(RATE), "-o", data, *command],
            stdout=subprocess.DEVNULL)
        script = run(["perf", "script", "-i", data, "-F", "comm,tid,time,ip,sym"],
                     stdout=subprocess.PIPE).stdout
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
        # A thread asleep takes no samples: 20 000 a second is all along.
        full = max((end - start) * RATE, 1)
        print(
            f"while {comm} ran ({(end - start) * 1e3:.1f} ms): "
            + "; ".join(
                f"{c} ran {min(len(got) / full, 1):.0%} of it, {waiting(got):.0%} of that waiting"
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
