"""A run: its record (``runs.jsonl``), its redacted transcript and the workspace it left, kept as a diff."""
