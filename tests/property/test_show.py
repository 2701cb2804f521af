"""Properties of alisio.core.lab.outputs.show: an edit's diff is numbered by the file's lines."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from alisio.core.harness.edits import apply_edit
from alisio.core.harness.events import ToolCalled, ToolResulted
from alisio.core.lab.outputs.show import edit_lines, render_run
from alisio.core.lab.runs.records import Measured, RunRecord, RunStatus

RECORD = RunRecord(
    task_id="t",
    repetition=0,
    seed=0,
    status=RunStatus.FAIL,
    measured=Measured(wall_ms=1, turns=1, tool_calls=1, compactions=0, usage_complete=False),
)


@given(st.integers(0, 30), st.integers(1, 4), st.integers(0, 4))
def test_an_edit_diff_starts_at_the_line_it_replaced(before: int, old_lines: int, new_lines: int) -> None:
    """An edit of ``old_lines`` lines after ``before`` lines: the hunk reads ``@@ -before+1,...`` (the line the
    tool's result reports), whatever the sizes; an empty new side starts after the line before it."""
    old = "\n".join(f"old {i}" for i in range(old_lines))
    new = "\n".join(f"new {i}" for i in range(new_lines))
    text = "".join(f"line {i}\n" for i in range(before)) + old + "\nend\n"
    edit = apply_edit("f.py", text, old, new).unwrap()
    assert edit.line == before + 1
    call = ToolCalled(seq=1, elapsed_ms=0, call_id="c1", name="edit_file", effect=None,
                      arguments=json.dumps({"path": "f.py", "old_string": old, "new_string": new}))  # fmt: skip
    result = ToolResulted(seq=2, elapsed_ms=0, call_id="c1", name="edit_file", ok=True, duration_ms=1,
                          output_excerpt=f"edited f.py: replaced 1 occurrence at line {edit.line}; sha256: x")  # fmt: skip
    assert edit_lines([call, result]) == {"c1": edit.line}
    shown = render_run(RECORD, [call, result])
    hunk = next(line.strip() for line in shown.splitlines() if line.strip().startswith("@@"))
    old_side = str(before + 1) if old_lines == 1 else f"{before + 1},{old_lines}"
    new_side = {0: f"{before},0", 1: str(before + 1)}.get(new_lines, f"{before + 1},{new_lines}")
    assert hunk == f"@@ -{old_side} +{new_side} @@"
