"""Hypothesis profiles: ``dev`` (default), ``ci`` (what `make test` uses: 60 examples, derandomized, to keep it
under 10 minutes on 2 cores) and ``thorough``.

No profile uses an example database (``database=None``): a result never depends on what earlier runs on this
machine found. ``ci`` is also derandomized, so the same code draws the same examples on every run; a failure
prints its ``@reproduce_failure`` blob and seed, which is how to replay it."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile("dev", max_examples=100, deadline=None, database=None)
settings.register_profile(
    "ci",
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=True,
    database=None,
)
settings.register_profile("thorough", max_examples=5000, deadline=None, database=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))
