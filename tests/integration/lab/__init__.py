"""Integration tests of alisio.shell.lab."""
