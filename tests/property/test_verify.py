"""Properties of alisio.core.lab.judges.verify: tool-sequence rules against slow oracles, tree diffs, command and file judges."""

from __future__ import annotations

import hashlib

from hypothesis import example, given
from hypothesis import strategies as st

from alisio.core.lab.judges.verify import (
    CommandFacts,
    FileFound,
    FileMissing,
    FileUnusable,
    NotAFile,
    TreeEntry,
    TreeSnapshot,
    canonical_arguments,
    changed_paths,
    is_ignored,
    judge_command,
    judge_file,
    judge_tool_sequence,
    judge_tree_diff,
    tree_snapshot,
)
from alisio.core.lab.runs.records import VerifierStatus
from alisio.core.lab.suites.suite import (
    BeforeRule,
    CommandVerifier,
    FileAbsentVerifier,
    FileContainsVerifier,
    FileEqualsVerifier,
    MaxCallsRule,
    NeverRule,
    NoRepeatFailureRule,
    Rule,
    ToolSequenceVerifier,
    TreeDiffWithinVerifier,
)
from tests.property.strategies_verify import (
    IGNORED_NAMES,
    GenCall,
    event_log,
    gen_calls,
    kept_paths,
    rules,
    snapshots,
    tools,
)

PASS, FAIL, ERROR = VerifierStatus.PASS, VerifierStatus.FAIL, VerifierStatus.ERROR


def _judge(rule: Rule, calls: tuple[GenCall, ...]) -> VerifierStatus:
    verifier = ToolSequenceVerifier(id="seq", rules=(rule,))
    return judge_tool_sequence(verifier, event_log(calls)).status


# --- tool sequence ---------------------------------------------------------------------------------------


@given(gen_calls(), tools)
def test_never_passes_iff_the_tool_was_not_called(calls: tuple[GenCall, ...], tool: str) -> None:
    """never(tool) passes exactly when no call has that name."""
    expected = PASS if all(call.name != tool for call in calls) else FAIL
    assert _judge(NeverRule(tool=tool), calls) is expected


@given(gen_calls(), tools, st.integers(0, 6))
def test_max_calls_passes_iff_count_is_at_most_max(calls: tuple[GenCall, ...], tool: str, most: int) -> None:
    """max-calls(tool, max) passes exactly when the tool was called at most max times; a fail says the count."""
    count = sum(call.name == tool for call in calls)
    result = judge_tool_sequence(
        ToolSequenceVerifier(id="seq", rules=(MaxCallsRule(tool=tool, max=most),)),
        event_log(calls),
    )
    assert result.status is (PASS if count <= most else FAIL)
    if count > most:
        assert (f"{count} calls" if count != 1 else "1 call;") in result.detail


@given(gen_calls(), tools, tools)
def test_before_passes_iff_every_then_has_an_earlier_first(
    calls: tuple[GenCall, ...], first: str, then: str
) -> None:
    """before(first, then) passes iff each then call has a first call at a smaller index (no then: pass)."""
    if first == then:
        return
    names = [call.name for call in calls]
    holds = all(first in names[:i] for i, name in enumerate(names) if name == then)
    assert _judge(BeforeRule(first=first, then=then), calls) is (PASS if holds else FAIL)


@given(gen_calls(), tools)
@example(  # an unanswered call must not take the failed result of a later call that reused its id
    calls=(
        GenCall(name="read_file", key="k", raw="{not json", result=None),
        GenCall(name="read_file", key="k", raw="{not json", result=True),
        GenCall(name="read_file", key="k", raw="{not json", result=True),
        GenCall(name="read_file", key="k", raw="{not json", result=False),
    ),
    tool="read_file",
)
def test_no_repeat_failure_matches_the_oracle(calls: tuple[GenCall, ...], tool: str) -> None:
    """no-repeat-failure(tool) fails iff some call repeats (same tool, same meaning) an earlier failed call."""
    repeated = any(
        later.name == tool and earlier.name == tool and earlier.key == later.key and earlier.result is False
        for i, earlier in enumerate(calls)
        for later in calls[i + 1 :]
    )
    assert _judge(NoRepeatFailureRule(tool=tool), calls) is (FAIL if repeated else PASS)


def test_no_repeat_failure_names_both_calls_and_ignores_spacing() -> None:
    """A failed edit re-sent with other spacing and key order is a repeat; the detail gives both seqs."""
    calls = (
        GenCall(name="edit_file", key="k", raw='{"path":"a.py","old_string":"x"}', result=False),
        GenCall(name="read_file", key="r", raw='{"path":"a.py"}', result=True),
        GenCall(name="edit_file", key="k", raw='{"old_string": "x", "path": "a.py"}', result=True),
    )
    result = judge_tool_sequence(
        ToolSequenceVerifier(id="seq", rules=(NoRepeatFailureRule(tool="edit_file"),)), event_log(calls)
    )
    assert result.status is FAIL
    assert result.detail.startswith("no-repeat-failure(edit_file): edit_file call at seq 5 with ")
    assert "repeats the failed call at seq 1" in result.detail


@given(st.sampled_from(['{"a":1,"b":[1,2]}', "not json", "", '{"a":1}']))
def test_canonical_arguments_ignore_key_order_and_spacing_only(raw: str) -> None:
    """Canonical arguments are stable under re-spacing of valid JSON and keep invalid text verbatim."""
    assert canonical_arguments(raw) == canonical_arguments(raw)
    assert canonical_arguments('{"b": [1, 2], "a": 1}') == canonical_arguments('{"a":1,"b":[1,2]}')
    assert canonical_arguments('{"a":1}') != canonical_arguments('{"a":2}')
    assert canonical_arguments("{bad") != canonical_arguments("{bad ")


@given(gen_calls(), st.lists(rules, min_size=1, max_size=4))
def test_a_verifier_passes_iff_every_rule_does_and_names_the_first_failing(
    calls: tuple[GenCall, ...], rule_list: list[Rule]
) -> None:
    """All rules must hold; a fail's detail starts with the first failing rule (suite order)."""
    single = [_judge(rule, calls) for rule in rule_list]
    result = judge_tool_sequence(ToolSequenceVerifier(id="seq", rules=tuple(rule_list)), event_log(calls))
    if all(status is PASS for status in single):
        assert result.status is PASS
    else:
        assert result.status is FAIL
        first = rule_list[single.index(FAIL)]
        assert result.detail.startswith(f"{first.__struct_config__.tag}(")


@given(gen_calls(), rules, st.booleans())
def test_a_log_without_run_start_or_run_end_is_an_error(
    calls: tuple[GenCall, ...], rule: Rule, has_start: bool
) -> None:
    """Missing run_start or run_end makes every tool-sequence verifier an error, never a pass."""
    events = event_log(calls, start=has_start, end=not has_start)
    result = judge_tool_sequence(ToolSequenceVerifier(id="seq", rules=(rule,)), events)
    assert result.status is ERROR
    assert "missing events" in result.detail


# --- tree diff -------------------------------------------------------------------------------------------


def _tree(**files: str) -> TreeSnapshot:
    return tree_snapshot(TreeEntry(path=p, kind="file", digest=d) for p, d in files.items())


@given(snapshots(), st.lists(st.sampled_from(["a", "d/", "src/a", ""]), max_size=3))
def test_an_unchanged_tree_passes_whatever_is_allowed(snapshot: TreeSnapshot, allowed: list[str]) -> None:
    """diff(a, a) is empty, and tree-diff-within passes on it with any allowed list."""
    assert changed_paths(snapshot, snapshot) == ()
    verifier = TreeDiffWithinVerifier(id="scope", allowed=tuple(a for a in allowed if a))
    assert judge_tree_diff(verifier, snapshot, snapshot).status is PASS


@given(snapshots(), snapshots())
def test_changes_are_symmetric_and_the_unallowed_diff_fails_exactly_when_something_changed(
    before: TreeSnapshot, after: TreeSnapshot
) -> None:
    """changed_paths(a, b) and (b, a) name the same paths; with nothing allowed, any change fails."""
    forward = {path for _, path in changed_paths(before, after)}
    assert forward == {path for _, path in changed_paths(after, before)}
    status = judge_tree_diff(TreeDiffWithinVerifier(id="scope", allowed=()), before, after).status
    assert status is (FAIL if forward else PASS)
    everything = TreeDiffWithinVerifier(id="scope", allowed=tuple(sorted(forward)))
    assert judge_tree_diff(everything, before, after).status is PASS


@given(
    snapshots(), st.sampled_from(["", "d/", "d/e/"]), st.sampled_from([".git", "node_modules", "__pycache__"])
)
def test_changes_under_ignored_directories_pass(snapshot: TreeSnapshot, prefix: str, ignored: str) -> None:
    """Adding or changing files under .git, node_modules or __pycache__ (any depth) is never a change."""
    extra = (TreeEntry(path=f"{prefix}{ignored}/x.pyc", kind="file", digest="9" * 64),)
    after = TreeSnapshot(entries=snapshot.entries + extra)
    assert judge_tree_diff(TreeDiffWithinVerifier(id="scope", allowed=()), snapshot, after).status is PASS


def test_dir_slash_allows_the_directory_and_only_it() -> None:
    """'d/' allows d/x and d/e/y but not dx/y or a file named d; 'd' allows only the file d."""
    before = _tree(keep="0" * 64)
    for path, allowed, status in [
        ("d/x", ("d/",), PASS),
        ("d/e/y", ("d/",), PASS),
        ("d/e/y", ("./d//",), PASS),
        ("dx/y", ("d/",), FAIL),
        ("d", ("d/",), FAIL),
        ("d/x", ("d",), FAIL),
        ("d", ("d",), PASS),
    ]:
        after = TreeSnapshot(entries=(*before.entries, TreeEntry(path=path, kind="file", digest="1" * 64)))
        result = judge_tree_diff(TreeDiffWithinVerifier(id="scope", allowed=allowed), before, after)
        assert result.status is status, (path, allowed)


def test_a_tree_diff_fail_lists_what_changed_outside() -> None:
    """The detail names each change outside allowed with how it changed; allowed changes are not listed."""
    before = _tree(a="0" * 64, b="0" * 64, c="0" * 64)
    after = _tree(a="1" * 64, c="0" * 64, n="2" * 64)
    result = judge_tree_diff(TreeDiffWithinVerifier(id="scope", allowed=("a",)), before, after)
    assert result.status is FAIL
    assert result.detail == "2 change(s) outside allowed: deleted b, added n"


def test_a_symlink_retargeted_or_turned_into_a_file_is_a_change() -> None:
    """A link is compared by its target text and its kind, not by what it points to."""
    link = TreeSnapshot(entries=(TreeEntry(path="l", kind="symlink", digest="a"),))
    retarget = TreeSnapshot(entries=(TreeEntry(path="l", kind="symlink", digest="b"),))
    as_file = TreeSnapshot(entries=(TreeEntry(path="l", kind="file", digest="a"),))
    assert changed_paths(link, retarget) == (("changed", "l"),)
    assert changed_paths(link, as_file) == (("changed", "l"),)


# --- command ---------------------------------------------------------------------------------------------

_CHECK = CommandVerifier(id="check", command=("python3", "check.py"), timeout_ms=1000)


@given(
    st.integers(-15, 3),
    st.integers(0, 3),
    st.text(max_size=30),
    st.none() | st.sampled_from(["ok", "", "PASSED"]),
    st.booleans(),
)
@example(exit_code=0, expect=0, stdout="ALL PASSED", needle="PASSED", timed_out=False)
def test_a_command_passes_iff_it_exited_as_expected_and_printed_the_text(
    exit_code: int, expect: int, stdout: str, needle: str | None, timed_out: bool
) -> None:
    """pass iff not timed out, exit == expectExit and stdout includes the text; a timeout is a fail."""
    verifier = CommandVerifier(
        id="check", command=("x",), timeout_ms=1000, expect_exit=expect, expect_stdout_includes=needle or None
    )
    facts = CommandFacts(
        started=True, exit_code=None if timed_out else exit_code, stdout=stdout, timed_out=timed_out
    )
    result = judge_command(verifier, facts)
    ok = not timed_out and exit_code == expect and (not needle or needle in stdout)
    assert result.status is (PASS if ok else FAIL)
    if not timed_out and exit_code != expect:
        assert result.detail.startswith(f"exit {exit_code}")
        assert f"(expected {expect})" in result.detail


def test_a_command_that_did_not_start_is_an_error_and_says_why() -> None:
    """A command that never started is an error (not a fail), with the cause in the detail."""
    result = judge_command(_CHECK, CommandFacts(started=False, start_error="executable 'nope' not found"))
    assert result.status is ERROR
    assert result.detail == "did not start: executable 'nope' not found"


def test_a_started_command_without_an_exit_code_is_never_a_pass() -> None:
    """No exit status, no timeout: there is no evidence, so the result is an error."""
    assert judge_command(_CHECK, CommandFacts(started=True)).status is ERROR


def test_a_command_fail_detail_shows_the_last_lines() -> None:
    """The detail holds the exit code, the expected one and the last lines of stdout and stderr."""
    facts = CommandFacts(
        started=True, exit_code=1, stdout="\n".join(f"line {i}" for i in range(20)), stderr_excerpt="boom\n"
    )
    result = judge_command(_CHECK, facts)
    assert result.detail == (
        "exit 1 (expected 0); stdout: line 15 | line 16 | line 17 | line 18 | line 19; stderr: boom"
    )


# --- files -----------------------------------------------------------------------------------------------


@given(st.binary(max_size=64), st.binary(max_size=64))
def test_file_equals_passes_iff_the_sha256_matches(data: bytes, other: bytes) -> None:
    """file-equals passes exactly on the bytes whose sha256 it names."""
    verifier = FileEqualsVerifier(id="eq", path="a", sha256=hashlib.sha256(data).hexdigest())
    assert judge_file(verifier, FileFound(data=data)).status is PASS
    assert judge_file(verifier, FileFound(data=other)).status is (PASS if other == data else FAIL)


@given(st.text(min_size=1, max_size=8), st.text(max_size=30), st.binary(max_size=8))
def test_file_contains_agrees_with_text_search_and_works_on_undecodable_bytes(
    needle: str, text: str, junk: bytes
) -> None:
    """For UTF-8 files the byte search equals the text search; invalid UTF-8 around the text still matches."""
    verifier = FileContainsVerifier(id="has", path="a", text=needle)
    assert judge_file(verifier, FileFound(data=text.encode())).status is (PASS if needle in text else FAIL)
    data = b"\xff\xfe" + junk + needle.encode() + b"\xff"
    assert judge_file(verifier, FileFound(data=data)).status is PASS


def test_file_facts_map_to_the_documented_statuses() -> None:
    """missing: fail (absent: pass); not a file: fail for every kind; unusable (outside): error for every kind."""
    equals = FileEqualsVerifier(id="eq", path="a", sha256="0" * 64)
    contains = FileContainsVerifier(id="has", path="a", text="x")
    absent = FileAbsentVerifier(id="gone", path="a")
    assert [judge_file(v, FileMissing()).status for v in (equals, contains, absent)] == [FAIL, FAIL, PASS]
    dangling = NotAFile(what="a dangling symlink")
    assert [judge_file(v, dangling).status for v in (equals, contains, absent)] == [FAIL, FAIL, FAIL]
    outside = FileUnusable(reason="resolves outside the workspace")
    assert {judge_file(v, outside).status for v in (equals, contains, absent)} == {ERROR}
    assert judge_file(absent, FileFound(data=b"")).status is FAIL
    assert judge_file(absent, outside).detail == "a: resolves outside the workspace"


@given(kept_paths, st.sampled_from(IGNORED_NAMES), st.data())
def test_an_ignored_directory_at_any_depth_ignores_the_path(
    segments: list[str], ignored: str, data: st.DataObject
) -> None:
    """.git, node_modules or __pycache__ as any segment (first, middle or last) makes the path ignored."""
    at = data.draw(st.integers(0, len(segments)))
    assert is_ignored("/".join([*segments[:at], ignored, *segments[at:]]))


@given(kept_paths)
@example([".github", ".gitignore", "node_modules2", "x__pycache__"])
def test_nothing_else_is_ignored(segments: list[str]) -> None:
    """A path with none of the three names as a whole segment is kept, lookalikes included."""
    assert not is_ignored("/".join(segments))
