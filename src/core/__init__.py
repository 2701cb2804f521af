"""alisio's functional core: immutable data and pure functions from data to data.

Rules this package keeps (enforced by import-linter and ruff's banned-api):
- it never imports ``shell`` and never touches the world: no files, processes, network, clock, environment;
- fallible functions return ``returns.result.Result`` with a typed error from ``alisio.core.errors``;
- data is frozen ``msgspec.Struct`` with tuple/frozenset fields, camelCase on the wire.
"""
