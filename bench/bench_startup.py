"""How long ``alisio --help`` takes to start (target: at most 0.25 s, issue 21).

Runs the installed console script 20 times after one warm-up and reports the median and the worst wall
time. numpy, httpx and rich must be imported only where used for this to hold.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

TARGET_S = 0.25
RUNS = 20


def main() -> int:
    alisio = Path(sys.executable).with_name("alisio")
    subprocess.run([str(alisio), "--help"], capture_output=True, check=True)
    times = []
    for _ in range(RUNS):
        start = time.perf_counter()
        subprocess.run([str(alisio), "--help"], capture_output=True, check=True)
        times.append(time.perf_counter() - start)
    median = statistics.median(times)
    print(f"alisio --help: median {median * 1000:.0f} ms, worst {max(times) * 1000:.0f} ms over {RUNS} runs")
    print(f"target: at most {TARGET_S * 1000:.0f} ms -> {'ok' if median <= TARGET_S else 'MISSED'}")
    return 0 if median <= TARGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
