"""The judges: a verifier and its facts in, a result out; a run's outcome and status; a suite's own checks."""
