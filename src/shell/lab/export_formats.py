"""``eval export --format atif|otlp-json``: a report directory's runs as trajectory files, in a directory.

The files are read off the export's scrubbed, scanned bundle (``alisio.shell.lab.export``), decoded back into
the lab's records and events, and converted by the core (``alisio.core.lab.outputs.atif``, ``.otlp``):

- ``atif``: ``<task>/<rep>.json``, one ATIF trajectory per run;
- ``otlp-json``: ``traces.jsonl``, one OTLP/JSON ``ExportTraceServiceRequest`` per run, a line each.

The directory is written all or none: every file goes into a temporary sibling directory that then takes
``--out``'s name (with ``--force`` an existing one is replaced the same way, its old content removed only
after the new one is in place).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

import msgspec
from returns.result import Failure, Result, Success

from alisio.core.harness.events import Event
from alisio.core.lab.outputs.atif import atif_trajectory
from alisio.core.lab.outputs.otlp import otlp_request
from alisio.core.lab.reports.report import Report
from alisio.core.lab.runs.records import RunRecord
from alisio.shell.lab.store import NOT_REGULAR, not_regular

__all__ = ["TRACES_FILE", "encode_files", "out_dir_problem", "trajectory_files", "write_directory"]

TRACES_FILE = "traces.jsonl"


def out_dir_problem(out: Path, force: bool, run_dir: Path) -> str | None:
    """Why ``--out`` cannot take the trajectories (``None`` when it can)."""
    if out.resolve().is_relative_to(run_dir.resolve()):
        return f"--out {out}: is inside the run directory it exports; write the trajectories elsewhere"
    if out.is_symlink() or (out.exists() and not out.is_dir()):
        what = NOT_REGULAR if not_regular(out) and not out.is_symlink() else "is not a directory"
        return f"--out {out}: {what}; --format atif and otlp-json write a directory"
    if out.is_dir() and any(out.iterdir()) and not force:
        return f"--out {out}: is a directory that is not empty; pass --force to replace it"
    if not out.parent.is_dir():
        return f"--out {out}: the directory {out.parent} does not exist; create it first"
    return None


def _decoded(bundle: Mapping[str, object]) -> tuple[Report, list[RunRecord], dict[str, tuple[Event, ...]]]:
    report = msgspec.convert(bundle["report"], Report)
    runs = msgspec.convert(bundle["runs"], list[RunRecord])
    raw = bundle.get("transcripts")
    transcripts = {
        str(key): tuple(msgspec.convert(events, list[Event]))
        for key, events in (raw.items() if isinstance(raw, Mapping) else ())
    }
    return report, runs, transcripts


def trajectory_files(
    bundle: Mapping[str, object], fmt: Literal["atif", "otlp-json"]
) -> Result[dict[str, object], str]:
    """The files of the export by relative path: an ATIF trajectory per run, or the list of OTLP requests."""
    try:
        report, runs, transcripts = _decoded(bundle)
    except (KeyError, msgspec.ValidationError) as error:
        return Failure(f"the report's files do not decode: {error}")
    conditions = report.conditions
    ordered = sorted(runs, key=lambda r: (r.task_id, r.repetition))
    events = {id(r): transcripts.get(f"{r.task_id}/{r.repetition}", ()) for r in ordered}
    if fmt == "atif":
        return Success(
            {
                f"{r.task_id}/{r.repetition}.json": atif_trajectory(conditions, r, events[id(r)])
                for r in ordered
            }
        )
    return Success({TRACES_FILE: [otlp_request(conditions, r, events[id(r)]) for r in ordered]})


def encode_files(files: Mapping[str, object]) -> dict[str, bytes]:
    """Each file's bytes: a trajectory as indented JSON, the traces as JSON Lines (one request a line)."""
    encoded: dict[str, bytes] = {}
    for name, value in files.items():
        if name == TRACES_FILE and isinstance(value, list):
            encoded[name] = b"".join(msgspec.json.encode(item) + b"\n" for item in value)
        else:
            encoded[name] = msgspec.json.format(msgspec.json.encode(value), indent=2) + b"\n"
    return encoded


def write_directory(out: Path, files: Mapping[str, bytes]) -> None:
    """Write ``files`` as the directory ``out``, all or none (see the module docstring). Raises ``OSError``."""
    staging = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}.", suffix=".tmp"))
    old: Path | None = None
    try:
        for name, data in files.items():
            path = staging / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        if out.is_dir():
            old = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}.", suffix=".old"))
            os.replace(out, old / out.name)
        os.replace(staging, out)
    except BaseException:
        if old is not None and not out.exists():
            os.replace(old / out.name, out)
        shutil.rmtree(staging, ignore_errors=True)
        raise
    finally:
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
