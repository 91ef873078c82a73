#!/usr/bin/env python3
"""The floor for replaying a log: plain Python reading a file's lines and
splitting each at whitespace, or with --json (the first argument)
parsing each as JSON, nothing more (README, "Replaying a log").

    python3 benches/read_split.py benches/access.log
    python3 benches/read_split.py --json benches/access.jsonl

prints the lines read and the CPU-seconds it took (time.process_time).
--json (json.loads) is the floor for a JSON-lines log whose fields are
read, not just cut at whitespace.
"""

import json
import sys
import time

args = sys.argv[1:]
as_json = args[:1] == ["--json"]
if as_json:
    args = args[1:]
if len(args) != 1:
    print(__doc__, file=sys.stderr)
    sys.exit(2)
start = time.process_time()
n = 0
with open(args[0]) as f:
    if as_json:
        for line in f:
            json.loads(line)
            n += 1
    else:
        for line in f:
            line.split()
            n += 1
print(n, round(time.process_time() - start, 3))
