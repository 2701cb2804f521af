"""What ``alisio run`` shows when it asks to approve a tool call: the arguments as they will be sent.

The prompt is where a person decides, so nothing is collapsed or cut: a string argument with several lines,
or with leading or trailing whitespace (an ``edit_file`` ``old_string`` indented by four spaces), is shown
line by line after a ``|`` margin, exactly; other values as JSON. Control characters (a terminal escape in a
model's argument) are shown escaped (``\\x1b``), never sent to the terminal raw.
"""

from __future__ import annotations

import json

__all__ = ["approval_lines"]


def _visible(text: str) -> str:
    """``text`` with every control character but tab written as an escape."""
    return "".join(
        ch if ch == "\t" or ch.isprintable() else ch.encode("unicode_escape").decode() for ch in text
    )


def _value_lines(key: str, value: object) -> list[str]:
    if isinstance(value, str) and ("\n" in value or value != value.strip() or not value):
        lines = value.split("\n")
        return [f"  {_visible(key)}: ({len(lines)} line{'' if len(lines) == 1 else 's'})"] + [
            f"    | {_visible(line)}" for line in lines
        ]
    shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return [f"  {_visible(key)}: {_visible(str(shown))}"]


def approval_lines(name: str, effect: str, arguments: str) -> list[str]:
    """The approval prompt's lines for a call of ``name`` with its raw JSON ``arguments`` (the question last)."""
    try:
        parsed = json.loads(arguments)
    except ValueError:
        parsed = None
    head = f"allow {_visible(name)} ({effect})?"
    if not isinstance(parsed, dict):
        return [head, f"  arguments: {_visible(arguments)}", "[y/N/always] "]
    body = [line for key, value in parsed.items() for line in _value_lines(str(key), value)]
    return [head, *body, "[y/N/always] "]
