"""A command's fixed cost: values coerced without pydantic are typer's own, a replay imports no HTTP client,
and naming a suite loads that suite alone.

``alisio.shell.cli.coercion`` answers for typer where typer's answer is plain (module docstring there); every
parameter of every command is checked here against typer's own coercion (its pydantic adapter), on plain
values it must answer and on values it must leave to typer.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from enum import Enum
from pathlib import Path
from typing import Any, get_args

import pytest
import typer
from returns.result import Success
from typer import _click as click
from typer._coercion import build_runtime_param
from typer.core import TyperGroup, _TyperParameter

from alisio.shell.cli.coercion import DECLINED, coerced
from alisio.shell.cli.main import app
from alisio.shell.errors import CommandError
from alisio.shell.lab.suite_choice import find_suite
from alisio.shell.lab.suites import discover_suites
from tests.integration.helpers import command_env


def _parameters() -> Iterator[tuple[str, click.Context, _TyperParameter]]:
    """Every typer parameter of every command (``alisio eval run --k``...), with its command's context."""

    def walk(command: click.Command, ctx: click.Context, path: str) -> Iterator[Any]:
        if isinstance(command, TyperGroup):
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                assert sub is not None
                yield from walk(sub, click.Context(sub, parent=ctx, info_name=name), f"{path} {name}")
        for param in command.get_params(ctx):
            if isinstance(param, _TyperParameter):
                yield f"{path} {param.name}", ctx, param

    root = typer.main.get_command(app)
    yield from walk(root, click.Context(root, info_name="alisio"), "alisio")


PARAMETERS = list(_parameters())

# What a plain value must be answered with, without typer (the fast path is really taken)...
PLAIN: dict[Any, list[Any]] = {
    str: ["x", "", " a b ", "ünï", "-", "5"],
    bool: [True, False],
    int: [0, 7, "5", "-12", "05", "123456789012345678"],
    float: [0.5, 2, "0.25", "-3", "10"],
    Path: ["x", "", "a/b/", "~/x", "-", ".", "/"],
}
# ...and values it may leave to typer (or answer identically): odd forms, wrong types, errors.
ODD: dict[Any, list[Any]] = {
    str: [b"bytes", 5, None],
    bool: ["true", "0", "", 1],
    int: ["+5", " 5", "5.0", "1_000", "x", "", "99999999999999999999", "١٢", 5.0, True],
    float: ["1e3", "inf", "x", " 1", "1.", ".5", "١", True],
    Path: [Path("y"), b"x", 5],
}


def _typer(param: _TyperParameter, ctx: click.Context, value: Any) -> tuple[str, Any]:
    """typer's own answer: ``("ok", value)`` or ``("error", message)``."""
    try:
        return "ok", build_runtime_param(param.type_descriptor).coerce(value, param=param, ctx=ctx)
    except Exception as error:
        return "error", f"{type(error).__name__}: {error}"


def _samples(annotation: Any) -> tuple[list[Any], list[Any]]:
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        values = [str(member.value) for member in annotation]
        return [*values, *annotation], [v.upper() for v in values] + ["nope", "", 3]
    return PLAIN[annotation], ODD[annotation]


def test_every_parameter_is_of_a_kind_the_fast_path_knows() -> None:
    """A new kind of parameter (a range, a parser, a file, a tuple) is noticed here, to be checked by hand."""
    kinds = set()
    for name, _, param in PARAMETERS:
        descriptor = param.type_descriptor
        info = descriptor.parameter_info
        assert (info.parser, descriptor.file_annotation, info.min, info.max, info.clamp) == (
            None,
            None,
            None,
            None,
            False,
        ), name
        listed = param.nargs == -1 or param.multiple  # an argument list, or an option given several times
        annotation = get_args(descriptor.annotation)[0] if listed else descriptor.annotation
        kinds.add("enum" if issubclass(annotation, Enum) else annotation)
    assert kinds == {str, bool, int, float, Path, "enum"}


@pytest.mark.parametrize(("name", "ctx", "param"), PARAMETERS, ids=[name for name, _, _ in PARAMETERS])
def test_the_fast_coercion_is_typers_own(name: str, ctx: click.Context, param: _TyperParameter) -> None:
    listed = param.nargs == -1 or param.multiple
    annotation = get_args(param.type_descriptor.annotation)[0] if listed else param.type_descriptor.annotation
    plain, odd = _samples(annotation)
    for value, must_be_fast in [*((v, True) for v in plain), *((v, False) for v in odd)]:
        given = (value,) if listed else value
        if value is None:
            continue  # an unset value never reaches coerced (checked end to end by every command's defaults)
        fast = coerced(param, ctx, given)
        assert fast is not DECLINED or not must_be_fast, (name, value)
        if fast is not DECLINED:
            expected = _typer(param, ctx, given)
            assert ("ok", fast) == expected, (name, value)
            assert type(fast) is type(expected[1]), (name, value)
    if listed:  # a list item typer refuses leaves the whole list to typer
        assert coerced(param, ctx, (plain[0], b"\xff")) is DECLINED


def test_an_option_s_bad_value_is_still_typers_error(tmp_path: Path) -> None:
    """A value the fast path leaves to typer gets typer's error, in our words (``bad_value_line``)."""
    from tests.integration.helpers import alisio

    result = alisio(tmp_path, "eval", "run", "tool-sequences", "--k", "five")
    assert (result.returncode, result.stderr.strip()) == (
        1,
        "alisio eval run: --k: expected a whole number, got 'five'",
    )
    result = alisio(tmp_path, "eval", "run", "tool-sequences", "--mode", "replya")
    assert (result.returncode, result.stderr.strip()) == (
        1,
        "alisio eval run: --mode: expected live or replay, got 'replya'",
    )


def test_a_replay_imports_neither_pydantic_nor_an_http_client(tmp_path: Path) -> None:
    """``eval run --mode replay`` and ``eval ci`` never talk to a provider: httpx (60 ms with its own CLI's
    rich imports) and pydantic (typer's adapters, 100 ms) stay unimported (bench/bench_commands.py)."""
    replay = [
        "eval",
        "run",
        "tool-sequences",
        "--tasks",
        "read-edit-config",
        "--mode",
        "replay",
        "-q",
        "-k",
        "1",
    ]
    commands = [
        [*replay, "--allow-write", "--allow-process", "--out", str(tmp_path / "one")],
        ["eval", "ci", "--out", str(tmp_path / "ci")],
    ]
    script = (
        "import json, sys\n"
        "from alisio.shell.cli.main import run_cli\n"
        f"codes = [run_cli(argv) for argv in {commands!r}]\n"
        "print(json.dumps([codes, sorted(m for m in ('pydantic', 'httpx', 'rich') if m in sys.modules)]))\n"
    )
    (tmp_path / "config").mkdir()
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        env=command_env(tmp_path),
        check=False,
    )
    assert json.loads(done.stdout.splitlines()[-1]) == [[0, 0], []], done.stderr


def test_naming_a_suite_loads_that_suite_alone(tmp_path: Path) -> None:
    """``discover_suites(root, named=...)`` (what ``eval run SUITE`` uses) loads only the suites that may answer
    to the name, by directory or declared suiteId, valid or not; ``find_suite`` picks as before."""
    from tests.integration.lab.test_suites import write_suite

    write_suite(tmp_path / "alpha")
    write_suite(tmp_path / "beta", suiteId="gamma")
    write_suite(tmp_path / "broken", suiteId="delta", suiteVersion="1.2")
    (tmp_path / "fifo").mkdir()
    os.mkfifo(tmp_path / "fifo" / "suite.json")  # never opened for reading: a FIFO would block forever
    every = discover_suites(tmp_path)
    assert [entry.directory.name for entry in every] == ["alpha", "beta", "broken", "fifo"]

    def named(name: str) -> list[tuple[str, bool]]:
        found = discover_suites(tmp_path, named=name)
        return [(entry.directory.name, isinstance(entry.result, Success)) for entry in found]

    assert named("alpha") == [("alpha", True)]
    assert named("gamma") == [("beta", True)]
    assert named("beta") == [("beta", True)]
    assert named("delta") == [("broken", False)]
    assert named("fifo") == [("fifo", False)]
    assert named("nope") == []
    assert find_suite("gamma", tmp_path, None).loaded.directory == tmp_path / "beta"
    with pytest.raises(CommandError, match="not semver"):
        find_suite("delta", tmp_path, None)
    with pytest.raises(CommandError, match=r"no suite 'nope' \(known: alpha, gamma\)"):
        find_suite("nope", tmp_path, None)
