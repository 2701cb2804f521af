"""Contexts: files and text added to every run of a variant or a command, never to the suite.

A context answers "does *this* help my agent?" (an ``AGENTS.md``, a skill, an MCP server, a longer system
prompt). It is declared once, in compare.json per variant (``"context": {...}``) or in its own JSON file for
``eval run --context FILE``::

    {
      "label": "agents-md",                                    (optional; default: the variant id or file name)
      "workspace": {"AGENTS.md": "contexts/AGENTS.md"},        (copied into each fresh fixture copy)
      "home": {".claude/skills/pdf/": "skills/pdf/"},          (into an external agent's private HOME)
      "mcp": {"docs": {"command": ["python3", "mcp/docs_server.py"], "env": {"LEVEL": "1"}}},
      "system": "Read AGENTS.md before you start."             (appended to the built-in agent's system prompt)
    }

Rules this module keeps (pure; the shell reads the files, ``alisio.shell.lab.contexts``; the condition reports
carry is ``alisio.core.lab.reports.context``):

- ``parse_context`` checks the object's shape and every path lexically, before the first run: the suite's
  path rules (``alisio.core.lab.suites.suite_paths.lexical_problem``: relative, ``/`` separators, no ``..``);
  a destination names a file, or a directory when it ends with ``/`` (its source is then a directory and
  every file below it is copied under it). Every problem is one line naming the file, the variant and the
  field (``compare.json: variant with-skill: context.workspace["AGENTS.md"]: ...``); unknown fields are
  errors, nothing is silently defaulted.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, Final

import msgspec
from returns.result import Failure, Result, Success

from alisio.core.base import Frozen
from alisio.core.errors import ConfigError
from alisio.core.lab.reports.context import Area, McpServer
from alisio.core.lab.suites.suite_paths import lexical_problem, normalize

__all__ = ["MAX_SYSTEM_CHARS", "ContextSpec", "parse_context"]

_FIELDS: Final = ("label", "workspace", "home", "mcp", "system")
_SERVER_FIELDS: Final = ("command", "env")
_LABEL: Final = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9 _.-]{0,62}[A-Za-z0-9_.-])?")
_SERVER: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
_ENV_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
MAX_SYSTEM_CHARS: Final = 1 << 20
"""The longest ``system`` text (1 MiB of characters): more is a mistake, not a prompt."""
_ENCODER: Final = msgspec.json.Encoder(order="deterministic")
_Fail = Callable[[str, str], ConfigError]
"""Makes the ConfigError of a key and a message (the source is the caller's)."""


class ContextSpec(Frozen, frozen=True, kw_only=True, omit_defaults=True):
    """A context as written, checked lexically: each path relative to the file that names it."""

    label: str | None = None
    """The short name reports show (``None``: the variant id, or the context file's name)."""
    workspace: tuple[tuple[str, str], ...] = ()
    """(destination in the workspace, source), in the file's order; a destination ending with ``/`` is a
    directory, its source one too."""
    home: tuple[tuple[str, str], ...] = ()
    """(destination in the external agent's HOME, source), as ``workspace``."""
    mcp: tuple[McpServer, ...] = ()
    system: str | None = None
    """Appended to the built-in agent's system prompt."""

    @property
    def mcp_commands(self) -> Mapping[str, tuple[str, ...]]:
        """Server name -> argv: what the agents' MCP seam takes."""
        return {server.name: server.command for server in self.mcp}


# --- parsing---------------------------------------------------------------------------------------------------------


def _key(field: str, name: str | None = None) -> str:
    return f"context.{field}" if name is None else f"context.{field}[{_ENCODER.encode(name).decode()}]"


def _paths(raw: object, field: Area, fail: Any) -> Result[tuple[tuple[str, str], ...], ConfigError]:
    if raw is None:
        return Success(())
    if not isinstance(raw, dict):
        return Failure(
            fail(
                _key(field),
                'expected an object of destination to source paths, e.g. {"AGENTS.md": "AGENTS.md"}',
            )
        )
    root = "workspace" if field == "workspace" else "agent's HOME"
    pairs: list[tuple[str, str]] = []
    seen: dict[str, str] = {}
    for dest, source in raw.items():
        where = _key(field, dest)
        if not isinstance(source, str):
            return Failure(fail(where, "expected the source path, a string relative to this file"))
        problem = lexical_problem(dest, root)
        if problem is not None:
            return Failure(fail(where, f"destination: {problem}"))
        problem = lexical_problem(source, "directory of the file naming it")
        if problem is not None:
            return Failure(fail(where, f"source {_ENCODER.encode(source).decode()[:200]}: {problem}"))
        if dest.endswith("/") and not source.endswith("/"):
            return Failure(
                fail(where, "a destination ending with / is a directory: its source must end with / too")
            )
        clean = normalize(dest)
        if field == "workspace" and clean.split("/")[0] == ".git":
            return Failure(
                fail(where, "destination: .git is the fixture's own repository, never a context's")
            )
        earlier = seen.setdefault(clean, dest)
        if earlier != dest:
            return Failure(fail(where, f"names the same destination as {_ENCODER.encode(earlier).decode()}"))
        pairs.append((dest, source))
    return Success(tuple(pairs))


def _server(name: object, raw: object, fail: _Fail) -> Result[McpServer, ConfigError]:
    where = _key("mcp", str(name))
    if not isinstance(name, str) or not _SERVER.fullmatch(name) or "__" in name:
        return Failure(
            fail(
                where, "a server name is a letter or digit, then letters, digits, _ or - (no __), at most 64"
            )
        )
    if not isinstance(raw, dict):
        return Failure(fail(where, 'expected {"command": ["program", "arg", ...]} (and an optional "env")'))
    unknown = [field for field in raw if field not in _SERVER_FIELDS]
    if unknown:
        return Failure(fail(f"{where}.{unknown[0]}", f"unknown field (expected {', '.join(_SERVER_FIELDS)})"))
    command = raw.get("command")
    if (
        not isinstance(command, list)
        or not command
        or not all(isinstance(arg, str) and "\0" not in arg for arg in command)
        or command[0] == ""
    ):
        return Failure(
            fail(f"{where}.command", "expected a non-empty array of strings: the program, then its arguments")
        )
    env = raw.get("env", {})
    if not isinstance(env, dict) or not all(isinstance(value, str) for value in env.values()):
        return Failure(fail(f"{where}.env", "expected an object of variable names to string values"))
    bad = [name for name in env if not _ENV_NAME.fullmatch(name)]
    if bad:
        return Failure(fail(f"{where}.env", f"{bad[0]!r} is not a variable name"))
    return Success(McpServer(name=name, command=tuple(command), env=tuple(sorted(env.items()))))


def parse_context(raw: object, source: str) -> Result[ContextSpec, ConfigError]:
    """Check a context object (already decoded JSON) and return it as a ``ContextSpec``.

    Args:
        raw: the ``context`` value of a variant, or a whole ``--context`` file.
        source: what names it in every error: ``compare.json: variant with-skill`` or ``ctx.json``.

    Returns:
        ``Failure(ConfigError)`` for the first problem: not an object, an unknown field, an empty context, a
        label that is not a short name, a path breaking the suite's rules, two paths with one destination, a
        ``.git`` destination, an MCP server without a command, a ``system`` that is not text.
    """

    def fail(key: str, message: str) -> ConfigError:
        return ConfigError(source=source, key=key, message=message)

    if not isinstance(raw, dict):
        return Failure(fail("context", "expected an object with workspace, home, mcp or system"))
    unknown = [field for field in raw if field not in _FIELDS]
    if unknown:
        return Failure(fail(f"context.{unknown[0]}", f"unknown field (expected {', '.join(_FIELDS)})"))
    label = raw.get("label")
    if label is not None and (not isinstance(label, str) or not _LABEL.fullmatch(label)):
        return Failure(
            fail(
                "context.label",
                "a label is a letter or digit, then letters, digits, spaces, _, . or - (at most 64, no space at the end)",
            )
        )
    system = raw.get("system")
    if system is not None and (not isinstance(system, str) or not system.strip()):
        return Failure(fail("context.system", "expected the text to append to the system prompt (not empty)"))
    if system is not None and len(system) > MAX_SYSTEM_CHARS:
        return Failure(fail("context.system", f"longer than {MAX_SYSTEM_CHARS} characters"))
    if not any(raw.get(field) for field in _FIELDS[1:]):
        return Failure(fail("context", "adds nothing: give workspace, home, mcp or system"))
    mcp = raw.get("mcp") or {}
    if not isinstance(mcp, dict):
        return Failure(fail("context.mcp", 'expected an object of server names to {"command": [...]}'))
    servers: list[McpServer] = []
    for name, server in mcp.items():
        match _server(name, server, fail):
            case Success(checked):
                servers.append(checked)
            case Failure() as failed:
                return failed
    return _paths(raw.get("workspace"), "workspace", fail).bind(
        lambda workspace: _paths(raw.get("home"), "home", fail).map(
            lambda home: ContextSpec(
                label=label, workspace=workspace, home=home, mcp=tuple(servers), system=system
            )
        )
    )
