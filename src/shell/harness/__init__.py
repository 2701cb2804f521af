"""shell/harness."""
