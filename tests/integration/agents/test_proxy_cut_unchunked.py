"""Item D6 (issue 26) against a provider whose stream has no length and is not chunked (the body ends when its
connection closes, as HTTP/1.0 streams and some small servers send it): a call still streaming when the run
ends is cut, not kept as an answer that finished badly. Before, the proxy's shutdown of the connection read as
the body's end: the call was a provider failure (``the answer ended before it finished``), the run an
``error`` excluded from every rate, and the 1,234 input tokens it reported had no incident."""

from __future__ import annotations

import functools
import time
from pathlib import Path

import pytest

from tests.integration.agents.hostile_endpoint import HostileEndpoint, endless_anthropic
from tests.integration.agents.test_proxy_adversarial import (
    HOSTILE,
    _agent,
    _events,
    _records,
    _run,
    _suite,
    _task,
)
from tests.integration.helpers import write_config

pytestmark = pytest.mark.xdist_group("external-agents")


def test_a_call_cut_at_the_runs_end_is_cut_when_its_body_ends_with_its_connection(tmp_path: Path) -> None:
    argv = ["python3", str(HOSTILE), "--api", "anthropic", "abandon"]
    write_config(tmp_path, '[provider]\nmodel = "m"\n\n' + _agent("gone", argv, api='"anthropic"'))
    suite = _suite(tmp_path, [_task("gone", "gone")])
    out = tmp_path / "out"
    with HostileEndpoint(functools.partial(endless_anthropic, chunked=False)) as endpoint:
        done = _run(tmp_path, suite, endpoint.base_url, out)
        deadline = time.monotonic() + 5
        while endpoint.writing and time.monotonic() < deadline:
            time.sleep(0.05)
        still = endpoint.writing
    assert done.returncode == 0, done.stderr
    assert still == 0  # the proxy closed the endless answer's connection
    record = _records(out)["gone"]
    assert (record.status.value, record.reason, record.measured.turns) == ("fail", None, 1)
    assert (record.measured.input_tokens, record.measured.usage_complete) == (1234, False)
    (incident,) = [i for i in record.incidents if i.kind == "usage_unreported"]
    assert (
        "still streaming when the run ended: cancelled, after it reported 1,234 input tokens"
        in incident.message
    )
    (responded,) = [e for e in _events(out, "gone") if e["type"] == "provider_response"]
    assert responded["finishReason"] == "cut"
