"""``alisio help TOPIC``: a page of the manual, or one section of it, read from the installed package.

The pages of ``docs/`` and the README ship inside the wheel (``alisio/docs/*.md``, ``alisio/README.md``, copied
there by setup.py's build), so a wheel user reads the page every ``--help``'s ``Docs:`` line names. An editable
install runs from the checkout, whose ``README.md`` and ``docs/`` are the manual itself (two folders above
``src/shell``). ``alisio help topics`` lists the pages. What a topic and an anchor are: ``alisio.core.manual``.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from alisio.core.manual import section
from alisio.shell.errors import CommandError

__all__ = ["page_of", "topic_text", "topics"]


def _root() -> Path:
    """The installed ``alisio`` folder when it holds the manual (a wheel), else the checkout an editable install
    runs from (``src/shell``'s grandparent). ``alisio`` is a namespace package: its folder is ``alisio.shell``'s
    parent."""
    shell = Path(str(files("alisio.shell")))
    return shell.parent if (shell.parent / "README.md").is_file() else shell.parents[1]


def topics() -> list[str]:
    """The topics shipped: ``readme``, then each page of ``docs/`` by name, sorted."""
    docs = _root() / "docs"
    pages = sorted(item.name.removesuffix(".md") for item in docs.iterdir() if item.name.endswith(".md"))
    return ["readme", *pages]


def page_of(topic: str) -> str | None:
    """The text of the page ``topic`` names, or ``None`` when there is no such page."""
    item = _root() / "README.md" if topic == "readme" else _root() / "docs" / f"{topic}.md"
    if "/" in topic or not item.is_file():
        return None
    return item.read_text(encoding="utf-8")


def topic_text(reference: str) -> str:
    """The page or section ``reference`` (``lab``, ``lab#reports``) names.

    Raises:
        CommandError: no such page (listing the topics), or no such heading in it.
    """
    topic, _, anchor = reference.partition("#")
    page = page_of(topic)
    if page is None:
        raise CommandError(
            f"no command or topic {topic!r}: the topics are {', '.join(topics())} (alisio help topics); the "
            "commands are in alisio --help"
        )
    if not anchor:
        return page
    found = section(page, anchor)
    if found is None:
        raise CommandError(
            f"topic {topic} has no heading #{anchor}: alisio help {topic} shows the whole page"
        )
    return found
