"""alisio: a small headless coding-agent harness (``alisio run``) and its Reliability Lab (``alisio eval``).

The import packages are ``alisio.core`` (pure: data and functions from data to data; its sources are in
``src/core``) and ``alisio.shell`` (effects: files, processes, HTTP, the terminal; sources in ``src/shell``).
``src/alisio/core`` and ``src/alisio/shell`` are symbolic links to those directories, so the wheel installs
one top-level package, ``alisio``, and no ``core`` or ``shell`` of its own. The editable install maps
``alisio`` to ``src/alisio`` alone (pyproject's ``package-dir``), so ``src`` is never on ``sys.path`` and each
module is imported once, under one name; ``src/core`` and ``src/shell`` refuse to import under any other name.
"""
