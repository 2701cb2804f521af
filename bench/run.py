"""Run every benchmark in bench/ (``make bench``) and print their figures.

Benchmarks are run by hand, not in CI: timings on a shared 2-core machine are too noisy for a test.
Each ``bench_*.py`` prints its own figure and target; this script runs them one after another.
"""

from __future__ import annotations

import platform
import subprocess
import sys
from pathlib import Path


def main() -> int:
    here = Path(__file__).resolve().parent
    print(
        f"machine: {platform.machine()}, {platform.processor() or 'cpu'}, python {platform.python_version()}"
    )
    failed = 0
    for script in sorted(here.glob("bench_*.py")):
        print(f"\n== {script.name}", flush=True)
        failed += subprocess.run([sys.executable, str(script)], check=False).returncode != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
