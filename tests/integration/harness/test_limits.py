"""alisio.shell.harness.tools.limits.time_limit with real signals and timers (as pytest-timeout also uses them)."""

from __future__ import annotations

import re
import signal
import threading
import time
from collections.abc import Iterator
from types import FrameType

import pytest

from alisio.shell.harness.tools.limits import TimeLimitReached, time_limit


@pytest.fixture
def other_timer() -> Iterator[list[float]]:
    """Another SIGALRM user (like pytest-timeout): a handler recording when it fired, restored afterwards."""
    fired: list[float] = []

    def handler(signum: int, frame: FrameType | None) -> None:
        fired.append(time.monotonic())

    previous = signal.signal(signal.SIGALRM, handler)
    old = signal.setitimer(signal.ITIMER_REAL, 0)
    yield fired
    signal.setitimer(signal.ITIMER_REAL, *old)
    signal.signal(signal.SIGALRM, previous)


def _spin(seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


def test_a_catastrophic_match_is_interrupted_at_the_limit() -> None:
    """re backtracking exponentially stops within a few milliseconds of the limit."""
    started = time.monotonic()
    with pytest.raises(TimeLimitReached), time_limit(0.2):
        re.search(r"^(a+)+$", "a" * 40 + "b")
    assert 0.19 <= time.monotonic() - started < 1.0


def test_a_block_that_ends_in_time_leaves_the_timers_as_they_were() -> None:
    """After the block the handler is what it was, and so is the timer (pytest-timeout's, if armed): nothing
    of ours is left pending."""
    handler = signal.getsignal(signal.SIGALRM)
    left_before, _ = signal.getitimer(signal.ITIMER_REAL)
    with time_limit(0.05):
        pass
    left_after, _ = signal.getitimer(signal.ITIMER_REAL)
    assert signal.getsignal(signal.SIGALRM) == handler
    if left_before == 0:
        assert left_after == 0
    else:
        assert left_before - 1 < left_after <= left_before
    time.sleep(0.1)  # a stray alarm of ours would be delivered here


def test_an_earlier_timer_of_someone_else_still_fires_on_time(other_timer: list[float]) -> None:
    """A timer armed before (due in 0.1 s) fires during a longer block, via its own handler, and ours still
    fires at its own time afterwards."""
    armed = time.monotonic()
    signal.setitimer(signal.ITIMER_REAL, 0.1)
    with pytest.raises(TimeLimitReached), time_limit(0.3):
        _spin(2)
    assert len(other_timer) == 1 and 0.09 <= other_timer[0] - armed < 0.5
    assert 0.29 <= time.monotonic() - armed < 1.0


def test_a_later_timer_of_someone_else_is_rearmed_for_what_is_left(other_timer: list[float]) -> None:
    """A timer due in 0.4 s is set aside during a 0.1 s block and fires at its original time after it."""
    armed = time.monotonic()
    signal.setitimer(signal.ITIMER_REAL, 0.4)
    with time_limit(0.1):
        pass
    left, _ = signal.getitimer(signal.ITIMER_REAL)
    assert 0.1 < left <= 0.4
    _spin(0.6)
    assert len(other_timer) == 1 and 0.39 <= other_timer[0] - armed < 0.9


def test_outside_the_main_thread_it_is_a_no_op() -> None:
    """signal handlers belong to the main thread: elsewhere the block just runs (the tools' own checks apply)."""
    outcome: list[str] = []

    def work() -> None:
        with time_limit(0.01):
            time.sleep(0.05)
        outcome.append("ran")

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    assert outcome == ["ran"]
