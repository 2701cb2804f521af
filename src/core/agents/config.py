"""``[agents.NAME]`` tables with a ``kind`` other than ``builtin``: external agents, as configured.

An external agent is a preset (``codex``, ``opencode``, ``aider``, ``claude-code``, ``gemini-cli``: pinned
headless invocations, one record each in ``alisio.core.agents.presets``) or a generic ``command``::

    [agents.mine]
    kind = "command"
    command = ["python3", "/path/agent.py", "--model", "{model}", "--prompt-file", "{prompt_file}"]
    api = "openai-chat"            # one of alisio.core.harness.wire.APIS (default: openai-chat)
    baseUrlEnv = "OPENAI_BASE_URL" # the variable that carries the proxy's base URL (default per api)
    keyEnv = "OPENAI_API_KEY"      # the variable that carries the (dummy) key (default per api)
    env = ["MY_SETTING"]           # the user's variables passed through (an allow-list)
    version = ["python3", "/path/agent.py", "--version"]
    stdin = false                  # true: the prompt is written to the agent's stdin, which is then closed
    tools = { run_shell = "bash" } # the agent's tool names that mean a lab tool (tool-sequence rules)

Rules this module keeps: every value is checked when parsed, and a problem is a ``ConfigError`` naming the
file and ``agents.NAME.FIELD``; a ``command`` agent must take the prompt somewhere (``{prompt}``,
``{prompt_file}`` or ``stdin = true``), and its executable (the first item) holds no placeholder; the key
itself never appears here, only variable names.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Final, Literal, get_args

import msgspec
from msgspec import Meta
from returns.result import Failure, Result, Success

from alisio.core.agents.exchange import Api
from alisio.core.agents.presets import PRESETS, PresetName
from alisio.core.base import Frozen
from alisio.core.errors import ConfigError
from alisio.core.harness.wire import wire_format
from alisio.core.shape import shape_problems

__all__ = [
    "EXTERNAL_KINDS",
    "KINDS",
    "MODEL",
    "PROMPT",
    "PROMPT_FILE",
    "ExternalAgent",
    "Kind",
    "default_api",
    "env_names",
    "parse_external",
    "split_agents",
]

Kind = Literal["builtin", PresetName, "command"]
KINDS: Final[tuple[str, ...]] = get_args(Kind)
EXTERNAL_KINDS: Final[tuple[str, ...]] = tuple(kind for kind in KINDS if kind != "builtin")
PROMPT: Final = "{prompt}"
PROMPT_FILE: Final = "{prompt_file}"
MODEL: Final = "{model}"
"""In a command agent's arguments: the model the lab's provider is asked for (``--model``, a variant's)."""
EnvName = Annotated[str, Meta(pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")]
Argv = Annotated[tuple[Annotated[str, Meta(min_length=1)], ...], Meta(min_length=1)]


class ExternalAgent(Frozen, frozen=True, kw_only=True):
    """An external agent: which CLI, on which wire API, with which environment."""

    name: str
    kind: Kind
    api: Api
    command: tuple[str, ...] = ()
    """``command`` agents: the argument array (``{prompt}``, ``{prompt_file}`` replaced per run)."""
    base_url_env: str
    key_env: str
    env: tuple[str, ...] = ()
    """The user's variables passed through to the agent (nothing else of the environment is)."""
    version: tuple[str, ...] = ()
    """A command printing the agent's version (presets: their own ``--version``)."""
    stdin: bool = False
    binary: str | None = None
    """A preset's executable (default: found on PATH or in the project's .agents/bin)."""
    tools: tuple[tuple[str, str], ...] = ()
    """``command`` agents: the agent's tool names mapped to lab tool names."""


class _Body(Frozen, frozen=True, kw_only=True, forbid_unknown_fields=True):
    kind: Kind
    command: Argv | None = None
    api: Api | None = None
    base_url_env: EnvName | None = None
    key_env: EnvName | None = None
    env: tuple[EnvName, ...] = ()
    version: Argv | None = None
    stdin: bool = False
    binary: Annotated[str, Meta(min_length=1)] | None = None
    tools: dict[str, str] = msgspec.field(default_factory=dict)


_NOUNS: Final[Mapping[object, str]] = {Api: "api", Kind: "kind", EnvName: "a variable name"}


def default_api(kind: str) -> Api:
    """The wire API a kind speaks unless ``api`` says otherwise: a preset's record's, else ``openai-chat``."""
    preset = next((preset for name, preset in PRESETS.items() if name == kind), None)
    return preset.api if preset is not None else "openai-chat"


def env_names(api: Api) -> tuple[str, str]:
    """The default base-URL and key variables of ``api`` (its record's ``base_url_env`` and ``key_env``)."""
    record = wire_format(api)
    return record.base_url_env, record.key_env


def _error(source: str, name: str, field: str, message: str) -> Failure[ConfigError]:
    return Failure(ConfigError(source=source, key=f"agents.{name}.{field}", message=message))


def _checked(name: str, body: _Body, source: str) -> Result[ExternalAgent, ConfigError]:
    if body.kind == "command":
        if body.command is None:
            return _error(source, name, "command", "missing: a command agent needs its argument array")
        if any(word in body.command[0] for word in (PROMPT, PROMPT_FILE, MODEL)):
            message = (
                f"the executable (its first item) cannot hold {PROMPT}, {PROMPT_FILE} or {MODEL}: what runs, "
                "and what the sandbox binds for it, is decided before a run's values are put in"
            )
            return _error(source, name, "command[0]", message)
        takes_prompt = any(PROMPT in arg or PROMPT_FILE in arg for arg in body.command)
        if not takes_prompt and not body.stdin:
            message = (
                f"has neither {PROMPT} nor {PROMPT_FILE}, and stdin is false: the agent never gets the task"
            )
            return _error(source, name, "command", message)
    elif body.command is not None:
        return _error(source, name, "command", f'only for kind = "command" (kind {body.kind!r} is a preset)')
    api = body.api or default_api(body.kind)
    if body.kind not in ("command", "builtin") and api != default_api(body.kind):
        return _error(source, name, "api", f"{body.kind} speaks only {default_api(body.kind)}, got {api!r}")
    url_env, key_env = env_names(api)
    return Success(
        ExternalAgent(
            name=name,
            kind=body.kind,
            api=api,
            command=body.command or (),
            base_url_env=body.base_url_env or url_env,
            key_env=body.key_env or key_env,
            env=body.env,
            version=body.version or (),
            stdin=body.stdin,
            binary=body.binary,
            tools=tuple(sorted(body.tools.items())),
        )
    )


def parse_external(name: str, body: Mapping[str, object], source: str) -> Result[ExternalAgent, ConfigError]:
    """An ``[agents.NAME]`` table whose ``kind`` is not ``builtin``, checked.

    Returns:
        ``Failure(ConfigError)`` naming ``agents.NAME.FIELD``: an unknown kind (listing the kinds), an unknown
        key, a value of the wrong type, a command agent that never gets the prompt, a preset given an api it
        does not speak.
    """
    try:
        parsed = msgspec.convert(body, _Body, from_attributes=False)
    except msgspec.ValidationError as error:
        text = str(error)
        field = text.rpartition("`$.")[2].rstrip("`").split(".")[0].split("[")[0] if "`$." in text else "kind"
        if "Invalid enum value" in text and field == "kind":
            return _error(
                source, name, field, f"unknown kind {body.get('kind')!r} (one of {', '.join(KINDS)})"
            )
        if "unknown field" in text:
            field = text.rpartition("`")[0].rpartition("`")[2]
            return _error(source, name, field, "unknown key for an external agent")
        return _shape_error(name, body, source, field, text)
    return _checked(name, parsed, source)


def _shape_error(
    name: str, body: Mapping[str, object], source: str, field: str, text: str
) -> Failure[ConfigError]:
    """msgspec's refusal in the user's words: the nearest api, an argument array written as one string."""
    problems = shape_problems(dict(body), _Body, (), _NOUNS)
    if not problems:  # shape_problems missed it: still report it, without msgspec's path suffix
        return _error(source, name, field, text.rpartition(" - at ")[0] or text)
    path, message = problems[0]
    if path and isinstance(path[0], str):
        field = path[0] + "".join(f"[{part}]" for part in path[1:])
    if field in ("command", "version") and isinstance(body.get(field), str):
        message = 'expected an argument array such as ["python3", "agent.py", "{prompt}"], got a string'
    return _error(source, name, field, message)


def split_agents(
    data: Mapping[str, object], source: str
) -> Result[tuple[dict[str, object], tuple[ExternalAgent, ...]], ConfigError]:
    """A parsed config.toml without its external agents, and those agents parsed (sorted by name).

    An ``[agents.NAME]`` table with ``kind = "builtin"`` stays (its ``kind`` dropped); one with any other
    ``kind`` is parsed by ``parse_external``. Tables without ``kind`` are built-in agents, as before.
    """
    agents = data.get("agents")
    if not isinstance(agents, Mapping):
        return Success(({**data}, ()))
    builtin: dict[str, object] = {}
    external: list[ExternalAgent] = []
    for name, body in agents.items():
        kind = body.get("kind", "builtin") if isinstance(body, Mapping) else "builtin"
        if kind == "builtin":
            builtin[str(name)] = (
                {key: value for key, value in body.items() if key != "kind"}
                if isinstance(body, Mapping)
                else body
            )
            continue
        assert isinstance(body, Mapping)
        match parse_external(str(name), body, source):
            case Success(agent):
                external.append(agent)
            case Failure(error):
                return Failure(error)
    rest = {key: value for key, value in data.items() if key != "agents"}
    if builtin:
        rest["agents"] = builtin
    return Success((rest, tuple(sorted(external, key=lambda agent: agent.name))))
