"""The one base every core Struct derives from.

``Frozen`` fixes the wire and immutability conventions once:

- ``frozen=True``: values are immutable and hashable (fields must be tuples/frozensets, never list/dict);
- ``kw_only=True``: construction names every field, so adding a field never shifts positions;
- ``rename="camel"``: Python ``snake_case`` attributes, ``camelCase`` on disk (the spec's JSON names).

msgspec does not inherit ``kw_only`` and mypy does not follow inherited ``frozen``, so every subclass
repeats both: ``class Task(Frozen, frozen=True, kw_only=True): ...``.

Structs read from human-written files (suite.json, config) add ``forbid_unknown_fields=True`` so a typo
fails; records we read back across versions (runs.jsonl, report.json) leave it off.
"""

from __future__ import annotations

import msgspec


class Frozen(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """Base of every core value: frozen, keyword-only, camelCase on the wire."""
