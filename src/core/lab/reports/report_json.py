"""report.json on the wire: ``encode_report`` writes it, ``decode_report`` reads it and checks its numbers."""

from __future__ import annotations

import msgspec
from returns.result import Failure, Result, Success

from alisio.core.errors import ReportError
from alisio.core.lab.reports.report import REPORT_SCHEMA_VERSION, Report
from alisio.core.lab.reports.report_check import describe, report_problems
from alisio.core.lab.runs.records import schema_version_problem

__all__ = ["decode_report", "encode_report"]

_ENCODER = msgspec.json.Encoder()
_DECODER = msgspec.json.Decoder(Report)


def encode_report(report: Report) -> bytes:
    """report.json bytes: indented JSON with a trailing newline."""
    return msgspec.json.format(_ENCODER.encode(report), indent=2) + b"\n"


def decode_report(data: bytes, source: str) -> Result[Report, ReportError]:
    """Parse report.json bytes; unknown fields are ignored (a newer harness's report still loads).

    Returns:
        The Report, or ``Failure(ReportError)`` with msgspec's message (not JSON, or the field path that is
        missing or of the wrong type), a hint when the JSON is not a report at all, the schemaVersion
        when it is newer than this version reads (never a silent misreading), or the first impossible
        number with its task and field (``alisio.core.lab.reports.report_check``: negative counts, counts that do
        not add up, rates outside [0, 1]).
    """
    try:
        report = _DECODER.decode(data)
    except msgspec.ValidationError as error:
        return Failure(ReportError(source=source, message=f"not an alisio report: {error}"))
    except msgspec.DecodeError as error:
        return Failure(ReportError(source=source, message=f"not valid JSON: {error}"))
    problem = schema_version_problem(report.schema_version, REPORT_SCHEMA_VERSION)
    if problem is not None:
        return Failure(ReportError(source=source, message=problem))
    # Types say "an int"; a hand-edited or corrupted report can still say judged: -3 or passes > judged.
    impossible = report_problems(report)
    if impossible:
        more = f" (and {len(impossible) - 1} more)" if len(impossible) > 1 else ""
        message = f"impossible numbers: {describe(impossible[0], report)}{more}"
        return Failure(ReportError(source=source, message=message))
    return Success(report)
