"""Fixtures the integration tests share (the helpers they call are in ``tests.integration.helpers``)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """An empty configuration directory and a data directory, both under tmp_path."""
    (tmp_path / "config").mkdir()
    return tmp_path
