"""Properties of alisio.core.harness.approval_text: the prompt shows every argument as sent, and nothing that
could drive the terminal."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from alisio.core.harness.approval_text import approval_lines

printable = st.text(st.characters(codec="utf-8").filter(str.isprintable), max_size=30)
"""What a terminal shows as is (a non-printable character, NBSP included, is shown escaped)."""


@given(st.lists(printable, min_size=1, max_size=4).map("\n".join), st.text(max_size=30))
def test_every_line_of_a_string_argument_is_shown_exactly(old: str, noise: str) -> None:
    """A multi-line or indented old_string appears line for line after the margin, whitespace kept; no line
    of the prompt holds a control character but tab."""
    arguments = json.dumps({"path": "a.py", "old_string": "  " + old, "junk": noise})
    lines = approval_lines("edit_file", "write", arguments)
    assert lines[0] == "allow edit_file (write)?" and lines[-1] == "[y/N/always] "
    shown = [line.removeprefix("    | ") for line in lines if line.startswith("    | ")]
    assert ("  " + old).split("\n") == shown[: len(("  " + old).split("\n"))]
    assert all(ch == "\t" or ch.isprintable() for line in lines for ch in line)
