"""alisio's functional core: immutable data and pure functions from data to data.

Rules this package keeps (enforced by import-linter and ruff's banned-api):
- it never imports ``shell`` and never touches the world: no files, processes, network, clock, environment;
- fallible functions return ``returns.result.Result`` with a typed error from ``alisio.core.errors``;
- data is frozen ``msgspec.Struct`` with tuple/frozenset fields, camelCase on the wire.
"""

# The sources live in src/core, and src/alisio/core links to them: with ``src`` itself on sys.path
# (PYTHONPATH=src, or a compat-mode editable install) this folder would import a second time as a top-level
# ``core``, with a second copy of every class. It is only ever ``alisio.core``.
if __name__ != "alisio.core":
    raise ImportError(f"there is no top-level {__name__} package: import alisio.core")
