"""Integration tests of alisio.shell.sandbox."""
