"""An external agent as the lab starts and reads it: from its preset's record, or its ``command`` table; pure.

A preset's facts are its record's (``alisio.core.agents.presets.PRESETS``); a ``command`` agent's come from
its ``[agents.NAME]`` table: ``{prompt}``, ``{prompt_file}`` and ``{model}`` replaced in its argument array,
the proxy's URL and the run's token in the variables of its api (or the ones it names), its own tool map.

Rules: each function here answers for both kinds, and for a preset only from its record; the run's token is
never put on a command line (``invocation``); an argument no command line can carry (a NUL, more than
``MAX_ARGUMENT_BYTES``) is named before anything starts (``argument_problem``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final

from alisio.core.agents.config import MODEL, PROMPT, PROMPT_FILE, ExternalAgent
from alisio.core.agents.presets import PRESETS, Invocation, Preset, RunDirs, home_env
from alisio.core.harness.wire import wire_format
from alisio.core.replay.fingerprint import Rules

__all__ = [
    "MAX_ARGUMENT_BYTES",
    "RUN_DIR",
    "argument_problem",
    "binary_name",
    "command_paths",
    "install_hint",
    "invocation",
    "kind_tools",
    "lab_tools",
    "noise_rules",
    "preset_of",
    "prompt_problem",
    "run_dir_rules",
    "takes_files",
    "tool_map",
    "version_command",
]

_LAB_TOOLS: Final = (
    "read_file",
    "list_dir",
    "search",
    "write_file",
    "edit_file",
    "bash",
    "fetch_url",
    "analyze",
)


def preset_of(kind: str) -> Preset | None:
    """The record of the preset ``kind`` (``None``: ``command``, or a kind no preset has)."""
    return next((preset for name, preset in PRESETS.items() if name == kind), None)


def binary_name(agent: ExternalAgent) -> str:
    """The executable to look for: the configured ``binary``, else the preset's, else the command's first word."""
    preset = preset_of(agent.kind)
    if agent.binary is not None:
        return agent.binary
    return preset.binary if preset is not None else (agent.command[:1] or ("",))[0]


def install_hint(kind: str) -> str:
    """How to install the preset ``kind`` (empty for a command agent)."""
    preset = preset_of(kind)
    return preset.package.install if preset is not None else ""


def tool_map(agent: ExternalAgent) -> Mapping[str, str]:
    """The agent's tool names that mean a lab tool (a command agent: its ``tools``, else the lab's own)."""
    if agent.kind == "command":
        return dict(agent.tools) if agent.tools else {name: name for name in _LAB_TOOLS}
    return kind_tool_map(agent.kind)


def kind_tool_map(kind: str) -> Mapping[str, str]:
    """The preset ``kind``'s tool map (empty for any other kind)."""
    preset = preset_of(kind)
    return dict(preset.tool_map) if preset is not None else {}


def lab_tools(agent: ExternalAgent) -> frozenset[str]:
    """The lab tools the agent has (a tool-sequence rule over any other cannot apply to it)."""
    return frozenset(tool_map(agent).values())


def kind_tools(kind: str) -> frozenset[str]:
    """The lab tools an agent of ``kind`` has when its configuration is not at hand (``eval rejudge`` of a
    run whose agent is no longer configured): a preset's map, or a command agent's default (the lab's)."""
    if kind == "command":
        return frozenset(_LAB_TOOLS)
    return frozenset(kind_tool_map(kind).values())


def takes_files(agent: ExternalAgent) -> bool:
    """Whether the agent is given the workspace's files as arguments (a preset's ``takes_files``)."""
    preset = preset_of(agent.kind)
    return preset is not None and preset.takes_files


RUN_DIR: Final = "<run>"
"""What the run directory's path (the agent's private HOME, CODEX_HOME, ...) becomes in a fingerprint."""


def run_dir_rules(*paths: str) -> Rules:
    """Rules that turn the per-run directory (and its resolved form) into ``<run>``: Codex names its
    ``CODEX_HOME`` in its prompt, so a replay from another run directory would otherwise diverge."""
    unique = sorted({path.rstrip("/") for path in paths if path.rstrip("/")}, key=lambda p: (-len(p), p))
    return tuple((re.escape(path), RUN_DIR) for path in unique)


def noise_rules(agent: ExternalAgent) -> Rules:
    """The agent's known per-run noise, normalised away before a request is fingerprinted."""
    preset = preset_of(agent.kind)
    return preset.noise if preset is not None else ()


def version_command(agent: ExternalAgent, binary: str) -> tuple[str, ...]:
    """The command printing the agent's version (empty: none known)."""
    if agent.kind == "command":
        return agent.version
    return agent.version or (binary, "--version")


def command_paths(command: tuple[str, ...]) -> tuple[str, ...]:
    """The arguments of a command agent's ``command`` (after its executable) that are absolute paths of its
    own: none holding ``{prompt}``, ``{prompt_file}`` or ``{model}``, decided before they are replaced."""
    placeholders = (PROMPT, PROMPT_FILE, MODEL)
    return tuple(
        arg for arg in command[1:] if arg.startswith("/") and not any(word in arg for word in placeholders)
    )


def _command(
    agent: ExternalAgent, prompt: str, model: str, base_url: str, dirs: RunDirs, key: str
) -> Invocation:
    argv = tuple(
        arg.replace(PROMPT_FILE, dirs.prompt_file).replace(MODEL, model).replace(PROMPT, prompt)
        for arg in agent.command
    )
    record = wire_format(agent.api)
    suffix = "" if record.sdk_adds_version else record.version
    env = (*home_env(dirs), (agent.base_url_env, f"{base_url}{suffix}"), (agent.key_env, key))
    stdin = prompt if agent.stdin else None
    return Invocation(argv=argv, env=env, stdin=stdin, host_paths=command_paths(agent.command))


def prompt_problem(agent: ExternalAgent, prompt: str) -> str | None:
    """Why ``agent`` cannot be given ``prompt`` as the task, or ``None``: a prompt its preset would run as one
    of its own commands (``Preset.own_command``: aider's ``/run`` or ``!ls``, Gemini CLI's ``/help``), never
    sending it to the model, with no way to say it is text."""
    preset = preset_of(agent.kind)
    if preset is None or preset.own_command is None or not re.match(preset.own_command, prompt):
        return None
    return (
        f"{preset.name} would run a prompt that starts with {prompt[0]!r} as one of its own commands, never "
        "sending it to the model: reword the task's prompt, or run it with another agent"
    )


MAX_ARGUMENT_BYTES: Final = 131071
"""The longest command-line argument Linux takes (``MAX_ARG_STRLEN``, 32 pages, less its closing NUL)."""


def argument_problem(agent: ExternalAgent, argv: tuple[str, ...]) -> str | None:
    """Why ``argv`` (``invocation``'s, the prompt and model put in) cannot be started, or ``None``: an argument
    that holds a NUL character or is longer than ``MAX_ARGUMENT_BYTES`` (a prompt given as ``{prompt}``,
    or to Claude Code or aider, which take it as an argument)."""
    hint = ": give the agent the prompt with {prompt_file} or stdin = true" if agent.kind == "command" else ""
    for index, arg in enumerate(argv):
        if "\0" in arg:
            return f"its argument {index} holds a NUL character, which a command line cannot carry{hint}"
        size = len(arg.encode("utf-8", "surrogateescape"))
        if size > MAX_ARGUMENT_BYTES:
            return (
                f"its argument {index} is {size} bytes, more than one command-line argument may hold "
                f"({MAX_ARGUMENT_BYTES}){hint}"
            )
    return None


def invocation(
    agent: ExternalAgent, binary: str, prompt: str, model: str, base_url: str, dirs: RunDirs, key: str
) -> Invocation:
    """How to start ``agent`` on ``prompt`` against the proxy at ``base_url`` (``http://127.0.0.1:PORT``): a
    preset's ``start`` with its fixed ``env`` after the per-run variables, or a command agent's template.

    Args:
        binary: the preset's executable, as the shell found it (unused by a command agent).
        key: the run's token, the agent's only key (the proxy forwards only requests that carry it).
    """
    preset = preset_of(agent.kind)
    if preset is None:
        return _command(agent, prompt, model, base_url, dirs, key)
    started = preset.start(binary, prompt, model, base_url, dirs, key)
    return Invocation(
        argv=started.argv,
        env=(*started.env, *preset.env),
        files=started.files,
        stdin=started.stdin,
        host_paths=started.host_paths,
    )
