"""shell/harness/tools."""
