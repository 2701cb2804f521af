"""A provider that serves a cassette's recorded events instead of calling a model.

Each request is normalised with the run's own rules (the same ones the recording used: the workspace path
becomes ``<workspace>``, the task's replayNormalize applies) and matched against the next recorded call by
fingerprint (``alisio.core.replay.cassette.match_call``). A match returns the recorded events; a mismatch, or a call past
the end of the recording, keeps the ``Divergence`` and raises ``ProviderFailure("divergence")``, which the
agent turns into a run that ends error. After the run, ``divergence`` also reports recorded calls that were
never made (``alisio.core.replay.cassette.unplayed``). No network, no credentials, no time: replay is deterministic.
"""

from __future__ import annotations

from returns.result import Failure

from alisio.core.harness.protocol import ProviderRequest, StreamEvent
from alisio.core.lab.runs.records import Divergence
from alisio.core.replay.cassette import Cassette, match_call, unplayed
from alisio.core.replay.fingerprint import Rules, normalize_request
from alisio.shell.harness.providers.base import FirstEvent, ProviderFailure, RetryNotice

__all__ = ["ReplayProvider"]


class ReplayProvider:
    """Plays ``cassette`` call by call for one run (see the module docstring). One run, one provider."""

    def __init__(self, cassette: Cassette, rules: Rules = ()) -> None:
        self._cassette = cassette
        self._rules = rules
        self._next = 0
        self._divergence: Divergence | None = None

    def with_rules(self, rules: Rules) -> ReplayProvider:
        """A fresh replay of the same cassette that normalises requests with ``rules`` (the run's)."""
        return ReplayProvider(self._cassette, rules)

    @property
    def id(self) -> str:
        return self._cassette.header.provider

    @property
    def calls_made(self) -> int:
        """How many calls were answered from the recording."""
        return self._next

    @property
    def divergence(self) -> Divergence | None:
        """The first divergence: a differing or extra call, else recorded calls never made, else ``None``."""
        if self._divergence is not None:
            return self._divergence
        return unplayed(self._cassette, self._next)

    def stream(
        self,
        request: ProviderRequest,
        on_retry: RetryNotice | None = None,
        *,
        timeout_s: float | None = None,
        on_first_event: FirstEvent | None = None,
    ) -> tuple[StreamEvent, ...]:
        """The recorded events of the next call, or ``ProviderFailure("divergence")`` naming the field."""
        if self._divergence is not None:
            raise ProviderFailure("divergence", "the replay already diverged")
        result = match_call(self._cassette, self._next, normalize_request(request, self._rules))
        if isinstance(result, Failure):
            found: Divergence = result.failure()
            self._divergence = found
            raise ProviderFailure("divergence", f"replay diverged at call {found.call_index}: {found.field}")
        self._next += 1
        events: tuple[StreamEvent, ...] = result.unwrap()
        return events
