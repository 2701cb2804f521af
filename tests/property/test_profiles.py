"""The Hypothesis profiles (tests/conftest.py): no example database anywhere, and ``ci`` derandomized, so a
property test's result never depends on what an earlier run on the same machine happened to find."""

from __future__ import annotations

import pytest
from hypothesis import settings


@pytest.mark.parametrize("name", ["dev", "ci", "thorough"])
def test_no_profile_reads_or_writes_an_example_database(name: str) -> None:
    """Each profile has ``database=None``, and so has a test's own ``@settings(...)`` built on it (which
    inherits the profile's database)."""
    profile = settings.get_profile(name)
    assert profile.database is None
    assert settings(profile, max_examples=3, deadline=None).database is None


def test_ci_draws_the_same_examples_on_every_run() -> None:
    """``ci`` (what ``make pytest`` loads) is derandomized: the examples are a function of the test, not of a
    random seed or a stored history."""
    assert settings.get_profile("ci").derandomize is True
