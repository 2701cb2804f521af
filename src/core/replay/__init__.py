"""Replay's pure rules: request fingerprints (normalise, hash, explain a difference) and the cassette model."""
