"""The option groups (``alisio.shell.cli.options``): each group defined once, every command that takes it gets
each of its options but those it omits, in its own words where it rewords one; an option is one edit.

The commands are real (``alisio ...`` through ``helpers.alisio``); the group mechanism is also shown on a
command built here, with a group that grows an option.
"""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import pytest
import typer
from typer.models import OptionInfo
from typer.testing import CliRunner

from alisio.shell.cli.options import PermissionFlags, ProviderFlags, Take, grouped, option
from alisio.shell.cli.plan_flags import PlanFlags
from alisio.shell.cli.seq_flags import SequentialFlags
from tests.integration.helpers import alisio


def _help(home: Path, *command: str) -> str:
    done = alisio(home, *command, "--help", env={"COLUMNS": "200"})
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize(
    ("command", "group", "omitted"),
    [
        (("eval", "run"), ProviderFlags, set()),
        (
            ("eval", "variants"),
            ProviderFlags,
            {"--cassette-dir", "--context"},
        ),  # a variant's is in compare.json
        (("eval", "record"), ProviderFlags, {"--mode", "--cassette-dir"}),
        (("eval", "plan"), ProviderFlags, set()),
        (
            ("run",),
            ProviderFlags,
            {"--agent", "--mode", "--cassette-dir", "--context"},
        ),  # its --agent: its Run panel
        (("eval", "run"), SequentialFlags, set()),
        (("eval", "variants"), SequentialFlags, {"--baseline", "--until-width"}),
        (("eval", "record"), PlanFlags, {"--plan", "--shard", "--balance-from", "--reuse"}),
        (("run",), PermissionFlags, {"--allow-suite-full"}),
    ],
)
def test_a_command_shows_every_option_of_a_group_it_takes_but_those_it_omits(
    home: Path, command: tuple[str, ...], group: type[object], omitted: set[str]
) -> None:
    panel = _panel(_help(home, *command), _panel_of(group))
    flags = {
        str(info.default)  # typer.Option(*names): the first name lands in default (typer reads it so)
        for field in dataclasses.fields(group)  # type: ignore[arg-type]
        for info in typing.get_type_hints(group, include_extras=True)[field.name].__metadata__
        if isinstance(info, OptionInfo)
    }
    assert flags  # the group's options, read off its one definition
    for flag in sorted(flags - omitted):
        assert f" {flag} " in panel, (command, flag)
    for flag in sorted(omitted):
        assert f" {flag} " not in panel, (command, flag)


def _panel_of(group: type[object]) -> str:
    """The help panel of a group's options (each group is one panel)."""
    first = dataclasses.fields(group)[0]  # type: ignore[arg-type]
    (info,) = typing.get_type_hints(group, include_extras=True)[first.name].__metadata__
    return str(info.rich_help_panel)


def _panel(shown: str, name: str) -> str:
    """The lines of the help's panel ``name``."""
    lines = shown.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"╭─ {name} "))
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("╰"))
    return "\n".join(lines[start:end])


def test_an_omitted_option_is_refused_and_a_reworded_one_reads_as_the_command_says(home: Path) -> None:
    """eval record runs each task once (no --k); alisio run has no suite (no --allow-suite-full); eval variants
    says its --mode is live only and its --sequential compares two variants."""
    record = alisio(home, "eval", "record", "example", "--k", "3")
    assert record.returncode == 1 and "No such option: --k" in record.stderr
    run = alisio(home, "run", "--allow-suite-full", "hi")
    assert run.returncode == 1 and "No such option: --allow-suite-full" in run.stderr
    variants = _help(home, "eval", "variants")
    assert "live only: variants refuses replay." in variants
    assert "decides that the two variants differ" in variants and "--baseline" not in variants
    assert "live (a provider) or replay (cassettes)." in _help(home, "eval", "run")
    assert "Play the assistant turns of a JSON file" in _help(home, "run")


@dataclass(frozen=True)
class _Group:
    """A group as options.py defines them: here with one option added (``extra``), the one edit."""

    level: Annotated[int, option("--level", help="A level.", panel="G", metavar="N")] = 1
    name: Annotated[str | None, option("--name", help="A name.", panel="G", metavar="NAME")] = None
    extra: Annotated[bool, option("--extra", help="The option added to the group.", panel="G")] = False


@dataclass(frozen=True)
class _Clashing:
    """Another group whose field has the name of one of ``_Group``'s."""

    level: Annotated[int, option("--other-level", help="Another.", panel="G", metavar="N")] = 1


def _app() -> typer.Typer:
    app = typer.Typer()

    @app.command("all")
    @grouped
    def all_of_it(group: _Group) -> None:
        typer.echo(repr(group))

    @app.command("some")
    @grouped
    def some(
        group: Annotated[_Group, Take(omit=("name",), help={"level": "How deep, in this command."})],
    ) -> None:
        typer.echo(repr(group))

    return app


def test_an_option_added_to_a_group_reaches_every_command_that_takes_it() -> None:
    runner = CliRunner()
    app = _app()
    whole = runner.invoke(app, ["all", "--level", "3", "--name", "x", "--extra"])
    assert whole.exit_code == 0, whole.output
    assert whole.output.strip() == "_Group(level=3, name='x', extra=True)"
    part = runner.invoke(app, ["some", "--level", "2", "--extra"])
    assert part.exit_code == 0, part.output
    assert part.output.strip() == "_Group(level=2, name=None, extra=True)"  # the omitted option's default
    refused = runner.invoke(app, ["some", "--name", "x"])
    assert refused.exit_code != 0 and "No such option: --name" in refused.output
    shown = runner.invoke(app, ["some", "--help"], env={"COLUMNS": "200"})
    assert "How deep, in this command." in shown.output and "A level." not in shown.output


def test_a_take_that_names_no_option_or_options_named_twice_fail_when_the_command_is_defined() -> None:
    with pytest.raises(TypeError, match="Take names no option of _Group: nope"):

        @grouped
        def wrong(group: Annotated[_Group, Take(omit=("nope",))]) -> None: ...

    with pytest.raises(TypeError, match="options named twice across its groups: level"):

        @grouped
        def twice(group: _Group, other: _Clashing) -> None: ...
