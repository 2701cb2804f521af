"""How each external agent is started headless against the proxy: ``invocation``, pure.

The presets are the invocations measured on this project's machine kind (docs/agents.md):

- ``codex`` (npm ``@openai/codex``, Responses API): ``codex exec --json --ephemeral ...`` with a provider
  given by ``-c model_providers.local=...`` (Codex ignores ``OPENAI_BASE_URL``); ``CODEX_HOME`` private;
- ``opencode`` (npm ``opencode-ai``, Chat Completions): ``opencode run --format json`` with an
  ``OPENCODE_CONFIG`` file naming the proxy as an ``@ai-sdk/openai-compatible`` provider;
- ``aider`` (PyPI ``aider-chat``, Chat Completions, no tool calls: edits are in its text);
- ``claude-code`` (npm ``@anthropic-ai/claude-code``, Anthropic Messages; 2.1.197 on Node 20).

Rules: the agent gets only the run's token as its key (``key``: random per run, made by the shell; the proxy
forwards only requests that carry it), in its environment or a file of its run directory, never on its
command line (which other users can read in ``/proc``); every per-run directory (home, config) is under
the run directory the shell made; the task's prompt reaches the model as it is, never read as an option
whatever it starts with (``-``, ``---`` front matter): Codex (``-``) and OpenCode read it from stdin (OpenCode
would put one given as an argument in quotes), Claude Code gets it after ``--``, aider as
``--message=PROMPT`` (a prompt aider would run as its own command, starting with ``/`` or ``!``, is refused:
``prompt_problem``); each preset's tool names map to the lab's where they mean the same
(``tool_map``), and its known per-run noise has normalisation rules (``noise_rules``) for record and replay.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Final

from alisio.core.agents.config import MODEL, PROMPT, PROMPT_FILE, ExternalAgent
from alisio.core.base import Frozen
from alisio.core.harness.wire import wire_format
from alisio.core.replay.fingerprint import Rules

__all__ = [
    "BINARIES",
    "INSTALL",
    "MAX_ARGUMENT_BYTES",
    "RUN_DIR",
    "Invocation",
    "RunDirs",
    "argument_problem",
    "command_paths",
    "invocation",
    "kind_tools",
    "lab_tools",
    "noise_rules",
    "prompt_problem",
    "run_dir_rules",
    "tool_map",
    "version_command",
]

BINARIES: Final[Mapping[str, str]] = {
    "codex": "codex",
    "opencode": "opencode",
    "aider": "aider",
    "claude-code": "claude",
}
INSTALL: Final[Mapping[str, str]] = {
    "codex": "make agents (or npm install -g @openai/codex@0.171.0)",
    "opencode": "make agents (or npm install -g opencode-ai@1.18.33)",
    "aider": "make agents (or pipx install aider-chat==0.86.2)",
    "claude-code": "npm install -g @anthropic-ai/claude-code@2.1.197 (Node 20; 2.1.332 needs Node 22)",
}
_TOOL_MAPS: Final[Mapping[str, Mapping[str, str]]] = {
    "codex": {"exec_command": "bash", "shell": "bash", "apply_patch": "edit_file", "web_search": "fetch_url"},
    "opencode": {
        "bash": "bash",
        "read": "read_file",
        "write": "write_file",
        "edit": "edit_file",
        "list": "list_dir",
        "grep": "search",
        "glob": "search",
        "webfetch": "fetch_url",
    },
    "aider": {},
    "claude-code": {
        "Bash": "bash",
        "Read": "read_file",
        "Write": "write_file",
        "Edit": "edit_file",
        "MultiEdit": "edit_file",
        "LS": "list_dir",
        "Grep": "search",
        "Glob": "search",
        "WebFetch": "fetch_url",
    },
}
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
_NOISE: Final[Mapping[str, Rules]] = {
    "codex": (
        (r'"prompt_cache_key":"[^"]*"', '"prompt_cache_key":"<key>"'),
        # its values are strings, some holding JSON with braces: skip over whole strings
        (r'"client_metadata":\{(?:[^{}"]|"(?:[^"\\]|\\.)*")*\}', '"client_metadata":{}'),
        (r'"id":"(?:msg|rs|fc|fco|ctc|ctco)_[A-Za-z0-9_-]+"', '"id":"<id>"'),
        (r"<current_date>[^<]*</current_date>", "<current_date><date></current_date>"),
        (r"Chunk ID: [^\\\n]*", "Chunk ID: <id>"),
        (r"Wall time: [^\\\n]*", "Wall time: <time>"),
    ),
    "claude-code": (
        # its memory directory is named after the workspace path, slashes as dashes
        (r"/projects/-[^/\"\\]*/", "/projects/<workspace>/"),
        # a JSON string of its per-config-dir device id and per-run session id
        (r'"user_id":"(?:[^"\\]|\\.)*"', '"user_id":"<user>"'),
        (r"Today's date is [0-9-]+", "Today's date is <date>"),
    ),
}


class RunDirs(Frozen, frozen=True, kw_only=True):
    """The per-run places the shell made: the run directory (private HOME and XDG under it), the workspace."""

    run: str
    workspace: str
    prompt_file: str
    files: tuple[str, ...] = ()
    """The workspace's files, relative (aider is given them: it edits only files in its chat)."""


class Invocation(Frozen, frozen=True, kw_only=True):
    """What the shell starts: the argument array, the environment it adds, files to write, stdin."""

    argv: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    files: tuple[tuple[str, str], ...] = ()
    """``(path, text)`` to write before the start (absolute paths under the run directory)."""
    stdin: str | None = None
    """Written to the agent's stdin, which is then closed (``None``: stdin is closed at once)."""
    host_paths: tuple[str, ...] = ()
    """Absolute paths the agent's own command names (a command agent's arguments as configured, before
    ``{prompt}``, ``{prompt_file}`` and ``{model}`` are replaced): under ``--sandbox bwrap`` those that exist
    are bound read-only. What a run puts into the command (the task's prompt, the model) is never among them."""


def tool_map(agent: ExternalAgent) -> Mapping[str, str]:
    """The agent's tool names that mean a lab tool (a command agent: its ``tools``, else the lab's own)."""
    if agent.kind == "command":
        return dict(agent.tools) if agent.tools else {name: name for name in _LAB_TOOLS}
    return _TOOL_MAPS.get(agent.kind, {})


def lab_tools(agent: ExternalAgent) -> frozenset[str]:
    """The lab tools the agent has (a tool-sequence rule over any other cannot apply to it)."""
    return frozenset(tool_map(agent).values())


def kind_tools(kind: str) -> frozenset[str]:
    """The lab tools an agent of ``kind`` has when its configuration is not at hand (``eval rejudge`` of a
    run whose agent is no longer configured): a preset's map, or a command agent's default (the lab's)."""
    if kind == "command":
        return frozenset(_LAB_TOOLS)
    return frozenset(_TOOL_MAPS.get(kind, {}).values())


RUN_DIR: Final = "<run>"
"""What the run directory's path (the agent's private HOME, CODEX_HOME, ...) becomes in a fingerprint."""


def run_dir_rules(*paths: str) -> Rules:
    """Rules that turn the per-run directory (and its resolved form) into ``<run>``: Codex names its
    ``CODEX_HOME`` in its prompt, so a replay from another run directory would otherwise diverge."""
    unique = sorted({path.rstrip("/") for path in paths if path.rstrip("/")}, key=lambda p: (-len(p), p))
    return tuple((re.escape(path), RUN_DIR) for path in unique)


def noise_rules(agent: ExternalAgent) -> Rules:
    """The agent's known per-run noise, normalised away before a request is fingerprinted."""
    return _NOISE.get(agent.kind, ())


def version_command(agent: ExternalAgent, binary: str) -> tuple[str, ...]:
    """The command printing the agent's version (empty: none known)."""
    if agent.kind == "command":
        return agent.version
    return agent.version or (binary, "--version")


def _home(dirs: RunDirs) -> tuple[tuple[str, str], ...]:
    run = dirs.run
    return (
        ("HOME", f"{run}/home"),
        ("XDG_CONFIG_HOME", f"{run}/xdg-config"),
        ("XDG_DATA_HOME", f"{run}/xdg-data"),
        ("XDG_STATE_HOME", f"{run}/xdg-state"),
        ("XDG_CACHE_HOME", f"{run}/xdg-cache"),
    )


_CODEX_CONFIG: Final = "# written by alisio for one run; the provider is given with -c on the command line\n"


def _codex(binary: str, prompt: str, model: str, base_url: str, dirs: RunDirs, key: str) -> Invocation:
    provider = f'{{name="local",base_url="{base_url}/v1",wire_api="responses",env_key="LOCAL_API_KEY"}}'
    argv = (
        binary,
        "exec",
        "--json",
        "--ephemeral",
        "--skip-git-repo-check",
        "--dangerously-bypass-approvals-and-sandbox",
        "-m",
        model,
        "-c",
        "model_provider=local",
        "-c",
        f"model_providers.local={provider}",
        "-",  # the prompt is read from stdin: "--" would not do for a prompt that is "-" itself
    )
    home = f"{dirs.run}/codex-home"
    env = (*_home(dirs), ("CODEX_HOME", home), ("LOCAL_API_KEY", key))
    # Codex refuses a CODEX_HOME that does not exist: its config file makes it (no settings beyond argv's)
    files = ((f"{home}/config.toml", _CODEX_CONFIG),)
    return Invocation(argv=argv, env=env, files=files, stdin=prompt)


def _opencode(binary: str, prompt: str, model: str, base_url: str, dirs: RunDirs, key: str) -> Invocation:
    config = {
        "provider": {
            "local": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "local",
                "options": {"baseURL": f"{base_url}/v1", "apiKey": key},
                "models": {model: {}},
            }
        },
        "model": f"local/{model}",
        "share": "disabled",
        "autoupdate": False,
    }
    path = f"{dirs.run}/opencode.json"
    env = (
        *_home(dirs),
        ("OPENCODE_CONFIG", path),
        ("OPENCODE_DISABLE_AUTOUPDATE", "1"),
        ("OPENCODE_DISABLE_MODELS_FETCH", "1"),
        ("OPENCODE_DISABLE_LSP_DOWNLOAD", "1"),
        ("OPENCODE_DISABLE_SHARE", "1"),
        # start-up in a fresh data directory: without these it spends 10-20 s on a plugin install (which
        # needs the network), the file watcher and reading ~/.claude; with them its first call comes ~3x sooner
        ("OPENCODE_FAST_BOOT", "1"),
        ("OPENCODE_PURE", "1"),
        ("OPENCODE_DISABLE_DEFAULT_PLUGINS", "1"),
        ("OPENCODE_DISABLE_CLAUDE_CODE", "1"),
        ("OPENCODE_DISABLE_EXTERNAL_SKILLS", "1"),
        ("OPENCODE_EXPERIMENTAL_DISABLE_FILEWATCHER", "1"),
    )
    # the prompt on stdin: OpenCode sends it as it is (from its arguments, it would quote one with a space)
    argv = (binary, "run", "--format", "json", "-m", f"local/{model}")
    return Invocation(argv=argv, env=env, files=((path, json.dumps(config, indent=1)),), stdin=prompt)


def _aider(binary: str, prompt: str, model: str, base_url: str, dirs: RunDirs, key: str) -> Invocation:
    argv = (
        binary,
        "--model",
        f"openai/{model}",
        "--openai-api-base",
        f"{base_url}/v1",
        "--no-git",
        "--yes-always",
        "--no-check-update",
        "--analytics-disable",
        "--no-show-model-warnings",
        "--no-pretty",
        "--no-stream",
        "--edit-format",
        "diff",
        "--map-tokens",
        "0",
        "--chat-history-file",  # its history goes to the run directory, not into the workspace
        f"{dirs.run}/aider.chat.history.md",
        "--input-history-file",
        f"{dirs.run}/aider.input.history",
        f"--message={prompt}",  # one argument: a prompt starting with "-" is never read as an option
        "--",
        *dirs.files,
    )
    # aider keeps its chat's files in a set: a fixed hash seed keeps their order (and its requests) the same;
    # its key comes from AIDER_OPENAI_API_KEY (--openai-api-key's variable), not from its command line
    env = (*_home(dirs), ("PYTHONHASHSEED", "0"), ("AIDER_OPENAI_API_KEY", key))
    return Invocation(argv=argv, env=env)


def _claude(binary: str, prompt: str, model: str, base_url: str, dirs: RunDirs, key: str) -> Invocation:
    models = ("ANTHROPIC_MODEL", "ANTHROPIC_DEFAULT_OPUS_MODEL", "ANTHROPIC_DEFAULT_SONNET_MODEL")
    env = (
        *_home(dirs),
        ("ANTHROPIC_BASE_URL", base_url),
        ("ANTHROPIC_AUTH_TOKEN", key),
        *((name, model) for name in (*models, "ANTHROPIC_DEFAULT_HAIKU_MODEL", "CLAUDE_CODE_SUBAGENT_MODEL")),
        ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),
        ("IS_SANDBOX", "1"),
        ("CLAUDE_CONFIG_DIR", f"{dirs.run}/claude"),
    )
    argv = (binary, "--print", "--output-format", "stream-json", "--verbose")
    return Invocation(argv=(*argv, "--permission-mode", "bypassPermissions", "--", prompt), env=env)


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
    env = (*_home(dirs), (agent.base_url_env, f"{base_url}{suffix}"), (agent.key_env, key))
    stdin = prompt if agent.stdin else None
    return Invocation(argv=argv, env=env, stdin=stdin, host_paths=command_paths(agent.command))


_AIDER_COMMANDS: Final = "/!"
"""aider runs a message that starts with one of these as one of its own commands (``/run``, ``!ls``)."""


def prompt_problem(agent: ExternalAgent, prompt: str) -> str | None:
    """Why ``agent`` cannot be given ``prompt`` as the task, or ``None``: aider takes a message starting with
    ``/`` or ``!`` for one of its own commands (a shell command for ``!``), never sending it to the model,
    and has no way to say it is text."""
    if agent.kind == "aider" and prompt[:1] in tuple(_AIDER_COMMANDS):
        return (
            f"aider would run a prompt that starts with {prompt[0]!r} as one of its own commands, never sending "
            "it to the model: reword the task's prompt, or run it with another agent"
        )
    return None


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
    """How to start ``agent`` on ``prompt`` against the proxy at ``base_url`` (``http://127.0.0.1:PORT``).

    Args:
        binary: the preset's executable, as the shell found it (unused by a command agent).
        key: the run's token, the agent's only key (the proxy forwards only requests that carry it).
    """
    builders = {"codex": _codex, "opencode": _opencode, "aider": _aider, "claude-code": _claude}
    build = builders.get(agent.kind)
    if build is None:
        return _command(agent, prompt, model, base_url, dirs, key)
    return build(binary, prompt, model, base_url, dirs, key)
