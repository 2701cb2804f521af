"""shell/replay."""
