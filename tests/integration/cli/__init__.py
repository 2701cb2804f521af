"""Integration tests of alisio.shell.cli."""
