"""Harbor (and Terminal-Bench) tasks as alisio tasks: what is accepted, and how a task maps (pure).

A Harbor task directory holds task.toml, instruction.md, environment/Dockerfile, tests/test.sh (which writes
``/logs/verifier/reward.txt`` or ``reward.json``) and optionally solution/solve.sh. Accepted only when:

- its Dockerfile is a plain base image the local machine stands in for (``FROM`` one of ``BASE_IMAGES``,
  optionally ``WORKDIR /app``; anything that builds more, RUN, COPY..., is refused with its line);
- its tests install nothing over the network at verification time (``curl … | sh``, ``pip install``,
  ``uv pip install``, ``uvx``, ``apt-get install``...): such a verifier is reported as not runnable offline.

The mapping: instruction.md -> prompt; ``[agent] timeout_sec`` -> ``maxWallMs``; ``[verifier] timeout_sec``
-> the command verifier's ``timeoutMs``; solve.sh -> the solution (``solutions/<id>/solve.sh``, run with its
directory at /solution). The fixture is empty, as the image's /app is. The container's absolute paths become
the task's ``sandbox`` section (``alisio.core.lab.suites.suite_sandbox``): the copy at /app; for the verifier only,
the tests (``harbor/<id>/tests`` in the suite, outside the copy: the agent never sees them) at /tests, a fresh
/logs/verifier, and ``harbor/_verify.py`` at ``VERIFY``, which runs test.sh and passes when the reward it wrote
is at least 1. Such a task runs only under ``--sandbox bwrap``; it is also tagged ``NEEDS_SANDBOX``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from returns.result import Failure, Result, Success

__all__ = [
    "BASE_IMAGES",
    "NEEDS_SANDBOX",
    "VERIFY",
    "dockerfile_problem",
    "harbor_task",
    "offline_problem",
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


def dockerfile_problem(text: str) -> str | None:
    """Why the Dockerfile is more than a base image the local machine stands in for, or None."""
    base: str | None = None
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
                    return (
                        f"line {number}: base image {base!r} is not one the local machine stands in for "
                        f"({', '.join(BASE_IMAGES)})"
                    )
            case "WORKDIR" if rest.strip() == "/app":
                pass
            case _:
                return f"line {number}: {word} builds more than a base image (only FROM and WORKDIR /app)"
    return None if base is not None else "no FROM line"


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


VERIFY: Final = "/opt/alisio/harbor_verify.py"
"""Where the verifier finds ``harbor/_verify.py`` of the suite, inside its sandbox."""


def harbor_task(
    task_id: str, config: Mapping[str, Any], instruction: str, has_solution: bool
) -> Result[dict[str, Any], str]:
    """The suite task of one Harbor task (``config`` is task.toml decoded); a one-line reason when refused."""
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
            "workdir": "/app",
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
