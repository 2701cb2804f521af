"""One record per external agent preset: ``PRESETS``, keyed by ``PresetName``; pure.

A preset is everything the lab knows of one agent CLI, in one ``Preset``: its executable and the pinned
package it comes from (the Makefile's ``agents`` targets install exactly these pins: a test compares them),
the wire API it speaks, the fixed environment it is started with and the files it is given, where it reads
its user-level context (instructions, skills) and its MCP servers, its tool names that mean lab tools, its
known per-run noise (normalised before a request is fingerprinted), the prompts it would take for one of its
own commands, and how it is started (``start``). Nothing else in the code is keyed by a preset's name:
adding an agent is one record here and its name in ``PresetName`` (docs/architecture.md, "Adding an agent").

The records are the invocations measured on this project's machine kind (docs/agents.md):

- ``codex`` (npm ``@openai/codex``, Responses API): ``codex exec --json --ephemeral ...`` with a provider
  given by ``-c model_providers.local=...`` (Codex ignores ``OPENAI_BASE_URL``); ``CODEX_HOME`` private;
- ``opencode`` (npm ``opencode-ai``, Chat Completions): ``opencode run --format json`` with an
  ``OPENCODE_CONFIG`` file naming the proxy as an ``@ai-sdk/openai-compatible`` provider;
- ``aider`` (PyPI ``aider-chat``, Chat Completions, no tool calls: edits are in its text);
- ``claude-code`` (npm ``@anthropic-ai/claude-code``, Anthropic Messages; 2.1.197 on Node 20);
- ``gemini-cli`` (npm ``@google/gemini-cli``, the Gemini API): the prompt on stdin (headless when stdin is
  not a terminal), ``--approval-mode yolo``, a ``settings.json`` choosing API-key auth (the proxy's token
  in ``GEMINI_API_KEY``, its URL in ``GOOGLE_GEMINI_BASE_URL``) with usage statistics, telemetry, update
  checks and folder trust off.

Rules every record keeps: the agent gets only the run's token as its key (``key``: random per run, made by
the shell; the proxy forwards only requests that carry it), in its environment or a file of its run
directory, never on its command line (which other users can read in ``/proc``); every per-run directory
(home, config) is under the run directory the shell made; the task's prompt reaches the model as it is,
never read as an option whatever it starts with (``-``, ``---`` front matter): Codex (``-``), OpenCode and
Gemini CLI read it from stdin, Claude Code gets it after ``--``, aider as ``--message=PROMPT``; a prompt the
agent would run as one of its own commands is refused (``own_command``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Final, Literal, get_args

from alisio.core.agents.exchange import Api
from alisio.core.base import Frozen
from alisio.core.replay.fingerprint import Rules

__all__ = [
    "PRESETS",
    "PRESET_NAMES",
    "XDG_DIRS",
    "Invocation",
    "McpEntry",
    "McpPlace",
    "NoMcp",
    "Package",
    "Places",
    "Preset",
    "PresetName",
    "RunDirs",
    "Start",
    "home_env",
]

PresetName = Literal["codex", "opencode", "aider", "claude-code", "gemini-cli"]
"""The external agents the lab knows how to start (``[agents.NAME] kind``); each has a record in
``PRESETS``."""
PRESET_NAMES: Final[tuple[str, ...]] = get_args(PresetName)


class RunDirs(Frozen, frozen=True, kw_only=True):
    """The per-run places the shell made: the run directory (private HOME and XDG under it), the workspace."""

    run: str
    workspace: str
    prompt_file: str
    files: tuple[str, ...] = ()
    """The workspace's files, relative (given to a preset with ``takes_files``: aider edits only files in
    its chat)."""


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


Start = Callable[[str, str, str, str, RunDirs, str], Invocation]
"""``start(binary, prompt, model, base_url, dirs, key)``: the per-run part of a preset's invocation (its
argv, the variables holding run values, its files); ``base_url`` is the proxy's ``http://127.0.0.1:PORT``."""


class Package(Frozen, frozen=True, kw_only=True):
    """Where a preset's executable comes from, pinned."""

    registry: Literal["npm", "pypi"]
    name: str
    version: str
    note: str = ""
    """Why this pin, when it is not simply the version measured (Claude Code: the newest on Node 20)."""

    @property
    def spec(self) -> str:
        """``@openai/codex@0.171.0``, ``aider-chat==0.86.2``: the pin as the registry's client writes it."""
        return f"{self.name}=={self.version}" if self.registry == "pypi" else f"{self.name}@{self.version}"

    @property
    def install(self) -> str:
        """The command that installs it outside the project (``make agents`` installs it into .agents)."""
        tool = "pipx install" if self.registry == "pypi" else "npm install -g"
        return f"make agents (or {tool} {self.spec}{f'; {self.note}' if self.note else ''})"


McpEntry = Literal["stdio", "split", "local"]
"""How one server (name -> argv) is written: ``stdio`` a type, the program and its arguments (Claude Code:
``{"type": "stdio", "command": P, "args": [...]}``), ``split`` the program and its arguments apart (Codex,
Gemini CLI: ``command = P``, ``args = [...]``), ``local`` one argv list, enabled (OpenCode:
``{"type": "local", "command": [P, ...], "enabled": true}``)."""


class McpPlace(Frozen, frozen=True, kw_only=True):
    """Where and how an agent reads its MCP servers: a file of its run directory, the key holding them there,
    and the shape of one server (``alisio.core.agents.mcp_config.with_mcp_servers`` writes them from this)."""

    file: str
    """Relative to the run directory (the agent's HOME is ``home`` under it); when ``start`` writes it too
    (one of ``config_files``), the servers are merged into it."""
    key: str
    """The table (TOML) or object (JSON) of servers by name: ``mcp_servers``, ``mcpServers``, ``mcp``."""
    format: Literal["json", "toml"]
    entry: McpEntry
    settings: tuple[tuple[str, bool | int], ...] = ()
    """Fixed settings written into every server's entry after its command (Codex: ``required = true``, so it
    waits for the server before its first request)."""
    env: tuple[tuple[str, str], ...] = ()
    """Fixed variables the agent is started with when it is given servers, after its others (Claude Code:
    ``MCP_CONNECTION_NONBLOCKING=0`` and its timeouts, so it waits for them before its first request)."""


class NoMcp(Frozen, frozen=True, kw_only=True):
    """An agent that reads no MCP servers: a run giving it some is refused with ``why``."""

    why: str
    """Completes "MCP servers (NAMES) cannot be given to this agent: ..." (``aider has no MCP client``)."""


class Places(Frozen, frozen=True, kw_only=True):
    """Where an agent reads its user-level context, relative to its run directory (``None``: it has none).

    The run directory holds the agent's private HOME (``home``) and XDG directories (``xdg-config``, ...);
    agents with a configuration directory of their own have it there too (``codex-home``, ``claude``)."""

    instructions: str | None
    """Its user-level instructions file (Claude Code ``~/.claude/CLAUDE.md``, Codex ``~/.codex/AGENTS.md``)."""
    workspace_instructions: str | None
    """The instructions file it reads at the workspace's top (Codex ``AGENTS.md``, Claude Code ``CLAUDE.md``;
    ``None`` with ``instructions`` ``None``: it reads only the files named on its command line)."""
    skills: str | None
    """Its user-level skills directory (one directory per skill, each with a ``SKILL.md``)."""
    mcp: McpPlace | NoMcp
    """Where and how it reads MCP servers (the only place the lab writes them from), or why it reads none."""
    moved: tuple[tuple[str, str], ...]
    """Its own directories under ``~`` that ``start`` moves into the run directory by a variable:
    ``(under ~, under the run directory)`` (Claude Code ``(".claude", "claude")``: ``CLAUDE_CONFIG_DIR``;
    Codex ``(".codex", "codex-home")``: ``CODEX_HOME``). A context's ``home`` files under such a directory
    land in the moved one (``alisio.core.agents.context_home.home_path``); the XDG ones are ``XDG_DIRS``'."""


class Preset(Frozen, frozen=True, kw_only=True):
    """One external agent preset: all the lab knows of it (module docstring)."""

    name: PresetName
    binary: str
    """Its executable's name (found on PATH or in the checkout's ``.agents/bin``)."""
    package: Package
    api: Api
    """The wire API it speaks (the only one: a configured ``api`` must equal it)."""
    env: tuple[tuple[str, str], ...]
    """Fixed settings variables it is started with, besides the per-run ones ``start`` gives (HOME, its key,
    the proxy's URL): update checks, telemetry and other traffic off."""
    config_files: tuple[str, ...]
    """The files ``start`` writes, relative to the run directory (its configuration for the run)."""
    places: Places
    tool_map: tuple[tuple[str, str], ...]
    """Its tool names that mean a lab tool (tool-sequence rules, effects): ``(its name, the lab's)``."""
    noise: Rules
    """Its known per-run noise in a request body, normalised away before the request is fingerprinted."""
    own_command: str | None
    """A regular expression (Python's) matched at a prompt's start: a prompt it matches would be run by the
    agent as one of its own commands, never sent to the model, so it is refused (``None``: none)."""
    takes_files: bool
    """It is given the workspace's files as arguments (``RunDirs.files``)."""
    start: Start


XDG_DIRS: Final[tuple[tuple[str, str, str], ...]] = (
    ("XDG_CONFIG_HOME", ".config", "xdg-config"),
    ("XDG_DATA_HOME", ".local/share", "xdg-data"),
    ("XDG_STATE_HOME", ".local/state", "xdg-state"),
    ("XDG_CACHE_HOME", ".cache", "xdg-cache"),
)
"""Every preset's XDG directories: ``(variable, its default under ~, the directory under the run directory)``."""


def home_env(dirs: RunDirs) -> tuple[tuple[str, str], ...]:
    """The private HOME and XDG directories under the run directory, as variables."""
    run = dirs.run
    return (("HOME", f"{run}/home"), *((var, f"{run}/{moved}") for var, _, moved in XDG_DIRS))


# --- codex ------------------------------------------------------------------------------------------------

_CODEX_HOME: Final = "codex-home"
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
    home = f"{dirs.run}/{_CODEX_HOME}"
    env = (*home_env(dirs), ("CODEX_HOME", home), ("LOCAL_API_KEY", key))
    # Codex refuses a CODEX_HOME that does not exist: its config file makes it (no settings beyond argv's)
    files = ((f"{home}/config.toml", _CODEX_CONFIG),)
    return Invocation(argv=argv, env=env, files=files, stdin=prompt)


_CODEX: Final = Preset(
    name="codex",
    binary="codex",
    package=Package(registry="npm", name="@openai/codex", version="0.171.0"),
    api="openai-responses",
    env=(),
    config_files=("codex-home/config.toml",),
    places=Places(
        instructions="codex-home/AGENTS.md",
        workspace_instructions="AGENTS.md",
        skills="codex-home/skills",
        mcp=McpPlace(
            file="codex-home/config.toml",
            key="mcp_servers",
            format="toml",
            entry="split",
            # measured: Codex sends its first request without waiting for its MCP servers (a server that took
            # 4 s to start was missing from its tools); ``required`` makes it wait for them (and fail if one
            # does not start), up to ``startup_timeout_sec``
            settings=(("required", True), ("startup_timeout_sec", 60)),
        ),
        moved=((".codex", _CODEX_HOME),),
    ),
    tool_map=(
        ("exec_command", "bash"),
        ("shell", "bash"),
        ("apply_patch", "edit_file"),
        ("web_search", "fetch_url"),
    ),
    noise=(
        (r'"prompt_cache_key":"[^"]*"', '"prompt_cache_key":"<key>"'),
        # its values are strings, some holding JSON with braces: skip over whole strings
        (r'"client_metadata":\{(?:[^{}"]|"(?:[^"\\]|\\.)*")*\}', '"client_metadata":{}'),
        (r'"id":"(?:msg|rs|fc|fco|ctc|ctco)_[A-Za-z0-9_-]+"', '"id":"<id>"'),
        (r"<current_date>[^<]*</current_date>", "<current_date><date></current_date>"),
        (r"Chunk ID: [^\\\n]*", "Chunk ID: <id>"),
        (r"Wall time: [^\\\n]*", "Wall time: <time>"),
    ),
    own_command=None,
    takes_files=False,
    start=_codex,
)


# --- opencode ---------------------------------------------------------------------------------------------

_OPENCODE_CONFIG: Final = "opencode.json"


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
    path = f"{dirs.run}/{_OPENCODE_CONFIG}"
    env = (*home_env(dirs), ("OPENCODE_CONFIG", path))
    # the prompt on stdin: OpenCode sends it as it is (from its arguments, it would quote one with a space)
    argv = (binary, "run", "--format", "json", "-m", f"local/{model}")
    return Invocation(argv=argv, env=env, files=((path, json.dumps(config, indent=1)),), stdin=prompt)


_OPENCODE: Final = Preset(
    name="opencode",
    binary="opencode",
    package=Package(registry="npm", name="opencode-ai", version="1.18.33"),
    api="openai-chat",
    env=(
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
    ),
    config_files=(_OPENCODE_CONFIG,),
    places=Places(
        instructions="xdg-config/opencode/AGENTS.md",
        workspace_instructions="AGENTS.md",
        skills="xdg-config/opencode/skill",
        mcp=McpPlace(file=_OPENCODE_CONFIG, key="mcp", format="json", entry="local"),
        moved=(),
    ),
    tool_map=(
        ("bash", "bash"),
        ("read", "read_file"),
        ("write", "write_file"),
        ("edit", "edit_file"),
        ("list", "list_dir"),
        ("grep", "search"),
        ("glob", "search"),
        ("webfetch", "fetch_url"),
    ),
    noise=(),
    own_command=None,
    takes_files=False,
    start=_opencode,
)


# --- aider ------------------------------------------------------------------------------------------------


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
    # its key comes from AIDER_OPENAI_API_KEY (--openai-api-key's variable), not from its command line
    return Invocation(argv=argv, env=(*home_env(dirs), ("AIDER_OPENAI_API_KEY", key)))


_AIDER: Final = Preset(
    name="aider",
    binary="aider",
    package=Package(registry="pypi", name="aider-chat", version="0.86.2"),
    api="openai-chat",
    # aider keeps its chat's files in a set: a fixed hash seed keeps their order (and its requests) the same
    env=(("PYTHONHASHSEED", "0"),),
    config_files=(),
    places=Places(
        instructions=None,
        workspace_instructions=None,
        skills=None,
        mcp=NoMcp(why="aider has no MCP client"),
        moved=(),
    ),
    tool_map=(),
    noise=(),
    # it runs a message starting with "/" or "!" as its own command ("/run", "!ls": a shell command)
    own_command=r"[/!]",
    takes_files=True,
    start=_aider,
)


# --- claude-code ------------------------------------------------------------------------------------------


_CLAUDE_DIR: Final = "claude"


def _claude(binary: str, prompt: str, model: str, base_url: str, dirs: RunDirs, key: str) -> Invocation:
    models = ("ANTHROPIC_MODEL", "ANTHROPIC_DEFAULT_OPUS_MODEL", "ANTHROPIC_DEFAULT_SONNET_MODEL")
    env = (
        *home_env(dirs),
        ("ANTHROPIC_BASE_URL", base_url),
        ("ANTHROPIC_AUTH_TOKEN", key),
        *((name, model) for name in (*models, "ANTHROPIC_DEFAULT_HAIKU_MODEL", "CLAUDE_CODE_SUBAGENT_MODEL")),
        ("CLAUDE_CONFIG_DIR", f"{dirs.run}/{_CLAUDE_DIR}"),
    )
    argv = (binary, "--print", "--output-format", "stream-json", "--verbose")
    return Invocation(argv=(*argv, "--permission-mode", "bypassPermissions", "--", prompt), env=env)


_CLAUDE: Final = Preset(
    name="claude-code",
    binary="claude",
    package=Package(
        registry="npm",
        name="@anthropic-ai/claude-code",
        version="2.1.197",
        note="the newest on Node 20; 2.1.332 needs Node 22",
    ),
    api="anthropic",
    env=(("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"), ("IS_SANDBOX", "1")),
    config_files=(),
    places=Places(
        instructions="claude/CLAUDE.md",
        workspace_instructions="CLAUDE.md",
        skills="claude/skills",
        # its user configuration in CLAUDE_CONFIG_DIR, where its user-scope servers are (tested with the real CLI)
        mcp=McpPlace(
            file="claude/.claude.json",
            key="mcpServers",
            format="json",
            entry="stdio",
            # print mode connects servers in the background and waits 2 s for them: its first request can go
            # without their tools. Blocking, it waits up to MCP_CONNECT_TIMEOUT_MS (5 s by default) before its
            # first request, each server's connection failing after MCP_TIMEOUT (30 s): both 60 s, as Codex's.
            env=(
                ("MCP_CONNECTION_NONBLOCKING", "0"),
                ("MCP_CONNECT_TIMEOUT_MS", "60000"),
                ("MCP_TIMEOUT", "60000"),
            ),
        ),
        moved=((".claude", _CLAUDE_DIR),),
    ),
    tool_map=(
        ("Bash", "bash"),
        ("Read", "read_file"),
        ("Write", "write_file"),
        ("Edit", "edit_file"),
        ("MultiEdit", "edit_file"),
        ("LS", "list_dir"),
        ("Grep", "search"),
        ("Glob", "search"),
        ("WebFetch", "fetch_url"),
    ),
    noise=(
        # its memory directory is named after the workspace path, slashes as dashes
        (r"/projects/-[^/\"\\]*/", "/projects/<workspace>/"),
        # a JSON string of its per-config-dir device id and per-run session id
        (r'"user_id":"(?:[^"\\]|\\.)*"', '"user_id":"<user>"'),
        (r"Today's date is [0-9-]+", "Today's date is <date>"),
    ),
    own_command=None,
    takes_files=False,
    start=_claude,
)


# --- gemini-cli -------------------------------------------------------------------------------------------

_GEMINI_SETTINGS: Final = "home/.gemini/settings.json"
_GEMINI_SETTINGS_BODY: Final = {
    # API-key auth with the key from GEMINI_API_KEY (with only GOOGLE_GEMINI_BASE_URL set it picks its
    # "gateway" auth, which headless mode refuses: "Invalid auth method selected")
    "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
    "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
    "privacy": {"usageStatisticsEnabled": False},
    "telemetry": {"enabled": False},
    # its two built-in skills are listed in the system prompt in the order its file search finds them, which
    # differs from run to run (a replay would diverge on it); they are not the task's
    "skills": {"disabled": ["antigravity-support", "skill-creator"]},
}


def _gemini(binary: str, prompt: str, model: str, base_url: str, dirs: RunDirs, key: str) -> Invocation:
    env = (*home_env(dirs), ("GOOGLE_GEMINI_BASE_URL", base_url), ("GEMINI_API_KEY", key))
    settings = json.dumps(_GEMINI_SETTINGS_BODY, indent=1)
    # the prompt on stdin (headless when stdin is not a terminal): a "-p" value starting with "-" would be
    # read as an option; stdin is sent as it is (the shell writes it at once: Gemini CLI waits 500 ms for it)
    argv = (binary, "--model", model, "--output-format", "stream-json", "--approval-mode", "yolo")
    return Invocation(argv=argv, env=env, files=((f"{dirs.run}/{_GEMINI_SETTINGS}", settings),), stdin=prompt)


_GEMINI: Final = Preset(
    name="gemini-cli",
    binary="gemini",
    package=Package(registry="npm", name="@google/gemini-cli", version="0.61.0"),
    api="gemini",
    env=(
        ("GEMINI_CLI_TRUST_WORKSPACE", "true"),  # else it drops --approval-mode yolo in an untrusted folder
        ("GEMINI_CLI_NO_RELAUNCH", "true"),  # it would start a second node process for a larger heap
        ("NO_COLOR", "1"),
        # it instantiates WebAssembly, which by default reserves ~10 GB of address space per memory: more than
        # the sandbox's limit of one process (sandboxMemory, 8 GiB), so it would not start there (Node >= 20.15)
        ("NODE_OPTIONS", "--disable-wasm-trap-handler"),
    ),
    config_files=(_GEMINI_SETTINGS,),
    places=Places(
        instructions="home/.gemini/GEMINI.md",
        workspace_instructions="GEMINI.md",
        skills="home/.gemini/skills",
        mcp=McpPlace(file=_GEMINI_SETTINGS, key="mcpServers", format="json", entry="split"),
        moved=(),  # its ~/.gemini stays in its private HOME
    ),
    tool_map=(
        ("run_shell_command", "bash"),
        ("read_file", "read_file"),
        ("read_many_files", "read_file"),
        ("write_file", "write_file"),
        ("replace", "edit_file"),
        ("list_directory", "list_dir"),
        ("grep_search", "search"),
        ("glob", "search"),
        ("web_fetch", "fetch_url"),
    ),
    noise=(
        (r"Today's date is [^\\\n(]*\(", "Today's date is <date> ("),
        # a call id it makes when the model sends none: the tool's name, the time in ms, a counter
        (r'"id":"[a-z_]+_[0-9]{13}_[0-9]+"', '"id":"<id>"'),
        (r"Process Group PGID: [0-9]+", "Process Group PGID: <pid>"),
        # its project's temporary directory is named after the workspace directory's name
        (r"/\.gemini/tmp/[^/\\\"`]+", "/.gemini/tmp/<project>"),
    ),
    # it runs a prompt starting with "/" as one of its commands ("//" and "/*" are text to it)
    own_command=r"/(?![/*])",
    takes_files=False,
    start=_gemini,
)


PRESETS: Final[Mapping[PresetName, Preset]] = {
    preset.name: preset for preset in (_CODEX, _OPENCODE, _AIDER, _CLAUDE, _GEMINI)
}
"""Every preset by name (a test proves each ``PresetName`` has a complete record)."""
