"""``python -m alisio``: the same as the ``alisio`` command."""

from alisio.shell.cli.main import main

main()
