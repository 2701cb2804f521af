"""Properties of a task's ``sandbox`` section (``alisio.core.lab.suites.suite_sandbox``) and of the fixed paths it
puts in the bwrap argv (``alisio.core.harness.sandbox``): workdir, verifier binds, scratch directories."""

from __future__ import annotations

import json
from typing import Any

import msgspec
from hypothesis import given
from hypothesis import strategies as st
from returns.result import Failure, Success

from alisio.core.harness.sandbox import BIND_ROOTS, Bind, RootEntry, bwrap_argv, sandbox_path_problem
from alisio.core.lab.suites.suite import PathFacts, Suite, encode_suite, parse_suite, violations
from alisio.core.lab.suites.suite_paths import normalize
from alisio.core.lab.suites.suite_sandbox import Mount, TaskSandbox, mount_parts
from tests.property.strategies_sandbox import commands
from tests.property.strategies_suite import suites

RESERVED = (*BIND_ROOTS, "/tmp", "/dev", "/proc", "/home", "/run/alisio", "/solution")
segment = st.text(st.sampled_from("abcxyz019._-"), min_size=1, max_size=8).filter(
    lambda s: s not in (".", "..")
)
free_paths = (
    st.lists(segment, min_size=1, max_size=4)
    .map(lambda parts: "/" + "/".join(parts))
    .filter(lambda path: not any(path == r or path.startswith(r + "/") for r in RESERVED))
)
"""Normalised absolute paths outside what the sandbox builds itself."""


@given(free_paths)
def test_a_free_absolute_path_is_accepted(path: str) -> None:
    assert sandbox_path_problem(path) is None


@given(st.sampled_from(RESERVED), st.lists(segment, max_size=3))
def test_a_path_in_what_the_sandbox_builds_is_refused_naming_it(reserved: str, rest: list[str]) -> None:
    path = "/".join([reserved, *rest])
    assert sandbox_path_problem(path) == f"lies in {reserved}, which the sandbox builds itself"


@given(free_paths, st.sampled_from(["/", "/.", "/..", "//x", "/./x", "/../x"]), st.booleans())
def test_relative_or_unnormalised_paths_are_refused(path: str, suffix: str, relative: bool) -> None:
    bad = path.lstrip("/") if relative else path + suffix
    assert sandbox_path_problem(bad) is not None


@given(commands, free_paths, st.lists(free_paths, max_size=3, unique=True), st.lists(free_paths, max_size=3))
def test_the_workspace_is_at_the_workdir_and_scratch_comes_after_the_binds(
    command: list[str], workdir: str, scratch: list[str], binds: list[str]
) -> None:
    """The copy is bound at ``workdir`` (and nowhere else), commands start where asked, each bind then each
    scratch tmpfs comes after the workspace and before the root is made read-only; the command stays last."""
    roots = (RootEntry(path="/usr"), RootEntry(path="/etc"))
    shown = [Bind(source=f"/suite{target}", target=target) for target in binds]
    argv = bwrap_argv(
        command, bwrap="bwrap", roots=roots, workspace="/host/copy", cwd=workdir, binds=shown,
        workdir=workdir, scratch=scratch,
    )  # fmt: skip
    assert argv[len(argv) - len(command) :] == tuple(command)
    head = list(argv[: len(argv) - len(command)])
    at = head.index("/host/copy")
    assert head[at - 1 : at + 2] == ["--bind", "/host/copy", workdir] and head.count("/host/copy") == 1
    assert head[head.index("--chdir") + 1] == workdir and "/workspace" not in head
    remount = next(i for i, word in enumerate(head) if word == "--remount-ro" and head[i + 1] == "/")
    positions = [head.index(f"/suite{target}") for target in binds]
    assert all(at < position < remount for position in positions)
    tmpfs = [i for i, word in enumerate(head) if word == "--tmpfs" and head[i + 1] in scratch]
    assert [head[i + 1] for i in tmpfs] == scratch
    assert all(max([at, *positions]) < i < remount for i in tmpfs)


def with_sandbox(suite: Suite, section: dict[str, Any]) -> dict[str, Any]:
    raw = json.loads(encode_suite(suite))
    raw["tasks"][0]["sandbox"] = section
    return raw


def facts_for(raw: dict[str, Any], files: tuple[str, ...]) -> PathFacts:
    fixtures = frozenset(normalize(task["fixture"]) for task in raw["tasks"])
    return PathFacts(gathered=True, directories=fixtures | {"harbor", "harbor/t"}, files=frozenset(files))


def apart(paths: list[str]) -> list[str]:
    """The paths none of which is, holds or lies in an earlier one."""
    kept: list[str] = []
    for path in paths:
        if not any(path == k or path.startswith(k + "/") or k.startswith(path + "/") for k in kept):
            kept.append(path)
    return kept


@given(suites(), free_paths, st.lists(free_paths, min_size=1, max_size=3, unique=True))
def test_a_sound_section_parses_and_round_trips(suite: Suite, workdir: str, targets: list[str]) -> None:
    targets = apart([workdir, *targets])[1:]
    mounts = [{"target": t, "source": "harbor/t"} if i % 2 else {"target": t} for i, t in enumerate(targets)]
    raw = with_sandbox(suite, {"workdir": workdir, "verifierMounts": mounts})
    parsed = parse_suite(json.dumps(raw).encode(), "suite.json", facts_for(raw, ()))
    assert isinstance(parsed, Success), parsed
    task = parsed.unwrap().tasks[0]
    assert task.sandbox == TaskSandbox(
        workdir=workdir, verifier_mounts=tuple(msgspec.convert(m, Mount) for m in mounts)
    )
    assert parse_suite(encode_suite(parsed.unwrap()), "suite.json") == Success(parsed.unwrap())
    binds, scratch = mount_parts(task.sandbox, "/s/")
    assert binds == tuple(("/s/harbor/t", m["target"]) for m in mounts if "source" in m)
    assert scratch == tuple(m["target"] for m in mounts if "source" not in m)


@given(suites(), st.sampled_from(RESERVED))
def test_every_bad_path_is_reported_at_its_field(suite: Suite, reserved: str) -> None:
    raw = with_sandbox(
        suite,
        {
            "workdir": f"{reserved}/app",
            "verifierMounts": [
                {"target": "relative"},
                {"target": "/tests", "source": "harbor/missing"},
                {"target": "/tests/inner"},
                {"target": "/x", "source": "../outside"},
            ],
        },
    )
    task_id = raw["tasks"][0]["id"]
    parsed = parse_suite(json.dumps(raw).encode(), "suite.json", facts_for(raw, ()))
    assert isinstance(parsed, Failure)
    lines = [line for line in violations(parsed.failure()) if line.startswith(f"task {task_id}: sandbox")]
    assert lines == [
        f"task {task_id}: sandbox.workdir: lies in {reserved}, which the sandbox builds itself",
        f"task {task_id}: sandbox.verifierMounts[0].target: must be an absolute path other than / (such as /app)",
        f'task {task_id}: sandbox.verifierMounts[1].source: "harbor/missing" does not exist in the suite directory',
        f'task {task_id}: sandbox.verifierMounts[2].target: overlaps verifierMounts[1].target "/tests"',
        f"task {task_id}: sandbox.verifierMounts[3].source: {lines[-1].split('source: ', 1)[1]}",
    ]
    assert "suite directory" in lines[-1]
