"""The search tool's time limit: what it costs, and how fast it stops a catastrophic pattern.

Why a time limit around Python's ``re`` rather than another regex engine: ``re`` is what the tool description
promises the model (changing the syntax would change what every recorded cassette asked for), and CPython's
``re`` engine checks for signals every few thousand steps, so a one-shot ``SIGALRM`` timer
(``alisio.shell.harness.tools.limits.time_limit``) interrupts even exponential backtracking. The
alternatives: the ``regex`` package has a per-call ``timeout``, but it is a new dependency and a per-line
timeout costs several microseconds per line (measured below when ``regex`` is installed); ``google-re2`` is
linear but has no backreferences or lookarounds, so some patterns would need a fallback that can hang.

Measures, on a temp tree of 200 files x 500 lines (100,000 lines, 3.4 MB):

1. a whole-tree ``search`` through ``execute_tool`` (median of 5), and the part of it that is the limit
   itself: arming and disarming ``time_limit`` (median of 10,000);
2. how long ``search`` with ``^(a+)+$`` over a line of 40 ``a`` then ``b`` takes with a 1 s limit (the
   pattern alone would take minutes): the target is within 0.1 s of the limit;
3. for comparison only, the per-line cost of ``regex.search(..., timeout=...)`` over the same lines, when
   the ``regex`` package is installed.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from alisio.core.harness.protocol import ToolCall
from alisio.shell.harness.tools.dispatch import ToolContext, execute_tool
from alisio.shell.harness.tools.limits import time_limit

FILES = 200
LINES = 500
LIMIT_S = 1.0
TARGET_OVERSHOOT_S = 0.1


def _tree(root: Path) -> list[str]:
    lines = [f"def function_{n}(value): return value * {n}  # line {n}" for n in range(LINES)]
    for index in range(FILES):
        (root / f"module_{index:03}.py").write_text("\n".join(lines) + "\n")
    return lines


def _search(ctx: ToolContext, pattern: str) -> tuple[float, str]:
    call = ToolCall(id="b", name="search", arguments=json.dumps({"pattern": pattern}))
    started = time.perf_counter()
    outcome = execute_tool(call, ctx)
    return time.perf_counter() - started, outcome.output


def _arm_disarm_us(times: int = 10_000) -> float:
    samples = []
    for _ in range(times):
        started = time.perf_counter()
        with time_limit(30.0):
            pass
        samples.append(time.perf_counter() - started)
    return statistics.median(samples) * 1e6


def _regex_per_line_us(lines: list[str]) -> str:
    try:
        import regex  # type: ignore[import-not-found, import-untyped, unused-ignore]
    except ImportError:
        return "not installed (skipped)"
    many = lines * (FILES // 4)
    plain = regex.compile(r"value \* 7\b")
    started = time.perf_counter()
    for line in many:
        plain.search(line)
    without = time.perf_counter() - started
    started = time.perf_counter()
    for line in many:
        plain.search(line, timeout=30.0)
    with_timeout = time.perf_counter() - started
    per_line = (with_timeout - without) / len(many) * 1e6
    return f"{per_line:.2f} us per line on top of {without / len(many) * 1e6:.2f} us"


def main() -> int:
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory)
        lines = _tree(root)
        ctx = ToolContext(workspace=root, search_max_matches=10**9)
        whole = statistics.median(_search(ctx, r"value \* 7\b")[0] for _ in range(5))
        (root / "catastrophic.txt").write_text("a" * 40 + "b\n")
        ctx.tool_time_limit_s = LIMIT_S
        stopped, output = _search(ctx, r"^(a+)+$")
    overshoot = stopped - LIMIT_S
    print(f"search of {FILES * LINES} lines in {FILES} files: {whole * 1000:.1f} ms (median of 5)")
    print(f"arming and disarming the time limit: {_arm_disarm_us():.1f} us per search call (median)")
    print(
        f"^(a+)+$ stopped after {stopped:.3f} s with a {LIMIT_S:g} s limit (target: within {TARGET_OVERSHOOT_S} s)"
    )
    print(f"regex package, timeout per line: {_regex_per_line_us(lines)}")
    assert "[search stopped after" in output, output
    return 0 if 0 <= overshoot <= TARGET_OVERSHOOT_S else 1


if __name__ == "__main__":
    sys.exit(main())
