"""core/replay."""
