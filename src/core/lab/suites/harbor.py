"""Harbor (and Terminal-Bench) tasks as alisio tasks: what is accepted, and how a task maps (pure).

A Harbor task directory holds task.toml, instruction.md, environment/Dockerfile, tests/test.sh (which writes
``/logs/verifier/reward.txt`` or ``reward.json``) and optionally solution/solve.sh. Accepted only when:

- its Dockerfile is a plain base image the local machine stands in for (``FROM`` one of ``BASE_IMAGES``,
  optionally an absolute ``WORKDIR``; anything that builds more, RUN, COPY..., is refused with its line);
- its working directory can be honoured (``harbor_workdir``): the Dockerfile's ``WORKDIR``, else the one
  directory its tests use (``/app`` in Terminal-Bench's tasks, ``/workspace`` in others; ``/app`` when they
  name none); refused in one line when the tests use another directory than the ``WORKDIR``, or several, or
  one the sandbox cannot put the copy at;
- its tests install nothing over the network at verification time (``curl … | sh``, ``pip install``,
  ``uv pip install``, ``uvx``, ``apt-get install``...): such a verifier is reported as not runnable offline.

The mapping: instruction.md -> prompt; ``[agent] timeout_sec`` -> ``maxWallMs``; ``[verifier] timeout_sec``
-> the command verifier's ``timeoutMs``; solve.sh -> the solution (``solutions/<id>/solve.sh``, run with its
directory at /solution). The fixture is empty, as the image's working directory is. The container's absolute
paths become the task's ``sandbox`` section (``alisio.core.lab.suites.suite_sandbox``): the copy at the working
directory (``sandbox.workdir``); for the verifier only,
the tests (``harbor/<id>/tests`` in the suite, outside the copy: the agent never sees them) at /tests, a fresh
/logs/verifier, and ``harbor/_verify.py`` at ``VERIFY``, which runs test.sh and passes when the reward it wrote
is at least 1. Such a task runs only under ``--sandbox bwrap``; it is also tagged ``NEEDS_SANDBOX``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from returns.result import Failure, Result, Success

from alisio.core.harness.sandbox import sandbox_path_problem

__all__ = [
    "BASE_IMAGES",
    "DEFAULT_WORKDIR",
    "NEEDS_SANDBOX",
    "VERIFY",
    "dockerfile_workdir",
    "harbor_task",
    "harbor_workdir",
    "offline_problem",
    "used_directories",
]

NEEDS_SANDBOX: Final = "needs-sandbox-bwrap"
"""The tag of a task whose run needs the absolute paths of its container (/app, /tests, /logs/verifier)."""
BASE_IMAGES: Final = ("ubuntu", "debian", "python", "buildpack-deps")
_NETWORK: Final = (
    (re.compile(r"\b(curl|wget)\b[^|\n]*\|\s*(ba|z)?sh\b"), "downloads and runs a script"),
    (re.compile(r"\buv\s+pip\s+install\b"), "uv pip install"),
    (re.compile(r"\buvx\b|\buv\s+tool\s+(install|run)\b"), "uvx / uv tool"),
    (re.compile(r"\bpip3?\s+install\b"), "pip install"),
    (re.compile(r"\b(apt-get|apt|apk|yum|dnf)\s+(-\S+\s+)*(install|add)\b"), "a system package install"),
    (re.compile(r"\bnpm\s+(install|i)\b|\bnpx\b"), "npm"),
)


def dockerfile_workdir(text: str) -> Result[str | None, str]:
    """The Dockerfile's ``WORKDIR`` (the last; ``None`` without one), or why the Dockerfile is more than a
    base image the local machine stands in for."""
    base: str | None = None
    workdir: str | None = None
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        word, _, rest = line.partition(" ")
        match word.upper():
            case "FROM" if base is None:
                base = rest.split()[0] if rest.split() else ""
                name = base.split("/")[-1].split(":")[0].split("@")[0]
                if name not in BASE_IMAGES:
                    return Failure(
                        f"line {number}: base image {base!r} is not one the local machine stands in for "
                        f"({', '.join(BASE_IMAGES)})"
                    )
            case "WORKDIR" if base is not None:
                workdir = rest.strip().strip("\"'").rstrip("/") or "/"
                if not workdir.startswith("/"):
                    return Failure(
                        f"line {number}: WORKDIR {rest.strip()!r} is relative (only an absolute one)"
                    )
            case _:
                return Failure(f"line {number}: {word} builds more than a base image (only FROM and WORKDIR)")
    return Success(workdir) if base is not None else Failure("no FROM line")


DEFAULT_WORKDIR: Final = "/app"
"""The working directory of a task whose Dockerfile has no WORKDIR and whose tests name none."""
_SYSTEM_DIRECTORIES: Final = frozenset(
    [
        "bin",
        "boot",
        "dev",
        "etc",
        "home",
        "lib",
        "lib32",
        "lib64",
        "libx32",
        "logs",
        "media",
        "mnt",
        "nix",
        "opt",
        "oracle",
        "proc",
        "root",
        "run",
        "sbin",
        "solution",
        "srv",
        "sys",
        "tests",
        "tmp",
        "usr",
        "var",
    ]
)
_ABSOLUTE: Final = re.compile(r"(?<![\w.$}~/\\-])/([A-Za-z0-9_-]+)(?![\w.-])")
_VERIFIER_PATHS: Final = ("/tests", "/logs/verifier", "/opt/alisio/harbor_verify.py")
"""Where the verifier finds the tests, writes its reward and finds ``VERIFY``: no workdir may overlap them."""


def used_directories(name: str, text: str) -> list[tuple[str, str]]:
    """The top-level directories a test file names by absolute path (``/workspace/x``, ``cd /app``), other
    than the system's and the verifier's own (``/usr``, ``/tmp``, ``/tests``, ``/logs``...), with ``name``."""
    found: dict[str, None] = {}
    for line in text.splitlines():
        for match in _ABSOLUTE.finditer(line.split("#", 1)[0]):
            if match[1] not in _SYSTEM_DIRECTORIES:
                found[f"/{match[1]}"] = None
    return [(name, directory) for directory in found]


def harbor_workdir(dockerfile: str | None, used: list[tuple[str, str]]) -> Result[str, str]:
    """Where the copy goes: the Dockerfile's ``WORKDIR``, else the one directory the tests use (``used``: test
    file, directory), else ``DEFAULT_WORKDIR``; a one-line reason when that cannot be honoured."""
    directories = sorted({directory for _, directory in used})
    workdir = dockerfile or (directories[0] if len(directories) == 1 else DEFAULT_WORKDIR)
    top = "/" + workdir.strip("/").split("/", 1)[0]
    others = [(name, directory) for name, directory in used if directory != top]
    if others and dockerfile is not None:
        name, directory = others[0]
        return Failure(
            f"{name}: uses {directory}, but environment/Dockerfile's WORKDIR is {dockerfile}: the copy can be at "
            "one path only, so these tests cannot be honoured"
        )
    if others:
        return Failure(
            f"tests use {' and '.join(directories)} ({', '.join(sorted({n for n, _ in used}))}), with no WORKDIR "
            "to choose: the copy can be at one path only, so these tests cannot be honoured"
        )
    why = sandbox_path_problem(workdir) or next(
        (f"overlaps {path}, the verifier's" for path in _VERIFIER_PATHS if _overlap(workdir, path)), None
    )
    if why is not None:
        where = (
            f"environment/Dockerfile's WORKDIR {workdir}" if dockerfile else f"the tests' directory {workdir}"
        )
        return Failure(f"{where} cannot be honoured: the sandbox cannot put the copy there (it {why})")
    return Success(workdir)


def _overlap(a: str, b: str) -> bool:
    return a == b or a.startswith(b + "/") or b.startswith(a + "/")


def offline_problem(script: str) -> str | None:
    """Why the test script cannot run offline (it installs tools at verification time), or None."""
    for number, line in enumerate(script.splitlines(), start=1):
        code = line.split("#", 1)[0]
        for pattern, what in _NETWORK:
            if pattern.search(code):
                return f"line {number}: installs tools over the network at verification time ({what}): not runnable offline"
    return None


MAX_TIMEOUT_S = 86400.0
"""The longest ``timeout_sec`` an imported task may ask for (a day; also what refuses inf and nan)."""


def _seconds(config: Mapping[str, Any], section: str, default: float) -> float | str:
    table = config.get(section, {})
    value = table.get("timeout_sec", default) if isinstance(table, dict) else default
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= MAX_TIMEOUT_S:
        return f"[{section}] timeout_sec must be a positive number of seconds, at most {MAX_TIMEOUT_S:g}"
    return float(value)


VERIFY: Final = _VERIFIER_PATHS[2]
"""Where the verifier finds ``harbor/_verify.py`` of the suite, inside its sandbox."""


def harbor_task(
    task_id: str,
    config: Mapping[str, Any],
    instruction: str,
    has_solution: bool,
    workdir: str = DEFAULT_WORKDIR,
) -> Result[dict[str, Any], str]:
    """The suite task of one Harbor task (``config`` is task.toml decoded; ``workdir``: ``harbor_workdir``'s);
    a one-line reason when refused."""
    agent = _seconds(config, "agent", 600.0)
    verifier = _seconds(config, "verifier", 120.0)
    for value in (agent, verifier):
        if isinstance(value, str):
            return Failure(f"task.toml: {value}")
    assert isinstance(agent, float) and isinstance(verifier, float)
    if not instruction.strip():
        return Failure("instruction.md: is empty")
    metadata = config.get("metadata", {})
    tags = [str(t) for t in metadata.get("tags", []) if str(t)] if isinstance(metadata, dict) else []
    task: dict[str, Any] = {
        "id": task_id,
        "prompt": instruction,
        "fixture": f"fixtures/{task_id}",
        "budget": {"maxTurns": 100, "maxWallMs": min(round(agent * 1000), 2**31 - 1)},
        "policy": {"mode": "auto", "allow": ["write", "process"]},
        "verifiers": [
            {
                "kind": "command",
                "id": "tests",
                "command": ["python3", VERIFY],
                "timeoutMs": min(max(round(verifier * 1000), 1), 600_000),
            }
        ],
        "tags": [*dict.fromkeys([*tags, "harbor", NEEDS_SANDBOX])],
        "sandbox": {
            "workdir": workdir,
            "verifierMounts": [
                {"target": "/tests", "source": f"harbor/{task_id}/tests"},
                {"target": "/logs/verifier"},
                {"target": VERIFY, "source": "harbor/_verify.py"},
            ],
        },
    }
    if has_solution:
        task["solution"] = f"solutions/{task_id}/solve.sh"
    return Success(task)
