"""Fixtures the integration tests share (the helpers they call are in ``tests.integration.helpers``)."""

from __future__ import annotations

import signal
import threading
from pathlib import Path

import pytest

if (
    threading.current_thread() is threading.main_thread()
    and signal.getsignal(signal.SIGINT) == signal.SIG_IGN
):
    # Started as a background job of a shell without job control (`make pytest &` in a script): SIGINT is
    # ignored, and an ignored signal stays ignored across exec, so every alisio the tests spawn would drop the
    # Ctrl-C the signal tests send (each then waits out its command's sleep). Ctrl-C at a terminal never
    # reaches a process that inherited it ignored: give the tests, and their children, the default.
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """An empty configuration directory and a data directory, both under tmp_path."""
    (tmp_path / "config").mkdir()
    return tmp_path
