"""core/harness."""
