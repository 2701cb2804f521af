"""shell/lab."""
