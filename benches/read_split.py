#!/usr/bin/env python3
"""The floor for replaying a log: plain Python reading a file's lines and
splitting each at whitespace, nothing more (README, "Replaying a log").

    python3 benches/read_split.py benches/access.log
    python3 benches/read_split.py --text benches/access.log
    python3 benches/read_split.py --json benches/access.jsonl

prints the lines read and the CPU-seconds it took (time.process_time).

The lines are read as bytes: faster than as text, and all a Python
replay needs to read a line's numbers and keys (`int(b"200")` works).
--text reads them as text, decoding each line, as the entries in the
README before 2026-12-05's tenth measured (0.247 s against 0.210 for
the bench log, medians of 31 rounds). --json parses each line as JSON
from text, which json.loads does faster than from bytes: the floor for
a JSON-lines log whose fields are read, not just cut at whitespace.
"""

import json
import sys
import time

args = sys.argv[1:]
mode = args[0] if args[:1] in (["--json"], ["--text"]) else "--bytes"
if mode != "--bytes":
    args = args[1:]
if len(args) != 1:
    print(__doc__, file=sys.stderr)
    sys.exit(2)
start = time.process_time()
n = 0
if mode == "--json":
    with open(args[0]) as f:
        for line in f:
            json.loads(line)
            n += 1
else:
    # (The loop's body written out, not passed in: a call a line would
    # be Python's cost, not the floor's.)
    with open(args[0], "r" if mode == "--text" else "rb") as f:
        for line in f:
            line.split()
            n += 1
print(n, round(time.process_time() - start, 3))
