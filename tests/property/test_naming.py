"""Properties of what names a run (alisio.core.lab.reports.naming), of the runs listed once per message
(alisio.core.lab.outputs.failing) and of a file's changed lines in a replay divergence."""

from __future__ import annotations

import json

import msgspec
from hypothesis import given
from hypothesis import strategies as st

from alisio.core.lab.comparisons.compare import compare_reports
from alisio.core.lab.outputs.failing import failing_runs, group_failures
from alisio.core.lab.outputs.render import render_markdown
from alisio.core.lab.reports.context import ContextCondition, ContextFile, context_condition
from alisio.core.lab.reports.naming import (
    NAMERS,
    UNKNOWN_AGENT,
    agent_text,
    mode_text,
    naming_differences,
    run_naming,
    script_digest,
)
from alisio.core.lab.reports.report import DEFAULT_AGENT, AgentCondition, AnswerSource, Conditions
from alisio.core.lab.reports.report_build import build_report
from alisio.core.lab.reports.report_json import decode_report, encode_report
from alisio.core.lab.runs.records import RunRecord
from alisio.core.replay.fingerprint import CHANGED_LINES, changed_lines
from tests.property.strategies_html import KNOWN, arm_records
from tests.property.strategies_report import conditions, task_runs

words = st.text(alphabet="abcdefgh-.0123456789 ", min_size=1, max_size=12)
digests = st.none() | st.text(alphabet="0123456789abcdef", min_size=64, max_size=64)
agents = st.none() | st.builds(
    AgentCondition,
    name=st.sampled_from((DEFAULT_AGENT, "codex", "mine")),
    kind=st.sampled_from(("builtin", "codex", "command")),
    version=words,
    settings_hash=digests,
)


faults = st.none() | st.sampled_from(("429:0.1,seed=0", "500:0.2,cut:0.05,seed=7", "stall:1,seed=3"))


def _with(
    agent: AgentCondition | None,
    script: str | None,
    fault: str | None = None,
    context: ContextCondition | None = None,
) -> Conditions:
    return msgspec.structs.replace(
        conditions(), agent=agent, script_hash=script, faults=fault, context=context
    )


contexts = st.one_of(
    st.none(),
    st.builds(
        lambda label, sha, system: context_condition(
            label, [ContextFile(area="workspace", path="AGENTS.md", sha256=sha)], system, ()
        ),
        st.sampled_from(("agents-md", "skill")),
        st.sampled_from(("0" * 64, "1" * 64)),
        st.sampled_from((None, "Read AGENTS.md.")),
    ),
)


@given(agents, digests, faults, contexts, agents, digests, faults, contexts)
def test_compare_names_a_difference_exactly_when_what_names_the_runs_differs(
    a: AgentCondition | None,
    s: str | None,
    f: str | None,
    x: ContextCondition | None,
    b: AgentCondition | None,
    t: str | None,
    g: str | None,
    y: ContextCondition | None,
) -> None:
    """One warning per naming condition whose text differs, naming both sides; none when both read the same.
    Equal conditions never differ; different agents read differently (the text carries every field shown)."""
    base, cand = _with(a, s, f, x), _with(b, t, g, y)
    lines = naming_differences(base, cand)
    assert naming_differences(base, base) == []
    assert any(line.startswith("agent differs: ") for line in lines) == (agent_text(a) != agent_text(b))
    assert any(line.startswith("script differs: ") for line in lines) == (s != t)
    assert any(line == f"faults differs: {f or 'none'} -> {g or 'none'}" for line in lines) == (f != g)
    assert any(line.startswith("context differs: ") for line in lines) == (x != y)
    if a is not None and b is not None and "builtin" not in (a.kind, b.kind):

        def shown(x: AgentCondition) -> tuple[str, str, str, str]:
            return (x.name, x.kind, x.version, (x.settings_hash or "")[:16])

        assert (agent_text(a) != agent_text(b)) == (shown(a) != shown(b))
    for line in lines:
        key, _, rest = line.partition(" differs: ")
        old, _, new = rest.partition(" -> ")
        assert key in {n.key for n in run_naming(base)} and old != new
    comparison = compare_reports(build_report(task_runs("a", 1), base), build_report(task_runs("a", 1), cand))
    assert [w for w in comparison.unwrap().warnings if w in lines] == lines


@given(agents, digests, faults, contexts)
def test_every_naming_condition_is_read_by_the_outputs(
    agent: AgentCondition | None, script: str | None, fault: str | None, context: ContextCondition | None
) -> None:
    """Each present naming condition is a row of report.md; the agent always is (unknown when not recorded)."""
    c = _with(agent, script, fault, context)
    named = run_naming(c)
    assert [n.key for n in named] == ["agent", "script", "faults", "context"] and len(named) == len(NAMERS)
    assert named[2].present == (fault is not None)
    assert named[3].present == (context is not None)
    assert named[0].present and named[0].value == agent_text(agent)
    assert (agent is None) == (named[0].value == UNKNOWN_AGENT)
    text = render_markdown(build_report(task_runs("a", 1), c))
    for n in named:
        shown = f"`{n.value}`" if n.code else n.value
        assert (f"| {n.name} | {shown} |" in text) == n.present


def test_a_report_json_without_the_agent_reads_as_unknown() -> None:
    """report.json of before the agent was recorded decodes, and names its agent unknown."""
    data = json.loads(encode_report(build_report(task_runs("a", 2), conditions())))
    data["conditions"].pop("agent", None)
    report = decode_report(json.dumps(data).encode(), "old/report.json").unwrap()
    assert report.conditions.agent is None and agent_text(report.conditions.agent) == UNKNOWN_AGENT


@given(st.sampled_from(["scripted", "openai-compat"]), st.sampled_from(list(AnswerSource)))
def test_a_scripted_live_run_is_the_scripted_mode(provider: str, mode: AnswerSource) -> None:
    c = msgspec.structs.replace(conditions(), provider=provider, mode=mode)
    assert mode_text(c) == ("scripted" if provider == "scripted" and mode is AnswerSource.LIVE else str(mode))


@given(st.lists(st.tuples(st.sampled_from(("", "a", "b")), st.binary(max_size=20)), max_size=4))
def test_the_script_digest_changes_with_any_byte_and_any_task(scripts: list[tuple[str, bytes]]) -> None:
    """Equal scripts, equal digest; a byte more, or the bytes under another task, another digest."""
    digest = script_digest(scripts)
    assert digest == script_digest(list(scripts)) and len(digest) == 64
    assert script_digest([*scripts, ("a", b"x")]) != digest
    if scripts:
        task, data = scripts[0]
        assert script_digest([(task + "x", data), *scripts[1:]]) != digest
        assert script_digest([(task, data + b"\0"), *scripts[1:]]) != digest


@given(arm_records())
def test_groups_hold_each_failing_run_once_and_share_its_task_and_message(
    records: tuple[RunRecord, ...],
) -> None:
    """Every run that did not pass is in exactly one group; a group's runs share the task and everything the
    list shows of them; groups keep the runs' order."""
    runs, _ = failing_runs(records, "run-1", KNOWN)
    groups = group_failures(runs)
    firsts = [runs.index(group.first) for group in groups]
    assert firsts == sorted(firsts)
    for group in groups:
        at = [runs.index(run) for run in group.runs]
        assert at == sorted(at)
    assert sorted((r.task_id, r.repetition) for g in groups for r in g.runs) == sorted(
        (r.task_id, r.repetition) for r in runs
    )
    for group in groups:
        assert len({run.message_key for run in group.runs}) == 1
        assert len({run.task_id for run in group.runs}) == 1
    keys = [group.first.message_key for group in groups]
    assert len(keys) == len(set(keys))


lines = st.lists(st.text(alphabet="abc =+-()", max_size=12), min_size=1, max_size=8)


@given(lines, lines, st.sampled_from(["0" * 64, "a" * 64]), st.sampled_from(["1" * 64, "b" * 64]))
def test_a_changed_file_shows_its_changed_lines_after_its_hash(
    old: list[str], new: list[str], before: str, after: str
) -> None:
    """A first difference on a sha256 line shows the file's changed lines (``-`` recorded, ``+`` now), at most
    ``CHANGED_LINES``; no other line differing, none; a first difference elsewhere, none."""
    recorded = f"path: f.py\nsha256: {before}\n---\n" + "\n".join(old)
    now = f"path: f.py\nsha256: {after}\n---\n" + "\n".join(new)
    shown = changed_lines(recorded, now)
    assert len(shown) <= CHANGED_LINES and all(line[:1] in "+-" for line in shown)
    assert (shown == ()) == ("\n".join(old).splitlines() == "\n".join(new).splitlines())
    assert changed_lines(recorded.replace("path: f.py", "path: g.py"), now.replace(after, before)) == ()
