"""core/lab."""
