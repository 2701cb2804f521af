"""Integration tests of alisio.shell.replay."""
