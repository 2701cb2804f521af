"""Reading results from other harnesses: an Inspect AI log (``.eval`` or ``.json``) or a Harbor job directory.

``read_foreign`` tells them apart by content, reads them with bounds (a zip's members by their declared sizes,
each checked against its CRC; at most ``MAX_BYTES`` in all), and hands the decoded JSON to
``alisio.core.lab.sources.foreign``, which maps them onto tasks and repetitions. Anything else (a report directory, a
report.json, an export bundle, a run id) is ``None``: the caller reads it as its own.

Inspect writes its ``.eval`` members compressed with zstd, which Python's zipfile cannot read before 3.14:
alisio reads them with the ``zstandard`` package (``pip install 'alisio[inspect]'``; a log written with
deflate needs nothing). Every problem is a ``CommandError`` naming the file.
"""

from __future__ import annotations

import json
import struct
import zipfile
import zlib
from pathlib import Path

from returns.result import Failure, Success

from alisio.core.lab.sources.foreign import ForeignRuns, Scoring, harbor_runs, inspect_runs
from alisio.shell.errors import CommandError

__all__ = ["MAX_BYTES", "read_foreign"]

MAX_BYTES = 512 * 1024 * 1024
"""The most a foreign result may hold, uncompressed, in all: past it, it is refused rather than read."""
_ZSTD = 93
_CHUNK = 1 << 20
_LOCAL_HEADER = struct.Struct("<4s5H3L2H")
_INSTALL = "install alisio's inspect extra to read it: pip install 'alisio[inspect]' (the zstandard package)"


def _json(data: bytes, where: str) -> object:
    try:
        return json.loads(data)
    except (ValueError, UnicodeDecodeError) as error:
        raise CommandError(f"{where}: not JSON: {error}") from None


def _member(archive: zipfile.ZipFile, path: Path, info: zipfile.ZipInfo) -> bytes:
    """One member's bytes, zstd included, checked against its CRC."""
    where = f"{path}: {info.filename}"
    if info.compress_type != _ZSTD:
        try:
            return archive.read(info)
        except (zipfile.BadZipFile, NotImplementedError, OSError) as error:
            raise CommandError(f"{where}: cannot read: {error}") from None
    try:
        import zstandard
    except ImportError:
        raise CommandError(f"{where}: compressed with zstd; {_INSTALL}") from None
    with path.open("rb") as handle:
        handle.seek(info.header_offset)
        header = handle.read(_LOCAL_HEADER.size)
        fields = _LOCAL_HEADER.unpack(header) if len(header) == _LOCAL_HEADER.size else (b"",)
        if fields[0] != b"PK\x03\x04":
            raise CommandError(f"{where}: its local header is damaged (not a readable Inspect log)")
        handle.seek(fields[-2] + fields[-1], 1)  # the name and the extra field
        raw = handle.read(info.compress_size)
    data = bytearray()
    try:  # never more than the size it declares (a zstd frame's own content size is not believed)
        with zstandard.ZstdDecompressor().stream_reader(raw) as reader:
            while len(data) <= info.file_size and (
                chunk := reader.read(min(info.file_size + 1 - len(data), _CHUNK))
            ):
                data += chunk
    except zstandard.ZstdError as error:
        raise CommandError(f"{where}: not valid zstd data: {error}") from None
    if len(data) > info.file_size:
        raise CommandError(f"{where}: holds more than the {info.file_size:,} bytes it declares; not read")
    if len(data) != info.file_size or zlib.crc32(data) != info.CRC:
        raise CommandError(f"{where}: its content does not match its size and checksum")
    return bytes(data)


def _inspect_eval(path: Path, scoring: Scoring) -> ForeignRuns:
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as error:
        raise CommandError(f"{path}: not a readable Inspect log: {error}") from None
    with archive:
        infos = {info.filename: info for info in archive.infolist()}
        if sum(info.file_size for info in infos.values()) > MAX_BYTES:
            raise CommandError(
                f"{path}: holds more than {MAX_BYTES // (1024 * 1024)} MiB uncompressed; not read"
            )
        header = _json(_member(archive, path, infos["header.json"]), f"{path}: header.json")
        names = sorted(name for name in infos if name.startswith("samples/") and name.endswith(".json"))
        samples = [_json(_member(archive, path, infos[name]), f"{path}: {name}") for name in names]
    return _mapped(inspect_runs(_obj(header), [_obj(s) for s in samples], scoring, str(path)))


def _obj(value: object) -> dict[str, object]:
    return value if isinstance(value, dict) else {}


def _mapped(result: object) -> ForeignRuns:
    match result:
        case Success(ForeignRuns() as runs):
            return runs
        case Failure(problem):
            raise CommandError(str(problem))
    raise AssertionError("unreachable")  # pragma: no cover


def _file(path: Path, scoring: Scoring) -> ForeignRuns | None:
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            inspect = "header.json" in archive.namelist()
        return _inspect_eval(path, scoring) if inspect else None
    if path.suffix != ".json" or path.stat().st_size > MAX_BYTES:
        return None
    try:
        data = json.loads(path.read_bytes())
    except (ValueError, UnicodeDecodeError):
        return None  # not an Inspect log: read as a report.json, which says what is wrong
    if isinstance(data, dict) and isinstance(data.get("eval"), dict) and "samples" in data:
        samples = data.get("samples") or []
        return _mapped(inspect_runs(data, [_obj(s) for s in samples], scoring, str(path)))
    return None


def _json_file(path: Path) -> dict[str, object]:
    """A Harbor file's JSON object (``{}`` for another value), read only when at most ``MAX_BYTES``."""
    if path.stat().st_size > MAX_BYTES:
        raise CommandError(f"{path}: larger than {MAX_BYTES // (1024 * 1024)} MiB; not read")
    return _obj(_json(path.read_bytes(), str(path)))


def _harbor(directory: Path, scoring: Scoring) -> ForeignRuns | None:
    """A Harbor job directory (trial sub-directories holding result.json), else ``None``."""
    if (directory / "report.json").exists():
        return None
    results = sorted(p for p in directory.glob("*/result.json") if p.is_file())
    trials: list[tuple[str, dict[str, object]]] = []
    for result in results:
        trial = _json_file(result)
        if "trial_name" in trial and "task_name" in trial:
            trials.append((result.parent.name, trial))
    if not trials:
        own = directory / "result.json"
        if own.is_file() and "trial_name" in _json_file(own):
            raise CommandError(
                f"{directory}: a Harbor trial directory; give its job directory ({directory.parent})"
            )
        return None
    config = directory / "config.json"
    job = _json_file(config) if config.is_file() else {}
    return _mapped(harbor_runs(job, trials, scoring, str(directory)))


def read_foreign(ref: str, scoring: Scoring) -> ForeignRuns | None:
    """The foreign result ``ref`` names (an Inspect log file, a Harbor job directory), or ``None``."""
    path = Path(ref).expanduser()
    try:
        if path.is_file():
            return _file(path, scoring)
        if path.is_dir():
            return _harbor(path, scoring)
    except OSError as error:
        raise CommandError(f"{path}: cannot read: {error.strerror or error}") from None
    return None
