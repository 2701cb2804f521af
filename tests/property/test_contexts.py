"""Properties of alisio.core.lab.suites.context_spec and alisio.core.lab.reports.context (parsing, the condition's digest, whether a run used a context), the
called / not-called tool-sequence rules against a slow oracle, and where a home file lands
(alisio.core.agents.context_home)."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st
from returns.result import Failure, Success

from alisio.core.agents.context_home import home_path
from alisio.core.harness.events import ToolCalled
from alisio.core.lab.judges.verify import judge_tool_sequence
from alisio.core.lab.reports.context import (
    ContextFile,
    McpServer,
    context_condition,
    context_names,
    context_used,
)
from alisio.core.lab.runs.records import VerifierStatus
from alisio.core.lab.suites.context_spec import parse_context
from alisio.core.lab.suites.suite import CalledRule, NotCalledRule, ToolSequenceVerifier
from tests.property.strategies_verify import TOOLS, event_log, gen_calls

TEXTS = ("a.py", "path", "ls", "old", "x")


@given(gen_calls(), st.sampled_from((*TOOLS, "*")), st.sampled_from((None, *TEXTS)))
def test_called_and_not_called_are_each_others_negation(calls, tool, text) -> None:  # type: ignore[no-untyped-def]
    """called holds exactly when some call of the tool (any, for ``*``) has the text in its arguments,
    raw or decoded; not-called exactly when called does not."""
    events = event_log(calls)
    oracle = any(
        (tool == "*" or c.name == tool) and (text is None or text in c.raw or _decoded_holds(c.raw, text))
        for c in calls
    )
    for rule, expected in (
        (CalledRule(tool=tool, args_include=text), oracle),
        (NotCalledRule(tool=tool, args_include=text), not oracle),
    ):
        result = judge_tool_sequence(ToolSequenceVerifier(id="v", rules=(rule,)), events)
        assert (result.status is VerifierStatus.PASS) == expected, (rule, calls, result.detail)


def _decoded_holds(raw: str, text: str) -> bool:
    try:
        value = json.loads(raw)
    except ValueError:
        return False
    return isinstance(value, dict) and any(isinstance(v, str) and text in v for v in value.values())


def test_an_escaped_slash_is_still_named() -> None:
    call = ToolCalled(
        seq=1,
        elapsed_ms=0,
        call_id="c",
        name="read_file",
        arguments='{"path":"skills\\/pdf\\/SKILL.md"}',
        effect=None,
    )
    condition = context_condition(
        "s", [ContextFile(area="home", path=".claude/skills/pdf/SKILL.md", sha256="0" * 64)], None, ()
    )
    assert context_names(condition) == ("skills/pdf/SKILL.md",)
    assert context_used(condition, [call])
    assert not context_used(
        condition,
        [
            call.__class__(
                **{
                    **{f: getattr(call, f) for f in call.__struct_fields__},
                    "arguments": '{"path":"README.md"}',
                }
            )
        ],
    )


def test_an_mcp_call_uses_its_server() -> None:
    condition = context_condition("m", [], None, [McpServer(name="docs", command=("python3", "s.py"))])
    call = ToolCalled(seq=1, elapsed_ms=0, call_id="c", name="mcp__docs__search", arguments="{}", effect=None)
    assert context_used(condition, [call])
    other = ToolCalled(
        seq=1, elapsed_ms=0, call_id="c", name="mcp__documents__search", arguments="{}", effect=None
    )
    assert not context_used(condition, [other])


_FILES = st.lists(
    st.builds(
        ContextFile,
        area=st.sampled_from(("workspace", "home")),
        path=st.sampled_from(("AGENTS.md", "a/b.md", ".codex/AGENTS.md")),
        sha256=st.sampled_from(("0" * 64, "1" * 64)),
    ),
    max_size=4,
    unique_by=lambda f: (f.area, f.path),
)


@given(_FILES, st.sampled_from((None, "text", "other")))
def test_the_digest_ignores_order_and_sees_every_byte(files, system) -> None:  # type: ignore[no-untyped-def]
    """The same files in any order give one digest; changing a file's hash, area or the text changes it."""
    one = context_condition("l", files, system, ())
    assert context_condition("l", list(reversed(files)), system, ()).digest == one.digest
    assert (
        context_condition("other-label", files, system, ()).digest == one.digest
    )  # the label is a name only
    if files:
        changed = [ContextFile(area=files[0].area, path=files[0].path, sha256="2" * 64), *files[1:]]
        assert context_condition("l", changed, system, ()).digest != one.digest
    assert context_condition("l", files, (system or "") + "!", ()).digest != one.digest


def test_parse_keeps_what_is_written_and_refuses_the_rest() -> None:
    raw = {
        "label": "skill",
        "workspace": {"AGENTS.md": "a.md", "skills/x/": "x/"},
        "mcp": {"d": {"command": ["p"], "env": {"B": "2", "A": "1"}}},
    }
    match parse_context(raw, "f.json"):
        case Success(spec):
            assert spec.workspace == (("AGENTS.md", "a.md"), ("skills/x/", "x/"))
            assert spec.mcp_commands == {"d": ("p",)}
            assert spec.mcp[0].env == (("A", "1"), ("B", "2"))
        case Failure(error):
            raise AssertionError(error)
    bad = [
        ({"workspace": {"a": "../b"}}, 'context.workspace["a"]'),
        ({"workspace": {"a/": "b"}}, "its source must end with /"),
        ({"workspace": {"./a": "x", "a": "y"}}, "names the same destination"),
        ({"label": "ends with space ", "system": "x"}, "context.label"),
        ({"label": "a/b", "system": "x"}, "context.label"),
        ({"mcp": {"a__b": {"command": ["p"]}}}, "no __"),
        ({"mcp": {"a": {"command": ["p"], "env": {"1X": "v"}}}}, "is not a variable name"),
        ([], "expected an object"),
    ]
    for value, message in bad:
        match parse_context(value, "f.json"):
            case Failure(error):
                assert message in str(error) and str(error).startswith("f.json: context"), str(error)
            case Success(spec):
                raise AssertionError((value, spec))


def test_home_files_land_where_each_agent_looks() -> None:
    assert home_path("claude-code", ".claude/skills/pdf/SKILL.md") == "claude/skills/pdf/SKILL.md"
    assert home_path("codex", ".codex/AGENTS.md") == "codex-home/AGENTS.md"
    assert home_path("opencode", ".config/opencode/AGENTS.md") == "xdg-config/opencode/AGENTS.md"
    assert home_path("codex", ".claude/CLAUDE.md") == "home/.claude/CLAUDE.md"
    assert home_path("aider", ".aider.conf.yml") == "home/.aider.conf.yml"
    assert home_path("claude-code", ".claudex/x") == "home/.claudex/x"
    assert home_path("gemini-cli", ".gemini/GEMINI.md") == "home/.gemini/GEMINI.md"
    assert home_path("command", ".claude/CLAUDE.md") == "home/.claude/CLAUDE.md"
    assert home_path("command", ".local/share/x") == "xdg-data/x"
