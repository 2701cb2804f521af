"""alisio's imperative shell: files, processes, HTTP, clock, environment and the terminal.

Each function does one effect and asks ``core`` for every decision.
"""

# The sources live in src/shell, and src/alisio/shell links to them: with ``src`` itself on sys.path
# (PYTHONPATH=src, or a compat-mode editable install) this folder would import a second time as a top-level
# ``shell``, with a second copy of every class. It is only ever ``alisio.shell``.
if __name__ != "alisio.shell":
    raise ImportError(f"there is no top-level {__name__} package: import alisio.shell")
