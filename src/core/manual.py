"""The manual as ``alisio help TOPIC`` shows it: a page of ``docs/`` (shipped in the wheel), or one section of it.

A topic is a page's name without ``.md`` (``lab``, ``agents``; ``readme`` is the README), optionally with a
heading's anchor (``lab#reports``), as the ``Docs:`` line of every ``--help`` names it. Anchors are GitHub's:
the heading in lower case, punctuation dropped but ``-`` and ``_``, spaces as ``-`` (``slug``); headings inside
fenced code blocks are not headings. A section runs from its heading to the next heading of the same or a
higher level.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Final

__all__ = ["docs_reference", "headings", "section", "slug"]

_HEADING: Final = re.compile(r"^(#{1,6}) (.+)$")
_FENCE: Final = re.compile(r"^\s*(```|~~~)")


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped but ``-`` and ``_``, spaces to ``-``."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def headings(page: str) -> Iterator[tuple[int, int, str]]:
    """Each heading of ``page`` outside fenced code: its line index, its level and its anchor."""
    fenced = False
    for index, line in enumerate(page.splitlines()):
        if _FENCE.match(line):
            fenced = not fenced
            continue
        found = None if fenced else _HEADING.match(line)
        if found:
            yield index, len(found[1]), slug(found[2])


def section(page: str, anchor: str) -> str | None:
    """The section of ``page`` under the heading whose anchor is ``anchor``, heading included; ``None`` when
    no heading has that anchor."""
    lines = page.splitlines()
    found = list(headings(page))
    for position, (index, level, name) in enumerate(found):
        if name == anchor:
            end = next((i for i, lv, _ in found[position + 1 :] if lv <= level), len(lines))
            return "\n".join(lines[index:end]).rstrip() + "\n"
    return None


def docs_reference(path: str) -> str:
    """The ``alisio help`` topic of a documentation path of the repository: ``docs/lab.md#reports`` ->
    ``lab#reports``, ``README.md`` -> ``readme``."""
    page, _, anchor = path.partition("#")
    name = page.removeprefix("docs/").removesuffix(".md")
    topic = "readme" if name == "README" else name
    return f"{topic}#{anchor}" if anchor else topic
