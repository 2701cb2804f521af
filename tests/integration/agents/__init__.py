"""Integration tests of alisio.shell.agents."""
