"""``eval export``: read a stored run, scrub it, scan it for secrets, write one shareable JSON bundle.

The steps, each a refusal point with one clear line (``ExportRefused``), nothing written on any of them:

1. the report directory: a path, or a run id (a directory name under ``<dataDir>/eval``: letters, digits,
   ``.``, ``_``, ``-``, or ``<runId>/<variant>`` for one variant of an ``eval variants`` run);
2. it exists and holds a report (else the message lists the most recent run ids, or the variants);
3. ``--out`` does not exist (unless ``force``), is not a directory, is not inside the run directory (``--force``
   must never overwrite the report files it reads), and its parent directory exists;
4. report.json, runs.jsonl and each run's transcript read (report.md too; when it is missing it is rendered
   from the report);
5. ``alisio.core.share.scrub`` replaces absolute paths and a non-plain provider id;
6. ``alisio.core.share.secrets`` scans the whole scrubbed bundle: well-known key shapes, credential-named variables of the
   environment and the configured ``provider.apiKeyEnv``. A hit refuses and names the field, never the value;
7. the bundle is written atomically (temporary sibling + ``os.replace``): never a partial file.

No network access: everything here is local files.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

import msgspec
from returns.result import Failure, Result, Success

from alisio.core.harness.config import DEFAULT_API_KEY_ENV
from alisio.core.lab.outputs.render import render_markdown
from alisio.core.lab.reports.report import Report
from alisio.core.lab.runs.records import RunRecord
from alisio.core.lab.runs.transcript import decode_transcript, transcript_path
from alisio.core.share.scrub import ScrubFacts, scrub_bundle
from alisio.core.share.secrets import SecretHit, known_credentials, scan
from alisio.shell.config_home import data_dir, key_variable, load_config
from alisio.shell.errors import CommandError
from alisio.shell.lab.store import (
    NOT_REGULAR,
    REPORT_MD,
    not_regular,
    read_regular,
    read_report,
    read_runs,
    write_bytes_atomic,
)
from alisio.shell.lab.stored import report_dir

__all__ = [
    "BUNDLE_SCHEMA_VERSION",
    "ExportFormat",
    "ExportRefused",
    "Exported",
    "build_bundle",
    "export_run",
    "scrub_facts",
]

BUNDLE_SCHEMA_VERSION: Final = 1
ExportFormat = Literal["bundle", "atif", "otlp-json"]
"""``eval export --format``: the bundle (one JSON file), ATIF trajectories or OTLP/JSON traces (a directory)."""
HITS_SHOWN: Final = 20
_RUN_ID: Final = re.compile(r"[A-Za-z0-9._-]+")


@dataclass(frozen=True)
class ExportRefused:
    """Why nothing was written: one line per problem (a secret hit is one line per field)."""

    lines: tuple[str, ...]


@dataclass(frozen=True)
class Exported:
    """The bundle that was written."""

    path: Path
    runs: int
    warnings: tuple[str, ...] = ()


def _out_problem(out: Path, force: bool, run_dir: Path) -> str | None:
    if out.resolve().is_relative_to(run_dir.resolve()):
        return f"--out {out}: is inside the run directory it exports; write the bundle elsewhere"
    if out.is_dir():
        return f"--out {out}: is a directory; name the bundle file, e.g. {out / 'run.json'}"
    if not_regular(out):
        return f"--out {out}: {NOT_REGULAR}"
    if out.exists() and not force:
        return f"--out {out}: already exists; pass --force to overwrite it"
    if not out.parent.is_dir():
        return f"--out {out}: the directory {out.parent} does not exist; create it first"
    return None


def _forms(paths: Iterable[str | Path | None]) -> tuple[str, ...]:
    """Each absolute path as given and as resolved (``/var`` and ``/private/var`` on macOS), once."""
    forms: dict[str, None] = {}
    for path in paths:
        if not path or not os.path.isabs(path):
            continue
        forms[str(path)] = None
        forms[os.path.realpath(path)] = None
    return tuple(forms)


def scrub_facts(env: Mapping[str, str], run_dir: Path) -> ScrubFacts:
    """The directories of this machine a bundle must not reveal."""
    home = env.get("HOME") or str(Path.home())
    temps = (tempfile.gettempdir(), env.get("TMPDIR"), env.get("TMP"), env.get("TEMP"), "/tmp", "/var/tmp")
    return ScrubFacts(
        home=_forms((home,)),
        data_dir=_forms((data_dir(env).absolute(),)),
        run_dir=_forms((run_dir.absolute(),)),
        tmp_dirs=_forms(temps),
    )


def _credentials(env: Mapping[str, str]) -> tuple[tuple[tuple[str, str], ...], tuple[str, ...]]:
    """The profile's credentials (and a warning when the configuration cannot tell which variable is the key)."""
    match load_config(env):
        case Success(loaded):
            named = key_variable(loaded.config.provider) or DEFAULT_API_KEY_ENV  # a preset's, too
            return known_credentials(env, (named,)), ()
        case Failure(error):
            warning = f"cannot read the configuration ({error}); scanning for {DEFAULT_API_KEY_ENV} and "
            warning += "credential-named variables only"
            return known_credentials(env, (DEFAULT_API_KEY_ENV,)), (warning,)
    raise AssertionError("unreachable")  # pragma: no cover


def _hit_lines(hits: Sequence[SecretHit]) -> tuple[str, ...]:
    shown = tuple(str(hit) for hit in hits[:HITS_SHOWN])
    more = (f"... and {len(hits) - HITS_SHOWN} more fields",) if len(hits) > HITS_SHOWN else ()
    fields = "1 field looks" if len(hits) == 1 else f"{len(hits)} fields look"
    verdict = (
        f"refused: {fields} like a secret (value not shown); nothing was written. Export strips nothing: "
        "remove it from the run's files if it must go, or share the report by hand"
    )
    return (*shown, *more, verdict)


def _read_markdown(run_dir: Path, report: Report) -> Result[str, str]:
    """report.md, or the report rendered again when the file is missing (rendering is deterministic)."""
    try:
        return Success(read_regular(run_dir / REPORT_MD).decode("utf-8"))
    except FileNotFoundError:
        return Success(render_markdown(report))
    except (OSError, UnicodeDecodeError) as error:
        return Failure(f"{run_dir / REPORT_MD}: cannot read: {error}")


def _read_bundle(run_dir: Path) -> Result[dict[str, object], str]:
    """The unscrubbed bundle of the run directory, or the first file that cannot be read."""
    return (
        read_report(run_dir)
        .alt(str)
        .bind(
            lambda report: (
                read_runs(run_dir)
                .alt(str)
                .bind(
                    lambda runs: _read_markdown(run_dir, report).bind(
                        lambda md: _read_transcripts(run_dir, runs).map(
                            lambda transcripts: build_bundle(report, runs, md, transcripts)
                        )
                    )
                )
            )
        )
    )


def _read_transcripts(run_dir: Path, runs: Sequence[RunRecord]) -> Result[dict[str, object], str]:
    """Each run's transcript events, by ``<task>/<repetition>`` (a run without one is left out)."""
    transcripts: dict[str, object] = {}
    for record in runs:
        path = run_dir / transcript_path(record.task_id, record.repetition)
        try:
            data = read_regular(path)
        except FileNotFoundError:
            continue
        except OSError as error:
            return Failure(f"{path}: cannot read: {error.strerror or error}")
        try:
            events = decode_transcript(data)
        except msgspec.DecodeError as error:
            return Failure(f"{path}: not a transcript: {error}")
        transcripts[f"{record.task_id}/{record.repetition}"] = [msgspec.to_builtins(e) for e in events]
    return Success(transcripts)


def build_bundle(
    report: Report, runs: Sequence[RunRecord], markdown: str, transcripts: Mapping[str, object] | None = None
) -> dict[str, object]:
    """The unscrubbed bundle: ``{"schemaVersion": 1, "report", "runs", "markdown", "transcripts"}``.

    ``transcripts`` maps ``<task>/<repetition>`` to the run's events (absent when no run kept one).
    """
    bundle: dict[str, object] = {
        "schemaVersion": BUNDLE_SCHEMA_VERSION,
        "report": msgspec.to_builtins(report),
        "runs": [msgspec.to_builtins(record) for record in runs],
        "markdown": markdown,
    }
    if transcripts:
        bundle["transcripts"] = dict(transcripts)
    return bundle


def export_run(
    ref: str, out: Path, force: bool, env: Mapping[str, str], fmt: ExportFormat = "bundle"
) -> Exported | ExportRefused:
    """Write the scrubbed bundle of a report directory (a path, or a run id under ``<dataDir>/eval``) to
    ``out``, or its runs as trajectories (``fmt`` ``atif`` or ``otlp-json``: ``out`` is then a directory),
    or say why not (nothing written)."""
    from alisio.shell.lab.export_formats import out_dir_problem

    try:
        run_dir = report_dir(ref, data_dir(env), "export")
    except CommandError as error:
        return ExportRefused(error.lines)
    problem = _out_problem(out, force, run_dir) if fmt == "bundle" else out_dir_problem(out, force, run_dir)
    if problem is not None:
        return ExportRefused((problem,))
    match _read_bundle(run_dir):
        case Failure(message):
            return ExportRefused((message,))
        case Success(raw):
            bundle = scrub_bundle(raw, scrub_facts(env, run_dir))
    known, warnings = _credentials(env)
    hits = scan(bundle, known)
    if hits:
        return ExportRefused(_hit_lines(hits))
    if fmt == "bundle":
        return _write_bundle(bundle, out, warnings)
    return _write_trajectories(bundle, out, "atif" if fmt == "atif" else "otlp-json", known, warnings)


def _write_trajectories(
    bundle: dict[str, object],
    out: Path,
    fmt: Literal["atif", "otlp-json"],
    known: tuple[tuple[str, str], ...],
    warnings: tuple[str, ...],
) -> Exported | ExportRefused:
    """The runs as ATIF or OTLP files in the directory ``out``: scanned again (they are read off the scanned
    bundle, so a hit means the conversion added one), then written all or none."""
    from alisio.shell.lab.export_formats import encode_files, trajectory_files, write_directory

    match trajectory_files(bundle, fmt):
        case Failure(message):
            return ExportRefused((message,))
        case Success(files):
            pass
    hits = scan(files, known)
    if hits:
        return ExportRefused(_hit_lines(hits))
    try:
        write_directory(out, encode_files(files))
    except OSError as error:
        return ExportRefused((f"--out {out}: cannot write: {error.strerror or error}",))
    runs = bundle.get("runs")
    return Exported(path=out, runs=len(runs) if isinstance(runs, list) else 0, warnings=warnings)


def _write_bundle(
    bundle: dict[str, object], out: Path, warnings: tuple[str, ...]
) -> Exported | ExportRefused:
    data = msgspec.json.format(msgspec.json.encode(bundle), indent=2) + b"\n"
    try:
        write_bytes_atomic(out, data)
    except OSError as error:
        return ExportRefused((f"--out {out}: cannot write: {error.strerror or error}",))
    runs = bundle.get("runs")
    return Exported(path=out, runs=len(runs) if isinstance(runs, list) else 0, warnings=warnings)
