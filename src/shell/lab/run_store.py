"""Where ``alisio run`` keeps its record: ``<dataDir>/run/<runId>/transcript.jsonl``.

The transcript is the run's whole event log, redacted as an eval run's transcripts are
(``alisio.core.lab.runs.transcript``); ``eval show DIR`` opens it. A record that cannot be written is a warning
for the caller, never a failed run: the work in the workspace is done either way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path

from alisio.core.harness.events import Event
from alisio.core.lab.outputs.run_record import TRANSCRIPT_JSONL
from alisio.core.lab.runs.transcript import encode_transcript
from alisio.shell.config_home import data_dir
from alisio.shell.lab.directory import run_id_for
from alisio.shell.lab.store import write_bytes_atomic

__all__ = ["RUNS_OF_RUN", "keep_run_record"]

RUNS_OF_RUN = "run"
"""``<dataDir>/run``: the records of ``alisio run`` (``<dataDir>/eval`` holds the lab's)."""


def keep_run_record(
    env: Mapping[str, str], events: Sequence[Event], known: tuple[tuple[str, str], ...]
) -> Path:
    """Write the transcript into a new ``<dataDir>/run/<runId>/``; its path.

    Raises:
        OSError: the data directory cannot be created or written.
    """
    root = data_dir(env) / RUNS_OF_RUN
    root.mkdir(parents=True, exist_ok=True)
    base = run_id_for(datetime.now(UTC))
    candidate, number = base, 1
    while True:
        try:
            (root / candidate).mkdir()
            break
        except FileExistsError:
            number += 1
            candidate = f"{base}-{number}"
    path = root / candidate / TRANSCRIPT_JSONL
    write_bytes_atomic(path, encode_transcript(events, known))
    return path
