"""An ``eval export`` bundle read back: the report, its runs, report.md and the transcripts, in one JSON file.

The bundle (``{"schemaVersion": 1, "report", "runs", "markdown", "transcripts"}``, written by
``alisio.shell.lab.export``) holds everything a colleague needs to read a run without its directory:
``eval compare`` takes its report, ``eval show`` its runs and transcripts. Decoding checks what a report
directory's files are checked for: the report's numbers (``alisio.core.lab.reports.report_json``), each run record,
each transcript event, and a schemaVersion no newer than this version reads.
"""

from __future__ import annotations

import msgspec
from returns.result import Failure, Result, Success

from alisio.core.base import Frozen
from alisio.core.errors import ReportError
from alisio.core.harness.events import Event
from alisio.core.lab.reports.report import Report
from alisio.core.lab.reports.report_json import decode_report
from alisio.core.lab.runs.records import RunRecord, schema_version_problem

__all__ = ["BUNDLE_SCHEMA_VERSION", "Bundle", "decode_bundle", "is_bundle"]

BUNDLE_SCHEMA_VERSION = 1


class Bundle(Frozen, frozen=True, kw_only=True):
    """One exported run, as ``eval export`` wrote it (scrubbed: placeholders for paths)."""

    report: Report
    runs: tuple[RunRecord, ...]
    markdown: str
    transcripts: tuple[tuple[str, tuple[Event, ...]], ...] = ()
    """``(<task>/<repetition>, events)`` for each run that kept a transcript."""

    def transcript(self, task_id: str, repetition: int) -> tuple[Event, ...] | None:
        """The events of one run, or ``None`` when the bundle holds none for it."""
        return dict(self.transcripts).get(f"{task_id}/{repetition}")


class _Probe(msgspec.Struct, rename="camel"):
    schema_version: int | None = None
    report: msgspec.Raw = msgspec.field(default_factory=msgspec.Raw)
    """Empty when absent (msgspec reads no ``Raw | None``)."""
    runs: msgspec.Raw = msgspec.field(default_factory=msgspec.Raw)
    markdown: str | None = None
    transcripts: dict[str, msgspec.Raw] | None = None


_PROBE = msgspec.json.Decoder(_Probe)
_RUNS = msgspec.json.Decoder(tuple[RunRecord, ...])
_EVENTS = msgspec.json.Decoder(tuple[Event, ...])


def _probe(data: bytes) -> _Probe | None:
    try:
        return _PROBE.decode(data)
    except msgspec.DecodeError:
        return None


def is_bundle(data: bytes) -> bool:
    """Whether ``data`` is a JSON object with a ``report`` and ``runs`` (an export bundle, not a report.json)."""
    probe = _probe(data)
    return probe is not None and len(probe.report) > 0 and len(probe.runs) > 0


def _transcripts(
    raw: dict[str, msgspec.Raw], source: str
) -> Result[tuple[tuple[str, tuple[Event, ...]], ...], ReportError]:
    out = []
    for key, value in raw.items():
        try:
            out.append((key, _EVENTS.decode(value)))
        except msgspec.DecodeError as error:
            return Failure(ReportError(source=source, message=f"transcripts[{key!r}]: {error}"))
    return Success(tuple(out))


def decode_bundle(data: bytes, source: str) -> Result[Bundle, ReportError]:
    """Parse an export bundle.

    Returns:
        The Bundle, or ``Failure(ReportError)`` naming ``source`` and what is wrong: not JSON, not a bundle
        (no ``report`` or ``runs``), a newer schemaVersion, the report's own problem, or the run or
        transcript that does not decode (msgspec's message with its path).
    """
    probe = _probe(data)
    if probe is None or not probe.report or not probe.runs:
        message = "not an eval export bundle (it needs a report and its runs)"
        return Failure(ReportError(source=source, message=message))
    problem = schema_version_problem(probe.schema_version or 0, BUNDLE_SCHEMA_VERSION)
    if problem is not None:
        return Failure(ReportError(source=source, message=problem))
    runs_raw, transcripts_raw = probe.runs, probe.transcripts or {}
    try:
        runs = _RUNS.decode(runs_raw)
    except msgspec.DecodeError as error:
        return Failure(ReportError(source=source, message=f"runs: {error}"))
    return decode_report(probe.report, f"{source}: report").bind(
        lambda report: _transcripts(transcripts_raw, source).map(
            lambda transcripts: Bundle(
                report=report, runs=runs, markdown=probe.markdown or "", transcripts=transcripts
            )
        )
    )
