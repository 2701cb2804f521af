"""report.json: its model and the blocks it carries (origin, trust, the reliability profile, the sequential
stops), built from records, its numbers checked, encoded and decoded, and the conditions that name a run."""
