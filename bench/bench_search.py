"""The search tool: its cost over a tree, and that a catastrophic pattern cannot hang it.

``search`` matches with RE2 (``alisio.core.share.linear_regex``): each line is searched in time linear in its
length whatever the pattern, so ``^(a+)+$``, which takes Python's backtracking ``re`` minutes on 40 ``a`` and a
``b``, returns at once. The tool keeps a time limit around the whole call (``time_limit``) as a backstop for a
tree that is simply huge.

Measures, on a temp tree of 200 files x 500 lines (100,000 lines, 3.4 MB):

1. a whole-tree ``search`` through ``execute_tool`` (median of 5), and the part of it that is the time limit
   itself: arming and disarming ``time_limit`` (median of 10,000);
2. how long ``search`` with ``^(a+)+$`` takes over the same tree plus a line of 40 ``a`` then ``b``: the
   target is no more than 0.1 s above the plain whole-tree search (linear, never the 1 s limit);
3. for comparison only, the per-line cost of ``regex.search(..., timeout=...)`` over the same lines, when
   the ``regex`` package is installed (the alternative that was weighed).
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
        catastrophic, output = _search(ctx, r"^(a+)+$")
    print(f"search of {FILES * LINES} lines in {FILES} files: {whole * 1000:.1f} ms (median of 5)")
    print(f"arming and disarming the time limit: {_arm_disarm_us():.1f} us per search call (median)")
    print(
        f"^(a+)+$ over the same tree and 40 a then b: {catastrophic * 1000:.1f} ms with a {LIMIT_S:g} s limit "
        f"(target: within {TARGET_OVERSHOOT_S} s of the plain search)"
    )
    print(f"regex package, timeout per line: {_regex_per_line_us(lines)}")
    assert "[search stopped after" not in output, output
    return 0 if catastrophic - whole <= TARGET_OVERSHOOT_S else 1


if __name__ == "__main__":
    sys.exit(main())
