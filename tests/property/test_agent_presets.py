"""Every external agent preset is one complete record, and what the lab does with an agent comes from it."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import PurePosixPath
from typing import get_args

from hypothesis import given
from hypothesis import strategies as st

from alisio.core.agents.config import EXTERNAL_KINDS, KINDS, Kind, default_api, parse_external
from alisio.core.agents.context_home import home_path, instructions_text, user_path
from alisio.core.agents.exchange import API_NAMES
from alisio.core.agents.external import (
    binary_name,
    install_hint,
    invocation,
    kind_tools,
    noise_rules,
    prompt_problem,
    takes_files,
    tool_map,
)
from alisio.core.agents.mcp_config import mcp_place, mcp_refusal, with_mcp_servers
from alisio.core.agents.presets import (
    PRESET_NAMES,
    PRESETS,
    XDG_DIRS,
    McpPlace,
    NoMcp,
    PresetName,
    RunDirs,
    home_env,
)
from alisio.core.share.linear_regex import LinearPattern, compile_linear
from tests.property.strategies_agents import TEXT

LAB_TOOLS = {"read_file", "list_dir", "search", "write_file", "edit_file", "bash", "fetch_url", "analyze"}
TOKEN = "alisio-run-0123456789abcdef0123456789abcdef"
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _relative(path: str) -> bool:
    """A path under the run directory: relative, without ``..``."""
    pure = PurePosixPath(path)
    return bool(path) and not pure.is_absolute() and ".." not in pure.parts


def test_every_preset_name_has_a_complete_record_and_every_record_a_name() -> None:
    """``PresetName``'s members are exactly ``PRESETS``' keys, each record under its own name; the config's
    ``kind`` is builtin, the presets and command, nothing else (a Literal member without a record fails)."""
    assert set(get_args(PresetName)) == set(PRESETS) == set(PRESET_NAMES)
    assert KINDS == ("builtin", *PRESET_NAMES, "command") == get_args(Kind)
    assert (*PRESET_NAMES, "command") == EXTERNAL_KINDS
    for name in PRESET_NAMES:
        preset = PRESETS[name]  # type: ignore[index]
        assert preset.name == name
        assert preset.binary and "/" not in preset.binary, name
        assert preset.package.name and re.fullmatch(r"[0-9]+\.[0-9]+\.[0-9]+", preset.package.version), name
        assert preset.api in API_NAMES, name
        assert all(ENV_NAME.fullmatch(var) for var, _ in preset.env), name
        assert all(_relative(path) for path in preset.config_files), name
        places = preset.places
        mcp = places.mcp if isinstance(places.mcp, McpPlace) else None
        for path in (places.instructions, places.skills, mcp.file if mcp else None):
            assert path is None or _relative(path), (name, path)
        assert all(ENV_NAME.fullmatch(var) for var, _ in (mcp.env if mcp else ())), name
        # the instructions are read in the workspace and under ~ both, or (aider) in neither
        assert (places.instructions is None) == (places.workspace_instructions is None), name
        if places.instructions is not None and places.workspace_instructions is not None:
            assert "/" not in places.workspace_instructions, name
            home = user_path(name, places.instructions)
            assert home_path(name, home) == places.instructions, name  # where a context's home file lands
            assert instructions_text(name) == (
                f'{places.workspace_instructions} in the workspace, or ~/{home} (home "{home}")'
            )
        xdg = {under for _, under, _ in XDG_DIRS}
        for under, there in places.moved:  # a directory of its own under ~, moved into the run directory
            assert _relative(under) and under.startswith(".") and under not in xdg, (name, under)
            assert _relative(there) and there != "home" and not there.startswith("xdg-"), (name, there)
        assert {lab for _, lab in preset.tool_map} <= LAB_TOOLS, name
        assert len(dict(preset.tool_map)) == len(preset.tool_map), name  # no agent tool named twice
        for pattern, _ in preset.noise:
            assert isinstance(compile_linear(pattern).value_or(None), LinearPattern), (name, pattern)
        if preset.own_command is not None:
            re.compile(preset.own_command)


@given(st.sampled_from(PRESET_NAMES), TEXT, TEXT.filter(bool))
def test_a_presets_agent_is_started_as_its_record_says(name: str, prompt: str, model: str) -> None:
    """The agent of a preset: its record's api, binary, install command, tool map, noise and files; its
    invocation carries the record's fixed environment, writes exactly its ``config_files`` under the run
    directory, and gives the run's token only in its environment or those files."""
    preset = PRESETS[name]  # type: ignore[index]
    agent = parse_external("x", {"kind": name}, "config.toml").unwrap()
    assert agent.api == preset.api == default_api(name)
    assert binary_name(agent) == preset.binary
    assert preset.package.spec in install_hint(name)
    assert tool_map(agent) == dict(preset.tool_map)
    assert kind_tools(name) == {lab for _, lab in preset.tool_map}
    assert noise_rules(agent) == preset.noise
    assert takes_files(agent) == preset.takes_files
    dirs = RunDirs(run="/r", workspace="/w", prompt_file="/r/prompt.txt", files=("src/a.py",))
    inv = invocation(agent, "/bin/agent", prompt.replace(TOKEN, ""), model, "http://127.0.0.1:1", dirs, TOKEN)
    assert inv.argv[0] == "/bin/agent"
    env = dict(inv.env)
    assert set(preset.env) <= set(inv.env) and env["HOME"] == "/r/home"
    assert sorted(path for path, _ in inv.files) == sorted(f"/r/{path}" for path in preset.config_files)
    assert not any(TOKEN in arg for arg in inv.argv)
    assert any(TOKEN in value for value in (*env.values(), *(text for _, text in inv.files)))
    assert ("src/a.py" in inv.argv) == preset.takes_files
    # the directories it is told of are its private HOME and XDG ones, the ones its record says it moves
    # (``places.moved``: where a context's home files under them land) and its config files, nothing else
    told = {value for value in env.values() if value.startswith("/r/")}
    moved = {f"/r/{there}" for _, there in preset.places.moved}
    assert moved <= told, name
    assert told - {value for _, value in home_env(dirs)} - moved <= {
        f"/r/{p}" for p in preset.config_files
    }, name


WITHOUT_MCP = {"aider": "aider has no MCP client"}
"""The presets whose agent reads no MCP servers, and the reason a run giving it some is refused with."""
SERVERS = {"docs": ("/usr/bin/python3", "/srv/docs server.py", '--flag="x"'), "b-2": ("/bin/b",)}


def _read_servers(place: McpPlace, text: str) -> dict[str, tuple[str, ...]]:
    """The servers (name -> argv) an agent reads from its MCP file's text, in each entry shape."""
    document = tomllib.loads(text) if place.format == "toml" else json.loads(text)
    table = document[place.key]
    read: dict[str, tuple[str, ...]] = {}
    for name, entry in table.items():
        if place.entry == "local":
            assert entry["type"] == "local" and entry["enabled"] is True, (place, entry)
            read[name] = tuple(entry["command"])
            continue
        assert place.entry == "split" or entry["type"] == "stdio", (place, entry)
        read[name] = (entry["command"], *entry["args"])
        assert {k: entry[k] for k in dict(place.settings)} == dict(place.settings), (place, entry)
    return read


def test_every_preset_says_where_it_reads_mcp_servers_or_why_it_reads_none() -> None:
    """Each record's MCP place is the one the lab writes from: the run's servers are in that file (merged
    into it when ``start`` writes it, the record's other files and settings kept), read back in the record's
    format and entry shape; a preset with none (aider) is refused in one line naming its servers and its
    record's reason, as is a command agent. A new preset must give a place or be one of ``WITHOUT_MCP``."""
    dirs = RunDirs(run="/r", workspace="/w", prompt_file="/r/prompt.txt")
    for name in PRESET_NAMES:
        preset = PRESETS[name]  # type: ignore[index]
        place = preset.places.mcp
        assert mcp_place(name) == place, name
        if isinstance(place, NoMcp):
            assert WITHOUT_MCP.get(name) == place.why, f"{name} has no MCP place: give one or say why not"
            assert (
                mcp_refusal(name, SERVERS)
                == f"MCP servers (b-2, docs) cannot be given to this agent: {place.why}"
            )
            continue
        assert name not in WITHOUT_MCP and mcp_refusal(name, SERVERS) is None, name
        agent = parse_external("x", {"kind": name}, "config.toml").unwrap()
        inv = invocation(agent, "/bin/agent", "fix it", "m", "http://127.0.0.1:1", dirs, TOKEN)
        given = with_mcp_servers(place, inv, SERVERS, "/r", binds=["/srv"])
        files = dict(given.files)
        assert set(files) == {*dict(inv.files), f"/r/{place.file}"}, name
        assert _read_servers(place, files[f"/r/{place.file}"]) == SERVERS, name
        for path, text in inv.files:  # the preset's own settings survive the merge
            if path == f"/r/{place.file}" and place.format == "json":
                assert json.loads(text).items() <= json.loads(files[path]).items(), name
            elif path == f"/r/{place.file}":
                assert files[path].startswith(text), name
            else:
                assert files[path] == text, name
        assert given.host_paths == (*inv.host_paths, "/srv") and given.argv == inv.argv, name
    assert mcp_refusal("command", SERVERS) == (
        "MCP servers (b-2, docs) cannot be given to this agent: "
        "a command agent has no MCP configuration alisio knows how to write"
    )


REFUSED = {"aider": ("/help", "!ls", "/* x */", "//x"), "gemini-cli": ("/help",)}
"""The prompts of ``PROMPTS`` each preset would run as one of its own commands."""
PROMPTS = ("/help", "!ls", "//x", "/* x */", " /help", "- fix it", "fix it")


def test_a_prompt_a_preset_would_run_as_its_own_command_is_refused_naming_it() -> None:
    """aider's ``/`` and ``!``, Gemini CLI's ``/`` (not ``//`` or ``/*``, which it reads as text): refused,
    naming the preset and the character; every other start, and every start for the other presets, is
    given to the model."""
    for name in PRESET_NAMES:
        agent = parse_external("x", {"kind": name}, "c").unwrap()
        for prompt in PROMPTS:
            problem = prompt_problem(agent, prompt)
            if prompt in REFUSED.get(name, ()):
                assert problem is not None
                assert problem.startswith(f"{name} would run a prompt that starts with {prompt[0]!r}")
            else:
                assert problem is None, (name, prompt)
