"""Why replayNormalize patterns run on RE2 (alisio.core.share.linear_regex) and not on Python's re.

For each pattern, the time to replace every match in an adversarial text, with Python's ``re.sub`` (in a
child process killed after ``LIMIT_S``: a backtracking pattern may run for years) and with
``LinearPattern.replace_all``. Target: every RE2 figure under 1 s on texts of 100 000 characters (the
default ``read_file`` cap), where ``re`` takes minutes or never ends. The last rows are the known limit:
a pattern whose first branch keeps scanning past each short match is quadratic in RE2 too.
"""

from __future__ import annotations

import subprocess
import sys
import time

from returns.result import Success

from alisio.core.share.linear_regex import LinearPattern, compile_linear

LIMIT_S = 10.0
TARGET_S = 1.0
CASES = [
    (
        "timestamp (typical)",
        r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z",
        "2026-01-01T00:00:00.123Z " * 4000,
    ),
    ("nested plus", r"^(a+)+$", "a" * 100_000 + "!"),
    ("nested plus, 40 chars", r"^(a+)+$", "a" * 40 + "!"),
    ("overlapping alternation", r"(a|aa)+$", "a" * 100_000 + "!"),
    ("digits then x", r"\d+x", "1" * 100_000),
    ("words then colon", r"(\w+\s?)+:", "word " * 20_000 + "!"),
    ("limit: a*b|a, 10 000", r"a*b|a", "a" * 10_000),
    ("limit: a*b|a, 100 000", r"a*b|a", "a" * 100_000),
]
_PYTHON_RE = "import re, sys, time; p, t = sys.argv[1], sys.argv[2]; s = time.perf_counter(); re.sub(p, 'X', t); print(time.perf_counter() - s)"


def python_re_seconds(pattern: str, text: str) -> str:
    try:
        done = subprocess.run(
            [sys.executable, "-c", _PYTHON_RE, pattern, text],
            capture_output=True,
            text=True,
            timeout=LIMIT_S,
            check=True,
        )
    except subprocess.TimeoutExpired:
        return f"> {LIMIT_S:.0f} s (killed)"
    return f"{float(done.stdout):.3f} s"


def main() -> int:
    print(f"{'pattern':26} {'text':>8}  {'Python re':>18}  {'RE2':>8}")
    slow = 0
    for name, pattern, text in CASES:
        match compile_linear(pattern):
            case Success(LinearPattern() as compiled):
                start = time.perf_counter()
                compiled.replace_all(text, "X")
                seconds = time.perf_counter() - start
            case _:
                print(f"{name}: does not compile")
                return 1
        slow += seconds > TARGET_S and not name.startswith("limit")
        print(f"{name:26} {len(text):>8}  {python_re_seconds(pattern, text):>18}  {seconds:>6.3f} s")
    print(
        f"target: RE2 under {TARGET_S:.0f} s on every row but the limit rows: {'met' if not slow else 'MISSED'}"
    )
    return 1 if slow else 0


if __name__ == "__main__":
    sys.exit(main())
