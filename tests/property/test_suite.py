"""Properties of alisio.core.lab.suites.suite: the suite.json parser never raises, round-trips, and names every violation."""

from __future__ import annotations

import copy
import json
from typing import Any

import msgspec
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from returns.result import Failure, Success

from alisio.core.errors import SuiteError
from alisio.core.lab.suites.suite import (
    CommandVerifier,
    FileAbsentVerifier,
    PathFacts,
    Suite,
    encode_suite,
    parse_suite,
    suite_content_hash,
    violations,
)
from alisio.core.lab.suites.suite_paths import SymlinkFact, normalize
from tests.property.strategies_suite import (
    dumps_repeating,
    heavy,
    json_values,
    objects_in,
    relative_paths,
    sha256s,
    suites,
)

Path = tuple[str | int, ...]


def as_json(suite: Suite) -> dict[str, Any]:
    return json.loads(encode_suite(suite))


def parse_json(value: Any, facts: PathFacts | None = None) -> Any:
    data = json.dumps(value).encode()
    return parse_suite(data, "suite.json") if facts is None else parse_suite(data, "suite.json", facts)


def lines_of(result: Any) -> tuple[str, ...]:
    assert isinstance(result, Failure), result
    error = result.failure()
    assert isinstance(error, SuiteError)
    return violations(error)


def nodes(value: Any, path: Path = ()) -> list[Path]:
    """Every path into a JSON value (the root excluded)."""
    found: list[Path] = []
    children = (
        value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    )
    for key, child in children:
        found.append((*path, key))
        found += nodes(child, (*path, key))
    return found


def get_at(value: Any, path: Path) -> Any:
    for key in path:
        value = value[key]
    return value


def set_at(value: Any, path: Path, new: Any) -> Any:
    changed = copy.deepcopy(value)
    get_at(changed, path[:-1])[path[-1]] = new
    return changed


def dotted(path: Path) -> str:
    out = ""
    for key in path:
        out += f"[{key}]" if isinstance(key, int) else (f".{key}" if out else key)
    return out


def where(raw: dict[str, Any], path: Path) -> str:
    """The expected location prefix of a violation at ``path`` (valid suites have usable task ids)."""
    if len(path) >= 3 and path[0] == "tasks" and path[2] != "id":
        return f"task {raw['tasks'][path[1]]['id']}: {dotted(path[2:])}"
    return dotted(path)


def wrong_type(value: Any) -> Any:
    """A JSON value of another type than ``value``."""
    if isinstance(value, str):
        return 12345
    if isinstance(value, dict):
        return []
    return "not-the-right-type"


@heavy
@given(suites())
def test_encode_then_parse_is_identity(suite: Suite) -> None:
    """parse_suite(encode_suite(s)) == Success(s) for every valid suite."""
    assert parse_suite(encode_suite(suite), "suite.json") == Success(suite)


@heavy
@given(suites())
def test_parse_with_facts_of_existing_fixtures_succeeds(suite: Suite) -> None:
    """A valid suite whose fixtures exist as directories (facts gathered) parses."""
    facts = PathFacts(gathered=True, directories=frozenset(normalize(t.fixture) for t in suite.tasks))
    assert parse_suite(encode_suite(suite), "suite.json", facts) == Success(suite)


@given(st.binary(max_size=200))
@example(b"\xff\xfe")
@example(b"[" * 100_000)
@example(b"\xef\xbb\xbf{")
def test_junk_bytes_never_raise(data: bytes) -> None:
    """Arbitrary bytes give a Result; a Failure names at least one violation, each on one line."""
    match parse_suite(data, "junk.json"):
        case Failure(SuiteError(source=source) as error):
            assert source == "junk.json"
            assert all(line and "\n" not in line for line in violations(error))
        case Success(_):
            pass


@given(json_values)
def test_any_json_value_is_a_failure_that_never_raises(value: Any) -> None:
    """No random JSON value is a suite; the parser says so without raising."""
    assert lines_of(parse_json(value))


@heavy
@given(suites(), st.data())
def test_mutating_any_node_never_raises(suite: Suite, data: st.DataObject) -> None:
    """Replacing any node of a valid suite with any JSON value yields a Result, never an exception."""
    raw = as_json(suite)
    path = data.draw(st.sampled_from(nodes(raw)))
    mutated = set_at(raw, path, data.draw(json_values))
    match parse_json(mutated):
        case Success(parsed):
            assert parse_suite(encode_suite(parsed), "again.json") == Success(parsed)
        case Failure(error):
            assert all(line and "\n" not in line for line in violations(error))


@heavy
@given(suites(), st.data())
def test_a_wrong_type_anywhere_is_reported_at_its_path(suite: Suite, data: st.DataObject) -> None:
    """A value of the wrong JSON type at any field is a Failure naming the task and the field path."""
    raw = as_json(suite)
    path = data.draw(st.sampled_from(nodes(raw)))
    result = parse_json(set_at(raw, path, wrong_type(get_at(raw, path))))
    assert any(line.startswith(where(raw, path) + ":") for line in lines_of(result)), (
        where(raw, path),
        result,
    )


@heavy
@given(suites(), st.data())
def test_a_missing_required_field_is_reported_as_required(suite: Suite, data: st.DataObject) -> None:
    """Removing a required field from any object gives '<where>: required'."""
    raw = as_json(suite)
    required = {"schemaVersion", "suiteId", "suiteVersion", "description", "tasks", "id", "prompt", "fixture"}
    required |= {"budget", "policy", "verifiers", "maxTurns", "maxWallMs", "mode", "command", "timeoutMs"}
    required |= {"path", "sha256", "text", "allowed", "rules", "kind", "type", "first", "then", "tool", "max"}
    required |= {"pattern", "replace"}
    candidates = [p for p in nodes(raw) if isinstance(p[-1], str) and p[-1] in required]
    path = data.draw(st.sampled_from(candidates))
    mutated = copy.deepcopy(raw)
    del get_at(mutated, path[:-1])[path[-1]]
    expected = where(raw, path) if path[-1] != "id" or len(path) != 3 else dotted(path)
    assert any(line.startswith(f"{expected}: required") for line in lines_of(parse_json(mutated)))


@heavy
@given(suites(), st.data(), st.sampled_from(["maxTurn", "timeout", "readonly", "fixturegit", "zzz"]))
def test_an_unknown_field_in_any_object_is_reported(suite: Suite, data: st.DataObject, key: str) -> None:
    """A typo'd key in any object is an error naming it ('<where>.<key>: unknown field')."""
    raw = as_json(suite)
    objects = [()] + [p for p in nodes(raw) if isinstance(get_at(raw, p), dict)]
    path = data.draw(st.sampled_from(objects))
    mutated = copy.deepcopy(raw)
    get_at(mutated, path)[key] = 1
    line_start = where(raw, (*path, key)) if path else key
    assert any(line.startswith(f"{line_start}: unknown field") for line in lines_of(parse_json(mutated)))


@heavy
@given(suites())
def test_a_duplicate_task_id_names_the_second_index(suite: Suite) -> None:
    """Repeating a task gives 'tasks[n].id: duplicate task id "<id>"'."""
    raw = as_json(suite)
    raw["tasks"].append(raw["tasks"][0])
    n = len(raw["tasks"]) - 1
    expected = f'tasks[{n}].id: duplicate task id "{raw["tasks"][0]["id"]}"'
    assert expected in lines_of(parse_json(raw))


@heavy
@given(suites(), st.data())
def test_a_key_repeated_in_any_object_names_the_task_and_the_key(suite: Suite, data: st.DataObject) -> None:
    """Writing any key twice (even with the same value) is one violation naming the task and the key's path;
    the last value never silently wins."""
    raw = as_json(suite)
    target = data.draw(st.sampled_from(objects_in(raw)))
    node = get_at(raw, target)
    key = next(iter(node))
    text = dumps_repeating(raw, target, node[key])
    found = [line for line in lines_of(parse_suite(text.encode(), "suite.json")) if "duplicate key" in line]
    assert len(found) == 1
    path = (*target, key)
    if path[:1] == ("tasks",) and len(path) > 2 and path[2] != "id":
        assert found[0].startswith(f"task {raw['tasks'][path[1]]['id']}: ")
    assert found[0].endswith(f"{key}: duplicate key (only one value may be given)")


def test_a_repeated_budget_is_refused_not_last_wins() -> None:
    """maxTurns 5 then 500: refused, naming the task and the field (it would have run with 500)."""
    task = (
        '{"id": "fix-add", "prompt": "p", "fixture": "f", "budget": {"maxTurns": 5, "maxWallMs": 1000, '
        '"maxTurns": 500}, "policy": {"mode": "auto"}, "verifiers": [{"kind": "file-absent", "id": "a", '
        '"path": "x"}]}'
    )
    text = f'{{"schemaVersion": 1, "suiteId": "s", "suiteVersion": "1.0.0", "description": "", "tasks": [{task}]}}'
    assert lines_of(parse_suite(text.encode(), "suite.json")) == (
        "task fix-add: budget.maxTurns: duplicate key (only one value may be given)",
    )


@heavy
@given(suites())
def test_a_duplicate_verifier_id_names_the_task_and_index(suite: Suite) -> None:
    """Repeating a verifier gives 'task <id>: verifiers[n].id: duplicate verifier id'."""
    raw = as_json(suite)
    task = raw["tasks"][-1]
    task["verifiers"].append(task["verifiers"][0])
    n = len(task["verifiers"]) - 1
    expected = f'task {task["id"]}: verifiers[{n}].id: duplicate verifier id "{task["verifiers"][0]["id"]}"'
    assert expected in lines_of(parse_json(raw))


@heavy
@given(suites(), relative_paths, st.sampled_from(["../{}", "{}/../../x", "/{}", "C:/{}", "{}\\x", "", "./."]))
def test_paths_that_leave_their_root_are_rejected(suite: Suite, path: str, shape: str) -> None:
    """fixture and verifier paths with '..', absolute, drive-letter, backslash or empty forms are errors."""
    raw = as_json(suite)
    bad = shape.format(path)
    task = raw["tasks"][0]
    task["fixture"] = bad
    task["verifiers"].append({"kind": "file-absent", "id": "zz-new", "path": bad})
    n = len(task["verifiers"]) - 1
    lines = lines_of(parse_json(raw))
    assert any(line.startswith(f"task {task['id']}: fixture: ") for line in lines)
    assert any(line.startswith(f"task {task['id']}: verifiers[{n}].path: ") for line in lines)


@heavy
@given(suites(min_tasks=2))
def test_violations_in_different_tasks_are_all_reported(suite: Suite) -> None:
    """One violation in each of two tasks and one at the top yields (at least) three lines, one per place."""
    raw = as_json(suite)
    raw["suiteVersion"] = "1.2"
    raw["tasks"][0]["budget"]["maxTurns"] = 0
    raw["tasks"][1]["replayNormalize"] = [{"pattern": "(", "replace": ""}]
    lines = lines_of(parse_json(raw))
    first, second = raw["tasks"][0]["id"], raw["tasks"][1]["id"]
    assert 'suiteVersion: "1.2" is not semver (MAJOR.MINOR.PATCH, as in 1.0.0 or 2.1.0-rc.1)' in lines
    assert f"task {first}: budget.maxTurns: at least 1" in lines
    assert any(
        line.startswith(f"task {second}: replayNormalize[0].pattern: invalid regular expression")
        for line in lines
    )


@pytest.mark.parametrize(
    ("version", "ok"),
    [
        ("1.0.0", True),
        ("0.0.0", True),
        ("1.2.3-rc.1+build.7", True),
        ("10.20.30-alpha.beta-1", True),
        ("1.2", False),
        ("01.2.3", False),
        ("1.2.3-01", False),
        ("v1.2.3", False),
        ("1.2.3\n", False),
        ("1.2.3-", False),
        ("１.2.3", False),
    ],
)
def test_suite_version_must_be_semver(version: str, ok: bool) -> None:
    """suiteVersion follows semver 2.0.0 exactly (no leading zeros, no 'v', ASCII digits only)."""
    raw = valid_raw()
    raw["suiteVersion"] = version
    result = parse_json(raw)
    assert isinstance(result, Success) == ok, result


def valid_raw() -> dict[str, Any]:
    return {
        "schemaVersion": 1,
        "suiteId": "s",
        "suiteVersion": "1.0.0",
        "description": "",
        "tasks": [
            {
                "id": "t",
                "prompt": "p",
                "fixture": "fixtures/t",
                "budget": {"maxTurns": 1, "maxWallMs": 1},
                "policy": {"mode": "auto"},
                "verifiers": [{"kind": "file-absent", "id": "v", "path": "x"}],
            }
        ],
    }


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        (("schemaVersion",), 2, "schemaVersion: unknown schema version 2 (expected 1)"),
        (("tasks", 0, "policy", "allow"), ["netwrok"], 'task t: policy.allow[0]: unknown effect "netwrok" (expected write, process, external or analysis)'),
        (("tasks", 0, "policy", "mode"), "yolo", 'task t: policy.mode: unknown mode "yolo" (expected ask, auto or full)'),
        (("tasks", 0, "budget"), {"maxTurns": 1}, "task t: budget.maxWallMs: required"),
        (("tasks", 0, "agent"), "my agent", 'task t: agent: "my agent" is not a plain agent name (letters, digits, "_" or "-", starting with a letter)'),
        (("tasks", 0, "verifiers", 0), {"kind": "file-exists", "id": "v", "path": "x"}, 'task t: verifiers[0].kind: unknown verifier kind "file-exists" (expected command, file-equals, file-contains, file-absent, tree-diff-within or tool-sequence)'),
        (("tasks", 0, "verifiers", 0), {"kind": "command", "id": "v", "command": [], "timeoutMs": 1}, "task t: verifiers[0].command: must not be empty"),
        (("tasks", 0, "verifiers", 0), {"kind": "command", "id": "v", "command": ["x"], "timeoutMs": 600001}, "task t: verifiers[0].timeoutMs: at most 600000"),
        (("tasks", 0, "verifiers", 0), {"kind": "tool-sequence", "id": "v", "rules": [{"type": "max-calls", "tool": "bash", "max": -1}]}, "task t: verifiers[0].rules[0].max: at least 0"),
        (("tasks", 0, "verifiers", 0), {"kind": "tool-sequence", "id": "v", "rules": [{"type": "before", "first": "bash", "then": "bash"}]}, "task t: verifiers[0].rules[0].then: same tool as first (bash)"),
        (("tasks", 0, "verifiers", 0), {"kind": "tool-sequence", "id": "v", "rules": [{"type": "never", "tool": "Bash"}]}, 'task t: verifiers[0].rules[0].tool: unknown tool "Bash" (expected read_file, list_dir, search, write_file, edit_file, bash, fetch_url or analyze, or an MCP server\'s tool as mcp__<server>__<tool>)'),
        (("tasks", 0, "verifiers", 0), {"kind": "file-equals", "id": "v", "path": "a", "sha256": "A" * 64}, 'task t: verifiers[0].sha256: "' + "A" * 56 + '... is not a sha256 (64 lowercase hex digits)'),
        (("tasks", 0, "verifiers", 0), {"kind": "command", "id": "v", "command": ["x"], "timeoutMs": 5, "expectExit": True}, "task t: verifiers[0].expectExit: expected an integer, got a boolean"),
        (("tasks", 0, "replayNormalize"), [{"pattern": "x*", "replace": ""}], "task t: replayNormalize[0].pattern: matches the empty string (it would insert the replacement everywhere)"),
        (("tasks", 0, "budget", "maxTurns"), 1.5, "task t: budget.maxTurns: expected an integer, got a number"),
        (("tasks", 0, "id"), "a/b", 'tasks[0].id: "a/b" is not a valid id (letters, digits, ".", "_" or "-", starting with a letter or digit; at most 128)'),
        (("tasks",), [], "tasks: must not be empty"),
    ],
)  # fmt: skip
def test_messages_read_as_documented(field: Path, value: Any, message: str) -> None:
    """Each kind of violation reads as one documented line naming the task and the field."""
    assert message in lines_of(parse_json(set_at(valid_raw(), field, value)))


def test_non_object_and_non_json_inputs_name_the_problem() -> None:
    """Not UTF-8, not JSON and not an object each produce one clear line."""
    assert violations(parse_suite(b'{"a": "\xff"}', "f").failure()) == ("not valid UTF-8 (byte 7)",)
    assert violations(parse_suite(b'{"a": 1', "f").failure()) == ("not valid JSON: input data was truncated",)
    assert violations(parse_suite(b"[]", "f").failure()) == ("a suite.json must hold a JSON object",)
    assert (
        str(parse_suite(b"[]", "dir/suite.json").failure())
        == "dir/suite.json: a suite.json must hold a JSON object"
    )


# --- Facts: fixtures on disk and symlinks ----------------------------------------------------------------


def facts_for(raw: dict[str, Any], *links: SymlinkFact, files: frozenset[str] = frozenset()) -> PathFacts:
    return PathFacts(
        gathered=True,
        directories=frozenset(normalize(t["fixture"]) for t in raw["tasks"]),
        files=files,
        symlinks=frozenset(links),
    )


@heavy
@given(suites(), st.sampled_from([None, "elsewhere", ""]))
def test_a_symlink_inside_a_fixture_that_leaves_it_is_rejected(suite: Suite, target: str | None) -> None:
    """A symlink under a fixture whose target is outside the fixture (or the suite) rejects that task."""
    raw = as_json(suite)
    fixture = normalize(raw["tasks"][0]["fixture"])
    link = SymlinkFact(path=f"{fixture}/link", target=target)
    lines = lines_of(parse_json(raw, facts_for(raw, link)))
    expected = f'task {raw["tasks"][0]["id"]}: fixture: "{fixture}/link" is a symlink that escapes the task directory'
    assert expected in lines


@heavy
@given(suites())
def test_a_symlink_inside_a_fixture_that_stays_inside_is_accepted(suite: Suite) -> None:
    """Links that resolve inside their own fixture are fine."""
    raw = as_json(suite)
    fixture = normalize(raw["tasks"][0]["fixture"])
    link = SymlinkFact(path=f"{fixture}/link", target=f"{fixture}/real")
    assert parse_json(raw, facts_for(raw, link)) == Success(suite)


@heavy
@given(suites(), relative_paths)
def test_a_verifier_path_through_an_escaping_symlink_is_rejected(suite: Suite, rest: str) -> None:
    """A verifier path whose first segment is a symlink out of the suite is reported at that field."""
    raw = as_json(suite)
    task = raw["tasks"][0]
    fixture = normalize(task["fixture"])
    task["verifiers"].append({"kind": "file-absent", "id": "zz-new", "path": f"out/{rest}"})
    n = len(task["verifiers"]) - 1
    lines = lines_of(parse_json(raw, facts_for(raw, SymlinkFact(path=f"{fixture}/out", target=None))))
    assert (
        f"task {task['id']}: verifiers[{n}].path: path escapes the task directory through a symlink" in lines
    )


@heavy
@given(suites())
def test_a_missing_fixture_is_reported_only_when_facts_were_gathered(suite: Suite) -> None:
    """Without facts a fixture is not checked on disk; with facts that lack it, it 'does not exist'."""
    raw = as_json(suite)
    task = raw["tasks"][0]
    task["fixture"] = "fixtures/missing/zz"
    assert isinstance(parse_json(raw), Success)
    lines = lines_of(parse_json(raw, facts_for(as_json(suite))))
    assert f'task {task["id"]}: fixture: "fixtures/missing/zz" does not exist' in lines


@heavy
@given(suites())
def test_a_fixture_symlinked_out_of_the_suite_is_rejected(suite: Suite) -> None:
    """A fixture directory that is a symlink leaving the suite is an error."""
    raw = as_json(suite)
    fixture = normalize(raw["tasks"][0]["fixture"])
    facts = facts_for(raw, SymlinkFact(path=fixture, target=None))
    expected = f"task {raw['tasks'][0]['id']}: fixture: escapes the suite directory through a symlink"
    assert expected in lines_of(parse_json(raw, facts))


# --- The content hash ------------------------------------------------------------------------------------

digests = st.dictionaries(relative_paths, sha256s, max_size=5)


@heavy
@given(suites(), digests)
def test_content_hash_ignores_order_id_version_and_description(suite: Suite, files: dict[str, str]) -> None:
    """The hash depends on tasks and fixture files only, not on mapping order or suite metadata."""
    renamed = msgspec.structs.replace(suite, suite_id="other", suite_version="9.9.9", description="changed")
    reversed_files = dict(reversed(list(files.items())))
    assert suite_content_hash(suite, files) == suite_content_hash(renamed, reversed_files)
    assert len(suite_content_hash(suite, files)) == 64


@heavy
@given(suites(), digests, relative_paths)
def test_content_hash_changes_with_a_fixture_file(suite: Suite, files: dict[str, str], path: str) -> None:
    """Adding a file or changing one file's digest changes the hash."""
    changed = {**files, path: "0" * 64 if files.get(path) != "0" * 64 else "1" * 64}
    assert suite_content_hash(suite, files) != suite_content_hash(suite, changed)


@heavy
@given(suites(), digests)
def test_content_hash_changes_with_a_verifier(suite: Suite, files: dict[str, str]) -> None:
    """Changing a task's verifiers changes the hash."""
    task = suite.tasks[0]
    extra: CommandVerifier | FileAbsentVerifier = FileAbsentVerifier(id="zz-extra", path="never-there")
    changed_task = msgspec.structs.replace(task, verifiers=(*task.verifiers, extra))
    changed = msgspec.structs.replace(suite, tasks=(changed_task, *suite.tasks[1:]))
    assert suite_content_hash(suite, files) != suite_content_hash(changed, files)


@heavy
@given(
    suites(), st.lists(st.sampled_from(["a\\xff", "dir\\x80", "x/\\xc3\\x28.txt"]), min_size=1, max_size=15)
)
def test_a_name_that_is_not_utf8_rejects_only_the_fixture_holding_it(suite: Suite, names: list[str]) -> None:
    """Undecodable names under the first task's fixture reject that task (at most 10 named, then a count);
    the same names outside every fixture do not matter."""
    raw = as_json(suite)
    task = raw["tasks"][0]
    fixture = normalize(task["fixture"])
    inside = sorted({f"{fixture}/{index}-{name}" for index, name in enumerate(names)})
    facts = msgspec.structs.replace(facts_for(raw), undecodable=frozenset(inside))
    mine = f"task {task['id']}: fixture: "
    lines = [line for line in lines_of(parse_json(raw, facts)) if line.startswith(mine) and "UTF-8" in line]
    expected = [
        f"task {task['id']}: fixture: {path}: the name is not valid UTF-8 (rename it; undecodable bytes "
        "shown as \\xNN)"
        for path in inside[:10]
    ]
    if len(inside) > 10:
        expected.append(
            f"task {task['id']}: fixture: and {len(inside) - 10} more names that are not valid UTF-8"
        )
    assert lines == expected
    outside = msgspec.structs.replace(facts_for(raw), undecodable=frozenset({"elsewhere-\\xff/a"}))
    assert parse_json(raw, outside) == Success(suite)
