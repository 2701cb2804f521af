"""Providers: where assistant turns come from (a real endpoint, a script, later a cassette)."""
