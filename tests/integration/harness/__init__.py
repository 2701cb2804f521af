"""Integration tests of alisio.shell.harness."""
