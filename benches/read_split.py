#!/usr/bin/env python3
"""The floor for replaying a log: plain Python reading a file's lines and
splitting each at whitespace, nothing more (README, "Replaying a log").

    python3 benches/read_split.py benches/access.log

prints the lines read and the CPU-seconds it took (time.process_time).
"""

import sys
import time

start = time.process_time()
n = 0
with open(sys.argv[1]) as f:
    for line in f:
        line.split()
        n += 1
print(n, round(time.process_time() - start, 3))
