"""Export of support tickets as JSON."""

import json
from collections import Counter

FIELDS = ("id", "title", "note", "tags")


def export_ticket(ticket: dict[str, object]) -> str:
    """One ticket as a JSON object with the FIELDS, in that order."""
    return json.dumps({field: ticket[field] for field in FIELDS}, separators=(",", ":"))


def export_lines(tickets: list[dict[str, object]]) -> str:
    """Tickets as JSON Lines: one export_ticket per line, each ending with a newline."""
    return "".join(export_ticket(ticket) + "\n" for ticket in tickets)


def tag_counts(tickets: list[dict[str, object]]) -> dict[str, int]:
    """How many times each tag is used, most used first, ties in alphabetical order."""
    counts = Counter(tag for ticket in tickets for tag in ticket["tags"])  # type: ignore[attr-defined]
    return dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))
