"""core/share."""
